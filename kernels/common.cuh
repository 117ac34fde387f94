// CUDA helpers (needs nvcc): error checking that throws, RAII device memory, CUB through one
// helper, per-stage event timing.
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/targets.h"

namespace voxtile {

// Every lane of a warp (the mask of the *_sync intrinsics).
constexpr unsigned kFull = 0xffffffffu;

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line);

// Throws Error(kResource) naming the file, line, expression and CUDA's message.
#define VT_CUDA_CHECK(x)                                                    \
  do {                                                                      \
    const cudaError_t vt_err_ = (x);                                        \
    if (vt_err_ != cudaSuccess) throw_cuda_error(vt_err_, #x, __FILE__, __LINE__); \
  } while (0)
#define VT_CUDA_CHECK_LAUNCH() VT_CUDA_CHECK(cudaGetLastError())

// Move-only device array that only grows (contents are not preserved by grow()).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { grow(n); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : m_ptr(o.m_ptr), m_cap(o.m_cap) {
    o.m_ptr = nullptr;
    o.m_cap = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(m_ptr, o.m_ptr);
    std::swap(m_cap, o.m_cap);
    return *this;
  }
  // Ensures room for n elements; reallocates (discarding contents) when larger than the capacity.
  void grow(size_t n) {
    if (n <= m_cap) return;
    release();
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, n * sizeof(T));
    if (err != cudaSuccess) {
      cudaGetLastError();
      fail(ErrorKind::kResource, "out of GPU memory allocating " + std::to_string(n * sizeof(T)) + " bytes");
    }
    m_ptr = static_cast<T*>(p);
    m_cap = n;
  }
  T* data() const { return m_ptr; }
  size_t capacity() const { return m_cap; }
  size_t bytes() const { return m_cap * sizeof(T); }

 private:
  void release() {
    if (m_ptr) cudaFree(m_ptr);
    m_ptr = nullptr;
    m_cap = 0;
  }
  T* m_ptr = nullptr;
  size_t m_cap = 0;
};

// Page-locked host staging memory that only grows (for fast device-to-host copies).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (m_ptr) cudaFreeHost(m_ptr);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* grow(size_t bytes) {
    if (bytes > m_cap) {
      if (m_ptr) cudaFreeHost(m_ptr);
      m_ptr = nullptr;
      m_cap = 0;
      if (cudaHostAlloc(&m_ptr, bytes, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        fail(ErrorKind::kResource, "out of page-locked host memory (" + std::to_string(bytes) + " bytes)");
      }
      m_cap = bytes;
    }
    return m_ptr;
  }
  size_t bytes() const { return m_cap; }

 private:
  void* m_ptr = nullptr;
  size_t m_cap = 0;
};

// Copies between the device and pageable (possibly untouched) host memory: chunks go by DMA through
// two pinned staging buffers in turn while CPU threads copy the previous chunk in or out, so the
// copy runs at DMA speed instead of one thread's page-faulting memcpy (6x faster for multi-GB grids).
// Pinning is not free: on an H200 machine cudaHostAlloc took 0.6 ms per MB (16 MB 10 ms, 32 MB 19
// ms), while a copy through staging saved about 0.06 ms per MB against a plain copy into memory
// touched first (64 MB: 4.6-5.2 ms against 8.5-12.3 ms). So the buffers are pinned (or grown) only
// once the copies made without them add up to kPinAfter times their size (rent or buy: the copies'
// extra cost is then about what the pinning costs): a process that voxelizes one mesh of up to
// 320 MB of output pins nothing, a batch pins after a few jobs.
class StagedCopy {
 public:
  StagedCopy() = default;
  ~StagedCopy();
  StagedCopy(const StagedCopy&) = delete;
  StagedCopy& operator=(const StagedCopy&) = delete;
  // Copies n bytes; returns when they are in dst.
  void download(void* dst, const void* src, size_t n, cudaStream_t stream);
  // Host to device the same way (CPU threads fill one pinned buffer while the other is in flight);
  // returns when src may be reused (the last chunk is queued on `stream`).
  void upload(void* dst, const void* src, size_t n, cudaStream_t stream);
  size_t pinned_bytes() const { return m_stage.bytes(); }  // the staging buffers' size (0: none)

 private:
  static constexpr size_t kChunk = size_t(16) << 20;
  static constexpr size_t kPinAfter = 10;
  // The two staging buffers (and their events), or null: copy this one without them.
  char* prepare(size_t n);
  PinnedBuffer m_stage;
  size_t m_unstaged = 0;  // bytes copied without staging since the buffers last grew
  cudaEvent_t m_done[2] = {nullptr, nullptr};
};

// A GPU memory budget: `budget`, or where it is 0 (the default of every --gpu-memory) 80% of the
// current device's free memory, whose size then goes to *free_bytes when given.
uint64_t budget_or_free_share(uint64_t budget, uint64_t* free_bytes = nullptr);

// Temporary storage for CUB calls: query the size with a null pointer, grow, run.
class CubTemp {
 public:
  template <class F>
  void run(F&& call) {
    size_t bytes = 0;
    VT_CUDA_CHECK(call(static_cast<void*>(nullptr), bytes));
    m_buf.grow(bytes + 1);
    VT_CUDA_CHECK(call(static_cast<void*>(m_buf.data()), bytes));
  }

 private:
  DeviceBuffer<unsigned char> m_buf;
};

// A device range for zero_ranges: its start and its length in bytes (a multiple of 4).
struct ZeroRange {
  void* p;
  size_t bytes;
};
// Zeroes the ranges with one kernel launch (empty ones skipped). A small job's GPU waits on the
// host's calls, and a cudaMemsetAsync costs the host about as long as a kernel launch (3-5 us each on
// an H100 machine), so a job's counters are cleared together.
void zero_ranges(const ZeroRange* ranges, size_t n, cudaStream_t stream);

// Grows `buf` to at least n elements, keeping the first `used`.
template <class T>
inline void grow_keep(DeviceBuffer<T>& buf, size_t n, size_t used, cudaStream_t stream) {
  if (n <= buf.capacity()) return;
  DeviceBuffer<T> bigger(n);
  if (used) VT_CUDA_CHECK(cudaMemcpyAsync(bigger.data(), buf.data(), used * sizeof(T), cudaMemcpyDeviceToDevice, stream));
  buf = std::move(bigger);
}

// 24 bytes of page-locked memory per host thread (allocated on first use, kept until exit) for
// read_scalar: a copy into pageable memory goes through the driver's staging buffer.
void* pinned_scalar_slot();

// One value from the device (synchronises the stream).
template <class T>
inline T read_scalar(const T* d, cudaStream_t stream) {
  static_assert(sizeof(T) <= 16, "read_scalar reads at most 16 bytes");
  void* slot = pinned_scalar_slot();
  VT_CUDA_CHECK(cudaMemcpyAsync(slot, d, sizeof(T), cudaMemcpyDeviceToHost, stream));
  VT_CUDA_CHECK(cudaStreamSynchronize(stream));
  T v;
  std::memcpy(&v, slot, sizeof(T));
  return v;
}

// Several values (up to 3, 8 bytes each) from the device with one synchronisation.
template <class... T>
inline std::tuple<T...> read_scalars(cudaStream_t stream, const T*... d) {
  static_assert(sizeof...(T) <= 3 && ((sizeof(T) <= 8) && ...), "read_scalars reads at most 3 values of 8 bytes");
  char* slot = static_cast<char*>(pinned_scalar_slot());
  size_t at = 0;
  auto copy = [&](const void* from, size_t bytes) {
    VT_CUDA_CHECK(cudaMemcpyAsync(slot + 8 * at++, from, bytes, cudaMemcpyDeviceToHost, stream));
  };
  (copy(d, sizeof(T)), ...);
  VT_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::tuple<T...> v;
  std::apply(
      [&](auto&... x) {
        size_t k = 0;
        ((std::memcpy(&x, slot + 8 * k++, sizeof(x))), ...);
      },
      v);
  return v;
}

// Bits that hold the values 0..n-1 (at least 1): radix sort key widths.
inline int bits_for(uint64_t n) {
  int b = 1;
  while (b < 64 && (uint64_t(1) << b) < n) ++b;
  return b;
}

// The launch of a one-dimensional kernel over n items (none when n is 0), checked.
inline unsigned blocks_for(uint64_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }
template <class... Params, class... Args>
void launch_1d(void (*kernel)(Params...), uint64_t n, unsigned threads, cudaStream_t stream, Args&&... args) {
  if (n == 0) return;
  kernel<<<blocks_for(n, threads), threads, 0, stream>>>(std::forward<Args>(args)...);
  VT_CUDA_CHECK_LAUNCH();
}

#if defined(__CUDACC__)
// The atomic form of blend32 (core/targets.h) on shared or global memory: OR, add, max of codes.
template <Word W>
__device__ inline void atomic_blend32(uint32_t* p, uint32_t v) {
  static_assert(W != Word::kAdd64, "64-bit words add per channel");
  if constexpr (W == Word::kBit) atomicOr(p, v);
  else if constexpr (W == Word::kAdd32) atomicAdd(p, v);
  else atomicMax(p, v);
}

// The inclusive prefix sum of v over the warp's lanes (every lane of the warp calls it).
__device__ inline uint32_t warp_inclusive_sum(uint32_t v) {
  const uint32_t lane = threadIdx.x & 31u;
  for (uint32_t d = 1; d < 32; d <<= 1) {
    const uint32_t x = __shfl_up_sync(kFull, v, d);
    if (lane >= d) v += x;
  }
  return v;
}
// The first lane whose inclusive prefix sum `incl` (a warp-wide non-decreasing sequence) exceeds k.
__device__ inline uint32_t find_owner(uint32_t incl, uint32_t k) {
  uint32_t owner = 0;
  for (uint32_t step = 16; step >= 1; step >>= 1) {
    const uint32_t probe = __shfl_sync(kFull, incl, owner + step - 1);
    if (probe <= k) owner += step;
  }
  return owner;
}
#endif

// Records named stages with CUDA events; resolve() sums them after a synchronisation.
// A non-blocking stream on GPU `device`, made current first (Error(kResource) naming why when the
// device is unusable); destroyed with the object. For one-shot pipelines (marching cubes, pictures).
class DeviceStream {
 public:
  explicit DeviceStream(int device);
  ~DeviceStream();
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  cudaStream_t get() const { return m_stream; }

 private:
  cudaStream_t m_stream = nullptr;
};

class StageTimer {
 public:
  explicit StageTimer(cudaStream_t stream) : m_stream(stream) {}
  ~StageTimer();
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  void begin(const char* name);  // ends the previous stage, if any (unless it has this name: it goes on)
  void end();
  // Milliseconds per stage name, in first-seen order; synchronises on the last event.
  std::vector<std::pair<std::string, double>> resolve();

 private:
  // Consecutive stages share their boundary: one event recorded per boundary, taken from a pool
  // kept per thread and device (creating events took as long as the small kernels they time).
  struct Span {
    std::string name;
    size_t from, to;  // indices into m_events
  };
  size_t mark();
  cudaStream_t m_stream;
  int m_device = -1;
  std::vector<cudaEvent_t> m_events;
  std::vector<Span> m_spans;
  bool m_open = false;
};

}  // namespace voxtile
