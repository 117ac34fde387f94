// The bucketing pipeline's device workspace (needs nvcc): buffers that only grow, kept from call to
// call. Its stages are in kernels/bucket/bucket.cu; the pipeline that runs them, pipeline.cu.
#pragma once

#include "core/bucket.h"
#include "kernels/bucket/stages.cuh"
#include "kernels/common.cuh"

namespace voxtile {

struct GpuContext;
struct DeviceMesh;

struct BucketState {
  // Triangles: descriptors and ids (double-buffered for the sort), small/large counters, chunks.
  DeviceBuffer<uint32_t> d_desc[2], d_ids[2], d_counters, d_chunks[2];
  // Fragments: (voxel, triangle) keys and triangles (double-buffered), their count, voxel run starts.
  DeviceBuffer<uint64_t> d_frag_keys[2];
  DeviceBuffer<uint32_t> d_frag_tris[2], d_starts;
  DeviceBuffer<unsigned long long> d_count;
  // Outputs: voxels, offsets, and the attributes per fragment.
  DeviceBuffer<int32_t> d_ijk, d_triangle, d_material;
  DeviceBuffer<int64_t> d_offsets;
  DeviceBuffer<float> d_bary, d_normal, d_uv;
  // Attribute sources: vertex normals and texture coordinates, triangle materials.
  DeviceBuffer<Vec3f> d_vertex_normals;
  DeviceBuffer<Vec2f> d_vertex_uvs;
  DeviceBuffer<uint32_t> d_materials;
  uint64_t frag_capacity = 0;

  // Uploads the attribute sources `options` needs.
  void upload_attributes(GpuContext& ctx, const Mesh& mesh, uint32_t attrs);
  // Buckets of the x-slab [x0, x1] appended to `out`; false when its fragments exceed max_frags.
  bool bucket_slab(GpuContext& ctx, const DeviceMesh& mesh, const GridSpec& spec, const BucketOptions& o, int32_t x0,
                   int32_t x1, int tri_bits, int vox_bits, uint64_t max_frags, Buckets& out, StageTimer& timer);
};

}  // namespace voxtile
