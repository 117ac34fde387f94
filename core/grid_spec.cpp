// GridSpec construction from bounds and user options.
#include "core/grid_spec.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"

namespace voxtile {

void Bounds::extend(const Vec3d& p) {
  lo = {std::min(lo.x, p.x), std::min(lo.y, p.y), std::min(lo.z, p.z)};
  hi = {std::max(hi.x, p.x), std::max(hi.y, p.y), std::max(hi.z, p.z)};
}

std::string GridSpec::describe() const {
  std::ostringstream s;
  s.precision(9);
  s << dims.x << "x" << dims.y << "x" << dims.z << " voxels of ";
  if (is_cubic()) {
    s << voxel_size.x;
  } else {
    s << voxel_size.x << "x" << voxel_size.y << "x" << voxel_size.z;
  }
  s << " at (" << origin.x << ", " << origin.y << ", " << origin.z << ")";
  return s.str();
}

namespace {

double get(const Vec3d& v, int a) { return a == 0 ? v.x : (a == 1 ? v.y : v.z); }
void set(Vec3d& v, int a, double x) { (a == 0 ? v.x : (a == 1 ? v.y : v.z)) = x; }
int32_t get(const Int3& v, int a) { return a == 0 ? v.x : (a == 1 ? v.y : v.z); }
void set(Int3& v, int a, int32_t x) { (a == 0 ? v.x : (a == 1 ? v.y : v.z)) = x; }
bool finite3(const Vec3d& v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); }

}  // namespace

GridSpec make_grid_spec(const Bounds& in_bounds, const GridOptions& opt) {
  const Bounds b = opt.bbox ? *opt.bbox : in_bounds;
  // A user's box is a usage error whatever is wrong with it; the mesh's bounds an input error.
  if (opt.bbox && !(b.lo.x < b.hi.x && b.lo.y < b.hi.y && b.lo.z < b.hi.z))
    fail(ErrorKind::kUsage, "--bbox needs min < max on every axis");
  if (b.empty()) fail(ErrorKind::kInput, "the bounds are empty");
  if (!finite3(b.lo) || !finite3(b.hi)) fail(ErrorKind::kInput, "the bounds are not finite");
  if (opt.pad < 0 || opt.pad > kMaxGridDim) fail(ErrorKind::kUsage, "--pad must be between 0 and 65536");
  if (opt.resolution && (*opt.resolution < 1 || *opt.resolution > kMaxGridDim))
    fail(ErrorKind::kUsage, "--resolution must be between 1 and " + std::to_string(kMaxGridDim));
  if (opt.resolution && opt.voxel_size)
    fail(ErrorKind::kUsage, "--resolution and --voxel-size cannot be combined");
  if (opt.resolution && opt.dims) fail(ErrorKind::kUsage, "--resolution and --dims cannot be combined");
  if (opt.dims) {
    for (int a = 0; a < 3; ++a) {
      const int32_t d = get(*opt.dims, a);
      if (d < 1 || d > kMaxGridDim) fail(ErrorKind::kUsage, "--dims must be between 1 and " + std::to_string(kMaxGridDim));
    }
  }
  if (opt.voxel_size) {
    for (int a = 0; a < 3; ++a) {
      const double s = get(*opt.voxel_size, a);
      if (!(s > 0.0) || !std::isfinite(s)) fail(ErrorKind::kUsage, "--voxel-size must be positive and finite");
    }
  }

  const Vec3d ext{b.hi.x - b.lo.x, b.hi.y - b.lo.y, b.hi.z - b.lo.z};
  if (!finite3(ext)) fail(ErrorKind::kInput, "the bounds are too large to voxelize");
  const double longest = std::max(ext.x, std::max(ext.y, ext.z));

  GridSpec g;
  g.origin = b.lo;
  if (opt.voxel_size) {
    g.voxel_size = *opt.voxel_size;
  } else if (opt.dims) {
    double largest = 0.0;
    for (int a = 0; a < 3; ++a) {
      const double s = get(ext, a) / get(*opt.dims, a);
      set(g.voxel_size, a, s);
      largest = std::max(largest, s);
    }
    if (largest == 0.0) fail(ErrorKind::kInput, "the bounds are a single point; give --voxel-size or --bbox");
    for (int a = 0; a < 3; ++a)
      if (get(g.voxel_size, a) == 0.0) set(g.voxel_size, a, largest);
  } else {
    if (longest == 0.0) fail(ErrorKind::kInput, "the bounds are a single point; give --voxel-size or --bbox");
    const int32_t n = opt.resolution ? *opt.resolution : GridOptions::kDefaultResolution;
    const double s = longest / n;
    g.voxel_size = {s, s, s};
  }
  for (int a = 0; a < 3; ++a) {
    if (!(get(g.voxel_size, a) > 0.0) || !std::isfinite(get(g.voxel_size, a)))
      fail(ErrorKind::kInput, "the bounds give a zero or non-finite voxel size");
  }

  if (opt.dims) {
    g.dims = *opt.dims;
  } else {
    const Vec3f top = g.world_to_grid(b.hi);
    for (int a = 0; a < 3; ++a) {
      const double t = static_cast<double>(component(top, a));
      if (!(t <= static_cast<double>(kMaxGridDim)))
        fail(ErrorKind::kUsage, "the grid would need more than " + std::to_string(kMaxGridDim) +
                                    " voxels along an axis; use a larger --voxel-size or smaller --resolution");
      set(g.dims, a, std::max<int32_t>(1, static_cast<int32_t>(std::ceil(t))));
    }
  }
  if (opt.pad > 0) {
    for (int a = 0; a < 3; ++a) {
      set(g.origin, a, get(g.origin, a) - opt.pad * get(g.voxel_size, a));
      const int64_t d = int64_t(get(g.dims, a)) + 2 * int64_t(opt.pad);
      if (d > kMaxGridDim) fail(ErrorKind::kUsage, "--pad makes the grid larger than " + std::to_string(kMaxGridDim) + " voxels along an axis");
      set(g.dims, a, static_cast<int32_t>(d));
    }
  }
  return g;
}

}  // namespace voxtile
