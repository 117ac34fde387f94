// Benchmark mesh generators. A small xorshift generator keeps the output identical everywhere.
#include "core/meshgen.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace voxtile {
namespace {

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  double uniform(double a, double b) { return a + (b - a) * double(next() >> 11) * (1.0 / 9007199254740992.0); }
};

void add_triangle(Mesh& m, uint32_t a, uint32_t b, uint32_t c, uint32_t id) {
  m.indices.insert(m.indices.end(), {a, b, c});
  m.mesh_ids.push_back(id);
  m.material_ids.push_back(0);
}

void add_sphere(Mesh& m, double cx, double cy, double cz, double r, int rings, int segs, uint32_t id) {
  const uint32_t base = uint32_t(m.positions.size());
  m.positions.push_back({float(cx), float(cy), float(cz + r)});
  for (int i = 1; i < rings; ++i) {
    const double th = kPi * i / rings;
    for (int j = 0; j < segs; ++j) {
      const double ph = 2 * kPi * j / segs;
      m.positions.push_back({float(cx + r * std::sin(th) * std::cos(ph)), float(cy + r * std::sin(th) * std::sin(ph)),
                             float(cz + r * std::cos(th))});
    }
  }
  m.positions.push_back({float(cx), float(cy), float(cz - r)});
  const uint32_t south = uint32_t(m.positions.size() - 1);
  auto ring = [&](int i, int j) { return base + uint32_t(1 + (i - 1) * segs + (j % segs)); };
  for (int j = 0; j < segs; ++j) add_triangle(m, base, ring(1, j), ring(1, j + 1), id);
  for (int i = 1; i + 1 < rings; ++i)
    for (int j = 0; j < segs; ++j) {
      add_triangle(m, ring(i, j), ring(i + 1, j), ring(i + 1, j + 1), id);
      add_triangle(m, ring(i, j), ring(i + 1, j + 1), ring(i, j + 1), id);
    }
  for (int j = 0; j < segs; ++j) add_triangle(m, ring(rings - 1, j), south, ring(rings - 1, j + 1), id);
}

void add_box(Mesh& m, double x0, double y0, double z0, double x1, double y1, double z1, uint32_t id) {
  const uint32_t b = uint32_t(m.positions.size());
  for (int i = 0; i < 8; ++i)
    m.positions.push_back({float(i & 1 ? x1 : x0), float(i & 2 ? y1 : y0), float(i & 4 ? z1 : z0)});
  const uint32_t f[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  for (const auto& q : f) {
    add_triangle(m, b + q[0], b + q[1], b + q[2], id);
    add_triangle(m, b + q[0], b + q[2], b + q[3], id);
  }
}

}  // namespace

Mesh make_uv_sphere(float cx, float cy, float cz, float r, int rings, int segments) {
  Mesh m;
  m.num_source_meshes = 1;
  add_sphere(m, cx, cy, cz, r, rings, segments, 0);
  return m;
}

Mesh make_box_mesh(float x0, float y0, float z0, float x1, float y1, float z1) {
  Mesh m;
  m.num_source_meshes = 1;
  add_box(m, x0, y0, z0, x1, y1, z1, 0);
  return m;
}

Mesh subdivide(const Mesh& in, int levels, bool by_quarter) {
  Mesh m = in;
  for (int level = 0; level < levels; ++level) {
    Mesh out;
    out.positions = m.positions;
    out.num_source_meshes = m.num_source_meshes;
    out.num_materials = m.num_materials;
    std::unordered_map<uint64_t, uint32_t> mid;
    mid.reserve(m.num_triangles() * 2);
    auto midpoint = [&](uint32_t a, uint32_t b) {
      const uint64_t key = (uint64_t(std::min(a, b)) << 32) | std::max(a, b);
      auto it = mid.find(key);
      if (it != mid.end()) return it->second;
      const Vec3f& p = out.positions[a];
      const Vec3f& q = out.positions[b];
      out.positions.push_back({0.5f * (p.x + q.x), 0.5f * (p.y + q.y), 0.5f * (p.z + q.z)});
      const uint32_t idx = uint32_t(out.positions.size() - 1);
      mid.emplace(key, idx);
      return idx;
    };
    // The children of every parent, then listed parent by parent (or quarter by quarter).
    std::vector<std::array<uint32_t, 3>> kids(4 * m.num_triangles());
    for (size_t t = 0; t < m.num_triangles(); ++t) {
      const uint32_t a = m.indices[3 * t], b = m.indices[3 * t + 1], c = m.indices[3 * t + 2];
      const uint32_t ab = midpoint(a, b), bc = midpoint(b, c), ca = midpoint(c, a);
      kids[4 * t] = {a, ab, ca};
      kids[4 * t + 1] = {ab, b, bc};
      kids[4 * t + 2] = {ca, bc, c};
      kids[4 * t + 3] = {ab, bc, ca};
    }
    const size_t n = m.num_triangles();
    for (size_t i = 0; i < 4 * n; ++i) {
      const size_t t = by_quarter ? i % n : i / 4, k = by_quarter ? i / n : i % 4;
      out.indices.insert(out.indices.end(), kids[4 * t + k].begin(), kids[4 * t + k].end());
      out.mesh_ids.push_back(m.mesh_ids[t]);
      out.material_ids.push_back(m.material_ids[t]);
    }
    m = std::move(out);
  }
  return m;
}

Mesh make_tubes(uint32_t tubes, uint32_t rings, uint32_t sides, uint64_t seed, double radius, double length) {
  const bool open = length > 0;
  const double scale = open ? 1 / std::sqrt(3.0) : 1.0;  // [-1,1]^3 into the unit ball
  Rng rng(seed);
  Mesh m;
  m.num_source_meshes = 1;
  for (uint32_t t = 0; t < tubes; ++t) {
    // Closed curve: per axis a sum of two sinusoids of integer frequency, inside [-1, 1].
    double amp[3][2], freq[3][2], phase[3][2];
    for (int a = 0; a < 3; ++a)
      for (int k = 0; k < 2; ++k) {
        amp[a][k] = rng.uniform(0.2, 0.5);
        freq[a][k] = double(1 + rng.next() % 4);
        phase[a][k] = rng.uniform(0, 2 * kPi);
      }
    auto curve = [&](double u, double out[3]) {
      for (int a = 0; a < 3; ++a)
        out[a] = scale * (amp[a][0] * std::sin(freq[a][0] * u + phase[a][0]) +
                          amp[a][1] * std::sin(freq[a][1] * u + phase[a][1]));
    };
    // Open tubes: the curve parameter of each ring, by arc length (steps of 1e-4 in u, ~1e-4 long).
    std::vector<double> ring_u;
    if (open) {
      double u = rng.uniform(0, 2 * kPi), walked = 0, p[3], q[3];
      curve(u, p);
      for (uint32_t r = 0; r <= rings; ++r) {
        const double target = length * r / rings;
        while (walked < target) {
          curve(u + 1e-4, q);
          walked +=
              std::sqrt((q[0] - p[0]) * (q[0] - p[0]) + (q[1] - p[1]) * (q[1] - p[1]) + (q[2] - p[2]) * (q[2] - p[2]));
          u += 1e-4;
          std::copy(q, q + 3, p);
        }
        ring_u.push_back(u);
      }
    }
    const uint32_t vertex_rings = open ? rings + 1 : rings;
    const uint32_t base = uint32_t(m.positions.size());
    for (uint32_t r = 0; r < vertex_rings; ++r) {
      const double u = open ? ring_u[r] : 2 * kPi * r / rings;
      double p[3], q[3];
      curve(u, p);
      curve(u + 1e-4, q);
      double tng[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
      const double tl = std::sqrt(tng[0] * tng[0] + tng[1] * tng[1] + tng[2] * tng[2]) + 1e-30;
      for (double& x : tng) x /= tl;
      // Frame: any vector not parallel to the tangent.
      const double h[3] = {std::fabs(tng[0]) < 0.9 ? 1.0 : 0.0, std::fabs(tng[0]) < 0.9 ? 0.0 : 1.0, 0.0};
      double n1[3] = {tng[1] * h[2] - tng[2] * h[1], tng[2] * h[0] - tng[0] * h[2], tng[0] * h[1] - tng[1] * h[0]};
      const double nl = std::sqrt(n1[0] * n1[0] + n1[1] * n1[1] + n1[2] * n1[2]);
      for (double& x : n1) x /= nl;
      const double n2[3] = {tng[1] * n1[2] - tng[2] * n1[1], tng[2] * n1[0] - tng[0] * n1[2],
                            tng[0] * n1[1] - tng[1] * n1[0]};
      for (uint32_t s = 0; s < sides; ++s) {
        const double a = 2 * kPi * s / sides, c = std::cos(a) * radius, d = std::sin(a) * radius;
        m.positions.push_back({float(p[0] + c * n1[0] + d * n2[0]), float(p[1] + c * n1[1] + d * n2[1]),
                               float(p[2] + c * n1[2] + d * n2[2])});
      }
    }
    for (uint32_t r = 0; r < rings; ++r)
      for (uint32_t s = 0; s < sides; ++s) {
        const uint32_t r1 = open ? r + 1 : (r + 1) % rings, s1 = (s + 1) % sides;
        const uint32_t a = base + r * sides + s, b = base + r1 * sides + s, c = base + r1 * sides + s1,
                       d = base + r * sides + s1;
        add_triangle(m, a, b, c, t);
        add_triangle(m, a, c, d, t);
      }
  }
  return m;
}

Mesh make_room(uint32_t objects, uint64_t seed) {
  Rng rng(seed);
  Mesh m;
  m.num_source_meshes = 1;
  add_box(m, 0, 0, 0, 10, 4, 8, 0);           // walls, floor, ceiling
  add_box(m, 1, 0.9, 1, 9, 1.0, 7, 1);        // a long table top
  add_box(m, 0.2, 0, 0.2, 9.8, 2.5, 0.3, 2);  // a shelf wall
  add_box(m, 4.9, 0, 0.3, 5.1, 3.9, 7.7, 3);  // a partition
  for (uint32_t i = 0; i < objects; ++i) {
    const double r = rng.uniform(0.01, 0.05);
    add_sphere(m, rng.uniform(0.3, 9.7), rng.uniform(0.05, 3.9), rng.uniform(0.3, 7.7), r, 16, 16, 10 + i);
  }
  return m;
}

Mesh make_cad(uint32_t parts, uint32_t sides, uint64_t seed) {
  Rng rng(seed);
  Mesh m;
  m.num_source_meshes = 1;
  for (uint32_t p = 0; p < parts; ++p) {
    const double cx = rng.uniform(-0.8, 0.8), cy = rng.uniform(-0.8, 0.8), cz = rng.uniform(-0.8, 0.8);
    if (p % 4 == 3) {  // a plate
      const double a = rng.uniform(0.2, 0.8), b = rng.uniform(0.01, 0.04), c = rng.uniform(0.2, 0.8);
      add_box(m, cx - a, cy - b, cz - c, cx + a, cy + b, cz + c, p);
      continue;
    }
    // A cylinder along a random axis w, with a frame (u, v) around it.
    double w[3] = {rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1)};
    const double wn = std::max(1e-3, std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]));
    for (double& x : w) x /= wn;
    const double a[3] = {std::abs(w[0]) < 0.9 ? 1.0 : 0.0, std::abs(w[0]) < 0.9 ? 0.0 : 1.0, 0.0};
    double u[3] = {a[1] * w[2] - a[2] * w[1], a[2] * w[0] - a[0] * w[2], a[0] * w[1] - a[1] * w[0]};
    const double un = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (double& x : u) x /= un;
    const double v[3] = {w[1] * u[2] - w[2] * u[1], w[2] * u[0] - w[0] * u[2], w[0] * u[1] - w[1] * u[0]};
    const double r = rng.uniform(0.02, 0.25), h = rng.uniform(0.1, 0.8);
    const uint32_t base = uint32_t(m.positions.size());
    for (int end = 0; end < 2; ++end)
      for (uint32_t j = 0; j < sides; ++j) {
        const double ph = 2 * kPi * j / sides, cs = r * std::cos(ph), sn = r * std::sin(ph), t = end ? h : -h;
        m.positions.push_back({float(cx + t * w[0] + cs * u[0] + sn * v[0]),
                               float(cy + t * w[1] + cs * u[1] + sn * v[1]),
                               float(cz + t * w[2] + cs * u[2] + sn * v[2])});
      }
    auto ring = [&](int end, uint32_t j) { return base + uint32_t(end) * sides + j % sides; };
    for (uint32_t j = 0; j < sides; ++j) {  // the side: one quad per segment, end to end, facing out as the caps
      add_triangle(m, ring(0, j), ring(1, j + 1), ring(1, j), p);
      add_triangle(m, ring(0, j), ring(0, j + 1), ring(1, j + 1), p);
    }
    for (uint32_t j = 1; j + 1 < sides; ++j) {  // the caps: fans from their first vertex
      add_triangle(m, ring(0, 0), ring(0, j + 1), ring(0, j), p);
      add_triangle(m, ring(1, 0), ring(1, j), ring(1, j + 1), p);
    }
  }
  return m;
}

void shuffle_triangles(Mesh& m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> order(m.num_triangles());
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  ValueArray<uint32_t> idx(m.indices.size());
  for (size_t t = 0; t < order.size(); ++t) std::memcpy(&idx[3 * t], &m.indices[3 * size_t(order[t])], 12);
  m.indices = std::move(idx);
}

}  // namespace voxtile
