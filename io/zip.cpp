// ZIP archives (io/zip.h).
#include "io/zip.h"

#include <libdeflate.h>
#include <strings.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "io/atomic_file.h"

namespace voxtile {
namespace zip {

// ---- Reader -------------------------------------------------------------------------------------

uint16_t Reader::u16(uint64_t at) const {
  uint16_t v;
  std::memcpy(&v, m_data + at, 2);
  return v;
}
uint32_t Reader::u32(uint64_t at) const {
  uint32_t v;
  std::memcpy(&v, m_data + at, 4);
  return v;
}
uint64_t Reader::u64(uint64_t at) const {
  uint64_t v;
  std::memcpy(&v, m_data + at, 8);
  return v;
}

Reader::Reader(const std::string& path, const char* data, size_t size, const std::string& kind)
    : m_path(path), m_data(data), m_size(size) {
  auto damaged = [&](const std::string& why) {
    fail(ErrorKind::kInput, m_path + ": not a readable " + kind + " (a ZIP archive): " + why);
  };
  // The end-of-central-directory record: in the last 64 KB + 22 bytes.
  if (m_size < 22) damaged("too short");
  uint64_t eocd = UINT64_MAX;
  for (uint64_t at = m_size - 22;; --at) {
    if (u32(at) == 0x06054b50) {
      eocd = at;
      break;
    }
    if (at == 0 || m_size - at > 65557) break;
  }
  if (eocd == UINT64_MAX) damaged("no end of central directory (truncated?)");
  uint64_t count = u16(eocd + 10), cd_size = u32(eocd + 12), cd_offset = u32(eocd + 16);
  if ((count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) && eocd >= 20 &&
      u32(eocd - 20) == 0x07064b50) {
    const uint64_t z64 = u64(eocd - 20 + 8);
    if (z64 > m_size || m_size - z64 < 56 || u32(z64) != 0x06064b50) damaged("a broken ZIP64 directory record");
    count = u64(z64 + 32);
    cd_size = u64(z64 + 40);
    cd_offset = u64(z64 + 48);
  }
  if (cd_offset > m_size || cd_size > m_size - cd_offset || count > cd_size / 46)
    damaged("its directory runs past the file");
  uint64_t at = cd_offset;
  for (uint64_t i = 0; i < count; ++i) {
    if (cd_offset + cd_size - at < 46 || u32(at) != 0x02014b50) damaged("a broken directory entry");
    Entry e;
    e.method = u16(at + 10);
    e.crc = u32(at + 16);
    e.csize = u32(at + 20);
    e.usize = u32(at + 24);
    const uint64_t n = u16(at + 28), extra = u16(at + 30), comment = u16(at + 32);
    e.offset = u32(at + 42);
    if (cd_offset + cd_size - at < 46 + n + extra + comment) damaged("a broken directory entry");
    e.name.assign(m_data + at + 46, size_t(n));
    // ZIP64 sizes and offset, in that order, for the fields that say 0xFFFFFFFF.
    for (uint64_t x = at + 46 + n; x + 4 <= at + 46 + n + extra;) {
      const uint16_t id = u16(x), len = u16(x + 2);
      if (x + 4 + len > at + 46 + n + extra) break;
      if (id == 0x0001) {
        uint64_t y = x + 4;
        auto take = [&](uint64_t& field) {
          if (field == 0xFFFFFFFF && y + 8 <= x + 4 + len) {
            field = u64(y);
            y += 8;
          }
        };
        take(e.usize);
        take(e.csize);
        take(e.offset);
      }
      x += 4 + len;
    }
    m_entries.push_back(std::move(e));
    at += 46 + n + extra + comment;
  }
}

const Entry* Reader::find(std::string name) const {
  if (!name.empty() && name[0] == '/') name.erase(0, 1);
  for (const Entry& e : m_entries)
    if (e.name.size() == name.size() && strncasecmp(e.name.data(), name.data(), name.size()) == 0) return &e;
  return nullptr;
}

std::string_view Reader::read(const Entry& e, std::unique_ptr<char[]>& storage) const {
  const std::string what = m_path + ": archive entry '" + e.name + "'";
  if (e.offset > m_size || m_size - e.offset < 30 || u32(e.offset) != 0x04034b50)
    fail(ErrorKind::kInput, what + ": no local header where the directory says (a damaged archive)");
  const uint64_t start = e.offset + 30 + u16(e.offset + 26) + u16(e.offset + 28);
  if (start > m_size || e.csize > m_size - start)
    fail(ErrorKind::kInput, what + " runs past the end of the file (truncated?)");
  const char* out = nullptr;
  if (e.method == 0) {
    if (e.csize != e.usize) fail(ErrorKind::kInput, what + ": a stored entry whose two sizes differ");
    out = m_data + start;
  } else if (e.method == 8) {
    // Deflate cannot expand more than about 1032:1: a larger stated size is not this entry's.
    if (e.usize > 1100 * e.csize + 1024 || e.usize > (uint64_t(1) << 40))
      fail(ErrorKind::kInput, what + " states " + std::to_string(e.usize) + " bytes, more than its " +
                                  std::to_string(e.csize) + " compressed bytes can hold");
    // libdeflate: whole-buffer inflate into the size the directory states, 2-3x zlib's speed (a 3MF
    // model part is one deflate stream, so its inflate is the one serial stage of a 3MF read).
    storage.reset(new char[size_t(e.usize) + 1]);
    struct Free {
      void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
    };
    const std::unique_ptr<libdeflate_decompressor, Free> d(libdeflate_alloc_decompressor());
    if (!d) fail(ErrorKind::kResource, "out of memory (libdeflate)");
    size_t got = 0;
    const libdeflate_result rc =
        libdeflate_deflate_decompress(d.get(), m_data + start, size_t(e.csize), storage.get(), size_t(e.usize), &got);
    if (rc != LIBDEFLATE_SUCCESS || got != e.usize)
      fail(ErrorKind::kInput, what + ": its compressed data is damaged or cut short");
    out = storage.get();
  } else {
    fail(ErrorKind::kInput, what + ": compressed with method " + std::to_string(e.method) +
                                " (voxtile reads stored and deflated entries)");
  }
  if (libdeflate_crc32(0, out, size_t(e.usize)) != e.crc)
    fail(ErrorKind::kInput, what + ": its CRC-32 does not match (a damaged archive)");
  return std::string_view(out, size_t(e.usize));
}

// ---- Writer -------------------------------------------------------------------------------------

namespace {
void put16(std::string& h, uint16_t v) {
  h.push_back(char(v & 0xff));
  h.push_back(char(v >> 8));
}
void put32(std::string& h, uint32_t v) {
  put16(h, uint16_t(v));
  put16(h, uint16_t(v >> 16));
}
void put64(std::string& h, uint64_t v) {
  put32(h, uint32_t(v));
  put32(h, uint32_t(v >> 32));
}
constexpr uint64_t k32 = 0xffffffffull;
}  // namespace

void Writer::emit(const void* p, size_t n) {
  m_out.write(p, n);
  m_pos += n;
}

void Writer::add_stored(const std::string& name, const std::vector<std::pair<const void*, size_t>>& parts) {
  Written e;
  e.name = name;
  e.offset = m_pos;
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const auto& [p, n] : parts) {
    e.usize += n;
    const unsigned char* c = static_cast<const unsigned char*>(p);
    for (size_t o = 0; o < n; o += (1u << 30)) crc = crc32(crc, c + o, uInt(std::min<size_t>(n - o, 1u << 30)));
  }
  e.crc = uint32_t(crc);
  e.csize = e.usize;
  const bool z64 = e.usize >= k32 || m_pos >= k32;
  std::string h;
  put32(h, 0x04034b50);
  put16(h, z64 ? 45 : 20);  // version needed
  put16(h, 0);              // flags
  put16(h, 0);              // stored
  put16(h, 0);              // time
  put16(h, 0x21);           // date: 1980-01-01
  put32(h, e.crc);
  put32(h, z64 ? 0xffffffffu : uint32_t(e.usize));
  put32(h, z64 ? 0xffffffffu : uint32_t(e.usize));
  put16(h, uint16_t(name.size()));
  put16(h, z64 ? 20 : 0);
  h += name;
  if (z64) {
    put16(h, 1);
    put16(h, 16);
    put64(h, e.usize);
    put64(h, e.usize);
  }
  emit(h.data(), h.size());
  for (const auto& [p, n] : parts) emit(p, n);
  m_entries.push_back(std::move(e));
}

void Writer::begin_deflated(const std::string& name) {
  Written e;
  e.name = name;
  e.offset = m_pos;
  e.method = 8;
  e.descriptor = true;
  std::string h;
  put32(h, 0x04034b50);
  put16(h, 20);    // version needed
  put16(h, 0x08);  // CRC-32 and sizes in the data descriptor
  put16(h, 8);     // deflate
  put16(h, 0);     // time
  put16(h, 0x21);  // date: 1980-01-01
  put32(h, 0);     // CRC-32, sizes: in the descriptor
  put32(h, 0);
  put32(h, 0);
  put16(h, uint16_t(name.size()));
  put16(h, 0);
  h += name;
  emit(h.data(), h.size());
  m_entries.push_back(std::move(e));
  m_z = z_stream{};
  if (deflateInit2(&m_z, Z_BEST_SPEED, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail(ErrorKind::kInternal, "zlib: deflateInit2 failed");
}

void Writer::data(const char* d, size_t n) {
  Written& e = m_entries.back();
  e.crc = uint32_t(crc32_z(e.crc, reinterpret_cast<const unsigned char*>(d), n));
  e.usize += n;
  deflate_some(d, n, Z_NO_FLUSH);
}

void Writer::deflate_some(const char* d, size_t n, int flush) {
  unsigned char buf[1 << 16];
  m_z.next_in = reinterpret_cast<unsigned char*>(const_cast<char*>(d));
  m_z.avail_in = uInt(n);
  int rc = Z_OK;
  do {
    m_z.next_out = buf;
    m_z.avail_out = sizeof buf;
    rc = deflate(&m_z, flush);
    const size_t got = sizeof buf - m_z.avail_out;
    emit(buf, got);
    m_entries.back().csize += got;
  } while (m_z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
}

void Writer::end_deflated() {
  deflate_some(nullptr, 0, Z_FINISH);
  deflateEnd(&m_z);
  const Written& e = m_entries.back();
  if (e.usize >= k32 || e.csize >= k32 || m_pos >= k32)
    fail(ErrorKind::kUsage, m_out.final_path() + ": a deflated archive entry over 4 GB is not written (no ZIP64 here)");
  std::string d;
  put32(d, 0x08074b50);
  put32(d, e.crc);
  put32(d, uint32_t(e.csize));
  put32(d, uint32_t(e.usize));
  emit(d.data(), d.size());
}

void Writer::finish() {
  const uint64_t cd_start = m_pos;
  for (const Written& e : m_entries) {
    const bool big = e.usize >= k32 || e.csize >= k32, far = e.offset >= k32;
    std::string h;
    put32(h, 0x02014b50);
    put16(h, 45);  // made by
    put16(h, (big || far) ? 45 : 20);
    put16(h, e.descriptor ? 0x08 : 0);
    put16(h, e.method);
    put16(h, 0);
    put16(h, 0x21);
    put32(h, e.crc);
    put32(h, big ? 0xffffffffu : uint32_t(e.csize));
    put32(h, big ? 0xffffffffu : uint32_t(e.usize));
    put16(h, uint16_t(e.name.size()));
    const uint16_t extra = uint16_t((big ? 16 : 0) + (far ? 8 : 0));
    put16(h, extra ? uint16_t(extra + 4) : 0);
    put16(h, 0);  // comment
    put16(h, 0);  // disk
    put16(h, 0);  // internal attributes
    put32(h, 0);  // external attributes
    put32(h, far ? 0xffffffffu : uint32_t(e.offset));
    h += e.name;
    if (extra) {
      put16(h, 1);
      put16(h, extra);
      if (big) {
        put64(h, e.usize);
        put64(h, e.csize);
      }
      if (far) put64(h, e.offset);
    }
    emit(h.data(), h.size());
  }
  const uint64_t cd_size = m_pos - cd_start, n = m_entries.size();
  const bool z64 = cd_start >= k32 || cd_size >= k32 || n >= 0xffff;
  std::string h;
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

}  // namespace zip
}  // namespace voxtile
