// Bounded fuzzing of every reader: mutants of small valid files (fixed seed), each loaded in this
// process (native readers, grid readers: ASan/UBSan see them) or in a reader process (Assimp), must
// give a mesh or grid or one voxtile::Error naming the file, quickly: no crash, no hang, no other
// exception, no unbounded allocation.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/bucket.h"
#include "core/error.h"
#include "core/meshgen.h"
#include "core/voxelize.h"
#include "io/grid_reader.h"
#include "io/mesh_reader.h"
#include "io/mesh_writer.h"
#include "io/npz.h"
#include "io/points_io.h"
#include "io/writers.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

// One mutation of `s`: bit flips, bytes set to values that break parsers (0, 0xff, digits, signs,
// newlines), huge numbers spliced into text, truncation, a duplicated or deleted span.
std::string mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n ? size_t(rng() % n) : 0; };
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    switch (rng() % 7) {
      case 0:
        s[pick(s.size())] ^= char(1 << (rng() % 8));
        break;
      case 1: {
        static const char kBytes[] = {0, '\xff', '9', '-', '\n', ' ', '/', 'e', '.', '\x7f'};
        s[pick(s.size())] = kBytes[rng() % sizeof(kBytes)];
        break;
      }
      case 2: {
        static const char* kNumbers[] = {"99999999999999999999", "-1", "4294967295", "1e308", "nan", "-2147483648", "0"};
        const size_t at = pick(s.size());
        s.insert(at, kNumbers[rng() % 7]);
        break;
      }
      case 3:
        s.resize(pick(s.size()));
        break;
      case 4: {
        const size_t at = pick(s.size()), n = std::min<size_t>(s.size() - at, 1 + pick(64));
        s.insert(pick(s.size()), s.substr(at, n));
        break;
      }
      case 5: {
        const size_t at = pick(s.size());
        s.erase(at, 1 + pick(64));
        break;
      }
      default: {  // a 4-byte word set to an extreme count
        if (s.size() < 4) break;
        const size_t at = pick(s.size() - 3);
        const uint32_t v = rng() % 2 ? 0xffffffffu : 0x7fffffffu;
        std::memcpy(&s[at], &v, 4);
      }
    }
  }
  return s;
}

struct Seed {
  std::string name;  // file name (its extension picks the reader)
  std::string bytes;
  std::function<void(const std::string&)> read;
};

TEST(Fuzz, EveryReaderFailsCleanlyOnMutatedFiles) {
  test::TempDir dir;
  const Mesh sphere = make_uv_sphere(0.5f, 0.5f, 0.5f, 0.4f, 6, 8);
  auto made = [&](const std::string& name, const std::function<void(const std::string&)>& write) {
    write(dir.file(name));
    return test::read_file(dir.file(name));
  };
  LoaderLimits limits;
  limits.timeout_s = 20;
  auto mesh_reader = [limits](Loader loader) {
    return [limits, loader](const std::string& path) { load_mesh(path, false, loader, limits); };
  };
  const auto grid_reader = [](const std::string& path) { read_grid_file(path); };
  GridOptions go;
  go.resolution = 16;
  const GridSpec spec = make_grid_spec(sphere.bounds(), go);
  VoxelizeOptions vo;
  vo.target = Target::kCount;
  SparseGrid count = voxelize_cpu(sphere, spec, vo);
  count.name = "count";
  auto binary_off = [] {
    std::string s = "OFF BINARY\n";
    auto be = [&](uint32_t v) {
      for (int k = 0; k < 4; ++k) s += char((v >> (24 - 8 * k)) & 0xFF);
    };
    for (uint32_t v : {3u, 1u, 0u, 0u, 0u, 0u, 0x3F800000u, 0u, 0u, 0u, 0x3F800000u, 0u, 3u, 0u, 1u, 2u, 0u}) be(v);
    return s;
  };
  std::vector<Seed> seeds = {
    {"m.ply", made("m.ply", [&](const std::string& p) { write_mesh(sphere, p); }), mesh_reader(Loader::kAuto)},
    {"a.ply", made("a.ply", [&](const std::string& p) { write_mesh(sphere, p, true); }), mesh_reader(Loader::kAuto)},
    {"m.stl", made("m.stl", [&](const std::string& p) { write_mesh(sphere, p); }), mesh_reader(Loader::kAuto)},
    {"a.stl", made("a.stl", [&](const std::string& p) { write_mesh(sphere, p, true); }), mesh_reader(Loader::kAuto)},
    {"m.obj", made("m.obj", [&](const std::string& p) { write_mesh(sphere, p); }), mesh_reader(Loader::kAuto)},
    {"g.obj",
     "mtllib none.mtl\no a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvn 0 0 1\ng x\nusemtl m\n"
     "f 1/1/1 2/1/1 3/1/1\nf -1 -2 -3 -4\nf 1 2 3 4 2\n",
     mesh_reader(Loader::kAuto)},
    {"s.ply", made("s.ply", [&](const std::string& p) { write_mesh(sphere, p); }), mesh_reader(Loader::kAssimp)},
    {"m.off", "OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n3 0 1 2\n3 1 3 2\n", mesh_reader(Loader::kAuto)},
    {"s.off", made("s.off", [&](const std::string& p) { write_mesh(sphere, p); }), mesh_reader(Loader::kAuto)},
    {"b.off", binary_off(), mesh_reader(Loader::kAuto)},  // binary OFF: one triangle
    {"m.3mf", made("m.3mf", [&](const std::string& p) { write_mesh(sphere, p); }), mesh_reader(Loader::kAuto)},
    {"m.glb", made("m.glb", [&](const std::string& p) { write_mesh(sphere, p); }), mesh_reader(Loader::kAuto)},
    {"s.glb", made("s.glb", [&](const std::string& p) { write_mesh(sphere, p); }), mesh_reader(Loader::kAssimp)},
    {"m.gltf",
     R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],"nodes":[{"mesh":0,"rotation":[0,0,0.6,0.8],)"
     R"("children":[1]},{"mesh":0,"matrix":[1,0,0,0,0,1,0,0,0,0,1,0,2,3,4,1]}],"meshes":[{"primitives":[{"attributes":)"
     R"({"POSITION":0},"indices":1,"mode":4},{"attributes":{"POSITION":2},"mode":5}]}],"accessors":[{"bufferView":0,)"
     R"("componentType":5126,"count":3,"type":"VEC3"},{"bufferView":1,"componentType":5123,"count":3,"type":"SCALAR"},)"
     R"({"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","sparse":{"count":1,"indices":{"bufferView":1,)"
     R"("componentType":5123},"values":{"bufferView":0}}}],"bufferViews":[{"buffer":0,"byteLength":36},{"buffer":0,)"
     R"("byteOffset":36,"byteLength":6}],"buffers":[{"byteLength":44,"uri":"data:application/octet-stream;base64,)"
     R"(AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAAABAAIAAAA="}]})",
     mesh_reader(Loader::kAuto)},
#if !defined(__SANITIZE_ADDRESS__)
    // Not in sanitizer builds: there a threaded process reads .vdb files in process only (see
    // read_in_child_first), and OpenVDB's own reader, which the sanitizer does not see, writes past
    // its buffers on some mutants.
    {"c.vdb", made("c.vdb", [&](const std::string& p) { write_grid(count, p, OutputFormat::kVdb, {}); }), grid_reader},
#endif
    {"c.npy", made("c.npy", [&](const std::string& p) { write_grid(count, p, OutputFormat::kNpy, {}); }), grid_reader},
    {"c.npz",
     made("c.npz",
          [&](const std::string& p) {
            BucketOptions bo;
            write_buckets_npz(bucket_cpu(sphere, spec, bo), p);
          }),
     grid_reader},
    {"p.xyz", "0 0 0\n1 0 0 255 0 0\n0 1 0\n0.5 0.5 0.5\n", [](const std::string& p) { read_point_cloud(p); }},
    {"c.las", made("c.las", [&](const std::string& p) { write_grid(count, p, OutputFormat::kLas, {}); }),
     [](const std::string& p) { read_point_cloud(p); }},
  };
  // A fixed seed and a few hundred mutants in the suite; VOXTILE_FUZZ_SEED and VOXTILE_FUZZ_MUTANTS
  // (per seed file) run longer campaigns by hand.
  const char* seed_env = std::getenv("VOXTILE_FUZZ_SEED");
  const char* count_env = std::getenv("VOXTILE_FUZZ_MUTANTS");
  std::mt19937_64 rng(seed_env ? std::strtoull(seed_env, nullptr, 10) : 20261123);
  const int mutants = count_env ? std::atoi(count_env) : 40;
  int loaded = 0, failed = 0;
  double slowest = 0;
  std::string slowest_case;
  for (const Seed& seed : seeds) {
    for (int m = 0; m < mutants; ++m) {
      const std::string bytes = mutate(seed.bytes, rng);
      const std::string path = dir.file("mutant_" + seed.name);
      std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
      SCOPED_TRACE(seed.name + " mutant " + std::to_string(m));
      const auto t0 = std::chrono::steady_clock::now();
      if (std::getenv("VOXTILE_FUZZ_TRACE")) std::fprintf(stderr, "%s %d\n", seed.name.c_str(), m);  // which one crashed
      try {
        seed.read(path);
        ++loaded;
      } catch (const Error& e) {
        ++failed;
        EXPECT_NE(std::string(e.what()).find("mutant_"), std::string::npos) << "the error names no file: " << e.what();
        EXPECT_NE(e.kind(), ErrorKind::kInternal) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a voxtile::Error: " << e.what();
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > slowest) {
        slowest = s;
        slowest_case = seed.name + " mutant " + std::to_string(m);
      }
      // A hang guard, not a speed target: small files load in milliseconds.
      EXPECT_LT(s, 15.0) << "a reader took " << s << " s";
    }
  }
  std::printf("%d mutants loaded, %d refused; slowest %s: %.3f s\n", loaded, failed, slowest_case.c_str(), slowest);
  EXPECT_GT(failed, 0);
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace voxtile
