// Assimp-based mesh reader.
#include "io/mesh_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <assimp/Importer.hpp>
#include <assimp/importerdesc.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/error.h"

namespace voxtile {
namespace {

std::string first_line(std::string s) {
  const size_t nl = s.find_first_of("\r\n");
  if (nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == '.')) s.pop_back();
  return s.empty() ? "unknown error" : s;
}

struct Walker {
  const aiScene* scene;
  MeshLoadResult* out;

  void node(const aiNode* n, const aiMatrix4x4& parent) {
    const aiMatrix4x4 m = parent * n->mTransformation;
    for (unsigned i = 0; i < n->mNumMeshes; ++i) mesh(n->mMeshes[i], m);
    for (unsigned i = 0; i < n->mNumChildren; ++i) node(n->mChildren[i], m);
  }

  void mesh(unsigned mesh_index, const aiMatrix4x4& m) {
    if (mesh_index >= scene->mNumMeshes) return;
    const aiMesh* am = scene->mMeshes[mesh_index];
    Mesh& mesh = out->mesh;
    if (!am->mVertices) return;
    bool has_triangle = false;
    for (unsigned f = 0; f < am->mNumFaces; ++f) {
      if (am->mFaces[f].mNumIndices == 3) has_triangle = true;
      else ++out->non_triangle_primitives;
    }
    if (!has_triangle) {
      if (am->mPrimitiveTypes == aiPrimitiveType_POINT || am->mNumFaces == 0) out->points += am->mNumVertices;
      return;
    }
    const size_t base = mesh.positions.size();
    mesh.positions.reserve(base + am->mNumVertices);
    for (unsigned v = 0; v < am->mNumVertices; ++v) {
      const aiVector3D p = m * am->mVertices[v];
      mesh.positions.push_back({p.x, p.y, p.z});
    }
    for (unsigned f = 0; f < am->mNumFaces; ++f) {
      const aiFace& face = am->mFaces[f];
      if (face.mNumIndices != 3) continue;
      if (face.mIndices[0] >= am->mNumVertices || face.mIndices[1] >= am->mNumVertices ||
          face.mIndices[2] >= am->mNumVertices) {
        ++out->dropped_bad_index;
        continue;
      }
      for (int k = 0; k < 3; ++k) mesh.indices.push_back(uint32_t(base + face.mIndices[k]));
      mesh.mesh_ids.push_back(mesh_index);
      mesh.material_ids.push_back(am->mMaterialIndex);
    }
  }
};

MeshLoadResult read(const std::string& path, bool require_triangles) {
  check_input_file(path);
  MeshLoadResult out;
  try {
    Assimp::Importer importer;
    const aiScene* scene = importer.ReadFile(path, aiProcess_Triangulate | aiProcess_SortByPType);
    if (!scene) fail(ErrorKind::kInput, path + ": cannot read: " + first_line(importer.GetErrorString()));
    if (!scene->mRootNode) fail(ErrorKind::kInput, path + ": the file has no scene");
    const size_t dot = path.rfind('.');
    if (dot != std::string::npos) {
      const size_t index = importer.GetImporterIndex(path.substr(dot).c_str());
      if (const aiImporterDesc* desc = index != size_t(-1) ? importer.GetImporterInfo(index) : nullptr)
        out.format = desc->mName;
    }
    Walker w{scene, &out};
    w.node(scene->mRootNode, aiMatrix4x4());
    out.mesh.num_source_meshes = scene->mNumMeshes;
    out.mesh.num_materials = scene->mNumMaterials;
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    fail(ErrorKind::kInput, path + ": out of memory while reading (absurd sizes in the file?)");
  } catch (const std::exception& e) {
    fail(ErrorKind::kInput, path + ": cannot read: " + first_line(e.what()));
  }
  Mesh& mesh = out.mesh;
  const size_t loaded = mesh.num_triangles();
  mesh.sanitize();
  if (out.dropped_bad_index)
    out.warnings.push_back("dropped " + std::to_string(out.dropped_bad_index) + " faces with out-of-range vertex indices");
  if (mesh.dropped_nonfinite)
    out.warnings.push_back("dropped " + std::to_string(mesh.dropped_nonfinite) + " triangles with NaN/Inf coordinates");
  if (mesh.dropped_degenerate)
    out.warnings.push_back("dropped " + std::to_string(mesh.dropped_degenerate) + " degenerate (zero-area) triangles");
  if (require_triangles && mesh.num_triangles() == 0) {
    std::string why = loaded == 0 ? "no triangles" : "no usable triangles (" + std::to_string(loaded) + " dropped)";
    if (loaded == 0 && out.points) why += " (it holds " + std::to_string(out.points) + " points only)";
    fail(ErrorKind::kInput, path + ": " + why);
  }
  return out;
}

}  // namespace

void check_input_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) fail(ErrorKind::kInput, path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(ErrorKind::kInput, path + ": is a directory");
  if (!S_ISREG(st.st_mode)) fail(ErrorKind::kInput, path + ": not a regular file");
  if (access(path.c_str(), R_OK) != 0) fail(ErrorKind::kInput, path + ": " + std::strerror(errno));
  if (st.st_size == 0) fail(ErrorKind::kInput, path + ": the file is empty");
}

MeshLoadResult load_mesh(const std::string& path) { return read(path, true); }
MeshLoadResult inspect_mesh(const std::string& path) { return read(path, false); }

}  // namespace voxtile
