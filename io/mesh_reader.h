// Mesh input: voxtile's native readers for PLY, STL, OBJ, OFF and glTF (io/native_mesh.h), Assimp for every
// other format (triangulated, node transforms applied), chosen by Loader.
#pragma once

#include <memory>
#include <string>

#include "io/files.h"
#include <vector>

#include "core/mesh.h"

namespace voxtile {

// Which reader loads a file: auto (native for .ply, .stl, .obj, .off, .gltf, .glb and .3mf, except a
// Draco-compressed glTF; Assimp for the rest), native (those formats only), or Assimp.
enum class Loader : uint8_t { kAuto, kNative, kAssimp };
Loader parse_loader(const std::string& name);  // "auto", "native", "assimp"; throws Error(kUsage)
const char* loader_name(Loader loader);
// Whether `loader` reads `path` with the native readers (in the calling process) rather than Assimp
// (in a reader process). --loader native on another format is refused when the file is read.
bool reads_natively(const std::string& path, Loader loader);

// Limits of the Assimp reader processes: a wall-clock limit per file (a reader still busy then is
// killed and the file fails with an input error) and an address-space limit (setrlimit; 0: half
// the physical memory shared among the processes, at least 4 GiB each).
struct LoaderLimits {
  double timeout_s = 600;
  uint64_t memory_bytes = 0;
};

struct MeshLoadResult {
  Mesh mesh;
  std::vector<std::string> warnings;  // one line each, without the file name
  std::string format;                 // Assimp's name for the importer, e.g. "Stanford Polygon Library"
  size_t dropped_bad_index = 0;       // faces whose indices point past the vertex array
  size_t non_triangle_primitives = 0; // points and lines, ignored
  size_t points = 0;                  // vertices of point-only meshes (point clouds)
};

// Loads every triangle of every mesh instance in the scene (node transforms applied), keeping the
// source mesh and material index per triangle. Degenerate and NaN/Inf triangles are dropped with
// a warning and a count. Throws Error(kInput) with "<path>: <problem>" when the file is missing,
// empty, unreadable, or has no usable triangle.
// With `textures`, each material's base colour / diffuse texture is decoded too (Mesh::
// material_textures; an unreadable texture is a warning), natively as through Assimp.
MeshLoadResult load_mesh(const std::string& path, bool textures = false, Loader loader = Loader::kAuto,
                         const LoaderLimits& limits = {});

// Like load_mesh but accepts files without triangles (used by `voxtile info`).
MeshLoadResult inspect_mesh(const std::string& path, Loader loader = Loader::kAuto);

// The end of every load: drops non-finite and degenerate triangles (Mesh::sanitize), turns the
// counts into warnings, and with `require_triangles` fails with Error(kInput) when none is left.
void finish_load(MeshLoadResult& result, const std::string& path, bool require_triangles);

// Reader processes for many files (voxtile batch). Every import runs in a reader process, so that
// a crash or abort inside a third-party importer becomes an input error naming the file (the
// process is then replaced); a pool keeps its processes across files instead of forking one per
// file. The processes are forked when the pool is made: make it before the caller grows (GPU
// contexts, large buffers) or starts threads, so that forking stays cheap. A process started while
// this one has other threads (a replacement, or a pool made later) is this program started again
// (serve_as_mesh_reader_if_asked), since a forked copy of a process with threads can wait forever
// on a lock another thread held. load() and inspect() are thread-safe and wait for an idle process.
// Without any reader process (fork or exec refused), files are read in process.
// Every main() of a program that makes a MeshLoaderPool calls this first: it returns at once unless
// the pool started the program as a reader process (then it serves requests and never returns).
// A program that does not call it gets no reader processes while it has several threads: its pools
// then import in process.
void serve_as_mesh_reader_if_asked(int argc, char** argv);

class MeshLoaderPool {
 public:
  explicit MeshLoaderPool(int processes, const LoaderLimits& limits = {});
  ~MeshLoaderPool();
  MeshLoaderPool(const MeshLoaderPool&) = delete;
  MeshLoaderPool& operator=(const MeshLoaderPool&) = delete;
  MeshLoadResult load(const std::string& path, bool textures = false, Loader loader = Loader::kAuto);  // as load_mesh
  MeshLoadResult inspect(const std::string& path, Loader loader = Loader::kAuto);                     // as inspect_mesh

 private:
  MeshLoadResult read(const std::string& path, bool require_triangles, bool textures, Loader loader);
  struct Impl;
  std::unique_ptr<Impl> m;
};



}  // namespace voxtile
