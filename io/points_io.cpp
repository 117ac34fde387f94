// Point cloud readers and the point PLY writer.
#include "io/points_io.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/mesh_reader.h"
#include "io/ply.h"

namespace voxtile {
namespace {

bool finite3(const Vec3f& p) { return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z); }

void finish(PointCloud& pc, const std::string& path) {
  if (pc.positions.empty()) {
    if (pc.dropped_nonfinite)
      fail(ErrorKind::kInput, path + ": no usable points (" + std::to_string(pc.dropped_nonfinite) + " with NaN/Inf coordinates)");
    fail(ErrorKind::kInput, path + ": no points");
  }
}

// ---- PLY ------------------------------------------------------------------------------------

enum class PlyType { kI8, kU8, kI16, kU16, kI32, kU32, kF32, kF64 };
int ply_size(PlyType t) {
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

struct PlyProperty {
  std::string name;
  PlyType type = PlyType::kF32;
  bool list = false;
  PlyType count_type = PlyType::kU8;
};
struct PlyElement {
  std::string name;
  uint64_t count = 0;
  std::vector<PlyProperty> props;
};
struct PlyHeader {
  enum Format { kAscii, kLittle, kBig } format = kAscii;
  std::vector<PlyElement> elements;
  size_t data_start = 0;
};

PlyHeader parse_ply_header(const std::string& bytes, const std::string& path) {
  if (bytes.compare(0, 3, "ply") != 0) fail(ErrorKind::kInput, path + ": not a PLY file");
  PlyHeader h;
  size_t pos = 0;
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
    } else if (word == "comment" || word == "obj_info" || word == "ply" || word.empty()) {
      continue;
    } else {
      bad("unknown header line");
    }
  }
  if (!have_format) fail(ErrorKind::kInput, path + ": PLY header without a format line");
  h.data_start = pos;
  return h;
}

double load_binary(const char* p, PlyType t, bool big) {
  unsigned char b[8];
  const int n = ply_size(t);
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

uint8_t to_channel(double v, PlyType t) {
  if (t == PlyType::kF32 || t == PlyType::kF64) v *= 255.0;
  if (!std::isfinite(v)) return 0;
  return uint8_t(std::lround(std::min(255.0, std::max(0.0, v))));
}

PointCloud read_ply_points(const std::string& path) {
  const std::string bytes = read_input_file(path);
  const PlyHeader h = parse_ply_header(bytes, path);
  PointCloud pc;
  const PlyElement* vertex = nullptr;
  for (const PlyElement& e : h.elements) {
    if (e.name == "vertex") {
      vertex = &e;
      break;
    }
    if (h.format != PlyHeader::kAscii && e.count)
      for (const PlyProperty& p : e.props)
        if (p.list) fail(ErrorKind::kInput, path + ": element '" + e.name + "' with lists before the vertices is not supported");
  }
  if (!vertex) fail(ErrorKind::kInput, path + ": no vertex element");
  int ix[3] = {-1, -1, -1}, in[3] = {-1, -1, -1}, ic[3] = {-1, -1, -1};
  for (size_t i = 0; i < vertex->props.size(); ++i) {
    const std::string& n = vertex->props[i].name;
    if (vertex->props[i].list) continue;
    for (int a = 0; a < 3; ++a) {
      if (n == std::string(1, char('x' + a))) ix[a] = int(i);
      if (n == std::string("n") + char('x' + a)) in[a] = int(i);
    }
    if (n == "red" || n == "r" || n == "diffuse_red") ic[0] = int(i);
    if (n == "green" || n == "g" || n == "diffuse_green") ic[1] = int(i);
    if (n == "blue" || n == "b" || n == "diffuse_blue") ic[2] = int(i);
  }
  if (ix[0] < 0 || ix[1] < 0 || ix[2] < 0) fail(ErrorKind::kInput, path + ": the vertices have no x, y, z properties");
  const bool has_n = in[0] >= 0 && in[1] >= 0 && in[2] >= 0, has_c = ic[0] >= 0 && ic[1] >= 0 && ic[2] >= 0;
  // Offset of the vertex data: skip earlier (list-free) binary elements.
  size_t pos = h.data_start;
  std::istringstream ascii;
  if (h.format == PlyHeader::kAscii) {
    ascii.str(bytes.substr(h.data_start));
    for (const PlyElement& e : h.elements) {
      if (&e == vertex) break;
      std::string skip;
      for (uint64_t r = 0; r < e.count; ++r) std::getline(ascii, skip);
    }
  } else {
    for (const PlyElement& e : h.elements) {
      if (&e == vertex) break;
      size_t row = 0;
      for (const PlyProperty& p : e.props) row += size_t(ply_size(p.type));
      pos += row * e.count;
    }
  }
  const uint64_t n = vertex->count;
  if (h.format != PlyHeader::kAscii) {
    size_t row = 0;
    for (const PlyProperty& p : vertex->props) {
      if (p.list) fail(ErrorKind::kInput, path + ": list properties in the vertex element are not supported");
      row += size_t(ply_size(p.type));
    }
    if (pos > bytes.size() || (bytes.size() - pos) / row < n)
      fail(ErrorKind::kInput, path + ": truncated: the header declares " + std::to_string(n) + " vertices, the file holds " +
                                  std::to_string(pos > bytes.size() ? 0 : (bytes.size() - pos) / row));
  } else if (n > bytes.size()) {
    fail(ErrorKind::kInput, path + ": truncated: the header declares " + std::to_string(n) + " vertices");
  }
  pc.positions.reserve(n);
  if (has_n) pc.normals.reserve(n);
  if (has_c) pc.colors.reserve(n);
  std::vector<size_t> offset(vertex->props.size());
  size_t row = 0;
  for (size_t i = 0; i < vertex->props.size(); ++i) {
    offset[i] = row;
    row += size_t(ply_size(vertex->props[i].type));
  }
  std::vector<double> v(vertex->props.size());
  std::string line;
  for (uint64_t r = 0; r < n; ++r) {
    if (h.format == PlyHeader::kAscii) {
      if (!std::getline(ascii, line))
        fail(ErrorKind::kInput, path + ": truncated: " + std::to_string(r) + " of " + std::to_string(n) + " vertices");
      std::istringstream ls(line);
      for (size_t i = 0; i < v.size(); ++i) {
        std::string tok;
        if (!(ls >> tok)) fail(ErrorKind::kInput, path + ": vertex " + std::to_string(r) + ": too few values");
        char* end = nullptr;
        v[i] = std::strtod(tok.c_str(), &end);
        if (end == tok.c_str()) fail(ErrorKind::kInput, path + ": vertex " + std::to_string(r) + ": not a number: '" + tok + "'");
      }
    } else {
      const char* base = bytes.data() + pos + r * row;
      for (size_t i = 0; i < v.size(); ++i) v[i] = load_binary(base + offset[i], vertex->props[i].type, h.format == PlyHeader::kBig);
    }
    const Vec3f p{float(v[size_t(ix[0])]), float(v[size_t(ix[1])]), float(v[size_t(ix[2])])};
    if (!finite3(p)) {
      ++pc.dropped_nonfinite;
      continue;
    }
    pc.positions.push_back(p);
    if (has_n) {
      Vec3f nn{float(v[size_t(in[0])]), float(v[size_t(in[1])]), float(v[size_t(in[2])])};
      if (!finite3(nn)) nn = {0, 0, 0};
      pc.normals.push_back(nn);
    }
    if (has_c)
      pc.colors.push_back({to_channel(v[size_t(ic[0])], vertex->props[size_t(ic[0])].type),
                           to_channel(v[size_t(ic[1])], vertex->props[size_t(ic[1])].type),
                           to_channel(v[size_t(ic[2])], vertex->props[size_t(ic[2])].type)});
  }
  finish(pc, path);
  return pc;
}

// ---- text formats ------------------------------------------------------------------------------

PointCloud read_text_points(const std::string& path, bool pts) {
  const std::string bytes = read_input_file(path);
  if (bytes.find('\0') != std::string::npos) fail(ErrorKind::kInput, path + ": not a text file");
  std::vector<std::vector<double>> rows;
  std::istringstream in(bytes);
  std::string line;
  int line_no = 0;
  size_t columns = 0;
  bool first = true;
  for (; std::getline(in, line); ++line_no) {
    for (char& c : line)
      if (c == ',' || c == ';' || c == '\r' || c == '\t') c = ' ';
    const size_t s = line.find_first_not_of(' ');
    if (s == std::string::npos || line[s] == '#' || line.compare(s, 2, "//") == 0) continue;
    std::istringstream ls(line);
    std::vector<double> vals;
    std::string tok;
    while (ls >> tok) {
      char* end = nullptr;
      const double d = std::strtod(tok.c_str(), &end);
      if (end != tok.c_str() + tok.size())
        fail(ErrorKind::kInput, path + ":" + std::to_string(line_no + 1) + ": not a number: '" + tok + "'");
      vals.push_back(d);
    }
    if (pts && first && vals.size() == 1) {  // the point count line
      first = false;
      continue;
    }
    first = false;
    if (columns == 0) {
      columns = vals.size();
      if (columns < 3) fail(ErrorKind::kInput, path + ":" + std::to_string(line_no + 1) + ": expected x y z, got " +
                                                   std::to_string(columns) + " values");
    } else if (vals.size() != columns) {
      fail(ErrorKind::kInput, path + ":" + std::to_string(line_no + 1) + ": expected " + std::to_string(columns) +
                                  " values like the first point, got " + std::to_string(vals.size()));
    }
    rows.push_back(std::move(vals));
  }
  if (rows.empty()) fail(ErrorKind::kInput, path + ": no points");
  // Column layout.
  int color_at = -1, normal_at = -1;
  if (columns == 6) {
    bool ints = true;
    for (const auto& r : rows)
      for (int c = 3; c < 6; ++c) ints = ints && r[size_t(c)] == std::floor(r[size_t(c)]) && r[size_t(c)] >= 0 && r[size_t(c)] <= 255;
    if (ints) color_at = 3;
    else normal_at = 3;
  } else if (columns == 7) {
    color_at = pts ? 4 : 3;  // .pts: x y z intensity r g b; .xyz: x y z r g b a (CloudCompare)
  } else if (columns == 9) {
    color_at = 3, normal_at = 6;
  } else if (columns != 3 && columns != 4) {
    fail(ErrorKind::kInput, path + ": " + std::to_string(columns) + " values per point (expected 3, 4, 6, 7 or 9)");
  }
  if (color_at >= 0) {
    for (const auto& r : rows)
      for (int c = color_at; c < color_at + 3; ++c)
        if (!(r[size_t(c)] >= 0 && r[size_t(c)] <= 255))
          fail(ErrorKind::kInput, path + ": colour value " + std::to_string(r[size_t(c)]) + " outside 0-255");
  }
  PointCloud pc;
  for (const auto& r : rows) {
    const Vec3f p{float(r[0]), float(r[1]), float(r[2])};
    if (!finite3(p)) {
      ++pc.dropped_nonfinite;
      continue;
    }
    pc.positions.push_back(p);
    if (color_at >= 0)
      pc.colors.push_back({to_channel(r[size_t(color_at)], PlyType::kU8), to_channel(r[size_t(color_at + 1)], PlyType::kU8),
                           to_channel(r[size_t(color_at + 2)], PlyType::kU8)});
    if (normal_at >= 0) {
      Vec3f n{float(r[size_t(normal_at)]), float(r[size_t(normal_at + 1)]), float(r[size_t(normal_at + 2)])};
      if (!finite3(n)) n = {0, 0, 0};
      pc.normals.push_back(n);
    }
  }
  finish(pc, path);
  return pc;
}

}  // namespace

CsgScript load_csg(const std::string& path) {
  const std::string text = read_input_file(path);
  if (text.find('\0') != std::string::npos) fail(ErrorKind::kInput, path + ": not a text file");
  return parse_csg(text, path);
}

PointCloud read_point_cloud(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == "ply") return read_ply_points(path);
  if (ext == "xyz" || ext == "txt" || ext == "csv") return read_text_points(path, false);
  if (ext == "pts") return read_text_points(path, true);
  fail(ErrorKind::kInput, path + ": unknown point cloud format (expected .ply, .xyz or .pts)");
}

bool is_point_cloud_file(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == "xyz" || ext == "pts") return true;
  if (ext != "ply") return false;
  check_input_file(path);
  std::ifstream f(path, std::ios::binary);
  std::string header, line;
  while (std::getline(f, line) && header.size() < (1 << 20)) {
    header += line + "\n";
    if (line.rfind("end_header", 0) == 0) break;
  }
  std::istringstream hs(header);
  bool faces = false;
  while (std::getline(hs, line)) {
    std::istringstream ls(line);
    std::string w, name;
    long double count = 0;
    if (ls >> w >> name >> count && w == "element" && name == "face" && count > 0) faces = true;
  }
  return !faces;
}

void write_point_cloud_ply(const PointCloud& pc, const std::string& path, const Metadata& meta) {
  AtomicFile out(path);
  std::string header = ply_header_begin(meta);
  header += "element vertex " + std::to_string(pc.size()) + "\nproperty float x\nproperty float y\nproperty float z\n";
  const bool n = !pc.normals.empty(), c = !pc.colors.empty(), id = !pc.ids.empty(), mat = !pc.materials.empty();
  if (n) header += "property float nx\nproperty float ny\nproperty float nz\n";
  if (c) header += "property uchar red\nproperty uchar green\nproperty uchar blue\n";
  if (id) header += "property uint id\n";
  if (mat) header += "property uint material\n";
  header += "end_header\n";
  out.write(header.data(), header.size());
  PlyBody body(out);
  for (size_t i = 0; i < pc.size(); ++i) {
    body.put(&pc.positions[i], 12);
    if (n) body.put(&pc.normals[i], 12);
    if (c) body.put(&pc.colors[i], 3);
    if (id) body.put(&pc.ids[i], 4);
    if (mat) body.put(&pc.materials[i], 4);
    body.flush();
  }
  body.flush(true);
  out.commit();
}

}  // namespace voxtile
