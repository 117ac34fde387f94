// `voxtile compare` and the grid readers: every pair of formats, differences, tolerance, errors.
#include <gtest/gtest.h>

#include <fstream>

#include "core/compare.h"
#include "core/voxelize.h"
#include "io/atomic_file.h"
#include "io/grid_reader.h"
#include "io/mesh_reader.h"
#include "io/vdb.h"
#include "io/writers.h"
#include "io/zip.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

const char* kFormats[] = {"vdb", "ply", "npy", "raw"};

TEST(Compare, EveryPairOfFormatsOfOneGridIsEqual) {
  test::TempDir dir;
  const std::string duck = test::data_path("formats/gltf/Duck.glb");
  for (const char* target : {"binary", "count", "distance", "normal", "id:max"}) {
    for (const char* f : kFormats) {
      auto r = test::run_voxtile({"voxelize", duck, "-o", dir.file(std::string("g.") + f), "-r", "33", "-t", target, "-d", "cpu"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    // Every format against the first both ways, and the first against itself: equality is
    // transitive, so every pair is equal when these are (and every reader is on both sides).
    std::vector<std::pair<std::string, std::string>> pairs = {{kFormats[0], kFormats[0]}};
    for (const char* a : kFormats)
      if (a != kFormats[0]) pairs.insert(pairs.end(), {{a, kFormats[0]}, {kFormats[0], a}});
    for (const auto& [a, b] : pairs) {
      auto r = test::run_voxtile({"compare", dir.file("g." + a), dir.file("g." + b)});
      EXPECT_EQ(r.exit_code, 0) << target << " " << a << " vs " << b << ": " << r.out << r.err;
      EXPECT_NE(r.out.find("\nequal\n"), std::string::npos) << r.out;
    }
  }
}

// Occupancy also in the formats that hold it alone: .binvox (whose dims are a cube: the Duck's 33 x
// 32 x 29 grid padded to 33^3 is the same grid) and .vox.
TEST(Compare, OccupancyFormatsOfOneGridAreEqual) {
  test::TempDir dir;
  const std::string duck = test::data_path("formats/gltf/Duck.glb");
  for (const char* f : {"vdb", "binvox", "vox", "npy"}) {
    auto r = test::run_voxtile({"voxelize", duck, "-o", dir.file(std::string("g.") + f), "-r", "33", "-d", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"binvox", "vdb"}, {"vdb", "binvox"}, {"vox", "vdb"}, {"binvox", "vox"}, {"npy", "binvox"}}) {
    const auto r = test::run_voxtile({"compare", dir.file("g." + a), dir.file("g." + b)});
    EXPECT_EQ(r.exit_code, 0) << a << " vs " << b << ": " << r.out << r.err;
  }
  // A cube that is not the other's dims padded is a difference: the Duck at another size.
  auto r = test::run_voxtile({"voxelize", duck, "-o", dir.file("h.vdb"), "--dims", "34", "32", "30", "-d", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"compare", dir.file("g.binvox"), dir.file("h.vdb"), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\"dims_equal\":false"), std::string::npos) << r.out;
}

TEST(Compare, SeveralGridsAndBucketFiles) {
  test::TempDir dir;
  const std::string duck = test::data_path("formats/gltf/Duck.glb");
  for (const char* f : {"m.vdb", "m.ply"})
    ASSERT_EQ(test::run_voxtile({"voxelize", duck, "-o", dir.file(f), "-r", "30", "-t", "binary,count,normal:add", "-d", "cpu"})
                  .exit_code,
              0);
  auto r = test::run_voxtile({"compare", dir.file("m.vdb"), dir.file("m.ply"), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\"a\":\"normal_add\",\"b\":\"normal_add\",\"equal\":true"), std::string::npos) << r.out;
  r = test::run_voxtile({"compare", dir.file("m.vdb"), dir.file("m.ply"), "--grid", "count"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(test::run_voxtile({"bucket", duck, "-o", dir.file("b.npz"), "-r", "30", "-d", "cpu"}).exit_code, 0);
  ASSERT_EQ(test::run_voxtile({"bucket", duck, "-o", dir.file("n.npz"), "-r", "30", "--attrs", "bary,normal", "-d", "cpu"})
                .exit_code,
            0);
  ASSERT_EQ(test::run_voxtile({"voxelize", duck, "-o", dir.file("c.npy"), "-r", "30", "-t", "count", "-d", "cpu"}).exit_code, 0);
  EXPECT_EQ(test::run_voxtile({"compare", dir.file("b.npz"), dir.file("b.npz")}).exit_code, 0);
  r = test::run_voxtile({"compare", dir.file("b.npz"), dir.file("n.npz")});
  EXPECT_EQ(r.exit_code, 1) << r.out;  // attribute sets differ
  EXPECT_NE(r.out.find("attribute sets differ"), std::string::npos) << r.out;
  EXPECT_EQ(test::run_voxtile({"compare", dir.file("b.npz"), dir.file("c.npy")}).exit_code, 0);  // fragments = count
  EXPECT_EQ(test::run_voxtile({"compare", dir.file("b.npz"), dir.file("m.vdb")}).exit_code, 1);  // 1 grid vs 3
  // The same arrays deflated (as numpy's savez_compressed writes them) read back equal.
  {
    const std::string stored = test::read_file(dir.file("n.npz"));
    const zip::Reader in(dir.file("n.npz"), stored.data(), stored.size(), ".npz file");
    AtomicFile out(dir.file("d.npz"));
    zip::Writer w(out);
    for (const zip::Entry& e : in.entries()) {
      std::unique_ptr<char[]> storage;
      const std::string_view bytes = in.read(e, storage);
      w.begin_deflated(e.name);
      w.data(bytes.data(), bytes.size());
      w.end_deflated();
    }
    w.finish();
    out.commit();
  }
  EXPECT_LT(test::read_file(dir.file("d.npz")).size(), test::read_file(dir.file("n.npz")).size());
  r = test::run_voxtile({"compare", dir.file("n.npz"), dir.file("d.npz")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(Compare, ReportsDifferencesIouAndTolerance) {
  const Mesh soup = test::random_soup(300, 10.0f, 1.5f, 51);
  GridOptions go;
  go.resolution = 40;
  const GridSpec spec = make_grid_spec(soup.bounds(), go);
  VoxelizeOptions o;
  o.target = Target::kDistance;
  const SparseGrid a = voxelize_cpu(soup, spec, o);
  SparseGrid b = a;
  for (float& v : b.fvalues) v += 1e-3f;
  GridDiff d = compare_grids(a, true, b, true, 0.0);
  EXPECT_FALSE(d.equal);
  EXPECT_EQ(d.values_differing, a.active_voxels());
  EXPECT_NEAR(d.max_abs_diff, 1e-3, 1e-5);
  EXPECT_TRUE(compare_grids(a, true, b, true, 2e-3).equal);
  // Drop one brick from b: only-in-A voxels and IoU.
  SparseGrid c = a;
  const uint64_t dropped = uint64_t(c.masks[0].count());
  c.keys.erase(c.keys.begin());
  c.masks.erase(c.masks.begin());
  c.fvalues.erase(c.fvalues.begin(), c.fvalues.begin() + std::ptrdiff_t(dropped));
  c.index_values(false);
  c.validate();
  d = compare_grids(a, true, c, true, 0.0);
  EXPECT_EQ(d.only_a, dropped);
  EXPECT_EQ(d.only_b, 0u);
  EXPECT_NEAR(d.iou, double(a.active_voxels() - dropped) / double(a.active_voxels()), 1e-12);
  EXPECT_FALSE(d.equal);
  // A shifted origin differs; without a transform (npy) it is not compared.
  SparseGrid e = a;
  e.spec.origin.x += 0.5 * spec.voxel_size.x;
  EXPECT_FALSE(compare_grids(a, true, e, true, 0.0).equal);
  EXPECT_TRUE(compare_grids(a, true, e, false, 0.0).equal);
  // Through the CLI: files written from a and b.
  test::TempDir dir;
  WriteOptions wo;
  write_grid(a, dir.file("a.vdb"), OutputFormat::kVdb, wo);
  write_grid(b, dir.file("b.ply"), OutputFormat::kPly, wo);
  EXPECT_EQ(test::run_voxtile({"compare", dir.file("a.vdb"), dir.file("b.ply")}).exit_code, 1);
  EXPECT_EQ(test::run_voxtile({"compare", dir.file("a.vdb"), dir.file("b.ply"), "--tolerance", "0.002"}).exit_code, 0);
}

TEST(Compare, BadFilesExitWith2) {
  test::TempDir dir;
  ASSERT_EQ(test::run_voxtile({"voxelize", test::data_path("formats/gltf/Duck.glb"), "-o", dir.file("g.npy"), "-r", "20",
                               "-d", "cpu"})
                .exit_code,
            0);
  std::string npy = test::read_file(dir.file("g.npy"));
  std::ofstream(dir.file("t.npy"), std::ios::binary) << npy.substr(0, npy.size() / 2);
  std::ofstream(dir.file("x.ply"), std::ios::binary) << "ply\nformat ascii 1.0\nelement vertex 0\nend_header\n";
  std::ofstream(dir.file("z.npz"), std::ios::binary) << "not a zip at all, but long enough to look for the end";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"compare", dir.file("g.npy"), dir.file("missing.vdb")},
           {"compare", dir.file("g.npy"), dir.file("t.npy")},
           {"compare", dir.file("g.npy"), dir.file("x.ply")},
           {"compare", dir.file("g.npy"), dir.file("z.npz")},
           {"compare", dir.file("g.npy"), dir.file("g.txt")},
           {"compare", dir.file("g.npy"), dir.file("g.npy"), "--tolerance", "-1"},
           {"compare", dir.file("g.npy")}}) {
    auto r = test::run_voxtile(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_NE(r.err.find("error"), std::string::npos);
  }
  // What it reads is named; a point cloud is told apart.
  std::ofstream(dir.file("p.xyz")) << "0 0 0\n";
  auto r = test::run_voxtile({"compare", dir.file("g.npy"), dir.file("g.txt")});
  EXPECT_NE(r.err.find("expected .vdb, .ply, .npy, .raw, .npz, .binvox or .vox"), std::string::npos) << r.err;
  r = test::run_voxtile({"compare", dir.file("g.npy"), dir.file("p.xyz")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("p.xyz: a point cloud, not a grid"), std::string::npos) << r.err;
}

TEST(Compare, VdbBricksComeBackInKeyOrderBeyondOneInternalNode) {
  // Leaves in different OpenVDB internal nodes are stored hierarchically, not x-major.
  SparseGrid g;
  g.spec.dims = {16, 5008, 8};
  g.spec.voxel_size = {1, 1, 1};
  for (const auto& [bx, by] : std::vector<std::pair<int, int>>{{0, 0}, {0, 625}, {1, 0}}) {
    g.keys.push_back(brick_key(bx, by, 0));
    BrickMask m{};
    m.set(brick_offset(1, 2, 3));
    g.masks.push_back(m);
  }
  g.validate();
  test::TempDir dir;
  write_vdb(g, dir.file("g.vdb"), {});
  const SparseGrid back = read_vdb(dir.file("g.vdb"));
  back.validate();
  EXPECT_EQ(back.keys, g.keys);
  EXPECT_EQ(back.checksum(), g.checksum());
}

}  // namespace
}  // namespace voxtile
