// Readers of voxtile's grid outputs, for `voxtile compare`.
#include "io/grid_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "io/binvox.h"
#include "io/dense.h"
#include "io/files.h"
#include "io/mesh_reader.h"
#include "io/ply.h"
#include "io/vdb.h"
#include "io/vox.h"
#include "io/zip.h"

namespace voxtile {
namespace {

// ---- .npy ------------------------------------------------------------------------------------

struct NpyArray {
  std::string descr;
  std::vector<uint64_t> shape;
  const unsigned char* data = nullptr;
  size_t bytes = 0;
};

NpyArray parse_npy(const std::string& path, const unsigned char* p, size_t n) {
  if (n < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) fail(ErrorKind::kInput, path + ": not a .npy array");
  const int major = p[6];
  size_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = size_t(p[8]) | size_t(p[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) fail(ErrorKind::kInput, path + ": truncated .npy header");
    hlen = size_t(p[8]) | size_t(p[9]) << 8 | size_t(p[10]) << 16 | size_t(p[11]) << 24;
    start = 12;
  } else {
    fail(ErrorKind::kInput, path + ": unsupported .npy version " + std::to_string(major));
  }
  if (start + hlen > n) fail(ErrorKind::kInput, path + ": truncated .npy header");
  const std::string h(reinterpret_cast<const char*>(p + start), hlen);
  NpyArray a;
  const size_t d = h.find("'descr':");
  const size_t q1 = d == std::string::npos ? d : h.find('\'', d + 8);
  const size_t q2 = q1 == std::string::npos ? q1 : h.find('\'', q1 + 1);
  if (q2 == std::string::npos) fail(ErrorKind::kInput, path + ": .npy header without descr");
  a.descr = h.substr(q1 + 1, q2 - q1 - 1);
  if (h.find("'fortran_order': True") != std::string::npos)
    fail(ErrorKind::kInput, path + ": Fortran-order .npy arrays are not supported");
  const size_t sh = h.find("'shape':");
  const size_t open = sh == std::string::npos ? sh : h.find('(', sh);
  const size_t close = open == std::string::npos ? open : h.find(')', open);
  if (close == std::string::npos) fail(ErrorKind::kInput, path + ": .npy header without shape");
  std::stringstream ss(h.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t b = item.find_first_not_of(" "), e = item.find_last_not_of(" ");
    if (b == std::string::npos) continue;
    uint64_t v = 0;
    const auto r = std::from_chars(item.data() + b, item.data() + e + 1, v);
    if (r.ec != std::errc() || r.ptr != item.data() + e + 1)
      fail(ErrorKind::kInput, path + ": .npy shape holds \"" + item.substr(b, e + 1 - b) + "\", not a size");
    a.shape.push_back(v);
  }
  size_t elem = a.descr.size() >= 2 ? size_t(std::atoi(a.descr.c_str() + 2)) : 0;
  uint64_t count = 1;
  for (uint64_t s : a.shape) {
    if (s && count > (uint64_t(1) << 62) / s) fail(ErrorKind::kInput, path + ": .npy shape larger than any file");
    count *= s;
  }
  if (elem > 16 || (count && count > (uint64_t(1) << 62) / 16)) fail(ErrorKind::kInput, path + ": .npy shape larger than any file");
  a.data = p + start + hlen;
  a.bytes = n - start - hlen;
  if (elem == 0 || a.bytes < count * elem)
    fail(ErrorKind::kInput, path + ": truncated .npy data (" + std::to_string(a.bytes) + " of " +
                                std::to_string(count * elem) + " bytes)");
  a.bytes = count * elem;
  return a;
}

ValueType dense_type(const std::string& path, const std::string& descr, int components) {
  if (components == 3) {
    if (descr == "<f4") return ValueType::kVec3f;
  } else if (components == 1) {
    if (descr == "|u1" || descr == "|b1") return ValueType::kNone;
    if (descr == "<i4") return ValueType::kInt32;
    if (descr == "<f4") return ValueType::kFloat32;
  }
  fail(ErrorKind::kInput, path + ": unsupported dense array type " + descr + " x " + std::to_string(components) +
                              " (expected uint8, int32 or float32 grids, or float32 x 3)");
}

GridFile read_dense(const std::string& path, const std::string& format, const unsigned char* data, const Int3& dims,
                    ValueType type, GridSpec spec, int32_t empty_int = kEmptyIntUnknown) {
  GridFile f;
  f.path = path;
  f.format = format;
  spec.dims = dims;
  SparseGrid g = grid_from_dense(data, dims, type, empty_int);
  g.spec = spec;
  g.name = "voxels";
  f.grids.push_back(std::move(g));
  return f;
}

// ---- .raw + .json -------------------------------------------------------------------------------

// The .raw sidecar, parsed; a missing or mistyped field is an input error naming the file.
nlohmann::json read_sidecar(const std::string& json_path) {
  try {
    return nlohmann::json::parse(read_input_file(json_path));
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::kInput, json_path + ": not JSON (" + std::string(e.what()) + ")");
  }
}
std::vector<double> json_numbers(const nlohmann::json& json, const std::string& key, size_t n, const std::string& path) {
  const auto it = json.find(key);
  std::vector<double> out;
  if (it != json.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number()) out.push_back(v.get<double>());
  if (out.size() != n) fail(ErrorKind::kInput, path + ": \"" + key + "\" needs " + std::to_string(n) + " numbers");
  return out;
}

// ---- .ply voxel centres -------------------------------------------------------------------------

GridFile read_ply(const std::string& path) {
  const std::string bytes = read_input_file(path);
  const PlyHeader h = parse_ply_header(bytes, path);
  GridSpec spec;
  bool have_dims = false;
  for (const std::string& c : h.comments) {
    std::istringstream ls(c);
    std::string key;
    ls >> key;
    if (key == "voxtile_dims") have_dims = bool(ls >> spec.dims.x >> spec.dims.y >> spec.dims.z);
    if (key == "voxtile_voxel_size") ls >> spec.voxel_size.x >> spec.voxel_size.y >> spec.voxel_size.z;
    if (key == "voxtile_origin") ls >> spec.origin.x >> spec.origin.y >> spec.origin.z;
  }
  if (h.elements.size() != 1 || h.elements[0].name != "vertex")
    fail(ErrorKind::kInput, path + ": not a voxtile voxel PLY (one vertex element expected)");
  if (h.format != PlyHeader::kLittle) fail(ErrorKind::kInput, path + ": only binary little-endian voxel PLY files are compared");
  if (!have_dims) fail(ErrorKind::kInput, path + ": no voxtile_dims comment (not a voxtile voxel PLY)");
  const uint64_t count = h.elements[0].count;
  const std::vector<PlyProperty>& props = h.elements[0].props;
  if (props.size() < 3 || props[0].name != "x" || props[1].name != "y" || props[2].name != "z")
    fail(ErrorKind::kInput, path + ": the first properties must be float x, y, z");
  size_t record = 0;
  std::vector<size_t> offset;
  for (const PlyProperty& p : props) {
    offset.push_back(record);
    const bool ok = !p.list && (p.type == PlyType::kF32 || p.type == PlyType::kI32 || p.type == PlyType::kU8);
    if (!ok) fail(ErrorKind::kInput, path + ": unsupported property " + p.name);
    record += size_t(ply_type_size(p.type));
  }
  const size_t data = h.data_start;
  if ((bytes.size() - data) / record < count)
    fail(ErrorKind::kInput, path + ": truncated (" + std::to_string(count) + " points announced)");
  // Grids: each scalar property, or a float triple (nx ny nz, or <name>_x _y _z).
  struct Target {
    std::string name;
    ValueType type;
    size_t prop;  // first property
  };
  std::vector<Target> targets;
  for (size_t p = 3; p < props.size(); ++p) {
    const std::string& n = props[p].name;
    // uchar red green blue: the viewers' copy of the colour whose exact mean (color_x...) follows.
    if (n == "red" && p + 5 < props.size() && props[p + 1].name == "green" && props[p + 2].name == "blue" &&
        props[p + 3].name == "color_x") {
      p += 2;
      continue;
    }
    const bool triple = p + 2 < props.size() &&
                        ((n == "nx" && props[p + 1].name == "ny" && props[p + 2].name == "nz") ||
                         (n.size() > 2 && n.compare(n.size() - 2, 2, "_x") == 0 &&
                          props[p + 1].name == n.substr(0, n.size() - 2) + "_y" &&
                          props[p + 2].name == n.substr(0, n.size() - 2) + "_z"));
    if (triple) {
      targets.push_back({n == "nx" ? "normal" : n.substr(0, n.size() - 2), ValueType::kVec3f, p});
      p += 2;
    } else {
      const ValueType t = props[p].type == PlyType::kU8    ? ValueType::kNone
                          : props[p].type == PlyType::kI32 ? ValueType::kInt32
                                                           : ValueType::kFloat32;
      targets.push_back({n, t, p});
    }
  }
  if (targets.empty()) targets.push_back({"voxels", ValueType::kNone, 0});
  GridFile f;
  f.path = path;
  f.format = "ply";
  f.has_transform = true;
  for (const Target& t : targets) {
    SparseGridBuilder b(spec, t.type, t.name == "value" ? "voxels" : t.name, path);
    for (uint64_t n = 0; n < count; ++n) {
      const char* r = bytes.data() + data + n * record;
      float xyz[3];
      std::memcpy(xyz, r, 12);
      const int32_t ijk[3] = {int32_t(std::lround((double(xyz[0]) - spec.origin.x) / spec.voxel_size.x - 0.5)),
                              int32_t(std::lround((double(xyz[1]) - spec.origin.y) / spec.voxel_size.y - 0.5)),
                              int32_t(std::lround((double(xyz[2]) - spec.origin.z) / spec.voxel_size.z - 0.5))};
      uint32_t v[3] = {0, 0, 0};
      for (int c = 0; c < value_channels(t.type); ++c) std::memcpy(&v[c], r + offset[t.prop + c], 4);
      b.add(ijk[0], ijk[1], ijk[2], v);
    }
    f.grids.push_back(b.build());
  }
  return f;
}

// ---- .npz (stored ZIP) ----------------------------------------------------------------------------

// The arrays of an .npz (io/zip.h: stored or deflated entries, as numpy's savez and savez_compressed
// write them); deflated ones are inflated into `keep`, stored ones read in place.
std::map<std::string, NpyArray> read_npz_arrays(const std::string& path, const std::string& bytes,
                                                std::vector<std::unique_ptr<char[]>>& keep) {
  const zip::Reader archive(path, bytes.data(), bytes.size(), ".npz file");
  std::map<std::string, NpyArray> out;
  for (const zip::Entry& e : archive.entries()) {
    keep.emplace_back();
    const std::string_view data = archive.read(e, keep.back());
    const std::string key = e.name.size() > 4 ? e.name.substr(0, e.name.size() - 4) : e.name;
    out[key] = parse_npy(path + ":" + e.name, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  }
  return out;
}

GridFile read_npz(const std::string& path) {
  GridFile f;
  f.path = path;
  f.format = "npz";
  f.has_transform = true;
  f.has_buckets = true;
  const std::string bytes = read_input_file(path);
  std::vector<std::unique_ptr<char[]>> keep;
  const auto arrays = read_npz_arrays(path, bytes, keep);
  auto need = [&](const char* name, const char* descr) -> const NpyArray& {
    auto it = arrays.find(name);
    if (it == arrays.end()) fail(ErrorKind::kInput, path + ": no array " + name + " (not a voxtile bucket file)");
    if (it->second.descr != descr) fail(ErrorKind::kInput, path + ": array " + name + " is " + it->second.descr);
    return it->second;
  };
  Buckets& b = f.buckets;
  auto copy = [](const NpyArray& a, auto& dst) {
    dst.resize(a.bytes / sizeof(dst[0]));
    std::memcpy(dst.data(), a.data, a.bytes);
  };
  const NpyArray& dims = need("dims", "<i4");
  const NpyArray& vs = need("voxel_size", "<f8");
  const NpyArray& origin = need("origin", "<f8");
  std::memcpy(&b.spec.dims, dims.data, 12);
  std::memcpy(&b.spec.voxel_size, vs.data, 24);
  std::memcpy(&b.spec.origin, origin.data, 24);
  copy(need("ijk", "<i4"), b.ijk);
  copy(need("offsets", "<i8"), b.offsets);
  copy(need("triangle", "<i4"), b.triangle);
  if (arrays.count("bary")) { copy(need("bary", "<f4"), b.bary); b.attrs |= kAttrBary; }
  if (arrays.count("normal")) { copy(need("normal", "<f4"), b.normal); b.attrs |= kAttrNormal; }
  if (arrays.count("uv")) { copy(need("uv", "<f4"), b.uv); b.attrs |= kAttrUv; }
  if (arrays.count("material")) { copy(need("material", "<i4"), b.material); b.attrs |= kAttrMaterial; }
  if (b.offsets.size() != b.num_voxels() + 1 || b.offsets.back() != int64_t(b.num_fragments()))
    fail(ErrorKind::kInput, path + ": offsets do not match ijk and triangle");
  for (size_t v = 0; v < b.num_voxels(); ++v)
    if (b.offsets[v] > b.offsets[v + 1]) fail(ErrorKind::kInput, path + ": offsets are not ascending");
  for (size_t v = 0; v < b.num_voxels(); ++v)
    for (int c = 0; c < 3; ++c)
      if (b.ijk[3 * v + c] < 0 || b.ijk[3 * v + c] >= component(b.spec.dims, c))
        fail(ErrorKind::kInput, path + ": a voxel lies outside the grid's dims");
  try {
    f.grids.push_back(b.count_grid());
  } catch (const Error& e) {  // "buckets: the same voxel appears twice"
    fail(ErrorKind::kInput, path + ": " + e.what());
  }
  return f;
}

}  // namespace

SparseGrid grid_from_dense(const unsigned char* data, const Int3& dims, ValueType type, int32_t empty_int) {
  GridSpec spec;
  spec.dims = dims;
  SparseGridBuilder b(spec, type, "voxels", "dense array");
  const int ch = std::max(1, value_channels(type));
  const size_t vb = type == ValueType::kNone ? 1 : 4 * size_t(ch);
  const uint64_t count = uint64_t(dims.x) * uint64_t(dims.y) * uint64_t(dims.z);
  if (type == ValueType::kInt32 && empty_int == kEmptyIntUnknown) {
    // Which value marks empty voxels: -1 if any voxel holds it (a triangle id grid), else 0.
    empty_int = 0;
    for (uint64_t v = 0; v < count; ++v) {
      int32_t x;
      std::memcpy(&x, data + v * 4, 4);
      if (x == -1) {
        empty_int = -1;
        break;
      }
    }
  }
  size_t n = 0;
  for (int32_t i = 0; i < dims.x; ++i)
    for (int32_t j = 0; j < dims.y; ++j)
      for (int32_t k = 0; k < dims.z; ++k, ++n) {
        const unsigned char* p = data + n * vb;
        uint32_t v[3] = {0, 0, 0};
        bool active = false;
        if (type == ValueType::kNone) {
          active = *p != 0;
        } else {
          std::memcpy(v, p, vb);
          if (type == ValueType::kInt32) {
            active = int32_t(v[0]) != empty_int;
          } else {
            for (int c = 0; c < ch; ++c) active = active || !std::isnan(bits_float(v[c]));
          }
        }
        if (active) b.add(i, j, k, v);
      }
  return b.build();
}

GridFile read_grid_file(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == "vdb") {
    GridFile f;
    f.path = path;
    f.format = "vdb";
    f.has_transform = true;
    f.grids = read_vdb_grids(path);
    if (f.grids.empty()) fail(ErrorKind::kInput, path + ": no mask, bool, int32, float or vec3s grid");
    return f;
  }
  if (ext == "ply") return read_ply(path);
  if (ext == "npz") return read_npz(path);
  if (ext == "binvox" || ext == "vox") {
    GridFile f;
    f.path = path;
    f.format = ext;
    f.has_transform = ext == "binvox";  // .vox keeps no voxel size or origin
    f.cube_dims = ext == "binvox";
    f.grids.push_back(ext == "binvox" ? read_binvox(path) : read_vox(path));
    return f;
  }
  if (ext == "npy") {
    const std::string bytes = read_input_file(path);
    const NpyArray a = parse_npy(path, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
    if (a.shape.size() != 3 && !(a.shape.size() == 4 && a.shape[3] == 3))
      fail(ErrorKind::kInput, path + ": expected a 3D array (X, Y, Z) or (X, Y, Z, 3)");
    for (int c = 0; c < 3; ++c)
      if (a.shape[c] < 1 || a.shape[c] > uint64_t(kMaxGridDim)) fail(ErrorKind::kInput, path + ": grid dimensions out of range");
    const ValueType t = dense_type(path, a.descr, a.shape.size() == 4 ? 3 : 1);
    return read_dense(path, "npy", a.data, {int32_t(a.shape[0]), int32_t(a.shape[1]), int32_t(a.shape[2])}, t, GridSpec{});
  }
  if (ext == "raw") {
    const std::string json_path = raw_sidecar_path(path);
    const nlohmann::json json = read_sidecar(json_path);
    const std::vector<double> d = json_numbers(json, "dims", 3, json_path), vs = json_numbers(json, "voxel_size", 3, json_path),
                              o = json_numbers(json, "origin", 3, json_path);
    for (double x : d)
      if (!(x >= 1 && x <= kMaxGridDim)) fail(ErrorKind::kInput, json_path + ": grid dimensions out of range");
    if (!json.contains("dtype") || !json["dtype"].is_string()) fail(ErrorKind::kInput, json_path + ": no \"dtype\"");
    const std::string dtype = json["dtype"].get<std::string>();
    int components = 1;
    if (json.contains("components")) {
      if (!json["components"].is_number_integer()) fail(ErrorKind::kInput, json_path + ": \"components\" must be an integer");
      components = json["components"].get<int>();
    }
    const std::string descr = dtype == "uint8" ? "|u1" : dtype == "int32" ? "<i4" : dtype == "float32" ? "<f4" : dtype;
    const ValueType t = dense_type(json_path, descr, components);
    const std::string bytes = read_input_file(path);
    const Int3 dims{int32_t(d[0]), int32_t(d[1]), int32_t(d[2])};
    const size_t need = size_t(dims.x) * dims.y * dims.z * (t == ValueType::kNone ? 1 : 4 * size_t(components));
    if (bytes.size() != need)
      fail(ErrorKind::kInput, path + ": " + std::to_string(bytes.size()) + " bytes, the sidecar announces " + std::to_string(need));
    GridSpec spec;
    spec.voxel_size = {vs[0], vs[1], vs[2]};
    spec.origin = {o[0], o[1], o[2]};
    // The sidecar says which value marks empty int32 voxels (-1 for triangle ids); older ones do not.
    const int32_t empty = json.contains("empty") && json["empty"].is_number_integer() ? json["empty"].get<int32_t>()
                                                                                      : kEmptyIntUnknown;
    GridFile f = read_dense(path, "raw", reinterpret_cast<const unsigned char*>(bytes.data()), dims, t, spec, empty);
    f.has_transform = true;
    return f;
  }
  if (point_cloud_extension(path))
    fail(ErrorKind::kInput, path + ": a point cloud, not a grid ('voxtile points' bins points into a grid)");
  fail(ErrorKind::kInput, path + ": unknown grid format (expected .vdb, .ply, .npy, .raw, .npz, .binvox or .vox)");
}

}  // namespace voxtile
