// CUDA helpers: error formatting and the stage timer.
#include "kernels/common.cuh"

namespace voxtile {

void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
  const ErrorKind kind = ErrorKind::kResource;
  std::string msg = std::string("CUDA error: ") + cudaGetErrorString(err) + " (" + expr + " at " + file + ":" +
                    std::to_string(line) + ")";
  if (err == cudaErrorMemoryAllocation) msg = "out of GPU memory (" + std::string(expr) + ")";
  cudaGetLastError();
  throw Error(kind, msg);
}

StageTimer::~StageTimer() {
  for (Span& s : m_spans) {
    cudaEventDestroy(s.start);
    cudaEventDestroy(s.stop);
  }
}

void StageTimer::begin(const char* name) {
  end();
  Span s{name, nullptr, nullptr};
  VT_CUDA_CHECK(cudaEventCreate(&s.start));
  VT_CUDA_CHECK(cudaEventCreate(&s.stop));
  VT_CUDA_CHECK(cudaEventRecord(s.start, m_stream));
  m_spans.push_back(s);
  m_open = true;
}

void StageTimer::end() {
  if (!m_open) return;
  VT_CUDA_CHECK(cudaEventRecord(m_spans.back().stop, m_stream));
  m_open = false;
}

std::vector<std::pair<std::string, double>> StageTimer::resolve() {
  end();
  std::vector<std::pair<std::string, double>> out;
  for (Span& s : m_spans) {
    VT_CUDA_CHECK(cudaEventSynchronize(s.stop));
    float ms = 0;
    VT_CUDA_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
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

}  // namespace voxtile
