// PLY writer for voxel centres.
#include "io/ply.h"

#include <cstring>
#include <vector>

#include "io/atomic_file.h"

namespace voxtile {

void write_ply(const SparseGrid& g, const std::string& path, const Metadata& meta) {
  AtomicFile out(path);
  std::string header = "ply\nformat binary_little_endian 1.0\n";
  for (const auto& [key, value] : meta) {
    std::string v = value;
    for (char& c : v)
      if (c == '\n' || c == '\r') c = ' ';
    header += "comment voxtile_" + key + " " + v + "\n";
  }
  header += "element vertex " + std::to_string(g.active_voxels()) + "\n";
  header += "property float x\nproperty float y\nproperty float z\n";
  switch (g.value_type) {
    case ValueType::kNone: header += "property uchar value\n"; break;
    case ValueType::kInt32: header += "property int value\n"; break;
    case ValueType::kFloat32: header += "property float value\n"; break;
  }
  header += "end_header\n";
  out.write(header.data(), header.size());
  std::vector<unsigned char> buf;
  buf.reserve(1 << 20);
  auto put = [&](const void* p, size_t n) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    buf.insert(buf.end(), c, c + n);
  };
  g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t b, int off) {
    const Vec3d c = g.spec.voxel_center(i, j, k);
    const float xyz[3] = {float(c.x), float(c.y), float(c.z)};
    put(xyz, sizeof(xyz));
    if (g.value_type == ValueType::kNone) {
      const unsigned char one = 1;
      put(&one, 1);
    } else if (g.value_type == ValueType::kInt32) {
      put(&g.ivalues[b * kBrickVoxels + off], 4);
    } else {
      put(&g.fvalues[b * kBrickVoxels + off], 4);
    }
    if (buf.size() >= (1 << 20)) {
      out.write(buf.data(), buf.size());
      buf.clear();
    }
  });
  out.write(buf.data(), buf.size());
  out.commit();
}

}  // namespace voxtile
