// Point cloud readers and the point PLY writer.
#include "io/points_io.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/grid_set.h"
#include "io/las.h"
#include "io/mesh_reader.h"
#include "io/ply.h"
#include "io/text_scan.h"

namespace voxtile {
namespace {

bool finite3(const Vec3f& p) { return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z); }

// The number strtod reads at the start of token [t, q), and how many of its characters it takes (0:
// none). fast_float where it takes the whole token (correctly rounded, as strtod is), else strtod
// itself (a leading '+', hexadecimal, out of range, a number followed by other characters).
size_t token_number(const char* t, const char* q, double& v) {
  const fast_float::from_chars_result r = fast_float::from_chars(t, q, v);
  if (r.ec == std::errc() && r.ptr == q) return size_t(q - t);
  const size_t n = size_t(q - t);
  char buf[128];
  std::string long_token;
  const char* tok = buf;
  if (n < sizeof buf) {
    std::memcpy(buf, t, n);
    buf[n] = '\0';
  } else {
    long_token.assign(t, n);
    tok = long_token.c_str();
  }
  char* end = nullptr;
  v = std::strtod(tok, &end);
  return size_t(end - tok);
}

void finish(PointCloud& pc, const std::string& path) {
  if (pc.positions.empty()) {
    if (pc.dropped_nonfinite)
      fail(ErrorKind::kInput, path + ": no usable points (" + std::to_string(pc.dropped_nonfinite) + " with NaN/Inf coordinates)");
    fail(ErrorKind::kInput, path + ": no points");
  }
}

// ---- PLY ------------------------------------------------------------------------------------

uint8_t to_channel(double v, PlyType t) {
  if (t == PlyType::kF32 || t == PlyType::kF64) v *= 255.0;
  if (!std::isfinite(v)) return 0;
  return uint8_t(std::lround(std::min(255.0, std::max(0.0, v))));
}

// Vertices are decoded in parallel straight from the mapped file: binary ones each property through
// ply_load_binary, ASCII ones line by line within chunks of lines (the same values and messages as
// one record at a time).
PointCloud read_ply_points(const std::string& path) {
  check_input_file(path);
  const MappedFile f(path);
  const PlyHeader h = parse_ply_header(std::string(f.data(), std::min<size_t>(f.size(), size_t(1) << 20)), path);
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
  const uint64_t n = vertex->count;
  // One vertex's point, normal and colour from its property values `v`; false when not finite.
  auto point = [&](const double* v, Vec3f& p, Vec3f& nn, Rgb8& c) {
    p = Vec3f{float(v[ix[0]]), float(v[ix[1]]), float(v[ix[2]])};
    if (!finite3(p)) return false;
    if (has_n) {
      nn = Vec3f{float(v[in[0]]), float(v[in[1]]), float(v[in[2]])};
      if (!finite3(nn)) nn = {0, 0, 0};
    }
    if (has_c)
      c = {to_channel(v[ic[0]], vertex->props[size_t(ic[0])].type), to_channel(v[ic[1]], vertex->props[size_t(ic[1])].type),
           to_channel(v[ic[2]], vertex->props[size_t(ic[2])].type)};
    return true;
  };
  std::vector<uint8_t> dropped;
  std::atomic<size_t> drops{0};
  // Vertex i from its property values; NaN/Inf coordinates flagged (left out below, in order).
  auto store = [&](size_t i, const double* v, size_t& bad) {
    Vec3f nn;
    Rgb8 c{};
    if (!point(v, pc.positions[i], nn, c)) {
      dropped[i] = 1;
      ++bad;
      return;
    }
    if (has_n) pc.normals[i] = nn;
    if (has_c) pc.colors[i] = c;
  };
  auto allocate = [&] {
    pc.positions.resize(n);
    if (has_n) pc.normals.resize(n);
    if (has_c) pc.colors.resize(n);
    dropped.assign(n, 0);
  };
  if (h.format == PlyHeader::kAscii) {
    // One record per line (a blank line too, as a line-by-line reading counts it), the lines counted
    // per chunk, then the vertex records parsed in place on all cores. A value is what strtod reads
    // at the start of its token (fast_float where it takes the whole token); the first bad record's
    // message is made by reading it again alone.
    const char* data = f.data();
    const char* end = data + f.size();
    const std::vector<size_t> cut = text_scan::line_chunks(data, std::min(h.data_start, f.size()), f.size());
    const size_t nc = cut.size() - 1;
    const std::vector<size_t> first = text_scan::part_offsets(nc, [&](size_t c) {
      size_t lines = 0;
      for (const char* q = data + cut[c]; q < data + cut[c + 1]; q = text_scan::line_end(q, end) + 1) ++lines;
      return lines;
    });
    uint64_t skip = 0;  // the records of the elements before the vertices
    for (const PlyElement& e : h.elements) {
      if (&e == vertex) break;
      skip += e.count;
    }
    const size_t lines = first[nc];
    if (skip > lines || n > lines - skip)
      fail(ErrorKind::kInput, path + ": truncated: " + std::to_string(skip > lines ? 0 : lines - skip) + " of " +
                                  std::to_string(n) + " vertices");
    // Record r's values; false with the problem when a value is missing or not a number.
    auto values = [&](const char* q, const char* le, double* v, std::string* problem) {
      for (size_t i = 0; i < vertex->props.size(); ++i) {
        q = text_scan::skip_spaces(q, le);
        const char* t = q;
        while (q < le && !text_scan::is_space(*q)) ++q;
        if (t == q) {
          if (problem) *problem = ": too few values";
          return false;
        }
        if (token_number(t, q, v[i]) == 0) {
          if (problem) *problem = ": not a number: '" + std::string(t, q) + "'";
          return false;
        }
      }
      return true;
    };
    allocate();
    std::atomic<size_t> bad_record{SIZE_MAX};
    tbb::parallel_for(size_t(0), nc, [&](size_t c) {
      if (first[c + 1] <= skip || first[c] >= skip + n) return;
      std::vector<double> v(vertex->props.size());
      size_t r = first[c], bad = 0;
      for (const char* q = data + cut[c]; q < data + cut[c + 1] && r < skip + n; ++r) {
        const char* le = text_scan::line_end(q, end);
        if (r >= skip) {
          if (!values(q, le, v.data(), nullptr)) {
            size_t cur = bad_record.load(std::memory_order_relaxed);
            while (r - skip < cur && !bad_record.compare_exchange_weak(cur, r - skip, std::memory_order_relaxed)) {
            }
            break;
          }
          store(r - skip, v.data(), bad);
        }
        q = le + 1;
      }
      drops += bad;
    });
    if (bad_record != SIZE_MAX) {
      const size_t r = bad_record.load() + skip;  // its line: found again in its chunk
      size_t c = size_t(std::upper_bound(first.begin(), first.end(), r) - first.begin()) - 1;
      const char* q = data + cut[c];
      for (size_t k = first[c]; k < r; ++k) q = text_scan::line_end(q, end) + 1;
      std::vector<double> v(vertex->props.size());
      std::string problem;
      values(q, text_scan::line_end(q, end), v.data(), &problem);
      fail(ErrorKind::kInput, path + ": vertex " + std::to_string(r - skip) + problem);
    }
  } else {
    // Binary: the vertex data after the earlier (list-free) elements.
    size_t pos = h.data_start;
    for (const PlyElement& e : h.elements) {
      if (&e == vertex) break;
      size_t row = 0;
      for (const PlyProperty& p : e.props) row += size_t(ply_type_size(p.type));
      pos += row * e.count;
    }
    std::vector<size_t> offset(vertex->props.size());
    size_t row = 0;
    for (size_t i = 0; i < vertex->props.size(); ++i) {
      if (vertex->props[i].list)
        fail(ErrorKind::kInput, path + ": list properties in the vertex element are not supported");
      offset[i] = row;
      row += size_t(ply_type_size(vertex->props[i].type));
    }
    if (pos > f.size() || (f.size() - pos) / row < n)
      fail(ErrorKind::kInput, path + ": truncated: the header declares " + std::to_string(n) +
                                  " vertices, the file holds " +
                                  std::to_string(pos > f.size() ? 0 : (f.size() - pos) / row));
    allocate();
    const bool big = h.format == PlyHeader::kBig;
    const char* body = f.data() + pos;
    tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
      std::vector<double> v(vertex->props.size(), 0.0);
      std::vector<int> used = {ix[0], ix[1], ix[2]};
      if (has_n) used.insert(used.end(), in, in + 3);
      if (has_c) used.insert(used.end(), ic, ic + 3);
      size_t bad = 0;
      for (size_t i = r.begin(); i < r.end(); ++i) {
        const char* rec = body + i * row;
        for (const int k : used)
          v[size_t(k)] = ply_load_binary(rec + offset[size_t(k)], vertex->props[size_t(k)].type, big);
        store(i, v.data(), bad);
      }
      drops += bad;
    });
  }
  pc.dropped_nonfinite = drops.load();
  if (pc.dropped_nonfinite) {  // the points with NaN/Inf coordinates left out, in order
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      if (dropped[i]) continue;
      pc.positions[k] = pc.positions[i];
      if (has_n) pc.normals[k] = pc.normals[i];
      if (has_c) pc.colors[k] = pc.colors[i];
      ++k;
    }
    pc.positions.resize(k);
    if (has_n) pc.normals.resize(k);
    if (has_c) pc.colors.resize(k);
  }
  finish(pc, path);
  return pc;
}

// ---- text formats ------------------------------------------------------------------------------

// Text clouds are parsed on all cores: the lines split into chunks, each chunk's values kept in
// order, and the first problem of the file (in line order) reported as a reading one line at a time
// would: the same points and the same messages. Numbers are what strtod reads of the whole token.
namespace {
bool text_separator(char c) {  // what >> skips, and ',' and ';' (read as spaces)
  return text_scan::is_space(c) || c == ',' || c == ';';
}
bool text_blank_prefix(char c) { return c == ' ' || c == ',' || c == ';' || c == '\r' || c == '\t'; }
// One line's values (strtod of each whitespace-separated token, the whole token); false and the
// bad token when one is not a number.
bool text_values(const char* q, const char* e, std::vector<double>& vals, std::string& bad) {
  while (true) {
    while (q < e && text_separator(*q)) ++q;
    if (q == e) return true;
    const char* t = q;
    while (q < e && !text_separator(*q)) ++q;
    double d = 0;
    if (token_number(t, q, d) != size_t(q - t)) {  // (the whole token)
      bad.assign(t, q);
      return false;
    }
    vals.push_back(d);
  }
}
// A line that holds no point: blank, or a comment ('#', "//").
bool text_skipped(const char* q, const char* e) {
  while (q < e && text_blank_prefix(*q)) ++q;
  return q == e || *q == '#' || (e - q >= 2 && q[0] == '/' && q[1] == '/');
}
}  // namespace

PointCloud read_text_points(const std::string& path, bool pts) {
  check_input_file(path);
  const MappedFile f(path);
  std::string storage;
  const std::string_view text = plain_text(path, f.data(), f.size(), storage);
  if (text.find('\0') != std::string_view::npos) fail(ErrorKind::kInput, path + ": not a text file");
  const char* data = text.data();
  const size_t size = text.size();
  auto line_end = [&](size_t at) { return size_t(text_scan::line_end(data + at, data + size) - data); };
  // The first point's line (after a .pts count line): the number of values every point has.
  size_t at = 0;
  int line_no = 0;  // of the line at `at`, from 0
  size_t columns = 0;
  std::vector<double> vals;
  std::string bad;
  bool first = true;
  while (at < size) {
    const size_t le = line_end(at);
    vals.clear();
    if (!text_skipped(data + at, data + le)) {
      if (!text_values(data + at, data + le, vals, bad))
        fail(ErrorKind::kInput, path + ":" + std::to_string(line_no + 1) + ": not a number: '" + bad + "'");
      if (!(pts && first && vals.size() == 1)) {
        columns = vals.size();
        if (columns < 3)
          fail(ErrorKind::kInput, path + ":" + std::to_string(line_no + 1) + ": expected x y z, got " +
                                      std::to_string(columns) + " values");
        break;  // this line is the first point: parsed again below with the rest
      }
      first = false;
    }
    at = le + 1;
    ++line_no;
  }
  if (columns == 0) fail(ErrorKind::kInput, path + ": no points");
  // Chunks of whole lines from the first point on, parsed in parallel.
  const std::vector<size_t> cut = text_scan::line_chunks(data, at, size);
  const size_t parts = cut.size() - 1;
  struct Part {
    std::vector<double> values;  // columns per point, in order
    int lines = 0;               // lines in the part
    int bad_line = -1;           // the first line with a problem (within the part; the rest is not read)
    std::string problem;
  };
  std::vector<Part> part(parts);
  tbb::parallel_for(size_t(0), parts, [&](size_t k) {
    Part& P = part[k];
    P.values.reserve((cut[k + 1] - cut[k]) / 8);  // (numbers and their separators: 8 characters or more)
    std::vector<double> v;
    std::string tok;
    for (size_t q = cut[k]; q < cut[k + 1];) {
      const size_t le = line_end(q);
      if (!text_skipped(data + q, data + le)) {
        v.clear();
        if (!text_values(data + q, data + le, v, tok)) {
          P.bad_line = P.lines;
          P.problem = ": not a number: '" + tok + "'";
          break;
        }
        if (v.size() != columns) {
          P.bad_line = P.lines;
          P.problem = ": expected " + std::to_string(columns) + " values like the first point, got " + std::to_string(v.size());
          break;
        }
        P.values.insert(P.values.end(), v.begin(), v.end());
      }
      ++P.lines;
      q = le + 1;
    }
  });
  size_t total = 0;
  for (const Part& P : part) {
    if (P.bad_line >= 0) fail(ErrorKind::kInput, path + ":" + std::to_string(line_no + P.bad_line + 1) + P.problem);
    line_no += P.lines;
    total += P.values.size();
  }
  // The points' values, part after part: f(values of one point) for each, in order, until f says stop.
  auto each_point = [&](auto f) {
    for (const Part& P : part)
      for (size_t i = 0; i < P.values.size(); i += columns)
        if (!f(P.values.data() + i)) return;
  };
  // Column layout.
  int color_at = -1, normal_at = -1;
  if (columns == 6) {
    bool ints = true;
    each_point([&](const double* r) {
      for (int c = 3; c < 6; ++c) ints = ints && r[c] == std::floor(r[c]) && r[c] >= 0 && r[c] <= 255;
      return ints;
    });
    if (ints) color_at = 3;
    else normal_at = 3;
  } else if (columns == 7) {
    color_at = pts ? 4 : 3;  // .pts: x y z intensity r g b; .xyz: x y z r g b a (CloudCompare)
  } else if (columns == 9) {
    color_at = 3, normal_at = 6;
  } else if (columns != 3 && columns != 4) {
    fail(ErrorKind::kInput, path + ": " + std::to_string(columns) + " values per point (expected 3, 4, 6, 7 or 9)");
  }
  if (color_at >= 0)
    each_point([&](const double* r) {
      for (int c = color_at; c < color_at + 3; ++c)
        if (!(r[c] >= 0 && r[c] <= 255))
          fail(ErrorKind::kInput, path + ": colour value " + std::to_string(r[c]) + " outside 0-255");
      return true;
    });
  const size_t n = total / columns;
  PointCloud pc;
  pc.positions.reserve(n);
  if (color_at >= 0) pc.colors.reserve(n);
  if (normal_at >= 0) pc.normals.reserve(n);
  each_point([&](const double* r) {
    const Vec3f p{float(r[0]), float(r[1]), float(r[2])};
    if (!finite3(p)) {
      ++pc.dropped_nonfinite;
      return true;
    }
    pc.positions.push_back(p);
    if (color_at >= 0)
      pc.colors.push_back({to_channel(r[color_at], PlyType::kU8), to_channel(r[color_at + 1], PlyType::kU8),
                           to_channel(r[color_at + 2], PlyType::kU8)});
    if (normal_at >= 0) {
      Vec3f nn{float(r[normal_at]), float(r[normal_at + 1]), float(r[normal_at + 2])};
      if (!finite3(nn)) nn = {0, 0, 0};
      pc.normals.push_back(nn);
    }
    return true;
  });
  finish(pc, path);
  return pc;
}

}  // namespace

CsgScript load_csg(const std::string& path) {
  const std::string text = read_text_file(path);
  if (text.find('\0') != std::string::npos) fail(ErrorKind::kInput, path + ": not a text file");
  return parse_csg(text, path);
}

PointCloud read_point_cloud(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == "ply") return read_ply_points(path);
  if (ext == "xyz" || ext == "txt" || ext == "csv") return read_text_points(path, false);
  if (ext == "pts") return read_text_points(path, true);
  if (ext == "las" || ext == "laz") return read_las(path);
  fail(ErrorKind::kInput, path + ": unknown point cloud format (expected .ply, .xyz, .pts or .las)");
}

bool is_point_cloud_file(const std::string& path) {
  if (point_cloud_extension(path)) return true;
  if (lower_extension(path) != "ply") return false;
  check_input_file(path);
  try {
    for (const PlyElement& e : read_ply_header(path).elements)
      if (e.name == "face" && e.count > 0) return false;
  } catch (const Error&) {
    // A malformed header: the point-cloud reader names the problem.
  }
  return true;
}

void write_point_cloud_ply(const PointCloud& pc, const std::string& path, const Metadata& meta) {
  AtomicFile out(path);
  const bool n = !pc.normals.empty(), c = !pc.colors.empty(), id = !pc.ids.empty(), mat = !pc.materials.empty();
  PlyElementSpec vertex{"vertex", pc.size(), {"float x", "float y", "float z"}};
  if (n) vertex.properties.insert(vertex.properties.end(), {"float nx", "float ny", "float nz"});
  if (c) vertex.properties.insert(vertex.properties.end(), {"uchar red", "uchar green", "uchar blue"});
  if (id) vertex.properties.push_back("uint id");
  if (mat) vertex.properties.push_back("uint material");
  const std::string header = ply_header(ply_meta_comments(meta), {vertex});
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

void write_point_cloud(const PointCloud& pc, const std::string& path, const std::string& format, const Metadata& meta) {
  const ProgressStage stage("write " + path);
  std::string f = format.empty() ? lower_extension(path) : format;
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (f == "ply") return write_point_cloud_ply(pc, path, meta);
  if (f == "las") return write_las_points(pc, path, meta);
  if (f == "xyz") return write_point_cloud_xyz(pc, path);
  fail(ErrorKind::kUsage, path + ": point clouds are written as .ply, .las or .xyz");
}

namespace {

// Lines of an .xyz file, written through an AtomicFile in 1 MB pieces.
class XyzText {
 public:
  explicit XyzText(AtomicFile& out) : m_out(out) {}
  void number(float v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round trip
    sep();
    m_buf.append(buf, r.ptr);
  }
  void integer(unsigned v) {
    char buf[16];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    sep();
    m_buf.append(buf, r.ptr);
  }
  void end_line() {
    m_buf += '\n';
    m_first = true;
    if (m_buf.size() >= (size_t(1) << 20)) flush();
  }
  void flush() {
    m_out.write(m_buf.data(), m_buf.size());
    m_buf.clear();
  }

 private:
  void sep() {
    if (!m_first) m_buf += ' ';
    m_first = false;
  }
  AtomicFile& m_out;
  std::string m_buf;
  bool m_first = true;
};

}  // namespace

void write_point_cloud_xyz(const PointCloud& pc, const std::string& path) {
  AtomicFile out(path);
  XyzText text(out);
  const bool c = !pc.colors.empty(), n = !pc.normals.empty();
  for (size_t i = 0; i < pc.size(); ++i) {
    for (float v : {pc.positions[i].x, pc.positions[i].y, pc.positions[i].z}) text.number(v);
    if (c)
      for (unsigned v : {pc.colors[i].r, pc.colors[i].g, pc.colors[i].b}) text.integer(v);
    if (n)
      for (float v : {pc.normals[i].x, pc.normals[i].y, pc.normals[i].z}) text.number(v);
    text.end_line();
  }
  text.flush();
  out.commit();
}

void write_xyz_grids(const std::vector<const SparseGrid*>& grids, const std::string& path) {
  const SparseGrid& g = one_voxel_set(grids, path, "XYZ");
  const SparseGrid *color = nullptr, *normal = nullptr;
  for (const SparseGrid* o : grids) {
    if (o->value_type == ValueType::kNone) continue;
    if (o->value_type == ValueType::kVec3f && o->name == "color" && !color) color = o;
    else if (o->value_type == ValueType::kVec3f && o->name == "normal" && !normal) normal = o;
    else
      fail(ErrorKind::kUsage, path + ": .xyz holds positions, colours and normals, not the '" + o->name +
                                  "' grid (write .ply or .las for its values, or .vdb)");
  }
  AtomicFile out(path);
  XyzText text(out);
  g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int, uint64_t v) {
    const Vec3d p = g.spec.voxel_center(i, j, k);
    for (double x : {p.x, p.y, p.z}) text.number(float(x));
    const size_t at = size_t(v) * 3;
    if (color)
      for (int q = 0; q < 3; ++q)
        text.integer(color_channel_8bit(color->fvalues[at + size_t(q)]));
    if (normal)
      for (int q = 0; q < 3; ++q) text.number(normal->fvalues[at + size_t(q)]);
    text.end_line();
  });
  text.flush();
  out.commit();
}

}  // namespace voxtile
