// `voxtile info FILE`: counts, bounds, grid dims (meshes) or grids and active voxels (.vdb).
#include "cli/cmd_info.h"

#include <algorithm>
#include <cctype>
#include <iostream>

#include "core/error.h"
#include "io/files.h"
#include "io/mesh_reader.h"
#include "io/vdb.h"

namespace voxtile {

void setup_info(CLI::App& app, InfoCmdOptions& o) {
  app.add_option("file", o.input, "A mesh, point cloud or .vdb file")->required();
  add_grid_options(app, o.grid);
  add_load_options(app, o.load);
}

int run_info(const InfoCmdOptions& o) {
  const std::string ext = lower_extension(o.input);
  std::cout << "file: " << o.input << "\n";
  if (ext == "vdb") {
    const auto lines = describe_vdb(o.input);
    std::cout << "kind: vdb\ngrids: " << lines.size() << "\n";
    for (const std::string& l : lines) std::cout << l << "\n";
    return 0;
  }
  const MeshLoadResult r = inspect_mesh(o.input, o.load.kind());
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
