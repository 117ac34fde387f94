// Test entry point and shared helpers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "core/voxelize.h"
#include "io/mesh_reader.h"
#include "tests/helpers.h"

namespace voxtile::test {

// VOXTILE_SOURCE_DIR and VOXTILE_BINARY in the environment override the build-time paths (to run
// the tests from a packed build on another machine).
static std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
std::string source_path(const std::string& rel) { return env_or("VOXTILE_SOURCE_DIR", VOXTILE_SOURCE_DIR) + "/" + rel; }
std::string voxtile_binary() { return env_or("VOXTILE_BINARY", VOXTILE_BINARY); }
std::string data_path(const std::string& rel) { return source_path("data/" + rel); }

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/voxtile-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  m_path = tmpl;
}
TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(m_path, std::filesystem::perms::owner_all, ec);
  std::filesystem::remove_all(m_path, ec);
}
std::vector<std::string> TempDir::list() const {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(m_path)) names.push_back(e.path().filename().string());
  return names;
}

static std::string quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

RunResult run_voxtile(const std::vector<std::string>& args, const std::string& shell_prefix) {
  TempDir tmp;
  std::string cmd = shell_prefix + quote(voxtile_binary());
  for (const std::string& a : args) cmd += " " + quote(a);
  cmd += " >" + quote(tmp.file("out")) + " 2>" + quote(tmp.file("err")) + " </dev/null";
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = read_file(tmp.file("out"));
  r.err = read_file(tmp.file("err"));
  return r;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void expect_closed_manifold(const Mesh& m, const std::string& what) {
  std::map<std::pair<uint32_t, uint32_t>, int> e;  // directed edges and their uses
  for (size_t t = 0; t < m.num_triangles(); ++t)
    for (int k = 0; k < 3; ++k) ++e[{m.indices[3 * t + size_t(k)], m.indices[3 * t + size_t((k + 1) % 3)]}];
  for (const auto& [edge, n] : e) {
    ASSERT_EQ(n, 1) << what << ": directed edge " << edge.first << "->" << edge.second << " used " << n << " times";
    ASSERT_EQ(e.count({edge.second, edge.first}), 1u)
        << what << ": edge " << edge.first << "-" << edge.second << " is open";
  }
  for (size_t t = 0; t < m.num_triangles(); ++t) {
    const uint32_t* i = &m.indices[3 * t];
    ASSERT_TRUE(i[0] != i[1] && i[1] != i[2] && i[0] != i[2]) << what << ": degenerate triangle " << t;
  }
}

double signed_volume(const Mesh& m) {
  double v = 0;
  for (size_t t = 0; t < m.num_triangles(); ++t) {
    const Vec3f a = m.vertex(t, 0), b = m.vertex(t, 1), c = m.vertex(t, 2);
    v +=
        (double(a.x) * (double(b.y) * c.z - double(b.z) * c.y) - double(a.y) * (double(b.x) * c.z - double(b.z) * c.x) +
         double(a.z) * (double(b.x) * c.y - double(b.y) * c.x)) /
        6.0;
  }
  return v;
}

Mesh random_soup(int n, float extent, float size, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, extent), s(-size, size);
  Mesh m;
  for (int t = 0; t < n; ++t) {
    const Vec3f a{u(rng), u(rng), u(rng)};
    for (int k = 0; k < 3; ++k) {
      m.positions.push_back(k == 0 ? a : Vec3f{a.x + s(rng), a.y + s(rng), a.z + s(rng)});
      m.indices.push_back(uint32_t(m.positions.size() - 1));
    }
    m.mesh_ids.push_back(0);
    m.material_ids.push_back(0);
  }
  return m;
}

Bounds make_bounds(double x0, double y0, double z0, double x1, double y1, double z1) {
  Bounds b;
  b.lo = {x0, y0, z0};
  b.hi = {x1, y1, z1};
  return b;
}

Mesh single_triangle(const Vec3f& a, const Vec3f& b, const Vec3f& c) {
  Mesh m;
  m.positions = {a, b, c};
  m.indices = {0, 1, 2};
  m.mesh_ids = {0};
  m.material_ids = {0};
  return m;
}

void append_mesh(Mesh& dst, const Mesh& src) {
  for (size_t t = 0; t < src.num_triangles(); ++t) {
    for (int k = 0; k < 3; ++k) {
      dst.positions.push_back(src.vertex(t, k));
      dst.indices.push_back(uint32_t(dst.positions.size() - 1));
    }
    dst.mesh_ids.push_back(src.mesh_ids[t]);
    dst.material_ids.push_back(src.material_ids[t]);
  }
}

Mesh sliver_8192() {
  return single_triangle({0.5f, 0.5f, 0.5f}, {8191.5f, 8100.25f, 8000.75f}, {8191.5f, 8101.0f, 8001.5f});
}

GridOptions sliver_grid() {
  GridOptions go;
  go.voxel_size = Vec3d{1, 1, 1};
  go.bbox = make_bounds(0, 0, 0, 8192, 8192, 8192);
  return go;
}

GridOptions grid_beside_unit_box() {
  GridOptions go;
  go.voxel_size = Vec3d{0.1, 0.1, 0.1};
  go.bbox = make_bounds(5, 5, 5, 6, 6, 6);
  return go;
}

}  // namespace voxtile::test

int main(int argc, char** argv) {
  voxtile::serve_as_mesh_reader_if_asked(argc, argv);  // (a reader process a pool started: never returns)
  ::testing::InitGoogleTest(&argc, argv);
  const int code = RUN_ALL_TESTS();
  voxtile::end_worker_threads();  // the leak check at exit runs with no thread ending beside it
  return code;
}
