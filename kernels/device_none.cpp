// GPU interface of a build without a CUDA compiler: no device is ever available.
#include "kernels/api.h"

namespace voxtile {

bool gpu_compiled() { return false; }

GpuInfo query_gpu() {
  GpuInfo info;
  info.reason = "this voxtile was built without CUDA";
  return info;
}

}  // namespace voxtile
