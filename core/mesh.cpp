// Mesh bounds and sanitising.
#include "core/mesh.h"

#include <algorithm>
#include <cmath>

namespace voxtile {

uint32_t Texture::lookup(float u, float v) const {
  if (empty() || !std::isfinite(u) || !std::isfinite(v)) return 0xC8C8C8;
  const double fu = double(u) - std::floor(double(u)), fv = double(v) - std::floor(double(v));
  const int32_t x = std::min(width - 1, int32_t(fu * width));
  const int32_t y = std::min(height - 1, int32_t((1.0 - fv) * height));
  const uint8_t* t = &rgb[3 * (size_t(y) * size_t(width) + size_t(x))];
  return (uint32_t(t[0]) << 16) | (uint32_t(t[1]) << 8) | t[2];
}

Bounds Mesh::bounds() const {
  Bounds b;
  for (uint32_t idx : indices) {
    const Vec3f& p = positions[idx];
    b.extend({p.x, p.y, p.z});
  }
  return b;
}

void Mesh::sanitize() {
  size_t out = 0;
  const size_t n = num_triangles();
  for (size_t t = 0; t < n; ++t) {
    const Vec3f a = vertex(t, 0), b = vertex(t, 1), c = vertex(t, 2);
    bool finite = true;
    for (const Vec3f& p : {a, b, c})
      finite = finite && std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z);
    if (!finite) {
      ++dropped_nonfinite;
      continue;
    }
    const double e1x = double(b.x) - a.x, e1y = double(b.y) - a.y, e1z = double(b.z) - a.z;
    const double e2x = double(c.x) - a.x, e2y = double(c.y) - a.y, e2z = double(c.z) - a.z;
    const double nx = e1y * e2z - e1z * e2y, ny = e1z * e2x - e1x * e2z, nz = e1x * e2y - e1y * e2x;
    if (nx == 0.0 && ny == 0.0 && nz == 0.0) {
      ++dropped_degenerate;
      continue;
    }
    for (int k = 0; k < 3; ++k) indices[3 * out + k] = indices[3 * t + k];
    mesh_ids[out] = mesh_ids[t];
    material_ids[out] = material_ids[t];
    ++out;
  }
  indices.resize(3 * out);
  mesh_ids.resize(out);
  material_ids.resize(out);
}

}  // namespace voxtile
