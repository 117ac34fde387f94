// The mesh on the device (needs nvcc), shared by the voxelization and bucketing pipelines: world
// positions and indices as uploaded, and grid-space positions from the transform stage.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/mesh.h"
#include "core/overlap.h"
#include "core/vec.h"
#include "kernels/common.cuh"

namespace voxtile {

// What the stages read of the mesh.
struct MeshView {
  const Vec3f* d_grid;        // num_vertices grid-space positions
  const uint32_t* d_indices;  // 3 * num_triangles
};

// Triangle `tri`'s grid-space corners.
__device__ inline void load_corners(const MeshView& m, uint64_t tri, Vec3f out[3]) {
  for (int c = 0; c < 3; ++c) out[c] = m.d_grid[m.d_indices[3 * tri + c]];
}
// Triangle `tri` set up for the overlap tests (core/overlap.h), from its grid-space corners.
__device__ inline TriSetup load_triangle(const MeshView& m, uint32_t tri) {
  Vec3f v[3];
  load_corners(m, tri, v);
  return setup_triangle(v[0], v[1], v[2]);
}

struct DeviceMesh {
  DeviceBuffer<Vec3f> d_world, d_grid;
  DeviceBuffer<uint32_t> d_indices;
  uint64_t num_vertices = 0, num_tris = 0;
  double upload_ms = 0;

  // Uploads positions and indices (throws Error(kResource) beyond 2^32 - 1 triangles).
  void upload(const Mesh& mesh, StagedCopy& staging, cudaStream_t stream);
  // Transform stage: d_grid = world_to_grid(d_world) (core/grid_spec.h), as on the CPU.
  void transform(const Vec3d& origin, const Vec3d& voxel_size, cudaStream_t stream);
  MeshView view() const { return {d_grid.data(), d_indices.data()}; }
};

}  // namespace voxtile
