// One voxelization job: load, voxelize, write, report.
#include "cli/job.h"

#include <future>
#include <sstream>

#include "cli/preview.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/timer.h"
#include "io/files.h"

namespace voxtile {

VoxelMode parse_mode(const std::string& mode) { return mode == "thin" ? VoxelMode::kThin : VoxelMode::kConservative; }

void check_job(const Job& job) {
  const std::vector<TargetSpec> targets = parse_target_list(job.target);
  job.grid.to_options();
  parse_loader(job.loader);
  parse_inside(job.inside);
  if (job.band < 1 || job.band > 64) fail(ErrorKind::kUsage, "--band must be 1 to 64 voxels (got " + std::to_string(job.band) + ")");
  if (targets.size() > 1 && holds_one_grid(job.format))
    fail(ErrorKind::kUsage, job.output + ": a ." + format_name(job.format) +
                                " file holds one target; write several targets to .vdb or .ply");
  if (!job.preview.empty()) {
    if (!png_output(job.preview)) fail(ErrorKind::kUsage, job.preview + ": --preview writes a .png");
    if (job.preview == job.output) fail(ErrorKind::kUsage, job.preview + ": the picture would replace the grid output");
  }
}

void check_job_output(const Job& job, const GridSpec& spec, const WriteOptions& base) {
  for (const TargetSpec& t : parse_target_list(job.target))
    check_grid_output(spec, target_value_type(t.target), job.output, job.format, base);
}

std::string job_options(const Job& job) {
  std::string s = options_string(job.mode, job.target, job.grid);
  bool solid = false, sdf = false;
  for (const TargetSpec& t : parse_target_list(job.target)) {
    solid |= t.target == Target::kSolid;
    sdf |= t.target == Target::kSdf;
  }
  if (solid || sdf) s += " inside=" + job.inside;
  if (sdf) s += " band=" + std::to_string(job.band);
  return s;
}

LoadedInput load_job(const Job& job, const Log& log, JobReport& report, MeshLoaderPool* loaders,
                     const LoaderLimits& limits) {
  LoadedInput in = load_input(job.input, job.grid.to_options(), log, parse_loader(job.loader), loaders, limits);
  report.reader = in.loaded.format;
  report.ms_load = in.ms_load;
  report.triangles = in.loaded.mesh.num_triangles();
  report.dropped_degenerate = in.loaded.mesh.dropped_degenerate;
  report.dropped_nonfinite = in.loaded.mesh.dropped_nonfinite;
  report.dropped_bad_index = in.loaded.dropped_bad_index;
  report.spec = in.spec;
  return in;
}

std::vector<SparseGrid> voxelize_job(Voxelizer& voxelizer, const Job& job, const LoadedInput& input, JobReport& report) {
  const auto t0 = Clock::now();
  VoxelizeOptions options;
  options.mode = parse_mode(job.mode);
  options.inside = parse_inside(job.inside);
  options.band = job.band;
  VoxelizeStats st;
  std::vector<SparseGrid> grids;
  const ProgressStage stage("voxelize (" + voxelizer.device_name() + ")");
  try {
    voxelizer.set_mesh(input.loaded.mesh);
    grids = voxelizer.voxelize(input.spec, options, parse_target_list(job.target), &st);
  } catch (const Error& e) {
    throw Error(e.kind(), job.input + ": " + e.what());
  }
  report.device = st.device;
  report.gpu = voxelizer.gpu_index();
  report.active_voxels = st.active_voxels;
  report.bricks = st.bricks;
  report.tile_pairs = st.tile_pairs;
  report.tiles = st.tiles;
  report.voxelize_stages = st.stage_ms;
  report.ms_voxelize = ms_since(t0);
  return grids;
}

void write_job(const Job& job, const std::vector<SparseGrid>& grids, const WriteOptions& base,
               const std::string& fingerprint, JobReport& report) {
  const auto t0 = Clock::now();
  WriteOptions w = base;
  w.meta = {{"source", job.input},
            {"options", job_options(job)},
            {"version", VOXTILE_VERSION},
            {"mode", job.mode},
            {"target", job.target}};
  if (!fingerprint.empty()) w.meta.push_back({"job", fingerprint});
  if (job.make_dirs) make_parent_dirs(job.output);
  // The checksums (one pass over every value) are taken on another thread while the file is written.
  std::future<nlohmann::ordered_json> sums = std::async(std::launch::async, [&] { return grids_json(grids); });
  try {
    write_grids(grids, job.output, job.format, w);
  } catch (...) {
    sums.wait();
    throw;
  }
  report.grids = sums.get();
  report.checksum = report.grids[0]["checksum"].get<std::string>();
  report.ms_write = ms_since(t0);
  if (!job.preview.empty()) {
    const auto tp = Clock::now();
    if (job.make_dirs) make_parent_dirs(job.preview);
    try {
      write_picture(grid_pointers(grids), job.picture, job.preview, report.gpu);
    } catch (const Error& e) {
      throw Error(e.kind(), job.input + ": " + e.what());
    }
    report.ms_preview = ms_since(tp);
  }
}

JobReport run_job(const std::function<Voxelizer&()>& voxelizer, const Job& job, const WriteOptions& base,
                  const Log& log, MeshLoaderPool* loaders) {
  const auto t0 = Clock::now();
  JobReport report;
  const LoadedInput in = load_job(job, log, report, loaders);
  check_job_output(job, in.spec, base);
  const auto t_wait = Clock::now();
  Voxelizer& v = voxelizer();  // may still be starting (GPU context) while the mesh loaded
  report.ms_gpu_wait = ms_since(t_wait);
  const std::vector<SparseGrid> grids = voxelize_job(v, job, in, report);
  write_job(job, grids, base, "", report);
  report.ms_total = ms_since(t0);
  report.status = "ok";
  return report;
}

std::vector<SparseGrid> voxelize_mesh_input(const Job& job, const DeviceArgs& device, const LoaderLimits& limits,
                                            const Log& log, int& gpu, std::string& source,
                                            std::vector<std::pair<std::string, double>>& stages) {
  check_job(job);
  std::unique_ptr<Voxelizer> voxelizer = open_voxelizer(device, log, &gpu);
  JobReport report;
  const LoadedInput in = load_job(job, log, report, nullptr, limits);
  stages.emplace_back("load", report.ms_load);
  std::vector<SparseGrid> grids = voxelize_job(*voxelizer, job, in, report);
  stages.emplace_back("voxelize", report.ms_voxelize);
  source = std::to_string(report.triangles) + " triangles -> " + job.target + " " + in.spec.describe() + " (" +
           report.device + ")";
  if (voxelizer->on_gpu()) voxelizer.release();  // reclaimed at the process's end (as voxelize does)
  return grids;
}

std::string job_summary(const Job& job, const JobReport& r) {
  std::ostringstream line;
  line.precision(3);
  line << job.input << ": " << r.triangles << " triangles -> " << r.spec.dims.x << "x" << r.spec.dims.y << "x"
       << r.spec.dims.z << " grid, " << r.active_voxels << " voxels (" << job.target << ", " << job.mode << ", "
       << r.device << ") -> " << job.output << " in " << std::fixed << r.ms_total / 1000.0 << " s";
  return line.str();
}

nlohmann::ordered_json stats_json(const Job& job, const JobReport& r) {
  const GridSpec& s = r.spec;
  nlohmann::ordered_json j;
  j["input"] = job.input;
  j["output"] = job.output;
  if (!job.preview.empty()) j["preview"] = job.preview;
  j["format"] = format_name(job.format);
  j["reader"] = r.reader;
  j["triangles"] = r.triangles;
  j["dropped_degenerate"] = r.dropped_degenerate;
  j["dropped_nonfinite"] = r.dropped_nonfinite;
  j["dropped_bad_index"] = r.dropped_bad_index;
  j["grid"] = {{"dims", {s.dims.x, s.dims.y, s.dims.z}},
               {"voxel_size", {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z}},
               {"origin", {s.origin.x, s.origin.y, s.origin.z}}};
  j["mode"] = job.mode;
  j["target"] = job.target;
  j["device"] = r.device;
  j["active_voxels"] = r.active_voxels;
  j["bricks"] = r.bricks;
  j["tile_pairs"] = r.tile_pairs;
  j["tiles"] = r.tiles;
  j["checksum"] = r.checksum;
  j["grids"] = r.grids;
  nlohmann::ordered_json t;
  t["load"] = r.ms_load;
  if (r.ms_voxelizer_start >= 0) t["voxelizer_start"] = r.ms_voxelizer_start;
  if (r.ms_gpu_wait >= 0) t["voxelizer_wait"] = r.ms_gpu_wait;
  for (const auto& [name, ms] : r.voxelize_stages) t[name] = ms;
  t["write"] = r.ms_write;
  if (r.ms_preview >= 0) t["preview"] = r.ms_preview;
  t["total"] = r.ms_total;
  j["timings_ms"] = t;
  return j;
}

}  // namespace voxtile
