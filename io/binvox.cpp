// .binvox writer and reader (io/binvox.h).
#include "io/binvox.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/files.h"

namespace voxtile {

namespace {

// Appends runs of (value, count <= 255) to `out`, merging with the run in progress.
class RunWriter {
 public:
  explicit RunWriter(std::string& out) : m_out(out) {}
  void add(uint8_t value, uint64_t count) {
    if (count == 0) return;
    if (m_count && value != m_value) flush();
    m_value = value;
    m_count += count;
    while (m_count >= 255) {
      m_out.push_back(char(m_value));
      m_out.push_back(char(uint8_t(255)));
      m_count -= 255;
    }
  }
  void flush() {
    if (m_count) {
      m_out.push_back(char(m_value));
      m_out.push_back(char(uint8_t(m_count)));
    }
    m_count = 0;
  }

 private:
  std::string& m_out;
  uint8_t m_value = 0;
  uint64_t m_count = 0;
};

}  // namespace

void check_binvox_grid(const GridSpec& spec, const std::string& path, const DenseOptions& opt) {
  const Vec3d vs = spec.voxel_size;
  if (!(vs.x == vs.y && vs.y == vs.z))
    fail(ErrorKind::kUsage, path + ": .binvox holds cubic voxels; this grid's voxel size differs per axis");
  const int64_t d = std::max({int64_t(spec.dims.x), int64_t(spec.dims.y), int64_t(spec.dims.z)});
  check_dense_budget({int32_t(d), int32_t(d), int32_t(d)}, ValueType::kNone, path, opt);  // readers expand D^3 bytes
}

void write_binvox(const SparseGrid& g, const std::string& path, const DenseOptions& opt) {
  check_binvox_grid(g.spec, path, opt);
  const Vec3d vs = g.spec.voxel_size;
  const int64_t d = std::max({int64_t(g.spec.dims.x), int64_t(g.spec.dims.y), int64_t(g.spec.dims.z)});
  std::ostringstream h;
  h << std::setprecision(17);
  h << "#binvox 1\ndim " << d << " " << d << " " << d << "\ntranslate " << g.spec.origin.x << " " << g.spec.origin.y
    << " " << g.spec.origin.z << "\nscale " << double(d) * vs.x << "\ndata\n";
  AtomicFile out(path);
  const std::string header = h.str();
  out.write(header.data(), header.size());
  // One x-plane at a time: bit (z, y) of the plane's active voxels, from the bricks of its brick
  // column (keys are x-major, so they are contiguous), then each z row along y as runs.
  const int64_t words_per_row = (d + 63) / 64;
  std::vector<uint64_t> plane(size_t(d * words_per_row));
  std::string runs;
  RunWriter w(runs);
  size_t first = 0;  // the first brick of the current brick-x column
  for (int64_t x = 0; x < d; ++x) {
    std::fill(plane.begin(), plane.end(), 0);
    if (x < g.spec.dims.x) {
      const int32_t bx = int32_t(x >> 3), lx = int32_t(x & 7);
      while (first < g.keys.size() && brick_coord(g.keys[first]).x < bx) ++first;
      for (size_t b = first; b < g.keys.size(); ++b) {
        const Int3 c = brick_coord(g.keys[b]);
        if (c.x != bx) break;
        const uint64_t word = g.masks[b].w[lx];  // (y, z) of local x: bit y * 8 + z
        for (uint64_t bits = word; bits; bits &= bits - 1) {
          const int bit = __builtin_ctzll(bits);
          const int64_t y = int64_t(c.y) * 8 + (bit >> 3), z = int64_t(c.z) * 8 + (bit & 7);
          plane[size_t(z * words_per_row + (y >> 6))] |= uint64_t(1) << (y & 63);
        }
      }
    }
    for (int64_t z = 0; z < d; ++z) {
      const uint64_t* row = &plane[size_t(z * words_per_row)];
      int64_t y = 0;
      while (y < d) {
        const uint64_t wv = row[y >> 6] >> (y & 63);
        const bool on = wv & 1;
        // The run of equal bits from y within this word, then whole words of the same value.
        const uint64_t flipped = on ? ~wv : wv;
        int64_t n = flipped ? __builtin_ctzll(flipped) : 64 - (y & 63);
        n = std::min<int64_t>(n, 64 - (y & 63));
        int64_t end = y + n;
        while ((end & 63) == 0 && end < d && row[end >> 6] == (on ? ~uint64_t(0) : 0)) end += 64;
        end = std::min(end, d);
        w.add(on ? 1 : 0, uint64_t(end - y));
        y = end;
      }
    }
    if (runs.size() >= (size_t(1) << 20)) {
      out.write(runs.data(), runs.size());
      runs.clear();
    }
  }
  w.flush();
  out.write(runs.data(), runs.size());
  out.commit();
}

SparseGrid read_binvox(const std::string& path) {
  const std::string bytes = read_input_file(path);
  size_t pos = 0;
  auto line = [&](const char* what) {
    const size_t nl = bytes.find('\n', pos);
    if (nl == std::string::npos || nl - pos > 256)
      fail(ErrorKind::kInput, path + ": truncated .binvox header (" + what + ")");
    std::string l = bytes.substr(pos, nl - pos);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    pos = nl + 1;
    return l;
  };
  if (line("magic") != "#binvox 1") fail(ErrorKind::kInput, path + ": not a .binvox file (version 1)");
  int64_t dims[3] = {-1, -1, -1};
  double t[3] = {0, 0, 0}, scale = 1.0;
  bool have_dim = false;
  for (;;) {
    const std::string l = line("fields");
    if (l == "data") break;
    std::istringstream s(l);
    std::string key;
    s >> key;
    if (key == "dim") {
      s >> dims[0] >> dims[1] >> dims[2];
      have_dim = bool(s);
    } else if (key == "translate") {
      s >> t[0] >> t[1] >> t[2];
    } else if (key == "scale") {
      s >> scale;
    } else {
      fail(ErrorKind::kInput, path + ": unknown .binvox header line '" + l.substr(0, 40) + "'");
    }
    if (!s) fail(ErrorKind::kInput, path + ": malformed .binvox header line '" + l.substr(0, 40) + "'");
  }
  if (!have_dim || dims[0] != dims[1] || dims[1] != dims[2] || dims[0] < 1 || dims[0] > kMaxGridDim)
    fail(ErrorKind::kInput, path + ": .binvox dims must be D D D with 1 <= D <= " + std::to_string(kMaxGridDim));
  if (!(std::isfinite(scale) && scale > 0) || !std::isfinite(t[0]) || !std::isfinite(t[1]) || !std::isfinite(t[2]))
    fail(ErrorKind::kInput, path + ": .binvox translate and scale must be finite, scale > 0");
  const int64_t d = dims[0];
  const uint64_t total = uint64_t(d) * uint64_t(d) * uint64_t(d);
  // Runs: voxel index = x * D^2 + z * D + y. Decoded into 8 x-planes of bits (z rows along y) at a
  // time, which then become that slab's bricks in key order.
  const int64_t words_per_row = (d + 63) / 64;
  const uint64_t plane_words = uint64_t(d) * uint64_t(words_per_row);
  std::vector<uint64_t> slab(size_t(8 * plane_words));
  SparseGrid g;
  auto flush_slab = [&](int64_t bx) {
    for (int64_t by = 0; by * 8 < d; ++by)
      for (int64_t bz = 0; bz * 8 < d; ++bz) {
        BrickMask m{};
        for (int lx = 0; lx < 8; ++lx)
          for (int lz = 0; lz < 8 && bz * 8 + lz < d; ++lz) {
            const uint64_t* row =
                &slab[size_t(uint64_t(lx) * plane_words + uint64_t(bz * 8 + lz) * uint64_t(words_per_row))];
            const uint64_t ybits = (row[(by * 8) >> 6] >> ((by * 8) & 63)) & 0xffu;  // 8 y's, within one word
            for (uint64_t bits = ybits; bits; bits &= bits - 1) m.set(brick_offset(lx, __builtin_ctzll(bits), lz));
          }
        if (m.any()) {
          g.keys.push_back(brick_key(int32_t(bx), int32_t(by), int32_t(bz)));
          g.masks.push_back(m);
        }
      }
    std::fill(slab.begin(), slab.end(), 0);
  };
  uint64_t at = 0;
  int64_t slab_x = 0;  // the slab being filled: x in [8 slab_x, 8 slab_x + 8)
  for (; pos < bytes.size(); pos += 2) {
    if (pos + 1 >= bytes.size()) fail(ErrorKind::kInput, path + ": truncated .binvox data (a run without its count)");
    const uint8_t value = uint8_t(bytes[pos]), count = uint8_t(bytes[pos + 1]);
    if (value > 1)
      fail(ErrorKind::kInput, path + ": .binvox run value " + std::to_string(value) + " (expected 0 or 1)");
    if (uint64_t(count) > total - at)
      fail(ErrorKind::kInput,
           path + ": .binvox runs hold more than the " + std::to_string(total) + " voxels of its dims");
    for (uint64_t v = at, end = at + count; v < end;) {
      const int64_t x = int64_t(v / (uint64_t(d) * uint64_t(d)));
      while (x >= 8 * (slab_x + 1)) flush_slab(slab_x++);
      const uint64_t in_row = v % uint64_t(d), row_end = std::min<uint64_t>(end, v - in_row + uint64_t(d));
      if (value) {
        const int64_t z = int64_t((v / uint64_t(d)) % uint64_t(d));
        uint64_t* row = &slab[size_t(uint64_t(x & 7) * plane_words + uint64_t(z) * uint64_t(words_per_row))];
        for (uint64_t y = in_row; y < in_row + (row_end - v); ++y) row[y >> 6] |= uint64_t(1) << (y & 63);
      }
      v = row_end;
    }
    at += count;
  }
  if (at != total)
    fail(ErrorKind::kInput,
         path + ": truncated .binvox data (" + std::to_string(at) + " of " + std::to_string(total) + " voxels)");
  while (slab_x * 8 < d) flush_slab(slab_x++);
  g.spec.dims = {int32_t(d), int32_t(d), int32_t(d)};
  g.spec.voxel_size = {scale / double(d), scale / double(d), scale / double(d)};
  g.spec.origin = {t[0], t[1], t[2]};
  g.name = "voxels";
  return g;
}

}  // namespace voxtile
