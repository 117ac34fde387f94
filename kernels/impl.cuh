// GpuVoxelizer's device state (needs nvcc), shared by the voxelization pipeline (pipeline.cu) and
// A-buffer bucketing (bucket_pipeline.cu): the mesh on the device, workspaces that only grow,
// CUB temporary storage, pinned staging for downloads.
#pragma once

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/bucket.h"
#include "kernels/api.h"
#include "kernels/common.cuh"
#include "kernels/stages.cuh"

namespace voxtile {

// Below this many triangles per virtual tile, value targets raster 16^3 octants per warp.
constexpr uint64_t kSubTileTriangles = 96;

// Grows `buf` to at least n elements, keeping the first `used`.
template <class T>
inline void grow_keep(DeviceBuffer<T>& buf, size_t n, size_t used, cudaStream_t stream) {
  if (n <= buf.capacity()) return;
  DeviceBuffer<T> bigger(n);
  if (used) VT_CUDA_CHECK(cudaMemcpyAsync(bigger.data(), buf.data(), used * sizeof(T), cudaMemcpyDeviceToDevice, stream));
  buf = std::move(bigger);
}

template <class T>
inline T read_scalar(const T* d, cudaStream_t stream) {
  T v{};
  VT_CUDA_CHECK(cudaMemcpyAsync(&v, d, sizeof(T), cudaMemcpyDeviceToHost, stream));
  VT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return v;
}

struct GpuVoxelizer::Impl {
  GpuOptions opt;
  int num_sms = 0;
  std::string name;
  cudaStream_t stream = nullptr;
  uint64_t num_vertices = 0, num_tris = 0;
  double upload_ms = 0;

  DeviceBuffer<Vec3f> world, grid;
  DeviceBuffer<uint32_t> indices;
  DeviceBuffer<uint64_t> counts, offsets;
  DeviceBuffer<uint32_t> large, num_large;
  DeviceBuffer<uint32_t> keys32[2];
  DeviceBuffer<uint64_t> keys64[2];
  DeviceBuffer<uint32_t> tris[2];
  DeviceBuffer<uint8_t> heads;
  DeviceBuffer<uint32_t> tile_begins, vcounts, voffsets, num_selected;
  DeviceBuffer<VirtualTile> vtiles;
  DeviceBuffer<unsigned int> next;
  // Unmerged bricks of one rastered target.
  struct TargetBuffers {
    DeviceBuffer<uint64_t> keys;
    DeviceBuffer<uint32_t> masks, values;
    DeviceBuffer<unsigned long long> count;
  };
  std::vector<std::unique_ptr<TargetBuffers>> tbufs;
  std::vector<TargetSpec> rastered;  // the targets with a fine raster pass in this call
  ShadeConsts consts{};
  DeviceBuffer<uint64_t> bkeys_sorted, out_keys;
  DeviceBuffer<uint32_t> out_masks, iota, perm, starts, out_values;
  CubTemp cub;
  StagedCopy staging;
  void download(void* dst, const void* src, size_t n) { staging.download(dst, src, n, stream); }

  // A-buffer bucketing (bucket_pipeline.cu).
  DeviceBuffer<uint32_t> b_desc[2], b_ids[2], b_counters, b_chunks[2];
  DeviceBuffer<uint64_t> f_keys[2];
  DeviceBuffer<uint32_t> f_tris[2], f_starts;
  DeviceBuffer<unsigned long long> f_count;
  DeviceBuffer<uint8_t> f_heads;
  DeviceBuffer<int32_t> f_ijk, f_triangle, f_material;
  DeviceBuffer<int64_t> f_offsets;
  DeviceBuffer<float> f_bary, f_normal, f_uv;
  DeviceBuffer<Vec3f> v_normals;
  DeviceBuffer<Vec2f> v_uvs;
  DeviceBuffer<uint32_t> t_materials;
  uint64_t frag_capacity = 0;
  // Fills the stage timings: upload, each stage, gpu_total (their sum) and wall since wall0.
  void add_stage_stats(VoxelizeStats* stats, const std::vector<std::pair<std::string, double>>& stage_ms,
                       std::chrono::steady_clock::time_point wall0) const {
    stats->device = name;
    stats->triangles = num_tris;
    stats->add_stage("upload", upload_ms);
    double gpu_total = 0;
    for (const auto& [stage, ms] : stage_ms) {
      stats->add_stage(stage, ms);
      gpu_total += ms;
    }
    stats->add_stage("gpu_total", gpu_total);
    stats->add_stage("wall", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count());
  }
  // Appends n device elements to a host vector.
  template <class T, class A>
  void append_download(std::vector<T, A>& dst, const T* src, size_t n) {
    const size_t old = dst.size();
    dst.resize(old + n);
    download(dst.data() + old, src, n * sizeof(T));
  }
  // Buckets of the x-slab [x0, x1] appended to `out`; false when its fragments exceed max_frags.
  bool bucket_slab(const GridSpec& spec, const BucketOptions& o, int32_t x0, int32_t x1, int tri_bits, int vox_bits,
                   uint64_t max_frags, Buckets& out, StageTimer& timer);

  template <class KeyT>
  void run_batch(DeviceBuffer<KeyT>* keys, const CoarseParams& cp, uint64_t num_pairs, int key_bits,
                 const VoxelizeOptions& o, StageTimer& timer, uint64_t* tiles_out, uint64_t* vtiles_out);
  void fine_target(size_t t, const CoarseParams& cp, const uint32_t* d_tris, uint32_t num_vtiles, uint64_t num_pairs,
                   VoxelMode mode, StageTimer& timer);
  SparseGrid merge_target(size_t t, const GridSpec& spec, StageTimer& timer);
  std::string stage(const char* name, size_t t) const {
    return rastered.size() > 1 ? std::string(name) + ":" + target_spec_name(rastered[t]) : std::string(name);
  }
};

}  // namespace voxtile
