// The CPU band's inner loop (core/band_min.h): voxel_distance over a list of a brick's voxels,
// branch-free and 16 voxels at a time so that the compiler vectorises it (this file is compiled
// with -fno-math-errno, so that sqrtf needs no library call), with one clone per vector width.
#include "core/band_min.h"

#include <cmath>

#include "core/targets.h"

namespace voxtile {
namespace {

// segment_distance's operations without its branches (the same bits).
inline float segment_distance_select(const Vec3f& a, const Vec3f& b) {
  const Vec3f e = sub(b, a);
  const float len2 = vt_dot(e, e);
  const float q = -vt_dot(a, e) / len2;  // (not taken where len2 is 0)
  float t = len2 > 0.0f ? q : 0.0f;
  t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  const Vec3f p{a.x + t * e.x, a.y + t * e.y, a.z + t * e.z};
  return std::sqrt(vt_dot(p, p));
}

// origin_triangle_distance's operations without its branches: both the plane's distance and the
// edges' are computed and one is selected, by the same tests (the same bits).
inline float origin_triangle_distance_select(const Vec3f& a, const Vec3f& b, const Vec3f& c) {
  const Vec3f n = cross(sub(b, a), sub(c, a));
  const float n2 = vt_dot(n, n);
  const Vec3f na{-a.x, -a.y, -a.z}, nb{-b.x, -b.y, -b.z}, nc{-c.x, -c.y, -c.z};
  const bool inside = (n2 > 0.0f) & (vt_dot(cross(sub(b, a), na), n) >= 0.0f) &
                      (vt_dot(cross(sub(c, b), nb), n) >= 0.0f) & (vt_dot(cross(sub(a, c), nc), n) >= 0.0f);
  const float d = vt_dot(a, n);
  const float plane = (d < 0.0f ? -d : d) / std::sqrt(n2);
  const float d0 = segment_distance_select(a, b), d1 = segment_distance_select(b, c),
              d2 = segment_distance_select(c, a);
  const float edges = d0 < d1 ? (d0 < d2 ? d0 : d2) : (d1 < d2 ? d1 : d2);
  return inside ? plane : edges;
}

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(VT_NO_TARGET_CLONES)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void band_min_voxels(const Vec3f t[3], const int32_t base[3], const uint16_t* offsets, int n, const Vec3f& vs,
                     float* best) {
  const Vec3f t0 = t[0], t1 = t[1], t2 = t[2];
  for (int c = 0; c < n; c += kBandMinBlock) {
    float d[kBandMinBlock];
    for (int l = 0; l < kBandMinBlock; ++l) {
      const int32_t o = offsets[c + l];
      // voxel_distance (core/targets.h) of voxel base + (o >> 6, o >> 3 & 7, o & 7)
      const float cx = static_cast<float>(base[0] + (o >> 6)) + 0.5f;
      const float cy = static_cast<float>(base[1] + ((o >> 3) & 7)) + 0.5f;
      const float cz = static_cast<float>(base[2] + (o & 7)) + 0.5f;
      const Vec3f w0{(t0.x - cx) * vs.x, (t0.y - cy) * vs.y, (t0.z - cz) * vs.z};
      const Vec3f w1{(t1.x - cx) * vs.x, (t1.y - cy) * vs.y, (t1.z - cz) * vs.z};
      const Vec3f w2{(t2.x - cx) * vs.x, (t2.y - cy) * vs.y, (t2.z - cz) * vs.z};
      d[l] = origin_triangle_distance_select(w0, w1, w2);
    }
    for (int l = 0; l < kBandMinBlock; ++l) {
      float& v = best[offsets[c + l]];
      v = d[l] < v ? d[l] : v;
    }
  }
}

float voxel_distance_select(const Vec3f t[3], int32_t i, int32_t j, int32_t k, const Vec3f& vs) {
  const float cx = static_cast<float>(i) + 0.5f, cy = static_cast<float>(j) + 0.5f, cz = static_cast<float>(k) + 0.5f;
  Vec3f w[3];
  for (int q = 0; q < 3; ++q) w[q] = {(t[q].x - cx) * vs.x, (t[q].y - cy) * vs.y, (t[q].z - cz) * vs.z};
  return origin_triangle_distance_select(w[0], w[1], w[2]);
}

}  // namespace voxtile
