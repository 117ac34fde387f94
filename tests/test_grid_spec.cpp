// GridSpec construction rules.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/grid_spec.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

using test::make_bounds;

ErrorKind kind_of(const Bounds& b, const GridOptions& o) {
  try {
    make_grid_spec(b, o);
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;
}

TEST(GridSpec, ResolutionSetsTheLongestAxisAndCubicVoxels) {
  GridOptions o;
  o.resolution = 4;
  const GridSpec g = make_grid_spec(make_bounds(0, 0, 0, 2, 1, 0.5), o);
  EXPECT_EQ(g.voxel_size.x, 0.5);
  EXPECT_TRUE(g.is_cubic());
  EXPECT_EQ(g.dims.x, 4);
  EXPECT_EQ(g.dims.y, 2);
  EXPECT_EQ(g.dims.z, 1);
  EXPECT_EQ(g.origin.x, 0.0);
  const Vec3d c = g.voxel_center(3, 1, 0);
  EXPECT_DOUBLE_EQ(c.x, 1.75);
  EXPECT_DOUBLE_EQ(c.y, 0.75);
  EXPECT_DOUBLE_EQ(c.z, 0.25);
}

TEST(GridSpec, DefaultResolutionIs256) {
  const GridSpec g = make_grid_spec(make_bounds(-1, -1, -1, 1, 1, 1), GridOptions{});
  EXPECT_EQ(g.dims.x, 256);
  EXPECT_EQ(g.dims.z, 256);
}

TEST(GridSpec, TheBoundsMaximumMapsInsideTheClosedGrid) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1000, 1000), e(1e-3, 500);
  for (int n = 0; n < 2000; ++n) {
    const double x = u(rng), y = u(rng), z = u(rng);
    const Bounds b = make_bounds(x, y, z, x + e(rng), y + e(rng), z + e(rng));
    GridOptions o;
    o.resolution = 1 + n % 700;
    const GridSpec g = make_grid_spec(b, o);
    const Vec3f top = g.world_to_grid(b.hi);
    const Vec3f bot = g.world_to_grid(b.lo);
    EXPECT_EQ(bot.x, 0.0f);
    EXPECT_LE(top.x, float(g.dims.x));
    EXPECT_LE(top.y, float(g.dims.y));
    EXPECT_LE(top.z, float(g.dims.z));
    EXPECT_GT(top.y, float(g.dims.y - 1));  // no empty layer at the top
    EXPECT_EQ(std::max({g.dims.x, g.dims.y, g.dims.z}), *o.resolution);
  }
}

TEST(GridSpec, VoxelSizeGivesDimsByCeiling) {
  GridOptions o;
  o.voxel_size = Vec3d{0.3, 0.3, 0.3};
  const GridSpec g = make_grid_spec(make_bounds(0, 0, 0, 1, 0.6, 0.1), o);
  EXPECT_EQ(g.dims.x, 4);
  EXPECT_EQ(g.dims.y, 2);
  EXPECT_EQ(g.dims.z, 1);
}

TEST(GridSpec, DimsGiveNonCubicVoxelsThatFitTheBounds) {
  GridOptions o;
  o.dims = Int3{10, 20, 5};
  const GridSpec g = make_grid_spec(make_bounds(0, 0, 0, 1, 1, 1), o);
  EXPECT_EQ(g.dims.y, 20);
  EXPECT_DOUBLE_EQ(g.voxel_size.x, 0.1);
  EXPECT_DOUBLE_EQ(g.voxel_size.y, 0.05);
  EXPECT_DOUBLE_EQ(g.voxel_size.z, 0.2);
  EXPECT_FALSE(g.is_cubic());
}

TEST(GridSpec, AFlatAxisTakesTheLargestVoxelSizeWithDims) {
  GridOptions o;
  o.dims = Int3{10, 10, 1};
  const GridSpec g = make_grid_spec(make_bounds(0, 0, 3, 1, 2, 3), o);
  EXPECT_DOUBLE_EQ(g.voxel_size.z, 0.2);
}

TEST(GridSpec, AFlatMeshGetsOneLayer) {
  GridOptions o;
  o.resolution = 8;
  const GridSpec g = make_grid_spec(make_bounds(0, 0, 3, 1, 2, 3), o);
  EXPECT_EQ(g.dims.z, 1);
  EXPECT_EQ(g.dims.y, 8);
}

TEST(GridSpec, PadShiftsTheOriginAndGrowsEveryAxis) {
  GridOptions o;
  o.resolution = 4;
  o.pad = 2;
  const GridSpec g = make_grid_spec(make_bounds(0, 0, 0, 2, 2, 2), o);
  EXPECT_EQ(g.dims.x, 8);
  EXPECT_DOUBLE_EQ(g.origin.x, -1.0);
  const Vec3f top = g.world_to_grid({2, 2, 2});
  EXPECT_EQ(top.x, 6.0f);
}

TEST(GridSpec, BboxReplacesTheMeshBounds) {
  GridOptions o;
  o.voxel_size = Vec3d{1, 1, 1};
  o.bbox = make_bounds(-4, -4, -4, 4, 4, 4);
  const GridSpec g = make_grid_spec(make_bounds(0, 0, 0, 1, 1, 1), o);
  EXPECT_EQ(g.dims.x, 8);
  EXPECT_EQ(g.origin.x, -4.0);
}

TEST(GridSpec, SameInputsGiveTheSameGrid) {
  GridOptions o;
  o.resolution = 333;
  const GridSpec a = make_grid_spec(make_bounds(0.1, 0.2, 0.3, 1.7, 2.9, 0.4), o);
  const GridSpec b = make_grid_spec(make_bounds(0.1, 0.2, 0.3, 1.7, 2.9, 0.4), o);
  EXPECT_EQ(a.dims.x, b.dims.x);
  EXPECT_EQ(a.dims.z, b.dims.z);
  EXPECT_EQ(a.voxel_size.y, b.voxel_size.y);
}

TEST(GridSpec, RejectsContradictoryAndAbsurdOptions) {
  const Bounds b = make_bounds(0, 0, 0, 1, 1, 1);
  GridOptions o;
  o.resolution = 0;
  EXPECT_EQ(kind_of(b, o), ErrorKind::kUsage);
  o.resolution = 10;
  o.voxel_size = Vec3d{1, 1, 1};
  EXPECT_EQ(kind_of(b, o), ErrorKind::kUsage);
  o = GridOptions{};
  o.voxel_size = Vec3d{-1, 1, 1};
  EXPECT_EQ(kind_of(b, o), ErrorKind::kUsage);
  o.voxel_size = Vec3d{1e-9, 1e-9, 1e-9};
  EXPECT_EQ(kind_of(b, o), ErrorKind::kUsage);
  o = GridOptions{};
  o.resolution = kMaxGridDim + 1;
  EXPECT_EQ(kind_of(b, o), ErrorKind::kUsage);
  o = GridOptions{};
  o.dims = Int3{0, 1, 1};
  EXPECT_EQ(kind_of(b, o), ErrorKind::kUsage);
  o = GridOptions{};
  o.bbox = make_bounds(1, 1, 1, 0, 2, 2);  // min > max: the user's box, a usage error
  EXPECT_EQ(kind_of(b, o), ErrorKind::kUsage);
}

TEST(GridSpec, RejectsEmptyAndPointBounds) {
  EXPECT_EQ(kind_of(Bounds{}, GridOptions{}), ErrorKind::kInput);
  EXPECT_EQ(kind_of(make_bounds(1, 1, 1, 1, 1, 1), GridOptions{}), ErrorKind::kInput);
  EXPECT_EQ(kind_of(make_bounds(-1e308, 0, 0, 1e308, 1, 1), GridOptions{}), ErrorKind::kInput);
}

}  // namespace
}  // namespace voxtile
