// Native glTF 2.0 reader (.gltf with its buffers, .glb): the scene's node tree with its transforms
// (matrix, or translation, rotation, scale), every triangle primitive (triangles, strips, fans;
// indexed or not), float or integer attributes (KHR_mesh_quantization and the core spec's
// normalized integers, dequantized as the spec says), sparse accessors, and the materials' base
// colours and (when asked for) base colour textures. The result is the Mesh the Assimp path gives where Assimp reads
// the file right (the same nodes, primitives as meshes numbered as Assimp numbers them, a default material last,
// transforms composed with Assimp's own matrix code through io/mesh_append.h, so positions agree bit for bit);
// Draco-compressed primitives are left to Assimp (gltf_native). Every offset, stride and count is checked against the
// buffers before it is read.
#include <assimp/scene.h>
#include <assimp/version.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sparse_grid.h"
#include "io/files.h"
#include "io/mesh_append.h"
#include "io/native_mesh.h"
#include "io/png.h"

namespace voxtile {
namespace {

using Json = nlohmann::json;
using Floats = ValueArray<float>;     // (no zero fill before the values are written)
using Indices = ValueArray<uint32_t>;

constexpr uint32_t kGlbMagic = 0x46546C67u, kJsonChunk = 0x4E4F534Au, kBinChunk = 0x004E4942u;
constexpr int kFloat = 5126, kByte = 5120, kUByte = 5121, kShort = 5122, kUShort = 5123, kUInt = 5125;

int component_size(int64_t t) {
  switch (t) {
    case kByte:
    case kUByte: return 1;
    case kShort:
    case kUShort: return 2;
    case kUInt:
    case kFloat: return 4;
    default: return 0;
  }
}
const char* integer_name(int64_t t) {  // (in messages)
  switch (t) {
    case kByte: return "8-bit integers";
    case kUByte: return "unsigned 8-bit integers";
    case kShort: return "16-bit integers";
    case kUShort: return "unsigned 16-bit integers";
    case kUInt: return "unsigned 32-bit integers";
    default: return "integers";
  }
}
int type_components(const std::string& t) {
  if (t == "SCALAR") return 1;
  if (t == "VEC2") return 2;
  if (t == "VEC3") return 3;
  if (t == "VEC4") return 4;
  if (t == "MAT4") return 16;
  return 0;
}

std::string decode_base64(const char* p, size_t n, const std::string& path) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  out.reserve(n / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n && p[i] != '='; ++i) {
    const int v = value(p[i]);
    if (v < 0) fail(ErrorKind::kInput, path + ": a buffer's data URI is not base64");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(char(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Assimp's composition of a glTF transform from its parts, each optional (null): T * R * S, the
// rotation a quaternion (x, y, z, w), in Assimp's own matrix code (so the bits are Assimp's).
aiMatrix4x4 trs_matrix(const float* t, const float* r, const float* s) {
  aiMatrix4x4 matrix;
  if (t) {
    aiMatrix4x4 tm;
    matrix = matrix * aiMatrix4x4::Translation(aiVector3D(t[0], t[1], t[2]), tm);
  }
  if (r) {
    aiQuaternion q;
    q.x = r[0];
    q.y = r[1];
    q.z = r[2];
    q.w = r[3];
    matrix = matrix * aiMatrix4x4(q.GetMatrix());
  }
  if (s) {
    aiMatrix4x4 sm;
    matrix = matrix * aiMatrix4x4::Scaling(aiVector3D(s[0], s[1], s[2]), sm);
  }
  return matrix;
}

// The JSON of a .gltf, or the JSON chunk of a .glb (with its BIN chunk, if any).
struct GltfText {
  std::unique_ptr<MappedFile> file;
  std::string storage;  // a .gltf's text decoded from UTF-16/32 (io/files.h plain_text)
  std::string_view json, bin;
  bool bin_present = false;
};
GltfText open_gltf(const std::string& path) {
  GltfText g;
  g.file = std::make_unique<MappedFile>(path);
  const char* d = g.file->data();
  const size_t size = g.file->size();
  if (lower_extension(path) != "glb") {
    g.json = plain_text(path, d, size, g.storage);  // (a byte-order mark skipped, UTF-16/32 decoded)
    return g;
  }
  uint32_t h[3];
  if (size < 20) fail(ErrorKind::kInput, path + ": truncated GLB (" + std::to_string(size) + " bytes, no header)");
  std::memcpy(h, d, sizeof h);
  if (h[0] != kGlbMagic) fail(ErrorKind::kInput, path + ": not a binary glTF (no 'glTF' magic)");
  if (h[1] != 2) fail(ErrorKind::kInput, path + ": binary glTF version " + std::to_string(h[1]) + " (voxtile reads 2)");
  if (h[2] > size) fail(ErrorKind::kInput, path + ": truncated GLB (the header says " + std::to_string(h[2]) + " bytes)");
  for (size_t at = 12; at + 8 <= h[2];) {
    uint32_t c[2];
    std::memcpy(c, d + at, sizeof c);
    if (c[0] > h[2] - at - 8) fail(ErrorKind::kInput, path + ": truncated GLB (a chunk runs past the file)");
    const std::string_view body(d + at + 8, c[0]);
    if (c[1] == kJsonChunk && g.json.empty()) g.json = body;
    else if (c[1] == kBinChunk && !g.bin_present) {
      g.bin = body;
      g.bin_present = true;
    }
    at += 8 + (size_t(c[0]) + 3) / 4 * 4;
  }
  if (g.json.empty()) fail(ErrorKind::kInput, path + ": a GLB without its JSON chunk");
  return g;
}

class GltfReader {
 public:
  GltfReader(const std::string& path, MeshLoadResult& out, bool textures = false)
      : m_path(path), m_out(out), m_text(open_gltf(path)), m_textures(textures) {
    m_j = Json::parse(m_text.json.begin(), m_text.json.end(), nullptr, false);
    if (!m_j.is_object()) fail(ErrorKind::kInput, path + ": not a glTF file (its JSON does not parse)");
    const Json& asset = member("asset");
    const std::string version = asset.is_object() && asset.contains("version") && asset["version"].is_string()
                                    ? asset["version"].get<std::string>()
                                    : "";
    if (version.empty() || version[0] != '2')
      fail(ErrorKind::kInput, path + ": glTF version '" + version + "' (the native reader reads 2.x; --loader auto gives 1.0 to Assimp)");
  }

  void read() {
    // A file may only be read by a loader that knows every extension it requires.
    if (const Json& req = member("extensionsRequired"); req.is_array())
      for (const Json& e : req) {
        const std::string name = e.is_string() ? e.get<std::string>() : std::string();
        if (name == "EXT_meshopt_compression")
          fail(ErrorKind::kInput, m_path + ": its buffers are compressed (EXT_meshopt_compression), which voxtile does not "
                                           "decode; re-export it without that compression");
        static const char* const kRead[] = {"KHR_mesh_quantization", "KHR_texture_transform", "KHR_lights_punctual",
                                            "KHR_texture_basisu", "EXT_texture_webp", "EXT_texture_avif",
                                            "EXT_mesh_gpu_instancing", "KHR_materials_variants"};
        const bool material = name.rfind("KHR_materials_", 0) == 0;  // (shading only)
        if (!material && std::none_of(std::begin(kRead), std::end(kRead), [&](const char* k) { return name == k; }))
          fail(ErrorKind::kInput, m_path + ": it requires the glTF extension '" + name + "', which voxtile does not read");
      }
    load_buffers();
    m_out.format = "glTF 2.0 (native)";
    // Meshes and materials are numbered as Assimp 5.2 numbers them: in the order its loader first
    // reaches them from the scene (a node's children before its own mesh; a mesh's materials in
    // its primitives' order), the ones the scene never reaches left out, a default material last.
    // A mesh's primitives get consecutive source-mesh indices.
    const Json& materials = member("materials");
    const Json& meshes = member("meshes");
    m_material_number.assign(materials.is_array() ? materials.size() : 0, -1);
    m_mesh_number.assign(meshes.is_array() ? meshes.size() : 0, -1);
    m_node_reached.assign(member("nodes").is_array() ? member("nodes").size() : 0, 0);
    const std::vector<size_t> roots = scene_roots();
    for (size_t r : roots) reach_node(r);
    for (size_t i : m_materials_reached) {
      float c[4] = {1, 1, 1, 1};
      if (materials[i].is_object() && materials[i].contains("pbrMetallicRoughness")) {
        const Json& pbr = materials[i]["pbrMetallicRoughness"];
        if (pbr.is_object() && pbr.contains("baseColorFactor") && pbr["baseColorFactor"].is_array())
          for (size_t k = 0; k < 4 && k < pbr["baseColorFactor"].size(); ++k) c[k] = number(pbr["baseColorFactor"][k]);
      }
      m_out.mesh.material_colors.push_back(pack_color(c[0], c[1], c[2]));
    }
    m_out.mesh.material_colors.push_back(pack_color(1, 1, 1));  // the default material
    m_default_material = uint32_t(m_materials_reached.size());
    if (m_textures) load_textures();
    size_t offset = 0;
    m_mesh_offset.assign(m_mesh_number.size(), 0);
    for (size_t m : m_meshes_reached) {
      m_mesh_offset[m] = offset;
      offset += meshes[m]["primitives"].size();
    }
    MeshAppender appender(m_out);
    m_appender = &appender;
    // The scene's root nodes; several hang under an identity root, as in Assimp's scene.
    if (roots.size() == 1) {
      place_nodes(roots[0], aiMatrix4x4());
    } else {
      const aiMatrix4x4 root = aiMatrix4x4() * aiMatrix4x4();
      for (size_t r : roots) place_nodes(r, root);
    }
    appender.finish();
    m_out.mesh.num_source_meshes = offset;
    m_out.mesh.num_materials = m_materials_reached.size() + 1;
  }

 private:
  struct Buffer {
    const char* data = nullptr;
    size_t size = 0;
  };

  const Json& member(const char* name) const {
    static const Json kNull;
    const auto it = m_j.find(name);
    return it == m_j.end() ? kNull : *it;
  }
  // An index into array `of` (error when it is not one).
  size_t index(const Json& v, const Json& of, const char* what) const {
    if (!v.is_number_unsigned() || !of.is_array() || v.get<uint64_t>() >= of.size())
      fail(ErrorKind::kInput, m_path + ": a " + std::string(what) + " index that is not one of the file's " + what + "s");
    return v.get<size_t>();
  }
  float number(const Json& v) const {
    if (!v.is_number()) fail(ErrorKind::kInput, m_path + ": a number that is not one");
    return static_cast<float>(v.get<double>());
  }
  uint64_t count(const Json& o, const char* key, uint64_t fallback) const {
    if (!o.contains(key)) return fallback;
    if (!o[key].is_number_unsigned()) fail(ErrorKind::kInput, m_path + ": '" + key + "' is not a count");
    return o[key].get<uint64_t>();
  }

  // The base colour texture of every material reached (or the diffuse texture of
  // KHR_materials_pbrSpecularGlossiness, as Assimp reads it), decoded with stb_image from a
  // bufferView, a data URI or a file beside the model; the texture coordinate set it names and its
  // KHR_texture_transform, applied to that set's coordinates when primitives are decoded. A texture
  // that cannot be read is a warning, as on the Assimp path.
  void load_textures() {
    const Json& materials = member("materials");
    const size_t n = m_materials_reached.size();
    m_uv.assign(n + 1, UvChoice{});
    std::vector<Texture> textures(n + 1);
    bool any = false;
    for (size_t j = 0; j < n; ++j) {
      const Json& mat = materials[m_materials_reached[j]];
      const Json* info = nullptr;
      if (mat.is_object() && mat.contains("pbrMetallicRoughness") && mat["pbrMetallicRoughness"].is_object() &&
          mat["pbrMetallicRoughness"].contains("baseColorTexture"))
        info = &mat["pbrMetallicRoughness"]["baseColorTexture"];
      else if (mat.is_object() && mat.contains("extensions") && mat["extensions"].is_object() &&
               mat["extensions"].contains("KHR_materials_pbrSpecularGlossiness") &&
               mat["extensions"]["KHR_materials_pbrSpecularGlossiness"].is_object() &&
               mat["extensions"]["KHR_materials_pbrSpecularGlossiness"].contains("diffuseTexture"))
        info = &mat["extensions"]["KHR_materials_pbrSpecularGlossiness"]["diffuseTexture"];
      if (!info || !info->is_object()) continue;
      std::string name = "texture of material " + std::to_string(m_materials_reached[j]), why;
      bool ok = false;
      try {
        m_uv[j] = uv_choice(*info);
        ok = texture_image(*info, textures[j], name, why);
      } catch (const Error& e) {
        why = e.what();
        if (why.rfind(m_path + ": ", 0) == 0) why.erase(0, m_path.size() + 2);
      }
      if (!ok) {
        textures[j] = Texture{};
        m_out.warnings.push_back("texture '" + name + "' not used: " + why);
      }
      any = any || ok;
    }
    if (any) m_out.mesh.material_textures = std::move(textures);
  }

  // Which texture coordinates a textureInfo samples, and how KHR_texture_transform moves them.
  struct UvChoice {
    uint64_t set = 0;
    bool transform = false;
    float offset[2] = {0, 0}, rotation = 0, scale[2] = {1, 1};
  };
  UvChoice uv_choice(const Json& info) const {
    UvChoice c;
    c.set = count(info, "texCoord", 0);
    if (!info.contains("extensions") || !info["extensions"].is_object() ||
        !info["extensions"].contains("KHR_texture_transform"))
      return c;
    const Json& t = info["extensions"]["KHR_texture_transform"];
    if (!t.is_object()) return c;
    c.transform = true;
    c.set = count(t, "texCoord", c.set);
    for (int k = 0; k < 2; ++k) {
      if (t.contains("offset") && t["offset"].is_array() && t["offset"].size() == 2)
        c.offset[k] = number(t["offset"][size_t(k)]);
      if (t.contains("scale") && t["scale"].is_array() && t["scale"].size() == 2)
        c.scale[k] = number(t["scale"][size_t(k)]);
    }
    if (t.contains("rotation")) c.rotation = number(t["rotation"]);
    return c;
  }

  // The image of a textureInfo, decoded into `t`; `name` becomes the image's name or URI.
  bool texture_image(const Json& info, Texture& t, std::string& name, std::string& why) {
    const Json& textures = member("textures");
    const Json& tex = textures[index(info.contains("index") ? info["index"] : Json(), textures, "texture")];
    const Json* source = tex.is_object() && tex.contains("source") ? &tex["source"] : nullptr;
    if (!source && tex.is_object() && tex.contains("extensions") && tex["extensions"].is_object())
      for (const auto& [ext, v] : tex["extensions"].items())
        if (v.is_object() && v.contains("source")) {
          why = "its image is in a format of the " + ext + " extension, which voxtile does not decode";
          return false;
        }
    if (!source) {
      why = "the texture has no image";
      return false;
    }
    const Json& images = member("images");
    const size_t i = index(*source, images, "image");
    const Json& image = images[i];
    if (!image.is_object()) fail(ErrorKind::kInput, m_path + ": image " + std::to_string(i) + " is not an object");
    name = image.contains("uri") && image["uri"].is_string() && image["uri"].get<std::string>().rfind("data:", 0) != 0
               ? image["uri"].get<std::string>()
           : image.contains("name") && image["name"].is_string() ? image["name"].get<std::string>()
                                                                 : "image " + std::to_string(i);
    if (image.contains("bufferView")) {
      size_t stride = 0;
      const Buffer b = view(image["bufferView"], &stride);
      return decode_texture(reinterpret_cast<const unsigned char*>(b.data), b.size, t, why);
    }
    if (!image.contains("uri") || !image["uri"].is_string()) {
      why = "the image has neither a bufferView nor a uri";
      return false;
    }
    const std::string uri = image["uri"].get<std::string>();
    if (uri.rfind("data:", 0) == 0) {
      const size_t comma = uri.find(',');
      if (comma == std::string::npos || uri.rfind(";base64", comma) == std::string::npos) {
        why = "its data URI is not base64";
        return false;
      }
      const std::string bytes = decode_base64(uri.data() + comma + 1, uri.size() - comma - 1, m_path);
      return decode_texture(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), t, why);
    }
    return load_texture_file(texture_path(m_path, percent_decode(uri)), t, why);
  }

  void load_buffers() {
    const Json& buffers = member("buffers");
    if (!buffers.is_array()) return;
    const std::string dir = [&] {
      const size_t slash = m_path.rfind('/');
      return slash == std::string::npos ? std::string() : m_path.substr(0, slash + 1);
    }();
    for (size_t i = 0; i < buffers.size(); ++i) {
      const Json& b = buffers[i];
      if (!b.is_object()) fail(ErrorKind::kInput, m_path + ": buffer " + std::to_string(i) + " is not an object");
      const uint64_t length = count(b, "byteLength", 0);
      Buffer buf;
      if (!b.contains("uri")) {
        if (i != 0 || !m_text.bin_present)
          fail(ErrorKind::kInput, m_path + ": buffer " + std::to_string(i) + " has no uri (and no GLB BIN chunk)");
        buf = {m_text.bin.data(), m_text.bin.size()};
      } else {
        if (!b["uri"].is_string()) fail(ErrorKind::kInput, m_path + ": buffer " + std::to_string(i) + "'s uri is not a string");
        const std::string uri = b["uri"].get<std::string>();
        if (uri.rfind("data:", 0) == 0) {
          const size_t comma = uri.find(',');
          if (comma == std::string::npos || uri.rfind(";base64", comma) == std::string::npos)
            fail(ErrorKind::kInput, m_path + ": buffer " + std::to_string(i) + "'s data URI is not base64");
          m_owned.push_back(decode_base64(uri.data() + comma + 1, uri.size() - comma - 1, m_path));
          buf = {m_owned.back().data(), m_owned.back().size()};
        } else {
          const std::string file = uri[0] == '/' ? percent_decode(uri) : dir + percent_decode(uri);
          try {
            check_input_file(file);
            m_maps.push_back(std::make_unique<MappedFile>(file));
          } catch (const Error& e) {  // (named after the glTF: the buffer's file is part of it)
            fail(ErrorKind::kInput, m_path + ": buffer " + std::to_string(i) + ": " + e.what());
          }
          buf = {m_maps.back()->data(), m_maps.back()->size()};
        }
      }
      if (buf.size < length)
        fail(ErrorKind::kInput, m_path + ": buffer " + std::to_string(i) + " holds " + std::to_string(buf.size) +
                                    " bytes, less than its byteLength " + std::to_string(length) + " (truncated?)");
      buf.size = size_t(length);
      m_buffers.push_back(buf);
    }
  }

  // The bytes of bufferView `v`, and its stride (0: packed).
  Buffer view(const Json& v, size_t* stride) const {
    const Json& views = member("bufferViews");
    const Json& bv = views[index(v, views, "bufferView")];
    if (!bv.is_object()) fail(ErrorKind::kInput, m_path + ": a bufferView that is not an object");
    const size_t b = index(bv.contains("buffer") ? bv["buffer"] : Json(), member("buffers"), "buffer");
    const uint64_t off = count(bv, "byteOffset", 0), len = count(bv, "byteLength", 0);
    *stride = size_t(count(bv, "byteStride", 0));
    if (b >= m_buffers.size() || off > m_buffers[b].size || len > m_buffers[b].size - off)
      fail(ErrorKind::kInput, m_path + ": a bufferView runs past its buffer");
    return {m_buffers[b].data + off, size_t(len)};
  }

  // `n` elements of `elem` bytes at byteOffset `off` of bufferView `v`: their first byte and stride,
  // after checking that they lie in the view (off + (n - 1) stride + elem <= its length). Every read
  // of the buffers goes through here, before anything is allocated for it.
  struct Span {
    const char* data = nullptr;
    size_t stride = 0;
  };
  Span span(const Json& v, uint64_t off, uint64_t n, size_t elem, const char* what) const {
    size_t stride = 0;
    const Buffer bytes = view(v, &stride);
    if (stride == 0) stride = elem;
    if (stride < elem) fail(ErrorKind::kInput, m_path + ": the " + std::string(what) + " accessor's stride is under its size");
    if (n > 0 && (elem == 0 || off > bytes.size || elem > bytes.size - off || (n - 1) > (bytes.size - off - elem) / stride))
      fail(ErrorKind::kInput, m_path + ": the " + std::string(what) + " accessor's " + std::to_string(n) +
                                  " elements run past its bufferView");
    return {bytes.data + off, stride};
  }
  // An accessor without a bufferView is zeros (perhaps with sparse substitutions): no more of them
  // than the file's buffers hold bytes, plus 2^20, so a small file cannot ask for a huge allocation.
  void check_without_data(uint64_t n) const {
    uint64_t held = uint64_t(1) << 20;
    for (const Buffer& b : m_buffers) held += b.size;
    if (n > held) fail(ErrorKind::kInput, m_path + ": an accessor of " + std::to_string(n) + " elements without data");
  }

  // Accessor `a`, its `comps` components per element as floats (integers converted, normalized ones
  // as the spec says), sparse substitutions applied. `what` names it in errors.
  Floats floats(const Json& a, int comps, const char* what, bool allow_fewer = false) const {
    const Json& accessors = member("accessors");
    const Json& acc = accessors[index(a, accessors, "accessor")];
    if (!acc.is_object()) fail(ErrorKind::kInput, m_path + ": an accessor that is not an object");
    const int64_t ct = acc.contains("componentType") && acc["componentType"].is_number_integer()
                           ? acc["componentType"].get<int64_t>()
                           : 0;
    const int csize = component_size(ct);
    const int n = acc.contains("type") && acc["type"].is_string() ? type_components(acc["type"].get<std::string>()) : 0;
    if (csize == 0 || n == 0 || (n != comps && !(allow_fewer && n == comps - 1)))
      fail(ErrorKind::kInput, m_path + ": the " + what + " accessor's type or componentType is not one glTF allows");
    const bool normalized = acc.contains("normalized") && acc["normalized"].is_boolean() && acc["normalized"].get<bool>();
    const uint64_t cnt = count(acc, "count", 0);
    const size_t elem = size_t(n) * size_t(csize);
    const bool has_view = acc.contains("bufferView");
    Span main;
    if (has_view) main = span(acc["bufferView"], count(acc, "byteOffset", 0), cnt, elem, what);
    else check_without_data(cnt);
    Floats out(size_t(cnt) * size_t(comps));
    if (!acc.contains("bufferView") || n != comps) std::fill(out.begin(), out.end(), 0.0f);  // (zeros where no data)
    if (allow_fewer && n == comps - 1)
      for (size_t i = 0; i < cnt; ++i) out[i * size_t(comps) + size_t(comps - 1)] = 1.0f;
    auto decode = [&](const char* p) -> float {
      switch (ct) {
        case kFloat: {
          float f;
          std::memcpy(&f, p, 4);
          return f;
        }
        case kByte: {
          const float v = float(int8_t(*p));
          return normalized ? std::max(v / 127.0f, -1.0f) : v;
        }
        case kUByte: {
          const float v = float(uint8_t(*p));
          return normalized ? v / 255.0f : v;
        }
        case kShort: {
          int16_t s;
          std::memcpy(&s, p, 2);
          return normalized ? std::max(float(s) / 32767.0f, -1.0f) : float(s);
        }
        case kUShort: {
          uint16_t s;
          std::memcpy(&s, p, 2);
          return normalized ? float(s) / 65535.0f : float(s);
        }
        default: {
          uint32_t s;
          std::memcpy(&s, p, 4);
          return normalized ? float(double(s) / 4294967295.0) : float(s);
        }
      }
    };
    // Elements [0, count) at `at`, element i written to out[slot(i)].
    auto read = [&](const Span& at, uint64_t count_, auto&& slot) {
      tbb::parallel_for(tbb::blocked_range<size_t>(0, size_t(count_), 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
        for (size_t i = r.begin(); i < r.end(); ++i) {
          const char* p = at.data + i * at.stride;
          float* o = &out[slot(i) * size_t(comps)];
          for (int c = 0; c < n; ++c) o[c] = decode(p + size_t(c) * size_t(csize));
        }
      });
    };
    if (has_view) {
      if (ct == kFloat && n == comps && main.stride == elem) {  // packed floats, as most files store them: copied
        tbb::parallel_for(tbb::blocked_range<size_t>(0, size_t(cnt), 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
          std::memcpy(&out[r.begin() * elem / 4], main.data + r.begin() * elem, (r.end() - r.begin()) * elem);
        });
      } else {
        read(main, cnt, [](size_t i) { return i; });
      }
    }
    if (acc.contains("sparse")) {
      const Json& sp = acc["sparse"];
      if (!sp.is_object() || !sp.contains("indices") || !sp.contains("values") || !sp["indices"].is_object() ||
          !sp["values"].is_object())
        fail(ErrorKind::kInput, m_path + ": a sparse accessor without its indices and values");
      const uint64_t scount = count(sp, "count", 0);
      if (scount > cnt) fail(ErrorKind::kInput, m_path + ": a sparse accessor with more substitutions than elements");
      const Indices at = indices_of(sp["indices"], scount);
      for (uint32_t i : at)
        if (i >= cnt) fail(ErrorKind::kInput, m_path + ": a sparse accessor's index past its elements");
      read(span(sp["values"].contains("bufferView") ? sp["values"]["bufferView"] : Json(), count(sp["values"], "byteOffset", 0),
                scount, elem, what),
           scount, [&](size_t i) { return size_t(at[i]); });
    }
    return out;
  }

  // Integer indices: an accessor `a` (SCALAR, unsigned byte, short or int), or a sparse accessor's
  // index block (`count` of them).
  Indices indices_of(const Json& block, uint64_t n) const {
    const int64_t ct = block.contains("componentType") && block["componentType"].is_number_integer()
                           ? block["componentType"].get<int64_t>()
                           : 0;
    if (ct != kUByte && ct != kUShort && ct != kUInt) fail(ErrorKind::kInput, m_path + ": indices that are not unsigned integers");
    const size_t csize = size_t(component_size(ct));
    const Span at = span(block.contains("bufferView") ? block["bufferView"] : Json(), count(block, "byteOffset", 0), n,
                         csize, "index");
    Indices out(static_cast<size_t>(n));
    tbb::parallel_for(tbb::blocked_range<size_t>(0, size_t(n), 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t i = r.begin(); i < r.end(); ++i) {
        const char* p = at.data + i * at.stride;
        uint32_t v = 0;
        if (csize == 1) v = uint8_t(*p);
        else if (csize == 2) {
          uint16_t s;
          std::memcpy(&s, p, 2);
          v = s;
        } else {
          std::memcpy(&v, p, 4);
        }
        out[i] = v;
      }
    });
    return out;
  }
  Indices index_accessor(const Json& a) const {
    const Json& accessors = member("accessors");
    const Json& acc = accessors[index(a, accessors, "accessor")];
    if (!acc.is_object() || !acc.contains("type") || acc["type"] != "SCALAR" || acc.contains("sparse"))
      fail(ErrorKind::kInput, m_path + ": an index accessor that is not plain SCALAR integers");
    const uint64_t n = count(acc, "count", 0);
    if (acc.contains("bufferView")) return indices_of(acc, n);  // (checked against its view before allocating)
    check_without_data(n);
    return Indices(size_t(n), 0u);
  }

  // The root nodes of the scene ("scene", or the first).
  std::vector<size_t> scene_roots() const {
    const Json& scenes = member("scenes");
    size_t scene = 0;
    if (m_j.contains("scene")) scene = index(m_j["scene"], scenes, "scene");
    std::vector<size_t> roots;
    if (scenes.is_array() && scene < scenes.size() && scenes[scene].is_object() && scenes[scene].contains("nodes") &&
        scenes[scene]["nodes"].is_array())
      for (const Json& r : scenes[scene]["nodes"]) roots.push_back(index(r, member("nodes"), "node"));
    return roots;
  }
  // Both walks of the node tree keep their own stack (a file's tree may be deep), and stop at 1000
  // levels (a cycle, which glTF forbids, would never end).
  static constexpr size_t kMaxDepth = 1000;
  const Json& node_at(size_t i) const {
    const Json& n = member("nodes")[i];
    if (!n.is_object()) fail(ErrorKind::kInput, m_path + ": node " + std::to_string(i) + " is not an object");
    return n;
  }
  const Json* children(const Json& n) const {
    return n.contains("children") && n["children"].is_array() ? &n["children"] : nullptr;
  }
  void too_deep() const {
    fail(ErrorKind::kInput, m_path + ": the node tree is deeper than " + std::to_string(kMaxDepth) + " levels (a cycle?)");
  }

  // Assimp's order of first reaching nodes, meshes and materials (see read): a node's children
  // (each reached once) before its own mesh.
  void reach_node(size_t root) {
    struct Frame {
      size_t node, next_child;
    };
    if (m_node_reached[root]) return;
    m_node_reached[root] = 1;
    std::vector<Frame> stack{{root, 0}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      const Json& n = node_at(f.node);
      const Json* kids = children(n);
      if (kids && f.next_child < kids->size()) {
        const size_t c = index((*kids)[f.next_child++], member("nodes"), "node");
        if (!m_node_reached[c]) {
          m_node_reached[c] = 1;
          if (stack.size() >= kMaxDepth) too_deep();
          stack.push_back({c, 0});
        }
        continue;
      }
      stack.pop_back();
      if (n.contains("mesh")) number_mesh(index(n["mesh"], member("meshes"), "mesh"));
    }
  }
  void number_mesh(size_t m) {
    if (m_mesh_number[m] >= 0) return;
    const Json& mesh = member("meshes")[m];
    if (!mesh.is_object() || !mesh.contains("primitives") || !mesh["primitives"].is_array())
      fail(ErrorKind::kInput, m_path + ": mesh " + std::to_string(m) + " has no primitives");
    for (const Json& p : mesh["primitives"])
      if (p.is_object() && p.contains("material")) {
        const size_t mat = index(p["material"], member("materials"), "material");
        if (m_material_number[mat] < 0) {
          m_material_number[mat] = int64_t(m_materials_reached.size());
          m_materials_reached.push_back(mat);
        }
      }
    m_mesh_number[m] = int64_t(m_meshes_reached.size());
    m_meshes_reached.push_back(m);
  }

  // The subtree of node `root` under transform `parent`, in Assimp's order: a node's transform and
  // meshes, then its children in turn (a node listed twice is placed twice).
  void place_nodes(size_t root, const aiMatrix4x4& parent) {
    struct Frame {
      size_t node;
      aiMatrix4x4 parent;
      size_t depth;
    };
    std::vector<Frame> stack{{root, parent, 1}};
    while (!stack.empty()) {
      const Frame f = stack.back();
      stack.pop_back();
      if (f.depth > kMaxDepth) too_deep();
      if (++m_visits > (uint64_t(1) << 20))
        fail(ErrorKind::kInput, m_path + ": the node tree expands to more than 2^20 nodes (nodes listed as children many times)");
      const Json& n = node_at(f.node);
      const aiMatrix4x4 m = f.parent * transform(n);
      if (n.contains("mesh")) {
        const size_t mi = index(n["mesh"], member("meshes"), "mesh");
        const Json& prims = member("meshes")[mi]["primitives"];  // (checked by number_mesh)
        for (const aiMatrix4x4& at : instances(n, m))
          for (size_t p = 0; p < prims.size(); ++p) primitive(prims[p], uint32_t(m_mesh_offset[mi] + p), at);
      }
      if (const Json* kids = children(n))
        for (size_t k = kids->size(); k-- > 0;) stack.push_back({index((*kids)[k], member("nodes"), "node"), m, f.depth + 1});
    }
  }

  // The transforms a node's mesh is placed with: the node's own, or one per instance of
  // EXT_mesh_gpu_instancing (node * T * R * S of the instance's TRANSLATION, ROTATION, SCALE).
  std::vector<aiMatrix4x4> instances(const Json& n, const aiMatrix4x4& m) const {
    if (!n.contains("extensions") || !n["extensions"].is_object() || !n["extensions"].contains("EXT_mesh_gpu_instancing"))
      return {m};
    const Json& ext = n["extensions"]["EXT_mesh_gpu_instancing"];
    if (!ext.is_object() || !ext.contains("attributes") || !ext["attributes"].is_object())
      fail(ErrorKind::kInput, m_path + ": an EXT_mesh_gpu_instancing node without its attributes");
    const Json& at = ext["attributes"];
    Floats t, r, s;
    if (at.contains("TRANSLATION")) t = floats(at["TRANSLATION"], 3, "TRANSLATION");
    if (at.contains("ROTATION")) r = floats(at["ROTATION"], 4, "ROTATION");
    if (at.contains("SCALE")) s = floats(at["SCALE"], 3, "SCALE");
    const size_t count = !t.empty() ? t.size() / 3 : !r.empty() ? r.size() / 4 : s.size() / 3;
    if ((!t.empty() && t.size() / 3 != count) || (!r.empty() && r.size() / 4 != count) || (!s.empty() && s.size() / 3 != count))
      fail(ErrorKind::kInput, m_path + ": EXT_mesh_gpu_instancing attributes of different counts");
    std::vector<aiMatrix4x4> out(count);
    for (size_t i = 0; i < count; ++i)
      out[i] = m * trs_matrix(t.empty() ? nullptr : &t[3 * i], r.empty() ? nullptr : &r[4 * i], s.empty() ? nullptr : &s[3 * i]);
    return out;
  }

  // Assimp's GetNodeTransform: the matrix (column-major in the file), or T * R * S from the parts given.
  aiMatrix4x4 transform(const Json& n) const {
    aiMatrix4x4 matrix;
    auto vec = [&](const char* key, size_t len) {
      const Json& a = n[key];
      if (!a.is_array() || a.size() != len) fail(ErrorKind::kInput, m_path + ": a node's " + key + " is not " + std::to_string(len) + " numbers");
      std::vector<float> v(len);
      for (size_t k = 0; k < len; ++k) v[k] = number(a[k]);
      return v;
    };
    if (n.contains("matrix")) {
      const std::vector<float> v = vec("matrix", 16);
      ai_real* o = &matrix.a1;  // row-major a1..a4, b1..b4, ...: element (row r, column c) = v[4 c + r]
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) o[4 * r + c] = v[size_t(4 * c + r)];
      return matrix;
    }
    const std::vector<float> t = n.contains("translation") ? vec("translation", 3) : std::vector<float>();
    const std::vector<float> r = n.contains("rotation") ? vec("rotation", 4) : std::vector<float>();
    const std::vector<float> sc = n.contains("scale") ? vec("scale", 3) : std::vector<float>();
    return trs_matrix(t.empty() ? nullptr : t.data(), r.empty() ? nullptr : r.data(), sc.empty() ? nullptr : sc.data());
  }

  // A primitive's arrays, decoded once however many nodes or instances place it.
  struct Decoded {
    size_t nv = 0;
    Floats positions, normals, colors;  // (read as Assimp's vectors: three and four floats)
    std::vector<aiVector3D> uvs;
    Indices triangles;
    size_t points = 0, lines = 0;  // points and lines: counted, not voxelized
  };
  Decoded decode(const Json& prim) {
    Decoded d;
    if (!prim.is_object() || !prim.contains("attributes") || !prim["attributes"].is_object())
      fail(ErrorKind::kInput, m_path + ": a primitive without attributes");
    const Json& at = prim["attributes"];
    if (prim.contains("extensions") && prim["extensions"].is_object() &&
        prim["extensions"].contains("KHR_draco_mesh_compression"))
      fail(ErrorKind::kInput, m_path + ": Draco-compressed primitives are read by Assimp (--loader auto or assimp)");
    if (!at.contains("POSITION")) return d;  // nothing to place
    d.positions = floats(at["POSITION"], 3, "POSITION");
    const size_t nv = d.nv = d.positions.size() / 3;
    const int64_t mode = prim.contains("mode") && prim["mode"].is_number_integer() ? prim["mode"].get<int64_t>() : 4;
    if (mode < 0 || mode > 6) fail(ErrorKind::kInput, m_path + ": a primitive of mode " + std::to_string(mode) + " (glTF has 0 to 6)");
    Indices idx = prim.contains("indices") ? index_accessor(prim["indices"]) : Indices();
    const bool indexed = prim.contains("indices");
    const size_t count = indexed ? idx.size() : nv;
    auto at_ = [&](size_t k) { return indexed ? idx[k] : uint32_t(k); };
    Indices& tris = d.triangles;
    if (mode == 4) {
      if (count % 3) m_out.warnings.push_back("a triangle primitive's index count is not a multiple of 3 (the rest dropped)");
      if (indexed) {
        idx.resize(count / 3 * 3);
        tris = std::move(idx);
      } else {
        tris.resize(count / 3 * 3);
        for (size_t k = 0; k < tris.size(); ++k) tris[k] = uint32_t(k);
      }
    } else if (mode == 5 && count >= 3) {  // strip: odd triangles swap their first two (glTF's winding)
      for (size_t k = 0; k + 2 < count; ++k) {
        if ((k + 1) % 2 == 0) tris.insert(tris.end(), {at_(k + 1), at_(k), at_(k + 2)});
        else tris.insert(tris.end(), {at_(k), at_(k + 1), at_(k + 2)});
      }
    } else if (mode == 6 && count >= 3) {  // fan
      for (size_t k = 1; k + 1 < count; ++k) tris.insert(tris.end(), {at_(0), at_(k), at_(k + 1)});
    } else if (mode == 0) {
      d.points = count;
    } else if (mode >= 1 && mode <= 3) {  // lines, loop, strip: as many segments as Assimp makes faces
      d.lines = mode == 1 ? count / 2 : mode == 2 ? count : (count > 0 ? count - 1 : 0);
    }
    if (tris.empty()) return d;
    auto same_count = [&](const Floats& a, int comps, const char* what) {
      if (a.size() / size_t(comps) != nv)
        fail(ErrorKind::kInput, m_path + ": a primitive's " + what + " and POSITION counts differ");
    };
    if (at.contains("NORMAL")) {
      d.normals = floats(at["NORMAL"], 3, "NORMAL");
      same_count(d.normals, 3, "NORMAL");
    }
    // The first texture coordinates; with textures, the set the material's base colour texture
    // samples, moved by its KHR_texture_transform. v down in glTF, up in the Mesh (as Assimp flips it).
    UvChoice uv;
    if (m_textures && !m_uv.empty())
      uv = m_uv[prim.contains("material")
                    ? size_t(m_material_number[index(prim["material"], member("materials"), "material")])
                    : m_default_material];
    const std::string uv_key = "TEXCOORD_" + std::to_string(uv.set);
    if (at.contains(uv_key)) {
      const Floats a = floats(at[uv_key], 2, uv_key.c_str());
      same_count(a, 2, uv_key.c_str());
      d.uvs.resize(nv);
      // KHR_texture_transform: offset + rotation * scale, as the extension's example reads it (rotated
      // counter-clockwise in its picture: u' = c su u + s sv v, v' = -s su u + c sv v, then the offset).
      const float c = std::cos(uv.rotation), s = std::sin(uv.rotation);
      for (size_t v = 0; v < nv; ++v) {
        float x = a[2 * v], y = a[2 * v + 1];
        if (uv.transform) {
          const float sx = uv.scale[0] * x, sy = uv.scale[1] * y;
          x = c * sx + s * sy + uv.offset[0];
          y = -s * sx + c * sy + uv.offset[1];
        }
        d.uvs[v] = aiVector3D(x, 1 - y, 0);
      }
    }
    if (at.contains("COLOR_0")) {
      d.colors = floats(at["COLOR_0"], 4, "COLOR_0", true);
      same_count(d.colors, 4, "COLOR_0");
    }
    return d;
  }

  void primitive(const Json& prim, uint32_t mesh_index, const aiMatrix4x4& m) {
    auto it = m_decoded.find(&prim);
    if (it == m_decoded.end()) it = m_decoded.emplace(&prim, decode(prim)).first;
    const Decoded& d = it->second;
    if (d.points) {  // (as the Assimp path counts a point mesh: its points and its vertices)
      m_out.non_triangle_primitives += d.points;
      m_out.points += d.nv;
    }
    m_out.non_triangle_primitives += d.lines;
    if (d.triangles.empty()) return;
    // Instances (nodes or EXT_mesh_gpu_instancing) multiply what a small file holds: the whole Mesh
    // (about 24 bytes a vertex with its normal, 20 a triangle) must stay under half the memory, and
    // its vertices under 2^32.
    m_vertices += d.nv;
    m_triangles += d.triangles.size() / 3;
    static const uint64_t kBudget = [] {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 2 : uint64_t(8) << 30;
    }();
    if (m_vertices >= (uint64_t(1) << 32) || 24 * m_vertices + 20 * m_triangles > kBudget)
      fail(ErrorKind::kInput, m_path + ": the scene expands to " + std::to_string(m_triangles) + "+ triangles and " +
                                  std::to_string(m_vertices) + " vertices, more than this machine's memory holds");
    static_assert(sizeof(aiVector3D) == 3 * sizeof(float) && sizeof(aiColor4D) == 4 * sizeof(float), "packed vectors");
    MeshPiece piece;
    piece.positions = reinterpret_cast<const aiVector3D*>(d.positions.data());
    piece.num_vertices = uint32_t(d.nv);
    piece.normals = d.normals.empty() ? nullptr : reinterpret_cast<const aiVector3D*>(d.normals.data());
    piece.uvs = d.uvs.empty() ? nullptr : d.uvs.data();
    piece.colors = d.colors.empty() ? nullptr : reinterpret_cast<const aiColor4D*>(d.colors.data());
    piece.triangles = d.triangles.data();
    piece.num_triangles = d.triangles.size() / 3;
    piece.mesh_index = mesh_index;
    piece.material_index = prim.contains("material")
                               ? uint32_t(m_material_number[index(prim["material"], member("materials"), "material")])
                               : m_default_material;
    piece.material_color = m_out.mesh.material_colors[piece.material_index];
    m_appender->append(piece, m);
  }

  std::string m_path;
  MeshLoadResult& m_out;
  GltfText m_text;
  Json m_j;
  std::vector<std::string> m_owned;
  std::vector<std::unique_ptr<MappedFile>> m_maps;
  std::vector<Buffer> m_buffers;
  std::vector<int64_t> m_mesh_number, m_material_number;  // (-1: not reached)
  std::vector<size_t> m_meshes_reached, m_materials_reached, m_mesh_offset;
  std::vector<uint8_t> m_node_reached;
  uint32_t m_default_material = 0;
  bool m_textures = false;
  std::vector<UvChoice> m_uv;  // per material number (with textures)
  uint64_t m_visits = 0, m_vertices = 0, m_triangles = 0;
  std::map<const Json*, Decoded> m_decoded;
  MeshAppender* m_appender = nullptr;
};

}  // namespace

bool gltf_format(const std::string& path) {
  const std::string e = lower_extension(path);
  return e == "gltf" || e == "glb";
}

// The asset's version string ("2.0"), found without parsing the whole JSON (a .gltf may embed large
// buffers): the first string after "version" after "asset"; empty when there is none.
static std::string_view asset_version(std::string_view json) {
  const size_t asset = json.find("\"asset\"");
  if (asset == std::string_view::npos) return {};
  const size_t key = json.find("\"version\"", asset);
  if (key == std::string_view::npos || key - asset > 4096) return {};
  const size_t open = json.find('"', key + 9), close = open == std::string_view::npos ? open : json.find('"', open + 1);
  if (close == std::string_view::npos || close - open > 32) return {};
  return json.substr(open + 1, close - open - 1);
}

bool gltf_native(const std::string& path) {
  if (!gltf_format(path)) return false;
  try {
    if (lower_extension(path) == "glb") {  // binary glTF 1.0 (version 1 in the header) goes to Assimp
      const MappedFile f(path);
      uint32_t h[2] = {};
      if (f.size() >= sizeof h) std::memcpy(h, f.data(), sizeof h);
      if (h[0] == kGlbMagic && h[1] == 1) return false;
    }
    const GltfText g = open_gltf(path);
    const std::string_view version = asset_version(g.json);
    if (!version.empty() && version[0] == '1') return false;  // glTF 1.0: Assimp reads it
    return g.json.find("KHR_draco_mesh_compression") == std::string_view::npos;  // (Draco goes to Assimp)
  } catch (const Error&) {
    return true;  // (the native reader reports the problem)
  }
}

void read_gltf(const std::string& path, MeshLoadResult& out, bool textures) { GltfReader(path, out, textures).read(); }

// What Assimp 5.2 reads wrongly and without an error in a glTF it is given: it copies an accessor's
// bytes into its float vectors as they are, so positions, normals and texture coordinates stored as
// integers (KHR_mesh_quantization; core glTF also allows normalized integer texture coordinates) come
// out as garbage; buffers compressed with EXT_meshopt_compression are read as stored; a node's
// EXT_mesh_gpu_instancing instances are left out (its mesh is read once, at the node). A file whose
// geometry would be wrong is refused, naming what it uses; integer normals and texture coordinates
// are dropped with a warning (face normals and no texture coordinates instead).
GltfAssimpLimits gltf_assimp_limits(const std::string& path, std::vector<std::string>& warnings) {
  GltfAssimpLimits s;
  if (!gltf_format(path)) return s;
  Json j;
  try {
    const GltfText g = open_gltf(path);
    j = Json::parse(g.json.begin(), g.json.end(), nullptr, false);
  } catch (const Error&) {
    return s;  // (Assimp says what is wrong with the file)
  }
  if (!j.is_object()) return s;
  const std::string assimp = "Assimp " + std::to_string(aiGetVersionMajor()) + "." + std::to_string(aiGetVersionMinor());
  const auto required = j.find("extensionsRequired");
  if (required != j.end() && required->is_array() &&
      std::find(required->begin(), required->end(), "EXT_meshopt_compression") != required->end())
    fail(ErrorKind::kInput, path + ": its buffers are compressed (EXT_meshopt_compression), which " + assimp +
                                " does not decode; re-export it without that compression");
  size_t instanced = 0;
  if (const auto nodes = j.find("nodes"); nodes != j.end() && nodes->is_array())
    for (const Json& n : *nodes)
      if (n.is_object() && n.contains("extensions") && n["extensions"].is_object() &&
          n["extensions"].contains("EXT_mesh_gpu_instancing"))
        ++instanced;
  if (instanced)
    fail(ErrorKind::kInput, path + ": " + std::to_string(instanced) +
                                " node(s) instance their mesh (EXT_mesh_gpu_instancing), which " + assimp +
                                " reads as one copy at the node; re-export it with the instances expanded");
  const auto accessors = j.find("accessors");
  // The component type of accessor `a`, or float where the file does not say.
  auto component = [&](const Json& a) -> int64_t {
    if (!a.is_number_unsigned() || accessors == j.end() || !accessors->is_array() || a.get<uint64_t>() >= accessors->size())
      return kFloat;
    const Json& acc = (*accessors)[a.get<size_t>()];
    return acc.is_object() && acc.contains("componentType") && acc["componentType"].is_number_integer()
               ? acc["componentType"].get<int64_t>()
               : kFloat;
  };
  if (const auto meshes = j.find("meshes"); meshes != j.end() && meshes->is_array())
    for (const Json& m : *meshes) {
      if (!m.is_object() || !m.contains("primitives") || !m["primitives"].is_array()) continue;
      for (const Json& prim : m["primitives"]) {
        if (!prim.is_object() || !prim.contains("attributes") || !prim["attributes"].is_object()) continue;
        const Json& at = prim["attributes"];
        if (at.contains("POSITION") && component(at["POSITION"]) != kFloat)
          fail(ErrorKind::kInput, path + ": its positions are stored as " + integer_name(component(at["POSITION"])) +
                                      " (KHR_mesh_quantization), which " + assimp +
                                      " reads as garbage; dequantize it first (e.g. gltf-transform dequantize)");
        if (at.contains("NORMAL") && component(at["NORMAL"]) != kFloat) s.drop_normals = true;
        if (at.contains("TEXCOORD_0") && component(at["TEXCOORD_0"]) != kFloat) s.drop_uvs = true;
      }
    }
  if (s.drop_normals)
    warnings.push_back("normals stored as integers (KHR_mesh_quantization) are not decoded by " + assimp +
                       ": dropped (face normals are used)");
  if (s.drop_uvs) warnings.push_back("texture coordinates stored as integers are not decoded by " + assimp + ": dropped");
  return s;
}

}  // namespace voxtile
