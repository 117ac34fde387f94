// Stream compaction, generic (needs nvcc): keep flags as warp-ballot bitmasks, a scan, a scatter.
//
//   1. flags:   one block of 256 threads per tile of 1024 elements; pred(i) per element, a
//               __ballot_sync per 32 elements writes one 32-bit keep word, and the block writes its
//               tile's kept count (the scan's "reduce" is fused into the flag pass).
//   2. scan:    exclusive scan of the tile counts into 64-bit offsets; offsets[num_tiles] is the
//               total, which stays on the device (ScanMethod::kTiles: one block when the tiles fit
//               its loop, else CUB; kTilesCub: CUB; kWords: CUB over the popcount of every keep word,
//               the seed's per-flag scan, kept for comparison).
//   3. scatter: one block per tile re-reads its 32 keep words, scans their popcounts in shared
//               memory and calls move(i, destination) for every kept i, in order (stable).
// Sizes are 64-bit: more than 2^31 elements work (tested). pred and move are device functors.
#pragma once

#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdint>

#include "kernels/api.h"
#include "kernels/common.cuh"

namespace voxtile {

constexpr int kCompactThreads = 256;
constexpr int kCompactTileWords = 32;
constexpr uint64_t kCompactTile = 1024;


inline uint64_t compact_tiles(uint64_t n) { return (n + kCompactTile - 1) / kCompactTile; }
inline uint64_t compact_words(uint64_t n) { return (n + 31) / 32; }

struct CompactWorkspace {
  DeviceBuffer<uint32_t> words, tile_counts;
  DeviceBuffer<uint64_t> offsets;  // per tile (or per word with kWords), plus the total
  CubTemp cub;
  uint64_t n = 0;
  ScanMethod method = ScanMethod::kTiles;

  void reserve(uint64_t n_elements) {
    words.grow(compact_words(n_elements) + 1);
    tile_counts.grow(compact_tiles(n_elements) + 1);
    offsets.grow(std::max(compact_tiles(n_elements), compact_words(n_elements)) + 1);
  }
  // Device pointer to the number of kept elements (valid after scan()).
  const uint64_t* total() const {
    return offsets.data() + (method == ScanMethod::kWords ? compact_words(n) : compact_tiles(n));
  }
};

template <class Pred>
__global__ void __launch_bounds__(kCompactThreads) compact_flags_kernel(uint64_t n, uint64_t first_tile, Pred pred,
                                                                        uint32_t* words, uint32_t* tile_counts) {
  __shared__ uint32_t warp_counts[kCompactThreads / 32];
  const uint64_t tile = first_tile + blockIdx.x;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  uint32_t count = 0;
  // All four predicates first, so that their memory reads are in flight together.
  bool keep[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uint64_t i = (tile * kCompactTileWords + uint64_t(warp) * 4 + r) * 32 + lane;
    keep[r] = i < n && pred(i);
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uint64_t w = tile * kCompactTileWords + uint64_t(warp) * 4 + r;
    const uint32_t bits = __ballot_sync(kFull, keep[r]);
    if (lane == 0 && w * 32 < n) words[w] = bits;
    count += __popc(bits);
  }
  if (lane == 0) warp_counts[warp] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t s = 0;
#pragma unroll
    for (int k = 0; k < kCompactThreads / 32; ++k) s += warp_counts[k];
    tile_counts[tile] = s;
  }
}

template <class Move>
__global__ void __launch_bounds__(kCompactThreads) compact_scatter_kernel(uint64_t n, const uint32_t* words,
                                                                          const uint64_t* offsets, bool per_word,
                                                                          Move move) {
  __shared__ uint32_t warp_base[kCompactThreads / 32];
  const uint64_t tile = blockIdx.x;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint32_t lt = (1u << lane) - 1;
  uint32_t bits[4];
  uint32_t count = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uint64_t w = tile * kCompactTileWords + uint64_t(warp) * 4 + r;
    bits[r] = w * 32 < n ? words[w] : 0u;
    count += __popc(bits[r]);
  }
  uint64_t base;
  if (per_word) {
    base = 0;  // offsets per word below
  } else {
    if (lane == 0) warp_base[warp] = count;
    __syncthreads();
    if (threadIdx.x == 0) {
      uint32_t s = 0;
      for (int k = 0; k < kCompactThreads / 32; ++k) {
        const uint32_t c = warp_base[k];
        warp_base[k] = s;
        s += c;
      }
    }
    __syncthreads();
    base = offsets[tile] + warp_base[warp];
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uint64_t w = tile * kCompactTileWords + uint64_t(warp) * 4 + r;
    if (per_word && bits[r]) base = offsets[w];
    if ((bits[r] >> lane) & 1u) move(w * 32 + lane, base + __popc(bits[r] & lt));
    base += __popc(bits[r]);
  }
}

// Exclusive scan of count_of(i), i < num, in one block: each of 1024 threads takes 8 consecutive
// counts per round (4 of 64 bits); the total goes to out[num]. One launch and no look-back between blocks, so the
// fastest for small scans (a CUB scan is two launches, and its single-pass tiles wait on each other).
constexpr int kBlockScanThreads = 1024, kBlockScanItems = 8;
template <class T, class CountOf>
__global__ void __launch_bounds__(kBlockScanThreads) block_scan_kernel(CountOf count_of, T* out, uint64_t num) {
  // Loads and stores go through shared memory (warp-striped, so coalesced and all in flight at once)
  // and the scan works on each thread's consecutive items.
  constexpr int kItems = kBlockScanItems * 4 / int(sizeof(T));  // (32 KB of shared memory to transpose)
  using Load = cub::BlockLoad<T, kBlockScanThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<T, kBlockScanThreads, kItems, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using BlockScan = cub::BlockScan<T, kBlockScanThreads>;
  __shared__ union {
    typename Load::TempStorage load;
    typename Store::TempStorage store;
    typename BlockScan::TempStorage scan;
  } temp;
  const auto counts = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), count_of);
  constexpr uint64_t kRound = uint64_t(kBlockScanThreads) * kItems;
  T running = 0;
  for (uint64_t base = 0; base < num; base += kRound) {
    const int valid = int(num - base < kRound ? num - base : kRound);
    T v[kItems];
    Load(temp.load).Load(counts + base, v, valid, T(0));
    __syncthreads();
    T aggregate;
    BlockScan(temp.scan).ExclusiveSum(v, v, aggregate);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kItems; ++k) v[k] += running;
    Store(temp.store).Store(out + base, v, valid);
    running += aggregate;
    __syncthreads();  // temp is reused
  }
  if (threadIdx.x == 0) out[num] = running;
}
template <class T, class CountOf>
void launch_block_scan(CountOf count_of, T* out, uint64_t num, cudaStream_t stream) {
  block_scan_kernel<T, CountOf><<<1, kBlockScanThreads, 0, stream>>>(count_of, out, num);
  VT_CUDA_CHECK_LAUNCH();
}
// Scans of up to this many inputs run in one block (launch_block_scan), larger ones with CUB's two
// launches: one block takes 3-5 us a round of 8192 32-bit counts, CUB's scan about two rounds' time
// whatever the size. H200, the bitmap merge's scan of 1024^3 grids' brick words (about 61k) in one
// block against CUB: merge stage 0.117-0.124 ms against 0.097-0.104 on the 1M tubes, 0.045 against
// 0.035-0.039 on the bunny at 1024^3; at 21k words (the 100k dragon at 1024^3) a tie; the room's
// 86528 tiles 0.057 ms in one block against 0.022 with CUB (tiles stage).
#ifndef VT_BLOCK_SCAN_MAX
#define VT_BLOCK_SCAN_MAX (uint64_t(1) << 14)  // (a macro for A/B builds: scripts/kernel-variant.sh)
#endif
constexpr uint64_t kBlockScanMax = VT_BLOCK_SCAN_MAX;
// out[0..num] = the exclusive scan of count_of(0..num) (count_of(num) must be 0, so out[num] is
// the total): one block up to block_max inputs (launch_block_scan), else CUB's scan.
template <class T, class CountOf>
void scan_counts(CountOf count_of, T* out, uint64_t num, uint64_t block_max, CubTemp& cub, cudaStream_t stream) {
  if (num <= block_max) return launch_block_scan<T>(count_of, out, num, stream);
  const auto counts = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), count_of);
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, counts, out, int64_t(num) + 1, stream);
  });
}
// The active voxels of brick i of n bricks' masks (32-bit words), 0 past the last: with
// scan_counts, where each brick's values begin among the active voxels' (SparseGrid::value_begin).
struct BrickPopcount {
  const uint32_t* masks;
  uint64_t n;
  __device__ uint64_t operator()(uint64_t i) const {
    if (i >= n) return 0;
    uint64_t c = 0;
    for (int w = 0; w < kBrickMaskWords; ++w) c += uint64_t(__popc(masks[i * kBrickMaskWords + w]));
    return c;
  }
};
// The same for counts in memory: num + 1 of them, the last one 0 (CUB then reads them directly).
template <class T>
struct CountsAt {
  const T* counts;
  uint64_t n;
  __device__ T operator()(uint64_t i) const { return i < n ? counts[i] : T(0); }
};
template <class T>
void scan_stored_counts(const T* counts, T* out, uint64_t num, uint64_t block_max, CubTemp& cub, cudaStream_t stream) {
  if (num <= block_max) return launch_block_scan<T>(CountsAt<T>{counts, num}, out, num, stream);
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, counts, out, int64_t(num) + 1, stream);
  });
}
constexpr uint64_t kOwnScanMaxTiles = uint64_t(1) << 20;
void launch_own_tile_scan(const uint32_t* counts, uint64_t* out, uint64_t num, cudaStream_t stream);
// CUB scans (compact.cu).
void cub_tile_scan(CubTemp& cub, const uint32_t* counts, uint64_t* out, uint64_t num, cudaStream_t stream);
void cub_word_scan(CubTemp& cub, const uint32_t* words, uint64_t* out, uint64_t num_words, cudaStream_t stream);

// Phase 1 in parts: sizes the workspace for elements [0, n); then compact_flags_tiles writes the
// flags of tiles [t0, t1) (of kCompactTile elements each), possibly from several streams.
inline void compact_begin(CompactWorkspace& ws, uint64_t n) {
  ws.n = n;
  if (compact_tiles(n) > 0x7fffffffu) fail(ErrorKind::kResource, "compaction of more than 2^41 elements");
  ws.reserve(n);
}
template <class Pred>
void compact_flags_tiles(CompactWorkspace& ws, uint64_t t0, uint64_t t1, Pred pred, cudaStream_t stream) {
  t1 = std::min(t1, compact_tiles(ws.n));
  if (t0 >= t1) return;
  compact_flags_kernel<<<unsigned(t1 - t0), kCompactThreads, 0, stream>>>(ws.n, t0, pred, ws.words.data(),
                                                                          ws.tile_counts.data());
  VT_CUDA_CHECK_LAUNCH();
}
// Phase 1: keep flags for elements [0, n).
template <class Pred>
void compact_flags(CompactWorkspace& ws, uint64_t n, Pred pred, cudaStream_t stream) {
  compact_begin(ws, n);
  compact_flags_tiles(ws, 0, compact_tiles(n), pred, stream);
}

// Phase 2: offsets and the total (on the device).
inline void compact_scan(CompactWorkspace& ws, ScanMethod method, cudaStream_t stream) {
  ws.method = method;
  const uint64_t tiles = compact_tiles(ws.n), nwords = compact_words(ws.n);
  if (ws.n == 0) {
    VT_CUDA_CHECK(cudaMemsetAsync(ws.offsets.data(), 0, sizeof(uint64_t), stream));
    return;
  }
  if (method == ScanMethod::kWords) cub_word_scan(ws.cub, ws.words.data(), ws.offsets.data(), nwords, stream);
  else if (method == ScanMethod::kTiles && tiles <= kOwnScanMaxTiles)
    launch_own_tile_scan(ws.tile_counts.data(), ws.offsets.data(), tiles, stream);
  else cub_tile_scan(ws.cub, ws.tile_counts.data(), ws.offsets.data(), tiles, stream);
}

// Phase 3: move(i, destination) for every kept element, destinations 0, 1, ... in order of i.
template <class Move>
void compact_scatter(CompactWorkspace& ws, Move move, cudaStream_t stream) {
  if (ws.n == 0) return;
  compact_scatter_kernel<<<unsigned(compact_tiles(ws.n)), kCompactThreads, 0, stream>>>(
      ws.n, ws.words.data(), ws.offsets.data(), ws.method == ScanMethod::kWords, move);
  VT_CUDA_CHECK_LAUNCH();
}

}  // namespace voxtile

namespace voxtile {

// "Flag run heads, then select" on top of the primitive: the indices where runs of equal
// key_of(i) begin in a sorted array of n elements (the tile ranges of the sorted pairs, the runs of
// equal brick keys before the merge, the voxels of the sorted fragments). The count stays on the
// device: ws.total().
template <class KeyOf>
struct RunHead {
  KeyOf key_of;
  __device__ bool operator()(uint64_t i) const { return i == 0 || key_of(i) != key_of(i - 1); }
};
struct StoreIndex {
  uint32_t* out;
  __device__ void operator()(uint64_t i, uint64_t dst) const { out[dst] = uint32_t(i); }
};
template <class KeyOf>
void select_run_starts(CompactWorkspace& ws, uint64_t n, KeyOf key_of, uint32_t* d_starts, cudaStream_t stream) {
  compact_flags(ws, n, RunHead<KeyOf>{key_of}, stream);
  // (At most two rounds of the one-block scan: one launch instead of CUB's two.)
  const uint64_t one_block = 2 * uint64_t(kBlockScanThreads) * kBlockScanItems;
  compact_scan(ws, compact_tiles(n) <= one_block ? ScanMethod::kTiles : ScanMethod::kTilesCub, stream);
  compact_scatter(ws, StoreIndex{d_starts}, stream);
}

}  // namespace voxtile
