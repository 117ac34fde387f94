// Mesh surface sampling, voxel keys, CPU binning of points and grids from voxel sums.
#include "core/points.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <sstream>

#include "core/error.h"

namespace voxtile {

// ---- mesh sampling ---------------------------------------------------------------------------

namespace {
double triangle_area(const Mesh& m, size_t t) {
  const Vec3f a = m.vertex(t, 0), b = m.vertex(t, 1), c = m.vertex(t, 2);
  const double e1[3] = {double(b.x) - a.x, double(b.y) - a.y, double(b.z) - a.z};
  const double e2[3] = {double(c.x) - a.x, double(c.y) - a.y, double(c.z) - a.z};
  const double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
  return 0.5 * std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
}
}  // namespace

double mesh_area(const Mesh& mesh) {
  double a = 0;
  for (size_t t = 0; t < mesh.num_triangles(); ++t) a += triangle_area(mesh, t);
  return a;
}

PointCloud sample_mesh(const Mesh& mesh, uint64_t count) {
  PointCloud pc;
  const size_t nt = mesh.num_triangles();
  if (nt == 0 || count == 0) return pc;
  std::vector<double> cdf(nt + 1, 0.0);
  for (size_t t = 0; t < nt; ++t) cdf[t + 1] = cdf[t] + triangle_area(mesh, t);
  const double total = cdf[nt];
  const bool has_normals = !mesh.normals.empty(), has_vcolors = !mesh.colors.empty();
  const bool has_mcolors = !mesh.material_colors.empty();
  const bool has_textures = !mesh.material_textures.empty() && !mesh.uvs.empty();
  pc.positions.resize(count);
  pc.normals.resize(count);
  pc.ids.resize(count);
  pc.materials.resize(count);
  if (has_vcolors || has_mcolors || has_textures) pc.colors.resize(count);
  const double g = 1.32471795724474602596, a1 = 1 / g, a2 = 1 / (g * g);
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, count, 4096), [&](const tbb::blocked_range<uint64_t>& r) {
    for (uint64_t i = r.begin(); i < r.end(); ++i) {
      const double target = (double(i) + 0.5) / double(count) * total;
      size_t t = size_t(std::upper_bound(cdf.begin(), cdf.end(), target) - cdf.begin());
      t = std::min(std::max<size_t>(t, 1), nt) - 1;
      double u = 0.5 + a1 * double(i), v = 0.5 + a2 * double(i);
      u -= std::floor(u);
      v -= std::floor(v);
      const double su = std::sqrt(u);
      const double w[3] = {1 - su, su * (1 - v), su * v};  // uniform in area
      const uint32_t vi[3] = {mesh.indices[3 * t], mesh.indices[3 * t + 1], mesh.indices[3 * t + 2]};
      double p[3] = {0, 0, 0}, n[3] = {0, 0, 0};
      for (int c = 0; c < 3; ++c) {
        const Vec3f& x = mesh.positions[vi[c]];
        p[0] += w[c] * x.x, p[1] += w[c] * x.y, p[2] += w[c] * x.z;
        if (has_normals) {
          const Vec3f& vn = mesh.normals[vi[c]];
          n[0] += w[c] * vn.x, n[1] += w[c] * vn.y, n[2] += w[c] * vn.z;
        }
      }
      double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
      if (!(len > 1e-12)) {  // no (usable) vertex normals: the face normal
        const Vec3f a = mesh.positions[vi[0]], b = mesh.positions[vi[1]], c = mesh.positions[vi[2]];
        const double e1[3] = {double(b.x) - a.x, double(b.y) - a.y, double(b.z) - a.z};
        const double e2[3] = {double(c.x) - a.x, double(c.y) - a.y, double(c.z) - a.z};
        n[0] = e1[1] * e2[2] - e1[2] * e2[1], n[1] = e1[2] * e2[0] - e1[0] * e2[2], n[2] = e1[0] * e2[1] - e1[1] * e2[0];
        len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
      }
      pc.positions[i] = {float(p[0]), float(p[1]), float(p[2])};
      pc.normals[i] = {float(n[0] / len), float(n[1] / len), float(n[2] / len)};
      pc.ids[i] = uint32_t(t);
      const uint32_t mat = mesh.material_ids[t];
      pc.materials[i] = mat;
      const Texture* tex =
          has_textures && mat < mesh.material_textures.size() && !mesh.material_textures[mat].empty()
              ? &mesh.material_textures[mat]
              : nullptr;
      if (tex) {
        double uv[2] = {0, 0};
        for (int c = 0; c < 3; ++c) uv[0] += w[c] * mesh.uvs[vi[c]].x, uv[1] += w[c] * mesh.uvs[vi[c]].y;
        const uint32_t c = tex->lookup(float(uv[0]), float(uv[1]));
        pc.colors[i] = {uint8_t(c >> 16), uint8_t(c >> 8), uint8_t(c)};
      } else if (has_vcolors) {
        double rgb[3] = {0, 0, 0};
        for (int c = 0; c < 3; ++c)
          for (int ch = 0; ch < 3; ++ch) rgb[ch] += w[c] * double((mesh.colors[vi[c]] >> (16 - 8 * ch)) & 0xFF);
        pc.colors[i] = {uint8_t(std::lround(rgb[0])), uint8_t(std::lround(rgb[1])), uint8_t(std::lround(rgb[2]))};
      } else if (!pc.colors.empty()) {
        const uint32_t c = mat < mesh.material_colors.size() ? mesh.material_colors[mat] : 0xC8C8C8;
        pc.colors[i] = {uint8_t(c >> 16), uint8_t(c >> 8), uint8_t(c)};
      }
    }
  });
  return pc;
}

// ---- binning -------------------------------------------------------------------------------

GridView GridView::make(const GridSpec& spec) {
  GridView k{};
  k.origin[0] = spec.origin.x, k.origin[1] = spec.origin.y, k.origin[2] = spec.origin.z;
  k.size[0] = spec.voxel_size.x, k.size[1] = spec.voxel_size.y, k.size[2] = spec.voxel_size.z;
  k.dims[0] = spec.dims.x, k.dims[1] = spec.dims.y, k.dims[2] = spec.dims.z;
  for (int a = 0; a < 3; ++a) k.bricks[a] = (k.dims[a] + 7) / 8;
  return k;
}

int GridView::key_bits() const {
  const uint64_t max_key = uint64_t(bricks[0] * bricks[1] * bricks[2]) * 512 - 1;
  int bits = 1;
  while (bits < 64 && (max_key >> bits)) ++bits;
  return bits;
}

Int3 GridView::voxel(uint64_t key) const {
  const int64_t b = int64_t(key >> 9);
  const int off = int(key & 511);
  const int64_t bz = b % bricks[2], by = (b / bricks[2]) % bricks[1], bx = b / (bricks[2] * bricks[1]);
  return {int32_t(bx * 8 + (off >> 6)), int32_t(by * 8 + ((off >> 3) & 7)), int32_t(bz * 8 + (off & 7))};
}

namespace {
PointAttrs attrs_of(const PointCloud& points) {
  PointAttrs at;
  if (!points.colors.empty()) at.colors = points.colors.data();
  if (!points.normals.empty()) at.normals = points.normals.data();
  if (!points.intensity.empty()) at.intensity = points.intensity.data();
  return at;
}
}  // namespace

VoxelBins bin_points_cpu(const PointCloud& points, const GridSpec& spec) {
  const GridView view = GridView::make(spec);
  const uint64_t n = points.size();
  const bool classes = !points.classes.empty();
  if (classes && view.key_bits() + kClassBits > 63)
    fail(ErrorKind::kUsage, "grid too large to bin point classes (voxel keys over 55 bits)");
  const int shift = classes ? kClassBits : 0;
  // Key of each point (with classes: key << 8 | class), outside points last.
  std::vector<std::pair<uint64_t, uint64_t>> kv(n);
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, n, 1 << 14), [&](const tbb::blocked_range<uint64_t>& r) {
    for (uint64_t i = r.begin(); i < r.end(); ++i) {
      const uint64_t k = points.positions64.empty() ? view.key(points.positions[i]) : view.key(points.positions64[i]);
      kv[i] = {k == kOutsideGrid ? k : (k << shift) | (classes ? points.classes[i] : 0), i};
    }
  });
  tbb::parallel_sort(kv.begin(), kv.end());
  VoxelBins bins;
  const PointAttrs at = attrs_of(points);
  // The voxels' runs of points (outside points sorted last), reduced on all cores: each voxel's sum
  // in point order as one pass would, voxels (and a voxel's class runs) in key order.
  const uint64_t inside = uint64_t(std::lower_bound(kv.begin(), kv.end(), std::pair<uint64_t, uint64_t>{kOutsideGrid, 0}) - kv.begin());
  bins.outside = n - inside;
  auto voxel_starts_at = [&](uint64_t i) { return i == 0 || (kv[i].first >> shift) != (kv[i - 1].first >> shift); };
  auto class_starts_at = [&](uint64_t i) { return i == 0 || kv[i].first != kv[i - 1].first; };
  constexpr uint64_t kBlock = uint64_t(1) << 16;
  const uint64_t blocks = (inside + kBlock - 1) / kBlock;
  std::vector<uint64_t> voxel_at(blocks + 1, 0), run_at(blocks + 1, 0);
  tbb::parallel_for(uint64_t(0), blocks, [&](uint64_t b) {
    for (uint64_t i = b * kBlock; i < std::min(inside, (b + 1) * kBlock); ++i) {
      voxel_at[b + 1] += voxel_starts_at(i);
      if (classes) run_at[b + 1] += class_starts_at(i);
    }
  });
  for (uint64_t b = 0; b < blocks; ++b) {
    voxel_at[b + 1] += voxel_at[b];
    run_at[b + 1] += run_at[b];
  }
  const uint64_t voxels = voxel_at[blocks], runs = run_at[blocks];
  std::vector<uint64_t> first(voxels + 1, inside);  // each voxel's first point in kv
  std::vector<uint64_t> class_keys(runs);
  std::vector<uint32_t> class_counts(runs);
  std::vector<uint64_t> run_first(runs + 1, inside);
  tbb::parallel_for(uint64_t(0), blocks, [&](uint64_t b) {
    uint64_t v = voxel_at[b], r = run_at[b];
    for (uint64_t i = b * kBlock; i < std::min(inside, (b + 1) * kBlock); ++i) {
      if (voxel_starts_at(i)) first[v++] = i;
      if (classes && class_starts_at(i)) {
        class_keys[r] = kv[i].first;
        run_first[r++] = i;
      }
    }
  });
  bins.keys.resize(voxels);
  bins.counts.resize(voxels);
  if (at.any()) bins.sums.resize(voxels);
  std::atomic<bool> overfull{false};
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, voxels, 1024), [&](const tbb::blocked_range<uint64_t>& r) {
    for (uint64_t v = r.begin(); v < r.end(); ++v) {
      const uint64_t i = first[v], j = first[v + 1];
      VoxelAcc acc = point_acc(at, kv[i].second);
      for (uint64_t k = i + 1; k < j; ++k) acc = acc + point_acc(at, kv[k].second);
      if (acc.count > 0xffffffffu) overfull = true;
      bins.keys[v] = kv[i].first >> shift;
      bins.counts[v] = uint32_t(acc.count);
      if (at.any()) bins.sums[v] = acc;
    }
  });
  if (overfull) fail(ErrorKind::kInput, "more than 2^32 points in one voxel");
  tbb::parallel_for(uint64_t(0), runs, [&](uint64_t r) { class_counts[r] = uint32_t(run_first[r + 1] - run_first[r]); });
  if (classes) majority_classes(class_keys.data(), class_counts.data(), class_keys.size(), bins);
  return bins;
}

Bounds point_bounds(const PointCloud& points) {
  Bounds b;
  if (!points.positions64.empty())
    for (const Vec3d& p : points.positions64) b.extend(p);
  else
    for (const Vec3f& p : points.positions) b.extend({p.x, p.y, p.z});
  return b;
}

void majority_classes(const uint64_t* class_keys, const uint32_t* counts, size_t runs, VoxelBins& bins) {
  bins.classes.assign(bins.keys.size(), 0);
  size_t r = 0;
  for (size_t v = 0; v < bins.keys.size(); ++v) {
    uint64_t best = 0;
    for (; r < runs && (class_keys[r] >> kClassBits) == bins.keys[v]; ++r)
      best = std::max(best, class_vote(class_keys[r], counts[r]));
    if (best >> kClassBits == 0) fail(ErrorKind::kInternal, "class runs do not match the voxels");
    bins.classes[v] = vote_class(best);
  }
}

std::vector<std::string> parse_point_values(const std::string& list, bool have_colors, bool have_normals,
                                           bool have_intensity, bool have_classes) {
  std::vector<std::string> out;
  std::stringstream s(list);
  std::string v;
  while (std::getline(s, v, ',')) {
    if (v == "auto") {
      out.push_back("count");
      if (have_colors) out.push_back("color");
      if (have_normals) out.push_back("normal");
      if (have_intensity) out.push_back("intensity");
      if (have_classes) out.push_back("class");
      continue;
    }
    if (v != "occupancy" && v != "count" && v != "color" && v != "normal" && v != "intensity" && v != "class")
      fail(ErrorKind::kUsage,
           "--values: unknown value '" + v + "' (expected occupancy, count, color, normal, intensity, class or auto)");
    if (v == "color" && !have_colors) fail(ErrorKind::kUsage, "--values color: the points have no colours");
    if (v == "normal" && !have_normals) fail(ErrorKind::kUsage, "--values normal: the points have no normals");
    if (v == "intensity" && !have_intensity) fail(ErrorKind::kUsage, "--values intensity: the points have no intensity");
    if (v == "class" && !have_classes) fail(ErrorKind::kUsage, "--values class: the points have no classification");
    for (const std::string& o : out)
      if (o == v) fail(ErrorKind::kUsage, "--values: '" + v + "' given twice");
    out.push_back(v);
  }
  if (out.empty()) fail(ErrorKind::kUsage, "--values: nothing to write");
  return out;
}

std::vector<SparseGrid> bins_to_grids(const VoxelBins& bins, const GridSpec& spec,
                                      const std::vector<std::string>& values) {
  // Bricks from the sorted keys (shared by every grid).
  BrickKeys brick_keys;
  BrickMasks masks;
  const GridView view = GridView::make(spec);
  for (size_t v = 0; v < bins.keys.size(); ++v) {
    const uint64_t b = bins.keys[v] >> 9;
    if (v == 0 || b != (bins.keys[v - 1] >> 9)) {
      const Int3 ijk = view.voxel(bins.keys[v]);
      brick_keys.push_back(brick_key(ijk.x >> 3, ijk.y >> 3, ijk.z >> 3));
      masks.push_back(BrickMask{});
    }
    masks.back().set(int(bins.keys[v] & 511));
  }
  std::vector<SparseGrid> grids;
  for (const std::string& what : values) {
    SparseGrid g;
    g.spec = spec;
    g.name = what;
    g.keys = brick_keys;
    g.masks = masks;
    if (what == "count" || what == "class")
      g.value_type = ValueType::kInt32;
    else if (what == "intensity")
      g.value_type = ValueType::kFloat32;
    else if (what == "color" || what == "normal")
      g.value_type = ValueType::kVec3f;
    if (g.value_type == ValueType::kNone) {  // occupancy: the masks are the grid
      grids.push_back(std::move(g));
      continue;
    }
    g.index_values();  // (voxel v, in key order, is active voxel v: its values at v)
    tbb::parallel_for(tbb::blocked_range<size_t>(0, bins.keys.size(), 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t v = r.begin(); v < r.end(); ++v) {
        const size_t at = v;  // (voxel v's values)
        if (what == "count") {
          g.ivalues[at] = int32_t(std::min<uint32_t>(bins.counts[v], 2147483647u));
          continue;
        }
        if (what == "class") {
          g.ivalues[at] = bins.classes[v];
          continue;
        }
        const VoxelAcc& a = bins.sums[v];
        if (what == "intensity") {
          g.fvalues[at] = float(double(a.intensity) / double(a.count));
        } else if (what == "color") {
          for (int c = 0; c < 3; ++c) g.fvalues[3 * at + c] = float(double(a.rgb[c]) / (255.0 * double(a.count)));
        } else if (what == "normal") {
          double n[3];
          for (int c = 0; c < 3; ++c) n[c] = double(a.normal[c]) / double(kNormalFixedScale);
          const double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
          for (int c = 0; c < 3; ++c) g.fvalues[3 * at + c] = len > 0 ? float(n[c] / len) : 0.f;
        }
      }
    });
    grids.push_back(std::move(g));
  }
  return grids;
}

}  // namespace voxtile
