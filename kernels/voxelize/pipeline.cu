// The GPU voxelization pipeline: transform, coarse raster (count, scan, emit), radix sort by
// tile, tile ranges and virtual tiles, fine raster, brick sort and merge, download. Triangles are
// processed in batches when their (tile, triangle) pairs would not fit the memory budget; bricks
// from all batches and virtual tiles are merged by key, so the result equals the CPU reference.
// Target planning, names and limits are Voxelizer's (core/voxelizer.cpp): this file rasters.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <type_traits>

#include "kernels/compact.cuh"
#include "kernels/gpu_voxelizer.cuh"

namespace voxtile {

GpuVoxelizer::GpuVoxelizer(const GpuOptions& options) {
  m_ctx.opt = options;
  const GpuInfo info = query_gpu(options.device);
  if (!info.available) fail(ErrorKind::kResource, info.reason);
  VT_CUDA_CHECK(cudaSetDevice(info.device));
  if (options.blocking_sync) VT_CUDA_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  VT_CUDA_CHECK(cudaDeviceGetAttribute(&m_ctx.num_sms, cudaDevAttrMultiProcessorCount, info.device));
  m_ctx.name = info.name;
  VT_CUDA_CHECK(cudaStreamCreateWithFlags(&m_ctx.stream, cudaStreamNonBlocking));
  m_voxelize.d_next.grow(1);
  m_ctx.memory_budget();  // (known_free for fits_budget)
}

GpuVoxelizer::~GpuVoxelizer() {
  cudaSetDevice(m_ctx.opt.device);
  if (m_ctx.stream) cudaStreamDestroy(m_ctx.stream);
}

std::unique_ptr<Voxelizer> make_gpu_voxelizer(const GpuOptions& options) {
  return std::make_unique<GpuVoxelizer>(options);
}

uint64_t GpuContext::memory_budget() const { return budget_or_free_share(opt.memory_budget, &known_free); }

bool GpuContext::fits_budget(uint64_t bytes) const {
  if (!opt.memory_budget && bytes <= known_free / 64) return true;
  return bytes <= memory_budget();
}

void GpuVoxelizer::load_mesh(const Mesh& mesh) {
  VT_CUDA_CHECK(cudaSetDevice(m_ctx.opt.device));
  m_mesh.upload(mesh, m_ctx.staging, m_ctx.stream);
  m_neighbours = mesh.num_triangles() > kScatterMaxTriangles ? neighbour_distances(mesh) : std::vector<float>();
}

void add_gpu_stages(VoxelizeStats& stats, const std::vector<std::pair<std::string, double>>& stage_ms,
                    std::chrono::steady_clock::time_point wall0, const std::string& prefix) {
  double gpu_total = 0;
  for (const auto& [stage, ms] : stage_ms) {
    stats.add_stage(stage, ms);
    gpu_total += ms;
  }
  stats.add_stage(prefix + "gpu_total", gpu_total);
  stats.add_stage(prefix + "wall", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count());
}

void GpuVoxelizer::add_stage_stats(VoxelizeStats& stats, const std::vector<std::pair<std::string, double>>& stage_ms,
                                   std::chrono::steady_clock::time_point wall0) const {
  stats.add_stage("upload", m_mesh.upload_ms);
  add_gpu_stages(stats, stage_ms, wall0);
}

bool VoxelizeState::any_values() const {
  return std::any_of(rastered.begin(), rastered.end(), [](const TargetSpec& t) { return t.target != Target::kBinary; });
}

// Teams of the fine raster (a warp per binary tile, a block per value tile): virtual tiles are sized
// so that each gets about four (virtual_tile_size).
uint64_t VoxelizeState::fine_teams(const GpuContext& ctx) const {
  return uint64_t(ctx.num_sms) * (any_values() ? 1 : 64);
}

// Binary targets of small meshes in one batch (raster: VoxelizeState::scatter): the pairs go
// straight to their tiles' slots (the count took the pairs per tile), so no sort (on an H200 it
// took 0.04 ms of the 100k dragon's 0.35-0.38), and the tiles and their virtual tiles come from
// the counts per tile, not from a pass over the pairs.
void VoxelizeState::scatter_batch(GpuContext& ctx, const CoarseParams& cp, uint64_t num_pairs, bool pairs_known,
                                  VoxelMode mode, StageTimer& timer) {
  cudaStream_t s = ctx.stream;
  const uint64_t teams = fine_teams(ctx);
  const uint32_t max_tile = ctx.opt.max_tile_triangles;
  timer.begin("coarse");
  scatter_room = num_pairs;
  d_tris[0].grow(num_pairs);
  launch_coarse_emit<uint32_t>(cp, d_offsets.data() + cp.tri_begin, d_single.data() + cp.tri_begin,
                               any_large ? d_large.data() : nullptr, d_num_large.data(), d_tile_cursor.data(),
                               num_pairs, nullptr, d_tris[0].data(), ctx.num_sms, s);
  timer.begin("tiles");
  const uint32_t grid_tiles = uint32_t(uint64_t(cp.tiles.x) * uint64_t(cp.tiles.y) * uint64_t(cp.tiles.z));
  d_voffsets.grow(uint64_t(grid_tiles) + 1);
  // Each tile of len pairs makes at most len / per + 1 virtual tiles, per >= virtual_tile_size(0, ...).
  const uint64_t vtile_bound = grid_tiles + num_pairs / virtual_tile_size(0, max_tile, teams);
  d_vtiles.grow(vtile_bound);
  launch_scattered_virtual_tiles(d_tile_pairs.data(), d_tile_cursor.data(), grid_tiles, d_offsets.data() + cp.tri_end,
                                 num_pairs, max_tile, teams, d_voffsets.data(), d_vtiles.data(), d_tile_stat.data(),
                                 ctx.cub, s);
  tiles_on_device = true;
  // (Bricks are estimated from the pairs: with the number unknown, from 2 per triangle.)
  const uint64_t brick_pairs = pairs_known ? num_pairs : std::min<uint64_t>(num_pairs, 2 * uint64_t(cp.tri_end) + 4096);
  uint64_t batch_bricks = 0;
  for (size_t t = 0; t < rastered.size(); ++t)
    batch_bricks = fine_target(ctx, t, cp, d_tris[0].data(), d_voffsets.data() + grid_tiles, vtile_bound, false,
                               brick_pairs, pairs_known ? nullptr : d_offsets.data() + cp.tri_end, batch_bricks, mode,
                               timer);
}

template <class KeyT>
void VoxelizeState::run_batch(GpuContext& ctx, DeviceBuffer<KeyT>* keys, const CoarseParams& cp, uint64_t num_pairs,
                              int key_bits, VoxelMode mode, bool only_batch, StageTimer& timer, VoxelizeStats* stats) {
  cudaStream_t s = ctx.stream;
  const uint64_t teams = fine_teams(ctx);
  const uint32_t max_tile = ctx.opt.max_tile_triangles;
  const bool values = any_values();
  timer.begin("coarse");
  keys[0].grow(num_pairs);
  keys[1].grow(num_pairs);
  d_tris[0].grow(num_pairs);
  d_tris[1].grow(num_pairs);
  launch_coarse_emit(cp, d_offsets.data() + cp.tri_begin, d_single.data() + cp.tri_begin,
                     any_large ? d_large.data() : nullptr, d_num_large.data(), nullptr, num_pairs, keys[0].data(),
                     d_tris[0].data(), ctx.num_sms, s);

  cub::DoubleBuffer<KeyT> dk(keys[0].data(), keys[1].data());
  cub::DoubleBuffer<uint32_t> dv(d_tris[0].data(), d_tris[1].data());
  timer.begin("sort");
  const int n = int(num_pairs);
  ctx.cub.run([&](void* temp, size_t& bytes) {
    // By tile only (bits 2 and up): the dominant axis in the low bits need not be ordered (the
    // fine raster handles every axis alike, in the triangles' dominant frames), and one pass less
    // is needed where the tiles take 15 or 23 bits (1024^3: 32^3 tiles). The sort is stable, so
    // pairs keep the coarse raster's order within a tile.
    return cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, n, 2, std::max(key_bits, 3), s);
  });

  timer.begin("tiles");
  d_tile_begins.grow(num_pairs);
  select_run_starts(ctx.runs, num_pairs, PairTile<KeyT>{dk.Current()}, d_tile_begins.data(), s);
  const uint64_t* d_num_tiles = ctx.runs.total();
  const uint32_t max_per_tile = virtual_tile_size(num_pairs, max_tile, teams);
  // The counts of tiles and virtual tiles stay on the device when the grid has few tiles (a binary
  // target in one batch): the virtual tiles are counted and scanned over an upper bound on the
  // tiles (entries past the real count are zero) and the fine raster reads their number, which
  // saves two host round trips (measured ~15 us each). Value targets need the number on the host
  // to choose their tile layout.
  const Int3 gt = cp.tiles;
  const uint64_t grid_tiles_total = uint64_t(gt.x) * uint64_t(gt.y) * uint64_t(gt.z);
  uint64_t tile_bound = std::min<uint64_t>(num_pairs, grid_tiles_total);
  const bool counts_on_device = only_batch && !values && !probe && tile_bound <= kDeviceTileBound;
  uint32_t num_tiles = 0;
  if (!counts_on_device) tile_bound = num_tiles = uint32_t(read_scalar(d_num_tiles, s));
  d_voffsets.grow(tile_bound + 1);
  launch_virtual_offsets(d_tile_begins.data(), d_num_tiles, uint32_t(tile_bound), num_pairs, max_per_tile,
                         d_voffsets.data(), ctx.cub, s);
  const uint32_t* d_num_vtiles = d_voffsets.data() + tile_bound;
  // Each tile of len pairs makes ceil(len / max_per_tile) <= len / max_per_tile + 1 virtual tiles.
  uint64_t vtile_bound = tile_bound + num_pairs / max_per_tile;
  uint32_t num_vtiles = 0;
  if (!counts_on_device) vtile_bound = num_vtiles = read_scalar(d_num_vtiles, s);
  d_vtiles.grow(vtile_bound);
  if (counts_on_device) d_tile_stat.grow(1);
  launch_virtual_emit(dk.Current(), d_tile_begins.data(), d_num_tiles, uint32_t(tile_bound), num_pairs, max_per_tile,
                      d_voffsets.data(), d_vtiles.data(), counts_on_device ? d_tile_stat.data() : nullptr, s);
  if (counts_on_device) tiles_on_device = true;
  else {
    stats->tiles += num_tiles;
    stats->virtual_tiles += num_vtiles;
  }
  if (probe) {
    const size_t base = probe->pairs.size();
    std::vector<KeyT> k(num_pairs);
    std::vector<uint32_t> t(num_pairs), begins(num_tiles);
    std::vector<VirtualTile> vt(num_vtiles);
    ctx.download(k.data(), dk.Current(), num_pairs * sizeof(KeyT));
    ctx.download(t.data(), dv.Current(), num_pairs * sizeof(uint32_t));
    ctx.download(begins.data(), d_tile_begins.data(), num_tiles * sizeof(uint32_t));
    ctx.download(vt.data(), d_vtiles.data(), num_vtiles * sizeof(VirtualTile));
    if (d_tri_ids) {  // positions in the Morton order -> the mesh's triangles
      std::vector<uint32_t> ids(cp.tri_end);
      ctx.download(ids.data(), d_tri_ids, ids.size() * sizeof(uint32_t));
      for (uint32_t& x : t) x = ids[x];
    }
    for (uint64_t i = 0; i < num_pairs; ++i) {
      probe->pairs.push_back({uint64_t(k[i] >> 2), t[i]});
      probe->axes.push_back(uint8_t(k[i] & 3));
    }
    for (uint32_t b : begins) probe->tile_begins.push_back(uint32_t(base) + b);
    for (const VirtualTile& v : vt) probe->vtiles.push_back({v.tile, uint32_t(base) + v.begin, uint32_t(base) + v.end});
    probe->max_per_tile = max_per_tile;
  }
  // Every target writes the same bricks (the same fragments), so the first one's count sizes the
  // others' buffers.
  uint64_t batch_bricks = 0;
  for (size_t t = 0; t < rastered.size(); ++t)
    batch_bricks = fine_target(ctx, t, cp, dv.Current(), d_num_vtiles, vtile_bound, !counts_on_device, num_pairs,
                               nullptr, batch_bricks, mode, timer);
}

// Whether binary bricks (about `bricks` of them) merge through a bitmap of the grid's bricks
// (launch_bitmap_merge; no sort: 5 launches instead of about 10): linear brick indices fit 32 bits
// and the bitmap's scan is not much more work than sorting the bricks.
static bool bitmap_merge_fits(const GpuContext& ctx, const Int3& nbricks, uint64_t bricks) {
  const uint64_t index_range = uint64_t(nbricks.x) * uint64_t(nbricks.y) * uint64_t(nbricks.z);
  return index_range <= (uint64_t(1) << 32) && !ctx.opt.merge_by_brick_key &&
         bitmap_merge_words(nbricks) <= 8 * bricks + 65536;
}

// Fine raster of one target into its brick buffers, retried with larger buffers if they overflowed.
uint64_t VoxelizeState::fine_target(GpuContext& ctx, size_t t, const CoarseParams& cp, const uint32_t* d_sorted_tris,
                                    const uint32_t* d_num_vtiles, uint64_t vtiles, bool vtiles_exact,
                                    uint64_t num_pairs, const uint64_t* d_num_pairs, uint64_t known_bricks,
                                    VoxelMode mode, StageTimer& timer, bool may_defer) {
  cudaStream_t s = ctx.stream;
  const std::string name = stage("fine", t);
  timer.begin(name.c_str());
  TargetBricks& b = *bricks[t];
  const TargetSpec target = rastered[t];
  const uint64_t vw = uint64_t(brick_value_words(target));
  const uint64_t before = b.written;
  // A virtual tile writes at most 64 bricks, so 64 per virtual tile never overflows; when only an
  // upper bound on the virtual tiles is known, 8 per pair unless that is more (an overflow is
  // retried with the exact size, as a stage "fine_retry").
  uint64_t estimate = vtiles * 64;
  if (target.target != Target::kBinary) estimate = vtiles * 8;
  else if (!vtiles_exact) estimate = std::min(estimate, 8 * num_pairs);
  if (known_bricks) estimate = known_bricks;
  const uint64_t want = before + (ctx.opt.initial_bricks ? ctx.opt.initial_bricks : std::max<uint64_t>(4096, estimate));
  auto grow_all = [&](uint64_t cap) {
    grow_keep(b.d_keys, cap, before, s);
    grow_keep(b.d_masks, cap * kBrickMaskWords, before * kBrickMaskWords, s);
    if (vw) grow_keep(b.d_values, cap * vw, before * vw, s);
  };
  grow_all(want);
  // Bricks that fit in all output buffers (each may have grown separately in earlier calls).
  auto capacity = [&] {
    uint64_t c = std::min<uint64_t>(b.d_keys.capacity(), b.d_masks.capacity() / kBrickMaskWords);
    if (vw) c = std::min<uint64_t>(c, b.d_values.capacity() / vw);
    return c;
  };
  // 32-bit value targets: octants of two warps when virtual tiles hold few pairs for the size of their
  // triangles (every warp then has its own work), one shared tile per block when they hold many (one
  // setup per pair): sub_tiles_for_values.
  const uint64_t tris = cp.tri_end - cp.tri_begin;
  const ValueTiles layout = ctx.opt.value_tiles;
  const bool sub_tiles =
      layout == ValueTiles::kOctant || (layout == ValueTiles::kAuto && sub_tiles_for_values(num_pairs, vtiles, tris));
  // The kernel (api.h FineKernel), row ranges for conservative targets only; chosen here where the
  // host knows the pairs (always for value targets), else on the device (where they fit in the
  // scatter's room: with room for fewer than kFineRangesMinPairs per triangle, kRanges cannot be
  // chosen nor is launched).
  const bool ranges_apply = mode == VoxelMode::kConservative;
  FineKernel kernel = ctx.opt.fine_kernel;
  if (kernel == FineKernel::kRanges && !ranges_apply) kernel = FineKernel::kSpread;
  const bool auto_on_device = kernel == FineKernel::kAuto && d_num_pairs;
  // (The large triangles' statistics are the job's: for a batch of every triangle only.)
  const bool whole = tris == job_tris;
  if (kernel == FineKernel::kAuto && !auto_on_device)
    kernel = auto_fine_kernel(num_pairs, tris, whole ? large_pairs : 0, whole ? num_large : 0, ranges_apply);
  const bool device_ranges = ranges_apply && double(scatter_room) >= kFineRangesMinPairs * double(tris);
  for (int attempt = 0;; ++attempt) {
    FineParams fp;
    fp.mesh = cp.mesh;
    fp.d_tris = d_sorted_tris;
    fp.d_tri_ids = d_tri_ids;
    fp.d_vtiles = d_vtiles.data();
    fp.d_num_vtiles = d_num_vtiles;
    fp.d_next = d_next.data();
    fp.kernel = kernel;
    fp.ranges = auto_on_device && device_ranges;
    fp.d_auto_pairs = auto_on_device && target.target == Target::kBinary ? d_num_pairs : nullptr;
    fp.auto_tris = uint32_t(tris);
    fp.d_auto_num_large = d_num_large.data();  // (a batch with d_auto_pairs holds every triangle)
    fp.d_auto_large_pairs = d_large_pairs.data();
    fp.dims = cp.dims;
    fp.tiles = cp.tiles;
    fp.consts = consts;
    fp.out = {b.d_keys.data(), b.d_masks.data(), vw ? b.d_values.data() : nullptr, b.d_count.data(), capacity()};
    if (!next_zeroed) VT_CUDA_CHECK(cudaMemsetAsync(d_next.data(), 0, sizeof(unsigned int), s));
    next_zeroed = false;
    launch_fine(fp, mode, target, sub_tiles, ctx.num_sms, s);
    // The virtual tiles' count on the device means one batch of binary targets without a probe;
    // one such target whose bricks the bitmap merges leaves its count there (merge_target).
    if (may_defer && attempt == 0 && !vtiles_exact && rastered.size() == 1 &&
        bitmap_merge_fits(ctx, grid_bricks(cp.dims), num_pairs / 8)) {  // (bricks unknown: 1 per 8 pairs)
      fine_deferred = true;
      deferred = {cp, d_sorted_tris, d_num_vtiles, d_num_pairs, vtiles, num_pairs, capacity(), mode};
      return 0;
    }
    const uint64_t after = read_scalar(b.d_count.data(), s);
    if (after <= capacity()) {
      b.written = after;
      if (probe && t == 0) {
        const uint64_t nb = after - before;
        std::vector<uint64_t> keys(nb);
        std::vector<BrickMask> masks(nb);
        std::vector<uint32_t> values(nb * vw);
        ctx.download(keys.data(), b.d_keys.data() + before, nb * sizeof(uint64_t));
        ctx.download(masks.data(), b.d_masks.data() + before * kBrickMaskWords, nb * sizeof(BrickMask));
        if (vw) ctx.download(values.data(), b.d_values.data() + before * vw, nb * vw * sizeof(uint32_t));
        probe->brick_keys.insert(probe->brick_keys.end(), keys.begin(), keys.end());
        probe->brick_masks.insert(probe->brick_masks.end(), masks.begin(), masks.end());
        probe->brick_values.insert(probe->brick_values.end(), values.begin(), values.end());
      }
      return after - before;
    }
    if (attempt > 0) fail(ErrorKind::kInternal, "GPU brick buffer overflowed twice");
    timer.begin(stage("fine_retry", t).c_str());
    grow_all(after + after / 4 + 1024);
    const unsigned long long reset = before;
    VT_CUDA_CHECK(cudaMemcpyAsync(b.d_count.data(), &reset, sizeof(reset), cudaMemcpyHostToDevice, s));
    VT_CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

// Merges up to n bricks of b (*d_n of them if not null) through the bitmap into d_out_keys /
// d_out_masks; returns where the device holds the number of merged bricks.
const uint32_t* VoxelizeState::bitmap_merge(GpuContext& ctx, TargetBricks& b, uint64_t n,
                                            const unsigned long long* d_n, const Int3& nbricks) {
  const uint64_t words = bitmap_merge_words(nbricks);
  d_brick_bitmap.grow(words);
  d_word_rank.grow(words + 1);
  d_out_keys.grow(n);
  d_out_masks.grow(n * kBrickMaskWords);
  launch_bitmap_merge(b.d_keys.data(), n, d_n, nbricks, d_brick_bitmap.data(), d_word_rank.data(), ctx.cub,
                      b.d_masks.data(), d_out_keys.data(), d_out_masks.data(), ctx.num_sms, ctx.stream);
  return d_word_rank.data() + words;
}

// Sorts one target's bricks by key and merges each run of equal keys into one brick; downloads.
SparseGrid VoxelizeState::merge_target(GpuContext& ctx, size_t t, const GridSpec& spec, StageTimer& timer) {
  cudaStream_t s = ctx.stream;
  const std::string merge_name = stage("merge", t);
  timer.begin(merge_name.c_str());
  TargetBricks& b = *bricks[t];
  const TargetSpec target = rastered[t];
  SparseGrid grid;
  grid.spec = spec;
  grid.value_type = target_value_type(target.target);
  grid.name = target_spec_name(target);
  const Int3 nbricks = grid_bricks(spec.dims);
  if (fine_deferred && t == 0) {
    // The fine raster's count is still on the device: merge up to the buffers' capacity through
    // the bitmap, then read the count and the merged count together.
    fine_deferred = false;
    const uint64_t cap = deferred.capacity;
    const uint32_t* d_merged = bitmap_merge(ctx, b, cap, b.d_count.data(), nbricks);
    const auto [written, merged] = read_scalars(s, b.d_count.data(), d_merged);
    if (written >= (uint64_t(1) << 31)) fail(ErrorKind::kResource, "more than 2^31 bricks");
    if (written <= cap) {
      b.written = written;
      return download_merged(ctx, t, merged, std::move(grid), timer);
    }
    // Overflowed: raster again with room for every brick, then merge as below.
    timer.begin(stage("fine_retry", t).c_str());
    VT_CUDA_CHECK(cudaMemsetAsync(b.d_count.data(), 0, sizeof(unsigned long long), s));
    const DeferredFine d = deferred;
    fine_target(ctx, t, d.cp, d.d_sorted_tris, d.d_num_vtiles, d.vtiles, false, d.num_pairs, d.d_num_pairs, written,
                d.mode, timer, false);
    timer.begin(merge_name.c_str());
  }
  const uint64_t num_bricks = b.written;
  if (num_bricks == 0) return grid;
  if (num_bricks >= (uint64_t(1) << 31)) fail(ErrorKind::kResource, "more than 2^31 bricks");
  const bool values = target.target != Target::kBinary;
  const uint64_t out_words = values ? uint64_t(kBrickVoxels) * out_channels(target.target) : 0;
  const uint64_t index_range = uint64_t(nbricks.x) * uint64_t(nbricks.y) * uint64_t(nbricks.z);
  const bool indices32 = index_range <= (uint64_t(1) << 32) && !ctx.opt.merge_by_brick_key;
  uint64_t num_unique = 0;
  if (!values && bitmap_merge_fits(ctx, nbricks, num_bricks)) {
    num_unique = read_scalar(bitmap_merge(ctx, b, num_bricks, nullptr, nbricks), s);
  } else {
    d_iota.grow(num_bricks);
    d_perm.grow(num_bricks);
    d_starts.grow(num_bricks);
    const int nb = int(num_bricks);
    // Sorts (key, index) pairs, then marks the runs of equal keys.
    auto sort_and_select = [&](auto* keys, auto* sorted, int end_bit) {
      ctx.cub.run([&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, keys, sorted, d_iota.data(), d_perm.data(), nb, 0, end_bit, s);
      });
      using KeyT = std::remove_pointer_t<decltype(sorted)>;
      select_run_starts(ctx.runs, num_bricks, SortedKeyAt<KeyT>{sorted}, d_starts.data(), s);
    };
    if (indices32) {
      // Linear brick indices: 21 bits at 1024^3 instead of the key's 63, so the radix sort takes
      // three passes over 32-bit keys instead of eight over 64-bit ones.
      d_brick_index.grow(num_bricks);
      d_sorted_index.grow(num_bricks);
      launch_brick_sort_keys(b.d_keys.data(), num_bricks, nbricks, d_brick_index.data(), d_iota.data(), s);
      sort_and_select(d_brick_index.data(), d_sorted_index.data(), bits_for(index_range));
    } else {
      d_sorted_keys.grow(num_bricks);
      launch_iota(d_iota.data(), num_bricks, s);
      sort_and_select(b.d_keys.data(), d_sorted_keys.data(), 3 * kBrickKeyBits);
    }
    num_unique = read_scalar(ctx.runs.total(), s);
    d_out_keys.grow(num_unique);
    d_out_masks.grow(num_unique * kBrickMaskWords);
    if (values) {
      d_out_values.grow(num_unique * out_words);  // (a bound: only the active voxels' are written)
      d_active_begin.grow(num_unique + 1);
    }
    launch_brick_merge(b.d_keys.data(), d_perm.data(), d_starts.data(), num_unique, num_bricks, b.d_masks.data(),
                       values ? b.d_values.data() : nullptr, d_out_keys.data(), d_out_masks.data(),
                       values ? d_active_begin.data() : nullptr, values ? d_out_values.data() : nullptr, target, consts,
                       ctx.cub, s);
  }

  return download_merged(ctx, t, num_unique, std::move(grid), timer);
}

// Downloads the num_unique merged bricks of target t into grid.
SparseGrid VoxelizeState::download_merged(GpuContext& ctx, size_t t, uint64_t num_unique, SparseGrid grid,
                                          StageTimer& timer) {
  timer.begin(stage("download", t).c_str());
  const Target target = rastered[t].target;
  grid.keys.resize(num_unique);
  grid.masks.resize(num_unique);
  ctx.download(grid.keys.data(), d_out_keys.data(), num_unique * sizeof(uint64_t));
  static_assert(sizeof(BrickMask) == kBrickMaskWords * sizeof(uint32_t), "brick mask layout");
  ctx.download(grid.masks.data(), d_out_masks.data(), num_unique * sizeof(BrickMask));
  if (target == Target::kBinary || num_unique == 0) return grid;
  // Value targets: only the active voxels' values come down (5-8x fewer bytes on the benchmark
  // meshes: their bricks are 10-25% full), in the grid's layout, with each brick's first.
  const int channels = out_channels(target);
  grid.value_begin.resize(num_unique + 1);
  ctx.download(grid.value_begin.data(), d_active_begin.data(), (num_unique + 1) * sizeof(uint64_t));
  const uint64_t words = grid.value_begin[num_unique] * uint64_t(channels);
  void* values = nullptr;
  if (grid.value_type == ValueType::kInt32) {
    grid.ivalues.resize(words);
    values = grid.ivalues.data();
  } else {
    grid.fvalues.resize(words);
    values = grid.fvalues.data();
  }
  // The fresh pages fault in as the staged copies write them: in 2 MB pages, about twice as fast on
  // an H200 machine (scripts/bench-results/value-download-h200-2026-11-28.md).
  advise_huge_pages(values, words * sizeof(uint32_t));
  ctx.download(values, d_out_values.data(), words * sizeof(uint32_t));
  return grid;
}

std::vector<SparseGrid> GpuVoxelizer::raster(const GridSpec& spec, const VoxelizeOptions& o,
                                             const std::vector<TargetSpec>& targets, VoxelizeStats& stats) {
  VT_CUDA_CHECK(cudaSetDevice(m_ctx.opt.device));
  cudaStream_t s = m_ctx.stream;
  const auto wall0 = std::chrono::steady_clock::now();
  VoxelizeState& v = m_voxelize;
  v.probe = probe;
  v.rastered = targets;
  v.fine_deferred = false;
  while (v.bricks.size() < v.rastered.size()) {
    v.bricks.push_back(std::make_unique<VoxelizeState::TargetBricks>());
    v.bricks.back()->d_count.grow(1);
  }
  StageTimer timer(s);
  v.consts = make_shade_consts(spec.voxel_size);
  const Int3 tiles = grid_tiles(spec.dims);
  const uint64_t total_tiles = uint64_t(tiles.x) * uint64_t(tiles.y) * uint64_t(tiles.z);
  int key_bits = 2;
  while ((uint64_t(1) << (key_bits - 2)) < total_tiles) ++key_bits;
  const uint64_t num_tris = m_mesh.num_tris;

  timer.begin("transform");
  m_mesh.transform(spec.origin, spec.voxel_size, s);

  // The visiting order (api.h TriangleOrder): the mesh's unless Morton order is asked for.
  const bool morton = m_ctx.opt.triangle_order == TriangleOrder::kMorton;
  stats.morton_order = morton;
  if (morton) {
    timer.begin("order");
    launch_triangle_order(m_mesh.view(), uint32_t(num_tris), spec.dims, v.d_order, v.d_order_indices, v.d_order_keys,
                          v.d_order_tmp, m_ctx.cub, s);
  }
  v.d_tri_ids = morton ? v.d_order.data() : nullptr;

  // Coarse raster, pass 1: tiles per triangle, then their exclusive scan (one extra zero).
  timer.begin("coarse");
  CoarseParams cp;
  cp.mesh = m_mesh.view();
  if (morton) cp.mesh.d_indices = v.d_order_indices.data();
  cp.dims = spec.dims;
  cp.tiles = tiles;
  cp.mode = o.mode;
  cp.tri_begin = 0;
  cp.tri_end = uint32_t(num_tris);
  cp.pair_base = 0;
  v.d_counts.grow(num_tris + 1);
  v.d_offsets.grow(num_tris + 1);
  v.d_large.grow(std::max<uint64_t>(1, num_tris));
  v.d_num_large.grow(1);
  v.d_large_pairs.grow(1);
  v.job_tris = num_tris;
  v.num_large = v.large_pairs = 0;
  v.d_single.grow(num_tris);
  // Pairs grouped by tile without a sort (VoxelizeState::scatter): binary targets only (the order
  // within a tile changes from run to run; an OR does not see it), not for the stage probe (which
  // compares the pairs' order with the CPU's), where the grid's tiles are few and the mesh is small
  // or lists its triangles in a local order (state.cuh: kScatterMaxTriangles, kScatterLocalOrder).
  const bool all_binary = std::all_of(v.rastered.begin(), v.rastered.end(),
                                      [](const TargetSpec& t) { return t.target == Target::kBinary; });
  const double tile_extent = double(kTileDim) * std::max({spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z});
  const bool scatter_order =
      num_tris <= kScatterMaxTriangles || fraction_below(m_neighbours, tile_extent) >= kScatterLocalOrder;
  v.scatter = !m_ctx.opt.sort_pairs && all_binary && !probe && scatter_order && total_tiles <= kDeviceTileBound &&
              total_tiles <= 8 * num_tris + 65536;
  if (v.scatter) {
    v.d_tile_pairs.grow(total_tiles + 1);
    v.d_tile_cursor.grow(total_tiles + 1);
  }
  v.d_tile_stat.grow(1);
  // The job's counters, zeroed with one launch (zero_ranges): the counts' extra entry (the scan's
  // total), the pairs per tile (scatter), the large triangles' number, the non-empty tiles found by
  // a scatter, the fine raster's work counter (its first launch), each target's bricks.
  std::vector<ZeroRange> zero = {{v.d_counts.data() + num_tris, sizeof(uint64_t)},
                                 {v.d_tile_pairs.data(), v.scatter ? (total_tiles + 1) * sizeof(uint32_t) : 0},
                                 {v.d_num_large.data(), sizeof(uint32_t)},
                                 {v.d_large_pairs.data(), sizeof(unsigned long long)},
                                 {v.d_tile_stat.data(), sizeof(uint64_t)},
                                 {v.d_next.data(), sizeof(unsigned int)}};
  v.next_zeroed = true;
  // Each target's brick count, for zero_ranges (and none written on the host).
  auto clear_bricks = [&](std::vector<ZeroRange>& z) {
    for (size_t t = 0; t < v.rastered.size(); ++t) {
      z.push_back({v.bricks[t]->d_count.data(), sizeof(unsigned long long)});
      v.bricks[t]->written = 0;
    }
  };
  clear_bricks(zero);
  zero_ranges(zero.data(), zero.size(), s);
  launch_coarse_count(cp, v.d_counts.data(), v.d_single.data(), v.d_large.data(), v.d_num_large.data(),
                      v.d_large_pairs.data(), v.scatter ? v.d_tile_pairs.data() : nullptr, m_ctx.num_sms, s);
  // (CUB's scan: one block's scan of the 100k dragon's 64-bit counts was measured 0.015-0.04 ms
  // slower on an H200.)
  m_ctx.cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, v.d_counts.data(), v.d_offsets.data(), int(num_tris + 1), s);
  });
  // The pairs per tile scanned into the scatter's cursor (again when the scatter is redone).
  auto scan_tile_pairs = [&] {
    scan_stored_counts<uint32_t>(v.d_tile_pairs.data(), v.d_tile_cursor.data(), total_tiles, kBlockScanMax, m_ctx.cub,
                                 s);
  };
  if (v.scatter) scan_tile_pairs();
  const uint64_t key_size = key_bits <= 32 ? 4 : 8;
  const uint64_t per_pair = 2 * key_size + 2 * 4 + 1 + 4 + 2 * (key_size + 4);  // buffers + sort temp

  // A single binary target whose pairs are scattered need not wait for their number: the pairs'
  // buffer is sized first (what it already holds, at least 3 per triangle and 65536), the job
  // runs to the end on the device, and the host reads the number after the merge; if the pairs
  // did not fit, nothing was rastered, and the job runs again from the counts, which are kept,
  // with the exact size (stage "coarse_retry"). That saves the host round trip between the count
  // and the emit, during which the GPU idled and then waited for each launch.
  const uint64_t room = m_ctx.opt.initial_pairs ? m_ctx.opt.initial_pairs
                                                : std::max<uint64_t>(v.d_tris[0].capacity(), 3 * num_tris + 65536);
  const bool speculate = v.scatter && v.rastered.size() == 1 && !m_ctx.opt.read_pairs_first &&
                         !m_ctx.opt.max_batch_pairs && room <= (uint64_t(1) << 31) - 1 && m_ctx.fits_budget(room * 8);
  // Without speculation the host reads the number of pairs next and needs the budget: asked for
  // here, while the GPU counts.
  uint64_t budget = speculate ? 0 : m_ctx.memory_budget();
  stats.tiles = 0;
  stats.virtual_tiles = 0;
  v.tiles_on_device = false;
  std::vector<SparseGrid> grids;
  uint64_t total_pairs = 0;
  bool done = false;  // (the speculative scatter rastered every pair)
  if (speculate) {
    v.any_large = true;  // (unknown: the large triangles' emit kernel is launched and reads their number)
    v.scatter_batch(m_ctx, cp, room, false, o.mode, timer);
    grids.push_back(v.merge_target(m_ctx, 0, spec, timer));
    timer.end();  // (the merge downloaded its bricks: the stream is idle)
    const auto [pairs, tiles_found] = read_scalars(s, v.d_offsets.data() + num_tris, v.d_tile_stat.data());
    total_pairs = pairs;
    done = total_pairs <= room;
    v.tiles_on_device = false;  // (read above, or found again below)
    if (done) {
      stats.tiles = tiles_found;
    } else {
      timer.begin("coarse_retry");
      grids.clear();
      scan_tile_pairs();
      std::vector<ZeroRange> again = {{v.d_tile_stat.data(), sizeof(uint64_t)}};  // (the scatter adds to it)
      clear_bricks(again);
      zero_ranges(again.data(), again.size(), s);
    }
  }
  if (!done) {
    if (speculate) {
      std::tie(v.num_large, v.large_pairs) = read_scalars(s, v.d_num_large.data(), v.d_large_pairs.data());
    } else {
      std::tie(total_pairs, v.num_large, v.large_pairs) =
          read_scalars(s, v.d_offsets.data() + num_tris, v.d_num_large.data(), v.d_large_pairs.data());
    }
    // (With the number of large triangles: their emit kernel is not launched when there are none.)
    v.any_large = v.num_large > 0;

    // Batches of consecutive triangles whose pairs fit the budget (and CUB's int sizes).
    if (!budget) budget = m_ctx.memory_budget();
    uint64_t max_pairs = std::min<uint64_t>(budget / 2 / per_pair, (uint64_t(1) << 31) - 1);
    if (m_ctx.opt.max_batch_pairs) max_pairs = std::min(max_pairs, m_ctx.opt.max_batch_pairs);
    if (max_pairs < 1024) fail(ErrorKind::kResource, "the GPU memory budget is too small for voxelization");

    uint32_t begin = 0;
    while (begin < num_tris && total_pairs > 0) {
      // Largest end with offsets[end] - offsets[begin] <= max_pairs (binary search on the device array).
      const uint64_t base = begin == 0 ? 0 : read_scalar(v.d_offsets.data() + begin, s);
      uint32_t end = uint32_t(num_tris);
      if (total_pairs - base > max_pairs) {
        uint32_t lo = begin + 1, hi = uint32_t(num_tris);
        while (lo < hi) {
          const uint32_t mid = lo + (hi - lo + 1) / 2;
          if (read_scalar(v.d_offsets.data() + mid, s) - base <= max_pairs) lo = mid;
          else hi = mid - 1;
        }
        end = lo;
        if (read_scalar(v.d_offsets.data() + end, s) - base > max_pairs)
          fail(ErrorKind::kResource, "one triangle covers more tiles than the GPU memory budget allows");
      }
      const uint64_t batch_pairs = (end == num_tris ? total_pairs : read_scalar(v.d_offsets.data() + end, s)) - base;
      const bool only_batch = begin == 0 && end == num_tris;
      cp.tri_begin = begin;
      cp.tri_end = end;
      cp.pair_base = base;
      if (batch_pairs > 0) {
        if (v.scatter && only_batch) {
          v.scatter_batch(m_ctx, cp, batch_pairs, true, o.mode, timer);  // (d_tile_stat is zero)
        } else if (key_bits <= 32) {
          v.run_batch(m_ctx, v.d_keys32, cp, batch_pairs, key_bits, o.mode, only_batch, timer, &stats);
        } else {
          v.run_batch(m_ctx, v.d_keys64, cp, batch_pairs, key_bits, o.mode, only_batch, timer, &stats);
        }
      }
      begin = end;
    }

    // Merge: per target, sort bricks by key, one brick per run of equal keys.
    for (size_t t = 0; t < v.rastered.size(); ++t) grids.push_back(v.merge_target(m_ctx, t, spec, timer));
  }
  timer.end();
  const auto stage_ms = timer.resolve();
  VT_CUDA_CHECK(cudaStreamSynchronize(s));
  if (v.tiles_on_device) stats.tiles += read_scalar(v.d_tile_stat.data(), s);
  stats.tile_pairs = total_pairs;
  add_stage_stats(stats, stage_ms, wall0);
  return grids;
}

SparseGrid gpu_voxelize_probed(const Mesh& mesh, const GridSpec& spec, const VoxelizeOptions& options,
                               const GpuOptions& gpu, GpuStageProbe* probe) {
  GpuVoxelizer v(gpu);
  v.probe = probe;
  v.set_mesh(mesh);
  return v.voxelize(spec, options);
}

}  // namespace voxtile
