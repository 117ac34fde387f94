// CUDA helpers: error formatting, the stage timer, staged downloads.
#include "kernels/common.cuh"

#include "kernels/api.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

namespace voxtile {

void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
  const ErrorKind kind = ErrorKind::kResource;
  std::string msg = std::string("CUDA error: ") + cudaGetErrorString(err) + " (" + expr + " at " + file + ":" +
                    std::to_string(line) + ")";
  if (err == cudaErrorMemoryAllocation) msg = "out of GPU memory (" + std::string(expr) + ")";
  cudaGetLastError();
  throw Error(kind, msg);
}

uint64_t budget_or_free_share(uint64_t budget, uint64_t* free_bytes) {
  if (budget) return budget;
  size_t free_b = 0, total_b = 0;
  VT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (free_bytes) *free_bytes = free_b;
  return uint64_t(double(free_b) * 0.8);
}

void* pinned_scalar_slot() {
  // Portable: the slot serves every device this thread reads from. Never freed: the driver
  // reclaims it at exit, and freeing it from a thread_local destructor could run after the
  // runtime has shut down.
  thread_local void* slot = nullptr;
  if (!slot && cudaHostAlloc(&slot, 24, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    slot = nullptr;
    fail(ErrorKind::kResource, "out of page-locked host memory (24 bytes)");
  }
  return slot;
}

DeviceStream::DeviceStream(int device) {
  const GpuInfo info = query_gpu(device);
  if (!info.available) fail(ErrorKind::kResource, info.reason);
  VT_CUDA_CHECK(cudaSetDevice(info.device));
  VT_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
}

DeviceStream::~DeviceStream() {
  if (m_stream) cudaStreamDestroy(m_stream);
}

namespace {
// Timing events of this thread, per device, kept for the next timer (never destroyed: see
// pinned_scalar_slot).
std::vector<std::pair<int, cudaEvent_t>>& event_pool() {
  thread_local std::vector<std::pair<int, cudaEvent_t>> pool;
  return pool;
}
}  // namespace

StageTimer::~StageTimer() {
  for (cudaEvent_t e : m_events) event_pool().emplace_back(m_device, e);
}

size_t StageTimer::mark() {
  if (m_device < 0) VT_CUDA_CHECK(cudaGetDevice(&m_device));
  auto& pool = event_pool();
  cudaEvent_t e = nullptr;
  for (size_t i = pool.size(); i-- > 0;)
    if (pool[i].first == m_device) {
      e = pool[i].second;
      pool.erase(pool.begin() + std::ptrdiff_t(i));
      break;
    }
  if (!e) VT_CUDA_CHECK(cudaEventCreate(&e));
  m_events.push_back(e);
  VT_CUDA_CHECK(cudaEventRecord(e, m_stream));
  return m_events.size() - 1;
}

void StageTimer::begin(const char* name) {
  // The open stage going on under its own name: no boundary (an event record costs the host a few
  // microseconds, on the critical path of small jobs).
  if (m_open && m_spans.back().name == name) return;
  const size_t e = mark();
  if (m_open) m_spans.back().to = e;
  m_spans.push_back({name, e, e});
  m_open = true;
}

void StageTimer::end() {
  if (!m_open) return;
  m_spans.back().to = mark();
  m_open = false;
}

std::vector<std::pair<std::string, double>> StageTimer::resolve() {
  end();
  std::vector<std::pair<std::string, double>> out;
  for (Span& s : m_spans) {
    VT_CUDA_CHECK(cudaEventSynchronize(m_events[s.to]));
    float ms = 0;
    VT_CUDA_CHECK(cudaEventElapsedTime(&ms, m_events[s.from], m_events[s.to]));
    bool found = false;
    for (auto& [name, total] : out)
      if (name == s.name) {
        total += ms;
        found = true;
      }
    if (!found) out.emplace_back(s.name, ms);
  }
  return out;
}

namespace {
constexpr int kZeroRangesPerLaunch = 8;
struct ZeroList {
  uint32_t* p[kZeroRangesPerLaunch];
  uint64_t words[kZeroRangesPerLaunch];
  int n;
};
__global__ void zero_kernel(ZeroList z) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (int r = 0; r < z.n; ++r)
    for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < z.words[r]; i += stride) z.p[r][i] = 0;
}
}  // namespace

void zero_ranges(const ZeroRange* ranges, size_t n, cudaStream_t stream) {
  ZeroList z{};
  uint64_t most = 0;
  auto flush = [&] {
    if (z.n == 0) return;
    const unsigned blocks = unsigned(std::min<uint64_t>((most + 255) / 256, 1024));
    zero_kernel<<<blocks, 256, 0, stream>>>(z);
    VT_CUDA_CHECK_LAUNCH();
    z = ZeroList{};
    most = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    if (ranges[i].bytes == 0) continue;
    if (ranges[i].bytes % 4 != 0) fail(ErrorKind::kInternal, "zero_ranges: a length that is not a multiple of 4");
    if (z.n == kZeroRangesPerLaunch) flush();
    z.p[z.n] = static_cast<uint32_t*>(ranges[i].p);
    z.words[z.n] = ranges[i].bytes / 4;
    most = std::max<uint64_t>(most, z.words[z.n]);
    ++z.n;
  }
  flush();
}

namespace {
// f(offset, length) for the 256 KB pieces of [0, len), on CPU threads (H200 machine, 16 cores, copies
// through 16 MB chunks: 16 MB in 0.61-0.67 ms against 0.63-0.76 with 1 MB pieces, 64 MB in 4.6-4.8
// against 4.6-5.2).
template <class F>
void for_each_piece(size_t len, F&& f) {
  const size_t piece = size_t(256) << 10;
  tbb::parallel_for(size_t(0), (len + piece - 1) / piece,
                    [&](size_t p) { f(p * piece, std::min(piece, len - p * piece)); });
}
void parallel_copy(char* to, const char* from, size_t len) {
  for_each_piece(len, [&](size_t at, size_t n) { std::memcpy(to + at, from + at, n); });
}
// Writes a byte of every 4 KB page of [to, to + len) on CPU threads: a fresh allocation's pages are
// faulted in in parallel (what is written is overwritten next).
void touch_pages(char* to, size_t len) {
  for_each_piece(len, [&](size_t at, size_t n) {
    for (size_t b = at; b < at + n; b += 4096) static_cast<volatile char*>(to)[b] = 0;
  });
}
}  // namespace

StagedCopy::~StagedCopy() {
  for (cudaEvent_t e : m_done)
    if (e) cudaEventDestroy(e);
}

char* StagedCopy::prepare(size_t n) {
  const size_t want = 2 * std::min(n, kChunk);
  if (m_stage.bytes() < want) {
    // Not pinned yet (or too small): copy without staging until the copies made so without reach
    // kPinAfter times what pinning would take.
    if (m_unstaged + n < kPinAfter * want) {
      m_unstaged += n;
      return nullptr;
    }
    m_unstaged = 0;
  }
  for (cudaEvent_t& e : m_done)
    if (!e) VT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return static_cast<char*>(m_stage.grow(want));
}

void StagedCopy::download(void* dst, const void* src, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const size_t chunk = kChunk;
  const size_t num_chunks = (n + chunk - 1) / chunk;
  char* stage = prepare(n);
  if (!stage) {
    // Straight into dst, its pages touched first on all cores (a fresh allocation would otherwise
    // fault them in one at a time inside the driver's copy: 64 MB in 44-59 ms against 9-12 ms
    // touched first, on an H200 machine).
    touch_pages(static_cast<char*>(dst), n);
    VT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream));
    VT_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  auto issue = [&](size_t c) {
    const size_t len = std::min(chunk, n - c * chunk);
    VT_CUDA_CHECK(cudaMemcpyAsync(stage + (c & 1) * chunk, static_cast<const char*>(src) + c * chunk, len,
                                  cudaMemcpyDeviceToHost, stream));
    VT_CUDA_CHECK(cudaEventRecord(m_done[c & 1], stream));
  };
  issue(0);
  for (size_t c = 0; c < num_chunks; ++c) {
    if (c + 1 < num_chunks) issue(c + 1);  // its buffer was emptied in step c - 1
    VT_CUDA_CHECK(cudaEventSynchronize(m_done[c & 1]));
    const size_t len = std::min(chunk, n - c * chunk);
    const char* from = stage + (c & 1) * chunk;
    char* to = static_cast<char*>(dst) + c * chunk;
    parallel_copy(to, from, len);
  }
}

void StagedCopy::upload(void* dst, const void* src, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const size_t chunk = kChunk;
  const size_t num_chunks = (n + chunk - 1) / chunk;
  char* stage = prepare(n);
  if (!stage) {
    // From pageable memory the driver copies through its own staging and returns when src may be
    // reused.
    VT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream));
    return;
  }
  for (size_t c = 0; c < num_chunks; ++c) {
    if (c >= 2) VT_CUDA_CHECK(cudaEventSynchronize(m_done[c & 1]));  // chunk c - 2 has left this buffer
    const size_t len = std::min(chunk, n - c * chunk);
    char* to = stage + (c & 1) * chunk;
    const char* from = static_cast<const char*>(src) + c * chunk;
    parallel_copy(to, from, len);
    VT_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + c * chunk, to, len, cudaMemcpyHostToDevice, stream));
    VT_CUDA_CHECK(cudaEventRecord(m_done[c & 1], stream));
  }
  // The staging buffers are reused by the next call: wait for the last two chunks.
  for (cudaEvent_t e : m_done) VT_CUDA_CHECK(cudaEventSynchronize(e));
}

}  // namespace voxtile
