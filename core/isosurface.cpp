// Marching cubes table from the face rule (core/isosurface.h), and the CPU meshing of grids.
#include "core/isosurface.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/progress.h"

namespace voxtile {
namespace {

int edge_between(int a, int b) {
  const int diff = a ^ b;
  const int axis = diff == 1 ? 0 : diff == 2 ? 1 : 2;
  const int low = a & ~diff;
  for (int k = 0; k < 4; ++k)
    if (mc_edge_low(axis * 4 + k) == low) return axis * 4 + k;
  return -1;
}

// Whether cell edges e and f lie on a common face of the cell (each edge is on the two faces
// across the other two axes, on the sides its lower corner is on).
bool share_face(int e, int f) {
  const int ae = e / 4, af = f / 4, le = mc_edge_low(e), lf = mc_edge_low(f);
  for (int b = 0; b < 3; ++b) {
    if (b == ae || b == af) continue;
    if ((le >> b & 1) == (lf >> b & 1)) return true;  // both on face (b, side)
  }
  if (ae == af) return false;
  return false;
}

McTable build_table() {
  McTable t{};
  for (int pattern = 0; pattern < 256; ++pattern) {
    auto inside = [&](int c) { return (pattern >> c & 1) != 0; };
    int next[12];
    std::fill(next, next + 12, -1);
    for (int axis = 0; axis < 3; ++axis) {
      const int u = (axis + 1) % 3, v = (axis + 2) % 3;
      for (int side = 0; side < 2; ++side) {
        // Corners counter-clockwise as seen from outside the cell (u x v = axis).
        const int uv[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
        int q[4];
        for (int k = 0; k < 4; ++k) {
          const int ub = uv[side ? k : (4 - k) % 4][0], vb = uv[side ? k : (4 - k) % 4][1];
          q[k] = side << axis | ub << u | vb << v;
        }
        // Crossings in walk order; each entering one is paired with the next leaving one.
        int enter[2], leave[2], ne = 0, nl = 0, first_leave = -1;
        for (int k = 0; k < 4; ++k) {
          const int a = q[k], b = q[(k + 1) % 4];
          if (inside(a) == inside(b)) continue;
          if (inside(b)) {
            enter[ne++] = k;
          } else {
            if (first_leave < 0) first_leave = k;
            leave[nl++] = k;
          }
        }
        for (int s = 0; s < ne; ++s) {
          // The leaving crossing that follows enter[s] in walk order.
          int best = -1;
          for (int d = 1; d < 4 && best < 0; ++d)
            for (int l = 0; l < nl; ++l)
              if (leave[l] == (enter[s] + d) % 4) best = leave[l];
          const int e0 = edge_between(q[enter[s]], q[(enter[s] + 1) % 4]);
          const int e1 = edge_between(q[best], q[(best + 1) % 4]);
          next[e0] = e1;
        }
        (void)first_leave;
      }
    }
    // Chain the segments into loops, each started at its smallest edge, and fan them.
    bool used[12] = {};
    int n = 0, centres = 0;
    auto emit = [&](int a, int b, int c) {
      if (n >= 12) throw std::logic_error("marching cubes table: too many triangles");
      t.edges[pattern][3 * n] = uint8_t(a);
      t.edges[pattern][3 * n + 1] = uint8_t(b);
      t.edges[pattern][3 * n + 2] = uint8_t(c);
      ++n;
    };
    for (int start = 0; start < 12; ++start) {
      if (next[start] < 0 || used[start]) continue;
      std::vector<int> loop;
      for (int e = start; e >= 0 && !used[e]; e = next[e]) {
        used[e] = true;
        loop.push_back(e);
      }
      if (next[loop.back()] != start) throw std::logic_error("marching cubes table: an open loop");
      const int m = int(loop.size());
      int apex = -1;
      for (int a = 0; a < m && apex < 0; ++a) {
        bool ok = true;
        for (int k = 0; k < m && ok; ++k)
          if (k != a && k != (a + 1) % m && k != (a + m - 1) % m) ok = !share_face(loop[size_t(a)], loop[size_t(k)]);
        if (ok) apex = a;
      }
      if (apex >= 0) {
        for (int k = 1; k + 1 < m; ++k)
          emit(loop[size_t(apex)], loop[size_t((apex + k) % m)], loop[size_t((apex + k + 1) % m)]);
      } else {
        if (centres >= 4) throw std::logic_error("marching cubes table: too many loops");
        t.loop_size[pattern][centres] = uint8_t(m);
        for (int k = 0; k < m; ++k) t.loop_edges[pattern][centres][k] = uint8_t(loop[size_t(k)]);
        for (int k = 0; k < m; ++k) emit(12 + centres, loop[size_t(k)], loop[size_t((k + 1) % m)]);
        ++centres;
      }
    }
    if (n > 12) throw std::logic_error("marching cubes table: too many triangles");
    t.count[pattern] = uint8_t(n);
  }
  return t;
}

// Sorted unique keys, in parallel.
void sort_unique(std::vector<uint64_t>& v) {
  tbb::parallel_sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// A mesh of one source with a vertex for each of the distinct keys of `corners` (`verts`: them, in
// ascending order); positions sized, not set.
Mesh mesh_on(const std::vector<uint64_t>& corners, std::vector<uint64_t>& verts) {
  verts = corners;
  sort_unique(verts);
  Mesh m;
  m.num_source_meshes = 1;
  m.num_materials = 1;
  m.positions.resize(verts.size());
  return m;
}

}  // namespace

IsoGridView iso_view(const SparseGrid& g) {
  IsoGridView v;
  v.keys = g.keys.data();
  v.masks = g.masks.empty() ? nullptr : g.masks[0].w;
  v.values = g.value_type == ValueType::kFloat32 ? g.fvalues.data() : nullptr;
  v.value_begin = g.value_type == ValueType::kFloat32 ? g.value_begin.data() : nullptr;
  v.bricks = g.keys.size();
  v.dims[0] = g.spec.dims.x, v.dims[1] = g.spec.dims.y, v.dims[2] = g.spec.dims.z;
  return v;
}

namespace {

// Gives a host view a table of its brick positions (IsoGridView::brick_table), kept in `storage`,
// where the grid's brick positions number at most 2^24 (64 MB) or 64 per brick: a brick found by
// one load instead of a binary search over the keys (the CPU marching cubes searched 24 times per
// cell and vertex). Otherwise the view keeps its search.
void attach_brick_table(IsoGridView& v, std::vector<uint32_t>& storage) {
  const uint64_t bx = uint64_t(v.dims[0] + 7) >> 3, by = uint64_t(v.dims[1] + 7) >> 3,
                 bz = uint64_t(v.dims[2] + 7) >> 3;
  const uint64_t n = bx * by * bz;
  if (v.bricks == 0 || v.bricks >= IsoGridView::kIsoNoBrick || n > std::max<uint64_t>(uint64_t(1) << 24, 64 * v.bricks))
    return;
  storage.assign(n, IsoGridView::kIsoNoBrick);
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, v.bricks, 1 << 14), [&](const tbb::blocked_range<uint64_t>& r) {
    for (uint64_t b = r.begin(); b < r.end(); ++b) {
      const Int3 c = brick_coord(v.keys[b]);
      storage[(uint64_t(c.x) * by + uint64_t(c.y)) * bz + uint64_t(c.z)] = uint32_t(b);
    }
  });
  v.brick_table = storage.data();
}

}  // namespace

IsoField iso_field(const SparseGrid& grid, const SparseGrid* inside) {
  IsoField f;
  f.grid = iso_view(grid);
  f.occupancy = grid.value_type != ValueType::kFloat32;
  if (inside && !f.occupancy) {
    f.inside = iso_view(*inside);
    f.has_inside = true;
    double bg = grid.background;
    if (!(bg > 0))
      for (float x : grid.fvalues) bg = std::max(bg, std::abs(double(x)));
    f.background = bg > 0 ? bg : 1.0;
  }
  return f;
}

namespace {

// The candidate cells in ascending IsoKeys order: float grids alone, the active voxels; occupancy, or
// with `inside`, every cell with an active corner, and around the inside's boundary voxels.
// (`in`: the inside's view.)
std::vector<uint64_t> iso_candidate_cells(const SparseGrid& grid, const SparseGrid* inside, const IsoGridView& in,
                                          bool occupancy) {
  const IsoKeys keys = IsoKeys::make(grid.spec.dims.x, grid.spec.dims.y, grid.spec.dims.z);
  const bool around_all = occupancy || inside;
  std::vector<uint64_t> cells;
  cells.reserve(grid.active_voxels() * (around_all ? 8 : 1));
  auto around = [&](int32_t i, int32_t j, int32_t k) {
    cells.resize(cells.size() + 8);
    keys.cells_around(i, j, k, &cells[cells.size() - 8]);
  };
  grid.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
    if (around_all)
      around(i, j, k);
    else
      cells.push_back(keys.key(i, j, k));
  });
  if (inside && !occupancy) {  // where the inside ends away from the band (holes)
    inside->for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
      if (on_boundary(in, i, j, k)) around(i, j, k);
    });
  }
  sort_unique(cells);
  return cells;
}

Mesh marching_cubes(const SparseGrid& grid, float iso, bool occupancy, const SparseGrid* inside) {
  const McTable& table = mc_table();
  IsoField field = iso_field(grid, inside);
  std::vector<uint32_t> grid_table, inside_table;
  attach_brick_table(field.grid, grid_table);
  // The inside's view, for the field and the candidate cells (one table for both).
  IsoGridView in = inside ? (field.has_inside ? field.inside : iso_view(*inside)) : IsoGridView{};
  if (field.has_inside || (inside && !occupancy)) attach_brick_table(in, inside_table);
  if (field.has_inside) field.inside = in;
  const GridSpec& s = grid.spec;
  const IsoKeys keys = IsoKeys::make(s.dims.x, s.dims.y, s.dims.z);
  const std::vector<uint64_t> cells = iso_candidate_cells(grid, inside, in, occupancy);
  progress_total(2 * cells.size());
  // The pattern of every cell, triangles per cell and their offsets.
  std::vector<uint8_t> pattern(cells.size());
  tbb::parallel_for(tbb::blocked_range<size_t>(0, cells.size(), 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t n = r.begin(); n < r.end(); ++n) {
      int64_t i, j, k;
      keys.ijk(cells[n], i, j, k);
      pattern[n] = uint8_t(field.pattern(i, j, k, iso));
    }
    progress_advance(r.size());
  });
  std::vector<uint64_t> first(cells.size() + 1, 0);
  for (size_t n = 0; n < cells.size(); ++n) first[n + 1] = first[n] + table.count[pattern[n]];
  const uint64_t ntri = first.back();
  if (ntri > uint64_t(UINT32_MAX) / 3) fail(ErrorKind::kUsage, "the mesh would have more than 1.4 billion triangles");
  std::vector<uint64_t> corners(3 * ntri);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, cells.size(), 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t n = r.begin(); n < r.end(); ++n) {
      if (!table.count[pattern[n]]) continue;
      int64_t i, j, k;
      keys.ijk(cells[n], i, j, k);
      iso_cell_corners(table, keys, pattern[n], i, j, k, &corners[3 * first[n]]);
    }
    progress_advance(r.size());
  });
  // Vertices: the vertex keys used, in ascending order.
  std::vector<uint64_t> verts;
  Mesh m = mesh_on(corners, verts);
  m.normals.resize(verts.size());
  const double origin[3] = {s.origin.x, s.origin.y, s.origin.z},
               size[3] = {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z};
  tbb::parallel_for(tbb::blocked_range<size_t>(0, verts.size(), 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t v = r.begin(); v < r.end(); ++v)
      iso_vertex(field, table, keys, verts[v], iso, origin, size, &m.positions[v].x, &m.normals[v].x);
  });
  m.indices.resize(3 * ntri);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, corners.size(), 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t c = r.begin(); c < r.end(); ++c)
      m.indices[c] = uint32_t(std::lower_bound(verts.begin(), verts.end(), corners[c]) - verts.begin());
  });
  m.mesh_ids.assign(ntri, 0);
  m.material_ids.assign(ntri, 0);
  return m;
}

// The faces between active and inactive voxels.
Mesh voxel_cubes(const SparseGrid& grid) {
  IsoGridView lookup = iso_view(grid);
  std::vector<uint32_t> table;
  attach_brick_table(lookup, table);
  // Voxel corners keyed as the voxels of a grid one larger.
  const IsoKeys keys = IsoKeys::make(grid.spec.dims.x + 1, grid.spec.dims.y + 1, grid.spec.dims.z + 1);
  // Per direction (-x +x -y +y -z +z), the four corners of the face, counter-clockwise from outside.
  static const int kFace[6][4][3] = {
      {{0, 0, 0}, {0, 0, 1}, {0, 1, 1}, {0, 1, 0}}, {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}, {1, 0, 1}},
      {{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}}, {{0, 1, 0}, {0, 1, 1}, {1, 1, 1}, {1, 1, 0}},
      {{0, 0, 0}, {0, 1, 0}, {1, 1, 0}, {1, 0, 0}}, {{0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}}};
  static const int kDir[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
  std::vector<uint64_t> quads;  // 4 corner keys per boundary face, in voxel order
  grid.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
    for (int d = 0; d < 6; ++d) {
      uint64_t at;
      if (lookup.find(i + kDir[d][0], j + kDir[d][1], k + kDir[d][2], at)) continue;
      for (int c = 0; c < 4; ++c) quads.push_back(keys.key(i + kFace[d][c][0], j + kFace[d][c][1], k + kFace[d][c][2]));
    }
  });
  std::vector<uint64_t> verts;
  Mesh m = mesh_on(quads, verts);
  const GridSpec& s = grid.spec;
  for (size_t v = 0; v < verts.size(); ++v) {
    int64_t i, j, k;
    keys.ijk(verts[v], i, j, k);
    m.positions[v] = {float(s.origin.x + double(i) * s.voxel_size.x), float(s.origin.y + double(j) * s.voxel_size.y),
                      float(s.origin.z + double(k) * s.voxel_size.z)};
  }
  const size_t nq = quads.size() / 4;
  if (nq > uint64_t(UINT32_MAX) / 6) fail(ErrorKind::kUsage, "the mesh would have more than 1.4 billion triangles");
  m.indices.resize(6 * nq);
  for (size_t q = 0; q < nq; ++q) {
    uint32_t id[4];
    for (int c = 0; c < 4; ++c)
      id[c] = uint32_t(std::lower_bound(verts.begin(), verts.end(), quads[4 * q + size_t(c)]) - verts.begin());
    const uint32_t tri[6] = {id[0], id[1], id[2], id[0], id[2], id[3]};
    std::copy(tri, tri + 6, &m.indices[6 * q]);
  }
  m.mesh_ids.assign(2 * nq, 0);
  m.material_ids.assign(2 * nq, 0);
  return m;
}

}  // namespace

const McTable& mc_table() {
  static const McTable table = build_table();
  return table;
}

Mesh grid_to_mesh(const SparseGrid& grid, const IsoOptions& options, const SparseGrid* inside) {
  if (grid.value_type == ValueType::kVec3f)
    fail(ErrorKind::kUsage, "grid '" + grid.name + "' holds vectors; mesh a level set, a float field or occupancy");
  if (grid.value_type == ValueType::kFloat32) {
    if (!std::isfinite(options.iso)) fail(ErrorKind::kUsage, "--iso must be finite");
    return marching_cubes(grid, options.iso, false, inside);
  }
  return options.smooth ? marching_cubes(grid, 0.0f, true, nullptr) : voxel_cubes(grid);
}

}  // namespace voxtile
