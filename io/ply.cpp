// PLY writer for voxel centres.
#include "io/ply.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"

namespace voxtile {

std::string ply_header_begin(const Metadata& meta) {
  std::string header = "ply\nformat binary_little_endian 1.0\n";
  for (const auto& [key, value] : meta) {
    std::string v = value;
    for (char& c : v)
      if (c == '\n' || c == '\r') c = ' ';
    header += "comment voxtile_" + key + " " + v + "\n";
  }
  return header;
}

void PlyBody::flush(bool all) {
  if (m_buf.empty() || (!all && m_buf.size() < (size_t(1) << 20))) return;
  m_out.write(m_buf.data(), m_buf.size());
  m_buf.clear();
}

void write_ply(const SparseGrid& g, const std::string& path, const Metadata& meta) { write_ply_grids({&g}, path, meta); }

void write_ply_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta) {
  if (grids.empty()) fail(ErrorKind::kInternal, "no grid to write");
  const SparseGrid& g = *grids[0];
  for (const SparseGrid* o : grids)
    if (o->keys != g.keys || o->masks.size() != g.masks.size() ||
        std::memcmp(o->masks.data(), g.masks.data(), g.masks.size() * sizeof(BrickMask)) != 0)
      fail(ErrorKind::kInternal, path + ": grids of one PLY file must have the same active voxels");
  AtomicFile out(path);
  std::string header = ply_header_begin(meta);
  // The grid, so that `voxtile compare` can map the points back to voxel indices.
  char grid_line[256];
  std::snprintf(grid_line, sizeof(grid_line),
                "comment voxtile_dims %d %d %d\ncomment voxtile_voxel_size %.17g %.17g %.17g\ncomment voxtile_origin %.17g "
                "%.17g %.17g\n",
                g.spec.dims.x, g.spec.dims.y, g.spec.dims.z, g.spec.voxel_size.x, g.spec.voxel_size.y,
                g.spec.voxel_size.z, g.spec.origin.x, g.spec.origin.y, g.spec.origin.z);
  header += grid_line;
  header += "element vertex " + std::to_string(g.active_voxels()) + "\n";
  header += "property float x\nproperty float y\nproperty float z\n";
  const bool single = grids.size() == 1;
  for (const SparseGrid* o : grids) {
    const std::string name = single ? "value" : o->name;
    switch (o->value_type) {
      case ValueType::kNone: header += "property uchar " + name + "\n"; break;
      case ValueType::kInt32: header += "property int " + name + "\n"; break;
      case ValueType::kFloat32: header += "property float " + name + "\n"; break;
      case ValueType::kVec3f:
        if (single || o->name == "normal") header += "property float nx\nproperty float ny\nproperty float nz\n";
        else header += "property float " + name + "_x\nproperty float " + name + "_y\nproperty float " + name + "_z\n";
        break;
    }
  }
  header += "end_header\n";
  out.write(header.data(), header.size());
  PlyBody body(out);
  auto put = [&](const void* p, size_t n) { body.put(p, n); };
  g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t b, int off) {
    const Vec3d c = g.spec.voxel_center(i, j, k);
    const float xyz[3] = {float(c.x), float(c.y), float(c.z)};
    put(xyz, sizeof(xyz));
    for (const SparseGrid* o : grids) {
      if (o->value_type == ValueType::kNone) {
        const unsigned char one = 1;
        put(&one, 1);
      } else if (o->value_type == ValueType::kInt32) {
        put(&o->ivalues[b * kBrickVoxels + off], 4);
      } else if (o->value_type == ValueType::kFloat32) {
        put(&o->fvalues[b * kBrickVoxels + off], 4);
      } else {
        put(&o->fvalues[(b * kBrickVoxels + off) * 3], 12);
      }
    }
    body.flush();
  });
  body.flush(true);
  out.commit();
}

}  // namespace voxtile
