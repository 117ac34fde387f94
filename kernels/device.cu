// CUDA device discovery.
#include <cuda_runtime.h>

#include "kernels/api.h"

namespace voxtile {

bool gpu_compiled() { return true; }

GpuInfo query_gpu() {
  GpuInfo info;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    info.reason = "no CUDA GPU or driver found";
    cudaGetLastError();
    return info;
  }
  if (err != cudaSuccess) {
    info.reason = std::string("no usable CUDA device (") + cudaGetErrorString(err) + ")";
    cudaGetLastError();
    return info;
  }
  if (count == 0) {
    info.reason = "no CUDA device present";
    return info;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    info.reason = "cannot read the properties of CUDA device 0";
    cudaGetLastError();
    return info;
  }
  info.available = true;
  info.device = 0;
  info.name = prop.name;
  info.total_memory = prop.totalGlobalMem;
  return info;
}

}  // namespace voxtile
