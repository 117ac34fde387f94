// NumPy .npz output of A-buffer buckets: an uncompressed ZIP (ZIP64 where needed) of .npy arrays,
// which numpy.load opens.
#pragma once

#include <string>

#include "core/bucket.h"
#include "io/metadata.h"

namespace voxtile {

// Arrays: ijk (N,3) int32, offsets (N+1,) int64, triangle (M,) int32, and when computed bary (M,3),
// normal (M,3), uv (M,2) float32 and material (M,) int32; plus dims (3,) int32, voxel_size and
// origin (3,) float64. Atomic. Throws Error(kOutput).
void write_buckets_npz(const Buckets& b, const std::string& path);

}  // namespace voxtile
