// Small POD vector types shared by host and device code.
#pragma once

#include <cstdint>

#include "core/hd.h"

namespace voxtile {

inline constexpr double kPi = 3.14159265358979323846;

struct Vec3f {
  float x, y, z;
};
struct Vec2f {
  float x, y;
};
struct Vec3d {
  double x, y, z;
};
struct Int3 {
  int32_t x, y, z;
};

VT_HD inline float component(const Vec3f& v, int axis) { return axis == 0 ? v.x : (axis == 1 ? v.y : v.z); }
VT_HD inline int32_t component(const Int3& v, int axis) { return axis == 0 ? v.x : (axis == 1 ? v.y : v.z); }
VT_HD inline Vec3f sub(const Vec3f& a, const Vec3f& b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
// Cross product, each component evaluated as (a*b) - (c*d) with separate roundings.
VT_HD inline Vec3f cross(const Vec3f& a, const Vec3f& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

}  // namespace voxtile
