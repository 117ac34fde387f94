// .vdb files of binary grids without OpenVDB (io/vdb_direct.h).
#include "io/vdb_direct.h"

#include <blosc.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "core/error.h"
#include "core/hash.h"
#include "io/vdb.h"
#include "io/vdb_sink.h"

namespace voxtile {

using vdb_io::Bytes;
using vdb_io::put;
using vdb_io::put_string;

uint16_t half_bits(float x) {
  uint32_t i;
  std::memcpy(&i, &x, 4);
  const uint32_t sign = (i >> 16) & 0x8000u, mag = i & 0x7fffffffu;
  if (mag >= 0x7f800000u) {  // infinity; a NaN keeps its payload's top bits (at least one)
    const uint32_t payload = (mag & 0x7fffffu) >> 13;
    return uint16_t(sign | 0x7c00u | (mag > 0x7f800000u ? (payload ? payload : 1u) : 0u));
  }
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds beyond 65504: infinity
  if (mag < 0x38800000u) {                                  // below 2^-14: a subnormal half, or 0
    if (mag < 0x33000000u) return uint16_t(sign);           // at most 2^-25: rounds to 0 (a tie, to even)
    const uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    const int shift = 126 - int(mag >> 23);  // 14 + (113 - exponent)
    const uint32_t half_ulp = 1u << (shift - 1), rest = m & ((1u << shift) - 1u);
    uint32_t h = m >> shift;
    if (rest > half_ulp || (rest == half_ulp && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  // Normal: rebias the exponent, round the significand to 10 bits (a carry raises the exponent).
  const uint32_t rebased = mag - 0x38000000u;
  return uint16_t(sign | ((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t i;
  if (e == 0x1fu) {
    i = sign | 0x7f800000u | (m << 13);
  } else if (e != 0) {
    i = sign | ((e + 112u) << 23) | (m << 13);
  } else if (m == 0) {
    i = sign;
  } else {  // subnormal: m 2^-24
    const float f = float(m) * (1.0f / 16777216.0f);
    std::memcpy(&i, &f, 4);
    i |= sign;
  }
  float x;
  std::memcpy(&x, &i, 4);
  return x;
}

std::string vdb_deterministic_uuid(uint64_t seed) {
  uint64_t hi = seed, lo = seed ^ 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 3; ++i) {
    hi = (hi ^ (hi >> 31)) * 0xbf58476d1ce4e5b9ull;
    lo = (lo ^ (lo >> 29)) * 0x94d049bb133111ebull;
  }
  char text[40];
  std::snprintf(text, sizeof(text), "%08x-%04x-4%03x-%04x-%012llx", unsigned(hi >> 32), unsigned((hi >> 16) & 0xffff),
                unsigned(hi & 0xfff), unsigned(0x8000 | ((lo >> 48) & 0x3fff)),
                static_cast<unsigned long long>(lo & 0xffffffffffffull));
  return std::string(text, 36);
}

std::string vdb_file_header(uint64_t seed, size_t grids) {
  std::string out;
  put(out, vdb_format::kMagic);
  put(out, vdb_format::kFileVersion);
  put(out, vdb_format::kLibraryMajor);
  put(out, vdb_format::kLibraryMinor);
  put(out, char(1));  // grid offsets follow each descriptor
  out += vdb_deterministic_uuid(seed);
  put(out, uint32_t(0));  // the file's metadata: none
  put(out, int32_t(grids));
  return out;
}

namespace {

// Each grid's dims, value type, bricks and active values, hashed in chunks of bricks on all cores,
// then the chunks' digests in order.
uint64_t content_hash(const SparseGrid& g) {
  constexpr size_t kChunk = 2048;
  const size_t chunks = (g.keys.size() + kChunk - 1) / kChunk;
  std::vector<uint64_t> digests(chunks);
  tbb::parallel_for(size_t(0), chunks, [&](size_t c) {
    Hasher h;
    const size_t b0 = c * kChunk, b1 = std::min(g.keys.size(), b0 + kChunk);
    h.bytes(g.keys.data() + b0, (b1 - b0) * sizeof(uint64_t));
    h.bytes(g.masks.data() + b0, (b1 - b0) * sizeof(BrickMask));
    if (g.value_type != ValueType::kNone) {
      const size_t ch = size_t(value_channels(g.value_type));
      const char* v = g.value_type == ValueType::kInt32 ? reinterpret_cast<const char*>(g.ivalues.data())
                                                        : reinterpret_cast<const char*>(g.fvalues.data());
      h.bytes(v + g.value_begin[b0] * ch * 4, (g.value_begin[b1] - g.value_begin[b0]) * ch * 4);
    }
    digests[c] = h.digest();
  });
  Hasher h;
  h.pod(g.spec.dims);
  h.pod(static_cast<uint8_t>(g.value_type));
  h.bytes(digests.data(), digests.size() * sizeof(uint64_t));
  if (!g.runs.empty()) h.bytes(g.runs.data(), g.runs.size() * sizeof(BrickRun));
  return h.digest();
}

}  // namespace

uint64_t vdb_file_seed(const std::vector<const SparseGrid*>& grids, const Metadata& meta) {
  Hasher h;
  for (const SparseGrid* g : grids) {
    h.pod(content_hash(*g));
    h.bytes(g->name.data(), g->name.size());
  }
  for (const auto& [key, value] : meta) {
    h.bytes(key.data(), key.size());
    h.bytes(value.data(), value.size());
  }
  return h.digest();
}

// The map's values as OpenVDB's (Uniform)ScaleTranslateMap computes and writes them: translation,
// scale, voxel size, inverse scale, its square, half of it.
std::string vdb_transform_bytes(const GridSpec& s) {
  const double scale[3] = {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z};
  const double origin[3] = {s.origin.x, s.origin.y, s.origin.z};
  for (double a : scale)
    if (!(a > 0.0) || !std::isfinite(a) || !std::isfinite(1.0 / (a * a)))
      fail(ErrorKind::kUsage, "voxel size " + std::to_string(a) + " cannot be stored in a .vdb transform");
  const bool uniform = scale[0] == scale[1] && scale[1] == scale[2];
  std::string out;
  put_string(out, uniform ? "UniformScaleTranslateMap" : "ScaleTranslateMap");
  auto vec = [&](auto&& f) {
    for (int a = 0; a < 3; ++a) put(out, double(f(a)));
  };
  vec([&](int a) { return origin[a] + 0.5 * scale[a]; });
  vec([&](int a) { return scale[a]; });
  vec([&](int a) { return std::abs(scale[a]); });
  vec([&](int a) { return 1.0 / scale[a]; });
  vec([&](int a) { return (1.0 / scale[a]) * (1.0 / scale[a]); });
  vec([&](int a) { return (1.0 / scale[a]) / 2; });
  return out;
}

namespace {

// OpenVDB's 5-4-3 tree: leaves of 8^3 voxels, lower nodes of 16^3 leaves (128^3 voxels), upper nodes
// of 32^3 lower nodes (4096^3 voxels), children of the root.
constexpr int kLowerDim = 128, kUpperDim = 4096;
template <int kBits>
struct NodeMask {  // util::NodeMask: bit n is bit n % 64 of 64-bit word n / 64
  std::array<uint64_t, kBits / 64> w{};
  void set(uint32_t n) { w[n >> 6] |= uint64_t(1) << (n & 63); }
};
using UpperMask = NodeMask<32768>;
using LowerMask = NodeMask<4096>;
// InternalNode::coordToOffset of a voxel (x, y, z) in a lower node (its leaf) or upper node (its lower node)
uint32_t lower_offset(int32_t x, int32_t y, int32_t z) {
  return uint32_t(((x & (kLowerDim - 1)) >> 3) << 8 | ((y & (kLowerDim - 1)) >> 3) << 4 | ((z & (kLowerDim - 1)) >> 3));
}
uint32_t upper_offset(int32_t x, int32_t y, int32_t z) {
  return uint32_t(((x & (kUpperDim - 1)) >> 7) << 10 | ((y & (kUpperDim - 1)) >> 7) << 5 |
                  ((z & (kUpperDim - 1)) >> 7));
}

// io::bloscToStream: the compressed size and Blosc's output with OpenVDB's settings (level 9,
// shuffle, 4-byte type size, LZ4, one block, one thread), or the negative size and the bytes where
// Blosc fails.
void put_blosc(Bytes& out, const void* data, size_t bytes) {
  const size_t at = out.size();
  out.resize(at + 8 + bytes + BLOSC_MAX_OVERHEAD);
  const int n = blosc_compress_ctx(9, 1, sizeof(float), bytes, data, out.data() + at + 8, bytes + BLOSC_MAX_OVERHEAD,
                                   BLOSC_LZ4_COMPNAME, bytes, 1);
  const int64_t count = n > 0 ? int64_t(n) : -int64_t(bytes);
  std::memcpy(out.data() + at, &count, 8);
  if (n <= 0 && bytes > 0) std::memcpy(out.data() + at + 8, data, bytes);
  out.resize(at + 8 + (n > 0 ? size_t(n) : bytes));
}

// An internal node's values as InternalNode::writeTopology writes them: writeCompressedValues of
// its values (children's slots zero), here the mask-compression code NO_MASK_OR_INACTIVE_VALS (every
// inactive value is the background, false), then its active values (`active` tiles, all true).
void put_tile_values(Bytes& out, uint32_t active) {
  out.push_back(0);
  const std::vector<char> values(active, 1);
  put_blosc(out, values.data(), active);
}

// The tree OpenVDB builds for a binary grid (io/vdb.cpp build_grid): upper nodes (children of the
// root) in the root's order, by (x, y, z) of their origin, then in each node its children by child
// index (x-major), down to the leaves. A solid's interior runs are active tiles in the lower nodes,
// and the tree is pruned (tools::prune): full leaves become active tiles too, and a lower node of
// active tiles alone an active tile of its upper node (an upper node all active, a tile of the root,
// goes to OpenVDB's writer: direct_vdb_writable).
struct MaskTreeLayout {
  struct Lower {
    Int3 origin;
    LowerMask children, active;
    uint32_t tiles;
    size_t first, count;  // leaves [first, first + count)
  };
  struct Upper {
    Int3 origin;
    UpperMask children, active;
    uint32_t tiles;
    size_t first, count;  // lowers [first, first + count), some of them tiles
  };
  std::vector<Upper> uppers;
  std::vector<Lower> lowers;
  std::vector<size_t> leaves;  // bricks
  size_t written_lowers = 0;   // lowers that are nodes
};

// The upper node (4096^3 voxels) of a brick, as the key of a brick of its coordinates.
uint64_t upper_node_key(const Int3& c) { return brick_key(c.x >> 9, c.y >> 9, c.z >> 9); }
// The grid's upper nodes, sorted: the root's order, by (x, y, z) of their origin.
std::vector<uint64_t> upper_node_keys(const SparseGrid& g) {
  std::vector<uint64_t> keys;
  auto add = [&](const Int3& c) {
    const uint64_t k = upper_node_key(c);
    if (keys.empty() || keys.back() != k) keys.push_back(k);
  };
  for (uint64_t key : g.keys) add(brick_coord(key));
  for_each_run_piece(g.runs, 512, [&](const Int3& c, uint64_t) { add(c); });
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}
// Grids of more upper nodes (scattered over a huge grid) go to OpenVDB's writer, which keeps no
// table of lower nodes per upper node.
constexpr size_t kMaxUpperNodes = 1024;

// Linear in the bricks and the runs' pieces (no sort of them: a solid at 8192^3 has 35M pieces): the
// upper nodes are few, sorted; each has a table of its 32^3 lower nodes, numbered in the tree's order
// (child index, x-major); a lower node's leaves are its bricks in key order, which within a node is
// the child index order too.
MaskTreeLayout mask_tree_layout(const SparseGrid& g) {
  using Lower = MaskTreeLayout::Lower;
  using Upper = MaskTreeLayout::Upper;
  const bool pruned = !g.runs.empty();
  // Calls f(brick coordinates, bricks along z from there, brick index or -1 for tiles) for each
  // surface brick and each piece of a run within one lower node.
  auto for_each_piece = [&](auto&& f) {
    for (size_t b = 0; b < g.keys.size(); ++b) f(brick_coord(g.keys[b]), uint32_t(1), int64_t(b));
    for_each_run_piece(g.runs, 16, [&](const Int3& c, uint64_t n) { f(c, uint32_t(n), int64_t(-1)); });
  };
  // The upper nodes, by (x, y, z) of their origin (the root's order), and the one of a brick.
  const std::vector<uint64_t> upper_keys = upper_node_keys(g);
  size_t last = 0;
  auto upper_of = [&](const Int3& c) {
    const uint64_t k = upper_node_key(c);
    if (upper_keys[last] != k)
      last = size_t(std::lower_bound(upper_keys.begin(), upper_keys.end(), k) - upper_keys.begin());
    return last;
  };
  auto lower_slot = [](const Int3& c) {
    return uint32_t((c.x >> 4) & 31) << 10 | uint32_t((c.y >> 4) & 31) << 5 | uint32_t((c.z >> 4) & 31);
  };
  // Each upper node's lower nodes: marked, then numbered in the tree's order (from its first lower
  // node's index: 64 KB a node, at most kMaxUpperNodes of them).
  MaskTreeLayout t;
  constexpr uint16_t kNone = 0xffff;
  std::vector<std::vector<uint16_t>> table(upper_keys.size(), std::vector<uint16_t>(32768, kNone));
  for_each_piece([&](const Int3& c, uint32_t, int64_t) { table[upper_of(c)][lower_slot(c)] = 0; });
  auto lower_of = [&](const Int3& c) -> MaskTreeLayout::Lower& {
    const size_t u = upper_of(c);
    return t.lowers[t.uppers[u].first + table[u][lower_slot(c)]];
  };
  for (size_t u = 0; u < upper_keys.size(); ++u) {
    const Int3 uc = brick_coord(upper_keys[u]);
    t.uppers.push_back({{uc.x * kUpperDim, uc.y * kUpperDim, uc.z * kUpperDim}, {}, {}, 0, t.lowers.size(), 0});
    Upper& up = t.uppers.back();
    for (uint32_t slot = 0; slot < 32768; ++slot) {
      if (table[u][slot] == kNone) continue;
      table[u][slot] = uint16_t(up.count);
      const Int3 o{up.origin.x + int32_t(slot >> 10) * kLowerDim, up.origin.y + int32_t((slot >> 5) & 31) * kLowerDim,
                   up.origin.z + int32_t(slot & 31) * kLowerDim};
      t.lowers.push_back({o, {}, {}, 0, 0, 0});
      ++up.count;
    }
  }
  // Leaves and tiles: full leaves are tiles where the tree is pruned.
  for_each_piece([&](const Int3& c, uint32_t count, int64_t b) {
    Lower& low = lower_of(c);
    const uint32_t off = lower_offset(c.x * 8, c.y * 8, c.z * 8);
    if (b < 0 || (pruned && brick_full(g.masks[size_t(b)]))) {  // along z: one 16-bit field of a word
      low.active.w[off >> 6] |= ((uint64_t(1) << count) - 1) << (off & 63);
      low.tiles += count;
    } else {
      low.children.set(off);
      ++low.count;
    }
  });
  size_t leaves = 0;
  for (Lower& low : t.lowers) {
    low.first = leaves;
    leaves += low.count;
    low.count = 0;
  }
  t.leaves.resize(leaves);
  for (size_t b = 0; b < g.keys.size(); ++b) {
    if (pruned && brick_full(g.masks[b])) continue;
    Lower& low = lower_of(brick_coord(g.keys[b]));
    t.leaves[low.first + low.count++] = b;
  }
  for (Upper& u : t.uppers)
    for (size_t l = u.first; l < u.first + u.count; ++l) {
      const Lower& low = t.lowers[l];
      const uint32_t off = upper_offset(low.origin.x, low.origin.y, low.origin.z);
      if (low.tiles == 4096) {
        u.active.set(off);
        ++u.tiles;
      } else {
        u.children.set(off);
        ++t.written_lowers;
      }
    }
  return t;
}

// A metadata value as MetaMap::writeMeta writes it: its type name, then its size and bytes.
struct MetaValue {
  std::string type, bytes;
};
MetaValue vec3i(const Int3& v) {
  MetaValue m{"vec3i", {}};
  for (int32_t x : {v.x, v.y, v.z}) put(m.bytes, x);
  return m;
}

// What GridBase::addStatsMetadata() records, computed from the bricks: the active voxel bounding
// box and count, and tools::memUsage() of the tree OpenVDB would build.
void add_stats(std::map<std::string, MetaValue>& meta, const SparseGrid& g, const MaskTreeLayout& t,
               const vdb_format::NodeBytes& bytes) {
  // Only bricks on the bricks' own bounding box can hold an extreme voxel; for those, the extreme
  // active x is the first/last non-zero word, y the first/last non-zero byte of the words' union,
  // z the lowest/highest bit of the bytes' union.
  Int3 blo{INT32_MAX, INT32_MAX, INT32_MAX}, bhi{-1, -1, -1};
  for (uint64_t key : g.keys) {
    const Int3 c = brick_coord(key);
    blo = {std::min(blo.x, c.x), std::min(blo.y, c.y), std::min(blo.z, c.z)};
    bhi = {std::max(bhi.x, c.x), std::max(bhi.y, c.y), std::max(bhi.z, c.z)};
  }
  Int3 lo{INT32_MAX, INT32_MAX, INT32_MAX}, hi{INT32_MIN, INT32_MIN, INT32_MIN};
  for (size_t b = 0; b < g.keys.size(); ++b) {
    const Int3 c = brick_coord(g.keys[b]);
    if (c.x != blo.x && c.x != bhi.x && c.y != blo.y && c.y != bhi.y && c.z != blo.z && c.z != bhi.z) continue;
    const BrickMask& m = g.masks[b];
    unsigned xs = 0;
    uint64_t yz = 0;
    for (int w = 0; w < 8; ++w) {
      xs |= unsigned(m.w[w] != 0) << w;
      yz |= m.w[w];
    }
    unsigned ys = 0, zs = 0;
    for (int y = 0; y < 8; ++y) {
      const unsigned row = unsigned(yz >> (8 * y)) & 0xffu;
      ys |= unsigned(row != 0) << y;
      zs |= row;
    }
    lo = {std::min(lo.x, c.x * 8 + __builtin_ctz(xs)), std::min(lo.y, c.y * 8 + __builtin_ctz(ys)),
          std::min(lo.z, c.z * 8 + __builtin_ctz(zs))};
    hi = {std::max(hi.x, c.x * 8 + 31 - __builtin_clz(xs)), std::max(hi.y, c.y * 8 + 31 - __builtin_clz(ys)),
          std::max(hi.z, c.z * 8 + 31 - __builtin_clz(zs))};
  }
  for (const BrickRun& r : g.runs) {  // full bricks
    const Int3 c = brick_coord(r.key);
    lo = {std::min(lo.x, c.x * 8), std::min(lo.y, c.y * 8), std::min(lo.z, c.z * 8)};
    hi = {std::max(hi.x, c.x * 8 + 7), std::max(hi.y, c.y * 8 + 7), std::max(hi.z, int32_t((c.z + r.count) * 8 - 1))};
  }
  const uint64_t mem =
      bytes.tree + t.uppers.size() * bytes.upper + t.written_lowers * bytes.lower + t.leaves.size() * bytes.leaf;
  meta["file_bbox_min"] = vec3i(lo);
  meta["file_bbox_max"] = vec3i(hi);
  meta["file_mem_bytes"] = {"int64", {}};
  put(meta["file_mem_bytes"].bytes, int64_t(mem));
  meta["file_voxel_count"] = {"int64", {}};
  put(meta["file_voxel_count"].bytes, int64_t(g.active_voxels()));
}

// Where a grid's three offsets (GridDescriptor: grid, buffers and end positions) go, patched at its end.
struct GridOffsets {
  uint64_t at;
  int64_t pos[3];
};
// A grid's start as Archive::writeGrid writes it: GridDescriptor::writeHeader (name, tree type, no
// instance parent), placeholders for its offsets, the compression flags (Archive::setGridCompression
// keeps the file's for every grid here: no ZIP to drop), the grid's metadata (GridBase::writeMeta:
// by name, what describe() and addStatsMetadata() set, with `extra` such as the class and the
// delayed-load metadata), then the transform.
GridOffsets put_grid_head(vdb_io::Sink& sink, const SparseGrid& g, const Metadata& meta, const char* tree_type,
                          std::map<std::string, MetaValue> entries) {
  Bytes& out = sink.bytes();
  put_string(out, g.name);
  put_string(out, tree_type);
  put_string(out, "");  // no instance parent
  GridOffsets o{sink.pos(), {0, 0, 0}};
  put(out, o.pos);
  o.pos[0] = int64_t(sink.pos());
  put(out, vdb_format::kCompression);
  entries["name"] = {"string", g.name};
  entries["voxtile_dims"] = vec3i(g.spec.dims);
  entries["voxtile_origin"] = {"vec3d", {}};
  for (double x : {g.spec.origin.x, g.spec.origin.y, g.spec.origin.z}) put(entries["voxtile_origin"].bytes, x);
  for (const auto& [key, value] : meta) entries["voxtile_" + key] = {"string", value};
  entries["file_compression"] = {"string", vdb_format::kCompressionName};
  put(out, uint32_t(entries.size()));
  for (const auto& [name, value] : entries) {
    put_string(out, name);
    put_string(out, value.type);
    put_string(out, value.bytes);
  }
  const std::string transform = vdb_transform_bytes(g.spec);
  out.insert(out.end(), transform.begin(), transform.end());
  return o;
}
void patch_grid_offsets(vdb_io::Sink& sink, const GridOffsets& o) {
  Bytes patch;
  put(patch, o.pos);
  sink.patch(o.at, patch);
}

// One grid's descriptor and data, as Archive::writeGrid writes a MaskGrid (seekable: with offsets)
// or, with `bools`, the BoolGrid io/vdb.cpp builds (the same nodes; a leaf's values are bits too,
// true where active: its buffer holds them after the mask and origin).
void write_mask_grid(vdb_io::Sink& sink, const SparseGrid& g, const Metadata& meta, bool bools) {
  Bytes& out = sink.bytes();
  const MaskTreeLayout t = mask_tree_layout(g);
  std::map<std::string, MetaValue> stats;
  add_stats(stats, g, t, bools ? vdb_format::kBoolNodeBytes : vdb_format::kMaskNodeBytes);
  GridOffsets offsets =
      put_grid_head(sink, g, meta, bools ? vdb_format::kBoolTreeType : vdb_format::kMaskTreeType, std::move(stats));

  // Topology: Tree (buffer count), root (background, tiles, children), nodes, leaf masks.
  put(out, int32_t(1));
  put(out, false);  // background
  put(out, uint32_t(0));
  put(out, uint32_t(t.uppers.size()));
  for (const MaskTreeLayout::Upper& u : t.uppers) {
    for (int32_t x : {u.origin.x, u.origin.y, u.origin.z}) put(out, x);
    put(out, u.children.w);
    put(out, u.active.w);
    put_tile_values(out, u.tiles);
    for (size_t l = u.first; l < u.first + u.count; ++l) {
      const MaskTreeLayout::Lower& low = t.lowers[l];
      if (low.tiles == 4096) continue;  // a tile of the upper node
      put(out, low.children.w);
      put(out, low.active.w);
      put_tile_values(out, low.tiles);
      size_t at = out.size();
      out.resize(at + low.count * sizeof(BrickMask));
      for (size_t i = low.first; i < low.first + low.count; ++i, at += sizeof(BrickMask))
        std::memcpy(out.data() + at, &g.masks[t.leaves[i]], sizeof(BrickMask));
      sink.flush_if_full();
    }
  }
  offsets.pos[1] = int64_t(sink.pos());
  // Buffers: per leaf its mask again and its origin (and a BoolGrid's values: the mask once more).
  const size_t leaf_buffer_bytes = sizeof(BrickMask) + 12 + (bools ? sizeof(BrickMask) : 0);
  for (size_t first = 0; first < t.leaves.size(); first += 4096) {
    const size_t n = std::min<size_t>(4096, t.leaves.size() - first);
    size_t at = out.size();
    out.resize(at + n * leaf_buffer_bytes);
    for (size_t i = first; i < first + n; ++i, at += leaf_buffer_bytes) {
      const size_t b = t.leaves[i];
      const Int3 c = brick_coord(g.keys[b]);
      const int32_t origin[3] = {c.x * 8, c.y * 8, c.z * 8};
      std::memcpy(out.data() + at, &g.masks[b], sizeof(BrickMask));
      std::memcpy(out.data() + at + sizeof(BrickMask), origin, sizeof(origin));
      if (bools) std::memcpy(out.data() + at + sizeof(BrickMask) + 12, &g.masks[b], sizeof(BrickMask));
    }
    sink.flush_if_full();
  }
  offsets.pos[2] = int64_t(sink.pos());
  patch_grid_offsets(sink, offsets);
}

// ---- Grids of values: Int32Grid (counts), FloatGrid (the sdf as a level set), Vec3SGrid ----------

struct Vec3Value {
  float x, y, z;
};
// math::isExactlyEqual and math::negative, as io::MaskCompress uses them
bool same(int32_t a, int32_t b) { return a == b; }
bool same(float a, float b) { return a == b; }
bool same(const Vec3Value& a, const Vec3Value& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
int32_t negated(int32_t a) { return int32_t(0u - uint32_t(a)); }
float negated(float a) { return -a; }
Vec3Value negated(const Vec3Value& a) { return {-a.x, -a.y, -a.z}; }

// A value type's tree and node sizes, and a leaf's active values as io/vdb.cpp's to_vdb puts them in
// OpenVDB's leaf (`scratch` holds them where they change: -0 becomes +0, a zero vector +0s).
template <class T>
struct LeafValues;
template <>
struct LeafValues<int32_t> {
  static constexpr const char* kType = vdb_format::kInt32TreeType;
  static constexpr vdb_format::NodeBytes kBytes = vdb_format::kScalarNodeBytes;
  static const int32_t* active(const SparseGrid& g, size_t b, std::vector<int32_t>&) {
    return g.ivalues.data() + g.value_begin[b];
  }
};
template <>
struct LeafValues<float> {
  static constexpr const char* kType = vdb_format::kFloatTreeType;
  static constexpr vdb_format::NodeBytes kBytes = vdb_format::kScalarNodeBytes;
  static const float* active(const SparseGrid& g, size_t b, std::vector<float>& scratch) {
    const float* v = g.fvalues.data() + g.value_begin[b];
    const size_t n = size_t(g.value_begin[b + 1] - g.value_begin[b]);
    if (std::none_of(v, v + n, [](float x) { return x == 0.0f && std::signbit(x); })) return v;  // (as held)
    scratch.assign(v, v + n);
    for (float& x : scratch) x = x != 0.0f ? x : 0.0f;
    return scratch.data();
  }
};
template <>
struct LeafValues<Vec3Value> {
  static constexpr const char* kType = vdb_format::kVec3sTreeType;
  static constexpr vdb_format::NodeBytes kBytes = vdb_format::kVec3sNodeBytes;
  static const Vec3Value* active(const SparseGrid& g, size_t b, std::vector<Vec3Value>& scratch) {
    const float* src = g.fvalues.data() + 3 * g.value_begin[b];
    const Vec3Value zero{0.0f, 0.0f, 0.0f};
    scratch.resize(size_t(g.value_begin[b + 1] - g.value_begin[b]));
    for (size_t k = 0; k < scratch.size(); ++k) {
      const Vec3Value x{src[3 * k], src[3 * k + 1], src[3 * k + 2]};
      scratch[k] = same(x, zero) ? zero : x;
    }
    return scratch.data();
  }
};

bool bit(const uint64_t* words, uint32_t i) { return (words[i >> 6] >> (i & 63)) & 1; }

// Half floats (a grid's saveFloatAsHalf): a value's halves as io::RealToHalf gives them (float: a
// half, Vec3s: a Vec3H, three halves) and io::truncateRealToHalf.
void put_halves(uint16_t* h, float v) { h[0] = half_bits(v); }
void put_halves(uint16_t* h, const Vec3Value& v) {
  h[0] = half_bits(v.x), h[1] = half_bits(v.y), h[2] = half_bits(v.z);
}
int32_t truncated(int32_t v) { return v; }
float truncated(float v) { return half_to_float(half_bits(v)); }
Vec3Value truncated(const Vec3Value& v) { return {truncated(v.x), truncated(v.y), truncated(v.z)}; }

// io::writeData's Blosc block of n values (put_blosc) or, with `half`, io::HalfWriter's: the values
// as halves (converted in a buffer of the thread's, not one per leaf), and nothing at all for none.
template <class T>
void put_values(Bytes& out, const T* v, size_t n, bool half) {
  if constexpr (!std::is_same_v<T, int32_t>) {
    if (half) {
      if (n == 0) return;
      constexpr size_t k = sizeof(T) / sizeof(float);  // halves per value
      thread_local std::vector<uint16_t> h;
      h.resize(n * k);
      for (size_t i = 0; i < n; ++i) put_halves(&h[i * k], v[i]);
      put_blosc(out, h.data(), h.size() * sizeof(uint16_t));
      return;
    }
  }
  put_blosc(out, v, n * sizeof(T));
}

// io::writeCompressedValues of n values with mask compression (io::MaskCompress: up to two distinct
// inactive values, children's slots skipped, are stored as a code, the values and a selection mask),
// then writeData's Blosc block (put_blosc) of the values it keeps: the active ones, or all where the
// inactive ones take more than two values: here internal nodes' tiles (`child`: their children's
// slots; leaves are written from their active values, write_value_grid). With `half`, the inactive
// values truncated to half precision and the kept values as halves (put_values). Returns the mask code.
template <class T>
int8_t put_compressed_values(Bytes& out, const T* src, const uint64_t* active, const uint64_t* child, uint32_t n,
                             const T& background, bool half, std::vector<T>& kept) {
  using namespace vdb_format;
  T val[2] = {background, background};
  int unique = 0;
  for (uint32_t w = 0; w < n / 64 && unique < 3; ++w) {
    uint64_t off = ~active[w] & ~child[w];
    for (; off != 0 && unique < 3; off &= off - 1) {
      const T& v = src[w * 64 + uint32_t(__builtin_ctzll(off))];
      if ((unique > 0 && same(v, val[0])) || (unique > 1 && same(v, val[1]))) continue;
      if (unique < 2) val[unique] = v;
      ++unique;
    }
  }
  int8_t code = kNoMaskOrInactiveVals;
  if (unique == 1) {
    if (!same(val[0], background))
      code = same(val[0], negated(background)) ? kNoMaskAndMinusBg : kNoMaskAndOneInactiveVal;
  } else if (unique == 2) {
    if (!same(val[0], background) && !same(val[1], background)) {
      code = kMaskAndTwoInactiveVals;
    } else if (same(val[1], background)) {
      code = same(val[0], negated(background)) ? kMaskAndNoInactiveVals : kMaskAndOneInactiveVal;
    } else if (same(val[0], background)) {
      code = same(val[1], negated(background)) ? kMaskAndNoInactiveVals : kMaskAndOneInactiveVal;
      std::swap(val[0], val[1]);
    }
  } else if (unique > 2) {
    code = kNoMaskAndAllVals;
  }
  out.push_back(char(code));
  if (code == kNoMaskAndOneInactiveVal || code == kMaskAndOneInactiveVal || code == kMaskAndTwoInactiveVals) {
    put(out, half ? truncated(val[0]) : val[0]);
    if (code == kMaskAndTwoInactiveVals) put(out, half ? truncated(val[1]) : val[1]);
  }
  const T* data = src;
  size_t count = n;
  if (code != kNoMaskAndAllVals) {
    kept.clear();
    if (code <= kNoMaskAndOneInactiveVal) {
      for (uint32_t w = 0; w < n / 64; ++w)
        for (uint64_t on = active[w]; on != 0; on &= on - 1)
          kept.push_back(src[w * 64 + uint32_t(__builtin_ctzll(on))]);
    } else {
      std::vector<uint64_t> selection(n / 64, 0);
      for (uint32_t i = 0; i < n; ++i) {
        if (bit(active, i))
          kept.push_back(src[i]);
        else if (same(src[i], val[1]))
          selection[i >> 6] |= uint64_t(1) << (i & 63);
      }
      for (uint64_t w : selection) put(out, w);
    }
    data = kept.data();
    count = kept.size();
  }
  put_values(out, data, count, half);
  return code;
}

// compression::bloscCompress as DelayedLoadMetadata::writeValue calls it: a buffer over
// kBloscMinimumBytes, padded with zeros to kBloscPadBytes, compressed with put_blosc's settings;
// empty where that fails or does not make it smaller.
std::string blosc_compress_or_empty(const void* data, size_t bytes) {
  using vdb_format::kBloscPadBytes;
  if (bytes <= size_t(vdb_format::kBloscMinimumBytes)) return {};
  size_t capacity = bytes + (bytes < size_t(kBloscPadBytes) ? kBloscPadBytes : 0) + BLOSC_MAX_OVERHEAD;
  if (capacity > size_t(BLOSC_MAX_BUFFERSIZE)) return {};
  std::vector<char> padded;
  size_t input = bytes;
  if (bytes < size_t(kBloscPadBytes)) {
    padded.assign(kBloscPadBytes, 0);
    std::memcpy(padded.data(), data, bytes);
    data = padded.data();
    input = kBloscPadBytes;
  }
  std::string packed(capacity, '\0');
  const int n =
      blosc_compress_ctx(9, 1, sizeof(float), input, data, packed.data(), capacity, BLOSC_LZ4_COMPNAME, input, 1);
  if (n <= 0 || size_t(n) >= bytes) return {};
  packed.resize(size_t(n));
  return packed;
}
// DelayedLoadMetadata::writeValue: the leaf count, then the leaves' mask codes and their Blosc
// blocks' sizes, each array compressed (a 32-bit size, then the bytes) or as it is (size 0).
MetaValue delayed_load_metadata(const std::vector<int8_t>& codes, const std::vector<int64_t>& blocks) {
  MetaValue m{"__delayedload", {}};
  put(m.bytes, uint32_t(codes.size()));
  auto array = [&](const void* data, size_t bytes) {
    const std::string packed = blosc_compress_or_empty(data, bytes);
    put(m.bytes, uint32_t(packed.size()));
    if (packed.empty())
      m.bytes.append(static_cast<const char*>(data), bytes);
    else
      m.bytes += packed;
  };
  array(codes.data(), codes.size());
  array(blocks.data(), blocks.size() * sizeof(int64_t));
  return m;
}

// A level set's leaf as write_value_grid writes it after tools::signedFloodFill (each inactive
// voxel -outside or +outside by SignedFloodFillOp's rule for a leaf) and io::writeCompressedValues:
// the mask compression code (NO_MASK_OR_INACTIVE_VALS where the inactive voxels are all +outside,
// or when outside is 0 and -0 counts as the same; NO_MASK_AND_MINUS_BG where all are -outside;
// MASK_AND_NO_INACTIVE_VALS with a selection of the +outside ones where both occur: what
// put_compressed_values finds for the filled leaf), then the Blosc block of the active values
// (`active`, as held; as halves with `half`). Sets the filled leaf's first and last values and the
// block's size; returns the code.
int8_t put_level_set_leaf(Bytes& out, const BrickMask& m, const float* active, float outside, bool half, float* first,
                          float* last, int64_t* block) {
  using namespace vdb_format;
  uint64_t neg[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // active voxels below 0
  size_t count = 0;
  for (int w = 0; w < 8; ++w)
    for (uint64_t bits = m.w[w]; bits; bits &= bits - 1)
      if (active[count++] < 0) neg[w] |= bits & (~bits + 1);
  // tools::signedFloodFill in a leaf: an inactive voxel takes the sign of the last active voxel before
  // it along z, else along y at z = 0, else along x at y = z = 0, starting from the first active one's.
  int first_on = 0;
  while (first_on < 8 && m.w[first_on] == 0) ++first_on;
  bool x_in = first_on < 8 && (neg[first_on] >> __builtin_ctzll(m.w[first_on]) & 1);
  uint64_t in[8];
  for (int x = 0; x < 8; ++x) {
    if (m.w[x] & 1) x_in = neg[x] & 1;
    bool y_in = x_in;
    uint64_t word = 0;
    for (int y = 0; y < 8; ++y) {
      const unsigned on = unsigned(m.w[x] >> (8 * y)) & 0xffu, below = unsigned(neg[x] >> (8 * y)) & 0xffu;
      if (on & 1) y_in = below & 1;
      bool z_in = y_in;
      unsigned row = 0;
      for (int z = 0; z < 8; ++z) {
        if (on >> z & 1)
          z_in = below >> z & 1;
        else if (z_in)
          row |= 1u << z;
      }
      word |= uint64_t(row) << (8 * y);
    }
    in[x] = word;
  }
  bool any_in = false, any_out = false;
  for (int w = 0; w < 8; ++w) {
    any_in = any_in || in[w] != 0;
    any_out = any_out || (~m.w[w] & ~in[w]) != 0;
  }
  auto filled = [&](int off, float active_value) {
    return m.test(off) ? active_value : (in[off >> 6] >> (off & 63) & 1) ? -outside : outside;
  };
  *first = filled(0, count ? active[0] : 0.0f);
  *last = filled(kBrickVoxels - 1, count ? active[count - 1] : 0.0f);
  int8_t code = kNoMaskOrInactiveVals;
  if (outside != 0.0f && any_in) code = any_out ? kMaskAndNoInactiveVals : kNoMaskAndMinusBg;
  out.push_back(char(code));
  if (code == kMaskAndNoInactiveVals)
    for (int w = 0; w < 8; ++w) put(out, uint64_t(~m.w[w] & ~in[w]));  // the +outside voxels
  const size_t before = out.size();
  put_values(out, active, count, half);
  *block = int64_t(out.size() - before);
  return code;
}

// The same for an internal node of 2^(3 log2) entries: its tiles from its children's first
// (getFirstValue) and last values.
template <int kLog2, class First, class Last>
void flood_fill_node(float* table, const uint64_t* children, float inside, float outside, First&& first, Last&& last) {
  constexpr uint32_t kDim = 1u << kLog2, kN = kDim * kDim * kDim;
  uint32_t c = kN;
  for (uint32_t w = 0; w < kN / 64 && c == kN; ++w)
    if (children[w]) c = w * 64 + uint32_t(__builtin_ctzll(children[w]));
  if (c == kN) {
    const float f = table[0] < 0 ? inside : outside;
    for (uint32_t i = 0; i < kN; ++i) table[i] = f;
    return;
  }
  bool x_in = first(c) < 0;
  for (uint32_t x = 0; x < kDim; ++x) {
    const uint32_t x00 = x << (2 * kLog2);
    if (bit(children, x00)) x_in = last(x00) < 0;
    bool y_in = x_in;
    for (uint32_t y = 0; y < kDim; ++y) {
      const uint32_t xy0 = x00 + (y << kLog2);
      if (bit(children, xy0)) y_in = last(xy0) < 0;
      bool z_in = y_in;
      for (uint32_t z = 0; z < kDim; ++z) {
        const uint32_t xyz = xy0 + z;
        if (bit(children, xyz))
          z_in = last(xyz) < 0;
        else
          table[xyz] = z_in ? inside : outside;
      }
    }
  }
}

// One grid of values, as Archive::writeGrid writes the tree to_vdb builds (a leaf per brick; a
// level set flood-filled): the leaves' buffers first, compressed in parallel and kept (the
// delayed-load metadata, written before the topology, is read off them), then the grid's head,
// the topology (internal nodes' tiles: the background, or a level set's signs), the buffers. With
// `half` (float and vector values), as OpenVDB writes a grid whose saveFloatAsHalf is set: the tree
// type with the suffix "_HalfFloat", the metadata "is_saved_as_half_float", the root's background
// truncated to half precision (its tiles as they are), internal nodes' and leaves' values through
// put_compressed_values' and put_values' half forms.
template <class T>
void write_value_grid(vdb_io::Sink& sink, const SparseGrid& g, const Metadata& meta, bool half) {
  const MaskTreeLayout t = mask_tree_layout(g);  // (no runs: a leaf per brick, no tiles)
  const bool level_set = std::is_same_v<T, float> && g.level_set;
  const float outside = std::fabs(g.background), inside = -outside;
  T background{};
  if constexpr (std::is_same_v<T, float>)
    if (level_set) background = outside;  // the root's after signedFloodFill
  const size_t n = t.leaves.size();
  std::vector<int8_t> codes(n);
  std::vector<int64_t> blocks(n);
  std::vector<float> first(level_set ? n : 0), last(level_set ? n : 0);  // leaves' values 0 and 511
  constexpr size_t kChunk = 128;
  std::vector<Bytes> parts((n + kChunk - 1) / kChunk);
  tbb::parallel_for(size_t(0), parts.size(), [&](size_t c) {
    std::vector<T> kept;
    for (size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) {
      const size_t b = t.leaves[i];
      put(parts[c], g.masks[b].w);
      if (!level_set) {
        // Every inactive voxel holds the background (0): io::MaskCompress's NO_MASK_OR_INACTIVE_VALS,
        // then the active values (what put_compressed_values finds for such a leaf), taken as the
        // grid holds them.
        parts[c].push_back(char(vdb_format::kNoMaskOrInactiveVals));
        const size_t before = parts[c].size();
        const T* active = LeafValues<T>::active(g, b, kept);
        put_values(parts[c], active, size_t(g.value_begin[b + 1] - g.value_begin[b]), half);
        blocks[i] = int64_t(parts[c].size() - before);
        codes[i] = vdb_format::kNoMaskOrInactiveVals;
        continue;
      }
      if constexpr (std::is_same_v<T, float>) {
        codes[i] = put_level_set_leaf(parts[c], g.masks[b], g.fvalues.data() + g.value_begin[b], outside, half,
                                      &first[i], &last[i], &blocks[i]);
      }
    }
  });

  // Internal nodes' tiles as written (children's slots zero): the background, or a level set's
  // flood fill from its children's first and last values (`firsts`, `lasts`: from index
  // `first_child` on, in the node's order of children). Returns the node's own first and last
  // values (InternalNode::getFirstValue, getLastValue) for its parent's flood fill.
  auto fill_node = [&](auto log2, std::vector<T>& tiles, const uint64_t* children, size_t first_child,
                       const std::vector<float>& firsts, const std::vector<float>& lasts) {
    constexpr uint32_t kN = 1u << (3 * decltype(log2)::value);
    std::pair<float, float> ends{0.0f, 0.0f};
    std::fill(tiles.begin(), tiles.end(), T{});
    if constexpr (std::is_same_v<T, float>) {
      if (level_set) {
        std::vector<uint32_t> rank(kN);  // of a child slot among the node's children
        for (uint32_t s = 0, r = 0; s < kN; ++s)
          if (bit(children, s)) rank[s] = r++;
        auto child = [&](uint32_t s) { return first_child + rank[s]; };
        flood_fill_node<decltype(log2)::value>(
            tiles.data(), children, inside, outside, [&](uint32_t s) { return firsts[child(s)]; },
            [&](uint32_t s) { return lasts[child(s)]; });
        ends = {bit(children, 0) ? firsts[child(0)] : tiles[0],
                bit(children, kN - 1) ? lasts[child(kN - 1)] : tiles[kN - 1]};
        return ends;
      }
    }
    for (uint32_t s = 0; s < kN; ++s)
      if (!bit(children, s)) tiles[s] = background;
    return ends;
  };
  std::vector<T> lower_tiles(4096), upper_tiles(32768);
  std::vector<float> lower_first(t.lowers.size()), lower_last(t.lowers.size());
  auto fill_lower = [&](size_t l) {
    const MaskTreeLayout::Lower& low = t.lowers[l];
    std::tie(lower_first[l], lower_last[l]) =
        fill_node(std::integral_constant<int, 4>{}, lower_tiles, low.children.w.data(), low.first, first, last);
  };
  auto fill_upper = [&](const MaskTreeLayout::Upper& u) {
    return fill_node(std::integral_constant<int, 5>{}, upper_tiles, u.children.w.data(), u.first, lower_first,
                     lower_last);
  };
  // A level set's root: inside tiles between two upper nodes of one z-scanline whose facing ends
  // are inside (SignedFloodFillOp on the root node).
  std::vector<Int3> root_tiles;
  if (level_set) {
    for (size_t l = 0; l < t.lowers.size(); ++l) fill_lower(l);
    std::vector<float> ufirst(t.uppers.size()), ulast(t.uppers.size());
    for (size_t u = 0; u < t.uppers.size(); ++u) std::tie(ufirst[u], ulast[u]) = fill_upper(t.uppers[u]);
    for (size_t u = 1; u < t.uppers.size(); ++u) {
      const Int3 a = t.uppers[u - 1].origin, b = t.uppers[u].origin;
      if (a.x != b.x || a.y != b.y || b.z - a.z == kUpperDim || !(ulast[u - 1] < 0) || !(ufirst[u] < 0)) continue;
      for (int32_t z = a.z + kUpperDim; z != b.z; z += kUpperDim) root_tiles.push_back({a.x, a.y, z});
    }
  }

  std::map<std::string, MetaValue> entries;
  add_stats(entries, g, t, LeafValues<T>::kBytes);
  entries["file_delayed_load"] = delayed_load_metadata(codes, blocks);
  if (level_set) entries["class"] = {"string", "level set"};
  if (half) entries["is_saved_as_half_float"] = {"bool", std::string(1, '\1')};  // (GridBase::META_SAVE_HALF_FLOAT)
  const std::string type = std::string(LeafValues<T>::kType) + (half ? "_HalfFloat" : "");
  GridOffsets offsets = put_grid_head(sink, g, meta, type.c_str(), std::move(entries));
  Bytes& out = sink.bytes();
  std::vector<T> kept;
  put(out, int32_t(1));  // Tree: one buffer
  put(out, half ? truncated(background) : background);
  put(out, uint32_t(root_tiles.size()));
  put(out, uint32_t(t.uppers.size()));
  for (const Int3& c : root_tiles) {
    for (int32_t x : {c.x, c.y, c.z}) put(out, x);
    put(out, negated(background));  // inside
    put(out, false);
  }
  const UpperMask no_upper_tiles;
  const LowerMask no_lower_tiles;
  for (const MaskTreeLayout::Upper& u : t.uppers) {
    for (int32_t x : {u.origin.x, u.origin.y, u.origin.z}) put(out, x);
    put(out, u.children.w);
    put(out, no_upper_tiles.w);
    fill_upper(u);
    put_compressed_values(out, upper_tiles.data(), no_upper_tiles.w.data(), u.children.w.data(), 32768, background,
                          half, kept);
    for (size_t l = u.first; l < u.first + u.count; ++l) {
      const MaskTreeLayout::Lower& low = t.lowers[l];
      put(out, low.children.w);
      put(out, no_lower_tiles.w);
      fill_lower(l);
      put_compressed_values(out, lower_tiles.data(), no_lower_tiles.w.data(), low.children.w.data(), 4096, background,
                            half, kept);
      for (size_t i = low.first; i < low.first + low.count; ++i) put(out, g.masks[t.leaves[i]].w);
      sink.flush_if_full();
    }
  }
  offsets.pos[1] = int64_t(sink.pos());
  for (Bytes& part : parts) {
    sink.write(part);  // (to the file as it is: no copy into the sink's buffer)
    Bytes().swap(part);
  }
  offsets.pos[2] = int64_t(sink.pos());
  patch_grid_offsets(sink, offsets);
}

// Whether a 4096^3 node of the grid is all interior (full bricks in runs, full surface bricks): that
// would be a tile of the root, which the direct writer does not write.
bool has_interior_upper_node(const SparseGrid& g) {
  if (g.runs.empty() || std::min({g.spec.dims.x, g.spec.dims.y, g.spec.dims.z}) < kUpperDim) return false;
  constexpr uint64_t kUpperBricks = uint64_t(kUpperDim / 8) * (kUpperDim / 8) * (kUpperDim / 8);
  std::unordered_map<uint64_t, uint64_t> full;  // upper node (brick_key of its coordinates) -> full bricks
  for_each_run_piece(g.runs, 512, [&](const Int3& c, uint64_t n) { full[upper_node_key(c)] += n; });
  for (size_t b = 0; b < g.keys.size(); ++b)
    if (brick_full(g.masks[b])) ++full[upper_node_key(brick_coord(g.keys[b]))];
  for (const auto& kv : full)
    if (kv.second == kUpperBricks) return true;
  return false;
}

}  // namespace

bool vdb_distinct_names(const std::vector<const SparseGrid*>& grids) {
  std::set<std::string> names;
  for (const SparseGrid* g : grids)
    if (g->name.empty() || !names.insert(g->name).second) return false;
  return true;
}

bool direct_vdb_writable(const std::vector<const SparseGrid*>& grids, const Metadata& meta) {
  static_assert(sizeof(BrickMask) == 64 && sizeof(UpperMask) == 4096 && sizeof(LowerMask) == 512,
                "a leaf mask is 64 bytes, node masks as OpenVDB's");
  if (!vdb_distinct_names(grids)) return false;
  for (const SparseGrid* g : grids)
    if ((g->keys.empty() && g->runs.empty()) || (g->value_type != ValueType::kNone && !g->runs.empty()) ||
        has_interior_upper_node(*g) || upper_node_keys(*g).size() > kMaxUpperNodes)
      return false;
  for (const auto& kv : meta)
    if (kv.first == "dims" || kv.first == "origin") return false;  // OpenVDB refuses to change their types
  return true;
}

bool write_direct_vdb(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta,
                      const VdbWriteOptions& options) {
  if (!direct_vdb_writable(grids, meta)) return false;
  for (const SparseGrid* g : grids) vdb_transform_bytes(g->spec);  // a usage error before any file exists
  const std::string header = vdb_file_header(vdb_file_seed(grids, meta), grids.size());
  AtomicFile file(path);
  vdb_io::Sink sink(file);
  sink.bytes().insert(sink.bytes().end(), header.begin(), header.end());
  for (const SparseGrid* g : grids) {
    switch (g->value_type) {
      case ValueType::kNone:
        write_mask_grid(sink, *g, meta, options.bool_grids);
        break;
      case ValueType::kInt32:
        write_value_grid<int32_t>(sink, *g, meta, false);
        break;
      case ValueType::kFloat32:
        write_value_grid<float>(sink, *g, meta, options.half);
        break;
      case ValueType::kVec3f:
        write_value_grid<Vec3Value>(sink, *g, meta, options.half);
        break;
    }
  }
  sink.finish();
  file.close_stream();
  file.commit();
  return true;
}

}  // namespace voxtile
