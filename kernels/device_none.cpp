// GPU interface of a build without a CUDA compiler: no device is ever available.
#include "kernels/api.h"

#include "core/error.h"

namespace voxtile {

bool gpu_compiled() { return false; }

int gpu_count() { return 0; }

GpuInfo query_gpu(int) {
  GpuInfo info;
  info.reason = "this voxtile was built without CUDA";
  return info;
}

struct GpuVoxelizer::Impl {};
GpuVoxelizer::GpuVoxelizer(const GpuOptions&) : m(nullptr) {
  fail(ErrorKind::kResource, "this voxtile was built without CUDA");
}
GpuVoxelizer::~GpuVoxelizer() = default;
void GpuVoxelizer::set_mesh(const Mesh&) {}
SparseGrid GpuVoxelizer::voxelize(const GridSpec&, const VoxelizeOptions&, VoxelizeStats*) { return {}; }
std::vector<SparseGrid> GpuVoxelizer::voxelize_targets(const GridSpec&, const VoxelizeOptions&,
                                                       const std::vector<TargetSpec>&, VoxelizeStats*) {
  return {};
}
Buckets GpuVoxelizer::bucket(const Mesh&, const GridSpec&, const BucketOptions&, VoxelizeStats*) { return {}; }
struct GpuPoints::Impl {};
GpuPoints::GpuPoints(int, int, uint64_t) : m(nullptr) { fail(ErrorKind::kResource, "this voxtile was built without CUDA"); }
GpuPoints::~GpuPoints() = default;
CsgSamples GpuPoints::csg(const CsgScript&, const CsgSamples&, uint32_t, CsgStats*) { return {}; }
SparseGrid GpuPoints::solid(const CsgScript&, const GridSpec&, CsgStats*) { return {}; }
VoxelBins GpuPoints::bin(const PointCloud&, const GridSpec&, std::vector<std::pair<std::string, double>>*) { return {}; }
void GpuPoints::bench_load(const Vec3f*, const SampleParams*, uint64_t, const CsgPrimitive*, uint32_t) {}
std::vector<std::pair<std::string, double>> GpuPoints::bench_step(const CsgPrimitive*, uint32_t, const Vec3f*,
                                                                  const SampleParams*, uint64_t, uint64_t*) {
  return {};
}
const std::string& GpuPoints::device_name() const {
  static const std::string none;
  return none;
}
std::vector<uint64_t> gpu_select_indices(const std::vector<uint8_t>&, int, int) {
  fail(ErrorKind::kResource, "this voxtile was built without CUDA");
}
double gpu_copy_bandwidth(int) { fail(ErrorKind::kResource, "this voxtile was built without CUDA"); }
CompactionCheck gpu_compaction_selftest(uint64_t, uint32_t, uint32_t, int, int) {
  fail(ErrorKind::kResource, "this voxtile was built without CUDA");
}

const std::string& GpuVoxelizer::device_name() const {
  static const std::string none;
  return none;
}

}  // namespace voxtile
