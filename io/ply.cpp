// PLY headers (parsed and written, for every PLY voxtile reads or writes) and the voxel-centre writer.
#include "io/ply.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/grid_set.h"

namespace voxtile {

int ply_type_size(PlyType t) {
  switch (t) {
    case PlyType::kI8: case PlyType::kU8: return 1;
    case PlyType::kI16: case PlyType::kU16: return 2;
    case PlyType::kI32: case PlyType::kU32: case PlyType::kF32: return 4;
    case PlyType::kF64: return 8;
  }
  return 0;
}
bool parse_ply_type(const std::string& s, PlyType& t) {
  static const std::pair<const char*, PlyType> names[] = {
      {"char", PlyType::kI8},    {"int8", PlyType::kI8},     {"uchar", PlyType::kU8},   {"uint8", PlyType::kU8},
      {"short", PlyType::kI16},  {"int16", PlyType::kI16},   {"ushort", PlyType::kU16}, {"uint16", PlyType::kU16},
      {"int", PlyType::kI32},    {"int32", PlyType::kI32},   {"uint", PlyType::kU32},   {"uint32", PlyType::kU32},
      {"float", PlyType::kF32},  {"float32", PlyType::kF32}, {"double", PlyType::kF64}, {"float64", PlyType::kF64}};
  for (const auto& [n, v] : names)
    if (s == n) {
      t = v;
      return true;
    }
  return false;
}

PlyHeader parse_ply_header(const std::string& bytes, const std::string& path) {
  // A UTF-8 byte-order mark (Windows editors write one) is skipped; the header is ASCII, so UTF-16
  // and UTF-32 text (io/files.h plain_text) is named as such rather than "not a PLY file".
  const size_t mark = byte_order_mark(bytes.data(), bytes.size());
  const size_t start = mark == 3 ? 3 : 0;
  if (bytes.compare(start, 3, "ply") != 0) {
    const bool wide = mark == 2 || mark == 4;
    fail(ErrorKind::kInput, path + (wide ? ": UTF-16 or UTF-32 text; a PLY header is ASCII (save it as ASCII or UTF-8)"
                                         : ": not a PLY file"));
  }
  PlyHeader h;
  size_t pos = start;
  int line_no = 0;
  bool have_format = false;
  while (true) {
    const size_t nl = bytes.find('\n', pos);
    if (nl == std::string::npos) fail(ErrorKind::kInput, path + ": truncated PLY header (no end_header)");
    std::string line = bytes.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "end_header") break;
    auto bad = [&](const std::string& what) {
      fail(ErrorKind::kInput, path + ":" + std::to_string(line_no) + ": " + what + ": '" + line + "'");
    };
    if (word == "format") {
      std::string f;
      ls >> f;
      if (f == "ascii") h.format = PlyHeader::kAscii;
      else if (f == "binary_little_endian") h.format = PlyHeader::kLittle;
      else if (f == "binary_big_endian") h.format = PlyHeader::kBig;
      else bad("unknown PLY format");
      have_format = true;
    } else if (word == "element") {
      PlyElement e;
      long double count = -1;
      if (!(ls >> e.name >> count) || count < 0 || count > 1e12) bad("bad element line");
      e.count = uint64_t(count);
      h.elements.push_back(e);
    } else if (word == "property") {
      if (h.elements.empty()) bad("property before any element");
      PlyProperty p;
      std::string t;
      ls >> t;
      if (t == "list") {
        std::string ct, it;
        ls >> ct >> it >> p.name;
        p.list = true;
        if (!parse_ply_type(ct, p.count_type) || !parse_ply_type(it, p.type) || p.name.empty()) bad("bad list property");
      } else {
        ls >> p.name;
        if (!parse_ply_type(t, p.type) || p.name.empty()) bad("bad property");
      }
      h.elements.back().props.push_back(p);
    } else if (word == "comment") {
      h.comments.push_back(line.size() > 8 ? line.substr(8) : "");
    } else {
      continue;  // obj_info, and free text some exporters write (Blender 2.4: "Created by ..."), as Assimp reads them
    }
  }
  if (!have_format) fail(ErrorKind::kInput, path + ": PLY header without a format line");
  h.data_start = pos;
  return h;
}

double ply_load_binary(const char* p, PlyType t, bool big) {
  unsigned char b[8];
  const int n = ply_type_size(t);
  std::memcpy(b, p, size_t(n));
  if (big) std::reverse(b, b + n);
  switch (t) {
    case PlyType::kI8: { int8_t v; std::memcpy(&v, b, 1); return v; }
    case PlyType::kU8: return b[0];
    case PlyType::kI16: { int16_t v; std::memcpy(&v, b, 2); return v; }
    case PlyType::kU16: { uint16_t v; std::memcpy(&v, b, 2); return v; }
    case PlyType::kI32: { int32_t v; std::memcpy(&v, b, 4); return v; }
    case PlyType::kU32: { uint32_t v; std::memcpy(&v, b, 4); return v; }
    case PlyType::kF32: { float v; std::memcpy(&v, b, 4); return v; }
    case PlyType::kF64: { double v; std::memcpy(&v, b, 8); return v; }
  }
  return 0;
}

std::vector<std::string> ply_meta_comments(const Metadata& meta) {
  std::vector<std::string> comments;
  for (const auto& [key, value] : meta) {
    std::string v = value;
    for (char& c : v)
      if (c == '\n' || c == '\r') c = ' ';
    comments.push_back("voxtile_" + key + " " + v);
  }
  return comments;
}

std::string ply_header(const std::vector<std::string>& comments, const std::vector<PlyElementSpec>& elements) {
  std::string header = "ply\nformat binary_little_endian 1.0\n";
  for (const std::string& c : comments) header += "comment " + c + "\n";
  for (const PlyElementSpec& e : elements) {
    header += "element " + e.name + " " + std::to_string(e.count) + "\n";
    for (const std::string& p : e.properties) header += "property " + p + "\n";
  }
  return header + "end_header\n";
}

PlyHeader read_ply_header(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorKind::kInput, path + ": cannot open");
  std::string bytes;
  for (std::string line; bytes.size() < (size_t(1) << 20) && std::getline(f, line);) {
    bytes += line + "\n";
    if (line.rfind("end_header", 0) == 0) break;
  }
  return parse_ply_header(bytes, path);
}

void PlyBody::flush(bool all) {
  if (m_buf.empty() || (!all && m_buf.size() < (size_t(1) << 20))) return;
  m_out.write(m_buf.data(), m_buf.size());
  m_buf.clear();
}

void write_ply(const SparseGrid& g, const std::string& path, const Metadata& meta) { write_ply_grids({&g}, path, meta); }

uint8_t color_channel_8bit(float unit) { return uint8_t(std::lround(std::clamp(double(unit), 0.0, 1.0) * 255.0)); }

void write_ply_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta) {
  const SparseGrid& g = one_voxel_set(grids, path, "PLY");
  AtomicFile out(path);
  std::vector<std::string> comments = ply_meta_comments(meta);
  // The grid, so that `voxtile compare` can map the points back to voxel indices.
  char grid_line[256];
  std::snprintf(grid_line, sizeof(grid_line), "voxtile_dims %d %d %d", g.spec.dims.x, g.spec.dims.y, g.spec.dims.z);
  comments.push_back(grid_line);
  std::snprintf(grid_line, sizeof(grid_line), "voxtile_voxel_size %.17g %.17g %.17g", g.spec.voxel_size.x,
                g.spec.voxel_size.y, g.spec.voxel_size.z);
  comments.push_back(grid_line);
  std::snprintf(grid_line, sizeof(grid_line), "voxtile_origin %.17g %.17g %.17g", g.spec.origin.x, g.spec.origin.y,
                g.spec.origin.z);
  comments.push_back(grid_line);
  PlyElementSpec vertex{"vertex", g.active_voxels(), {"float x", "float y", "float z"}};
  const bool single = grids.size() == 1;
  for (const SparseGrid* o : grids) {
    const std::string name = single ? "value" : o->name;
    switch (o->value_type) {
      case ValueType::kNone: vertex.properties.push_back("uchar " + name); break;
      case ValueType::kInt32: vertex.properties.push_back("int " + name); break;
      case ValueType::kFloat32: vertex.properties.push_back("float " + name); break;
      case ValueType::kVec3f:
        if (o->name == "color") {
          // What viewers (MeshLab, CloudCompare, Blender) show, then the exact mean in [0, 1].
          vertex.properties.insert(vertex.properties.end(), {"uchar red", "uchar green", "uchar blue", "float color_x",
                                                             "float color_y", "float color_z"});
        } else if (single || o->name == "normal") {
          vertex.properties.insert(vertex.properties.end(), {"float nx", "float ny", "float nz"});
        } else {
          vertex.properties.insert(vertex.properties.end(), {"float " + name + "_x", "float " + name + "_y", "float " + name + "_z"});
        }
        break;
    }
  }
  const std::string header = ply_header(comments, {vertex});
  out.write(header.data(), header.size());
  PlyBody body(out);
  auto put = [&](const void* p, size_t n) { body.put(p, n); };
  g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int, uint64_t at) {  // (every grid has g's voxels)
    const Vec3d c = g.spec.voxel_center(i, j, k);
    const float xyz[3] = {float(c.x), float(c.y), float(c.z)};
    put(xyz, sizeof(xyz));
    for (const SparseGrid* o : grids) {
      if (o->value_type == ValueType::kNone) {
        const unsigned char one = 1;
        put(&one, 1);
      } else if (o->value_type == ValueType::kInt32) {
        put(&o->ivalues[at], 4);
      } else if (o->value_type == ValueType::kFloat32) {
        put(&o->fvalues[at], 4);
      } else {
        const float* v = &o->fvalues[at * 3];
        if (o->name == "color") {
          unsigned char rgb[3];
          for (int c = 0; c < 3; ++c) rgb[c] = color_channel_8bit(v[c]);
          put(rgb, 3);
        }
        put(v, 12);
      }
    }
    body.flush();
  });
  body.flush(true);
  out.commit();
}

}  // namespace voxtile
