// CSG scripts, surface sampling, the CSG keep rules, the solid, point binning, point-cloud files,
// the compaction primitive and the GPU paths (which must equal the CPU bit for bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "cli/cmd_points.h"
#include "core/csg.h"
#include "core/error.h"
#include "core/points.h"
#include "io/grid_reader.h"
#include "io/grid_set.h"
#include "io/mesh_reader.h"
#include "io/points_io.h"
#include "kernels/api.h"
#include "kernels/testing.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

using test::TempDir;

std::string parse_error(const std::string& text) {
  try {
    parse_csg(text, "s.csg");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    return e.what();
  }
  return "(no error)";
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

CsgScript example(const std::string& name) { return load_csg(test::data_path("csg/" + name)); }

// A script mixing every shape, rotations, adds and subs, overlapping in many ways.
CsgScript mixed_script() {
  return parse_csg(
      "add box center 0 0 0 size 2 2 2 color #102030\n"
      "sub sphere center 1 1 1 radius 0.8\n"
      "add torus center 0 0 0.5 major 1.1 minor 0.25 rotate 20 0 0 material 3\n"
      "sub cylinder center 0 0 0 radius 0.4 height 3 rotate 0 90 0\n"
      "add capsule center 0.3 -0.2 0 radius 0.3 height 1.2 rotate 10 70 5\n"
      "sub box center -1 -1 0 size 0.8 0.8 0.8 rotate 0 0 45\n"
      "add sphere center -0.2 0.1 0.1 radius 0.35\n",
      "mixed.csg");
}

// ---- parser -----------------------------------------------------------------------------------

TEST(CsgParse, EveryPrimitiveAndOption) {
  const CsgScript s = parse_csg(
      "# comment line\n"
      "\n"
      "add sphere center 1 2 3 radius 0.5 color #ff8000 material 7   # trailing comment\r\n"
      "  sub box center 0 0 0 size 1 2 3 rotate 0 0 90 // another comment\n"
      "add cylinder radius 1 height 2 center 0 0 1 color 1 2 3\n"
      "add capsule center 0 0 0 radius 0.25 height 1\n"
      "sub torus center 0 0 0 major 2 minor 0.5\n",
      "t.csg");
  ASSERT_EQ(s.prims.size(), 5u);
  EXPECT_EQ(s.lines, (std::vector<int>{3, 4, 5, 6, 7}));
  const CsgPrimitive& sp = s.prims[0];
  EXPECT_EQ(sp.shape, uint32_t(CsgShape::kSphere));
  EXPECT_EQ(sp.subtract, 0u);
  EXPECT_EQ(sp.rotated, 0u);
  EXPECT_FLOAT_EQ(sp.center[2], 3.f);
  EXPECT_FLOAT_EQ(sp.a, 0.5f);
  EXPECT_EQ(sp.rgb, 0xff8000u);
  EXPECT_EQ(sp.material, 7u);
  const CsgPrimitive& bx = s.prims[1];
  EXPECT_EQ(bx.subtract, 1u);
  EXPECT_EQ(bx.rotated, 1u);
  EXPECT_FLOAT_EQ(bx.a, 0.5f);
  EXPECT_FLOAT_EQ(bx.c, 1.5f);
  // 90 degrees about z: the local y half size (1) lies along world x, the local x one (0.5) along y.
  EXPECT_TRUE(csg_inside(bx, {0.9f, 0.f, 0.f}));
  EXPECT_FALSE(csg_inside(bx, {0.f, 0.9f, 0.f}));
  EXPECT_EQ(s.prims[2].rgb, 0x010203u);
  EXPECT_FLOAT_EQ(s.prims[2].c, 1.f);
  EXPECT_EQ(s.prims[3].shape, uint32_t(CsgShape::kCapsule));
  EXPECT_EQ(s.prims[4].shape, uint32_t(CsgShape::kTorus));
  EXPECT_EQ(s.prims[4].subtract, 1u);
  // Bounds: of the additive primitives only.
  const Bounds b = s.bounds();
  EXPECT_DOUBLE_EQ(b.lo.x, -1.0);
  EXPECT_DOUBLE_EQ(b.hi.z, 3.5);
}

// A capsule of height 0 is a sphere (accepted); a cylinder of height 0 and negative heights are not.
TEST(CsgParse, CapsuleOfHeightZeroIsASphere) {
  const CsgScript s = parse_csg("add capsule center 0 0 0 radius 0.5 height 0\n", "t.csg");
  ASSERT_EQ(s.prims.size(), 1u);
  EXPECT_EQ(s.prims[0].c, 0.0f);
  EXPECT_THROW(parse_csg("add cylinder center 0 0 0 radius 0.5 height 0\n", "t.csg"), Error);
  EXPECT_THROW(parse_csg("add capsule center 0 0 0 radius 0.5 height -1\n", "t.csg"), Error);
}

TEST(CsgParse, ErrorsNameFileLineColumnAndWhatWasExpected) {
  EXPECT_EQ(parse_error("union sphere center 0 0 0 radius 1\n"), "s.csg:1:1: expected 'add' or 'sub', got 'union'");
  EXPECT_EQ(parse_error("\nadd\n"), "s.csg:2:4: expected a primitive (sphere, box, cylinder, capsule, torus) after 'add'");
  EXPECT_EQ(parse_error("add cone center 0 0 0\n"),
            "s.csg:1:5: expected a primitive (sphere, box, cylinder, capsule, torus), got 'cone'");
  EXPECT_EQ(parse_error("add sphere center 0 0 0 radius 1 size 1 1 1\n"),
            "s.csg:1:34: sphere takes center, radius, rotate, color, material, got 'size'");
  EXPECT_EQ(parse_error("add sphere center 0 0 0 radius 1 radius 2\n"), "s.csg:1:34: 'radius' given twice");
  EXPECT_EQ(parse_error("add sphere center 0 0 0\n"), "s.csg:1:5: sphere needs 'radius'");
  EXPECT_EQ(parse_error("add sphere radius 1\n"), "s.csg:1:5: sphere needs 'center'");
  EXPECT_EQ(parse_error("add sphere center 0 x 0 radius 1\n"), "s.csg:1:21: expected a number after 'center', got 'x'");
  EXPECT_EQ(parse_error("add sphere center 0 0 radius 1\n"), "s.csg:1:23: expected a number after 'center', got 'radius'");
  EXPECT_EQ(parse_error("add sphere center 0 0 0 radius\n"), "s.csg:1:31: expected a positive number after 'radius'");
  EXPECT_EQ(parse_error("add sphere center 0 0 0 radius -1\n"), "s.csg:1:32: 'radius' must be positive, got -1");
  EXPECT_EQ(parse_error("add sphere center 0 0 0 radius 0\n"), "s.csg:1:32: 'radius' must be positive, got 0");
  EXPECT_EQ(parse_error("add sphere center nan 0 0 radius 1\n"),
            "s.csg:1:19: 'center' value nan is not a finite number of at most 1e18");
  EXPECT_EQ(parse_error("add sphere center 1e400 0 0 radius 1\n"),
            "s.csg:1:19: 'center' value 1e400 is not a finite number of at most 1e18");
  EXPECT_EQ(parse_error("add torus center 0 0 0 major 1 minor 1\n"),
            "s.csg:1:5: torus needs minor < major (got minor 1, major 1)");
  EXPECT_EQ(parse_error("add sphere center 0 0 0 radius 1 color #12345\n"),
            "s.csg:1:40: expected a colour #RRGGBB or three integers 0-255 after 'color', got '#12345'");
  EXPECT_EQ(parse_error("add sphere center 0 0 0 radius 1 color 1 2 256\n"),
            "s.csg:1:44: expected an integer from 0 to 255 after 'color', got '256'");
  EXPECT_EQ(parse_error("add sphere center 0 0 0 radius 1 material -1\n"),
            "s.csg:1:43: expected an integer from 0 to 65535 after 'material', got '-1'");
  EXPECT_EQ(parse_error("# only comments\n\n"),
            "s.csg: no primitives (expected lines like 'add sphere center 0 0 0 radius 1')");
  TempDir dir;
  try {
    load_csg(dir.file("missing.csg"));
    ADD_FAILURE();
  } catch (const Error& e) {
    // The message every input file gets (check_input_file).
    EXPECT_EQ(std::string(e.what()), dir.file("missing.csg") + ": No such file or directory");
  }
  write_text(dir.file("empty.csg"), "");
  EXPECT_THROW(load_csg(dir.file("empty.csg")), Error);
  // A UTF-8 byte-order mark (Windows editors write one) is not part of the first line.
  write_text(dir.file("mark.csg"), "\xEF\xBB\xBF# a comment\nadd sphere center 0 0 0 radius 1\n");
  EXPECT_EQ(load_csg(dir.file("mark.csg")).prims.size(), 1u);
  write_text(dir.file("mac.csg"), "add sphere center 0 0 0 radius 1\radd box center 0 0 0 size 1 1 1\r");
  EXPECT_EQ(load_csg(dir.file("mac.csg")).prims.size(), 2u);
}

// ---- sampling ---------------------------------------------------------------------------------

// Signed-distance-like residual of a point on the primitive's surface (0 on it).
double surface_residual(const CsgPrimitive& p, const Vec3f& x) {
  double d[3] = {double(x.x) - p.center[0], double(x.y) - p.center[1], double(x.z) - p.center[2]};
  double q[3] = {d[0], d[1], d[2]};
  if (p.rotated)
    for (int r = 0; r < 3; ++r) q[r] = p.rot[3 * r] * d[0] + p.rot[3 * r + 1] * d[1] + p.rot[3 * r + 2] * d[2];
  switch (CsgShape(p.shape)) {
    case CsgShape::kSphere: return std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]) - p.a;
    case CsgShape::kBox:
      return std::max({std::fabs(q[0]) - p.a, std::fabs(q[1]) - p.b, std::fabs(q[2]) - p.c});
    case CsgShape::kCylinder:
      return std::max(std::sqrt(q[0] * q[0] + q[1] * q[1]) - p.a, std::fabs(q[2]) - p.c);
    case CsgShape::kCapsule: {
      const double t = q[2] - std::clamp(q[2], -double(p.c), double(p.c));
      return std::sqrt(q[0] * q[0] + q[1] * q[1] + t * t) - p.a;
    }
    case CsgShape::kTorus: {
      const double s = std::sqrt(q[0] * q[0] + q[1] * q[1]) - p.a;
      return std::sqrt(s * s + q[2] * q[2]) - p.b;
    }
  }
  return 1e9;
}

TEST(CsgSampling, SamplesLieOnTheSurfaceWithUnitNormalsDeterministically) {
  const CsgScript s = mixed_script();
  const CsgSamples a = sample_csg(s, {4000}, 100000000);
  const CsgSamples b = sample_csg(s, {4000}, 100000000);
  ASSERT_EQ(a.positions.size(), b.positions.size());
  EXPECT_EQ(0, std::memcmp(a.positions.data(), b.positions.data(), a.positions.size() * sizeof(Vec3f)));
  EXPECT_EQ(0, std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(SampleParams)));
  ASSERT_EQ(a.begin.size(), s.prims.size() + 1);
  for (size_t k = 0; k < s.prims.size(); ++k) {
    const CsgPrimitive& p = s.prims[k];
    const uint64_t n = a.begin[k + 1] - a.begin[k];
    EXPECT_EQ(n, csg_sample_count(p, 4000));
    EXPECT_NEAR(double(n), csg_area(p) * 4000, 4.0) << k;
    for (uint64_t i = a.begin[k]; i < a.begin[k + 1]; ++i) {
      ASSERT_EQ(a.params[i].prim, k);
      ASSERT_NEAR(surface_residual(p, a.positions[i]), 0.0, 2e-6) << "primitive " << k << " sample " << i;
      const Vec3f nn = a.params[i].normal;
      ASSERT_NEAR(std::sqrt(nn.x * nn.x + nn.y * nn.y + nn.z * nn.z), 1.0, 1e-6);
      // Outward for add, inward for sub: a step along the normal leaves (add) or enters (sub).
      const Vec3f out{a.positions[i].x + 1e-3f * nn.x, a.positions[i].y + 1e-3f * nn.y, a.positions[i].z + 1e-3f * nn.z};
      ASSERT_EQ(surface_residual(p, out) > 0, p.subtract == 0) << "primitive " << k << " sample " << i;
    }
  }
}

TEST(CsgSampling, AreaUniform) {
  const CsgScript s = parse_csg("add sphere center 0 0 0 radius 1\nadd torus center 5 0 0 major 1 minor 0.5\n", "u.csg");
  const CsgSamples a = sample_csg(s, {20000}, 100000000);
  // Sphere: equal area above and below any plane through the centre, and in each octant.
  std::array<int, 8> oct{};
  for (uint64_t i = a.begin[0]; i < a.begin[1]; ++i) {
    const Vec3f p = a.positions[i];
    ++oct[(p.x > 0) | ((p.y > 0) << 1) | ((p.z > 0) << 2)];
  }
  const double per = double(a.begin[1]) / 8;
  for (int o = 0; o < 8; ++o) EXPECT_NEAR(oct[o], per, per * 0.01) << o;
  // Torus: the outer half (distance from the axis > major) holds (pi R + 2 r) / (2 pi R) of the area.
  uint64_t outer = 0;
  for (uint64_t i = a.begin[1]; i < a.begin[2]; ++i) {
    const double x = a.positions[i].x - 5, y = a.positions[i].y;
    outer += x * x + y * y > 1.0;
  }
  const double expect = (M_PI * 1 + 2 * 0.5) / (2 * M_PI * 1);
  EXPECT_NEAR(double(outer) / double(a.begin[2] - a.begin[1]), expect, 0.005);
}

TEST(CsgSampling, RefusesMoreSamplesThanTheLimit) {
  const CsgScript s = parse_csg("add sphere center 0 0 0 radius 1000\n", "big.csg");
  try {
    sample_csg(s, {1e6}, 1000000);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("big.csg: "), std::string::npos);
  }
}

// ---- keep rules -------------------------------------------------------------------------------

// The seed's process, one primitive per step, written independently of csg_keep_cpu: a list of live
// samples; each primitive removes the live samples inside it (mode A) and appends its own samples
// that pass B.1 / B.2 against the earlier primitives.
CsgSamples seed_process(const CsgScript& s, const CsgSamples& samples) {
  std::vector<uint64_t> live;
  for (uint32_t k = 0; k < s.prims.size(); ++k) {
    std::vector<uint64_t> next;
    for (uint64_t i : live)
      if (!csg_inside(s.prims[k], samples.positions[i])) next.push_back(i);
    for (uint64_t i = samples.begin[k]; i < samples.begin[k + 1]; ++i) {
      int hit = -1;
      for (int j = int(k) - 1; j >= 0 && hit < 0; --j)
        if (csg_inside(s.prims[size_t(j)], samples.positions[i])) hit = j;
      const bool inside = hit >= 0 && !s.prims[size_t(hit)].subtract;
      if (s.prims[k].subtract ? inside : !inside) next.push_back(i);
    }
    live = next;
  }
  CsgSamples out;
  for (uint64_t i : live) {
    out.positions.push_back(samples.positions[i]);
    out.params.push_back(samples.params[i]);
  }
  return out;
}

void expect_same_samples(const CsgSamples& a, const CsgSamples& b, const std::string& what) {
  ASSERT_EQ(a.positions.size(), b.positions.size()) << what;
  EXPECT_EQ(0, std::memcmp(a.positions.data(), b.positions.data(), a.positions.size() * sizeof(Vec3f))) << what;
  EXPECT_EQ(0, std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(SampleParams))) << what;
}

TEST(CsgKeep, CpuEqualsTheSeedsStepByStepProcess) {
  for (const CsgScript& s : {mixed_script(), example("drilled_cube.csg"), example("gear.csg")}) {
    const CsgSamples samples = sample_csg(s, {3000}, 100000000);
    CsgStats st;
    const CsgSamples kept = csg_keep_cpu(s, samples, &st);
    expect_same_samples(kept, seed_process(s, samples), s.source);
    EXPECT_EQ(st.kept, kept.positions.size());
    EXPECT_GT(kept.positions.size(), 0u);
    EXPECT_LT(kept.positions.size(), samples.positions.size());
    // begin[] counts the kept samples per primitive.
    for (size_t k = 0; k < s.prims.size(); ++k)
      for (uint64_t i = kept.begin[k]; i < kept.begin[k + 1]; ++i) ASSERT_EQ(kept.params[i].prim, k);
  }
}

TEST(CsgKeep, KeptSamplesLieOnTheSolidsBoundary) {
  const CsgScript s = mixed_script();
  const CsgSamples kept = csg_keep_cpu(s, sample_csg(s, {3000}, 100000000));
  const uint32_t n = uint32_t(s.prims.size());
  size_t checked = 0;
  for (size_t i = 0; i < kept.positions.size(); i += 7) {
    const Vec3f p = kept.positions[i], nn = kept.params[i].normal;
    const float e = 2e-3f;
    const Vec3f out{p.x + e * nn.x, p.y + e * nn.y, p.z + e * nn.z}, in{p.x - e * nn.x, p.y - e * nn.y, p.z - e * nn.z};
    // Just outside along the normal is outside the solid and just inside is inside, except near edges
    // where another surface is within e: count the exceptions.
    checked += csg_solid_inside(s.prims.data(), n, in) && !csg_solid_inside(s.prims.data(), n, out);
  }
  EXPECT_GT(double(checked), 0.97 * double((kept.positions.size() + 6) / 7));
}

TEST(CsgKeep, PointCloudCarriesColourMaterialAndPrimitive) {
  const CsgScript s = mixed_script();
  const CsgSamples kept = csg_keep_cpu(s, sample_csg(s, {2000}, 100000000));
  const PointCloud pc = csg_point_cloud(s, kept);
  ASSERT_EQ(pc.size(), kept.positions.size());
  for (size_t i = 0; i < pc.size(); ++i) {
    const CsgPrimitive& p = s.prims[pc.ids[i]];
    ASSERT_EQ((uint32_t(pc.colors[i].r) << 16) | (uint32_t(pc.colors[i].g) << 8) | pc.colors[i].b, p.rgb);
    ASSERT_EQ(pc.materials[i], p.material);
  }
}

// ---- the solid --------------------------------------------------------------------------------

TEST(CsgSolid, CpuGridEqualsADirectVoxelLoop) {
  const CsgScript s = mixed_script();
  GridOptions go;
  go.resolution = 45;  // not a multiple of the brick size
  go.pad = 1;
  const GridSpec spec = make_grid_spec(s.bounds(), go);
  const SparseGrid solid = csg_solid_cpu(s, spec);
  solid.validate();
  SparseGrid g = solid;
  g.expand_runs();  // the interior as bricks
  std::map<std::tuple<int, int, int>, bool> active;
  g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) { active[{i, j, k}] = true; });
  const GridView view = GridView::make(spec);
  size_t inside = 0;
  for (int i = 0; i < spec.dims.x; ++i)
    for (int j = 0; j < spec.dims.y; ++j)
      for (int k = 0; k < spec.dims.z; ++k) {
        const bool in = csg_solid_inside(s.prims.data(), uint32_t(s.prims.size()), view.center(i, j, k));
        inside += in;
        ASSERT_EQ(in, active.count({i, j, k}) == 1) << i << " " << j << " " << k;
      }
  EXPECT_EQ(inside, g.active_voxels());
  // A lone sphere fills its volume.
  const CsgScript ball = parse_csg("add sphere center 0 0 0 radius 1\n", "ball.csg");
  GridOptions bo;
  bo.resolution = 100;
  const GridSpec bs = make_grid_spec(ball.bounds(), bo);
  const double volume = double(csg_solid_cpu(ball, bs).active_voxels()) * bs.voxel_size.x * bs.voxel_size.y * bs.voxel_size.z;
  EXPECT_NEAR(volume, 4.0 / 3.0 * M_PI, 0.01);
}

// ---- mesh sampling ----------------------------------------------------------------------------

TEST(MeshSampling, AreaUniformStratifiedAndDeterministic) {
  // Two triangles of areas 1 and 3 (right triangles in the z = 0 and z = 1 planes).
  Mesh m = test::single_triangle({0, 0, 0}, {1, 0, 0}, {0, 2, 0});
  test::append_mesh(m, test::single_triangle({0, 0, 1}, {3, 0, 1}, {0, 2, 1}));
  const PointCloud a = sample_mesh(m, 4000), b = sample_mesh(m, 4000);
  ASSERT_EQ(a.size(), 4000u);
  EXPECT_EQ(0, std::memcmp(a.positions.data(), b.positions.data(), a.size() * sizeof(Vec3f)));
  size_t first = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const Vec3f p = a.positions[i];
    const uint32_t t = a.ids[i];
    ASSERT_EQ(p.z, t == 0 ? 0.f : 1.f);
    const float w = t == 0 ? 1.f : 3.f;
    ASSERT_GE(p.x, 0.f);
    ASSERT_GE(p.y, 0.f);
    ASSERT_LE(p.x / w + p.y / 2, 1.f + 1e-6f);
    ASSERT_FLOAT_EQ(std::fabs(a.normals[i].z), 1.f);
    first += t == 0;
  }
  EXPECT_NEAR(double(first), 1000.0, 1.0);  // stratified: exact up to rounding
  // Quadrant balance inside the big triangle.
  EXPECT_TRUE(a.colors.empty());
}

TEST(MeshSampling, LoadedMeshColoursAndNormals) {
  const MeshLoadResult r = load_mesh(test::data_path("formats/ply/color_mesh_binary_rgba.ply"));
  ASSERT_FALSE(r.mesh.colors.empty());
  const PointCloud pc = sample_mesh(r.mesh, 1000);
  ASSERT_EQ(pc.colors.size(), 1000u);
  std::set<uint32_t> distinct;
  for (const Rgb8& c : pc.colors) distinct.insert((uint32_t(c.r) << 16) | (uint32_t(c.g) << 8) | c.b);
  EXPECT_GT(distinct.size(), 1u);
}

TEST(MeshSampling, TextureColoursForEmbeddedAndExternalTextures) {
  for (const char* file : {"formats/gltf/Duck.glb", "formats/gltf/BoxTextured/BoxTextured.gltf",
                           "formats/gltf/BoxTextured-Embedded.gltf"}) {
    EXPECT_TRUE(load_mesh(test::data_path(file)).mesh.material_textures.empty()) << file;  // not asked for
    const MeshLoadResult r = load_mesh(test::data_path(file), true);
    ASSERT_FALSE(r.mesh.material_textures.empty()) << file;
    std::set<uint32_t> texels;
    for (const Texture& t : r.mesh.material_textures) {
      if (t.empty()) continue;
      ASSERT_EQ(t.rgb.size(), size_t(t.width) * size_t(t.height) * 3);
      for (size_t i = 0; i < t.rgb.size(); i += 3) texels.insert((uint32_t(t.rgb[i]) << 16) | (uint32_t(t.rgb[i + 1]) << 8) | t.rgb[i + 2]);
    }
    ASSERT_GT(texels.size(), 10u) << file;
    const PointCloud pc = sample_mesh(r.mesh, 5000);
    ASSERT_EQ(pc.colors.size(), 5000u);
    std::set<uint32_t> seen;
    for (const Rgb8& c : pc.colors) {
      const uint32_t rgb = (uint32_t(c.r) << 16) | (uint32_t(c.g) << 8) | c.b;
      ASSERT_EQ(texels.count(rgb), 1u) << file << ": a sampled colour that is no texel";
      seen.insert(rgb);
    }
    EXPECT_GT(seen.size(), 10u) << file;
  }
  // Nearest texel, repeating, v up.
  Texture t;
  t.width = 2;
  t.height = 2;
  t.rgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255};  // top row red green, bottom row blue white
  EXPECT_EQ(t.lookup(0.25f, 0.75f), 0xFF0000u);
  EXPECT_EQ(t.lookup(0.75f, 0.75f), 0x00FF00u);
  EXPECT_EQ(t.lookup(0.25f, 0.25f), 0x0000FFu);
  EXPECT_EQ(t.lookup(1.75f, -0.75f), 0xFFFFFFu);
}

// ---- points to voxels -------------------------------------------------------------------------

PointCloud random_cloud(size_t n, unsigned seed, bool colors, bool normals) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  PointCloud pc;
  for (size_t i = 0; i < n; ++i) {
    // Clustered, so that voxels hold many points.
    const float c = float(i % 17) / 17.f;
    pc.positions.push_back({c + 0.05f * u(rng), 0.3f * u(rng), c * c + 0.1f * u(rng)});
    if (colors) pc.colors.push_back({uint8_t(rng()), uint8_t(rng()), uint8_t(rng())});
    if (normals) {
      Vec3f nn{u(rng), u(rng), u(rng)};
      const float l = std::sqrt(nn.x * nn.x + nn.y * nn.y + nn.z * nn.z);
      pc.normals.push_back({nn.x / l, nn.y / l, nn.z / l});
    }
  }
  return pc;
}

GridSpec cloud_grid(const PointCloud& pc, int res) {
  Bounds b;
  for (const Vec3f& p : pc.positions) b.extend({p.x, p.y, p.z});
  GridOptions o;
  o.resolution = res;
  return make_grid_spec(b, o);
}

TEST(PointBinning, CountsAndMeansMatchADirectMapAndIgnoreOrder) {
  const PointCloud pc = random_cloud(20000, 5, true, true);
  const GridSpec spec = cloud_grid(pc, 37);
  const VoxelBins bins = bin_points_cpu(pc, spec);
  EXPECT_EQ(bins.outside, 0u);
  // Direct: floor((p - origin) / size) per axis.
  std::map<std::tuple<int, int, int>, std::pair<int, std::array<double, 3>>> direct;
  for (size_t i = 0; i < pc.size(); ++i) {
    const Vec3f p = pc.positions[i];
    int v[3];
    const double c[3] = {p.x, p.y, p.z}, o[3] = {spec.origin.x, spec.origin.y, spec.origin.z},
                 s[3] = {spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z};
    const int d[3] = {spec.dims.x, spec.dims.y, spec.dims.z};
    for (int a = 0; a < 3; ++a) v[a] = std::min(int(std::floor((c[a] - o[a]) / s[a])), d[a] - 1);
    auto& e = direct[{v[0], v[1], v[2]}];
    ++e.first;
    e.second[0] += pc.colors[i].r;
  }
  const std::vector<SparseGrid> grids = bins_to_grids(bins, spec, {"count", "color", "normal", "occupancy"});
  ASSERT_EQ(grids.size(), 4u);
  for (const SparseGrid& g : grids) g.validate();
  EXPECT_EQ(grids[0].active_voxels(), direct.size());
  grids[0].for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int, uint64_t at) {
    const auto it = direct.find({i, j, k});
    ASSERT_NE(it, direct.end());
    ASSERT_EQ(grids[0].ivalues[at], it->second.first);
    ASSERT_NEAR(grids[1].fvalues[at * 3], it->second.second[0] / 255.0 / it->second.first, 1e-6);
  });
  // Any order of the points gives the same bytes.
  PointCloud shuffled = pc;
  std::vector<size_t> perm(pc.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), std::mt19937(9));
  for (size_t i = 0; i < perm.size(); ++i) {
    shuffled.positions[i] = pc.positions[perm[i]];
    shuffled.colors[i] = pc.colors[perm[i]];
    shuffled.normals[i] = pc.normals[perm[i]];
  }
  const std::vector<SparseGrid> again = bins_to_grids(bin_points_cpu(shuffled, spec), spec, {"count", "color", "normal"});
  for (size_t g = 0; g < again.size(); ++g) EXPECT_EQ(again[g].checksum(), grids[g].checksum()) << g;
}

TEST(PointBinning, PointsOutsideAreCountedAndValuesValidated) {
  PointCloud pc = random_cloud(5000, 6, false, false);
  GridOptions o;
  o.bbox = test::make_bounds(0, -1, 0, 1, 1, 1);
  o.resolution = 16;
  const GridSpec spec = make_grid_spec(o.bbox.value(), o);
  const VoxelBins bins = bin_points_cpu(pc, spec);
  uint64_t outside = 0;
  for (const Vec3f& p : pc.positions) outside += !(p.x >= 0 && p.x <= 1 && p.y >= -1 && p.y <= 1 && p.z >= 0 && p.z <= 1);
  EXPECT_EQ(bins.outside, outside);
  uint64_t total = 0;
  for (uint32_t c : bins.counts) total += c;
  EXPECT_TRUE(bins.sums.empty());
  EXPECT_EQ(total + outside, pc.size());
  EXPECT_THROW(parse_point_values("color", false, true), Error);
  EXPECT_THROW(parse_point_values("count,count", false, false), Error);
  EXPECT_THROW(parse_point_values("density", false, false), Error);
  EXPECT_EQ(parse_point_values("auto", true, false), (std::vector<std::string>{"count", "color"}));
}

// ---- point cloud files ------------------------------------------------------------------------

TEST(PointFiles, PlyRoundTripAndTextFormats) {
  TempDir dir;
  const PointCloud pc = random_cloud(1000, 7, true, true);
  write_point_cloud_ply(pc, dir.file("a.ply"), {{"source", "test"}});
  EXPECT_TRUE(is_point_cloud_file(dir.file("a.ply")));
  EXPECT_FALSE(is_point_cloud_file(test::data_path("formats/ply/cube_binary.ply")));
  const PointCloud back = read_point_cloud(dir.file("a.ply"));
  ASSERT_EQ(back.size(), pc.size());
  EXPECT_EQ(0, std::memcmp(back.positions.data(), pc.positions.data(), pc.size() * sizeof(Vec3f)));
  EXPECT_EQ(0, std::memcmp(back.normals.data(), pc.normals.data(), pc.size() * sizeof(Vec3f)));
  EXPECT_EQ(0, std::memcmp(back.colors.data(), pc.colors.data(), pc.size() * sizeof(Rgb8)));

  // ASCII PLY with float colours and a NaN point; big-endian binary.
  write_text(dir.file("b.ply"),
             "ply\nformat ascii 1.0\nelement vertex 3\nproperty double x\nproperty double y\nproperty double z\n"
             "property float red\nproperty float green\nproperty float blue\nend_header\n"
             "1 2 3 1 0 0.5\nnan 0 0 0 0 0\n4 5 6 0 1 0\n");
  const PointCloud b = read_point_cloud(dir.file("b.ply"));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b.dropped_nonfinite, 1u);
  EXPECT_EQ(b.colors[0].b, 128);
  EXPECT_EQ(b.positions[1].z, 6.f);
  {
    std::string be = "ply\nformat binary_big_endian 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\nend_header\n";
    for (float v : {1.f, 2.f, 3.f, -1.f, -2.f, -3.f}) {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      for (int s = 24; s >= 0; s -= 8) be += char((u >> s) & 0xFF);
    }
    write_text(dir.file("be.ply"), be);
    const PointCloud c = read_point_cloud(dir.file("be.ply"));
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c.positions[1].y, -2.f);
    write_text(dir.file("trunc.ply"), be.substr(0, be.size() - 5));
    try {
      read_point_cloud(dir.file("trunc.ply"));
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), dir.file("trunc.ply") + ": truncated: the header declares 2 vertices, the file holds 1");
    }
  }
  write_text(dir.file("c.xyz"), "# x y z r g b\n0 0 0 255 0 0\n1,1,1,0,255,0\n");
  const PointCloud c = read_point_cloud(dir.file("c.xyz"));
  ASSERT_EQ(c.colors.size(), 2u);
  EXPECT_TRUE(c.normals.empty());
  EXPECT_EQ(c.colors[1].g, 255);
  write_text(dir.file("n.xyz"), "0 0 0 0 0 1\n1 1 1 0.5 0.5 0.70710678\n");
  EXPECT_EQ(read_point_cloud(dir.file("n.xyz")).normals.size(), 2u);
  write_text(dir.file("d.pts"), "2\n0 0 0 10 1 2 3\n1 1 1 20 4 5 6\n");
  const PointCloud d = read_point_cloud(dir.file("d.pts"));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.colors[1].b, 6);
  write_text(dir.file("bad.xyz"), "0 0 0\n1 1\n");
  try {
    read_point_cloud(dir.file("bad.xyz"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("bad.xyz") + ":2: expected 3 values like the first point, got 2");
  }
  write_text(dir.file("nan.xyz"), "nan 0 0\ninf 1 1\n");
  try {
    read_point_cloud(dir.file("nan.xyz"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("nan.xyz") + ": no usable points (2 with NaN/Inf coordinates)");
  }
  write_text(dir.file("empty.xyz"), "");
  EXPECT_THROW(read_point_cloud(dir.file("empty.xyz")), Error);
  // A UTF-8 byte-order mark, and UTF-16 (io/files.h plain_text): the same points.
  write_text(dir.file("mark.xyz"), "\xEF\xBB\xBF" "0 0 0 255 0 0\n1,1,1,0,255,0\n");
  const PointCloud m = read_point_cloud(dir.file("mark.xyz"));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.colors[0].r, 255);
  write_text(dir.file("u16.pts"), std::string("\xFF\xFE" "1\0\n\0" "2\0 \0" "3\0 \0" "4\0\n\0", 18));
  const PointCloud u = read_point_cloud(dir.file("u16.pts"));
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u.positions[0].z, 4.0f);
  // Lines ended by '\r' alone (classic Mac OS): three points, not one of nine columns.
  write_text(dir.file("mac.xyz"), "0 0 0\r1 1 1\r2 2 2\r");
  EXPECT_EQ(read_point_cloud(dir.file("mac.xyz")).size(), 3u);

  // Real files: CloudCompare x y z r g b a, binary PLY with diffuse colours and normals, PLY with
  // vertices and no faces.
  const PointCloud cc = read_point_cloud(test::data_path("points/points_cloudcompare.xyz"));
  ASSERT_EQ(cc.size(), 101u);
  EXPECT_EQ(cc.colors[0].r, 117);
  EXPECT_EQ(cc.colors[0].b, 49);
  EXPECT_NEAR(cc.positions[0].x, 665187.5, 0.1);
  const PointCloud pond = read_point_cloud(test::data_path("points/pond.0.ply"));
  EXPECT_EQ(pond.size(), 70051u);
  EXPECT_EQ(pond.normals.size(), 70051u);
  EXPECT_EQ(pond.colors.size(), 70051u);
  EXPECT_TRUE(is_point_cloud_file(test::data_path("edge/ply_points_bin.ply")));
  EXPECT_EQ(read_point_cloud(test::data_path("edge/ply_points_bin.ply")).size(), 8u);
}

// ---- CLI --------------------------------------------------------------------------------------

// ASCII PLY clouds are parsed on all cores: the same points as the binary file of the same values
// (an element before the vertices skipped, CRLF lines, NaN points left out in order), and the first
// bad record's message whatever the chunk it lies in.
TEST(PointFiles, AsciiPlyCloudsParsedInParallelMatchBinary) {
  TempDir dir;
  PointCloud pc = random_cloud(200000, 11, true, true);
  pc.positions[123457].y = std::numeric_limits<float>::quiet_NaN();
  write_point_cloud_ply(pc, dir.file("bin.ply"), {});
  const std::string head =
      "ply\r\nformat ascii 1.0\r\nelement camera 2\r\nproperty float f\r\nelement vertex 200000\r\nproperty float x\r\n"
      "property float y\r\nproperty float z\r\nproperty float nx\r\nproperty float ny\r\nproperty float nz\r\n"
      "property uchar red\r\nproperty uchar green\r\nproperty uchar blue\r\nend_header\r\n1.5\r\n2.5\r\n";
  std::vector<std::string> rows(pc.size());
  for (size_t i = 0; i < pc.size(); ++i) {
    char line[256];
    const Vec3f& p = pc.positions[i];
    const Vec3f& n = pc.normals[i];
    std::snprintf(line, sizeof line, "%.9g %.9g %.9g %.9g %.9g %.9g %d %d %d\r\n", p.x, p.y, p.z, n.x, n.y, n.z,
                  pc.colors[i].r, pc.colors[i].g, pc.colors[i].b);
    rows[i] = line;
  }
  auto body = [&](size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i) s += rows[i];
    return s;
  };
  write_text(dir.file("a.ply"), head + body(0, pc.size()));
  const PointCloud a = read_point_cloud(dir.file("a.ply")), b = read_point_cloud(dir.file("bin.ply"));
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.size(), pc.size() - 1);
  EXPECT_EQ(a.dropped_nonfinite, 1u);
  EXPECT_EQ(0, std::memcmp(a.positions.data(), b.positions.data(), a.size() * sizeof(Vec3f)));
  EXPECT_EQ(0, std::memcmp(a.normals.data(), b.normals.data(), a.size() * sizeof(Vec3f)));
  EXPECT_EQ(0, std::memcmp(a.colors.data(), b.colors.data(), a.size() * sizeof(Rgb8)));
  // Problems: the first in record order is named (two bad records far apart), a blank line is a
  // record with too few values, and a short file is truncated.
  auto message = [&](const std::string& text) {
    write_text(dir.file("bad.ply"), text);
    try {
      read_point_cloud(dir.file("bad.ply"));
    } catch (const Error& e) {
      return std::string(e.what()).substr(dir.file("bad.ply").size());
    }
    return std::string("read");
  };
  EXPECT_EQ(
      message(head + body(0, 150000) + "1 2 x 0 0 1 0 0 0\n" + body(150001, 190000) + "1 2\n" + body(190001, 200000)),
      ": vertex 150000: not a number: 'x'");
  EXPECT_EQ(message(head + body(0, 1000) + "\n" + body(1001, 200000)), ": vertex 1000: too few values");
  EXPECT_EQ(message(head + body(0, 5000)), ": truncated: 5000 of 200000 vertices");
  EXPECT_EQ(message(head.substr(0, head.find("1.5"))), ": truncated: 0 of 200000 vertices");
  // strtod's reading of a token: a number at its start is taken, as before.
  write_text(dir.file("p.ply"),
             "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
             "property float z\nend_header\n+1 0x10 2.5abc\n");
  const PointCloud p = read_point_cloud(dir.file("p.ply"));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.positions[0].x, 1.f);
  EXPECT_EQ(p.positions[0].y, 16.f);
  EXPECT_EQ(p.positions[0].z, 2.5f);
}

TEST(PointsCli, CsgPointsSolidAndTheThreeConversions) {
  TempDir dir;
  const std::string script = test::data_path("csg/drilled_cube.csg");
  auto r = test::run_voxtile({"csg", script, "-o", dir.file("c.ply"), "-d", "cpu", "--spacing", "0.02", "--stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"points\":"), std::string::npos);
  const PointCloud pc = read_point_cloud(dir.file("c.ply"));
  const CsgScript s = load_csg(script);
  const PointCloud expect = csg_point_cloud(s, csg_keep_cpu(s, sample_csg(s, {2500}, 100000000)));
  ASSERT_EQ(pc.size(), expect.size());
  EXPECT_EQ(0, std::memcmp(pc.positions.data(), expect.positions.data(), pc.size() * sizeof(Vec3f)));

  r = test::run_voxtile({"csg", script, "--solid", "-r", "40", "-o", dir.file("solid.vdb"), "-d", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"csg", script, "-o", dir.file("c.vdb"), "-d", "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // points go to .ply
  write_text(dir.file("bad.csg"), "add sphere center 0 0 0 radius\n");
  r = test::run_voxtile({"csg", dir.file("bad.csg"), "-o", dir.file("x.ply")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("bad.csg:1:31: expected a positive number after 'radius'"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir.file("x.ply")));

  // mesh -> points -> voxels -> points.
  r = test::run_voxtile({"points", test::data_path("meshes/stanford_bunny.ply"), "-o", dir.file("pts.ply"), "--count", "50000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_point_cloud(dir.file("pts.ply")).size(), 50000u);
  r = test::run_voxtile({"points", dir.file("pts.ply"), "-o", dir.file("bins.vdb"), "-r", "32", "-d", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"points", dir.file("pts.ply"), "-o", dir.file("down.ply"), "-r", "32", "-d", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"points", dir.file("bins.vdb"), "-o", dir.file("centres.ply")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"compare", dir.file("centres.ply"), dir.file("down.ply")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = test::run_voxtile({"points", dir.file("pts.ply"), "-o", dir.file("count.npy"), "-r", "16", "-d", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"points", test::data_path("points/pond.0.ply"), "-o", dir.file("pond.vdb"), "-r", "64",
                         "--stats", "-d", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"name\":\"color\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"name\":\"normal\""), std::string::npos) << r.out;
  r = test::run_voxtile({"points", test::data_path("meshes/stanford_bunny.ply"), "-o", dir.file("m.vdb")});
  EXPECT_EQ(r.exit_code, 2);
  write_text(dir.file("nan.xyz"), "nan 0 0\n");
  r = test::run_voxtile({"points", dir.file("nan.xyz"), "-o", dir.file("n.vdb")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(test::file_exists(dir.file("n.vdb")));
}

// .xyz output: the same points, colours and normals as .ply, read back bit for bit; grids of values
// other than colours and normals are refused before anything is written.
TEST(PointsCli, XyzOutputReadsBackAsThePlyOutput) {
  TempDir dir;
  auto same = [](const PointCloud& a, const PointCloud& b) {
    EXPECT_EQ(a.size(), b.size());
    EXPECT_EQ(a.normals.size(), b.normals.size());
    EXPECT_EQ(a.colors.size(), b.colors.size());
    EXPECT_TRUE(same_bytes(a.positions, b.positions));
    EXPECT_TRUE(same_bytes(a.normals, b.normals));
    EXPECT_TRUE(same_bytes(a.colors, b.colors));
  };
  const std::string duck = test::data_path("formats/gltf/Duck.glb"), pond = test::data_path("points/pond.0.ply");
  // mesh -> samples (positions, normals, texture colours)
  for (const char* ext : {"ply", "xyz"}) {
    const auto r = test::run_voxtile({"points", duck, "-o", dir.file(std::string("s.") + ext), "--count", "20000"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const PointCloud samples = read_point_cloud(dir.file("s.xyz"));
  EXPECT_EQ(samples.size(), 20000u);
  EXPECT_FALSE(samples.colors.empty());
  same(samples, read_point_cloud(dir.file("s.ply")));
  // points -> voxel-downsampled cloud (mean colours and normals), and a .vdb's voxel centres
  for (const char* ext : {"ply", "xyz"}) {
    const auto r = test::run_voxtile({"points", pond, "-o", dir.file(std::string("d.") + ext), "-r", "64", "-d", "cpu",
                                      "--values", "occupancy,color,normal"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  same(read_point_cloud(dir.file("d.xyz")), read_point_cloud(dir.file("d.ply")));
  auto r = test::run_voxtile({"points", pond, "-o", dir.file("auto.xyz"), "-r", "64", "-d", "cpu"});  // auto: no count
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(dir.file("auto.xyz")), test::read_file(dir.file("d.xyz")));
  ASSERT_EQ(test::run_voxtile({"points", pond, "-o", dir.file("d.vdb"), "-r", "64", "-d", "cpu", "--values",
                               "color,normal"})
                .exit_code,
            0);
  r = test::run_voxtile({"points", dir.file("d.vdb"), "-o", dir.file("c.xyz")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(dir.file("c.xyz")), test::read_file(dir.file("d.xyz")));
  // voxel centres of a binary voxelization: the .ply's points
  for (const char* ext : {"ply", "xyz"}) {
    r = test::run_voxtile({"voxelize", duck, "-o", dir.file(std::string("v.") + ext), "-r", "24", "-d", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  same(read_point_cloud(dir.file("v.xyz")), read_point_cloud(dir.file("v.ply")));
  // values .xyz cannot hold
  r = test::run_voxtile({"voxelize", duck, "-o", dir.file("n.xyz"), "-r", "24", "-d", "cpu", "-t", "count"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("n.xyz: .xyz holds positions, colours and normals"), std::string::npos) << r.err;
  r = test::run_voxtile({"points", pond, "-o", dir.file("k.xyz"), "-r", "64", "-d", "cpu", "--values", "count"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not the 'count' grid"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir.file("n.xyz")));
  EXPECT_FALSE(test::file_exists(dir.file("k.xyz")));
}

// The CPU binning estimate --device auto compares with the GPU's start-up (cli/cmd_points.h).
TEST(PointsCli, CpuBinEstimateGrowsWithPointsAndShrinksWithThreads) {
  EXPECT_LT(estimated_cpu_bin_ms(1000, 1), estimated_cpu_bin_ms(1000000, 1));
  EXPECT_LT(estimated_cpu_bin_ms(1000000, 16), estimated_cpu_bin_ms(1000000, 2));
  EXPECT_LT(estimated_cpu_bin_ms(100000, 1), kSmallJobCpuMs);
  EXPECT_GT(estimated_cpu_bin_ms(100000000, 64), kSmallJobCpuMs);
}

// Every grid file gives its voxel centres; a grid file that keeps no voxel size or origin (.npy, .vox)
// is placed by --voxel-size and --bbox (points, mesh and preview alike), else its positions are in
// voxel units with a warning; the options that shape a mesh's grid are refused on grid files.
TEST(PointsCli, GridFilesGiveTheirVoxelsAndArePlacedByTheGridOptions) {
  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  for (const char* ext : {"vdb", "npy", "binvox", "vox"})
    ASSERT_EQ(test::run_voxtile({"voxelize", bunny, "-o", dir.file(std::string("v.") + ext), "-r", "16", "-d", "cpu"})
                  .exit_code,
              0);
  const GridFile vdb = read_grid_file(dir.file("v.vdb"));
  const GridSpec& spec = vdb.grids[0].spec;
  auto text = [](double v) {
    char b[40];
    std::snprintf(b, sizeof(b), "%.17g", v);
    return std::string(b);
  };
  const std::vector<std::string> place = {"--voxel-size",
                                          text(spec.voxel_size.x),
                                          "--bbox",
                                          text(spec.origin.x),
                                          text(spec.origin.y),
                                          text(spec.origin.z),
                                          "1e3",
                                          "1e3",
                                          "1e3"};
  auto run = [&](std::vector<std::string> args, bool placed) {
    if (placed) args.insert(args.end(), place.begin(), place.end());
    return test::run_voxtile(args);
  };
  // The .vdb's voxel centres and mesh against the .npy's placed where the .vdb is: the same.
  ASSERT_EQ(run({"points", dir.file("v.vdb"), "-o", dir.file("pv.ply")}, false).exit_code, 0);
  auto r = run({"points", dir.file("v.npy"), "-o", dir.file("pn.ply")}, true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("voxel units"), std::string::npos) << r.err;
  r = test::run_voxtile({"compare", dir.file("pv.ply"), dir.file("pn.ply")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(run({"mesh", dir.file("v.vdb"), "-o", dir.file("mv.ply"), "-d", "cpu"}, false).exit_code, 0);
  ASSERT_EQ(run({"mesh", dir.file("v.npy"), "-o", dir.file("mn.ply"), "-d", "cpu"}, true).exit_code, 0);
  EXPECT_EQ(test::read_file(dir.file("mv.ply")), test::read_file(dir.file("mn.ply")));
  // Unplaced: voxel units, said once.
  for (const char* in : {"v.npy", "v.vox"}) {
    r = run({"points", dir.file(in), "-o", dir.file("pu.ply")}, false);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(
        r.err.find(std::string(in) + ": ." + (in + 2) + " keeps no voxel size or origin: positions are in voxel units"),
        std::string::npos)
        << r.err;
    const GridFile pu = read_grid_file(dir.file("pu.ply"));
    EXPECT_EQ(pu.grids[0].spec.voxel_size.x, 1.0);
    EXPECT_EQ(pu.grids[0].spec.origin.z, 0.0);
    EXPECT_EQ(pu.grids[0].active_voxels(), vdb.grids[0].active_voxels());
  }
  // --bbox alone fits the voxel size to the box: 16 voxels along x over 0..8.
  ASSERT_EQ(
      test::run_voxtile({"points", dir.file("v.npy"), "-o", dir.file("pb.ply"), "--bbox", "0", "0", "0", "8", "8", "8"})
          .exit_code,
      0);
  EXPECT_EQ(read_grid_file(dir.file("pb.ply")).grids[0].spec.voxel_size.x, 0.5);
  // The binvox keeps its transform: its centres are the .vdb's.
  ASSERT_EQ(run({"points", dir.file("v.binvox"), "-o", dir.file("pbv.ply")}, false).exit_code, 0);
  EXPECT_EQ(read_grid_file(dir.file("pbv.ply")).grids[0].active_voxels(), vdb.grids[0].active_voxels());
  EXPECT_EQ(run({"preview", dir.file("v.npy"), "-o", dir.file("p.png"), "--size", "32", "-d", "cpu"}, true).exit_code,
            0);
  // Refused, with nothing written: placing a file that keeps its transform, shaping a grid file.
  for (const auto& [args, placed, message] : std::vector<std::tuple<std::vector<std::string>, bool, std::string>>{
           {{"points", dir.file("v.vdb"), "-o", dir.file("x.ply")}, true, "keeps its voxel size and origin"},
           {{"mesh", dir.file("v.binvox"), "-o", dir.file("x.ply")}, true, "keeps its voxel size and origin"},
           {{"mesh", dir.file("v.vdb"), "-o", dir.file("x.ply"), "-r", "32"}, false, "a grid file keeps its grid"},
           {{"points", dir.file("v.npy"), "-o", dir.file("x.ply"), "--pad", "1"}, false, "a grid file keeps its grid"},
           {{"preview", dir.file("v.npy"), "-o", dir.file("x.png"), "--dims", "4", "4", "4"},
            false,
            "a grid file keeps its grid"},
           {{"points", dir.file("v.npy"), "-o", dir.file("x.ply"), "--voxel-size", "0"},
            false,
            "v.npy: --voxel-size must be positive"},
           {{"points", dir.file("v.npy"), "-o", dir.file("x.vdb")}, false, "voxels -> points writes"}}) {
    r = run(args, placed);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << message;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(test::file_exists(dir.file("x.ply")) || test::file_exists(dir.file("x.png")) ||
                 test::file_exists(dir.file("x.vdb")));
  }
}

// ---- GPU --------------------------------------------------------------------------------------

void expect_same_bins(const VoxelBins& a, const VoxelBins& b) {
  EXPECT_EQ(a.outside, b.outside);
  ASSERT_TRUE(a.keys == b.keys);
  ASSERT_TRUE(a.counts == b.counts);
  ASSERT_EQ(a.sums.size(), b.sums.size());
  ASSERT_EQ(0, std::memcmp(a.sums.data(), b.sums.data(), a.sums.size() * sizeof(VoxelAcc)));
  ASSERT_TRUE(a.classes == b.classes);
}

class GpuPointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuInfo info = query_gpu();
    if (!info.available) GTEST_SKIP() << "no GPU: " << info.reason;
  }
};

// --device auto: a cloud the CPU bins before the GPU has started is binned there (the same file);
// a larger one waits for the GPU. (One thread, so that the estimates do not depend on the machine.)
TEST_F(GpuPointsTest, AutoBinsSmallCloudsOnTheCpuWhileTheGpuStarts) {
  test::TempDir dir;
  auto r = test::run_voxtile({"points", test::data_path("meshes/stanford_bunny.ply"), "-o", dir.file("big.ply"), "--count",
                              "2000000", "-d", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& cloud : {test::data_path("points/pond.0.ply"), dir.file("big.ply")}) {
    SCOPED_TRACE(cloud);
    const bool small = cloud != dir.file("big.ply");
    auto a = test::run_voxtile({"points", cloud, "-o", dir.file("a.vdb"), "-r", "256", "--stats", "-v", "--threads", "1"});
    auto g = test::run_voxtile({"points", cloud, "-o", dir.file("g.vdb"), "-r", "256", "-d", "gpu"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(a.out.find("\"device\":\"cpu\"") != std::string::npos, small) << a.out;
    EXPECT_EQ(a.err.find("binned on the CPU (estimated") != std::string::npos, small) << a.err;
    EXPECT_EQ(test::read_file(dir.file("a.vdb")), test::read_file(dir.file("g.vdb")));
  }
}

TEST_F(GpuPointsTest, CompactionPrimitiveEdgeCases) {
  std::mt19937 rng(3);
  for (uint64_t n : {0ull, 1ull, 31ull, 32ull, 33ull, 1023ull, 1024ull, 1025ull, 100007ull, 3000001ull}) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      std::vector<uint8_t> keep(n);
      for (uint64_t i = 0; i < n; ++i)
        keep[i] = pattern == 0 ? 0 : pattern == 1 ? 1 : pattern == 2 ? uint8_t(rng() % 3 == 0) : uint8_t((i / 1000) & 1);
      std::vector<uint64_t> expect;
      for (uint64_t i = 0; i < n; ++i)
        if (keep[i]) expect.push_back(i);
      for (int method = 0; method < 3; ++method)
        ASSERT_EQ(gpu_select_indices(keep, ScanMethod(method)), expect) << "n " << n << " pattern " << pattern << " method " << method;
    }
  }
}

TEST_F(GpuPointsTest, CompactionOfMoreThan2To31Elements) {
  size_t free_b = 0;
  {
    const GpuInfo info = query_gpu();
    free_b = info.total_memory;
  }
  const uint64_t n = (uint64_t(1) << 31) + 12345;
  if (free_b < (uint64_t(8) << 30)) GTEST_SKIP() << "needs about 6 GB of GPU memory";
  for (int method : {0, 2}) {
    const CompactionCheck c = gpu_compaction_selftest(n, 32, 11, ScanMethod(method));
    EXPECT_EQ(c.kept, c.expected) << method;
    EXPECT_GT(c.kept, n / 9);
    EXPECT_EQ(c.errors, 0u) << method;
  }
}

TEST_F(GpuPointsTest, CsgEqualsCpuForEveryBatchSizeAndScan) {
  for (const CsgScript& s : {mixed_script(), example("drilled_cube.csg"), example("gear.csg")}) {
    const CsgSamples samples = sample_csg(s, {5000}, 100000000);
    const CsgSamples cpu = csg_keep_cpu(s, samples);
    for (int method = 0; method < 3; ++method) {
      GpuPoints gpu(0, ScanMethod(method));
      for (uint32_t batch : {0u, 1u, 2u, 3u}) {
        CsgStats st;
        const CsgSamples g = gpu.csg(s, samples, batch, &st);
        expect_same_samples(g, cpu, s.source + " batch " + std::to_string(batch) + " method " + std::to_string(method));
        EXPECT_EQ(g.begin, cpu.begin);
      }
    }
  }
}

TEST_F(GpuPointsTest, SolidEqualsCpuAcrossSlabs) {
  for (const CsgScript& s : {mixed_script(), example("gear.csg")}) {
    for (int res : {45, 130}) {
      GridOptions go;
      go.resolution = res;
      go.pad = 2;
      const GridSpec spec = make_grid_spec(s.bounds(), go);
      const SparseGrid cpu = csg_solid_cpu(s, spec);
      GpuPoints gpu;
      const SparseGrid g = gpu.solid(s, spec);
      g.validate();
      EXPECT_EQ(g.checksum(), cpu.checksum()) << s.source << " " << res;
      GpuPoints small(0, ScanMethod::kTilesCub, 1 << 20);  // tiny budget: many slabs
      EXPECT_EQ(small.solid(s, spec).checksum(), cpu.checksum()) << s.source << " " << res;
    }
  }
}

TEST_F(GpuPointsTest, BinningEqualsCpuWithChunksAndOutsidePoints) {
  for (bool attrs : {false, true}) {
    const PointCloud pc = random_cloud(300000, 8, attrs, attrs);
    for (int res : {20, 200}) {
      const GridSpec spec = cloud_grid(pc, res);
      const VoxelBins cpu = bin_points_cpu(pc, spec);
      GpuPoints gpu;
      const VoxelBins g = gpu.bin(pc, spec);
      expect_same_bins(g, cpu);
      GpuPoints chunked(0, ScanMethod::kTiles, 8 << 20);  // ~8 MB: several chunks merged on the host
      expect_same_bins(chunked.bin(pc, spec), cpu);
    }
    GridOptions o;
    o.bbox = test::make_bounds(0, -1, 0, 1, 1, 1);
    o.resolution = 64;
    const GridSpec part = make_grid_spec(o.bbox.value(), o);
    const VoxelBins cpu = bin_points_cpu(pc, part);
    GpuPoints gpu;
    const VoxelBins g = gpu.bin(pc, part);
    EXPECT_GT(g.outside, 0u);
    expect_same_bins(g, cpu);
  }
}

TEST_F(GpuPointsTest, LidarBinningWithClassesIntensityAndDoublePositionsEqualsCpu) {
  // LAS-like points: UTM-size double positions, intensity, classes (with and without other
  // attributes), some outside the grid; whole and in chunks.
  for (int variant = 0; variant < 3; ++variant) {
    PointCloud pc = random_cloud(300000, 12, variant == 2, false);
    std::mt19937 rng(5);
    for (size_t i = 0; i < pc.size(); ++i) {
      const Vec3f p = pc.positions[i];
      pc.positions64.push_back({500000.0 + double(p.x) * 100, 4100000.0 + double(p.y) * 100, 120.0 + double(p.z) * 10});
      pc.positions[i] = {float(pc.positions64[i].x), float(pc.positions64[i].y), float(pc.positions64[i].z)};
      pc.classes.push_back(uint8_t(rng() % 4 == 0 ? 2 : rng() % 7));
      if (variant >= 1) pc.intensity.push_back(uint16_t(rng()));
    }
    GridOptions o;
    o.bbox = test::make_bounds(499950, 4099980, 110, 500100, 4100020, 135);
    o.voxel_size = Vec3d{0.5, 0.5, 0.5};
    const GridSpec spec = make_grid_spec(o.bbox.value(), o);
    const VoxelBins cpu = bin_points_cpu(pc, spec);
    EXPECT_GT(cpu.outside, 0u);
    EXPECT_EQ(cpu.classes.size(), cpu.keys.size());
    GpuPoints gpu;
    expect_same_bins(gpu.bin(pc, spec), cpu);
    GpuPoints chunked(0, ScanMethod::kTiles, 8 << 20);
    expect_same_bins(chunked.bin(pc, spec), cpu);
  }
}

}  // namespace
}  // namespace voxtile
