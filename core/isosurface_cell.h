// The per-cell and per-vertex steps of marching cubes (core/isosurface.h), shared by the CPU and the
// kernels (kernels/isosurface/): plain arrays, no allocation.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/hd.h"
#include "core/search.h"
#include "core/sparse_grid.h"

namespace voxtile {

struct McTable {
  uint8_t count[256];      // triangles of the pattern (at most 12)
  uint8_t edges[256][36];  // 3 vertices per triangle: cell edges 0..11, or 12 + L for loop L's centre
  // Loops fanned around a centre vertex (the mean of their edge vertices): their edges.
  uint8_t loop_size[256][4];
  uint8_t loop_edges[256][4][12];
};

// Cell edge e (0..11): axis e / 4, between corner kMcEdgeLow[e] and kMcEdgeLow[e] | (1 << axis).
VT_HD inline int mc_edge_low(int e) {
  constexpr int low[12] = {0, 2, 4, 6, 0, 1, 4, 5, 0, 1, 2, 3};
  return low[e];
}

// Cell and vertex order: cells (and voxels) are keyed brick-major over the grid grown by one voxel
// on each side (voxel (i, j, k), -1 <= i <= dims, at (i + 1, j + 1, k + 1)): the brick in x-major
// order, then the offset in the brick. A vertex is its cell edge's lower voxel key * 8 + axis (0..2),
// or a loop centre's cell key * 8 + 3 + loop.
struct IsoKeys {
  int64_t nb[3];  // bricks per axis of the grown grid
  VT_HD static IsoKeys make(int32_t dx, int32_t dy, int32_t dz) {
    return {{(int64_t(dx) + 9) / 8, (int64_t(dy) + 9) / 8, (int64_t(dz) + 9) / 8}};
  }
  VT_HD uint64_t bricks() const { return uint64_t(nb[0]) * uint64_t(nb[1]) * uint64_t(nb[2]); }
  // The index of brick (bx, by, bz) of the grown grid (a key's high bits), and back.
  VT_HD uint64_t brick(int64_t bx, int64_t by, int64_t bz) const { return uint64_t((bx * nb[1] + by) * nb[2] + bz); }
  VT_HD void brick_coords(uint64_t brick, int64_t& bx, int64_t& by, int64_t& bz) const {
    bz = int64_t(brick % uint64_t(nb[2]));
    by = int64_t(brick / uint64_t(nb[2]) % uint64_t(nb[1]));
    bx = int64_t(brick / (uint64_t(nb[2]) * uint64_t(nb[1])));
  }
  VT_HD uint64_t key(int64_t i, int64_t j, int64_t k) const {
    const int64_t a = i + 1, b = j + 1, c = k + 1;
    return brick(a >> 3, b >> 3, c >> 3) << 9 | uint64_t((a & 7) << 6 | (b & 7) << 3 | (c & 7));
  }
  // The keys of the 8 cells that have voxel (i, j, k) as a corner.
  VT_HD void cells_around(int64_t i, int64_t j, int64_t k, uint64_t* out) const {
    for (int c = 0; c < 8; ++c) out[c] = key(i - (c & 1), j - (c >> 1 & 1), k - (c >> 2 & 1));
  }
  VT_HD void ijk(uint64_t key, int64_t& i, int64_t& j, int64_t& k) const {
    const int64_t off = int64_t(key & 511);
    int64_t bx, by, bz;
    brick_coords(key >> 9, bx, by, bz);
    i = bx * 8 + (off >> 6) - 1;
    j = by * 8 + (off >> 3 & 7) - 1;
    k = bz * 8 + (off & 7) - 1;
  }
};

// Whether a table of `positions` brick positions (4 bytes each) pays for finding `bricks` bricks among
// them by one load instead of a search: up to 2^24 positions (64 MB), or 64 per brick. The grids'
// brick tables (IsoGridView::brick_table) and the vertices' bitmaps (CPU and GPU) take it.
VT_HD inline bool iso_table_pays(uint64_t positions, uint64_t bricks) {
  return positions <= (uint64_t(1) << 24) || positions <= 64 * bricks;
}

// A sparse grid as arrays: sorted brick keys, 8 mask words per brick, values (float grids: the
// active voxels', brick b's from value_begin[b]).
struct IsoGridView {
  const uint64_t* keys = nullptr;
  const uint64_t* masks = nullptr;
  const float* values = nullptr;
  const uint64_t* value_begin = nullptr;
  uint64_t bricks = 0;
  int32_t dims[3] = {0, 0, 0};
  // Optional (the host's, iso_brick_table): each brick position's index among the bricks, or
  // kIsoNoBrick, x-major over the grid's bricks; without it the keys are searched.
  const uint32_t* brick_table = nullptr;
  static constexpr uint32_t kIsoNoBrick = 0xffffffffu;
  // Optional (the host's, with values): the value index of each mask word's first active voxel, so
  // that a voxel's value is found with one word's count instead of its brick's rank.
  const uint64_t* word_values = nullptr;
  // The index of brick (bx, by, bz) (brick coordinates, any: none outside the grid), if the grid has it.
  VT_HD bool brick(int64_t bx, int64_t by, int64_t bz, uint64_t& b) const {
    const int64_t nbx = (int64_t(dims[0]) + 7) >> 3, nby = (int64_t(dims[1]) + 7) >> 3,
                  nbz = (int64_t(dims[2]) + 7) >> 3;
    if (bx < 0 || by < 0 || bz < 0 || bx >= nbx || by >= nby || bz >= nbz) return false;
    if (brick_table) {
      const uint32_t t = brick_table[(uint64_t(bx) * uint64_t(nby) + uint64_t(by)) * uint64_t(nbz) + uint64_t(bz)];
      b = t;
      return t != kIsoNoBrick;
    }
    const uint64_t key = brick_key(int32_t(bx), int32_t(by), int32_t(bz));
    b = lower_bound_index<uint64_t>(keys, bricks, key);
    return b < bricks && keys[b] == key;
  }
  // Whether voxel (i, j, k) is active; its value index when it is (with values).
  VT_HD bool find(int64_t i, int64_t j, int64_t k, uint64_t& at) const {
    if (i < 0 || j < 0 || k < 0 || i >= dims[0] || j >= dims[1] || k >= dims[2]) return false;
    uint64_t lo;
    if (!brick(i >> 3, j >> 3, k >> 3, lo)) return false;
    const int off = int((i & 7) << 6 | (j & 7) << 3 | (k & 7));
    const uint64_t word = masks[lo * 8 + uint64_t(off >> 6)];
    if (!(word >> (off & 63) & 1)) return false;
    if (word_values)
      at = word_values[lo * 8 + uint64_t(off >> 6)] + uint64_t(popcount64(word & ((uint64_t(1) << (off & 63)) - 1)));
    else
      at = values ? value_begin[lo] + mask_rank(masks + lo * 8, off) : 0;
    return true;
  }
};

// Whether active voxel (i, j, k) of `g` has an inactive face neighbour (it is on the boundary).
VT_HD inline bool on_boundary(const IsoGridView& g, int64_t i, int64_t j, int64_t k) {
  uint64_t at;
  return !g.find(i - 1, j, k, at) || !g.find(i + 1, j, k, at) || !g.find(i, j - 1, k, at) || !g.find(i, j + 1, k, at) ||
         !g.find(i, j, k - 1, at) || !g.find(i, j, k + 1, at);
}

// The field marching cubes sees: a float grid's values, with `inside` giving inactive voxels
// -background (active there) or +background; or occupancy, -1 at active voxels and +1 elsewhere.
struct IsoField {
  IsoGridView grid, inside;
  bool occupancy = false, has_inside = false;
  double background = 1.0;
  // Value of voxel (i, j, k); false when it is unknown (an inactive voxel of a float grid alone).
  VT_HD bool value(int64_t i, int64_t j, int64_t k, double& v) const {
    uint64_t at;
    if (grid.find(i, j, k, at)) {
      v = occupancy ? -1.0 : double(grid.values[at]);
      return true;
    }
    if (has_inside) {
      v = inside.find(i, j, k, at) ? -background : background;
      return true;
    }
    v = 1.0;
    return occupancy;
  }
  // Sign pattern of the cell at (i, j, k) (bit c: corner c below iso); 0 when a corner is unknown.
  VT_HD int pattern(int64_t i, int64_t j, int64_t k, float iso) const {
    int p = 0;
    for (int c = 0; c < 8; ++c) {
      double v;
      if (!value(i + (c & 1), j + (c >> 1 & 1), k + (c >> 2 & 1), v)) return 0;
      if (v < double(iso)) p |= 1 << c;
    }
    return p;
  }
  // Gradient at voxel (i, j, k) per unit of grid index (central differences between known voxels).
  VT_HD void gradient(int64_t i, int64_t j, int64_t k, double* g) const {
    double c;
    value(i, j, k, c);
    for (int a = 0; a < 3; ++a) {
      const int64_t d[3] = {a == 0, a == 1, a == 2};
      double vl, vh;
      const bool has_l = value(i - d[0], j - d[1], k - d[2], vl), has_h = value(i + d[0], j + d[1], k + d[2], vh);
      g[a] = has_l && has_h ? (vh - vl) / 2 : has_h ? vh - c : has_l ? c - vl : 0.0;
    }
  }
  // The vertex on the cell edge from voxel a along `axis`: grid-space position (voxel centres at
  // integer + 0.5) and the interpolated gradient (per unit of grid index).
  VT_HD void edge_vertex(const int64_t* a, int axis, float iso, double* p, double* g) const {
    const int64_t b[3] = {a[0] + (axis == 0), a[1] + (axis == 1), a[2] + (axis == 2)};
    double va, vb;
    value(a[0], a[1], a[2], va);
    value(b[0], b[1], b[2], vb);
    const double t = occupancy ? 0.5 : (double(iso) - va) / (vb - va);
    for (int d = 0; d < 3; ++d) p[d] = double(a[d]) + 0.5;
    p[axis] += t;
    double ga[3], gb[3];
    gradient(a[0], a[1], a[2], ga);
    gradient(b[0], b[1], b[2], gb);
    for (int d = 0; d < 3; ++d) g[d] = ga[d] + t * (gb[d] - ga[d]);
  }
};

// Whether grid brick (bx, by, bz) of `g` exists and is full.
VT_HD inline bool iso_brick_full(const IsoGridView& g, int64_t bx, int64_t by, int64_t bz) {
  uint64_t b;
  if (!g.brick(bx, by, bz, b)) return false;
  for (int w = 0; w < 8; ++w)
    if (g.masks[8 * b + uint64_t(w)] != ~uint64_t(0)) return false;
  return true;
}

// The bricks of the grown grid (`keys`: IsoKeys, x-major brick index) that may hold the keys made
// from the active voxels of brick b of `g`, into o[0, 8) (`none` where there are fewer). A voxel's keys
// lie in its own brick or, where its place in the brick along an axis is `reach` or more, in the next
// one along it: marching cubes' cells around voxel v, grown coordinates v and v + 1 (reach 7); the
// cubes' corners of voxel v, keyed at v + 1 and v + 2 (reach 6). So grid brick (bx, by, bz) gives
// grown bricks bx and, where it has active voxels from plane `reach` on, bx + 1 on each axis (sparse
// grids, a voxel here and there, mostly have none). With `interior_skipped` (occupancy), a brick that
// is full and whose six neighbours are full gives none: it has no boundary face, and for marching
// cubes a cell with triangles has an inactive corner, and among the 2^3 bricks that hold its corners,
// the last full brick on a path of face neighbours from one with an active corner to one without is
// not interior and gives its brick.
VT_HD inline void iso_bricks_around(const IsoGridView& g, const IsoKeys& keys, uint64_t b, int reach,
                                    bool interior_skipped, uint64_t none, uint64_t* o) {
  const Int3 c = brick_coord(g.keys[b]);
  if (interior_skipped && iso_brick_full(g, c.x, c.y, c.z) && iso_brick_full(g, c.x - 1, c.y, c.z) &&
      iso_brick_full(g, c.x + 1, c.y, c.z) && iso_brick_full(g, c.x, c.y - 1, c.z) &&
      iso_brick_full(g, c.x, c.y + 1, c.z) && iso_brick_full(g, c.x, c.y, c.z - 1) &&
      iso_brick_full(g, c.x, c.y, c.z + 1)) {
    for (int n = 0; n < 8; ++n) o[n] = none;
    return;
  }
  // Mask bits (y << 3 | z) of the planes from `reach` on, across y and across z.
  const uint64_t planes_y = ~uint64_t(0) << (8 * reach), planes_z = 0x0101010101010101ull * ((0xffu << reach) & 0xffu);
  const uint64_t* m = g.masks + 8 * b;
  uint64_t any = 0, any_x = 0;
  for (int w = 0; w < 8; ++w) {
    any |= m[w];
    if (w >= reach) any_x |= m[w];
  }
  const int up[3] = {any_x != 0, (any & planes_y) != 0, (any & planes_z) != 0};
  for (int n = 0; n < 8; ++n) o[n] = keys.brick(c.x + (n & up[0]), c.y + (n >> 1 & up[1]), c.z + (n >> 2 & up[2]));
}

// The active voxels of `g` among the 9^3 voxels (gx * 8 - 1 + x, ...), 0 <= x, y, z <= 8, that are the
// corners of grown brick (gx, gy, gz)'s cells: f(x * 81 + y * 9 + z, value index).
template <class F>
VT_HD void iso_window_voxels(const IsoGridView& g, int64_t gx, int64_t gy, int64_t gz, F&& f) {
  for (int n = 0; n < 8; ++n) {
    const int dx = -(n & 1), dy = -(n >> 1 & 1), dz = -(n >> 2 & 1);  // the brick below on these axes
    uint64_t b;
    if (!g.brick(gx + dx, gy + dy, gz + dz, b)) continue;
    // In a brick below, only its last plane on that axis (mask word x, bit y << 3 | z).
    const uint64_t yz = (dy ? uint64_t(0xff) << 56 : ~uint64_t(0)) & (dz ? 0x8080808080808080ull : ~uint64_t(0));
    uint64_t rank = g.values ? g.value_begin[b] : 0;
    for (int x = 0; x < 8; ++x) {
      const uint64_t word = g.masks[8 * b + uint64_t(x)];
      if (!dx || x == 7) {
        for (uint64_t m = word & yz; m; m &= m - 1) {
          const int bit = ctz64(m);
          const int lx = x + 1 + 8 * dx, ly = (bit >> 3) + 1 + 8 * dy, lz = (bit & 7) + 1 + 8 * dz;
          f(lx * 81 + ly * 9 + lz, rank + uint64_t(popcount64(word & ((uint64_t(1) << bit) - 1))));
        }
      }
      rank += uint64_t(popcount64(word));
    }
  }
}

// The cells of grown brick (gx, gy, gz) that have triangles, in ascending order: f(offset, pattern),
// offset a << 6 | b << 3 | c (IsoKeys), pattern as IsoField::pattern. The corners' states (IsoField::
// value: known, and below iso) are bits along z, a row of 9 per (x, y), read from the bricks that hold
// them; the cells with triangles (all corners known, some below and some not: the table has triangles
// for every other pattern) are found 8 at a time, so that bricks of a few voxels cost little.
template <class F>
VT_HD void iso_brick_cells(const IsoField& field, int64_t gx, int64_t gy, int64_t gz, float iso, F&& f) {
  const bool default_known = field.occupancy || field.has_inside;
  const bool default_below = (field.has_inside ? field.background : 1.0) < double(iso);
  const bool inside_below = -field.background < double(iso);
  uint16_t known[81], below[81];
  for (int r = 0; r < 81; ++r) {
    known[r] = uint16_t(default_known ? 0x1ff : 0);
    below[r] = uint16_t(default_below ? 0x1ff : 0);
  }
  auto set = [&](int at, bool b) {
    const int row = at / 9, z = at % 9;
    known[row] = uint16_t(known[row] | 1u << z);
    below[row] = uint16_t(b ? below[row] | 1u << z : below[row] & ~(1u << z));
  };
  if (field.has_inside) iso_window_voxels(field.inside, gx, gy, gz, [&](int at, uint64_t) { set(at, inside_below); });
  iso_window_voxels(field.grid, gx, gy, gz, [&](int at, uint64_t v) {
    set(at, (field.occupancy ? -1.0 : double(field.grid.values[v])) < double(iso));
  });
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      const int r0 = a * 9 + b, r1 = r0 + 9, r2 = r0 + 1, r3 = r0 + 10;  // rows (a, b), (a+1, b), (a, b+1), (a+1, b+1)
      const unsigned k = known[r0] & known[r1] & known[r2] & known[r3];
      const unsigned all = below[r0] & below[r1] & below[r2] & below[r3];
      const unsigned some = below[r0] | below[r1] | below[r2] | below[r3];
      // cell c: corners z = c and c + 1
      for (unsigned m = (k & k >> 1) & (some | some >> 1) & ~(all & all >> 1) & 0xffu; m; m &= m - 1) {
        const int c = ctz64(m);
        const int p =
            int((below[r0] >> c & 1) | (below[r1] >> c & 1) << 1 | (below[r2] >> c & 1) << 2 |
                (below[r3] >> c & 1) << 3 | (below[r0] >> (c + 1) & 1) << 4 | (below[r1] >> (c + 1) & 1) << 5 |
                (below[r2] >> (c + 1) & 1) << 6 | (below[r3] >> (c + 1) & 1) << 7);
        f(a << 6 | b << 3 | c, p);
      }
    }
}

// The vertex keys of the triangles of the cell at (i, j, k) with sign pattern p (3 per triangle).
VT_HD inline void iso_cell_corners(const McTable& t, const IsoKeys& keys, int p, int64_t i, int64_t j, int64_t k,
                                   uint64_t* out) {
  const uint64_t cell = keys.key(i, j, k);
  for (int c = 0; c < 3 * t.count[p]; ++c) {
    const int e = t.edges[p][c];
    if (e >= 12) {  // a loop's centre: a vertex of this cell alone
      out[c] = cell * 8 + uint64_t(3 + e - 12);
      continue;
    }
    const int low = mc_edge_low(e);
    out[c] = keys.key(i + (low & 1) + 0, j + (low >> 1 & 1), k + (low >> 2 & 1)) * 8 + uint64_t(e / 4);
  }
}

// World position and unit normal (the field's gradient; 0 where it vanishes) of vertex `v`.
VT_HD inline void iso_vertex(const IsoField& f, const McTable& t, const IsoKeys& keys, uint64_t v, float iso,
                             const double* origin, const double* size, float* pos, float* nrm) {
  const int code = int(v % 8);
  int64_t a[3];
  keys.ijk(v / 8, a[0], a[1], a[2]);
  double p[3] = {0, 0, 0}, g[3] = {0, 0, 0};
  if (code < 3) {
    f.edge_vertex(a, code, iso, p, g);
  } else {  // a loop's centre: the mean of its edge vertices (the cell's pattern read again)
    const int pat = f.pattern(a[0], a[1], a[2], iso), loop = code - 3, n = t.loop_size[pat][loop];
    for (int q = 0; q < n; ++q) {
      const int e = t.loop_edges[pat][loop][q], low = mc_edge_low(e);
      const int64_t c[3] = {a[0] + (low & 1), a[1] + (low >> 1 & 1), a[2] + (low >> 2 & 1)};
      double pe[3], ge[3];
      f.edge_vertex(c, e / 4, iso, pe, ge);
      for (int d = 0; d < 3; ++d) p[d] += pe[d] / n, g[d] += ge[d];
    }
  }
  double w[3];
  for (int d = 0; d < 3; ++d) {
    pos[d] = float(origin[d] + p[d] * size[d]);
    w[d] = g[d] / size[d];
  }
  const double len = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
  for (int d = 0; d < 3; ++d) nrm[d] = len > 0 ? float(w[d] / len) : 0.0f;
}

}  // namespace voxtile
