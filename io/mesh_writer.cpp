// Binary PLY mesh writer.
#include "io/mesh_writer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/json_text.h"
#include "io/ply.h"
#include "io/zip.h"

namespace voxtile {

void write_mesh_ply(const Mesh& mesh, const std::string& path) {
  AtomicFile out(path);
  const bool normals = !mesh.normals.empty() && mesh.normals.size() == mesh.positions.size();
  std::vector<std::string> vprops = {"float x", "float y", "float z"};
  if (normals) vprops.insert(vprops.end(), {"float nx", "float ny", "float nz"});
  const std::string header = ply_header({"voxtile generated"}, {{"vertex", mesh.positions.size(), vprops},
                                                                {"face", mesh.num_triangles(), {"list uchar int vertex_indices"}}});
  out.write(header.data(), header.size());
  if (!normals) {
    out.write(mesh.positions.data(), mesh.positions.size() * sizeof(Vec3f));
  } else {
    std::vector<Vec3f> buf;
    for (size_t v = 0; v < mesh.positions.size(); v += 65536) {
      buf.clear();
      for (size_t w = v; w < std::min(mesh.positions.size(), v + 65536); ++w) {
        buf.push_back(mesh.positions[w]);
        buf.push_back(mesh.normals[w]);
      }
      out.write(buf.data(), buf.size() * sizeof(Vec3f));
    }
  }
  // Faces: 13 bytes each, filled in blocks.
  std::vector<unsigned char> buf(13 * 65536);
  for (size_t t0 = 0; t0 < mesh.num_triangles(); t0 += 65536) {
    const size_t n = std::min<size_t>(65536, mesh.num_triangles() - t0);
    unsigned char* q = buf.data();
    for (size_t t = t0; t < t0 + n; ++t, q += 13) {
      q[0] = 3;
      std::memcpy(q + 1, &mesh.indices[3 * t], 12);
    }
    out.write(buf.data(), 13 * n);
  }
  out.commit();
}

namespace {

// Text output through a 1 MB buffer, into a file or any sink.
class TextOut {
 public:
  explicit TextOut(AtomicFile& f) : m_sink([&f](const char* d, size_t n) { f.write(d, n); }) { m_buf.reserve(1 << 20); }
  explicit TextOut(std::function<void(const char*, size_t)> sink) : m_sink(std::move(sink)) { m_buf.reserve(1 << 20); }
  ~TextOut() { flush(); }
  void str(const char* s) { m_buf.append(s); }
  void num(float v) {
    char b[32];
    const auto r = std::to_chars(b, b + sizeof(b), v);  // shortest round-trip form
    m_buf.append(b, r.ptr);
  }
  void num(uint64_t v) {
    char b[24];
    const auto r = std::to_chars(b, b + sizeof(b), v);
    m_buf.append(b, r.ptr);
  }
  void triple(const Vec3f& p) {  // "x y z"
    num(p.x);
    str(" ");
    num(p.y);
    str(" ");
    num(p.z);
  }
  void vec(const char* key, const Vec3f& p) {
    str(key);
    triple(p);
    str("\n");
    if (m_buf.size() > (1 << 20)) flush();
  }
  void flush() {
    m_sink(m_buf.data(), m_buf.size());
    m_buf.clear();
  }
  void spill() {  // flushes a full buffer
    if (m_buf.size() > (1 << 20)) flush();
  }

 private:
  std::function<void(const char*, size_t)> m_sink;
  std::string m_buf;
};

Vec3f face_normal(const Mesh& m, size_t t) {
  const Vec3f a = m.vertex(t, 0), b = m.vertex(t, 1), c = m.vertex(t, 2);
  const double e1[3] = {double(b.x) - a.x, double(b.y) - a.y, double(b.z) - a.z};
  const double e2[3] = {double(c.x) - a.x, double(c.y) - a.y, double(c.z) - a.z};
  double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
  const double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (len > 0) for (double& x : n) x /= len;
  return {float(n[0]), float(n[1]), float(n[2])};
}

bool has_normals(const Mesh& m) { return !m.normals.empty() && m.normals.size() == m.positions.size(); }

// The vertex lines ("x y z", with " nx ny nz" where the mesh has normals) and face lines ("3 a b c",
// indices from 0) of ASCII PLY and OFF.
void write_text_records(const Mesh& m, TextOut& t) {
  for (size_t v = 0; v < m.positions.size(); ++v) {
    if (!has_normals(m)) {
      t.vec("", m.positions[v]);
      continue;
    }
    t.triple(m.positions[v]);
    t.str(" ");
    t.vec("", m.normals[v]);
  }
  for (size_t f = 0; f < m.num_triangles(); ++f) {
    t.str("3");
    for (int k = 0; k < 3; ++k) {
      t.str(" ");
      t.num(uint64_t(m.indices[3 * f + size_t(k)]));
    }
    t.str("\n");
  }
}

void write_ascii_ply(const Mesh& m, AtomicFile& out) {
  std::vector<std::string> vprops = {"float x", "float y", "float z"};
  if (has_normals(m)) vprops.insert(vprops.end(), {"float nx", "float ny", "float nz"});
  std::string header = ply_header({"voxtile generated"}, {{"vertex", m.positions.size(), vprops},
                                                          {"face", m.num_triangles(), {"list uchar int vertex_indices"}}});
  header.replace(header.find("binary_little_endian"), 20, "ascii");
  out.write(header.data(), header.size());
  TextOut t(out);
  write_text_records(m, t);
}

void write_stl(const Mesh& m, AtomicFile& out, bool ascii) {
  if (ascii) {
    TextOut t(out);
    t.str("solid voxtile\n");
    for (size_t f = 0; f < m.num_triangles(); ++f) {
      t.vec("facet normal ", face_normal(m, f));
      t.str("outer loop\n");
      for (int k = 0; k < 3; ++k) t.vec("vertex ", m.vertex(f, k));
      t.str("endloop\nendfacet\n");
    }
    t.str("endsolid voxtile\n");
    return;
  }
  char header[80] = "voxtile generated binary STL";
  out.write(header, 80);
  const uint32_t n = uint32_t(m.num_triangles());
  out.write(&n, 4);
  std::vector<char> buf;
  buf.reserve(50 * 65536);
  for (size_t f = 0; f < m.num_triangles(); ++f) {
    char rec[50] = {};
    const Vec3f nrm = face_normal(m, f);
    std::memcpy(rec, &nrm, 12);
    for (int k = 0; k < 3; ++k) {
      const Vec3f p = m.vertex(f, k);
      std::memcpy(rec + 12 + 12 * k, &p, 12);
    }
    buf.insert(buf.end(), rec, rec + 50);
    if (buf.size() >= 50 * 65536) {
      out.write(buf.data(), buf.size());
      buf.clear();
    }
  }
  out.write(buf.data(), buf.size());
}

void write_obj(const Mesh& m, AtomicFile& out) {
  TextOut t(out);
  t.str("# voxtile generated\n");
  for (const Vec3f& p : m.positions) t.vec("v ", p);
  const bool normals = has_normals(m);
  if (normals)
    for (const Vec3f& n : m.normals) t.vec("vn ", n);
  for (size_t f = 0; f < m.num_triangles(); ++f) {
    t.str("f");
    for (int k = 0; k < 3; ++k) {
      t.str(" ");
      const uint64_t i = uint64_t(m.indices[3 * f + size_t(k)]) + 1;
      t.num(i);
      if (normals) {  // v//vn: the vertex's own normal
        t.str("//");
        t.num(i);
      }
    }
    t.str("\n");
  }
}

// OFF (Geomview): NOFF with the vertex normals where the mesh has them.
void write_off(const Mesh& m, AtomicFile& out) {
  TextOut t(out);
  const bool normals = has_normals(m);
  t.str(normals ? "NOFF\n" : "OFF\n");
  t.num(uint64_t(m.positions.size()));
  t.str(" ");
  t.num(uint64_t(m.num_triangles()));
  t.str(" 0\n");
  write_text_records(m, t);
}

// 3MF: one object (the mesh) placed once by the build, in a ZIP package with its content types and
// root relationship. Coordinates in shortest round-trip form, in 3MF's default unit (millimetre).
void write_3mf(const Mesh& m, AtomicFile& out) {
  zip::Writer zip(out);
  auto part = [&](const std::string& name, const std::string& text) {
    zip.begin_deflated(name);
    zip.data(text.data(), text.size());
    zip.end_deflated();
  };
  part("[Content_Types].xml",
       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/"
       "content-types\"><Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package."
       "relationships+xml\"/><Default Extension=\"model\" ContentType=\"application/vnd.ms-package.3dmanufacturing-"
       "3dmodel+xml\"/></Types>\n");
  part("_rels/.rels",
       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Relationships xmlns=\"http://schemas.openxmlformats.org/package/"
       "2006/relationships\"><Relationship Target=\"/3D/3dmodel.model\" Id=\"rel0\" Type=\"http://schemas.microsoft."
       "com/3dmanufacturing/2013/01/3dmodel\"/></Relationships>\n");
  zip.begin_deflated("3D/3dmodel.model");
  {
    TextOut t([&](const char* d, size_t n) { zip.data(d, n); });
    t.str(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<model unit=\"millimeter\" xml:lang=\"en-US\" "
        "xmlns=\"http://schemas.microsoft.com/3dmanufacturing/core/2015/02\">\n<resources>\n<object id=\"1\" "
        "type=\"model\">\n<mesh>\n<vertices>\n");
    for (const Vec3f& p : m.positions) {
      t.str("<vertex x=\"");
      t.num(p.x);
      t.str("\" y=\"");
      t.num(p.y);
      t.str("\" z=\"");
      t.num(p.z);
      t.str("\"/>\n");
      t.spill();
    }
    t.str("</vertices>\n<triangles>\n");
    for (size_t f = 0; f < m.num_triangles(); ++f) {
      static const char* const kV[3] = {"<triangle v1=\"", "\" v2=\"", "\" v3=\""};
      for (int k = 0; k < 3; ++k) {
        t.str(kV[k]);
        t.num(uint64_t(m.indices[3 * f + size_t(k)]));
      }
      t.str("\"/>\n");
      t.spill();
    }
    t.str("</triangles>\n</mesh>\n</object>\n</resources>\n<build>\n<item objectid=\"1\"/>\n</build>\n</model>\n");
  }
  zip.end_deflated();
  zip.finish();
}

void write_glb(const Mesh& m, AtomicFile& out) {
  const bool normals = has_normals(m);
  const uint64_t pos_bytes = m.positions.size() * 12, nrm_bytes = normals ? pos_bytes : 0,
                 idx_bytes = m.indices.size() * 4;
  if (pos_bytes + nrm_bytes + idx_bytes > 0xF0000000u) fail(ErrorKind::kUsage, "a .glb holds at most 4 GB");
  const Bounds b = m.bounds();
  nlohmann::json attributes = {{"POSITION", 0}};
  nlohmann::json views = {{{"buffer", 0}, {"byteOffset", 0}, {"byteLength", pos_bytes}, {"target", 34962}},
                          {{"buffer", 0}, {"byteOffset", pos_bytes + nrm_bytes}, {"byteLength", idx_bytes}, {"target", 34963}}};
  nlohmann::json accessors = {{{"bufferView", 0},
                               {"componentType", 5126},
                               {"count", m.positions.size()},
                               {"type", "VEC3"},
                               {"min", {float(b.lo.x), float(b.lo.y), float(b.lo.z)}},
                               {"max", {float(b.hi.x), float(b.hi.y), float(b.hi.z)}}},
                              {{"bufferView", 1}, {"componentType", 5125}, {"count", m.indices.size()}, {"type", "SCALAR"}}};
  if (normals) {  // the gradient normals: a third view and accessor
    attributes["NORMAL"] = 2;
    views.push_back({{"buffer", 0}, {"byteOffset", pos_bytes}, {"byteLength", nrm_bytes}, {"target", 34962}});
    accessors.push_back({{"bufferView", 2}, {"componentType", 5126}, {"count", m.normals.size()}, {"type", "VEC3"}});
  }
  nlohmann::json j = {{"asset", {{"version", "2.0"}, {"generator", "voxtile"}}},
                      {"scene", 0},
                      {"scenes", {{{"nodes", {0}}}}},
                      {"nodes", {{{"mesh", 0}}}},
                      {"meshes", {{{"primitives", {{{"attributes", attributes}, {"indices", 1}, {"mode", 4}}}}}}},
                      {"buffers", {{{"byteLength", pos_bytes + nrm_bytes + idx_bytes}}}},
                      {"bufferViews", views},
                      {"accessors", accessors}};
  std::string json = json_text(j);
  while (json.size() % 4) json += ' ';
  const uint32_t json_len = uint32_t(json.size()), bin_len = uint32_t(pos_bytes + nrm_bytes + idx_bytes);
  const uint32_t total = 12 + 8 + json_len + 8 + bin_len;
  const uint32_t head[3] = {0x46546C67u, 2, total};
  out.write(head, 12);
  const uint32_t jc[2] = {json_len, 0x4E4F534Au};
  out.write(jc, 8);
  out.write(json.data(), json.size());
  const uint32_t bc[2] = {bin_len, 0x004E4942u};
  out.write(bc, 8);
  out.write(m.positions.data(), pos_bytes);
  if (normals) out.write(m.normals.data(), nrm_bytes);
  out.write(m.indices.data(), idx_bytes);
}

}  // namespace

std::string mesh_format(const std::string& path, const std::string& format) {
  std::string e = format.empty() ? lower_extension(path) : format;
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (e == "ply" || e == "stl" || e == "obj" || e == "off" || e == "glb" || e == "3mf") return e;
  if (!format.empty())
    fail(ErrorKind::kUsage, "unknown mesh format '" + format + "' (expected ply, stl, obj, off, glb or 3mf)");
  if (path == "-")
    fail(ErrorKind::kUsage,
         "-o -: standard output has no extension to tell the format; name it with --format "
         "(ply, stl, obj, off, glb or 3mf)");
  fail(ErrorKind::kUsage,
       path + ": meshes are written as .ply, .stl, .obj, .off, .glb or .3mf (or name the format with --format)");
}

void write_mesh(const Mesh& mesh, const std::string& path, bool ascii, const std::string& format) {
  const std::string e = mesh_format(path, format);
  if (e == "ply" && !ascii) return write_mesh_ply(mesh, path);
  AtomicFile out(path);
  if (e == "ply") write_ascii_ply(mesh, out);
  else if (e == "stl") write_stl(mesh, out, ascii);
  else if (e == "obj") write_obj(mesh, out);
  else if (e == "off")
    write_off(mesh, out);
  else if (e == "3mf")
    write_3mf(mesh, out);
  else write_glb(mesh, out);
  out.commit();
}

}  // namespace voxtile
