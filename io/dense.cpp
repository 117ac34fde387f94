// Dense writers (.npy, .raw + .json), streamed one x-plane at a time.
#include "io/dense.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/json_text.h"

namespace voxtile {
namespace {

const char* npy_descr(ValueType t) {
  switch (t) {
    case ValueType::kNone: return "|u1";
    case ValueType::kInt32: return "<i4";
    case ValueType::kFloat32: return "<f4";
    case ValueType::kVec3f: return "<f4";
  }
  return "|u1";
}

const char* dtype_name(ValueType t) {
  switch (t) {
    case ValueType::kNone: return "uint8";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kVec3f: return "float32";
  }
  return "uint8";
}

// The inactive voxels of one x-plane of a level set (NaN until now): -background inside and
// +background outside, each z-column taking the sign of its nearest active voxel below (above
// for the voxels before the first one); a column without active voxels is outside.
void fill_level_set_plane(unsigned char* plane, size_t ny, size_t nz, float background) {
  float* v = reinterpret_cast<float*>(plane);
  for (size_t y = 0; y < ny; ++y) {
    float* col = v + y * nz;
    size_t first = 0;
    while (first < nz && std::isnan(col[first])) ++first;
    float sign = first < nz && std::signbit(col[first]) ? -1.0f : 1.0f;
    for (size_t z = 0; z < nz; ++z) {
      if (std::isnan(col[z])) col[z] = sign * background;
      else sign = std::signbit(col[z]) ? -1.0f : 1.0f;
    }
  }
}

void write_planes(const SparseGrid& g, AtomicFile& out) {
  const size_t vb = dense_voxel_bytes(g.value_type);
  const size_t ny = size_t(g.spec.dims.y), nz = size_t(g.spec.dims.z);
  std::vector<unsigned char> plane(ny * nz * vb);
  size_t b0 = 0;  // first brick of the current x-slab
  // Empty voxels are 0, except where 0 is a value: NaN in float grids, -1 in triangle id grids.
  std::vector<unsigned char> empty_plane(plane.size(), 0);
  if (g.value_type == ValueType::kFloat32 || g.value_type == ValueType::kVec3f) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 0; i < plane.size() / 4; ++i) std::memcpy(empty_plane.data() + 4 * i, &nan, 4);
  } else if (g.value_type == ValueType::kInt32) {
    const int32_t empty = dense_empty_int(g);
    for (size_t i = 0; i < plane.size() / 4; ++i) std::memcpy(empty_plane.data() + 4 * i, &empty, 4);
  }
  for (int32_t x = 0; x < g.spec.dims.x; ++x) {
    plane = empty_plane;
    const int32_t bx = x >> 3, lx = x & 7;
    while (b0 < g.num_bricks() && brick_coord(g.keys[b0]).x < bx) ++b0;
    for (size_t b = b0; b < g.num_bricks(); ++b) {
      const Int3 c = brick_coord(g.keys[b]);
      if (c.x != bx) break;
      // The slab's voxels are mask word lx (offsets lx * 64 + ly * 8 + lz), their values in that order.
      uint64_t at = g.value_type == ValueType::kNone ? 0 : g.value_index(b, lx * 64);
      for (uint64_t bits = g.masks[b].w[lx]; bits; bits &= bits - 1, ++at) {
        const int ly = __builtin_ctzll(bits) >> 3, lz = __builtin_ctzll(bits) & 7;
        const size_t y = size_t(c.y) * 8 + size_t(ly), z = size_t(c.z) * 8 + size_t(lz);
        if (y >= ny || z >= nz) continue;
        unsigned char* dst = plane.data() + (y * nz + z) * vb;
        if (g.value_type == ValueType::kNone)
          *dst = 1;
        else if (g.value_type == ValueType::kInt32)
          std::memcpy(dst, &g.ivalues[at], 4);
        else if (g.value_type == ValueType::kFloat32)
          std::memcpy(dst, &g.fvalues[at], 4);
        else
          std::memcpy(dst, &g.fvalues[at * 3], 12);
      }
    }
    if (g.level_set) fill_level_set_plane(plane.data(), ny, nz, g.background);
    out.write(plane.data(), plane.size());
  }
}

}  // namespace

bool holds_triangle_ids(const SparseGrid& g) {
  return g.value_type == ValueType::kInt32 && (g.name == "id" || g.name.rfind("id_", 0) == 0);
}
int32_t dense_empty_int(const SparseGrid& g) { return holds_triangle_ids(g) ? -1 : 0; }

size_t dense_voxel_bytes(ValueType t) { return t == ValueType::kNone ? 1 : (t == ValueType::kVec3f ? 12 : 4); }

void check_dense_budget(const Int3& dims, ValueType type, const std::string& path, const DenseOptions& opt) {
  const unsigned __int128 bytes =
      (unsigned __int128)uint64_t(dims.x) * uint64_t(dims.y) * uint64_t(dims.z) * dense_voxel_bytes(type);
  if (!opt.force && bytes > opt.limit_bytes) {
    std::ostringstream s;
    s << path << ": a dense " << dims.x << "x" << dims.y << "x" << dims.z << " grid needs " << uint64_t(bytes)
      << " bytes, over the dense limit of " << opt.limit_bytes
      << " (use .vdb or .ply, raise --dense-limit, or pass --force)";
    fail(ErrorKind::kResource, s.str());
  }
}

void write_npy(const SparseGrid& g, const std::string& path, const DenseOptions& opt) {
  check_dense_budget(g.spec.dims, g.value_type, path, opt);
  std::ostringstream d;
  d << "{'descr': '" << npy_descr(g.value_type) << "', 'fortran_order': False, 'shape': (" << g.spec.dims.x << ", "
    << g.spec.dims.y << ", " << g.spec.dims.z << (g.value_type == ValueType::kVec3f ? ", 3" : "") << "), }";
  std::string dict = d.str();
  // Magic (6) + version (2) + header length (2) + dict, padded with spaces and '\n' to 64 bytes.
  const size_t total = ((10 + dict.size() + 1 + 63) / 64) * 64;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict += '\n';
  AtomicFile out(path);
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, 8);
  const unsigned char len[2] = {static_cast<unsigned char>(dict.size() & 0xff), static_cast<unsigned char>(dict.size() >> 8)};
  out.write(len, 2);
  out.write(dict.data(), dict.size());
  write_planes(g, out);
  out.commit();
}

std::string raw_sidecar_path(const std::string& raw_path) {
  const size_t slash = raw_path.rfind('/');
  const size_t dot = raw_path.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) return raw_path.substr(0, dot) + ".json";
  return raw_path + ".json";
}

void write_raw(const SparseGrid& g, const std::string& path, const DenseOptions& opt, const Metadata& meta) {
  check_dense_budget(g.spec.dims, g.value_type, path, opt);
  const std::string json_path = raw_sidecar_path(path);
  const GridSpec& s = g.spec;
  const size_t slash = path.rfind('/');
  nlohmann::ordered_json j;
  j["data"] = slash == std::string::npos ? path : path.substr(slash + 1);
  j["dims"] = {s.dims.x, s.dims.y, s.dims.z};
  j["dtype"] = dtype_name(g.value_type);
  j["components"] = std::max(1, value_channels(g.value_type));
  j["byte_order"] = "little";
  j["order"] = "C";
  j["index"] = "offset = ((i * dims[1] + j) * dims[2] + k) * components + c";
  j["voxel_size"] = {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z};
  j["origin"] = {s.origin.x, s.origin.y, s.origin.z};
  j["origin_is"] = "minimum corner of voxel (0,0,0)";
  j["active_voxels"] = g.active_voxels();
  if (g.level_set) j["level_set_background"] = g.background;  // every voxel holds a value
  else if (g.value_type == ValueType::kInt32) j["empty"] = dense_empty_int(g);
  else if (g.value_type != ValueType::kNone) j["empty"] = "NaN";
  else j["empty"] = 0;
  for (const auto& [key, value] : meta) j[key] = value;
  // One key per line, arrays on one line ("dims": [21, 30, 17]); nlohmann escapes and formats.
  std::string json = "{";
  for (auto it = j.begin(); it != j.end(); ++it) {
    json += (it == j.begin() ? "\n  " : ",\n  ") + json_text(nlohmann::json(it.key())) + ": ";
    if (!it->is_array()) {
      json += json_text(*it);
      continue;
    }
    json += "[";
    for (size_t i = 0; i < it->size(); ++i) json += (i ? ", " : "") + json_text((*it)[i]);
    json += "]";
  }
  json += "\n}\n";
  AtomicFile raw(path);
  AtomicFile side(json_path);
  write_planes(g, raw);
  side.write(json.data(), json.size());
  raw.commit();
  side.commit();
}

}  // namespace voxtile
