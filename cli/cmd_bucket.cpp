// `voxtile bucket IN -o OUT.npz [-o COUNT.vdb]`: load, bucket (CPU or GPU), write.
#include "cli/cmd_bucket.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/bucket.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/timer.h"
#include "io/mesh_reader.h"
#include "io/npz.h"
#include "io/writers.h"
#include "kernels/api.h"

namespace voxtile {
namespace {


bool is_npz(const std::string& path) {
  return path.size() >= 4 && (path.compare(path.size() - 4, 4, ".npz") == 0 || path.compare(path.size() - 4, 4, ".NPZ") == 0);
}

}  // namespace

void setup_bucket(CLI::App& app, BucketCmdOptions& o) {
  app.add_option("input", o.input, "Mesh file (any format Assimp reads)")->required();
  app.add_option("-o,--output", o.outputs,
                 "Output: .npz (the fragment lists), and/or .vdb, .ply, .raw, .npy (fragments per voxel); repeatable")
      ->required()
      ->allow_extra_args(false);  // one file per -o: "-o a.npz in.obj" leaves in.obj the input
  add_grid_options(app, o.grid);
  add_load_options(app, o.load);
  app.add_option("--mode,-m", o.mode, "thin (6-separating) or conservative (26-separating)")
      ->check(CLI::IsMember({"thin", "conservative"}))
      ->capture_default_str();
  app.add_option("--attrs", o.attrs,
                 "Per-fragment attributes, comma-separated: bary, normal, uv, material (\"\" for triangle ids only)")
      ->capture_default_str();
  add_device_options(app, o.device,
                     "GPU memory budget in bytes (default 80% of free); larger grids go in x-slabs");
  app.add_flag("--stats", o.stats, "Print a JSON summary to stdout (counts, timings, checksum)");
  add_grid_output_options(app, o.writing);
  add_verbosity_flags(app, o.verbosity, "Per-stage details on stderr");
}

int run_bucket(const BucketCmdOptions& o) {
  Log log{o.verbosity};
  BucketOptions bopt;
  bopt.mode = o.mode == "thin" ? VoxelMode::kThin : VoxelMode::kConservative;
  bopt.attrs = parse_bucket_attrs(o.attrs);
  bopt.threads = o.device.threads;
  std::vector<std::pair<std::string, OutputFormat>> grids;  // count-grid outputs
  for (size_t i = 0; i < o.outputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (o.outputs[i] == o.outputs[j]) fail(ErrorKind::kUsage, o.outputs[i] + ": given twice as an output");
    if (o.outputs[i] == "-")
      fail(ErrorKind::kUsage, o.outputs[i] + ": bucket writes files (an .npz archive, count grids), not standard output");
    if (!is_npz(o.outputs[i])) grids.push_back({o.outputs[i], format_from_path(o.outputs[i])});
  }
  const GridOptions grid_options = o.grid.to_options();

  std::unique_ptr<Voxelizer> voxelizer = open_voxelizer(o.device, log);

  const auto t_start = Clock::now();
  const LoadedInput in = load_input(o.input, grid_options, log, o.load.kind(), nullptr, o.load.limits());
  const MeshLoadResult& loaded = in.loaded;
  const GridSpec& spec = in.spec;
  const double ms_load = in.ms_load;
  Buckets b;
  VoxelizeStats st;
  try {
    const ProgressStage stage("bucket (" + voxelizer->device_name() + ")");
    voxelizer->set_mesh(loaded.mesh);
    b = voxelizer->bucket(spec, bopt, &st);
  } catch (const Error& e) {
    throw Error(e.kind(), o.input + ": " + e.what());
  }
  const auto t_write = Clock::now();
  for (const std::string& out : o.outputs)
    if (is_npz(out)) {
      const ProgressStage stage("write " + out);
      write_buckets_npz(b, out);
    }
  if (!grids.empty()) {
    const WriteOptions wopt =
        o.writing.write_options({{"source", o.input}, {"mode", o.mode}, {"target", "fragments"}, {"version", VOXTILE_VERSION}});
    const SparseGrid count = b.count_grid();
    for (const auto& [path, format] : grids) write_grid(count, path, format, wopt);
  }
  const double ms_write = ms_since(t_write), ms_total = ms_since(t_start);
  std::ostringstream line;
  line.precision(3);
  line << o.input << ": " << loaded.mesh.num_triangles() << " triangles -> " << spec.dims.x << "x" << spec.dims.y << "x"
       << spec.dims.z << " grid, " << b.num_voxels() << " voxels, " << b.num_fragments() << " fragments (" << o.mode
       << ", " << st.device << ") in " << std::fixed << ms_total / 1000.0 << " s";
  log.info(line.str());
  for (const auto& [name, ms] : st.stage_ms) log.detail("  " + name + ": " + std::to_string(ms) + " ms");
  if (o.stats) {
    nlohmann::ordered_json j;
    j["input"] = o.input;
    j["triangles"] = loaded.mesh.num_triangles();
    j["grid"] = {{"dims", {spec.dims.x, spec.dims.y, spec.dims.z}}};
    j["mode"] = o.mode;
    j["attrs"] = o.attrs;
    j["device"] = st.device;
    j["voxels"] = b.num_voxels();
    j["fragments"] = b.num_fragments();
    j["checksum"] = hex64(b.checksum());
    auto stages = st.stage_ms;
    stages.insert(stages.begin(), {"load", ms_load});
    stages.emplace_back("write", ms_write);
    stages.emplace_back("total", ms_total);
    j["timings_ms"] = stages_json(stages);
    print_json_line(j);
  }
  return 0;
}

}  // namespace voxtile
