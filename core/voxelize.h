// Public voxelization entry points: options, statistics, and the CPU reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/mesh.h"
#include "core/overlap.h"
#include "core/sparse_grid.h"

namespace voxtile {

enum class Target : uint8_t {
  kBinary = 0,  // occupancy (OR)
  kCount = 1,   // number of triangles whose voxelization contains the voxel (add)
  kId = 2,      // smallest index of a triangle whose voxelization contains the voxel (min)
  kDistance = 3,  // smallest world distance from the voxel centre to such a triangle (float, min)
};
// Targets with one 32-bit value per voxel.
inline bool has_values(Target t) { return t != Target::kBinary; }
// Targets blended as the max of an encoded 32-bit value (0 = empty): id and distance.
inline bool max_encoded(Target t) { return t == Target::kId || t == Target::kDistance; }

// Distance from the origin to triangle (a, b, c): the plane distance when the origin projects
// inside, else the distance to the nearest edge. Fixed operations, so CPU and GPU agree bit for bit.
VT_HD inline float vt_dot(const Vec3f& a, const Vec3f& b) { return (a.x * b.x + a.y * b.y) + a.z * b.z; }
VT_HD inline float segment_distance(const Vec3f& a, const Vec3f& b) {
  const Vec3f e = sub(b, a);
  const float len2 = vt_dot(e, e);
  float t = len2 > 0.0f ? -vt_dot(a, e) / len2 : 0.0f;
  t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  const Vec3f p{a.x + t * e.x, a.y + t * e.y, a.z + t * e.z};
  return std::sqrt(vt_dot(p, p));
}
VT_HD inline float origin_triangle_distance(const Vec3f& a, const Vec3f& b, const Vec3f& c) {
  const Vec3f n = cross(sub(b, a), sub(c, a));
  const float n2 = vt_dot(n, n);
  if (n2 > 0.0f) {
    const Vec3f na{-a.x, -a.y, -a.z}, nb{-b.x, -b.y, -b.z}, nc{-c.x, -c.y, -c.z};
    if (vt_dot(cross(sub(b, a), na), n) >= 0.0f && vt_dot(cross(sub(c, b), nb), n) >= 0.0f &&
        vt_dot(cross(sub(a, c), nc), n) >= 0.0f) {
      const float d = vt_dot(a, n);
      return (d < 0.0f ? -d : d) / std::sqrt(n2);
    }
  }
  const float d0 = segment_distance(a, b), d1 = segment_distance(b, c), d2 = segment_distance(c, a);
  return d0 < d1 ? (d0 < d2 ? d0 : d2) : (d1 < d2 ? d1 : d2);
}
// World distance from the centre of voxel (i,j,k) to a grid-space triangle; vs = voxel size.
VT_HD inline float voxel_distance(const Vec3f t[3], int32_t i, int32_t j, int32_t k, const Vec3f& vs) {
  const float cx = static_cast<float>(i) + 0.5f, cy = static_cast<float>(j) + 0.5f, cz = static_cast<float>(k) + 0.5f;
  Vec3f w[3];
  for (int q = 0; q < 3; ++q) w[q] = {(t[q].x - cx) * vs.x, (t[q].y - cy) * vs.y, (t[q].z - cz) * vs.z};
  return origin_triangle_distance(w[0], w[1], w[2]);
}
// Encoding of a non-negative float for max blending: smaller distances give larger codes.
VT_HD inline uint32_t encode_distance(float d) {
  uint32_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  return ~bits;
}
VT_HD inline float decode_distance(uint32_t v) {
  const uint32_t bits = ~v;
  float d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}

// The id target is blended as max over (0xffffffff - triangle index), so that 0 means empty in
// the tile buffers of both the CPU and the GPU path.
VT_HD inline uint32_t encode_id(uint32_t tri) { return 0xffffffffu - tri; }
VT_HD inline int32_t decode_id(uint32_t v) { return static_cast<int32_t>(0xffffffffu - v); }
const char* target_name(Target t);
const char* mode_name(VoxelMode m);

enum class Device : uint8_t { kAuto, kCpu, kGpu };

struct VoxelizeOptions {
  VoxelMode mode = VoxelMode::kConservative;
  Target target = Target::kBinary;
  int threads = 0;  // CPU threads, 0 = all
};

// Per-stage timings (milliseconds) and counters, printed by --stats.
struct VoxelizeStats {
  std::string device;  // "cpu" or the GPU's name
  uint64_t triangles = 0;
  uint64_t tile_pairs = 0;     // (tile, triangle) pairs after binning
  uint64_t tiles = 0;          // non-empty tiles
  uint64_t bricks = 0;
  uint64_t active_voxels = 0;
  std::vector<std::pair<std::string, double>> stage_ms;  // in pipeline order
  void add_stage(const std::string& name, double ms) { stage_ms.emplace_back(name, ms); }
};

// Voxelizes `mesh` into `spec` on the CPU (TBB). Deterministic for any thread count.
SparseGrid voxelize_cpu(const Mesh& mesh, const GridSpec& spec, const VoxelizeOptions& options,
                        VoxelizeStats* stats = nullptr);

// Grid-space vertices of `mesh` (GridSpec::world_to_grid of each position), in parallel.
std::vector<Vec3f> to_grid_space(const Mesh& mesh, const GridSpec& spec);

}  // namespace voxtile
