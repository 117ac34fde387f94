// CPU reference of the CSG point pipeline and of the CSG solid: each sample's fate decided
// directly by the rules in core/csg.h (no batches), so it is an independent oracle for the GPU's
// batched keep-flag / scan / compact steps.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/points.h"
#include "core/progress.h"

namespace voxtile {

CsgSamples csg_keep_cpu(const CsgScript& script, const CsgSamples& samples, CsgStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint32_t n_prims = uint32_t(script.prims.size());
  const uint64_t n = samples.positions.size();
  std::vector<uint8_t> keep(n);
  progress_total(n);
  for (uint32_t k = 0; k < n_prims; ++k) {
    tbb::parallel_for(tbb::blocked_range<uint64_t>(samples.begin[k], samples.begin[k + 1], 4096),
                      [&](const tbb::blocked_range<uint64_t>& r) {
                        for (uint64_t i = r.begin(); i < r.end(); ++i)
                          keep[i] = csg_keep_new(script.prims.data(), k, n_prims, samples.positions[i]);
                        progress_advance(r.size());
                      });
  }
  CsgSamples out;
  out.begin.assign(n_prims + 1, 0);
  uint64_t kept = 0;
  for (uint32_t k = 0; k < n_prims; ++k) {
    for (uint64_t i = samples.begin[k]; i < samples.begin[k + 1]; ++i) kept += keep[i];
    out.begin[k + 1] = kept;
  }
  out.positions.resize(kept);
  out.params.resize(kept);
  uint64_t o = 0;
  for (uint64_t i = 0; i < n; ++i)
    if (keep[i]) {
      out.positions[o] = samples.positions[i];
      out.params[o] = samples.params[i];
      ++o;
    }
  if (stats) {
    stats->samples = n;
    stats->kept = kept;
    stats->steps = 1;
    stats->device = "cpu";
    stats->stage_ms.emplace_back(
        "csg", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return out;
}

PointCloud csg_point_cloud(const CsgScript& script, const CsgSamples& kept) {
  PointCloud pc;
  const size_t n = kept.positions.size();
  pc.positions = kept.positions;
  pc.normals.resize(n);
  pc.colors.resize(n);
  pc.ids.resize(n);
  pc.materials.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const SampleParams& s = kept.params[i];
    const CsgPrimitive& p = script.prims[s.prim];
    pc.normals[i] = s.normal;
    pc.colors[i] = {uint8_t(p.rgb >> 16), uint8_t(p.rgb >> 8), uint8_t(p.rgb)};
    pc.ids[i] = s.prim;
    pc.materials[i] = p.material;
  }
  return pc;
}

SparseGrid csg_solid_cpu(const CsgScript& script, const GridSpec& spec) {
  SparseGrid grid;
  grid.spec = spec;
  grid.name = "solid";
  const GridView view = GridView::make(spec);
  const int64_t* nb = view.bricks;
  const uint32_t n_prims = uint32_t(script.prims.size());
  // One x-slab of bricks at a time, in parallel over its (by, bz) bricks.
  for (int64_t bx = 0; bx < nb[0]; ++bx) {
    std::vector<BrickMask> masks(size_t(nb[1] * nb[2]));
    tbb::parallel_for(int64_t(0), nb[1] * nb[2], [&](int64_t b) {
      const int32_t by = int32_t(b / nb[2]), bz = int32_t(b % nb[2]);
      BrickMask m{};
      for (int x = 0; x < 8; ++x)
        for (int y = 0; y < 8; ++y)
          for (int z = 0; z < 8; ++z) {
            const int32_t i = int32_t(bx) * 8 + x, j = by * 8 + y, k = bz * 8 + z;
            if (i >= spec.dims.x || j >= spec.dims.y || k >= spec.dims.z) continue;
            if (csg_solid_inside(script.prims.data(), n_prims, view.center(i, j, k)))
              m.set(brick_offset(x, y, z));
          }
      masks[size_t(b)] = m;
    });
    const size_t first = grid.keys.size();
    for (int64_t b = 0; b < nb[1] * nb[2]; ++b)
      if (masks[size_t(b)].any()) {
        grid.keys.push_back(brick_key(int32_t(bx), int32_t(b / nb[2]), int32_t(b % nb[2])));
        grid.masks.push_back(masks[size_t(b)]);
      }
    grid.make_runs_from(first);  // the interior as runs, as mesh solids hold it
  }
  return grid;
}

}  // namespace voxtile
