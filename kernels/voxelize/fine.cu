// Fine raster (kernels/voxelize/fine.cuh): the binary target's kernels, and the dispatch to each
// target's file.
#include "kernels/voxelize/fine.cuh"

namespace voxtile {
namespace fine {
VT_FINE_INSTANTIATE(kBinary, kOr)
}  // namespace fine

void launch_fine(const FineParams& p, VoxelMode mode, const TargetSpec& target, bool sub_tiles, int num_sms,
                 cudaStream_t stream) {
  with_target(target, [&](auto t, auto b) {
    fine::launch_target<decltype(t)::value, decltype(b)::value>(p, mode, sub_tiles, num_sms, stream);
  });
}

}  // namespace voxtile
