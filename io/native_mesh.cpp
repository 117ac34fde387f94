// Native PLY, STL, OBJ and OFF readers (io/native_mesh.h).
//
// Text formats are parsed in two passes over chunks that start at line starts: pass 1 counts what
// each chunk defines (vertices, faces, materials and groups in effect at its end), an exclusive scan
// gives every chunk its place in the output, and pass 2 parses into that place. Relative (negative)
// OBJ indices and the material in effect at a chunk's first face follow from the counts, so the
// result is the same as a sequential read, for any number of threads. Numbers are parsed with
// fast_float (correctly rounded; Assimp 5.2's own parser is not: it rounds 1 to 7% of decimal
// coordinates one unit in the last place away, see README "Input").
#include "io/native_mesh.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/files.h"
#include "io/ply.h"
#include "io/png.h"
#include "io/text_scan.h"

namespace voxtile {
namespace {

// Text scanning: io/text_scan.h.
using namespace text_scan;

// Sets every element of `a` to v, in parallel.
template <class A, class T>
void parallel_fill(A& a, size_t n, T v) {
  a.resize(n);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, size_t(1) << 18), [&](const tbb::blocked_range<size_t>& r) {
    std::fill(a.begin() + std::ptrdiff_t(r.begin()), a.begin() + std::ptrdiff_t(r.end()), v);
  });
}
// Copies n bytes in parallel pieces (bulk binary data from the mapped file).
void parallel_copy(void* dst, const char* src, size_t n) {
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, size_t(1) << 20), [&](const tbb::blocked_range<size_t>& r) {
    std::memcpy(static_cast<char*>(dst) + r.begin(), src + r.begin(), r.size());
  });
}
// Drops the triangles flagged bad (counting them), keeping the others' order; nothing to do, and no
// pass over the arrays, when none is.
void drop_bad_faces(MeshLoadResult& out, const std::vector<uint8_t>& bad, size_t n) {
  Mesh& m = out.mesh;
  if (!n || !std::memchr(bad.data(), 1, n)) {
    parallel_fill(m.mesh_ids, n, 0u);
    parallel_fill(m.material_ids, n, 0u);
    return;
  }
  size_t w = 0;
  for (size_t i = 0; i < n; ++i) {
    if (bad[i]) {
      ++out.dropped_bad_index;
      continue;
    }
    if (w != i) std::memcpy(&m.indices[3 * w], &m.indices[3 * i], 12);
    ++w;
  }
  m.indices.resize(3 * w);
  parallel_fill(m.mesh_ids, w, 0u);
  parallel_fill(m.material_ids, w, 0u);
}

uint32_t pack_rgb(float r, float g, float b) {
  auto c = [](float v) { return uint32_t(std::lround(std::isfinite(v) ? std::min(1.f, std::max(0.f, v)) * 255.f : 0.f)); };
  return (c(r) << 16) | (c(g) << 8) | c(b);
}
Vec3f unit_or_zero(Vec3f n) {
  const float len = std::sqrt(n.x * n.x + n.y * n.y + n.z * n.z);
  if (len > 0 && std::isfinite(len)) return {n.x / len, n.y / len, n.z / len};
  return {0, 0, 0};
}

// Ear clipping of a simple polygon of n > 4 corners in the plane of its Newell normal: repeatedly
// cut off a convex corner whose triangle holds no other corner. Concave polygons (LightWave and CAD
// exports have large ones) come out right, which a fan would not; a polygon with no ear left
// (self-intersecting, degenerate) has its remaining corners fanned.
void ear_clip(const Vec3f* p, int n, std::vector<int>& out) {
  double nrm[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    const Vec3f& a = p[i];
    const Vec3f& b = p[(i + 1) % n];
    nrm[0] += (double(a.y) - b.y) * (double(a.z) + b.z);
    nrm[1] += (double(a.z) - b.z) * (double(a.x) + b.x);
    nrm[2] += (double(a.x) - b.x) * (double(a.y) + b.y);
  }
  // Project along the largest normal component, so that the polygon turns counter-clockwise.
  int drop = 2;
  if (std::fabs(nrm[0]) > std::fabs(nrm[1]) && std::fabs(nrm[0]) > std::fabs(nrm[2])) drop = 0;
  else if (std::fabs(nrm[1]) > std::fabs(nrm[2])) drop = 1;
  int ax = (drop + 1) % 3, ay = (drop + 2) % 3;
  if (nrm[drop] < 0) std::swap(ax, ay);
  auto coord = [](const Vec3f& v, int a) { return double(a == 0 ? v.x : a == 1 ? v.y : v.z); };
  std::vector<double> qx(static_cast<size_t>(n)), qy(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    qx[size_t(i)] = coord(p[i], ax);
    qy[size_t(i)] = coord(p[i], ay);
  }
  auto cross = [&](int a, int b, int c) {
    return (qx[size_t(b)] - qx[size_t(a)]) * (qy[size_t(c)] - qy[size_t(a)]) -
           (qy[size_t(b)] - qy[size_t(a)]) * (qx[size_t(c)] - qx[size_t(a)]);
  };
  std::vector<int> ring(static_cast<size_t>(n));
  std::iota(ring.begin(), ring.end(), 0);
  while (ring.size() > 3) {
    const size_t m = ring.size();
    bool cut = false;
    for (size_t k = 0; k < m && !cut; ++k) {
      const int a = ring[(k + m - 1) % m], b = ring[k], c = ring[(k + 1) % m];
      if (cross(a, b, c) <= 0) continue;  // reflex or flat corner
      bool empty = true;
      for (size_t r = 0; r < m && empty; ++r) {
        const int q = ring[r];
        if (q == a || q == b || q == c) continue;
        auto same = [&](int u) { return qx[size_t(q)] == qx[size_t(u)] && qy[size_t(q)] == qy[size_t(u)]; };
        if (same(a) || same(b) || same(c)) continue;  // a corner visited twice (keyhole polygons)
        empty = !(cross(a, b, q) >= 0 && cross(b, c, q) >= 0 && cross(c, a, q) >= 0);
      }
      if (!empty) continue;
      out.insert(out.end(), {a, b, c});
      ring.erase(ring.begin() + std::ptrdiff_t(k));
      cut = true;
    }
    if (!cut) {
      for (size_t k = 1; k + 1 < ring.size(); ++k) out.insert(out.end(), {ring[0], ring[k], ring[k + 1]});
      return;
    }
  }
  out.insert(out.end(), {ring[0], ring[1], ring[2]});
}

// Triangles of a polygon of n corners (n >= 3), corner indices 0..n-1 into out: a triangle as is;
// a quad split as Assimp's triangulation splits it (a fan from its concave corner, from the first
// corner when convex); larger polygons by ear clipping (Assimp ear-clips too, choosing other
// ears: the same surface, other triangles).
void triangulate(const Vec3f* p, int n, std::vector<int>& out) {
  out.clear();
  // Ear clipping costs O(n^2) to O(n^3): polygons of more than 256 corners (none in real files but
  // hostile ones) are fanned, so that no file's load time grows faster than its size.
  if (n > 256) {
    for (int k = 1; k + 1 < n; ++k) out.insert(out.end(), {0, k, k + 1});
    return;
  }
  if (n > 4) return ear_clip(p, n, out);
  int start = 0;
  if (n == 4) {
    for (int i = 0; i < 4; ++i) {
      const Vec3f& v0 = p[(i + 3) % 4];
      const Vec3f& v1 = p[(i + 2) % 4];
      const Vec3f& v2 = p[(i + 1) % 4];
      const Vec3f& v = p[i];
      // Normalised edge vectors, the two angles at the diagonal: over pi at the concave corner.
      auto unit = [](Vec3f a) {
        const float len = std::sqrt(a.x * a.x + a.y * a.y + a.z * a.z);
        return Vec3f{a.x / len, a.y / len, a.z / len};
      };
      auto dot = [](const Vec3f& a, const Vec3f& b) { return a.x * b.x + a.y * b.y + a.z * b.z; };
      const Vec3f left = unit({v0.x - v.x, v0.y - v.y, v0.z - v.z}), diag = unit({v1.x - v.x, v1.y - v.y, v1.z - v.z}),
                  right = unit({v2.x - v.x, v2.y - v.y, v2.z - v.z});
      const float angle = std::acos(dot(left, diag)) + std::acos(dot(right, diag));
      if (angle > float(M_PI)) {
        start = i;
        break;
      }
    }
  }
  for (int k = 1; k + 1 < n; ++k) out.insert(out.end(), {start, (start + k) % n, (start + k + 1) % n});
}

// ---- PLY ----------------------------------------------------------------------------------------

struct PlyLayout {
  int x = -1, y = -1, z = -1, nx = -1, ny = -1, nz = -1, r = -1, g = -1, b = -1, u = -1, v = -1;
};
PlyLayout ply_layout(const PlyElement& e) {
  PlyLayout l;
  for (size_t i = 0; i < e.props.size(); ++i) {
    if (e.props[i].list) continue;
    const std::string& n = e.props[i].name;
    const int k = int(i);
    if (n == "x") l.x = k;
    else if (n == "y") l.y = k;
    else if (n == "z") l.z = k;
    else if (n == "nx") l.nx = k;
    else if (n == "ny") l.ny = k;
    else if (n == "nz") l.nz = k;
    else if (n == "red" || n == "diffuse_red" || n == "r") l.r = k;
    else if (n == "green" || n == "diffuse_green" || n == "g") l.g = k;
    else if (n == "blue" || n == "diffuse_blue" || n == "b") l.b = k;
    else if (n == "u" || n == "s" || n == "texture_u" || n == "texture_s") l.u = k;
    else if (n == "v" || n == "t" || n == "texture_v" || n == "texture_t") l.v = k;
  }
  return l;
}
float ply_channel(double v, PlyType t) {
  if (t == PlyType::kF32 || t == PlyType::kF64) return float(v);
  const double max = t == PlyType::kU16 || t == PlyType::kI16 ? 65535.0 : t == PlyType::kU32 || t == PlyType::kI32 ? 4294967295.0 : 255.0;
  return float(v / max);
}
bool is_index_list(const PlyProperty& p) { return p.list && (p.name == "vertex_indices" || p.name == "vertex_index"); }

// Smallest size in bytes of one record of a binary element (lists count their length field only).
size_t min_record_bytes(const PlyElement& e) {
  size_t n = 0;
  for (const PlyProperty& p : e.props) n += size_t(ply_type_size(p.list ? p.count_type : p.type));
  return n;
}

void ply_vertex(MeshLoadResult& out, const PlyLayout& l, const PlyElement& e, size_t i, const double* v) {
  Mesh& m = out.mesh;
  m.positions[i] = {float(v[l.x]), float(v[l.y]), float(v[l.z])};
  if (!m.normals.empty()) m.normals[i] = unit_or_zero({float(v[l.nx]), float(v[l.ny]), float(v[l.nz])});
  if (!m.colors.empty())
    m.colors[i] = pack_rgb(ply_channel(v[l.r], e.props[size_t(l.r)].type), ply_channel(v[l.g], e.props[size_t(l.g)].type),
                           ply_channel(v[l.b], e.props[size_t(l.b)].type));
  if (!m.uvs.empty()) m.uvs[i] = {float(v[l.u]), float(v[l.v])};
}

// Appends the triangles of one face (corner vertex indices idx[0..n)) to the mesh.
void add_face(MeshLoadResult& out, const uint32_t* idx, int n, std::vector<int>& tri, std::vector<Vec3f>& corners) {
  Mesh& m = out.mesh;
  if (n < 3) {
    ++out.non_triangle_primitives;
    return;
  }
  for (int k = 0; k < n; ++k)
    if (idx[k] >= m.positions.size()) {
      ++out.dropped_bad_index;
      return;
    }
  if (n == 3) {
    m.indices.insert(m.indices.end(), idx, idx + 3);
    m.mesh_ids.push_back(0);
    m.material_ids.push_back(0);
    return;
  }
  corners.resize(size_t(n));
  for (int k = 0; k < n; ++k) corners[size_t(k)] = m.positions[idx[k]];
  triangulate(corners.data(), n, tri);
  for (size_t t = 0; t < tri.size(); t += 3) {
    for (int c = 0; c < 3; ++c) m.indices.push_back(idx[tri[t + size_t(c)]]);
    m.mesh_ids.push_back(0);
    m.material_ids.push_back(0);
  }
}

// An ASCII face record: skips the properties before the index list (scalars, and lists such as
// MeshLab's per-face texcoord: a count and its values) and reads the list's length; q is left before
// the first index. False when there is no length.
bool ascii_face_length(const char*& q, const char* le, const PlyElement& e, int list, int64_t& length) {
  double skip;
  for (int k = 0; k < list; ++k) {
    if (!e.props[size_t(k)].list) {
      parse_double(q, le, skip);
      continue;
    }
    int64_t n = 0;
    q = skip_spaces(q, le);
    if (!parse_int(q, le, n) || n < 0) return false;
    for (int64_t i = 0; i < n; ++i) parse_double(q, le, skip);
  }
  q = skip_spaces(q, le);
  return parse_int(q, le, length);
}

// A face of a PLY whose texture coordinates are given per corner.
struct PlyFace {
  std::vector<uint32_t> idx;
  std::vector<float> uv;  // u, v per corner (v up)
  double texnumber = 0;
  bool bad = false;
};

// The mesh of faces with texture coordinates per corner: every triangle's corners become vertices of
// their own (positions, normals and colours copied, the corner's coordinates), in face order; the
// material is the face's texnumber (the TextureFile it names: load_ply_textures). A face with an index out of range, or
// without two coordinates per corner, is dropped and counted.
void split_corners(MeshLoadResult& out, const std::vector<PlyFace>& faces, const std::vector<std::string>& comments) {
  Mesh& m = out.mesh;
  std::vector<std::string> files;
  for (const std::string& c : comments)
    if (c.rfind("TextureFile ", 0) == 0) files.push_back(c.substr(12));
  const size_t materials = std::max<size_t>(1, files.size());
  Mesh s;
  const bool normals = !m.normals.empty(), colors = !m.colors.empty();
  std::vector<int> tri;
  std::vector<Vec3f> corners;
  for (const PlyFace& f : faces) {
    const size_t n = f.idx.size();
    if (n < 3) {
      ++out.non_triangle_primitives;
      continue;
    }
    bool ok = !f.bad && f.uv.size() == 2 * n;
    for (size_t k = 0; k < n && ok; ++k) ok = f.idx[k] < m.positions.size();
    if (!ok) {
      ++out.dropped_bad_index;
      continue;
    }
    corners.resize(n);
    for (size_t k = 0; k < n; ++k) corners[k] = m.positions[f.idx[k]];
    if (n == 3)
      tri = {0, 1, 2};
    else
      triangulate(corners.data(), int(n), tri);
    const uint32_t material = f.texnumber >= 0 && f.texnumber < double(materials) ? uint32_t(f.texnumber) : 0;
    for (size_t t = 0; t < tri.size(); t += 3) {
      for (int c = 0; c < 3; ++c) {
        const size_t k = size_t(tri[t + size_t(c)]);
        s.indices.push_back(uint32_t(s.positions.size()));
        s.positions.push_back(m.positions[f.idx[k]]);
        if (normals) s.normals.push_back(m.normals[f.idx[k]]);
        if (colors) s.colors.push_back(m.colors[f.idx[k]]);
        s.uvs.push_back({f.uv[2 * k], f.uv[2 * k + 1]});
      }
      s.mesh_ids.push_back(0);
      s.material_ids.push_back(material);
    }
  }
  m.positions = std::move(s.positions);
  m.normals = std::move(s.normals);
  m.colors = std::move(s.colors);
  m.uvs = std::move(s.uvs);
  m.indices = std::move(s.indices);
  m.mesh_ids = std::move(s.mesh_ids);
  m.material_ids = std::move(s.material_ids);
  m.num_materials = materials;
}

// The pictures the header's "comment TextureFile NAME" lines name (relative to the PLY), as the
// textures of materials 0, 1, ... (a picture that cannot be read is a warning).
void load_ply_textures(MeshLoadResult& out, const std::vector<std::string>& comments, const std::string& path) {
  std::vector<std::string> files;
  for (const std::string& c : comments)
    if (c.rfind("TextureFile ", 0) == 0) files.push_back(c.substr(12));
  if (files.empty()) return;
  std::vector<Texture> textures(std::max<size_t>(out.mesh.num_materials, 1));
  bool any = false;
  for (size_t k = 0; k < files.size() && k < textures.size(); ++k) {
    std::string why;
    if (load_texture_file(texture_path(path, files[k]), textures[k], why))
      any = true;
    else
      out.warnings.push_back("texture '" + files[k] + "' not used: " + why);
  }
  if (any) out.mesh.material_textures = std::move(textures);
}

void read_ply(const std::string& path, const char* data, size_t size, MeshLoadResult& out, bool textures) {
  const std::string header_bytes(data, std::min<size_t>(size, size_t(1) << 20));
  const PlyHeader h = parse_ply_header(header_bytes, path);
  out.format = std::string("PLY ") + (h.format == PlyHeader::kAscii ? "ascii" : "binary") + " (native)";
  Mesh& m = out.mesh;
  m.num_source_meshes = 1;
  m.num_materials = 1;
  const bool ascii = h.format == PlyHeader::kAscii, big = h.format == PlyHeader::kBig;
  const char* end = data + size;
  const char* p = data + h.data_start;
  // ASCII: one record per line; the lines of the body, found once.
  std::vector<const char*> lines;
  size_t next_line = 0;
  if (ascii) {
    const std::vector<size_t> chunks = line_chunks(data, h.data_start, size);
    std::vector<std::vector<const char*>> parts(chunks.size() - 1);
    tbb::parallel_for(size_t(0), parts.size(), [&](size_t c) {
      const char* q = data + chunks[c];
      const char* e = data + chunks[c + 1];
      while (q < e) {
        const char* le = line_end(q, e);
        const char* s = skip_spaces(q, le);
        if (s < le) parts[c].push_back(q);  // blank lines are not records
        q = le + 1;
      }
    });
    size_t total = 0;
    for (const auto& v : parts) total += v.size();
    lines.reserve(total);
    for (const auto& v : parts) lines.insert(lines.end(), v.begin(), v.end());
  }
  // Where record k's parsing must stop: the next record's start (or the end). No token crosses a
  // newline (skip_spaces stops there and numbers end there), so no second scan for the line's end.
  auto record_end = [&](size_t k) { return k + 1 < lines.size() ? lines[k + 1] : end; };
  // Binary face record i of n at p, every property in order: the index list (and, where asked, the
  // per-corner texcoord list and the texnumber) kept, the rest skipped; p is left after it.
  auto binary_face = [&](const PlyElement& e, int list, int texcoord, int texnumber, size_t i, size_t n,
                         PlyFace& face) {
    auto truncated = [&] {
      fail(ErrorKind::kInput, path + ": truncated: face " + std::to_string(i) + " of " + std::to_string(n));
    };
    face = PlyFace{};
    for (size_t k = 0; k < e.props.size(); ++k) {
      const PlyProperty& q = e.props[k];
      if (!q.list) {
        if (size_t(end - p) < size_t(ply_type_size(q.type))) truncated();
        if (int(k) == texnumber) face.texnumber = ply_load_binary(p, q.type, big);
        p += ply_type_size(q.type);
        continue;
      }
      const size_t qs = size_t(ply_type_size(q.type));
      if (size_t(end - p) < size_t(ply_type_size(q.count_type))) truncated();
      const double c = ply_load_binary(p, q.count_type, big);
      p += ply_type_size(q.count_type);
      if (!(c >= 0) || c > double(size_t(end - p) / qs)) truncated();
      if (int(k) == list || int(k) == texcoord)
        for (size_t j = 0; j < size_t(c); ++j) {
          const double v = ply_load_binary(p + j * qs, q.type, big);
          if (int(k) == list)
            face.idx.push_back(v >= 0 && v <= double(UINT32_MAX) ? uint32_t(v) : UINT32_MAX);
          else
            face.uv.push_back(float(v));
        }
      p += size_t(c) * qs;
    }
  };
  bool have_vertices = false;
  std::vector<int> tri;
  std::vector<Vec3f> corners;
  for (const PlyElement& e : h.elements) {
    const bool is_vertex = e.name == "vertex", is_face = e.name == "face";
    // The stated count against what the file can hold, before anything is allocated.
    if (ascii) {
      if (e.count > lines.size() - next_line)
        fail(ErrorKind::kInput, path + ": truncated: the header declares " + std::to_string(e.count) + " " + e.name +
                                    " records, the file holds " + std::to_string(lines.size() - next_line) + " lines");
    } else {
      const size_t rec = min_record_bytes(e);
      if (rec > 0 && e.count > size_t(end - p) / rec)
        fail(ErrorKind::kInput, path + ": truncated: the header declares " + std::to_string(e.count) + " " + e.name +
                                    " records, the file holds at most " + std::to_string(size_t(end - p) / rec));
    }
    if (is_vertex && !have_vertices) {
      have_vertices = true;
      const PlyLayout l = ply_layout(e);
      if (l.x < 0 || l.y < 0 || l.z < 0) fail(ErrorKind::kInput, path + ": the vertices have no x, y, z properties");
      for (const PlyProperty& q : e.props)
        if (q.list) fail(ErrorKind::kInput, path + ": list properties in the vertex element are not supported");
      const size_t n = size_t(e.count);
      m.positions.resize(n);
      if (l.nx >= 0 && l.ny >= 0 && l.nz >= 0) m.normals.resize(n);
      if (l.r >= 0 && l.g >= 0 && l.b >= 0) m.colors.resize(n);
      if (l.u >= 0 && l.v >= 0) m.uvs.resize(n);
      const size_t np = e.props.size();
      if (ascii) {
        const size_t first = next_line;
        std::vector<size_t> bad(1, SIZE_MAX);
        tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
          std::vector<double> v(np);
          for (size_t i = r.begin(); i < r.end(); ++i) {
            const char* q = lines[first + i];
            const char* le = record_end(first + i);
            for (size_t k = 0; k < np; ++k)
              if (!parse_double(q, le, v[k])) {
                bad[0] = std::min(bad[0], i);  // reported below (the lowest such vertex may differ by thread)
                v[k] = 0;
              }
            ply_vertex(out, l, e, i, v.data());
          }
        });
        if (bad[0] != SIZE_MAX) fail(ErrorKind::kInput, path + ": a vertex has too few or malformed values");
        next_line += n;
      } else {
        std::vector<size_t> offset(np);
        size_t row = 0;
        for (size_t k = 0; k < np; ++k) {
          offset[k] = row;
          row += size_t(ply_type_size(e.props[k].type));
        }
        const bool packed_xyz = !big && l.x == 0 && l.y == 1 && l.z == 2 && e.props[0].type == PlyType::kF32 &&
                                e.props[1].type == PlyType::kF32 && e.props[2].type == PlyType::kF32;
        if (packed_xyz && row == 12 && m.normals.empty() && m.colors.empty() && m.uvs.empty()) {
          parallel_copy(m.positions.data(), p, n * 12);  // the common case: one bulk copy
        } else {
          tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
            std::vector<double> v(np);
            for (size_t i = r.begin(); i < r.end(); ++i) {
              const char* rec = p + i * row;
              for (size_t k = 0; k < np; ++k) v[k] = ply_load_binary(rec + offset[k], e.props[k].type, big);
              ply_vertex(out, l, e, i, v.data());
            }
          });
        }
        p += n * row;
      }
      continue;
    }
    if (is_face && have_vertices) {
      int list = -1, texcoord = -1, texnumber = -1;
      for (size_t k = 0; k < e.props.size(); ++k) {
        if (is_index_list(e.props[k])) list = int(k);
        if (e.props[k].list && e.props[k].name == "texcoord") texcoord = int(k);
        if (!e.props[k].list && e.props[k].name == "texnumber") texnumber = int(k);
      }
      if (list < 0) fail(ErrorKind::kInput, path + ": the faces have no vertex_indices list");
      if (textures && texcoord >= 0) {
        // Texture coordinates per face corner (MeshLab's "texcoord" list, with "texnumber" naming the
        // TextureFile): each triangle's corners become vertices of their own.
        std::vector<PlyFace> faces(size_t(e.count));
        for (size_t i = 0; i < faces.size(); ++i) {
          PlyFace& face = faces[i];
          if (ascii) {
            const char* q = lines[next_line + i];
            const char* le = record_end(next_line + i);
            for (size_t k = 0; k < e.props.size(); ++k) {
              double v = 0;
              if (!e.props[k].list) {
                if (!parse_double(q, le, v)) face.bad = true;
                if (int(k) == texnumber) face.texnumber = v;
                continue;
              }
              int64_t n = 0;
              q = skip_spaces(q, le);
              if (!parse_int(q, le, n) || n < 0 || n > 1 << 20) {
                face.bad = true;
                break;
              }
              for (int64_t j = 0; j < n; ++j) {
                if (!parse_double(q, le, v)) face.bad = true;
                if (int(k) == list) face.idx.push_back(v >= 0 && v <= double(UINT32_MAX) ? uint32_t(v) : UINT32_MAX);
                if (int(k) == texcoord) face.uv.push_back(float(v));
              }
            }
          } else {
            binary_face(e, list, texcoord, texnumber, i, faces.size(), face);
          }
        }
        if (ascii) next_line += faces.size();
        split_corners(out, faces, h.comments);
        continue;
      }
      const size_t n = size_t(e.count);
      const PlyProperty& lp = e.props[size_t(list)];
      if (ascii) {
        // One parallel pass that expects triangles (the usual); any other face sends the element to
        // the general path below, in order.
        const size_t first = next_line;
        m.indices.resize(3 * n);
        std::vector<uint8_t> bad(n, 0);
        std::atomic<bool> all_triangles{true};
        tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
          for (size_t i = r.begin(); i < r.end() && all_triangles.load(std::memory_order_relaxed); ++i) {
            const char* q = lines[first + i];
            const char* le = record_end(first + i);
            int64_t c = 0, idx = -1;
            if (!ascii_face_length(q, le, e, list, c) || c != 3) {
              all_triangles.store(false, std::memory_order_relaxed);
              break;
            }
            for (int k = 0; k < 3; ++k) {
              q = skip_spaces(q, le);
              if (!parse_int(q, le, idx) || idx < 0 || uint64_t(idx) >= m.positions.size()) bad[i] = 1;
              m.indices[3 * i + size_t(k)] = uint32_t(idx);
            }
          }
        });
        if (all_triangles) {
          drop_bad_faces(out, bad, n);  // faces with an index out of range
        } else {
          m.indices.clear();
          std::vector<uint32_t> idx;
          for (size_t i = 0; i < n; ++i) {
            const char* q = lines[first + i];
            const char* le = record_end(first + i);
            int64_t c = 0, x = -1;
            idx.clear();
            bool ok = ascii_face_length(q, le, e, list, c) && c >= 0 && c < 1 << 20;
            for (int64_t k = 0; ok && k < c; ++k) {
              q = skip_spaces(q, le);
              ok = parse_int(q, le, x) && x >= 0 && x <= int64_t(UINT32_MAX);
              idx.push_back(uint32_t(x));
            }
            if (!ok) {
              ++out.dropped_bad_index;
              continue;
            }
            add_face(out, idx.data(), int(idx.size()), tri, corners);
          }
        }
        next_line += n;
      } else {
        const int cs = ply_type_size(lp.count_type), is = ply_type_size(lp.type);
        size_t before = 0, after = 0;  // bytes of the other properties around the list
        bool other_lists = false;      // (e.g. MeshLab's per-face texcoord): the general path
        for (size_t k = 0; k < e.props.size(); ++k) {
          if (int(k) == list) continue;
          if (e.props[k].list)
            other_lists = true;
          else
            (int(k) < list ? before : after) += size_t(ply_type_size(e.props[k].type));
        }
        // Fast path: every face a triangle, so records have one size: checked, then read in parallel.
        const size_t rec = before + size_t(cs) + 3 * size_t(is) + after;
        bool fixed = !other_lists && n <= size_t(end - p) / rec;
        if (fixed) {
          std::vector<uint8_t> not3(1, 0);
          tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
            if (cs == 1) {  // uchar counts, the usual: a byte compare
              for (size_t i = r.begin(); i < r.end(); ++i)
                if (uint8_t(p[i * rec + before]) != 3) {
                  not3[0] = 1;
                  return;
                }
              return;
            }
            for (size_t i = r.begin(); i < r.end(); ++i)
              if (ply_load_binary(p + i * rec + before, lp.count_type, big) != 3) {
                not3[0] = 1;
                return;
              }
          });
          fixed = !not3[0];
        }
        if (fixed) {
          m.indices.resize(3 * n);
          std::vector<uint8_t> bad(n, 0);
          const bool raw32 = !big && is == 4;
          tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
            for (size_t i = r.begin(); i < r.end(); ++i) {
              const char* f = p + i * rec + before + cs;
              for (int k = 0; k < 3; ++k) {
                uint32_t v;
                if (raw32) {
                  std::memcpy(&v, f + 4 * k, 4);
                } else {
                  const double d = ply_load_binary(f + is * k, lp.type, big);
                  v = d >= 0 && d <= double(UINT32_MAX) ? uint32_t(d) : UINT32_MAX;
                }
                if (v >= m.positions.size()) bad[i] = 1;
                m.indices[3 * i + size_t(k)] = v;
              }
            }
          });
          drop_bad_faces(out, bad, n);
          p += n * rec;
        } else {
          // One face at a time, every property in order: scalars and other lists skipped.
          PlyFace face;
          for (size_t i = 0; i < n; ++i) {
            binary_face(e, list, -1, -1, i, n, face);
            add_face(out, face.idx.data(), int(face.idx.size()), tri, corners);
          }
        }
      }
      continue;
    }
    // Any other element: skipped.
    if (ascii) {
      next_line += size_t(e.count);
    } else {
      for (uint64_t i = 0; i < e.count; ++i)
        for (const PlyProperty& q : e.props) {
          if (size_t(end - p) < size_t(ply_type_size(q.list ? q.count_type : q.type)))
            fail(ErrorKind::kInput, path + ": truncated element " + e.name);
          if (!q.list) {
            p += ply_type_size(q.type);
            continue;
          }
          const double c = ply_load_binary(p, q.count_type, big);
          p += ply_type_size(q.count_type);
          if (!(c >= 0) || c > double(size_t(end - p) / size_t(ply_type_size(q.type))))
            fail(ErrorKind::kInput, path + ": truncated element " + e.name);
          p += size_t(c) * size_t(ply_type_size(q.type));
        }
    }
  }
  if (m.indices.empty()) out.points = m.positions.size();
  // Textures: for per-corner coordinates (above) or per-vertex ones.
  if (textures && !m.uvs.empty()) load_ply_textures(out, h.comments, path);
}

// ---- STL ----------------------------------------------------------------------------------------

void read_stl_binary(const std::string& path, const char* data, size_t size, MeshLoadResult& out) {
  uint32_t n = 0;
  std::memcpy(&n, data + 80, 4);
  if (size_t(n) > (size - 84) / 50)
    fail(ErrorKind::kInput, path + ": truncated: the header declares " + std::to_string(n) + " triangles, the file holds " +
                                std::to_string((size - 84) / 50));
  out.format = "STL binary (native)";
  Mesh& m = out.mesh;
  m.positions.resize(3 * size_t(n));
  m.normals.resize(3 * size_t(n));
  m.indices.resize(3 * size_t(n));
  parallel_fill(m.mesh_ids, n, 0u);
  parallel_fill(m.material_ids, n, 0u);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 15), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t t = r.begin(); t < r.end(); ++t) {
      const char* rec = data + 84 + 50 * t;
      Vec3f nrm;
      std::memcpy(&nrm, rec, 12);
      std::memcpy(&m.positions[3 * t], rec + 12, 36);
      const Vec3f u = unit_or_zero(nrm);
      for (int k = 0; k < 3; ++k) {
        m.normals[3 * t + size_t(k)] = u;
        m.indices[3 * t + size_t(k)] = uint32_t(3 * t + size_t(k));
      }
    }
  });
}

void read_stl_ascii(const std::string& path, const char* data, size_t size, MeshLoadResult& out) {
  out.format = "STL ascii (native)";
  const char* end = data + size;
  const std::vector<size_t> chunks = line_chunks(data, 0, size);
  const size_t nc = chunks.size() - 1;
  // Pass 1: vertices and solids per chunk.
  std::vector<size_t> verts(nc + 1, 0), solids(nc + 1, 0);
  tbb::parallel_for(size_t(0), nc, [&](size_t c) {
    for (const char* q = data + chunks[c]; q < data + chunks[c + 1];) {
      const char* le = line_end(q, end);
      const char* s = skip_spaces(q, le);
      if (starts_with_word(s, le, "vertex", 6)) ++verts[c + 1];
      else if (starts_with_word(s, le, "solid", 5)) ++solids[c + 1];
      q = le + 1;
    }
  });
  std::partial_sum(verts.begin(), verts.end(), verts.begin());
  std::partial_sum(solids.begin(), solids.end(), solids.begin());
  const size_t nv = verts[nc];
  if (nv % 3 != 0) fail(ErrorKind::kInput, path + ": " + std::to_string(nv) + " vertices, not a whole number of facets");
  Mesh& m = out.mesh;
  m.positions.resize(nv);
  m.normals.resize(nv);
  m.indices.resize(nv);
  std::iota(m.indices.begin(), m.indices.end(), 0u);
  m.mesh_ids.resize(nv / 3);
  parallel_fill(m.material_ids, nv / 3, 0u);
  std::vector<uint8_t> bad(nc, 0);
  // Pass 2: the vertices, each facet's normal (the last "facet normal" before it) and solid.
  // A facet whose normal line lies in an earlier chunk: chunks start at line starts, and the
  // normal is read again from the nearest earlier "facet" line when a chunk begins mid-facet.
  tbb::parallel_for(size_t(0), nc, [&](size_t c) {
    size_t v = verts[c];
    size_t solid_lines = solids[c];  // "solid" lines before this point; a facet's mesh is the last one
    Vec3f normal{0, 0, 0};
    if (v % 3 != 0) {  // the facet began in an earlier chunk: find its normal line
      const char* q = data + chunks[c];
      while (q > data) {
        const char* ls = q - 1;
        while (ls > data && ls[-1] != '\n') --ls;
        const char* le = line_end(ls, end);
        const char* s = skip_spaces(ls, le);
        if (starts_with_word(s, le, "facet", 5)) {
          s += 5;
          s = skip_spaces(s, le);
          if (starts_with_word(s, le, "normal", 6)) {
            s += 6;
            parse_float(s, le, normal.x) && parse_float(s, le, normal.y) && parse_float(s, le, normal.z);
          }
          break;
        }
        q = ls;
      }
    }
    for (const char* q = data + chunks[c]; q < data + chunks[c + 1];) {
      const char* le = line_end(q, end);
      const char* s = skip_spaces(q, le);
      if (starts_with_word(s, le, "vertex", 6)) {
        s += 6;
        Vec3f p;
        if (!parse_float(s, le, p.x) || !parse_float(s, le, p.y) || !parse_float(s, le, p.z)) bad[c] = 1;
        m.positions[v] = p;
        m.normals[v] = unit_or_zero(normal);
        if (v % 3 == 0) m.mesh_ids[v / 3] = uint32_t(solid_lines ? solid_lines - 1 : 0);
        ++v;
      } else if (starts_with_word(s, le, "facet", 5)) {
        s += 5;
        s = skip_spaces(s, le);
        normal = {0, 0, 0};
        if (starts_with_word(s, le, "normal", 6)) {
          s += 6;
          if (!parse_float(s, le, normal.x) || !parse_float(s, le, normal.y) || !parse_float(s, le, normal.z))
            normal = {0, 0, 0};
        }
      } else if (starts_with_word(s, le, "solid", 5)) {
        ++solid_lines;
      }
      q = le + 1;
    }
  });
  for (size_t c = 0; c < nc; ++c)
    if (bad[c]) fail(ErrorKind::kInput, path + ": a vertex line without three numbers");
  m.num_source_meshes = std::max<size_t>(1, solids[nc]);
}

// The text of an STL file that begins with "solid" after a byte-order mark or none (UTF-16 decoded:
// plain_text), else an empty view. (A binary STL's header may begin with any bytes.)
std::string_view stl_text(const std::string& path, const char* data, size_t size, std::string& decoded) {
  std::string_view text;
  try {
    text = plain_text(path, data, size, decoded);
  } catch (const Error&) {
    return {};  // "UTF-16" of an odd size: binary
  }
  const char* t = text.data();
  const bool solid = text.size() >= 5 && std::memcmp(skip_spaces(t, t + text.size()), "solid", 5) == 0;
  return solid ? text : std::string_view();
}

void read_stl(const std::string& path, const char* data, size_t size, MeshLoadResult& out) {
  out.mesh.num_source_meshes = 1;
  out.mesh.num_materials = 1;
  // Binary when the size is what the header's count says (binary files may begin with "solid"),
  // else ASCII when it begins with "solid".
  uint32_t n = 0;
  if (size >= 84) std::memcpy(&n, data + 80, 4);
  if (size >= 84 && 84 + 50 * uint64_t(n) == size) return read_stl_binary(path, data, size, out);
  std::string decoded;
  const std::string_view text = stl_text(path, data, size, decoded);
  if (!text.empty()) return read_stl_ascii(path, text.data(), text.size(), out);
  if (size < 84) fail(ErrorKind::kInput, path + ": too short for a binary STL (" + std::to_string(size) + " bytes)");
  return read_stl_binary(path, data, size, out);  // reports the truncation, or reads what the count says
}

// ---- OFF ----------------------------------------------------------------------------------------
// Geomview's Object File Format (ModelNet, the Princeton Shape Benchmark, CGAL, MeshLab): an
// optional keyword [ST][C][N][4][n]OFF (ModelNet writes the counts straight after it, "OFF1234 5678
// 0"), the dimension where n, "vertices faces edges", then one vertex per line (x y z, w where 4, a
// normal where N, a colour where C, texture coordinates where ST) and one face per line ("n i0 ...
// i(n-1)", then an optional colour, ignored). '#' starts a comment anywhere. "OFF BINARY" files hold
// the same after the keyword line as big-endian 32-bit integers and floats.

struct OffHeader {
  bool st = false, color = false, normal = false, homogeneous = false, binary = false;
  int64_t dim = 3;
  int64_t vertices = 0, faces = 0;
  size_t body = 0;  // text: the line after the counts; binary: the first vertex
};

// The next header token: spaces, line ends and comments skipped.
bool off_token(const char*& p, const char* end, const char*& b, const char*& e) {
  while (p < end && (is_space(*p) || *p == '\n' || *p == '#')) p = *p == '#' ? line_end(p, end) : p + 1;
  if (p >= end) return false;
  b = p;
  while (p < end && !is_space(*p) && *p != '\n' && *p != '#') ++p;
  e = p;
  return true;
}

OffHeader parse_off_header(const std::string& path, const char* data, size_t size) {
  OffHeader h;
  const char* end = data + size;
  const char* p = data;
  const char *b = nullptr, *e = nullptr;
  if (!off_token(p, end, b, e))
    fail(ErrorKind::kInput, path + ": no OFF header (the file holds only spaces and comments)");
  if (memmem(b, size_t(e - b), "OFF", 3)) {
    // The keyword: [ST][C][N][4][n]OFF, possibly with the first count glued on (ModelNet).
    const char* k = b;
    auto flag = [&](const char* s, bool& f) {
      const size_t n = std::strlen(s);
      if (size_t(e - k) >= n + 3 && std::memcmp(k, s, n) == 0) {
        f = true;
        k += n;
      }
    };
    bool dim_given = false;
    flag("ST", h.st);
    flag("C", h.color);
    flag("N", h.normal);
    flag("4", h.homogeneous);
    flag("n", dim_given);
    if (e - k < 3 || std::memcmp(k, "OFF", 3) != 0)
      fail(ErrorKind::kInput, path + ": not an OFF file (it begins with \"" +
                                  std::string(b, size_t(std::min<ptrdiff_t>(e - b, 40))) +
                                  "\", not [ST][C][N][4][n]OFF or the counts)");
    p = k + 3;  // a count glued to the keyword is read as the next token
    const char* le = line_end(p, end);
    const char* s = skip_spaces(p, le);
    if (le - s >= 6 && std::memcmp(s, "BINARY", 6) == 0) {
      h.binary = true;
      p = le < end ? le + 1 : le;
    }
    if (dim_given) {
      if (h.binary) {
        if (end - p < 4) fail(ErrorKind::kInput, path + ": truncated: the header ends before its dimension");
        uint32_t d;
        std::memcpy(&d, p, 4);
        h.dim = int64_t(__builtin_bswap32(d));
        p += 4;
      } else if (!off_token(p, end, b, e) || !parse_int(b, e, h.dim) || b != e) {
        fail(ErrorKind::kInput, path + ": nOFF without a dimension");
      }
    }
  } else if (*b >= '0' && *b <= '9') {
    p = b;  // no keyword: the counts come first (allowed by the format)
  } else {
    fail(ErrorKind::kInput, path + ": not an OFF file (it begins with \"" +
                                std::string(b, size_t(std::min<ptrdiff_t>(e - b, 40))) +
                                "\", not [ST][C][N][4][n]OFF or the counts)");
  }
  if (h.dim < 1 || h.dim > 3)
    fail(ErrorKind::kInput,
         path + ": " + std::to_string(h.dim) + "-dimensional vertices (voxtile reads 1 to 3 coordinates)");
  if (h.binary) {
    if (end - p < 12) fail(ErrorKind::kInput, path + ": truncated: the binary header ends before its counts");
    uint32_t c[2];
    std::memcpy(c, p, 8);
    h.vertices = int64_t(__builtin_bswap32(c[0]));
    h.faces = int64_t(__builtin_bswap32(c[1]));
    if (h.vertices > INT32_MAX || h.faces > INT32_MAX)
      fail(ErrorKind::kInput, path + ": negative counts in the binary header");
    h.body = size_t(p + 12 - data);
    return h;
  }
  int64_t* counts[2] = {&h.vertices, &h.faces};
  for (int64_t* c : counts) {
    if (!off_token(p, end, b, e))
      fail(ErrorKind::kInput, path + ": truncated: the header ends before its vertex and face counts");
    const char* q = b;
    if (!parse_int(q, e, *c) || q != e || *c < 0)
      fail(ErrorKind::kInput, path + ": the header's counts are not numbers (\"" +
                                  std::string(b, size_t(std::min<ptrdiff_t>(e - b, 40))) + "\")");
  }
  const char* le = line_end(p, end);  // the edge count and anything else on the line: ignored
  h.body = size_t((le < end ? le + 1 : le) - data);
  return h;
}

// Values per vertex record before the colour, and the colour's and texture coordinates' places.
struct OffVertexLayout {
  int coords = 3, normal = -1, color = -1, uv = -1, values = 3;
};
OffVertexLayout off_layout(const OffHeader& h, int colors) {
  OffVertexLayout l;
  l.coords = int(h.dim) + (h.homogeneous ? 1 : 0);
  l.values = l.coords;
  if (h.normal) l.normal = l.values, l.values += 3;
  if (h.color) l.color = l.values, l.values += colors;
  if (h.st) l.uv = l.values, l.values += 2;
  return l;
}

// A vertex from its values (coordinates divided by w where homogeneous, as Assimp does).
void off_vertex(Mesh& m, const OffHeader& h, const OffVertexLayout& l, size_t i, const float* v, float color_scale) {
  float c[3] = {0, 0, 0};
  for (int k = 0; k < int(h.dim); ++k) c[k] = v[k];
  if (h.homogeneous)
    for (float& x : c) x /= v[h.dim];
  m.positions[i] = {c[0], c[1], c[2]};
  if (l.normal >= 0) m.normals[i] = unit_or_zero({v[l.normal], v[l.normal + 1], v[l.normal + 2]});
  if (l.color >= 0 && !m.colors.empty())
    m.colors[i] = pack_rgb(v[l.color] * color_scale, v[l.color + 1] * color_scale, v[l.color + 2] * color_scale);
  if (l.uv >= 0) m.uvs[i] = {v[l.uv], v[l.uv + 1]};
}

void off_allocate(Mesh& m, const OffHeader& h, size_t n) {
  m.positions.resize(n);
  if (h.normal) m.normals.resize(n);
  if (h.color) m.colors.resize(n);
  if (h.st) m.uvs.resize(n);
}

void read_off_binary(const std::string& path, const char* data, size_t size, const OffHeader& h, MeshLoadResult& out) {
  Mesh& m = out.mesh;
  out.format = "OFF binary (native)";
  const OffVertexLayout l = off_layout(h, 4);
  const size_t row = 4 * size_t(l.values), nv = size_t(h.vertices), nf = size_t(h.faces);
  const char* p = data + h.body;
  const char* end = data + size;
  if (nv > size_t(end - p) / row)
    fail(ErrorKind::kInput, path + ": truncated: the header declares " + std::to_string(nv) +
                                " vertices, the file holds at most " + std::to_string(size_t(end - p) / row));
  off_allocate(m, h, nv);
  auto be32 = [](const char* q) {
    uint32_t u;
    std::memcpy(&u, q, 4);
    return __builtin_bswap32(u);
  };
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nv, 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
    float v[16];
    for (size_t i = r.begin(); i < r.end(); ++i) {
      for (int k = 0; k < l.values; ++k) {
        const uint32_t u = be32(p + i * row + 4 * size_t(k));
        std::memcpy(&v[k], &u, 4);
      }
      off_vertex(m, h, l, i, v, 1.f);
    }
  });
  p += nv * row;
  // Faces: "n i0 .. i(n-1) ncolors c0 .." as 32-bit integers (colours floats). All triangles without
  // colours (the usual) have one size: checked, then read in parallel.
  bool fixed = nf <= size_t(end - p) / 20;
  if (fixed) {
    std::atomic<bool> other{false};
    tbb::parallel_for(tbb::blocked_range<size_t>(0, nf, 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t i = r.begin(); i < r.end() && !other.load(std::memory_order_relaxed); ++i)
        if (be32(p + 20 * i) != 3 || be32(p + 20 * i + 16) != 0) other.store(true, std::memory_order_relaxed);
    });
    fixed = !other;
  }
  if (fixed) {
    m.indices.resize(3 * nf);
    std::vector<uint8_t> bad(nf, 0);
    tbb::parallel_for(tbb::blocked_range<size_t>(0, nf, 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t i = r.begin(); i < r.end(); ++i)
        for (int k = 0; k < 3; ++k) {
          const uint32_t v = be32(p + 20 * i + 4 + 4 * size_t(k));
          if (v >= nv) bad[i] = 1;
          m.indices[3 * i + size_t(k)] = v;
        }
    });
    drop_bad_faces(out, bad, nf);
    return;
  }
  std::vector<uint32_t> idx;
  std::vector<int> tri;
  std::vector<Vec3f> corners;
  for (size_t i = 0; i < nf; ++i) {
    auto truncated = [&] {
      fail(ErrorKind::kInput, path + ": truncated: face " + std::to_string(i) + " of " + std::to_string(nf));
    };
    if (end - p < 4) truncated();
    const uint32_t n = be32(p);
    p += 4;
    if (size_t(end - p) < 4 || n > (size_t(end - p) - 4) / 4) truncated();  // the indices and the colour count
    idx.resize(n);
    for (uint32_t k = 0; k < n; ++k) idx[k] = be32(p + 4 * size_t(k));
    p += 4 * size_t(n);
    const uint32_t colors = be32(p);
    p += 4;
    if (colors > size_t(end - p) / 4) truncated();
    p += 4 * size_t(colors);
    add_face(out, idx.data(), int(std::min<uint32_t>(n, INT32_MAX)), tri, corners);
  }
}

void read_off(const std::string& path, const char* raw, size_t raw_size, MeshLoadResult& out) {
  Mesh& m = out.mesh;
  m.num_source_meshes = 1;
  m.num_materials = 1;
  // Binary files are read as they are; text is made plain first (a byte-order mark, UTF-16, '\r' lines).
  const size_t head = std::min<size_t>(raw_size, 4096);
  if (memmem(raw, head, "BINARY", 6)) {
    const OffHeader h = parse_off_header(path, raw, raw_size);
    if (h.binary) return read_off_binary(path, raw, raw_size, h, out);
  }
  std::string decoded;
  const std::string_view text = plain_text(path, raw, raw_size, decoded);
  const char* data = text.data();
  const size_t size = text.size();
  const char* end = data + size;
  const OffHeader h = parse_off_header(path, data, size);
  out.format = "OFF (native)";
  // Records: one per line that is neither blank nor a comment. Pass 1 counts each chunk's records,
  // so that pass 2 parses every chunk's records into their places (record k is vertex k, then face
  // k - vertices), with no index of the lines.
  const std::vector<size_t> chunks = line_chunks(data, h.body, size);
  const size_t nc = chunks.size() - 1;
  const std::vector<size_t> first = part_offsets(nc, [&](size_t c) {
    size_t n = 0;
    for (const char* q = data + chunks[c]; q < data + chunks[c + 1];) {
      const char* le = line_end(q, end);
      const char* s = skip_spaces(q, le);
      n += s < le && *s != '#';
      q = le + 1;
    }
    return n;
  });
  const size_t records = first[nc], nv = size_t(h.vertices), nf = size_t(h.faces);
  if (nv > records || nf > records - nv)
    fail(ErrorKind::kInput, path + ": truncated: the header declares " + std::to_string(nv) + " vertices and " +
                                std::to_string(nf) + " faces, the file holds " + std::to_string(records) + " records");
  // Calls f(k, record, its line end) for chunk c's records k in [lo, hi), in order, while f is true.
  auto each_record = [&](size_t c, size_t lo, size_t hi, auto&& f) {
    size_t k = first[c];
    for (const char* q = data + chunks[c]; q < data + chunks[c + 1] && k < hi;) {
      const char* le = line_end(q, end);
      const char* s = skip_spaces(q, le);
      if (s < le && *s != '#') {
        if (k >= lo && !f(k, s, le)) return;
        ++k;
      }
      q = le + 1;
    }
  };
  // Vertices. A colour is 3 or 4 values (a colour-map index, one value, is not read), integers
  // 0..255 or floats 0..1 as the format says: a colour written without a '.' or exponent is scaled.
  const OffVertexLayout l = off_layout(h, h.st ? 4 : 0);
  off_allocate(m, h, nv);
  m.indices.resize(3 * nf);
  std::vector<uint8_t> bad_face(nf, 0);
  std::atomic<size_t> bad{SIZE_MAX};
  std::atomic<bool> colormap{false}, all_triangles{true};
  auto vertex = [&](size_t i, const char* q, const char* le) {
    float v[20];
    bool ok = true;
    const int fixed = h.color ? l.color : l.values;
    for (int k = 0; k < fixed && ok; ++k) ok = parse_float(q, le, v[k]);
    float scale = 1.f;
    if (ok && h.color) {
      int n = 0;
      bool integers = true;
      for (; n < 4; ++n) {
        const char* t = skip_spaces(q, le);
        if (!parse_float(q, le, v[l.color + n])) break;
        for (; t < q; ++t)
          if (*t == '.' || *t == 'e' || *t == 'E') integers = false;
      }
      if (h.st) {
        ok = n == 4 && parse_float(q, le, v[l.uv]) && parse_float(q, le, v[l.uv + 1]);
      } else if (n < 3) {
        colormap.store(true, std::memory_order_relaxed);
        v[l.color] = v[l.color + 1] = v[l.color + 2] = 0;
      }
      if (integers) scale = 1.f / 255.f;
    }
    if (!ok) {
      size_t cur = bad.load(std::memory_order_relaxed);
      while (i < cur && !bad.compare_exchange_weak(cur, i, std::memory_order_relaxed)) {
      }
      return;
    }
    off_vertex(m, h, l, i, v, scale);
  };
  // Faces: parsed as triangles (the usual) in the same parallel pass; any other face sends the faces
  // to the general path below, in order.
  auto triangle = [&](size_t i, const char* q, const char* le) {
    int64_t c = 0, idx = -1;
    if (!parse_int(q, le, c) || c != 3) {
      all_triangles.store(false, std::memory_order_relaxed);
      return false;
    }
    for (int k = 0; k < 3; ++k) {
      q = skip_spaces(q, le);
      if (!parse_int(q, le, idx) || idx < 0 || uint64_t(idx) >= nv) bad_face[i] = 1;
      m.indices[3 * i + size_t(k)] = uint32_t(idx);
    }
    return true;
  };
  tbb::parallel_for(size_t(0), nc, [&](size_t c) {
    each_record(c, 0, nv + nf, [&](size_t k, const char* q, const char* le) {
      if (k < nv) {
        vertex(k, q, le);
        return true;
      }
      return all_triangles.load(std::memory_order_relaxed) && triangle(k - nv, q, le);
    });
  });
  if (bad != SIZE_MAX)
    fail(ErrorKind::kInput, path + ": vertex " + std::to_string(bad.load()) + " has too few or malformed values");
  if (colormap) {
    m.colors.clear();
    out.warnings.push_back("vertex colours given as colour-map indices are not read; the mesh has no colours");
  }
  if (all_triangles) {
    drop_bad_faces(out, bad_face, nf);
  } else {
    m.indices.clear();
    std::vector<uint32_t> idx;
    std::vector<int> tri;
    std::vector<Vec3f> corners;
    for (size_t c = 0; c < nc; ++c) {
      if (first[c + 1] <= nv) continue;
      each_record(c, nv, nv + nf, [&](size_t, const char* q, const char* le) {
        int64_t n = 0, x = -1;
        idx.clear();
        bool ok = parse_int(q, le, n) && n >= 0 && n < 1 << 20;
        for (int64_t k = 0; ok && k < n; ++k) {
          q = skip_spaces(q, le);
          ok = parse_int(q, le, x) && x >= 0 && x <= int64_t(UINT32_MAX);
          idx.push_back(uint32_t(x));
        }
        if (ok)
          add_face(out, idx.data(), int(idx.size()), tri, corners);
        else
          ++out.dropped_bad_index;
        return true;
      });
    }
  }
  if (m.indices.empty()) out.points = m.positions.size();
}

// ---- OBJ ----------------------------------------------------------------------------------------

struct ObjMaterials {
  std::map<std::string, uint32_t> ids;  // name -> material index (0: the default material)
  std::vector<uint32_t> colors;         // diffuse colour per material
  bool any_color = false;
  std::vector<std::string> textures;  // diffuse texture map (map_Kd) file per material, or ""
};

// The file a map_Kd statement names: its options (-o 0 0 0, -clamp on, -mm 0 1, ...) skipped, the rest
// of the line (which may hold spaces), '\\' read as '/', relative to the library's directory.
std::string map_file(const char* s, const char* le, const std::string& library) {
  static const std::map<std::string, int> kArgs = {
      {"-blendu", 1}, {"-blendv", 1}, {"-bm", 1},   {"-boost", 1}, {"-cc", 1}, {"-clamp", 1}, {"-imfchan", 1},
      {"-mm", 2},     {"-texres", 1}, {"-type", 1}, {"-o", 3},     {"-s", 3},  {"-t", 3}};
  while (true) {
    s = skip_spaces(s, le);
    if (s >= le || *s != '-') break;
    const char* e = s;
    while (e < le && !is_space(*e)) ++e;
    const auto it = kArgs.find(std::string(s, e));
    if (it == kArgs.end()) break;  // a file name that begins with '-'
    s = e;
    for (int k = 0; k < it->second; ++k) {  // (-o, -s, -t: one to three numbers)
      const char* t = skip_spaces(s, le);
      double x;
      const char* u = t;
      if (it->second == 3 && !parse_double(u, le, x)) break;
      while (t < le && !is_space(*t)) ++t;
      s = t;
    }
  }
  const char* e = le;
  while (e > s && is_space(e[-1])) --e;
  return texture_path(library, std::string(s, size_t(e - s)));
}

// Material names and diffuse colours of the .mtl files named by mtllib, in order of definition
// after a default material 0, as Assimp numbers them.
void read_mtl(const std::string& file, ObjMaterials& mats, std::vector<std::string>& warnings) {
  std::string text;
  try {
    text = read_text_file(file);
  } catch (const Error&) {
    warnings.push_back("material library " + file + " not found; default material used");
    return;
  }
  const char* q = text.data();
  const char* end = q + text.size();
  uint32_t current = 0;
  while (q < end) {
    const char* le = line_end(q, end);
    const char* s = skip_spaces(q, le);
    if (starts_with_word(s, le, "newmtl", 6)) {
      s = skip_spaces(s + 6, le);
      const char* e = le;
      while (e > s && is_space(e[-1])) --e;
      const std::string name(s, size_t(e - s));
      auto [it, fresh] = mats.ids.emplace(name, uint32_t(mats.colors.size()));
      if (fresh) mats.colors.push_back(0xC8C8C8);
      current = it->second;
    } else if (size_t(le - s) > 6 && strncasecmp(s, "map_Kd", 6) == 0 && is_space(s[6]) && current > 0) {
      mats.textures.resize(mats.colors.size());
      mats.textures[current] = map_file(s + 6, le, file);
    } else if (starts_with_word(s, le, "Kd", 2) && current > 0) {
      s += 2;
      float r, g, b;
      if (parse_float(s, le, r) && parse_float(s, le, g) && parse_float(s, le, b)) {
        mats.colors[current] = pack_rgb(r, g, b);
        mats.any_color = true;
      }
    }
    q = le + 1;
  }
}

struct ObjChunk {
  size_t v = 0, vt = 0, vn = 0, tris = 0, groups = 0, points = 0, lines = 0;
  std::string last_material;  // the last usemtl of the chunk, if any
  bool has_material = false;
  bool corner_attrs = false;  // a face refers to vt or vn
  bool continued = false;     // a line ends with '\\' (continues on the next line)
  std::vector<std::string> materials;  // usemtl names in order
};

// The name after a keyword, trimmed.
std::string rest_of_line(const char* s, const char* le) {
  s = skip_spaces(s, le);
  const char* e = le;
  while (e > s && is_space(e[-1])) --e;
  return std::string(s, size_t(e - s));
}

// One corner "v", "v/vt", "v//vn", "v/vt/vn": the indices (0 where absent). False when malformed.
inline bool obj_corner(const char*& q, const char* le, int64_t c[3]) {
  c[0] = c[1] = c[2] = 0;
  if (!parse_int(q, le, c[0])) return false;
  if (q < le && *q == '/') {
    ++q;
    if (q < le && *q != '/' && !is_space(*q)) {
      if (!parse_int(q, le, c[1])) return false;
    }
    if (q < le && *q == '/') {
      ++q;
      if (q < le && !is_space(*q) && !parse_int(q, le, c[2])) return false;
    }
  }
  return true;
}

void read_obj(const std::string& path, const char* data, size_t size, MeshLoadResult& out, bool textures) {
  out.format = "Wavefront OBJ (native)";
  const char* end = data + size;
  const std::vector<size_t> chunks = line_chunks(data, 0, size);
  const size_t nc = chunks.size() - 1;
  std::vector<ObjChunk> ck(nc);
  std::vector<std::string> mtllibs;
  std::vector<std::vector<std::string>> chunk_mtllibs(nc);
  // Pass 1: what each chunk defines.
  tbb::parallel_for(size_t(0), nc, [&](size_t c) {
    ObjChunk& k = ck[c];
    for (const char* q = data + chunks[c]; q < data + chunks[c + 1];) {
      const char* le = line_end(q, end);
      const char* s = skip_spaces(q, le);
      if (le < end && le > q && (le[-1] == '\\' || (le[-1] == '\r' && le - q >= 2 && le[-2] == '\\')))
        k.continued = true;
      if (s < le && *s != '#') {
        if (s[0] == 'v' && s + 1 < le && is_space(s[1])) ++k.v;
        else if (s[0] == 'v' && s + 2 < le && s[1] == 't' && is_space(s[2])) ++k.vt;
        else if (s[0] == 'v' && s + 2 < le && s[1] == 'n' && is_space(s[2])) ++k.vn;
        else if (s[0] == 'f' && s + 1 < le && is_space(s[1])) {
          const char* t = s + 1;
          size_t corners = 0;
          while (true) {
            t = skip_spaces(t, le);
            if (t >= le || *t == '#') break;
            for (; t < le && !is_space(*t) && *t != '#'; ++t)  // ('#' starts a comment, also within a word)
              if (*t == '/') k.corner_attrs = true;
            ++corners;
          }
          if (corners >= 3) k.tris += corners - 2;
          else ++k.lines;
        } else if (s[0] == 'p' && s + 1 < le && is_space(s[1])) {
          for (const char* t = skip_spaces(s + 1, le); t < le && *t != '#'; t = skip_spaces(t, le)) {
            while (t < le && !is_space(*t)) ++t;
            ++k.points;  // (each vertex a point statement lists, as Assimp counts them)
          }
        }
        else if (s[0] == 'l' && s + 1 < le && is_space(s[1])) ++k.lines;
        else if ((s[0] == 'o' || s[0] == 'g') && (s + 1 == le || is_space(s[1]))) ++k.groups;
        else if (starts_with_word(s, le, "usemtl", 6)) {
          k.last_material = rest_of_line(s + 6, le);
          k.has_material = true;
          k.materials.push_back(k.last_material);
        } else if (starts_with_word(s, le, "mtllib", 6)) {
          chunk_mtllibs[c].push_back(rest_of_line(s + 6, le));
        }
      }
      q = le + 1;
    }
  });
  // A line that ends with '\\' continues on the next one (the OBJ format's rule, which Assimp keeps):
  // read again from a copy in which each '\\' and the line end after it are spaces. Rare, so it
  // costs other files one compare per line.
  if (std::any_of(ck.begin(), ck.end(), [](const ObjChunk& k) { return k.continued; })) {
    std::string joined(data, size);
    for (size_t i = 0; i < joined.size(); ++i) {
      if (joined[i] != '\\') continue;
      const size_t nl = i + 1 < joined.size() && joined[i + 1] == '\r' ? i + 2 : i + 1;
      if (nl < joined.size() && joined[nl] == '\n') std::fill(&joined[i], &joined[nl] + 1, ' ');
    }
    return read_obj(path, joined.data(), joined.size(), out, textures);
  }
  for (const auto& v : chunk_mtllibs) mtllibs.insert(mtllibs.end(), v.begin(), v.end());
  // Materials: the default, the libraries' in order, then names used but defined nowhere.
  ObjMaterials mats;
  mats.ids.emplace("DefaultMaterial", 0);
  mats.colors.push_back(0xC8C8C8);
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  for (std::string lib : mtllibs) {
    for (char& ch : lib)
      if (ch == '\\') ch = '/';
    read_mtl(lib.empty() || lib[0] == '/' ? lib : dir + lib, mats, out.warnings);
  }
  for (const ObjChunk& k : ck)
    for (const std::string& name : k.materials)
      if (mats.ids.emplace(name, uint32_t(mats.colors.size())).second) mats.colors.push_back(0xC8C8C8);
  // Exclusive scans: every chunk's first vertex, texture coordinate, normal, triangle, group and material.
  std::vector<size_t> v0(nc + 1), vt0(nc + 1), vn0(nc + 1), t0(nc + 1), g0(nc + 1);
  std::vector<uint32_t> mat0(nc, 0);
  bool corner_attrs = false;
  uint32_t material = 0;
  for (size_t c = 0; c < nc; ++c) {
    v0[c + 1] = v0[c] + ck[c].v;
    vt0[c + 1] = vt0[c] + ck[c].vt;
    vn0[c + 1] = vn0[c] + ck[c].vn;
    t0[c + 1] = t0[c] + ck[c].tris;
    g0[c + 1] = g0[c] + ck[c].groups;
    mat0[c] = material;
    if (ck[c].has_material) material = mats.ids.at(ck[c].last_material);
    corner_attrs = corner_attrs || ck[c].corner_attrs;
    out.points += ck[c].points;
    out.non_triangle_primitives += ck[c].lines + ck[c].points;
  }
  const size_t nv = v0[nc], nvt = vt0[nc], nvn = vn0[nc], nt = t0[nc];
  // Pass 2: vertices, texture coordinates and normals first (faces may refer forward only within
  // the file order, but a chunk's faces may refer to any earlier chunk's vertices).
  ValueArray<Vec3f> v(nv);
  std::vector<Vec3f> vn(nvn);
  std::vector<Vec2f> vt(nvt);
  std::vector<uint32_t> colors;  // vertex colours "v x y z r g b"
  std::vector<uint8_t> has_color(nv, 0);
  std::vector<size_t> bad(nc, 0);
  tbb::parallel_for(size_t(0), nc, [&](size_t c) {
    size_t iv = v0[c], ivt = vt0[c], ivn = vn0[c];
    for (const char* q = data + chunks[c]; q < data + chunks[c + 1];) {
      const char* le = line_end(q, end);
      const char* s = skip_spaces(q, le);
      if (s < le && s[0] == 'v') {
        if (s + 1 < le && is_space(s[1])) {
          const char* t = s + 1;
          Vec3f p{0, 0, 0};
          if (!parse_float(t, le, p.x) || !parse_float(t, le, p.y) || !parse_float(t, le, p.z)) ++bad[c];
          v[iv] = p;
          float r, g, b;
          const char* t2 = t;
          if (parse_float(t2, le, r) && parse_float(t2, le, g) && parse_float(t2, le, b)) has_color[iv] = 1;
          ++iv;
        } else if (s + 2 < le && s[1] == 't' && is_space(s[2])) {
          const char* t = s + 2;
          Vec2f u{0, 0};
          if (!parse_float(t, le, u.x)) u.x = 0;
          if (!parse_float(t, le, u.y)) u.y = 0;
          vt[ivt++] = u;
        } else if (s + 2 < le && s[1] == 'n' && is_space(s[2])) {
          const char* t = s + 2;
          Vec3f n;
          if (!parse_float(t, le, n.x) || !parse_float(t, le, n.y) || !parse_float(t, le, n.z)) n = {0, 0, 0};
          vn[ivn++] = n;
        }
      }
      q = le + 1;
    }
  });
  const size_t short_lines = std::accumulate(bad.begin(), bad.end(), size_t(0));
  if (short_lines)  // a truncated file's last line, typically: read as Assimp reads it
    out.warnings.push_back(std::to_string(short_lines) + " vertex lines with fewer than three numbers (missing ones read as 0)");
  // Faces: with texture coordinates or normals, every corner is a vertex of its own (as Assimp
  // makes them); else the triangles index the positions directly.
  Mesh& m = out.mesh;
  m.indices.resize(3 * nt);
  m.mesh_ids.resize(nt);
  m.material_ids.resize(nt);
  if (corner_attrs) {
    m.positions.resize(3 * nt);
    if (nvn) m.normals.resize(3 * nt);
    if (nvt) m.uvs.resize(3 * nt);
  }
  std::vector<uint8_t> tri_bad(nt, 0);
  tbb::parallel_for(size_t(0), nc, [&](size_t c) {
    size_t it = t0[c], iv = v0[c], ivt = vt0[c], ivn = vn0[c];
    uint32_t group = uint32_t(g0[c]), mat = mat0[c];
    std::vector<int64_t> corner;  // v, vt, vn per corner
    std::vector<int> tri;
    std::vector<Vec3f> pts;
    for (const char* q = data + chunks[c]; q < data + chunks[c + 1];) {
      const char* le = line_end(q, end);
      const char* s = skip_spaces(q, le);
      if (s >= le) {
        q = le + 1;
        continue;
      }
      if (s[0] == 'v' && s + 1 < le) {
        if (is_space(s[1])) ++iv;
        else if (s[1] == 't' && s + 2 < le && is_space(s[2])) ++ivt;
        else if (s[1] == 'n' && s + 2 < le && is_space(s[2])) ++ivn;
      } else if ((s[0] == 'o' || s[0] == 'g') && (s + 1 == le || is_space(s[1]))) {
        ++group;
      } else if (starts_with_word(s, le, "usemtl", 6)) {
        mat = mats.ids.at(rest_of_line(s + 6, le));
      } else if (s[0] == 'f' && s + 1 < le && is_space(s[1])) {
        corner.clear();
        const char* t = s + 1;
        bool ok = true;
        while (true) {
          t = skip_spaces(t, le);
          if (t >= le || *t == '#') break;
          int64_t cc[3];
          // A corner is one whitespace-separated word, as pass 1 counts them: "1/2/3/4" or "1x" is
          // one malformed corner, not a corner and a second one.
          if (!obj_corner(t, le, cc) || (t < le && !is_space(*t) && *t != '#')) {
            ok = false;
            while (t < le && !is_space(*t) && *t != '#') ++t;
            cc[0] = cc[1] = cc[2] = 0;
          }
          // 1-based; negative: relative to the elements defined so far.
          const int64_t defined[3] = {int64_t(iv), int64_t(ivt), int64_t(ivn)};
          const size_t total[3] = {nv, nvt, nvn};
          for (int a = 0; a < 3; ++a) {
            int64_t x = cc[a];
            if (x < 0) x = defined[a] + x;
            else if (x > 0) x -= 1;
            else x = a == 0 ? -1 : -2;  // v is required; vt/vn absent
            if (a == 0 && (x < 0 || uint64_t(x) >= total[0])) ok = false;
            if (a > 0 && x != -2 && (x < 0 || uint64_t(x) >= total[a])) x = -2;
            corner.push_back(x);
          }
        }
        const int n = int(corner.size() / 3);
        if (n < 3) {
          q = le + 1;
          continue;
        }
        if (n == 3) {
          tri.assign({0, 1, 2});
        } else {
          pts.resize(size_t(n));
          for (int k = 0; k < n; ++k) pts[size_t(k)] = ok ? v[size_t(corner[3 * size_t(k)])] : Vec3f{0, 0, 0};
          triangulate(pts.data(), n, tri);
        }
        if (it + tri.size() / 3 > t0[c + 1])  // never past this chunk's share (pass 1's count)
          fail(ErrorKind::kInternal, path + ": OBJ faces counted inconsistently");
        for (size_t tt = 0; tt < tri.size(); tt += 3, ++it) {
          m.mesh_ids[it] = group;
          m.material_ids[it] = mat;
          if (!ok) tri_bad[it] = 1;
          for (int k = 0; k < 3; ++k) {
            const size_t ci = size_t(tri[tt + size_t(k)]);
            const int64_t* cr = &corner[3 * ci];
            if (!corner_attrs) {
              m.indices[3 * it + size_t(k)] = ok ? uint32_t(cr[0]) : 0u;
              continue;
            }
            const size_t vi = 3 * it + size_t(k);
            m.indices[vi] = uint32_t(vi);
            m.positions[vi] = ok ? v[size_t(cr[0])] : Vec3f{0, 0, 0};
            if (nvn) m.normals[vi] = cr[2] >= 0 ? unit_or_zero(vn[size_t(cr[2])]) : Vec3f{0, 0, 0};
            if (nvt) m.uvs[vi] = cr[1] >= 0 ? vt[size_t(cr[1])] : Vec2f{0, 0};
          }
        }
      }
      q = le + 1;
    }
    // Every triangle pass 1 counted is written (else its slot would keep uninitialised indices).
    if (it != t0[c + 1]) fail(ErrorKind::kInternal, path + ": OBJ faces counted inconsistently");
  });
  // Faces with an index out of range are dropped (counted), the others keep their order.
  size_t w = 0;
  for (size_t t = 0; t < nt; ++t) {
    if (tri_bad[t]) {
      ++out.dropped_bad_index;
      continue;
    }
    if (w != t) {
      std::memcpy(&m.indices[3 * w], &m.indices[3 * t], 12);
      m.mesh_ids[w] = m.mesh_ids[t];
      m.material_ids[w] = m.material_ids[t];
    }
    ++w;
  }
  m.indices.resize(3 * w);
  m.mesh_ids.resize(w);
  m.material_ids.resize(w);
  if (!corner_attrs) {
    m.positions = std::move(v);
    if (std::any_of(has_color.begin(), has_color.end(), [](uint8_t x) { return x != 0; })) {
      // Vertex colours ("v x y z r g b", floats 0..1): parsed again for the few files that have them.
      m.colors.assign(nv, 0xC8C8C8);
      size_t iv = 0;
      for (const char* q = data; q < end;) {
        const char* le = line_end(q, end);
        const char* s = skip_spaces(q, le);
        if (s + 1 < le && s[0] == 'v' && is_space(s[1])) {
          const char* t = s + 1;
          float x, r, g, b;
          parse_float(t, le, x) && parse_float(t, le, x) && parse_float(t, le, x);
          if (has_color[iv] && parse_float(t, le, r) && parse_float(t, le, g) && parse_float(t, le, b))
            m.colors[iv] = pack_rgb(r, g, b);
          ++iv;
        }
        q = le + 1;
      }
    }
  }
  m.num_source_meshes = std::max<size_t>(1, g0[nc]);
  m.num_materials = mats.colors.size();
  if (mats.any_color) m.material_colors = mats.colors;
  if (textures && !mats.textures.empty()) {
    // Each file decoded once, in parallel; one that cannot be read is a warning (as through Assimp).
    mats.textures.resize(mats.colors.size());
    std::map<std::string, size_t> index;  // file -> its place in `files`
    std::vector<std::string> files;
    for (const std::string& t : mats.textures)
      if (!t.empty() && index.emplace(t, files.size()).second) files.push_back(t);
    std::vector<Texture> decoded(files.size());
    std::vector<std::string> why(files.size());
    std::vector<uint8_t> ok(files.size(), 0);
    tbb::parallel_for(size_t(0), files.size(),
                      [&](size_t i) { ok[i] = load_texture_file(files[i], decoded[i], why[i]); });
    for (size_t i = 0; i < files.size(); ++i)
      if (!ok[i]) out.warnings.push_back("texture '" + files[i] + "' not used: " + why[i]);
    std::vector<Texture> per_material(mats.colors.size());
    bool any = false;
    for (size_t k = 0; k < mats.textures.size(); ++k)
      if (!mats.textures[k].empty() && ok[index[mats.textures[k]]]) {
        per_material[k] = decoded[index[mats.textures[k]]];
        any = true;
      }
    if (any) m.material_textures = std::move(per_material);
  }
}

}  // namespace

void check_header_counts(const std::string& path) {
  const std::string e = lower_extension(path);
  if (e != "ply" && e != "stl" && e != "off") return;
  const MappedFile f(path);
  const char* data = f.data();
  const size_t size = f.size();
  auto too_many = [&](const std::string& what, uint64_t count, uint64_t fits) {
    fail(ErrorKind::kInput, path + ": the header declares " + std::to_string(count) + " " + what +
                                ", the file's size holds at most " + std::to_string(fits));
  };
  if (e == "ply") {
    // The one PLY header parser decides for Assimp too: a header cut short or a count that is no
    // number made Assimp spin or allocate without bound. (A header longer than 1 MB is refused.)
    const PlyHeader h = parse_ply_header(std::string(data, std::min<size_t>(size, size_t(1) << 20)), path);
    uint64_t left = size - std::min(size, h.data_start);
    for (const PlyElement& el : h.elements) {
      // ASCII: at least one digit and a separator per property; binary: each property's bytes.
      uint64_t rec = h.format == PlyHeader::kAscii ? 2 * std::max<size_t>(1, el.props.size()) : min_record_bytes(el);
      rec = std::max<uint64_t>(rec, 1);
      if (el.count > left / rec) too_many(el.name + " records", el.count, left / rec);
      left -= el.count * rec;
    }
  } else if (e == "stl") {
    uint32_t n = 0;
    if (size >= 84) std::memcpy(&n, data + 80, 4);
    std::string decoded;  // (text only when the count does not give the size: read_stl's rule)
    if (size >= 84 && n > (size - 84) / 50 && stl_text(path, data, size, decoded).empty())
      too_many("triangles", n, (size - 84) / 50);
  } else {
    // OFF: the native reader's header parser (a header it refuses is left to the importer to report);
    // a vertex needs "0 0 0\n", a face "3 0 1 2\n".
    std::string decoded;
    const std::string_view text = plain_text(path, data, size, decoded);
    OffHeader h;
    try {
      h = parse_off_header(path, text.data(), text.size());
    } catch (const Error&) {
      return;
    }
    if (uint64_t(h.vertices) > size / 6) too_many("vertices", uint64_t(h.vertices), size / 6);
    if (uint64_t(h.faces) > size / 8) too_many("faces", uint64_t(h.faces), size / 8);
  }
}

bool native_format(const std::string& path) {
  const std::string e = lower_extension(path);
  return e == "ply" || e == "stl" || e == "obj" || e == "off" || e == "3mf" || gltf_format(path);
}

MeshLoadResult read_native(const std::string& path, bool require_triangles, bool textures) {
  check_input_file(path);
  MeshLoadResult out;
  try {
    const MappedFile f(path);
    const std::string e = lower_extension(path);
    if (e == "ply")
      read_ply(path, f.data(), f.size(), out, textures);  // (parse_ply_header skips a byte-order mark)
    else if (e == "stl") read_stl(path, f.data(), f.size(), out);
    else if (e == "off")
      read_off(path, f.data(), f.size(), out);
    else if (e == "obj") {
      std::string decoded;
      const std::string_view text = plain_text(path, f.data(), f.size(), decoded);
      read_obj(path, text.data(), text.size(), out, textures);
    } else if (e == "3mf") {
      read_3mf(path, out);
    } else if (gltf_format(path)) {
      read_gltf(path, out, textures);
    } else
      fail(ErrorKind::kUsage, path + ": no native reader for ." + e + " (use --loader assimp or auto)");
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    fail(ErrorKind::kInput, path + ": out of memory while reading (absurd sizes in the file?)");
  } catch (const std::length_error&) {
    fail(ErrorKind::kInput, path + ": out of memory while reading (absurd sizes in the file?)");
  }
  finish_load(out, path, require_triangles);
  return out;
}

}  // namespace voxtile
