// Test helpers: data paths, temporary directories, running the CLI, procedural meshes.
#pragma once

#include <string>
#include <vector>

#include "core/mesh.h"

namespace voxtile::test {

std::string source_path(const std::string& rel);  // VOXTILE_SOURCE_DIR/rel
std::string data_path(const std::string& rel);    // VOXTILE_SOURCE_DIR/data/rel
std::string voxtile_binary();                     // the voxtile executable under test

// A fresh empty directory, removed with its contents when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return m_path; }
  std::string file(const std::string& name) const { return m_path + "/" + name; }
  std::vector<std::string> list() const;  // names of all entries, hidden ones included

 private:
  std::string m_path;
};

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs the voxtile binary with `args` (shell-quoted here), capturing stdout and stderr.
RunResult run_voxtile(const std::vector<std::string>& args);

bool file_exists(const std::string& path);
std::string read_file(const std::string& path);

// UV sphere of radius r at centre c with `rings` x `segments` quads split into triangles; closed.
Mesh make_sphere(float cx, float cy, float cz, float r, int rings, int segments);
// Axis-aligned box [lo, hi] as 12 triangles.
Mesh make_box(float x0, float y0, float z0, float x1, float y1, float z1);

}  // namespace voxtile::test
