// `voxtile preview IN -o OUT.png`: ray-marched picture of a grid (core/render.h) on the GPU or the
// CPU; mesh inputs are voxelized first (-t, default binary), point clouds binned (occupancy, colour).
#include "cli/cmd_preview.h"

#include <algorithm>
#include <sstream>

#include "cli/job.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/timer.h"
#include "io/files.h"
#include "io/grid_reader.h"

namespace voxtile {

void setup_preview(CLI::App& app, PreviewCmdOptions& o) {
  app.add_option("input", o.input,
                 "A grid (.vdb .npy .raw .npz .binvox .vox, voxel-centre .ply), a mesh, voxelized first (see -t), "
                 "or a point cloud (.xyz .pts .las, .ply without faces), binned first")
      ->required();
  app.add_option("-o,--output", o.output, "Output picture (.png; - for stdout)")->required();
  app.add_option("--grid", o.grid_name,
                 "The grid whose voxels are drawn (default: the first; level sets: the voxels at or below --iso)");
  add_picture_options(app, o.picture);
  add_grid_options(app, o.grid);
  add_load_options(app, o.load);
  app.add_option("--mode,-m", o.mode, "Mesh inputs: thin or conservative")
      ->check(CLI::IsMember({"thin", "conservative"}))
      ->capture_default_str();
  app.add_option("--target,-t", o.target, "Mesh inputs: the targets voxelized (as voxelize -t); the first is drawn")
      ->capture_default_str();
  add_solid_options(app, o.solid);
  add_device_options(app, o.device, "GPU memory budget in bytes for mesh inputs (default 80% of free)");
  app.add_flag("--stats", o.stats, "Print a JSON summary to stdout (picture, counts, timings)");
  add_verbosity_flags(app, o.verbosity, "Per-stage details on stderr");
}

int run_preview(const PreviewCmdOptions& o) {
  Log log{o.verbosity};
  const ThreadLimit threads(o.device.threads);
  const auto t0 = Clock::now();
  RenderOptions options = o.picture.options();
  options.shape = o.grid_name;
  if (!png_output(o.output)) fail(ErrorKind::kUsage, o.output + ": the picture is written as .png");
  check_standard_output({{o.output, true}}, o.stats);
  std::vector<std::pair<std::string, double>> stages;
  std::vector<SparseGrid> grids;
  std::string source;
  int gpu = -2;  // not chosen yet
  const InputKind kind = input_kind(o.input);
  if (kind == InputKind::kGrid) {
    grids = std::move(read_grid_input(o.input, o.grid.to_options(), stages).grids);
    source = std::to_string(grids.size()) + (grids.size() == 1 ? " grid" : " grids");
  } else if (kind == InputKind::kPoints) {
    grids = read_point_input(o.input, o.grid.to_options(), log, source, stages);
  } else {
    Job job;
    job.input = o.input;
    job.output = o.output;
    job.grid = o.grid;
    job.loader = o.load.loader;
    job.mode = o.mode;
    job.target = o.target;
    job.inside = o.solid.inside;
    job.band = o.solid.band;
    grids = voxelize_mesh_input(job, o.device, o.load.limits(), log, gpu, source, stages);
  }
  // A grid file, or a mesh voxelized on the CPU as a small job (cli/job.h).
  if (gpu == -2) gpu = picture_gpu(o.device.device, options, log);
  PictureInfo pic;
  try {
    pic = write_picture(grid_pointers(grids), options, o.output, gpu, &stages);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUsage) throw Error(e.kind(), o.input + ": " + e.what());
    throw;
  }
  std::ostringstream line;
  line << o.input << ": " << source << ", " << pic.voxels << " voxels of '" << pic.shape << "'"
       << (pic.color.empty() ? "" : " coloured by '" + pic.color + "'") << " -> " << o.output << " (" << options.width
       << "x" << options.height << ", " << (gpu >= 0 ? "gpu" : "cpu") << ")";
  log.info(line.str());
  if (o.stats) {
    stages.insert(stages.begin(), {"total", ms_since(t0)});
    nlohmann::ordered_json j = {{"input", o.input},       {"output", o.output},
                                {"width", options.width}, {"height", options.height},
                                {"view", options.view},   {"device", gpu >= 0 ? "gpu" : "cpu"},
                                {"grid", pic.shape},      {"voxels", pic.voxels},
                                {"color", pic.color},     {"color_mode", pic.color_mode}};
    j["timings_ms"] = stages_json(stages);
    print_json_line(j);
  }
  return 0;
}

}  // namespace voxtile
