// Which 32^3 tiles a triangle may write: the binning of the CPU reference and the GPU coarse
// raster, written once. Per tile column of the triangle's dominant projection, the column's voxel
// extent (widened by one voxel) must pass the 2D edge test, and the plane's depth range over it
// (widened by two voxels) selects the tiles along the dominant axis. Evaluated in double with
// those margins, so it is always a superset of what the float per-voxel tests accept.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/hd.h"
#include "core/overlap.h"

namespace voxtile {

constexpr int kTileLog2 = 5;  // 32^3-voxel tiles: 4x4x4 bricks
constexpr int kTileDim = 1 << kTileLog2;

// Kept in the coordinates of the triangle's dominant frame (core/overlap.h in_dominant_frame: axes
// a, b of its projection and its dominant axis c are 0, 1, 2), so that every array index is known
// at compile time: with run-time axes the GPU kept this struct in local memory (232 bytes of stack
// per thread of the coarse raster). The cyclic permutation gives the same values, so the same tiles
// in the same order (footprint_tile maps a frame tile back to the grid's).
struct TileFootprint {
  VoxelBox box;            // voxel range the triangle may write (clipped to the grid), in the frame
  int32_t tlo[3], thi[3];  // the same in tiles
  int dom;                 // the triangle's dominant axis (the frame's axis 2)
  double v[3][3];          // vertices, in the frame
  double ena[3], enb[3];   // 2D edge normals, oriented like the fine raster's
  double ka, kb;           // depth = v0c - (ka (x_a - v0a) + kb (x_b - v0b))
  bool has_depth, trim_2d;

  VT_HD uint32_t columns() const { return uint32_t(thi[0] - tlo[0] + 1) * uint32_t(thi[1] - tlo[1] + 1); }
  VT_HD bool single_tile() const { return tlo[0] == thi[0] && tlo[1] == thi[1] && tlo[2] == thi[2]; }
};

// Tiles of a grid of `dims` voxels: kTileDim^3 voxels each, the last ones clipped.
VT_HD inline Int3 grid_tiles(const Int3& dims) {
  return {(dims.x + kTileDim - 1) / kTileDim, (dims.y + kTileDim - 1) / kTileDim, (dims.z + kTileDim - 1) / kTileDim};
}
// Linear index of tile (x, y, z) in a grid of `tiles` tiles.
VT_HD inline uint64_t tile_index(const Int3& tiles, int32_t x, int32_t y, int32_t z) {
  return (uint64_t(x) * uint64_t(tiles.y) + uint64_t(y)) * uint64_t(tiles.z) + uint64_t(z);
}

// Linear index of tile (ta, tb, tc) of a footprint's frame.
VT_HD inline uint64_t footprint_tile(const TileFootprint& fp, const Int3& tiles, int32_t ta, int32_t tb, int32_t tc) {
  const Int3 g = from_dominant_frame(Int3{ta, tb, tc}, fp.dom);
  return tile_index(tiles, g.x, g.y, g.z);
}

// Tile (x, y, z) of a linear index (the inverse of tile_index).
VT_HD inline Int3 tile_coords(const Int3& tiles, uint64_t index) {
  return {int32_t(index / (uint64_t(tiles.z) * uint64_t(tiles.y))), int32_t((index / uint64_t(tiles.z)) % uint64_t(tiles.y)),
          int32_t(index % uint64_t(tiles.z))};
}

// Step 1: the voxel and tile ranges. False when the triangle writes nothing in the grid.
VT_HD inline bool footprint_range(const TriSetup& t, VoxelMode mode, const Int3& dims, TileFootprint* fp) {
  fp->dom = t.dom;
  // (in the frame the dominant axis is 2, which triangle_voxel_range widens in thin mode)
  if (!triangle_voxel_range(in_dominant_frame(t), mode, in_dominant_frame(dims, t.dom), &fp->box)) return false;
  for (int k = 0; k < 3; ++k) {
    fp->tlo[k] = fp->box.lo[k] >> kTileLog2;
    fp->thi[k] = fp->box.hi[k] >> kTileLog2;
  }
  return true;
}

// Step 2 (only needed when the range spans several tiles, after footprint_range): the
// double-precision plane and edges.
VT_HD inline void footprint_planes(const TriSetup& t, TileFootprint* fp) {
  constexpr int c = 2, a = 0, b = 1;  // the frame's axes
  for (int i = 0; i < 3; ++i) {
    const Vec3f p = in_dominant_frame(t.v[i], fp->dom);
    fp->v[i][0] = p.x;
    fp->v[i][1] = p.y;
    fp->v[i][2] = p.z;
  }
  double e1[3], e2[3], n[3];
  for (int k = 0; k < 3; ++k) {
    e1[k] = fp->v[1][k] - fp->v[0][k];
    e2[k] = fp->v[2][k] - fp->v[0][k];
  }
  n[0] = e1[1] * e2[2] - e1[2] * e2[1];
  n[1] = e1[2] * e2[0] - e1[0] * e2[2];
  n[2] = e1[0] * e2[1] - e1[1] * e2[0];
  // The fine raster orients edges by the float normal; when float and double disagree (a sliver
  // near degeneracy) the 2D trim is skipped rather than risk dropping a tile the fine raster needs.
  const float nc_float = component(t.n, fp->dom);
  const double s = nc_float >= 0.0f ? 1.0 : -1.0;
  fp->trim_2d = nc_float != 0.0f && (n[c] >= 0.0) == (nc_float >= 0.0f) && n[c] != 0.0;
  for (int i = 0; i < 3; ++i) {
    const int j = i == 2 ? 0 : i + 1;
    fp->ena[i] = -(fp->v[j][b] - fp->v[i][b]) * s;
    fp->enb[i] = (fp->v[j][a] - fp->v[i][a]) * s;
  }
  fp->has_depth = n[c] != 0.0;
  fp->ka = fp->has_depth ? n[a] / n[c] : 0.0;
  fp->kb = fp->has_depth ? n[b] / n[c] : 0.0;
}

// Tile column k of the footprint (row-major over the tile columns of the range).
VT_HD inline void footprint_column(const TileFootprint& fp, uint32_t k, int32_t* ta, int32_t* tb) {
  const uint32_t nb = uint32_t(fp.thi[1] - fp.tlo[1] + 1);
  *ta = fp.tlo[0] + int32_t(k / nb);
  *tb = fp.tlo[1] + int32_t(k % nb);
}

// Calls f(linear tile index) for the tiles of tile column (ta, tb) (in the frame) the triangle may write.
template <class F>
VT_HD inline void for_each_tile_in_column(const TileFootprint& fp, const Int3& tiles, int32_t ta, int32_t tb, F&& f) {
  constexpr int c = 2, a = 0, b = 1;  // the frame's axes
  const int32_t la = ta << kTileLog2, ha = (ta + 1) << kTileLog2, lb = tb << kTileLog2, hb = (tb + 1) << kTileLog2;
  const double a0 = double(la > fp.box.lo[a] ? la : fp.box.lo[a]) - 1.0;
  const double a1 = double(ha < fp.box.hi[a] + 1 ? ha : fp.box.hi[a] + 1) + 1.0;
  const double b0 = double(lb > fp.box.lo[b] ? lb : fp.box.lo[b]) - 1.0;
  const double b1 = double(hb < fp.box.hi[b] + 1 ? hb : fp.box.hi[b] + 1) + 1.0;
  if (fp.trim_2d) {
    for (int i = 0; i < 3; ++i)
      if (fp.ena[i] * ((fp.ena[i] > 0 ? a1 : a0) - fp.v[i][a]) + fp.enb[i] * ((fp.enb[i] > 0 ? b1 : b0) - fp.v[i][b]) <
          0.0)
        return;
  }
  int32_t c0 = fp.tlo[c], c1 = fp.thi[c];
  if (fp.has_depth) {
    double dmin = 1e300, dmax = -1e300;
    for (int corner = 0; corner < 4; ++corner) {
      const double ca = corner & 1 ? a1 : a0, cb = corner & 2 ? b1 : b0;
      const double d = fp.v[0][c] - (fp.ka * (ca - fp.v[0][a]) + fp.kb * (cb - fp.v[0][b]));
      dmin = d < dmin ? d : dmin;
      dmax = d > dmax ? d : dmax;
    }
    const double lo_t = std::floor((dmin - 2.0) / kTileDim), hi_t = std::floor((dmax + 2.0) / kTileDim);
    if (lo_t > double(c0)) c0 = lo_t > double(c1) ? c1 + 1 : int32_t(lo_t);
    if (hi_t < double(c1)) c1 = hi_t < double(c0) ? c0 - 1 : int32_t(hi_t);
  }
  for (int32_t tc = c0; tc <= c1; ++tc) f(footprint_tile(fp, tiles, ta, tb, tc));
}

// Calls f(linear tile index) for every tile of a footprint that footprint_range accepted
// (single-threaded form; computes the planes when needed).
template <class F>
VT_HD inline void for_each_tile_of(TileFootprint& fp, const TriSetup& t, const Int3& tiles, F&& f) {
  if (fp.single_tile()) {
    f(footprint_tile(fp, tiles, fp.tlo[0], fp.tlo[1], fp.tlo[2]));
    return;
  }
  footprint_planes(t, &fp);
  const uint32_t cols = fp.columns();
  for (uint32_t k = 0; k < cols; ++k) {
    int32_t ta, tb;
    footprint_column(fp, k, &ta, &tb);
    for_each_tile_in_column(fp, tiles, ta, tb, f);
  }
}

// Calls f(linear tile index) for every tile triangle t may write.
template <class F>
VT_HD inline void for_each_tile(const TriSetup& t, VoxelMode mode, const Int3& dims, const Int3& tiles, F&& f) {
  TileFootprint fp;
  if (footprint_range(t, mode, dims, &fp)) for_each_tile_of(fp, t, tiles, f);
}

}  // namespace voxtile
