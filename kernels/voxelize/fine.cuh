// Fine raster: persistent thread blocks take virtual tiles from a global atomic queue and hold the
// tile in shared memory (1 bit per voxel for binary, a 32-bit word per voxel for count, id,
// distance min/max and packed normals, 64-bit fixed-point channels plus an occupancy bit for the
// add blends of float targets); persistent warps take batches of 32 triangles with one shared
// atomic and spread their rows over the lanes (triangles several voxels across: the rows' columns;
// for long slivers only the rows that can hold pixels, along either axis of the projection; where
// the tile cuts a triangle's depth range, all but the binary kernel for rows alone take only the
// rows and spans of the triangle's piece in the tile's slab); each lane rasters its row or column
// with the shared functions of
// core/overlap.h, shades each fragment with the target's functor (core/targets.h) and blends with
// shared-memory atomics (OR, add, max). Then the tile's non-empty 8^3 bricks are written out, masks
// built with ballots: for binary tiles one global atomic takes all their slots, for value tiles one
// per brick.
//
// The kernels and their launchers are templates here; each target's instantiations are compiled in
// a file of their own (fine.cu: binary, and the dispatch launch_fine; fine_count.cu, fine_id.cu,
// fine_distance.cu, fine_normal.cu), so that each is a module of its own: CUDA loads a module on the
// first launch of one of its kernels (lazy loading), at a cost that grows with the module's size,
// and a job loads only its target's (H200, a binary job's first fine raster launch 25-34 ms with every
// target's kernels in one module, which nvcc also compresses; scripts/bench-results/
// kernel-loading-h200-2026-11-29.md).
#pragma once

#include <type_traits>

#include "core/sparse_grid.h"
#include "kernels/common.cuh"
#include "kernels/voxelize/stages.cuh"

namespace voxtile {
namespace fine {

// Shared-memory words of one brick while rastering: its raw values (core/targets.h
// brick_value_words), then its occupancy mask where the values do not tell it (binary, 64-bit sums).
constexpr int tile_brick_words(Word w, int acc) {
  return brick_value_words(w, acc) + (w == Word::kBit || w == Word::kAdd64 ? kBrickMaskWords : 0);
}

// 32-bit value targets in octants: warps per octant (a team, one per block, as for 64-bit sums). An
// octant is 16 KB and each warp keeps its batch's triangle records (1.9 KB, small records below), so
// shared memory decides how many warps an SM holds: one warp per octant in blocks of 8 (and the wide
// records) held 8 warps per SM (2 per scheduler, issuing on 34% of cycles, ncu); two warps sharing an
// octant hold 16 with the wide records (issuing on 49%) and 20 with the small ones, for the same
// instructions. H200, fine raster ms, octants forced, one warp per octant in blocks of 8 / in blocks
// of 1 / two per octant / four per octant / two per octant, four octants to a block (wide records):
// count on the 1M tubes 5.28 / 4.59 / 3.76 / 4.41 / 5.13, CAD slivers 10.29 / 9.45 / 7.54 / 7.60 /
// 8.73, the 100k dragon 0.437 / 0.39 / 0.325 / 0.382 / 0.464, the bunny at 1024^3 0.439 / 0.386 /
// 0.367 / 0.488 / 0.539; distance on the 1M tubes 10.8 / 9.2 / 7.6 / 9.3 / 11.5, on CAD 21.4 / 19.4 /
// 16.0 / 18.4 / 19.1 (scripts/bench-results/octant-teams-h200-h100-2026-11-28.md).
#ifndef VT_OCTANT_TEAM_WARPS  // (A/B builds: scripts/kernel-variant.sh)
#define VT_OCTANT_TEAM_WARPS 2
#endif
constexpr int kOctantTeamWarps = VT_OCTANT_TEAM_WARPS;

// Threads per block of a variant (see launch).
constexpr int fine_threads(Word w, int team_warps, bool sub) {
  return w == Word::kBit ? 256 : sub ? 32 * team_warps : 512;  // (octants: one team per block)
}
// Binary tiles need 47 KB of shared memory per block (32 KB of tiles, 15 KB of triangle setups),
// so registers decide how many blocks an SM holds: left alone, nvcc takes 91 per thread (2 blocks,
// 16 warps per SM); capped at 64 (4 blocks) the fine raster runs 10-22% faster on every benchmark
// mesh (H100: tubes 31.5 -> 24.6 ms, 6.4M dragon 1.50 -> 1.20 ms, bunny at 2048^3 0.98 -> 0.81 ms);
// at 48 or 40 registers it spills and is slower than the default. The conservative kernel with
// spread columns keeps larger setups (kWideRecord: 67 KB per block), so it holds 3 blocks (80
// registers, no spills): on an H200, fine raster 4.81-4.82 against 5.02 ms on the tubes,
// 0.157-0.159 against 0.163-0.165 on the 100k dragon, 0.351 against 0.377-0.382 on the bunny at
// 2048^3; the same setups in the kernel for rows alone made it slower (6.4M dragon 0.98 against
// 0.86 ms), so it keeps the small ones and 4 blocks. Value tiles are limited by shared memory.
// Value targets in octants keep the small records (the spread kernels compute the two projections'
// coefficients per column instead of reading them): 1.9 KB per warp instead of 4.4 KB, so an SM holds
// 10 octants of two warps instead of 8 for 32-bit values, 5 octants of four warps instead of 4 for
// one-channel sums, and keeps 2 octants of eight warps for three-channel sums on the spread kernels
// (which held 1). H200, fine raster, octants: count on the 1M tubes 3.77 -> 3.03 ms, CAD slivers 7.54
// -> 6.70, the 100k dragon 0.326 -> 0.261, the bunny at 512^3 0.158 -> 0.128; distance on the tubes
// 7.6 -> 6.4, on CAD 16.0 -> 15.8; distance:add on the tubes 12.0 -> 9.8, the dragon 0.89 -> 0.73;
// three warps per octant slower with either record
// (scripts/bench-results/octant-teams-h200-h100-2026-11-28.md).
#ifndef VT_VALUE_OCTANT_SMALL_RECORDS  // (A/B builds: scripts/kernel-variant.sh)
#define VT_VALUE_OCTANT_SMALL_RECORDS 1
#endif
constexpr bool wide_record(VoxelMode m, bool spread, bool value_octants = false) {
  return m == VoxelMode::kConservative && spread && !(value_octants && VT_VALUE_OCTANT_SMALL_RECORDS);
}
constexpr int binary_min_blocks(VoxelMode m, bool spread) { return wide_record(m, spread) ? 3 : 4; }

// The part of a voxel's bit index in a binary tile (brick << 9 | brick_offset, 4^3 bricks of 8^3)
// that coordinate x (0 to 31) along `axis` contributes: the bit indices are ORs of one term per axis.
__device__ inline uint32_t tile_axis_bits(int axis, int32_t x) {
  const int s = 2 - axis;  // brick_offset: x << 6 | y << 3 | z; bricks: bx << 4 | by << 2 | bz
  return (uint32_t(x >> 3) << (9 + 2 * s)) | (uint32_t(x & 7) << (3 * s));
}

// The batch's triangles in their dominant frames (core/overlap.h in_dominant_frame), kept in shared
// memory per warp, a record per triangle, so that a lane rastering a row or column of another lane's
// triangle reads its setup there instead of computing it again from shuffled vertices (on long thin
// triangles that was most of the work: several per column). A record holds the vertices and the
// normal (kSmallRecord floats) and, where columns are spread over the lanes in conservative mode
// (kWideRecord floats, wide_record), also the edge functions of the two projections that every
// column tests and 1 / the normal's dominant component. Records are contiguous (16-byte loads: the
// lanes reading one row's or neighbouring columns' triangle get a broadcast). Then three words per
// lane to regroup the batch by dominant axis (batch_words in all).
constexpr int kSmallRecord = 12;  // vertices, normal
constexpr int kCoeffFloats = int(sizeof(ConservativeCoeffs) / sizeof(float));
constexpr int kWideRecord = (kSmallRecord + kCoeffFloats + 3) / 4 * 4;  // then the ConservativeCoeffs, to 16 bytes
static_assert(kWideRecord == 32, "a wide record is 32 floats (the shared memory per block measured)");
constexpr int record_floats(bool wide) { return wide ? kWideRecord : kSmallRecord; }
constexpr int batch_words(bool wide) { return (record_floats(wide) + 3) * 32; }
template <int R>
__device__ inline void store_record(float* s, int slot, const TriSetup& f) {
  float r[R] = {f.v[0].x, f.v[0].y, f.v[0].z, f.v[1].x, f.v[1].y, f.v[1].z, f.v[2].x, f.v[2].y, f.v[2].z,
                f.n.x,    f.n.y,    f.n.z};
  if constexpr (R == kWideRecord) {
    TriSetup g = f;
    g.dom = 2;  // (f is in its dominant frame; lanes without a triangle store a point, whatever its dom)
    const ConservativeCoeffs k = conservative_coeffs(g);
    memcpy(r + kSmallRecord, &k, sizeof k);
  }
  float4* d = reinterpret_cast<float4*>(s + slot * R);
  for (int i = 0; i < R / 4; ++i) d[i] = make_float4(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
}
template <int R>
struct TriRecord {
  float r[R];
  __device__ TriRecord(const float* s, uint32_t slot) {
    const float4* d = reinterpret_cast<const float4*>(s + slot * R);
    for (int i = 0; i < R / 4; ++i) {
      const float4 q = d[i];
      r[4 * i] = q.x;
      r[4 * i + 1] = q.y;
      r[4 * i + 2] = q.z;
      r[4 * i + 3] = q.w;
    }
  }
  // The setup_triangle of the stored vertices (the same bits: the normal of vertices in the frame
  // is the frame's permutation of the world normal), with dom = 2.
  __device__ TriSetup setup() const {
    TriSetup t;
    for (int k = 0; k < 3; ++k) t.v[k] = Vec3f{r[3 * k], r[3 * k + 1], r[3 * k + 2]};
    t.n = Vec3f{r[9], r[10], r[11]};
    t.dom = 2;
    set_vertex_bounds(t);
    return t;
  }
  __device__ ConservativeCoeffs coeffs() const {  // (wide records)
    ConservativeCoeffs k;
    memcpy(&k, r + kSmallRecord, sizeof k);
    return k;
  }
};

// The rows of a triangle in a tile (f: its setup in its dominant frame, r: its box there): only
// those that can hold pixels (core/overlap.h conservative_row_range), along the axis with fewer of
// them. Returns the first row << 1 | 1 for rows along u (spans along v); *rows: their number.
// (Not inlined, fine raster 5% slower on the CAD slivers and the tubes.)
__device__ __forceinline__ uint32_t pick_rows(const TriSetup& f, const VoxelBox& r, uint32_t* rows) {
  int32_t lo_v = 0, lo_u = 0;
  const int32_t nv = conservative_row_range(f, r, 0, 1, &lo_v), nu = conservative_row_range(f, r, 1, 0, &lo_u);
  const bool along_b = nu < nv;
  *rows = uint32_t(along_b ? nu : nv);
  return uint32_t(along_b ? lo_u : lo_v) << 1 | uint32_t(along_b);
}

// A triangle's rows in a tile, packed for one shuffle: its dominant axis, whether rows are along u
// (spans along v: core/overlap.h conservative_row_range), the first row and the range in which
// the rows' spans lie (both relative to the tile: 0 to 31).
__device__ inline uint32_t row_info(int dom, bool along_b, int32_t row0, int32_t span_lo, int32_t span_hi) {
  return uint32_t(dom) | uint32_t(along_b) << 2 | uint32_t(row0) << 3 | uint32_t(span_lo) << 8 | uint32_t(span_hi) << 13;
}

__device__ inline uint32_t tri_id(const FineParams& p, uint32_t tri) { return p.d_tri_ids ? p.d_tri_ids[tri] : tri; }

// One triangle set up for the rows and columns of one tile (core/overlap.h) in one voxelization
// mode, from its setup in its dominant frame (in_dominant_frame): rows along axis 1 of the frame,
// columns along axis 2, so the axes are known at compile time (boxes and clip in the frame too).
template <VoxelMode kMode>
struct RowTriangle;
template <>
struct RowTriangle<VoxelMode::kConservative> {
  ConservativeSetup s;
  // setup_conservative of the record's setup (with the coefficients a wide record keeps)
  template <int R>
  __device__ explicit RowTriangle(const TriRecord<R>& rec) {
    if constexpr (R == kWideRecord) s = setup_conservative(rec.setup(), rec.coeffs());
    else s = setup_conservative(rec.setup());
  }
  __device__ const TriSetup& tri() const { return s.t; }
  __device__ bool bounds(const VoxelBox& clip, VoxelBox* r) const { return conservative_bounds(s.t, clip, r); }
  // The span of row `row`: along u (rows v) or, with along_b, along v (rows u).
  __device__ bool span(const VoxelBox& r, int32_t row, bool along_b, int32_t* lo, int32_t* hi) const {
    return along_b ? conservative_row_span_along_b(s, r, row, lo, hi) : conservative_row_span(s, r, row, lo, hi);
  }
  __device__ bool column(const VoxelBox& r, int32_t u, int32_t v, int32_t, int32_t* wlo, int32_t* whi) const {
    return conservative_column_run(s, r, u, v, wlo, whi);
  }
};
template <>
struct RowTriangle<VoxelMode::kThin> {
  TriSetup t;
  DiamondEdges e;
  __device__ explicit RowTriangle(const TriRecord<kSmallRecord>& rec)
      : t(rec.setup()), e(setup_diamond_edges(t, 2)) {}
  __device__ const TriSetup& tri() const { return t; }
  __device__ bool bounds(const VoxelBox& clip, VoxelBox* r) const { return thin_bounds(t, clip, r); }
  __device__ bool span(const VoxelBox& r, int32_t v, bool, int32_t* ulo, int32_t* uhi) const {  // (rows v only)
    return thin_row_span(t, e, r, v, ulo, uhi);
  }
  // dims_c: the grid's size along the dominant axis
  __device__ bool column(const VoxelBox& r, int32_t u, int32_t v, int32_t dims_c, int32_t* wlo, int32_t* whi) const {
    if (!thin_column_voxel(t, r, u, v, dims_c, wlo)) return false;
    *whi = *wlo;
    return true;
  }
};

// A team (kTeamWarps warps) owns one tile at a time: a single warp for binary tiles (4 KB, so
// every warp of the block works on its own tile even when tiles hold few triangles), the whole
// block for 32-bit value tiles (128 KB).
// kSub: each work item is one 16^3 octant of a virtual tile: owned by a block of two warps for
// 32-bit values (16 KB; kOctantTeamWarps), so value targets keep every warp busy when tiles hold few
// triangles; by a block of 4 or 8 warps for 64-bit sums (32 KB or 96 KB).
// kSpread: the columns of every round of rows are spread over the lanes, each lane shading its
// column's fragments with its column's triangle (value targets); the kernel without it keeps a lane
// per row, since the column code costs registers (and spills).
// kRanges (with kSpread, conservative): each triangle's rows in the tile are only those that can
// hold pixels, along whichever axis of its projection has fewer (pick_rows); a kernel of its own,
// since the rows' setup costs the kernel registers (api.h FineKernel::kRanges).
template <VoxelMode kMode, Target kTarget, Blend kBlend, int kTeamWarps, bool kSub, bool kSpread, bool kRanges>
__global__ void __launch_bounds__(fine_threads(word_kind(kTarget, kBlend), kTeamWarps, kSub),
                                  word_kind(kTarget, kBlend) == Word::kBit ? binary_min_blocks(kMode, kSpread) : 1)
    fine_kernel(FineParams p) {
  constexpr Word kWord = word_kind(kTarget, kBlend);
  constexpr int kAcc = acc_channels(kTarget, kBlend);
  constexpr bool kCount = kWord != Word::kBit;  // a value per voxel
  constexpr bool k64 = kWord == Word::kAdd64;
  static_assert(!kRanges || (kSpread && kMode == VoxelMode::kConservative), "row ranges: conservative spread columns");

  if constexpr (!kCount) {
    constexpr FineKernel kKernel = kRanges ? FineKernel::kRanges : kSpread ? FineKernel::kSpread : FineKernel::kRows;
    if (p.d_auto_pairs &&
        auto_fine_kernel(*p.d_auto_pairs, p.auto_tris, *p.d_auto_large_pairs, *p.d_auto_num_large, p.ranges) != kKernel)
      return;  // another's
  }
  // per team: its tile's bricks x (16 mask words | 512 values | 512 x kAcc int64 + 16 mask words)
  extern __shared__ __align__(16) uint32_t shared_tiles[];
  __shared__ uint32_t s_vtile[32], s_batch[32];
  constexpr int kDim = kSub ? kTileDim / 2 : kTileDim;
  constexpr int kAxisShift = kSub ? 1 : 2;  // log2 of bricks per axis
  constexpr int kAxisBricks = 1 << kAxisShift;
  constexpr int kBricks = kAxisBricks * kAxisBricks * kAxisBricks;
  constexpr int kValueWords = brick_value_words(kWord, kAcc);
  constexpr int kMaskAt = kValueWords;  // occupancy words within a brick (binary, 64-bit)
  constexpr int kWordsPerBrick = tile_brick_words(kWord, kAcc);
  constexpr int kTileWords = kBricks * kWordsPerBrick;
  constexpr int kTeamThreads = 32 * kTeamWarps;
  constexpr int kTeams = fine_threads(kWord, kTeamWarps, kSub) / kTeamThreads;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int team = warp / kTeamWarps, team_warp = warp % kTeamWarps, team_thread = threadIdx.x % kTeamThreads;
  uint32_t* tile_mem = shared_tiles + team * kTileWords;
  constexpr bool kWide = wide_record(kMode, kSpread, kSub && kCount);
  constexpr int kRecord = record_floats(kWide);
  constexpr int kBatchWords = batch_words(kWide);
  float* setups = reinterpret_cast<float*>(shared_tiles + kTeams * kTileWords + warp * kBatchWords);
  uint32_t* regroup = shared_tiles + kTeams * kTileWords + warp * kBatchWords + kRecord * 32;
  auto team_sync = [] {
    if (kTeamWarps == 1) __syncwarp();
    else __syncthreads();
  };
  for (int i = team_thread; i < kTileWords; i += kTeamThreads) tile_mem[i] = 0;
  const uint32_t num_items = (kSub ? 8u : 1u) * *p.d_num_vtiles;

  while (true) {
    team_sync();
    if (team_thread == 0) {
      s_vtile[team] = atomicAdd(p.d_next, 1u);
      s_batch[team] = 0;
    }
    team_sync();
    const uint32_t item = s_vtile[team];
    if (item >= num_items) break;
    const uint32_t vt = kSub ? item >> 3 : item;
    const VirtualTile tile = p.d_vtiles[vt];
    const Int3 tc = tile_coords(p.tiles, tile.tile);
    const int32_t tx = tc.x, ty = tc.y, tz = tc.z;
    const uint32_t octant = kSub ? item & 7 : 0;
    const int32_t base[3] = {(tx << kTileLog2) + int32_t((octant >> 2) & 1) * kDim,
                             (ty << kTileLog2) + int32_t((octant >> 1) & 1) * kDim,
                             (tz << kTileLog2) + int32_t(octant & 1) * kDim};
    VoxelBox clip;
    for (int a = 0; a < 3; ++a) {
      clip.lo[a] = base[a];
      clip.hi[a] = min(base[a] + kDim, component(p.dims, a)) - 1;
    }
    const uint32_t count = tile.end - tile.begin;

    TriShade shade;
    auto emit = [&](int32_t i, int32_t j, int32_t k) {
      const int x = i - base[0], y = j - base[1], z = k - base[2];
      const int lb = ((x >> 3) << (2 * kAxisShift)) | ((y >> 3) << kAxisShift) | (z >> 3);
      const int off = brick_offset(x & 7, y & 7, z & 7);
      uint32_t* brick = tile_mem + lb * kWordsPerBrick;
      if constexpr (kWord == Word::kBit) {
        atomic_blend32<Word::kBit>(&brick[off >> 5], 1u << (off & 31));
      } else if constexpr (kWord != Word::kAdd64) {
        atomic_blend32<kWord>(&brick[off], shade32<kTarget, kBlend>(shade, i, j, k, p.consts));
      } else {
        uint64_t v[3];
        shade64<kTarget, kBlend>(shade, i, j, k, p.consts, v);
        unsigned long long* acc = reinterpret_cast<unsigned long long*>(brick);
        for (int c = 0; c < kAcc; ++c) atomicAdd(&acc[c * kBrickVoxels + off], static_cast<unsigned long long>(v[c]));
        atomic_blend32<Word::kBit>(&brick[kMaskAt + (off >> 5)], 1u << (off & 31));
      }
    };
    // The run [wlo, whi] along the dominant axis `dom` of column (u, v) of its projection
    // (core/overlap.h: a = vt_axis_a(dom) is u's axis, b = vt_axis_b(dom) v's).
    auto emit_run = [&](int dom, int32_t u, int32_t v, int32_t wlo, int32_t whi) {
      if constexpr (kWord == Word::kBit && !kSub) {
        // A voxel's bit in the tile, brick << 9 | brick_offset, is an OR of one term per axis, so
        // the bits of a run that share a word are set with one atomic.
        static_assert(kAxisShift == 2 && kWordsPerBrick * 32 == kBrickVoxels, "tile_axis_bits' layout");
        auto or_run = [&](auto axis) {
          const int d = int(axis);
          const Int3 fbase = in_dominant_frame(Int3{base[0], base[1], base[2]}, d);
          const uint32_t fixed = tile_axis_bits(vt_axis_a(d), u - fbase.x) | tile_axis_bits(vt_axis_b(d), v - fbase.y);
          uint32_t word = (fixed | tile_axis_bits(d, wlo - fbase.z)) >> 5, mask = 0;
          for (int32_t w = wlo - fbase.z; w <= whi - fbase.z; ++w) {
            const uint32_t bit = fixed | tile_axis_bits(d, w);
            if ((bit >> 5) != word) {
              atomicOr(&tile_mem[word], mask);
              word = bit >> 5;
              mask = 0;
            }
            mask |= 1u << (bit & 31);
          }
          atomicOr(&tile_mem[word], mask);
        };
        // The kernel with spread columns has one copy per axis (its batches are grouped by axis,
        // below), so that the terms' shifts are constants; the kernel for rows alone has one copy
        // with the axis a run-time value (measured faster there: fewer registers and branches).
        if constexpr (kSpread) {
          if (dom == 0) or_run(std::integral_constant<int, 0>{});
          else if (dom == 1) or_run(std::integral_constant<int, 1>{});
          else or_run(std::integral_constant<int, 2>{});
        } else {
          or_run(dom);
        }
      } else {
        for (int32_t w = wlo; w <= whi; ++w) {
          const Int3 g = from_dominant_frame(Int3{u, v, w}, dom);
          emit(g.x, g.y, g.z);
        }
      }
    };
    // Persistent warps take batches of 32 triangles. The rows (scanlines of the dominant
    // projection inside the tile) of the batch's triangles are the warp's work units: a warp
    // prefix sum over rows per triangle, then every lane takes a row, so one large triangle
    // keeps the whole warp busy instead of one thread. In the kernel for triangles several voxels
    // across (long thin ones), the rows' columns are spread over the lanes instead.
    while (true) {
      uint32_t first = 0;
      if (lane == 0) first = atomicAdd(&s_batch[team], 32u);
      first = __shfl_sync(kFull, first, 0);
      if (first >= count) break;
      uint32_t rows = 0, tri = 0;
      // The triangle's rows in the tile: their axis and first row (row_info) and number.
      uint32_t tinfo = 0;
      int tdom = 0;
      {
        // Lanes without a triangle store a point at the origin (no rows).
        const Vec3f o{0, 0, 0};
        TriSetup f = setup_triangle(o, o, o);
        if (first + lane < count) {
          tri = p.d_tris[tile.begin + first + lane];
          const TriSetup t = setup_triangle(p.mesh.d_grid[p.mesh.d_indices[3 * tri]], p.mesh.d_grid[p.mesh.d_indices[3 * tri + 1]],
                                            p.mesh.d_grid[p.mesh.d_indices[3 * tri + 2]]);
          f = in_dominant_frame(t);
          tdom = t.dom;
          const VoxelBox fclip = in_dominant_frame(clip, t.dom);
          VoxelBox r;
          bool any = kMode == VoxelMode::kConservative ? conservative_bounds(f, fclip, &r) : thin_bounds(f, fclip, &r);
          // Where the tile cuts the triangle's depth range, its rows and their spans are those of
          // its piece in the tile's slab (core/overlap.h slab_box: the
          // triangle lifted onto the tests' plane, the slab grown by what a voxel or a thin voxel can
          // lie beyond it). Not in the binary kernel for rows alone (dense meshes, whose triangles
          // rarely cross tiles: its fine raster 3% slower with it on the 6.4M dragon and the room); in
          // the value and thin kernels it pays most (H200, fine ms, CAD slivers: count 20.8 -> 15.9,
          // thin count 12.2 -> 9.3, thin binary 3.36 -> 2.20).
          if ((kSpread || kCount) && any) any = slab_box(f, kMode, &r);
          if (any) {
            int32_t row0 = r.lo[1];
            bool along_b = false;
            if constexpr (kRanges) {
              uint32_t n = 0;
              const uint32_t first_and_axis = pick_rows(f, r, &n);
              rows = n;
              row0 = int32_t(first_and_axis >> 1);
              along_b = (first_and_axis & 1u) != 0;
            } else {
              rows = uint32_t(r.hi[1] - r.lo[1] + 1);
            }
            tinfo = row_info(t.dom, along_b, row0 - (along_b ? fclip.lo[0] : fclip.lo[1]),
                             along_b ? r.lo[1] - fclip.lo[1] : r.lo[0] - fclip.lo[0],
                             along_b ? r.hi[1] - fclip.lo[1] : r.hi[0] - fclip.lo[0]);
          }
        }
        __syncwarp();  // every lane has finished with the previous batch's setups
        if constexpr (kSpread) {
          // The batch regrouped by dominant axis (then lanes without a triangle), in the mesh's
          // order within a group: the rows and columns that lanes take together then mostly share
          // their axis, so the per-axis copies of emit_run run once, not three times. Measured on
          // an H200: without the grouping and the per-axis copies the tubes' fine raster is 4%
          // slower; in the kernel for rows alone both cost more than they save (6.4M dragon 0.86
          // against 0.91 ms, room 0.32 against 0.34), so it has neither.
          const bool valid = first + lane < count;
          const uint32_t m0 = __ballot_sync(kFull, valid && tdom == 0), m1 = __ballot_sync(kFull, valid && tdom == 1);
          const uint32_t m2 = __ballot_sync(kFull, valid && tdom == 2);
          const uint32_t group = !valid ? ~(m0 | m1 | m2) : tdom == 0 ? m0 : tdom == 1 ? m1 : m2;
          const uint32_t before = !valid ? __popc(m0 | m1 | m2) : tdom == 0 ? 0u : tdom == 1 ? __popc(m0) : __popc(m0 | m1);
          const uint32_t slot = before + __popc(group & ((1u << lane) - 1u));
          store_record<kRecord>(setups, int(slot), f);
          regroup[slot] = rows;
          regroup[32 + slot] = tri;
          regroup[64 + slot] = tinfo;
          __syncwarp();
          rows = regroup[lane];
          tri = regroup[32 + lane];
          tinfo = regroup[64 + lane];
        } else {
          store_record<kRecord>(setups, lane, f);
          __syncwarp();
        }
      }
      const uint32_t incl = warp_inclusive_sum(rows);
      const uint32_t total = __shfl_sync(kFull, incl, 31);
      for (uint32_t k0 = 0; k0 < total; k0 += 32) {
        const uint32_t k = k0 + uint32_t(lane);
        const uint32_t owner = find_owner(incl, k);  // lane holding the triangle of row k
        const uint32_t owner_first_row = __shfl_sync(kFull, incl, owner) - __shfl_sync(kFull, rows, owner);
        const uint32_t row_tri = kCount ? __shfl_sync(kFull, tri, owner) : 0u;  // (shading only)
        // This lane's row: its span of columns.
        const uint32_t info = __shfl_sync(kFull, tinfo, owner);
        const int dom = int(info & 3u);
        const bool along_b = kRanges && (info & 4u) != 0;  // rows u, spans along v
        const RowTriangle<kMode> rt(TriRecord<kRecord>(setups, owner));
        const TriSetup& ft = rt.tri();
        const VoxelBox fc = in_dominant_frame(clip, dom);
        VoxelBox r;
        rt.bounds(fc, &r);
        // The range of the spans (the box's, or its piece's in the tile's slab)
        const int32_t span_lo = int32_t((info >> 8) & 31u), span_hi = int32_t((info >> 13) & 31u);
        if (along_b) {
          r.lo[1] = fc.lo[1] + span_lo;
          r.hi[1] = fc.lo[1] + span_hi;
        } else {
          r.lo[0] = fc.lo[0] + span_lo;
          r.hi[0] = fc.lo[0] + span_hi;
        }
        int32_t row = 0, ulo = 0, uhi = -1;  // the row, and its span along the other axis
        if (k < total) {
          row = (along_b ? fc.lo[0] : fc.lo[1]) + int32_t((info >> 3) & 31u) + int32_t(k - owner_first_row);
          if (!rt.span(r, row, along_b, &ulo, &uhi)) uhi = ulo - 1;
        }
        const uint32_t cols = uint32_t(uhi - ulo + 1);
        uint32_t cincl = cols;
        if constexpr (kSpread) cincl = warp_inclusive_sum(cols);
        const uint32_t ctotal = kSpread ? __shfl_sync(kFull, cincl, 31) : 0u;
        // Rows alone, a lane each (the kernel without the column code). The kernel with it spreads
        // every round's columns, also where rows are short: a path for rows alone there made the
        // kernel larger and its fine raster 0.5-4.7% slower on every mesh (api.h FineKernel).
        if constexpr (!kSpread) {
          if (cols == 0) continue;
          if constexpr (kCount) {
            const Vec3f v[3] = {from_dominant_frame(ft.v[0], dom), from_dominant_frame(ft.v[1], dom),
                                from_dominant_frame(ft.v[2], dom)};
            shade = shade_setup<kTarget, kBlend>(tri_id(p, row_tri), v, p.consts);
          }
          const int32_t dims_c = component(p.dims, dom);
          for (int32_t x = ulo; x <= uhi; ++x) {
            const int32_t u = along_b ? row : x, v = along_b ? x : row;
            int32_t wlo, whi;
            if (rt.column(r, u, v, dims_c, &wlo, &whi)) emit_run(dom, u, v, wlo, whi);
          }
          continue;
        }
        // Columns spread over the lanes: each reads its column's triangle from the batch's setups.
        if constexpr (kSpread) for (uint32_t j0 = 0; j0 < ctotal; j0 += 32) {
          const uint32_t j = j0 + uint32_t(lane);
          const uint32_t q = find_owner(cincl, j);  // lane holding the row of column j
          const uint32_t o = __shfl_sync(kFull, owner, q);  // lane holding that row's triangle
          const int32_t qrow = __shfl_sync(kFull, row, q);
          const int32_t qx =
              __shfl_sync(kFull, ulo, q) + int32_t(j - (__shfl_sync(kFull, cincl, q) - __shfl_sync(kFull, cols, q)));
          const uint32_t qinfo = __shfl_sync(kFull, info, q);
          const int qdom = int(qinfo & 3u);
          const bool qalong_b = kRanges && (qinfo & 4u) != 0;
          const int32_t qu = qalong_b ? qrow : qx, qv = qalong_b ? qx : qrow;
          // The column needs only the depth range of the row's box (r, in the frame).
          const VoxelBox qr{{0, 0, __shfl_sync(kFull, r.lo[2], q)}, {0, 0, __shfl_sync(kFull, r.hi[2], q)}};
          int32_t wlo = 0, whi = -1;
          const uint32_t qtri = kCount ? __shfl_sync(kFull, tri, o) : 0u;  // (shading only)
          if (j < ctotal) {
            const RowTriangle<kMode> qt(TriRecord<kRecord>(setups, o));
            if (!qt.column(qr, qu, qv, component(p.dims, qdom), &wlo, &whi)) whi = wlo - 1;
            if constexpr (kCount) {
              if (wlo <= whi) {  // the column's triangle shades its fragments
                const TriSetup& ft = qt.tri();
                const Vec3f v[3] = {from_dominant_frame(ft.v[0], qdom), from_dominant_frame(ft.v[1], qdom),
                                    from_dominant_frame(ft.v[2], qdom)};
                shade = shade_setup<kTarget, kBlend>(tri_id(p, qtri), v, p.consts);
              }
            }
          }
          // The lanes' runs found, their bits are set together (measured: the lanes reached the
          // emission in two groups on average, each running it).
          __syncwarp();
          if (wlo <= whi) emit_run(qdom, qu, qv, wlo, whi);
        }
      }
    }
    team_sync();

    // Write-out; the tile memory is cleared for the next tile as it is read.
    auto tile_brick_key = [&](int lb) {  // brick lb of the tile (bricks x-major, as brick_offset)
      return brick_key((base[0] >> 3) + (lb >> (2 * kAxisShift)), (base[1] >> 3) + ((lb >> kAxisShift) & (kAxisBricks - 1)),
                       (base[2] >> 3) + (lb & (kAxisBricks - 1)));
    };
    if constexpr (kWord == Word::kBit) {
      // Binary (a warp per tile): which bricks are non-empty, then one global atomic for their
      // slots and two bricks per step. Lane l reads words l + 32 k: bricks 2k (lanes 0-15) and
      // 2k + 1 (lanes 16-31).
      static_assert(kTeamWarps == 1 && kBricks == 64 && kWordsPerBrick == 16 && kMaskAt == 0, "binary tile layout");
      uint64_t nonempty = 0;
      for (int k = 0; k < 32; ++k) {
        const uint32_t bits = __ballot_sync(kFull, tile_mem[k * 32 + lane] != 0);
        nonempty |= (uint64_t((bits & 0xffffu) != 0) | (uint64_t((bits >> 16) != 0) << 1)) << (2 * k);
      }
      if (nonempty == 0) continue;
      unsigned long long first = 0;
      if (lane == 0) first = atomicAdd(p.out.d_count, static_cast<unsigned long long>(__popcll(nonempty)));
      first = __shfl_sync(kFull, first, 0);
      const int half = lane >> 4, w = lane & 15;
      for (uint64_t m = nonempty; m != 0; first += 2) {
        int lb = __ffsll(static_cast<long long>(m)) - 1;  // this step's first brick
        m &= m - 1;
        if (half) lb = m != 0 ? __ffsll(static_cast<long long>(m)) - 1 : -1;  // and second
        if (m != 0) m &= m - 1;
        if (lb < 0) continue;
        uint32_t* word = tile_mem + lb * kWordsPerBrick + w;
        const unsigned long long slot = first + half;
        if (slot < p.out.capacity) {
          p.out.d_masks[slot * kBrickMaskWords + w] = *word;
          if (w == 0) p.out.d_keys[slot] = tile_brick_key(lb);
        }
        *word = 0;
      }
    } else for (int lb = team_warp; lb < kBricks; lb += kTeamWarps) {
      uint32_t* brick = tile_mem + lb * kWordsPerBrick;
      uint32_t mask_word = 0;
      bool any = false;
      if (kCount && !k64) {
        for (int w = 0; w < kBrickMaskWords; ++w) {
          const uint32_t bits = __ballot_sync(kFull, brick[w * 32 + lane] != 0);
          if (lane == w) mask_word = bits;
          any = any || bits != 0;
        }
      } else {
        mask_word = lane < kBrickMaskWords ? brick[kMaskAt + lane] : 0u;
        any = __any_sync(kFull, mask_word != 0);
      }
      if (!any) continue;
      unsigned long long slot = 0;
      if (lane == 0) slot = atomicAdd(p.out.d_count, 1ull);
      slot = __shfl_sync(kFull, slot, 0);
      if (slot < p.out.capacity) {
        if (lane < kBrickMaskWords) p.out.d_masks[slot * kBrickMaskWords + lane] = mask_word;
        if (lane == 0) p.out.d_keys[slot] = tile_brick_key(lb);
        for (int w = lane; w < kValueWords; w += 32) p.out.d_values[slot * kValueWords + w] = brick[w];
      }
      for (int w = lane; w < kWordsPerBrick; w += 32) brick[w] = 0;
    }
  }
}

template <VoxelMode kMode, Target kTarget, Blend kBlend, bool kSub, bool kSpread = false, bool kRanges = false>
void launch(const FineParams& p, int num_sms, cudaStream_t stream) {
  constexpr Word kWord = word_kind(kTarget, kBlend);
  constexpr bool kCount = kWord != Word::kBit;
  constexpr bool k64 = kWord == Word::kAdd64;
  constexpr int kAcc = acc_channels(kTarget, kBlend);
  static_assert(!k64 || kSub, "64-bit targets raster octants");
  constexpr int kTeamWarps = k64 ? (kAcc == 1 ? 4 : 8) : !kCount ? 1 : kSub ? kOctantTeamWarps : 16;
  constexpr int threads = fine_threads(kWord, kTeamWarps, kSub);
  const int teams = threads / (32 * kTeamWarps);
  const size_t bricks = kSub ? 8 : kTileBricks;
  constexpr size_t words = tile_brick_words(kWord, kAcc);
  constexpr size_t batch = batch_words(wide_record(kMode, kSpread, kSub && kCount));
  const size_t smem = (size_t(teams) * bricks * words + size_t(threads / 32) * batch) * sizeof(uint32_t);
  auto kernel = fine_kernel<kMode, kTarget, kBlend, kTeamWarps, kSub, kSpread, kRanges>;
  // The attribute and the occupancy, once per thread and device (host calls that small jobs wait for).
  thread_local int known_device = -1, per_sm = 0;
  int device = 0;
  VT_CUDA_CHECK(cudaGetDevice(&device));
  if (device != known_device) {
    VT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    VT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    known_device = device;
  }
  if (per_sm < 1) fail(ErrorKind::kResource, "the fine raster kernel does not fit on this GPU");
  const unsigned blocks = unsigned(per_sm * num_sms);
  kernel<<<blocks, threads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH();
}

// The kernel the host chose (p.kernel: rows, spread, or ranges in conservative mode), in tiles or in
// octants (kSub). Three-channel sums (normal:add) too since their octants keep the small records
// (two octants per SM, not one): spread, their fine raster is 22-37% faster than on rows alone (H200:
// 1M tubes 20.5 -> 15.0 ms, CAD 37.1 -> 23.4, the 100k dragon 1.56 -> 1.19, the bunny at 1024^3 2.16
// -> 1.68); with the wide records it was 20-47% slower.
template <VoxelMode kMode, Target kTarget, Blend kBlend, bool kSub>
void launch_chosen(const FineParams& p, int num_sms, cudaStream_t stream) {
  if (p.kernel == FineKernel::kRows) return launch<kMode, kTarget, kBlend, kSub, false>(p, num_sms, stream);
  if constexpr (kMode == VoxelMode::kConservative)
    if (p.kernel == FineKernel::kRanges) return launch<kMode, kTarget, kBlend, kSub, true, true>(p, num_sms, stream);
  launch<kMode, kTarget, kBlend, kSub, true>(p, num_sms, stream);
}

template <VoxelMode kMode, Target kTarget, Blend kBlend>
void launch_mode(const FineParams& p, bool sub, int num_sms, cudaStream_t stream) {
  constexpr Word kWord = word_kind(kTarget, kBlend);
  if constexpr (kWord == Word::kBit) {
    if (p.d_auto_pairs) {  // (all but one return at once: FineParams::d_auto_pairs)
      launch<kMode, kTarget, kBlend, false, true>(p, num_sms, stream);
      launch<kMode, kTarget, kBlend, false, false>(p, num_sms, stream);
      if constexpr (kMode == VoxelMode::kConservative)  // (no kRanges in thin mode)
        if (p.ranges) launch<kMode, kTarget, kBlend, false, true, true>(p, num_sms, stream);
    } else {
      launch_chosen<kMode, kTarget, kBlend, false>(p, num_sms, stream);
    }
  } else if constexpr (kWord == Word::kAdd64) {
    launch_chosen<kMode, kTarget, kBlend, true>(p, num_sms, stream);  // (64-bit sums always in octants)
  } else if (sub) {
    launch_chosen<kMode, kTarget, kBlend, true>(p, num_sms, stream);
  } else {
    launch_chosen<kMode, kTarget, kBlend, false>(p, num_sms, stream);
  }
}

// The fine raster of one target and blend, in either voxelization mode.
template <Target kTarget, Blend kBlend>
void launch_target(const FineParams& p, VoxelMode mode, bool sub_tiles, int num_sms, cudaStream_t stream) {
  if (mode == VoxelMode::kThin) launch_mode<VoxelMode::kThin, kTarget, kBlend>(p, sub_tiles, num_sms, stream);
  else launch_mode<VoxelMode::kConservative, kTarget, kBlend>(p, sub_tiles, num_sms, stream);
}

// Every target and blend (core/targets.h VT_TARGET_BLENDS), each instantiated in one file only.
#define VT_FINE_EXTERN(t, b)                                                                          \
  extern template void launch_target<Target::t, Blend::b>(const FineParams&, VoxelMode, bool, int, cudaStream_t);
VT_TARGET_BLENDS(VT_FINE_EXTERN)
#undef VT_FINE_EXTERN
#define VT_FINE_INSTANTIATE(t, b) \
  template void launch_target<Target::t, Blend::b>(const FineParams&, VoxelMode, bool, int, cudaStream_t);

}  // namespace fine
}  // namespace voxtile
