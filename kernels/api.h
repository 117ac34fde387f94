// Plain C++ interface to the GPU code (no CUDA headers): device discovery and the GPU pipelines.
#pragma once

#include <string>

#include "core/voxelize.h"

namespace voxtile {

struct GpuInfo {
  bool available = false;
  int device = -1;
  std::string name;    // e.g. "NVIDIA H200"
  std::string reason;  // why not available
  size_t total_memory = 0;
};

// Whether this build has CUDA kernels at all.
bool gpu_compiled();
// Looks for a usable CUDA device (never throws).
GpuInfo query_gpu();

}  // namespace voxtile
