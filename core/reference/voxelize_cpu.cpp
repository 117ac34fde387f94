// CPU reference voxelizer: the same sort-middle design as the GPU pipeline, on TBB threads.
//
// 1. transform vertices to grid space; 2. bin triangles into 32^3 tiles (the tile footprint of
// core/tile_footprint.h, as on the GPU); 3. sort the (tile, triangle) pairs; 4. raster
// each tile into a private dense 32^3 buffer with the shared overlap code; 5. emit its non-empty
// 8^3 bricks; 6. order the bricks by key. Every blend is order-independent (core/targets.h), so
// the result does not depend on the number of threads or on scheduling. Several targets share
// steps 1-3.
#include <tbb/enumerable_thread_specific.h>
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
#include "core/progress.h"
#include "core/inside_grid.h"
#include "core/tile_footprint.h"
#include "core/timer.h"
#include "core/voxelizer.h"

namespace voxtile {
namespace {

constexpr int kTile = kTileDim;
constexpr int kTileVoxels = kTile * kTile * kTile;
constexpr int kBricksPerTileAxis = kTile / kBrickDim;

struct TileBricks {
  std::vector<uint64_t> keys;
  std::vector<BrickMask> masks;
  // The active voxels' values only, brick by brick in ascending offset (out_channels words each:
  // int32 or float bits), brick b's from value_begin[b]; copied to the grid's values when the bricks
  // are assembled.
  std::vector<uint32_t> values;
  std::vector<uint32_t> value_begin;
};

// Tile scratch of one thread: 32-bit words, or 64-bit channels plus an occupancy byte per voxel.
struct Scratch {
  std::vector<uint32_t> w32;
  std::vector<uint64_t> w64;
  std::vector<uint8_t> occ;
};

// Steps 4-6 for one target.
template <Target T, Blend B>
SparseGrid raster_target(const Mesh& mesh, const GridSpec& spec, VoxelMode mode, const TileBinning& bn, double* ms_raster,
                  double* ms_assemble) {
  constexpr Word kWord = word_kind(T, B);
  constexpr int kAcc = acc_channels(T, B);
  constexpr int kOut = out_channels(T);
  constexpr bool kValues = T != Target::kBinary;
  const ShadeConsts consts = make_shade_consts(spec.voxel_size);
  auto t0 = Clock::now();
  std::vector<TileBricks> out(bn.num_tiles);
  tbb::enumerable_thread_specific<Scratch> scratch([] {
    Scratch s;
    if (kWord == Word::kAdd64) {
      s.w64.assign(size_t(kAcc) * kTileVoxels, 0);
      s.occ.assign(kTileVoxels, 0);
    } else {
      s.w32.assign(kTileVoxels, 0);
    }
    return s;
  });
  progress_total(bn.num_tiles);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, bn.num_tiles, 1), [&](const tbb::blocked_range<size_t>& r) {
    Scratch& sc = scratch.local();
    for (size_t ti = r.begin(); ti < r.end(); ++ti) {
      const uint64_t key = bn.pairs[bn.tile_begin[ti]].tile;
      const Int3& tiles = bn.tiles;
      const Int3 t = tile_coords(tiles, key);
      const int32_t base[3] = {t.x * kTile, t.y * kTile, t.z * kTile};
      VoxelBox clip;
      for (int a = 0; a < 3; ++a) {
        clip.lo[a] = base[a];
        clip.hi[a] = std::min(base[a] + kTile, component(spec.dims, a)) - 1;
      }
      uint64_t touched = 0;  // one bit per brick of the tile
      TriShade shade{};
      auto emit = [&](int32_t i, int32_t j, int32_t k) {
        const int x = i - base[0], y = j - base[1], z = k - base[2];
        const int cell = (x * kTile + y) * kTile + z;
        if constexpr (kWord == Word::kBit) {
          sc.w32[cell] = blend32<kWord>(sc.w32[cell], 1u);
        } else if constexpr (kWord != Word::kAdd64) {
          sc.w32[cell] = blend32<kWord>(sc.w32[cell], shade32<T, B>(shade, i, j, k, consts));
        } else {
          uint64_t v[3];
          shade64<T, B>(shade, i, j, k, consts, v);
          for (int c = 0; c < kAcc; ++c) sc.w64[size_t(c) * kTileVoxels + cell] += v[c];
          sc.occ[cell] = 1;
        }
        touched |= uint64_t(1) << (((x >> 3) * kBricksPerTileAxis + (y >> 3)) * kBricksPerTileAxis + (z >> 3));
      };
      for (size_t p = bn.tile_begin[ti]; p < bn.tile_begin[ti + 1]; ++p) {
        const uint32_t tri = bn.pairs[p].tri;
        const TriSetup t = setup_triangle(bn.grid_vertices[mesh.indices[3 * tri]], bn.grid_vertices[mesh.indices[3 * tri + 1]],
                                          bn.grid_vertices[mesh.indices[3 * tri + 2]]);
        shade = shade_setup<T, B>(tri, t.v, consts);
        for_each_voxel(t, mode, clip, spec.dims, emit);
      }
      TileBricks& tb = out[ti];
      while (touched) {
        const int bi = __builtin_ctzll(touched);
        touched &= touched - 1;
        const int bx = bi / (kBricksPerTileAxis * kBricksPerTileAxis), by = (bi / kBricksPerTileAxis) % kBricksPerTileAxis,
                  bz = bi % kBricksPerTileAxis;
        BrickMask m{};
        const size_t first = tb.values.size();
        for (int x = 0; x < 8; ++x)
          for (int y = 0; y < 8; ++y)
            for (int z = 0; z < 8; ++z) {
              const int cell = ((bx * 8 + x) * kTile + (by * 8 + y)) * kTile + (bz * 8 + z);
              const int off = brick_offset(x, y, z);
              if constexpr (kWord == Word::kAdd64) {
                if (!sc.occ[cell]) continue;
                uint64_t acc[3];
                for (int c = 0; c < kAcc; ++c) {
                  acc[c] = sc.w64[size_t(c) * kTileVoxels + cell];
                  sc.w64[size_t(c) * kTileVoxels + cell] = 0;
                }
                sc.occ[cell] = 0;
                uint32_t v[3];
                decode64<T, B>(acc, consts, v);
                tb.values.insert(tb.values.end(), v, v + kOut);
              } else {
                const uint32_t acc = sc.w32[cell];
                if (!acc) continue;
                sc.w32[cell] = 0;
                if constexpr (kValues) {
                  uint32_t v[3];
                  decode32<T, B>(acc, v);
                  tb.values.insert(tb.values.end(), v, v + kOut);
                }
              }
              m.set(off);  // (offsets ascend: x, then y, then z)
            }
        if (!m.any()) continue;
        tb.keys.push_back(brick_key(base[0] / 8 + bx, base[1] / 8 + by, base[2] / 8 + bz));
        tb.masks.push_back(m);
        if (kValues) tb.value_begin.push_back(uint32_t(first / kOut));
      }
    }
    progress_advance(r.size());
  });
  *ms_raster = ms_since(t0);

  // Assemble the bricks in key order.
  t0 = Clock::now();
  struct Ref {
    uint64_t key;
    uint32_t tile, index;
  };
  std::vector<Ref> refs;
  for (size_t ti = 0; ti < bn.num_tiles; ++ti)
    for (size_t b = 0; b < out[ti].keys.size(); ++b) refs.push_back({out[ti].keys[b], uint32_t(ti), uint32_t(b)});
  tbb::parallel_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.key < b.key; });
  SparseGrid grid;
  grid.spec = spec;
  grid.value_type = target_value_type(T);
  grid.keys.resize(refs.size());
  grid.masks.resize(refs.size());
  tbb::parallel_for(tbb::blocked_range<size_t>(0, refs.size(), 1024), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b) {
      grid.keys[b] = refs[b].key;
      grid.masks[b] = out[refs[b].tile].masks[refs[b].index];
    }
  });
  if (kValues) {
    grid.index_values();
    char* values = grid.value_type == ValueType::kInt32 ? reinterpret_cast<char*>(grid.ivalues.data())
                                                        : reinterpret_cast<char*>(grid.fvalues.data());
    tbb::parallel_for(tbb::blocked_range<size_t>(0, refs.size(), 1024), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t b = r.begin(); b < r.end(); ++b) {
        const TileBricks& tb = out[refs[b].tile];
        const size_t words = size_t(grid.value_begin[b + 1] - grid.value_begin[b]) * kOut;
        std::memcpy(values + grid.value_begin[b] * kOut * 4,
                    tb.values.data() + size_t(tb.value_begin[refs[b].index]) * kOut, words * 4);
      }
    });
  }
  *ms_assemble = ms_since(t0);
  return grid;
}

}  // namespace

TileBinning bin_triangles(const Mesh& mesh, const GridSpec& spec, VoxelMode mode, double* ms_transform,
                          double* ms_bin) {
  TileBinning b;
  const size_t num_tris = mesh.num_triangles();
  b.tiles = grid_tiles(spec.dims);
  auto t0 = Clock::now();
  b.grid_vertices = to_grid_space(mesh, spec);
  auto setup = [&](size_t tri) {
    const std::vector<Vec3f>& g = b.grid_vertices;
    return setup_triangle(g[mesh.indices[3 * tri]], g[mesh.indices[3 * tri + 1]], g[mesh.indices[3 * tri + 2]]);
  };
  if (ms_transform) *ms_transform = ms_since(t0);

  // Count, scan, emit, so the pair buffer is sized exactly.
  t0 = Clock::now();
  std::vector<uint64_t> offsets(num_tris + 1, 0);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, num_tris, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) {
      uint64_t n = 0;
      for_each_tile(setup(i), mode, spec.dims, b.tiles, [&](uint64_t) { ++n; });
      offsets[i + 1] = n;
    }
  });
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  b.pairs.resize(offsets[num_tris]);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, num_tris, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) {
      uint64_t o = offsets[i];
      for_each_tile(setup(i), mode, spec.dims, b.tiles, [&](uint64_t key) { b.pairs[o++] = {key, uint32_t(i)}; });
    }
  });
  tbb::parallel_sort(b.pairs.begin(), b.pairs.end());
  for (size_t p = 0; p < b.pairs.size(); ++p)
    if (p == 0 || b.pairs[p].tile != b.pairs[p - 1].tile) b.tile_begin.push_back(p);
  b.num_tiles = b.tile_begin.size();
  b.tile_begin.push_back(b.pairs.size());
  if (ms_bin) *ms_bin = ms_since(t0);
  return b;
}

SparseGrid CpuVoxelizer::inside_centres(const GridSpec& spec, InsideMethod method, VoxelizeStats& stats,
                                        const SparseGrid* only) {
  const auto t0 = Clock::now();
  SparseGrid g = inside_cpu(mesh(), spec, method, only);
  stats.add_stage("inside", ms_since(t0));
  return g;
}

SparseGrid CpuVoxelizer::band_distance(const GridSpec& spec, int band, VoxelizeStats& stats) {
  const auto t0 = Clock::now();
  SparseGrid g = band_distance_cpu(mesh(), spec, band);
  stats.add_stage("band", ms_since(t0));
  return g;
}

const std::string& CpuVoxelizer::device_name() const {
  static const std::string kName = "cpu";
  return kName;
}

std::vector<SparseGrid> CpuVoxelizer::raster(const GridSpec& spec, const VoxelizeOptions& options,
                                             const std::vector<TargetSpec>& targets, VoxelizeStats& stats) {
  const ThreadLimit limit(options.threads);
  double ms_transform = 0, ms_bin = 0;
  const TileBinning bn = bin_triangles(mesh(), spec, options.mode, &ms_transform, &ms_bin);
  stats.tile_pairs = bn.pairs.size();
  stats.tiles = bn.num_tiles;
  stats.add_stage("transform", ms_transform);
  stats.add_stage("bin", ms_bin);
  std::vector<SparseGrid> grids;
  for (const TargetSpec& target : targets) {
    double ms_raster = 0, ms_assemble = 0;
    grids.push_back(with_target(target, [&](auto t, auto b) {
      return raster_target<decltype(t)::value, decltype(b)::value>(mesh(), spec, options.mode, bn, &ms_raster,
                                                                   &ms_assemble);
    }));
    const std::string suffix = targets.size() > 1 ? ":" + target_spec_name(target) : "";
    stats.add_stage("raster" + suffix, ms_raster);
    stats.add_stage("assemble" + suffix, ms_assemble);
  }
  return grids;
}

std::vector<SparseGrid> voxelize_cpu_targets(const Mesh& mesh, const GridSpec& spec, const VoxelizeOptions& options,
                                             const std::vector<TargetSpec>& targets, VoxelizeStats* stats) {
  CpuVoxelizer cpu;
  cpu.set_mesh(mesh);
  return cpu.voxelize(spec, options, targets, stats);
}

SparseGrid voxelize_cpu(const Mesh& mesh, const GridSpec& spec, const VoxelizeOptions& options, VoxelizeStats* stats) {
  CpuVoxelizer cpu;
  cpu.set_mesh(mesh);
  return cpu.voxelize(spec, options, stats);
}

}  // namespace voxtile
