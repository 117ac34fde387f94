// Native 3MF reader (io/native_mesh.h): the OPC package (a ZIP archive, io/zip.h: stored or deflated
// entries, ZIP64 included, each entry's CRC-32 checked) read from the mapped file; the model part the
// package's root relationship names; its objects (meshes, and components that place other objects,
// also from other model parts: the production extension's p:path), placed by the build items with
// their transforms; base materials as material colours; beam lattices (the beam lattice extension:
// beams as capped cones, balls as spheres, tessellated into closed surfaces). Vertex, triangle and
// beam lists, which are nearly the whole file, are parsed on all cores: elements counted per chunk,
// then parsed into their places. Coordinates stay in the file's unit (as Assimp leaves them).
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/vec.h"
#include "io/files.h"
#include "io/mesh_append.h"
#include "io/native_mesh.h"
#include "io/text_scan.h"
#include "io/zip.h"

namespace voxtile {
namespace tmf {  // (named: the unity build joins io's sources)

using namespace text_scan;

// ---- XML ----------------------------------------------------------------------------------------

// One tag of an XML text: its local name (the namespace prefix dropped), its attributes' text, and
// whether it closes (</x>) or is empty (<x/>).
struct Tag {
  std::string_view name, qualified, attrs;
  bool closing = false, empty = false;
};

// The next tag at or after p (comments, processing instructions, CDATA and declarations skipped);
// false at the end. p is left after the tag.
bool next_tag(const char*& p, const char* end, Tag& t) {
  while (true) {
    p = static_cast<const char*>(std::memchr(p, '<', size_t(end - p)));
    if (!p) {
      p = end;
      return false;
    }
    auto skip_to = [&](const char* what, size_t n) {
      const void* q = memmem(p, size_t(end - p), what, n);
      p = q ? static_cast<const char*>(q) + n : end;
    };
    if (end - p >= 4 && std::memcmp(p, "<!--", 4) == 0)
      skip_to("-->", 3);
    else if (end - p >= 9 && std::memcmp(p, "<![CDATA[", 9) == 0)
      skip_to("]]>", 3);
    else if (end - p >= 2 && (p[1] == '?' || p[1] == '!'))
      skip_to(">", 1);
    else
      break;
  }
  const char* q = p + 1;
  t.closing = q < end && *q == '/';
  if (t.closing) ++q;
  const char* n = q;
  while (q < end && !is_space(*q) && *q != '\n' && *q != '/' && *q != '>') ++q;
  t.qualified = std::string_view(n, size_t(q - n));
  const size_t colon = t.qualified.rfind(':');
  t.name = colon == std::string_view::npos ? t.qualified : t.qualified.substr(colon + 1);
  const char* a = q;
  char quote = 0;
  while (q < end && (quote || *q != '>')) {
    if (quote) {
      if (*q == quote) quote = 0;
    } else if (*q == '"' || *q == '\'') {
      quote = *q;
    }
    ++q;
  }
  t.empty = q > a && q[-1] == '/';
  t.attrs = std::string_view(a, size_t(q - a) - (t.empty ? 1 : 0));
  p = q < end ? q + 1 : end;
  return true;
}

// Calls f(local name, value) for each attribute of a tag (namespace prefixes dropped), in order, while
// f returns true.
template <class F>
void each_attribute(std::string_view attrs, F&& f) {
  const char* p = attrs.data();
  const char* end = p + attrs.size();
  while (p < end) {
    while (p < end && (is_space(*p) || *p == '\n')) ++p;
    const char* n = p;
    const char* colon = nullptr;
    while (p < end && *p != '=' && !is_space(*p) && *p != '\n') {
      if (*p == ':') colon = p;
      ++p;
    }
    const std::string_view name =
        colon ? std::string_view(colon + 1, size_t(p - colon - 1)) : std::string_view(n, size_t(p - n));
    while (p < end && (is_space(*p) || *p == '\n')) ++p;
    if (p >= end || *p != '=') return;
    ++p;
    while (p < end && (is_space(*p) || *p == '\n')) ++p;
    if (p >= end || (*p != '"' && *p != '\'')) return;
    const char quote = *p++;
    const char* v = p;
    while (p < end && *p != quote) ++p;
    if (!f(name, std::string_view(v, size_t(p - v)))) return;
    ++p;
  }
}

// The value of attribute `local` (namespace prefix ignored) of a tag, or false.
bool attribute(std::string_view attrs, std::string_view local, std::string_view& value) {
  bool found = false;
  each_attribute(attrs, [&](std::string_view name, std::string_view v) {
    if (name == local) value = v, found = true;
    return !found;
  });
  return found;
}

// ---- the model ----------------------------------------------------------------------------------

struct Component {
  std::string path;  // its model part ("" for this one)
  uint64_t object = 0;
  aiMatrix4x4 transform;
};
// A beam's end: a flat disc, a half sphere outwards, or a whole sphere.
enum class Cap { kButt, kHemisphere, kSphere };
// A mesh's <beamlattice> (the beam lattice extension, 2017/02): its defaults and the text of its
// <beams> and <balls> lists.
struct Lattice {
  bool present = false;
  double radius = 0, minlength = 0, ballradius = 0;
  Cap cap = Cap::kSphere;
  enum class Balls { kNone, kMixed, kAll } ballmode = Balls::kNone;
  std::string_view clipping;  // clippingmode other than "none"
  std::string_view beams, balls;
  int64_t pid = -1, pindex = 0;
};
struct Object {
  std::string_view vertices, triangles;  // the text of the two lists (mesh objects)
  std::vector<Component> components;
  bool has_mesh = false, slices = false;  // slices: a slice stack (the slice extension), not read
  int64_t pid = -1, pindex = 0;  // default property of its triangles
  Lattice lattice;
};
struct Part {
  std::unique_ptr<char[]> storage;
  std::string_view text;
  std::map<uint64_t, Object> objects;
  std::vector<Component> build;  // (path unused)
};

class Reader {
 public:
  Reader(const std::string& path, MeshLoadResult& out)
      : m_path(path), m_out(out), m_file(path), m_zip(path, m_file.data(), m_file.size(), "3MF package") {}

  void read() {
    m_out.format = "3MF (native)";
    const std::string root = root_model();
    Part& part = load_part(root);
    MeshAppender appender(m_out);
    m_appender = &appender;
    for (const Component& item : part.build)
      place(item.path.empty() ? part : load_part(item.path), item.object, item.transform, 0);
    appender.finish();
    // Material 0 for triangles without a base material or colour, then every base material and
    // colour group entry in file order.
    m_out.mesh.num_materials = 1 + m_colors.size();
    if (m_any_color) {
      m_out.mesh.material_colors = {0xC8C8C8};
      m_out.mesh.material_colors.insert(m_out.mesh.material_colors.end(), m_colors.begin(), m_colors.end());
    }
    m_out.mesh.num_source_meshes = m_mesh_count;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const { fail(ErrorKind::kInput, m_path + ": " + why); }

  // The model part the package's root relationship names (3D/3dmodel.model where it names none).
  std::string root_model() {
    if (const zip::Entry* rels = m_zip.find("_rels/.rels")) {
      std::unique_ptr<char[]> storage;
      const std::string_view text = m_zip.read(*rels, storage);
      const char* p = text.data();
      Tag t;
      while (next_tag(p, text.data() + text.size(), t)) {
        std::string_view type, target;
        if (t.name == "Relationship" && attribute(t.attrs, "Type", type) && attribute(t.attrs, "Target", target) &&
            type.size() >= 8 && type.substr(type.size() - 8) == "/3dmodel")
          return std::string(target);
      }
    }
    return "/3D/3dmodel.model";
  }

  Part& load_part(const std::string& name) {
    std::string key = name;
    if (!key.empty() && key[0] == '/') key.erase(0, 1);
    for (char& c : key) c = char(std::tolower(static_cast<unsigned char>(c)));
    const auto it = m_parts.find(key);
    if (it != m_parts.end()) return *it->second;
    const zip::Entry* e = m_zip.find(name);
    if (!e) bad("the package has no model part '" + name + "'");
    auto part = std::make_unique<Part>();
    part->text = m_zip.read(*e, part->storage);
    parse(*part);
    return *m_parts.emplace(key, std::move(part)).first->second;
  }

  static bool number_list(std::string_view s, double* v, int n) {
    const char* p = s.data();
    const char* end = p + s.size();
    for (int k = 0; k < n; ++k)
      if (!parse_double(p, end, v[k])) return false;
    return true;
  }
  aiMatrix4x4 transform_of(const Tag& t) const {
    std::string_view s;
    aiMatrix4x4 m;
    if (!attribute(t.attrs, "transform", s)) return m;
    double v[12];
    if (!number_list(s, v, 12)) bad("a transform that is not 12 numbers: \"" + std::string(s.substr(0, 80)) + "\"");
    // 3MF multiplies row vectors (p' = p M, the translation in the last row); Assimp column vectors.
    m.a1 = float(v[0]), m.a2 = float(v[3]), m.a3 = float(v[6]), m.a4 = float(v[9]);
    m.b1 = float(v[1]), m.b2 = float(v[4]), m.b3 = float(v[7]), m.b4 = float(v[10]);
    m.c1 = float(v[2]), m.c2 = float(v[5]), m.c3 = float(v[8]), m.c4 = float(v[11]);
    return m;
  }
  // An integer attribute; false where it is missing or not a number.
  static bool integer(std::string_view attrs, const char* name, int64_t& v) {
    std::string_view s;
    if (!attribute(attrs, name, s)) return false;
    const char* p = s.data();
    return parse_int(p, s.data() + s.size(), v);
  }
  uint64_t id_of(const Tag& t, const char* name) const {
    int64_t v = -1;
    if (!integer(t.attrs, name, v) || v < 0) bad("a <" + std::string(t.name) + "> without a valid " + name);
    return uint64_t(v);
  }

  // A <component> or build <item>: the object it places, its transform and model part.
  Component placement(const Tag& t) const {
    Component c;
    c.object = id_of(t, "objectid");
    c.transform = transform_of(t);
    std::string_view s;
    if (attribute(t.attrs, "path", s)) c.path = std::string(s);
    return c;
  }

  // One pass over a model part's tags; the vertex and triangle lists are only delimited here.
  void parse(Part& part) {
    const char* p = part.text.data();
    const char* end = p + part.text.size();
    Tag t;
    Object* object = nullptr;
    std::vector<uint32_t>* group = nullptr;  // the basematerials or colour group being read
    bool in_build = false, in_model = false;
    while (next_tag(p, end, t)) {
      if (t.name == "model" && !t.closing) in_model = true;
      if (!in_model) continue;
      if (t.closing) {
        if (t.name == "object")
          object = nullptr;
        else if (t.name == "basematerials" || t.name == "colorgroup")
          group = nullptr;
        else if (t.name == "build")
          in_build = false;
        continue;
      }
      // A list's text runs to its closing tag.
      auto list_text = [&] {
        const std::string close = "</" + std::string(t.qualified);
        const void* q = memmem(p, size_t(end - p), close.data(), close.size());
        if (!q) bad("a <" + std::string(t.qualified) + "> list that is never closed (truncated?)");
        const std::string_view text(p, size_t(static_cast<const char*>(q) - p));
        p = static_cast<const char*>(q);
        return text;
      };
      if (t.name == "object") {
        object = &part.objects[id_of(t, "id")];
        if (integer(t.attrs, "pid", object->pid)) integer(t.attrs, "pindex", object->pindex);
        std::string_view stack;
        object->slices = attribute(t.attrs, "slicestackid", stack);
      } else if ((t.name == "vertices" || t.name == "triangles") && object && !t.empty) {
        (t.name == "vertices" ? object->vertices : object->triangles) = list_text();
        object->has_mesh = true;
      } else if (t.name == "beamlattice" && object) {
        lattice_of(t, object->lattice);
      } else if ((t.name == "beams" || t.name == "balls") && object && object->lattice.present && !t.empty) {
        (t.name == "beams" ? object->lattice.beams : object->lattice.balls) = list_text();
      } else if (t.name == "mesh" && object) {
        object->has_mesh = true;
      } else if (t.name == "component" && object) {
        object->components.push_back(placement(t));
      } else if (t.name == "texture2dgroup" || t.name == "compositematerials" || t.name == "multiproperties") {
        m_unread_groups.insert({&part, id_of(t, "id")});
      } else if (t.name == "basematerials" || t.name == "colorgroup") {
        // Base materials, and the materials extension's colour groups: a colour per entry, each
        // entry a material (a triangle's is its first corner's, p1). Where the package has colour
        // groups the corners' colours also become vertex colours (decode), so that a triangle whose
        // corners differ is coloured by their gradient.
        group = &m_groups[{&part, id_of(t, "id")}];
        if (t.name == "colorgroup") m_any_colour_group = true;
      } else if ((t.name == "base" || t.name == "color") && group) {
        std::string_view s;
        uint32_t rgb = 0xC8C8C8;
        if (attribute(t.attrs, t.name == "base" ? "displaycolor" : "color", s) && s.size() >= 7 && s[0] == '#') {
          rgb = uint32_t(std::strtoul(std::string(s.substr(1, 6)).c_str(), nullptr, 16));
          m_any_color = true;
        }
        group->push_back(uint32_t(m_colors.size()));
        m_colors.push_back(rgb);
      } else if (t.name == "build") {
        in_build = true;
      } else if (t.name == "item" && in_build) {
        part.build.push_back(placement(t));
      }
    }
    if (!in_model) bad("a model part without a <model> element");
  }

  // A positive number attribute; false where it is missing, bad input where it is not positive.
  bool positive(const Tag& t, const char* name, double& v) const {
    std::string_view s;
    if (!attribute(t.attrs, name, s)) return false;
    const char* q = s.data();
    if (!parse_double(q, s.data() + s.size(), v) || !(v > 0) || !std::isfinite(v))
      bad("a <" + std::string(t.name) + "> whose " + name + " is not a positive number: \"" +
          std::string(s.substr(0, 40)) + "\"");
    return true;
  }
  // A beam cap mode; false where s names none.
  static bool cap_mode(std::string_view s, Cap& cap) {
    if (s == "sphere")
      cap = Cap::kSphere;
    else if (s == "hemisphere")
      cap = Cap::kHemisphere;
    else if (s == "butt")
      cap = Cap::kButt;
    else
      return false;
    return true;
  }
  Cap cap_of(std::string_view s) const {
    Cap cap = Cap::kSphere;
    if (!cap_mode(s, cap))
      bad("a beam cap mode that is not sphere, hemisphere or butt: \"" + std::string(s.substr(0, 40)) + "\"");
    return cap;
  }
  void lattice_of(const Tag& t, Lattice& l) const {
    l.present = true;
    if (!positive(t, "radius", l.radius)) bad("a <beamlattice> without a radius");
    if (!positive(t, "minlength", l.minlength)) l.minlength = 0;  // (required; a file without one keeps every beam)
    std::string_view s;
    if (attribute(t.attrs, "cap", s)) l.cap = cap_of(s);
    if (attribute(t.attrs, "ballmode", s)) {
      if (s == "all")
        l.ballmode = Lattice::Balls::kAll;
      else if (s == "mixed")
        l.ballmode = Lattice::Balls::kMixed;
      else if (s != "none")
        bad("a beam lattice ballmode that is not none, mixed or all: \"" + std::string(s.substr(0, 40)) + "\"");
    }
    if (!positive(t, "ballradius", l.ballradius) && l.ballmode != Lattice::Balls::kNone)
      bad("a <beamlattice> with balls but no ballradius");
    if (attribute(t.attrs, "clippingmode", s) && s != "none") l.clipping = s;
    if (integer(t.attrs, "pid", l.pid)) integer(t.attrs, "pindex", l.pindex);
  }

  // A base material or colour group entry as a material number (0: none).
  uint32_t material(const Part& part, int64_t pid, int64_t index) const {
    if (pid < 0 || index < 0) return 0;
    const auto it = m_groups.find({&part, uint64_t(pid)});
    if (it == m_groups.end() || uint64_t(index) >= it->second.size()) return 0;
    return it->second[size_t(index)] + 1;  // (after material 0)
  }

  // The elements `name` of a list, in parallel: counted per chunk, sized(n) told their number, then
  // each parsed by f(k, its attributes) in its place.
  template <class S, class F>
  void each_element(std::string_view list, std::string_view name, S&& sized, F&& f) {
    const char* data = list.data();
    const size_t size = list.size();
    const size_t parts = std::max<size_t>(1, std::min<size_t>(size / (256 << 10), 1024));
    std::vector<size_t> cut(parts + 1, size);
    cut[0] = 0;
    for (size_t c = 1; c < parts; ++c) {  // each chunk starts at a '<' (none is inside a tag)
      const size_t from = std::max(size * c / parts, cut[c - 1]);
      const void* q = from < size ? std::memchr(data + from, '<', size - from) : nullptr;
      cut[c] = q ? size_t(static_cast<const char*>(q) - data) : size;
    }
    // The elements `name` that begin in chunk c: every '<' followed by that local name (the count and
    // the parse find the same ones; XML allows no '<' inside a tag), their attributes up to the '>'.
    auto walk = [&](size_t c, auto&& visit) {
      const char* end = data + cut[c + 1];
      for (const char* p = data + cut[c]; p < end; ++p) {
        p = static_cast<const char*>(std::memchr(p, '<', size_t(end - p)));
        if (!p) return;
        const char* q = p + 1;
        const char* local = q;
        while (q < data + size && !is_space(*q) && *q != '\n' && *q != '/' && *q != '>') {
          if (*q == ':') local = q + 1;
          ++q;
        }
        if (std::string_view(local, size_t(q - local)) != name) continue;
        visit(q);
      }
    };
    const std::vector<size_t> first = part_offsets(parts, [&](size_t c) {
      size_t n = 0;
      walk(c, [&](const char*) { ++n; });
      return n;
    });
    sized(first[parts]);
    tbb::parallel_for(size_t(0), parts, [&](size_t c) {
      size_t k = first[c];
      walk(c, [&](const char* a) {  // the attributes run to the '>' (quoted values may hold one)
        const char* q = a;
        char quote = 0;
        while (q < data + size && (quote || *q != '>')) {
          if (quote) {
            if (*q == quote) quote = 0;
          } else if (*q == '"' || *q == '\'') {
            quote = *q;
          }
          ++q;
        }
        const size_t n = size_t(q - a) - (q > a && q[-1] == '/' ? 1 : 0);
        f(k++, std::string_view(a, n));
      });
    });
  }

  struct Decoded {
    std::vector<aiVector3D> positions;
    std::vector<uint32_t> triangles;  // (only those whose indices are in range)
    std::vector<uint32_t> materials;  // per triangle
    std::vector<aiColor4D> colors;    // per vertex, where the package has colour groups (else empty)
    size_t bad = 0;
    uint32_t mesh_number = 0;
  };
  const Decoded& decode(const Part& part, const Object& o) {
    const auto it = m_decoded.find(&o);
    if (it != m_decoded.end()) return *it->second;
    auto d = std::make_unique<Decoded>();
    d->mesh_number = uint32_t(m_mesh_count++);
    std::vector<uint8_t> bad_vertex;
    each_element(
        o.vertices, "vertex",
        [&](size_t n) {
          d->positions.resize(n);
          bad_vertex.assign(n, 0);
        },
        [&](size_t k, std::string_view attrs) {
          float v[3];
          int got = 0;
          each_attribute(attrs, [&](std::string_view name, std::string_view s) {
            if (name.size() == 1 && name[0] >= 'x' && name[0] <= 'z') {
              const char* q = s.data();
              if (parse_float(q, s.data() + s.size(), v[name[0] - 'x'])) got |= 1 << (name[0] - 'x');
            }
            return true;
          });
          if (got == 7)
            d->positions[k] = aiVector3D(v[0], v[1], v[2]);
          else
            bad_vertex[k] = 1;
        });
    const size_t nv = d->positions.size();
    for (size_t k = 0; k < nv; ++k)
      if (bad_vertex[k]) bad("vertex " + std::to_string(k) + " of an object has no numbers x, y and z");
    // corners: each corner's colour as a material number (0: none), where the package has colour groups.
    std::vector<uint32_t> tris, mats, corners;
    std::vector<uint8_t> bad_tri, unread;  // unread: a property group not read
    const bool colour_groups = m_any_colour_group;
    each_element(
        o.triangles, "triangle",
        [&](size_t n) {
          tris.resize(3 * n);
          mats.resize(n);
          if (colour_groups) corners.resize(3 * n);
          bad_tri.assign(n, 0);
          unread.assign(n, 0);
        },
        [&](size_t k, std::string_view attrs) {
          int64_t v[3] = {-1, -1, -1}, pid = o.pid, p[3] = {o.pindex, -1, -1};
          bool own_pid = false, own_p1 = false;
          each_attribute(attrs, [&](std::string_view name, std::string_view s) {
            const char* q = s.data();
            const char* e = s.data() + s.size();
            if (name.size() == 2 && name[0] == 'v' && name[1] >= '1' && name[1] <= '3')
              parse_int(q, e, v[name[1] - '1']);
            else if (name == "pid")
              own_pid = parse_int(q, e, pid);
            else if (name == "p1")
              own_p1 = parse_int(q, e, p[0]);
            else if (name == "p2" || name == "p3")
              parse_int(q, e, p[name[1] - '1']);
            return true;
          });
          if (own_pid && !own_p1) p[0] = 0;
          for (int c = 0; c < 3; ++c) {
            if (v[c] < 0 || uint64_t(v[c]) >= nv) bad_tri[k] = 1;
            tris[3 * k + size_t(c)] = uint32_t(v[c]);
          }
          mats[k] = material(part, pid, p[0]);
          if (colour_groups)  // (p2 and p3 default to p1)
            for (int c = 0; c < 3; ++c)
              corners[3 * k + size_t(c)] = c == 0 || p[c] < 0 ? mats[k] : material(part, pid, p[c]);
          if (pid >= 0 && m_unread_groups.count({&part, uint64_t(pid)})) unread[k] = 1;
        });
    uint8_t any_unread = 0;
    bool conflict = false;
    if (colour_groups) d->colors.assign(nv, aiColor4D(-1, -1, -1, 1));  // (r < 0: not coloured yet)
    auto colour = [](uint32_t rgb) {
      return aiColor4D(float(rgb >> 16) / 255.0f, float((rgb >> 8) & 255) / 255.0f, float(rgb & 255) / 255.0f, 1);
    };
    for (size_t k = 0; k < mats.size(); ++k) {
      if (bad_tri[k]) {
        ++d->bad;
        continue;
      }
      any_unread |= unread[k];
      d->triangles.insert(d->triangles.end(), &tris[3 * k], &tris[3 * k] + 3);
      d->materials.push_back(mats[k]);
      // A vertex takes the colour its first triangle (in file order) gives its corner.
      for (int c = 0; colour_groups && c < 3; ++c) {
        const uint32_t m = corners[3 * k + size_t(c)];
        const aiColor4D want = colour(m ? m_colors[m - 1] : kNoColour);
        aiColor4D& have = d->colors[tris[3 * k + size_t(c)]];
        if (have.r < 0)
          have = want;
        else if (have != want)
          conflict = true;
      }
    }
    for (aiColor4D& c : d->colors)  // (vertices of no triangle)
      if (c.r < 0) c = colour(kNoColour);
    if (conflict) warn("vertices whose triangles give them different 3MF colours take their first triangle's colour");
    if (any_unread)
      warn(
          "triangles coloured by a 3MF texture, composite-material or multi-property group are read without a colour "
          "(those groups are not read)");
    if (o.lattice.present) {
      add_lattice(part, o, *d);
      if (colour_groups) {  // the lattice's vertices: its material's colour
        const Lattice& l = o.lattice;
        const uint32_t m = material(part, l.pid >= 0 ? l.pid : o.pid, l.pid >= 0 ? l.pindex : o.pindex);
        d->colors.resize(d->positions.size(), colour(m ? m_colors[m - 1] : kNoColour));
      }
    }
    return *m_decoded.emplace(&o, std::move(d)).first->second;
  }

  // A beam lattice's beams and balls as closed triangle surfaces added to the object's mesh: each beam
  // a cone frustum between its two radii, closed at each end by a flat disc (butt) or a half sphere
  // of the end's radius outwards (hemisphere, sphere), with a whole sphere where a sphere cap's other
  // half would stick out (the beam narrows away from that end); balls whole spheres. Circles have n
  // sides, n chosen so that the chords lie within 1/4096 of the object's size of the true surface
  // (a quarter voxel at 1024 voxels across; 8 to 64 sides); sphere bands every 2 pi / n. Every piece is
  // closed and wound outwards, so the union the extension defines is what the solid targets fill (the
  // surface targets also see the pieces' parts inside one another, at the lattice's nodes). Beams
  // shorter than minlength are left out, as the extension requires; clipping by a mesh is not applied
  // (a warning).
  void add_lattice(const Part& part, const Object& o, Decoded& d) {
    const Lattice& l = o.lattice;
    const size_t nv = d.positions.size();
    struct Beam {
      int64_t v[2] = {-1, -1};
      double r[2] = {0, 0};
      Cap cap[2];
      bool invalid = false;
    };
    std::vector<Beam> beams;
    each_element(
        l.beams, "beam", [&](size_t n) { beams.resize(n); },
        [&](size_t k, std::string_view attrs) {
          Beam& b = beams[k];
          b.cap[0] = b.cap[1] = l.cap;
          bool r1 = false, r2 = false;
          std::string_view c[2];
          each_attribute(attrs, [&](std::string_view name, std::string_view s) {
            const char* q = s.data();
            const char* e = s.data() + s.size();
            if (name.size() == 2 && (name[0] == 'v' || name[0] == 'r') && (name[1] == '1' || name[1] == '2')) {
              const int end = name[1] - '1';
              if (name[0] == 'v') {
                parse_int(q, e, b.v[end]);
              } else {
                (end ? r2 : r1) = true;
                if (!parse_double(q, e, b.r[end]) || !(b.r[end] > 0) || !std::isfinite(b.r[end])) b.invalid = true;
              }
            } else if (name == "cap1" || name == "cap2") {
              c[name[3] - '1'] = s;
            }
            return true;
          });
          if (!r1) b.r[0] = l.radius;
          if (!r2) b.r[1] = b.r[0];
          for (int e = 0; e < 2; ++e)  // (reported after the parallel parse: the first bad beam's line)
            if (!c[e].empty() && !cap_mode(c[e], b.cap[e])) b.invalid = true;
        });
    std::vector<double> ball_radius(l.ballmode == Lattice::Balls::kAll ? nv : 0, l.ballradius);
    std::vector<std::pair<int64_t, double>> balls;
    if (l.ballmode != Lattice::Balls::kNone)
      each_element(
          l.balls, "ball",
          [&](size_t n) {
            balls.resize(n, {-1, l.ballradius});
          },
          [&](size_t k, std::string_view attrs) {
            each_attribute(attrs, [&](std::string_view name, std::string_view s) {
              const char* q = s.data();
              if (name == "vindex")
                parse_int(q, s.data() + s.size(), balls[k].first);
              else if (name == "r" && !parse_double(q, s.data() + s.size(), balls[k].second))
                balls[k].second = -1;
              return true;
            });
          });
    // The object's size (its vertices' box), for the tessellation's tolerance.
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    for (const aiVector3D& v : d.positions)
      for (int a = 0; a < 3; ++a) {
        lo[a] = std::min(lo[a], double(v[a]));
        hi[a] = std::max(hi[a], double(v[a]));
      }
    const double size = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 0.0});
    // The pieces in order (beams, then balls), each's vertices and triangles counted, then written in
    // parallel at their places: the same mesh as one after the other.
    const uint32_t mat = material(part, l.pid >= 0 ? l.pid : o.pid, l.pid >= 0 ? l.pindex : o.pindex);
    const double tol = size / 4096.0;
    struct Piece {
      LatticeSurface::V p[2];
      double r[2];
      Cap cap[2];
      bool ball;
      uint64_t first_vertex, first_triangle;
    };
    std::vector<Piece> pieces;
    size_t short_beams = 0, bad_beams = 0;
    std::vector<uint8_t> is_end(l.ballmode == Lattice::Balls::kAll ? nv : 0, 0);
    for (const Beam& b : beams) {
      if (b.invalid) bad("a beam whose radius or cap mode is not valid");
      if (b.v[0] < 0 || b.v[1] < 0 || uint64_t(b.v[0]) >= nv || uint64_t(b.v[1]) >= nv) {
        ++bad_beams;
        continue;
      }
      const aiVector3D p = d.positions[size_t(b.v[0])], q = d.positions[size_t(b.v[1])];
      const double len = std::sqrt(double(q.x - p.x) * (q.x - p.x) + double(q.y - p.y) * (q.y - p.y) +
                                   double(q.z - p.z) * (q.z - p.z));
      if (!(len >= l.minlength) || len == 0) {
        ++short_beams;
        continue;
      }
      for (int e = 0; e < 2 && !is_end.empty(); ++e) is_end[size_t(b.v[e])] = 1;
      pieces.push_back(
          {{LatticeSurface::of(p), LatticeSurface::of(q)}, {b.r[0], b.r[1]}, {b.cap[0], b.cap[1]}, false, 0, 0});
    }
    auto ball = [&](size_t v, double r) {
      const LatticeSurface::V c = LatticeSurface::of(d.positions[v]);
      pieces.push_back({{c, c}, {r, r}, {Cap::kSphere, Cap::kSphere}, true, 0, 0});
    };
    for (const auto& [v, r] : balls) {
      if (v < 0 || uint64_t(v) >= nv || !(r > 0) || !std::isfinite(r)) {
        ++bad_beams;
        continue;
      }
      if (l.ballmode == Lattice::Balls::kAll)
        ball_radius[size_t(v)] = r;
      else
        ball(size_t(v), r);
    }
    for (size_t v = 0; v < is_end.size(); ++v)  // (ballmode all: a ball at every beam's end)
      if (is_end[v]) ball(v, ball_radius[v]);
    uint64_t vertices = d.positions.size(), triangles = d.materials.size();
    for (Piece& pc : pieces) {
      pc.first_vertex = vertices;
      pc.first_triangle = triangles;
      const LatticeSurface::Count c = pc.ball ? LatticeSurface::sphere_count(LatticeSurface::sides(pc.r[0], tol))
                                              : LatticeSurface::beam_count(pc.r, pc.cap, tol);
      vertices += c.vertices;
      triangles += c.triangles;
    }
    if (vertices > (uint64_t(1) << 32)) bad("a beam lattice of more than 2^32 vertices");
    d.positions.resize(size_t(vertices));
    d.triangles.resize(size_t(3 * triangles));
    d.materials.resize(size_t(triangles), mat);
    std::atomic<bool> miscounted{false};
    tbb::parallel_for(size_t(0), pieces.size(), [&](size_t k) {
      const Piece& pc = pieces[k];
      LatticeSurface out{d, tol, uint32_t(pc.first_vertex), pc.first_triangle};
      if (pc.ball)
        out.sphere(pc.p[0], pc.r[0]);
      else
        out.beam(pc.p[0], pc.p[1], pc.r, pc.cap);
      const bool last = k + 1 == pieces.size();
      if (out.next_vertex != (last ? vertices : pieces[k + 1].first_vertex) ||
          out.next_triangle != (last ? triangles : pieces[k + 1].first_triangle))
        miscounted = true;
    });
    if (miscounted) fail(ErrorKind::kInternal, m_path + ": a beam lattice piece's vertices or triangles miscounted");
    d.bad += bad_beams;
    if (short_beams)
      warn("beams shorter than the lattice's minlength left out, as the beam lattice extension requires");
    if (!l.clipping.empty())
      warn("a beam lattice clipped by a mesh (clippingmode " + std::string(l.clipping) +
           "): the clipping is not applied, the whole lattice is read");
  }

  void warn(const std::string& what) {
    if (std::find(m_out.warnings.begin(), m_out.warnings.end(), what) == m_out.warnings.end())
      m_out.warnings.push_back(what);
  }

  // Closed surfaces of beams and spheres written into a decoded mesh's arrays, sized for every piece
  // beforehand (add_lattice): each piece writes its own range, vertices then triangles.
  struct LatticeSurface {
    Decoded& d;
    double tol;
    uint32_t next_vertex;
    uint64_t next_triangle;
    using V = Vec3d;
    // cos and sin of 2 pi i / n, i < n, for the circles of n sides being written.
    int table_n = 0;
    double cosines[64] = {}, sines[64] = {};

    static V add(V a, V b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
    static V sub(V a, V b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
    static V mul(V a, double s) { return {a.x * s, a.y * s, a.z * s}; }
    static double dot(V a, V b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
    static V cross(V a, V b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
    static V unit(V a) { return mul(a, 1.0 / std::sqrt(dot(a, a))); }
    static V of(const aiVector3D& v) { return {v.x, v.y, v.z}; }
    // Sides of a circle of radius r (a multiple of 4, 8 to 64) whose chords lie within tol of it.
    static int sides(double r, double tol) {
      if (!(tol < r)) return 8;
      const int n = int(std::ceil(kPi / std::acos(1.0 - tol / r)));
      return std::min(64, std::max(8, (n + 3) / 4 * 4));
    }
    // The vertices and triangles a piece writes (what half_sphere, sphere and beam write).
    struct Count {
      uint64_t vertices = 0, triangles = 0;
      Count& operator+=(const Count& c) {
        vertices += c.vertices;
        triangles += c.triangles;
        return *this;
      }
    };
    static Count half_sphere_count(int n) {  // (without its equator)
      const int bands = n / 4;
      return {uint64_t(bands - 1) * uint64_t(n) + 1, uint64_t(n) * uint64_t(2 * bands - 1)};
    }
    static Count sphere_count(int n) {
      Count c{uint64_t(n), 0};
      c += half_sphere_count(n);
      c += half_sphere_count(n);
      return c;
    }
    static Count beam_count(const double (&r)[2], const Cap (&cap)[2], double tol) {
      const int n = sides(std::max(r[0], r[1]), tol);
      Count c{2 * uint64_t(n), 2 * uint64_t(n)};
      for (int e = 0; e < 2; ++e) {
        if (cap[e] == Cap::kButt) {
          c += Count{1, uint64_t(n)};
        } else {
          c += half_sphere_count(n);
          if (cap[e] == Cap::kSphere && r[1 - e] < r[e]) c += sphere_count(sides(r[e], tol));
        }
      }
      return c;
    }
    uint32_t vertex(V p) {
      d.positions[next_vertex] = aiVector3D(float(p.x), float(p.y), float(p.z));
      return next_vertex++;
    }
    // A triangle wound so that its normal points along `out` (away from the piece's inside).
    void tri(uint32_t a, uint32_t b, uint32_t c, V out) {
      const V pa = of(d.positions[a]);
      if (dot(cross(sub(of(d.positions[b]), pa), sub(of(d.positions[c]), pa)), out) < 0) std::swap(b, c);
      uint32_t* t = &d.triangles[size_t(3 * next_triangle++)];
      t[0] = a;
      t[1] = b;
      t[2] = c;
    }
    // A circle of n vertices about `centre` in the plane of the unit vectors u, w: the first's index
    // (vertex i of the circle is first + i).
    uint32_t ring(V centre, V u, V w, double r, int n) {
      if (n != table_n) {
        for (int i = 0; i < n; ++i) {
          const double t = 2 * kPi * i / n;
          cosines[i] = std::cos(t);
          sines[i] = std::sin(t);
        }
        table_n = n;
      }
      const uint32_t first = next_vertex;
      for (int i = 0; i < n; ++i) vertex(add(centre, add(mul(u, r * cosines[i]), mul(w, r * sines[i]))));
      return first;
    }
    // Closes the circle of n vertices from `equator` (about `centre`, radius r, in the plane of u, w)
    // with a half sphere towards `axis` (a unit vector along u x w or against it).
    void half_sphere(uint32_t equator, int n, V centre, V u, V w, V axis, double r) {
      const int bands = n / 4;
      uint32_t prev = equator;
      for (int k = 1; k <= bands; ++k) {
        const double phi = 0.5 * kPi * k / bands;
        const uint32_t next = k < bands ? ring(add(centre, mul(axis, r * std::sin(phi))), u, w, r * std::cos(phi), n)
                                        : vertex(add(centre, mul(axis, r)));
        for (int i = 0; i < n; ++i) {
          const uint32_t a = prev + uint32_t(i), b = prev + uint32_t((i + 1) % n);
          const V mid = sub(of(d.positions[a]), centre);
          if (k == bands) {
            tri(a, b, next, add(mid, mul(axis, r)));  // (next: the pole)
          } else {
            tri(a, b, next + uint32_t((i + 1) % n), mid);
            tri(a, next + uint32_t((i + 1) % n), next + uint32_t(i), mid);
          }
        }
        prev = next;
      }
    }
    static void basis(V a, V& u, V& w) {  // unit u, w perpendicular to the unit vector a, u x w = a
      const V e = std::fabs(a.x) <= std::fabs(a.y) && std::fabs(a.x) <= std::fabs(a.z) ? V{1, 0, 0}
                  : std::fabs(a.y) <= std::fabs(a.z)                                   ? V{0, 1, 0}
                                                                                       : V{0, 0, 1};
      u = unit(cross(a, e));
      w = cross(a, u);
    }
    void sphere(V centre, double r) {
      const V axis{0, 0, 1};
      V u, w;
      basis(axis, u, w);
      const int n = sides(r, tol);
      const uint32_t equator = ring(centre, u, w, r, n);
      half_sphere(equator, n, centre, u, w, axis, r);
      half_sphere(equator, n, centre, u, w, mul(axis, -1), r);
    }
    void beam(V p1, V p2, const double (&r)[2], const Cap (&cap)[2]) {
      const V p[2] = {p1, p2};
      const V a = unit(sub(p[1], p[0]));
      V u, w;
      basis(a, u, w);
      const int n = sides(std::max(r[0], r[1]), tol);
      const uint32_t ends[2] = {ring(p[0], u, w, r[0], n), ring(p[1], u, w, r[1], n)};
      for (int i = 0; i < n; ++i) {  // the frustum's side, wound outwards (away from the axis)
        const int j = (i + 1) % n;
        const V out = add(mul(u, cosines[i] + cosines[j]), mul(w, sines[i] + sines[j]));
        tri(ends[0] + uint32_t(i), ends[0] + uint32_t(j), ends[1] + uint32_t(j), out);
        tri(ends[0] + uint32_t(i), ends[1] + uint32_t(j), ends[1] + uint32_t(i), out);
      }
      for (int e = 0; e < 2; ++e) {
        const V axis = e == 0 ? mul(a, -1) : a;  // outwards from this end
        if (cap[e] == Cap::kButt) {
          const uint32_t centre = vertex(p[e]);
          for (int i = 0; i < n; ++i) tri(centre, ends[e] + uint32_t(i), ends[e] + uint32_t((i + 1) % n), axis);
        } else {
          half_sphere(ends[e], n, p[e], u, w, axis, r[e]);
          // A sphere cap's inner half lies within the frustum unless the beam narrows away from it.
          if (cap[e] == Cap::kSphere && r[1 - e] < r[e]) sphere(p[e], r[e]);
        }
      }
    }
  };

  // Places object `id` of `part` (components recursively) under transform m.
  void place(Part& part, uint64_t id, const aiMatrix4x4& m, int depth) {
    if (depth > 32) bad("components nested more than 32 deep (a cycle?)");
    if (++m_visits > (1u << 20)) bad("the build places more than 2^20 objects");
    const auto it = part.objects.find(id);
    if (it == part.objects.end())
      bad("the build names object " + std::to_string(id) + ", which the model does not define");
    const Object& o = it->second;
    if (o.slices && !o.has_mesh)
      warn("an object given by a slice stack (the 3MF slice extension) left out: slices are not read");
    if (o.has_mesh) {
      const Decoded& d = decode(part, o);
      m_out.dropped_bad_index += d.bad;
      if (!d.triangles.empty()) {
        MeshPiece piece;
        piece.positions = d.positions.data();
        piece.num_vertices = uint32_t(d.positions.size());
        piece.triangles = d.triangles.data();
        piece.num_triangles = d.triangles.size() / 3;
        piece.mesh_index = d.mesh_number;
        piece.material_index = 0;
        if (!d.colors.empty()) piece.colors = d.colors.data();
        const size_t before = m_out.mesh.material_ids.size();
        m_appender->append(piece, m);
        std::copy(d.materials.begin(), d.materials.end(), m_out.mesh.material_ids.begin() + std::ptrdiff_t(before));
      }
    }
    for (const Component& c : o.components)  // (a part looked up by name only where p:path names one)
      place(c.path.empty() ? part : load_part(c.path), c.object, m * c.transform, depth + 1);
  }

  std::string m_path;
  MeshLoadResult& m_out;
  MappedFile m_file;
  zip::Reader m_zip;
  MeshAppender* m_appender = nullptr;
  std::map<std::string, std::unique_ptr<Part>> m_parts;
  // basematerials and colour groups -> colour numbers; their colours, in file order
  std::map<std::pair<const Part*, uint64_t>, std::vector<uint32_t>> m_groups;
  std::vector<uint32_t> m_colors;
  std::set<std::pair<const Part*, uint64_t>> m_unread_groups;  // texture, composite, multi-property groups
  std::map<const Object*, std::unique_ptr<Decoded>> m_decoded;
  size_t m_mesh_count = 0, m_visits = 0;
  bool m_any_color = false;
  bool m_any_colour_group = false;                 // (objects decoded after one get vertex colours)
  static constexpr uint32_t kNoColour = 0xC8C8C8;  // material 0's
};

}  // namespace tmf

void read_3mf(const std::string& path, MeshLoadResult& out) { tmf::Reader(path, out).read(); }

}  // namespace voxtile
