// Points to voxels on the GPU: a 64-bit voxel key per point (core/points.h), a radix sort of
// (key, point) pairs on the key bits in use, and a reduce-by-key of exact integer sums (count,
// colour, fixed-point normal), so the bins equal bin_points_cpu's whatever the order of the points.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <tuple>

#include "kernels/points/state.cuh"

namespace voxtile {
namespace {

__global__ void key_kernel(const Vec3f* pos, uint64_t n, GridView view, uint64_t outside, uint64_t* keys,
                           uint32_t* idx) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t k = view.key(pos[i]);
    keys[i] = k == kOutsideGrid ? outside : k;
    idx[i] = uint32_t(i);
  }
}

struct AccOf {
  const Rgb8* colors;
  const Vec3f* normals;
  __device__ VoxelAcc operator()(uint32_t i) const { return point_acc(colors, normals, i); }
};
struct AccSum {
  __device__ VoxelAcc operator()(const VoxelAcc& a, const VoxelAcc& b) const { return a + b; }
};

}  // namespace

VoxelBins GpuPoints::bin(const PointCloud& points, const GridSpec& spec,
                         std::vector<std::pair<std::string, double>>* stage_ms) {
  VT_CUDA_CHECK(cudaSetDevice(m->device));
  const GridView view = GridView::make(spec);
  const int bits = view.key_bits();
  if (bits >= 63) fail(ErrorKind::kUsage, "grid too large for 63-bit voxel keys");
  const uint64_t outside = uint64_t(1) << bits;
  const uint64_t n = points.size();
  const bool has_c = !points.colors.empty(), has_n = !points.normals.empty();
  // Bytes per point on the device: position, colour, normal, 2 x (key, index), unique key and sums.
  const uint64_t per_point = 12 + (has_c ? 3 : 0) + (has_n ? 12 : 0) + 2 * 12 + 8 + sizeof(VoxelAcc) + 8;
  uint64_t chunk = std::max<uint64_t>(1 << 20, m->memory_budget() / per_point / 2 * 2);
  chunk = std::min<uint64_t>(chunk, uint64_t(1) << 30);
  StageTimer timer(m->stream);
  std::vector<VoxelBins> parts;
  for (uint64_t c0 = 0; c0 < n || (n == 0 && parts.empty()); c0 += chunk) {
    const uint64_t cn = std::min(chunk, n - c0);
    VoxelBins part;
    if (cn == 0) {
      parts.push_back(part);
      break;
    }
    timer.begin("upload");
    m->b_pos.grow(cn);
    m->staging.upload(m->b_pos.data(), points.positions.data() + c0, cn * sizeof(Vec3f), m->stream);
    if (has_c) {
      m->b_colors.grow(cn);
      m->staging.upload(m->b_colors.data(), points.colors.data() + c0, cn * sizeof(Rgb8), m->stream);
    }
    if (has_n) {
      m->b_normals.grow(cn);
      m->staging.upload(m->b_normals.data(), points.normals.data() + c0, cn * sizeof(Vec3f), m->stream);
    }
    for (int b = 0; b < 2; ++b) {
      m->b_keys[b].grow(cn);
      m->b_idx[b].grow(cn);
    }
    m->b_unique.grow(cn);
    m->b_acc.grow(cn);
    m->b_runs.grow(1);
    timer.begin("keys");
    key_kernel<<<unsigned(std::min<uint64_t>((cn + 255) / 256, 65536)), 256, 0, m->stream>>>(
        m->b_pos.data(), cn, view, outside, m->b_keys[0].data(), m->b_idx[0].data());
    VT_CUDA_CHECK_LAUNCH();
    timer.begin("sort");
    cub::DoubleBuffer<uint64_t> keys(m->b_keys[0].data(), m->b_keys[1].data());
    cub::DoubleBuffer<uint32_t> idx(m->b_idx[0].data(), m->b_idx[1].data());
    m->cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(t, bytes, keys, idx, int64_t(cn), 0, bits + 1, m->stream);
    });
    timer.begin("reduce");
    if (has_c || has_n) {
      auto values = thrust::make_transform_iterator(
          idx.Current(), AccOf{has_c ? m->b_colors.data() : nullptr, has_n ? m->b_normals.data() : nullptr});
      m->cub.run([&](void* t, size_t& bytes) {
        return cub::DeviceReduce::ReduceByKey(t, bytes, keys.Current(), m->b_unique.data(), values, m->b_acc.data(),
                                              m->b_runs.data(), AccSum{}, int64_t(cn), m->stream);
      });
    } else {
      // Counts only: a run-length encoding of the sorted keys (no 56-byte sums to move).
      m->b_counts.grow(cn);
      m->cub.run([&](void* t, size_t& bytes) {
        return cub::DeviceRunLengthEncode::Encode(t, bytes, keys.Current(), m->b_unique.data(), m->b_counts.data(),
                                                  m->b_runs.data(), int64_t(cn), m->stream);
      });
    }
    timer.begin("download");
    int64_t runs = 0;
    VT_CUDA_CHECK(cudaMemcpyAsync(&runs, m->b_runs.data(), sizeof(runs), cudaMemcpyDeviceToHost, m->stream));
    VT_CUDA_CHECK(cudaStreamSynchronize(m->stream));
    part.keys.resize(size_t(runs));
    m->staging.download(part.keys.data(), m->b_unique.data(), size_t(runs) * sizeof(uint64_t), m->stream);
    part.counts.resize(size_t(runs));
    if (has_c || has_n) {
      part.sums.resize(size_t(runs));
      m->staging.download(part.sums.data(), m->b_acc.data(), size_t(runs) * sizeof(VoxelAcc), m->stream);
      tbb::parallel_for(size_t(0), size_t(runs), [&](size_t r) { part.counts[r] = uint32_t(part.sums[r].count); });
    } else {
      m->staging.download(part.counts.data(), m->b_counts.data(), size_t(runs) * sizeof(uint32_t), m->stream);
    }
    if (!part.keys.empty() && part.keys.back() == outside) {
      part.outside = part.counts.back();
      part.keys.pop_back();
      part.counts.pop_back();
      if (!part.sums.empty()) part.sums.pop_back();
    }
    parts.push_back(std::move(part));
  }
  const auto ms = timer.resolve();
  if (stage_ms) *stage_ms = ms;
  if (parts.size() == 1) return std::move(parts[0]);
  // Several chunks: merge their sorted bins (the sums are exact, so the order does not matter).
  VoxelBins merged;
  std::vector<std::tuple<uint64_t, size_t, size_t>> all;  // key, part, index
  for (size_t q = 0; q < parts.size(); ++q) {
    merged.outside += parts[q].outside;
    for (size_t i = 0; i < parts[q].keys.size(); ++i) all.emplace_back(parts[q].keys[i], q, i);
  }
  std::sort(all.begin(), all.end());
  const bool attrs = has_c || has_n;
  for (size_t i = 0; i < all.size();) {
    const auto [key, q0, i0] = all[i];
    uint64_t count = parts[q0].counts[i0];
    VoxelAcc a = attrs ? parts[q0].sums[i0] : VoxelAcc{};
    size_t j = i + 1;
    for (; j < all.size() && std::get<0>(all[j]) == key; ++j) {
      count += parts[std::get<1>(all[j])].counts[std::get<2>(all[j])];
      if (attrs) a = a + parts[std::get<1>(all[j])].sums[std::get<2>(all[j])];
    }
    if (count > 0xffffffffu) fail(ErrorKind::kInput, "more than 2^32 points in one voxel");
    merged.keys.push_back(key);
    merged.counts.push_back(uint32_t(count));
    if (attrs) merged.sums.push_back(a);
    i = j;
  }
  return merged;
}

}  // namespace voxtile
