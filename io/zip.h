// ZIP archives: the one reader and the one writer of every ZIP-based format voxtile reads or writes
// (.3mf packages, .npz arrays).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace voxtile {

class AtomicFile;

namespace zip {

struct Entry {
  std::string name;                           // as stored (no leading '/')
  uint64_t offset = 0, csize = 0, usize = 0;  // local header, compressed and uncompressed sizes
  uint32_t crc = 0;
  uint16_t method = 0;  // 0 stored, 8 deflated
};

// The central directory of an archive in memory (ZIP64 included). `kind` names the file in errors:
// "<path>: not a readable <kind> (a ZIP archive): why".
class Reader {
 public:
  Reader(const std::string& path, const char* data, size_t size, const std::string& kind);
  const std::vector<Entry>& entries() const { return m_entries; }
  // The entry named `name` (case-insensitive, as OPC part names are; a leading '/' ignored), or null.
  const Entry* find(std::string name) const;
  // The entry's bytes, checked against its CRC-32: stored ones in place, deflated ones inflated into
  // `storage` (libdeflate, whole buffer into the size the directory states). Throws Error(kInput).
  std::string_view read(const Entry& e, std::unique_ptr<char[]>& storage) const;

 private:
  uint16_t u16(uint64_t at) const;
  uint32_t u32(uint64_t at) const;
  uint64_t u64(uint64_t at) const;
  std::string m_path;
  const char* m_data;
  size_t m_size;
  std::vector<Entry> m_entries;
};

// An archive written front to back: stored entries whose content is known (ZIP64 where over 4 GiB,
// as numpy's zipfile expects), and deflated entries streamed in (zlib's fastest level, CRC-32 and sizes
// in a data descriptor after the data; over 4 GiB refused). No timestamps (1980-01-01), so the same
// entries give the same bytes.
class Writer {
 public:
  explicit Writer(AtomicFile& out) : m_out(out) {}
  // A stored entry whose content is the concatenation of `parts`.
  void add_stored(const std::string& name, const std::vector<std::pair<const void*, size_t>>& parts);
  // A deflated entry: begin, data as it comes, end.
  void begin_deflated(const std::string& name);
  void data(const char* d, size_t n);
  void end_deflated();
  // The central directory (ZIP64 records where needed).
  void finish();

 private:
  struct Written : Entry {
    bool descriptor = false;  // sizes and CRC-32 in a data descriptor (deflated entries)
  };
  void emit(const void* p, size_t n);
  void deflate_some(const char* d, size_t n, int flush);
  AtomicFile& m_out;
  uint64_t m_pos = 0;
  z_stream m_z{};
  std::vector<Written> m_entries;
};

}  // namespace zip
}  // namespace voxtile
