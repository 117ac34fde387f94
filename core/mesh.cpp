// Mesh bounds and sanitising.
#include "core/mesh.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"

namespace voxtile {

uint32_t Texture::lookup(float u, float v) const {
  if (empty() || !std::isfinite(u) || !std::isfinite(v)) return 0xC8C8C8;
  const double fu = double(u) - std::floor(double(u)), fv = double(v) - std::floor(double(v));
  const int32_t x = std::min(width - 1, int32_t(fu * width));
  const int32_t y = std::min(height - 1, int32_t((1.0 - fv) * height));
  const uint8_t* t = &rgb[3 * (size_t(y) * size_t(width) + size_t(x))];
  return (uint32_t(t[0]) << 16) | (uint32_t(t[1]) << 8) | t[2];
}

// Both run in parallel (TBB) over blocks of triangles: meshes of millions of triangles are checked in
// a fraction of their load time. The results do not depend on the number of threads.
Bounds Mesh::bounds() const {
  // Only the vertices that triangles use count.
  return tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, indices.size(), 1 << 16), Bounds{},
      [&](const tbb::blocked_range<size_t>& r, Bounds b) {
        // Per axis in float (exact: the positions are floats), with Bounds::extend's comparisons (a
        // NaN coordinate changes nothing).
        constexpr float inf = std::numeric_limits<float>::infinity();
        float lo[3] = {inf, inf, inf}, hi[3] = {-inf, -inf, -inf};
        for (size_t i = r.begin(); i < r.end(); ++i) {
          const Vec3f& p = positions[indices[i]];
          const float v[3] = {p.x, p.y, p.z};
          for (int a = 0; a < 3; ++a) {
            lo[a] = std::min(lo[a], v[a]);
            hi[a] = std::max(hi[a], v[a]);
          }
        }
        b.lo = {std::min(b.lo.x, double(lo[0])), std::min(b.lo.y, double(lo[1])), std::min(b.lo.z, double(lo[2]))};
        b.hi = {std::max(b.hi.x, double(hi[0])), std::max(b.hi.y, double(hi[1])), std::max(b.hi.z, double(hi[2]))};
        return b;
      },
      [](Bounds a, const Bounds& b) {
        if (!b.empty()) {
          a.extend(b.lo);
          a.extend(b.hi);
        }
        return a;
      });
}

void Mesh::sanitize() {
  const size_t n = num_triangles();
  constexpr size_t kBlock = size_t(1) << 14;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  // Pass 1: keep flags and per-block counts; pass 2: every block moves its kept triangles to its offset.
  std::vector<uint8_t> keep(n);
  std::vector<size_t> kept(blocks + 1, 0), nonfinite(blocks, 0), degenerate(blocks, 0), past(blocks, 0);
  const size_t nv = positions.size();
  tbb::parallel_for(size_t(0), blocks, [&](size_t blk) {
    for (size_t t = blk * kBlock; t < std::min(n, (blk + 1) * kBlock); ++t) {
      // (a reader's bug, never the file's: each reader drops and counts the faces whose indices
      // point past its vertices; caught here as an error instead of a read out of bounds)
      if (indices[3 * t] >= nv || indices[3 * t + 1] >= nv || indices[3 * t + 2] >= nv) {
        ++past[blk];
        keep[t] = 0;
        continue;
      }
      const Vec3f a = vertex(t, 0), b = vertex(t, 1), c = vertex(t, 2);
      bool finite = true;
      for (const Vec3f& p : {a, b, c})
        finite = finite && std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z);
      if (!finite) {
        ++nonfinite[blk];
        keep[t] = 0;
        continue;
      }
      const double e1x = double(b.x) - a.x, e1y = double(b.y) - a.y, e1z = double(b.z) - a.z;
      const double e2x = double(c.x) - a.x, e2y = double(c.y) - a.y, e2z = double(c.z) - a.z;
      const double nx = e1y * e2z - e1z * e2y, ny = e1z * e2x - e1x * e2z, nz = e1x * e2y - e1y * e2x;
      keep[t] = !(nx == 0.0 && ny == 0.0 && nz == 0.0);
      if (!keep[t]) ++degenerate[blk];
      kept[blk + 1] += keep[t];
    }
  });
  const size_t bad = std::accumulate(past.begin(), past.end(), size_t(0));
  if (bad)
    fail(ErrorKind::kInternal, std::to_string(bad) + " triangles index vertices past the " + std::to_string(nv) +
                                   " the mesh holds (a reader's bug)");
  for (size_t blk = 0; blk < blocks; ++blk) {
    kept[blk + 1] += kept[blk];
    dropped_nonfinite += nonfinite[blk];
    dropped_degenerate += degenerate[blk];
  }
  if (kept[blocks] == n) return;
  // In place, in order (only when something was dropped, which is rare): block b's kept triangles
  // go to [kept[b], kept[b+1]), never past where block b begins.
  for (size_t blk = 0; blk < blocks; ++blk) {
    size_t out = kept[blk];
    for (size_t t = blk * kBlock; t < std::min(n, (blk + 1) * kBlock); ++t) {
      if (!keep[t]) continue;
      for (int k = 0; k < 3; ++k) indices[3 * out + size_t(k)] = indices[3 * t + size_t(k)];
      mesh_ids[out] = mesh_ids[t];
      material_ids[out] = material_ids[t];
      ++out;
    }
  }
  const size_t total = kept[blocks];
  indices.resize(3 * total);
  mesh_ids.resize(total);
  material_ids.resize(total);
}

std::vector<float> neighbour_distances(const Mesh& mesh) {
  const size_t tris = mesh.num_triangles();
  std::vector<float> d;
  if (tris < 2) return d;
  constexpr size_t kWindows = 64, kPairs = 64;
  auto add = [&](size_t first, size_t end) {  // pairs (t, t + 1), t in [first, end)
    for (size_t t = first; t < end; ++t) {
      const Vec3f a = mesh.vertex(t, 0), b = mesh.vertex(t + 1, 0);
      const double dx = double(a.x) - b.x, dy = double(a.y) - b.y, dz = double(a.z) - b.z;
      const float x = float(std::sqrt(dx * dx + dy * dy + dz * dz));
      d.push_back(x >= 0.0f ? x : std::numeric_limits<float>::infinity());  // (a non-finite vertex: far)
    }
  };
  const size_t all = tris - 1;
  if (all <= kWindows * kPairs)
    add(0, all);
  else
    for (size_t w = 0; w < kWindows; ++w) {
      const size_t first = w * (all - kPairs) / (kWindows - 1);  // (the last window ends at the last pair)
      add(first, first + kPairs);
    }
  std::sort(d.begin(), d.end());
  return d;
}

double fraction_below(const std::vector<float>& sorted, double d) {
  if (sorted.empty()) return 0.0;
  const size_t below =
      size_t(std::lower_bound(sorted.begin(), sorted.end(), d, [](float x, double v) { return double(x) < v; }) -
             sorted.begin());
  return double(below) / double(sorted.size());
}

}  // namespace voxtile
