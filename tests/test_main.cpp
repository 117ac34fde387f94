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
#include <sstream>

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

RunResult run_voxtile(const std::vector<std::string>& args) {
  TempDir tmp;
  std::string cmd = quote(voxtile_binary());
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

static void add_tri(Mesh& m, uint32_t a, uint32_t b, uint32_t c) {
  m.indices.insert(m.indices.end(), {a, b, c});
  m.mesh_ids.push_back(0);
  m.material_ids.push_back(0);
}

Mesh make_sphere(float cx, float cy, float cz, float r, int rings, int segments) {
  Mesh m;
  const double pi = 3.14159265358979323846;
  m.positions.push_back({cx, cy, cz + r});
  for (int i = 1; i < rings; ++i) {
    const double th = pi * i / rings;
    for (int j = 0; j < segments; ++j) {
      const double ph = 2 * pi * j / segments;
      m.positions.push_back({float(cx + r * std::sin(th) * std::cos(ph)), float(cy + r * std::sin(th) * std::sin(ph)),
                             float(cz + r * std::cos(th))});
    }
  }
  m.positions.push_back({cx, cy, cz - r});
  const uint32_t south = uint32_t(m.positions.size() - 1);
  auto ring = [&](int i, int j) { return uint32_t(1 + (i - 1) * segments + (j % segments)); };
  for (int j = 0; j < segments; ++j) add_tri(m, 0, ring(1, j), ring(1, j + 1));
  for (int i = 1; i + 1 < rings; ++i)
    for (int j = 0; j < segments; ++j) {
      add_tri(m, ring(i, j), ring(i + 1, j), ring(i + 1, j + 1));
      add_tri(m, ring(i, j), ring(i + 1, j + 1), ring(i, j + 1));
    }
  for (int j = 0; j < segments; ++j) add_tri(m, ring(rings - 1, j), south, ring(rings - 1, j + 1));
  m.num_source_meshes = 1;
  return m;
}

Mesh make_box(float x0, float y0, float z0, float x1, float y1, float z1) {
  Mesh m;
  for (int i = 0; i < 8; ++i) m.positions.push_back({i & 1 ? x1 : x0, i & 2 ? y1 : y0, i & 4 ? z1 : z0});
  const uint32_t f[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  for (const auto& q : f) {
    add_tri(m, q[0], q[1], q[2]);
    add_tri(m, q[0], q[2], q[3]);
  }
  m.num_source_meshes = 1;
  return m;
}

}  // namespace voxtile::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
