// CUDA device discovery.
#include <cuda_runtime.h>

#include "kernels/api.h"
#include "kernels/common.cuh"

namespace voxtile {

bool gpu_compiled() { return true; }

GpuInfo query_gpu(int device) {
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
  if (device < 0 || device >= count) {
    info.reason = "no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " present)";
    return info;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    info.reason = "cannot read the properties of CUDA device " + std::to_string(device);
    cudaGetLastError();
    return info;
  }
  info.available = true;
  info.device = device;
  info.name = prop.name;
  info.total_memory = prop.totalGlobalMem;
  return info;
}

int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

void start_gpu(int device) {
  VT_CUDA_CHECK(cudaSetDevice(device));
  VT_CUDA_CHECK(cudaFree(nullptr));  // (creates the primary context)
}

}  // namespace voxtile
