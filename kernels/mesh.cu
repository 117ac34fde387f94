// The mesh on the device: upload and the transform stage.
#include "kernels/mesh.cuh"

#include <algorithm>

#include "core/grid_spec.h"
#include "core/timer.h"

namespace voxtile {
namespace {

__global__ void transform_kernel(const Vec3f* __restrict__ world, Vec3f* __restrict__ grid, uint64_t n, Vec3d origin,
                                 Vec3d size) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Vec3f p = world[i];
  grid[i] = world_to_grid({double(p.x), double(p.y), double(p.z)}, origin, size);
}

}  // namespace

void DeviceMesh::upload(const Mesh& mesh, StagedCopy& staging, cudaStream_t stream) {
  const auto t0 = Clock::now();
  if (mesh.num_triangles() >= (uint64_t(1) << 32) - 1) fail(ErrorKind::kResource, "more than 2^32 triangles");
  num_vertices = mesh.positions.size();
  num_tris = mesh.num_triangles();
  d_world.grow(std::max<uint64_t>(1, num_vertices));
  d_grid.grow(std::max<uint64_t>(1, num_vertices));
  d_indices.grow(std::max<uint64_t>(1, mesh.indices.size()));
  staging.upload(d_world.data(), mesh.positions.data(), num_vertices * sizeof(Vec3f), stream);
  staging.upload(d_indices.data(), mesh.indices.data(), mesh.indices.size() * sizeof(uint32_t), stream);
  VT_CUDA_CHECK(cudaStreamSynchronize(stream));
  upload_ms = ms_since(t0);
}

void DeviceMesh::transform(const Vec3d& origin, const Vec3d& voxel_size, cudaStream_t stream) {
  launch_1d(transform_kernel, num_vertices, 256, stream, d_world.data(), d_grid.data(), num_vertices, origin, voxel_size);
}

}  // namespace voxtile
