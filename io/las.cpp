// LAS reading (1.0-1.4, point formats 0-10) and writing (1.4, formats 6 and 7), from the ASPRS LAS
// 1.4 R15 specification. All multi-byte fields are little-endian, as on every host voxtile builds for.
#include "io/las.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/grid_set.h"

namespace voxtile {
namespace {

template <class T>
T get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void put(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

constexpr size_t kLegacyHeader = 227;  // LAS 1.0-1.2; 1.3 adds 8 bytes, 1.4 another 140
constexpr size_t kHeader14 = 375;
constexpr size_t kVlrHeader = 54;
constexpr size_t kExtraBytesDescriptor = 192;

// Minimum record length of each point format and where its RGB starts (-1: none).
struct PointFormat {
  int length;
  int rgb;
};
constexpr PointFormat kPointFormats[11] = {{20, -1}, {28, -1}, {26, 20}, {34, 28}, {57, -1}, {63, 28},
                                      {30, -1}, {36, 30}, {38, 30}, {59, -1}, {67, 30}};

std::string laz_message(const std::string& path) {
  return path + ": LAZ (compressed LAS) is not read; decompress it first, e.g. 'laszip -i " + path +
         " -o points.las' or 'pdal translate " + path + " points.las'";
}

struct LasHeader {
  int minor = 0;
  size_t header_size = 0, point_offset = 0, record_length = 0;
  int format = 0;
  uint64_t count = 0;
  uint32_t num_vlrs = 0;
  double scale[3], offset[3];
};

LasHeader parse_header(const char* d, size_t size, const std::string& path) {
  if (size < 4 || std::memcmp(d, "LASF", 4) != 0)
    fail(ErrorKind::kInput, path + ": not a LAS file (no LASF signature)");
  if (size < kLegacyHeader)
    fail(ErrorKind::kInput, path + ": truncated LAS header (" + std::to_string(size) + " bytes)");
  LasHeader h;
  const int major = uint8_t(d[24]);
  h.minor = uint8_t(d[25]);
  if (major != 1 || h.minor > 4)
    fail(ErrorKind::kInput, path + ": LAS version " + std::to_string(major) + "." + std::to_string(h.minor) +
                                " is not supported (1.0 to 1.4)");
  const int format_byte = uint8_t(d[104]);
  if (format_byte & 0xC0) fail(ErrorKind::kInput, laz_message(path));
  h.format = format_byte;
  if (h.format > 10) fail(ErrorKind::kInput, path + ": unknown LAS point format " + std::to_string(h.format));
  h.header_size = get<uint16_t>(d + 94);
  h.point_offset = get<uint32_t>(d + 96);
  h.num_vlrs = get<uint32_t>(d + 100);
  h.record_length = get<uint16_t>(d + 105);
  const size_t need = h.minor >= 4 ? kHeader14 : kLegacyHeader;
  if (h.header_size < need || h.header_size > size)
    fail(ErrorKind::kInput, path + ": LAS header size " + std::to_string(h.header_size) + " does not fit version 1." +
                                std::to_string(h.minor) + " and a file of " + std::to_string(size) + " bytes");
  if (h.point_offset < h.header_size || h.point_offset > size)
    fail(ErrorKind::kInput, path + ": offset to point data " + std::to_string(h.point_offset) + " is outside the file");
  if (int(h.record_length) < kPointFormats[h.format].length)
    fail(ErrorKind::kInput, path + ": point record length " + std::to_string(h.record_length) +
                                " is shorter than format " + std::to_string(h.format) + " needs (" +
                                std::to_string(kPointFormats[h.format].length) + ")");
  h.count = get<uint32_t>(d + 107);
  if (h.minor >= 4 && get<uint64_t>(d + 247) != 0) h.count = get<uint64_t>(d + 247);
  for (int a = 0; a < 3; ++a) {
    h.scale[a] = get<double>(d + 131 + 8 * a);
    h.offset[a] = get<double>(d + 155 + 8 * a);
    if (!std::isfinite(h.scale[a]) || h.scale[a] == 0.0 || !std::isfinite(h.offset[a]))
      fail(ErrorKind::kInput, path + ": LAS scale factors must be finite and non-zero, offsets finite");
  }
  // The count against what the file holds, before anything is allocated.
  const uint64_t room = (size - h.point_offset) / h.record_length;
  if (h.count > room)
    fail(ErrorKind::kInput, path + ": truncated: the header gives " + std::to_string(h.count) +
                                " points, the file holds " + std::to_string(room));
  if (h.count == 0) fail(ErrorKind::kInput, path + ": no points");
  return h;
}

// ---- writing ---------------------------------------------------------------------------------

struct ExtraField {
  std::string name;
  uint8_t type;  // LAS extra bytes data type: 5 uint32, 6 int32, 9 float
  std::string description;
};

// The largest power of ten not above `fine` (no finer than 1e-9), coarsened until `extent`
// quantizes into 31 bits.
double las_scale(double fine, double extent) {
  double s = (fine > 0 && std::isfinite(fine)) ? std::pow(10.0, std::floor(std::log10(fine))) : 1e-3;
  s = std::max(s, 1e-9);
  while (extent / s > 2.0e9) s *= 10;
  return s;
}

struct LasLayout {
  bool rgb = false;
  std::vector<ExtraField> extras;
  double scale[3] = {1, 1, 1}, offset[3] = {0, 0, 0};
  int64_t qmin[3] = {0, 0, 0}, qmax[3] = {0, 0, 0};  // quantized extent of the points
  int base() const { return rgb ? 36 : 30; }
  int length() const { return base() + 4 * int(extras.size()); }  // every extra field is 4 bytes
};

void copy_name(char* dst, size_t n, const std::string& s) { std::memcpy(dst, s.data(), std::min(n, s.size())); }

// Header, VLRs, then the records: fill(begin, end, out) writes records [begin, end) into `out`
// (zeroed), each `length()` bytes, for chunks of points in order.
void write_las(const std::string& path, const Metadata& meta, uint64_t n, const LasLayout& L,
               const std::function<void(uint64_t, uint64_t, char*)>& fill) {
  std::vector<std::string> vlrs;
  auto vlr = [&](const char* user, uint16_t id, const std::string& description, const std::string& payload) {
    if (payload.size() > 65535) fail(ErrorKind::kInternal, path + ": LAS VLR too large");
    std::string v(kVlrHeader, '\0');
    copy_name(&v[2], 16, user);
    put<uint16_t>(&v[18], id);
    put<uint16_t>(&v[20], uint16_t(payload.size()));
    copy_name(&v[22], 32, description);
    vlrs.push_back(v + payload);
  };
  if (!L.extras.empty()) {
    std::string d(kExtraBytesDescriptor * L.extras.size(), '\0');
    for (size_t e = 0; e < L.extras.size(); ++e) {
      char* p = &d[e * kExtraBytesDescriptor];
      p[2] = char(L.extras[e].type);
      copy_name(p + 4, 32, L.extras[e].name);
      copy_name(p + 160, 32, L.extras[e].description);
    }
    vlr("LASF_Spec", 4, "Extra bytes", d);
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : meta) j[k] = v;
  vlr("voxtile", 1, "voxtile metadata (JSON)", j.dump());
  size_t vlr_bytes = 0;
  for (const std::string& v : vlrs) vlr_bytes += v.size();

  std::string h(kHeader14, '\0');
  std::memcpy(&h[0], "LASF", 4);
  put<uint16_t>(&h[6], 16);  // WKT bit, required with point formats 6-10 (no CRS is written)
  h[24] = 1;
  h[25] = 4;
  copy_name(&h[26], 32, "voxtile");
  copy_name(&h[58], 32, std::string("voxtile ") + VOXTILE_VERSION);
  // Creation day and year stay 0 (unknown), so that the same input gives the same bytes.
  put<uint16_t>(&h[94], uint16_t(kHeader14));
  put<uint32_t>(&h[96], uint32_t(kHeader14 + vlr_bytes));
  put<uint32_t>(&h[100], uint32_t(vlrs.size()));
  h[104] = char(L.rgb ? 7 : 6);
  put<uint16_t>(&h[105], uint16_t(L.length()));
  for (int a = 0; a < 3; ++a) {
    put<double>(&h[131 + 8 * a], L.scale[a]);
    put<double>(&h[155 + 8 * a], L.offset[a]);
    const double hi = n ? L.offset[a] + double(L.qmax[a]) * L.scale[a] : 0.0;
    const double lo = n ? L.offset[a] + double(L.qmin[a]) * L.scale[a] : 0.0;
    put<double>(&h[179 + 16 * a], hi);
    put<double>(&h[187 + 16 * a], lo);
  }
  put<uint64_t>(&h[247], n);
  put<uint64_t>(&h[255], n);  // all first returns

  AtomicFile out(path);
  out.write(h.data(), h.size());
  for (const std::string& v : vlrs) out.write(v.data(), v.size());
  const size_t len = size_t(L.length());
  const uint64_t chunk = uint64_t(1) << 18;
  std::vector<char> buf;
  for (uint64_t b = 0; b < n; b += chunk) {
    const uint64_t e = std::min(n, b + chunk);
    buf.assign(size_t(e - b) * len, 0);
    fill(b, e, buf.data());
    out.write(buf.data(), buf.size());
  }
  out.commit();
}

// The fixed part of a format 6/7 record: position, intensity, one return of one, class, colour.
void put_record(char* r, const int32_t q[3], uint16_t intensity, uint8_t cls, const uint16_t* rgb) {
  put<int32_t>(r + 0, q[0]);
  put<int32_t>(r + 4, q[1]);
  put<int32_t>(r + 8, q[2]);
  put<uint16_t>(r + 12, intensity);
  r[14] = char(0x11);  // return 1 of 1
  r[16] = char(cls);
  if (rgb) {
    put<uint16_t>(r + 30, rgb[0]);
    put<uint16_t>(r + 32, rgb[1]);
    put<uint16_t>(r + 34, rgb[2]);
  }
}

int32_t quantize(double v, double offset, double scale) { return int32_t(std::llround((v - offset) / scale)); }

}  // namespace

// ---- reading ---------------------------------------------------------------------------------

bool is_laz_file(const std::string& path) {
  const MappedFile f(path);
  return f.size() > 104 && std::memcmp(f.data(), "LASF", 4) == 0 && (uint8_t(f.data()[104]) & 0xC0) != 0;
}

PointCloud read_las(const std::string& path) {
  check_input_file(path);
  const MappedFile f(path);
  const LasHeader h = parse_header(f.data(), f.size(), path);
  const char* base = f.data() + h.point_offset;
  const size_t len = h.record_length;
  const int rgb_at = kPointFormats[h.format].rgb;
  const bool extended = h.format >= 6;
  const size_t n = size_t(h.count);
  // First pass: the largest colour channel and whether any intensity or class is non-zero.
  struct Seen {
    uint16_t rgb = 0;
    bool intensity = false, cls = false;
  };
  const Seen seen = tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, n, 1 << 16), Seen{},
      [&](const tbb::blocked_range<size_t>& r, Seen s) {
        for (size_t i = r.begin(); i < r.end(); ++i) {
          const char* p = base + i * len;
          s.intensity |= get<uint16_t>(p + 12) != 0;
          s.cls |= (extended ? uint8_t(p[16]) : uint8_t(p[15]) & 31) != 0;
          if (rgb_at >= 0)
            for (int c = 0; c < 3; ++c) s.rgb = std::max(s.rgb, get<uint16_t>(p + rgb_at + 2 * c));
        }
        return s;
      },
      [](Seen a, const Seen& b) {
        a.rgb = std::max(a.rgb, b.rgb);
        a.intensity |= b.intensity;
        a.cls |= b.cls;
        return a;
      });
  PointCloud pc;
  pc.positions.resize(n);
  pc.positions64.resize(n);
  if (rgb_at >= 0) pc.colors.resize(n);
  if (seen.intensity) pc.intensity.resize(n);
  if (seen.cls) pc.classes.resize(n);
  const int rgb_shift = seen.rgb > 255 ? 8 : 0;
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 16), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) {
      const char* p = base + i * len;
      const Vec3d w = {double(get<int32_t>(p)) * h.scale[0] + h.offset[0],
                       double(get<int32_t>(p + 4)) * h.scale[1] + h.offset[1],
                       double(get<int32_t>(p + 8)) * h.scale[2] + h.offset[2]};
      pc.positions64[i] = w;
      pc.positions[i] = {float(w.x), float(w.y), float(w.z)};
      if (seen.intensity) pc.intensity[i] = get<uint16_t>(p + 12);
      if (seen.cls) pc.classes[i] = extended ? uint8_t(p[16]) : uint8_t(uint8_t(p[15]) & 31);
      if (rgb_at >= 0)
        pc.colors[i] = {uint8_t(get<uint16_t>(p + rgb_at) >> rgb_shift),
                        uint8_t(get<uint16_t>(p + rgb_at + 2) >> rgb_shift),
                        uint8_t(get<uint16_t>(p + rgb_at + 4) >> rgb_shift)};
    }
  });
  return pc;
}

std::string read_las_metadata(const std::string& path, const std::string& key) {
  try {
    const MappedFile f(path);
    const LasHeader h = parse_header(f.data(), f.size(), path);
    size_t at = h.header_size;
    for (uint32_t v = 0; v < h.num_vlrs && at + kVlrHeader <= h.point_offset; ++v) {
      const char* p = f.data() + at;
      const size_t len = get<uint16_t>(p + 20);
      if (at + kVlrHeader + len > h.point_offset) break;
      if (std::strncmp(p + 2, "voxtile", 16) == 0 && get<uint16_t>(p + 18) == 1) {
        const nlohmann::json j = nlohmann::json::parse(p + kVlrHeader, p + kVlrHeader + len, nullptr, false);
        if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
        return "";
      }
      at += kVlrHeader + len;
    }
  } catch (const Error&) {
  }
  return "";
}

// ---- writing ---------------------------------------------------------------------------------

void write_las_points(const PointCloud& pc, const std::string& path, const Metadata& meta) {
  const size_t n = pc.size();
  LasLayout L;
  L.rgb = !pc.colors.empty();
  if (!pc.normals.empty())
    for (const char* c : {"normal_x", "normal_y", "normal_z"}) L.extras.push_back({c, 9, "unit normal"});
  if (!pc.ids.empty()) L.extras.push_back({"id", 5, "source triangle or primitive"});
  if (!pc.materials.empty()) L.extras.push_back({"material", 5, "source material"});
  auto world = [&](size_t i, int a) {
    if (!pc.positions64.empty())
      return a == 0 ? pc.positions64[i].x : a == 1 ? pc.positions64[i].y : pc.positions64[i].z;
    return double(a == 0 ? pc.positions[i].x : a == 1 ? pc.positions[i].y : pc.positions[i].z);
  };
  const Bounds b = n ? point_bounds(pc) : Bounds{{0, 0, 0}, {0, 0, 0}};
  const double lo[3] = {b.lo.x, b.lo.y, b.lo.z}, hi[3] = {b.hi.x, b.hi.y, b.hi.z};
  for (int a = 0; a < 3; ++a) {
    if (!std::isfinite(lo[a]) || !std::isfinite(hi[a]))
      fail(ErrorKind::kInternal, path + ": non-finite point position");
    // Float carries 24 bits: a finer scale would only record rounding noise.
    const double mag = std::max({std::abs(lo[a]), std::abs(hi[a]), hi[a] - lo[a]});
    L.scale[a] = las_scale(pc.positions64.empty() ? mag * std::ldexp(1.0, -24) : 1e-4, hi[a] - lo[a]);
    L.offset[a] = lo[a];
    L.qmin[a] = 0;
    L.qmax[a] = quantize(hi[a], lo[a], L.scale[a]);
  }
  const int base = L.base();
  const size_t len = size_t(L.length());
  write_las(path, meta, n, L, [&](uint64_t b, uint64_t e, char* out) {
    tbb::parallel_for(tbb::blocked_range<uint64_t>(b, e, 1 << 12), [&](const tbb::blocked_range<uint64_t>& r) {
      for (uint64_t i = r.begin(); i < r.end(); ++i) {
        char* rec = out + (i - b) * len;
        int32_t q[3];
        for (int a = 0; a < 3; ++a) q[a] = quantize(world(i, a), L.offset[a], L.scale[a]);
        uint16_t rgb[3];
        if (L.rgb)
          rgb[0] = uint16_t(pc.colors[i].r * 257), rgb[1] = uint16_t(pc.colors[i].g * 257),
          rgb[2] = uint16_t(pc.colors[i].b * 257);
        put_record(rec, q, pc.intensity.empty() ? 0 : pc.intensity[i], pc.classes.empty() ? 0 : pc.classes[i],
                   L.rgb ? rgb : nullptr);
        char* x = rec + base;
        if (!pc.normals.empty()) {
          put<float>(x, pc.normals[i].x), put<float>(x + 4, pc.normals[i].y), put<float>(x + 8, pc.normals[i].z);
          x += 12;
        }
        if (!pc.ids.empty()) put<uint32_t>(x, pc.ids[i]), x += 4;
        if (!pc.materials.empty()) put<uint32_t>(x, pc.materials[i]), x += 4;
      }
    });
  });
}

void write_las_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta) {
  const SparseGrid& g = one_voxel_set(grids, path, "LAS");
  const SparseGrid *color = nullptr, *intensity = nullptr, *cls = nullptr, *count = nullptr;
  struct Extra {
    const SparseGrid* grid;
    int channels;  // 1 or 3 fields
  };
  std::vector<Extra> extras;
  LasLayout L;
  for (const SparseGrid* o : grids) {
    if (o->value_type == ValueType::kNone) continue;
    if (o->name == "color" && o->value_type == ValueType::kVec3f) {
      color = o;
    } else if (o->name == "intensity" && o->value_type != ValueType::kVec3f) {
      intensity = o;
    } else if (o->name == "class" && o->value_type == ValueType::kInt32) {
      cls = o;
    } else {
      if (o->name == "count" && o->value_type == ValueType::kInt32) count = o;
      const std::string name = o->name.empty() ? "value" : o->name;
      if (o->value_type == ValueType::kVec3f) {
        for (const char* s : {"_x", "_y", "_z"})
          L.extras.push_back({name.substr(0, 30) + s, 9, "voxtile grid " + name});
        extras.push_back({o, 3});
      } else {
        const uint8_t type = o->name == "count" ? 5 : o->value_type == ValueType::kInt32 ? 6 : 9;
        L.extras.push_back({name.substr(0, 32), type, "voxtile grid " + name});
        extras.push_back({o, 1});
      }
    }
  }
  L.rgb = color != nullptr;
  const GridSpec& s = g.spec;
  const double size[3] = {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z};
  const int32_t dims[3] = {s.dims.x, s.dims.y, s.dims.z};
  for (int a = 0; a < 3; ++a) {
    L.scale[a] = las_scale(size[a] / 1000, double(dims[a]) * size[a]);
    L.offset[a] = a == 0 ? s.origin.x : a == 1 ? s.origin.y : s.origin.z;
  }
  // Active voxels before each brick (prefix sums): where its records go.
  const size_t nb = g.keys.size();
  std::vector<uint64_t> first(nb + 1, 0);
  for (size_t b = 0; b < nb; ++b) first[b + 1] = first[b] + uint64_t(g.masks[b].count());
  const uint64_t n = first[nb];
  auto qcoord = [&](int a, int64_t v) { return int32_t(std::llround((double(v) + 0.5) * size[a] / L.scale[a])); };
  if (n) {  // the exact extent of the active voxels
    int64_t lo[3] = {INT64_MAX, INT64_MAX, INT64_MAX}, hi[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
    g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
      const int32_t v[3] = {i, j, k};
      for (int a = 0; a < 3; ++a) lo[a] = std::min<int64_t>(lo[a], v[a]), hi[a] = std::max<int64_t>(hi[a], v[a]);
    });
    for (int a = 0; a < 3; ++a) L.qmin[a] = qcoord(a, lo[a]), L.qmax[a] = qcoord(a, hi[a]);
  }
  const int base = L.base();
  const size_t len = size_t(L.length());
  write_las(path, meta, n, L, [&](uint64_t b0, uint64_t e0, char* out) {
    const size_t bb = size_t(std::upper_bound(first.begin(), first.end(), b0) - first.begin()) - 1;
    const size_t be = size_t(std::lower_bound(first.begin(), first.end(), e0) - first.begin());
    tbb::parallel_for(tbb::blocked_range<size_t>(bb, be, 16), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t b = r.begin(); b < r.end(); ++b) {
        const Int3 bc = brick_coord(g.keys[b]);
        uint64_t idx = first[b];
        for (int off = 0; off < kBrickVoxels; ++off) {
          if (!g.masks[b].test(off)) continue;
          const uint64_t i = idx++;
          if (i < b0 || i >= e0) continue;
          char* rec = out + (i - b0) * len;
          const int32_t q[3] = {qcoord(0, int64_t(bc.x) * 8 + (off >> 6)),
                                qcoord(1, int64_t(bc.y) * 8 + ((off >> 3) & 7)),
                                qcoord(2, int64_t(bc.z) * 8 + (off & 7))};
          const size_t at = size_t(i);  // (the grids share g's voxels: their values in this order)
          uint16_t rgb[3];
          if (color)
            for (int c = 0; c < 3; ++c)
              rgb[c] = uint16_t(std::lround(std::clamp(double(color->fvalues[3 * at + c]), 0.0, 1.0) * 65535.0));
          double inten = 0;
          if (intensity)
            inten = intensity->value_type == ValueType::kInt32 ? double(intensity->ivalues[at])
                                                               : double(intensity->fvalues[at]);
          else if (count)
            inten = double(count->ivalues[at]);
          inten = std::isfinite(inten) ? std::clamp(std::round(inten), 0.0, 65535.0) : 0.0;
          const uint8_t c8 = cls ? uint8_t(std::clamp(cls->ivalues[at], 0, 255)) : 0;
          put_record(rec, q, uint16_t(inten), c8, color ? rgb : nullptr);
          char* x = rec + base;
          for (const Extra& e : extras) {
            if (e.channels == 3) {
              for (int c = 0; c < 3; ++c) put<float>(x + 4 * c, e.grid->fvalues[3 * at + c]);
            } else if (e.grid->value_type == ValueType::kInt32) {
              put<int32_t>(x, e.grid->ivalues[at]);
            } else {
              put<float>(x, e.grid->fvalues[at]);
            }
            x += 4 * e.channels;
          }
        }
      }
    });
  });
}

}  // namespace voxtile
