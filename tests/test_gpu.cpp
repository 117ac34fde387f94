// GPU pipeline against the CPU reference: same voxels, same values, same bytes, in every mode,
// target and grid of the golden matrix, plus the cases that stress batching, tile splitting and
// brick-buffer growth. Skips when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "core/meshgen.h"
#include "core/voxelize.h"
#include "core/voxelizer.h"
#include "io/mesh_reader.h"
#include "kernels/api.h"
#include "tests/golden_cases.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuInfo info = query_gpu();
    if (!info.available) GTEST_SKIP() << "no GPU: " << info.reason;
  }
};

void expect_same(const SparseGrid& cpu, const SparseGrid& gpu, const std::string& what) {
  ASSERT_EQ(gpu.num_bricks(), cpu.num_bricks()) << what;
  ASSERT_EQ(gpu.keys, cpu.keys) << what;
  for (size_t b = 0; b < cpu.num_bricks(); ++b)
    for (int w = 0; w < 8; ++w) ASSERT_EQ(gpu.masks[b].w[w], cpu.masks[b].w[w]) << what << " brick " << b;
  ASSERT_EQ(gpu.ivalues, cpu.ivalues) << what;
  ASSERT_EQ(gpu.fvalues, cpu.fvalues) << what;
  ASSERT_EQ(gpu.checksum(), cpu.checksum()) << what;
  gpu.validate();
}

void compare(const Mesh& mesh, const GridSpec& spec, const std::string& what, const GpuOptions& gopt = {}) {
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer(gopt);
  Voxelizer& gpu = *gpu_owner;
  gpu.set_mesh(mesh);
  for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative})
    for (const TargetSpec& target : test::all_target_specs()) {
      VoxelizeOptions o;
      o.mode = mode;
      o.target = target.target;
      o.blend = target.blend;
      expect_same(voxelize_cpu(mesh, spec, o), gpu.voxelize(spec, o),
                  what + " " + mode_name(mode) + " " + target_spec_name(target) + " " + spec.describe());
    }
}

TEST_F(Gpu, MatchesTheCpuReferenceOnTheGoldenMatrix) {
  std::map<std::string, Mesh> meshes;
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  std::string current;
  for (const test::GoldenCase& c : test::golden_cases()) {
    if (!meshes.count(c.mesh)) meshes[c.mesh] = load_mesh(test::data_path(c.mesh)).mesh;
    const Mesh& m = meshes[c.mesh];
    if (current != c.mesh) {
      gpu.set_mesh(m);
      current = c.mesh;
    }
    VoxelizeOptions o;
    o.mode = c.mode;
    o.target = c.target.target;
    o.blend = c.target.blend;
    const GridSpec spec = make_grid_spec(m.bounds(), test::golden_grid(c.grid));
    expect_same(voxelize_cpu(m, spec, o), gpu.voxelize(spec, o), c.id());
  }
}

TEST_F(Gpu, MatchesOnHigherResolutionsOfRealMeshes) {
  for (const char* path : {"meshes/stanford_bunny.ply", "formats/gltf/Duck.glb"}) {
    const Mesh m = load_mesh(test::data_path(path)).mesh;
    for (int res : {255, 512, 1000}) {
      GridOptions go;
      go.resolution = res;
      compare(m, make_grid_spec(m.bounds(), go), path);
    }
  }
}

TEST_F(Gpu, MatchesWhenWorkIsSplitIntoBatchesAndVirtualTiles) {
  const Mesh m = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  GridOptions go;
  go.resolution = 300;
  const GridSpec spec = make_grid_spec(m.bounds(), go);
  GpuOptions tiny;
  tiny.max_batch_pairs = 5000;  // ~15 batches
  tiny.max_tile_triangles = 3;  // nearly every tile split
  compare(m, spec, "batched+split", tiny);
}

TEST_F(Gpu, MatchesWhenTheBrickBufferOverflowsAndIsRetried) {
  const Mesh m = load_mesh(test::data_path("formats/gltf/Duck.glb")).mesh;
  GridOptions go;
  go.resolution = 200;
  GpuOptions small;
  small.initial_bricks = 1;
  compare(m, make_grid_spec(m.bounds(), go), "retry, one batch (counts of tiles on the device)", small);
  small.max_batch_pairs = 3000;
  compare(m, make_grid_spec(m.bounds(), go), "retry, batches", small);
}

// A single binary target in one batch leaves the fine raster's brick count on the device and the
// merge reads it with the merged count: an overflow found there rasters again (stage fine_retry).
TEST_F(Gpu, RetriesAnOverflowFoundAtTheMerge) {
  const Mesh m = load_mesh(test::data_path("formats/gltf/Duck.glb")).mesh;
  GridOptions go;
  go.resolution = 300;
  const GridSpec spec = make_grid_spec(m.bounds(), go);
  for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
    VoxelizeOptions o;
    o.mode = mode;
    o.target = Target::kBinary;
    for (uint64_t initial : {uint64_t(1), uint64_t(0)}) {  // overflowing, then sized by estimate
      GpuOptions gopt;
      gopt.initial_bricks = initial;
      const std::unique_ptr<Voxelizer> gpu = make_gpu_voxelizer(gopt);
      gpu->set_mesh(m);
      VoxelizeStats stats;
      expect_same(voxelize_cpu(m, spec, o), gpu->voxelize(spec, o, &stats), std::string("deferred ") + mode_name(mode));
      const bool retried = std::any_of(stats.stage_ms.begin(), stats.stage_ms.end(),
                                       [](const auto& s) { return s.first == "fine_retry"; });
      EXPECT_EQ(retried, initial == 1) << mode_name(mode);
    }
  }
}

TEST_F(Gpu, MatchesWithBothValueTileLayouts) {
  const Mesh m = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  for (int res : {64, 700}) {
    GridOptions go;
    go.resolution = res;
    const GridSpec spec = make_grid_spec(m.bounds(), go);
    for (int layout : {1, 2}) {
      GpuOptions gopt;
      gopt.value_tiles = ValueTiles(layout);
      compare(m, spec, "value tiles " + std::to_string(layout), gopt);
    }
  }
}

// The coarse raster's Morton visiting order gives the same grids (every blend is order-independent),
// batched and split too, on a mesh whose triangles are shuffled and on the soup's huge triangles.
TEST_F(Gpu, MatchesInMortonOrder) {
  Mesh shuffled = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  shuffle_triangles(shuffled, 5);
  GridOptions go;
  go.resolution = 200;
  GpuOptions morton;
  morton.triangle_order = TriangleOrder::kMorton;
  compare(shuffled, make_grid_spec(shuffled.bounds(), go), "morton", morton);
  morton.max_batch_pairs = 5000;
  morton.max_tile_triangles = 3;
  compare(shuffled, make_grid_spec(shuffled.bounds(), go), "morton batched+split", morton);
  const Mesh soup = test::random_soup(3000, 10.0f, 4.0f, 11);
  go.resolution = 256;
  compare(soup, make_grid_spec(soup.bounds(), go), "morton soup", morton);
}

TEST_F(Gpu, MatchesOnRandomSoupsWithHugeAndTinyTriangles) {
  Mesh soup = test::random_soup(20000, 100.0f, 2.0f, 11);
  test::append_mesh(soup, test::random_soup(40, 100.0f, 150.0f, 12));  // triangles spanning the grid
  for (int res : {1, 7, 64, 777}) {
    GridOptions go;
    go.resolution = res;
    go.bbox = test::make_bounds(0, 0, 0, 100, 100, 100);
    compare(soup, make_grid_spec(soup.bounds(), go), "soup");
  }
  GridOptions go;
  go.dims = Int3{301, 77, 190};
  compare(soup, make_grid_spec(soup.bounds(), go), "soup non-cubic");
}

TEST_F(Gpu, MatchesOnASliverAcrossAn8192Grid) {
  const Mesh m = test::sliver_8192();
  compare(m, make_grid_spec(m.bounds(), test::sliver_grid()), "sliver");
}

// A grid of more than 2^32 bricks (65536 x 65536 x 2048 voxels): the merge sorts the bricks' 64-bit
// keys instead of their 32-bit linear indices.
TEST_F(Gpu, MatchesOnASliverAcrossAGridOfMoreThan2To32Bricks) {
  const Mesh m = test::single_triangle({0.5f, 0.5f, 0.5f}, {65535.5f, 65000.25f, 2000.75f}, {65535.5f, 65001.0f, 2001.5f});
  GridOptions go;
  go.voxel_size = Vec3d{1, 1, 1};
  go.bbox = test::make_bounds(0, 0, 0, 65536, 65536, 2048);
  compare(m, make_grid_spec(m.bounds(), go), "sliver over 2^34 bricks");
}

// The merge: binary bricks through a bitmap of the grid's bricks, value bricks by sorting 32-bit
// brick indices, or every target by sorting 64-bit brick keys: the same grids, with tiles split
// into many virtual tiles so that most bricks are merged from several pieces.
TEST_F(Gpu, BothMergeSortsGiveTheSameGrids) {
  const Mesh m = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  GridOptions go;
  go.dims = Int3{190, 201, 97};
  const GridSpec spec = make_grid_spec(m.bounds(), go);
  for (bool by_key : {false, true}) {
    GpuOptions o;
    o.merge_by_brick_key = by_key;
    o.max_tile_triangles = 3;
    compare(m, spec, by_key ? "merge by 64-bit key" : "merge by 32-bit index", o);
  }
}

// Binary targets group the coarse raster's pairs by tile with a count per tile and a scatter (no sort,
// the order within a tile left to the atomics); every other target sorts them. Both give the same
// grids (compare: every target, so binary ones scatter unless sort_pairs), with small virtual tiles,
// large triangles (the room's walls: a warp each) and long thin ones; the scatter path is taken
// (no sort stage) and two runs give the same bytes.
TEST_F(Gpu, BothPairGroupingsGiveTheSameGrids) {
  const Mesh tubes = make_tubes(40, 60, 6, 7, 0.01, 1.5);
  const Mesh room = make_room(12, 5);
  const Mesh bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  for (const Mesh* m : {&tubes, &room, &bunny}) {
    const std::string name = m == &tubes ? "tubes" : m == &room ? "room" : "bunny";
    GridOptions go;
    go.resolution = 300;
    const GridSpec spec = make_grid_spec(m->bounds(), go);
    for (bool sort : {false, true}) {
      GpuOptions o;
      o.sort_pairs = sort;
      o.max_tile_triangles = 5;
      compare(*m, spec, name + (sort ? ", pairs sorted" : ", pairs scattered"), o);
      const std::unique_ptr<Voxelizer> gpu = make_gpu_voxelizer(o);
      gpu->set_mesh(*m);
      VoxelizeOptions vo;
      vo.mode = VoxelMode::kConservative;
      VoxelizeStats stats;
      const SparseGrid a = gpu->voxelize(spec, vo, &stats);
      const bool sorted = std::any_of(stats.stage_ms.begin(), stats.stage_ms.end(),
                                      [](const auto& s) { return s.first == "sort"; });
      EXPECT_EQ(sorted, sort) << name;
      expect_same(a, gpu->voxelize(spec, vo), name + ": a second run");
    }
  }
}

// The coarse raster keeps the tiles of a triangle over 2 to 4 tiles in its plan for the emit pass,
// as many as the width of the grid's tile indices leaves room for (4 up to 2^14 tiles, 3 up to 2^19,
// 2 up to 2^29, none beyond), and loads them again in warps where another triangle needs that: the
// same grids on shuffled tubes (most triangles over 2 to 4 tiles, some over more) in a corner of
// grids of each width, pairs scattered and sorted.
TEST_F(Gpu, CoarsePlansHoldTheTilesOfEveryIndexWidth) {
  Mesh shuffled = make_tubes(40, 60, 6, 7, 0.01, 1.5);
  shuffle_triangles(shuffled, 9);
  const Bounds b = shuffled.bounds();
  const double s = std::max({b.hi.x - b.lo.x, b.hi.y - b.lo.y, b.hi.z - b.lo.z}) / 250.0;
  // tiles: 10^3 (10 bits), 2048 x 10 x 10 (18), 2048^2 x 10 (26), 2048^2 x 256 (30)
  for (const Int3 dims :
       {Int3{300, 300, 300}, Int3{65536, 300, 300}, Int3{65536, 65536, 300}, Int3{65536, 65536, 8192}}) {
    GridSpec spec;
    spec.origin = Vec3d{b.lo.x - 3 * s, b.lo.y - 3 * s, b.lo.z - 3 * s};
    spec.voxel_size = Vec3d{s, s, s};
    spec.dims = dims;
    for (bool sort : {false, true}) {
      GpuOptions o;
      o.sort_pairs = sort;
      compare(shuffled, spec, std::string("shuffled tubes, pairs ") + (sort ? "sorted" : "scattered"), o);
    }
  }
}

// A single binary target whose pairs are scattered sizes their buffer before the host knows their
// number and checks it after the merge: too little room (initial_pairs) rasters nothing and runs
// again from the counts with the exact size (stage coarse_retry), with the CPU's grid and the
// statistics of a run that read the number first; enough room needs no retry.
TEST_F(Gpu, ScatteredPairsRetryWhenTheirRoomWasTooSmall) {
  const Mesh tubes = make_tubes(40, 60, 6, 7, 0.01, 1.5);
  const Mesh room = make_room(12, 5);
  for (const Mesh* m : {&tubes, &room}) {
    const std::string name = m == &tubes ? "tubes" : "room";
    GridOptions go;
    go.resolution = 300;
    const GridSpec spec = make_grid_spec(m->bounds(), go);
    VoxelizeOptions vo;
    vo.mode = VoxelMode::kConservative;
    GpuOptions first;
    first.read_pairs_first = true;
    const std::unique_ptr<Voxelizer> reader = make_gpu_voxelizer(first);
    reader->set_mesh(*m);
    VoxelizeStats want;
    const SparseGrid expected = reader->voxelize(spec, vo, &want);
    expect_same(voxelize_cpu(*m, spec, vo), expected, name + ": the number of pairs read first");
    ASSERT_GT(want.tile_pairs, 2u);
    GpuOptions sorted;
    sorted.sort_pairs = true;  // (tiles found from the sorted pairs)
    const std::unique_ptr<Voxelizer> sorter = make_gpu_voxelizer(sorted);
    sorter->set_mesh(*m);
    VoxelizeStats by_sort;
    expect_same(expected, sorter->voxelize(spec, vo, &by_sort), name + ": pairs sorted");
    EXPECT_EQ(by_sort.tile_pairs, want.tile_pairs) << name;
    EXPECT_EQ(by_sort.tiles, want.tiles) << name;
    for (uint64_t initial : {uint64_t(1), want.tile_pairs - 1, want.tile_pairs, uint64_t(0)}) {
      GpuOptions o;
      o.initial_pairs = initial;
      const std::unique_ptr<Voxelizer> gpu = make_gpu_voxelizer(o);
      gpu->set_mesh(*m);
      VoxelizeStats stats;
      const std::string what = name + ", room for " + std::to_string(initial) + " pairs";
      expect_same(expected, gpu->voxelize(spec, vo, &stats), what);
      const bool retried = std::any_of(stats.stage_ms.begin(), stats.stage_ms.end(),
                                       [](const auto& s) { return s.first == "coarse_retry"; });
      EXPECT_EQ(retried, initial != 0 && initial < want.tile_pairs) << what;
      EXPECT_EQ(stats.tile_pairs, want.tile_pairs) << what;
      EXPECT_EQ(stats.tiles, want.tiles) << what;
      expect_same(expected, gpu->voxelize(spec, vo), what + ", a second run");
    }
  }
}

// The fine raster's three kernels (api.h FineKernel: rows only; columns spread over a warp's lanes;
// spread columns with each triangle's rows limited to those that can hold pixels, along either axis
// of its projection): the same grids for every target (value targets: in both tile layouts;
// normal:add always takes rows), on
// long thin triangles, CAD slivers and small triangles, each kernel forced and the automatic choice
// (for a binary target made on the device: pairs not read by the host). CAD parts at 640^3 make
// enough pairs per triangle that it chooses kRanges there.
TEST_F(Gpu, AllFineRasterKernelsGiveTheSameGrids) {
  const Mesh tubes = make_tubes(40, 60, 6, 7, 0.01, 1.5);
  const Mesh cad = make_cad(24, 96, 5);
  const Mesh bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  const std::tuple<const Mesh*, std::string, int32_t> meshes[] = {
      {&tubes, "tubes", 400}, {&cad, "cad", 400}, {&cad, "cad", 640}, {&bunny, "bunny", 400}};
  for (const auto& [m, name, resolution] : meshes) {
    GridOptions go;
    go.resolution = resolution;
    const GridSpec spec = make_grid_spec(m->bounds(), go);
    if (resolution == 640) {  // (the automatic choice is kRanges)
      const TileBinning bn = bin_triangles(*m, spec, VoxelMode::kConservative);
      ASSERT_GE(double(bn.pairs.size()), kFineRangesMinPairs * double(m->indices.size() / 3));
    }
    for (FineKernel kernel : {FineKernel::kRows, FineKernel::kSpread, FineKernel::kRanges, FineKernel::kAuto})
      for (ValueTiles layout : {ValueTiles::kTile, ValueTiles::kOctant}) {
        if (kernel == FineKernel::kAuto && layout == ValueTiles::kOctant) continue;  // (auto: the layout's too)
        GpuOptions o;
        o.fine_kernel = kernel;
        o.value_tiles = kernel == FineKernel::kAuto ? ValueTiles::kAuto : layout;
        compare(*m, spec,
                name + " at " + std::to_string(resolution) + ", kernel " + std::to_string(int(kernel)) +
                    ", value tiles " + std::to_string(int(o.value_tiles)),
                o);
      }
  }
}

// The automatic choice of the fine raster's binary kernel (api.h auto_fine_kernel): kRanges from the
// pairs per triangle of every triangle; kRows or kSpread from those of the triangles that are not
// large (a room: a few walls over many tiles and many tiny triangles), or of every triangle where all
// are large or the numbers do not add up.
TEST(FineKernelRule, LeavesLargeTrianglesOutOfTheRowsOrSpreadRatio) {
  EXPECT_EQ(auto_fine_kernel(100, 100, 0, 0, true), FineKernel::kRows);
  EXPECT_EQ(auto_fine_kernel(119, 100, 0, 0, true), FineKernel::kRows);
  EXPECT_EQ(auto_fine_kernel(120, 100, 0, 0, true), FineKernel::kSpread);
  EXPECT_EQ(auto_fine_kernel(599, 100, 0, 0, true), FineKernel::kSpread);
  EXPECT_EQ(auto_fine_kernel(600, 100, 0, 0, true), FineKernel::kRanges);
  EXPECT_EQ(auto_fine_kernel(600, 100, 0, 0, false), FineKernel::kSpread);  // (thin mode: no kRanges)
  // 300000 tiny triangles with 320000 pairs and 12 walls with 80000: 1.33 pairs per triangle in all.
  EXPECT_EQ(auto_fine_kernel(400000, 300012, 0, 0, true), FineKernel::kSpread);
  EXPECT_EQ(auto_fine_kernel(400000, 300012, 80000, 12, true), FineKernel::kRows);
  // Slivers whose pairs are mostly large triangles' still get kRanges.
  EXPECT_EQ(auto_fine_kernel(1400000, 100000, 1300000, 20000, true), FineKernel::kRanges);
  // Every triangle large: their own ratio; numbers that do not add up: every triangle's.
  EXPECT_EQ(auto_fine_kernel(5000, 12, 5000, 12, false), FineKernel::kSpread);
  EXPECT_EQ(auto_fine_kernel(130, 100, 200, 5, true), FineKernel::kSpread);
}

// Many triangles far smaller than a voxel on every voxel (a subdivided scan's case), of every
// orientation, listed in mesh order and by quarters, through both fine kernels with pairs scattered
// and sorted.
TEST_F(Gpu, TrianglesFarSmallerThanVoxelsMatchTheCpu) {
  const Mesh sphere = make_uv_sphere(0.1f, -0.2f, 0.3f, 1.0f, 120, 240);
  const Mesh quarters = subdivide(make_uv_sphere(0.0f, 0.0f, 0.0f, 1.0f, 15, 30), 3, true);
  for (const Mesh* m : {&sphere, &quarters}) {
    GridOptions go;
    go.resolution = 45;
    const GridSpec spec = make_grid_spec(m->bounds(), go);
    for (bool sort : {false, true})
      for (FineKernel kernel : {FineKernel::kRows, FineKernel::kSpread, FineKernel::kRanges}) {
        GpuOptions g;
        g.sort_pairs = sort;
        g.fine_kernel = kernel;
        const std::unique_ptr<Voxelizer> gpu = make_gpu_voxelizer(g);
        gpu->set_mesh(*m);
        for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
          VoxelizeOptions o;
          o.mode = mode;
          expect_same(voxelize_cpu(*m, spec, o), gpu->voxelize(spec, o),
                      std::string(m == &sphere ? "sphere" : "quarters") + (sort ? " sorted" : " scattered") +
                          " kernel " + std::to_string(int(kernel)) + " " + mode_name(mode));
        }
      }
  }
}

TEST_F(Gpu, OneTriangleCoveringTheWholeGrid) {
  const Mesh m = test::single_triangle({-1, -1, 0.37f}, {3, -1, 0.41f}, {-1, 3, 0.63f});
  GridOptions go;
  go.dims = Int3{1024, 1024, 64};
  go.bbox = test::make_bounds(0, 0, 0, 1, 1, 1);
  compare(m, make_grid_spec(m.bounds(), go), "one big triangle");
}

TEST_F(Gpu, RepeatedRunsGiveTheSameResult) {
  const Mesh m = load_mesh(test::data_path("formats/gltf/Duck.glb")).mesh;
  GridOptions go;
  go.resolution = 333;
  const GridSpec spec = make_grid_spec(m.bounds(), go);
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  gpu.set_mesh(m);
  for (const TargetSpec& target : test::all_target_specs()) {
    VoxelizeOptions o;
    o.target = target.target;
    o.blend = target.blend;
    const uint64_t first = gpu.voxelize(spec, o).checksum();
    for (int i = 0; i < 5; ++i) EXPECT_EQ(gpu.voxelize(spec, o).checksum(), first);
  }
}

TEST_F(Gpu, SeveralTargetsFromOneCoarseRasterMatchTheCpu) {
  const Mesh m = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  gpu.set_mesh(m);
  const std::vector<TargetSpec> targets = test::all_target_specs();
  for (int res : {50, 256}) {
    GridOptions go;
    go.resolution = res;
    const GridSpec spec = make_grid_spec(m.bounds(), go);
    for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
      VoxelizeOptions o;
      o.mode = mode;
      VoxelizeStats st;
      const std::vector<SparseGrid> g = gpu.voxelize(spec, o, targets, &st);
      const std::vector<SparseGrid> c = voxelize_cpu_targets(m, spec, o, targets);
      ASSERT_EQ(g.size(), targets.size());
      for (size_t i = 0; i < targets.size(); ++i) {
        expect_same(c[i], g[i], "multi " + target_spec_name(targets[i]));
        EXPECT_EQ(g[i].name, c[i].name);
      }
      // One coarse raster for all targets; binary is taken from a value target's masks. The first
      // target's brick count sizes the others' buffers, so only it may have to retry.
      int coarse = 0, fine = 0, retries = 0;
      for (const auto& [name, ms] : st.stage_ms) {
        coarse += name == "coarse";
        fine += name.rfind("fine:", 0) == 0;
        retries += name.rfind("fine_retry", 0) == 0;
      }
      EXPECT_EQ(coarse, 1);
      EXPECT_EQ(fine, int(targets.size()) - 1);
      EXPECT_LE(retries, 1);
    }
  }
}

TEST_F(Gpu, EmptyResultWhenTheMeshMissesTheGrid) {
  const Mesh box = make_box_mesh(0, 0, 0, 1, 1, 1);
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  gpu.set_mesh(box);
  const SparseGrid g = gpu.voxelize(make_grid_spec(box.bounds(), test::grid_beside_unit_box()), VoxelizeOptions{});
  EXPECT_EQ(g.num_bricks(), 0u);
}

TEST_F(Gpu, BatchOnEveryGpuWritesTheCpuBytes) {
  test::TempDir dir;
  std::vector<std::string> base = {"batch", test::data_path("meshes/stanford_bunny.ply"), test::data_path("formats/gltf/Duck.glb"),
                                   test::data_path("formats/obj/spider.obj"), "-r", "300", "-t", "count,normal", "-q"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return test::run_voxtile(a);
  };
  ASSERT_EQ(with({"--out", dir.path() + "/cpu_{stem}.vdb", "--devices", "cpu"}).exit_code, 0);
  auto r = with({"--out", dir.path() + "/gpu_{stem}.vdb", "--devices", "all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* stem : {"stanford_bunny", "Duck", "spider"})
    EXPECT_EQ(test::read_file(dir.path() + "/cpu_" + stem + ".vdb"), test::read_file(dir.path() + "/gpu_" + stem + ".vdb"))
        << stem;
}

TEST_F(Gpu, CliUsesTheGpuAndWritesTheSameFileAsTheCpu) {
  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  auto g = test::run_voxtile(
      {"voxelize", bunny, "-o", dir.file("g.vdb"), "-r", "200", "-t", "count", "--stats", "-d", "gpu"});
  auto c = test::run_voxtile({"voxelize", bunny, "-o", dir.file("c.vdb"), "-r", "200", "-t", "count", "-d", "cpu"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(g.out.find("\"device\":\"cpu\""), std::string::npos) << g.out;
  EXPECT_EQ(test::read_file(dir.file("g.vdb")), test::read_file(dir.file("c.vdb")));
}

// --device auto: a job the CPU finishes before the GPU has started runs there (the same bytes); a
// larger one waits for the GPU. (Two threads, so that the estimates do not depend on the machine.)
TEST_F(Gpu, AutoRunsSmallJobsOnTheCpuWhileTheGpuStarts) {
  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  for (const char* r : {"64", "1024"}) {
    SCOPED_TRACE(r);
    const bool small = std::string(r) == "64";
    auto a =
        test::run_voxtile({"voxelize", bunny, "-o", dir.file("a.vdb"), "-r", r, "--stats", "-v", "--threads", "2"});
    auto g = test::run_voxtile({"voxelize", bunny, "-o", dir.file("g.vdb"), "-r", r, "-d", "gpu"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(a.out.find("\"device\":\"cpu\"") != std::string::npos, small) << a.out;
    EXPECT_EQ(a.err.find("on the CPU (estimated") != std::string::npos, small) << a.err;
    EXPECT_EQ(test::read_file(dir.file("a.vdb")), test::read_file(dir.file("g.vdb")));
  }
}

}  // namespace
}  // namespace voxtile
