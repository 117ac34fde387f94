// Dense outputs: .raw with a .json header, and .npy.
#pragma once

#include <cstdint>
#include <string>

#include "core/sparse_grid.h"
#include "io/metadata.h"

namespace voxtile {

// Default memory budget of a dense output (bytes); larger ones need force.
constexpr uint64_t kDefaultDenseLimit = uint64_t(4) << 30;

struct DenseOptions {
  uint64_t limit_bytes = kDefaultDenseLimit;
  bool force = false;
};

// Bytes per voxel of the dense dtype: uint8 occupancy, int32 counts, float32 values, 3 float32.
size_t dense_voxel_bytes(ValueType t);
// The value of empty voxels in dense int32 output: -1 in triangle id grids (target id, where 0 is
// triangle 0), else 0. (uint8: 0; float32: NaN.)
bool holds_triangle_ids(const SparseGrid& g);
int32_t dense_empty_int(const SparseGrid& g);
// Throws Error(kResource) naming `path` if a dense array of `dims` voxels of `type`'s dtype exceeds
// the budget and force is not set (.npy, .raw, and .binvox, which readers expand).
void check_dense_budget(const Int3& dims, ValueType type, const std::string& path, const DenseOptions& opt);

// Array of shape (nx, ny, nz), or (nx, ny, nz, 3) for float3 values, C order (z fastest): element
// [i][j][k] is voxel (i,j,k); empty voxels are 0, or NaN in float grids. Written
// plane by plane from the bricks, so memory stays at one x-plane. Atomic.
void write_npy(const SparseGrid& g, const std::string& path, const DenseOptions& opt);
// The same bytes with no header, plus `<path without extension>.json` describing dims, dtype,
// order, voxel size and origin.
void write_raw(const SparseGrid& g, const std::string& path, const DenseOptions& opt, const Metadata& meta);
// The JSON sidecar path of a .raw output.
std::string raw_sidecar_path(const std::string& raw_path);

}  // namespace voxtile
