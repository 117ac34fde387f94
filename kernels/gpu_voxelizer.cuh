// The GPU backend of Voxelizer (needs nvcc): the device context and mesh shared by its two
// pipelines, and each pipeline's own workspace (kernels/voxelize/state.cuh, kernels/bucket/state.cuh).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kernels/api.h"
#include "kernels/bucket/state.cuh"
#include "kernels/common.cuh"
#include "kernels/mesh.cuh"
#include "kernels/solid/state.cuh"
#include "kernels/testing.h"
#include "kernels/voxelize/state.cuh"

namespace voxtile {

// What both pipelines use: the device, its stream, CUB's temporaries, pinned staging, and the
// compaction workspace behind select_run_starts.
struct GpuContext {
  GpuOptions opt;
  int num_sms = 0;
  std::string name;
  cudaStream_t stream = nullptr;
  CubTemp cub;
  StagedCopy staging;
  CompactWorkspace runs;

  void download(void* dst, const void* src, size_t n) { staging.download(dst, src, n, stream); }
  // Appends n device elements to a host vector.
  template <class T, class A>
  void append_download(std::vector<T, A>& dst, const T* src, size_t n) {
    const size_t old = dst.size();
    dst.resize(old + n);
    download(dst.data() + old, src, n * sizeof(T));
  }
  // The pipeline's memory budget: the option, else 80% of the free memory (asking the driver).
  uint64_t memory_budget() const;
  // Whether `bytes` fit the budget: without asking the driver where they are under 1/64 of the
  // free memory it reported last (on an H100 machine cudaMemGetInfo took the host 17-20 us, on the
  // critical path of a small job, whose GPU waits on the host's calls).
  bool fits_budget(uint64_t bytes) const;
  mutable uint64_t known_free = 0;  // the free memory at the last memory_budget()
};

// Records the stages, then PREFIX "gpu_total" (their sum) and PREFIX "wall" (host time since wall0).
void add_gpu_stages(VoxelizeStats& stats, const std::vector<std::pair<std::string, double>>& stage_ms,
                    std::chrono::steady_clock::time_point wall0, const std::string& prefix = "");

class GpuVoxelizer final : public Voxelizer {
 public:
  explicit GpuVoxelizer(const GpuOptions& options);
  ~GpuVoxelizer() override;
  const std::string& device_name() const override { return m_ctx.name; }
  bool on_gpu() const override { return true; }
  int gpu_index() const override { return m_ctx.opt.device; }
  // Tests: when set, the voxelization records its intermediate results here.
  GpuStageProbe* probe = nullptr;
  // Tests: the sdf search's tree for the loaded mesh (gpu_band_tree).
  BandTree band_tree(const GridSpec& spec, int band);
  // Tests: the inside test of the loaded mesh (gpu_inside_centres).
  SparseGrid inside_for_tests(const GridSpec& spec, InsideMethod method, const SparseGrid* only) {
    VoxelizeStats st;
    return inside_centres(spec, method, st, only);
  }

 protected:
  void load_mesh(const Mesh& mesh) override;
  std::vector<SparseGrid> raster(const GridSpec& spec, const VoxelizeOptions& options,
                                 const std::vector<TargetSpec>& targets, VoxelizeStats& stats) override;
  Buckets bucket_mesh(const GridSpec& spec, const BucketOptions& options, VoxelizeStats& stats) override;
  SparseGrid inside_centres(const GridSpec& spec, InsideMethod method, VoxelizeStats& stats,
                            const SparseGrid* only) override;
  SparseGrid band_distance(const GridSpec& spec, int band, VoxelizeStats& stats) override;

 private:
  // Fills the stage timings: upload, each stage, gpu_total (their sum) and wall since wall0.
  void add_stage_stats(VoxelizeStats& stats, const std::vector<std::pair<std::string, double>>& stage_ms,
                       std::chrono::steady_clock::time_point wall0) const;
  GpuContext m_ctx;
  DeviceMesh m_mesh;
  // core/mesh.h neighbour_distances of the loaded mesh where the scatter rule reads them (meshes of
  // more than kScatterMaxTriangles triangles); empty otherwise.
  std::vector<float> m_neighbours;
  VoxelizeState m_voxelize;
  BucketState m_bucket;
  SolidState m_solid;
};

}  // namespace voxtile
