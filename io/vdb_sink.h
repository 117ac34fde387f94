// Building a .vdb file in pieces, shared by the direct writer (io/vdb_direct.cpp, in the executable)
// and the OpenVDB module's writers (io/vdb.cpp): a byte buffer that the leaf loops and OpenVDB's
// serializers (through an ostream) append to, handed to the file whenever it holds a megabyte; the
// grid offsets, known only at the end, are patched in place.
#pragma once

#include <cstdio>
#include <cstring>
#include <ostream>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/sparse_grid.h"
#include "io/atomic_file.h"

namespace voxtile::vdb_io {

// The file image; resize() does not zero what is about to be overwritten.
using Bytes = std::vector<char, NoInitAllocator<char>>;

// A streambuf that appends to a byte vector (OpenVDB's serializers write to ostreams).
class AppendBuf : public std::streambuf {
 public:
  explicit AppendBuf(Bytes& v) : m_v(v) {}

 protected:
  std::streamsize xsputn(const char* p, std::streamsize n) override {
    m_v.insert(m_v.end(), p, p + n);
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) m_v.push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }

 private:
  Bytes& m_v;
};

// A value's bytes as they are in memory (OpenVDB's files are little-endian, as this machine is).
template <class B, class T>
void put(B& out, const T& v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
// OpenVDB's writeString: a 32-bit length, then the characters.
template <class B>
void put_string(B& out, const std::string& s) {
  put(out, uint32_t(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

class Sink {
 public:
  explicit Sink(AtomicFile& file) : m_file(file), m_buf_stream(m_buf), m_os(&m_buf_stream) {}
  Bytes& bytes() { return m_buf; }
  std::ostream& stream() { return m_os; }  // appends to bytes()
  uint64_t pos() const { return m_written + m_buf.size(); }
  void flush_if_full() {
    if (m_buf.size() >= (size_t(1) << 20)) flush();
  }
  void flush() {
    m_file.write(m_buf.data(), m_buf.size());
    m_written += m_buf.size();
    m_buf.clear();
  }
  // Appends `b` (what the buffer holds goes first), handing it to the file as it is.
  void write(const Bytes& b) {
    if (m_buf.size() + b.size() < (size_t(1) << 20)) {
      m_buf.insert(m_buf.end(), b.begin(), b.end());
      return;
    }
    flush();
    m_file.write(b.data(), b.size());
    m_written += b.size();
  }
  void patch(uint64_t at, const Bytes& b) { m_patches.emplace_back(at, b); }
  void finish() {
    flush();
    for (const auto& [at, b] : m_patches)
      if (std::fseek(m_file.stream(), long(at), SEEK_SET) != 0 ||
          std::fwrite(b.data(), 1, b.size(), m_file.stream()) != b.size())
        fail(ErrorKind::kOutput, m_file.final_path() + ": write failed");
  }

 private:
  AtomicFile& m_file;
  Bytes m_buf;
  AppendBuf m_buf_stream;
  uint64_t m_written = 0;
  std::ostream m_os;
  std::vector<std::pair<uint64_t, Bytes>> m_patches;
};

}  // namespace voxtile::vdb_io
