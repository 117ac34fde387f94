// `voxtile bucket IN -o OUT.npz [-o COUNT.vdb]`: load, bucket (CPU or GPU), write.
#include "cli/cmd_bucket.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/bucket.h"
#include "core/error.h"
#include "io/mesh_reader.h"
#include "io/npz.h"
#include "io/writers.h"
#include "kernels/api.h"

namespace voxtile {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

bool is_npz(const std::string& path) {
  return path.size() >= 4 && (path.compare(path.size() - 4, 4, ".npz") == 0 || path.compare(path.size() - 4, 4, ".NPZ") == 0);
}

}  // namespace

void setup_bucket(CLI::App& app, BucketCmdOptions& o) {
  app.add_option("input", o.input, "Mesh file (any format Assimp reads)")->required();
  app.add_option("-o,--output", o.outputs,
                 "Output: .npz (the fragment lists), and/or .vdb, .ply, .raw, .npy (fragments per voxel); repeatable")
      ->required();
  add_grid_options(app, o.grid);
  app.add_option("--mode,-m", o.mode, "thin (6-separating) or conservative (26-separating)")
      ->check(CLI::IsMember({"thin", "conservative"}))
      ->capture_default_str();
  app.add_option("--attrs", o.attrs,
                 "Per-fragment attributes, comma-separated: bary, normal, uv, material (\"\" for triangle ids only)")
      ->capture_default_str();
  add_device_options(app, o.device, o.gpu_memory, o.threads,
                     "GPU memory budget in bytes (default 80% of free); larger grids go in x-slabs");
  app.add_flag("--stats", o.stats, "Print a JSON summary to stdout (counts, timings, checksum)");
  add_dense_options(app, o.dense_limit, o.force);
  add_verbosity_flags(app, o.verbosity, "Per-stage details on stderr");
}

int run_bucket(const BucketCmdOptions& o) {
  Log log{o.verbosity};
  BucketOptions bopt;
  bopt.mode = o.mode == "thin" ? VoxelMode::kThin : VoxelMode::kConservative;
  bopt.attrs = parse_bucket_attrs(o.attrs);
  bopt.threads = o.threads;
  std::vector<std::pair<std::string, OutputFormat>> grids;  // count-grid outputs
  for (size_t i = 0; i < o.outputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (o.outputs[i] == o.outputs[j]) fail(ErrorKind::kUsage, o.outputs[i] + ": given twice as an output");
    if (!is_npz(o.outputs[i])) grids.push_back({o.outputs[i], format_from_path(o.outputs[i])});
  }
  const GridOptions grid_options = o.grid.to_options();

  std::unique_ptr<GpuVoxelizer> gpu = open_gpu(o.device, o.gpu_memory, log);

  const auto t_start = Clock::now();
  const LoadedInput in = load_input(o.input, grid_options, log);
  const MeshLoadResult& loaded = in.loaded;
  const GridSpec& spec = in.spec;
  const double ms_load = in.ms_load;
  Buckets b;
  VoxelizeStats st;
  try {
    b = gpu ? gpu->bucket(loaded.mesh, spec, bopt, &st) : bucket_cpu(loaded.mesh, spec, bopt, &st);
  } catch (const Error& e) {
    throw Error(e.kind(), o.input + ": " + e.what());
  }
  const auto t_write = Clock::now();
  for (const std::string& out : o.outputs)
    if (is_npz(out)) write_buckets_npz(b, out);
  if (!grids.empty()) {
    WriteOptions wopt;
    wopt.dense.force = o.force;
    if (o.dense_limit) wopt.dense.limit_bytes = o.dense_limit;
    wopt.meta = {{"source", o.input}, {"mode", o.mode}, {"target", "fragments"}, {"version", VOXTILE_VERSION}};
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
    std::ostringstream j;
    j << "{\"input\":" << json_string(o.input) << ",\"triangles\":" << loaded.mesh.num_triangles() << ",\"grid\":{\"dims\":["
      << spec.dims.x << "," << spec.dims.y << "," << spec.dims.z << "]},\"mode\":" << json_string(o.mode)
      << ",\"attrs\":" << json_string(o.attrs) << ",\"device\":" << json_string(st.device)
      << ",\"voxels\":" << b.num_voxels() << ",\"fragments\":" << b.num_fragments() << ",\"checksum\":\"" << std::hex
      << b.checksum() << std::dec << "\",\"timings_ms\":{\"load\":" << json_number(ms_load) << json_stage_times(st.stage_ms);
    j << ",\"write\":" << json_number(ms_write) << ",\"total\":" << json_number(ms_total) << "}}";
    std::cout << j.str() << std::endl;
  }
  return 0;
}

}  // namespace voxtile
