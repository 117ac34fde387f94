// SparseGrid helpers: counts, checksum, invariant checks.
#include "core/sparse_grid.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include <cstring>
#include <string>

#include "core/error.h"
#include "core/hash.h"

namespace voxtile {

// x86-64's baseline has no POPCNT instruction (popcount64, core/hd.h, is then a bit-parallel sum);
// counting loops are compiled for both and the loader picks one for the CPU (GCC turns the sum into
// the instruction in the popcnt clone).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VT_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define VT_POPCNT_CLONES
#endif

namespace {
VT_POPCNT_CLONES uint64_t count_bits(const BrickMask* m, size_t n) {
  uint64_t c = 0;
  for (size_t i = 0; i < n; ++i)
    for (uint64_t x : m[i].w) c += uint64_t(popcount64(x));
  return c;
}
}  // namespace

void expand_brick_values(const BrickMask& mask, int channels, const void* active, void* brick) {
  const size_t word = size_t(channels) * 4;  // bytes per voxel
  char* out = static_cast<char*>(brick);
  std::memset(out, 0, word * kBrickVoxels);
  const char* in = static_cast<const char*>(active);
  for (int w = 0; w < 8; ++w)
    for (uint64_t bits = mask.w[w]; bits; bits &= bits - 1) {
      std::memcpy(out + size_t(w * 64 + __builtin_ctzll(bits)) * word, in, word);
      in += word;
    }
}

size_t compact_brick_values(const BrickMask& mask, int channels, const void* brick, void* active) {
  const size_t word = size_t(channels) * 4;
  const char* in = static_cast<const char*>(brick);
  char* out = static_cast<char*>(active);
  for (int w = 0; w < 8; ++w)
    for (uint64_t bits = mask.w[w]; bits; bits &= bits - 1) {
      std::memcpy(out, in + size_t(w * 64 + __builtin_ctzll(bits)) * word, word);
      out += word;
    }
  return size_t(out - static_cast<char*>(active)) / 4;
}

void advise_huge_pages(void* p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(VT_NO_HUGE_PAGES)  // (the macro: A/B builds)
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) / kHuge * kHuge;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) / kHuge * kHuge;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // (an error: 4 KB pages)
#else
  (void)p;
  (void)bytes;
#endif
}

int BrickMask::count() const { return int(count_bits(this, 1)); }

void SparseGrid::index_values(bool size_values) {
  const size_t n = keys.size();
  value_begin.resize(n + 1);
  // Chunks' counts on all cores, their prefix, then each chunk's bricks.
  constexpr size_t kChunk = 4096;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<uint64_t> chunk_begin(chunks + 1, 0);
  tbb::parallel_for(size_t(0), chunks, [&](size_t c) {
    chunk_begin[c + 1] = count_bits(masks.data() + c * kChunk, std::min(n, (c + 1) * kChunk) - c * kChunk);
  });
  for (size_t c = 0; c < chunks; ++c) chunk_begin[c + 1] += chunk_begin[c];
  tbb::parallel_for(size_t(0), chunks, [&](size_t c) {
    uint64_t at = chunk_begin[c];
    for (size_t b = c * kChunk; b < std::min(n, (c + 1) * kChunk); ++b) {
      value_begin[b] = at;
      at += count_bits(&masks[b], 1);
    }
  });
  value_begin[n] = chunk_begin[chunks];
  if (!size_values) return;
  const size_t words = size_t(value_begin[n]) * size_t(value_channels(value_type));
  ivalues.clear();
  fvalues.clear();
  if (value_type == ValueType::kInt32)
    ivalues.resize(words);
  else if (value_type != ValueType::kNone)
    fvalues.resize(words);
}

void SparseGrid::brick_values(size_t b, void* out) const {
  const int ch = value_channels(value_type);
  const char* base = value_type == ValueType::kInt32 ? reinterpret_cast<const char*>(ivalues.data())
                                                     : reinterpret_cast<const char*>(fvalues.data());
  expand_brick_values(masks[b], ch, base + value_begin[b] * size_t(ch) * 4, out);
}

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kNone: return "mask";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kVec3f: return "vec3f";
  }
  return "?";
}

uint64_t SparseGrid::run_bricks() const {
  uint64_t n = 0;
  for (const BrickRun& r : runs) n += r.count;
  return n;
}

uint64_t SparseGrid::active_voxels() const {
  return count_bits(masks.data(), masks.size()) + run_bricks() * uint64_t(kBrickVoxels);
}

namespace {
// Appends run (key, count) to `out`, merged with the last one where they touch.
void push_run(std::vector<BrickRun>& out, uint64_t key, uint64_t count) {
  if (!out.empty() && out.back().key + out.back().count == key)
    out.back().count += count;
  else
    out.push_back({key, count});
}

// The canonical split of an occupancy grid: bricks that are not full, and maximal runs of the full
// ones (from the masks and the runs).
void split_full(const SparseGrid& g, BrickKeys* keys, BrickMasks* masks, std::vector<BrickRun>* runs) {
  size_t r = 0;
  for (size_t b = 0; b < g.keys.size(); ++b) {
    if (!brick_full(g.masks[b])) {
      keys->push_back(g.keys[b]);
      masks->push_back(g.masks[b]);
      continue;
    }
    for (; r < g.runs.size() && g.runs[r].key < g.keys[b]; ++r) push_run(*runs, g.runs[r].key, g.runs[r].count);
    push_run(*runs, g.keys[b], 1);
  }
  for (; r < g.runs.size(); ++r) push_run(*runs, g.runs[r].key, g.runs[r].count);
}

bool any_full(const SparseGrid& g) {
  if (g.value_type != ValueType::kNone) return false;
  if (!g.runs.empty()) return true;
  for (const BrickMask& m : g.masks)
    if (brick_full(m)) return true;
  return false;
}
}  // namespace

void SparseGrid::make_runs() {
  if (!any_full(*this)) return;
  BrickKeys k;
  BrickMasks m;
  std::vector<BrickRun> r;
  k.reserve(keys.size());
  m.reserve(keys.size());
  split_full(*this, &k, &m, &r);
  keys = std::move(k);
  masks = std::move(m);
  runs = std::move(r);
}

void SparseGrid::make_runs_from(size_t first) {
  if (value_type != ValueType::kNone) return;
  size_t kept = first;
  for (size_t b = first; b < keys.size(); ++b) {
    if (brick_full(masks[b])) {
      push_run(runs, keys[b], 1);
    } else {
      keys[kept] = keys[b];
      masks[kept] = masks[b];
      ++kept;
    }
  }
  keys.resize(kept);
  masks.resize(kept);
}

void SparseGrid::expand_runs() {
  if (runs.empty()) return;
  const uint64_t n = uint64_t(keys.size()) + run_bricks();
  const uint64_t bytes = n * (sizeof(uint64_t) + sizeof(BrickMask));
  const uint64_t memory = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGE_SIZE));
  if (bytes > memory / 2)
    fail(ErrorKind::kResource, "the grid's " + std::to_string(run_bricks()) + " interior bricks written out would take " +
                                   std::to_string(bytes >> 20) +
                                   " MB, more than half the machine's memory: write .vdb (it keeps them as tiles)");
  BrickKeys k;
  BrickMasks m;
  k.reserve(n);
  m.reserve(n);
  const BrickMask all = full_brick_mask();
  size_t b = 0;
  for (const BrickRun& r : runs) {
    for (; b < keys.size() && keys[b] < r.key; ++b) {
      k.push_back(keys[b]);
      m.push_back(masks[b]);
    }
    for (uint64_t i = 0; i < r.count; ++i) {
      k.push_back(r.key + i);
      m.push_back(all);
    }
  }
  for (; b < keys.size(); ++b) {
    k.push_back(keys[b]);
    m.push_back(masks[b]);
  }
  keys = std::move(k);
  masks = std::move(m);
  runs.clear();
}

const SparseGrid& expanded_runs(const SparseGrid& g, SparseGrid& storage) {
  if (g.runs.empty()) return g;
  storage = g;
  storage.expand_runs();
  return storage;
}

double SparseGrid::value(size_t b, int offset, int c) const {
  if (!masks[b].test(offset)) return 0.0;
  switch (value_type) {
    case ValueType::kInt32:
      return ivalues[value_index(b, offset)];
    case ValueType::kFloat32:
      return fvalues[value_index(b, offset)];
    case ValueType::kVec3f:
      return fvalues[value_index(b, offset) * 3 + uint64_t(c)];
    case ValueType::kNone: break;
  }
  return 1.0;
}

uint64_t SparseGrid::checksum() const {
  Hasher h;
  h.pod(spec.dims.x);
  h.pod(spec.dims.y);
  h.pod(spec.dims.z);
  h.pod(static_cast<uint8_t>(value_type));
  if (any_full(*this)) {
    BrickKeys k;
    BrickMasks m;
    std::vector<BrickRun> r;
    split_full(*this, &k, &m, &r);
    h.bytes(k.data(), k.size() * sizeof(k[0]));
    h.bytes(m.data(), m.size() * sizeof(m[0]));
    h.pod(uint64_t(r.size()));
    for (const BrickRun& x : r) {
      h.pod(x.key);
      h.pod(x.count);
    }
    return h.digest();
  }
  h.bytes(keys.data(), keys.size() * sizeof(keys[0]));
  h.bytes(masks.data(), masks.size() * sizeof(masks[0]));
  if (value_type == ValueType::kNone) return h.digest();
  // The values of the active voxels, brick by brick (as they are held).
  if (value_type == ValueType::kInt32)
    h.bytes(ivalues.data(), ivalues.size() * sizeof(int32_t));
  else
    h.bytes(fvalues.data(), fvalues.size() * sizeof(float));
  return h.digest();
}

void SparseGrid::validate() const {
  if (masks.size() != keys.size()) fail(ErrorKind::kInternal, "sparse grid: masks and keys differ in length");
  if (value_type != ValueType::kNone) {
    const bool none = keys.empty() && value_begin.empty();  // (an empty grid need not be indexed)
    if (!none && (value_begin.size() != keys.size() + 1 || value_begin[0] != 0))
      fail(ErrorKind::kInternal, "sparse grid: value_begin not indexed");
    for (size_t b = 0; b < keys.size(); ++b)
      if (value_begin[b + 1] - value_begin[b] != uint64_t(masks[b].count()))
        fail(ErrorKind::kInternal, "sparse grid: value_begin does not follow the masks");
    const size_t nv = none ? 0 : size_t(value_begin.back()) * size_t(value_channels(value_type));
    if ((value_type == ValueType::kInt32 ? ivalues.size() : fvalues.size()) != nv ||
        (value_type == ValueType::kInt32 ? fvalues.size() : ivalues.size()) != 0)
      fail(ErrorKind::kInternal, "sparse grid: bad value count");
  } else if (!value_begin.empty() || !ivalues.empty() || !fvalues.empty()) {
    fail(ErrorKind::kInternal, "sparse grid: values in an occupancy grid");
  }
  for (size_t b = 0; b < keys.size(); ++b) {
    if (b > 0 && keys[b] <= keys[b - 1]) fail(ErrorKind::kInternal, "sparse grid: keys not strictly ascending");
    if (!masks[b].any()) fail(ErrorKind::kInternal, "sparse grid: empty brick stored");
    const Int3 c = brick_coord(keys[b]);
    if (c.x * 8 >= spec.dims.x || c.y * 8 >= spec.dims.y || c.z * 8 >= spec.dims.z)
      fail(ErrorKind::kInternal, "sparse grid: brick outside the grid");
  }
  for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
    if (i >= spec.dims.x || j >= spec.dims.y || k >= spec.dims.z)
      fail(ErrorKind::kInternal, "sparse grid: active voxel outside the grid");
  });
  if (!runs.empty() && value_type != ValueType::kNone) fail(ErrorKind::kInternal, "sparse grid: runs in a value grid");
  size_t b = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const BrickRun& x = runs[r];
    if (x.count == 0) fail(ErrorKind::kInternal, "sparse grid: empty run");
    if (r > 0 && x.key < runs[r - 1].key + runs[r - 1].count)
      fail(ErrorKind::kInternal, "sparse grid: runs not ascending and disjoint");
    const Int3 c = brick_coord(x.key);
    if (c.x * 8 + 8 > spec.dims.x || c.y * 8 + 8 > spec.dims.y || (uint64_t(c.z) + x.count) * 8 > uint64_t(spec.dims.z))
      fail(ErrorKind::kInternal, "sparse grid: run outside the grid");
    for (; b < keys.size() && keys[b] < x.key; ++b) {
    }
    if (b < keys.size() && keys[b] < x.key + x.count) fail(ErrorKind::kInternal, "sparse grid: a brick inside a run");
  }
}

SparseGridBuilder::SparseGridBuilder(const GridSpec& spec, ValueType type, const std::string& name,
                                     const std::string& source)
    : m_source(source) {
  m_grid.spec = spec;
  m_grid.value_type = type;
  m_grid.name = name;
}

void SparseGridBuilder::add(int32_t i, int32_t j, int32_t k, const uint32_t* value) {
  const Int3& d = m_grid.spec.dims;
  if (i < 0 || j < 0 || k < 0 || i >= d.x || j >= d.y || k >= d.z)
    fail(ErrorKind::kInput, m_source + ": a voxel lies outside the grid's dims");
  m_entries.push_back({brick_key(i >> 3, j >> 3, k >> 3), uint16_t(brick_offset(i & 7, j & 7, k & 7)), m_values.size()});
  if (value) m_values.insert(m_values.end(), value, value + value_channels(m_grid.value_type));
}

SparseGrid SparseGridBuilder::build() {
  tbb::parallel_sort(m_entries.begin(), m_entries.end(), [](const Entry& a, const Entry& b) {
    return a.key != b.key ? a.key < b.key : a.off < b.off;
  });
  const ValueType type = m_grid.value_type;
  const int ch = value_channels(type);
  for (size_t n = 0; n < m_entries.size(); ++n) {
    const Entry& e = m_entries[n];
    if (n > 0 && e.key == m_entries[n - 1].key && e.off == m_entries[n - 1].off)
      fail(ErrorKind::kInput, m_source + ": the same voxel appears twice");
    if (n == 0 || e.key != m_entries[n - 1].key) {
      m_grid.keys.push_back(e.key);
      m_grid.masks.push_back(BrickMask{});
    }
    m_grid.masks[m_grid.keys.size() - 1].set(e.off);
  }
  if (ch) {
    m_grid.index_values();  // (the entries' order is the values')
    char* dst = type == ValueType::kInt32 ? reinterpret_cast<char*>(m_grid.ivalues.data())
                                          : reinterpret_cast<char*>(m_grid.fvalues.data());
    for (const Entry& e : m_entries) {
      std::memcpy(dst, &m_values[e.value], size_t(ch) * 4);
      dst += size_t(ch) * 4;
    }
  }
  m_entries.clear();
  m_values.clear();
  return std::move(m_grid);
}

}  // namespace voxtile
