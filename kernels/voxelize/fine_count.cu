// Fine raster (kernels/voxelize/fine.cuh): the count target' kernels, a module of their own.
#include "kernels/voxelize/fine.cuh"

namespace voxtile {
namespace fine {
VT_FINE_INSTANTIATE(kCount, kAdd)
}  // namespace fine
}  // namespace voxtile
