// Binary PLY mesh writer.
#include "io/mesh_writer.h"

#include <vector>

#include "io/atomic_file.h"

namespace voxtile {

void write_mesh_ply(const Mesh& mesh, const std::string& path) {
  AtomicFile out(path);
  const std::string header = "ply\nformat binary_little_endian 1.0\ncomment voxtile generated\nelement vertex " +
                             std::to_string(mesh.positions.size()) +
                             "\nproperty float x\nproperty float y\nproperty float z\nelement face " +
                             std::to_string(mesh.num_triangles()) + "\nproperty list uchar int vertex_indices\nend_header\n";
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
