// A-buffer bucketing on the GPU (VoxelPipe section 4): transform, classify triangles by size and
// orientation, sort them by descriptor (CUB, 6 bits), emit fragments (small triangles one per
// thread, large ones one per warp, one global atomic per group of lanes that emit together),
// sort the fragments by (voxel, triangle), run-length encode the voxels, compute the attributes,
// download. Fragment buffers are sized by detect-and-retry; when a grid's fragments exceed the
// memory budget it is cut into x-slabs, whose results follow one another in the output order.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <chrono>
#include <deque>

#include "kernels/compact.cuh"
#include "kernels/gpu_voxelizer.cuh"

namespace voxtile {

void BucketState::upload_attributes(GpuContext& ctx, const Mesh& mesh, uint32_t attrs) {
  cudaStream_t s = ctx.stream;
  d_vertex_normals = DeviceBuffer<Vec3f>();
  d_materials = DeviceBuffer<uint32_t>();
  if ((attrs & kAttrNormal) && !mesh.normals.empty()) {
    d_vertex_normals.grow(mesh.normals.size());
    VT_CUDA_CHECK(cudaMemcpyAsync(d_vertex_normals.data(), mesh.normals.data(), mesh.normals.size() * sizeof(Vec3f),
                                  cudaMemcpyHostToDevice, s));
  }
  if (attrs & kAttrUv) {
    d_vertex_uvs.grow(mesh.uvs.size());
    VT_CUDA_CHECK(
        cudaMemcpyAsync(d_vertex_uvs.data(), mesh.uvs.data(), mesh.uvs.size() * sizeof(Vec2f), cudaMemcpyHostToDevice, s));
  }
  if ((attrs & kAttrMaterial) && !mesh.material_ids.empty()) {
    d_materials.grow(mesh.material_ids.size());
    VT_CUDA_CHECK(cudaMemcpyAsync(d_materials.data(), mesh.material_ids.data(),
                                  mesh.material_ids.size() * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
  }
}

bool BucketState::bucket_slab(GpuContext& ctx, const DeviceMesh& mesh, const GridSpec& spec, const BucketOptions& o,
                              int32_t x0, int32_t x1, int tri_bits, int vox_bits, uint64_t max_frags, Buckets& out,
                              StageTimer& timer) {
  cudaStream_t s = ctx.stream;
  const uint64_t num_tris = mesh.num_tris;
  const bool combined = vox_bits + tri_bits <= 64 && !ctx.opt.two_pass_fragment_sort;
  BucketParams p;
  p.mesh = mesh.view();
  p.num_tris = uint32_t(num_tris);
  p.dims = spec.dims;
  p.clip = {{x0, 0, 0}, {x1, spec.dims.y - 1, spec.dims.z - 1}};
  p.mode = o.mode;
  p.tri_bits = combined ? tri_bits : 0;

  timer.begin("classify");
  const uint64_t nt = std::max<uint64_t>(1, num_tris);
  for (int b = 0; b < 2; ++b) {
    d_desc[b].grow(nt);
    d_ids[b].grow(nt);
  }
  d_counters.grow(2);
  launch_bucket_classify(p, d_desc[0].data(), d_ids[0].data(), d_counters.data(), s);
  uint32_t counters[2] = {0, 0};
  VT_CUDA_CHECK(cudaMemcpyAsync(counters, d_counters.data(), sizeof(counters), cudaMemcpyDeviceToHost, s));
  VT_CUDA_CHECK(cudaStreamSynchronize(s));
  timer.begin("sort_triangles");
  cub::DoubleBuffer<uint32_t> dd(d_desc[0].data(), d_desc[1].data()), di(d_ids[0].data(), d_ids[1].data());
  if (num_tris)
    ctx.cub.run([&](void* temp, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(temp, bytes, dd, di, int(num_tris), 0, 6, s);
    });

  timer.begin("emit");
  // Large triangles: a warp per 32-row chunk.
  d_chunks[0].grow(uint64_t(counters[1]) + 1);
  d_chunks[1].grow(uint64_t(counters[1]) + 1);
  launch_bucket_chunks(p, di.Current(), counters[0], counters[1], d_chunks[0].data(), s);
  ctx.cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, d_chunks[0].data(), d_chunks[1].data(), int(counters[1] + 1), s);
  });
  const uint32_t num_chunks = read_scalar(d_chunks[1].data() + counters[1], s);
  if (!frag_capacity) frag_capacity = std::min<uint64_t>(max_frags, std::max<uint64_t>(uint64_t(1) << 20, 8 * num_tris));
  uint64_t n = 0;
  for (int attempt = 0;; ++attempt) {
    for (int b = 0; b < 2; ++b) {
      d_frag_keys[b].grow(frag_capacity);
      d_frag_tris[b].grow(frag_capacity);
    }
    d_count.grow(1);
    VT_CUDA_CHECK(cudaMemsetAsync(d_count.data(), 0, sizeof(unsigned long long), s));
    p.d_keys = d_frag_keys[0].data();
    p.d_tris = d_frag_tris[0].data();
    p.d_count = d_count.data();
    p.capacity = frag_capacity;
    launch_bucket_emit(p, di.Current(), counters[0], counters[1], d_chunks[1].data(), num_chunks, s);
    n = read_scalar(d_count.data(), s);
    if (n <= frag_capacity) break;
    if (n > max_frags) return false;  // split the slab
    if (attempt > 0) fail(ErrorKind::kInternal, "GPU fragment buffer overflowed twice");
    frag_capacity = std::min<uint64_t>(max_frags, n + n / 8);
  }

  timer.begin("sort_fragments");
  cub::DoubleBuffer<uint64_t> dk(d_frag_keys[0].data(), d_frag_keys[1].data());
  cub::DoubleBuffer<uint32_t> dt(d_frag_tris[0].data(), d_frag_tris[1].data());
  if (n) {
    if (combined) {
      ctx.cub.run([&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortKeys(temp, bytes, dk, int(n), 0, vox_bits + tri_bits, s);
      });
    } else {
      // By triangle, then stably by voxel: (voxel, triangle) order.
      ctx.cub.run([&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, dt, dk, int(n), 0, tri_bits, s);
      });
      ctx.cub.run([&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dt, int(n), 0, vox_bits, s);
      });
    }
  }

  timer.begin("rle");
  d_starts.grow(std::max<uint64_t>(1, n));
  select_run_starts(ctx.runs, n, FragmentVoxel{dk.Current(), p.tri_bits}, d_starts.data(), s);
  const uint64_t nv = read_scalar(ctx.runs.total(), s);
  d_ijk.grow(std::max<uint64_t>(1, 3 * nv));
  d_offsets.grow(nv + 1);
  launch_bucket_voxels(p, nv, n, dk.Current(), d_starts.data(), d_ijk.data(), d_offsets.data(), s);

  timer.begin("attributes");
  const uint64_t nf = std::max<uint64_t>(1, n);
  BucketAttrs a{};
  a.attrs = o.attrs;
  a.voxel_size = {float(spec.voxel_size.x), float(spec.voxel_size.y), float(spec.voxel_size.z)};
  d_triangle.grow(nf);
  a.triangle = d_triangle.data();
  if (o.attrs & kAttrBary) a.bary = (d_bary.grow(3 * nf), d_bary.data());
  if (o.attrs & kAttrNormal) a.normal = (d_normal.grow(3 * nf), d_normal.data());
  if (o.attrs & kAttrUv) a.uv = (d_uv.grow(2 * nf), d_uv.data());
  if (o.attrs & kAttrMaterial) a.material = (d_material.grow(nf), d_material.data());
  a.normals = d_vertex_normals.capacity() ? d_vertex_normals.data() : nullptr;
  a.uvs = d_vertex_uvs.data();
  a.materials = d_materials.capacity() ? d_materials.data() : nullptr;
  launch_bucket_fragments(p, a, n, dk.Current(), dt.Current(), s);

  timer.begin("download");
  const size_t base_voxels = out.num_voxels();
  const int64_t base = out.offsets.empty() ? 0 : out.offsets.back();
  if (!out.offsets.empty()) out.offsets.pop_back();
  ctx.append_download(out.ijk, d_ijk.data(), 3 * nv);
  ctx.append_download(out.offsets, d_offsets.data(), nv + 1);
  for (size_t v = base_voxels; v < out.offsets.size(); ++v) out.offsets[v] += base;
  ctx.append_download(out.triangle, d_triangle.data(), n);
  if (o.attrs & kAttrBary) ctx.append_download(out.bary, d_bary.data(), 3 * n);
  if (o.attrs & kAttrNormal) ctx.append_download(out.normal, d_normal.data(), 3 * n);
  if (o.attrs & kAttrUv) ctx.append_download(out.uv, d_uv.data(), 2 * n);
  if (o.attrs & kAttrMaterial) ctx.append_download(out.material, d_material.data(), n);
  return true;
}

Buckets GpuVoxelizer::bucket_mesh(const GridSpec& spec, const BucketOptions& o, VoxelizeStats& stats) {
  VT_CUDA_CHECK(cudaSetDevice(m_ctx.opt.device));
  cudaStream_t s = m_ctx.stream;
  const auto wall0 = std::chrono::steady_clock::now();
  m_bucket.upload_attributes(m_ctx, mesh(), o.attrs);
  StageTimer timer(s);
  timer.begin("transform");
  m_mesh.transform(spec.origin, spec.voxel_size, s);

  const int tri_bits = bits_for(std::max<uint64_t>(1, m_mesh.num_tris));
  const int vox_bits = bits_for(uint64_t(spec.dims.x) * uint64_t(spec.dims.y) * uint64_t(spec.dims.z));
  const uint64_t budget = m_ctx.memory_budget();
  // Per fragment: keys and triangles double-buffered, sort temporaries, run flags, starts, outputs.
  const uint64_t per_fragment = 2 * 8 + 2 * 4 + 12 + 1 + 4 + 4 + 12 * 2 + 8 + 4 + 20;
  uint64_t max_frags = std::min<uint64_t>(budget / per_fragment, (uint64_t(1) << 31) - 1);
  if (m_ctx.opt.max_batch_pairs) max_frags = std::min<uint64_t>(max_frags, m_ctx.opt.max_batch_pairs);  // tests: force slabs
  if (max_frags < 1024) fail(ErrorKind::kResource, "the GPU memory budget is too small for bucketing");
  if (m_ctx.opt.max_batch_pairs) m_bucket.frag_capacity = 0;

  Buckets out;
  out.spec = spec;
  out.attrs = o.attrs;
  std::deque<std::pair<int32_t, int32_t>> slabs{{0, spec.dims.x - 1}};
  uint64_t num_slabs = 0;
  while (!slabs.empty()) {
    const auto [x0, x1] = slabs.front();
    slabs.pop_front();
    if (m_bucket.bucket_slab(m_ctx, m_mesh, spec, o, x0, x1, tri_bits, vox_bits, max_frags, out, timer)) {
      ++num_slabs;
      continue;
    }
    if (x0 == x1) fail(ErrorKind::kResource, "one x-slice of the grid has more fragments than the GPU memory budget allows");
    const int32_t mid = x0 + (x1 - x0) / 2;
    slabs.push_front({mid + 1, x1});
    slabs.push_front({x0, mid});
  }
  if (out.offsets.empty()) out.offsets.push_back(0);
  timer.end();
  const auto stage_ms = timer.resolve();
  stats.tiles = num_slabs;
  add_stage_stats(stats, stage_ms, wall0);
  return out;
}

}  // namespace voxtile
