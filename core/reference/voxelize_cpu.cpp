// CPU reference voxelizer: the same sort-middle design as the GPU pipeline, on TBB threads.
//
// 1. transform vertices to grid space; 2. bin triangles into 32^3 tiles (the tile footprint of
// core/tile_footprint.h, as on the GPU); 3. sort the (tile, triangle) pairs; 4. raster
// each tile into a private dense 32^3 buffer with the shared overlap code; 5. emit its non-empty
// 8^3 bricks; 6. order the bricks by key. Counts are sums, so the result does not depend on the
// number of threads or on scheduling.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>

#include "core/error.h"
#include "core/tile_footprint.h"
#include "core/voxelize.h"

namespace voxtile {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr int kTile = kTileDim;
constexpr int kTileVoxels = kTile * kTile * kTile;
constexpr int kBricksPerTileAxis = kTile / kBrickDim;

struct Pair {
  uint64_t tile;
  uint32_t tri;
  bool operator<(const Pair& o) const { return tile != o.tile ? tile < o.tile : tri < o.tri; }
};

bool num_tris_exceeds_int32(size_t n) { return n >= size_t(0x7fffffff); }

struct TileBricks {
  std::vector<uint64_t> keys;
  std::vector<BrickMask> masks;
  std::vector<int32_t> values;  // 512 per brick (count target)
};

}  // namespace

SparseGrid voxelize_cpu(const Mesh& mesh, const GridSpec& spec, const VoxelizeOptions& options, VoxelizeStats* stats) {
  std::unique_ptr<tbb::global_control> limit;
  if (options.threads > 0)
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, options.threads);
  if (spec.dims.x < 1 || spec.dims.y < 1 || spec.dims.z < 1 || spec.dims.x > kMaxGridDim ||
      spec.dims.y > kMaxGridDim || spec.dims.z > kMaxGridDim)
    fail(ErrorKind::kUsage, "grid dimensions out of range");

  const VoxelMode mode = options.mode;
  const bool counting = has_values(options.target);
  const bool ids = options.target == Target::kId;
  const bool distances = options.target == Target::kDistance;
  const Vec3f vs{float(spec.voxel_size.x), float(spec.voxel_size.y), float(spec.voxel_size.z)};
  if (ids && num_tris_exceeds_int32(mesh.num_triangles()))
    fail(ErrorKind::kUsage, "--target id needs fewer than 2^31 triangles");
  const size_t num_tris = mesh.num_triangles();
  const Int3 tiles{(spec.dims.x + kTile - 1) / kTile, (spec.dims.y + kTile - 1) / kTile,
                   (spec.dims.z + kTile - 1) / kTile};

  auto t0 = Clock::now();
  const std::vector<Vec3f> g = to_grid_space(mesh, spec);
  auto setup = [&](size_t tri) {
    return setup_triangle(g[mesh.indices[3 * tri]], g[mesh.indices[3 * tri + 1]], g[mesh.indices[3 * tri + 2]]);
  };
  const double ms_transform = ms_since(t0);

  // Binning: count, scan, emit, so the pair buffer is sized exactly.
  t0 = Clock::now();
  std::vector<uint64_t> offsets(num_tris + 1, 0);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, num_tris, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) {
      uint64_t n = 0;
      for_each_tile(setup(i), mode, spec.dims, tiles, [&](uint64_t) { ++n; });
      offsets[i + 1] = n;
    }
  });
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<Pair> pairs(offsets[num_tris]);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, num_tris, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) {
      uint64_t o = offsets[i];
      for_each_tile(setup(i), mode, spec.dims, tiles, [&](uint64_t key) { pairs[o++] = {key, uint32_t(i)}; });
    }
  });
  tbb::parallel_sort(pairs.begin(), pairs.end());
  std::vector<size_t> tile_begin;
  for (size_t p = 0; p < pairs.size(); ++p)
    if (p == 0 || pairs[p].tile != pairs[p - 1].tile) tile_begin.push_back(p);
  const size_t num_tiles = tile_begin.size();
  tile_begin.push_back(pairs.size());
  const double ms_bin = ms_since(t0);

  // Fine raster per tile.
  t0 = Clock::now();
  std::vector<TileBricks> out(num_tiles);
  tbb::enumerable_thread_specific<std::vector<uint32_t>> scratch([] { return std::vector<uint32_t>(kTileVoxels, 0); });
  tbb::parallel_for(tbb::blocked_range<size_t>(0, num_tiles, 1), [&](const tbb::blocked_range<size_t>& r) {
    std::vector<uint32_t>& buf = scratch.local();
    for (size_t ti = r.begin(); ti < r.end(); ++ti) {
      const uint64_t key = pairs[tile_begin[ti]].tile;
      const int32_t tz = int32_t(key % uint64_t(tiles.z)), ty = int32_t((key / uint64_t(tiles.z)) % uint64_t(tiles.y));
      const int32_t tx = int32_t(key / (uint64_t(tiles.z) * uint64_t(tiles.y)));
      const int32_t base[3] = {tx * kTile, ty * kTile, tz * kTile};
      VoxelBox clip;
      for (int a = 0; a < 3; ++a) {
        clip.lo[a] = base[a];
        clip.hi[a] = std::min(base[a] + kTile, component(spec.dims, a)) - 1;
      }
      uint64_t touched = 0;  // one bit per brick of the tile
      uint32_t id_value = 0;
      Vec3f tri_grid[3];
      auto emit = [&](int32_t i, int32_t j, int32_t k) {
        const int x = i - base[0], y = j - base[1], z = k - base[2];
        uint32_t& cell = buf[(x * kTile + y) * kTile + z];
        if (ids) cell = std::max(cell, id_value);
        else if (distances) cell = std::max(cell, encode_distance(voxel_distance(tri_grid, i, j, k, vs)));
        else ++cell;
        touched |= uint64_t(1) << (((x >> 3) * kBricksPerTileAxis + (y >> 3)) * kBricksPerTileAxis + (z >> 3));
      };
      for (size_t p = tile_begin[ti]; p < tile_begin[ti + 1]; ++p) {
        const TriSetup t = setup(pairs[p].tri);
        id_value = encode_id(pairs[p].tri);
        tri_grid[0] = t.v[0];
        tri_grid[1] = t.v[1];
        tri_grid[2] = t.v[2];
        if (mode == VoxelMode::kConservative) {
          for_each_conservative_voxel(setup_conservative(t), clip, emit);
        } else {
          const int c = t.dom;
          for_each_thin_voxel(t, setup_diamond_edges(t, c), clip, component(spec.dims, c), emit);
        }
      }
      TileBricks& tb = out[ti];
      while (touched) {
        const int bi = __builtin_ctzll(touched);
        touched &= touched - 1;
        const int bx = bi / (kBricksPerTileAxis * kBricksPerTileAxis), by = (bi / kBricksPerTileAxis) % kBricksPerTileAxis,
                  bz = bi % kBricksPerTileAxis;
        BrickMask m{};
        std::array<int32_t, kBrickVoxels> vals{};  // float bits for the distance target
        for (int x = 0; x < 8; ++x)
          for (int y = 0; y < 8; ++y)
            for (int z = 0; z < 8; ++z) {
              uint32_t& cell = buf[((bx * 8 + x) * kTile + (by * 8 + y)) * kTile + (bz * 8 + z)];
              if (cell) {
                const int off = brick_offset(x, y, z);
                m.set(off);
                if (distances) {
                  const float d = decode_distance(cell);
                  std::memcpy(&vals[off], &d, sizeof(d));
                } else {
                  vals[off] = ids ? decode_id(cell) : int32_t(std::min<uint32_t>(cell, 0x7fffffffu));
                }
                cell = 0;
              }
            }
        if (!m.any()) continue;
        tb.keys.push_back(brick_key(base[0] / 8 + bx, base[1] / 8 + by, base[2] / 8 + bz));
        tb.masks.push_back(m);
        if (counting) tb.values.insert(tb.values.end(), vals.begin(), vals.end());
      }
    }
  });
  const double ms_raster = ms_since(t0);

  // Assemble the bricks in key order.
  t0 = Clock::now();
  struct Ref {
    uint64_t key;
    uint32_t tile, index;
  };
  std::vector<Ref> refs;
  for (size_t ti = 0; ti < num_tiles; ++ti)
    for (size_t b = 0; b < out[ti].keys.size(); ++b) refs.push_back({out[ti].keys[b], uint32_t(ti), uint32_t(b)});
  tbb::parallel_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.key < b.key; });
  SparseGrid grid;
  grid.spec = spec;
  grid.value_type = distances ? ValueType::kFloat32 : (counting ? ValueType::kInt32 : ValueType::kNone);
  grid.keys.resize(refs.size());
  grid.masks.resize(refs.size());
  if (counting && !distances) grid.ivalues.resize(refs.size() * kBrickVoxels);
  if (distances) grid.fvalues.resize(refs.size() * kBrickVoxels);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, refs.size(), 1024), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b) {
      const Ref& ref = refs[b];
      grid.keys[b] = ref.key;
      grid.masks[b] = out[ref.tile].masks[ref.index];
      const int32_t* src = out[ref.tile].values.data() + size_t(ref.index) * kBrickVoxels;
      if (distances) std::memcpy(grid.fvalues.data() + b * kBrickVoxels, src, kBrickVoxels * sizeof(float));
      else if (counting) std::copy_n(src, kBrickVoxels, grid.ivalues.begin() + b * kBrickVoxels);
    }
  });
  const double ms_assemble = ms_since(t0);

  if (stats) {
    stats->device = "cpu";
    stats->triangles = num_tris;
    stats->tile_pairs = pairs.size();
    stats->tiles = num_tiles;
    stats->bricks = grid.num_bricks();
    stats->active_voxels = grid.active_voxels();
    stats->add_stage("transform", ms_transform);
    stats->add_stage("bin", ms_bin);
    stats->add_stage("raster", ms_raster);
    stats->add_stage("assemble", ms_assemble);
  }
  return grid;
}

}  // namespace voxtile
