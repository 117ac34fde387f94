// The CSG point pipeline on the GPU (seed: csg-pointcloud-compaction) and the CSG solid.
//
// Per step (a batch of primitives [b0, b1)): the index space is the live samples (an upper bound
// `bound` of their count is known on the host; the exact count stays on the device) followed by
// the batch's new samples. One flag pass runs mode A on the first part and modes B.1/B.2 on the
// second (core/csg.h), writing ballot keep words and per-tile counts; the scan turns the counts
// into offsets; the scatter moves positions (12-byte float3) and, in the parallel array, the sample
// parameters; "finalize" copies the total into the live count. No host round trip between steps.
#include <algorithm>

#include "kernels/points/state.cuh"
#include "kernels/testing.h"

namespace voxtile {
namespace {

// Modes B.1/B.2 (and the later primitives of the batch) for the new samples, before the flag pass:
// a new sample tests up to all earlier primitives, far more work than an old sample's few, so it
// gets its own launch with one sample per thread and the primitives staged through shared memory
// in chunks, top down: csg_keep_new's loop over csg_sample_vote, one chunk at a time.
constexpr int kNewThreads = 128;
constexpr uint32_t kNewChunk = 192;  // primitives per shared-memory chunk (19 KB)

__global__ void __launch_bounds__(kNewThreads) new_keep_kernel(const Vec3f* pos, const SampleParams* par, uint64_t n,
                                                                const CsgPrimitive* prims, uint32_t b1, uint8_t* keep) {
  __shared__ CsgPrimitive chunk[kNewChunk];
  const uint64_t i = blockIdx.x * uint64_t(kNewThreads) + threadIdx.x;
  const bool valid = i < n;
  const Vec3f x = valid ? pos[i] : Vec3f{0, 0, 0};
  const uint32_t k = valid ? par[i].prim : 0;
  const bool sub_k = valid && prims[k].subtract;
  int decided = valid ? -1 : 0;  // -1 open, 0 culled, 1 kept
  for (uint32_t top = b1; top > 0;) {
    if (!__syncthreads_or(decided < 0)) break;
    const uint32_t base = top > kNewChunk ? top - kNewChunk : 0;
    for (uint32_t q = threadIdx.x; q < top - base; q += kNewThreads) chunk[q] = prims[base + q];
    __syncthreads();
    for (uint32_t j = top; decided < 0 && j-- > base;)
      if (j != k) decided = csg_sample_vote(chunk[j - base], j, k, sub_k, x);
    top = base;
  }
  if (valid) keep[i] = decided < 0 ? (sub_k ? 0 : 1) : uint8_t(decided);
}

// n rounded up to whole compaction tiles.
inline uint64_t tile_round(uint64_t n) { return (n + kCompactTile - 1) / kCompactTile * kCompactTile; }

struct CsgPred {
  const Vec3f* pos;
  const uint8_t* new_keep;
  const CsgPrimitive* prims;
  const uint64_t* live;
  uint64_t bound;
  uint32_t b0, b1;
  __device__ bool operator()(uint64_t i) const {
    if (i < bound) {
      const Vec3f x = pos[i];  // read before the live test: slots past the count are allocated
      return i < __ldg(live) && csg_keep_old(prims, b0, b1, x);
    }
    return new_keep[i - bound] != 0;
  }
};

struct CsgMove {
  const Vec3f* pos;
  const SampleParams* par;
  const Vec3f* new_pos;
  const SampleParams* new_par;
  Vec3f* out_pos;
  SampleParams* out_par;
  uint64_t bound;
  __device__ void operator()(uint64_t i, uint64_t d) const {
    if (i < bound) {
      out_pos[d] = pos[i];
      out_par[d] = par[i];
    } else {
      out_pos[d] = new_pos[i - bound];
      out_par[d] = new_par[i - bound];
    }
  }
};

// One step over the state; new samples are in m.new_pos/new_par. Stages go to `timer` if given.
void csg_step(GpuPoints::Impl& m, uint32_t b0, uint32_t b1, uint64_t nn, StageTimer* timer) {
  const uint64_t n = m.bound + nn;
  const int out = 1 - m.cur;
  if (n > m.pos[out].capacity()) {
    // Growing anyway: first shrink the bound to the exact live count (the only host read-back).
    if (m.bound) m.bound = read_live(m);
    const uint64_t need = m.bound + nn;
    if (need * (sizeof(Vec3f) + sizeof(SampleParams)) * 2 > m.memory_budget())
      fail(ErrorKind::kResource, "CSG: " + std::to_string(need) + " samples do not fit the GPU memory budget");
    if (need > m.pos[out].capacity()) {
      m.pos[out].grow(tile_round(need + need / 4));
      m.par[out].grow(tile_round(need + need / 4));
    }
  }
  // The live samples take whole tiles (their bound rounded up; slots past the live count are never
  // kept), so the new samples' tiles can be flagged on a second stream, right after their mode B
  // pre-pass, while the first stream flags the live samples (mode A).
  m.bound = tile_round(m.bound);
  const uint64_t total = m.bound + nn;
  // Output capacity in whole tiles too: it is the next step's input, read up to its rounded bound.
  if (tile_round(total) > m.pos[out].capacity()) {
    m.pos[out].grow(tile_round(total));
    m.par[out].grow(tile_round(total));
  }
  if (timer) timer->begin("intersect");
  m.new_keep.grow(nn + 1);
  compact_begin(m.ws, total);
  const CsgPred pred{m.pos[m.cur].data(), m.new_keep.data(), m.prims.data(), m.live.data(), m.bound, b0, b1};
  const uint64_t split = m.bound / kCompactTile;
  if (nn) {
    VT_CUDA_CHECK(cudaEventRecord(m.fork, m.stream));
    VT_CUDA_CHECK(cudaStreamWaitEvent(m.side, m.fork, 0));
    new_keep_kernel<<<unsigned((nn + kNewThreads - 1) / kNewThreads), kNewThreads, 0, m.side>>>(
        m.new_pos.data(), m.new_par.data(), nn, m.prims.data(), b1, m.new_keep.data());
    VT_CUDA_CHECK_LAUNCH();
    compact_flags_tiles(m.ws, split, compact_tiles(total), pred, m.side);
    VT_CUDA_CHECK(cudaEventRecord(m.join, m.side));
  }
  compact_flags_tiles(m.ws, 0, split, pred, m.stream);
  if (nn) VT_CUDA_CHECK(cudaStreamWaitEvent(m.stream, m.join, 0));
  if (timer) timer->begin("scan");
  compact_scan(m.ws, m.method, m.stream);
  if (timer) timer->begin("compact");
  compact_scatter(m.ws,
                  CsgMove{m.pos[m.cur].data(), m.par[m.cur].data(), m.new_pos.data(), m.new_par.data(),
                          m.pos[out].data(), m.par[out].data(), m.bound},
                  m.stream);
  if (timer) timer->begin("finalize");
  VT_CUDA_CHECK(cudaMemcpyAsync(m.live.data(), m.ws.total(), sizeof(uint64_t), cudaMemcpyDeviceToDevice, m.stream));
  if (timer) timer->end();
  m.cur = out;
  m.bound = total;
}

void upload_new(GpuPoints::Impl& m, const Vec3f* pos, const SampleParams* par, uint64_t nn) {
  m.new_pos.grow(nn + 1);
  m.new_par.grow(nn + 1);
  if (!nn) return;
  m.staging.upload(m.new_pos.data(), pos, nn * sizeof(Vec3f), m.stream);
  m.staging.upload(m.new_par.data(), par, nn * sizeof(SampleParams), m.stream);
}

void upload_prims(GpuPoints::Impl& m, const CsgPrimitive* prims, uint32_t np, uint32_t at) {
  if (m.prims.capacity() < size_t(at) + np) {
    DeviceBuffer<CsgPrimitive> bigger(size_t(at) + np + 64);
    if (at)
      VT_CUDA_CHECK(cudaMemcpyAsync(bigger.data(), m.prims.data(), size_t(at) * sizeof(CsgPrimitive),
                                    cudaMemcpyDeviceToDevice, m.stream));
    m.prims = std::move(bigger);
  }
  if (np)
    VT_CUDA_CHECK(cudaMemcpyAsync(m.prims.data() + at, prims, size_t(np) * sizeof(CsgPrimitive),
                                  cudaMemcpyHostToDevice, m.stream));
}

}  // namespace

uint64_t read_live(GpuPoints::Impl& m) {
  uint64_t v = 0;
  VT_CUDA_CHECK(cudaMemcpyAsync(&v, m.live.data(), sizeof(v), cudaMemcpyDeviceToHost, m.stream));
  VT_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  return v;
}

GpuPoints::GpuPoints(int device, ScanMethod scan, uint64_t memory_budget) : m(new Impl) {
  try {
    const GpuInfo info = query_gpu(device);
    if (!info.available) fail(ErrorKind::kResource, info.reason);
    m->device = info.device;
    m->method = scan;
    m->budget = memory_budget;
    m->name = info.name;
    VT_CUDA_CHECK(cudaSetDevice(info.device));
    VT_CUDA_CHECK(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    VT_CUDA_CHECK(cudaStreamCreateWithFlags(&m->side, cudaStreamNonBlocking));
    VT_CUDA_CHECK(cudaEventCreateWithFlags(&m->fork, cudaEventDisableTiming));
    VT_CUDA_CHECK(cudaEventCreateWithFlags(&m->join, cudaEventDisableTiming));
    m->live.grow(1);
  } catch (...) {
    delete m;
    throw;
  }
}

GpuPoints::~GpuPoints() {
  cudaSetDevice(m->device);
  if (m->fork) cudaEventDestroy(m->fork);
  if (m->join) cudaEventDestroy(m->join);
  if (m->side) cudaStreamDestroy(m->side);
  if (m->stream) cudaStreamDestroy(m->stream);
  delete m;
}

const std::string& GpuPoints::device_name() const { return m->name; }

CsgSamples GpuPoints::csg(const CsgScript& script, const CsgSamples& samples, uint32_t batch, CsgStats* stats) {
  VT_CUDA_CHECK(cudaSetDevice(m->device));
  const uint32_t np = uint32_t(script.prims.size());
  if (batch == 0 || batch > np) batch = np;
  StageTimer timer(m->stream);
  timer.begin("upload");
  upload_prims(*m, script.prims.data(), np, 0);
  m->num_prims = np;
  m->bound = 0;
  m->cur = 0;
  VT_CUDA_CHECK(cudaMemsetAsync(m->live.data(), 0, sizeof(uint64_t), m->stream));
  uint32_t steps = 0;
  for (uint32_t b0 = 0; b0 < np; b0 += batch) {
    const uint32_t b1 = std::min(np, b0 + batch);
    const uint64_t s0 = samples.begin[b0], nn = samples.begin[b1] - s0;
    timer.begin("upload");
    upload_new(*m, samples.positions.data() + s0, samples.params.data() + s0, nn);
    csg_step(*m, b0, b1, nn, &timer);
    ++steps;
  }
  timer.begin("download");
  const uint64_t kept = read_live(*m);
  CsgSamples out;
  out.positions.resize(kept);
  out.params.resize(kept);
  if (kept) {
    VT_CUDA_CHECK(cudaMemcpyAsync(out.positions.data(), m->pos[m->cur].data(), kept * sizeof(Vec3f),
                                  cudaMemcpyDeviceToHost, m->stream));
    VT_CUDA_CHECK(cudaMemcpyAsync(out.params.data(), m->par[m->cur].data(), kept * sizeof(SampleParams),
                                  cudaMemcpyDeviceToHost, m->stream));
  }
  VT_CUDA_CHECK(cudaStreamSynchronize(m->stream));
  const auto stage_ms = timer.resolve();
  out.begin.assign(np + 1, 0);
  for (const SampleParams& p : out.params) ++out.begin[p.prim + 1];
  for (uint32_t k = 0; k < np; ++k) out.begin[k + 1] += out.begin[k];
  if (stats) {
    stats->samples = samples.positions.size();
    stats->kept = kept;
    stats->steps = steps;
    stats->device = m->name;
    stats->stage_ms = stage_ms;
  }
  return out;
}

void gpu_csg_bench_load(GpuPoints& gpu, const Vec3f* pos, const SampleParams* params, uint64_t n,
                        const CsgPrimitive* prims, uint32_t np) {
  GpuPoints::Impl* m = &gpu.impl();
  VT_CUDA_CHECK(cudaSetDevice(m->device));
  m->cur = 0;
  m->pos[0].grow(tile_round(n) + 1);
  m->par[0].grow(tile_round(n) + 1);
  VT_CUDA_CHECK(cudaMemcpyAsync(m->pos[0].data(), pos, n * sizeof(Vec3f), cudaMemcpyHostToDevice, m->stream));
  VT_CUDA_CHECK(cudaMemcpyAsync(m->par[0].data(), params, n * sizeof(SampleParams), cudaMemcpyHostToDevice, m->stream));
  VT_CUDA_CHECK(cudaMemcpyAsync(m->live.data(), &n, sizeof(n), cudaMemcpyHostToDevice, m->stream));
  upload_prims(*m, prims, np, 0);
  m->num_prims = np;
  m->bound = n;
  VT_CUDA_CHECK(cudaStreamSynchronize(m->stream));
}

std::vector<std::pair<std::string, double>> gpu_csg_bench_step(GpuPoints& gpu, const CsgPrimitive* batch, uint32_t nb,
                                                               const Vec3f* pos, const SampleParams* params,
                                                               uint64_t nn, uint64_t* live) {
  GpuPoints::Impl* m = &gpu.impl();
  VT_CUDA_CHECK(cudaSetDevice(m->device));
  StageTimer timer(m->stream);
  timer.begin("upload");
  upload_prims(*m, batch, nb, m->num_prims);
  upload_new(*m, pos, params, nn);
  // Output buffers sized before timing, as a steady-state pipeline has them.
  const uint64_t n = tile_round(tile_round(m->bound) + nn);
  m->pos[1 - m->cur].grow(n);
  m->par[1 - m->cur].grow(n);
  m->ws.reserve(n);
  VT_CUDA_CHECK(cudaStreamSynchronize(m->stream));
  csg_step(*m, m->num_prims, m->num_prims + nb, nn, &timer);
  m->num_prims += nb;
  auto ms = timer.resolve();
  if (live) *live = read_live(*m);
  return ms;
}

// ---- the solid ------------------------------------------------------------------------------

namespace {

constexpr int kSolidThreads = 128;
constexpr int kSolidList = 2048;

__device__ inline bool overlaps(const CsgPrimitive& p, const Vec3f& lo, const Vec3f& hi) {
  return p.lo[0] < hi.x && p.hi[0] > lo.x && p.lo[1] < hi.y && p.hi[1] > lo.y && p.lo[2] < hi.z && p.hi[2] > lo.z;
}

// One block per brick of the slab: the primitives whose bounds meet the brick's voxel centres (in
// order), then the reverse first-hit test per voxel, 4 voxels a thread, ballot words as the mask.
__global__ void __launch_bounds__(kSolidThreads) solid_kernel(const CsgPrimitive* prims, uint32_t np, GridView g,
                                                              int64_t bx0, uint32_t* masks) {
  __shared__ uint32_t list[kSolidList];
  __shared__ uint32_t warp_n[kSolidThreads / 32];
  __shared__ uint32_t list_n;
  const uint64_t b = blockIdx.x;
  const int64_t per_x = g.bricks[1] * g.bricks[2];
  const int32_t bx = int32_t(bx0 + int64_t(b / per_x)), by = int32_t((b / g.bricks[2]) % g.bricks[1]), bz = int32_t(b % g.bricks[2]);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const Vec3f lo = g.center(bx * 8, by * 8, bz * 8);
  const Vec3f hi = g.center(min(bx * 8 + 7, g.dims[0] - 1), min(by * 8 + 7, g.dims[1] - 1),
                                      min(bz * 8 + 7, g.dims[2] - 1));
  if (threadIdx.x == 0) list_n = 0;
  __syncthreads();
  for (uint32_t base = 0; base < np; base += kSolidThreads) {
    const uint32_t j = base + threadIdx.x;
    const bool hit = j < np && overlaps(prims[j], lo, hi);
    const uint32_t bits = __ballot_sync(kFull, hit);
    if (lane == 0) warp_n[warp] = __popc(bits);
    __syncthreads();
    uint32_t before = list_n;
    for (int w = 0; w < warp; ++w) before += warp_n[w];
    const uint32_t at = before + __popc(bits & ((1u << lane) - 1));
    if (hit && at < kSolidList) list[at] = j;
    __syncthreads();
    if (threadIdx.x == 0) {
      uint32_t s = 0;
      for (int w = 0; w < kSolidThreads / 32; ++w) s += warp_n[w];
      list_n += s;
    }
    __syncthreads();
  }
  const uint32_t n_list = list_n;
  const bool all = n_list > kSolidList;  // too many to list: test every primitive
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int off = r * kSolidThreads + threadIdx.x;
    const int32_t i = bx * 8 + (off >> 6), j = by * 8 + ((off >> 3) & 7), k = bz * 8 + (off & 7);
    bool inside = false;
    if (n_list && i < g.dims[0] && j < g.dims[1] && k < g.dims[2]) {
      const Vec3f x = g.center(i, j, k);
      if (all) {
        inside = csg_solid_inside(prims, np, x);
      } else {
        for (uint32_t q = n_list; q-- > 0;) {
          const CsgPrimitive& p = prims[list[q]];
          if (csg_inside(p, x)) {
            inside = p.subtract == 0;
            break;
          }
        }
      }
    }
    const uint32_t bits = __ballot_sync(kFull, inside);
    if (lane == 0) masks[b * 16 + r * 4 + warp] = bits;
  }
}

struct BrickPred {
  const uint32_t* masks;
  __device__ bool operator()(uint64_t b) const {
    uint32_t any = 0;
#pragma unroll
    for (int w = 0; w < 16; ++w) any |= masks[b * 16 + w];
    return any != 0;
  }
};
struct BrickMove {
  const uint32_t* masks;
  uint64_t* out_keys;
  uint32_t* out_masks;
  int64_t bx0, nby, nbz;
  __device__ void operator()(uint64_t b, uint64_t d) const {
    const int64_t per_x = nby * nbz;
    out_keys[d] = brick_key(int32_t(bx0 + int64_t(b) / per_x), int32_t((int64_t(b) / nbz) % nby), int32_t(int64_t(b) % nbz));
#pragma unroll
    for (int w = 0; w < 16; ++w) out_masks[d * 16 + w] = masks[b * 16 + w];
  }
};

}  // namespace

SparseGrid GpuPoints::solid(const CsgScript& script, const GridSpec& spec, CsgStats* stats) {
  VT_CUDA_CHECK(cudaSetDevice(m->device));
  const uint32_t np = uint32_t(script.prims.size());
  SparseGrid grid;
  grid.spec = spec;
  grid.name = "solid";
  const GridView g = GridView::make(spec);
  StageTimer timer(m->stream);
  timer.begin("upload");
  upload_prims(*m, script.prims.data(), np, 0);
  // Slabs of brick columns: masks (64 B), outputs (72 B) and compaction state per brick.
  const int64_t per_x = g.bricks[1] * g.bricks[2];
  const uint64_t per_brick = 64 + 72 + 8;
  int64_t slab = std::max<int64_t>(1, int64_t(std::min<uint64_t>(m->memory_budget() / 2, uint64_t(1) << 30) /
                                              (per_brick * uint64_t(per_x))));
  slab = std::min<int64_t>(slab, g.bricks[0]);
  slab = std::min<int64_t>(slab, std::max<int64_t>(1, int64_t(0x7fffffff) / per_x));
  const uint64_t slab_bricks = uint64_t(slab * per_x);
  m->slab_masks.grow(slab_bricks * 16);
  m->out_keys.grow(slab_bricks);
  m->out_masks.grow(slab_bricks * 16);
  for (int64_t bx0 = 0; bx0 < g.bricks[0]; bx0 += slab) {
    const uint64_t nbricks = uint64_t(std::min(slab, g.bricks[0] - bx0) * per_x);
    timer.begin("inside");
    solid_kernel<<<unsigned(nbricks), kSolidThreads, 0, m->stream>>>(m->prims.data(), np, g, bx0, m->slab_masks.data());
    VT_CUDA_CHECK_LAUNCH();
    timer.begin("compact");
    compact_flags(m->ws, nbricks, BrickPred{m->slab_masks.data()}, m->stream);
    compact_scan(m->ws, m->method, m->stream);
    compact_scatter(m->ws, BrickMove{m->slab_masks.data(), m->out_keys.data(), m->out_masks.data(), bx0, g.bricks[1], g.bricks[2]},
                    m->stream);
    timer.begin("download");
    uint64_t kept = 0;
    VT_CUDA_CHECK(cudaMemcpyAsync(&kept, m->ws.total(), sizeof(kept), cudaMemcpyDeviceToHost, m->stream));
    VT_CUDA_CHECK(cudaStreamSynchronize(m->stream));
    const size_t at = grid.keys.size();
    grid.keys.resize(at + kept);
    grid.masks.resize(at + kept);
    m->staging.download(grid.keys.data() + at, m->out_keys.data(), kept * sizeof(uint64_t), m->stream);
    m->staging.download(grid.masks.data() + at, m->out_masks.data(), kept * sizeof(BrickMask), m->stream);
    grid.make_runs_from(at);  // the interior as runs, as mesh solids hold it
  }
  const auto stage_ms = timer.resolve();
  if (stats) {
    stats->device = m->name;
    stats->stage_ms = stage_ms;
  }
  return grid;
}

}  // namespace voxtile
