// A-buffer bucketing (VoxelPipe section 4): for every voxel the surface touches, the complete list
// of its fragments (triangle id, barycentric coordinates, optional interpolated attributes).
//
// Order: voxels ascending by linear index (i * dims.y + j) * dims.z + k (x-major); fragments within
// a voxel ascending by triangle index. The same lists on the CPU and the GPU, bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/mesh.h"
#include "core/overlap.h"
#include "core/targets.h"
#include "core/voxelize.h"

namespace voxtile {

// Per-fragment attributes to compute (bit set).
enum BucketAttr : uint32_t {
  kAttrBary = 1,      // barycentric coordinates (float32 x 3)
  kAttrNormal = 2,    // interpolated vertex normal, renormalised; the face normal without vertex normals
  kAttrUv = 4,        // interpolated texture coordinates (float32 x 2)
  kAttrMaterial = 8,  // material index of the triangle (int32)
};
// "bary,normal,uv,material" (any subset, comma-separated; "" = none). Throws Error(kUsage).
uint32_t parse_bucket_attrs(const std::string& text);

struct BucketOptions {
  VoxelMode mode = VoxelMode::kConservative;
  uint32_t attrs = kAttrBary;
  int threads = 0;  // CPU threads, 0 = all
};

struct Buckets {
  GridSpec spec;
  uint32_t attrs = 0;
  ValueArray<int32_t> ijk;         // 3 per voxel
  ValueArray<int64_t> offsets;    // num_voxels + 1: fragments of voxel v are [offsets[v], offsets[v+1])
  ValueArray<int32_t> triangle;   // per fragment
  ValueArray<float> bary;         // 3 per fragment (kAttrBary)
  ValueArray<float> normal;       // 3 per fragment (kAttrNormal)
  ValueArray<float> uv;           // 2 per fragment (kAttrUv)
  ValueArray<int32_t> material;   // per fragment (kAttrMaterial)

  size_t num_voxels() const { return ijk.size() / 3; }
  size_t num_fragments() const { return triangle.size(); }
  // XXH3 (64 bit) over dims, attrs and every array, for goldens and CPU/GPU comparisons.
  uint64_t checksum() const;
  // The fragment count per voxel as an int32 sparse grid (for .vdb and the other grid formats).
  SparseGrid count_grid() const;
};

// Linear voxel index (the sort key of the voxels).
VT_HD inline uint64_t voxel_linear_index(int32_t i, int32_t j, int32_t k, const Int3& dims) {
  return (uint64_t(uint32_t(i)) * uint64_t(uint32_t(dims.y)) + uint64_t(uint32_t(j))) * uint64_t(uint32_t(dims.z)) +
         uint64_t(uint32_t(k));
}
// Its inverse: ijk[0..2] of linear index v.
VT_HD inline void voxel_from_linear(uint64_t v, const Int3& dims, int32_t* ijk) {
  const uint64_t nz = uint64_t(dims.z), nyz = uint64_t(dims.y) * nz;
  ijk[0] = int32_t(v / nyz);
  ijk[1] = int32_t((v / nz) % uint64_t(dims.y));
  ijk[2] = int32_t(v % nz);
}

// Barycentric coordinates (u, v, w of vertices 0, 1, 2) of the orthogonal projection of the centre of
// voxel (i,j,k) onto the plane of a grid-space triangle, computed in world units (vs = voxel size).
// In double, as ratios of triple products: with the triangle's corners w0, w1, w2 relative to the
// centre and n = (w1 - w0) x (w2 - w0), u = n.(w1 x w2) / n.n, v = n.(w2 x w0) / n.n,
// w = n.(w0 x w1) / n.n (the centre's offset along n changes none of them). Products of the float
// coordinates are exact in double, so slivers (a few degrees or less) keep their accuracy, where
// float normal equations lose it. They sum to 1 up to rounding and may lie slightly outside [0, 1]
// when the triangle only grazes the voxel. A triangle that is degenerate in double (sin^2 of its
// largest angle under 1e-24, i.e. collinear to float precision; exactly collinear ones are dropped
// on loading) is its longest edge: the coordinates of the closest point on that edge.
VT_HD inline void voxel_barycentrics(const Vec3f t[3], int32_t i, int32_t j, int32_t k, const Vec3f& vs, float out[3]) {
  const double c[3] = {double(i) + 0.5, double(j) + 0.5, double(k) + 0.5};
  const double s[3] = {double(vs.x), double(vs.y), double(vs.z)};
  double w[3][3];
  for (int q = 0; q < 3; ++q) {
    const double g[3] = {double(t[q].x), double(t[q].y), double(t[q].z)};
    for (int a = 0; a < 3; ++a) w[q][a] = (g[a] - c[a]) * s[a];
  }
  auto cross = [](const double* x, const double* y, double* r) {
    r[0] = x[1] * y[2] - x[2] * y[1];
    r[1] = x[2] * y[0] - x[0] * y[2];
    r[2] = x[0] * y[1] - x[1] * y[0];
  };
  auto dot = [](const double* x, const double* y) { return (x[0] * y[0] + x[1] * y[1]) + x[2] * y[2]; };
  double e0[3], e1[3], e2[3], n[3];
  for (int a = 0; a < 3; ++a) {
    e0[a] = w[1][a] - w[0][a];
    e1[a] = w[2][a] - w[0][a];
    e2[a] = w[2][a] - w[1][a];
  }
  cross(e0, e1, n);
  const double nn = dot(n, n), d00 = dot(e0, e0), d11 = dot(e1, e1), d22 = dot(e2, e2);
  const double longest = d00 > d11 ? (d00 > d22 ? d00 : d22) : (d11 > d22 ? d11 : d22);
  if (!(nn > 1e-24 * longest * longest)) {
    int p = 0, q = 1;
    double len2 = d00;
    if (d11 > len2) {
      q = 2;
      len2 = d11;
    }
    if (d22 > len2) {
      p = 1;
      q = 2;
      len2 = d22;
    }
    out[0] = out[1] = out[2] = 0.0f;
    if (!(len2 > 0.0)) {
      out[0] = 1.0f;
      return;
    }
    const double e[3] = {w[q][0] - w[p][0], w[q][1] - w[p][1], w[q][2] - w[p][2]};
    double f = -dot(w[p], e) / len2;
    f = f < 0.0 ? 0.0 : (f > 1.0 ? 1.0 : f);
    out[p] = float(1.0 - f);
    out[q] = float(f);
    return;
  }
  double x[3];
  cross(w[1], w[2], x);
  out[0] = float(dot(n, x) / nn);
  cross(w[2], w[0], x);
  out[1] = float(dot(n, x) / nn);
  cross(w[0], w[1], x);
  out[2] = float(dot(n, x) / nn);
}

// Interpolated unit normal from vertex normals n[3] (any may be zero); the face normal `face`
// when the interpolation is zero.
VT_HD inline Vec3f interpolate_normal(const Vec3f n[3], const float b[3], const Vec3f& face) {
  const Vec3f s{(b[0] * n[0].x + b[1] * n[1].x) + b[2] * n[2].x, (b[0] * n[0].y + b[1] * n[1].y) + b[2] * n[2].y,
                (b[0] * n[0].z + b[1] * n[1].z) + b[2] * n[2].z};
  const float len = std::sqrt(vt_dot(s, s));
  if (!(len > 0.0f && len <= 3.402823466e38f)) return face;
  return {s.x / len, s.y / len, s.z / len};
}
VT_HD inline Vec2f interpolate_uv(const Vec2f uv[3], const float b[3]) {
  return {(b[0] * uv[0].x + b[1] * uv[1].x) + b[2] * uv[2].x, (b[0] * uv[0].y + b[1] * uv[1].y) + b[2] * uv[2].y};
}

// The CPU reference: enumerate fragments per triangle, sort by (voxel, triangle), run-length
// encode, compute the attributes. Throws Error(kUsage) for attributes the mesh lacks (uv).
Buckets bucket_cpu(const Mesh& mesh, const GridSpec& spec, const BucketOptions& options, VoxelizeStats* stats = nullptr);

// Checks options against the mesh (uv needs texture coordinates); throws Error(kInput).
void check_bucket_attrs(const Mesh& mesh, uint32_t attrs);

}  // namespace voxtile
