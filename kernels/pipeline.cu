// The GPU voxelization pipeline: transform, coarse raster (count, scan, emit), radix sort by
// tile, tile ranges and virtual tiles, fine raster, brick sort and merge, download. Triangles are
// processed in batches when their (tile, triangle) pairs would not fit the memory budget; bricks
// from all batches and virtual tiles are merged by key, so the result equals the CPU reference.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "kernels/api.h"
#include "kernels/common.cuh"
#include "kernels/impl.cuh"
#include "kernels/stages.cuh"

namespace voxtile {

GpuVoxelizer::GpuVoxelizer(const GpuOptions& options) : m(new Impl) {
  m->opt = options;
  try {
    const GpuInfo info = query_gpu(options.device);
    if (!info.available) fail(ErrorKind::kResource, info.reason);
    VT_CUDA_CHECK(cudaSetDevice(info.device));
    if (options.blocking_sync) VT_CUDA_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    VT_CUDA_CHECK(cudaDeviceGetAttribute(&m->num_sms, cudaDevAttrMultiProcessorCount, info.device));
    m->name = info.name;
    VT_CUDA_CHECK(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    m->num_selected.grow(1);
    m->next.grow(1);
  } catch (...) {
    delete m;
    throw;
  }
}

GpuVoxelizer::~GpuVoxelizer() {
  cudaSetDevice(m->opt.device);
  if (m->stream) cudaStreamDestroy(m->stream);
  delete m;
}

const std::string& GpuVoxelizer::device_name() const { return m->name; }

void GpuVoxelizer::set_mesh(const Mesh& mesh) {
  VT_CUDA_CHECK(cudaSetDevice(m->opt.device));
  const auto t0 = std::chrono::steady_clock::now();
  m->num_vertices = mesh.positions.size();
  m->num_tris = mesh.num_triangles();
  if (m->num_tris >= (uint64_t(1) << 32) - 1) fail(ErrorKind::kResource, "more than 2^32 triangles");
  m->world.grow(std::max<uint64_t>(1, m->num_vertices));
  m->grid.grow(std::max<uint64_t>(1, m->num_vertices));
  m->indices.grow(std::max<uint64_t>(1, mesh.indices.size()));
  m->staging.upload(m->world.data(), mesh.positions.data(), m->num_vertices * sizeof(Vec3f), m->stream);
  m->staging.upload(m->indices.data(), mesh.indices.data(), mesh.indices.size() * sizeof(uint32_t), m->stream);
  VT_CUDA_CHECK(cudaStreamSynchronize(m->stream));
  m->upload_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <class KeyT>
void GpuVoxelizer::Impl::run_batch(DeviceBuffer<KeyT>* keys, const CoarseParams& cp, uint64_t num_pairs, int key_bits,
                                   const VoxelizeOptions& o, StageTimer& timer, uint64_t* tiles_out,
                                   uint64_t* vtiles_out) {
  cudaStream_t s = stream;
  keys[0].grow(num_pairs);
  keys[1].grow(num_pairs);
  tris[0].grow(num_pairs);
  tris[1].grow(num_pairs);
  timer.begin("coarse");
  launch_coarse_emit(cp, offsets.data() + cp.tri_begin, large.data(), num_large.data(), keys[0].data(),
                     tris[0].data(), num_sms, s);

  timer.begin("sort");
  cub::DoubleBuffer<KeyT> dk(keys[0].data(), keys[1].data());
  cub::DoubleBuffer<uint32_t> dv(tris[0].data(), tris[1].data());
  const int n = int(num_pairs);
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, n, 0, key_bits, s);
  });

  timer.begin("tiles");
  heads.grow(num_pairs);
  tile_begins.grow(num_pairs);
  launch_tile_heads(dk.Current(), num_pairs, heads.data(), s);
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceSelect::Flagged(temp, bytes, thrust::counting_iterator<uint32_t>(0), heads.data(),
                                      tile_begins.data(), num_selected.data(), n, s);
  });
  const uint32_t num_tiles = read_scalar(num_selected.data(), s);
  vcounts.grow(num_tiles + 1);
  voffsets.grow(num_tiles + 1);
  // Split size: at most max_tile_triangles, and small enough that every team of the fine raster
  // (a warp for binary tiles, a block for value tiles) gets about four virtual tiles.
  const bool values = std::any_of(rastered.begin(), rastered.end(), [](const TargetSpec& t) { return t.target != Target::kBinary; });
  const uint64_t teams = uint64_t(num_sms) * (values ? 1 : 64);
  const uint32_t max_per_tile = uint32_t(std::max<uint64_t>(
      std::min<uint64_t>(opt.max_tile_triangles, 32), std::min<uint64_t>(opt.max_tile_triangles, (num_pairs + 4 * teams - 1) / (4 * teams))));
  launch_virtual_counts(tile_begins.data(), num_selected.data(), num_pairs, max_per_tile, vcounts.data(),
                        num_tiles + 1, s);
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, vcounts.data(), voffsets.data(), int(num_tiles + 1), s);
  });
  const uint32_t num_vtiles = read_scalar(voffsets.data() + num_tiles, s);
  vtiles.grow(num_vtiles);
  launch_virtual_emit(dk.Current(), tile_begins.data(), num_selected.data(), num_pairs, max_per_tile,
                      voffsets.data(), vtiles.data(), num_tiles, s);
  *tiles_out += num_tiles;
  *vtiles_out += num_vtiles;
  for (size_t t = 0; t < rastered.size(); ++t) fine_target(t, cp, dv.Current(), num_vtiles, num_pairs, o.mode, timer);
}

// Fine raster of one target into its brick buffers, retried with larger buffers if they overflowed.
void GpuVoxelizer::Impl::fine_target(size_t t, const CoarseParams& cp, const uint32_t* d_tris, uint32_t num_vtiles,
                                     uint64_t num_pairs, VoxelMode mode, StageTimer& timer) {
  cudaStream_t s = stream;
  const std::string name = stage("fine", t);
  timer.begin(name.c_str());
  TargetBuffers& b = *tbufs[t];
  const TargetSpec target = rastered[t];
  const uint64_t vw = uint64_t(brick_value_words(target));
  const unsigned long long before = read_scalar(b.count.data(), s);
  const uint64_t estimate = target.target != Target::kBinary ? uint64_t(num_vtiles) * 8 : uint64_t(num_vtiles) * 64;
  const uint64_t want = before + (opt.initial_bricks ? opt.initial_bricks : std::max<uint64_t>(4096, estimate));
  grow_keep(b.keys, want, before, s);
  grow_keep(b.masks, want * 16, before * 16, s);
  if (vw) grow_keep(b.values, want * vw, before * vw, s);
  // Bricks that fit in all output buffers (each may have grown separately in earlier calls).
  auto capacity = [&] {
    uint64_t c = std::min<uint64_t>(b.keys.capacity(), b.masks.capacity() / 16);
    if (vw) c = std::min<uint64_t>(c, b.values.capacity() / vw);
    return c;
  };
  // 32-bit value targets: octants per warp when virtual tiles hold few triangles (every warp then
  // has its own work), one shared tile per block when they hold many (one setup per triangle).
  const bool sub_tiles = opt.value_tiles == 2 || (opt.value_tiles == 0 && num_pairs < uint64_t(num_vtiles) * kSubTileTriangles);
  for (int attempt = 0;; ++attempt) {
    FineParams fp;
    fp.mesh = cp.mesh;
    fp.d_tris = d_tris;
    fp.d_vtiles = vtiles.data();
    fp.num_vtiles = num_vtiles;
    fp.d_next = next.data();
    fp.dims = cp.dims;
    fp.tiles = cp.tiles;
    fp.consts = consts;
    fp.out = {b.keys.data(), b.masks.data(), vw ? b.values.data() : nullptr, b.count.data(), capacity()};
    VT_CUDA_CHECK(cudaMemsetAsync(next.data(), 0, sizeof(unsigned int), s));
    launch_fine(fp, mode, target, sub_tiles, num_sms, s);
    const unsigned long long after = read_scalar(b.count.data(), s);
    if (after <= capacity()) break;
    if (attempt > 0) fail(ErrorKind::kInternal, "GPU brick buffer overflowed twice");
    const uint64_t cap = after + after / 4 + 1024;
    grow_keep(b.keys, cap, before, s);
    grow_keep(b.masks, cap * 16, before * 16, s);
    if (vw) grow_keep(b.values, cap * vw, before * vw, s);
    VT_CUDA_CHECK(cudaMemcpyAsync(b.count.data(), &before, sizeof(before), cudaMemcpyHostToDevice, s));
    VT_CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

// Sorts one target's bricks by key and merges each run of equal keys into one brick; downloads.
SparseGrid GpuVoxelizer::Impl::merge_target(size_t t, const GridSpec& spec, StageTimer& timer) {
  cudaStream_t s = stream;
  const std::string merge_name = stage("merge", t), download_name = stage("download", t);
  timer.begin(merge_name.c_str());
  TargetBuffers& b = *tbufs[t];
  const TargetSpec target = rastered[t];
  SparseGrid grid;
  grid.spec = spec;
  grid.value_type = target_value_type(target.target);
  grid.name = target_spec_name(target);
  const uint64_t num_bricks = read_scalar(b.count.data(), s);
  if (num_bricks == 0) return grid;
  if (num_bricks >= (uint64_t(1) << 31)) fail(ErrorKind::kResource, "more than 2^31 bricks");
  const bool values = target.target != Target::kBinary;
  const uint64_t out_words = values ? uint64_t(kBrickVoxels) * out_channels(target.target) : 0;
  bkeys_sorted.grow(num_bricks);
  iota.grow(num_bricks);
  perm.grow(num_bricks);
  heads.grow(num_bricks);
  starts.grow(num_bricks);
  launch_iota(iota.data(), num_bricks, s);
  const int nb = int(num_bricks);
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, b.keys.data(), bkeys_sorted.data(), iota.data(), perm.data(), nb,
                                           0, 3 * kBrickKeyBits, s);
  });
  launch_brick_heads(bkeys_sorted.data(), num_bricks, heads.data(), s);
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceSelect::Flagged(temp, bytes, thrust::counting_iterator<uint32_t>(0), heads.data(), starts.data(),
                                      num_selected.data(), nb, s);
  });
  const uint64_t num_unique = read_scalar(num_selected.data(), s);
  out_keys.grow(num_unique);
  out_masks.grow(num_unique * 16);
  if (values) out_values.grow(num_unique * out_words);
  launch_brick_merge(bkeys_sorted.data(), perm.data(), starts.data(), num_unique, num_bricks, b.masks.data(),
                     values ? b.values.data() : nullptr, out_keys.data(), out_masks.data(),
                     values ? out_values.data() : nullptr, target, consts, s);

  timer.begin(download_name.c_str());
  grid.keys.resize(num_unique);
  grid.masks.resize(num_unique);
  download(grid.keys.data(), out_keys.data(), num_unique * sizeof(uint64_t));
  static_assert(sizeof(BrickMask) == 16 * sizeof(uint32_t), "brick mask layout");
  download(grid.masks.data(), out_masks.data(), num_unique * sizeof(BrickMask));
  if (grid.value_type == ValueType::kInt32) {
    grid.ivalues.resize(num_unique * out_words);
    download(grid.ivalues.data(), out_values.data(), num_unique * out_words * sizeof(int32_t));
  } else if (values) {
    grid.fvalues.resize(num_unique * out_words);
    download(grid.fvalues.data(), out_values.data(), num_unique * out_words * sizeof(float));
  }
  return grid;
}

SparseGrid GpuVoxelizer::voxelize(const GridSpec& spec, const VoxelizeOptions& o, VoxelizeStats* stats) {
  std::vector<SparseGrid> grids = voxelize_targets(spec, o, {o.spec()}, stats);
  grids[0].name = "voxels";
  return std::move(grids[0]);
}

std::vector<SparseGrid> GpuVoxelizer::voxelize_targets(const GridSpec& spec, const VoxelizeOptions& o,
                                                       const std::vector<TargetSpec>& targets, VoxelizeStats* stats) {
  Impl& d = *m;
  VT_CUDA_CHECK(cudaSetDevice(d.opt.device));
  cudaStream_t s = d.stream;
  check_grid_dims(spec);
  const auto wall0 = std::chrono::steady_clock::now();
  if (targets.empty()) fail(ErrorKind::kUsage, "no target to voxelize");
  for (const TargetSpec& t : targets) {
    make_target_spec(t.target, t.blend);
    if (t.target == Target::kId && d.num_tris >= uint64_t(0x7fffffff))
      fail(ErrorKind::kUsage, "--target id needs fewer than 2^31 triangles");
  }
  // A binary target next to a value target is that target's masks: no raster pass of its own.
  const auto value_target =
      std::find_if(targets.begin(), targets.end(), [](const TargetSpec& t) { return t.target != Target::kBinary; });
  d.rastered.clear();
  std::vector<size_t> source(targets.size());  // index into rastered
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].target == Target::kBinary && value_target != targets.end()) continue;
    source[i] = d.rastered.size();
    d.rastered.push_back(targets[i]);
  }
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i].target == Target::kBinary && value_target != targets.end())
      source[i] = source[size_t(value_target - targets.begin())];
  while (d.tbufs.size() < d.rastered.size()) {
    d.tbufs.push_back(std::make_unique<Impl::TargetBuffers>());
    d.tbufs.back()->count.grow(1);
  }
  StageTimer timer(s);
  d.consts = make_shade_consts(spec.voxel_size);
  const Int3 tiles{(spec.dims.x + kTileDim - 1) / kTileDim, (spec.dims.y + kTileDim - 1) / kTileDim,
                   (spec.dims.z + kTileDim - 1) / kTileDim};
  const uint64_t total_tiles = uint64_t(tiles.x) * uint64_t(tiles.y) * uint64_t(tiles.z);
  int key_bits = 2;
  while ((uint64_t(1) << (key_bits - 2)) < total_tiles) ++key_bits;

  timer.begin("transform");
  launch_transform(d.world.data(), d.grid.data(), d.num_vertices, spec.origin, spec.voxel_size, s);

  // Coarse raster, pass 1: tiles per triangle, then their exclusive scan (one extra zero).
  timer.begin("coarse");
  CoarseParams cp;
  cp.mesh = {d.grid.data(), d.indices.data()};
  cp.dims = spec.dims;
  cp.tiles = tiles;
  cp.mode = o.mode;
  cp.tri_begin = 0;
  cp.tri_end = uint32_t(d.num_tris);
  cp.pair_base = 0;
  d.counts.grow(d.num_tris + 1);
  d.offsets.grow(d.num_tris + 1);
  VT_CUDA_CHECK(cudaMemsetAsync(d.counts.data() + d.num_tris, 0, sizeof(uint64_t), s));
  d.large.grow(std::max<uint64_t>(1, d.num_tris));
  d.num_large.grow(1);
  launch_coarse_count(cp, d.counts.data(), d.large.data(), d.num_large.data(), d.num_sms, s);
  d.cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, d.counts.data(), d.offsets.data(), int(d.num_tris + 1), s);
  });
  const uint64_t total_pairs = read_scalar(d.offsets.data() + d.num_tris, s);

  // Batches of consecutive triangles whose pairs fit the budget (and CUB's int sizes).
  size_t free_bytes = 0, total_bytes = 0;
  VT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const uint64_t budget = d.opt.memory_budget ? d.opt.memory_budget : uint64_t(free_bytes * 0.8);
  const uint64_t key_size = key_bits <= 32 ? 4 : 8;
  const uint64_t per_pair = 2 * key_size + 2 * 4 + 1 + 4 + 2 * (key_size + 4);  // buffers + sort temp
  uint64_t max_pairs = std::min<uint64_t>(budget / 2 / per_pair, (uint64_t(1) << 31) - 1);
  if (d.opt.max_batch_pairs) max_pairs = std::min(max_pairs, d.opt.max_batch_pairs);
  if (max_pairs < 1024) fail(ErrorKind::kResource, "the GPU memory budget is too small for voxelization");

  uint64_t num_tiles = 0, num_vtiles = 0;
  for (size_t t = 0; t < d.rastered.size(); ++t)
    VT_CUDA_CHECK(cudaMemsetAsync(d.tbufs[t]->count.data(), 0, sizeof(unsigned long long), s));
  uint32_t begin = 0;
  while (begin < d.num_tris && total_pairs > 0) {
    // Largest end with offsets[end] - offsets[begin] <= max_pairs (binary search on the device array).
    const uint64_t base = read_scalar(d.offsets.data() + begin, s);
    uint32_t end = uint32_t(d.num_tris);
    if (total_pairs - base > max_pairs) {
      uint32_t lo = begin + 1, hi = uint32_t(d.num_tris);
      while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (read_scalar(d.offsets.data() + mid, s) - base <= max_pairs) lo = mid;
        else hi = mid - 1;
      }
      end = lo;
      if (read_scalar(d.offsets.data() + end, s) - base > max_pairs)
        fail(ErrorKind::kResource, "one triangle covers more tiles than the GPU memory budget allows");
    }
    const uint64_t batch_pairs = read_scalar(d.offsets.data() + end, s) - base;
    cp.tri_begin = begin;
    cp.tri_end = end;
    cp.pair_base = base;
    if (batch_pairs > 0) {
      if (key_bits <= 32) d.run_batch(d.keys32, cp, batch_pairs, key_bits, o, timer, &num_tiles, &num_vtiles);
      else d.run_batch(d.keys64, cp, batch_pairs, key_bits, o, timer, &num_tiles, &num_vtiles);
    }
    begin = end;
  }

  // Merge: per target, sort bricks by key, one brick per run of equal keys.
  std::vector<SparseGrid> rastered_grids;
  for (size_t t = 0; t < d.rastered.size(); ++t) rastered_grids.push_back(d.merge_target(t, spec, timer));
  timer.end();
  const auto stage_ms = timer.resolve();
  VT_CUDA_CHECK(cudaStreamSynchronize(s));

  std::vector<SparseGrid> grids(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].target == Target::kBinary && value_target != targets.end()) {
      const SparseGrid& src = rastered_grids[source[i]];
      grids[i].spec = spec;
      grids[i].keys = src.keys;
      grids[i].masks = src.masks;
      grids[i].name = target_spec_name(targets[i]);
    }
  }
  for (size_t i = 0; i < targets.size(); ++i)
    if (!(targets[i].target == Target::kBinary && value_target != targets.end()))
      grids[i] = std::move(rastered_grids[source[i]]);
  if (stats) {
    stats->tile_pairs = total_pairs;
    stats->tiles = num_tiles;
    stats->bricks = grids[0].num_bricks();
    stats->active_voxels = grids[0].active_voxels();
    d.add_stage_stats(stats, stage_ms, wall0);
  }
  return grids;
}

}  // namespace voxtile
