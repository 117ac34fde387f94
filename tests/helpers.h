// Test helpers: data paths, temporary directories, running the CLI, procedural meshes.
#pragma once

#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/mesh.h"
#include "core/overlap.h"

namespace voxtile::test {

std::string source_path(const std::string& rel);  // VOXTILE_SOURCE_DIR/rel
std::string data_path(const std::string& rel);    // VOXTILE_SOURCE_DIR/data/rel
std::string voxtile_binary();                     // the voxtile executable under test

// A fresh empty directory, removed with its contents when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return m_path; }
  std::string file(const std::string& name) const { return m_path + "/" + name; }
  std::vector<std::string> list() const;  // names of all entries, hidden ones included

 private:
  std::string m_path;
};

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs the voxtile binary with `args` (shell-quoted here), capturing stdout and stderr; `shell_prefix`
// goes before the command in the shell line (e.g. "ulimit -f 16; ").
RunResult run_voxtile(const std::vector<std::string>& args, const std::string& shell_prefix = "");

bool file_exists(const std::string& path);
std::string read_file(const std::string& path);

// Bounds from two corners.
Bounds make_bounds(double x0, double y0, double z0, double x1, double y1, double z1);
// A mesh of one triangle.
Mesh single_triangle(const Vec3f& a, const Vec3f& b, const Vec3f& c);
// Appends src's triangles (as a soup) to dst.
void append_mesh(Mesh& dst, const Mesh& src);
// n random triangles: first vertex uniform in [0, extent]^3, the others within +-size of it.
Mesh random_soup(int n, float extent, float size, unsigned seed);
// Every edge of m used by exactly two triangles, once in each direction (closed, oriented,
// manifold), and no degenerate triangle: gtest failures naming `what` otherwise.
void expect_closed_manifold(const Mesh& m, const std::string& what);
// The volume a closed mesh wound outwards encloses (negative when wound inwards).
double signed_volume(const Mesh& m);
// One long sliver across an 8192^3 grid of unit voxels (a few tens of thousands of voxels).
Mesh sliver_8192();
// Grid options for sliver_8192: unit voxels, bounds [0, 8192]^3.
GridOptions sliver_grid();
// A 10^3 grid over [5, 6]^3, which a mesh inside the unit cube does not reach.
GridOptions grid_beside_unit_box();

// Direct reference enumeration, no tiles: f(triangle, grid-space vertices, i, j, k) for every
// triangle and every voxel of its voxelization in the grid.
template <class F>
void for_each_direct_fragment(const Mesh& mesh, const GridSpec& spec, VoxelMode mode, F&& f) {
  const VoxelBox clip{{0, 0, 0}, {spec.dims.x - 1, spec.dims.y - 1, spec.dims.z - 1}};
  for (size_t t = 0; t < mesh.num_triangles(); ++t) {
    Vec3f g[3];
    for (int q = 0; q < 3; ++q) {
      const Vec3f p = mesh.vertex(t, q);
      g[q] = spec.world_to_grid({p.x, p.y, p.z});
    }
    const TriSetup ts = setup_triangle(g[0], g[1], g[2]);
    auto emit = [&](int i, int j, int k) { f(t, ts.v, i, j, k); };
    for_each_voxel(ts, mode, clip, spec.dims, emit);
  }
}

}  // namespace voxtile::test
