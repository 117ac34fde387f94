// `voxtile info FILE`: counts, bounds, grid dims (meshes), points (point clouds), or grids and active
// voxels (.vdb, .npy, .raw; .npz buckets: voxels and fragments).
#include "cli/cmd_info.h"

#include <algorithm>
#include <cctype>
#include <iostream>

#include "cli/preview.h"
#include "core/error.h"
#include "core/progress.h"
#include "io/files.h"
#include "io/grid_reader.h"
#include "io/mesh_reader.h"
#include "io/points_io.h"
#include "io/vdb.h"

namespace voxtile {

void setup_info(CLI::App& app, InfoCmdOptions& o) {
  app.add_option("file", o.input, "A mesh, point cloud (.ply .xyz .pts .las), .vdb, .npy, .raw, .binvox, .vox or .npz (buckets) file")->required();
  add_grid_options(app, o.grid);
  add_load_options(app, o.load);
}

int run_info(const InfoCmdOptions& o) {
  const std::string ext = lower_extension(o.input);
  check_input_file(o.input);  // (a missing file or a directory: the error alone, no partial description)
  std::cout << "file: " << o.input << "\n";
  if (ext == "vdb") {
    const auto lines = describe_vdb(o.input);
    std::cout << "kind: vdb\ngrids: " << lines.size() << "\n";
    for (const std::string& l : lines) std::cout << l << "\n";
    return 0;
  }
  // (a .ply that voxtile wrote from a grid, with its voxtile_dims comment, is read as that grid)
  const bool ply_grid = ext == "ply" && input_kind(o.input) == InputKind::kGrid;
  if (ext == "npy" || ext == "npz" || ext == "raw" || ext == "binvox" || ext == "vox" || ply_grid) {
    const GridFile f = [&] {
      const ProgressStage stage("read " + o.input);
      return read_grid_file(o.input);
    }();
    std::cout.precision(9);
    if (f.has_buckets) {
      const Buckets& b = f.buckets;
      std::cout << "kind: buckets (A-buffer fragment lists)\nvoxels: " << b.num_voxels() << "\nfragments: "
                << b.num_fragments() << "\ngrid: " << b.spec.describe() << "\n";
      return 0;
    }
    std::cout << "kind: " << (ext == "binvox" ? std::string("binvox occupancy grid (run-length encoded)")
                              : ext == "vox"  ? std::string("MagicaVoxel models (occupancy, placed by the scene graph)")
                              : ply_grid      ? std::string("voxel centres (a grid voxtile wrote as points)")
                                              : "dense grid (" + ext + ")") << "\n";
    for (const SparseGrid& g : f.grids) {
      std::cout << "grid \"" << g.name << "\" type=" << (g.value_type == ValueType::kNone ? "uint8" : value_type_name(g.value_type))
                << " active_voxels=" << g.active_voxels() << " dims=" << g.spec.dims.x << "x" << g.spec.dims.y << "x"
                << g.spec.dims.z;
      if (f.has_transform) {
        std::cout << " voxel_size=" << g.spec.voxel_size.x;
        if (!g.spec.is_cubic()) std::cout << "x" << g.spec.voxel_size.y << "x" << g.spec.voxel_size.z;
        std::cout << " origin=(" << g.spec.origin.x << ", " << g.spec.origin.y << ", " << g.spec.origin.z << ")";
      } else {
        std::cout << " (no voxel size or origin: ." << ext << " keeps none)";
      }
      std::cout << "\n";
    }
    return 0;
  }
  if (point_cloud_extension(o.input)) {
    const PointCloud pc = [&] {
      const ProgressStage stage("read " + o.input);
      return read_point_cloud(o.input);
    }();
    const char* format = ext == "xyz" ? "XYZ text" : ext == "pts" ? "PTS text" : "LAS";
    std::cout << "kind: point cloud\nformat: " << format << "\npoints: " << pc.size()
              << "\ncolors: " << (pc.colors.empty() ? "no" : "yes") << "\nnormals: " << (pc.normals.empty() ? "no" : "yes");
    if (ext == "las" || ext == "laz")
      std::cout << "\nintensity: " << (pc.intensity.empty() ? "no" : "yes")
                << "\nclassification: " << (pc.classes.empty() ? "no" : "yes");
    std::cout << "\ndropped_nonfinite: " << pc.dropped_nonfinite << "\n";
    if (pc.size() == 0) fail(ErrorKind::kInput, o.input + ": no points");
    const Bounds b = point_bounds(pc);
    std::cout.precision(ext == "las" || ext == "laz" ? 15 : 9);
    std::cout << "bounds: (" << b.lo.x << ", " << b.lo.y << ", " << b.lo.z << ") .. (" << b.hi.x << ", " << b.hi.y << ", "
              << b.hi.z << ")\n";
    return 0;
  }
  const MeshLoadResult r = [&] {
    const ProgressStage stage("load " + o.input);
    return inspect_mesh(o.input, o.load.kind());
  }();
  const Mesh& m = r.mesh;
  if (m.num_triangles() == 0 && r.points > 0) {
    std::cout << "kind: point cloud\n";
    if (!r.format.empty()) std::cout << "format: " << r.format << "\n";
    std::cout << "points: " << r.points << "\n";
    return 0;
  }
  std::cout << "kind: mesh\n";
  if (!r.format.empty()) std::cout << "format: " << r.format << "\n";
  std::cout << "triangles: " << m.num_triangles() << "\nvertices: " << m.positions.size()
            << "\nmeshes: " << m.num_source_meshes << "\nmaterials: " << m.num_materials
            << "\ndropped_degenerate: " << m.dropped_degenerate << "\ndropped_nonfinite: " << m.dropped_nonfinite
            << "\ndropped_bad_index: " << r.dropped_bad_index << "\nignored_points_and_lines: " << r.non_triangle_primitives
            << "\n";
  for (const std::string& w : r.warnings) std::cerr << "voxtile: warning: " << o.input << ": " << w << "\n";
  if (m.num_triangles() == 0) fail(ErrorKind::kInput, o.input + ": no usable triangles");
  const Bounds b = m.bounds();
  std::cout.precision(9);
  std::cout << "bounds: (" << b.lo.x << ", " << b.lo.y << ", " << b.lo.z << ") .. (" << b.hi.x << ", " << b.hi.y << ", "
            << b.hi.z << ")\n";
  const GridSpec g = make_grid_spec(b, o.grid.to_options());
  std::cout << "grid: " << g.describe() << "\n";
  return 0;
}

}  // namespace voxtile
