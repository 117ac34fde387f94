// OpenVDB writer and reader.
#include "io/vdb.h"

#include <openvdb/openvdb.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"
#include "io/atomic_file.h"
#include "io/grid_reader.h"
#include "io/mesh_reader.h"

namespace voxtile {
namespace {

void init_openvdb() {
  static std::once_flag once;
  std::call_once(once, [] { openvdb::initialize(); });
}

openvdb::math::Transform::Ptr make_transform(const GridSpec& s) {
  openvdb::math::Mat4d m = openvdb::math::Mat4d::identity();
  m.setToScale(openvdb::Vec3d(s.voxel_size.x, s.voxel_size.y, s.voxel_size.z));
  m.setTranslation(openvdb::Vec3d(s.origin.x + 0.5 * s.voxel_size.x, s.origin.y + 0.5 * s.voxel_size.y,
                                  s.origin.z + 0.5 * s.voxel_size.z));
  return openvdb::math::Transform::createLinearTransform(m);
}

template <class GridT, class SetValues>
typename GridT::Ptr build_grid(const SparseGrid& g, typename GridT::ValueType background, SetValues&& set_values) {
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
  for (LeafT* leaf : leaves) grid->tree().addLeaf(leaf);
  return grid;
}

// OpenVDB stamps every file with a random UUID (36 ASCII characters after the 21-byte header
// prefix). voxtile replaces it with one derived from the content and metadata, so the same input
// and options give the same bytes.
void make_uuid_deterministic(const std::string& temp_path, const std::string& path, uint64_t seed) {
  std::FILE* f = std::fopen(temp_path.c_str(), "r+b");
  if (!f) fail(ErrorKind::kOutput, path + ": cannot reopen the VDB file");
  char uuid[37] = {};
  const bool ok = std::fseek(f, 21, SEEK_SET) == 0 && std::fread(uuid, 1, 36, f) == 36;
  const bool looks = ok && uuid[8] == '-' && uuid[13] == '-' && uuid[18] == '-' && uuid[23] == '-';
  if (looks) {
    uint64_t hi = seed, lo = seed ^ 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 3; ++i) {
      hi = (hi ^ (hi >> 31)) * 0xbf58476d1ce4e5b9ull;
      lo = (lo ^ (lo >> 29)) * 0x94d049bb133111ebull;
    }
    char text[40];
    std::snprintf(text, sizeof(text), "%08x-%04x-4%03x-%04x-%012llx", unsigned(hi >> 32), unsigned((hi >> 16) & 0xffff),
                  unsigned(hi & 0xfff), unsigned(0x8000 | ((lo >> 48) & 0x3fff)),
                  static_cast<unsigned long long>(lo & 0xffffffffffffull));
    std::fseek(f, 21, SEEK_SET);
    std::fwrite(text, 1, 36, f);
  }
  if (std::fclose(f) != 0) fail(ErrorKind::kOutput, path + ": cannot finish the VDB file");
}

openvdb::GridBase::Ptr to_vdb(const SparseGrid& g, const Metadata& meta) {
  openvdb::GridBase::Ptr base;
  if (g.value_type == ValueType::kNone) {
    base = build_grid<openvdb::MaskGrid>(g, false, [](auto&, size_t) {});
  } else if (g.value_type == ValueType::kInt32) {
    base = build_grid<openvdb::Int32Grid>(g, 0, [&](openvdb::Int32Grid::TreeType::LeafNodeType& leaf, size_t b) {
      const int32_t* v = g.ivalues.data() + b * kBrickVoxels;
      for (int off = 0; off < kBrickVoxels; ++off)
        if (v[off]) leaf.setValueOnly(off, v[off]);
    });
  } else if (g.value_type == ValueType::kFloat32) {
    base = build_grid<openvdb::FloatGrid>(g, 0.0f, [&](openvdb::FloatGrid::TreeType::LeafNodeType& leaf, size_t b) {
      const float* v = g.fvalues.data() + b * kBrickVoxels;
      for (int off = 0; off < kBrickVoxels; ++off)
        if (v[off] != 0.0f) leaf.setValueOnly(off, v[off]);
    });
  } else {
    const openvdb::Vec3s zero(0.0f, 0.0f, 0.0f);
    base = build_grid<openvdb::Vec3SGrid>(g, zero, [&](openvdb::Vec3SGrid::TreeType::LeafNodeType& leaf, size_t b) {
      const float* v = g.fvalues.data() + b * kBrickVoxels * 3;
      for (int off = 0; off < kBrickVoxels; ++off) {
        const openvdb::Vec3s x(v[3 * off], v[3 * off + 1], v[3 * off + 2]);
        if (x != zero) leaf.setValueOnly(off, x);
      }
    });
  }
  base->setName(g.name);
  base->setTransform(make_transform(g.spec));
  base->insertMeta("voxtile_dims", openvdb::Vec3IMetadata(openvdb::Vec3i(g.spec.dims.x, g.spec.dims.y, g.spec.dims.z)));
  base->insertMeta("voxtile_origin",
                   openvdb::Vec3DMetadata(openvdb::Vec3d(g.spec.origin.x, g.spec.origin.y, g.spec.origin.z)));
  for (const auto& [key, value] : meta) base->insertMeta("voxtile_" + key, openvdb::StringMetadata(value));
  return base;
}

}  // namespace

void write_vdb(const SparseGrid& g, const std::string& path, const Metadata& meta) { write_vdb_grids({&g}, path, meta); }

void write_vdb_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta) {
  init_openvdb();
  openvdb::GridPtrVec vdb_grids;
  for (const SparseGrid* g : grids) vdb_grids.push_back(to_vdb(*g, meta));
  AtomicFile out(path);
  out.close_stream();
  try {
    openvdb::io::File file(out.temp_path());
    file.write(vdb_grids);
    file.close();
  } catch (const std::exception& e) {
    fail(ErrorKind::kOutput, path + ": cannot write VDB: " + e.what());
  }
  Hasher h;
  for (const SparseGrid* g : grids) {
    h.pod(g->checksum());
    h.bytes(g->name.data(), g->name.size());
  }
  for (const auto& [key, value] : meta) {
    h.bytes(key.data(), key.size());
    h.bytes(value.data(), value.size());
  }
  make_uuid_deterministic(out.temp_path(), path, h.digest());
  out.commit();
}

namespace {

openvdb::GridPtrVecPtr open_grids(const std::string& path) {
  init_openvdb();
  check_input_file(path);
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

}  // namespace

namespace {

bool supported(const openvdb::GridBase::Ptr& g) {
  return g->isType<openvdb::MaskGrid>() || g->isType<openvdb::BoolGrid>() || g->isType<openvdb::Int32Grid>() ||
         g->isType<openvdb::FloatGrid>() || g->isType<openvdb::Vec3SGrid>();
}

// Bricks in ascending key order (OpenVDB's leaf order is hierarchical, not x-major across nodes).
void sort_bricks(SparseGrid& g) {
  if (std::is_sorted(g.keys.begin(), g.keys.end())) return;
  std::vector<size_t> perm(g.keys.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) { return g.keys[a] < g.keys[b]; });
  const size_t vpb = size_t(kBrickVoxels) * size_t(std::max(1, value_channels(g.value_type)));
  SparseGrid s;
  s.spec = g.spec;
  s.value_type = g.value_type;
  s.name = g.name;
  for (size_t i : perm) {
    s.keys.push_back(g.keys[i]);
    s.masks.push_back(g.masks[i]);
    if (g.value_type == ValueType::kInt32) s.ivalues.insert(s.ivalues.end(), g.ivalues.begin() + i * vpb, g.ivalues.begin() + (i + 1) * vpb);
    else if (g.value_type != ValueType::kNone)
      s.fvalues.insert(s.fvalues.end(), g.fvalues.begin() + i * vpb, g.fvalues.begin() + (i + 1) * vpb);
  }
  g = std::move(s);
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
  if (auto g = openvdb::GridBase::grid<openvdb::MaskGrid>(base)) {
    collect(*g, path, &out, [](const auto&, const BrickMask&) {});
  } else if (auto g = openvdb::GridBase::grid<openvdb::BoolGrid>(base)) {
    collect(*g, path, &out, [](const auto&, const BrickMask&) {});
  } else if (auto g = openvdb::GridBase::grid<openvdb::Int32Grid>(base)) {
    out.value_type = ValueType::kInt32;
    collect(*g, path, &out, [&](const auto& leaf, const BrickMask& m) {
      for (int off = 0; off < kBrickVoxels; ++off) out.ivalues.push_back(m.test(off) ? leaf.getValue(off) : 0);
    });
  } else if (auto g = openvdb::GridBase::grid<openvdb::FloatGrid>(base)) {
    out.value_type = ValueType::kFloat32;
    collect(*g, path, &out, [&](const auto& leaf, const BrickMask& m) {
      for (int off = 0; off < kBrickVoxels; ++off) out.fvalues.push_back(m.test(off) ? leaf.getValue(off) : 0.0f);
    });
  } else if (auto g = openvdb::GridBase::grid<openvdb::Vec3SGrid>(base)) {
    out.value_type = ValueType::kVec3f;
    collect(*g, path, &out, [&](const auto& leaf, const BrickMask& m) {
      for (int off = 0; off < kBrickVoxels; ++off) {
        const openvdb::Vec3s v = m.test(off) ? leaf.getValue(off) : openvdb::Vec3s(0.0f, 0.0f, 0.0f);
        out.fvalues.insert(out.fvalues.end(), {v.x(), v.y(), v.z()});
      }
    });
  }
  sort_bricks(out);
  return out;
}

}  // namespace

std::string read_vdb_meta(const std::string& path, const std::string& key) {
  init_openvdb();
  try {
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
    std::ostringstream s;
    s.precision(9);
    const openvdb::CoordBBox bb = g->evalActiveVoxelBoundingBox();
    const openvdb::Vec3d vs = g->voxelSize();
    const openvdb::Vec3d o = g->indexToWorld(openvdb::Vec3d(-0.5, -0.5, -0.5));
    const std::string type = g->isType<openvdb::MaskGrid>() ? std::string("mask") : g->valueType();
    s << "grid \"" << g->getName() << "\" type=" << type << " active_voxels=" << g->activeVoxelCount();
    if (!bb.empty())
      s << " index_bbox=[" << bb.min().x() << "," << bb.min().y() << "," << bb.min().z() << "]..[" << bb.max().x() << ","
        << bb.max().y() << "," << bb.max().z() << "]";
    s << " voxel_size=" << vs.x();
    if (vs.x() != vs.y() || vs.y() != vs.z()) s << "x" << vs.y() << "x" << vs.z();
    s << " origin=(" << o.x() << ", " << o.y() << ", " << o.z() << ")";
    if (auto dims = g->getMetadata<openvdb::Vec3IMetadata>("voxtile_dims"))
      s << " dims=" << dims->value().x() << "x" << dims->value().y() << "x" << dims->value().z();
    lines.push_back(s.str());
  }
  return lines;
}

}  // namespace voxtile
