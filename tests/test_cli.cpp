// The voxtile binary: success paths, every documented error, exit codes, no partial files.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <thread>

#include "cli/job.h"
#include "core/meshgen.h"
#include "io/mesh_reader.h"
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

// Every subcommand spells the options they share the same way (short and long name), and every
// command that writes a file takes -o/--output and -q/--quiet.
TEST(Cli, SharedOptionsAreSpelledTheSameInEveryCommand) {
  const std::vector<std::pair<std::string, std::string>> shared = {
      {"--output", "-o,--output"}, {"--device", "-d,--device"},   {"--quiet", "-q,--quiet"},
      {"--verbose", "-v,--verbose"}, {"--resolution", "-r,--resolution"}, {"--voxel-size", "-s,--voxel-size"},
      {"--mode", "-m,--mode"},     {"--target", "-t,--target"},   {"--format", "-f,--format"}};
  const std::vector<std::string> writers = {"voxelize", "bucket", "batch", "csg", "points", "generate", "mesh"};
  for (const char* cmd : {"voxelize", "bucket", "batch", "compare", "csg", "points", "info", "generate", "mesh"}) {
    const test::RunResult r = run_voxtile({cmd, "--help"});
    ASSERT_EQ(r.exit_code, 0) << cmd;
    for (const auto& [name, spelling] : shared) {
      const bool has = r.out.find(name + " ") != std::string::npos || r.out.find(name + ",") != std::string::npos;
      if (has) {
        EXPECT_NE(r.out.find("  " + spelling), std::string::npos) << cmd << " spells " << name << " otherwise";
      }
    }
    if (std::find(writers.begin(), writers.end(), cmd) != writers.end()) {
      EXPECT_NE(r.out.find("-o,--output"), std::string::npos) << cmd;
      EXPECT_NE(r.out.find("-q,--quiet"), std::string::npos) << cmd;
    }
  }
  // batch's older spellings stay as aliases.
  const std::string batch = run_voxtile({"batch", "--help"}).out;
  EXPECT_NE(batch.find("-o,--output,--out"), std::string::npos);
  EXPECT_NE(batch.find("-d,--device,--devices"), std::string::npos);
}

// Long stages show a progress line on a terminal (VOXTILE_PROGRESS=always draws it on any stderr,
// at once): the stage names, a bar with a percentage where the amount of work is known, cleared
// before the summary; nothing when quiet, when stderr is not a terminal, or in batch (own bar).
TEST(Cli, ProgressLineForLongStagesInEveryCommand) {
  test::TempDir dir;
  const std::string always = "VOXTILE_PROGRESS=always ";
  // (one thread: on 16 cores the stages with a known amount of work could end within one 20 ms tick,
  // and the line showed no bar; seen once on an H200 machine)
  test::RunResult r = run_voxtile(
      {"voxelize", kBunny, "-o", dir.file("s.vdb"), "-r", "128", "-t", "sdf", "-d", "cpu", "--threads", "1"}, always);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("\r\033[Kvoxelize (cpu): "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("%"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[#"), std::string::npos) << r.err;
  // The summary starts on a cleared line and nothing is drawn after it.
  const size_t summary = r.err.find(std::string(kBunny) + ": ");
  ASSERT_NE(summary, std::string::npos) << r.err;
  EXPECT_EQ(r.err.compare(summary - 4, 4, "\r\033[K"), 0) << r.err;
  EXPECT_EQ(r.err.find('\r', summary), std::string::npos) << r.err;
  // -q: nothing; not a terminal: nothing.
  r = run_voxtile({"voxelize", kBunny, "-o", dir.file("q.vdb"), "-r", "128", "-t", "sdf", "-d", "cpu", "-q"}, always);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = run_voxtile({"voxelize", kBunny, "-o", dir.file("n.vdb"), "-r", "128", "-t", "sdf", "-d", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  // Other commands name their stages too.
  // (one thread, so that the stage lasts over a 20 ms tick on a 16-core machine too)
  r = run_voxtile({"csg", test::data_path("csg/gear.csg"), "--solid", "-o", dir.file("g.vdb"), "-r", "500", "-d", "cpu",
                   "--threads", "1"},
                  always);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("solid (cpu)"), std::string::npos) << r.err;
  r = run_voxtile({"compare", dir.file("s.vdb"), dir.file("q.vdb")}, always);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_voxtile({"batch", kBunny, "-o", dir.file("{stem}_b.vdb"), "-r", "64", "-d", "cpu"}, always);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("voxelize (cpu): "), std::string::npos) << r.err;
}

// --device takes the same values in every command: auto, cpu, gpu, all, or a list of GPU indices
// (a single run uses the first); malformed values are usage errors, GPUs that are not there
// resource errors.
TEST(Cli, DeviceTakesAllAndListsEverywhere) {
  test::TempDir dir;
  const GpuInfo gpu = query_gpu(0);
  const std::vector<std::vector<std::string>> commands = {
      {"voxelize", kBunny, "-o", dir.file("v.vdb"), "-r", "16"},
      {"bucket", kBunny, "-o", dir.file("b.npz"), "-r", "16"},
      {"batch", kBunny, "-o", dir.file("{stem}_batch.vdb"), "-r", "16"},
      {"csg", test::data_path("csg/gear.csg"), "--solid", "-o", dir.file("c.vdb"), "-r", "16"},
      {"points", test::data_path("points/pond.0.ply"), "-o", dir.file("p.vdb"), "-r", "16"}};
  for (const auto& base : commands) {
    for (const char* bad : {"x", "0,,1", "1,", "0,0", "-1", "gpu0"}) {
      std::vector<std::string> a = base;
      a.insert(a.end(), {"-d", bad, "-q"});
      const test::RunResult r = run_voxtile(a);
      EXPECT_EQ(r.exit_code, 2) << base[0] << " -d " << bad << ": " << r.err;
      EXPECT_NE(r.err.find("--device"), std::string::npos) << r.err;
    }
    for (const char* ok : {"all", "0", "0,1"}) {
      std::vector<std::string> a = base;
      a.insert(a.end(), {"-d", ok, "-q"});
      const test::RunResult r = run_voxtile(a);
      if (!gpu.available) {
        EXPECT_EQ(r.exit_code, 5) << base[0] << " -d " << ok << ": " << r.err;  // no GPU: resource error
      } else if (std::string(ok) == "0,1" && gpu_count() < 2 && base[0] == "batch") {
        EXPECT_EQ(r.exit_code, 5) << r.err;  // batch uses every GPU listed
      } else {
        EXPECT_EQ(r.exit_code, 0) << base[0] << " -d " << ok << ": " << r.err;
      }
    }
  }
}

TEST(Cli, BatchMakesTheDirectoriesItsTemplateNames) {
  test::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0750), 0);
  for (const char* out : {"-o", "--output", "--out"}) {
    const std::string tmpl = dir.file(std::string("a") + out + "/b/c/{stem}.vdb");
    const test::RunResult r = run_voxtile({"batch", kBunny, out, tmpl, "-r", "16", "-d", "cpu", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string made = dir.file(std::string("a") + out + "/b/c/stanford_bunny.vdb");
    EXPECT_TRUE(test::file_exists(made)) << made;
    struct stat st;
    ASSERT_EQ(stat(dir.file(std::string("a") + out + "/b").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0750u) << "the parent's permissions";
  }
  // A file where a directory should be: one clean output error, nothing written.
  { std::ofstream(dir.file("file")) << "x"; }
  const test::RunResult r =
      run_voxtile({"batch", kBunny, "--devices", "cpu", "-o", dir.file("file/sub/{stem}.vdb"), "-r", "16", "-q"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("file/sub"), std::string::npos) << r.err;
}

TEST(Cli, CompareQuietSaysItWithItsExitCodeOnly) {
  test::TempDir dir;
  ASSERT_EQ(run_voxtile({"voxelize", kBunny, "-o", dir.file("a.vdb"), "-r", "16", "-d", "cpu", "-q"}).exit_code, 0);
  ASSERT_EQ(run_voxtile({"voxelize", kBunny, "-o", dir.file("b.vdb"), "-r", "17", "-d", "cpu", "-q"}).exit_code, 0);
  test::RunResult r = run_voxtile({"compare", "-q", dir.file("a.vdb"), dir.file("a.vdb")});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  r = run_voxtile({"compare", "--quiet", dir.file("a.vdb"), dir.file("b.vdb")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  r = run_voxtile({"compare", "-q", dir.file("a.vdb"), dir.file("missing.vdb")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err), 1u);
}

TEST(Cli, AnEmptyBboxIsAUsageErrorInEveryCommand) {
  test::TempDir dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"voxelize", kBunny, "-o", dir.file("x.vdb")},
        std::vector<std::string>{"batch", kBunny, "-o", dir.file("{stem}.vdb"), "-d", "cpu"},
        std::vector<std::string>{"info", kBunny}}) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--bbox", "1", "1", "1", "0", "2", "2"});
    const test::RunResult r = run_voxtile(a);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("--bbox"), std::string::npos) << args[0];
  }
  EXPECT_FALSE(test::file_exists(dir.file("stanford_bunny.vdb")));
}

// Options of several values (--voxel-size 1 or 3, --bbox 6, --dims 3, bucket's repeatable -o) take
// only their own values, so they may come before the input: the same bytes as after it.
TEST(Cli, OptionsOfSeveralValuesMayComeBeforeTheInput) {
  test::TempDir dir;
  const std::vector<std::vector<std::string>> options = {
      {"-s", "0.005"}, {"--voxel-size", "0.005"}, {"-s", "0.004", "0.005", "0.006"},
      {"--bbox", "-0.1", "0.0", "-0.06", "0.06", "0.19", "0.06"}, {"--dims", "20", "24", "16"}};
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string before = dir.file("b" + std::to_string(i) + ".vdb"), after = dir.file("a" + std::to_string(i) + ".vdb");
    std::vector<std::string> b = {"voxelize"}, a = {"voxelize", kBunny, "-o", after};
    b.insert(b.end(), options[i].begin(), options[i].end());
    b.insert(b.end(), {kBunny, "-o", before});
    a.insert(a.end(), options[i].begin(), options[i].end());
    const test::RunResult rb = run_voxtile(b), ra = run_voxtile(a);
    ASSERT_EQ(rb.exit_code, 0) << options[i][0] << ": " << rb.err;
    ASSERT_EQ(ra.exit_code, 0) << options[i][0] << ": " << ra.err;
    EXPECT_EQ(test::read_file(before), test::read_file(after)) << options[i][0];
  }
  // Two numbers are neither form: still a usage error, whatever follows.
  EXPECT_EQ(run_voxtile({"voxelize", "-s", "0.01", "0.02", kBunny, "-o", dir.file("x.vdb")}).exit_code, 2);
  EXPECT_EQ(run_voxtile({"voxelize", kBunny, "-o", dir.file("x.vdb"), "-s", "0.01", "0.02"}).exit_code, 2);
  EXPECT_FALSE(test::file_exists(dir.file("x.vdb")));
  // bucket: one file per -o, repeatable.
  const auto r = run_voxtile({"bucket", "-o", dir.file("f.npz"), "-o", dir.file("n.vdb"), kDuck, "-r", "16", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test::file_exists(dir.file("f.npz")));
  EXPECT_TRUE(test::file_exists(dir.file("n.vdb")));
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
  // A .ply of voxel centres that voxtile wrote is described as its grids (compare and preview read
  // it so); other .ply files of points stay point clouds.
  ASSERT_EQ(run_voxtile({"voxelize", kDuck, "-o", dir.file("g.ply"), "-r", "32", "-t", "binary,count"}).exit_code, 0);
  r = run_voxtile({"info", dir.file("g.ply")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kind: voxel centres"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("grid \"count\" type=int32 active_voxels="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" dims=32x"), std::string::npos) << r.out;
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
      {{"voxelize", "-", "-o", out}, 3, "-: standard input is not read"},
      {{"voxelize", "/dev/zero", "-o", out}, 3, "/dev/zero: not a regular file (a pipe or device"},
      {{"points", "/dev/zero", "-o", dir.file("p.ply")}, 3, "/dev/zero: not a regular file (a pipe or device"},
      {{"voxelize", test::data_path("edge/crash-fuzz.ply"), "-o", out, "--loader", "assimp"},
       3,
       "crash-fuzz.ply: truncated PLY header"},
      {{"voxelize", test::data_path("edge/crash-fuzz.ply"), "-o", out}, 3, "crash-fuzz.ply: truncated PLY header"},
      {{"voxelize", test::data_path("edge/OutOfMemory.off"), "-o", out},
       3,
       "OutOfMemory.off: truncated: the header declares 353535235358 vertices"},
      {{"voxelize", test::data_path("formats/dae/duck.dae"), "-o", out, "--loader", "native"},
       2,
       "--loader native reads .ply, .stl, .obj, .off, .gltf, .glb and .3mf only"},
      {{"voxelize", test::data_path("edge/testline.obj"), "-o", out}, 3, "no triangles"},
      {{"voxelize", test::data_path("edge/BoxWithInfinites.glb"), "-o", out}, 3, "no usable triangles"},
      {{"voxelize", kDuck, "-o", dir.file("nodir/out.vdb")}, 4, "does not exist"},
      {{"voxelize", kDuck, "-o", "/proc/voxtile.vdb"}, 4, "cannot create"},
      {{"voxelize", kDuck, "-o", dir.file("big.npy"), "--dense-limit", "100"}, 5, "dense limit"},
      // Refused once the grid is known, before voxelizing: 65536 x 64962 x 50794 voxels would take the
      // CPU many minutes (and the GPU more memory than it has) before the writer refused them.
      {{"voxelize", kBunny, "-o", dir.file("huge.npy"), "-r", "65536"}, 5, "huge.npy: a dense 65536x64962x50794 grid"},
      {{"voxelize", kBunny, "-o", dir.file("huge.binvox"), "-r", "65536"}, 5, "dense limit"},
      {{"voxelize", kDuck, "-o", dir.file("flat.binvox"), "--dims", "10", "20", "30"}, 2, "cubic voxels"},
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

// Exit code 1 is a bug. Inputs and environments that make a library (OpenVDB, nlohmann/json, the
// standard library's number parsing) throw must give their documented code, never 1.
TEST(Cli, LibraryErrorsCausedByTheUserAreNeverInternal) {
  test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.file(name), std::ios::binary) << bytes;
    return dir.file(name);
  };
  // A 3 mm part at -r 256 (voxels of 1.2e-5): every target to .vdb, read back by info and compare.
  const std::string tiny = write("tiny.obj", "v 0 0 0\nv 0.003 0 0\nv 0 0.003 0\nv 0 0 0.003\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n");
  const std::vector<std::string> targets = {"binary", "count", "id", "distance", "normal", "binary,count"};
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::string& target = targets[i];
    SCOPED_TRACE(target);
    const std::string vdb = dir.file("tiny_" + std::to_string(i) + ".vdb");
    auto r = run_voxtile({"voxelize", tiny, "-o", vdb, "-r", "256", "-t", target, "-d", "cpu", "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_voxtile({"info", vdb});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("voxel_size=1.1718"), std::string::npos) << r.out;
    r = run_voxtile({"compare", vdb, vdb});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string good = dir.file("tiny_1.vdb");  // count
  const std::string vdb_bytes = test::read_file(good);
  const std::string npy_head = std::string("\x93NUMPY\x01\x00", 8);
  auto npy = [&](const std::string& name, const std::string& dict) {
    std::string h = dict;
    while ((h.size() + 11) % 64) h += ' ';
    h += '\n';
    return write(name, npy_head + char(h.size() & 0xff) + char(h.size() >> 8) + h + std::string(64, '\0'));
  };
  const std::string bad_shape = npy("bad_shape.npy", "{'descr': '|u1', 'fortran_order': False, 'shape': (4, x4, 4), }");
  const std::string huge_shape =
      npy("huge_shape.npy", "{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999, 4, 4), }");
  const std::string overflow_shape =
      npy("overflow_shape.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }");
  const std::string manifest = write("m.jsonl", "{\"input\": \"" + tiny + "\", \"output\": \"" + dir.file("m.vdb") +
                                                    "\", \"resolution\": 1e20}\n");
  const std::string manifest2 = write("m2.jsonl", "{\"input\": \"" + tiny + "\", \"output\": \"" + dir.file("m.vdb") +
                                                     "\", \"dims\": [8, 8, -1]}\n");
  struct Case {
    std::vector<std::string> args;
    int code;
  };
  const std::vector<Case> cases = {
      {{"info", write("half.vdb", vdb_bytes.substr(0, vdb_bytes.size() / 2))}, 3},
      {{"info", write("head.vdb", vdb_bytes.substr(0, 40))}, 3},
      {{"info", write("garbage.vdb", std::string(4096, 'x'))}, 3},
      {{"compare", dir.file("half.vdb"), good}, 2},
      {{"points", dir.file("half.vdb"), "-o", dir.file("p.ply")}, 3},
      {{"info", bad_shape}, 3},
      {{"info", huge_shape}, 3},
      {{"info", overflow_shape}, 3},
      {{"compare", bad_shape, good}, 2},
      {{"batch", tiny, "--out", dir.file("{stem}_b.vdb"), "--devices", "99999999999"}, 2},
      {{"batch", "--manifest", manifest}, 2},
      {{"batch", "--manifest", manifest2}, 2},
      {{"voxelize", tiny, "-o", dir.file("x.vdb"), "-s", "1e-300"}, 2},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    SCOPED_TRACE(joined);
    const auto r = run_voxtile(c.args);
    EXPECT_EQ(r.exit_code, c.code) << r.err;
    EXPECT_EQ(r.err.find("internal"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("voxtile: error: "), std::string::npos) << r.err;
  }
  EXPECT_FALSE(test::file_exists(dir.file("m.vdb")));
  EXPECT_FALSE(test::file_exists(dir.file("p.ply")));
  // info of a missing file or a directory: the error alone, nothing on standard output.
  for (const std::string& path : {dir.file("missing.obj"), dir.path()}) {
    const auto r = run_voxtile({"info", path});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(r.out, "") << path;
  }
  // A file name that is not UTF-8 (Latin-1) in JSON statistics, sidecars and reports.
  const std::string latin1 = dir.file("bunny\xe9.ply");
  std::ofstream(latin1, std::ios::binary) << test::read_file(kBunny);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"voxelize", latin1, "-o", dir.file("l.ply"), "-r", "16", "--stats", "-d", "cpu"},
        std::vector<std::string>{"voxelize", latin1, "-o", dir.file("l.raw"), "-r", "16", "-d", "cpu"},
        std::vector<std::string>{"batch", latin1, "--out", dir.file("{stem}.vdb"), "-r", "16", "--report",
                                 dir.file("r.json"), "--devices", "cpu"}}) {
    const auto r = run_voxtile(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << " " << args[3] << ": " << r.err;
  }
}

// A full disk (here a file size limit: writes fail with EFBIG, as with ENOSPC) fails every writer
// with exit 4 and leaves nothing, neither under the final name nor as a temporary file.
TEST(Cli, EveryWriterFailsCleanlyOnAFullDisk) {
  test::TempDir dir;
  const std::string csg = test::data_path("csg/drilled_cube.csg");
  const std::vector<std::vector<std::string>> cases = {
      {"voxelize", kBunny, "-o", dir.file("b.vdb"), "-r", "256"},                    // direct VDB writer
      {"voxelize", kBunny, "-o", dir.file("c.vdb"), "-r", "256", "-t", "count"},      // through OpenVDB
      {"voxelize", kBunny, "-o", dir.file("n.vdb"), "-r", "128", "-t", "binary,normal"},
      {"voxelize", kBunny, "-o", dir.file("b.ply"), "-r", "128"},
      {"voxelize", kBunny, "-o", dir.file("b.npy"), "-r", "128", "--force"},
      {"voxelize", kBunny, "-o", dir.file("b.raw"), "-r", "128", "-t", "distance", "--force"},
      {"bucket", kBunny, "-o", dir.file("k.npz"), "-r", "128"},
      {"points", kBunny, "-o", dir.file("p.ply"), "--count", "100000"},
      {"csg", csg, "-o", dir.file("s.ply")},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    SCOPED_TRACE(joined);
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--device", "cpu"});
    const auto r = run_voxtile(a, "ulimit -f 16; ");
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("voxtile: error: "), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_TRUE(dir.list().empty()) << "a failed write left a file behind";
  }
}

// A writer killed with SIGKILL leaves its temporary file; the next run writing the same output
// removes it, and only temporary files of that output whose writer is gone.
TEST(Cli, StaleTemporaryFilesOfDeadWritersAreRemoved) {
  test::TempDir dir;
  auto make = [&](const std::string& name, bool old) {
    std::ofstream(dir.file(name)) << "partial";
    if (old) {
      const std::string cmd = "touch -d '2 hours ago' '" + dir.file(name) + "'";
      EXPECT_EQ(std::system(cmd.c_str()), 0);
    }
  };
  make(".out.vdb.voxtile-tmp-aB3dE9", true);    // stale: removed
  make(".out.vdb.voxtile-tmp-Zz0000", false);   // recent (its writer may be starting): kept
  make(".other.vdb.voxtile-tmp-qQ1234", true);  // another output's: kept
  make(".out.vdb.tmp-aB3dE9", true);            // not voxtile's: kept
  make(".out.vdb.voxtile-tmp-LoCk42", true);    // held by a live writer (flock): kept
  const std::string held = dir.file(".out.vdb.voxtile-tmp-LoCk42");
  // The lock is held by the process that $! names (the shell becomes the sleep), so that killing it
  // frees the lock, and its output goes nowhere, so that nothing waits on its pipes for 20 s.
  const std::string hold = "sh -c 'exec 9>>\"$0\" && flock 9 && exec sleep 20' '" + held +
                           "' </dev/null >/dev/null 2>&1 & echo $! > '" + dir.file("pid") + "'; sleep 0.3";
  ASSERT_EQ(std::system(hold.c_str()), 0);
  const auto r = run_voxtile({"voxelize", kBunny, "-o", dir.file("out.vdb"), "-r", "32", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string kill = "kill $(cat '" + dir.file("pid") + "') 2>/dev/null; rm -f '" + dir.file("pid") + "'";
  EXPECT_EQ(std::system(kill.c_str()), 0);
  EXPECT_FALSE(test::file_exists(dir.file(".out.vdb.voxtile-tmp-aB3dE9")));
  for (const char* kept : {".out.vdb.voxtile-tmp-Zz0000", ".other.vdb.voxtile-tmp-qQ1234", ".out.vdb.tmp-aB3dE9",
                           ".out.vdb.voxtile-tmp-LoCk42"})
    EXPECT_TRUE(test::file_exists(dir.file(kept))) << kept;
  EXPECT_TRUE(test::file_exists(dir.file("out.vdb")));
}

// An output that is an input (the same name, a hard link, a symbolic link) is refused with exit 2
// and the input is untouched; outputs that are devices or FIFOs are written into, never replaced.
TEST(Cli, OutputsNeverReplaceInputsOrDevices) {
  test::TempDir dir;
  const std::string in = dir.file("in.ply");
  std::ofstream(in, std::ios::binary) << test::read_file(kBunny);
  ASSERT_EQ(std::system(("ln '" + in + "' '" + dir.file("hard.ply") + "' && ln -s in.ply '" + dir.file("soft.ply") + "'").c_str()), 0);
  const std::string before = test::read_file(in);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"voxelize", in, "-o", in, "-r", "16"},
        std::vector<std::string>{"voxelize", in, "-o", in, "-f", "vdb", "-r", "16"},
        std::vector<std::string>{"voxelize", in, "-o", dir.file("hard.ply"), "-r", "16"},
        std::vector<std::string>{"voxelize", dir.file("soft.ply"), "-o", dir.file("hard.ply"), "-r", "16"},
        std::vector<std::string>{"points", in, "-o", dir.file("soft.ply")},
        std::vector<std::string>{"points", in, "-o", in}}) {
    SCOPED_TRACE(args[0] + " " + args[1] + " -o " + args[3]);
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--device", "cpu"});
    const auto r = run_voxtile(a);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("is the input file"), std::string::npos) << r.err;
  }
  EXPECT_EQ(test::read_file(in), before);
  // A symbolic link as output stays a link: its target is written.
  ASSERT_EQ(std::system(("ln -s target.vdb '" + dir.file("link.vdb") + "'").c_str()), 0);
  auto r = run_voxtile({"voxelize", in, "-o", dir.file("link.vdb"), "-r", "16", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(lstat(dir.file("link.vdb").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_TRUE(test::file_exists(dir.file("target.vdb")));
  // A FIFO gets the bytes (read by a background cat); /dev/full fails with exit 4 and stays a device.
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string reader = "cat '" + fifo + "' > '" + dir.file("from_pipe.npy") + "' &";
  ASSERT_EQ(std::system(reader.c_str()), 0);
  r = run_voxtile({"voxelize", in, "-o", fifo, "-f", "npy", "-r", "16", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_voxtile({"voxelize", in, "-o", dir.file("direct.npy"), "-r", "16", "--device", "cpu"});
  for (int i = 0; i < 100 && test::read_file(dir.file("from_pipe.npy")).size() < test::read_file(dir.file("direct.npy")).size(); ++i)
    usleep(20000);
  EXPECT_EQ(test::read_file(dir.file("from_pipe.npy")), test::read_file(dir.file("direct.npy")));
  if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode) && access("/dev/full", W_OK) == 0) {
    r = run_voxtile({"voxelize", in, "-o", "/dev/full", "-f", "vdb", "-r", "16", "--device", "cpu"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    ASSERT_EQ(stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
  r = run_voxtile({"voxelize", in, "-o", "/dev/null", "-f", "vdb", "-r", "16", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// `-o -` (and /dev/stdout) writes the same bytes as a file would, into standard output as it stands,
// for every command that writes one output; what cannot work is refused before any work (exit 2): no
// format named, --stats printing into the same stream, two outputs on it, binary data on a terminal,
// batch and bucket. A reader that leaves early gets a write error (exit 4), not a temporary file left.
TEST(Cli, DashWritesToStandardOutput) {
  test::TempDir dir;
  auto same_as_file = [&](std::vector<std::string> args, const std::string& name) {
    SCOPED_TRACE(args[0] + " -> " + name);
    std::vector<std::string> file_args = args;
    file_args.insert(file_args.end(), {"-o", dir.file(name)});
    const auto f = run_voxtile(file_args);
    ASSERT_EQ(f.exit_code, 0) << f.err;
    args.insert(args.end(), {"-o", "-"});
    auto r = run_voxtile(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, test::read_file(dir.file(name)));
    EXPECT_FALSE(r.out.empty());
    args.back() = "/dev/stdout";
    r = run_voxtile(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, test::read_file(dir.file(name)));
  };
  const std::vector<std::string> cpu = {"--device", "cpu"};
  same_as_file({"voxelize", kBunny, "-r", "24", "-f", "npy", "--device", "cpu"}, "b.npy");
  same_as_file({"voxelize", kBunny, "-r", "24", "-f", "xyz", "--device", "cpu"}, "b.xyz");  // (-f xyz was refused)
  same_as_file({"voxelize", kBunny, "-r", "24", "--format", "VDB", "--device", "cpu"}, "b.vdb");
  same_as_file({"points", kBunny, "--count", "500", "-f", "ply"}, "p.ply");
  same_as_file({"mesh", kBunny, "-r", "16", "-f", "obj", "--device", "cpu"}, "m.obj");
  same_as_file({"generate", "sphere", "--rings", "6", "-f", "stl"}, "s.stl");
  same_as_file({"generate", "sphere", "--rings", "6", "-f", "off"}, "s.off");
  same_as_file({"preview", kBunny, "-r", "16", "--size", "40x30", "--device", "cpu"}, "p.png");
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"voxelize", kBunny, "-o", "-", "-r", "16"}, "name it with --format"},
           {{"mesh", kBunny, "-o", "-", "-r", "16"}, "name it with --format"},
           {{"voxelize", kBunny, "-o", "-", "-f", "npy", "-r", "16", "--stats"}, "--stats prints its JSON"},
           {{"mesh", kBunny, "-o", "/dev/stdout", "-f", "ply", "-r", "16", "--stats"}, "--stats prints its JSON"},
           {{"voxelize", kBunny, "-o", "-", "-f", "npy", "-r", "16", "--preview", "/dev/stdout"}, "both standard output"},
           {{"points", kBunny, "-o", "-", "-f", "ply", "--preview", "-"}, "both standard output"},
           {{"batch", kBunny, "-o", "-", "-r", "16"}, "batch writes files"},
           {{"bucket", kBunny, "-o", "-", "-r", "16"}, "bucket writes files"},
           {{"mesh", kBunny, "-o", dir.file("m.foo"), "-r", "16"}, "meshes are written as"}}) {
    SCOPED_TRACE(args[0] + " " + args[3]);
    std::vector<std::string> a = args;
    a.insert(a.end(), cpu.begin(), cpu.end());
    const auto r = run_voxtile(a);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.find("triangles ->"), std::string::npos) << "refused after the work: " << r.err;
  }
  // A reader that stops early: a write error, and no temporary file left in TMPDIR.
  test::TempDir tmp;
  const std::string cmd = "TMPDIR='" + tmp.path() + "' sh -c \"('" + test::voxtile_binary() + "' voxelize '" + kBunny +
                          "' -o - -f xyz -r 256 --device cpu 2>/dev/null; echo \\$? > '" + dir.file("rc") +
                          "') | head -c 10 > /dev/null\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(test::read_file(dir.file("rc")), "4\n");
  EXPECT_TRUE(tmp.list().empty());
  // Binary data is not written to a terminal (script(1) gives the command one); text is.
  if (std::system("command -v script > /dev/null 2>&1") == 0) {
    auto on_terminal = [&](const std::string& format) {
      const std::string out = dir.file("terminal_" + format);
      const std::string cmd = "script -qec \"'" + test::voxtile_binary() + "' voxelize '" + kBunny +
                              "' -o - -r 8 --device cpu -f " + format + "\" /dev/null > '" + out + "' 2>&1 < /dev/null";
      std::system(cmd.c_str());
      return test::read_file(out);
    };
    EXPECT_NE(on_terminal("npy").find("standard output is a terminal"), std::string::npos);
    const std::string text = on_terminal("xyz");
    EXPECT_EQ(text.find("terminal"), std::string::npos) << text;
    EXPECT_NE(text.find("-0.08495871 0.062180962 -0.013217662"), std::string::npos) << text;
  }
}

// Option values that would wrap or that describe nothing are usage errors (exit 2), and header
// counts that cannot be are refused before anything is allocated, with every loader.
TEST(Cli, AbsurdSizesAndCutHeadersFailAtOnce) {
  test::TempDir dir;
  const std::string npy = dir.file("b.npy");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--dense-limit", "-1"}, std::vector<std::string>{"--dense-limit", "18446744073709551616"},
        std::vector<std::string>{"--dense-limit", "0"}, std::vector<std::string>{"--dense-limit", "12Q"},
        std::vector<std::string>{"--gpu-memory", "-5"}, std::vector<std::string>{"--bbox", "1", "1", "1", "0", "0", "0"},
        std::vector<std::string>{"--bbox", "0", "0", "0", "1", "1", "0"}}) {
    std::vector<std::string> a = {"voxelize", kBunny, "-o", npy, "-r", "64", "--device", "cpu"};
    a.insert(a.end(), args.begin(), args.end());
    const auto r = run_voxtile(a);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_FALSE(test::file_exists(npy));
  }
  auto r = run_voxtile({"voxelize", kBunny, "-o", npy, "-r", "64", "--device", "cpu", "--dense-limit", "1K"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  r = run_voxtile({"voxelize", kBunny, "-o", npy, "-r", "64", "--device", "cpu", "--dense-limit", "64M"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.file(name), std::ios::binary) << bytes;
    return dir.file(name);
  };
  const std::string cut = write("cut.ply", "ply\nformat ascii 1.0\nelement verte");
  const std::string big = write("big.ply", "ply\nformat ascii 1.0\nelement vertex 99999999999999999999\nproperty float x\nend_header\n");
  for (const char* loader : {"auto", "native", "assimp"}) {
    for (const std::string& f : {cut, big}) {
      const auto t0 = std::chrono::steady_clock::now();
      r = run_voxtile({"info", f, "--loader", loader});
      EXPECT_EQ(r.exit_code, 3) << loader << " " << f << ": " << r.err;
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0) << "hang guard";
    }
  }
}

// What a careful user found (issue 20): ids of triangle 0 survive dense output; info describes point
// clouds and every output; downsampled colours are what viewers read; BoolGrids and half floats on
// request; LAS is diagnosed; csg statistics, help and batch reports say all they should.
TEST(Cli, OutputsReadAsUsersExpect) {
  test::TempDir dir;
  const std::string tet = dir.file("t.obj");
  std::ofstream(tet) << "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n";
  for (const char* ext : {"vdb", "npy", "raw"}) {
    const auto r = run_voxtile({"voxelize", tet, "-o", dir.file(std::string("id.") + ext), "-t", "id", "-r", "16", "-d", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(run_voxtile({"compare", dir.file("id.vdb"), dir.file("id.npy")}).exit_code, 0);
  EXPECT_EQ(run_voxtile({"compare", dir.file("id.vdb"), dir.file("id.raw")}).exit_code, 0);
  EXPECT_NE(test::read_file(dir.file("id.json")).find("\"empty\": -1"), std::string::npos);
  // info on point clouds and on every output format.
  const std::string xyz = test::data_path("points/points_cloudcompare.xyz");
  auto r = run_voxtile({"info", xyz});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("points: 101"), std::string::npos) << r.out;
  r = run_voxtile({"info", dir.file("id.npy")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("type=int32"), std::string::npos) << r.out;
  EXPECT_EQ(run_voxtile({"info", dir.file("id.raw")}).exit_code, 0);
  ASSERT_EQ(run_voxtile({"bucket", tet, "-o", dir.file("k.npz"), "-r", "16", "-d", "cpu"}).exit_code, 0);
  r = run_voxtile({"info", dir.file("k.npz")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fragments: "), std::string::npos) << r.out;
  // Downsampled colours: uchar red green blue first, then the exact mean; read back equal.
  ASSERT_EQ(run_voxtile({"points", xyz, "-o", dir.file("pc.ply"), "-r", "16", "-d", "cpu"}).exit_code, 0);
  ASSERT_EQ(run_voxtile({"points", xyz, "-o", dir.file("pc.vdb"), "-r", "16", "-d", "cpu"}).exit_code, 0);
  const std::string ply = test::read_file(dir.file("pc.ply"));
  EXPECT_NE(ply.find("property uchar red\nproperty uchar green\nproperty uchar blue\n"), std::string::npos);
  EXPECT_EQ(run_voxtile({"compare", dir.file("pc.vdb"), dir.file("pc.ply")}).exit_code, 0);
  // BoolGrids on request, the same voxels.
  ASSERT_EQ(run_voxtile({"voxelize", tet, "-o", dir.file("b.vdb"), "-r", "16", "-d", "cpu", "--vdb-bool"}).exit_code, 0);
  ASSERT_EQ(run_voxtile({"voxelize", tet, "-o", dir.file("m.vdb"), "-r", "16", "-d", "cpu"}).exit_code, 0);
  EXPECT_NE(run_voxtile({"info", dir.file("b.vdb")}).out.find("type=bool"), std::string::npos);
  EXPECT_EQ(run_voxtile({"compare", dir.file("b.vdb"), dir.file("m.vdb")}).exit_code, 0);
  // Half floats on request: a smaller file of the same voxels, their values within a half's rounding.
  for (const char* t : {"sdf", "distance"}) {
    SCOPED_TRACE(t);
    ASSERT_EQ(run_voxtile({"voxelize", tet, "-o", dir.file("f.vdb"), "-r", "16", "-d", "cpu", "-t", t}).exit_code, 0);
    ASSERT_EQ(run_voxtile({"voxelize", tet, "-o", dir.file("h.vdb"), "-r", "16", "-d", "cpu", "-t", t, "--vdb-half"})
                  .exit_code,
              0);
    EXPECT_LT(test::read_file(dir.file("h.vdb")).size(), test::read_file(dir.file("f.vdb")).size());
    EXPECT_NE(run_voxtile({"info", dir.file("h.vdb")}).out.find("type=float storage=half active_voxels="),
              std::string::npos);
    EXPECT_EQ(run_voxtile({"info", dir.file("f.vdb")}).out.find("storage=half"), std::string::npos);
    EXPECT_EQ(run_voxtile({"compare", dir.file("f.vdb"), dir.file("h.vdb"), "-q"}).exit_code, 1);
    EXPECT_EQ(run_voxtile({"compare", dir.file("f.vdb"), dir.file("h.vdb"), "--tolerance", "0.01"}).exit_code, 0);
  }
  {  // distances beyond a half's range (a mesh in small units): a usage error naming the file, no file
    const std::string big = dir.file("big.obj");
    std::ofstream(big) << "v 0 0 0\nv 1e7 0 0\nv 0 1e7 0\nv 0 0 1e7\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n";
    const auto r =
        run_voxtile({"voxelize", big, "-o", dir.file("big.vdb"), "-r", "16", "-d", "cpu", "-t", "sdf", "--vdb-half"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("big.vdb: grid \"sdf\" holds values up to"), std::string::npos) << r.err;
    EXPECT_FALSE(test::file_exists(dir.file("big.vdb")));
  }
  // A malformed LAS: an input problem named as such (tests/test_las.cpp has the rest).
  std::ofstream(dir.file("scan.laz"), std::ios::binary) << "LASF" << std::string(400, '\0');
  r = run_voxtile({"points", dir.file("scan.laz"), "-o", dir.file("x.vdb")});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("LAS version 0.0 is not supported"), std::string::npos) << r.err;
  // csg: statistics with the grid's voxel size and origin; help without "mesh bounds".
  r = run_voxtile({"csg", test::data_path("csg/gear.csg"), "--solid", "-o", dir.file("g.vdb"), "-r", "16", "--stats", "-d", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"voxel_size\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"origin\""), std::string::npos) << r.out;
  EXPECT_EQ(run_voxtile({"csg", "--help"}).out.find("mesh bounds"), std::string::npos);
  // The batch report counts jobs that never ran.
  r = run_voxtile({"batch", tet, test::data_path("edge/empty.obj"), tet, "--out", dir.file("b_{index}.vdb"), "-r", "8",
                   "--devices", "cpu", "-j", "1", "--report", dir.file("report.json")});
  EXPECT_NE(test::read_file(dir.file("report.json")).find("\"not run\""), std::string::npos);
}

// The CPU estimate --device auto compares with the GPU's start-up (cli/job.h): it grows with the
// triangles, the resolution and the targets, shrinks with threads; for solids and sdfs it adds the
// inside test (more under vote, much more on an open mesh under winding, whose boundary edges are
// summed over the columns) and the band (wider bands, more). (Its fit to measured times is in the
// README; timings are not tested here.)
TEST(Cli, CpuEstimateForSmallJobs) {
  const Mesh sphere = make_uv_sphere(0, 0, 0, 1.0f, 64, 128), fine = make_uv_sphere(0, 0, 0, 1.0f, 1024, 2048);
  auto spec = [](const Mesh& m, int r) {
    GridOptions go;
    go.resolution = r;
    return make_grid_spec(m.bounds(), go);
  };
  Job job;
  const double s64 = estimated_cpu_ms(job, sphere, spec(sphere, 64), 16);
  const double s1024 = estimated_cpu_ms(job, sphere, spec(sphere, 1024), 16);
  EXPECT_LT(s64, s1024);
  EXPECT_LT(s64, kSmallJobCpuMs);  // 16k triangles at 64^3: a few milliseconds
  EXPECT_GT(estimated_cpu_ms(job, sphere, spec(sphere, 1024), 2), s1024);
  EXPECT_GT(estimated_cpu_ms(job, fine, spec(fine, 64), 16), kSmallJobCpuMs);  // 4M triangles
  job.target = "binary,count";
  EXPECT_GT(estimated_cpu_ms(job, sphere, spec(sphere, 1024), 16), s1024);
  // Solids and sdfs: more than the surface alone, more with the grid and the band; a small one is
  // left to the CPU, a large one to the GPU.
  job.target = "solid";
  const double solid64 = estimated_cpu_ms(job, sphere, spec(sphere, 64), 16);
  EXPECT_GT(solid64, s64);
  EXPECT_LT(solid64, kSmallJobCpuMs);
  job.target = "sdf";
  const double sdf64 = estimated_cpu_ms(job, sphere, spec(sphere, 64), 16);
  EXPECT_LT(sdf64, kSmallJobCpuMs);
  EXPECT_GT(estimated_cpu_ms(job, sphere, spec(sphere, 128), 16), sdf64);
  job.band = 8;
  EXPECT_GT(estimated_cpu_ms(job, sphere, spec(sphere, 64), 16), sdf64);
  job.band = 3;
  EXPECT_GT(estimated_cpu_ms(job, sphere, spec(sphere, 4096), 16), kSmallJobCpuMs);
  EXPECT_GT(estimated_cpu_ms(job, fine, spec(fine, 64), 16), kSmallJobCpuMs);
  job.inside = "vote";
  EXPECT_GT(estimated_cpu_ms(job, sphere, spec(sphere, 64), 16), sdf64);
  // An open mesh (the sphere less a band of triangles: two boundary loops) under winding.
  job.inside = "winding";
  Mesh open = sphere;
  open.indices.erase(open.indices.begin() + 3 * 4000, open.indices.begin() + 3 * 4200);
  const double closed = estimated_cpu_ms(job, sphere, spec(sphere, 256), 16);
  const double open_winding = estimated_cpu_ms(job, open, spec(open, 256), 16);
  EXPECT_GT(open_winding, 2 * closed);
  job.inside = "parity";  // (no boundary term)
  EXPECT_LT(estimated_cpu_ms(job, open, spec(open, 256), 16), closed);
  // Its boundary is found as the winding test finds it: with every triangle's vertices its own (an
  // STL, an OBJ of unshared vertices) the closed sphere still has none, the open one its two loops.
  job.inside = "winding";
  auto unwelded = [](const Mesh& m) {
    Mesh u;
    for (uint32_t i : m.indices) {
      u.indices.push_back(uint32_t(u.positions.size()));
      u.positions.push_back(m.positions[i]);
    }
    return u;
  };
  EXPECT_DOUBLE_EQ(estimated_cpu_ms(job, unwelded(sphere), spec(sphere, 256), 16), closed);
  EXPECT_DOUBLE_EQ(estimated_cpu_ms(job, unwelded(open), spec(open, 256), 16), open_winding);
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
  std::string left;
  for (const std::string& f : dir.list()) left += " " + f;
  EXPECT_TRUE(left.empty()) << "a killed run left files behind:" << left;
}

// The detached parent (cli/detach.h) is forced on here (no GPU needed): the same outputs, exit codes
// and messages; signals reach the child, which leaves no temporary file; pipes end with the work.
TEST(Cli, DetachedRunsBehaveLikeDirectOnes) {
  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  test::RunResult r = test::run_voxtile({"voxelize", bunny, "-o", dir.file("a.vdb"), "-r", "24", "--stats"},
                                        "VOXTILE_DETACH=always ");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"checksum\""), std::string::npos);
  const test::RunResult direct = test::run_voxtile(
      {"voxelize", bunny, "-o", dir.file("b.vdb"), "-r", "24", "--stats"}, "VOXTILE_DETACH=never ");
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(r.out.substr(r.out.find("\"checksum\""), 30), direct.out.substr(direct.out.find("\"checksum\""), 30));
  r = test::run_voxtile({"voxelize", dir.file("missing.ply"), "-o", dir.file("c.vdb"), "-d", "gpu,0"},
                        "VOXTILE_DETACH=always ");
  EXPECT_EQ(r.exit_code, 2);  // a usage error
  r = test::run_voxtile({"voxelize", dir.file("missing.ply"), "-o", dir.file("c.vdb"), "-q"}, "VOXTILE_DETACH=always ");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // A long job stopped by `timeout` (SIGTERM to the parent only): forwarded, the child removes its
  // temporary file and dies of it, the parent reports it as timeout expects (124).
  const auto t0 = std::chrono::steady_clock::now();
  // (the job: about 1 s on an H200 machine, where one at 1400^3 ended within the 0.4 s)
  r = test::run_voxtile({"voxelize", bunny, "-o", dir.file("d.vdb"), "-r", "2800", "-t", "count,normal,distance"},
                        "VOXTILE_DETACH=always timeout -s TERM 0.4 ");
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const std::string& f : dir.list()) EXPECT_EQ(f.find("d.vdb"), std::string::npos) << f;
  // ("[v]" keeps pgrep from finding its own shell's command line)
  EXPECT_NE(std::system(("pgrep -f '[v]oxelize .*" + dir.file("d.vdb") + "' >/dev/null").c_str()), 0)
      << "the child still runs";
}

// OpenVDB support is a module loaded on first use (io/vdb_module.h): an executable without it still
// writes every other format, and a .vdb job fails with one line and exit 5 instead of crashing.
// Binary .vdb files are written without the OpenVDB module (io/vdb_direct.h), the same bytes.
TEST(Cli, WithoutTheOpenVdbModuleVoxtilesVdbsAreWrittenAndRead) {
  test::TempDir dir;
  const std::string exe = dir.file("voxtile");
  ASSERT_EQ(std::system(("cp '" + test::voxtile_binary() + "' '" + exe + "'").c_str()), 0);
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  auto run = [&](const std::string& binary, const std::vector<std::string>& args) {
    std::string cmd = "VOXTILE_LIB_DIR= '" + binary + "'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " 2>'" + dir.file("err.txt") + "' >/dev/null";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  EXPECT_EQ(run(exe, {"voxelize", bunny, "-o", dir.file("a.ply"), "-r", "16", "-d", "cpu"}), 0);
  EXPECT_EQ(run(exe, {"voxelize", bunny, "-o", dir.file("a.vdb"), "-r", "40", "-d", "cpu"}), 0);
  EXPECT_EQ(run(test::voxtile_binary(), {"voxelize", bunny, "-o", dir.file("b.vdb"), "-r", "40", "-d", "cpu"}), 0);
  EXPECT_EQ(test::read_file(dir.file("a.vdb")), test::read_file(dir.file("b.vdb")));
  // Values too (counts, the sdf's level set, normals, a solid beside them): the same bytes.
  const std::vector<std::string> values = {"voxelize", bunny, "-r", "40", "-d", "cpu", "-t", "count,sdf,normal,solid"};
  auto with_output = [&](std::vector<std::string> args, const std::string& out) {
    args.insert(args.end(), {"-o", out});
    return args;
  };
  EXPECT_EQ(run(exe, with_output(values, dir.file("v.vdb"))), 0);
  EXPECT_EQ(run(test::voxtile_binary(), with_output(values, dir.file("w.vdb"))), 0);
  EXPECT_EQ(test::read_file(dir.file("v.vdb")), test::read_file(dir.file("w.vdb")));
  // And read back without it (the level set meshed, the solid pictured), as with it.
  for (const std::string& binary : {exe, test::voxtile_binary()}) {
    const std::string tag = binary == exe ? "1" : "2";
    EXPECT_EQ(run(binary, {"mesh", dir.file("v.vdb"), "--grid", "sdf", "-o", dir.file("m" + tag + ".ply")}), 0);
    EXPECT_EQ(run(binary, {"preview", dir.file("v.vdb"), "--grid", "solid", "-o", dir.file("p" + tag + ".png")}), 0);
  }
  EXPECT_EQ(test::read_file(dir.file("m1.ply")), test::read_file(dir.file("m2.ply")));
  EXPECT_EQ(test::read_file(dir.file("p1.png")), test::read_file(dir.file("p2.png")));
  // `info` of them too (Writers.*: the lines OpenVDB's describe gives).
  const std::string info =
      "VOXTILE_LIB_DIR= '" + exe + "' info '" + dir.file("v.vdb") + "' >'" + dir.file("info.txt") + "'";
  ASSERT_EQ(std::system(info.c_str()), 0);
  const std::string lines = test::read_file(dir.file("info.txt"));
  EXPECT_NE(lines.find("grids: 4\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("grid \"sdf\" type=float active_voxels="), std::string::npos) << lines;
  // BoolGrids (--vdb-bool) are written and read without OpenVDB too (the same bytes as with it, the
  // same voxels as the MaskGrid).
  EXPECT_EQ(run(exe, {"voxelize", bunny, "-o", dir.file("c.vdb"), "-r", "16", "-d", "cpu", "--vdb-bool"}), 0);
  const std::string without = test::read_file(dir.file("c.vdb"));
  EXPECT_EQ(run(test::voxtile_binary(),
                {"voxelize", bunny, "-o", dir.file("c.vdb"), "-r", "16", "-d", "cpu", "--vdb-bool", "--force"}),
            0);
  EXPECT_EQ(without, test::read_file(dir.file("c.vdb")));
  EXPECT_EQ(run(exe, {"voxelize", bunny, "-o", dir.file("d.vdb"), "-r", "16", "-d", "cpu"}), 0);
  EXPECT_EQ(run(exe, {"compare", dir.file("c.vdb"), dir.file("d.vdb")}), 0);
  const std::string bool_info =
      "VOXTILE_LIB_DIR= '" + exe + "' info '" + dir.file("c.vdb") + "' >'" + dir.file("info.txt") + "'";
  ASSERT_EQ(std::system(bool_info.c_str()), 0);
  EXPECT_NE(test::read_file(dir.file("info.txt")).find("type=bool"), std::string::npos)
      << test::read_file(dir.file("info.txt"));
  // A file only OpenVDB's guarded reader takes (here a cut one) needs the module: one line, exit 5.
  {
    std::ofstream cut(dir.file("cut.vdb"), std::ios::binary);
    cut << without.substr(0, 300);
  }
  EXPECT_EQ(run(exe, {"info", dir.file("cut.vdb")}), 5);
  const std::string err = test::read_file(dir.file("err.txt"));
  EXPECT_NE(err.find("cannot load libvoxtile_vdb.so"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// `generate` for the speed benchmarks: subdivided meshes in either child order (the same triangles),
// tubes of a given radius, closed spheres.
TEST(Cli, GenerateOrdersRadiiAndSpheres) {
  test::TempDir dir;
  test::RunResult r = run_voxtile({"generate", "scan", "--input", kBunny, "--levels", "1", "-o", dir.file("a.ply"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_voxtile({"generate", "scan", "--input", kBunny, "--levels", "1", "--order", "quarters", "-o", dir.file("b.ply"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Mesh a = load_mesh(dir.file("a.ply")).mesh, b = load_mesh(dir.file("b.ply")).mesh;
  ASSERT_EQ(a.num_triangles(), 4 * load_mesh(kBunny).mesh.num_triangles());
  ASSERT_EQ(a.num_triangles(), b.num_triangles());
  auto corners = [](const Mesh& m) {
    std::vector<std::array<float, 9>> t(m.num_triangles());
    for (size_t f = 0; f < t.size(); ++f)
      for (int k = 0; k < 3; ++k) {
        const Vec3f p = m.vertex(f, k);
        t[f][3 * k] = p.x;
        t[f][3 * k + 1] = p.y;
        t[f][3 * k + 2] = p.z;
      }
    return t;
  };
  auto ta = corners(a), tb = corners(b);
  EXPECT_FALSE(ta == tb);  // another order...
  // ...of the same triangles; the first quarter holds every parent's first child, in parent order.
  const size_t n = ta.size() / 4;
  for (size_t t = 0; t < n; t += 997) EXPECT_TRUE(tb[t] == ta[4 * t]) << t;
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  EXPECT_TRUE(ta == tb);
  // A CAD-like assembly: 8 parts, 6 cylinders of 2 x 16 side and 2 x 14 cap triangles, 2 plates of 12; closed
  // (every edge shared by two triangles), parts centred in [-0.8, 0.8]^3, none longer than 1.6.
  r = run_voxtile({"generate", "cad", "--objects", "8", "--sides", "16", "-o", dir.file("cad.ply"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Mesh cad = load_mesh(dir.file("cad.ply")).mesh;
  EXPECT_EQ(cad.num_triangles(), 6u * (32 + 28) + 2 * 12);
  std::map<std::pair<uint32_t, uint32_t>, int> edges;
  for (size_t f = 0; f < cad.num_triangles(); ++f)
    for (int k = 0; k < 3; ++k) {
      const uint32_t a0 = cad.indices[3 * f + k], a1 = cad.indices[3 * f + (k + 1) % 3];
      ++edges[{std::min(a0, a1), std::max(a0, a1)}];
    }
  for (const auto& [e, uses] : edges) EXPECT_EQ(uses, 2) << e.first << "-" << e.second;
  const Bounds cb = cad.bounds();
  EXPECT_TRUE(cb.lo.x >= -1.7 && cb.lo.y >= -1.7 && cb.lo.z >= -1.7 && cb.hi.x <= 1.7 && cb.hi.y <= 1.7 &&
              cb.hi.z <= 1.7);
  EXPECT_EQ(run_voxtile({"generate", "tubes", "--sides", "65", "-o", dir.file("x.ply")}).exit_code, 2);
  r = run_voxtile({"generate", "tubes", "--tubes", "3", "--rings", "10", "--sides", "6", "--radius", "0.05", "-o",
                   dir.file("t.ply"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Mesh t = load_mesh(dir.file("t.ply")).mesh;
  EXPECT_EQ(t.num_triangles(), 2u * 3 * 10 * 6);
  // Open tubes of a given length in the unit ball: rings + 1 rings of vertices per tube, whose centres
  // lie on the curve, 1.5 along it from the first to the last.
  r = run_voxtile({"generate", "tubes", "--tubes", "3", "--rings", "50", "--sides", "6", "--radius", "0.01",
                   "--length", "1.5", "-o", dir.file("open.ply"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Mesh open = load_mesh(dir.file("open.ply")).mesh;
  EXPECT_EQ(open.num_triangles(), 2u * 3 * 50 * 6);
  ASSERT_EQ(open.positions.size(), 3u * 51 * 6);
  for (uint32_t tube = 0; tube < 3; ++tube) {
    double walked = 0;
    Vec3d prev{};
    for (uint32_t ring = 0; ring <= 50; ++ring) {
      Vec3d c{0, 0, 0};
      for (uint32_t k = 0; k < 6; ++k) {
        const Vec3f& p = open.positions[(tube * 51 + ring) * 6 + k];
        EXPECT_LE(std::sqrt(double(p.x) * p.x + double(p.y) * p.y + double(p.z) * p.z), 1.0 + 0.01 + 1e-6);
        c = {c.x + p.x / 6.0, c.y + p.y / 6.0, c.z + p.z / 6.0};
      }
      if (ring) walked += std::sqrt((c.x - prev.x) * (c.x - prev.x) + (c.y - prev.y) * (c.y - prev.y) + (c.z - prev.z) * (c.z - prev.z));
      prev = c;
    }
    EXPECT_LE(walked, 1.5 + 1e-3) << "tube " << tube;  // chords are no longer than the arc they cut
    EXPECT_GE(walked, 1.45) << "tube " << tube;
  }
  r = run_voxtile({"generate", "sphere", "--rings", "30", "-o", dir.file("s.ply"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Bounds sb = load_mesh(dir.file("s.ply")).mesh.bounds();
  EXPECT_NEAR(sb.hi.z, 1.0, 1e-6);  // the poles
  EXPECT_NEAR(sb.lo.z, -1.0, 1e-6);
  EXPECT_NEAR(sb.hi.x, 1.0, 1e-6);  // the equator (30 rings)
  EXPECT_EQ(run_voxtile({"generate", "sphere", "--rings", "1", "-o", dir.file("x.ply")}).exit_code, 2);
  EXPECT_EQ(run_voxtile({"generate", "tubes", "--radius", "-1", "-o", dir.file("x.ply")}).exit_code, 2);
  // Sizes that give no mesh (or only degenerate triangles) are usage errors, not empty files.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"tubes", "--tubes", "0"}, {"tubes", "--rings", "1"},
        {"tubes", "--rings", "0", "--length", "1"}, {"room", "--objects", "4000000000"}}) {
    std::vector<std::string> args = {"generate"};
    args.insert(args.end(), bad.begin(), bad.end());
    args.insert(args.end(), {"-o", dir.file("x.ply")});
    const auto e = run_voxtile(args);
    EXPECT_EQ(e.exit_code, 2) << bad[1] << " " << bad[2] << ": " << e.err;
    EXPECT_NE(e.err.find("generate " + bad[0] + ": "), std::string::npos) << e.err;
  }
  EXPECT_FALSE(test::file_exists(dir.file("x.ply")));
  r = run_voxtile(
      {"generate", "tubes", "--tubes", "2", "--rings", "1", "--length", "0.5", "-o", dir.file("t.ply"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(load_mesh(dir.file("t.ply")).mesh.num_triangles(), 2u * 1 * 5 * 2);
}

}  // namespace
}  // namespace voxtile
