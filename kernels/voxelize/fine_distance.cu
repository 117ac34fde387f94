// Fine raster (kernels/voxelize/fine.cuh): the distance targets (min, max, add)' kernels, a module of their own.
#include "kernels/voxelize/fine.cuh"

namespace voxtile {
namespace fine {
VT_FINE_INSTANTIATE(kDistance, kMin)
VT_FINE_INSTANTIATE(kDistance, kMax)
VT_FINE_INSTANTIATE(kDistance, kAdd)
}  // namespace fine
}  // namespace voxtile
