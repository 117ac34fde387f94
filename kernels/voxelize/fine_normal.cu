// Fine raster (kernels/voxelize/fine.cuh): the normal targets (max, add)' kernels, a module of their own.
#include "kernels/voxelize/fine.cuh"

namespace voxtile {
namespace fine {
VT_FINE_INSTANTIATE(kNormal, kMax)
VT_FINE_INSTANTIATE(kNormal, kAdd)
}  // namespace fine
}  // namespace voxtile
