// Point clouds: surface samples of CSG scripts and meshes, and points binned into voxel grids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/csg.h"
#include "core/hd.h"
#include "core/mesh.h"
#include "core/sparse_grid.h"
#include "core/targets.h"

namespace voxtile {

struct Rgb8 {
  uint8_t r, g, b;
};

// Structure of arrays; optional attributes are empty or hold one entry per point.
struct PointCloud {
  std::vector<Vec3f> positions;
  std::vector<Vec3f> normals;
  std::vector<Rgb8> colors;
  std::vector<uint32_t> ids;        // source primitive or triangle
  std::vector<uint32_t> materials;  // source material
  // Exact world positions where float cannot hold the file's coordinates (LAS: scaled integers plus
  // offsets, e.g. UTM metres); `positions` then holds them rounded to float. Points are binned from
  // these when present, so a point lands in the voxel its double coordinates say.
  std::vector<Vec3d> positions64;
  std::vector<uint16_t> intensity;  // LAS intensity
  std::vector<uint8_t> classes;     // LAS classification (formats 0-5: the low 5 bits)
  size_t dropped_nonfinite = 0;     // points with NaN/Inf coordinates skipped while reading

  size_t size() const { return positions.size(); }
};

// ---- CSG ------------------------------------------------------------------------------------

struct CsgStats {
  uint64_t samples = 0;  // generated
  uint64_t kept = 0;     // in the result
  uint32_t steps = 0;    // batches
  std::string device;
  std::vector<std::pair<std::string, double>> stage_ms;
};

// Samples that survive the script (header core/csg.h), in canonical order: by primitive, then by
// sample index. CPU reference of GpuPoints::csg; the result does not depend on any batch size.
CsgSamples csg_keep_cpu(const CsgScript& script, const CsgSamples& samples, CsgStats* stats = nullptr);
// Positions, normals, colours, primitive ids and materials of kept samples.
PointCloud csg_point_cloud(const CsgScript& script, const CsgSamples& kept);

// Occupancy of the CSG solid at voxel centres (CPU reference of GpuPoints::solid).
SparseGrid csg_solid_cpu(const CsgScript& script, const GridSpec& spec);

// ---- mesh surface sampling -----------------------------------------------------------------

// `count` area-uniform samples of the mesh surface: sample i picks the triangle holding the
// position (i + 0.5) / count of the cumulative area (stratified), and a point in it from the R2
// sequence (uniform in area). Normals are interpolated vertex normals where the mesh has them, else
// the face normal; colours are the material's texture at the interpolated texture coordinates
// (nearest texel), else interpolated vertex colours, else the material colour; ids are triangles.
PointCloud sample_mesh(const Mesh& mesh, uint64_t count);
// Total triangle area (double).
double mesh_area(const Mesh& mesh);

// ---- points to voxels ------------------------------------------------------------------------

// Exact per-voxel sums: integer colour sums, fixed-point normal sums (kNormalFixedScale units, as
// the normal add target; rounded in double here), so the result does not depend on point order.
struct VoxelAcc {
  uint64_t count;
  uint64_t rgb[3];
  int64_t normal[3];
  uint64_t intensity;
};

// The grid as the kernels and the CPU references of points and solids see it (plain arrays).
// Key of voxel (i,j,k): its brick's index in x-major brick order times 512 plus its offset in the
// brick, so ascending keys are the SparseGrid order. `kOutsideGrid` marks points outside the grid.
constexpr uint64_t kOutsideGrid = ~uint64_t(0);
struct GridView {
  double origin[3], size[3];
  int32_t dims[3];
  int64_t bricks[3];  // bricks per axis

  static GridView make(const GridSpec& spec);
  // Voxel centre as the solid test sees it: each coordinate computed in double, rounded to float.
  VT_HD Vec3f center(int32_t i, int32_t j, int32_t k) const {
    return {float(origin[0] + (double(i) + 0.5) * size[0]), float(origin[1] + (double(j) + 0.5) * size[1]),
            float(origin[2] + (double(k) + 0.5) * size[2])};
  }
  // Number of key bits in use (for radix sorts).
  int key_bits() const;
  // Voxel of a point (Vec3f or Vec3d): floor((p - origin) / size) per axis in double; a point on the
  // far face of the grid belongs to the last voxel.
  template <class V>
  VT_HD uint64_t key(const V& p) const {
    int32_t v[3];
    const double pc[3] = {double(p.x), double(p.y), double(p.z)};
    for (int a = 0; a < 3; ++a) {
      const double g = (pc[a] - origin[a]) / size[a];
      if (!(g >= 0.0) || g > double(dims[a])) return kOutsideGrid;
      int64_t i = int64_t(floor(g));
      if (i == dims[a]) i = dims[a] - 1;
      v[a] = int32_t(i);
    }
    const int64_t b = (int64_t(v[0] >> 3) * bricks[1] + (v[1] >> 3)) * bricks[2] + (v[2] >> 3);
    return (uint64_t(b) << 9) | uint64_t(((v[0] & 7) << 6) | ((v[1] & 7) << 3) | (v[2] & 7));
  }
  Int3 voxel(uint64_t key) const;
};

// Occupied voxels in ascending key order: the number of points of each, with colours, normals or
// intensities their exact sums (sums[i].count == counts[i]), and with classes the majority class.
struct VoxelBins {
  ValueArray<uint64_t> keys;
  ValueArray<uint32_t> counts;
  ValueArray<VoxelAcc> sums;   // empty when the points have no colours, normals or intensities
  ValueArray<uint8_t> classes;  // most frequent class of the voxel's points (ties: the smaller); or empty
  uint64_t outside = 0;        // points outside the grid
};

// With classes, points are sorted by (voxel key << 8 | class): the key must fit in 55 bits.
constexpr int kClassBits = 8;

// Per-point attributes as the binning reads them (null where the cloud has none).
struct PointAttrs {
  const Rgb8* colors = nullptr;
  const Vec3f* normals = nullptr;
  const uint16_t* intensity = nullptr;
  bool any() const { return colors || normals || intensity; }
};

// What a point contributes to its voxel (shared by the CPU reference and the GPU).
VT_HD inline VoxelAcc point_acc(const PointAttrs& at, uint64_t i) {
  VoxelAcc a{};
  a.count = 1;
  if (at.intensity) a.intensity = at.intensity[i];
  if (at.colors) a.rgb[0] = at.colors[i].r, a.rgb[1] = at.colors[i].g, a.rgb[2] = at.colors[i].b;
  if (at.normals) {
    a.normal[0] = int64_t(floor(double(at.normals[i].x) * double(kNormalFixedScale) + 0.5));
    a.normal[1] = int64_t(floor(double(at.normals[i].y) * double(kNormalFixedScale) + 0.5));
    a.normal[2] = int64_t(floor(double(at.normals[i].z) * double(kNormalFixedScale) + 0.5));
  }
  return a;
}
VT_HD inline VoxelAcc operator+(const VoxelAcc& x, const VoxelAcc& y) {
  VoxelAcc s;
  s.count = x.count + y.count;
  for (int c = 0; c < 3; ++c) {
    s.rgb[c] = x.rgb[c] + y.rgb[c];
    s.normal[c] = int64_t(uint64_t(x.normal[c]) + uint64_t(y.normal[c]));
  }
  s.intensity = x.intensity + y.intensity;
  return s;
}

VoxelBins bin_points_cpu(const PointCloud& points, const GridSpec& spec);
// Bounds of the points (from positions64 when present).
Bounds point_bounds(const PointCloud& points);

// The majority rule as one number: a (voxel, class) run of `count` points votes count << 8 |
// 255 - class, so the largest vote of a voxel is its most frequent class, the smaller class on ties
// (the GPU takes the maximum over each voxel's runs; majority_classes does the same).
VT_HD inline uint64_t class_vote(uint64_t class_key, uint32_t count) {
  return uint64_t(count) << kClassBits | (255 - (class_key & 255));
}
VT_HD inline uint8_t vote_class(uint64_t vote) { return uint8_t(255 - (vote & 255)); }

// bins.classes from runs of (key << 8 | class) in ascending order with their point counts (runs
// outside the grid excluded): for each voxel of bins.keys the class of its largest class_vote.
// Used by the CPU reference and by the GPU when it merges chunks.
void majority_classes(const uint64_t* class_keys, const uint32_t* counts, size_t runs, VoxelBins& bins);

// What to write per voxel: "occupancy", "count", "color" (mean, 0..1 floats), "normal" (mean,
// unit), "intensity" (mean, float), "class" (majority, int); "auto" = count and whatever the points
// have. Grids are named by these words.
std::vector<std::string> parse_point_values(const std::string& list, bool have_colors, bool have_normals,
                                           bool have_intensity = false, bool have_classes = false);
std::vector<SparseGrid> bins_to_grids(const VoxelBins& bins, const GridSpec& spec, const std::vector<std::string>& values);

}  // namespace voxtile
