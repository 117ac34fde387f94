// Pictures of results (core/render.h) for the command line: `voxtile preview` and the --preview
// option of voxelize, csg, points and batch.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/common.h"
#include "core/points.h"
#include "core/render.h"
#include "io/grid_reader.h"

namespace voxtile {

// How a picture looks, as given on the command line.
struct PictureArgs {
  std::string size = "512";
  std::string view = "iso";
  std::string up = "y";
  std::string color = "auto";
  std::string background = "#f2f2f2";
  std::string range;  // "LO,HI"
  float iso = 0.0f;
  bool no_edges = false, no_ao = false, no_legend = false;
  RenderOptions options() const;  // Error(kUsage) for malformed values
};
// Every picture option (`voxtile preview`).
void add_picture_options(CLI::App& app, PictureArgs& args);

// --preview PNG (a name template where `templated`), --preview-size and --preview-view, for
// commands that write grids.
struct PreviewArgs {
  std::string path;
  PictureArgs picture;
};
void add_preview_options(CLI::App& app, PreviewArgs& args, bool templated);

struct PictureInfo {
  std::string shape, color, color_mode;  // the drawn grid, the colouring grid ("" for one colour) and how
  uint64_t voxels = 0;                   // voxels drawn
};
// Renders `grids` (the first grid's voxels; colours from `options`) on GPU `gpu` (-1: the CPU) and
// writes the PNG; stage times ("picture" total, GPU stages) are appended to `stages` when given.
PictureInfo write_picture(const std::vector<const SparseGrid*>& grids, const RenderOptions& options,
                          const std::string& path, int gpu,
                          std::vector<std::pair<std::string, double>>* stages = nullptr);
// The picture of a point cloud: its points binned on a grid of 256 voxels along the longest axis
// (cloud_grids: occupancy, coloured by the points' colours when they have them).
PictureInfo write_cloud_picture(const PointCloud& cloud, const RenderOptions& options, const std::string& path, int gpu,
                                std::vector<std::pair<std::string, double>>* stages = nullptr);
std::vector<const SparseGrid*> grid_pointers(const std::vector<SparseGrid>& grids);
// The GPU a picture is rendered on when nothing before it chose one (pick_gpu), or -1: under
// --device auto pictures of up to 128k pixels per core are rendered on the CPU, since CUDA's
// start-up (0.2 to 0.3 s on an H200) costs more than the CPU's render (1024x1024: 50 to 80 ms on
// 16 cores).
int picture_gpu(const std::string& device, const RenderOptions& options, const Log& log);

// How `path` is read by commands that take grids, point clouds and meshes: as a grid (.vdb .npy
// .raw .npz .binvox .vox, voxtile's voxel-centre .ply: no faces, a voxtile_dims comment), a point
// cloud (.xyz .pts .las .laz, another .ply without faces) or a mesh (the rest). A .ply's header is
// read once.
enum class InputKind { kGrid, kPoints, kMesh };
InputKind input_kind(const std::string& path);
// A point cloud read (a progress stage, its time as "load" in `stages`; a warning for points
// dropped as NaN/Inf), and the grid `grid` gives its points' bounds (errors name `path`).
PointCloud load_point_input(const std::string& path, const Log& log,
                            std::vector<std::pair<std::string, double>>& stages);
GridSpec point_grid_spec(const std::string& path, const PointCloud& cloud, const GridOptions& grid);
// A point cloud's points binned on `spec`: occupancy ("voxels"), and the mean colour ("color")
// where the points have colours.
std::vector<SparseGrid> cloud_grids(const PointCloud& cloud, const GridSpec& spec);
// load_point_input, point_grid_spec and cloud_grids ("bin" in `stages`); `source` says what was read.
std::vector<SparseGrid> read_point_input(const std::string& path, const GridOptions& grid, const Log& log,
                                         std::string& source, std::vector<std::pair<std::string, double>>& stages);
// Reads a grid file (InputKind::kGrid; a progress stage, its time as "read" in `stages`); Error(kInput)
// when it holds no grid. `grid` places a grid whose file keeps no voxel size or origin (.npy, .vox) in
// the world as make_grid_spec would with the file's dims: --voxel-size (origin 0 unless --bbox),
// --bbox (its min corner the origin; the voxel size fitting the box unless given), and then the
// GridFile's has_transform is set; on a file that keeps its own, and for -r and --pad (which shape the
// grid of a mesh or point cloud), Error(kUsage) naming `path`.
GridFile read_grid_input(const std::string& path, const GridOptions& grid,
                         std::vector<std::pair<std::string, double>>& stages);
// A warning that `f`'s positions are in voxel units (a file that keeps no voxel size or origin), for
// commands whose output has positions.
void warn_voxel_units(const GridFile& f, const Log& log);

}  // namespace voxtile
