// Marching cubes table from the face rule (core/isosurface.h), and the CPU meshing of grids.
#include "core/isosurface.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <unordered_map>
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
    if (kMcEdgeLow[axis * 4 + k] == low) return axis * 4 + k;
  return -1;
}

// Whether cell edges e and f lie on a common face of the cell (each edge is on the two faces
// across the other two axes, on the sides its lower corner is on).
bool share_face(int e, int f) {
  const int ae = e / 4, af = f / 4, le = kMcEdgeLow[e], lf = kMcEdgeLow[f];
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

// Random access to a sparse grid's voxels: brick lookup through a hash map.
class VoxelLookup {
 public:
  explicit VoxelLookup(const SparseGrid& g) : m_g(g) {
    m_index.reserve(g.keys.size() * 2);
    for (size_t b = 0; b < g.keys.size(); ++b) m_index.emplace(g.keys[b], b);
  }
  // Brick and offset of voxel (i, j, k) when active, else false.
  bool find(int64_t i, int64_t j, int64_t k, size_t& b, int& off) const {
    const Int3 d = m_g.spec.dims;
    if (i < 0 || j < 0 || k < 0 || i >= d.x || j >= d.y || k >= d.z) return false;
    const auto it = m_index.find(brick_key(int32_t(i >> 3), int32_t(j >> 3), int32_t(k >> 3)));
    if (it == m_index.end()) return false;
    off = int((i & 7) << 6 | (j & 7) << 3 | (k & 7));
    if (!m_g.masks[it->second].test(off)) return false;
    b = it->second;
    return true;
  }

 private:
  const SparseGrid& m_g;
  std::unordered_map<uint64_t, size_t> m_index;
};

// The field marching cubes sees: float values (level sets), or -1 at active and +1 at inactive
// voxels (occupancy; every voxel known).
struct Field {
  const SparseGrid& g;
  VoxelLookup lookup;
  bool occupancy;
  const VoxelLookup* inside = nullptr;  // float grids: the sign of inactive voxels
  double background = 1.0;
  // Value of voxel (i, j, k); false when it is unknown (an inactive voxel of a float grid).
  bool value(int64_t i, int64_t j, int64_t k, double& v) const {
    size_t b;
    int off;
    if (!lookup.find(i, j, k, b, off)) {
      if (inside) {
        v = inside->find(i, j, k, b, off) ? -background : background;
        return true;
      }
      v = 1.0;
      return occupancy;
    }
    v = occupancy ? -1.0 : double(g.fvalues[b * kBrickVoxels + size_t(off)]);
    return true;
  }
};

// Keys of cells, voxel corners and cell edges: x slowest; one extra index on each side.
struct Keys {
  int64_t ny, nz;  // dims + 2
  explicit Keys(const Int3& d) : ny(int64_t(d.y) + 2), nz(int64_t(d.z) + 2) {}
  uint64_t key(int64_t i, int64_t j, int64_t k) const { return uint64_t(((i + 1) * ny + (j + 1)) * nz + (k + 1)); }
  void ijk(uint64_t key, int64_t& i, int64_t& j, int64_t& k) const {
    k = int64_t(key % uint64_t(nz)) - 1;
    j = int64_t(key / uint64_t(nz) % uint64_t(ny)) - 1;
    i = int64_t(key / uint64_t(nz * ny)) - 1;
  }
};

Vec3d gradient(const Field& f, int64_t i, int64_t j, int64_t k, const GridSpec& s) {
  double c;
  f.value(i, j, k, c);
  const int64_t at[3] = {i, j, k};
  const double size[3] = {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z};
  double g[3];
  for (int a = 0; a < 3; ++a) {
    int64_t lo[3] = {at[0], at[1], at[2]}, hi[3] = {at[0], at[1], at[2]};
    --lo[a], ++hi[a];
    double vl, vh;
    const bool has_l = f.value(lo[0], lo[1], lo[2], vl), has_h = f.value(hi[0], hi[1], hi[2], vh);
    g[a] = has_l && has_h ? (vh - vl) / 2 : has_h ? vh - c : has_l ? c - vl : 0.0;
    g[a] /= size[a];
  }
  return {g[0], g[1], g[2]};
}

Mesh marching_cubes(const SparseGrid& grid, float iso, bool occupancy, const SparseGrid* inside_grid) {
  const McTable& table = mc_table();
  std::unique_ptr<VoxelLookup> inside;
  if (inside_grid) inside = std::make_unique<VoxelLookup>(*inside_grid);
  Field field{grid, VoxelLookup(grid), occupancy, inside.get()};
  if (inside_grid) {
    double bg = grid.background;
    if (!(bg > 0))
      grid.for_each_active([&](int32_t, int32_t, int32_t, size_t b, int off) {
        bg = std::max(bg, std::abs(double(grid.fvalues[b * kBrickVoxels + size_t(off)])));
      });
    field.background = bg > 0 ? bg : 1.0;
  }
  const GridSpec& s = grid.spec;
  const Keys keys(s.dims);
  // Cells: level sets, those whose lowest corner is active (all eight checked below); occupancy,
  // every cell with an active corner.
  std::vector<uint64_t> cells;
  auto around = [&](int32_t i, int32_t j, int32_t k) {
    for (int c = 0; c < 8; ++c) cells.push_back(keys.key(i - (c & 1), j - (c >> 1 & 1), k - (c >> 2 & 1)));
  };
  grid.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
    if (!occupancy && !inside) {
      cells.push_back(keys.key(i, j, k));
      return;
    }
    around(i, j, k);
  });
  if (inside) {  // where the inside ends away from the band (holes)
    inside_grid->for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
      size_t b;
      int off;
      static const int kN[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
      for (int d = 0; d < 6; ++d)
        if (!inside->find(i + kN[d][0], j + kN[d][1], k + kN[d][2], b, off)) {
          around(i, j, k);
          return;
        }
    });
  }
  sort_unique(cells);
  progress_total(2 * cells.size());
  // Pass 1: the pattern of every cell (0 or 255 when nothing is emitted).
  std::vector<uint8_t> pattern(cells.size());
  tbb::parallel_for(tbb::blocked_range<size_t>(0, cells.size(), 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t n = r.begin(); n < r.end(); ++n) {
      int64_t i, j, k;
      keys.ijk(cells[n], i, j, k);
      int p = 0;
      bool known = true;
      for (int c = 0; c < 8 && known; ++c) {
        double v;
        known = field.value(i + (c & 1), j + (c >> 1 & 1), k + (c >> 2 & 1), v);
        if (v < double(iso)) p |= 1 << c;
      }
      pattern[n] = known ? uint8_t(p) : 0;
    }
    progress_advance(r.size());
  });
  // Triangles per cell, their offsets, and the triangles as (cell edge key) triples.
  std::vector<uint64_t> first(cells.size() + 1, 0);
  for (size_t n = 0; n < cells.size(); ++n) first[n + 1] = first[n] + table.count[pattern[n]];
  const uint64_t ntri = first.back();
  if (ntri > uint64_t(UINT32_MAX) / 3) fail(ErrorKind::kUsage, "the mesh would have more than 1.4 billion triangles");
  std::vector<uint64_t> corner_edges(3 * ntri);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, cells.size(), 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t n = r.begin(); n < r.end(); ++n) {
      const int p = pattern[n];
      if (!table.count[p]) continue;
      int64_t i, j, k;
      keys.ijk(cells[n], i, j, k);
      for (int t = 0; t < 3 * table.count[p]; ++t) {
        const int e = table.edges[p][t];
        if (e >= 12) {  // a loop's centre: a vertex of this cell alone
          corner_edges[3 * first[n] + size_t(t)] = cells[n] * 8 + uint64_t(3 + e - 12);
          continue;
        }
        const int axis = e / 4, low = kMcEdgeLow[e];
        const uint64_t voxel = keys.key(i + (low & 1), j + (low >> 1 & 1), k + (low >> 2 & 1));
        corner_edges[3 * first[n] + size_t(t)] = voxel * 8 + uint64_t(axis);
      }
    }
    progress_advance(r.size());
  });
  // Vertices: the cell edges used, in ascending order.
  std::vector<uint64_t> verts = corner_edges;
  sort_unique(verts);
  Mesh m;
  m.num_source_meshes = 1;
  m.num_materials = 1;
  m.positions.resize(verts.size());
  m.normals.resize(verts.size());
  // The vertex on the cell edge from voxel a along `axis`: position (world, double) and gradient.
  auto edge_vertex = [&](const int64_t* a, int axis, double* pos, double* grad) {
    int64_t b[3] = {a[0], a[1], a[2]};
    ++b[axis];
    double va, vb;
    field.value(a[0], a[1], a[2], va);
    field.value(b[0], b[1], b[2], vb);
    const double t = occupancy ? 0.5 : (double(iso) - va) / (vb - va);
    double p[3] = {double(a[0]) + 0.5, double(a[1]) + 0.5, double(a[2]) + 0.5};
    p[axis] += t;
    pos[0] = s.origin.x + p[0] * s.voxel_size.x;
    pos[1] = s.origin.y + p[1] * s.voxel_size.y;
    pos[2] = s.origin.z + p[2] * s.voxel_size.z;
    const Vec3d ga = gradient(field, a[0], a[1], a[2], s), gb = gradient(field, b[0], b[1], b[2], s);
    grad[0] = ga.x + t * (gb.x - ga.x);
    grad[1] = ga.y + t * (gb.y - ga.y);
    grad[2] = ga.z + t * (gb.z - ga.z);
  };
  tbb::parallel_for(tbb::blocked_range<size_t>(0, verts.size(), 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t v = r.begin(); v < r.end(); ++v) {
      const int code = int(verts[v] % 8);
      int64_t a[3];
      keys.ijk(verts[v] / 8, a[0], a[1], a[2]);
      double pos[3] = {0, 0, 0}, g[3] = {0, 0, 0};
      if (code < 3) {
        edge_vertex(a, code, pos, g);
      } else {  // a loop's centre: the mean of its edge vertices (the cell's pattern read again)
        int p = 0;
        for (int c = 0; c < 8; ++c) {
          double x;
          field.value(a[0] + (c & 1), a[1] + (c >> 1 & 1), a[2] + (c >> 2 & 1), x);
          if (x < double(iso)) p |= 1 << c;
        }
        const int loop = code - 3, size = table.loop_size[p][loop];
        for (int q = 0; q < size; ++q) {
          const int e = table.loop_edges[p][loop][q], low = kMcEdgeLow[e];
          const int64_t c[3] = {a[0] + (low & 1), a[1] + (low >> 1 & 1), a[2] + (low >> 2 & 1)};
          double pe[3], ge[3];
          edge_vertex(c, e / 4, pe, ge);
          for (int d = 0; d < 3; ++d) pos[d] += pe[d] / size, g[d] += ge[d];
        }
      }
      m.positions[v] = {float(pos[0]), float(pos[1]), float(pos[2])};
      const double len = std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
      m.normals[v] = len > 0 ? Vec3f{float(g[0] / len), float(g[1] / len), float(g[2] / len)} : Vec3f{0, 0, 0};
    }
  });
  m.indices.resize(3 * ntri);
  tbb::parallel_for(
      tbb::blocked_range<size_t>(0, corner_edges.size(), 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
        for (size_t c = r.begin(); c < r.end(); ++c)
          m.indices[c] = uint32_t(std::lower_bound(verts.begin(), verts.end(), corner_edges[c]) - verts.begin());
      });
  m.mesh_ids.assign(ntri, 0);
  m.material_ids.assign(ntri, 0);
  return m;
}

// The faces between active and inactive voxels.
Mesh voxel_cubes(const SparseGrid& grid) {
  const VoxelLookup lookup(grid);
  const Keys keys({grid.spec.dims.x + 1, grid.spec.dims.y + 1, grid.spec.dims.z + 1});
  // Per direction (-x +x -y +y -z +z), the four corners of the face, counter-clockwise from outside.
  static const int kFace[6][4][3] = {
      {{0, 0, 0}, {0, 0, 1}, {0, 1, 1}, {0, 1, 0}}, {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}, {1, 0, 1}},
      {{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}}, {{0, 1, 0}, {0, 1, 1}, {1, 1, 1}, {1, 1, 0}},
      {{0, 0, 0}, {0, 1, 0}, {1, 1, 0}, {1, 0, 0}}, {{0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}}};
  static const int kDir[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
  std::vector<uint64_t> quads;  // 4 corner keys per boundary face, in voxel order
  grid.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
    for (int d = 0; d < 6; ++d) {
      size_t b;
      int off;
      if (lookup.find(i + kDir[d][0], j + kDir[d][1], k + kDir[d][2], b, off)) continue;
      for (int c = 0; c < 4; ++c) quads.push_back(keys.key(i + kFace[d][c][0], j + kFace[d][c][1], k + kFace[d][c][2]));
    }
  });
  std::vector<uint64_t> verts = quads;
  sort_unique(verts);
  Mesh m;
  m.num_source_meshes = 1;
  m.num_materials = 1;
  m.positions.resize(verts.size());
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
