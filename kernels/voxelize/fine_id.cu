// Fine raster (kernels/voxelize/fine.cuh): the id targets (min, max)' kernels, a module of their own.
#include "kernels/voxelize/fine.cuh"

namespace voxtile {
namespace fine {
VT_FINE_INSTANTIATE(kId, kMin)
VT_FINE_INSTANTIATE(kId, kMax)
}  // namespace fine
}  // namespace voxtile
