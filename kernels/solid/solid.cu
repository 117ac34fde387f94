// The inside test and the narrow band on the GPU (solid and sdf targets): the same decisions as the
// CPU reference (core/inside.cpp), with the shared functions of core/inside.h.
//
// Inside, per column axis: snap the triangles; count the columns of each triangle's snapped bounds,
// scan, and test one (triangle, column) pair per thread (load-balanced by a binary search in the
// scan), appending the crossings; sort them by (column, first voxel above); a segmented scan of
// their signs gives the crossing sum of every span between two crossings, and one thread per span
// sets its voxels in a bit per voxel of the grid's bricks. For the winding test the boundary is found
// on the device (vertices welded by position, edges counted); columns whose tile and whose own
// azimuth sum do not decide them are evaluated span by span (one warp per column,
// inside_winding_column, the same steps and sums as the CPU). Non-empty bricks
// are selected, their masks gathered and downloaded.
//
// Band: count the bricks of each triangle's band range, scan, emit (brick, triangle) pairs, sort by
// brick, run-length encode; one block per brick takes the minimum distance over its triangles, the
// distances that the triangles' bounds do not skip queued per warp and taken 32 at a time.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/std/functional>
#include <type_traits>

#include "core/band_search.h"
#include "core/inside_grid.h"
#include "core/inside_tree.h"
#include "core/search.h"
#include "kernels/compact.cuh"
#include "kernels/gpu_voxelizer.cuh"

namespace voxtile {
namespace {

constexpr int kK0Bits = 17;  // first voxel above: 0..65535

struct InsideView {
  const int64_t* u;
  const int64_t* v;
  const float* w;
  uint64_t num_tris;
  Int3 dims;  // along u, v, w
  int axis;
  Int3 nb;  // bricks along x, y, z
  int32_t bx0, bx1;  // the x-slab of bricks whose bits are held (bits start at brick bx0)
};

__device__ inline float axis_comp(const Vec3f& p, int a) { return a == 0 ? p.x : (a == 1 ? p.y : p.z); }

__global__ void k_snap(const Vec3f* g, const uint32_t* idx, uint64_t n3, int axis, int64_t* u, int64_t* v, float* w) {
  const uint64_t c = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= n3) return;
  const Vec3f p = g[idx[c]];
  u[c] = inside_snap(axis_comp(p, (axis + 1) % 3));
  v[c] = inside_snap(axis_comp(p, (axis + 2) % 3));
  w[c] = axis_comp(p, axis);
}

__device__ inline bool tri_columns(const InsideView& m, uint64_t t, int32_t* u0, int32_t* u1, int32_t* v0,
                                   int32_t* v1) {
  const int64_t* u = m.u + 3 * t;
  const int64_t* v = m.v + 3 * t;
  inside_column_range(min(min(u[0], u[1]), u[2]), max(max(u[0], u[1]), u[2]), m.dims.x, u0, u1);
  inside_column_range(min(min(v[0], v[1]), v[2]), max(max(v[0], v[1]), v[2]), m.dims.y, v0, v1);
  return *u0 <= *u1 && *v0 <= *v1;
}

// Rows (along v) of each triangle's box of columns.
__global__ void k_count_rows(InsideView m, uint64_t* counts) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= m.num_tris) return;
  int32_t u0, u1, v0, v1;
  counts[t] = tri_columns(m, t, &u0, &u1, &v0, &v1) ? uint64_t(v1 - v0 + 1) : 0;
}

// The item of an expansion: t with offsets[t] <= p < offsets[t + 1].
__device__ inline uint64_t find_item(const uint64_t* offsets, uint64_t n, uint64_t p) {
  uint64_t lo = 0, hi = n;  // offsets[lo] <= p < offsets[hi]
  while (hi - lo > 1) {
    const uint64_t mid = (lo + hi) / 2;
    if (offsets[mid] <= p)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// Each row's crossed columns (inside_row_span): their number, where they start, the row's triangle and v.
__global__ void k_row_spans(InsideView m, const uint64_t* offsets, uint64_t rows, uint64_t* counts, uint32_t* row_tri,
                            int32_t* row_lo, int32_t* row_j) {
  for (uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t t = find_item(offsets, m.num_tris, r);
    int32_t u0, u1, v0, v1;
    tri_columns(m, t, &u0, &u1, &v0, &v1);
    const int32_t j = v0 + int32_t(r - offsets[t]);
    int32_t lo, hi;
    const bool any = inside_row_span(m.u + 3 * t, m.v + 3 * t, inside_column(j), u0, u1, &lo, &hi);
    counts[r] = any ? uint64_t(hi - lo + 1) : 0;
    row_tri[r] = uint32_t(t);
    row_lo[r] = lo;
    row_j[r] = j;
  }
}

__global__ void k_crossings(InsideView m, const uint64_t* row_offsets, uint64_t rows, const uint32_t* row_tri,
                            const int32_t* row_lo, const int32_t* row_j, uint64_t total, unsigned long long* keys,
                            int32_t* signs, unsigned long long* counter) {
  for (uint64_t p = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t r = find_item(row_offsets, rows, p);
    const uint64_t t = row_tri[r];
    const int32_t i = row_lo[r] + int32_t(p - row_offsets[r]), j = row_j[r];
    double wc;
    const int s = inside_crossing(m.u + 3 * t, m.v + 3 * t, m.w + 3 * t, inside_column(i), inside_column(j), &wc);
    if (!s) continue;
    const int64_t k0 = inside_first_above(wc);
    if (k0 >= m.dims.z) continue;
    const unsigned long long slot = atomicAdd(counter, 1ull);
    keys[slot] = ((uint64_t(i) * uint64_t(m.dims.y) + uint64_t(j)) << kK0Bits) | uint64_t(k0);
    signs[slot] = s;
  }
}

__global__ void k_column_ids(const unsigned long long* keys, uint64_t n, unsigned long long* cols) {
  const uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < n) cols[r] = keys[r] >> kK0Bits;
}

// Sets voxels [k0, k1) of column (i, j) (along u, v) in the bitmap.
__device__ inline void set_span_bits(const InsideView& m, uint32_t* bits, int32_t i, int32_t j, int64_t k0,
                                     int64_t k1) {
  // The slab's voxels only: x is i (axis 2), k (axis 0) or j (axis 1).
  const int32_t x0 = m.bx0 * 8, x1 = m.bx1 * 8;
  if ((m.axis == 2 && (i < x0 || i >= x1)) || (m.axis == 1 && (j < x0 || j >= x1))) return;
  if (m.axis == 0) {
    k0 = max(k0, int64_t(x0));
    k1 = min(k1, int64_t(x1));
  }
  for (int64_t k = k0; k < k1;) {
    const int64_t end = min(k1, (k / 8 + 1) * 8);
    int32_t x, y, z;
    if (m.axis == 2)
      x = i, y = j, z = int32_t(k);
    else if (m.axis == 0)
      x = int32_t(k), y = i, z = j;
    else
      x = j, y = int32_t(k), z = i;
    const uint64_t brick =
        (uint64_t((x >> 3) - m.bx0) * uint64_t(m.nb.y) + uint64_t(y >> 3)) * uint64_t(m.nb.z) + uint64_t(z >> 3);
    uint32_t* words = bits + brick * 16;
    if (m.axis == 2) {
      const int off = brick_offset(x & 7, y & 7, z & 7);
      const uint32_t run = ((1u << int(end - k)) - 1u) << (off & 31);
      atomicOr(&words[off >> 5], run);
    } else {
      for (int64_t q = k; q < end; ++q) {
        const int lw = int(q & 7);
        const int off = m.axis == 0 ? brick_offset(lw, i & 7, j & 7) : brick_offset(j & 7, lw, i & 7);
        atomicOr(&words[off >> 5], 1u << (off & 31));
      }
    }
    k = end;
  }
}

// Columns of the range box that the winding test must evaluate span by span (1) or not (0).
struct Columns {
  int32_t u_lo, u_hi, v_lo, v_hi;
  __device__ bool contains(int32_t i, int32_t j) const { return i >= u_lo && i < u_hi && j >= v_lo && j < v_hi; }
  __device__ uint64_t index(int32_t i, int32_t j) const {
    return uint64_t(i - u_lo) * uint64_t(v_hi - v_lo) + uint64_t(j - v_lo);
  }
};

__global__ void k_spans(InsideView m, const unsigned long long* keys, const int32_t* prefix, uint64_t n, bool winding,
                        const uint8_t* undecided, Columns cols, uint32_t* bits) {
  const uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= n) return;
  const uint64_t col = keys[r] >> kK0Bits;
  const int32_t i = int32_t(col / uint64_t(m.dims.y)), j = int32_t(col % uint64_t(m.dims.y));
  if (undecided && cols.contains(i, j) && undecided[cols.index(i, j)]) return;
  const int64_t k0 = int64_t(keys[r] & ((1ull << kK0Bits) - 1));
  const int64_t k1 =
      r + 1 < n && (keys[r + 1] >> kK0Bits) == col ? int64_t(keys[r + 1] & ((1ull << kK0Bits) - 1)) : int64_t(m.dims.z);
  const int64_t sum = prefix[r];
  const bool in = winding ? sum >= 1 : (sum & 1) != 0;
  if (in && k1 > k0) set_span_bits(m, bits, i, j, k0, k1);
}

__global__ void k_tile_decided(const InsideEdge* edges, uint64_t ne, InsideScale sc, int32_t tu0, int32_t tv0,
                               int32_t ntv, uint64_t ntiles, uint8_t* tile_undecided) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= ntiles) return;
  const int32_t tu = tu0 + int32_t(t / uint64_t(ntv)), tv = tv0 + int32_t(t % uint64_t(ntv));
  tile_undecided[t] = inside_tile_decided(edges, ne, tu, tv, sc) ? 0 : 1;
}

__global__ void k_column_decided(const InsideEdge* edges, uint64_t ne, InsideScale sc, Columns cols, int32_t tu0,
                                 int32_t tv0, int32_t ntv, const uint8_t* tile_undecided, uint8_t* undecided) {
  const uint64_t c = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nv = uint64_t(cols.v_hi - cols.v_lo);
  if (c >= uint64_t(cols.u_hi - cols.u_lo) * nv) return;
  const int32_t i = cols.u_lo + int32_t(c / nv), j = cols.v_lo + int32_t(c % nv);
  const bool tile = tile_undecided[uint64_t((i >> 3) - tu0) * uint64_t(ntv) + uint64_t((j >> 3) - tv0)] != 0;
  undecided[c] = tile && !inside_column_decided(edges, ne, inside_column(i), inside_column(j), sc) ? 1 : 0;
}

// One warp per undecided column: w = c + B / 4pi, span by span (inside_winding_column), each
// evaluation of B spread over the lanes and reduced in the order of inside_boundary_parts.
// The sums wait on chains of double square roots and divisions (issue slots 54% busy, ncu), so the
// kernel holds 6 blocks per SM (80 registers, 92 bytes spilled) instead of the 5 that nvcc's 96
// registers allowed: H200, sdf GPU total ms, Sponza's columns and shrubbery at 512^3 243.1-243.5 ->
// 235.0-235.8, at 1024^3 1019.5 -> 980.1, the scan fragment at 512^3 34.8 -> 34.0-34.3, the bunny and
// the terrain within 1.5%. 8 blocks (64 registers, 392 bytes spilled): 2% faster on Sponza, 7% slower
// on the bunny at 1024^3; two edges per lane at a time (108 registers): slower, with 6 blocks 4%
// faster on Sponza but 25% slower on the terrain (scripts/bench-results/winding-h200-2026-11-28.md).
// The kernel that walks the piece trees holds 4 blocks instead (118 registers, nothing spilled; at 6
// blocks it spilled 632 bytes, loaded back 1,240 times a launch's worth in its far and near loops):
// H200, inside_winding ms, open tubes at 512^3 (144k triangles) 97.2 -> 35.3 (sdf), 87.4 -> 31.7
// (solid), at 1024^3 445.6 -> 157.2, 2,000 short open tubes 334.8 -> 164.3, 300k 21.1 -> 10.0,
// 640k 83.7 -> 52.2; Sponza's columns and shrubbery, whose time goes to exact sums over all 13,392
// edges (latency-bound: more warps hide more), at 256^3 36.9 -> 35.3, at 1024^3 378.6 -> 383.2 (sdf)
// and 920 -> 978 (solid); 5 blocks (96 registers) between the two on the tubes and no better on
// Sponza. Measured there and not kept: a voxel's own bounds (inside_tree_point, the CPU's) with the
// pieces it opens listed for the warp (Sponza's sdf at 1024^3 378 -> 455-560 ms: ~6x fewer edges per
// voxel than its exact sum, but the walk of the far balls' subtrees costs half an exact sum), and
// the exact sums two edges at a time (Sponza 378 -> 557)
// (scripts/bench-results/winding-blocks-h200-2026-11-29.md).
constexpr int kWindingWarps = 4;
// Boundary edges up to which the columns walk the piece trees: beyond, their cuts would not fit their
// room (the far balls grow with the pieces: up to 1,657 for 5,000 pieces), the trees' build wasted.
constexpr size_t kTreeMaxEdges = 65536;
// Room per warp for a column's cut of the trees (far balls and near edges): 8 KB per warp, 32 KB per
// block. Columns of the 1.2M open tubes at 512^3 list up to ~1,700 far balls (median 926); Sponza's
// columns at 512^3 a median of 369 far balls and 119 near edges, a tenth of them over 1,700 in all.
#ifndef VT_WINDING_APPROX  // (A/B builds: scripts/kernel-variant.sh)
#define VT_WINDING_APPROX 1
#endif
#ifndef VT_WINDING_CUT_ROOM  // (A/B builds: scripts/kernel-variant.sh)
#define VT_WINDING_CUT_ROOM 2048
#endif
constexpr int kCutRoom = VT_WINDING_CUT_ROOM;
constexpr int kCoarseWords = int(sizeof(InsideFar) / sizeof(uint32_t));
static_assert(kCoarseWords >= 2 && (kCutRoom - kCoarseWords) % 2 == 0, "the first cut's 64-bit counter");
#ifndef VT_WINDING_MIN_BLOCKS  // (A/B builds: scripts/kernel-variant.sh)
#define VT_WINDING_MIN_BLOCKS 6
#endif
#ifndef VT_WINDING_TREE_MIN_BLOCKS  // (A/B builds: scripts/kernel-variant.sh)
#define VT_WINDING_TREE_MIN_BLOCKS 4
#endif
// The columns whose patience has run out in the kernel with trees, for the kernel without them: the
// column (d_list's entry) and its first voxel left. Their exact sums are two thirds of Sponza's at
// 1024^3 (counted: 929k of 1.39M), and the kernel with trees holds 4 blocks per SM (ncu: FP64 pipe
// 33% busy, a third of the stalls on fixed-latency dependencies) where the one without holds 6: H200,
// inside_winding ms, Sponza's sdf at 1024^3 338 -> 289, solid 664 -> 637, at 512^3 95 -> 90 and 140
// -> 137, at 384^3 60 -> 56; open tubes hand on no column or a few (+1%); the same bits (each voxel
// is its exact sum's, wherever it is summed) (scripts/bench-results/winding-edges-h200-2026-11-30.md).
struct WindingRest {
  uint32_t* list;
  int32_t* start;
  unsigned long long* count;
};
// Columns handed on only where the kernel with trees lists at least this many rounds of the columns
// its SMs hold at once (13,568 columns of Sponza at 256^3 are 6.4 rounds on an H200: handed on, the
// longest columns' exact sums ran after the kernel instead of beside it, 31 -> 38 ms; at 384^3,
// 30,336 columns, 60.0 -> 56.0).
constexpr uint64_t kHandMinRounds = 8;
// kTrees: the columns walk the piece trees first (core/inside_tree.h); the kernel without them (fewer
// than kInsideTreeMinEdges boundary edges, or more than kTreeMaxEdges) keeps no shared memory and no
// tree code.
template <bool kTrees>
__global__ void __launch_bounds__(32 * kWindingWarps, kTrees ? VT_WINDING_TREE_MIN_BLOCKS : VT_WINDING_MIN_BLOCKS)
    k_undecided(InsideView m, const uint32_t* list, uint64_t nlist, Columns cols, int32_t w_lo, int32_t w_hi,
                const unsigned long long* keys, const int32_t* signs, uint64_t n, const InsideEdge* edges,
                const InsideEdgeX* xedges, uint64_t ne, InsideTreeView trees, int tree_patience, InsideScale sc,
                const uint32_t* need, Int3 nb, uint32_t* bits, WindingRest rest_out, const int32_t* starts) {
  const uint64_t q = uint64_t(blockIdx.x) * kWindingWarps + threadIdx.x / 32;
  const int lane = int(threadIdx.x % 32);
  if (q >= nlist) return;  // whole warps
  const uint64_t c = list[q];
  const uint64_t nv = uint64_t(cols.v_hi - cols.v_lo);
  const int32_t i = cols.u_lo + int32_t(c / nv), j = cols.v_lo + int32_t(c % nv);
  if (i < m.bx0 * 8 || i >= m.bx1 * 8) return;  // whole warps: a column of another slab (axis 2: i is x)
  // The bricks wanted along the column (need: a bit per brick of the grid, x-major; null: all of them),
  // and whether any lies within [w_lo, w_hi) (else the whole warp is done).
  const uint64_t need0 = (uint64_t(i >> 3) * uint64_t(nb.y) + uint64_t(j >> 3)) * uint64_t(nb.z);
  auto wanted = [&](int64_t bw) {
    const uint64_t x = need0 + uint64_t(bw);
    return bw >= 0 && bw < int64_t(nb.z) && ((need[x >> 5] >> (x & 31)) & 1u) != 0;
  };
  if (need) {
    bool any = false;
    for (int64_t bw = int64_t(w_lo) >> 3; w_hi > w_lo && bw <= int64_t(w_hi - 1) >> 3 && !any; ++bw) any = wanted(bw);
    if (!any) return;
  }
  const InsideColumn col = inside_column_at(i, j, sc);
  const uint64_t column = uint64_t(i) * uint64_t(m.dims.y) + uint64_t(j);
  // The column's crossings: [first key >= column << kK0Bits, first key >= (column + 1) << kK0Bits).
  auto lower = [&](unsigned long long target) {
    return lower_bound_index(keys, n, target);
  };
  const uint64_t q0 = lower(column << kK0Bits), q1 = lower((column + 1) << kK0Bits);
  // The column's cut of the trees, listed once in shared memory (the far balls, then the near pieces'
  // edges; trees.loose are near everywhere): each evaluation then spreads the lists evenly over the
  // lanes instead of each lane walking its own chunks' trees (H200, the column kernel: Sponza at
  // 512^3 382 -> 202 ms). Where the lists do not fit, the column sums every edge exactly (patience
  // 0): walking the trees there was slower than that on Sponza (358 against 202 ms).
  // The room's last kCoarseWords words hold the column's coarse far part (below).
  __shared__ __align__(16) uint32_t s_cut[kWindingWarps][kTrees ? kCutRoom : kCoarseWords];
  uint32_t* cut = s_cut[threadIdx.x / 32];
  int patience = kTrees ? tree_patience : 0;
  uint32_t nfar = 0, nnear = 0, near0 = 0;  // the far balls at cut[0, nfar), the near edges at cut[near0, + nnear)
  // The cut at `radii` listed; false (the list as it was) where it does not fit.
  auto list_cut = [&](double radii) {
    uint32_t cf = 0, cn = 0;
    inside_tree_cut(
        trees, lane, 32, col, [&](uint32_t) { ++cf; }, [&](uint32_t) { ++cn; }, radii);
    const uint32_t if_ = warp_inclusive_sum(cf), in_ = warp_inclusive_sum(cn);
    const uint32_t tf = __shfl_sync(kFull, if_, 31), tn = __shfl_sync(kFull, in_, 31);
    if (tf + tn > uint32_t(kCutRoom - kCoarseWords)) return false;
    nfar = tf;
    nnear = tn;
    near0 = nfar;
    uint32_t of = if_ - cf, on = nfar + in_ - cn;
    __syncwarp();  // (the lanes have read the list before)
    inside_tree_cut(
        trees, lane, 32, col, [&](uint32_t x) { cut[of++] = x; }, [&](uint32_t e) { cut[on++] = e; }, radii);
    __syncwarp();
    return true;
  };
  // The first cut in one walk of the trees: the far balls listed from the room's front and the near
  // edges from its back (before the coarse part's words, which count them meanwhile), each lane
  // taking its places by a shared atomic; where they meet the column sums every edge. The lists'
  // order then varies from run to run, and so do the bounds' last bits, but they decide only what
  // the exact sums would (inside_bounds_decide's margin): the same answers (three runs `cmp` equal).
  // H200, inside_winding at 512^3: 1.2M open tubes' sdf 31.8 -> 24.1 ms, 2,000 short ones 89.7 ->
  // 84.7, 144k open tubes +2%, Sponza within 1%. Two 32-bit counters, one atomic per place: 23.3
  // and 83.6 ms, but where the lists overflow two lanes could write one word (racecheck); one
  // 64-bit counter without warp_claim: 30.4 and 89.2. (list_cut counts first and writes in a second
  // walk: the wider cut below keeps it, since it must leave the first cut as it was where it does
  // not fit. Listed in one walk too, the first cut listed again where it did not fit: Sponza's
  // inside_winding 2-4% slower at 256^3 to 1024^3, since its every column takes the wider cut and
  // 17-19% of those overflow (counted on the CPU), open tubes 0.4-2.5% faster; the rests summed in
  // the first walk instead of over its list after: slower still. winding-walk-h200-2026-11-30.md.)
  // One atomic for the lanes here at once (they walk their chunks apart): each lane's count before
  // its place, the lanes in order.
  auto warp_claim = [](unsigned long long* counter, unsigned long long one) {
    const unsigned mask = __activemask();
    const int leader = __ffs(mask) - 1, rank = __popc(mask & ((1u << (threadIdx.x % 32)) - 1u));
    unsigned long long base = 0;
    if (int(threadIdx.x % 32) == leader) base = atomicAdd(counter, one * unsigned(__popc(mask)));
    base = __shfl_sync(mask, base, leader);
    return base + one * unsigned(rank);
  };
  auto list_cut_once = [&](double radii) {
    constexpr uint32_t kRoom = uint32_t(kCutRoom - kCoarseWords);
    // Both counts in one word (far ones low, near ones high): a place is written only where the
    // counts when it was taken leave it free of the other list's places (no two lanes write one
    // word where the lists overflow).
    unsigned long long* counter = reinterpret_cast<unsigned long long*>(cut + kRoom);
    if (lane == 0) *counter = 0;
    __syncwarp();
    inside_tree_cut(
        trees, lane, 32, col,
        [&](uint32_t x) {
          const unsigned long long was = warp_claim(counter, 1ull);
          const uint32_t f = uint32_t(was), n = uint32_t(was >> 32);
          if (f + n < kRoom) cut[f] = x;
        },
        [&](uint32_t e) {
          const unsigned long long was = warp_claim(counter, 1ull << 32);
          const uint32_t f = uint32_t(was), n = uint32_t(was >> 32);
          if (f + n < kRoom) cut[kRoom - 1 - n] = e;
        },
        radii);
    __syncwarp();
    const unsigned long long counts = *counter;
    const uint32_t tf = uint32_t(counts), tn = uint32_t(counts >> 32);
    __syncwarp();  // (read before the coarse part is written there)
    if (tf + tn > kRoom) return false;
    nfar = tf;
    nnear = tn;
    near0 = kRoom - tn;
    return true;
  };
  if (patience > 0 && !list_cut_once(kInsideFarRadii)) patience = 0;
  // Where the far balls' rests along the column add up to more than kInsideWideRest radians
  // (core/inside_tree.h inside_cut_wider, as on the CPU), the cut again with the balls far from
  // kInsideWideRadii radii on, where it fits (else the cut at 3 radii stays). H200,
  // inside_winding ms, without -> with 5 rad / with 20: Sponza's sdf at 256^3 35.2 -> 30.3 / 35.2, at 1024^3 382.6 ->
  // 343.0 / 383.1, its solid at 512^3 214.5 -> 140.1 / 196.1, at 1024^3 984.8 -> 665.9 / 899.2; open
  // tubes within -8% and +6% but 2,000 short ones 164.1 -> 200.3 / 166.0. Every column at 4 radii (its
  // cut where it fits, else 3's): the same on Sponza, the tubes 22-40% slower; at 6 radii slower on both;
  // the cut renewed at 4, 6 or 8 radii only where a column's patience had run out: Sponza -3% to +17%
  // (scripts/bench-results/winding-blocks-h200-2026-11-29.md).
  if (kTrees && patience > 0) {
    double rest = inside_listed_rest(trees.nodes, cut, nfar, lane, 32, col);
    for (int off = 16; off > 0; off /= 2) rest += __shfl_xor_sync(kFull, rest, off);
    if (inside_cut_wider(rest)) list_cut(kInsideWideRadii);
  }
  auto all_sum = [](double x) {  // every lane gets the same bits (each step adds the same two values)
    for (int off = 16; off > 0; off /= 2) x = x + __shfl_xor_sync(kFull, x, off);
    return x;
  };
  auto near = [&](int64_t k) {
    double pos = 0.0, neg = 0.0;
    const double pw = double(k) + 0.5;
    for (uint32_t q = near0 + uint32_t(lane); q < near0 + nnear; q += 32)
      inside_parts_add(trees.edges[cut[q]], col, pw, sc, pos, neg);
    for (uint64_t e = uint64_t(lane); e < trees.num_loose; e += 32)
      inside_parts_add(trees.loose[e], col, pw, sc, pos, neg);
    return InsideParts{all_sum(pos), all_sum(neg)};
  };
  auto far = [&](int64_t a, int64_t b) {
    const InsideFar f = inside_listed_far(trees.nodes, cut, nfar, lane, 32, col, a, b, sc);
    return InsideFar{all_sum(f.d), all_sum(f.r), all_sum(f.mag)};
  };
  auto lanes_combined = [](InsideParts p) {  // inside_boundary_parts' order, every lane the result
    for (int off = 16; off > 0; off /= 2) {
      p.pos = p.pos + __shfl_down_sync(kFull, p.pos, off);
      p.neg = p.neg + __shfl_down_sync(kFull, p.neg, off);
    }
    return InsideParts{__shfl_sync(kFull, p.pos, 0), __shfl_sync(kFull, p.neg, 0)};
  };
  auto exact = [&](int64_t k) {
    // Without trees, from the edges as doubles (the same bits without converting them at every voxel):
    // H200, inside_winding ms, the open terrain's sdf at 1024^3 27.8 -> 26.5, its solid 48.7 -> 46.2,
    // the bunny's 5.87 -> 5.70 and 6.25 -> 5.98, the scan fragment's at 512^3 23.7 -> 22.3 and 29.4 ->
    // 27.9. Not with trees: 128 registers instead of 122, Sponza's 15% slower; nor the edges in 32
    // bytes (int32 coordinates, InsideEdge's 48), the same times within 0.5% on Sponza and within 2%
    // without trees (scripts/bench-results/winding-edges-h200-2026-11-30.md).
    if constexpr (kTrees)
      return lanes_combined(inside_lane_parts(edges, ne, lane, col.pu, col.pv, k, sc));
    else
      return lanes_combined(inside_lane_parts(xedges, ne, lane, col.pu, col.pv, k, sc));
  };
  // Sums over every edge from terms with a proved error bound (inside_lane_parts_approx: the angles'
  // atan2 in float, core/inside.h), for the kernel without trees (below).
  const double karea = 1.0 / (sc.su * sc.sv);
  auto approx = [&](int64_t k) {
    return lanes_combined(inside_lane_parts_approx(xedges, ne, lane, col.pu, col.pv, k, sc, karea));
  };
  auto set = [&](int64_t k0, int64_t k1) {
    if (lane == 0) set_span_bits(m, bits, i, j, k0, k1);
  };
  // No bounds from a voxel's own position here (inside_tree_point, the CPU's): on an H200 they made
  // Sponza's winding test 1.4-2.8x slower (a walk per lane and level, divergent, where the exact sum
  // spread over the lanes costs less; scripts/bench-results/winding-point-2026-11-29.md).
  // What the trees leave once the column's patience has run out: summed over every edge here, or
  // with rest_out (the kernel with trees) the column's voxels from there on handed to the kernel
  // without trees (`starts`: where each listed column begins), which holds more warps per SM.
  bool handed = false;
  auto rest = [&](int64_t sum, int64_t k0, int64_t k1) {
    if (kTrees && rest_out.list) {
      if (!handed && lane == 0) {
        const unsigned long long at = atomicAdd(rest_out.count, 1ull);
        rest_out.list[at] = uint32_t(c);
        rest_out.start[at] = int32_t(k0);
      }
      handed = true;
      return;
    }
    // Without trees, the walk over every edge takes the approximate sums and the exact sum only where
    // their bounds (widened by kInsideApproxRel) leave a voxel open: the same bits. H200,
    // inside_winding ms: Sponza's columns handed on at 1024^3 170 -> 138 (sdf) and 396 -> 356 (solid),
    // at 512^3 51 -> 42 and 75 -> 69; the open terrain's sdf at 1024^3 27.4 -> 24.1-24.8, its solid 43.4 ->
    // 39.6-39.9; the bunny's 5.9 -> 5.4-5.6 and 4.7 -> 4.1; the scan fragment's at 512^3 22.6 -> 19.3-19.5 and 27.9 ->
    // 22.1. In the kernel with trees (each open voxel's sum approximate first) Sponza's part was
    // 8-26% faster but the open tubes' 2-13% slower: 128 registers and 100-108 bytes spilled, in every
    // form tried (scripts/bench-results/winding-approx-h200-2026-11-30.md).
#if VT_WINDING_APPROX
    if constexpr (!kTrees) {
      inside_winding_exact_approx(approx, exact, sum, k0, k1, set);
      return;
    }
#endif
    inside_winding_exact(exact, sum, k0, k1, set);
  };
  const int64_t k_from = starts ? std::max<int64_t>(w_lo, starts[q]) : int64_t(w_lo);
  // The far part over the whole walk, tried before each range's own (inside_winding_walk), held at
  // the end of the cut's room (in registers the kernel with trees spilled 44 bytes at its 128; in
  // shared memory of its own, past the blocks' 32 KB, Sponza's winding test took 2-7% longer).
  InsideFar& coarse = *reinterpret_cast<InsideFar*>(cut + (kTrees ? kCutRoom - kCoarseWords : 0));
  {
    InsideFar f = inside_no_far();
    if (kTrees && patience > 0 && k_from < w_hi) {
      f = inside_listed_far(trees.nodes, cut, nfar, lane, 32, col, k_from, w_hi - 1, sc, true);
      f = InsideFar{all_sum(f.d), all_sum(f.r), all_sum(f.mag)};
    }
    if (lane == 0) coarse = f;
    __syncwarp();
  }
  inside_winding_column(
      [&](int64_t sum, int64_t k0, int64_t k1) {
        if (handed) return;
        if (need)
          inside_winding_span_in(wanted, !(kTrees && tree_patience > 0) && !starts, near, far, inside_no_point, exact,
                                 sum, k0, k1, set, patience, rest, coarse);
        else
          inside_winding_span(near, far, inside_no_point, exact, sum, k0, k1, set, patience, rest, coarse);
      },
      q0, q1, k_from, int64_t(w_hi),
      [&](uint64_t r, int64_t* k0, int32_t* sign) {
        *k0 = int64_t(keys[r] & ((1ull << kK0Bits) - 1));
        *sign = signs[r];
      });
}

__global__ void k_majority(uint32_t* a, const uint32_t* b, const uint32_t* c, uint64_t n) {
  const uint64_t q = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q < n) a[q] = (a[q] & b[q]) | (a[q] & c[q]) | (b[q] & c[q]);
}

// ---- Boundary (winding test) -----------------------------------------------------------------
// As prepare_inside on the host: vertices welded by grid-space position (sorted by their x, y, z
// bits: three stable radix sorts, least significant first), directed edges between welded vertices
// sorted by (lo, hi) and their signs summed; the edges with a non-zero net count, in that order.

__global__ void k_vertex_keys(const Vec3f* g, const uint32_t* order, uint64_t nv, int a, uint32_t* keys,
                              uint32_t* idx) {
  const uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= nv) return;
  const uint32_t i = order ? order[r] : uint32_t(r);
  keys[r] = inside_position_bits(axis_comp(g[i], a));
  idx[r] = i;
}

__global__ void k_weld_heads(const Vec3f* g, const uint32_t* idx, uint64_t nv, uint32_t* head) {
  const uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= nv) return;
  bool differ = r == 0;
  if (!differ) {
    const Vec3f p = g[idx[r]], q = g[idx[r - 1]];
    differ = inside_position_bits(p.x) != inside_position_bits(q.x) ||
             inside_position_bits(p.y) != inside_position_bits(q.y) ||
             inside_position_bits(p.z) != inside_position_bits(q.z);
  }
  head[r] = differ ? 1u : 0u;
}

__global__ void k_weld_ids(const uint32_t* idx, const uint32_t* head, const uint32_t* id1, uint64_t nv, uint32_t* weld,
                           uint32_t* rep) {
  const uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= nv) return;
  weld[idx[r]] = id1[r] - 1;
  if (head[r]) rep[id1[r] - 1] = idx[r];
}

constexpr unsigned long long kNoEdge = ~0ull;

__global__ void k_edge_keys(const uint32_t* indices, const uint32_t* weld, uint64_t n3, unsigned long long* keys,
                            int32_t* signs) {
  const uint64_t c = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= n3) return;
  const uint64_t t = c / 3;
  const uint32_t a = weld[indices[c]], b = weld[indices[3 * t + (c % 3 + 1) % 3]];
  keys[c] = a == b ? kNoEdge : (a < b ? (uint64_t(a) << 32 | b) : (uint64_t(b) << 32 | a));
  signs[c] = a == b ? 0 : (a < b ? 1 : -1);
}

__global__ void k_edge_flags(const unsigned long long* keys, const int32_t* nets, uint64_t n, uint8_t* flags) {
  const uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < n) flags[r] = keys[r] != kNoEdge && nets[r] != 0 ? 1 : 0;
}

__global__ void k_make_edges(const unsigned long long* keys, const int32_t* nets, const uint32_t* list, uint64_t n,
                             const uint32_t* rep, const Vec3f* g, int axis, InsideEdge* edges, InsideEdgeX* xedges) {
  const uint64_t q = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const uint32_t r = list[q];
  const Vec3f a = g[rep[keys[r] >> 32]], b = g[rep[keys[r] & 0xffffffffull]];
  const int au = (axis + 1) % 3, av = (axis + 2) % 3;
  const InsideEdge e{inside_snap(axis_comp(a, au)),
                     inside_snap(axis_comp(a, av)),
                     inside_snap(axis_comp(b, au)),
                     inside_snap(axis_comp(b, av)),
                     axis_comp(a, axis),
                     axis_comp(b, axis),
                     nets[r]};
  edges[q] = e;
  xedges[q] = inside_edge_x(e);
}

struct BrickNonEmpty {
  const uint4* words;  // 4 per brick
  __device__ bool operator()(uint64_t b) const {
    const uint4 x = words[4 * b], y = words[4 * b + 1], z = words[4 * b + 2], w = words[4 * b + 3];
    return (x.x | x.y | x.z | x.w | y.x | y.y | y.z | y.w | z.x | z.y | z.z | z.w | w.x | w.y | w.z | w.w) != 0;
  }
};

__device__ inline bool brick_words_full(const uint4* words, uint64_t b) {
  const uint4 x = words[4 * b], y = words[4 * b + 1], z = words[4 * b + 2], w = words[4 * b + 3];
  return (x.x & x.y & x.z & x.w & y.x & y.y & y.z & y.w & z.x & z.y & z.z & z.w & w.x & w.y & w.z & w.w) == ~0u;
}
struct BrickPartial {
  const uint4* words;
  __device__ bool operator()(uint64_t b) const { return BrickNonEmpty{words}(b) && !brick_words_full(words, b); }
};
// First (last) full brick of a run along z: its neighbour below (above) in the column is not full.
struct RunStart {
  const uint4* words;
  uint64_t nbz;
  __device__ bool operator()(uint64_t b) const {
    return brick_words_full(words, b) && (b % nbz == 0 || !brick_words_full(words, b - 1));
  }
};
struct RunEnd {
  const uint4* words;
  uint64_t nbz;
  __device__ bool operator()(uint64_t b) const {
    return brick_words_full(words, b) && (b % nbz == nbz - 1 || !brick_words_full(words, b + 1));
  }
};

// Gathers `per` consecutive elements of every selected brick.
template <class T>
__global__ void k_gather(const T* in, const uint64_t* selected, uint64_t n, uint64_t per, T* out) {
  const uint64_t q = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q < n * per) out[q] = in[selected[q / per] * per + q % per];
}

// The active voxels' values of every selected brick (of 512 values each), in brick order and
// ascending offset from begin[q] (the SparseGrid layout): one thread per voxel.
__global__ void k_gather_active(const float* in, const uint64_t* selected, const uint32_t* masks, const uint64_t* begin,
                                uint64_t n, float* out) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * kBrickVoxels) return;
  const uint64_t q = i / kBrickVoxels;
  const int off = int(i % kBrickVoxels);
  const uint64_t* m = reinterpret_cast<const uint64_t*>(masks + q * kBrickMaskWords);  // (a BrickMask's words)
  if (!(m[off >> 6] >> (off & 63) & 1)) return;
  out[begin[q] + mask_rank(m, off)] = in[selected[q] * kBrickVoxels + uint64_t(off)];
}

// ---- Band ------------------------------------------------------------------------------------

struct BandView {
  MeshView mesh;
  uint64_t num_tris;
  BandSetup setup;
  Int3 dims, nb;
  BandBound* bounds;  // each triangle's (band_bound), written by k_band_bounds
};

// The bricks of triangle tri's band box in the grid: [lo, hi] (false: none).
__device__ inline bool band_bricks(const BandView& b, const Vec3f tri[3], Int3* lo, Int3* hi) {
  if (!band_voxel_range(tri, b.setup, b.dims, lo, hi)) return false;
  *lo = {lo->x >> 3, lo->y >> 3, lo->z >> 3};
  *hi = {hi->x >> 3, hi->y >> 3, hi->z >> 3};
  return true;
}

__global__ void k_band_bounds(BandView b) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= b.num_tris) return;
  Vec3f tri[3];
  load_corners(b.mesh, t, tri);
  b.bounds[t] = band_bound(tri, b.setup);
}

// Brick `local` of the box of bricks from lo with ny x nz bricks across, in x-major order.
__device__ inline Int3 box_brick(const Int3& lo, uint64_t ny, uint64_t nz, uint64_t local) {
  return {lo.x + int32_t(local / (ny * nz)), lo.y + int32_t((local / nz) % ny), lo.z + int32_t(local % nz)};
}

// The linear index of brick k in a grid of nb bricks (x-major).
__device__ inline uint64_t brick_index(const Int3& nb, const Int3& k) {
  return (uint64_t(k.x) * uint64_t(nb.y) + uint64_t(k.y)) * uint64_t(nb.z) + uint64_t(k.z);
}

// Boxes at least this many bricks long go row by row (k_band_kept).
#ifndef VT_BAND_ROWS_FROM  // (A/B builds: scripts/kernel-variant.sh)
#define VT_BAND_ROWS_FROM 8
#endif
// The pairs kernel at 3 blocks per SM (80 registers, a few spills) listed CAD's pairs at 1024^3 in
// 3.9 ms against 4.2 at 1 block (122 registers, no spills), the tubes' in 3.7 against 4.1; 4 blocks
// (64 registers) were no faster (scripts/bench-results/band-rows-h200-2026-11-28.md).
#ifndef VT_BAND_KEPT_MIN_BLOCKS
#define VT_BAND_KEPT_MIN_BLOCKS 3
#endif
constexpr int32_t kBandRowsFrom = VT_BAND_ROWS_FROM;
constexpr int kKeptThreads = 256;

// A warp per triangle goes over the bricks of its band box and keeps those that its bound does not
// drop (band_brick_culled): counts them (kWrite false), or writes their (brick, triangle) pairs from
// offsets[t] on (in any order: the stable sort by brick that follows keeps each brick's triangles in
// triangle order). Memory and the sort follow the kept pairs, not the boxes (a CAD sliver 800 voxels
// long has a box of a million bricks and keeps a few hundred).
template <bool kWrite>
__global__ void __launch_bounds__(kKeptThreads, VT_BAND_KEPT_MIN_BLOCKS)
    k_band_kept(BandView b, uint64_t* counts, const uint64_t* offsets, unsigned long long* keys, uint32_t* tris) {
  __shared__ BandRows s_rows[kKeptThreads / 32];
  const int lane = int(threadIdx.x & 31);
  const uint64_t warps = uint64_t(gridDim.x) * (blockDim.x / 32);
  for (uint64_t t = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; t < b.num_tris; t += warps) {
    Vec3f tri[3];
    load_corners(b.mesh, t, tri);
    Int3 lo, hi;
    if (!band_bricks(b, tri, &lo, &hi)) {
      if (!kWrite && lane == 0) counts[t] = 0;
      continue;
    }
    const BandBound w = b.bounds[t];
    const uint64_t ny = uint64_t(hi.y - lo.y + 1), nz = uint64_t(hi.z - lo.z + 1);
    const uint64_t n = uint64_t(hi.x - lo.x + 1) * ny * nz;
    uint64_t at = kWrite ? offsets[t] : 0;
    if (!w.skips()) {  // a triangle the bound is not used for (a small one) keeps its whole box
      if (!kWrite && lane == 0) counts[t] = n;
      if (kWrite)
        for (uint64_t local = uint64_t(lane); local < n; local += 32) {
          keys[at + local] = brick_index(b.nb, box_brick(lo, ny, nz, local));
          tris[at + local] = uint32_t(t);
        }
      continue;
    }
    const Int3 ext{hi.x - lo.x + 1, hi.y - lo.y + 1, hi.z - lo.z + 1};
    const auto keep_brick = [&](const Int3& k, bool valid) {
      const bool keep = valid && !band_brick_culled(band_cull(w, tri, Int3{k.x * 8, k.y * 8, k.z * 8}));
      const unsigned kept = __ballot_sync(kFull, keep);
      if (kWrite && keep) {
        const uint64_t slot = at + uint64_t(__popc(kept & ((1u << lane) - 1u)));
        keys[slot] = brick_index(b.nb, k);
        tris[slot] = uint32_t(t);
      }
      at += uint64_t(__popc(kept));
    };
    if (max(ext.x, max(ext.y, ext.z)) < kBandRowsFrom) {  // a small box: every brick tested
      for (uint64_t first = 0; first < n; first += 32) {
        const uint64_t local = first + uint64_t(lane);
        keep_brick(box_brick(lo, ny, nz, local < n ? local : 0), local < n);
      }
      if (!kWrite && lane == 0) counts[t] = at;
      continue;
    }
    // A long box: rows of bricks along its longest axis, a lane per row finding the range its bound
    // allows (band_rows), then the rows' ranges' bricks tested 32 at a time (the same bricks kept as
    // testing the whole box; a CAD sliver 800 voxels long has a box of a million bricks, about ten
    // thousand rows and a few hundred bricks in their ranges).
    BandRows& r = s_rows[threadIdx.x / 32];  // (kept in shared memory: 15 doubles)
    {
      const BandRows mine = band_rows(w, tri, lo, ext);
      __syncwarp();
      if (lane == 0) r = mine;
      __syncwarp();
    }
    const auto along = [](int axis, const Int3& v) { return axis == 0 ? v.x : (axis == 1 ? v.y : v.z); };
    const uint64_t n2 = uint64_t(along(r.a2, ext)), rows = uint64_t(along(r.a1, ext)) * n2;
    for (uint64_t first = 0; first < rows; first += 32) {
      const uint64_t row = first + uint64_t(lane);
      int32_t m0 = 0, m1 = -1;
      if (row < rows) band_row_range(r, int32_t(row / n2), int32_t(row % n2), &m0, &m1);
      const uint32_t len = uint32_t(m1 >= m0 ? m1 - m0 + 1 : 0);
      const uint32_t incl = warp_inclusive_sum(len);  // the rows' bricks up to this lane's
      const uint32_t total = __shfl_sync(kFull, incl, 31);
      for (uint32_t c = 0; c < total; c += 32) {
        const uint32_t k = c + uint32_t(lane);
        const uint32_t owner = find_owner(incl, k < total ? k : total - 1);
        const uint32_t o_incl = __shfl_sync(kFull, incl, owner), o_len = __shfl_sync(kFull, len, owner);
        const int32_t o_m0 = __shfl_sync(kFull, m0, owner);
        const uint64_t o_row = first + owner;
        const int32_t q1 = int32_t(o_row / n2), q2 = int32_t(o_row % n2), qa = o_m0 + int32_t(k - (o_incl - o_len));
        const auto at_axis = [&](int axis) { return axis == r.axis ? qa : (axis == r.a1 ? q1 : q2); };
        keep_brick(Int3{lo.x + at_axis(0), lo.y + at_axis(1), lo.z + at_axis(2)}, k < total);
      }
    }
    if (!kWrite && lane == 0) counts[t] = at;
  }
}

constexpr int kBandThreads = 128;
constexpr int kBandWarps = kBandThreads / 32;
// A warp's queue of (voxel, triangle) distances: fewer than 32 left over, then one triangle's
// entries (up to four per lane).
constexpr int kBandQueue = 32 + 4 * 32;
static_assert(kBandThreads <= 128, "a queue entry holds the triangle's slot in a chunk in 7 bits");

// What the band kernel's voxels test of one triangle at one brick, 128 bytes, so that every thread
// reads it with eight 16-byte loads of shared memory: its bound at the brick (b zero where its plane
// and edges do not bound it), its band box and its box. H200, band_distance ms against a load per
// field from arrays of each: the closed 1M tubes at 1024^3 58.0 -> 52.7, CAD 83.5 -> 76.6, at 256^3
// 15.4 -> 13.9, the dragon at 1024^3 1.74 -> 1.66, the bunny 1.74 -> 1.64; the dragon at 256^3 2.05 ->
// 2.10 (scripts/bench-results/band-queue-h200-2026-11-29.md).
struct BandRecord {
  BandCull c;
  float pad;
  BandBox x;
  float lo[3], hi[3];
};
static_assert(sizeof(BandRecord) == 8 * sizeof(float4), "eight 16-byte words");

// A block per brick, four voxels per thread (voxel threadIdx.x + 128 q, so that each warp owns 128
// voxels), takes the brick's triangles in chunks of 128. A voxel skips a triangle whose band box
// misses its centre (band_min's own test) or whose bound lies beyond the voxel's least distance so
// far (band_culled with limit_at where the plane and edges bound it, else band_box_culled where its
// shape allows the margin). The rest are queued per warp, and the queue's distances are taken 32 at
// a time, one per lane, into the voxels' minima (shared atomics on the bits of non-negative floats:
// the minimum whatever the order, band_min's). So a warp no longer runs a distance for the few of its
// voxels that a long thin triangle's band covers (a voxel's least distance is read back after each
// round of the queue, so its bound skips a little less than before). H200, band_distance ms against a
// distance per voxel as each triangle came: the closed 1M tubes at 1024^3 82.6 -> 58.0, CAD at 1024^3
// 112.3 -> 83.5, the 100k dragon at 1024^3 2.65 -> 1.75, the bunny at 1024^3 2.57 -> 1.74 (then the
// triangles' records, BandRecord, to 52.7, 76.6, 1.66 and 1.64). Capped at 64 registers (8 blocks per
// SM, a few spills): a first form took 80 (6 blocks), and the cap took its sdf GPU total on the tubes
// 92.4 -> 74.2 ms, CAD 120.5 -> 98.9. Measured and not kept: each chunk nearest the brick's centre
// first (the bounds skip more, the sort costs more), a warp's part of the brick tested as a whole
// first (more instructions on the tubes), the bound's terms in y and z shared by a thread's voxels
// (the same instructions) (scripts/bench-results/band-queue-h200-2026-11-29.md).
__global__ void __launch_bounds__(kBandThreads, 8)
    k_band(BandView b, const unsigned long long* bricks, const uint32_t* counts, const uint64_t* starts,
           const uint32_t* tris, float* values, uint32_t* masks) {
  __shared__ Vec3f s_tri[3 * kBandThreads];
  __shared__ float4 s_rec[kBandThreads][8];             // each triangle's BandRecord
  __shared__ uint32_t s_best[kBrickVoxels];             // the voxels' least distances so far (float bits)
  __shared__ uint16_t s_queue[kBandWarps][kBandQueue];  // voxel offset << 7 | the triangle's slot
  __shared__ uint32_t s_mask[16];
  const uint64_t run = blockIdx.x;
  const uint64_t lin = bricks[run];
  const int32_t bz = int32_t(lin % uint64_t(b.nb.z)), by = int32_t((lin / uint64_t(b.nb.z)) % uint64_t(b.nb.y)),
                bx = int32_t(lin / (uint64_t(b.nb.z) * uint64_t(b.nb.y)));
  const int lane = int(threadIdx.x & 31);
  if (threadIdx.x < 16) s_mask[threadIdx.x] = 0;
  const Int3 first{bx * 8, by * 8, bz * 8};  // the brick's first voxel
  float best[4];  // this thread's voxels' least distances as of the warp's last round of distances
  int32_t vi[4], vj[4], vk[4];
  bool in_grid[4];
  for (int q = 0; q < 4; ++q) {
    const int off = int(threadIdx.x) + q * kBandThreads;
    vi[q] = bx * 8 + (off >> 6), vj[q] = by * 8 + ((off >> 3) & 7), vk[q] = bz * 8 + (off & 7);
    in_grid[q] = vi[q] < b.dims.x && vj[q] < b.dims.y && vk[q] < b.dims.z;
    best[q] = b.setup.width;
    s_best[off] = __float_as_uint(b.setup.width);
  }
  uint16_t* queue = s_queue[threadIdx.x >> 5];
  // The queue's entries from `at` on (n <= 32 of them), a lane each, then the lanes' voxels' minima
  // read back.
  auto distances = [&](uint32_t at, uint32_t n) {
    __syncwarp();
    if (uint32_t(lane) < n) {
      const uint32_t e = queue[at + uint32_t(lane)];
      const int off = int(e >> 7), t = int(e & 127u);
      const float d = voxel_distance(&s_tri[3 * t], first.x + (off >> 6), first.y + ((off >> 3) & 7),
                                     first.z + (off & 7), b.setup.vs);
      atomicMin(&s_best[off], __float_as_uint(d));  // (d >= +0: the bits order as the values)
    }
    __syncwarp();
    for (int q = 0; q < 4; ++q) best[q] = __uint_as_float(s_best[int(threadIdx.x) + q * kBandThreads]);
  };
  const uint64_t start = starts[run], count = counts[run];
  for (uint64_t base = 0; base < count; base += kBandThreads) {
    __syncthreads();
    const uint64_t n = min(uint64_t(kBandThreads), count - base);
    if (threadIdx.x < n) {
      const uint32_t t = tris[start + base + threadIdx.x];
      const Vec3f* tri = &s_tri[3 * threadIdx.x];
      load_corners(b.mesh, t, &s_tri[3 * threadIdx.x]);
      BandRecord rec;
      rec.c.w = b.bounds[t];
      if (rec.c.w.skips())
        band_cull(rec.c.w, tri, first, rec.c);
      else
        rec.c.b[0] = rec.c.b[1] = rec.c.b[2] = rec.c.b[3] = 0.0f;
      rec.pad = 0.0f;
      band_tri_bounds(tri, rec.lo, rec.hi);
      rec.x = band_box(rec.lo, rec.hi, b.setup);
      float4 v[8];
      memcpy(v, &rec, sizeof rec);
      for (int i = 0; i < 8; ++i) s_rec[threadIdx.x][i] = v[i];
    }
    __syncthreads();
    uint32_t queued = 0;  // (the same in every lane of the warp)
    for (int t = 0; t < int(n); ++t) {
      float4 v[8];
      for (int i = 0; i < 8; ++i) v[i] = s_rec[t][i];
      BandRecord rec;
      memcpy(&rec, v, sizeof rec);
      const BandCull& c = rec.c;
      const BandBox& x = rec.x;
      const float* lo = rec.lo;
      const float* hi = rec.hi;
      const bool bound = c.w.skips(), boxed = !bound && c.w.k2 < INFINITY;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        bool need =
            in_grid[q] && band_box_holds(x, 0, vi[q]) && band_box_holds(x, 1, vj[q]) && band_box_holds(x, 2, vk[q]);
        if (need && bound) need = !band_culled(c, vi[q] & 7, vj[q] & 7, vk[q] & 7, c.w.limit_at(best[q]));
        if (need && boxed) need = !band_box_culled(c.w, lo, hi, vi[q], vj[q], vk[q], b.setup.vs, best[q]);
        const unsigned m = __ballot_sync(kFull, need);
        if (need)
          queue[queued + uint32_t(__popc(m & ((1u << lane) - 1u)))] =
              uint16_t(((int(threadIdx.x) + q * kBandThreads) << 7) | t);
        queued += uint32_t(__popc(m));
      }
      while (queued >= 32) {
        queued -= 32;
        distances(queued, 32);
      }
    }
    if (queued) distances(0, queued);
  }
  __syncthreads();
  for (int q = 0; q < 4; ++q) {
    const int off = int(threadIdx.x) + q * kBandThreads;
    const float v = __uint_as_float(s_best[off]);
    const bool active = in_grid[q] && v < b.setup.width;
    values[run * kBrickVoxels + off] = active ? v : 0.0f;
    if (active) atomicOr(&s_mask[off >> 5], 1u << (off & 31));
  }
  __syncthreads();
  if (threadIdx.x < 16) masks[run * 16 + threadIdx.x] = s_mask[threadIdx.x];
}

// The search's tree built on the GPU (core/band_search.h: the host's tree, the same nodes).
// Each triangle's margins and its pieces' count at the piece length (band_pieces; bound:
// band_piece_bound's, without clipping; one for a loose triangle), by the mesh's index.
__global__ void k_tree_count(MeshView m, uint64_t nt, BandSetup bs, float piece, bool bound, float* k2, float* k2e,
                             uint64_t* counts) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  Vec3f tri[3];
  load_corners(m, t, tri);
  const BandBound w = band_bound(tri, bs);
  k2[t] = w.k2;
  k2e[t] = w.k2e;
  float l[3], h[3];
  band_tri_bounds(tri, l, h);
  counts[t] = band_loose(w.k2, w.k2e) ? 1u
              : bound                 ? band_piece_bound(l, h, piece)
                                      : band_pieces(tri, l, h, piece, false, [](const float*, const float*) {});
}
// Each triangle's references from its first (first[t]): their boxes and margins, triangle, sort key
// and index.
__global__ void k_tree_refs(MeshView m, uint64_t nt, GridBox box, float piece, const float* k2, const float* k2e,
                            const uint64_t* first, unsigned long long* keys, uint32_t* ids, BandNodeBox* ref_box,
                            uint32_t* ref_tri) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  Vec3f tri[3];
  load_corners(m, t, tri);
  float l[3], h[3];
  band_tri_bounds(tri, l, h);
  const float lo[3] = {box.lo.x, box.lo.y, box.lo.z}, hi[3] = {box.hi.x, box.hi.y, box.hi.z};
  const float tk2 = k2[t], tk2e = k2e[t];
  uint64_t at = first[t];
  auto put = [&](const float* pl, const float* ph) {
    BandNodeBox b;
    for (int a = 0; a < 3; ++a) {
      b.lo[a] = pl[a];
      b.hi[a] = ph[a];
    }
    b.k2 = tk2;
    b.k2e = tk2e;
    ref_box[at] = b;
    ref_tri[at] = uint32_t(t);
    keys[at] = band_tree_key(pl, ph, lo, hi, tk2, tk2e);
    ids[at] = uint32_t(at);
    ++at;
  };
  if (band_loose(tk2, tk2e))
    put(l, h);
  else
    band_pieces(tri, l, h, piece, true, put);
}
// The references the tree holds: those before the first loose key (sorted last).
__global__ void k_tree_kept(const unsigned long long* keys, uint64_t nr, uint64_t* kept) {
  const uint64_t u = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (u >= nr) return;
  const bool loose = keys[u] == ~0ull;
  if (u == 0 && loose) *kept = 0;
  if (!loose && (u + 1 == nr || keys[u + 1] == ~0ull)) *kept = u + 1;
}
// The tree's references (their triangles' vertices, boxes and margins) in its order, then the loose
// triangles.
__global__ void k_tree_gather(MeshView m, const uint32_t* ids, uint64_t nr, const uint64_t* kept,
                              const BandNodeBox* ref_box, const uint32_t* ref_tri, Vec3f* tris, BandNodeBox* boxes,
                              Vec3f* loose) {
  const uint64_t u = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (u >= nr) return;
  const uint32_t r = ids[u];
  const uint64_t n = *kept;
  Vec3f* out = u < n ? &tris[3 * u] : &loose[3 * (u - n)];
  load_corners(m, ref_tri[r], out);
  if (u < n) boxes[u] = ref_box[r];
}
struct TreeShapeView {
  int32_t* right;
  uint32_t *first, *count, *inner;  // (inner: first each node's flag, 1 for an inner node, then their scan)
  uint8_t* depth;
};
__global__ void k_tree_shape(BandShapeTable t, uint64_t n, TreeShapeView sh) {
  const uint64_t b = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  uint32_t depth = 0;
  band_shape_node(t, uint32_t(b), &sh.first[b], &sh.count[b], &depth, &sh.right[b]);
  sh.depth[b] = uint8_t(depth);
  sh.inner[b] = sh.right[b] >= 0 ? 1u : 0u;
}
__global__ void k_tree_leaves(TreeShapeView sh, uint64_t n, const BandNodeBox* refs, BandNodeBox* boxes) {
  const uint64_t b = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n && sh.right[b] < 0) boxes[b] = band_leaf_box(refs, sh.first[b], sh.count[b]);
}
__global__ void k_tree_join(TreeShapeView sh, uint64_t n, uint32_t depth, BandNodeBox* boxes) {
  const uint64_t b = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n && sh.depth[b] == depth && sh.right[b] >= 0) boxes[b] = band_join(boxes[b + 1], boxes[sh.right[b]]);
}
__global__ void k_tree_nodes(TreeShapeView sh, uint64_t n, const BandNodeBox* boxes, BandNode* nodes) {
  const uint64_t b = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n && sh.right[b] >= 0) nodes[sh.inner[b]] = band_node(sh.right, sh.first, sh.count, sh.inner, boxes, b);
}

// A warp's lanes walk the tree together (core/band_search.h band_search_lanes; VT_BAND_SEARCH_WARP 0:
// a walk per thread, for measurements).
struct BandWarp {
  VT_HD static bool any(bool x) {
#ifdef __CUDA_ARCH__
    return __any_sync(kFull, x);
#else
    return x;
#endif
  }
  VT_HD static int sum(int x) {
#ifdef __CUDA_ARCH__
    return int(__reduce_add_sync(kFull, unsigned(x)));
#else
    return x;
#endif
  }
};
#ifndef VT_BAND_SEARCH_WARP
#define VT_BAND_SEARCH_WARP 1
#endif
// kL of a thread's voxels walked at once (lanes of the warp's walk).
template <int kL>
using BandThreadLanes = BandLanes<kL, std::conditional_t<VT_BAND_SEARCH_WARP != 0, BandWarp, BandSolo>>;

// The band by nearest-triangle search (core/band_search.h): a brick of the region [lo, lo + n) per
// block, a thread per `per` voxels (8, 4, 2 or 1) of a column (each voxel starting from the triangle
// nearest the one below), the brick's linear index into lin. Long pieces of column
// start more voxels from a near triangle; short ones give a small region's few bricks enough threads.
// A warp's 32 columns (4 x 8 of the brick's, or fewer columns in more pieces) walk the tree together
// (BandWarp): H200, `--band all`, band_distance ms, a walk per thread / the warp's: the dragon
// at 64^3 2.25 / 2.0, 256^3 30.5 / 14.7, 512^3 148 / 70; the bunny at 64^3 9.6 / 4.7, 128^3 21.5 / 13.0,
// 256^3 84 / 38.5, 512^3 440 / 209; a band of 48 on the dragon at 512^3 108 / 54
// (scripts/bench-results/band-warp-h200-2026-11-29.md). Each thread walks kL of its voxels at once
// (two consecutive ones: 64 voxels in the warp's walk, for threads of 4 or 8 voxels; H200, `--band
// all`, band_distance ms, one at a time / two / four: the dragon at 256^3 14.0-14.3 / 13.1 / 14.2, at
// 512^3 69.2 / 62.2 / 61.6, the bunny at 256^3 36.7-36.9 / 32.3-32.7 / 32.9-33.2, at 512^3 206.8 /
// 187.1 / 184.5; two at a time 11-13% slower on small regions, whose threads hold one or two voxels).
constexpr int kBandSearchMaxThreads = 512;
template <int kL>
__global__ void __launch_bounds__(kBandSearchMaxThreads)
    k_band_search(BandTreeView t, BandSetup bs, Int3 dims, Int3 lo, Int3 n, Int3 nb, int per, float* values,
                  uint32_t* masks, unsigned long long* lin) {
  __shared__ uint32_t s_mask[16];
  const uint64_t b = blockIdx.x;
  const uint64_t nyz = uint64_t(n.y) * uint64_t(n.z);
  const int32_t bx = lo.x + int32_t(b / nyz), by = lo.y + int32_t((b / uint64_t(n.z)) % uint64_t(n.y)),
                bz = lo.z + int32_t(b % uint64_t(n.z));
  if (threadIdx.x < 16) s_mask[threadIdx.x] = 0;
  __syncthreads();
  const int pieces = 8 / per, column = int(threadIdx.x) / pieces, z0 = (int(threadIdx.x) % pieces) * per;
  const int x = column >> 3, y = column & 7;
  const int32_t i = bx * 8 + x, j = by * 8 + y, k0 = bz * 8 + z0, k1 = min(k0 + per, dims.z);
  const bool in_grid = i < dims.x && j < dims.y && k0 < k1;
  // The thread's voxels one after another, each starting from the triangle nearest the one before.
  float col[8];
  BandThreadLanes<kL> lane;
  for (int l = 0; l < kL; ++l) {
    lane.i[l] = i;
    lane.j[l] = j;
    lane.arg[l] = kBandNone;
  }
  for (int z = 0; z < per; z += kL) {  // (every thread of the warp takes part in each walk)
    for (int l = 0; l < kL; ++l) {
      const int32_t k = k0 + z + l;
      lane.k[l] = k;
      lane.active[l] = in_grid && z + l < per && k < k1;
      lane.best[l] = lane.active[l] ? band_search_start(t, lane.arg[l], i, j, k, bs) : bs.width;
    }
    band_search_lanes(t, bs, lane);
    for (int l = 0; l < kL; ++l)
      if (z + l < per) col[z + l] = lane.best[l];
  }
  for (int z = 0; z < per; ++z) {
    const int off = (x << 6) | (y << 3) | (z0 + z);
    const bool active = in_grid && k0 + z < k1 && col[z] < bs.width;
    values[b * kBrickVoxels + off] = active ? col[z] : 0.0f;
    if (active) atomicOr(&s_mask[off >> 5], 1u << (off & 31));
  }
  __syncthreads();
  if (threadIdx.x < 16) masks[b * 16 + threadIdx.x] = s_mask[threadIdx.x];
  if (threadIdx.x == 0) lin[b] = (uint64_t(bx) * uint64_t(nb.y) + uint64_t(by)) * uint64_t(nb.z) + uint64_t(bz);
}

}  // namespace

// ---- Inside ----------------------------------------------------------------------------------

void SolidState::keep_bricks(GpuContext& ctx, uint64_t n, const uint32_t* mask_words, const unsigned long long* lin,
                             const float* values, const Int3& nb, const std::string& prefix, StageTimer& timer,
                             SparseGrid& out) {
  cudaStream_t s = ctx.stream;
  timer.begin((prefix + "compact").c_str());
  d_bricks.grow(n + 1);
  d_num.grow(1);
  if (n)
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceSelect::If(t, bytes, thrust::counting_iterator<uint64_t>(0), d_bricks.data(), d_num.data(),
                                   int64_t(n), BrickNonEmpty{reinterpret_cast<const uint4*>(mask_words)}, s);
    });
  const uint64_t count = n ? read_scalar(d_num.data(), s) : 0;
  d_kept_masks.grow(count * 16 + 1);
  launch_1d(k_gather<uint32_t>, count * 16, 256, s, mask_words, d_bricks.data(), count, uint64_t(16),
            d_kept_masks.data());
  if (lin) {
    d_kept_lin.grow(count + 1);
    launch_1d(k_gather<unsigned long long>, count, 256, s, lin, d_bricks.data(), count, uint64_t(1), d_kept_lin.data());
  }
  if (values) {  // only the active voxels' values, as the grid holds them
    d_value_begin.grow(count + 1);
    scan_counts<uint64_t>(BrickPopcount{d_kept_masks.data(), count}, d_value_begin.data(), count, kBlockScanMax,
                          ctx.cub, s);
    out.value_begin.resize(count + 1);
    ctx.download(out.value_begin.data(), d_value_begin.data(), (count + 1) * sizeof(uint64_t));
    d_kept_values.grow(out.value_begin[count] + 1);
    launch_1d(k_gather_active, count * kBrickVoxels, 256, s, values, d_bricks.data(), d_kept_masks.data(),
              d_value_begin.data(), count, d_kept_values.data());
  }
  timer.begin((prefix + "download").c_str());
  std::vector<uint64_t> ids(count);
  if (count)
    ctx.download(ids.data(), lin ? reinterpret_cast<const uint64_t*>(d_kept_lin.data()) : d_bricks.data(), count * 8);
  out.masks.resize(count);
  if (count) ctx.download(out.masks.data(), d_kept_masks.data(), count * 64);
  if (values) {
    out.fvalues.resize(out.value_begin[count]);
    ctx.download(out.fvalues.data(), d_kept_values.data(), out.value_begin[count] * sizeof(float));
  }
  out.keys.resize(count);
  const uint64_t nyz = uint64_t(nb.y) * uint64_t(nb.z);
  for (uint64_t b = 0; b < count; ++b)
    out.keys[b] = brick_key(int32_t(ids[b] / nyz), int32_t((ids[b] / uint64_t(nb.z)) % uint64_t(nb.y)),
                            int32_t(ids[b] % uint64_t(nb.z)));
}

template <class CountItems>
uint64_t SolidState::expand(GpuContext& ctx, uint64_t n, uint64_t bytes_per_item, const char* what, CountItems&& count,
                            DeviceBuffer<uint64_t>* counts, DeviceBuffer<uint64_t>* offsets) {
  if (!counts) counts = &d_counts;
  if (!offsets) offsets = &d_offsets;
  counts->grow(n + 1);
  offsets->grow(n + 1);
  count(counts->data());
  VT_CUDA_CHECK(cudaMemsetAsync(offsets->data(), 0, sizeof(uint64_t), ctx.stream));
  if (n)
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceScan::InclusiveSum(t, bytes, counts->data(), offsets->data() + 1, int64_t(n), ctx.stream);
    });
  const uint64_t total = read_scalar(offsets->data() + n, ctx.stream);
  if (total > ctx.memory_budget() / bytes_per_item)
    fail(ErrorKind::kResource, "the job needs " + std::to_string(total) + " " + what +
                                   ", more than the GPU memory budget holds");
  return total;
}

uint64_t SolidState::boundary(GpuContext& ctx, const DeviceMesh& mesh, int axis) {
  cudaStream_t s = ctx.stream;
  const uint64_t nv = mesh.num_vertices, n3 = 3 * mesh.num_tris;
  if (n3 == 0) return 0;
  if (n3 > ctx.memory_budget() / 64)
    fail(ErrorKind::kResource, "the boundary of " + std::to_string(mesh.num_tris) +
                                   " triangles needs more than the GPU memory budget holds");
  const Vec3f* g = mesh.d_grid.data();
  for (int b = 0; b < 2; ++b) {
    d_vkeys[b].grow(nv + 1);
    d_vidx[b].grow(nv + 1);
    d_keys[b].grow(n3 + 1);
    d_signs[b].grow(n3 + 1);
  }
  d_head.grow(nv + 1);
  d_weld.grow(nv + 1);
  d_rep.grow(nv + 1);
  // Weld: order the vertices by (x, y, z) bits.
  const uint32_t* order = nullptr;
  int cur = 0;
  for (int a = 2; a >= 0; --a) {
    launch_1d(k_vertex_keys, nv, 256, s, g, order, nv, a, d_vkeys[cur].data(), d_vidx[cur].data());
    cub::DoubleBuffer<uint32_t> dk(d_vkeys[cur].data(), d_vkeys[1 - cur].data());
    cub::DoubleBuffer<uint32_t> di(d_vidx[cur].data(), d_vidx[1 - cur].data());
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(t, bytes, dk, di, int64_t(nv), 0, 32, s);
    });
    order = di.Current();
    cur = di.Current() == d_vidx[0].data() ? 1 : 0;  // write the next keys into the other buffers
  }
  launch_1d(k_weld_heads, nv, 256, s, g, order, nv, d_head.data());
  uint32_t* id1 = d_vkeys[0].data();  // the keys are no longer needed
  ctx.cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceScan::InclusiveSum(t, bytes, d_head.data(), id1, int64_t(nv), s);
  });
  launch_1d(k_weld_ids, nv, 256, s, order, d_head.data(), id1, nv, d_weld.data(), d_rep.data());
  // Directed edges between welded vertices, by (lo, hi), and their net counts.
  launch_1d(k_edge_keys, n3, 256, s, mesh.d_indices.data(), d_weld.data(), n3, d_keys[0].data(), d_signs[0].data());
  cub::DoubleBuffer<unsigned long long> ek(d_keys[0].data(), d_keys[1].data());
  cub::DoubleBuffer<int32_t> es(d_signs[0].data(), d_signs[1].data());
  ctx.cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(t, bytes, ek, es, int64_t(n3), 0, 64, s);
  });
  unsigned long long* unique = ek.Alternate();
  int32_t* nets = es.Alternate();
  d_num.grow(1);
  ctx.cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceReduce::ReduceByKey(t, bytes, ek.Current(), unique, es.Current(), nets, d_num.data(),
                                          cuda::std::plus<int32_t>{}, int64_t(n3), s);
  });
  const uint64_t runs = read_scalar(d_num.data(), s);
  d_col_flags.grow(runs + 1);
  d_list.grow(runs + 1);
  launch_1d(k_edge_flags, runs, 256, s, unique, nets, runs, d_col_flags.data());
  ctx.cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceSelect::Flagged(t, bytes, thrust::counting_iterator<uint32_t>(0), d_col_flags.data(),
                                      d_list.data(), d_num.data(), int64_t(runs), s);
  });
  const uint64_t ne = read_scalar(d_num.data(), s);
  d_edges.grow(ne + 1);
  d_edges_x.grow(ne + 1);
  // (zeroed first: the edges' padding bytes go down with them to the host's piece trees)
  if (ne) VT_CUDA_CHECK(cudaMemsetAsync(d_edges.data(), 0, ne * sizeof(InsideEdge), s));
  launch_1d(k_make_edges, ne, 256, s, unique, nets, d_list.data(), ne, d_rep.data(), g, axis, d_edges.data(),
            d_edges_x.data());
  return ne;
}

void SolidState::upload_trees(GpuContext& ctx, uint64_t ne, const InsideScale& sc) {
  tree_patience = 0;
  trees = InsideTreeView{};
  if (ne < kInsideTreeMinEdges || ne > kTreeMaxEdges) return;
  std::vector<InsideEdge> edges(ne);
  ctx.download(edges.data(), d_edges.data(), ne * sizeof(InsideEdge));
  const InsideTree t = inside_walk_trees(edges, sc, kInsideTreeMinEdges, kTreeMaxEdges);
  auto up = [&](auto& buf, const auto& v) {
    buf.grow(v.size() + 1);
    if (!v.empty()) ctx.staging.upload(buf.data(), v.data(), v.size() * sizeof(v[0]), ctx.stream);
  };
  up(d_nodes, t.nodes);
  up(d_chunks, t.chunks);
  up(d_piece_edges, t.edges);
  up(d_loose, t.loose);
  trees = InsideTreeView{d_nodes.data(),       d_chunks.data(), uint32_t(t.chunks.empty() ? 0 : t.chunks.size() - 1),
                         d_piece_edges.data(), d_loose.data(),  uint64_t(t.loose.size())};
  tree_patience = t.patience;
}

struct SolidState::AxisPrep {
  InsideView m;
  unsigned long long* keys = nullptr;  // crossings by (column, first voxel above)
  int32_t* signs = nullptr;
  int32_t* prefix = nullptr;  // inclusive sums of the signs along each column
  uint64_t n = 0;
  bool winding = false, boundary = false;
  uint64_t ne = 0, nlist = 0;  // boundary edges; columns evaluated span by span (d_list)
  InsideScale sc{};
  Columns cr{};
};

SolidState::AxisPrep SolidState::prepare_axis(GpuContext& ctx, const DeviceMesh& mesh, const GridSpec& spec, int axis,
                                              bool winding, uint64_t ne, const InsideRange& range, StageTimer& timer) {
  cudaStream_t s = ctx.stream;
  const uint64_t nt = mesh.num_tris;
  const int32_t d[3] = {spec.dims.x, spec.dims.y, spec.dims.z};
  const int au = (axis + 1) % 3, av = (axis + 2) % 3;
  AxisPrep p;
  InsideView& m = p.m;
  m.num_tris = nt;
  m.dims = {d[au], d[av], d[axis]};
  m.axis = axis;
  m.nb = grid_bricks(spec.dims);
  m.bx0 = 0;
  m.bx1 = m.nb.x;
  timer.begin("inside_snap");
  d_u.grow(3 * nt + 1);
  d_v.grow(3 * nt + 1);
  d_w.grow(3 * nt + 1);
  launch_1d(k_snap, 3 * nt, 256, s, mesh.d_grid.data(), mesh.d_indices.data(), 3 * nt, axis, d_u.data(), d_v.data(),
            d_w.data());
  m.u = d_u.data();
  m.v = d_v.data();
  m.w = d_w.data();
  // The crossings are listed row by row of each triangle's box of columns, each row's crossed columns
  // found by inside_row_span: the columns a long thin triangle crosses, not its whole box (CAD
  // slivers at 1024^3 had 4.1 billion box columns, more than the memory budget held).
  timer.begin("inside_columns");
  const uint64_t rows = expand(ctx, nt, 32, "triangle rows of the inside test",
                               [&](uint64_t* counts) { launch_1d(k_count_rows, nt, 256, s, m, counts); });
  d_row_tri.grow(rows + 1);
  d_row_lo.grow(rows + 1);
  d_row_j.grow(rows + 1);
  const unsigned row_blocks = unsigned(std::min<uint64_t>(blocks_for(rows, 256), uint64_t(ctx.num_sms) * 32));
  const uint64_t total = expand(
      ctx, rows, 40, "column crossings of the inside test",
      [&](uint64_t* counts) {
        if (!rows) return;
        k_row_spans<<<row_blocks, 256, 0, s>>>(m, d_offsets.data(), rows, counts, d_row_tri.data(), d_row_lo.data(),
                                               d_row_j.data());
        VT_CUDA_CHECK_LAUNCH();
      },
      &d_row_counts, &d_row_offsets);
  timer.begin("inside_crossings");
  for (int b = 0; b < 2; ++b) {
    d_keys[b].grow(total + 1);
    d_signs[b].grow(total + 1);
  }
  d_counter.grow(1);
  VT_CUDA_CHECK(cudaMemsetAsync(d_counter.data(), 0, sizeof(unsigned long long), s));
  if (total) {
    const unsigned blocks = unsigned(std::min<uint64_t>(blocks_for(total, 256), uint64_t(ctx.num_sms) * 32));
    k_crossings<<<blocks, 256, 0, s>>>(m, d_row_offsets.data(), rows, d_row_tri.data(), d_row_lo.data(), d_row_j.data(),
                                       total, d_keys[0].data(), d_signs[0].data(), d_counter.data());
    VT_CUDA_CHECK_LAUNCH();
  }
  const uint64_t n = read_scalar(d_counter.data(), s);
  timer.begin("inside_sort");
  cub::DoubleBuffer<unsigned long long> dk(d_keys[0].data(), d_keys[1].data());
  cub::DoubleBuffer<int32_t> ds(d_signs[0].data(), d_signs[1].data());
  const int key_bits = kK0Bits + bits_for(uint64_t(m.dims.x) * uint64_t(m.dims.y));
  if (n)
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(t, bytes, dk, ds, int64_t(n), 0, key_bits, s);
    });
  p.keys = dk.Current();
  p.signs = ds.Current();
  p.prefix = ds.Alternate();
  p.n = n;
  unsigned long long* cols = dk.Alternate();
  launch_1d(k_column_ids, n, 256, s, p.keys, n, cols);
  if (n)
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceScan::InclusiveSumByKey(t, bytes, cols, p.signs, p.prefix, int64_t(n),
                                                cuda::std::equal_to<unsigned long long>{}, s);
    });
  // Columns the winding test must evaluate span by span.
  p.winding = winding;
  p.ne = ne;
  p.boundary = winding && ne > 0;
  const double vs[3] = {spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z};
  p.sc = InsideScale{vs[au], vs[av], vs[axis]};
  p.cr = Columns{range.lo[au], range.hi[au], range.lo[av], range.hi[av]};
  const Columns& cr = p.cr;
  if (p.boundary && cr.u_hi > cr.u_lo && cr.v_hi > cr.v_lo) {
    timer.begin("inside_boundary");
    const int32_t tu0 = cr.u_lo >> 3, tv0 = cr.v_lo >> 3, ntv = ((cr.v_hi - 1) >> 3) - tv0 + 1;
    const uint64_t ntiles = uint64_t(((cr.u_hi - 1) >> 3) - tu0 + 1) * uint64_t(ntv);
    const uint64_t ncols = uint64_t(cr.u_hi - cr.u_lo) * uint64_t(cr.v_hi - cr.v_lo);
    d_tile_flags.grow(ntiles);
    d_col_flags.grow(ncols);
    launch_1d(k_tile_decided, ntiles, 128, s, d_edges.data(), ne, p.sc, tu0, tv0, ntv, ntiles, d_tile_flags.data());
    launch_1d(k_column_decided, ncols, 128, s, d_edges.data(), ne, p.sc, cr, tu0, tv0, ntv, d_tile_flags.data(),
              d_col_flags.data());
    d_list.grow(ncols + 1);
    d_num.grow(1);
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceSelect::Flagged(t, bytes, thrust::counting_iterator<uint32_t>(0), d_col_flags.data(),
                                        d_list.data(), d_num.data(), int64_t(ncols), s);
    });
    p.nlist = read_scalar(d_num.data(), s);
  }
  return p;
}

void SolidState::paint_axis(GpuContext& ctx, const AxisPrep& prep, const InsideRange& range, int32_t bx0, int32_t bx1,
                            uint32_t* bits, StageTimer& timer, const uint32_t* need) {
  cudaStream_t s = ctx.stream;
  InsideView m = prep.m;
  m.bx0 = bx0;
  m.bx1 = bx1;
  timer.begin("inside_spans");
  launch_1d(k_spans, prep.n, 256, s, m, prep.keys, prep.prefix, prep.n, prep.winding,
            prep.boundary ? d_col_flags.data() : nullptr, prep.cr, bits);
  const int axis = m.axis;
  if (prep.nlist && range.hi[axis] > range.lo[axis]) {
    timer.begin("inside_winding");
    const int32_t w_lo = std::max(range.lo[axis], 0), w_hi = std::min(range.hi[axis], m.dims.z);
    WindingRest rest{};
    const uint64_t held = uint64_t(ctx.num_sms) * VT_WINDING_TREE_MIN_BLOCKS * kWindingWarps;
    const int hand = ctx.opt.winding_hand_on;
    if (tree_patience > 0 && (hand > 0 || (hand < 0 && prep.nlist >= kHandMinRounds * held))) {
      d_rest_list.grow(prep.nlist + 1);
      d_rest_start.grow(prep.nlist + 1);
      d_rest_count.grow(1);
      VT_CUDA_CHECK(cudaMemsetAsync(d_rest_count.data(), 0, sizeof(unsigned long long), s));
      rest = WindingRest{d_rest_list.data(), d_rest_start.data(), d_rest_count.data()};
    }
    auto kernel = tree_patience > 0 ? k_undecided<true> : k_undecided<false>;
    kernel<<<blocks_for(prep.nlist, kWindingWarps), 32 * kWindingWarps, 0, s>>>(
        m, d_list.data(), prep.nlist, prep.cr, w_lo, w_hi, prep.keys, prep.signs, prep.n, d_edges.data(),
        d_edges_x.data(), prep.ne, trees, tree_patience, prep.sc, need, grid_bricks(m.dims), bits, rest, nullptr);
    VT_CUDA_CHECK_LAUNCH();
    if (rest.list) {
      timer.begin("inside_winding_rest");
      const uint64_t nrest = read_scalar(d_rest_count.data(), s);
      if (nrest) {
        k_undecided<false><<<blocks_for(nrest, kWindingWarps), 32 * kWindingWarps, 0, s>>>(
            m, d_rest_list.data(), nrest, prep.cr, w_lo, w_hi, prep.keys, prep.signs, prep.n, d_edges.data(),
            d_edges_x.data(), prep.ne, InsideTreeView{}, 0, prep.sc, need, grid_bricks(m.dims), bits, WindingRest{},
            d_rest_start.data());
        VT_CUDA_CHECK_LAUNCH();
      }
    }
  }
}

void SolidState::keep_solid_bricks(GpuContext& ctx, uint64_t n, const uint32_t* mask_words, int32_t bx0,
                                   const Int3& nb, StageTimer& timer, SparseGrid& out) {
  cudaStream_t s = ctx.stream;
  const uint4* words = reinterpret_cast<const uint4*>(mask_words);
  timer.begin("inside_compact");
  d_bricks.grow(n + 1);
  d_run_starts.grow(n + 1);
  d_run_ends.grow(n + 1);
  d_num.grow(3);
  VT_CUDA_CHECK(cudaMemsetAsync(d_num.data(), 0, 3 * sizeof(uint64_t), s));
  if (n) {
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceSelect::If(t, bytes, thrust::counting_iterator<uint64_t>(0), d_bricks.data(), d_num.data(),
                                   int64_t(n), BrickPartial{words}, s);
    });
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceSelect::If(t, bytes, thrust::counting_iterator<uint64_t>(0), d_run_starts.data(),
                                   d_num.data() + 1, int64_t(n), RunStart{words, uint64_t(nb.z)}, s);
    });
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceSelect::If(t, bytes, thrust::counting_iterator<uint64_t>(0), d_run_ends.data(),
                                   d_num.data() + 2, int64_t(n), RunEnd{words, uint64_t(nb.z)}, s);
    });
  }
  uint64_t counts[3];
  ctx.download(counts, d_num.data(), sizeof(counts));
  const uint64_t count = counts[0], runs = counts[1];
  if (counts[2] != runs) fail(ErrorKind::kInternal, "inside test: run starts and ends differ in number");
  d_kept_masks.grow(count * 16 + 1);
  launch_1d(k_gather<uint32_t>, count * 16, 256, s, mask_words, d_bricks.data(), count, uint64_t(16),
            d_kept_masks.data());
  timer.begin("inside_download");
  std::vector<uint64_t> ids(count), starts(runs), ends(runs);
  if (count) ctx.download(ids.data(), d_bricks.data(), count * 8);
  if (runs) {
    ctx.download(starts.data(), d_run_starts.data(), runs * 8);
    ctx.download(ends.data(), d_run_ends.data(), runs * 8);
  }
  const size_t at = out.keys.size();
  out.masks.resize(at + count);
  if (count) ctx.download(out.masks.data() + at, d_kept_masks.data(), count * 64);
  const uint64_t nyz = uint64_t(nb.y) * uint64_t(nb.z);
  auto key_of = [&](uint64_t id) {
    return brick_key(bx0 + int32_t(id / nyz), int32_t((id / uint64_t(nb.z)) % uint64_t(nb.y)),
                     int32_t(id % uint64_t(nb.z)));
  };
  out.keys.resize(at + count);
  for (uint64_t b = 0; b < count; ++b) out.keys[at + b] = key_of(ids[b]);
  for (uint64_t r = 0; r < runs; ++r) out.runs.push_back({key_of(starts[r]), ends[r] - starts[r] + 1});
}

SparseGrid SolidState::inside(GpuContext& ctx, DeviceMesh& mesh, const Mesh& host_mesh, const GridSpec& spec,
                              InsideMethod method, VoxelizeStats& stats, const SparseGrid* only) {
  cudaStream_t s = ctx.stream;
  const auto wall0 = std::chrono::steady_clock::now();
  StageTimer timer(s);
  timer.begin("transform");
  mesh.transform(spec.origin, spec.voxel_size, s);
  timer.begin("inside_prepare");  // host: the mesh's bounds
  const InsideRange range = inside_range(host_mesh, spec);
  const Int3 nb = grid_bricks(spec.dims);
  const int maps = method == InsideMethod::kVote ? 3 : 1;
  // The bits of one x-slab of bricks at a time (the whole grid when it fits), with room per brick for
  // the selections and the kept masks.
  const uint64_t column_bytes = uint64_t(nb.y) * uint64_t(nb.z) * (64 * uint64_t(maps) + 3 * 8 + 64);
  const uint64_t slab_budget = std::min<uint64_t>(ctx.memory_budget() / 3, uint64_t(4) << 30);
  if (column_bytes > slab_budget)
    fail(ErrorKind::kResource, "the GPU inside test needs " + std::to_string(column_bytes >> 20) +
                                   " MB for one slab of 8 voxels across the grid, more than a third of the GPU memory "
                                   "budget: use --device cpu or a coarser grid");
  int32_t slab = int32_t(std::min<uint64_t>(uint64_t(nb.x), slab_budget / column_bytes));
  if (ctx.opt.inside_slab_bricks) slab = int32_t(std::min<uint64_t>(uint64_t(nb.x), ctx.opt.inside_slab_bricks));
  const uint64_t slab_bricks = uint64_t(slab) * uint64_t(nb.y) * uint64_t(nb.z);
  d_bits.grow(slab_bricks * 16 * maps);
  SparseGrid out;
  out.spec = spec;
  out.name = "inside";
  const bool winding = method == InsideMethod::kWinding;
  uint64_t ne = 0;
  if (winding) {
    timer.begin("inside_weld");
    ne = boundary(ctx, mesh, 2);
    timer.begin("inside_trees");
    upload_trees(ctx, ne, InsideScale{spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z});
  }
  // `only`'s bricks, a bit each (x-major), for the winding test's open columns.
  const uint32_t* need = nullptr;
  if (only && winding) {
    const uint64_t nbits = uint64_t(nb.x) * uint64_t(nb.y) * uint64_t(nb.z);
    std::vector<uint32_t> words((nbits + 31) / 32, 0u);
    for (uint64_t key : only->keys) {
      const Int3 c = brick_coord(key);
      const uint64_t x = (uint64_t(c.x) * uint64_t(nb.y) + uint64_t(c.y)) * uint64_t(nb.z) + uint64_t(c.z);
      words[x >> 5] |= 1u << (x & 31);
    }
    d_need.grow(words.size());
    VT_CUDA_CHECK(cudaMemcpyAsync(d_need.data(), words.data(), words.size() * 4, cudaMemcpyHostToDevice, s));
    VT_CUDA_CHECK(cudaStreamSynchronize(s));  // (words leaves scope)
    need = d_need.data();
  }
  AxisPrep prep;
  if (method != InsideMethod::kVote) prep = prepare_axis(ctx, mesh, spec, 2, winding, ne, range, timer);
  for (int32_t bx0 = 0; bx0 < nb.x; bx0 += slab) {
    const int32_t bx1 = std::min(nb.x, bx0 + slab);
    const uint64_t n = uint64_t(bx1 - bx0) * uint64_t(nb.y) * uint64_t(nb.z);
    timer.begin("inside_clear");
    VT_CUDA_CHECK(cudaMemsetAsync(d_bits.data(), 0, n * 64 * maps, s));
    if (method == InsideMethod::kVote) {
      // Three column axes; each one's crossings again per slab (the buffers hold one axis at a time).
      for (int a = 0; a < 3; ++a)
        paint_axis(ctx, prepare_axis(ctx, mesh, spec, a, false, 0, range, timer), range, bx0, bx1,
                   d_bits.data() + uint64_t(a) * n * 16, timer);
      timer.begin("inside_vote");
      launch_1d(k_majority, n * 16, 256, s, d_bits.data(), d_bits.data() + n * 16, d_bits.data() + 2 * n * 16, n * 16);
    } else {
      paint_axis(ctx, prep, range, bx0, bx1, d_bits.data(), timer, need);
    }
    keep_solid_bricks(ctx, n, d_bits.data(), bx0, nb, timer, out);
  }
  timer.end();
  add_gpu_stages(stats, timer.resolve(), wall0, "inside_");
  return out;
}

// ---- Band ------------------------------------------------------------------------------------

BandTreeView SolidState::band_tree(GpuContext& ctx, const DeviceMesh& mesh, const GridBox& box, const BandSetup& bs,
                                   uint64_t other_bytes) {
  cudaStream_t s = ctx.stream;
  const MeshView mv = mesh.view();
  const uint64_t nt = mesh.num_tris;
  BandTreeView view;
  if (nt == 0) return view;
  // The triangles' margins and pieces (a scan of their counts: each one's first reference), at the
  // piece length that fits (band_piece_length: counted again only where the first does not).
  d_tree_k2.grow(2 * nt);
  float *k2 = d_tree_k2.data(), *k2e = k2 + nt;
  d_counts.grow(nt + 1);
  d_offsets.grow(nt + 1);
  uint64_t nr = 0;
  auto pieces = [&](float piece, bool bound) {  // (their scan left in d_offsets: each triangle's first)
    VT_CUDA_CHECK(cudaMemsetAsync(d_counts.data() + nt, 0, sizeof(uint64_t), s));
    launch_1d(k_tree_count, nt, 256, s, mv, nt, bs, piece, bound, k2, k2e, d_counts.data());
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceScan::ExclusiveSum(t, bytes, d_counts.data(), d_offsets.data(), int64_t(nt + 1), s);
    });
    return read_scalar(d_offsets.data() + nt, s);
  };
  tree_piece = band_piece_length(
      nt, [&](float piece) { return pieces(piece, false); }, [&](float piece) { return pieces(piece, true); }, &nr);
  // The band's region (other_bytes) and the tree and its build (per reference: keys and ids twice,
  // its box twice, triangle and vertices; the shape, boxes and nodes of at most as many nodes: leaves
  // hold 2 to 4 references).
  const uint64_t need = other_bytes + nr * (2 * 12 + 2 * sizeof(BandNodeBox) + 4 + 3 * sizeof(Vec3f)) +
                        (nr + 1) * (5 * 4 + 1 + sizeof(BandNodeBox) + sizeof(BandNode));
  if (need > ctx.memory_budget())
    fail(ErrorKind::kResource, "the distance band's search (" + std::to_string(nr) + " triangles and pieces) needs " +
                                   std::to_string(need >> 20) + " MB, more than the GPU memory budget holds");
  for (int i = 0; i < 2; ++i) {
    d_keys[i].grow(nr);
    d_tris[i].grow(nr);
  }
  d_ref_boxes.grow(nr);
  d_ref_tri.grow(nr);
  launch_1d(k_tree_refs, nt, 256, s, mv, nt, box, tree_piece, k2, k2e, d_offsets.data(), d_keys[0].data(),
            d_tris[0].data(), d_ref_boxes.data(), d_ref_tri.data());
  cub::DoubleBuffer<unsigned long long> dk(d_keys[0].data(), d_keys[1].data());
  cub::DoubleBuffer<uint32_t> dt(d_tris[0].data(), d_tris[1].data());
  ctx.cub.run(
      [&](void* t, size_t& bytes) { return cub::DeviceRadixSort::SortPairs(t, bytes, dk, dt, int64_t(nr), 0, 64, s); });
  d_num.grow(1);
  launch_1d(k_tree_kept, nr, 256, s, dk.Current(), nr, d_num.data());
  const uint64_t kept = read_scalar(d_num.data(), s);
  d_band_tris.grow(3 * kept + 1);
  d_band_boxes.grow(kept + 1);
  d_band_loose.grow(3 * (nr - kept) + 1);
  launch_1d(k_tree_gather, nr, 256, s, mv, dt.Current(), nr, d_num.data(), d_ref_boxes.data(), d_ref_tri.data(),
            d_band_tris.data(), d_band_boxes.data(), d_band_loose.data());
  view.tris = d_band_tris.data();
  view.boxes = d_band_boxes.data();
  view.num_tris = uint32_t(kept);
  view.loose = d_band_loose.data();
  view.num_loose = uint32_t(nr - kept);
  if (kept == 0) return view;
  // The shape (core/band_search.h band_shape_node: each node's place from the count alone), the inner
  // nodes numbered by a scan, the boxes from the leaves up a depth at a time, then the nodes.
  const BandShapeTable table = band_shape_table(uint32_t(kept));
  const uint64_t n = table.nodes(), num_inner = (n - 1) / 2;  // (a full binary tree)
  d_tree_shape.grow(5 * n);
  d_tree_depth.grow(n);
  uint32_t* shape = d_tree_shape.data();
  const TreeShapeView sv{reinterpret_cast<int32_t*>(shape), shape + n, shape + 2 * n, shape + 3 * n,
                         d_tree_depth.data()};
  launch_1d(k_tree_shape, n, 256, s, table, n, sv);
  ctx.cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(t, bytes, sv.inner, shape + 4 * n, int64_t(n), s);
  });
  VT_CUDA_CHECK(cudaMemcpyAsync(sv.inner, shape + 4 * n, n * 4, cudaMemcpyDeviceToDevice, s));
  d_tree_boxes.grow(n);
  launch_1d(k_tree_leaves, n, 256, s, sv, n, d_band_boxes.data(), d_tree_boxes.data());
  for (uint32_t d = table.depths; d-- > 0;)  // deepest first: children before parents
    launch_1d(k_tree_join, n, 256, s, sv, n, d, d_tree_boxes.data());
  d_band_nodes.grow(num_inner + 1);
  launch_1d(k_tree_nodes, n, 256, s, sv, n, d_tree_boxes.data(), d_band_nodes.data());
  BandNodeBox root;
  ctx.download(&root, d_tree_boxes.data(), sizeof root);
  int32_t root_right = 0;
  uint32_t root_first = 0, root_count = 0, root_inner = 0;
  uint32_t root_depth = 0;
  band_shape_node(table, 0, &root_first, &root_count, &root_depth, &root_right);
  band_set_top(view, &root_right, &root_first, &root_count, &root_inner, root);
  view.nodes = d_band_nodes.data();
  return view;
}

SparseGrid SolidState::band_search(GpuContext& ctx, const DeviceMesh& mesh, const GridBox& box, const GridSpec& spec,
                                   int band, VoxelizeStats& stats, StageTimer& timer,
                                   std::chrono::steady_clock::time_point wall0) {
  cudaStream_t s = ctx.stream;
  SparseGrid out;
  out.spec = spec;
  out.value_type = ValueType::kFloat32;
  out.name = "sdf";
  const BandSetup bs = band_setup(spec, band);
  Int3 lo, hi;
  if (!band_search_bricks(box, spec, bs, &lo, &hi)) {
    out.index_values();
    return out;
  }
  const Int3 n{hi.x - lo.x + 1, hi.y - lo.y + 1, hi.z - lo.z + 1};
  const uint64_t bricks = uint64_t(n.x) * uint64_t(n.y) * uint64_t(n.z);
  // The region's values, masks and linear indices, then keep_bricks' copies of them (at most as
  // many), with the tree's (band_tree: counted once its pieces are).
  const uint64_t region = bricks * 2 * (kBrickVoxels * sizeof(float) + 64 + 16) + mesh.num_tris * 2 * sizeof(float);
  if (region > ctx.memory_budget())
    fail(ErrorKind::kResource, "the distance band of " + std::to_string(bricks) + " bricks needs " +
                                   std::to_string(region >> 20) + " MB, more than the GPU memory budget holds");
  timer.begin("band_tree");
  const BandTreeView view = band_tree(ctx, mesh, box, bs, region);
  timer.begin("band_distance");
  d_values.grow(bricks * kBrickVoxels + 1);
  d_masks.grow(bricks * 16 + 1);
  d_band_lin.grow(bricks + 1);
  const Int3 nb = grid_bricks(spec.dims);
  // Voxels per thread: 8 where the region's bricks give the GPU some 8,192 threads per SM, fewer
  // (more threads) for smaller regions (H200, `--band all`, the warp's walk, band_distance ms, 8 / 4 /
  // 2 / 1 voxels per thread: the dragon at 64^3 8.5 / 6.4 / 4.0 / 2.0, at 128^3 7.3 / 5.7 / 4.8 / 3.8,
  // at 256^3 14.4 / 14.4 / 15.4 / 16.5, at 512^3 70 / 76 / 87 / 103; the bunny at 64^3 15.9 / 11.6 /
  // 7.3 / 4.7, at 128^3 20.1 / 17.0 / 12.2 / 9.1, at 256^3 38.5 / 36.8 / 41.7 / 47.3; a walk per
  // thread took 8 from 4,096 threads per SM). VT_BAND_SEARCH_PER forces one (measurements).
  int per = 8;
#ifdef VT_BAND_SEARCH_PER
  per = VT_BAND_SEARCH_PER;
#else
  while (per > 1 && bricks * 64 * 8 / uint64_t(per) < uint64_t(ctx.num_sms) * 8192) per /= 2;
#endif
  auto* kernel = per >= 4 ? k_band_search<2> : k_band_search<1>;
  kernel<<<unsigned(bricks), 64 * 8 / per, 0, s>>>(view, bs, spec.dims, lo, n, nb, per, d_values.data(), d_masks.data(),
                                                   d_band_lin.data());
  VT_CUDA_CHECK_LAUNCH();
  keep_bricks(ctx, bricks, d_masks.data(), d_band_lin.data(), d_values.data(), nb, "band_", timer, out);
  timer.end();
  add_gpu_stages(stats, timer.resolve(), wall0, "band_");
  return out;
}

namespace {
struct BandBoxWork {  // (band_box_voxels' terms)
  MeshView m;
  BandSetup bs;
  Int3 dims;
  double per_brick;
  __device__ double operator()(uint64_t t) const {
    Vec3f tri[3];
    load_corners(m, t, tri);
    return band_box_work(tri, bs, dims, per_brick);
  }
};
}  // namespace

double SolidState::band_box_voxels(GpuContext& ctx, const DeviceMesh& mesh, const GridSpec& spec, const BandSetup& bs,
                                   double per_brick) {
  cudaStream_t s = ctx.stream;
  d_box_voxels.grow(1);
  const auto volumes = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0),
                                                       BandBoxWork{mesh.view(), bs, spec.dims, per_brick});
  ctx.cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceReduce::Sum(t, bytes, volumes, d_box_voxels.data(), int64_t(mesh.num_tris), s);
  });
  return read_scalar(d_box_voxels.data(), s);
}

SparseGrid SolidState::band(GpuContext& ctx, DeviceMesh& mesh, const Mesh& host_mesh, const GridSpec& spec, int band,
                            VoxelizeStats& stats) {
  cudaStream_t s = ctx.stream;
  const auto wall0 = std::chrono::steady_clock::now();
  StageTimer timer(s);
  timer.begin("transform");  // (once: the rule, the search and the pairs all read it)
  mesh.transform(spec.origin, spec.voxel_size, s);
  // (The search's way for this band, given the mesh's grid-space box.)
  auto search = [&](const GridBox& box) { return band_search(ctx, mesh, box, spec, band, stats, timer, wall0); };
#ifdef VT_BAND_FORCE  // measurements: 1 the search, 2 the pairs (for finite bands)
  if (VT_BAND_FORCE == 1 || band == kBandAll) return search(mesh_grid_box(host_mesh, spec));
#else
  if (band == kBandAll) return search(mesh_grid_box(host_mesh, spec));
  {  // (band_by_search's rule, kBandRuleGpu, the pairs' work counted on the device)
    const GridBox box = mesh_grid_box(host_mesh, spec);
    const BandSetup bs = band_setup(spec, band);
    const double walked = band_search_voxels(box, spec, bs);
    if (walked > 0 && kBandRuleGpu.takes_search(band_box_voxels(ctx, mesh, spec, bs, kBandRuleGpu.per_brick), walked,
                                                mesh.num_tris, band_compact_work(bs, kBandRuleGpu.per_brick)))
      return search(box);
  }
#endif
  const uint64_t nt = mesh.num_tris;
  BandView b;
  b.mesh = mesh.view();
  b.num_tris = nt;
  b.setup = band_setup(spec, band);
  b.dims = spec.dims;
  b.nb = grid_bricks(spec.dims);
  d_bounds.grow(nt + 1);
  b.bounds = d_bounds.data();
  timer.begin("band_pairs");
  const unsigned warp_blocks =
      unsigned(std::max<uint64_t>(1, std::min<uint64_t>((nt + 7) / 8, uint64_t(ctx.num_sms) * 16)));
  uint64_t total = 0;
  try {
    total = expand(ctx, nt, 48, "(brick, triangle) pairs of the narrow band", [&](uint64_t* counts) {
      launch_1d(k_band_bounds, nt, 256, s, b);
      if (nt) {
        k_band_kept<false><<<warp_blocks, kKeptThreads, 0, s>>>(b, counts, nullptr, nullptr, nullptr);
        VT_CUDA_CHECK_LAUNCH();
      }
    });
  } catch (const Error& e) {
    // More pairs than the memory budget holds (a wide band): the search, whose memory is the region's
    // values (the same bits).
    if (e.kind() != ErrorKind::kResource) throw;
    return search(mesh_grid_box(host_mesh, spec));
  }
  for (int i = 0; i < 2; ++i) {
    d_keys[i].grow(total + 1);
    d_tris[i].grow(total + 1);
  }
  if (total) {
    k_band_kept<true>
        <<<warp_blocks, kKeptThreads, 0, s>>>(b, nullptr, d_offsets.data(), d_keys[0].data(), d_tris[0].data());
    VT_CUDA_CHECK_LAUNCH();
  }
  timer.begin("band_sort");
  cub::DoubleBuffer<unsigned long long> dk(d_keys[0].data(), d_keys[1].data());
  cub::DoubleBuffer<uint32_t> dt(d_tris[0].data(), d_tris[1].data());
  const int key_bits = bits_for(uint64_t(b.nb.x) * uint64_t(b.nb.y) * uint64_t(b.nb.z));
  if (total)
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(t, bytes, dk, dt, int64_t(total), 0, key_bits, s);
    });
  unsigned long long* unique = dk.Alternate();
  d_run_counts.grow(total + 1);
  d_num.grow(1);
  VT_CUDA_CHECK(cudaMemsetAsync(d_num.data(), 0, sizeof(uint64_t), s));
  if (total)
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceRunLengthEncode::Encode(t, bytes, dk.Current(), unique, d_run_counts.data(), d_num.data(),
                                                int64_t(total), s);
    });
  const uint64_t runs = read_scalar(d_num.data(), s);
  d_run_offsets.grow(runs + 1);
  if (runs)
    ctx.cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceScan::ExclusiveSum(t, bytes, d_run_counts.data(), d_run_offsets.data(), int64_t(runs), s);
    });
  timer.begin("band_distance");
  d_values.grow(runs * kBrickVoxels + 1);
  d_masks.grow(runs * 16 + 1);
  if (runs) {
    k_band<<<unsigned(runs), kBandThreads, 0, s>>>(b, unique, d_run_counts.data(), d_run_offsets.data(), dt.Current(),
                                                   d_values.data(), d_masks.data());
    VT_CUDA_CHECK_LAUNCH();
  }
  SparseGrid out;
  out.spec = spec;
  out.value_type = ValueType::kFloat32;
  out.name = "sdf";
  keep_bricks(ctx, runs, d_masks.data(), unique, d_values.data(), b.nb, "band_", timer, out);
  timer.end();
  add_gpu_stages(stats, timer.resolve(), wall0, "band_");
  return out;
}

SparseGrid GpuVoxelizer::inside_centres(const GridSpec& spec, InsideMethod method, VoxelizeStats& stats,
                                        const SparseGrid* only) {
  VT_CUDA_CHECK(cudaSetDevice(m_ctx.opt.device));
  return m_solid.inside(m_ctx, m_mesh, mesh(), spec, method, stats, only);
}

BandTree GpuVoxelizer::band_tree(const GridSpec& spec, int band) {
  VT_CUDA_CHECK(cudaSetDevice(m_ctx.opt.device));
  m_mesh.transform(spec.origin, spec.voxel_size, m_ctx.stream);
  const BandTreeView v = m_solid.band_tree(m_ctx, m_mesh, mesh_grid_box(mesh(), spec), band_setup(spec, band));
  BandTree t;
  t.top = v;
  t.top.nodes = nullptr;
  t.top.tris = t.top.loose = nullptr;
  t.top.num_loose = 0;
  t.top.boxes = nullptr;
  t.piece = m_solid.tree_piece;
  if (!v.empty) {
    const uint64_t num_inner = (band_shape_table(v.num_tris).nodes() - 1) / 2;
    t.nodes.resize(num_inner);
    if (num_inner) m_ctx.download(t.nodes.data(), v.nodes, num_inner * sizeof(BandNode));
    t.tris.resize(3 * size_t(v.num_tris));
    m_ctx.download(t.tris.data(), v.tris, t.tris.size() * sizeof(Vec3f));
    t.boxes.resize(v.num_tris);
    m_ctx.download(t.boxes.data(), v.boxes, t.boxes.size() * sizeof(BandNodeBox));
  }
  t.loose.resize(3 * size_t(v.num_loose));
  if (v.num_loose) m_ctx.download(t.loose.data(), v.loose, t.loose.size() * sizeof(Vec3f));
  return t;
}

BandTree gpu_band_tree(const Mesh& mesh, const GridSpec& spec, int band, const GpuOptions& gpu) {
  GpuVoxelizer v(gpu);
  v.set_mesh(mesh);
  return v.band_tree(spec, band);
}

SparseGrid gpu_inside_centres(const Mesh& mesh, const GridSpec& spec, InsideMethod method, const SparseGrid* only,
                              const GpuOptions& gpu) {
  GpuVoxelizer v(gpu);
  v.set_mesh(mesh);
  return v.inside_for_tests(spec, method, only);
}

SparseGrid GpuVoxelizer::band_distance(const GridSpec& spec, int band, VoxelizeStats& stats) {
  VT_CUDA_CHECK(cudaSetDevice(m_ctx.opt.device));
  return m_solid.band(m_ctx, m_mesh, mesh(), spec, band, stats);
}

}  // namespace voxtile
