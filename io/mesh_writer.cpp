// Binary PLY mesh writer.
#include "io/mesh_writer.h"

#include <vector>

#include "io/atomic_file.h"
#include "io/ply.h"

namespace voxtile {

void write_mesh_ply(const Mesh& mesh, const std::string& path) {
  AtomicFile out(path);
  const std::string header =
      ply_header({"voxtile generated"}, {{"vertex", mesh.positions.size(), {"float x", "float y", "float z"}},
                                          {"face", mesh.num_triangles(), {"list uchar int vertex_indices"}}});
  out.write(header.data(), header.size());
  out.write(mesh.positions.data(), mesh.positions.size() * sizeof(Vec3f));
  std::vector<unsigned char> buf;
  buf.reserve(13 * 65536);
  for (size_t t = 0; t < mesh.num_triangles(); ++t) {
    buf.push_back(3);
    const unsigned char* p = reinterpret_cast<const unsigned char*>(&mesh.indices[3 * t]);
    buf.insert(buf.end(), p, p + 12);
    if (buf.size() >= 13 * 65536) {
      out.write(buf.data(), buf.size());
      buf.clear();
    }
  }
  out.write(buf.data(), buf.size());
  out.commit();
}

}  // namespace voxtile
