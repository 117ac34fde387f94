// The voxtile binary: success paths, every documented error, exit codes, no partial files.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "kernels/api.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

using test::run_voxtile;

const std::string kBunny = test::data_path("meshes/stanford_bunny.ply");
const std::string kDuck = test::data_path("formats/gltf/Duck.glb");

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, HelpAndVersion) {
  auto r = run_voxtile({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("voxelize"), std::string::npos);
  r = run_voxtile({"voxelize", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--resolution"), std::string::npos);
  r = run_voxtile({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("voxtile " VOXTILE_VERSION), std::string::npos);
}

TEST(Cli, VoxelizesToEveryFormatAndPrintsASummary) {
  test::TempDir dir;
  for (const char* ext : {"vdb", "ply", "npy", "raw"}) {
    const std::string out = dir.file(std::string("duck.") + ext);
    const auto r = run_voxtile({"voxelize", kDuck, "-o", out, "-r", "48"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(test::file_exists(out));
    EXPECT_NE(r.err.find("4212 triangles"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(test::file_exists(dir.file("duck.json")));
  EXPECT_EQ(dir.list().size(), 5u);  // no temporary files left
}

TEST(Cli, StatsPrintsOneJsonObjectPerInput) {
  test::TempDir dir;
  const auto r = run_voxtile({"voxelize", kBunny, kDuck, "-o", dir.path(), "-r", "40", "--stats", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 2u);
  EXPECT_NE(r.out.find("\"triangles\":69451"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"timings_ms\""), std::string::npos);
  EXPECT_NE(r.out.find("\"active_voxels\""), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(test::file_exists(dir.file("stanford_bunny.vdb")));
  EXPECT_TRUE(test::file_exists(dir.file("Duck.vdb")));
}

TEST(Cli, SameInputAndOptionsGiveTheSameBytes) {
  test::TempDir dir;
  for (const char* name : {"a.vdb", "b.vdb"})
    ASSERT_EQ(run_voxtile({"voxelize", kDuck, "-o", dir.file(name), "-r", "40", "-t", "count", "-m", "thin"}).exit_code, 0);
  EXPECT_EQ(test::read_file(dir.file("a.vdb")), test::read_file(dir.file("b.vdb")));
  auto one = run_voxtile({"voxelize", kDuck, "-o", dir.file("c.vdb"), "-r", "40", "--threads", "1", "--stats"});
  auto two = run_voxtile({"voxelize", kDuck, "-o", dir.file("d.vdb"), "-r", "40", "--threads", "2", "--stats"});
  const auto checksum = [](const std::string& s) { return s.substr(s.find("\"checksum\""), 30); };
  EXPECT_EQ(checksum(one.out), checksum(two.out));
}

TEST(Cli, InfoDescribesMeshesPointCloudsAndVdbs) {
  test::TempDir dir;
  auto r = run_voxtile({"info", kBunny, "-r", "64"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("triangles: 69451"), std::string::npos);
  EXPECT_NE(r.out.find("grid: 64x"), std::string::npos) << r.out;
  r = run_voxtile({"info", test::data_path("edge/ply_points_bin.ply")});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("points: 8"), std::string::npos);
  ASSERT_EQ(run_voxtile({"voxelize", kDuck, "-o", dir.file("d.vdb"), "-r", "32"}).exit_code, 0);
  r = run_voxtile({"info", dir.file("d.vdb")});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("active_voxels="), std::string::npos);
  EXPECT_NE(r.out.find("type=mask"), std::string::npos) << r.out;
  ASSERT_EQ(run_voxtile({"voxelize", kDuck, "-o", dir.file("i.vdb"), "-r", "32", "-t", "id"}).exit_code, 0);
  r = run_voxtile({"info", dir.file("i.vdb")});
  EXPECT_NE(r.out.find("grid \"id\" type=int32"), std::string::npos) << r.out;
}

struct ErrorCase {
  std::vector<std::string> args;
  int exit_code;
  std::string message;
};

TEST(Cli, EveryDocumentedErrorHasItsExitCodeAndOneLine) {
  test::TempDir dir;
  const std::string out = dir.file("out.vdb");
  const std::vector<ErrorCase> cases = {
      {{"voxelize"}, 2, "required"},
      {{"frobnicate"}, 2, "subcommand"},
      {{"voxelize", kDuck, "-o", out, "-r", "0"}, 2, "resolution"},
      {{"voxelize", kDuck, "-o", out, "--mode", "fat"}, 2, "mode"},
      {{"voxelize", kDuck, "-o", dir.file("out.obj")}, 2, "unknown output extension"},
      {{"voxelize", kDuck, "-o", out, "-r", "10", "-s", "0.1"}, 2, "cannot be combined"},
      {{"voxelize", kDuck, "-o", out, "-s", "1e-9"}, 2, "more than 65536"},
      {{"voxelize", kDuck, kBunny, "-o", out}, 2, "directory"},
      {{"voxelize", dir.file("missing.obj"), "-o", out}, 3, "missing.obj: No such file"},
      {{"voxelize", test::data_path("edge/empty.obj"), "-o", out}, 3, "empty.obj: the file is empty"},
      {{"voxelize", test::data_path("edge/crash-fuzz.ply"), "-o", out, "--loader", "assimp"}, 3, "crash-fuzz.ply: malformed"},
      {{"voxelize", test::data_path("edge/crash-fuzz.ply"), "-o", out}, 3, "crash-fuzz.ply: truncated PLY header"},
      {{"voxelize", test::data_path("edge/OutOfMemory.off"), "-o", out}, 3, "OutOfMemory.off: the header declares 353535235358 vertices"},
      {{"voxelize", test::data_path("formats/gltf/Duck.glb"), "-o", out, "--loader", "native"}, 2, "--loader native reads .ply, .stl and .obj only"},
      {{"voxelize", test::data_path("edge/testline.obj"), "-o", out}, 3, "no triangles"},
      {{"voxelize", test::data_path("edge/BoxWithInfinites.glb"), "-o", out}, 3, "no usable triangles"},
      {{"voxelize", kDuck, "-o", dir.file("nodir/out.vdb")}, 4, "does not exist"},
      {{"voxelize", kDuck, "-o", "/proc/voxtile.vdb"}, 4, "cannot create"},
      {{"voxelize", kDuck, "-o", dir.file("big.npy"), "--dense-limit", "100"}, 5, "dense limit"},
  };
  for (const ErrorCase& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    SCOPED_TRACE(joined);
    std::vector<std::string> args = c.args;
    if (args[0] == "voxelize" && args.size() > 1) args.insert(args.end(), {"--device", "cpu"});
    const auto r = run_voxtile(args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.rfind("voxtile: error: ", 0), 0u) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_TRUE(dir.list().empty()) << "a failed run left a file behind";
  }
}

TEST(Cli, GpuDeviceWithoutAGpuIsAResourceError) {
  if (query_gpu().available) GTEST_SKIP() << "a GPU is present";
  test::TempDir dir;
  auto r = run_voxtile({"voxelize", kDuck, "-o", dir.file("d.vdb"), "--device", "gpu"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_TRUE(dir.list().empty());
  r = run_voxtile({"voxelize", kDuck, "-o", dir.file("d.vdb"), "--device", "auto", "-r", "16"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("using the CPU"), std::string::npos) << r.err;
}

TEST(Cli, SeveralInputsToADirectoryKeepGoingAfterAFailure) {
  test::TempDir dir;
  const auto r = run_voxtile({"voxelize", test::data_path("edge/empty.obj"), kDuck, "-o", dir.path(), "-r", "16", "-f", "ply"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(test::file_exists(dir.file("Duck.ply")));
  EXPECT_FALSE(test::file_exists(dir.file("empty.ply")));
}

TEST(Cli, AKilledRunLeavesNoPartialOutput) {
  test::TempDir dir;
  // Start a large job, kill it with SIGTERM mid-run, and check that nothing is left behind.
  const std::string cmd = std::string("cd '") + dir.path() + "' || exit 1; '" + test::voxtile_binary() + "' voxelize '" + kBunny +
                          "' -o b.npy -r 1000 --force -q -d cpu & pid=$!; for i in $(seq 1 3000); do "
                          "ls -a | grep -q tmp- && break; sleep 0.01; done; kill -TERM $pid; wait $pid; test $? -eq 143";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "voxtile should have been killed by SIGTERM while writing";
  EXPECT_TRUE(dir.list().empty()) << "a killed run left a file behind";
}

}  // namespace
}  // namespace voxtile
