// voxtile's own readers for the bulk mesh formats: binary and ASCII PLY, binary and ASCII STL,
// Wavefront OBJ (with .mtl material names and colours) and OFF (text and binary). The file is memory-mapped; binary
// data is copied in bulk; text is split into chunks at line starts and parsed on TBB threads with fast_float (Debian
// libfast-float-dev), with no allocation per line. Every count a header states is checked against the file size before
// anything is allocated, so a hostile header costs nothing. The result is the Mesh the Assimp path gives (same
// triangles, positions bit for bit), in file order. glTF 2.0 / GLB has its own reader (io/native_gltf.cpp), declared
// here too.
#pragma once

#include <string>
#include <vector>

#include "io/mesh_reader.h"

namespace voxtile {

// Whether `path` has a format the native readers read (.ply, .stl, .obj, .off, .gltf, .glb, .3mf, any case).
bool native_format(const std::string& path);
// glTF (io/native_gltf.cpp): whether `path` is .gltf or .glb; whether the native reader takes it
// (not glTF 1.0, nor where Assimp decodes what it does not: Draco-compressed primitives); the
// reading, into `out` (before finish_load), with the base colour textures decoded when asked for.
bool gltf_format(const std::string& path);
bool gltf_native(const std::string& path);
void read_gltf(const std::string& path, MeshLoadResult& out, bool textures = false);
// 3MF (io/native_3mf.cpp): the package's model with its build items, components (also from other
// model parts) and base material colours, into `out` (before finish_load).
void read_3mf(const std::string& path, MeshLoadResult& out);
// For Assimp's reading of a glTF (reader processes): refuses (Error kInput) what Assimp 5.2 would read
// wrongly without an error (integer positions, meshopt-compressed buffers, GPU instancing); says
// which integer attributes to drop after it (each with a warning). Other files pass.
struct GltfAssimpLimits {
  bool drop_normals = false, drop_uvs = false;
};
GltfAssimpLimits gltf_assimp_limits(const std::string& path, std::vector<std::string>& warnings);
// Checks the element counts a PLY, binary STL or OFF header states against the file's size (each
// record needs a few bytes at least), before an importer allocates for them: Error(kInput) naming
// the file when they cannot fit. Other formats pass.
void check_header_counts(const std::string& path);

// Reads `path` natively. Same contract as load_mesh / inspect_mesh (require_triangles false):
// Error(kInput) naming the file and the problem. With `textures`, the materials' diffuse (OBJ
// map_Kd) and base colour (glTF) textures are decoded into Mesh::material_textures.
MeshLoadResult read_native(const std::string& path, bool require_triangles, bool textures = false);

}  // namespace voxtile
