// Scanning text files held in memory (the native mesh readers, text point clouds): lines found 16
// bytes at a time, numbers parsed with fast_float (Debian libfast-float-dev, correctly rounded),
// and a file split into chunks that start at line starts, for parsing on TBB threads.
#pragma once

#include <fast_float/fast_float.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <vector>

namespace voxtile {
namespace text_scan {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
inline const char* skip_spaces(const char* p, const char* end) {
  while (p < end && is_space(*p)) ++p;
  return p;
}
// The newline ending the line at p, or end. Lines are short (20 to 60 bytes): 16 bytes compared at a
// time inline, which is about twice as fast as a memchr call per line.
inline const char* line_end(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  for (; end - p >= 16; p += 16) {
    const int m = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), nl));
    if (m) return p + __builtin_ctz(unsigned(m));
  }
#endif
  while (p < end && *p != '\n') ++p;
  return p;
}
// A float or double token at p (fast_float, correctly rounded); false when there is none.
template <class T>
inline bool parse_number(const char*& p, const char* end, T& out) {
  p = skip_spaces(p, end);
  if (p < end && *p == '+') ++p;  // fast_float takes no leading '+'
  const auto r = fast_float::from_chars(p, end, out);
  if (r.ec != std::errc() && r.ec != std::errc::result_out_of_range) return false;
  p = r.ptr;
  return true;
}
inline bool parse_float(const char*& p, const char* end, float& out) { return parse_number(p, end, out); }
inline bool parse_double(const char*& p, const char* end, double& out) { return parse_number(p, end, out); }
inline bool parse_int(const char*& p, const char* end, int64_t& out) {
  bool neg = false;
  if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
  if (p >= end || *p < '0' || *p > '9') return false;
  int64_t v = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    if (v < (int64_t(1) << 58)) v = v * 10 + (*p - '0');
    ++p;
  }
  out = neg ? -v : v;
  return true;
}
// The first word of a line (after leading spaces) and where it ends.
inline bool starts_with_word(const char* p, const char* end, const char* word, size_t n) {
  return size_t(end - p) >= n && std::memcmp(p, word, n) == 0 && (size_t(end - p) == n || is_space(p[n]) || p[n] == '\n');
}

// Chunk boundaries: [starts[c], starts[c+1]) of [begin, end), each starting at a line start. About
// eight chunks per thread, 64 KB to 1 MB each: small files are spread over every core too.
inline std::vector<size_t> line_chunks(const char* data, size_t begin, size_t end) {
  const size_t threads = size_t(std::max(1, tbb::this_task_arena::max_concurrency()));
  const size_t target = std::clamp<size_t>((end - begin) / (8 * threads), size_t(1) << 16, size_t(1) << 20);
  std::vector<size_t> starts{begin};
  for (size_t pos = begin + target; pos < end; pos += target) {
    const char* nl = line_end(data + pos, data + end);
    const size_t s = size_t(nl - data) + 1;
    if (s >= end) break;
    if (s > starts.back()) starts.push_back(s);
    pos = s;
  }
  starts.push_back(end);
  return starts;
}

// Where each of `parts` parts' items go when they are laid out in order: count(c) of every part on
// TBB threads, then the exclusive scan (first[c] items before part c; first[parts] the total), so
// that a second pass can parse each part's items straight into their places.
template <class Count>
std::vector<size_t> part_offsets(size_t parts, Count&& count) {
  std::vector<size_t> first(parts + 1, 0);
  tbb::parallel_for(size_t(0), parts, [&](size_t c) { first[c + 1] = count(c); });
  for (size_t c = 0; c < parts; ++c) first[c + 1] += first[c];
  return first;
}

}  // namespace text_scan
}  // namespace voxtile
