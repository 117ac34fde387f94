// Marching cubes table from the face rule (core/isosurface.h), and the CPU meshing of grids.
#include "core/isosurface.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <stdexcept>
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

// A mesh of one source and material with `vertices` vertices (positions sized, not set).
Mesh mesh_with_vertices(size_t vertices) {
  Mesh m;
  m.num_source_meshes = 1;
  m.num_materials = 1;
  m.positions.resize(vertices);
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
// where it pays (iso_table_pays): a brick found by one load instead of a binary search over the keys (the CPU marching
// cubes searched 24 times per cell and vertex). Otherwise the view keeps its search. With values, also each mask word's
// first value (IsoGridView::word_values, in `words`).
void attach_brick_table(IsoGridView& v, std::vector<uint32_t>& storage, std::vector<uint64_t>& words) {
  if (v.values) {
    words.resize(8 * v.bricks);
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, v.bricks, 1 << 12), [&](const tbb::blocked_range<uint64_t>& r) {
      for (uint64_t b = r.begin(); b < r.end(); ++b) {
        uint64_t at = v.value_begin[b];
        for (uint64_t w = 8 * b; w < 8 * b + 8; ++w) {
          words[w] = at;
          at += uint64_t(popcount64(v.masks[w]));
        }
      }
    });
    v.word_values = words.data();
  }
  const uint64_t bx = uint64_t(v.dims[0] + 7) >> 3, by = uint64_t(v.dims[1] + 7) >> 3,
                 bz = uint64_t(v.dims[2] + 7) >> 3;
  const uint64_t n = bx * by * bz;
  if (v.bricks == 0 || v.bricks >= IsoGridView::kIsoNoBrick || !iso_table_pays(n, v.bricks)) return;
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

void single_source_ids(Mesh& m) {
  const size_t n = m.num_triangles();
  m.mesh_ids.resize(n);
  m.material_ids.resize(n);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
    std::fill(m.mesh_ids.begin() + std::ptrdiff_t(r.begin()), m.mesh_ids.begin() + std::ptrdiff_t(r.end()), 0u);
    std::fill(m.material_ids.begin() + std::ptrdiff_t(r.begin()), m.material_ids.begin() + std::ptrdiff_t(r.end()), 0u);
  });
}

namespace {

// A set of keys of the grown grid (IsoKeys: brick << 9 | offset, shifted left by `code_bits` for a
// vertex's code), held as a bitmap per brick of a sorted list of the bricks that may hold one:
// inserted from many threads, then numbered in ascending order. It gives the same sorted, unique
// keys and indices as sorting them and searching (what the CPU did before: most of its time).
class BrickKeySet {
 public:
  // `bricks`: ascending grown-brick indices; `num_bricks`: bricks of the grown grid.
  BrickKeySet(std::vector<uint64_t> bricks, int code_bits, uint64_t num_bricks)
      : bricks_(std::move(bricks)), shift_(9 + code_bits), words_(size_t(1) << (3 + code_bits)) {
    bits_.resize(bricks_.size() * words_);
    const bool table = iso_table_pays(num_bricks, bricks_.size());
    if (table) table_.resize(num_bricks);
    tbb::parallel_for(tbb::blocked_range<size_t>(0, bits_.size(), 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
      std::fill(bits_.begin() + std::ptrdiff_t(r.begin()), bits_.begin() + std::ptrdiff_t(r.end()), 0);
    });
    tbb::parallel_for(tbb::blocked_range<size_t>(0, table_.size(), 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
      std::fill(table_.begin() + std::ptrdiff_t(r.begin()), table_.begin() + std::ptrdiff_t(r.end()), kNone);
    });
    if (table)
      tbb::parallel_for(tbb::blocked_range<size_t>(0, bricks_.size(), 1 << 14),
                        [&](const tbb::blocked_range<size_t>& r) {
                          for (size_t s = r.begin(); s < r.end(); ++s) table_[bricks_[s]] = uint32_t(s);
                        });
  }
  // (thread-safe)
  void insert(uint64_t key) {
    const uint64_t w = word(key);
    __atomic_fetch_or(&bits_[w], uint64_t(1) << (key & 63), __ATOMIC_RELAXED);
  }
  // Numbers the keys (after every insert); returns how many there are.
  uint64_t number() {
    first_.resize(bits_.size());
    std::vector<uint64_t> base(bricks_.size() + 1, 0);
    auto bricks = [&](auto&& f) {
      tbb::parallel_for(tbb::blocked_range<size_t>(0, bricks_.size(), 1 << 10),
                        [&](const tbb::blocked_range<size_t>& r) {
                          for (size_t s = r.begin(); s < r.end(); ++s) f(s);
                        });
    };
    bricks([&](size_t s) {
      uint64_t n = 0;
      for (size_t w = s * words_; w < (s + 1) * words_; ++w) n += uint64_t(popcount64(bits_[w]));
      base[s + 1] = n;
    });
    for (size_t s = 0; s < bricks_.size(); ++s) base[s + 1] += base[s];
    if (base.back() > UINT32_MAX) fail(ErrorKind::kUsage, "the mesh would have more than 4 billion vertices");
    bricks([&](size_t s) {
      uint64_t n = base[s];
      for (size_t w = s * words_; w < (s + 1) * words_; ++w) {
        first_[w] = uint32_t(n);
        n += uint64_t(popcount64(bits_[w]));
      }
    });
    return base.back();
  }
  // The index of an inserted key among all, in ascending order.
  uint64_t index(uint64_t key) const {
    const uint64_t w = word(key);
    return first_[w] + uint64_t(popcount64(bits_[w] & ((uint64_t(1) << (key & 63)) - 1)));
  }
  // The keys in ascending order, into out[0, number()).
  void keys(uint64_t* out) const {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, bricks_.size(), 256), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t s = r.begin(); s < r.end(); ++s)
        for (size_t w = s * words_; w < (s + 1) * words_; ++w) {
          uint64_t n = first_[w];
          for (uint64_t m = bits_[w]; m; m &= m - 1)
            out[n++] = bricks_[s] << shift_ | uint64_t(w - s * words_) << 6 | uint64_t(__builtin_ctzll(m));
        }
    });
  }

 private:
  static constexpr uint32_t kNone = 0xffffffffu;
  uint64_t word(uint64_t key) const {
    const uint64_t brick = key >> shift_;
    uint64_t s;
    if (!table_.empty()) {
      s = table_[brick];
    } else {
      s = lower_bound_index<uint64_t>(bricks_.data(), bricks_.size(), brick);
      if (s == bricks_.size() || bricks_[s] != brick) s = kNone;
    }
    if (s == kNone) throw std::logic_error("marching cubes: a key outside the candidate bricks");
    return s * words_ + ((key >> 6) & (words_ - 1));
  }
  std::vector<uint64_t> bricks_;
  int shift_;
  size_t words_;
  ValueArray<uint64_t> bits_;
  ValueArray<uint32_t> first_;  // each word's first key's index (fewer than 2^32 keys: the meshes' limit)
  ValueArray<uint32_t> table_;
};

// The bricks of the grown grid `keys` that may hold the keys made from the active voxels of `g`
// (iso_bricks_around), appended to `out` (then sorted_bricks; keys.bricks() where none).
void add_bricks_around(const IsoGridView& g, const IsoKeys& keys, int reach, bool interior_skipped,
                       std::vector<uint64_t>& out) {
  const size_t first = out.size();
  out.resize(first + 8 * g.bricks);
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, g.bricks, 4096), [&](const tbb::blocked_range<uint64_t>& r) {
    for (uint64_t b = r.begin(); b < r.end(); ++b)
      iso_bricks_around(g, keys, b, reach, interior_skipped, keys.bricks(), &out[first + 8 * b]);
  });
}

// The bricks add_bricks_around gave, ascending and unique.
void sorted_bricks(std::vector<uint64_t>& bricks, const IsoKeys& keys) {
  sort_unique(bricks);
  if (!bricks.empty() && bricks.back() == keys.bricks()) bricks.pop_back();
}

// Marching cubes brick by brick over the grown grid: for each brick that may hold a cell with
// triangles (add_bricks_around), the field's 9^3 corner voxels are read from the bricks that hold
// them and the patterns of its 512 cells taken from them, in ascending cell order; the vertices are
// the keys of the triangles' corners (BrickKeySet). Every cell with triangles has a corner the
// candidate bricks cover (an active voxel of the grid, or with `inside`, one of the inside's
// boundary), so the mesh is that of every cell's pattern (IsoField::pattern): the same bytes as the
// kernels' (kernels/isosurface/).
Mesh marching_cubes(const SparseGrid& grid, float iso, const SparseGrid* inside) {
  const McTable& table = mc_table();
  IsoField field = iso_field(grid, inside);
  std::vector<uint32_t> grid_table, inside_table;
  std::vector<uint64_t> grid_words, inside_words;
  attach_brick_table(field.grid, grid_table, grid_words);
  if (field.has_inside) attach_brick_table(field.inside, inside_table, inside_words);
  const GridSpec& s = grid.spec;
  const IsoKeys keys = IsoKeys::make(s.dims.x, s.dims.y, s.dims.z);
  std::vector<uint64_t> bricks;  // (of cells)
  add_bricks_around(field.grid, keys, 7, field.occupancy, bricks);
  if (field.has_inside) add_bricks_around(field.inside, keys, 7, true, bricks);
  sorted_bricks(bricks, keys);
  progress_total(2 * bricks.size());

  // Each brick's cells with triangles (offset << 8 | pattern, ascending) and their triangles.
  std::vector<std::vector<uint32_t>> cells(bricks.size());
  std::vector<uint64_t> first(bricks.size() + 1, 0);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, bricks.size(), 16), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t n = r.begin(); n < r.end(); ++n) {
      int64_t gx, gy, gz;
      keys.brick_coords(bricks[n], gx, gy, gz);
      std::vector<uint32_t>& out = cells[n];
      uint64_t tris = 0;
      iso_brick_cells(field, gx, gy, gz, iso, [&](int off, int p) {
        out.push_back(uint32_t(off) << 8 | uint32_t(p));
        tris += table.count[p];
      });
      first[n + 1] = tris;
    }
    progress_advance(r.size());
  });
  for (size_t n = 0; n < bricks.size(); ++n) first[n + 1] += first[n];
  const uint64_t ntri = first.back();
  if (ntri > uint64_t(UINT32_MAX) / 3) fail(ErrorKind::kUsage, "the mesh would have more than 1.4 billion triangles");
  // The triangles' corners (vertex keys), and the set of them.
  ValueArray<uint64_t> corners(3 * ntri);
  BrickKeySet vertex_keys(bricks, 3, keys.bricks());
  tbb::parallel_for(tbb::blocked_range<size_t>(0, bricks.size(), 16), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t n = r.begin(); n < r.end(); ++n) {
      int64_t gx, gy, gz;
      keys.brick_coords(bricks[n], gx, gy, gz);
      uint64_t* out = corners.data() + 3 * first[n];
      for (uint32_t cell : cells[n]) {
        const int off = int(cell >> 8), p = int(cell & 255);
        iso_cell_corners(table, keys, p, gx * 8 + (off >> 6) - 1, gy * 8 + (off >> 3 & 7) - 1, gz * 8 + (off & 7) - 1,
                         out);
        for (int c = 0; c < 3 * table.count[p]; ++c) vertex_keys.insert(out[c]);
        out += 3 * table.count[p];
      }
      std::vector<uint32_t>().swap(cells[n]);
    }
    progress_advance(r.size());
  });
  // Vertices: the vertex keys used, in ascending order.
  ValueArray<uint64_t> verts(vertex_keys.number());
  vertex_keys.keys(verts.data());
  Mesh m = mesh_with_vertices(verts.size());
  m.normals.resize(verts.size());
  const double origin[3] = {s.origin.x, s.origin.y, s.origin.z},
               size[3] = {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z};
  tbb::parallel_for(tbb::blocked_range<size_t>(0, verts.size(), 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t v = r.begin(); v < r.end(); ++v)
      iso_vertex(field, table, keys, verts[v], iso, origin, size, &m.positions[v].x, &m.normals[v].x);
  });
  m.indices.resize(3 * ntri);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, corners.size(), 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t c = r.begin(); c < r.end(); ++c) m.indices[c] = uint32_t(vertex_keys.index(corners[c]));
  });
  single_source_ids(m);
  return m;
}

// The faces between active and inactive voxels, brick by brick in parallel (faces in voxel order,
// each voxel's in direction order; corners numbered by BrickKeySet).
Mesh voxel_cubes(const SparseGrid& grid) {
  IsoGridView lookup = iso_view(grid);
  std::vector<uint32_t> table;
  std::vector<uint64_t> words;
  attach_brick_table(lookup, table, words);
  // Voxel corners keyed as the voxels of a grid one larger.
  const IsoKeys keys = IsoKeys::make(grid.spec.dims.x + 1, grid.spec.dims.y + 1, grid.spec.dims.z + 1);
  // Per direction (-x +x -y +y -z +z), the four corners of the face, counter-clockwise from outside.
  static const int kFace[6][4][3] = {
      {{0, 0, 0}, {0, 0, 1}, {0, 1, 1}, {0, 1, 0}}, {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}, {1, 0, 1}},
      {{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}}, {{0, 1, 0}, {0, 1, 1}, {1, 1, 1}, {1, 1, 0}},
      {{0, 0, 0}, {0, 1, 0}, {1, 1, 0}, {1, 0, 0}}, {{0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}}};
  const size_t nb = grid.num_bricks();
  // Brick b's exposed faces: per direction d and mask word x, its active voxels whose neighbour
  // across face d is inactive (the neighbours from the masks: shifted within the brick, the
  // neighbouring brick's plane across its faces; nothing beyond the grid).
  auto exposed = [&](size_t b, uint64_t(&e)[6][8]) {
    const Int3 c = brick_coord(grid.keys[b]);
    const uint64_t* w = grid.masks[b].w;
    auto words = [&](int axis, int dir) -> const uint64_t* {
      int64_t n[3] = {c.x, c.y, c.z};
      n[axis] += dir;
      uint64_t at;
      if (!lookup.brick(n[0], n[1], n[2], at)) return nullptr;
      return grid.masks[at].w;
    };
    constexpr uint64_t kZ0 = 0x0101010101010101ull, kZ7 = 0x8080808080808080ull;
    const uint64_t* lx = words(0, -1);
    const uint64_t* hx = words(0, 1);
    const uint64_t* ly = words(1, -1);
    const uint64_t* hy = words(1, 1);
    const uint64_t* lz = words(2, -1);
    const uint64_t* hz = words(2, 1);
    for (int x = 0; x < 8; ++x) {
      const uint64_t n[6] = {x > 0 ? w[x - 1]
                             : lx  ? lx[7]
                                   : 0,
                             x < 7 ? w[x + 1]
                             : hx  ? hx[0]
                                   : 0,
                             w[x] << 8 | (ly ? ly[x] >> 56 : 0),
                             w[x] >> 8 | (hy ? hy[x] << 56 : 0),
                             (w[x] << 1 & ~kZ0) | (lz ? lz[x] >> 7 & kZ0 : 0),
                             (w[x] >> 1 & ~kZ7) | (hz ? hz[x] << 7 & kZ7 : 0)};
      for (int d = 0; d < 6; ++d) e[d][x] = w[x] & ~n[d];
    }
  };
  std::vector<uint64_t> first(nb + 1, 0);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nb, 256), [&](const tbb::blocked_range<size_t>& r) {
    uint64_t e[6][8];
    for (size_t b = r.begin(); b < r.end(); ++b) {
      exposed(b, e);
      uint64_t n = 0;
      for (int d = 0; d < 6; ++d)
        for (int x = 0; x < 8; ++x) n += uint64_t(popcount64(e[d][x]));
      first[b + 1] = n;
    }
  });
  for (size_t b = 0; b < nb; ++b) first[b + 1] += first[b];
  const uint64_t nq = first.back();
  if (nq > uint64_t(UINT32_MAX) / 6) fail(ErrorKind::kUsage, "the mesh would have more than 1.4 billion triangles");
  std::vector<uint64_t> bricks;  // (of the corners)
  add_bricks_around(lookup, keys, 6, true, bricks);
  sorted_bricks(bricks, keys);
  BrickKeySet corner_keys(std::move(bricks), 0, keys.bricks());
  ValueArray<uint64_t> quads(4 * nq);  // 4 corner keys per boundary face, in voxel order
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nb, 256), [&](const tbb::blocked_range<size_t>& r) {
    uint64_t e[6][8];
    for (size_t b = r.begin(); b < r.end(); ++b) {
      if (first[b + 1] == first[b]) continue;
      exposed(b, e);
      const Int3 bc = brick_coord(grid.keys[b]);
      uint64_t* q = quads.data() + 4 * first[b];
      for (int x = 0; x < 8; ++x) {
        const uint64_t any = e[0][x] | e[1][x] | e[2][x] | e[3][x] | e[4][x] | e[5][x];
        for (uint64_t m = any; m; m &= m - 1) {  // the voxels in ascending offset, their faces in order
          const int bit = __builtin_ctzll(m);
          const int32_t i = bc.x * 8 + x, j = bc.y * 8 + (bit >> 3), k = bc.z * 8 + (bit & 7);
          for (int d = 0; d < 6; ++d) {
            if (!(e[d][x] >> bit & 1)) continue;
            for (int c = 0; c < 4; ++c) {
              *q = keys.key(i + kFace[d][c][0], j + kFace[d][c][1], k + kFace[d][c][2]);
              corner_keys.insert(*q++);
            }
          }
        }
      }
    }
  });
  ValueArray<uint64_t> verts(corner_keys.number());
  corner_keys.keys(verts.data());
  Mesh m = mesh_with_vertices(verts.size());
  const GridSpec& s = grid.spec;
  tbb::parallel_for(tbb::blocked_range<size_t>(0, verts.size(), 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t v = r.begin(); v < r.end(); ++v) {
      int64_t i, j, k;
      keys.ijk(verts[v], i, j, k);
      m.positions[v] = {float(s.origin.x + double(i) * s.voxel_size.x), float(s.origin.y + double(j) * s.voxel_size.y),
                        float(s.origin.z + double(k) * s.voxel_size.z)};
    }
  });
  m.indices.resize(6 * nq);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nq, 1 << 12), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t q = r.begin(); q < r.end(); ++q) {
      uint32_t id[4];
      for (int c = 0; c < 4; ++c) id[c] = uint32_t(corner_keys.index(quads[4 * q + size_t(c)]));
      const uint32_t tri[6] = {id[0], id[1], id[2], id[0], id[2], id[3]};
      std::copy(tri, tri + 6, &m.indices[6 * q]);
    }
  });
  single_source_ids(m);
  return m;
}

}  // namespace

const McTable& mc_table() {
  static const McTable table = build_table();
  return table;
}

Mesh grid_to_mesh(const SparseGrid& grid_in, const IsoOptions& options, const SparseGrid* inside_in) {
  // (bricks walked: full bricks held as runs written out first)
  SparseGrid grid_storage, inside_storage;
  const SparseGrid& grid = expanded_runs(grid_in, grid_storage);
  const SparseGrid* inside = inside_in ? &expanded_runs(*inside_in, inside_storage) : nullptr;
  if (grid.value_type == ValueType::kVec3f)
    fail(ErrorKind::kUsage, "grid '" + grid.name + "' holds vectors; mesh a level set, a float field or occupancy");
  if (grid.value_type == ValueType::kFloat32) {
    if (!std::isfinite(options.iso)) fail(ErrorKind::kUsage, "--iso must be finite");
    return marching_cubes(grid, options.iso, inside);
  }
  return options.smooth ? marching_cubes(grid, 0.0f, nullptr) : voxel_cubes(grid);
}

}  // namespace voxtile
