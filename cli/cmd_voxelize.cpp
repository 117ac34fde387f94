// `voxtile voxelize IN... -o OUT`: one job per input (cli/job.h) on one voxelizer.
#include "cli/cmd_voxelize.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include "cli/batch/plan.h"
#include "cli/job.h"
#include "core/error.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/writers.h"

namespace voxtile {
namespace {

std::string stem_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

// One job per input: OUT is the file, or the directory of OUT/<stem>.<format>.
std::vector<Job> plan_jobs(const VoxelizeCmdOptions& o) {
  std::vector<Job> jobs;
  const bool existing_dir = is_directory(o.output);
  const bool dir_out = existing_dir || (!o.output.empty() && o.output.back() == '/');
  if (o.inputs.size() > 1 && !dir_out)
    fail(ErrorKind::kUsage, "several inputs need -o to name an existing directory (got " + o.output + ")");
  if (dir_out && !existing_dir) fail(ErrorKind::kOutput, o.output + ": directory does not exist");
  std::map<std::string, std::string> seen;
  const RenderOptions picture = o.preview.path.empty() ? RenderOptions{} : o.preview.picture.options();
  for (const std::string& in : o.inputs) {
    Job j;
    j.index = jobs.size();
    j.input = in;
    j.grid = o.grid;
    j.mode = o.mode;
    j.target = o.target;
    j.loader = o.load.loader;
    j.inside = o.solid.inside;
    j.band = o.solid.band;
    if (dir_out) {
      j.format = o.format.empty() ? OutputFormat::kVdb : parse_format(o.format);
      std::string dir = o.output;
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      j.output = dir + "/" + stem_of(in) + "." + format_name(j.format);
    } else {
      j.output = o.output;
      j.format = o.format.empty() ? format_from_path(o.output) : parse_format(o.format);
    }
    if (!o.preview.path.empty()) {
      j.preview = expand_template(o.preview.path, j, "--preview");
      j.picture = picture;
    }
    check_job(j);
    check_standard_output({{j.output, binary_format(j.format)}, {j.preview, true}}, o.stats);
    for (const std::string* path : {&j.output, &j.preview}) {
      if (path->empty()) continue;
      auto [it, fresh] = seen.emplace(is_standard_output(*path) ? "-" : *path, in);
      if (!fresh) fail(ErrorKind::kUsage, in + " and " + it->second + " would both write " + *path);
    }
    jobs.push_back(j);
  }
  return jobs;
}

}  // namespace

void setup_voxelize(CLI::App& app, VoxelizeCmdOptions& o) {
  app.add_option("inputs", o.inputs, "Mesh files (any format Assimp reads)")->required();
  app.add_option("-o,--output", o.output, "Output file (.vdb .ply .las .xyz .raw .npy .binvox .vox; - for stdout), or a directory for several inputs")
      ->required();
  add_format_option(app, o.format, "Output format: vdb, ply, las, xyz, raw, npy, binvox or vox (default: from the extension)");
  add_grid_options(app, o.grid);
  add_load_options(app, o.load);
  app.add_option("--mode,-m", o.mode, "thin (6-separating) or conservative (26-separating)")
      ->check(CLI::IsMember({"thin", "conservative"}))
      ->capture_default_str();
  app.add_option("--target,-t", o.target,
                 "TARGET[:BLEND][,...]: binary (occupancy), count (triangles per voxel), id (triangle index; "
                 "min|max), distance (world distance from the voxel centre to the triangle; min|max|add), normal "
                 "(unit normal, packed max | float3 add), solid (the surface plus every voxel whose centre is inside; "
                 "see --inside), sdf (narrow-band signed distance, negative inside; an OpenVDB level set in .vdb; see "
                 "--band). Several targets (comma-separated) share one binning and go to one .vdb or .ply")
      ->capture_default_str();
  add_solid_options(app, o.solid);
  add_device_options(app, o.device,
                     "GPU memory budget in bytes (default 80% of free); larger jobs are split into batches");
  app.add_flag("--stats", o.stats, "Print a JSON summary per input to stdout (counts, timings, checksum)");
  add_grid_output_options(app, o.writing);
  add_preview_options(app, o.preview, true);
  add_verbosity_flags(app, o.verbosity, "Per-stage details on stderr");
}

int run_voxelize(const VoxelizeCmdOptions& o) {
  Log log{o.verbosity};
  const std::vector<Job> jobs = plan_jobs(o);
  // A reader process for the files Assimp reads, forked first, while this process is one thread.
  const bool assimp = std::any_of(jobs.begin(), jobs.end(), [&](const Job& j) { return !reads_natively(j.input, o.load.kind()); });
  const auto readers = std::make_unique<MeshLoaderPool>(assimp ? 1 : 0, o.load.limits());
  // The voxelizer starts while the first mesh loads (small jobs may not wait for it: job.h).
  VoxelizerStart start(o.device, log);
  const WriteOptions base = o.writing.write_options({});
  const ThreadLimit limit(o.device.threads);
  int status = 0;
  for (const Job& job : jobs) {
    try {
      const bool first = !start.took_started();
      JobReport r = run_job([&](const LoadedInput& in) -> Voxelizer& { return start.pick(job, in); }, job, base, log,
                            readers.get());
      if (first && start.took_started()) r.ms_voxelizer_start = start.start_ms();
      log.info(job_summary(job, r));
      for (const auto& [name, ms] : r.voxelize_stages) log.detail("  " + name + ": " + std::to_string(ms) + " ms");
      if (o.stats) print_json_line(stats_json(job, r));
    } catch (const Error& e) {
      std::cerr << "voxtile: error: " << e.what() << "\n";
      if (!status) status = static_cast<int>(e.kind());
      if (start.failed()) break;  // no voxelizer: the other inputs cannot run either
    }
  }
  return status;
}

}  // namespace voxtile
