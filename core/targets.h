// Render targets (fragment shaders) and their blend modes, shared by the CPU reference and the
// GPU fine raster (VoxelPipe sections 3.3 and 5).
//
// A target computes one value per fragment (triangle x voxel); a blend mode reduces the values of
// all fragments of a voxel. Every combination is deterministic, so CPU and GPU results are equal
// bit for bit:
//   binary    or                    occupancy
//   count     add                   number of triangles (uint32 add)
//   id        min (default) | max   triangle index
//   distance  min (default) | max   world distance from the voxel centre to the triangle
//             add                   sum of those distances, accumulated in 64-bit fixed point
//   normal    max (default)         unit geometric normal, packed (octahedral, 15+15 bits) and
//                                   max-blended as in the paper's Figure 1: one normal per voxel
//             add                   sum of unit normals, accumulated in 64-bit fixed point
// min/max blends are max blends of an order-preserving 32-bit code in which 0 means "empty"; add
// blends of float values use integers (fixed point) so that the sum does not depend on the order in
// which fragments arrive: floating-point atomics would make the output bytes change run to run.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/hd.h"
#include "core/sparse_grid.h"
#include "core/vec.h"

namespace voxtile {

enum class Target : uint8_t {
  kBinary = 0,    // occupancy (OR)
  kCount = 1,     // number of triangles whose voxelization contains the voxel (add)
  kId = 2,        // triangle index (min or max)
  kDistance = 3,  // world distance from the voxel centre to the triangle (float: min, max or add)
  kNormal = 4,    // unit geometric normal (packed max, or float3 add)
  // Field targets: not fragment shaders; made by Voxelizer from the inside test (core/inside.h).
  kSolid = 5,     // occupancy: the surface voxelization plus every voxel whose centre is inside
  kSdf = 6,       // narrow-band signed distance (float level set, negative inside)
};
// Whether a target is a field target (solid, sdf) rather than a fragment target.
VT_HD constexpr bool is_field_target(Target t) { return t == Target::kSolid || t == Target::kSdf; }
enum class Blend : uint8_t { kDefault = 0, kOr, kAdd, kMin, kMax };

// How a (target, blend) pair is stored while rastering a tile.
enum class Word : uint8_t {
  kBit = 0,    // one bit per voxel, OR
  kAdd32 = 1,  // uint32 per voxel, add (0 = empty)
  kMax32 = 2,  // uint32 code per voxel, max (0 = empty)
  kAdd64 = 3,  // int64 per voxel and channel, two's complement add, plus an occupancy bit
};

VT_HD constexpr Blend default_blend(Target t) {
  return (t == Target::kBinary || t == Target::kSolid) ? Blend::kOr
         : t == Target::kSdf ? Blend::kMin
         : t == Target::kCount ? Blend::kAdd
         : t == Target::kNormal ? Blend::kMax
                                : Blend::kMin;
}
VT_HD constexpr bool blend_allowed(Target t, Blend b) {
  return (t == Target::kBinary || t == Target::kSolid) ? b == Blend::kOr
         : t == Target::kSdf    ? b == Blend::kMin
         : t == Target::kCount  ? b == Blend::kAdd
         : t == Target::kId     ? (b == Blend::kMin || b == Blend::kMax)
         : t == Target::kNormal ? (b == Blend::kMax || b == Blend::kAdd)
                                : (b == Blend::kMin || b == Blend::kMax || b == Blend::kAdd);
}
VT_HD constexpr Word word_kind(Target t, Blend b) {
  return t == Target::kBinary ? Word::kBit
         : t == Target::kCount ? Word::kAdd32
         : b == Blend::kAdd    ? Word::kAdd64
                               : Word::kMax32;
}
// The blend of two 32-bit words of one voxel: OR of bits, add (count), or max of codes (0 =
// empty). The one rule for the CPU reference's tiles, the GPU's brick merge and, as the matching
// atomic (kernels/common.cuh atomic_blend32), the GPU's fine raster. kAdd64 words add per channel.
template <Word W>
VT_HD constexpr uint32_t blend32(uint32_t a, uint32_t b) {
  static_assert(W != Word::kAdd64, "64-bit words add per channel");
  return W == Word::kBit ? (a | b) : W == Word::kAdd32 ? a + b : (a > b ? a : b);
}
// Accumulator channels while rastering (normal add: 3) and value channels in the output.
VT_HD constexpr int acc_channels(Target t, Blend b) { return t == Target::kNormal && b == Blend::kAdd ? 3 : 1; }
VT_HD constexpr int out_channels(Target t) { return t == Target::kNormal ? 3 : 1; }
inline ValueType target_value_type(Target t) {
  return (t == Target::kBinary || t == Target::kSolid) ? ValueType::kNone
         : (t == Target::kCount || t == Target::kId) ? ValueType::kInt32
         : t == Target::kNormal ? ValueType::kVec3f
                                : ValueType::kFloat32;
}

// 32-bit mask words of an 8^3 brick (BrickMask).
constexpr int kBrickMaskWords = 16;
struct TargetSpec {
  Target target = Target::kBinary;
  Blend blend = Blend::kOr;  // never kDefault once parsed
  bool operator==(const TargetSpec& o) const { return target == o.target && blend == o.blend; }
};
// The layout of a brick's raw (unblended, undecoded) values while rastering and merging: 32-bit
// words per brick, 512 for 32-bit words, 1024 per channel for 64-bit fixed-point sums
// (channel-major: channel c of voxel v is the int64 at c * 512 + v), none for binary.
VT_HD constexpr int brick_value_words(Word w, int acc) {
  return w == Word::kBit ? 0 : w == Word::kAdd64 ? 2 * kBrickVoxels * acc : kBrickVoxels;
}
inline constexpr int brick_value_words(const TargetSpec& t) {
  return brick_value_words(word_kind(t.target, t.blend), acc_channels(t.target, t.blend));
}
const char* target_name(Target t);
const char* blend_name(Blend b);
// "count", "distance_max", "normal_add": the target, plus the blend when it is not the default.
std::string target_spec_name(const TargetSpec& s);
// "distance", "distance:max", "normal:add" (throws Error(kUsage) naming the problem).
TargetSpec parse_target_spec(const std::string& text);
// A comma-separated list of target specs, without repeats.
std::vector<TargetSpec> parse_target_list(const std::string& text);
// Resolves kDefault and checks the combination (throws Error(kUsage)).
TargetSpec make_target_spec(Target t, Blend b = Blend::kDefault);

// ---- Fragment values ------------------------------------------------------------------------

VT_HD inline float vt_dot(const Vec3f& a, const Vec3f& b) { return (a.x * b.x + a.y * b.y) + a.z * b.z; }
VT_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
VT_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Distance from the origin to triangle (a, b, c): the plane distance when the origin projects
// inside, else the distance to the nearest edge. Fixed operations, so CPU and GPU agree bit for bit.
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
      // (|d| as fabs: a plane through the voxel centre gives +0, never -0, so that the minimum of
      // several triangles' distances does not depend on their order)
      return std::fabs(vt_dot(a, n)) / std::sqrt(n2);
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
// Encodings of a non-negative float for max blending (0 stays "empty"): min keeps the smallest
// value (larger code for smaller values), max the largest.
VT_HD inline uint32_t encode_min_float(float d) { return ~float_bits(d); }
VT_HD inline float decode_min_float(uint32_t v) { return bits_float(~v); }
VT_HD inline uint32_t encode_max_float(float d) { return float_bits(d) + 1u; }  // d finite, >= 0
VT_HD inline float decode_max_float(uint32_t v) { return bits_float(v - 1u); }
// Compatibility names of the distance (min) encoding.
VT_HD inline uint32_t encode_distance(float d) { return encode_min_float(d); }
VT_HD inline float decode_distance(uint32_t v) { return decode_min_float(v); }

// The id target is blended as max over (0xffffffff - index) for min, (index + 1) for max.
VT_HD inline uint32_t encode_id(uint32_t tri) { return 0xffffffffu - tri; }
VT_HD inline int32_t decode_id(uint32_t v) { return static_cast<int32_t>(0xffffffffu - v); }

// Unit world-space normal of a grid-space triangle (voxel size vs), (0,0,0) when degenerate.
VT_HD inline Vec3f world_normal(const Vec3f t[3], const Vec3f& vs) {
  const Vec3f e0{(t[1].x - t[0].x) * vs.x, (t[1].y - t[0].y) * vs.y, (t[1].z - t[0].z) * vs.z};
  const Vec3f e1{(t[2].x - t[0].x) * vs.x, (t[2].y - t[0].y) * vs.y, (t[2].z - t[0].z) * vs.z};
  const Vec3f n = cross(e0, e1);
  const float len = std::sqrt(vt_dot(n, n));
  if (!(len > 0.0f && len <= 3.402823466e38f)) return {0.0f, 0.0f, 0.0f};
  return {n.x / len, n.y / len, n.z / len};
}

// Octahedral normal code: 15 bits per coordinate, plus 2 so that 0 means empty and 1 a zero normal.
constexpr uint32_t kNormalQuant = 32767;
VT_HD inline uint32_t pack_normal(const Vec3f& n) {
  const float s = std::fabs(n.x) + std::fabs(n.y) + std::fabs(n.z);
  if (!(s > 0.0f)) return 1u;
  float px = n.x / s, py = n.y / s;
  if (n.z < 0.0f) {
    const float tx = (1.0f - std::fabs(py)) * (px >= 0.0f ? 1.0f : -1.0f);
    const float ty = (1.0f - std::fabs(px)) * (py >= 0.0f ? 1.0f : -1.0f);
    px = tx;
    py = ty;
  }
  auto q = [](float v) {
    float x = std::floor((v * 0.5f + 0.5f) * float(kNormalQuant) + 0.5f);
    x = x < 0.0f ? 0.0f : (x > float(kNormalQuant) ? float(kNormalQuant) : x);
    return static_cast<uint32_t>(x);
  };
  return ((q(px) << 15) | q(py)) + 2u;
}
VT_HD inline Vec3f unpack_normal(uint32_t code) {
  if (code < 2u) return {0.0f, 0.0f, 0.0f};
  code -= 2u;
  const float px = float(code >> 15) / float(kNormalQuant) * 2.0f - 1.0f;
  const float py = float(code & 0x7fffu) / float(kNormalQuant) * 2.0f - 1.0f;
  float x = px, y = py;
  const float z = 1.0f - std::fabs(px) - std::fabs(py);
  if (z < 0.0f) {
    x = (1.0f - std::fabs(py)) * (px >= 0.0f ? 1.0f : -1.0f);
    y = (1.0f - std::fabs(px)) * (py >= 0.0f ? 1.0f : -1.0f);
  }
  const float len = std::sqrt((x * x + y * y) + z * z);
  return {x / len, y / len, z / len};
}

// Fixed point of the add blends: value = sum * unit. Distances of a fragment are below the world
// voxel diagonal (the triangle touches the voxel), so 2^32 units per diagonal leave 31 bits for
// the number of fragments; normals (|n| <= 1) use 2^-30.
constexpr float kNormalFixedScale = 1073741824.0f;  // 2^30
VT_HD inline int64_t to_fixed(float v, float scale) {
  return static_cast<int64_t>(std::floor(v * scale + 0.5f));
}
VT_HD inline float from_fixed(uint64_t sum, float scale) {
  return static_cast<float>(static_cast<double>(static_cast<int64_t>(sum)) / static_cast<double>(scale));
}

// Per-voxelization constants of the fragment shaders.
struct ShadeConsts {
  Vec3f voxel_size;      // world size of a voxel
  float distance_scale;  // fixed-point units per world unit (distance add)
};
inline ShadeConsts make_shade_consts(const Vec3d& voxel_size) {
  const double diag = std::sqrt(voxel_size.x * voxel_size.x + voxel_size.y * voxel_size.y + voxel_size.z * voxel_size.z);
  return {{float(voxel_size.x), float(voxel_size.y), float(voxel_size.z)}, float(4294967296.0 / diag)};
}

// What a triangle contributes, set up once per triangle (or per row on the GPU).
struct TriShade {
  Vec3f v[3];     // grid-space vertices (distance)
  uint32_t code;  // id and packed-normal codes
  Vec3f normal;   // normal add
};

template <Target T, Blend B>
VT_HD inline TriShade shade_setup(uint32_t tri, const Vec3f v[3], const ShadeConsts& c) {
  TriShade s;
  s.v[0] = v[0];
  s.v[1] = v[1];
  s.v[2] = v[2];
  s.code = 0;
  s.normal = {0.0f, 0.0f, 0.0f};
  if (T == Target::kId) s.code = B == Blend::kMin ? encode_id(tri) : tri + 1u;
  if (T == Target::kNormal) {
    const Vec3f n = world_normal(v, c.voxel_size);
    if (B == Blend::kMax) s.code = pack_normal(n);
    else s.normal = n;
  }
  return s;
}

// The 32-bit value of a fragment (kAdd32 and kMax32 words).
template <Target T, Blend B>
VT_HD inline uint32_t shade32(const TriShade& s, int32_t i, int32_t j, int32_t k, const ShadeConsts& c) {
  if (T == Target::kCount) return 1u;
  if (T == Target::kDistance) {
    const float d = voxel_distance(s.v, i, j, k, c.voxel_size);
    return B == Blend::kMin ? encode_min_float(d) : encode_max_float(d);
  }
  return s.code;
}
// The 64-bit fixed-point values of a fragment, one per channel (kAdd64 words).
template <Target T, Blend B>
VT_HD inline void shade64(const TriShade& s, int32_t i, int32_t j, int32_t k, const ShadeConsts& c, uint64_t* out) {
  if (T == Target::kDistance) {
    out[0] = static_cast<uint64_t>(to_fixed(voxel_distance(s.v, i, j, k, c.voxel_size), c.distance_scale));
  } else {
    out[0] = static_cast<uint64_t>(to_fixed(s.normal.x, kNormalFixedScale));
    out[1] = static_cast<uint64_t>(to_fixed(s.normal.y, kNormalFixedScale));
    out[2] = static_cast<uint64_t>(to_fixed(s.normal.z, kNormalFixedScale));
  }
}

// Output values (bit patterns of int32 or float, out_channels of them) of a blended 32-bit word.
template <Target T, Blend B>
VT_HD inline void decode32(uint32_t acc, uint32_t* out) {
  if (T == Target::kCount) {
    out[0] = acc > 0x7fffffffu ? 0x7fffffffu : acc;
  } else if (T == Target::kId) {
    out[0] = acc == 0 ? 0u : (B == Blend::kMin ? uint32_t(decode_id(acc)) : acc - 1u);
  } else if (T == Target::kDistance) {
    out[0] = acc == 0 ? 0u : float_bits(B == Blend::kMin ? decode_min_float(acc) : decode_max_float(acc));
  } else if (T == Target::kNormal) {
    const Vec3f n = unpack_normal(acc);
    out[0] = float_bits(n.x);
    out[1] = float_bits(n.y);
    out[2] = float_bits(n.z);
  } else {
    out[0] = acc;
  }
}
// Output float bits of blended 64-bit channels (acc_channels of them).
template <Target T, Blend B>
VT_HD inline void decode64(const uint64_t* acc, const ShadeConsts& c, uint32_t* out) {
  if (T == Target::kDistance) {
    out[0] = float_bits(from_fixed(acc[0], c.distance_scale));
  } else {
    for (int q = 0; q < 3; ++q) out[q] = float_bits(from_fixed(acc[q], kNormalFixedScale));
  }
}

// Every target with each of its blends, X(target, blend) per combination (the enumerators' names), so
// that what is compiled per combination lists them once (with_target; the fine raster's kernels,
// kernels/voxelize/fine.cuh).
// clang-format off
#define VT_TARGET_BLENDS(X) \
  X(kBinary, kOr)           \
  X(kCount, kAdd)           \
  X(kId, kMin)              \
  X(kId, kMax)              \
  X(kDistance, kMin)        \
  X(kDistance, kMax)        \
  X(kDistance, kAdd)        \
  X(kNormal, kMax)          \
  X(kNormal, kAdd)
// clang-format on

// Runtime-to-template dispatch: calls f(std::integral_constant<Target, T>, std::integral_constant<Blend, B>)
// for the spec's combination, so every shader is compiled once per combination.
template <class F>
decltype(auto) with_target(const TargetSpec& s, F&& f) {
#define VT_TARGET_CASE(t, b)                        \
  if (s.target == Target::t && s.blend == Blend::b) \
    return f(std::integral_constant<Target, Target::t>{}, std::integral_constant<Blend, Blend::b>{});
  VT_TARGET_BLENDS(VT_TARGET_CASE)
#undef VT_TARGET_CASE
  fail(ErrorKind::kInternal, "unresolved target blend");
}

}  // namespace voxtile
