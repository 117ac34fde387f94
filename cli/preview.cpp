// Picture options and writing (cli/preview.h).
#include "cli/preview.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "core/timer.h"
#include "core/voxelize.h"
#include "io/files.h"
#include "io/ply.h"
#include "io/png.h"
#include "io/points_io.h"

namespace voxtile {

RenderOptions PictureArgs::options() const {
  RenderOptions o;
  parse_image_size(size, o.width, o.height);
  check_view(view);
  o.view = view;
  o.up = up == "z" ? 'z' : 'y';
  o.color = color;
  o.background = parse_background(background);
  if (!std::isfinite(iso)) fail(ErrorKind::kUsage, "--iso must be finite");
  o.iso = iso;
  if (!range.empty()) {
    const size_t comma = range.find(',');
    char* end = nullptr;
    bool ok = comma != std::string::npos;
    if (ok) {
      const std::string a = range.substr(0, comma), b = range.substr(comma + 1);
      o.range_lo = std::strtod(a.c_str(), &end);
      ok = !a.empty() && !*end;
      o.range_hi = std::strtod(b.c_str(), &end);
      ok = ok && !b.empty() && !*end && std::isfinite(o.range_lo) && std::isfinite(o.range_hi) &&
           o.range_lo < o.range_hi;
    }
    if (!ok) fail(ErrorKind::kUsage, "--range '" + range + "': expected LO,HI with LO < HI");
    o.has_range = true;
  }
  o.edges = !no_edges;
  o.ao = !no_ao;
  o.legend = !no_legend;
  return o;
}

namespace {

void add_size_view(CLI::App& app, PictureArgs& a, const std::string& prefix) {
  app.add_option("--" + prefix + "size", a.size, "Picture size in pixels: N or WxH")->capture_default_str();
  app.add_option("--" + prefix + "view", a.view,
                 "Camera: iso, front, back, left, right, top, bottom, or AZ,EL in degrees (azimuth from the front "
                 "towards the right, elevation towards the top)")
      ->capture_default_str();
}

}  // namespace

void add_picture_options(CLI::App& app, PictureArgs& a) {
  add_size_view(app, a, "");
  app.add_option("--up", a.up, "The world axis that points up in the picture")
      ->check(CLI::IsMember({"y", "z"}))
      ->capture_default_str();
  app.add_option("--color", a.color,
                 "Voxel colours: auto (a 'color' grid, else the drawn grid's own values), none (one colour), #rrggbb "
                 "(that colour), or a grid name. Counts and fields: a colour map with a legend; normals: RGB; ids and "
                 "classes: a palette")
      ->capture_default_str();
  app.add_option("--range", a.range, "Colour-map range LO,HI (default: the values' minimum and maximum)");
  app.add_option("--iso", a.iso, "Level sets: the voxels with value <= ISO are drawn")->capture_default_str();
  app.add_option("--background", a.background, "#rrggbb or transparent")->capture_default_str();
  app.add_flag("--no-edges", a.no_edges, "No voxel edge lines (drawn when voxels are 5 pixels or larger)");
  app.add_flag("--no-ao", a.no_ao, "No ambient occlusion");
  app.add_flag("--no-legend", a.no_legend, "No colour-map legend");
}

void add_preview_options(CLI::App& app, PreviewArgs& a, bool templated) {
  app.add_option("--preview", a.path,
                 templated ? "Also write a PNG picture of each result; a name template like --out "
                             "({dir} {stem} {name} {res} {target} {mode} {index}), e.g. '{dir}/{stem}.png'"
                           : "Also write a PNG picture of the result");
  add_size_view(app, a.picture, "preview-");
}

std::vector<const SparseGrid*> grid_pointers(const std::vector<SparseGrid>& grids) {
  std::vector<const SparseGrid*> out;
  for (const SparseGrid& g : grids) out.push_back(&g);
  return out;
}

PictureInfo write_picture(const std::vector<const SparseGrid*>& grids, const RenderOptions& options,
                          const std::string& path, int gpu, std::vector<std::pair<std::string, double>>* stages) {
  const auto t0 = Clock::now();
  const ProgressStage stage("picture " + path);
  // The renderer walks bricks: a solid's interior runs are written out first.
  std::vector<SparseGrid> storage(grids.size());
  std::vector<const SparseGrid*> bricks;
  for (size_t i = 0; i < grids.size(); ++i) bricks.push_back(&expanded_runs(*grids[i], storage[i]));
  const RenderScene scene = make_scene(bricks, options);
  std::vector<std::pair<std::string, double>> gpu_stages;
  const Image image = gpu >= 0 ? gpu_render(scene, options, gpu, &gpu_stages) : render_cpu(scene, options);
  write_png(image, path);
  if (stages) {
    stages->emplace_back("picture", ms_since(t0));
    for (const auto& s : gpu_stages) stages->emplace_back("picture_" + s.first, s.second);
  }
  PictureInfo info;
  info.shape = scene.shape_name;
  info.color = scene.color_name;
  info.color_mode = scene.color_mode;
  info.voxels = scene.voxels;
  return info;
}

std::vector<SparseGrid> cloud_grids(const PointCloud& cloud, const GridSpec& spec) {
  std::vector<std::string> values = {"occupancy"};
  if (!cloud.colors.empty()) values.push_back("color");
  std::vector<SparseGrid> grids = bins_to_grids(bin_points_cpu(cloud, spec), spec, values);
  grids[0].name = "voxels";
  return grids;
}

PictureInfo write_cloud_picture(const PointCloud& cloud, const RenderOptions& options, const std::string& path, int gpu,
                                std::vector<std::pair<std::string, double>>* stages) {
  GridOptions go;
  go.resolution = 256;
  const Bounds b = point_bounds(cloud);
  if (b.empty()) fail(ErrorKind::kInput, path + ": no point to picture");
  const std::vector<SparseGrid> grids = cloud_grids(cloud, make_grid_spec(b, go));
  return write_picture(grid_pointers(grids), options, path, gpu, stages);
}

PointCloud load_point_input(const std::string& path, const Log& log,
                            std::vector<std::pair<std::string, double>>& stages) {
  const auto t0 = Clock::now();
  PointCloud pc;
  {
    const ProgressStage stage("load " + path);
    pc = read_point_cloud(path);
  }
  stages.emplace_back("load", ms_since(t0));
  if (pc.dropped_nonfinite)
    log.warn(path + ": dropped " + std::to_string(pc.dropped_nonfinite) + " points with NaN/Inf coordinates");
  return pc;
}

GridSpec point_grid_spec(const std::string& path, const PointCloud& cloud, const GridOptions& grid) {
  try {
    const GridSpec spec = make_grid_spec(point_bounds(cloud), grid);
    check_grid_dims(spec);
    return spec;
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
}

int picture_gpu(const std::string& device, const RenderOptions& options, const Log& log) {
  const double per_core = double(options.width) * options.height / std::max(1, cpu_threads());
  return device == "auto" && per_core <= 131072 ? -1 : pick_gpu(device, log);
}

std::vector<SparseGrid> read_point_input(const std::string& path, const GridOptions& grid, const Log& log,
                                         std::string& source, std::vector<std::pair<std::string, double>>& stages) {
  const PointCloud pc = load_point_input(path, log, stages);
  const GridSpec spec = point_grid_spec(path, pc, grid);
  const auto tb = Clock::now();
  std::vector<SparseGrid> grids;
  {
    const ProgressStage stage("bin " + path);
    grids = cloud_grids(pc, spec);
  }
  stages.emplace_back("bin", ms_since(tb));
  source = std::to_string(pc.size()) + " points binned on " + spec.describe();
  return grids;
}

GridFile read_grid_input(const std::string& path, const GridOptions& grid,
                         std::vector<std::pair<std::string, double>>& stages) {
  if (grid.resolution || grid.dims || grid.pad)
    fail(ErrorKind::kUsage, path +
                                ": a grid file keeps its grid; -r, --dims and --pad shape the grid of a mesh or "
                                "point cloud");
  const bool place = grid.voxel_size || grid.bbox;
  const auto t0 = Clock::now();
  GridFile f;
  {
    const ProgressStage stage("read " + path);
    f = read_grid_file(path);
  }
  stages.emplace_back("read", ms_since(t0));
  if (f.grids.empty()) fail(ErrorKind::kInput, path + ": no grid");
  if (place && f.has_transform)
    fail(ErrorKind::kUsage, path + ": the ." + f.format +
                                " file keeps its voxel size and origin; --voxel-size and --bbox place .npy and .vox "
                                "grids, which keep none");
  if (place) {
    GridOptions fit = grid;
    fit.dims = f.grids[0].spec.dims;
    GridSpec spec;
    try {
      spec = make_grid_spec(Bounds{{0, 0, 0}, {double(fit.dims->x), double(fit.dims->y), double(fit.dims->z)}}, fit);
    } catch (const Error& e) {
      throw Error(e.kind(), path + ": " + e.what());
    }
    for (SparseGrid& g : f.grids) {
      g.spec.origin = spec.origin;
      g.spec.voxel_size = spec.voxel_size;
    }
    f.has_transform = true;
  }
  return f;
}

void warn_voxel_units(const GridFile& f, const Log& log) {
  if (!f.has_transform)
    log.warn(f.path + ": ." + f.format +
             " keeps no voxel size or origin: positions are in voxel units (voxel (i,j,k) spans [i,i+1] x [j,j+1] x "
             "[k,k+1]); --voxel-size or --bbox place the grid");
}

InputKind input_kind(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == "vdb" || ext == "npy" || ext == "raw" || ext == "npz" || ext == "binvox" || ext == "vox")
    return InputKind::kGrid;
  if (ext != "ply") return is_point_cloud_file(path) ? InputKind::kPoints : InputKind::kMesh;
  check_input_file(path);
  try {
    const PlyHeader h = read_ply_header(path);
    for (const PlyElement& e : h.elements)
      if (e.name == "face" && e.count > 0) return InputKind::kMesh;
    for (const std::string& c : h.comments) {
      std::istringstream words(c);
      std::string key;
      if (words >> key && key == "voxtile_dims") return InputKind::kGrid;  // (as the grid reader reads it)
    }
    return InputKind::kPoints;
  } catch (const Error&) {
    return InputKind::kGrid;  // a malformed header: the grid reader names the problem
  }
}

}  // namespace voxtile
