// OpenVDB writer and reader.
#include "io/vdb.h"
#include "io/vdb_direct.h"
#include "io/vdb_module.h"
#include "io/vdb_sink.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openvdb/io/DelayedLoadMetadata.h>
#include <openvdb/openvdb.h>
#include <openvdb/points/StreamCompression.h>
#include <openvdb/tools/Prune.h>
#include <openvdb/tools/SignedFloodFill.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <streambuf>
#include <type_traits>

#include "core/error.h"
#include "core/hash.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/grid_reader.h"
#include "io/mesh_reader.h"

namespace voxtile {
namespace {

void init_openvdb() {
  static std::once_flag once;
  std::call_once(once, [] { openvdb::initialize(); });
}

}  // namespace

// A (Uniform)ScaleTranslateMap built from its serialized values, as OpenVDB's constructor computes
// them, without the constructor's check: ScaleTranslateMap and AffineMap refuse any transform
// whose determinant is under 3e-15 (a voxel under 1.44e-5 on each axis), although such maps read,
// write and work like any other (their reader does not check). It holds the voxel size exactly
// (createLinearTransform's decomposition can be an ulp off) and maps index to world as
// createLinearTransform's does wherever that accepts the scale (tested).
openvdb::math::Transform::Ptr make_vdb_transform(const GridSpec& s) {
  // Transform::read, not Transform(map): that constructor turns a linear map into an AffineMap
  // first, and fails the same way.
  std::istringstream is(vdb_transform_bytes(s));  // (io/vdb_direct.cpp)
  openvdb::io::setCurrentVersion(is);
  openvdb::math::Transform::Ptr xf = openvdb::math::Transform::createLinearTransform(1.0);
  xf->read(is);
  return xf;
}

namespace {

// The runs of full bricks (a solid's interior) as active tiles: 8^3 tiles in the 128^3 nodes that
// also hold the surface's leaves, 128^3 tiles where a node is all interior, larger ones by pruning.
template <class GridT>
void add_runs(GridT& grid, const SparseGrid& g, const typename GridT::ValueType& on) {
  using Node2 = typename GridT::TreeType::RootNodeType::ChildNodeType;  // 4096^3
  using Node1 = typename Node2::ChildNodeType;                          // 128^3: 16^3 bricks
  struct Piece {
    uint64_t node;  // brick_key of the 128^3 node (brick coordinates / 16)
    uint64_t key;   // first brick
    uint32_t count;
  };
  std::vector<Piece> pieces;
  for_each_run_piece(g.runs, 16, [&](const Int3& c, uint64_t n) {
    pieces.push_back({brick_key(c.x >> 4, c.y >> 4, c.z >> 4), brick_key(c.x, c.y, c.z), uint32_t(n)});
  });
  tbb::parallel_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
    return a.node != b.node ? a.node < b.node : a.key < b.key;
  });
  std::vector<size_t> starts;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (i == 0 || pieces[i].node != pieces[i - 1].node) starts.push_back(i);
  starts.push_back(pieces.size());
  const size_t nodes = starts.size() - 1;
  std::vector<Node1*> built(nodes, nullptr);  // null: the node is all interior (a 128^3 tile)
  const typename GridT::ValueType background = grid.background();
  tbb::parallel_for(size_t(0), nodes, [&](size_t n) {
    uint64_t bricks = 0;
    for (size_t i = starts[n]; i < starts[n + 1]; ++i) bricks += pieces[i].count;
    if (bricks == 16 * 16 * 16) return;
    const Int3 o = brick_coord(pieces[starts[n]].node);
    auto* node = new Node1(openvdb::Coord(o.x * 128, o.y * 128, o.z * 128), background, false);
    for (size_t i = starts[n]; i < starts[n + 1]; ++i) {
      const Int3 c = brick_coord(pieces[i].key);
      for (uint32_t z = 0; z < pieces[i].count; ++z)
        node->addTile(Node1::coordToOffset(openvdb::Coord(c.x * 8, c.y * 8, (c.z + int32_t(z)) * 8)), on, true);
    }
    built[n] = node;
  });
  auto& root = grid.tree().root();
  for (size_t n = 0; n < nodes; ++n) {
    const Int3 o = brick_coord(pieces[starts[n]].node);
    const openvdb::Coord xyz(o.x * 128, o.y * 128, o.z * 128);
    Node2* parent = root.template probeNode<Node2>(xyz);
    if (!parent) {
      parent = new Node2(xyz, background, false);
      root.addChild(parent);
    }
    if (built[n])
      parent->addChild(built[n]);
    else
      parent->addTile(Node2::coordToOffset(xyz), on, true);
  }
}

template <class GridT, class SetValues>
typename GridT::Ptr build_grid(const SparseGrid& g, typename GridT::ValueType background, SetValues&& set_values,
                               const typename GridT::ValueType* run_value = nullptr) {
  using LeafT = typename GridT::TreeType::LeafNodeType;
  std::vector<LeafT*> leaves(g.num_bricks());
  tbb::parallel_for(tbb::blocked_range<size_t>(0, leaves.size(), 256), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b) {
      const Int3 c = brick_coord(g.keys[b]);
      auto* leaf = new LeafT(openvdb::Coord(c.x * 8, c.y * 8, c.z * 8), background, false);
      auto& vm = leaf->getValueMask();
      for (int w = 0; w < 8; ++w) vm.template getWord<openvdb::Index64>(w) = g.masks[b].w[w];
      set_values(*leaf, b);
      leaves[b] = leaf;
    }
  });
  typename GridT::Ptr grid = GridT::create(background);
  if (run_value && !g.runs.empty()) add_runs(*grid, g, *run_value);
  for (LeafT* leaf : leaves) grid->tree().addLeaf(leaf);
  if (run_value && !g.runs.empty()) openvdb::tools::prune(grid->tree());  // all-interior 4096^3 nodes
  return grid;
}

// OpenVDB stamps every file with a random UUID (36 ASCII characters after the 21-byte header
// prefix). voxtile writes one derived from the content and metadata instead (vdb_file_header), so
// the same input and options give the same bytes.
constexpr long kUuidOffset = 21;
void make_uuid_deterministic(const std::string& temp_path, const std::string& path, uint64_t seed) {
  std::FILE* f = std::fopen(temp_path.c_str(), "r+b");
  if (!f) fail(ErrorKind::kOutput, path + ": cannot reopen the VDB file");
  char uuid[37] = {};
  const bool ok = std::fseek(f, kUuidOffset, SEEK_SET) == 0 && std::fread(uuid, 1, 36, f) == 36;
  const bool looks = ok && uuid[8] == '-' && uuid[13] == '-' && uuid[18] == '-' && uuid[23] == '-';
  if (looks) {
    std::fseek(f, kUuidOffset, SEEK_SET);
    std::fwrite(vdb_deterministic_uuid(seed).data(), 1, 36, f);
  }
  if (std::fclose(f) != 0) fail(ErrorKind::kOutput, path + ": cannot finish the VDB file");
}

std::vector<uint64_t> check_vdb_layout(const std::string& path);

// Whether OpenVDB can copy a grid with this transform (see write_vdb_grids).
bool openvdb_copies_transform(const GridSpec& spec) {
  try {
    make_vdb_transform(spec)->baseMap()->getAffineMap();
    return true;
  } catch (const openvdb::ArithmeticError&) {
    return false;
  }
}

// A transform to write in place of a stand-in: grid `grid` of the file, the stand-in's bytes (which
// OpenVDB wrote), the real ones (the same size).
struct StandIn {
  size_t grid;
  std::string written, real;
};

// Writes each real transform over its stand-in, where the file's layout says grid `grid`'s
// transform starts (`transforms`, from check_vdb_layout), after checking that the stand-in is there.
void replace_stand_ins(const std::string& temp_path, const std::string& path, const std::vector<StandIn>& stand_ins,
                       const std::vector<uint64_t>& transforms) {
  std::FILE* f = std::fopen(temp_path.c_str(), "r+b");
  if (!f) fail(ErrorKind::kOutput, path + ": cannot reopen the VDB file");
  bool ok = true, placed = true;
  for (const StandIn& s : stand_ins) {
    std::string there(s.written.size(), '\0');
    placed = placed && s.grid < transforms.size() && s.written.size() == s.real.size() &&
             std::fseek(f, long(transforms[s.grid]), SEEK_SET) == 0 &&
             std::fread(there.data(), 1, there.size(), f) == there.size() && there == s.written;
    ok = ok && placed && std::fseek(f, long(transforms[s.grid]), SEEK_SET) == 0 &&
         std::fwrite(s.real.data(), 1, s.real.size(), f) == s.real.size();
  }
  if (std::fclose(f) != 0 || (placed && !ok)) fail(ErrorKind::kOutput, path + ": cannot finish the VDB file");
  if (!placed) fail(ErrorKind::kInternal, path + ": the VDB transform could not be placed");
}

// Name, transform and voxtile's metadata.
void describe(openvdb::GridBase& base, const SparseGrid& g, const Metadata& meta) {
  base.setName(g.name);
  base.setTransform(make_vdb_transform(g.spec));
  base.insertMeta("voxtile_dims", openvdb::Vec3IMetadata(openvdb::Vec3i(g.spec.dims.x, g.spec.dims.y, g.spec.dims.z)));
  base.insertMeta("voxtile_origin",
                  openvdb::Vec3DMetadata(openvdb::Vec3d(g.spec.origin.x, g.spec.origin.y, g.spec.origin.z)));
  for (const auto& [key, value] : meta) base.insertMeta("voxtile_" + key, openvdb::StringMetadata(value));
}

openvdb::GridBase::Ptr to_vdb(const SparseGrid& g, const Metadata& meta, const VdbWriteOptions& options) {
  openvdb::GridBase::Ptr base;
  if (g.value_type == ValueType::kNone && options.bool_grids) {
    const bool on = true;
    base = build_grid<openvdb::BoolGrid>(
        g, false,
        [&](openvdb::BoolGrid::TreeType::LeafNodeType& leaf, size_t b) {
          for (int off = 0; off < kBrickVoxels; ++off)
            if (g.masks[b].test(off)) leaf.setValueOnly(off, true);
        },
        &on);
  } else if (g.value_type == ValueType::kNone) {
    const bool on = true;
    base = build_grid<openvdb::MaskGrid>(g, false, [](auto&, size_t) {}, &on);
  } else if (g.value_type == ValueType::kInt32) {
    // Values written straight into the leaves' buffers (what setValueOnly would leave).
    base = build_grid<openvdb::Int32Grid>(g, 0, [&](openvdb::Int32Grid::TreeType::LeafNodeType& leaf, size_t b) {
      g.brick_values(b, leaf.buffer().data());
    });
  } else if (g.value_type == ValueType::kFloat32 && g.level_set) {
    // A level set: every active value (0 included), then inactive voxels and tiles set to -background
    // inside and +background outside from the signs of their neighbours (tools::signedFloodFill).
    auto grid = build_grid<openvdb::FloatGrid>(g, g.background,
                                               [&](openvdb::FloatGrid::TreeType::LeafNodeType& leaf, size_t b) {
                                                 float* dst = leaf.buffer().data();
                                                 g.brick_values(b, dst);
                                                 for (int off = 0; off < kBrickVoxels; ++off)
                                                   if (!g.masks[b].test(off)) dst[off] = g.background;
                                               });
    openvdb::tools::signedFloodFill(grid->tree());
    grid->setGridClass(openvdb::GRID_LEVEL_SET);
    base = grid;
  } else if (g.value_type == ValueType::kFloat32) {
    base = build_grid<openvdb::FloatGrid>(g, 0.0f, [&](openvdb::FloatGrid::TreeType::LeafNodeType& leaf, size_t b) {
      float* dst = leaf.buffer().data();
      g.brick_values(b, dst);
      for (int off = 0; off < kBrickVoxels; ++off) dst[off] = dst[off] != 0.0f ? dst[off] : 0.0f;  // -0 stays +0
    });
  } else {
    const openvdb::Vec3s zero(0.0f, 0.0f, 0.0f);
    base = build_grid<openvdb::Vec3SGrid>(g, zero, [&](openvdb::Vec3SGrid::TreeType::LeafNodeType& leaf, size_t b) {
      float v[3 * kBrickVoxels];
      g.brick_values(b, v);
      for (int off = 0; off < kBrickVoxels; ++off) {
        const openvdb::Vec3s x(v[3 * off], v[3 * off + 1], v[3 * off + 2]);
        if (x != zero) leaf.setValueOnly(off, x);
      }
    });
  }
  describe(*base, g, meta);
  if (options.half && (g.value_type == ValueType::kFloat32 || g.value_type == ValueType::kVec3f))
    base->setSaveFloatAsHalf(true);
  return base;
}

}  // namespace

namespace {

using vdb_io::Bytes;
using vdb_io::AppendBuf;
using vdb_io::put;
using vdb_io::Sink;

// The direct writer's constants (io/vdb_direct.h) are OpenVDB's.
static_assert(vdb_format::kMagic == openvdb::OPENVDB_MAGIC &&
                  vdb_format::kFileVersion == openvdb::OPENVDB_FILE_VERSION &&
                  vdb_format::kLibraryMajor == openvdb::OPENVDB_LIBRARY_MAJOR_VERSION &&
                  vdb_format::kLibraryMinor == openvdb::OPENVDB_LIBRARY_MINOR_VERSION,
              "io/vdb_direct.h names another OpenVDB file format");
// (Archive::DEFAULT_COMPRESSION_FLAGS, these where OpenVDB has Blosc: the tests compare whole files)
static_assert(vdb_format::kCompression == (openvdb::io::COMPRESS_BLOSC | openvdb::io::COMPRESS_ACTIVE_MASK),
              "io/vdb_direct.h: OpenVDB's default compression");
using MaskTree = openvdb::MaskGrid::TreeType;
using MaskRoot = MaskTree::RootNodeType;
using MaskUpper = MaskRoot::ChildNodeType;
using MaskLower = MaskUpper::ChildNodeType;
template <class NodeT>
constexpr uint64_t node_bytes() {  // tools::memUsage() of an internal node
  return NodeT::NUM_VALUES * sizeof(typename NodeT::UnionType) +
         2 * NodeT::NodeMaskType::WORD_COUNT * sizeof(openvdb::Index64) + sizeof(openvdb::Coord);
}
static_assert(MaskUpper::DIM == 4096 && MaskLower::DIM == 128 && MaskLower::ChildNodeType::DIM == 8,
              "OpenVDB's 5-4-3 tree");
// (a BoolGrid's leaf holds its value bits itself: LeafNode<bool>::memUsage is its size)
constexpr bool same_bool_node_bytes(const vdb_format::NodeBytes& b) {
  using TreeT = openvdb::BoolTree;
  using Upper = TreeT::RootNodeType::ChildNodeType;
  using Lower = Upper::ChildNodeType;
  return b.tree == sizeof(TreeT) + sizeof(TreeT::RootNodeType) && b.upper == node_bytes<Upper>() &&
         b.lower == node_bytes<Lower>() && b.leaf == sizeof(Lower::ChildNodeType);
}
template <class GridT>
constexpr bool same_node_bytes(const vdb_format::NodeBytes& b) {
  using TreeT = typename GridT::TreeType;
  using Upper = typename TreeT::RootNodeType::ChildNodeType;
  using Lower = typename Upper::ChildNodeType;
  using Leaf = typename Lower::ChildNodeType;
  constexpr uint64_t leaf = sizeof(Leaf) + (std::is_same_v<typename TreeT::BuildType, openvdb::ValueMask>
                                                ? 0
                                                : Leaf::SIZE * sizeof(typename GridT::ValueType));
  return b.tree == sizeof(TreeT) + sizeof(typename TreeT::RootNodeType) && b.upper == node_bytes<Upper>() &&
         b.lower == node_bytes<Lower>() && b.leaf == leaf;
}
static_assert(same_node_bytes<openvdb::MaskGrid>(vdb_format::kMaskNodeBytes) &&
                  same_bool_node_bytes(vdb_format::kBoolNodeBytes) &&
                  same_node_bytes<openvdb::Int32Grid>(vdb_format::kScalarNodeBytes) &&
                  same_node_bytes<openvdb::FloatGrid>(vdb_format::kScalarNodeBytes) &&
                  same_node_bytes<openvdb::Vec3SGrid>(vdb_format::kVec3sNodeBytes),
              "io/vdb_direct.h: the memory use of OpenVDB's tree nodes (tools::memUsage)");
static_assert(int(vdb_format::kNoMaskOrInactiveVals) == int(openvdb::io::NO_MASK_OR_INACTIVE_VALS) &&
                  int(vdb_format::kNoMaskAndMinusBg) == int(openvdb::io::NO_MASK_AND_MINUS_BG) &&
                  int(vdb_format::kNoMaskAndOneInactiveVal) == int(openvdb::io::NO_MASK_AND_ONE_INACTIVE_VAL) &&
                  int(vdb_format::kMaskAndNoInactiveVals) == int(openvdb::io::MASK_AND_NO_INACTIVE_VALS) &&
                  int(vdb_format::kMaskAndOneInactiveVal) == int(openvdb::io::MASK_AND_ONE_INACTIVE_VAL) &&
                  int(vdb_format::kMaskAndTwoInactiveVals) == int(openvdb::io::MASK_AND_TWO_INACTIVE_VALS) &&
                  int(vdb_format::kNoMaskAndAllVals) == int(openvdb::io::NO_MASK_AND_ALL_VALS),
              "io/vdb_direct.h: OpenVDB's mask-compression codes");
static_assert(vdb_format::kBloscMinimumBytes == openvdb::compression::BLOSC_MINIMUM_BYTES &&
                  vdb_format::kBloscPadBytes == openvdb::compression::BLOSC_PAD_BYTES,
              "io/vdb_direct.h: compression::bloscCompress's limits");

// A grid's end: its descriptor's offsets, written over the placeholders at `at`.
void finish_grid(Sink& sink, openvdb::io::GridDescriptor& gd, uint64_t at) {
  gd.setEndPos(openvdb::Int64(sink.pos()));
  Bytes offsets;
  AppendBuf ob(offsets);
  std::ostream oos(&ob);
  gd.writeStreamPos(oos);
  sink.patch(at, offsets);
}

// The whole file, as io::File::write writes it with OpenVDB's default settings: the header, then
// write_grid(sink, i, compression, stream metadata) for each grid.
template <class WriteGrid>
void write_vdb_file(AtomicFile& file, size_t count, uint64_t seed, WriteGrid&& write_grid) {
  Sink sink(file);
  Bytes& out = sink.bytes();
  std::ostream& os = sink.stream();
  const uint32_t compression = openvdb::io::Archive::DEFAULT_COMPRESSION_FLAGS;
  openvdb::io::StreamMetadata::Ptr stream_meta = std::make_shared<openvdb::io::StreamMetadata>();
  openvdb::io::setStreamMetadataPtr(os, stream_meta, false);
  openvdb::io::setDataCompression(os, compression);
  openvdb::io::setWriteGridStatsMetadata(os, true);
  const std::string header = vdb_file_header(seed, count);  // (io/vdb_direct.cpp)
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < count; ++i) {
    write_grid(sink, i, compression, stream_meta);
    openvdb::io::setDataCompression(os, compression);
  }
  if (!os) fail(ErrorKind::kInternal, file.final_path() + ": VDB serialization failed");
  sink.finish();
}

// ---- Other grids: OpenVDB's serializers, the leaves' buffers in parallel ------------------------
// Archive::write's bytes for a tree OpenVDB built: the header, descriptors, metadata, transforms
// and topology come from OpenVDB's own functions, serially (a small part of the file), and the
// leaves' buffers (LeafNode::writeBuffers, which compresses each leaf's values: most of the time,
// one leaf after another in io::File::write) are written by TBB threads into streams of their
// own with the file stream's state, then appended in the tree's order.

// The leaves' buffers (LeafNode::writeBuffers: the value mask, then the values compressed as the
// stream says), written by TBB threads into chunks of their own with the file stream's state;
// sizes[i] is leaf i's byte count. They are kept until the grid's metadata and topology are written
// (the delayed-load metadata is read off them): about the file's size in memory.
constexpr size_t kLeavesPerChunk = 128;
template <class LeafT>
std::vector<Bytes> leaf_buffers(const std::vector<const LeafT*>& leaves, std::ostream& os, bool half,
                                std::vector<uint32_t>& sizes) {
  const uint32_t compression = openvdb::io::getDataCompression(os);
  const void* background = openvdb::io::getGridBackgroundValuePtr(os);
  openvdb::io::StreamMetadata::Ptr stream_meta = openvdb::io::getStreamMetadataPtr(os);
  const size_t chunks = (leaves.size() + kLeavesPerChunk - 1) / kLeavesPerChunk;
  std::vector<Bytes> parts(chunks);
  std::vector<char> ok(chunks, 0);
  sizes.assign(leaves.size(), 0);
  tbb::parallel_for(size_t(0), chunks, [&](size_t c) {
    AppendBuf buf(parts[c]);
    std::ostream s(&buf);
    openvdb::io::setStreamMetadataPtr(s, stream_meta, false);
    openvdb::io::setDataCompression(s, compression);
    openvdb::io::setGridBackgroundValuePtr(s, background);
    const size_t lo = c * kLeavesPerChunk, hi = std::min(leaves.size(), lo + kLeavesPerChunk);
    for (size_t i = lo; i < hi; ++i) {
      const size_t before = parts[c].size();
      leaves[i]->writeBuffers(s, half);
      sizes[i] = uint32_t(parts[c].size() - before);
    }
    ok[c] = s ? 1 : 0;
  });
  for (char k : ok)
    if (!k) fail(ErrorKind::kInternal, "VDB serialization failed");
  return parts;
}

// The "file_delayed_load" metadata Archive::writeGrid adds to value grids (int32, float, vec3)
// with leaves (OpenVDB's populateDelayedLoadMetadata): per leaf its mask-compression code and,
// under Blosc or ZIP, the size of its compressed value block (with its 8-byte count), computed
// with the file's compression flags. When the grid is written with those flags and mask
// compression, both are read off the written buffers (the code is the byte after the 64-byte
// value mask; the block is what follows the inactive values and the selection mask) instead of
// compressing every leaf a second time.
template <class GridT, class LeafT>
void add_delayed_load_metadata(GridT& grid, const std::vector<const LeafT*>& leaves, const std::vector<Bytes>& parts,
                               const std::vector<uint32_t>& sizes, uint32_t file_compression,
                               uint32_t grid_compression) {
  using ValueT = typename GridT::TreeType::ValueType;
  using MaskT = typename LeafT::NodeMaskType;
  namespace io = openvdb::io;
  if constexpr (std::is_same_v<ValueT, int32_t> || std::is_same_v<ValueT, float> ||
                std::is_same_v<ValueT, openvdb::Vec3s>) {
    if (leaves.empty()) return;
    io::DelayedLoadMetadata meta;
    const bool with_sizes = (file_compression & (io::COMPRESS_BLOSC | io::COMPRESS_ZIP)) != 0;
    const bool from_bytes = grid_compression == file_compression && (file_compression & io::COMPRESS_ACTIVE_MASK);
    meta.resizeMask(leaves.size());
    if (with_sizes) meta.resizeCompressedSize(leaves.size());
    const ValueT background = grid.tree().background();
    const bool half = grid.saveFloatAsHalf();
    const size_t mask_bytes = MaskT::memUsage();
    tbb::parallel_for(size_t(0), parts.size(), [&](size_t c) {
      size_t at = 0;
      const size_t lo = c * kLeavesPerChunk, hi = std::min(leaves.size(), lo + kLeavesPerChunk);
      for (size_t i = lo; i < hi; at += sizes[i], ++i) {
        const LeafT& leaf = *leaves[i];
        if (from_bytes) {
          const int8_t code = int8_t(parts[c][at + mask_bytes]);
          const size_t values = code == io::MASK_AND_TWO_INACTIVE_VALS                                   ? 2
                                : (code == io::NO_MASK_AND_ONE_INACTIVE_VAL || code == io::MASK_AND_ONE_INACTIVE_VAL) ? 1
                                                                                                      : 0;
          const bool selection = code == io::MASK_AND_NO_INACTIVE_VALS || code == io::MASK_AND_ONE_INACTIVE_VAL ||
                                 code == io::MASK_AND_TWO_INACTIVE_VALS;
          meta.setMask(i, code);
          if (with_sizes)
            meta.setCompressedSize(i, sizes[i] - mask_bytes - 1 - values * sizeof(ValueT) - (selection ? mask_bytes : 0));
        } else {
          const io::MaskCompress<ValueT, MaskT> mc(leaf.valueMask(), MaskT(), leaf.buffer().data(), background);
          meta.setMask(i, mc.metadata);
          if (with_sizes)
            meta.setCompressedSize(i, io::writeCompressedValuesSize(leaf.buffer().data(), LeafT::SIZE, leaf.valueMask(),
                                                                    mc.metadata, half, file_compression) +
                                          8);
        }
      }
    });
    grid.insertMeta(openvdb::GridBase::META_FILE_DELAYED_LOAD, meta);
  }
}

// One grid, as Archive::writeGrid writes it (seekable: with offsets).
template <class GridT>
void write_tree_grid(Sink& sink, GridT& grid, uint32_t file_compression, openvdb::io::StreamMetadata::Ptr file_meta) {
  Bytes& out = sink.bytes();
  std::ostream& os = sink.stream();
  openvdb::io::StreamMetadata::Ptr grid_meta = std::make_shared<openvdb::io::StreamMetadata>(*file_meta);
  grid_meta->setHalfFloat(grid.saveFloatAsHalf());
  grid_meta->gridMetadata() = static_cast<const openvdb::MetaMap&>(grid);
  openvdb::io::setStreamMetadataPtr(os, grid_meta, false);
  openvdb::io::GridDescriptor gd(grid.getName(), grid.type(), grid.saveFloatAsHalf());
  gd.writeHeader(os);
  const uint64_t offsets_at = sink.pos();
  gd.writeStreamPos(os);  // placeholders, patched below
  gd.setGridPos(openvdb::Int64(sink.pos()));
  // Archive::setGridCompression: no ZIP for level sets and fog volumes.
  uint32_t c = file_compression;
  if (grid.getGridClass() == openvdb::GRID_LEVEL_SET || grid.getGridClass() == openvdb::GRID_FOG_VOLUME)
    c &= ~uint32_t(openvdb::io::COMPRESS_ZIP);
  openvdb::io::setDataCompression(os, c);
  put(out, c);
  // The buffers first (with the background the topology would set): the metadata is read off them.
  using LeafT = typename GridT::TreeType::LeafNodeType;
  std::vector<const LeafT*> leaves;
  leaves.reserve(size_t(grid.tree().leafCount()));
  for (auto it = grid.tree().cbeginLeaf(); it; ++it) leaves.push_back(it.getLeaf());
  const auto background = grid.tree().background();
  openvdb::io::setGridBackgroundValuePtr(os, &background);
  std::vector<uint32_t> sizes;
  std::vector<Bytes> parts = leaf_buffers(leaves, os, grid.saveFloatAsHalf(), sizes);
  add_delayed_load_metadata(grid, leaves, parts, sizes, file_compression, c);
  grid.addStatsMetadata();
  grid.insertMeta(openvdb::GridBase::META_FILE_COMPRESSION,
                  openvdb::StringMetadata(openvdb::io::compressionToString(c)));
  grid.writeMeta(os);
  grid.writeTransform(os);
  grid.writeTopology(os);
  gd.setBlockPos(openvdb::Int64(sink.pos()));
  for (Bytes& part : parts) {
    out.insert(out.end(), part.begin(), part.end());
    Bytes().swap(part);
    sink.flush_if_full();
  }
  finish_grid(sink, gd, offsets_at);
  openvdb::io::setStreamMetadataPtr(os, file_meta, false);
}

// A file of trees OpenVDB built (to_vdb).
void write_tree_file(AtomicFile& file, const openvdb::GridPtrVec& grids, uint64_t seed) {
  write_vdb_file(file, grids.size(), seed,
                 [&](Sink& sink, size_t i, uint32_t compression, openvdb::io::StreamMetadata::Ptr& stream_meta) {
                   const openvdb::GridBase::Ptr& g = grids[i];
                   if (auto f = openvdb::gridPtrCast<openvdb::FloatGrid>(g))
                     write_tree_grid(sink, *f, compression, stream_meta);
                   else if (auto n = openvdb::gridPtrCast<openvdb::Int32Grid>(g))
                     write_tree_grid(sink, *n, compression, stream_meta);
                   else if (auto v = openvdb::gridPtrCast<openvdb::Vec3SGrid>(g))
                     write_tree_grid(sink, *v, compression, stream_meta);
                   else if (auto b = openvdb::gridPtrCast<openvdb::BoolGrid>(g))
                     write_tree_grid(sink, *b, compression, stream_meta);
                   else if (auto m = openvdb::gridPtrCast<openvdb::MaskGrid>(g))
                     write_tree_grid(sink, *m, compression, stream_meta);
                   else
                     fail(ErrorKind::kInternal, file.final_path() + ": no VDB writer for grid type " + g->type());
                 });
}

}  // namespace

void write_vdb(const SparseGrid& g, const std::string& path, const Metadata& meta) { write_vdb_grids({&g}, path, meta); }

void write_vdb_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta,
                     VdbWriter writer, const VdbWriteOptions& options) {
  init_openvdb();
  // (Files write_direct_vdb takes come here only with VdbWriter::kTree or kOpenVdb: io/vdb_loader.cpp.)
  const uint64_t seed = vdb_file_seed(grids, meta);
  const bool named = vdb_distinct_names(grids);
  if ((writer == VdbWriter::kDirect || writer == VdbWriter::kTree) && !named)
    fail(ErrorKind::kInternal, path + ": voxtile's VDB writers take grids with distinct, non-empty names");
  if (writer != VdbWriter::kOpenVdb && named) {
    openvdb::GridPtrVec vdb_grids;
    for (const SparseGrid* g : grids) vdb_grids.push_back(to_vdb(*g, meta, options));
    AtomicFile out(path);
    try {
      write_tree_file(out, vdb_grids, seed);
    } catch (const openvdb::Exception& e) {
      fail(ErrorKind::kOutput, path + ": cannot write VDB: " + e.what());
    }
    out.close_stream();
    out.commit();
    return;
  }
  openvdb::GridPtrVec vdb_grids;
  std::vector<StandIn> stand_ins;
  for (const SparseGrid* g : grids) {
    vdb_grids.push_back(to_vdb(*g, meta, options));
    // io::File::write copies every grid, and the copy rebuilds the transform through AffineMap,
    // which refuses voxels under about 1.44e-5: such a grid is written with a stand-in transform of
    // the same map type and size, whose bytes are then replaced by the real ones.
    if (!openvdb_copies_transform(g->spec)) {
      GridSpec stand_in = g->spec;
      stand_in.voxel_size = {1.0, 1.0, g->spec.is_cubic() ? 1.0 : 2.0};  // the same map type
      vdb_grids.back()->setTransform(make_vdb_transform(stand_in));
      stand_ins.push_back({vdb_grids.size() - 1, vdb_transform_bytes(stand_in), vdb_transform_bytes(g->spec)});
    }
  }
  AtomicFile out(path);
  out.close_stream();
  try {
    openvdb::io::File file(out.temp_path());
    file.write(vdb_grids);
    file.close();
  } catch (const std::exception& e) {
    fail(ErrorKind::kOutput, path + ": cannot write VDB: " + e.what());
  }
  // OpenVDB's stream does not report failed writes (a full disk leaves a cut file): the file's
  // layout, every grid's end inside the file, says whether all of it was written.
  std::vector<uint64_t> transforms;
  try {
    transforms = check_vdb_layout(out.temp_path());
  } catch (const Error&) {
    fail(ErrorKind::kOutput, path + ": cannot write VDB: the written file is incomplete (is the disk full?)");
  }
  if (!stand_ins.empty()) replace_stand_ins(out.temp_path(), path, stand_ins, transforms);
  make_uuid_deterministic(out.temp_path(), path, seed);
  out.commit();
}

namespace {

// The file's layout, checked before OpenVDB reads it: the header, the file's metadata and every
// grid's descriptor and metadata, with each length and offset inside the file. OpenVDB trusts them:
// a file cut short (a full disk) or a corrupt length would make it allocate gigabytes or read for
// minutes. Files older than format 222 (OpenVDB 3, 2014) are left to OpenVDB. Returns where each
// grid's transform starts (empty for those older files).
std::vector<uint64_t> check_vdb_layout(const std::string& path) {
  std::vector<uint64_t> transforms;
  std::ifstream f(path, std::ios::binary);
  f.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(std::max<std::streamoff>(0, f.tellg()));
  f.seekg(0);
  uint64_t pos = 0;
  auto truncated = [&](const std::string& what) {
    fail(ErrorKind::kInput, path + ": truncated or corrupt VDB file (" + what + " at byte " + std::to_string(pos) +
                                " of " + std::to_string(size) + ")");
  };
  auto read = [&](void* out, uint64_t n, const char* what) {
    if (n > size - std::min(pos, size)) truncated(what);
    f.read(static_cast<char*>(out), std::streamsize(n));
    if (!f) truncated(what);
    pos += n;
  };
  auto skip = [&](uint64_t n, const char* what) {
    if (n > size - std::min(pos, size)) truncated(what);
    pos += n;
    f.seekg(std::streamoff(pos));
  };
  auto u32 = [&](const char* what) {
    uint32_t v = 0;
    read(&v, 4, what);
    return v;
  };
  auto skip_string = [&](const char* what) { skip(u32(what), what); };
  auto skip_metadata = [&](const char* what) {
    const uint32_t count = u32(what);
    if (count > size) truncated(what);
    for (uint32_t i = 0; i < count; ++i) {
      skip_string(what);  // name
      skip_string(what);  // type
      skip(u32(what), what);
    }
  };
  uint64_t magic = 0;
  if (size < 8) fail(ErrorKind::kInput, path + ": not a VDB file (" + std::to_string(size) + " bytes)");
  read(&magic, 8, "header");
  if ((magic & 0xffffffffu) != 0x56444220u) fail(ErrorKind::kInput, path + ": not a VDB file");
  const uint32_t version = u32("header");
  if (version < openvdb::OPENVDB_FILE_VERSION_NODE_MASK_COMPRESSION) return transforms;
  skip(8, "header");  // library version
  char has_offsets = 0;
  read(&has_offsets, 1, "header");
  skip(36, "header");  // UUID
  if (!has_offsets) return transforms;
  skip_metadata("file metadata");
  const uint32_t grids = u32("grid count");
  if (grids > size) truncated("grid count");
  for (uint32_t g = 0; g < grids; ++g) {
    skip_string("grid name");
    skip_string("grid type");
    skip_string("grid name");  // instance parent
    int64_t offsets[3];
    read(offsets, sizeof(offsets), "grid offsets");
    const int64_t grid_pos = offsets[0], block_pos = offsets[1], end_pos = offsets[2];
    if (uint64_t(end_pos) > size && grid_pos >= int64_t(pos) && block_pos >= grid_pos && end_pos >= block_pos)
      fail(ErrorKind::kInput, path + ": truncated VDB file: grid " + std::to_string(g) + " ends at byte " +
                                  std::to_string(end_pos) + ", the file has " + std::to_string(size));
    if (grid_pos < int64_t(pos) || block_pos < grid_pos || end_pos < block_pos)
      truncated("grid " + std::to_string(g) + "'s offsets");
    pos = uint64_t(grid_pos);
    f.seekg(std::streamoff(pos));
    // Archive::readGrid: compression flags, the grid's metadata (then its transform and tree).
    skip(4, "grid compression");
    skip_metadata("grid metadata");
    if (pos > uint64_t(block_pos)) truncated("grid metadata");
    transforms.push_back(pos);
    pos = uint64_t(end_pos);
    f.seekg(std::streamoff(pos));
  }
  return transforms;
}

// Held by every in-process OpenVDB read (see read_in_child_first).
std::mutex& vdb_read_mutex() {
  static std::mutex m;
  return m;
}

// OpenVDB's reader trusts the compressed leaf data: a corrupt size makes it write past its buffers
// (found by the fuzz test: bloscFromStream in OpenVDB 10). So a file is read once in a child process
// first, under memory and time limits; a crash there is a clean input error here, and the reading
// then repeated here is known to be safe (it is deterministic). The child reads serially (OpenVDB's
// file reading starts no threads).
void read_in_child_first(const std::string& path) {
  // One at a time, and never while another thread of this process is inside OpenVDB's reader
  // (open_grids holds the same lock): a fork copies the locks other threads hold, and a child
  // that needs one of them would wait forever.
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer's allocator is not fork-safe (other_threads, io/files.h): sanitizer builds read
  // in process alone when other threads exist.
  if (other_threads() != 0) return;
#endif
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;  // no pipe: read in process only
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    const int null = open("/dev/null", O_WRONLY);  // glibc's "free(): invalid pointer" and the like
    if (null >= 0) dup2(null, 2);
    limit_address_space(reader_memory_limit());
    // OpenVDB reads a valid file at 100 MB/s or more; a corrupt count can make it loop over a
    // stream at its end for minutes: stopped after 2 s of CPU time plus 1 s per 20 MB (CPU time, so
    // that a loaded machine does not fail a valid file), and after 30 s more of wall time.
    struct stat st;
    const uint64_t bytes = stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
    const rlim_t cpu = rlim_t(std::min<uint64_t>(3600, 2 + bytes / (20u << 20)));
    const rlimit cpu_limit{cpu, cpu + 1};
    setrlimit(RLIMIT_CPU, &cpu_limit);
    alarm(unsigned(cpu + 30));
    std::string message;
    try {
      // The grids are left alive (_exit runs no destructors): a tree's destructor frees its nodes
      // with tbb::parallel_for, which in a child forked from a process whose TBB workers existed
      // can wait forever for workers the child does not have (seen: a valid file reported as "did
      // not finish: wall time limit" after 32 s, the child blocked in Tree::clear). A file that
      // throws part way still unwinds through its partial grid; at worst that ends at the limits
      // below, still as an input error.
      openvdb::io::File file(path);
      file.open(false);
      const openvdb::GridPtrVecPtr grids = file.getGrids();
      file.close();
      _exit(0);
    } catch (const std::exception& e) {
      message = e.what();
    }
    const ssize_t n = ::write(fds[1], message.data(), std::min<size_t>(message.size(), 4000));
    (void)n;
    _exit(3);
  }
  close(fds[1]);
  std::string message;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    message.append(buf, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
    fail(ErrorKind::kInput, path + ": cannot read VDB: " + (message.empty() ? "out of memory" : message));
  if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGALRM || WTERMSIG(status) == SIGXCPU))
    fail(ErrorKind::kInput, path + ": corrupt VDB file (OpenVDB's reader did not finish: " +
                                std::string(WTERMSIG(status) == SIGXCPU ? "CPU" : "wall") + " time limit; a corrupt count?)");
  fail(ErrorKind::kInput, path + ": corrupt VDB file (OpenVDB's reader " +
                              (WIFSIGNALED(status) ? "crashed on it: " + std::string(strsignal(WTERMSIG(status)))
                                                   : "failed on it") + ")");
}

openvdb::GridPtrVecPtr open_grids(const std::string& path) {
  init_openvdb();
  check_input_file(path);
  check_vdb_layout(path);
  std::lock_guard<std::mutex> lock(vdb_read_mutex());  // see read_in_child_first
  read_in_child_first(path);
  try {
    openvdb::io::File file(path);
    file.open(false);
    openvdb::GridPtrVecPtr grids = file.getGrids();
    file.close();
    return grids;
  } catch (const std::exception& e) {
    fail(ErrorKind::kInput, path + ": cannot read VDB: " + e.what());
  }
}

template <class GridT, class Store>
void collect(const GridT& grid, const std::string& path, SparseGrid* out, Store&& store) {
  // Room for every leaf up front: growing the value arrays by doubling (page faults on each new
  // block) cost most of the read of a small grid.
  const size_t leaves = size_t(grid.tree().leafCount());
  out->keys.reserve(leaves);
  out->masks.reserve(leaves);
  const size_t values = size_t(grid.tree().activeLeafVoxelCount()) * size_t(value_channels(out->value_type));
  if (out->value_type == ValueType::kInt32) out->ivalues.reserve(values);
  else if (out->value_type != ValueType::kNone) out->fvalues.reserve(values);
  for (auto it = grid.tree().cbeginLeaf(); it; ++it) {
    const openvdb::Coord o = it->origin();
    if (o.x() < 0 || o.y() < 0 || o.z() < 0) fail(ErrorKind::kInput, path + ": active voxels at negative index coordinates");
    BrickMask m{};
    for (int w = 0; w < 8; ++w) m.w[w] = it->getValueMask().template getWord<openvdb::Index64>(w);
    if (!m.any()) continue;
    out->keys.push_back(brick_key(o.x() / 8, o.y() / 8, o.z() / 8));
    out->masks.push_back(m);
    store(*it, m);
  }
}

// The active tiles of an occupancy grid: full bricks as runs, bricks cut by the grid's dims as
// masks (the caller sorts the bricks and makes the canonical runs).
template <class GridT>
void collect_tiles(const GridT& grid, const std::string& path, SparseGrid* out) {
  for (auto it = grid.tree().cbeginValueOn(); it; ++it) {
    if (!it.isTileValue()) continue;
    openvdb::CoordBBox bb;
    it.getBoundingBox(bb);
    const openvdb::Coord lo = bb.min(), hi = bb.max();
    if (lo.x() < 0 || lo.y() < 0 || lo.z() < 0)
      fail(ErrorKind::kInput, path + ": active voxels at negative index coordinates");
    if (lo.x() % 8 || lo.y() % 8 || lo.z() % 8 || (hi.x() + 1) % 8 || (hi.y() + 1) % 8 || (hi.z() + 1) % 8)
      fail(ErrorKind::kInput, path + ": an active tile that is not made of whole 8^3 bricks");
    append_active_tile(*out, {lo.x(), lo.y(), lo.z()}, {hi.x() + 1, hi.y() + 1, hi.z() + 1});
  }
}

}  // namespace

namespace {

bool supported(const openvdb::GridBase::Ptr& g) {
  return g->isType<openvdb::MaskGrid>() || g->isType<openvdb::BoolGrid>() || g->isType<openvdb::Int32Grid>() ||
         g->isType<openvdb::FloatGrid>() || g->isType<openvdb::Vec3SGrid>();
}

SparseGrid to_sparse(const openvdb::GridBase::Ptr& base, const std::string& path);

}  // namespace

SparseGrid read_vdb(const std::string& path, const std::string& grid_name) {
  openvdb::GridPtrVecPtr grids = open_grids(path);
  for (const auto& g : *grids)
    if ((grid_name.empty() || g->getName() == grid_name) && supported(g)) return to_sparse(g, path);
  fail(ErrorKind::kInput, path + ": no mask, bool, int32, float or vec3s grid" + (grid_name.empty() ? "" : " named " + grid_name));
}

std::vector<SparseGrid> read_vdb_grids(const std::string& path) {
  std::vector<SparseGrid> out;
  const openvdb::GridPtrVecPtr grids = open_grids(path);
  for (const auto& g : *grids)
    if (supported(g)) out.push_back(to_sparse(g, path));
  return out;
}

namespace {

SparseGrid to_sparse(const openvdb::GridBase::Ptr& base, const std::string& path) {
  SparseGrid out;
  out.name = base->getName();
  if (auto dims = base->getMetadata<openvdb::Vec3IMetadata>("voxtile_dims")) {
    out.spec.dims = {dims->value().x(), dims->value().y(), dims->value().z()};
  } else {
    const openvdb::CoordBBox bb = base->evalActiveVoxelBoundingBox();
    out.spec.dims = {bb.max().x() + 1, bb.max().y() + 1, bb.max().z() + 1};
  }
  const openvdb::Vec3d vs = base->voxelSize();
  out.spec.voxel_size = {vs.x(), vs.y(), vs.z()};
  const openvdb::Vec3d o = base->indexToWorld(openvdb::Vec3d(-0.5, -0.5, -0.5));
  out.spec.origin = {o.x(), o.y(), o.z()};
  // Active tiles: runs of an occupancy grid; written out as voxels in a value grid.
  if (auto g = openvdb::GridBase::grid<openvdb::MaskGrid>(base)) {
    collect(*g, path, &out, [](const auto&, const BrickMask&) {});
    collect_tiles(*g, path, &out);
  } else if (auto g = openvdb::GridBase::grid<openvdb::BoolGrid>(base)) {
    collect(*g, path, &out, [](const auto&, const BrickMask&) {});
    collect_tiles(*g, path, &out);
  } else if (auto g = openvdb::GridBase::grid<openvdb::Int32Grid>(base)) {
    out.value_type = ValueType::kInt32;
    g->tree().voxelizeActiveTiles();
    collect(*g, path, &out, [&](const auto& leaf, const BrickMask& m) {
      for (int off = 0; off < kBrickVoxels; ++off)
        if (m.test(off)) out.ivalues.push_back(leaf.getValue(off));
    });
  } else if (auto g = openvdb::GridBase::grid<openvdb::FloatGrid>(base)) {
    out.value_type = ValueType::kFloat32;
    out.level_set = g->getGridClass() == openvdb::GRID_LEVEL_SET;
    if (out.level_set) out.background = g->background();
    g->tree().voxelizeActiveTiles();
    collect(*g, path, &out, [&](const auto& leaf, const BrickMask& m) {
      for (int off = 0; off < kBrickVoxels; ++off)
        if (m.test(off)) out.fvalues.push_back(leaf.getValue(off));
    });
  } else if (auto g = openvdb::GridBase::grid<openvdb::Vec3SGrid>(base)) {
    out.value_type = ValueType::kVec3f;
    g->tree().voxelizeActiveTiles();
    collect(*g, path, &out, [&](const auto& leaf, const BrickMask& m) {
      for (int off = 0; off < kBrickVoxels; ++off)
        if (m.test(off)) {
          const openvdb::Vec3s v = leaf.getValue(off);
          out.fvalues.insert(out.fvalues.end(), {v.x(), v.y(), v.z()});
        }
    });
  }
  sort_bricks_by_key(out);
  out.make_runs();
  return out;
}

}  // namespace

std::string read_vdb_meta(const std::string& path, const std::string& key) {
  init_openvdb();
  try {
    check_vdb_layout(path);  // descriptors and metadata are all this reads: checked, no child needed
    std::lock_guard<std::mutex> lock(vdb_read_mutex());
    openvdb::io::File file(path);
    file.open(false);
    const openvdb::GridPtrVecPtr grids = file.readAllGridMetadata();
    file.close();
    for (const auto& g : *grids)
      if (auto m = g->getMetadata<openvdb::StringMetadata>("voxtile_" + key)) return m->value();
  } catch (const std::exception&) {
  }
  return "";
}

std::vector<std::string> describe_vdb(const std::string& path) {
  openvdb::GridPtrVecPtr grids = open_grids(path);
  std::vector<std::string> lines;
  for (const auto& g : *grids) {
    VdbGridSummary s;
    s.name = g->getName();
    s.type = g->isType<openvdb::MaskGrid>() ? std::string("mask") : g->valueType();
    s.half = g->saveFloatAsHalf();
    s.active_voxels = g->activeVoxelCount();
    const openvdb::CoordBBox bb = g->evalActiveVoxelBoundingBox();
    s.has_bbox = !bb.empty();
    if (s.has_bbox) {
      s.bbox_lo = {bb.min().x(), bb.min().y(), bb.min().z()};
      s.bbox_hi = {bb.max().x(), bb.max().y(), bb.max().z()};
    }
    const openvdb::Vec3d vs = g->voxelSize();
    const openvdb::Vec3d o = g->indexToWorld(openvdb::Vec3d(-0.5, -0.5, -0.5));
    for (int a = 0; a < 3; ++a) {
      s.voxel_size[a] = vs[a];
      s.origin[a] = o[a];
    }
    if (auto dims = g->getMetadata<openvdb::Vec3IMetadata>("voxtile_dims")) {
      s.has_dims = true;
      s.dims = {dims->value().x(), dims->value().y(), dims->value().z()};
    }
    lines.push_back(describe_vdb_grid(s));
  }
  return lines;
}

}  // namespace voxtile

// The module's entry: this file's definitions (bound inside the module by -Bsymbolic-functions, so
// never to the executable's forwarding functions of the same names).
extern "C" const voxtile::VdbApi* voxtile_vdb_api() {
  using namespace voxtile;
  static const VdbApi api = {
      kVdbApiVersion,
      [](const std::vector<const SparseGrid*>& g, const std::string& p, const Metadata& m, VdbWriter w,
         const VdbWriteOptions& o) { write_vdb_grids(g, p, m, w, o); },
      [](const std::string& p, const std::string& n) { return read_vdb(p, n); },
      [](const std::string& p) { return read_vdb_grids(p); },
      [](const std::string& p, const std::string& k) { return read_vdb_meta(p, k); },
      [](const std::string& p) { return describe_vdb(p); },
  };
  return &api;
}
