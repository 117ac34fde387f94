// .npz writer: stored (uncompressed) ZIP entries, each a .npy file. Entries larger than 4 GiB, or
// starting past 4 GiB, use ZIP64 extra fields and a ZIP64 end record, as numpy's zipfile expects.
#include "io/npz.h"

#include <zlib.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"

namespace voxtile {
namespace {

class ZipWriter {
 public:
  explicit ZipWriter(AtomicFile& out) : m_out(out) {}

  // Adds a stored entry whose content is the concatenation of `parts`.
  void add(const std::string& name, const std::vector<std::pair<const void*, size_t>>& parts) {
    uint64_t size = 0;
    uLong crc = crc32(0L, Z_NULL, 0);
    for (const auto& [p, n] : parts) {
      size += n;
      const unsigned char* c = static_cast<const unsigned char*>(p);
      for (size_t o = 0; o < n; o += (1u << 30)) crc = crc32(crc, c + o, uInt(std::min<size_t>(n - o, 1u << 30)));
    }
    Entry e{name, uint32_t(crc), size, m_pos};
    const bool z64 = size >= 0xffffffffull || m_pos >= 0xffffffffull;
    std::vector<unsigned char> h;
    put32(h, 0x04034b50);
    put16(h, z64 ? 45 : 20);  // version needed
    put16(h, 0);              // flags
    put16(h, 0);              // stored
    put16(h, 0);              // time
    put16(h, 0x21);           // date: 1980-01-01
    put32(h, e.crc);
    put32(h, z64 ? 0xffffffffu : uint32_t(size));
    put32(h, z64 ? 0xffffffffu : uint32_t(size));
    put16(h, uint16_t(name.size()));
    put16(h, z64 ? 20 : 0);
    h.insert(h.end(), name.begin(), name.end());
    if (z64) {
      put16(h, 1);
      put16(h, 16);
      put64(h, size);
      put64(h, size);
    }
    emit(h.data(), h.size());
    for (const auto& [p, n] : parts) emit(p, n);
    m_entries.push_back(e);
  }

  void finish() {
    const uint64_t cd_start = m_pos;
    for (const Entry& e : m_entries) {
      const bool big = e.size >= 0xffffffffull, far = e.offset >= 0xffffffffull;
      std::vector<unsigned char> h;
      put32(h, 0x02014b50);
      put16(h, 45);  // made by
      put16(h, (big || far) ? 45 : 20);
      put16(h, 0);
      put16(h, 0);
      put16(h, 0);
      put16(h, 0x21);
      put32(h, e.crc);
      put32(h, big ? 0xffffffffu : uint32_t(e.size));
      put32(h, big ? 0xffffffffu : uint32_t(e.size));
      put16(h, uint16_t(e.name.size()));
      const uint16_t extra = uint16_t((big ? 16 : 0) + (far ? 8 : 0));
      put16(h, extra ? uint16_t(extra + 4) : 0);
      put16(h, 0);  // comment
      put16(h, 0);  // disk
      put16(h, 0);  // internal attributes
      put32(h, 0);  // external attributes
      put32(h, far ? 0xffffffffu : uint32_t(e.offset));
      h.insert(h.end(), e.name.begin(), e.name.end());
      if (extra) {
        put16(h, 1);
        put16(h, extra);
        if (big) {
          put64(h, e.size);
          put64(h, e.size);
        }
        if (far) put64(h, e.offset);
      }
      emit(h.data(), h.size());
    }
    const uint64_t cd_size = m_pos - cd_start, n = m_entries.size();
    const bool z64 = cd_start >= 0xffffffffull || cd_size >= 0xffffffffull || n >= 0xffff;
    std::vector<unsigned char> h;
    if (z64) {
      const uint64_t eocd64 = m_pos;
      put32(h, 0x06064b50);
      put64(h, 44);
      put16(h, 45);
      put16(h, 45);
      put32(h, 0);
      put32(h, 0);
      put64(h, n);
      put64(h, n);
      put64(h, cd_size);
      put64(h, cd_start);
      put32(h, 0x07064b50);
      put32(h, 0);
      put64(h, eocd64);
      put32(h, 1);
    }
    put32(h, 0x06054b50);
    put16(h, 0);
    put16(h, 0);
    put16(h, z64 ? 0xffff : uint16_t(n));
    put16(h, z64 ? 0xffff : uint16_t(n));
    put32(h, z64 ? 0xffffffffu : uint32_t(cd_size));
    put32(h, z64 ? 0xffffffffu : uint32_t(cd_start));
    put16(h, 0);
    emit(h.data(), h.size());
  }

 private:
  struct Entry {
    std::string name;
    uint32_t crc;
    uint64_t size, offset;
  };
  static void put16(std::vector<unsigned char>& h, uint16_t v) {
    h.push_back(uint8_t(v));
    h.push_back(uint8_t(v >> 8));
  }
  static void put32(std::vector<unsigned char>& h, uint32_t v) {
    put16(h, uint16_t(v));
    put16(h, uint16_t(v >> 16));
  }
  static void put64(std::vector<unsigned char>& h, uint64_t v) {
    put32(h, uint32_t(v));
    put32(h, uint32_t(v >> 32));
  }
  void emit(const void* p, size_t n) {
    m_out.write(p, n);
    m_pos += n;
  }
  AtomicFile& m_out;
  uint64_t m_pos = 0;
  std::vector<Entry> m_entries;
};

// A .npy version 1.0 header for a C-order array.
std::string npy_header(const char* descr, const std::vector<uint64_t>& shape) {
  std::ostringstream d;
  d << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) d << shape[i] << (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  d << "), }";
  std::string dict = d.str();
  const size_t total = ((10 + dict.size() + 1 + 63) / 64) * 64;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += char(1);
  h += char(0);
  h += char(dict.size() & 0xff);
  h += char(dict.size() >> 8);
  return h + dict;
}

}  // namespace

void write_buckets_npz(const Buckets& b, const std::string& path) {
  AtomicFile out(path);
  ZipWriter zip(out);
  auto array = [&](const char* name, const char* descr, const std::vector<uint64_t>& shape, const void* data,
                   size_t bytes) {
    const std::string header = npy_header(descr, shape);
    zip.add(std::string(name) + ".npy", {{header.data(), header.size()}, {data, bytes}});
  };
  const uint64_t n = b.num_voxels(), m = b.num_fragments();
  const int32_t dims[3] = {b.spec.dims.x, b.spec.dims.y, b.spec.dims.z};
  const double vs[3] = {b.spec.voxel_size.x, b.spec.voxel_size.y, b.spec.voxel_size.z};
  const double origin[3] = {b.spec.origin.x, b.spec.origin.y, b.spec.origin.z};
  array("ijk", "<i4", {n, 3}, b.ijk.data(), b.ijk.size() * 4);
  array("offsets", "<i8", {n + 1}, b.offsets.data(), b.offsets.size() * 8);
  array("triangle", "<i4", {m}, b.triangle.data(), b.triangle.size() * 4);
  if (b.attrs & kAttrBary) array("bary", "<f4", {m, 3}, b.bary.data(), b.bary.size() * 4);
  if (b.attrs & kAttrNormal) array("normal", "<f4", {m, 3}, b.normal.data(), b.normal.size() * 4);
  if (b.attrs & kAttrUv) array("uv", "<f4", {m, 2}, b.uv.data(), b.uv.size() * 4);
  if (b.attrs & kAttrMaterial) array("material", "<i4", {m}, b.material.data(), b.material.size() * 4);
  array("dims", "<i4", {3}, dims, sizeof(dims));
  array("voxel_size", "<f8", {3}, vs, sizeof(vs));
  array("origin", "<f8", {3}, origin, sizeof(origin));
  zip.finish();
  out.commit();
}

}  // namespace voxtile
