// The GPU voxelization pipeline stage by stage against the CPU reference: the coarse raster's sorted
// (tile, triangle) pairs equal the CPU's binning (bin_triangles) with the dominant axis in each key,
// the tile stage's ranges and virtual tiles partition exactly the CPU's tiles, the fine raster's
// unmerged bricks blend and decode (host-side, with core/targets.h) into the CPU's grid, and the
// merge gives it bit for bit. Skips when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "core/voxelizer.h"
#include "io/mesh_reader.h"
#include "kernels/api.h"
#include "kernels/testing.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

class GpuStages : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuInfo info = query_gpu();
    if (!info.available) GTEST_SKIP() << "no GPU: " << info.reason;
  }
};

// Host-side blend and decode of unmerged bricks, one output brick per key (the merge's job, done
// independently of its kernel).
template <Target T, Blend B>
SparseGrid merge_on_host(const GpuStageProbe& p, const GridSpec& spec) {
  constexpr Word kWord = word_kind(T, B);
  constexpr int kAcc = acc_channels(T, B), kOut = out_channels(T);
  constexpr int kIn = brick_value_words(kWord, kAcc);
  const ShadeConsts consts = make_shade_consts(spec.voxel_size);
  std::map<uint64_t, std::vector<size_t>> runs;
  for (size_t i = 0; i < p.brick_keys.size(); ++i) runs[p.brick_keys[i]].push_back(i);
  SparseGrid g;
  g.spec = spec;
  g.value_type = target_value_type(T);
  for (const auto& [key, idx] : runs) {
    BrickMask m{};
    for (size_t i : idx)
      for (int w = 0; w < 8; ++w) m.w[w] |= p.brick_masks[i].w[w];
    g.keys.push_back(key);
    g.masks.push_back(m);
    if (T == Target::kBinary) continue;
    for (int v = 0; v < kBrickVoxels; ++v) {
      if (!m.test(v)) continue;  // (a grid holds the active voxels' values)
      uint32_t out[3] = {0, 0, 0};
      if constexpr (kWord == Word::kAdd64) {
        uint64_t acc[3] = {0, 0, 0};
        for (size_t i : idx) {
          const uint32_t* in = p.brick_values.data() + i * kIn;
          for (int c = 0; c < kAcc; ++c) {
            uint64_t x;
            std::memcpy(&x, in + 2 * (c * kBrickVoxels + v), sizeof(x));
            acc[c] += x;
          }
        }
        decode64<T, B>(acc, consts, out);
      } else if constexpr (kWord != Word::kBit) {
        uint32_t acc = 0;
        for (size_t i : idx) acc = blend32<kWord>(acc, p.brick_values[i * kIn + v]);
        decode32<T, B>(acc, out);
      }
      for (int c = 0; c < kOut; ++c) {
        if (g.value_type == ValueType::kInt32) g.ivalues.push_back(int32_t(out[c]));
        else g.fvalues.push_back(bits_float(out[c]));
      }
    }
  }
  if (T != Target::kBinary) g.index_values(false);
  return g;
}

void expect_equal_grids(const SparseGrid& a, const SparseGrid& b, const std::string& what) {
  ASSERT_EQ(a.keys, b.keys) << what;
  ASSERT_EQ(a.masks.size(), b.masks.size()) << what;
  for (size_t i = 0; i < a.masks.size(); ++i)
    for (int w = 0; w < 8; ++w) ASSERT_EQ(a.masks[i].w[w], b.masks[i].w[w]) << what << " brick " << i;
  ASSERT_EQ(a.value_begin, b.value_begin) << what;
  ASSERT_EQ(a.ivalues, b.ivalues) << what;
  ASSERT_EQ(a.fvalues.size(), b.fvalues.size()) << what;
  ASSERT_EQ(std::memcmp(a.fvalues.data(), b.fvalues.data(), a.fvalues.size() * sizeof(float)), 0) << what;
}

void check_stages(const Mesh& mesh, const GridSpec& spec, VoxelMode mode, const TargetSpec& target,
                  const GpuOptions& gopt, bool one_batch, const std::string& what) {
  VoxelizeOptions o;
  o.mode = mode;
  o.target = target.target;
  o.blend = target.blend;
  GpuStageProbe probe;
  const SparseGrid merged = gpu_voxelize_probed(mesh, spec, o, gopt, &probe);
  const TileBinning cpu = bin_triangles(mesh, spec, mode);

  // Coarse raster + sort: the same pairs as the CPU's binning, each key with its triangle's axis.
  std::vector<TileBinning::Pair> pairs = probe.pairs;
  std::sort(pairs.begin(), pairs.end());
  ASSERT_EQ(pairs, cpu.pairs) << what << ": coarse";
  for (size_t i = 0; i < probe.pairs.size(); ++i) {
    const uint32_t t = probe.pairs[i].tri;
    const TriSetup ts = setup_triangle(cpu.grid_vertices[mesh.indices[3 * t]], cpu.grid_vertices[mesh.indices[3 * t + 1]],
                                       cpu.grid_vertices[mesh.indices[3 * t + 2]]);
    ASSERT_EQ(int(probe.axes[i]), ts.dom) << what << ": axis of pair " << i;
  }

  // Tiles: run starts where the tile changes; virtual tiles partition each tile's pairs in order.
  if (one_batch) {
    std::vector<uint32_t> starts;
    for (size_t i = 0; i < probe.pairs.size(); ++i)
      if (i == 0 || probe.pairs[i].tile != probe.pairs[i - 1].tile) starts.push_back(uint32_t(i));
    ASSERT_EQ(probe.tile_begins, starts) << what << ": tile ranges";
    ASSERT_EQ(starts.size(), cpu.num_tiles) << what << ": tiles";
  }
  uint32_t next = 0;
  for (const GpuStageProbe::Range& v : probe.vtiles) {
    ASSERT_EQ(v.begin, next) << what << ": virtual tiles in order";
    ASSERT_GT(v.end, v.begin) << what;
    ASSERT_LE(v.end - v.begin, probe.max_per_tile) << what;
    for (uint32_t i = v.begin; i < v.end; ++i) ASSERT_EQ(probe.pairs[i].tile, v.tile) << what << ": one tile per range";
    next = v.end;
  }
  ASSERT_EQ(next, probe.pairs.size()) << what << ": virtual tiles cover every pair";

  // Fine raster: the unmerged bricks blend into the CPU's grid; merge: the same grid bit for bit.
  const SparseGrid reference = voxelize_cpu(mesh, spec, o);
  const SparseGrid fine = with_target(target, [&](auto t, auto b) {
    return merge_on_host<decltype(t)::value, decltype(b)::value>(probe, spec);
  });
  expect_equal_grids(fine, reference, what + ": fine");
  expect_equal_grids(merged, reference, what + ": merge");
}

TEST_F(GpuStages, EveryStageMatchesTheCpu) {
  const Mesh bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  const std::vector<TargetSpec> targets = {make_target_spec(Target::kBinary), make_target_spec(Target::kCount),
                                           make_target_spec(Target::kId, Blend::kMax),
                                           make_target_spec(Target::kDistance, Blend::kAdd),
                                           make_target_spec(Target::kNormal), make_target_spec(Target::kNormal, Blend::kAdd)};
  for (int res : {48, 160}) {
    GridOptions go;
    go.resolution = res;
    go.pad = 1;
    const GridSpec spec = make_grid_spec(bunny.bounds(), go);
    for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative})
      for (const TargetSpec& t : targets)
        check_stages(bunny, spec, mode, t, GpuOptions{}, true,
                     std::string(mode_name(mode)) + " " + target_spec_name(t) + " r" + std::to_string(res));
  }
}

TEST_F(GpuStages, BatchesAndSplitTilesMatchTheCpu) {
  const Mesh bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  GridOptions go;
  go.resolution = 96;
  const GridSpec spec = make_grid_spec(bunny.bounds(), go);
  GpuOptions gopt;
  gopt.max_batch_pairs = 4096;  // many triangle batches
  gopt.max_tile_triangles = 32;  // crowded tiles split into many virtual tiles
  gopt.initial_bricks = 16;      // brick buffers grow and retry
  for (const TargetSpec& t : {make_target_spec(Target::kBinary), make_target_spec(Target::kDistance)})
    check_stages(bunny, spec, VoxelMode::kConservative, t, gopt, false, "batched " + target_spec_name(t));
}

// The job's counters are cleared with one call (zero_ranges): eleven ranges (more than one launch
// holds), one empty, one of a single word, neighbours, and one longer than the launch's threads
// (a grid-stride loop): exactly their words become zero, every other word keeps its bits.
TEST_F(GpuStages, ZeroRangesClearExactlyTheirWords) {
  const uint64_t words = 3000000;
  const std::vector<std::pair<uint64_t, uint64_t>> ranges = {{0, 1},      {5, 0},       {7, 3},           {10, 2},
                                                             {100, 1000}, {4096, 4096}, {9000, 1},        {9002, 7},
                                                             {20000, 5},  {30001, 2},   {400000, 2500000}};
  const std::vector<uint32_t> got = gpu_zero_ranges(words, ranges);
  ASSERT_EQ(got.size(), words);
  std::vector<bool> zero(words, false);
  for (const auto& [first, n] : ranges)
    for (uint64_t i = first; i < first + n; ++i) zero[i] = true;
  uint64_t zeros = 0;
  for (uint64_t i = 0; i < words; ++i) {
    ASSERT_EQ(got[i], zero[i] ? 0u : 0xffffffffu) << "word " << i;
    zeros += zero[i];
  }
  EXPECT_EQ(zeros, 1u + 3 + 2 + 1000 + 4096 + 1 + 7 + 5 + 2 + 2500000);
}

// The one-block scan (kernels/compact.cuh launch_block_scan) of 32- and 64-bit counts: empty, one
// item, rounds cut anywhere (8192 32-bit or 4096 64-bit items a round), large counts (a 64-bit
// total), into outputs at any offset from their allocation's start.
TEST_F(GpuStages, BlockScanOfEverySizeAndAlignment) {
  std::mt19937 rng(5);
  for (uint64_t n : {0ull, 1ull, 15ull, 16ull, 33ull, 1025ull, 4095ull, 4096ull, 4097ull, 8191ull, 8192ull, 8193ull,
                     32769ull, 100003ull, 131072ull}) {
    std::vector<uint32_t> counts(n);
    for (uint32_t& c : counts) c = rng() % 4 == 0 ? rng() % 70000 : rng() % 3;
    std::vector<uint64_t> expect(n + 1, 0);
    for (uint64_t i = 0; i < n; ++i) expect[i + 1] = expect[i] + counts[i];
    for (bool wide : {false, true})
      for (uint64_t offset : {0ull, 1ull, 3ull}) {
        std::vector<uint64_t> want = expect;
        if (!wide)
          for (uint64_t& w : want) w = uint32_t(w);  // (32-bit sums wrap)
        ASSERT_EQ(gpu_block_scan(counts, wide, offset), want) << "n " << n << " wide " << wide << " offset " << offset;
      }
  }
}

// Copies go without staging until their bytes reach ten times what the staging buffers would pin
// (2 x min(size, 16 MB)), then through them; the bytes come back unchanged either way, at sizes
// below, at and across the 16 MB chunks, staged and not.
TEST_F(GpuStages, StagedCopiesPinOnlyAfterEnoughTraffic) {
  const size_t mb = size_t(1) << 20;
  std::vector<size_t> sizes(12, mb);
  for (size_t n : {16 * mb - 1, 16 * mb, 16 * mb + 1, 33 * mb + 12345}) sizes.push_back(n);
  for (int i = 0; i < 5; ++i) sizes.push_back(20 * mb + 4099);
  for (size_t n : {16 * mb - 1, 16 * mb, 16 * mb + 1, 33 * mb + 12345, size_t(7)}) sizes.push_back(n);  // staged
  // The rule, copy by copy (a trip is an upload and a download of the same size).
  std::vector<size_t> want_pinned;
  size_t pinned = 0, unstaged = 0;
  for (size_t n : sizes) {
    for (int copy = 0; copy < 2; ++copy) {
      const size_t want = 2 * std::min(n, 16 * mb);
      if (pinned >= want) continue;
      if (unstaged + n < 10 * want) {
        unstaged += n;
      } else {
        unstaged = 0;
        pinned = want;
      }
    }
    want_pinned.push_back(pinned);
  }
  // The 1 MB trips pin 2 MB at the tenth trip's download (20 MB of copies); the larger ones find
  // that too small and grow it to 32 MB only after 320 MB more.
  ASSERT_EQ(want_pinned[8], 0u);
  ASSERT_EQ(want_pinned[9], 2 * mb);
  ASSERT_EQ(want_pinned[15], 2 * mb);
  ASSERT_EQ(want_pinned[sizes.size() - 6], 32 * mb);
  const auto trips = gpu_staged_round_trips(sizes);
  ASSERT_EQ(trips.size(), sizes.size());
  for (size_t i = 0; i < trips.size(); ++i) {
    EXPECT_EQ(trips[i].first, 0u) << "trip " << i << ", " << sizes[i] << " bytes";
    EXPECT_EQ(trips[i].second, want_pinned[i]) << "trip " << i << ", " << sizes[i] << " bytes";
  }
}

}  // namespace
}  // namespace voxtile
