// .vdb files read without OpenVDB (io/vdb_direct.h read_direct_vdb): the grids io/vdb_direct.cpp
// writes, from any writer of OpenVDB's current format. Whatever this reader does not take (another
// tree or map type, half floats, ZIP, active tiles in a grid of values, a file that is not what it
// says) it leaves to the OpenVDB module, which reads it or names what is wrong with it.
#include <blosc.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "io/vdb_direct.h"

namespace voxtile {
// (A named namespace: a unity build compiles this file with others that have their own Block, Tree...)
namespace vdb_read {

struct Defer {};  // thrown inside: the file goes to OpenVDB's reader

// The file's bytes, mapped read-only.
class Mapped {
 public:
  explicit Mapped(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Defer{};
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
      close(fd);
      throw Defer{};
    }
    m_size = size_t(st.st_size);
    void* p = mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throw Defer{};
    m_data = static_cast<const char*>(p);
  }
  ~Mapped() { munmap(const_cast<char*>(m_data), m_size); }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  const char* data() const { return m_data; }
  size_t size() const { return m_size; }

 private:
  const char* m_data = nullptr;
  size_t m_size = 0;
};

// Reads little-endian values at a position, every read checked against the end.
class Cursor {
 public:
  Cursor(const Mapped& f, uint64_t at) : m_p(f.data()), m_size(f.size()), m_at(at) {
    if (at > m_size) throw Defer{};
  }
  void need(uint64_t n) const {
    if (n > m_size - m_at) throw Defer{};
  }
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, m_p + m_at, sizeof(T));
    m_at += sizeof(T);
    return v;
  }
  void skip(uint64_t n) {
    need(n);
    m_at += n;
  }
  std::string str() {
    const uint32_t n = get<uint32_t>();
    need(n);
    std::string s(m_p + m_at, n);
    m_at += n;
    return s;
  }
  const char* here() const { return m_p + m_at; }
  uint64_t at() const { return m_at; }

 private:
  const char* m_p;
  size_t m_size;
  uint64_t m_at;
};

// sizeof(ValueType) of the tree (a MaskTree's internal nodes hold bools)
size_t value_bytes(ValueType k) { return k == ValueType::kNone ? 1 : 4 * size_t(value_channels(k)); }

constexpr uint32_t kZip = 1, kActiveMask = 2, kBlosc = 4;

// io::readData's bytes of `bytes` uncompressed bytes: where they are, and whether Blosc packed them.
struct Block {
  const char* p;
  uint64_t size;
  bool packed;
};
Block data_block(Cursor& c, uint32_t compression, uint64_t bytes) {
  if (compression & kBlosc) {
    const int64_t n = c.get<int64_t>();
    if (n <= 0) {
      if (uint64_t(-n) != bytes) throw Defer{};
      const Block b{c.here(), bytes, false};
      c.skip(bytes);
      return b;
    }
    const Block b{c.here(), uint64_t(n), true};
    c.skip(uint64_t(n));
    return b;
  }
  const Block b{c.here(), bytes, false};
  c.skip(bytes);
  return b;
}

// io::readCompressedValues of n values (`active` of them active): returns the block of the values
// stored, `count` of them (the active ones, or all).
Block compressed_values(Cursor& c, uint32_t compression, uint32_t n, uint32_t active, size_t vb, uint64_t* count) {
  const int8_t code = c.get<int8_t>();
  if (code < 0 || code > 6) throw Defer{};
  if (code == 2 || code == 4 || code == 5) c.skip(vb * (code == 5 ? 2 : 1));  // inactive values
  if (code == 3 || code == 4 || code == 5) c.skip(n / 8);                     // selection mask
  *count = (compression & kActiveMask) && code != 6 ? active : n;
  return data_block(c, compression, *count * vb);
}

// Copies a block's values (Blosc-decompressed) into dst, exactly `bytes` of them.
void unpack(const Block& b, char* dst, uint64_t bytes) {
  if (!b.packed) {
    std::memcpy(dst, b.p, bytes);
    return;
  }
  // (blosc_cbuffer_validate: the header's sizes fit the block, so that decompressing is safe)
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  if (b.size < BLOSC_MIN_HEADER_LENGTH || blosc_cbuffer_validate(b.p, b.size, &nbytes) != 0) throw Defer{};
  blosc_cbuffer_sizes(b.p, &nbytes, &cbytes, &blocksize);
  if (nbytes != bytes || cbytes != b.size) throw Defer{};
  if (bytes == 0) return;
  if (blosc_decompress_ctx(b.p, dst, bytes, 1) != int(bytes)) throw Defer{};
}

uint32_t popcount(const uint64_t* w, size_t words) {
  uint32_t n = 0;
  for (size_t i = 0; i < words; ++i) n += uint32_t(popcount64(w[i]));
  return n;
}

struct Tile {
  Int3 lo;
  int32_t dim;
};
struct Leaf {
  Int3 origin;
  BrickMask mask;
};

// One grid's tree, as Archive::readGrid reads it (topology, then the leaves' buffers), for the
// grids io/vdb_direct.cpp writes: a 5-4-3 tree, nodes of child and value masks, no half floats.
struct Tree {
  ValueType kind;
  bool bools = false;  // a BoolGrid (kind kNone): its leaves' value bits follow their origins (not read)
  uint32_t compression = 0;
  std::vector<char> background;
  std::vector<Leaf> leaves;
  std::vector<Tile> tiles;        // active
  std::vector<Block> blocks;      // each leaf's stored values (grids of values)
  std::vector<uint32_t> counts;   // how many: the active ones, or all 512
};

void read_internal(Cursor& c, Tree& t, int log2, int child_log2_total, const Int3& origin, int level) {
  const uint32_t n = 1u << (3 * log2);
  std::vector<uint64_t> children(n / 64), active(n / 64);
  c.need(n / 8 * 2);
  std::memcpy(children.data(), c.here(), n / 8);
  c.skip(n / 8);
  std::memcpy(active.data(), c.here(), n / 8);
  c.skip(n / 8);
  uint64_t count = 0;
  compressed_values(c, t.compression, n, popcount(active.data(), active.size()), value_bytes(t.kind), &count);
  const int32_t child_dim = 1 << child_log2_total;
  for (uint32_t i = 0; i < n; ++i) {
    const bool is_child = (children[i >> 6] >> (i & 63)) & 1, is_active = (active[i >> 6] >> (i & 63)) & 1;
    if (!is_child && !is_active) continue;
    const Int3 o{origin.x + int32_t(i >> (2 * log2)) * child_dim,
                 origin.y + int32_t((i >> log2) & ((1u << log2) - 1)) * child_dim,
                 origin.z + int32_t(i & ((1u << log2) - 1)) * child_dim};
    if (is_child && is_active) throw Defer{};
    if (is_active) {
      t.tiles.push_back({o, child_dim});
    } else if (level == 2) {
      read_internal(c, t, 4, 3, o, 1);
    } else {
      Leaf leaf{o, {}};
      c.need(sizeof(BrickMask));
      std::memcpy(&leaf.mask, c.here(), sizeof(BrickMask));
      c.skip(sizeof(BrickMask));
      t.leaves.push_back(leaf);
    }
  }
}

// The grid at `c` (after its descriptor): compression, metadata, transform, topology, then where
// each leaf's buffer is. Leaves `c` at the end of the topology.
using MetaMap = std::map<std::string, std::pair<std::string, std::string>>;  // name: (type name, value bytes)

// The grid's compression and metadata (the start of the grid at `c`).
void read_grid_meta(Cursor& c, uint32_t* compression, MetaMap& meta) {
  *compression = c.get<uint32_t>();
  if (*compression & kZip || *compression & ~uint32_t(7)) throw Defer{};
  for (uint32_t n = c.get<uint32_t>(); n > 0; --n) {
    std::string name = c.str(), type = c.str();
    meta[name] = {type, c.str()};
  }
}

void read_tree(Cursor& c, Tree& t, MetaMap& meta, double xf[6][3], bool& translated) {
  read_grid_meta(c, &t.compression, meta);
  // The transform: (Uniform)ScaleTranslateMap (translation, scale, voxel size, then derived values)
  // or (Uniform)ScaleMap (the same without the translation).
  const std::string map = c.str();
  const bool translate = map == "UniformScaleTranslateMap" || map == "ScaleTranslateMap";
  if (!translate && map != "UniformScaleMap" && map != "ScaleMap") throw Defer{};
  for (int v = translate ? 0 : 1; v < 6; ++v)
    for (int a = 0; a < 3; ++a) xf[v][a] = c.get<double>();
  if (!translate)
    for (int a = 0; a < 3; ++a) xf[0][a] = 0.0;
  translated = translate;
  if (c.get<int32_t>() != 1) throw Defer{};  // one buffer
  const size_t vb = value_bytes(t.kind);
  c.need(vb);
  t.background.assign(c.here(), c.here() + vb);
  c.skip(vb);
  // The root's tiles and children: 4096^3 nodes at non-negative coordinates (OpenVDB's reader names
  // negative ones), far enough from the int32 limit that their voxels' coordinates are int32s too.
  auto root_node = [&] {
    const Int3 o{c.get<int32_t>(), c.get<int32_t>(), c.get<int32_t>()};
    if (((o.x | o.y | o.z) & 4095) || o.x < 0 || o.y < 0 || o.z < 0 || o.x > (1 << 30) || o.y > (1 << 30) ||
        o.z > (1 << 30))
      throw Defer{};
    return o;
  };
  const uint32_t tiles = c.get<uint32_t>(), children = c.get<uint32_t>();
  for (uint32_t i = 0; i < tiles; ++i) {
    const Int3 o = root_node();
    c.skip(vb);
    const bool active = c.get<char>() != 0;
    if (active) t.tiles.push_back({o, 4096});
  }
  for (uint32_t i = 0; i < children; ++i) read_internal(c, t, 5, 7, root_node(), 2);
}

// The leaves' buffers at `c` (the grid's block position): per leaf its value mask again, the same as
// the topology's, then a MaskGrid's origin or the values, whose blocks are kept.
void read_buffers(Cursor& c, Tree& t) {
  t.blocks.resize(t.leaves.size());
  t.counts.resize(t.leaves.size());
  const size_t vb = value_bytes(t.kind);
  for (size_t i = 0; i < t.leaves.size(); ++i) {
    Leaf& leaf = t.leaves[i];
    c.need(sizeof(BrickMask));
    if (std::memcmp(c.here(), &leaf.mask, sizeof(BrickMask)) != 0) throw Defer{};
    c.skip(sizeof(BrickMask));
    if (t.kind == ValueType::kNone) {
      if (c.get<int32_t>() != leaf.origin.x || c.get<int32_t>() != leaf.origin.y || c.get<int32_t>() != leaf.origin.z)
        throw Defer{};
      if (t.bools) {  // (the occupancy is the active voxels', whatever their values: as io/vdb.cpp reads it)
        c.need(sizeof(BrickMask));
        c.skip(sizeof(BrickMask));
      }
      continue;
    }
    uint64_t count = 0;
    t.blocks[i] = compressed_values(c, t.compression, kBrickVoxels, popcount(leaf.mask.w, 8), vb, &count);
    t.counts[i] = uint32_t(count);
  }
}

// The SparseGrid io/vdb.cpp's to_sparse makes of the grid: dims from voxtile's metadata (else the
// active bounding box), voxel size and origin from the transform, bricks in key order with the
// active voxels' values (0 where inactive), a MaskGrid's active tiles as runs of full bricks (bricks
// the dims cut as masks), a level set's class and background.
SparseGrid to_sparse_grid(const std::string& name, const Tree& t, const MetaMap& meta, const double xf[6][3],
                          bool translated) {
  SparseGrid g;
  g.name = name;
  for (const Leaf& leaf : t.leaves)
    if (leaf.origin.x < 0 || leaf.origin.y < 0 || leaf.origin.z < 0) throw Defer{};  // (OpenVDB's reader names it)
  for (const Tile& tile : t.tiles)
    if (tile.lo.x < 0 || tile.lo.y < 0 || tile.lo.z < 0) throw Defer{};
  if (t.kind != ValueType::kNone && !t.tiles.empty()) throw Defer{};
  const auto dims = meta.find("voxtile_dims");
  if (dims != meta.end() && dims->second.first == "vec3i" && dims->second.second.size() == 12) {
    std::memcpy(&g.spec.dims, dims->second.second.data(), 12);
  } else {
    Int3 hi{-1, -1, -1};
    bool any = false;
    for (const Leaf& leaf : t.leaves) {
      for (int off = 0; off < kBrickVoxels; ++off) {
        if (!leaf.mask.test(off)) continue;
        any = true;
        hi = {std::max(hi.x, leaf.origin.x + (off >> 6)), std::max(hi.y, leaf.origin.y + ((off >> 3) & 7)),
              std::max(hi.z, leaf.origin.z + (off & 7))};
      }
    }
    for (const Tile& tile : t.tiles) {
      any = true;
      hi = {std::max(hi.x, tile.lo.x + tile.dim - 1), std::max(hi.y, tile.lo.y + tile.dim - 1),
            std::max(hi.z, tile.lo.z + tile.dim - 1)};
    }
    if (!any) throw Defer{};
    g.spec.dims = {hi.x + 1, hi.y + 1, hi.z + 1};
  }
  g.spec.voxel_size = {xf[2][0], xf[2][1], xf[2][2]};
  // indexToWorld(-0.5, -0.5, -0.5): MapBase::applyMap's products, then the translation's sums
  g.spec.origin = {-0.5 * xf[1][0], -0.5 * xf[1][1], -0.5 * xf[1][2]};
  if (translated) g.spec.origin = {g.spec.origin.x + xf[0][0], g.spec.origin.y + xf[0][1], g.spec.origin.z + xf[0][2]};
  g.value_type = t.kind;
  if (t.kind == ValueType::kFloat32) {
    const auto cls = meta.find("class");
    g.level_set = cls != meta.end() && cls->second.first == "string" && cls->second.second == "level set";
    if (g.level_set) std::memcpy(&g.background, t.background.data(), sizeof(float));
  }
  // Bricks: the leaves with active voxels, in key order.
  std::vector<size_t> order;
  for (size_t i = 0; i < t.leaves.size(); ++i)
    if (t.leaves[i].mask.any()) order.push_back(i);
  auto key = [&](size_t i) {
    const Int3& o = t.leaves[i].origin;
    return brick_key(o.x / 8, o.y / 8, o.z / 8);
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  g.keys.resize(order.size());
  g.masks.resize(order.size());
  for (size_t b = 0; b < order.size(); ++b) {
    g.keys[b] = key(order[b]);
    g.masks[b] = t.leaves[order[b]].mask;
  }
  const int channels = value_channels(g.value_type);
  if (channels) g.index_values();
  const size_t vb = value_bytes(t.kind);
  std::vector<char> failed(order.size(), 0);
  if (channels)
    tbb::parallel_for(tbb::blocked_range<size_t>(0, order.size(), 64), [&](const tbb::blocked_range<size_t>& r) {
      std::vector<char> values(kBrickVoxels * vb);
      char* base = g.value_type == ValueType::kInt32 ? reinterpret_cast<char*>(g.ivalues.data())
                                                     : reinterpret_cast<char*>(g.fvalues.data());
      for (size_t b = r.begin(); b < r.end(); ++b) {
        try {
          const uint64_t count = t.counts[order[b]], active = g.value_begin[b + 1] - g.value_begin[b];
          char* dst = base + g.value_begin[b] * vb;
          if (count == active) {  // the active values alone, in offset order: the grid's layout
            unpack(t.blocks[order[b]], dst, count * vb);
          } else {  // all 512
            unpack(t.blocks[order[b]], values.data(), count * vb);
            compact_brick_values(g.masks[b], channels, values.data(), dst);
          }
        } catch (const Defer&) {
          failed[b] = 1;
        }
      }
    });
  if (std::find(failed.begin(), failed.end(), 1) != failed.end()) throw Defer{};
  // A MaskGrid's active tiles: runs of whole bricks, bricks the dims cut as masks.
  for (const Tile& tile : t.tiles)
    append_active_tile(g, tile.lo, {tile.lo.x + tile.dim, tile.lo.y + tile.dim, tile.lo.z + tile.dim});
  if (!t.tiles.empty()) sort_bricks_by_key(g);
  for (size_t i = 1; i < g.keys.size(); ++i)
    if (g.keys[i] <= g.keys[i - 1]) throw Defer{};  // two leaves or tiles in one place
  g.make_runs();
  return g;
}

}  // namespace vdb_read

void append_active_tile(SparseGrid& g, const Int3& lo, const Int3& end) {
  const Int3& d = g.spec.dims;
  const int32_t x1 = std::min(end.x, d.x), y1 = std::min(end.y, d.y), z1 = std::min(end.z, d.z);
  for (int32_t x = lo.x; x < x1; x += 8)
    for (int32_t y = lo.y; y < y1; y += 8) {
      const bool whole_xy = x + 8 <= d.x && y + 8 <= d.y;
      int32_t z = lo.z;
      const int32_t whole_z = whole_xy ? std::min(z1 - (z1 - lo.z) % 8, z1) : lo.z;
      if (whole_z > z) {
        g.runs.push_back({brick_key(x / 8, y / 8, z / 8), uint64_t((whole_z - z) / 8)});
        z = whole_z;
      }
      for (; z < z1; z += 8) {  // bricks the grid's dims cut
        BrickMask m{};
        for (int a = 0; a < 8 && x + a < d.x; ++a)
          for (int b = 0; b < 8 && y + b < d.y; ++b)
            for (int c = 0; c < 8 && z + c < d.z; ++c) m.set(brick_offset(a, b, c));
        g.keys.push_back(brick_key(x / 8, y / 8, z / 8));
        g.masks.push_back(m);
      }
    }
}

void sort_bricks_by_key(SparseGrid& g) {
  std::sort(g.runs.begin(), g.runs.end(), [](const BrickRun& a, const BrickRun& b) { return a.key < b.key; });
  const size_t ch = size_t(value_channels(g.value_type));
  if (std::is_sorted(g.keys.begin(), g.keys.end())) {
    if (ch) g.index_values(false);
    return;
  }
  std::vector<size_t> perm(g.keys.size());
  std::vector<uint64_t> begin(g.keys.size() + 1, 0);  // (of the values in the bricks' given order)
  for (size_t i = 0; i < perm.size(); ++i) {
    perm[i] = i;
    begin[i + 1] = begin[i] + uint64_t(g.masks[i].count()) * ch;
  }
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) { return g.keys[a] < g.keys[b]; });
  BrickKeys keys(perm.size());
  BrickMasks masks(perm.size());
  ValueArray<int32_t> ivalues;
  ValueArray<float> fvalues;
  ivalues.reserve(g.ivalues.size());
  fvalues.reserve(g.fvalues.size());
  for (size_t j = 0; j < perm.size(); ++j) {
    const size_t i = perm[j];
    keys[j] = g.keys[i];
    masks[j] = g.masks[i];
    if (!g.ivalues.empty())
      ivalues.insert(ivalues.end(), g.ivalues.begin() + begin[i], g.ivalues.begin() + begin[i + 1]);
    if (!g.fvalues.empty())
      fvalues.insert(fvalues.end(), g.fvalues.begin() + begin[i], g.fvalues.begin() + begin[i + 1]);
  }
  g.keys = std::move(keys);
  g.masks = std::move(masks);
  g.ivalues = std::move(ivalues);
  g.fvalues = std::move(fvalues);
  if (ch) g.index_values(false);
}

namespace vdb_read {

// The file's grid descriptors (header checked), in the order io::File lists them: by name (a
// multimap of descriptors), so that "the first grid" is the first so. Grids of the four tree types
// only, each named once (no instances, no "\x1e" suffixes).
struct Descriptor {
  std::string name;
  ValueType kind;
  bool bools = false;
  uint64_t grid, block, end;
};
std::vector<Descriptor> read_descriptors(const Mapped& f) {
  Cursor c(f, 0);
  if (c.get<int64_t>() != vdb_format::kMagic || c.get<uint32_t>() != vdb_format::kFileVersion) throw Defer{};
  c.skip(8);                                          // library version
  if (c.get<char>() != 1) throw Defer{};              // grid offsets
  c.skip(36);                                         // UUID
  for (uint32_t n = c.get<uint32_t>(); n > 0; --n) {  // the file's metadata
    c.str();
    c.str();
    c.str();
  }
  const int32_t count = c.get<int32_t>();
  if (count < 0) throw Defer{};
  std::vector<Descriptor> grids;
  for (int32_t i = 0; i < count; ++i) {
    Descriptor d;
    d.name = c.str();
    const std::string type = c.str();
    if (type == vdb_format::kMaskTreeType || type == vdb_format::kBoolTreeType)
      d.kind = ValueType::kNone, d.bools = type == vdb_format::kBoolTreeType;
    else if (type == vdb_format::kInt32TreeType)
      d.kind = ValueType::kInt32;
    else if (type == vdb_format::kFloatTreeType)
      d.kind = ValueType::kFloat32;
    else if (type == vdb_format::kVec3sTreeType)
      d.kind = ValueType::kVec3f;
    else
      throw Defer{};
    if (!c.str().empty() || d.name.find('\x1e') != std::string::npos) throw Defer{};  // instances, unique names
    const int64_t grid = c.get<int64_t>(), block = c.get<int64_t>(), end = c.get<int64_t>();
    if (grid != int64_t(c.at()) || block < grid || end < block || uint64_t(end) > f.size()) throw Defer{};
    d.grid = uint64_t(grid);
    d.block = uint64_t(block);
    d.end = uint64_t(end);
    grids.push_back(d);
    c = Cursor(f, d.end);
  }
  std::stable_sort(grids.begin(), grids.end(),
                   [](const Descriptor& a, const Descriptor& b) { return a.name < b.name; });
  return grids;
}

// One grid's tree, metadata and transform, its buffers' layout checked (values not decompressed).
// The grid's name is its "name" metadata (Grid::getName, what OpenVDB's reader gives), which must
// be the descriptor's.
struct GridRead {
  Tree t;
  MetaMap meta;
  double xf[6][3];
  bool translated = false;
};
void read_grid(const Mapped& f, const Descriptor& d, GridRead& r) {
  r.t.kind = d.kind;
  r.t.bools = d.bools;
  Cursor g(f, d.grid);
  read_tree(g, r.t, r.meta, r.xf, r.translated);
  if (g.at() > d.block) throw Defer{};
  const auto name = r.meta.find("name");
  if (name == r.meta.end() || name->second.first != "string" || name->second.second != d.name) throw Defer{};
  Cursor b(f, d.block);
  read_buffers(b, r.t);
  if (b.at() != d.end) throw Defer{};
}

}  // namespace vdb_read

bool read_direct_vdb(const std::string& path, const std::string& name, bool all, std::vector<SparseGrid>* out) {
  using namespace vdb_read;
  try {
    const Mapped f(path);
    const std::vector<Descriptor> grids = read_descriptors(f);
    std::vector<SparseGrid> result;
    for (const Descriptor& d : grids) {
      if (!all && !name.empty() && d.name != name) continue;
      GridRead r;
      read_grid(f, d, r);
      result.push_back(to_sparse_grid(d.name, r.t, r.meta, r.xf, r.translated));
      if (!all) break;
    }
    if (!all && result.empty()) throw Defer{};  // (OpenVDB's reader says what is missing)
    *out = std::move(result);
    return true;
  } catch (const Defer&) {
    return false;
  }
}

std::string describe_vdb_grid(const VdbGridSummary& g) {
  std::ostringstream s;
  s.precision(9);
  s << "grid \"" << g.name << "\" type=" << g.type << (g.half ? " storage=half" : "")
    << " active_voxels=" << g.active_voxels;
  if (g.has_bbox)
    s << " index_bbox=[" << g.bbox_lo.x << "," << g.bbox_lo.y << "," << g.bbox_lo.z << "]..[" << g.bbox_hi.x << ","
      << g.bbox_hi.y << "," << g.bbox_hi.z << "]";
  s << " voxel_size=" << g.voxel_size[0];
  if (g.voxel_size[0] != g.voxel_size[1] || g.voxel_size[1] != g.voxel_size[2])
    s << "x" << g.voxel_size[1] << "x" << g.voxel_size[2];
  s << " origin=(" << g.origin[0] << ", " << g.origin[1] << ", " << g.origin[2] << ")";
  if (g.has_dims) s << " dims=" << g.dims.x << "x" << g.dims.y << "x" << g.dims.z;
  return s.str();
}

bool describe_direct_vdb(const std::string& path, std::vector<std::string>* lines) {
  using namespace vdb_read;
  try {
    const Mapped f(path);
    std::vector<std::string> result;
    for (const Descriptor& d : read_descriptors(f)) {
      GridRead r;
      read_grid(f, d, r);
      VdbGridSummary g;
      g.name = d.name;
      g.type = d.bools                         ? "bool"
               : d.kind == ValueType::kNone    ? "mask"
               : d.kind == ValueType::kInt32   ? "int32"
               : d.kind == ValueType::kFloat32 ? "float"
                                               : "vec3s";
      // Tree::activeVoxelCount and evalActiveVoxelBoundingBox: the leaves' active voxels (a leaf's
      // mask word x holds y << 3 | z) and the active tiles whole.
      auto grow = [&](const Int3& lo, const Int3& hi) {
        if (!g.has_bbox) {
          g.bbox_lo = lo;
          g.bbox_hi = hi;
          g.has_bbox = true;
          return;
        }
        g.bbox_lo = {std::min(g.bbox_lo.x, lo.x), std::min(g.bbox_lo.y, lo.y), std::min(g.bbox_lo.z, lo.z)};
        g.bbox_hi = {std::max(g.bbox_hi.x, hi.x), std::max(g.bbox_hi.y, hi.y), std::max(g.bbox_hi.z, hi.z)};
      };
      for (const Leaf& leaf : r.t.leaves) {
        const uint32_t n = popcount(leaf.mask.w, 8);
        if (n == 0) continue;
        g.active_voxels += n;
        int32_t x0 = 8, x1 = -1, y0 = 8, y1 = -1;
        uint64_t zs = 0;  // the z of any active voxel, as bits
        for (int x = 0; x < 8; ++x) {
          const uint64_t w = leaf.mask.w[x];
          if (w == 0) continue;
          x0 = std::min(x0, x);
          x1 = x;
          y0 = std::min(y0, __builtin_ctzll(w) >> 3);
          y1 = std::max(y1, (63 - __builtin_clzll(w)) >> 3);
          for (int y = 0; y < 8; ++y) zs |= (w >> (8 * y)) & 0xff;
        }
        const Int3& o = leaf.origin;
        grow({o.x + x0, o.y + y0, o.z + __builtin_ctzll(zs)}, {o.x + x1, o.y + y1, o.z + 63 - __builtin_clzll(zs)});
      }
      for (const Tile& tile : r.t.tiles) {
        g.active_voxels += uint64_t(tile.dim) * uint64_t(tile.dim) * uint64_t(tile.dim);
        grow(tile.lo, {tile.lo.x + tile.dim - 1, tile.lo.y + tile.dim - 1, tile.lo.z + tile.dim - 1});
      }
      for (int a = 0; a < 3; ++a) {  // voxelSize(), indexToWorld(-0.5, -0.5, -0.5) (as to_sparse_grid)
        g.voxel_size[a] = r.xf[2][a];
        g.origin[a] = -0.5 * r.xf[1][a];
        if (r.translated) g.origin[a] = g.origin[a] + r.xf[0][a];
      }
      const auto dims = r.meta.find("voxtile_dims");
      if (dims != r.meta.end() && dims->second.first == "vec3i" && dims->second.second.size() == 12) {
        g.has_dims = true;
        std::memcpy(&g.dims, dims->second.second.data(), 12);
      }
      result.push_back(describe_vdb_grid(g));
    }
    *lines = std::move(result);
    return true;
  } catch (const Defer&) {
    return false;
  }
}

bool read_direct_vdb_meta(const std::string& path, const std::string& key, std::string* value) {
  using namespace vdb_read;
  try {
    const Mapped f(path);
    const std::string name = "voxtile_" + key;
    for (const Descriptor& d : read_descriptors(f)) {
      Cursor c(f, d.grid);
      uint32_t compression = 0;
      MetaMap meta;
      read_grid_meta(c, &compression, meta);
      if (c.at() > d.block) throw Defer{};
      const auto m = meta.find(name);
      if (m != meta.end() && m->second.first == "string") {
        *value = m->second.second;
        return true;
      }
    }
    value->clear();
    return true;
  } catch (const Defer&) {
    return false;
  }
}

}  // namespace voxtile
