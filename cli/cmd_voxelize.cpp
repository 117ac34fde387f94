// `voxtile voxelize IN... -o OUT`: load, voxelize (CPU or GPU), write.
#include "cli/cmd_voxelize.h"

#include <sys/stat.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "io/mesh_reader.h"
#include "io/writers.h"
#include "kernels/api.h"

namespace voxtile {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string stem_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

VoxelMode parse_mode(const std::string& m) { return m == "thin" ? VoxelMode::kThin : VoxelMode::kConservative; }

struct Job {
  std::string input, output;
  OutputFormat format;
};

std::vector<Job> plan_jobs(const VoxelizeCmdOptions& o, size_t num_targets) {
  std::vector<Job> jobs;
  const bool dir_out = is_dir(o.output) || (!o.output.empty() && o.output.back() == '/');
  if (o.inputs.size() > 1 && !dir_out)
    fail(ErrorKind::kUsage, "several inputs need -o to name an existing directory (got " + o.output + ")");
  if (dir_out && !is_dir(o.output)) fail(ErrorKind::kOutput, o.output + ": directory does not exist");
  std::map<std::string, std::string> seen;
  for (const std::string& in : o.inputs) {
    Job j;
    j.input = in;
    if (dir_out) {
      j.format = o.format.empty() ? OutputFormat::kVdb : parse_format(o.format);
      std::string dir = o.output;
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      j.output = dir + "/" + stem_of(in) + "." + format_name(j.format);
    } else {
      j.output = o.output;
      j.format = o.format.empty() ? format_from_path(o.output) : parse_format(o.format);
    }
    if (num_targets > 1 && (j.format == OutputFormat::kNpy || j.format == OutputFormat::kRaw))
      fail(ErrorKind::kUsage, j.output + ": a ." + format_name(j.format) +
                                  " file holds one target; write several targets to .vdb or .ply");
    auto [it, fresh] = seen.emplace(j.output, in);
    if (!fresh) fail(ErrorKind::kUsage, in + " and " + it->second + " would both write " + j.output);
    jobs.push_back(j);
  }
  return jobs;
}

void print_stats_json(const Job& job, const MeshLoadResult& loaded, const std::vector<SparseGrid>& grids,
                      const VoxelizeCmdOptions& o, const VoxelizeStats& st, double ms_load, double ms_write,
                      double ms_total) {
  const SparseGrid& grid = grids[0];
  const GridSpec& s = grid.spec;
  std::ostringstream j;
  j << "{\"input\":" << json_string(job.input) << ",\"output\":" << json_string(job.output)
    << ",\"format\":" << json_string(format_name(job.format)) << ",\"triangles\":" << loaded.mesh.num_triangles()
    << ",\"dropped_degenerate\":" << loaded.mesh.dropped_degenerate
    << ",\"dropped_nonfinite\":" << loaded.mesh.dropped_nonfinite << ",\"dropped_bad_index\":" << loaded.dropped_bad_index
    << ",\"grid\":{\"dims\":[" << s.dims.x << "," << s.dims.y << "," << s.dims.z << "],\"voxel_size\":["
    << json_number(s.voxel_size.x) << "," << json_number(s.voxel_size.y) << "," << json_number(s.voxel_size.z)
    << "],\"origin\":[" << json_number(s.origin.x) << "," << json_number(s.origin.y) << "," << json_number(s.origin.z)
    << "]},\"mode\":" << json_string(o.mode) << ",\"target\":" << json_string(o.target)
    << ",\"device\":" << json_string(st.device) << ",\"active_voxels\":" << st.active_voxels
    << ",\"bricks\":" << st.bricks << ",\"tile_pairs\":" << st.tile_pairs << ",\"tiles\":" << st.tiles
    << ",\"checksum\":\"" << std::hex << grid.checksum() << std::dec << "\",\"grids\":" << json_grids(grids);
  j << ",\"timings_ms\":{\"load\":" << json_number(ms_load) << json_stage_times(st.stage_ms);
  j << ",\"write\":" << json_number(ms_write) << ",\"total\":" << json_number(ms_total) << "}}";
  std::cout << j.str() << std::endl;
}

}  // namespace

void setup_voxelize(CLI::App& app, VoxelizeCmdOptions& o) {
  app.add_option("inputs", o.inputs, "Mesh files (any format Assimp reads)")->required();
  app.add_option("-o,--output", o.output, "Output file (.vdb .ply .raw .npy), or a directory for several inputs")
      ->required();
  add_format_option(app, o.format, "Output format: vdb, ply, raw or npy (default: from the extension)");
  add_grid_options(app, o.grid);
  app.add_option("--mode,-m", o.mode, "thin (6-separating) or conservative (26-separating)")
      ->check(CLI::IsMember({"thin", "conservative"}))
      ->capture_default_str();
  app.add_option("--target,-t", o.target,
                 "TARGET[:BLEND][,...]: binary (occupancy), count (triangles per voxel), id (triangle index; "
                 "min|max), distance (world distance from the voxel centre to the triangle; min|max|add), normal "
                 "(unit normal, packed max | float3 add). Several targets (comma-separated) share one binning and "
                 "go to one .vdb or .ply")
      ->capture_default_str();
  add_device_options(app, o.device, o.gpu_memory, o.threads,
                     "GPU memory budget in bytes (default 80% of free); larger jobs are split into batches");
  app.add_flag("--stats", o.stats, "Print a JSON summary per input to stdout (counts, timings, checksum)");
  add_dense_options(app, o.dense_limit, o.force);
  add_verbosity_flags(app, o.verbosity, "Per-stage details on stderr");
}

int run_voxelize(const VoxelizeCmdOptions& o) {
  Log log{o.verbosity};
  const std::vector<TargetSpec> targets = parse_target_list(o.target);
  const std::vector<Job> jobs = plan_jobs(o, targets.size());
  const GridOptions grid_options = o.grid.to_options();
  VoxelizeOptions vopt;
  vopt.mode = parse_mode(o.mode);
  vopt.threads = o.threads;

  std::unique_ptr<GpuVoxelizer> gpu = open_gpu(o.device, o.gpu_memory, log);

  WriteOptions wopt;
  wopt.dense.force = o.force;
  if (o.dense_limit) wopt.dense.limit_bytes = o.dense_limit;

  int status = 0;
  for (const Job& job : jobs) {
    try {
      const auto t_start = Clock::now();
      const LoadedInput in = load_input(job.input, grid_options, log);
      const MeshLoadResult& loaded = in.loaded;
      const GridSpec& spec = in.spec;
      const double ms_load = in.ms_load;
      VoxelizeStats st;
      std::vector<SparseGrid> grids;
      if (gpu) {
        gpu->set_mesh(loaded.mesh);
        grids = gpu->voxelize_targets(spec, vopt, targets, &st);
      } else {
        grids = voxelize_cpu_targets(loaded.mesh, spec, vopt, targets, &st);
      }
      // Grids are named by target; a lone binary grid keeps the name "voxels".
      if (targets.size() == 1 && targets[0].target == Target::kBinary) grids[0].name = "voxels";
      wopt.meta = {{"source", job.input},
                   {"options", options_string(o.mode, o.target, o.grid)},
                   {"version", VOXTILE_VERSION},
                   {"mode", o.mode},
                   {"target", o.target}};
      auto t_write = Clock::now();
      write_grids(grids, job.output, job.format, wopt);
      const double ms_write = ms_since(t_write), ms_total = ms_since(t_start);
      std::ostringstream line;
      line.precision(3);
      line << job.input << ": " << loaded.mesh.num_triangles() << " triangles -> " << spec.dims.x << "x" << spec.dims.y
           << "x" << spec.dims.z << " grid, " << st.active_voxels << " voxels (" << o.target << ", " << o.mode << ", "
           << st.device << ") -> " << job.output << " in " << std::fixed << ms_total / 1000.0 << " s";
      log.info(line.str());
      for (const auto& [name, ms] : st.stage_ms) log.detail("  " + name + ": " + std::to_string(ms) + " ms");
      if (o.stats) print_stats_json(job, loaded, grids, o, st, ms_load, ms_write, ms_total);
    } catch (const Error& e) {
      std::cerr << "voxtile: error: " << e.what() << "\n";
      if (!status) status = static_cast<int>(e.kind());
    }
  }
  return status;
}

}  // namespace voxtile
