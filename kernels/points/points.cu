// Points to voxels on the GPU: a 64-bit voxel key per point (core/points.h), a radix sort of
// (key, point) pairs on the key bits in use, and a reduce-by-key of exact integer sums (count,
// colour, fixed-point normal, intensity), so the bins equal bin_points_cpu's whatever the order of
// the points. With classes the sort key is (voxel key << 8 | class): the voxels' runs are reduced
// through key >> 8, and the runs of each class are counted for the majority (on the host).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <tuple>

#include "kernels/points/state.cuh"

namespace voxtile {
namespace {

template <class V>
__global__ void key_kernel(const V* pos, const uint8_t* classes, uint64_t n, GridView view, uint64_t outside,
                           uint64_t* keys, uint32_t* idx) {
  const int shift = classes ? kClassBits : 0;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t k = view.key(pos[i]);
    keys[i] = k == kOutsideGrid ? outside << shift : (k << shift) | (classes ? classes[i] : 0);
    idx[i] = uint32_t(i);
  }
}

struct AccOf {
  PointAttrs at;
  __device__ VoxelAcc operator()(uint32_t i) const { return point_acc(at, i); }
};
struct VoxelOf {  // the voxel key of a (key << shift | class) sort key
  int shift;
  __device__ uint64_t operator()(uint64_t k) const { return k >> shift; }
};
// A (voxel, class) run's class_vote: the largest of a voxel's is its majority class.
struct VoteOf {
  const uint64_t* keys;
  const uint32_t* counts;
  __device__ uint64_t operator()(int64_t r) const { return class_vote(keys[r], counts[r]); }
};
struct VoteMax {
  __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a > b ? a : b; }
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
  const bool has_c = !points.colors.empty(), has_n = !points.normals.empty(), has_i = !points.intensity.empty();
  const bool has_k = !points.classes.empty(), exact = !points.positions64.empty();
  const bool attrs = has_c || has_n || has_i;
  if (has_k && bits + kClassBits >= 63) fail(ErrorKind::kUsage, "grid too large to bin point classes (voxel keys over 55 bits)");
  const int shift = has_k ? kClassBits : 0;
  // Bytes per point on the device: position, colour, normal, intensity, class, 2 x (key, index),
  // unique key and sums, class runs.
  const uint64_t per_point = (exact ? 24 : 12) + (has_c ? 3 : 0) + (has_n ? 12 : 0) + (has_i ? 2 : 0) +
                             (has_k ? 1 + 12 + 8 : 0) + 2 * 12 + 8 + sizeof(VoxelAcc) + 8;
  uint64_t chunk = std::max<uint64_t>(1 << 20, m->memory_budget() / per_point / 2 * 2);
  chunk = std::min<uint64_t>(chunk, uint64_t(1) << 30);
  StageTimer timer(m->stream);
  std::vector<VoxelBins> parts;
  std::vector<std::vector<uint64_t>> part_class_keys;  // per chunk: runs of (key << 8 | class) and their counts
  std::vector<std::vector<uint32_t>> part_class_counts;
  for (uint64_t c0 = 0; c0 < n || (n == 0 && parts.empty()); c0 += chunk) {
    const uint64_t cn = std::min(chunk, n - c0);
    VoxelBins part;
    if (cn == 0) {
      parts.push_back(part);
      break;
    }
    timer.begin("upload");
    if (exact) {
      m->b_pos64.grow(cn);
      m->staging.upload(m->b_pos64.data(), points.positions64.data() + c0, cn * sizeof(Vec3d), m->stream);
    } else {
      m->b_pos.grow(cn);
      m->staging.upload(m->b_pos.data(), points.positions.data() + c0, cn * sizeof(Vec3f), m->stream);
    }
    if (has_i) {
      m->b_intensity.grow(cn);
      m->staging.upload(m->b_intensity.data(), points.intensity.data() + c0, cn * sizeof(uint16_t), m->stream);
    }
    if (has_k) {
      m->b_classes.grow(cn);
      m->staging.upload(m->b_classes.data(), points.classes.data() + c0, cn, m->stream);
    }
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
    m->b_runs.grow(2);
    timer.begin("keys");
    const unsigned blocks = unsigned(std::min<uint64_t>((cn + 255) / 256, 65536));
    const uint8_t* cls = has_k ? m->b_classes.data() : nullptr;
    if (exact)
      key_kernel<<<blocks, 256, 0, m->stream>>>(m->b_pos64.data(), cls, cn, view, outside, m->b_keys[0].data(),
                                                m->b_idx[0].data());
    else
      key_kernel<<<blocks, 256, 0, m->stream>>>(m->b_pos.data(), cls, cn, view, outside, m->b_keys[0].data(),
                                                m->b_idx[0].data());
    VT_CUDA_CHECK_LAUNCH();
    timer.begin("sort");
    cub::DoubleBuffer<uint64_t> keys(m->b_keys[0].data(), m->b_keys[1].data());
    cub::DoubleBuffer<uint32_t> idx(m->b_idx[0].data(), m->b_idx[1].data());
    m->cub.run([&](void* t, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(t, bytes, keys, idx, int64_t(cn), 0, bits + 1 + shift, m->stream);
    });
    timer.begin("reduce");
    const auto voxel_keys = thrust::make_transform_iterator(keys.Current(), VoxelOf{shift});
    if (attrs) {
      PointAttrs at;
      if (has_c) at.colors = m->b_colors.data();
      if (has_n) at.normals = m->b_normals.data();
      if (has_i) at.intensity = m->b_intensity.data();
      auto values = thrust::make_transform_iterator(idx.Current(), AccOf{at});
      m->cub.run([&](void* t, size_t& bytes) {
        return cub::DeviceReduce::ReduceByKey(t, bytes, voxel_keys, m->b_unique.data(), values, m->b_acc.data(),
                                              m->b_runs.data(), AccSum{}, int64_t(cn), m->stream);
      });
    } else {
      // Counts only: a run-length encoding of the sorted keys (no 64-byte sums to move).
      m->b_counts.grow(cn);
      m->cub.run([&](void* t, size_t& bytes) {
        return cub::DeviceRunLengthEncode::Encode(t, bytes, voxel_keys, m->b_unique.data(), m->b_counts.data(),
                                                  m->b_runs.data(), int64_t(cn), m->stream);
      });
    }
    int64_t runs = 0, class_runs = 0;
    VT_CUDA_CHECK(cudaMemcpyAsync(&runs, m->b_runs.data(), sizeof(runs), cudaMemcpyDeviceToHost, m->stream));
    std::vector<uint64_t> class_keys;
    std::vector<uint32_t> class_counts;
    // With one chunk the majority is taken here (8 bytes per voxel to download); several chunks
    // download their (voxel, class) runs, merged on the host.
    const bool vote_here = has_k && cn == n;
    if (has_k) {  // points per (voxel, class): the runs of the sort keys
      m->b_class_keys.grow(cn);
      m->b_class_counts.grow(cn);
      m->cub.run([&](void* t, size_t& bytes) {
        return cub::DeviceRunLengthEncode::Encode(t, bytes, keys.Current(), m->b_class_keys.data(),
                                                  m->b_class_counts.data(), m->b_runs.data() + 1, int64_t(cn), m->stream);
      });
      VT_CUDA_CHECK(cudaMemcpyAsync(&class_runs, m->b_runs.data() + 1, sizeof(class_runs), cudaMemcpyDeviceToHost, m->stream));
      if (vote_here) {
        VT_CUDA_CHECK(cudaStreamSynchronize(m->stream));
        m->b_votes.grow(cn);
        auto run_voxels = thrust::make_transform_iterator(m->b_class_keys.data(), VoxelOf{shift});
        auto votes = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                                     VoteOf{m->b_class_keys.data(), m->b_class_counts.data()});
        m->cub.run([&](void* t, size_t& bytes) {
          return cub::DeviceReduce::ReduceByKey(t, bytes, run_voxels, thrust::make_discard_iterator(), votes,
                                                m->b_votes.data(), m->b_runs.data() + 1, VoteMax{}, class_runs, m->stream);
        });
      }
    }
    timer.begin("download");
    VT_CUDA_CHECK(cudaStreamSynchronize(m->stream));
    part.keys.resize(size_t(runs));
    m->staging.download(part.keys.data(), m->b_unique.data(), size_t(runs) * sizeof(uint64_t), m->stream);
    if (vote_here) {
      ValueArray<uint64_t> votes(static_cast<size_t>(runs));
      m->staging.download(votes.data(), m->b_votes.data(), size_t(runs) * sizeof(uint64_t), m->stream);
      part.classes.resize(size_t(runs));
      tbb::parallel_for(size_t(0), size_t(runs), [&](size_t r) { part.classes[r] = vote_class(votes[r]); });
    } else if (has_k) {
      class_keys.resize(size_t(class_runs));
      class_counts.resize(size_t(class_runs));
      m->staging.download(class_keys.data(), m->b_class_keys.data(), size_t(class_runs) * sizeof(uint64_t), m->stream);
      m->staging.download(class_counts.data(), m->b_class_counts.data(), size_t(class_runs) * sizeof(uint32_t), m->stream);
    }
    part.counts.resize(size_t(runs));
    if (attrs) {
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
      if (vote_here) part.classes.pop_back();
      if (has_k && !vote_here) class_keys.pop_back(), class_counts.pop_back();  // the outside points: one run (class 0)
    }
    if (has_k && !vote_here) {
      part_class_keys.push_back(std::move(class_keys));
      part_class_counts.push_back(std::move(class_counts));
    }
    parts.push_back(std::move(part));
  }
  const auto ms = timer.resolve();
  if (stage_ms) *stage_ms = ms;
  if (parts.size() == 1) {
    if (has_k && !part_class_keys.empty()) majority_classes(part_class_keys[0].data(), part_class_counts[0].data(), part_class_keys[0].size(), parts[0]);
    return std::move(parts[0]);
  }
  // Several chunks: merge their sorted bins (the sums are exact, so the order does not matter).
  VoxelBins merged;
  std::vector<std::tuple<uint64_t, size_t, size_t>> all;  // key, part, index
  for (size_t q = 0; q < parts.size(); ++q) {
    merged.outside += parts[q].outside;
    for (size_t i = 0; i < parts[q].keys.size(); ++i) all.emplace_back(parts[q].keys[i], q, i);
  }
  std::sort(all.begin(), all.end());
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
  if (has_k) {  // the chunks' class runs merged the same way
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (size_t q = 0; q < part_class_keys.size(); ++q)
      for (size_t r = 0; r < part_class_keys[q].size(); ++r) runs.emplace_back(part_class_keys[q][r], part_class_counts[q][r]);
    std::sort(runs.begin(), runs.end());
    std::vector<uint64_t> keys;
    std::vector<uint32_t> counts;
    for (size_t r = 0; r < runs.size(); ++r) {
      if (!keys.empty() && keys.back() == runs[r].first) {
        counts.back() += uint32_t(runs[r].second);  // <= the voxel's count, checked above
      } else {
        keys.push_back(runs[r].first);
        counts.push_back(uint32_t(runs[r].second));
      }
    }
    majority_classes(keys.data(), counts.data(), keys.size(), merged);
  }
  return merged;
}

}  // namespace voxtile
