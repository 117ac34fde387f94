// .vdb files of binary grids without OpenVDB (io/vdb_direct.h).
#include "io/vdb_direct.h"

#include <blosc.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/hash.h"
#include "io/vdb.h"
#include "io/vdb_sink.h"

namespace voxtile {

using vdb_io::Bytes;
using vdb_io::put;
using vdb_io::put_string;

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
    std::vector<uint32_t> active;
    for (size_t b = b0; b < b1; ++b) g.append_active_bits(b, active);
    h.bytes(active.data(), active.size() * sizeof(uint32_t));
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

// An internal node's values as InternalNode::writeTopology writes them: writeCompressedValues of
// its values (children's slots zero), here the mask-compression code NO_MASK_OR_INACTIVE_VALS (every
// inactive value is the background, false), then its active values (`active` tiles, all true) as
// io::bloscToStream writes them: the compressed size and Blosc's output with OpenVDB's settings, or
// the negative size and the values where Blosc fails.
void put_tile_values(Bytes& out, uint32_t active) {
  out.push_back(0);
  const std::vector<char> values(active, 1);
  std::vector<char> packed(active + BLOSC_MAX_OVERHEAD);
  const int n = blosc_compress_ctx(9, 1, sizeof(float), active, values.data(), packed.data(), packed.size(),
                                   BLOSC_LZ4_COMPNAME, active, 1);
  if (n <= 0) {
    put(out, -int64_t(active));
    out.insert(out.end(), values.begin(), values.end());
  } else {
    put(out, int64_t(n));
    out.insert(out.end(), packed.begin(), packed.begin() + n);
  }
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
void add_stats(std::map<std::string, MetaValue>& meta, const SparseGrid& g, const MaskTreeLayout& t) {
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
  using namespace vdb_format;
  const uint64_t mem =
      kTreeBytes + t.uppers.size() * kUpperBytes + t.written_lowers * kLowerBytes + t.leaves.size() * kLeafBytes;
  meta["file_bbox_min"] = vec3i(lo);
  meta["file_bbox_max"] = vec3i(hi);
  meta["file_mem_bytes"] = {"int64", {}};
  put(meta["file_mem_bytes"].bytes, int64_t(mem));
  meta["file_voxel_count"] = {"int64", {}};
  put(meta["file_voxel_count"].bytes, int64_t(g.active_voxels()));
}

// One grid's descriptor and data, as Archive::writeGrid writes a MaskGrid (seekable: with offsets).
void write_mask_grid(vdb_io::Sink& sink, const SparseGrid& g, const Metadata& meta) {
  Bytes& out = sink.bytes();
  const MaskTreeLayout t = mask_tree_layout(g);

  // GridDescriptor::writeHeader, then its offsets (placeholders, patched at the end)
  put_string(out, g.name);
  put_string(out, vdb_format::kMaskTreeType);
  put_string(out, "");  // no instance parent
  const uint64_t offsets_at = sink.pos();
  int64_t offsets[3] = {0, 0, 0};  // grid, block (buffers) and end positions
  put(out, offsets);
  offsets[0] = int64_t(sink.pos());
  put(out, vdb_format::kCompression);  // Archive::setGridCompression: a mask grid keeps the file's flags

  // The grid's metadata (GridBase::writeMeta), by name: what describe() and addStatsMetadata() set.
  std::map<std::string, MetaValue> entries;
  entries["name"] = {"string", g.name};
  entries["voxtile_dims"] = vec3i(g.spec.dims);
  entries["voxtile_origin"] = {"vec3d", {}};
  for (double x : {g.spec.origin.x, g.spec.origin.y, g.spec.origin.z}) put(entries["voxtile_origin"].bytes, x);
  for (const auto& [key, value] : meta) entries["voxtile_" + key] = {"string", value};
  add_stats(entries, g, t);
  entries["file_compression"] = {"string", vdb_format::kCompressionName};
  put(out, uint32_t(entries.size()));
  for (const auto& [name, value] : entries) {
    put_string(out, name);
    put_string(out, value.type);
    put_string(out, value.bytes);
  }
  const std::string transform = vdb_transform_bytes(g.spec);
  out.insert(out.end(), transform.begin(), transform.end());

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
  offsets[1] = int64_t(sink.pos());
  // Buffers: per leaf its mask again and its origin.
  constexpr size_t kLeafBufferBytes = sizeof(BrickMask) + 12;
  for (size_t first = 0; first < t.leaves.size(); first += 4096) {
    const size_t n = std::min<size_t>(4096, t.leaves.size() - first);
    size_t at = out.size();
    out.resize(at + n * kLeafBufferBytes);
    for (size_t i = first; i < first + n; ++i, at += kLeafBufferBytes) {
      const size_t b = t.leaves[i];
      const Int3 c = brick_coord(g.keys[b]);
      const int32_t origin[3] = {c.x * 8, c.y * 8, c.z * 8};
      std::memcpy(out.data() + at, &g.masks[b], sizeof(BrickMask));
      std::memcpy(out.data() + at + sizeof(BrickMask), origin, sizeof(origin));
    }
    sink.flush_if_full();
  }
  offsets[2] = int64_t(sink.pos());
  Bytes patch;
  put(patch, offsets);
  sink.patch(offsets_at, patch);
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
    if (g->value_type != ValueType::kNone || (g->keys.empty() && g->runs.empty()) || has_interior_upper_node(*g) ||
        upper_node_keys(*g).size() > kMaxUpperNodes)
      return false;
  for (const auto& kv : meta)
    if (kv.first == "dims" || kv.first == "origin") return false;  // OpenVDB refuses to change their types
  return true;
}

bool write_direct_vdb(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta) {
  if (!direct_vdb_writable(grids, meta)) return false;
  for (const SparseGrid* g : grids) vdb_transform_bytes(g->spec);  // a usage error before any file exists
  const std::string header = vdb_file_header(vdb_file_seed(grids, meta), grids.size());
  AtomicFile file(path);
  vdb_io::Sink sink(file);
  sink.bytes().insert(sink.bytes().end(), header.begin(), header.end());
  for (const SparseGrid* g : grids) write_mask_grid(sink, *g, meta);
  sink.finish();
  file.close_stream();
  file.commit();
  return true;
}

}  // namespace voxtile
