// `voxtile batch`: planning, outputs, report, failures, --skip-existing, shards, usage errors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <thread>

#include "cli/batch/plan.h"
#include "core/error.h"
#include "kernels/api.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

std::vector<std::string> meshes() {
  return {test::data_path("meshes/stanford_bunny.ply"), test::data_path("formats/gltf/Duck.glb"),
          test::data_path("formats/obj/spider.obj"), test::data_path("formats/stl/sphereWithHole.stl"),
          test::data_path("formats/off/Wuson.off"), test::data_path("formats/3mf/box.3mf")};
}

std::vector<std::string> args(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TEST(Batch, WritesEveryOutputWithAReport) {
  test::TempDir dir;
  auto r = test::run_voxtile(args(args({"batch"}, meshes()), {"--out", dir.path() + "/{stem}_{res}_{target}.vdb", "-r",
                                                               "48", "-t", "count", "--devices", "cpu", "--report",
                                                               dir.file("report.json")}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("6 ok, 0 failed, 0 skipped"), std::string::npos) << r.err;
  const std::string report = test::read_file(dir.file("report.json"));
  EXPECT_NE(report.find("\"ok\": 6"), std::string::npos) << report;
  EXPECT_NE(report.find("\"checksum\""), std::string::npos);
  // The same grids as voxtile voxelize.
  ASSERT_EQ(test::run_voxtile({"voxelize", meshes()[1], "-o", dir.file("single.vdb"), "-r", "48", "-t", "count", "-d", "cpu"})
                .exit_code,
            0);
  EXPECT_EQ(test::run_voxtile({"compare", dir.file("Duck_48_count.vdb"), dir.file("single.vdb")}).exit_code, 0);
  // Directories and patterns expand to their mesh files, in order.
  r = test::run_voxtile({"batch", test::data_path("formats/stl"), test::data_path("formats/obj") + "/*.obj", "--out",
                         dir.path() + "/e/{index}_{name}.ply", "-r", "16", "--devices", "cpu", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // the e/ directory does not exist: batch makes it
  struct stat e_dir;
  EXPECT_TRUE(stat((dir.path() + "/e").c_str(), &e_dir) == 0 && S_ISDIR(e_dir.st_mode));
  r = test::run_voxtile({"batch", test::data_path("formats/stl"), test::data_path("formats/obj") + "/*.obj", "--out",
                         dir.path() + "/e/{index}_{name}.ply", "-r", "16", "--devices", "cpu", "-q", "-k"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(test::file_exists(dir.path() + "/e/0_Spider_ascii.stl.ply"));
  EXPECT_TRUE(test::file_exists(dir.path() + "/e/3_spider.obj.ply"));
}

TEST(Batch, ManifestOverridesAndFailures) {
  test::TempDir dir;
  {
    std::ofstream m(dir.file("jobs.jsonl"));
    m << "{\"input\": \"" << meshes()[0] << "\", \"output\": \"" << dir.file("a.vdb") << "\", \"resolution\": 32}\n";
    m << "\n";
    m << "{\"input\": \"" << dir.file("missing.obj") << "\", \"output\": \"" << dir.file("b.vdb") << "\"}\n";
    m << "{\"input\": \"" << meshes()[1] << "\", \"output\": \"" << dir.file("c.npy") << "\", \"dims\": [10, 11, 12], "
      << "\"target\": \"distance:max\", \"mode\": \"thin\"}\n";
  }
  auto r = test::run_voxtile({"batch", "--manifest", dir.file("jobs.jsonl"), "--devices", "cpu", "-k", "--report",
                              dir.file("r.json"), "-j", "1"});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.err.find("missing.obj"), std::string::npos) << r.err;
  EXPECT_TRUE(test::file_exists(dir.file("a.vdb")));
  EXPECT_FALSE(test::file_exists(dir.file("b.vdb")));
  EXPECT_NE(test::read_file(dir.file("c.npy")).find("'shape': (10, 11, 12)"), std::string::npos);
  const std::string report = test::read_file(dir.file("r.json"));
  EXPECT_NE(report.find("\"failed\": 1"), std::string::npos) << report;
  EXPECT_NE(report.find("target=distance:max"), std::string::npos) << report;
  // Without --keep-going the batch stops after the failure (one job at a time here).
  r = test::run_voxtile({"batch", "--manifest", dir.file("jobs.jsonl"), "--devices", "cpu", "--report", dir.file("s.json"),
                         "-j", "1", "-q"});
  EXPECT_EQ(r.exit_code, 6);
  EXPECT_NE(test::read_file(dir.file("s.json")).find("\"not run\""), std::string::npos);
  // Bad manifests are fatal, before any job runs.
  std::ofstream(dir.file("bad.jsonl")) << "{\"input\": 3}\n";
  EXPECT_EQ(test::run_voxtile({"batch", "--manifest", dir.file("bad.jsonl"), "--out", "x.vdb"}).exit_code, 3);
  std::ofstream(dir.file("key.jsonl")) << "{\"input\": \"a.obj\", \"output\": \"a.vdb\", \"colour\": 1}\n";
  EXPECT_EQ(test::run_voxtile({"batch", "--manifest", dir.file("key.jsonl")}).exit_code, 2);
}

// A file that crashes its importer fails alone: its reader process is replaced (started again as
// voxtile, since the batch has threads by then) and the next files load in the new one.
TEST(Batch, AnImporterCrashFailsOnlyItsFile) {
  test::TempDir dir;
  // (Collada and FBX: formats Assimp reads, in reader processes.)
  std::ofstream(dir.file("z-crash.dae"), std::ios::binary) << test::read_file(test::data_path("formats/dae/duck.dae"));
  const auto r = test::run_voxtile({"batch", dir.file("z-crash.dae"), test::data_path("formats/dae/duck.dae"),
                                    test::data_path("formats/fbx/spider.fbx"), "--out", dir.path() + "/{stem}.npy",
                                    "-r", "16", "--devices", "cpu", "-k", "-j", "2"},
                                   "VOXTILE_TEST_READER_CRASH=z-crash.dae ");
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.err.find("z-crash.dae: malformed file: the importer crashed on it"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir.file("z-crash.npy")));
  EXPECT_TRUE(test::file_exists(dir.file("duck.npy")));
  EXPECT_TRUE(test::file_exists(dir.file("spider.npy")));
}

TEST(Batch, SkipExistingResumesOnlyWhatChanged) {
  test::TempDir dir;
  const std::vector<std::string> base =
      args(args({"batch"}, meshes()), {"--out", dir.path() + "/{stem}.ply", "--devices", "cpu", "--report", dir.file("r.json")});
  ASSERT_EQ(test::run_voxtile(args(base, {"-r", "24"})).exit_code, 0);
  auto r = test::run_voxtile(args(base, {"-r", "24", "--skip-existing"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("0 ok, 0 failed, 6 skipped"), std::string::npos) << r.err;
  // Different options, or an output not made from this input, are redone.
  std::ofstream(dir.file("Duck.ply")) << "ply\nformat binary_little_endian 1.0\nend_header\n";
  r = test::run_voxtile(args(base, {"-r", "24", "--skip-existing"}));
  EXPECT_NE(r.err.find("1 ok, 0 failed, 5 skipped"), std::string::npos) << r.err;
  r = test::run_voxtile(args(base, {"-r", "25", "--skip-existing"}));
  EXPECT_NE(r.err.find("6 ok, 0 failed, 0 skipped"), std::string::npos) << r.err;
}

// .vdb outputs asked for in another form (--vdb-half, --vdb-bool) are redone.
TEST(Batch, SkipExistingRedoesVdbsOfAnotherForm) {
  test::TempDir dir;
  const std::vector<std::string> base = args(
      args({"batch"}, meshes()), {"--out", dir.path() + "/{stem}.vdb", "-t", "sdf", "-r", "16", "--devices", "cpu"});
  ASSERT_EQ(test::run_voxtile(base).exit_code, 0);
  auto r = test::run_voxtile(args(base, {"--skip-existing"}));
  EXPECT_NE(r.err.find("0 ok, 0 failed, 6 skipped"), std::string::npos) << r.err;
  r = test::run_voxtile(args(base, {"--skip-existing", "--vdb-half"}));
  EXPECT_NE(r.err.find("6 ok, 0 failed, 0 skipped"), std::string::npos) << r.err;
  r = test::run_voxtile(args(base, {"--skip-existing", "--vdb-half"}));
  EXPECT_NE(r.err.find("0 ok, 0 failed, 6 skipped"), std::string::npos) << r.err;
  r = test::run_voxtile(args(base, {"--skip-existing"}));
  EXPECT_NE(r.err.find("6 ok, 0 failed, 0 skipped"), std::string::npos) << r.err;
}

TEST(Batch, ShardsInParallelGiveTheUnshardedOutputs) {
  test::TempDir dir;
  ASSERT_EQ(std::system(("mkdir -p " + dir.path() + "/one " + dir.path() + "/many").c_str()), 0);
  const std::vector<std::string> base = args(args({"batch"}, meshes()), {"-r", "40", "-t", "count", "--devices", "cpu", "-q"});
  ASSERT_EQ(test::run_voxtile(args(base, {"--out", dir.path() + "/one/{index}_{stem}.vdb"})).exit_code, 0);
  std::vector<std::thread> shards;
  std::vector<int> codes(3, -1);
  for (int i = 0; i < 3; ++i)
    shards.emplace_back([&, i] {
      codes[size_t(i)] = test::run_voxtile(args(base, {"--out", dir.path() + "/many/{index}_{stem}.vdb", "--shard",
                                                       std::to_string(i) + "/3"}))
                             .exit_code;
    });
  for (std::thread& t : shards) t.join();
  for (int c : codes) EXPECT_EQ(c, 0);
  const std::vector<std::string> names = {"0_stanford_bunny.vdb", "1_Duck.vdb", "2_spider.vdb",
                                          "3_sphereWithHole.vdb", "4_Wuson.vdb", "5_box.vdb"};
  for (const std::string& n : names) {
    ASSERT_TRUE(test::file_exists(dir.path() + "/many/" + n)) << n;
    EXPECT_EQ(test::read_file(dir.path() + "/one/" + n), test::read_file(dir.path() + "/many/" + n)) << n;
  }
}

TEST(Batch, UsageErrors) {
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--out", "x/{stem}.vdb", "--shard", "3/3"},
                                                                 {"--out", "x/{stem}.vdb", "--shard", "a/b"},
                                                                 {"--out", "x/same.vdb"},
                                                                 {"--out", "x/{nope}.vdb"},
                                                                 {"--out", "x/{stem}.npy", "-t", "count,id"},
                                                                 {"--out", "x/{stem}.vdb", "--devices", "0,x"},
                                                                 {}}) {
    auto r = test::run_voxtile(args(args({"batch"}, meshes()), extra));
    EXPECT_EQ(r.exit_code, 2) << (extra.empty() ? "" : extra.back()) << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
}


// The planner alone (cli/batch/plan.cpp), without running anything.
TEST(BatchPlan, TemplatesManifestOverridesAndShards) {
  test::TempDir dir;
  {
    std::ofstream m(dir.file("jobs.jsonl"));
    m << "{\"input\": \"a/b/part.stl\", \"resolution\": 64, \"target\": \"count,distance:max\"}\n\n"
      << "{\"input\": \"c.obj\", \"output\": \"explicit.ply\", \"dims\": [8, 9, 10], \"mode\": \"thin\"}\n";
  }
  BatchCmdOptions o;
  o.inputs = {test::data_path("formats/stl")};
  o.manifest = dir.file("jobs.jsonl");
  o.out_template = "out/{stem}_{res}_{target}_{mode}_{index}.{ext}.vdb";
  o.grid.resolution = 32;
  const std::vector<Job> jobs = plan_batch(o);
  ASSERT_GE(jobs.size(), 3u);
  const Job& first = jobs[0];
  EXPECT_EQ(first.index, 0u);
  EXPECT_EQ(first.output.rfind("out/", 0), 0u) << first.output;
  EXPECT_NE(first.output.find("_32_binary_conservative_0.stl.vdb"), std::string::npos) << first.output;
  const Job& part = jobs[jobs.size() - 2];
  EXPECT_EQ(part.input, "a/b/part.stl");
  EXPECT_EQ(part.output, "out/part_64_count+distance_max_conservative_" + std::to_string(part.index) + ".stl.vdb");
  EXPECT_EQ(part.grid.resolution, 64);
  const Job& last = jobs.back();
  EXPECT_EQ(last.output, "explicit.ply");
  EXPECT_EQ(last.format, OutputFormat::kPly);
  EXPECT_EQ(last.mode, "thin");
  EXPECT_EQ(last.grid.resolution, 0);  // dims replace the command line's resolution
  EXPECT_EQ(last.grid.dims, (std::vector<int32_t>{8, 9, 10}));
  EXPECT_EQ(expand_template("{dir}|{name}|{ext}", last), ".|c.obj|obj");

  // A manifest saved as UTF-16 with its byte-order mark (PowerShell's `>` writes that): the same jobs.
  {
    const std::string text = "{\"input\": \"c.obj\", \"output\": \"explicit.ply\", \"dims\": [8, 9, 10]}\n";
    std::string wide = "\xFF\xFE";
    for (const char c : text) wide += std::string{c, '\0'};
    std::ofstream(dir.file("wide.jsonl"), std::ios::binary) << wide;
    BatchCmdOptions w;
    w.manifest = dir.file("wide.jsonl");
    const std::vector<Job> wj = plan_batch(w);
    ASSERT_EQ(wj.size(), 1u);
    EXPECT_EQ(wj[0].input, "c.obj");
    EXPECT_EQ(wj[0].grid.dims, (std::vector<int32_t>{8, 9, 10}));
  }

  // Shards partition the jobs by index.
  size_t total = 0;
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<Job> s = shard_jobs(jobs, parse_shard(std::to_string(i) + "/3"));
    for (const Job& j : s) EXPECT_EQ(j.index % 3, i);
    total += s.size();
  }
  EXPECT_EQ(total, jobs.size());
  EXPECT_EQ(shard_jobs(jobs, parse_shard("")).size(), jobs.size());
  for (const char* bad : {"3/3", "1/0", "a/2", "1/2/3", "-1/2"}) EXPECT_THROW(parse_shard(bad), Error) << bad;

  // Usage errors: unknown template fields, two jobs on one output, several targets in one
  // single-grid file (.npy, .raw, .binvox, .vox), before any job runs.
  BatchCmdOptions bad = o;
  bad.manifest.clear();
  bad.out_template = "{nope}.vdb";
  EXPECT_THROW(plan_batch(bad), Error);
  bad.out_template = "same.vdb";
  EXPECT_THROW(plan_batch(bad), Error);
  bad.target = "count,binary";
  for (const char* one_grid : {"{stem}.npy", "{stem}.raw", "{stem}.binvox", "{stem}.vox"}) {
    bad.out_template = one_grid;
    EXPECT_THROW(plan_batch(bad), Error) << one_grid;
  }
}

}  // namespace
}  // namespace voxtile
