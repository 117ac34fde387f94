// The CPU band's distances, vectorised: voxel_distance (core/targets.h) of many voxels of one brick
// to one triangle, the same bits, without branches (core/band_min.cpp).
#pragma once

#include <cstdint>

#include "core/vec.h"

namespace voxtile {

// Voxels per step of band_min_voxels: lists of offsets are padded to a multiple of it.
constexpr int kBandMinBlock = 16;

// best[o] = min(best[o], voxel_distance(t, base + voxel o)) for the brick offsets o (x << 6 | y << 3 | z)
// in offsets[0, n), n a multiple of kBandMinBlock (an offset listed twice is harmless: the same
// minimum). t: a grid-space triangle; vs: the voxel size.
void band_min_voxels(const Vec3f t[3], const int32_t base[3], const uint16_t* offsets, int n, const Vec3f& vs,
                     float* best);

// voxel_distance by band_min_voxels' branch-free operations (for the tests: the same bits).
float voxel_distance_select(const Vec3f t[3], int32_t i, int32_t j, int32_t k, const Vec3f& vs);

}  // namespace voxtile
