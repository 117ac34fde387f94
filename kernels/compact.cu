// Scans of the compaction primitive (kernels/compact.cuh) and its self-test entry points.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cuda/std/functional>

#include <algorithm>

#include "kernels/api.h"
#include "kernels/compact.cuh"
#include "kernels/testing.h"

namespace voxtile {

namespace {

struct CountAt {
  const uint32_t* counts;
  __device__ uint32_t operator()(uint64_t i) const { return counts[i]; }
};

struct Popc {
  const uint32_t* words;
  uint64_t n;
  __device__ uint64_t operator()(uint64_t w) const { return w < n ? uint64_t(__popc(words[w])) : 0u; }
};
struct Widen {
  const uint32_t* counts;
  uint64_t n;
  __device__ uint64_t operator()(uint64_t t) const { return t < n ? uint64_t(counts[t]) : 0u; }
};

}  // namespace

void launch_own_tile_scan(const uint32_t* counts, uint64_t* out, uint64_t num, cudaStream_t stream) {
  launch_block_scan<uint64_t>(CountAt{counts}, out, num, stream);
}

// Scans num + 1 inputs (the extra one is 0) so that out[num] is the total.
void cub_tile_scan(CubTemp& cub, const uint32_t* counts, uint64_t* out, uint64_t num, cudaStream_t stream) {
  auto in = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), Widen{counts, num});
  cub.run([&](void* t, size_t& b) { return cub::DeviceScan::ExclusiveSum(t, b, in, out, int64_t(num + 1), stream); });
}

void cub_word_scan(CubTemp& cub, const uint32_t* words, uint64_t* out, uint64_t num_words, cudaStream_t stream) {
  auto in = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), Popc{words, num_words});
  cub.run([&](void* t, size_t& b) { return cub::DeviceScan::ExclusiveSum(t, b, in, out, int64_t(num_words + 1), stream); });
}

// ---- self tests (api.h) ---------------------------------------------------------------------

namespace {

struct FlagPred {
  const uint8_t* keep;
  __device__ bool operator()(uint64_t i) const { return keep[i] != 0; }
};
struct IndexMove {
  uint64_t* out;
  __device__ void operator()(uint64_t i, uint64_t dst) const { out[dst] = i; }
};

__device__ __host__ inline uint32_t mix32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return uint32_t(x);
}

__global__ void fill_bytes(uint8_t* p, uint64_t n, uint32_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    p[i] = uint8_t(mix32(i ^ (uint64_t(seed) << 40)));
}
struct BytePred {
  const uint8_t* bytes;
  uint32_t threshold;
  __device__ bool operator()(uint64_t i) const { return bytes[i] < threshold; }
};
struct ByteMove {
  const uint8_t* bytes;
  uint8_t* out_bytes;
  uint64_t* out_index;
  __device__ void operator()(uint64_t i, uint64_t dst) const {
    out_bytes[dst] = bytes[i];
    out_index[dst] = i;
  }
};
struct IsKept {
  const uint8_t* bytes;
  uint32_t threshold;
  __device__ uint64_t operator()(uint64_t i) const { return bytes[i] < threshold ? 1u : 0u; }
};
// Counts outputs that break the contract: index not increasing, byte not the input's, or not kept.
__global__ void check_output(const uint8_t* bytes, uint32_t threshold, const uint8_t* out_bytes,
                             const uint64_t* out_index, uint64_t kept, unsigned long long* errors) {
  for (uint64_t k = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; k < kept; k += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t i = out_index[k];
    const bool bad = (k > 0 && out_index[k - 1] >= i) || out_bytes[k] != bytes[i] || !(bytes[i] < threshold);
    if (bad) atomicAdd(errors, 1ull);
  }
}

void select_device(int device) { VT_CUDA_CHECK(cudaSetDevice(device)); }

}  // namespace

std::vector<uint64_t> gpu_select_indices(const std::vector<uint8_t>& keep, ScanMethod method, int device) {
  select_device(device);
  const uint64_t n = keep.size();
  DeviceBuffer<uint8_t> d_keep(n + 1);
  if (n) VT_CUDA_CHECK(cudaMemcpy(d_keep.data(), keep.data(), n, cudaMemcpyHostToDevice));
  CompactWorkspace ws;
  compact_flags(ws, n, FlagPred{d_keep.data()}, nullptr);
  compact_scan(ws, method, nullptr);
  uint64_t total = 0;
  VT_CUDA_CHECK(cudaMemcpy(&total, ws.total(), sizeof(total), cudaMemcpyDeviceToHost));
  DeviceBuffer<uint64_t> out(total + 1);
  compact_scatter(ws, IndexMove{out.data()}, nullptr);
  std::vector<uint64_t> host(total);
  if (total) VT_CUDA_CHECK(cudaMemcpy(host.data(), out.data(), total * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  return host;
}

CompactionCheck gpu_compaction_selftest(uint64_t n, uint32_t threshold, uint32_t seed, ScanMethod method, int device) {
  select_device(device);
  CompactionCheck r;
  r.n = n;
  DeviceBuffer<uint8_t> bytes(n + 1);
  fill_bytes<<<4096, 256>>>(bytes.data(), n, seed);
  VT_CUDA_CHECK_LAUNCH();
  // Expected count by an independent reduction.
  {
    CubTemp cub;
    DeviceBuffer<uint64_t> sum(1);
    auto in = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), IsKept{bytes.data(), threshold});
    cub.run([&](void* t, size_t& b) { return cub::DeviceReduce::Sum(t, b, in, sum.data(), int64_t(n)); });
    VT_CUDA_CHECK(cudaMemcpy(&r.expected, sum.data(), sizeof(uint64_t), cudaMemcpyDeviceToHost));
  }
  CompactWorkspace ws;
  compact_flags(ws, n, BytePred{bytes.data(), threshold}, nullptr);
  compact_scan(ws, method, nullptr);
  VT_CUDA_CHECK(cudaMemcpy(&r.kept, ws.total(), sizeof(uint64_t), cudaMemcpyDeviceToHost));
  {
    DeviceBuffer<uint8_t> out_bytes(r.kept + 1);
    DeviceBuffer<uint64_t> out_index(r.kept + 1);
    compact_scatter(ws, ByteMove{bytes.data(), out_bytes.data(), out_index.data()}, nullptr);
    DeviceBuffer<unsigned long long> errors(1);
    VT_CUDA_CHECK(cudaMemset(errors.data(), 0, sizeof(unsigned long long)));
    check_output<<<4096, 256>>>(bytes.data(), threshold, out_bytes.data(), out_index.data(), r.kept, errors.data());
    VT_CUDA_CHECK_LAUNCH();
    unsigned long long e = 0;
    VT_CUDA_CHECK(cudaMemcpy(&e, errors.data(), sizeof(e), cudaMemcpyDeviceToHost));
    r.errors = e;
  }
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  return r;
}

std::vector<uint32_t> gpu_zero_ranges(uint64_t words, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                                      int device) {
  select_device(device);
  DeviceBuffer<uint32_t> d(words + 1);
  VT_CUDA_CHECK(cudaMemset(d.data(), 0xff, (words + 1) * sizeof(uint32_t)));
  std::vector<ZeroRange> z;
  for (const auto& [first, n] : ranges) z.push_back({d.data() + first, n * sizeof(uint32_t)});
  zero_ranges(z.data(), z.size(), nullptr);
  std::vector<uint32_t> host(words);
  VT_CUDA_CHECK(cudaMemcpy(host.data(), d.data(), words * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<uint64_t> gpu_block_scan(const std::vector<uint32_t>& counts, bool wide, uint64_t out_offset, int device) {
  select_device(device);
  const uint64_t n = counts.size();
  DeviceBuffer<uint32_t> d_counts(n + 1);
  if (n) VT_CUDA_CHECK(cudaMemcpy(d_counts.data(), counts.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
  std::vector<uint64_t> host(n + 1);
  if (wide) {
    DeviceBuffer<uint64_t> out(out_offset + n + 1);
    launch_block_scan<uint64_t>(CountAt{d_counts.data()}, out.data() + out_offset, n, nullptr);
    VT_CUDA_CHECK(cudaMemcpy(host.data(), out.data() + out_offset, (n + 1) * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  } else {
    DeviceBuffer<uint32_t> out(out_offset + n + 1);
    launch_block_scan<uint32_t>(CountsAt<uint32_t>{d_counts.data(), n}, out.data() + out_offset, n, nullptr);
    std::vector<uint32_t> narrow(n + 1);
    VT_CUDA_CHECK(
        cudaMemcpy(narrow.data(), out.data() + out_offset, (n + 1) * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    std::copy(narrow.begin(), narrow.end(), host.begin());
  }
  return host;
}

std::vector<std::pair<uint64_t, size_t>> gpu_staged_round_trips(const std::vector<size_t>& sizes, int device) {
  select_device(device);
  StagedCopy staging;
  std::vector<std::pair<uint64_t, size_t>> out;
  uint64_t seed = 1;
  for (const size_t n : sizes) {
    ValueArray<unsigned char> in(n);
    for (size_t i = 0; i < n; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      in[i] = static_cast<unsigned char>(seed >> 56);
    }
    DeviceBuffer<unsigned char> d(n + 1);
    staging.upload(d.data(), in.data(), n, nullptr);
    ValueArray<unsigned char> back(n);  // fresh, untouched memory
    staging.download(back.data(), d.data(), n, nullptr);
    const size_t first = size_t(std::mismatch(in.begin(), in.end(), back.begin()).first - in.begin());
    out.push_back({first == n ? 0 : first + 1, staging.pinned_bytes()});
  }
  return out;
}

double gpu_copy_bandwidth(int device) {
  select_device(device);
  const size_t bytes = size_t(1) << 30;
  DeviceBuffer<unsigned char> a(bytes), b(bytes);
  VT_CUDA_CHECK(cudaMemset(a.data(), 1, bytes));
  cudaEvent_t e0, e1;
  VT_CUDA_CHECK(cudaEventCreate(&e0));
  VT_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> gbs;
  for (int r = 0; r < 7; ++r) {
    VT_CUDA_CHECK(cudaEventRecord(e0));
    VT_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice));
    VT_CUDA_CHECK(cudaEventRecord(e1));
    VT_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    VT_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2) gbs.push_back(2.0 * double(bytes) / (double(ms) * 1e6));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(gbs.begin(), gbs.end());
  return gbs[gbs.size() / 2];
}

}  // namespace voxtile
