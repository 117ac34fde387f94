// Pictures (core/render.h, kernels/render/, `voxtile preview`, --preview, the batch's HTML report):
// silhouettes against brute-force ray/voxel oracles written here, colours, GPU = CPU, CLI.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "core/render.h"
#include "core/sparse_grid.h"
#include "helpers.h"
#include "io/png.h"
#include "kernels/api.h"

namespace voxtile {
namespace {

GridSpec cube_spec(int n) {
  GridSpec s;
  s.dims = {n, n, n};
  s.voxel_size = {0.5, 0.5, 0.5};
  s.origin = {-1, 2, 3};
  return s;
}

SparseGrid grid_of(const GridSpec& spec, const std::function<bool(int, int, int)>& active,
                   ValueType type = ValueType::kNone, const std::function<float(int, int, int)>& value = nullptr,
                   const std::string& name = "voxels") {
  SparseGridBuilder b(spec, type, name, "test");
  for (int i = 0; i < spec.dims.x; ++i)
    for (int j = 0; j < spec.dims.y; ++j)
      for (int k = 0; k < spec.dims.z; ++k) {
        if (!active(i, j, k)) continue;
        if (type == ValueType::kNone) {
          b.add(i, j, k);
        } else if (type == ValueType::kInt32) {
          const int32_t v = int32_t(value(i, j, k));
          uint32_t w;
          std::memcpy(&w, &v, 4);
          b.add(i, j, k, &w);
        } else {
          const float v = value(i, j, k);
          uint32_t w;
          std::memcpy(&w, &v, 4);
          b.add(i, j, k, &w);
        }
      }
  return b.build();
}

RenderOptions plain(int w, int h, const std::string& view) {
  RenderOptions o;
  o.width = w;
  o.height = h;
  o.view = view;
  o.edges = false;
  o.ao = false;
  o.legend = false;
  return o;
}

bool is_background(const Image& img, size_t i, const RenderOptions& o) { return img.pixels[i] == o.background; }

// Brute force: the nearest voxel hit by each pixel's ray (slab test against every active voxel, in
// double), and the axis of the face it enters through; -1 for a miss. Pixels whose nearest hit is
// within `eps` of another face or edge of the silhouette are marked ambiguous (-2).
std::vector<int> oracle_faces(const SparseGrid& g, const RenderView& v, double eps) {
  std::vector<std::array<int, 3>> voxels;
  g.for_each_active([&](int i, int j, int k, size_t, int) { voxels.push_back({i, j, k}); });
  std::vector<int> out(size_t(v.width) * v.height, -1);
  const double d[3] = {v.dir.x, v.dir.y, v.dir.z};
  for (int py = 0; py < v.height; ++py)
    for (int px = 0; px < v.width; ++px) {
      const double fx = px + 0.5, fy = py + 0.5;
      const double o[3] = {v.origin.x + fx * v.du.x + fy * v.dv.x, v.origin.y + fx * v.du.y + fy * v.dv.y,
                           v.origin.z + fx * v.du.z + fy * v.dv.z};
      double best = INFINITY, second = INFINITY;
      int face = -1;
      bool grazing = false;
      for (const auto& vx : voxels) {
        double t0 = -INFINITY, t1 = INFINITY;
        int axis = -1;
        double margin = INFINITY;  // how far inside the voxel's other slabs the entry point is
        for (int a = 0; a < 3; ++a) {
          if (d[a] == 0) {
            if (o[a] < vx[a] || o[a] >= vx[a] + 1) t0 = INFINITY;
            continue;
          }
          double ta = (vx[a] - o[a]) / d[a], tb = (vx[a] + 1 - o[a]) / d[a];
          if (ta > tb) std::swap(ta, tb);
          if (ta > t0) {
            t0 = ta;
            axis = a;
          }
          t1 = std::min(t1, tb);
        }
        if (!(t0 < t1)) {
          if (t0 - t1 < eps * 4) grazing = grazing || t0 < best;  // a near miss of an edge
          continue;
        }
        for (int a = 0; a < 3; ++a) {
          const double p = o[a] + t0 * d[a];
          if (a != axis) margin = std::min(margin, std::min(p - vx[a], vx[a] + 1 - p));
        }
        if (t0 < best) {
          second = best;
          best = t0;
          face = margin < eps ? -2 : axis;
        } else {
          second = std::min(second, t0);
        }
      }
      (void)second;
      out[size_t(py) * v.width + px] = grazing ? -2 : face;
    }
  return out;
}

// Compares a picture with the oracle: the same pixels drawn, and one colour per face axis.
void expect_matches_oracle(const SparseGrid& g, const RenderOptions& o, const std::string& what) {
  const RenderScene scene = make_scene({&g}, o);
  const Image img = render_cpu(scene, o);
  const std::vector<int> faces = oracle_faces(g, scene.view(o), 1e-4);
  std::map<int, uint32_t> colour_of_axis;
  size_t checked = 0, drawn = 0;
  for (size_t i = 0; i < faces.size(); ++i) {
    if (faces[i] == -2) continue;
    ++checked;
    const bool bg = is_background(img, i, o);
    ASSERT_EQ(bg, faces[i] < 0) << what << ": pixel " << i % o.width << "," << i / o.width;
    if (bg) continue;
    ++drawn;
    auto [it, fresh] = colour_of_axis.emplace(faces[i], img.pixels[i]);
    EXPECT_EQ(it->second, img.pixels[i]) << what << ": axis " << faces[i] << " pixel " << i;
  }
  EXPECT_GT(checked, faces.size() * 95 / 100) << what;
  EXPECT_GT(drawn, 20u) << what;
  // Differently oriented faces are told apart by their shade.
  std::set<uint32_t> distinct;
  for (const auto& [axis, c] : colour_of_axis) distinct.insert(c);
  EXPECT_EQ(distinct.size(), colour_of_axis.size()) << what;
}

TEST(Render, OneVoxelIsASquareFromTheFrontAndAHexagonFromTheIsometricView) {
  const GridSpec spec = cube_spec(16);
  const SparseGrid g = grid_of(spec, [](int i, int j, int k) { return i == 5 && j == 9 && k == 12; });
  RenderOptions o = plain(64, 64, "front");
  Image img = render_cpu(make_scene({&g}, o), o);
  size_t n = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) n += !is_background(img, i, o);
  // The voxel fills 92% of the picture: a 58.9-pixel square, centred.
  EXPECT_NEAR(double(n), 58.88 * 58.88, 2 * 59.0 + 4);
  EXPECT_FALSE(is_background(img, 32 * 64 + 32, o));
  EXPECT_TRUE(is_background(img, 0, o));
  EXPECT_TRUE(is_background(img, 64 * 64 - 1, o));
  // Isometric: a regular hexagon of area sqrt(3) (voxel edge 1), at 2*0.8165/58.88 voxels per pixel.
  o = plain(64, 64, "iso");
  img = render_cpu(make_scene({&g}, o), o);
  n = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) n += !is_background(img, i, o);
  const double s = 2 * std::sqrt(2.0 / 3.0) / 58.88;
  EXPECT_NEAR(double(n), std::sqrt(3.0) / (s * s), 0.04 * std::sqrt(3.0) / (s * s));
  // Three faces, three shades; the top face (above the centre) brightest.
  const uint32_t top = img.pixels[16 * 64 + 32], left = img.pixels[40 * 64 + 20], right = img.pixels[40 * 64 + 44];
  auto luma = [](uint32_t p) { return int(p & 255) + int(p >> 8 & 255) + int(p >> 16 & 255); };
  EXPECT_GT(luma(top), luma(left));
  EXPECT_GT(luma(top), luma(right));
  EXPECT_NE(left, right);
  expect_matches_oracle(g, plain(48, 48, "iso"), "one voxel iso");
}

TEST(Render, SilhouettesMatchABruteForceRayCaster) {
  const GridSpec spec = cube_spec(24);
  const SparseGrid sphere = grid_of(spec, [](int i, int j, int k) {
    const double x = i + 0.5 - 12, y = j + 0.5 - 12, z = k + 0.5 - 12;
    return x * x + y * y + z * z <= 9.5 * 9.5;
  });
  const SparseGrid plane = grid_of(spec, [](int i, int j, int k) { return j == 7 && i >= 2 && k < 20; });
  std::mt19937 rng(7);
  const SparseGrid random = grid_of(spec, [&](int, int, int) { return rng() % 9 == 0; });
  // A shell spanning several 8^3 bricks and 64^3 cells: the empty-space skipping is exercised.
  GridSpec big = cube_spec(150);
  const SparseGrid shell = grid_of(big, [](int i, int j, int k) {
    const double x = i + 0.5 - 80, y = j + 0.5 - 70, z = k + 0.5 - 75;
    const double r = std::sqrt(x * x + y * y + z * z);
    return r <= 60 && r > 58.5;
  });
  for (const std::string view : {"iso", "front", "top", "right", "30,-20", "200,60", "bottom"}) {
    expect_matches_oracle(sphere, plain(40, 40, view), "sphere " + view);
    expect_matches_oracle(plane, plain(40, 32, view), "plane " + view);
    expect_matches_oracle(random, plain(40, 40, view), "random " + view);
  }
  expect_matches_oracle(shell, plain(48, 48, "iso"), "shell iso");
  RenderOptions z_up = plain(40, 40, "iso");
  z_up.up = 'z';
  expect_matches_oracle(sphere, z_up, "sphere z-up");
}

TEST(Render, ColoursFromValues) {
  const GridSpec spec = cube_spec(16);
  auto in = [](int i, int j, int k) { return i >= 4 && i < 12 && j >= 4 && j < 12 && k >= 4 && k < 12; };
  // Counts: a colour map; the legend shows the range.
  const SparseGrid count = grid_of(
      spec, in, ValueType::kInt32, [](int i, int, int) { return float(i); }, "count");
  RenderOptions o = plain(400, 300, "front");
  o.legend = true;
  RenderScene scene = make_scene({&count}, o);
  EXPECT_EQ(scene.color_mode, "map");
  EXPECT_EQ(scene.lo_value, 4);
  EXPECT_EQ(scene.hi_value, 11);
  Image img = render_cpu(scene, o);
  // Front view: x grows to the right, so does the count; the left column is dark (viridis 0), the
  // right one yellow-green (viridis 1).
  const uint32_t lefty = img.pixels[150 * 400 + 90], righty = img.pixels[150 * 400 + 250];
  EXPECT_GT(int(righty >> 8 & 255), int(lefty >> 8 & 255));  // green
  size_t legend = 0, text = 0;                               // the bar (x 332 to 341), the labels right of it
  for (int y = 0; y < 300; ++y) {
    for (int x = 332; x < 342; ++x) legend += !is_background(img, size_t(y) * 400 + x, o);
    for (int x = 345; x < 400; ++x) text += !is_background(img, size_t(y) * 400 + x, o);
  }
  EXPECT_GT(legend, 1500u);
  EXPECT_GT(text, 30u);
  o.legend = false;
  img = render_cpu(scene, o);
  legend = 0;
  for (int y = 0; y < 300; ++y)
    for (int x = 345; x < 400; ++x) legend += !is_background(img, size_t(y) * 400 + x, o);
  EXPECT_EQ(legend, 0u);
  // One colour when asked; a grid named by --color must exist.
  o.color = "none";
  EXPECT_EQ(make_scene({&count}, o).color_mode, "one");
  o.color = "nope";
  EXPECT_THROW(make_scene({&count}, o), Error);
  // One colour given: the front face, lit straight on, is a shade of it.
  o.color = "#d02010";
  scene = make_scene({&count}, o);
  EXPECT_EQ(scene.color_mode, "one");
  EXPECT_EQ(scene.color, 0x1020d0u);  // (RGB8: 0xBBGGRR)
  img = render_cpu(scene, o);
  const uint32_t face = img.pixels[150 * 400 + 200];
  EXPECT_GT(int(face & 255), 4 * int(face >> 8 & 255));          // red over green
  EXPECT_GT(int(face >> 8 & 255), int(face >> 16 & 255));        // green over blue
  for (const char* bad : {"#12345", "#gg0000", "#1234567"}) {
    o.color = bad;
    EXPECT_THROW(make_scene({&count}, o), Error) << bad;
  }
  // Normals as RGB: a +z normal seen from the front is blue.
  SparseGrid normal = grid_of(
      spec, in, ValueType::kFloat32, [](int, int, int) { return 0.f; }, "normal");
  normal.value_type = ValueType::kVec3f;
  normal.index_values();
  std::fill(normal.fvalues.begin(), normal.fvalues.end(), 0.f);
  for (size_t i = 2; i < normal.fvalues.size(); i += 3) normal.fvalues[i] = 1.f;
  o = plain(64, 64, "front");
  scene = make_scene({&normal}, o);
  EXPECT_EQ(scene.color_mode, "normal");
  img = render_cpu(scene, o);
  const uint32_t p = img.pixels[32 * 64 + 32];
  EXPECT_GT(int(p >> 16 & 255), int(p & 255));
  // A level set: the voxels at or below the iso value.
  SparseGrid sdf = grid_of(
      spec, [](int, int, int) { return true; }, ValueType::kFloat32,
      [](int i, int j, int k) {
        return float(
            std::sqrt((i + 0.5 - 8) * (i + 0.5 - 8) + (j + 0.5 - 8) * (j + 0.5 - 8) + (k + 0.5 - 8) * (k + 0.5 - 8)) -
            5);
      },
      "sdf");
  sdf.level_set = true;
  scene = make_scene({&sdf}, plain(32, 32, "iso"));
  const SparseGrid inside = grid_of(spec, [](int i, int j, int k) {
    return std::sqrt((i + 0.5 - 8) * (i + 0.5 - 8) + (j + 0.5 - 8) * (j + 0.5 - 8) + (k + 0.5 - 8) * (k + 0.5 - 8)) -
               5 <=
           0;
  });
  EXPECT_EQ(scene.voxels, inside.active_voxels());
  EXPECT_EQ(scene.color_mode, "one");
  EXPECT_TRUE(render_cpu(scene, plain(32, 32, "iso")).pixels ==
              render_cpu(make_scene({&inside}, plain(32, 32, "iso")), plain(32, 32, "iso")).pixels);
}

TEST(Render, EmptyGridsAndOptions) {
  const GridSpec spec = cube_spec(8);
  const SparseGrid empty = grid_of(spec, [](int, int, int) { return false; });
  const RenderOptions o = plain(16, 8, "iso");
  const Image img = render_cpu(make_scene({&empty}, o), o);
  for (uint32_t p : img.pixels) EXPECT_EQ(p, o.background);
  int w = 0, h = 0;
  parse_image_size("800x600", w, h);
  EXPECT_EQ(w, 800);
  EXPECT_EQ(h, 600);
  parse_image_size("256", w, h);
  EXPECT_EQ(h, 256);
  for (const char* bad : {"0", "20000", "12x", "x12", "1.5", "-3", "12x12x12", ""})
    EXPECT_THROW(parse_image_size(bad, w, h), Error) << bad;
  EXPECT_NO_THROW(check_view("45,30"));
  for (const char* bad : {"sideways", "10", "10,100", "a,b", "nan,0"}) EXPECT_THROW(check_view(bad), Error) << bad;
  EXPECT_EQ(parse_background("#ff0000"), 0xff0000ffu);
  EXPECT_EQ(parse_background("transparent") >> 24, 0u);
  EXPECT_THROW(parse_background("red"), Error);
}

TEST(Render, PngRoundTrip) {
  test::TempDir dir;
  Image img;
  img.width = 5;
  img.height = 3;
  for (int i = 0; i < 15; ++i) img.pixels.push_back(0xff000000u | uint32_t(i * 0x102030));
  write_png(img, dir.file("a.png"));
  const Image back = read_png(dir.file("a.png"));
  EXPECT_EQ(back.width, 5);
  EXPECT_EQ(back.height, 3);
  EXPECT_TRUE(back.pixels == img.pixels);
  img.pixels[3] = 0x00ffffffu;  // transparent: written with alpha
  write_png(img, dir.file("b.png"));
  EXPECT_TRUE(read_png(dir.file("b.png")).pixels == img.pixels);
  EXPECT_THROW(read_png(dir.file("missing.png")), Error);
  EXPECT_THROW(write_png(img, dir.file("no/such/dir.png")), Error);
}

TEST(RenderGpu, EqualsTheCpuBitForBit) {
  const GpuInfo info = query_gpu();
  if (!info.available) GTEST_SKIP() << "no GPU: " << info.reason;
  GridSpec spec = cube_spec(200);
  spec.voxel_size = {0.5, 0.25, 0.75};  // anisotropic voxels too
  std::mt19937 rng(3);
  const SparseGrid count = grid_of(
      spec,
      [&](int i, int j, int k) {
        const double x = i + 0.5 - 100, y = j + 0.5 - 90, z = k + 0.5 - 110;
        const double r = std::sqrt(x * x + y * y + z * z);
        return (r <= 80 && r > 77) || (rng() % 20000 == 0);
      },
      ValueType::kInt32, [](int i, int j, int) { return float((i * 7 + j) % 50); }, "count");
  for (const std::string view : {"iso", "front", "top", "123,-40"}) {
    RenderOptions o;
    o.width = 320;
    o.height = 200;
    o.view = view;
    const RenderScene scene = make_scene({&count}, o);
    std::vector<std::pair<std::string, double>> stages;
    const Image gpu = gpu_render(scene, o, 0, &stages);
    const Image cpu = render_cpu(scene, o);
    EXPECT_TRUE(gpu.pixels == cpu.pixels) << view;
    o.color = "none";
    o.edges = false;
    const RenderScene one = make_scene({&count}, o);
    EXPECT_TRUE(gpu_render(one, o, 0).pixels == render_cpu(one, o).pixels) << view;
  }
  const SparseGrid empty = grid_of(cube_spec(8), [](int, int, int) { return false; });
  const RenderOptions o = plain(16, 16, "iso");
  EXPECT_TRUE(gpu_render(make_scene({&empty}, o), o, 0).pixels == render_cpu(make_scene({&empty}, o), o).pixels);
}

TEST(PreviewCli, PicturesOfGridsAndMeshes) {
  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  test::RunResult r = test::run_voxtile(
      {"preview", bunny, "-o", dir.file("a.png"), "-r", "48", "--size", "300x200", "-d", "cpu", "--stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"voxels\""), std::string::npos) << r.out;
  Image a = read_png(dir.file("a.png"));
  EXPECT_EQ(a.width, 300);
  EXPECT_EQ(a.height, 200);
  size_t drawn = 0;
  for (uint32_t p : a.pixels) drawn += p != 0xfff2f2f2u;
  EXPECT_GT(drawn, 5000u);
  // The same bytes every run; the same picture from the grid written by voxelize.
  r = test::run_voxtile(
      {"preview", bunny, "-o", dir.file("b.png"), "-r", "48", "--size", "300x200", "-d", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test::read_file(dir.file("a.png")) == test::read_file(dir.file("b.png")));
  r = test::run_voxtile({"voxelize", bunny, "-o", dir.file("b.vdb"), "-r", "48", "-d", "cpu", "-q", "-t", "count",
                         "--preview", dir.file("v.png"), "--preview-size", "300x200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile(
      {"preview", dir.file("b.vdb"), "-o", dir.file("c.png"), "--size", "300x200", "-d", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test::read_file(dir.file("v.png")) == test::read_file(dir.file("c.png")));
  EXPECT_FALSE(test::read_file(dir.file("c.png")) == test::read_file(dir.file("a.png")));  // coloured by count
  r = test::run_voxtile({"preview",      dir.file("b.vdb"),
                         "-o",           dir.file("d.png"),
                         "--size",       "300x200",
                         "-d",           "cpu",
                         "-q",           "--color",
                         "none",         "--no-legend",
                         "--no-ao",      "--no-edges",
                         "--view",       "top",
                         "--up",         "z",
                         "--background", "transparent"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_png(dir.file("d.png")).pixels[0] >> 24, 0u);
  // Points and CSG pictures.
  r = test::run_voxtile({"csg", test::data_path("csg/gear.csg"), "--solid", "-r", "64", "-o", dir.file("g.vdb"), "-d",
                         "cpu", "-q", "--preview", dir.file("g.png")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_png(dir.file("g.png")).width, 512);
  r = test::run_voxtile(
      {"points", bunny, "-o", dir.file("p.ply"), "-q", "--preview", dir.file("p.png"), "--preview-size", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_png(dir.file("p.png")).width, 64);
  // Errors: one line, the documented exit code, no file left behind.
  struct Bad {
    std::vector<std::string> args;
    int code;
  };
  const std::vector<Bad> bad = {
      {{"preview", bunny, "-o", dir.file("e1.png"), "--size", "0"}, 2},
      {{"preview", bunny, "-o", dir.file("e2.png"), "--view", "sideways"}, 2},
      {{"preview", bunny, "-o", dir.file("e3.jpg")}, 2},
      {{"preview", dir.file("b.vdb"), "-o", dir.file("e4.png"), "--color", "nope"}, 2},
      {{"preview", dir.file("missing.vdb"), "-o", dir.file("e5.png")}, 3},
      {{"preview", dir.file("b.vdb"), "-o", dir.file("no/dir/e6.png")}, 4},
      {{"voxelize", bunny, "-o", dir.file("e7.vdb"), "--preview", dir.file("e7.jpg")}, 2},
      {{"preview", dir.file("b.vdb"), "-o", dir.file("e8.png"), "--range", "3,1"}, 2},
  };
  for (Bad b : bad) {
    b.args.insert(b.args.end(), {"-d", "cpu"});
    r = test::run_voxtile(b.args);
    EXPECT_EQ(r.exit_code, b.code) << b.args[1] << " " << b.args[3] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  for (const std::string& f : dir.list()) EXPECT_EQ(f.find("e"), std::string::npos) << f;
}

// Point clouds (.xyz, a .ply without faces that is not voxtile's voxel-centre .ply) are binned first:
// the same picture and mesh as from the grids `voxtile points` writes on that grid; a voxel-centre
// .ply stays a grid.
TEST(PreviewCli, PointCloudsAreBinnedFirst) {
  test::TempDir dir;
  for (const std::string name : {"pond.0.ply", "points_cloudcompare.xyz"}) {
    const std::string cloud = test::data_path("points/" + name);
    test::RunResult r = test::run_voxtile({"points", cloud, "-o", dir.file("g.vdb"), "-r", "64", "--values",
                                           "occupancy,color", "-d", "cpu", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = test::run_voxtile({"preview", dir.file("g.vdb"), "-o", dir.file("g.png"), "--size", "96", "-d", "cpu", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = test::run_voxtile({"preview", cloud, "-o", dir.file("p.png"), "-r", "64", "--size", "96", "-d", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_NE(r.err.find(" points binned on "), std::string::npos) << r.err;
    EXPECT_TRUE(test::read_file(dir.file("g.png")) == test::read_file(dir.file("p.png"))) << name;
    r = test::run_voxtile({"mesh", dir.file("g.vdb"), "--grid", "occupancy", "-o", dir.file("g.obj"), "-d", "cpu", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = test::run_voxtile({"mesh", cloud, "-r", "64", "-o", dir.file("p.obj"), "-d", "cpu", "-q"});
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_TRUE(test::read_file(dir.file("g.obj")) == test::read_file(dir.file("p.obj"))) << name;
  }
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  for (const char* ext : {"vdb", "ply"})
    ASSERT_EQ(test::run_voxtile({"voxelize", bunny, "-o", dir.file(std::string("v.") + ext), "-r", "32", "-d", "cpu",
                                 "-q"}).exit_code, 0);
  for (const char* ext : {"vdb", "ply"}) {
    const test::RunResult r = test::run_voxtile({"preview", dir.file(std::string("v.") + ext), "-o",
                                                 dir.file(std::string("v") + ext + ".png"), "--size", "96", "-d", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("1 grid,"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(test::read_file(dir.file("vvdb.png")) == test::read_file(dir.file("vply.png")));
}

// Runs Debian's chromium headless on `html` and returns the DOM after its scripts ran.
std::string browser_dom(const std::string& html) {
  const std::string cmd =
      "chromium --headless --no-sandbox --disable-gpu --allow-file-access-from-files "
      "--virtual-time-budget=10000 --dump-dom 'file://" +
      html + "' 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

TEST(PreviewCli, BatchThumbnailsAndHtmlReportOpenInABrowser) {
  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  // Two meshes and a broken one (kept going): two thumbnails, one failed card.
  { std::ofstream(dir.file("broken.stl")) << "solid x\nfacet normal 0 0 1\n"; }
  { std::ofstream(dir.file("my mesh.ply")) << test::read_file(bunny); }
  test::RunResult r = test::run_voxtile({"batch",
                                         bunny,
                                         dir.file("my mesh.ply"),
                                         dir.file("broken.stl"),
                                         "-o",
                                         dir.file("out/{stem}.vdb"),
                                         "-r",
                                         "32",
                                         "-d",
                                         "cpu",
                                         "-k",
                                         "-q",
                                         "--preview",
                                         dir.file("out/thumbs/{stem}.png"),
                                         "--preview-size",
                                         "128",
                                         "--report-html",
                                         dir.file("out/report.html"),
                                         "--report",
                                         dir.file("out/report.json")});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_EQ(read_png(dir.file("out/thumbs/stanford_bunny.png")).width, 128);
  EXPECT_EQ(read_png(dir.file("out/thumbs/my mesh.png")).height, 128);
  const std::string html = test::read_file(dir.file("out/report.html"));
  EXPECT_NE(html.find("src=\"thumbs/my%20mesh.png\""), std::string::npos);
  EXPECT_NE(html.find("broken.stl"), std::string::npos);
  EXPECT_NE(test::read_file(dir.file("out/report.json")).find("\"preview\""), std::string::npos);
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) GTEST_SKIP() << "no chromium to open the report";
  EXPECT_NE(browser_dom(dir.file("out/report.html")).find("thumbnails: 2 of 2 loaded"), std::string::npos);
  // The check can fail: a missing thumbnail is seen as missing.
  std::remove(dir.file("out/thumbs/my mesh.png").c_str());
  EXPECT_NE(browser_dom(dir.file("out/report.html")).find("thumbnails: 1 of 2 loaded"), std::string::npos);
}

}  // namespace
}  // namespace voxtile
