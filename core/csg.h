// CSG scripts (.csg): primitives added to or subtracted from a solid in order, their surface
// samples, and the keep rules of the point-cloud CSG pipeline (seed: csg-pointcloud-compaction).
//
// The solid after primitives [0, end) contains a point x when the LAST of them that contains x is
// additive (reverse order, first hit); none containing x means outside. A surface sample of
// primitive k survives the whole script when
//   - no later primitive j > k contains it (mode A: a new primitive culls the old samples inside it,
//     additive or not), and
//   - for an additive k, the solid of [0, k) does not contain it (mode B.1: samples inside the
//     existing solid are hidden); for a subtractive k, that solid does (mode B.2: a cut only shows
//     where it removes material).
// Evaluated batch by batch this gives the same samples for every batch size, which the tests check.
// All tests below are strict (< 0) in float with separate roundings, identical on host and device.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/hd.h"
#include "core/vec.h"

namespace voxtile {

enum class CsgShape : uint32_t { kSphere = 0, kBox = 1, kCylinder = 2, kCapsule = 3, kTorus = 4 };

// One primitive as the kernels read it. Local coordinates q = rot * (x - center); the shape's axis
// is local z.
struct CsgPrimitive {
  uint32_t shape;     // CsgShape
  uint32_t subtract;  // 1 for `sub`
  uint32_t rotated;   // 0 when rot is the identity (skipped)
  uint32_t material;  // user material number
  float center[3];
  float rot[9];       // world -> local, row major
  float a, b, c;      // sphere: radius; box: half sizes x,y,z; cylinder and capsule: radius, -, half
                      // height; torus: major radius, minor radius, -
  float lo[3], hi[3]; // world bounds, padded so that a point outside them is outside the shape
  uint32_t rgb;       // 0xRRGGBB
};

// Whether primitive p contains x (strictly).
VT_HD inline bool csg_inside(const CsgPrimitive& p, const Vec3f& x) {
  if (!(x.x > p.lo[0] && x.x < p.hi[0] && x.y > p.lo[1] && x.y < p.hi[1] && x.z > p.lo[2] && x.z < p.hi[2]))
    return false;
  const float dx = x.x - p.center[0], dy = x.y - p.center[1], dz = x.z - p.center[2];
  float qx = dx, qy = dy, qz = dz;
  if (p.rotated) {
    qx = (p.rot[0] * dx + p.rot[1] * dy) + p.rot[2] * dz;
    qy = (p.rot[3] * dx + p.rot[4] * dy) + p.rot[5] * dz;
    qz = (p.rot[6] * dx + p.rot[7] * dy) + p.rot[8] * dz;
  }
  switch (static_cast<CsgShape>(p.shape)) {
    case CsgShape::kSphere:
      return (qx * qx + qy * qy) + qz * qz < p.a * p.a;
    case CsgShape::kBox:
      return fabsf(qx) < p.a && fabsf(qy) < p.b && fabsf(qz) < p.c;
    case CsgShape::kCylinder:
      return qx * qx + qy * qy < p.a * p.a && fabsf(qz) < p.c;
    case CsgShape::kCapsule: {
      const float t = qz - fminf(fmaxf(qz, -p.c), p.c);
      return (qx * qx + qy * qy) + t * t < p.a * p.a;
    }
    case CsgShape::kTorus: {
      const float s = sqrtf(qx * qx + qy * qy) - p.a;
      return s * s + qz * qz < p.b * p.b;
    }
  }
  return false;
}

// Whether the solid of primitives [0, end) contains x.
VT_HD inline bool csg_solid_inside(const CsgPrimitive* prims, uint32_t end, const Vec3f& x) {
  for (uint32_t j = end; j-- > 0;)
    if (csg_inside(prims[j], x)) return prims[j].subtract == 0;
  return false;
}

// Mode A: an existing sample survives primitives [begin, end) when none contains it.
VT_HD inline bool csg_keep_old(const CsgPrimitive* prims, uint32_t begin, uint32_t end, const Vec3f& x) {
  for (uint32_t j = begin; j < end; ++j)
    if (csg_inside(prims[j], x)) return false;
  return true;
}

// What primitive j (!= k) says about a sample x of primitive k: -1 nothing (j does not contain x),
// 0 culled, 1 kept. Visiting j = end - 1 down to 0, the first answer other than -1 decides: a later
// primitive culls (mode A); the first earlier one containing x is the solid's answer there, which
// hides an additive sample (B.1) and shows a subtractive one when additive (B.2). No answer: kept
// for `add`, culled for `sub`. The GPU visits the primitives in shared-memory chunks with this.
VT_HD inline int csg_sample_vote(const CsgPrimitive& pj, uint32_t j, uint32_t k, bool sub_k, const Vec3f& x) {
  if (!csg_inside(pj, x)) return -1;
  if (j > k) return 0;
  return (pj.subtract == 0) == sub_k ? 1 : 0;
}

// Modes B.1/B.2 plus the rest of its batch: a sample of primitive k, with primitives [0, end) applied.
VT_HD inline bool csg_keep_new(const CsgPrimitive* prims, uint32_t k, uint32_t end, const Vec3f& x) {
  const bool sub_k = prims[k].subtract != 0;
  for (uint32_t j = end; j-- > 0;) {
    if (j == k) continue;
    const int vote = csg_sample_vote(prims[j], j, k, sub_k, x);
    if (vote >= 0) return vote == 1;
  }
  return !sub_k;
}

struct CsgScript {
  std::string source;  // file name, for messages
  std::vector<CsgPrimitive> prims;
  std::vector<int> lines;  // source line of each primitive
  Bounds bounds() const;   // of the additive primitives (what the solid can occupy)
};

// Parses a script; errors are Error(kInput) "source:line:column: problem". See README "CSG scripts".
CsgScript parse_csg(const std::string& text, const std::string& source);
// (Files: load_csg in io/points_io.h.)

// What a surface sample carries besides its position (kept in a parallel array).
struct SampleParams {
  Vec3f normal;   // unit, pointing out of the solid (into a subtracted primitive)
  uint32_t prim;  // primitive index
};

// Samples per unit area from --spacing S (1 / S^2) or --density D.
struct SampleDensity {
  double per_area = 0;
};

// Surface samples of every primitive, primitive after primitive. Deterministic: each face of a
// primitive gets round(area * density) samples placed by the R2 low-discrepancy sequence through an
// area-preserving map, so the samples depend only on the script and the density.
struct CsgSamples {
  std::vector<Vec3f> positions;
  std::vector<SampleParams> params;
  std::vector<uint64_t> begin;  // num_prims + 1: samples of primitive k are [begin[k], begin[k+1])
};
// Number of samples of one primitive.
uint64_t csg_sample_count(const CsgPrimitive& p, double per_area);
// Throws Error(kUsage) when the total would exceed `max_samples`.
CsgSamples sample_csg(const CsgScript& script, SampleDensity density, uint64_t max_samples);

// Surface area of a primitive.
double csg_area(const CsgPrimitive& p);

}  // namespace voxtile
