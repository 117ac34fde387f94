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
const std::string& GpuVoxelizer::device_name() const {
  static const std::string none;
  return none;
}

}  // namespace voxtile
