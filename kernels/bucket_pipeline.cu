// A-buffer bucketing on the GPU (VoxelPipe section 4): transform, classify triangles by size and
// orientation, sort them by descriptor (CUB, 6 bits), emit fragments (small triangles one per
// thread, large ones one per warp, one global atomic per group of lanes that emit together),
// sort the fragments by (voxel, triangle), run-length encode the voxels, compute the attributes,
// download. Fragment buffers are sized by detect-and-retry; when a grid's fragments exceed the
// memory budget it is cut into x-slabs, whose results follow one another in the output order.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <chrono>
#include <deque>

#include "kernels/impl.cuh"

namespace voxtile {
namespace {

int bits_for(uint64_t n) {  // bits to hold values 0..n-1 (at least 1)
  int b = 1;
  while (b < 64 && (uint64_t(1) << b) < n) ++b;
  return b;
}

}  // namespace

bool GpuVoxelizer::Impl::bucket_slab(const GridSpec& spec, const BucketOptions& o, int32_t x0, int32_t x1, int tri_bits,
                                     int vox_bits, uint64_t max_frags, Buckets& out, StageTimer& timer) {
  cudaStream_t s = stream;
  const bool combined = vox_bits + tri_bits <= 64 && !opt.two_pass_fragment_sort;
  BucketParams p;
  p.mesh = {grid.data(), indices.data()};
  p.num_tris = uint32_t(num_tris);
  p.dims = spec.dims;
  p.clip = {{x0, 0, 0}, {x1, spec.dims.y - 1, spec.dims.z - 1}};
  p.mode = o.mode;
  p.tri_bits = combined ? tri_bits : 0;

  timer.begin("classify");
  const uint64_t nt = std::max<uint64_t>(1, num_tris);
  for (int b = 0; b < 2; ++b) {
    b_desc[b].grow(nt);
    b_ids[b].grow(nt);
  }
  b_counters.grow(2);
  launch_bucket_classify(p, b_desc[0].data(), b_ids[0].data(), b_counters.data(), s);
  uint32_t counters[2] = {0, 0};
  VT_CUDA_CHECK(cudaMemcpyAsync(counters, b_counters.data(), sizeof(counters), cudaMemcpyDeviceToHost, s));
  VT_CUDA_CHECK(cudaStreamSynchronize(s));
  timer.begin("sort_triangles");
  cub::DoubleBuffer<uint32_t> dd(b_desc[0].data(), b_desc[1].data()), di(b_ids[0].data(), b_ids[1].data());
  if (num_tris)
    cub.run([&](void* temp, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(temp, bytes, dd, di, int(num_tris), 0, 6, s);
    });

  timer.begin("emit");
  // Large triangles: a warp per 32-row chunk.
  b_chunks[0].grow(uint64_t(counters[1]) + 1);
  b_chunks[1].grow(uint64_t(counters[1]) + 1);
  launch_bucket_chunks(p, di.Current(), counters[0], counters[1], b_chunks[0].data(), s);
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, b_chunks[0].data(), b_chunks[1].data(), int(counters[1] + 1), s);
  });
  const uint32_t num_chunks = read_scalar(b_chunks[1].data() + counters[1], s);
  if (!frag_capacity) frag_capacity = std::min<uint64_t>(max_frags, std::max<uint64_t>(uint64_t(1) << 20, 8 * num_tris));
  uint64_t n = 0;
  for (int attempt = 0;; ++attempt) {
    for (int b = 0; b < 2; ++b) {
      f_keys[b].grow(frag_capacity);
      f_tris[b].grow(frag_capacity);
    }
    f_count.grow(1);
    VT_CUDA_CHECK(cudaMemsetAsync(f_count.data(), 0, sizeof(unsigned long long), s));
    p.d_keys = f_keys[0].data();
    p.d_tris = f_tris[0].data();
    p.d_count = f_count.data();
    p.capacity = frag_capacity;
    launch_bucket_emit(p, di.Current(), counters[0], counters[1], b_chunks[1].data(), num_chunks, s);
    n = read_scalar(f_count.data(), s);
    if (n <= frag_capacity) break;
    if (n > max_frags) return false;  // split the slab
    if (attempt > 0) fail(ErrorKind::kInternal, "GPU fragment buffer overflowed twice");
    frag_capacity = std::min<uint64_t>(max_frags, n + n / 8);
  }

  timer.begin("sort_fragments");
  cub::DoubleBuffer<uint64_t> dk(f_keys[0].data(), f_keys[1].data());
  cub::DoubleBuffer<uint32_t> dt(f_tris[0].data(), f_tris[1].data());
  if (n) {
    if (combined) {
      cub.run([&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortKeys(temp, bytes, dk, int(n), 0, vox_bits + tri_bits, s);
      });
    } else {
      // By triangle, then stably by voxel: (voxel, triangle) order.
      cub.run([&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, dt, dk, int(n), 0, tri_bits, s);
      });
      cub.run([&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dt, int(n), 0, vox_bits, s);
      });
    }
  }

  timer.begin("rle");
  f_heads.grow(std::max<uint64_t>(1, n));
  f_starts.grow(std::max<uint64_t>(1, n));
  launch_bucket_heads(p, n, dk.Current(), f_heads.data(), s);
  uint64_t nv = 0;
  if (n) {
    cub.run([&](void* temp, size_t& bytes) {
      return cub::DeviceSelect::Flagged(temp, bytes, thrust::counting_iterator<uint32_t>(0), f_heads.data(),
                                        f_starts.data(), num_selected.data(), int(n), s);
    });
    nv = read_scalar(num_selected.data(), s);
  }
  f_ijk.grow(std::max<uint64_t>(1, 3 * nv));
  f_offsets.grow(nv + 1);
  launch_bucket_voxels(p, nv, n, dk.Current(), f_starts.data(), f_ijk.data(), f_offsets.data(), s);

  timer.begin("attributes");
  const uint64_t nf = std::max<uint64_t>(1, n);
  BucketAttrs a{};
  a.attrs = o.attrs;
  a.voxel_size = {float(spec.voxel_size.x), float(spec.voxel_size.y), float(spec.voxel_size.z)};
  f_triangle.grow(nf);
  a.triangle = f_triangle.data();
  if (o.attrs & kAttrBary) a.bary = (f_bary.grow(3 * nf), f_bary.data());
  if (o.attrs & kAttrNormal) a.normal = (f_normal.grow(3 * nf), f_normal.data());
  if (o.attrs & kAttrUv) a.uv = (f_uv.grow(2 * nf), f_uv.data());
  if (o.attrs & kAttrMaterial) a.material = (f_material.grow(nf), f_material.data());
  a.normals = v_normals.capacity() ? v_normals.data() : nullptr;
  a.uvs = v_uvs.data();
  a.materials = t_materials.capacity() ? t_materials.data() : nullptr;
  launch_bucket_fragments(p, a, n, dk.Current(), dt.Current(), s);

  timer.begin("download");
  const size_t base_voxels = out.num_voxels();
  const int64_t base = out.offsets.empty() ? 0 : out.offsets.back();
  if (!out.offsets.empty()) out.offsets.pop_back();
  append_download(out.ijk, f_ijk.data(), 3 * nv);
  append_download(out.offsets, f_offsets.data(), nv + 1);
  for (size_t v = base_voxels; v < out.offsets.size(); ++v) out.offsets[v] += base;
  append_download(out.triangle, f_triangle.data(), n);
  if (o.attrs & kAttrBary) append_download(out.bary, f_bary.data(), 3 * n);
  if (o.attrs & kAttrNormal) append_download(out.normal, f_normal.data(), 3 * n);
  if (o.attrs & kAttrUv) append_download(out.uv, f_uv.data(), 2 * n);
  if (o.attrs & kAttrMaterial) append_download(out.material, f_material.data(), n);
  return true;
}

Buckets GpuVoxelizer::bucket(const Mesh& mesh, const GridSpec& spec, const BucketOptions& o, VoxelizeStats* stats) {
  Impl& d = *m;
  cudaStream_t s = d.stream;
  check_grid_dims(spec);
  if (mesh.num_triangles() >= size_t(0x7fffffff)) fail(ErrorKind::kUsage, "bucketing needs fewer than 2^31 triangles");
  check_bucket_attrs(mesh, o.attrs);
  const auto wall0 = std::chrono::steady_clock::now();
  set_mesh(mesh);  // makes the device current
  d.v_normals = DeviceBuffer<Vec3f>();
  d.t_materials = DeviceBuffer<uint32_t>();
  if ((o.attrs & kAttrNormal) && !mesh.normals.empty()) {
    d.v_normals.grow(mesh.normals.size());
    VT_CUDA_CHECK(cudaMemcpyAsync(d.v_normals.data(), mesh.normals.data(), mesh.normals.size() * sizeof(Vec3f),
                                  cudaMemcpyHostToDevice, s));
  }
  if (o.attrs & kAttrUv) {
    d.v_uvs.grow(mesh.uvs.size());
    VT_CUDA_CHECK(cudaMemcpyAsync(d.v_uvs.data(), mesh.uvs.data(), mesh.uvs.size() * sizeof(Vec2f), cudaMemcpyHostToDevice, s));
  }
  if ((o.attrs & kAttrMaterial) && !mesh.material_ids.empty()) {
    d.t_materials.grow(mesh.material_ids.size());
    VT_CUDA_CHECK(cudaMemcpyAsync(d.t_materials.data(), mesh.material_ids.data(), mesh.material_ids.size() * sizeof(uint32_t),
                                  cudaMemcpyHostToDevice, s));
  }
  StageTimer timer(s);
  timer.begin("transform");
  launch_transform(d.world.data(), d.grid.data(), d.num_vertices, spec.origin, spec.voxel_size, s);

  const int tri_bits = bits_for(std::max<uint64_t>(1, d.num_tris));
  const int vox_bits = bits_for(uint64_t(spec.dims.x) * uint64_t(spec.dims.y) * uint64_t(spec.dims.z));
  size_t free_bytes = 0, total_bytes = 0;
  VT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const uint64_t budget = d.opt.memory_budget ? d.opt.memory_budget : uint64_t(free_bytes * 0.8);
  // Per fragment: keys and triangles double-buffered, sort temporaries, heads, starts, outputs.
  const uint64_t per_fragment = 2 * 8 + 2 * 4 + 12 + 1 + 4 + 4 + 12 * 2 + 8 + 4 + 20;
  uint64_t max_frags = std::min<uint64_t>(budget / per_fragment, (uint64_t(1) << 31) - 1);
  if (d.opt.max_batch_pairs) max_frags = std::min<uint64_t>(max_frags, d.opt.max_batch_pairs);  // tests: force slabs
  if (max_frags < 1024) fail(ErrorKind::kResource, "the GPU memory budget is too small for bucketing");
  if (d.opt.max_batch_pairs) d.frag_capacity = 0;

  Buckets out;
  out.spec = spec;
  out.attrs = o.attrs;
  std::deque<std::pair<int32_t, int32_t>> slabs{{0, spec.dims.x - 1}};
  uint64_t num_slabs = 0;
  while (!slabs.empty()) {
    const auto [x0, x1] = slabs.front();
    slabs.pop_front();
    if (d.bucket_slab(spec, o, x0, x1, tri_bits, vox_bits, max_frags, out, timer)) {
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
  if (stats) {
    stats->tile_pairs = out.num_fragments();
    stats->tiles = num_slabs;
    stats->active_voxels = out.num_voxels();
    d.add_stage_stats(stats, stage_ms, wall0);
  }
  return out;
}

}  // namespace voxtile
