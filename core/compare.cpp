// Grid and bucket comparison.
#include "core/compare.h"

#include <algorithm>
#include <cmath>

namespace voxtile {
namespace {

double value_diff(double x, double y) {
  if (std::isnan(x) && std::isnan(y)) return 0.0;
  if (std::isnan(x) || std::isnan(y)) return INFINITY;
  return std::fabs(x - y);
}

// Value word i of a grid's values (SparseGrid layout: the active voxels', channels interleaved).
double value_at(const SparseGrid& g, uint64_t i) {
  return g.value_type == ValueType::kInt32 ? double(g.ivalues[i]) : double(g.fvalues[i]);
}

}  // namespace

bool same_transform(const GridSpec& a, const GridSpec& b) {
  for (int c = 0; c < 3; ++c) {
    const double va = c == 0 ? a.voxel_size.x : (c == 1 ? a.voxel_size.y : a.voxel_size.z);
    const double vb = c == 0 ? b.voxel_size.x : (c == 1 ? b.voxel_size.y : b.voxel_size.z);
    const double oa = c == 0 ? a.origin.x : (c == 1 ? a.origin.y : a.origin.z);
    const double ob = c == 0 ? b.origin.x : (c == 1 ? b.origin.y : b.origin.z);
    const double tol = 1e-9 * std::max(std::fabs(va), std::fabs(vb));
    if (std::fabs(va - vb) > tol || std::fabs(oa - ob) > tol) return false;
  }
  return true;
}

GridDiff compare_grids(const SparseGrid& grid_a, bool a_transform, const SparseGrid& grid_b, bool b_transform,
                       double tolerance, bool a_cube, bool b_cube) {
  SparseGrid storage_a, storage_b;  // a solid's interior runs written out as bricks
  const SparseGrid& a = expanded_runs(grid_a, storage_a);
  const SparseGrid& b = expanded_runs(grid_b, storage_b);
  GridDiff d;
  d.name_a = a.name;
  d.name_b = b.name;
  // (a cube that is dims padded to their largest: a .binvox of the same grid)
  auto cube_of = [](const Int3& cube, const Int3& dims) {
    return cube.x == cube.y && cube.y == cube.z && cube.x == std::max({dims.x, dims.y, dims.z});
  };
  d.dims_equal = (a.spec.dims.x == b.spec.dims.x && a.spec.dims.y == b.spec.dims.y && a.spec.dims.z == b.spec.dims.z) ||
                 (a_cube && cube_of(a.spec.dims, b.spec.dims)) || (b_cube && cube_of(b.spec.dims, a.spec.dims));
  d.transform_equal = !(a_transform && b_transform) || same_transform(a.spec, b.spec);
  d.types_equal = a.value_type == b.value_type;
  const int ch = value_channels(a.value_type) == value_channels(b.value_type) ? value_channels(a.value_type) : 0;
  size_t i = 0, j = 0;
  while (i < a.num_bricks() || j < b.num_bricks()) {
    const bool take_a = j >= b.num_bricks() || (i < a.num_bricks() && a.keys[i] <= b.keys[j]);
    const bool take_b = i >= a.num_bricks() || (j < b.num_bricks() && b.keys[j] <= a.keys[i]);
    const BrickMask none{};
    const BrickMask& ma = take_a ? a.masks[i] : none;
    const BrickMask& mb = take_b ? b.masks[j] : none;
    // (the values' indices: each brick's first, then the active voxels below, word by word)
    uint64_t va = ch && take_a ? a.value_begin[i] : 0, vb = ch && take_b ? b.value_begin[j] : 0;
    for (int w = 0; w < 8; ++w) {
      const uint64_t both = ma.w[w] & mb.w[w];
      d.active_a += uint64_t(popcount64(ma.w[w]));
      d.active_b += uint64_t(popcount64(mb.w[w]));
      d.both += uint64_t(popcount64(both));
      if (!ch) continue;
      const uint64_t wa = va, wb = vb;  // (active voxels before this word)
      va += uint64_t(popcount64(ma.w[w]));
      vb += uint64_t(popcount64(mb.w[w]));
      for (uint64_t bits = both; bits;) {
        const int off = w * 64 + __builtin_ctzll(bits);
        bits &= bits - 1;
        const uint64_t below = (uint64_t(1) << (off & 63)) - 1;
        const uint64_t ia = (wa + uint64_t(popcount64(ma.w[w] & below))) * uint64_t(ch);
        const uint64_t ib = (wb + uint64_t(popcount64(mb.w[w] & below))) * uint64_t(ch);
        double worst = 0;
        for (int c = 0; c < ch; ++c)
          worst = std::max(worst, value_diff(value_at(a, ia + uint64_t(c)), value_at(b, ib + uint64_t(c))));
        d.max_abs_diff = std::max(d.max_abs_diff, worst);
        if (worst > tolerance) ++d.values_differing;
      }
    }
    if (take_a) ++i;
    if (take_b) ++j;
  }
  d.only_a = d.active_a - d.both;
  d.only_b = d.active_b - d.both;
  const uint64_t uni = d.active_a + d.active_b - d.both;
  d.iou = uni ? double(d.both) / double(uni) : 1.0;
  d.equal = d.dims_equal && d.transform_equal && d.types_equal && d.only_a == 0 && d.only_b == 0 &&
            d.values_differing == 0;
  return d;
}

BucketDiff compare_buckets(const Buckets& a, const Buckets& b, double tolerance) {
  BucketDiff d;
  d.voxels_a = a.num_voxels();
  d.voxels_b = b.num_voxels();
  d.fragments_a = a.num_fragments();
  d.fragments_b = b.num_fragments();
  d.grid_equal = a.spec.dims.x == b.spec.dims.x && a.spec.dims.y == b.spec.dims.y && a.spec.dims.z == b.spec.dims.z &&
                 same_transform(a.spec, b.spec);
  d.attrs_equal = a.attrs == b.attrs;
  auto lin = [](const Buckets& x, size_t v) { return voxel_linear_index(x.ijk[3 * v], x.ijk[3 * v + 1], x.ijk[3 * v + 2], x.spec.dims); };
  auto attr_diff = [&](const ValueArray<float>& x, const ValueArray<float>& y, int n, int64_t fa, int64_t fb, int64_t len) {
    if (x.empty() || y.empty()) return;
    for (int64_t f = 0; f < len * n; ++f)
      d.max_abs_diff = std::max(d.max_abs_diff, value_diff(x[size_t(fa * n + f)], y[size_t(fb * n + f)]));
  };
  size_t i = 0, j = 0;
  while (i < a.num_voxels() && j < b.num_voxels()) {
    const uint64_t ka = lin(a, i), kb = lin(b, j);
    if (ka < kb) {
      ++i;
      continue;
    }
    if (kb < ka) {
      ++j;
      continue;
    }
    ++d.both;
    const int64_t fa = a.offsets[i], la = a.offsets[i + 1] - fa, fb = b.offsets[j], lb = b.offsets[j + 1] - fb;
    const bool same = la == lb && std::equal(a.triangle.begin() + fa, a.triangle.begin() + fa + la, b.triangle.begin() + fb);
    if (!same) {
      ++d.lists_differing;
    } else {
      attr_diff(a.bary, b.bary, 3, fa, fb, la);
      attr_diff(a.normal, b.normal, 3, fa, fb, la);
      attr_diff(a.uv, b.uv, 2, fa, fb, la);
      if (!a.material.empty() && !b.material.empty())
        for (int64_t f = 0; f < la; ++f)
          d.max_abs_diff = std::max(d.max_abs_diff, std::fabs(double(a.material[size_t(fa + f)]) - b.material[size_t(fb + f)]));
    }
    ++i;
    ++j;
  }
  d.only_a = d.voxels_a - d.both;
  d.only_b = d.voxels_b - d.both;
  d.equal = d.grid_equal && d.attrs_equal && d.only_a == 0 && d.only_b == 0 && d.lists_differing == 0 &&
            d.max_abs_diff <= tolerance;
  return d;
}

}  // namespace voxtile
