// MagicaVoxel .vox writer and reader (io/vox.h).
#include "io/vox.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/files.h"

namespace voxtile {

namespace {

constexpr int32_t kModel = 256;  // MagicaVoxel's largest model side

void put32(std::string& out, int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void put_string(std::string& out, const std::string& s) {
  put32(out, int32_t(s.size()));
  out += s;
}
// A chunk: id, content size, children size, content, children.
void put_chunk(std::string& out, const char* id, const std::string& content, const std::string& children = "") {
  out.append(id, 4);
  put32(out, int32_t(content.size()));
  put32(out, int32_t(children.size()));
  out += content;
  out += children;
}
std::string dict(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string d;
  put32(d, int32_t(kv.size()));
  for (const auto& [k, v] : kv) {
    put_string(d, k);
    put_string(d, v);
  }
  return d;
}

struct Block {
  Int3 origin, size;          // voxels
  std::vector<uint8_t> xyzi;  // 4 bytes per voxel
};

}  // namespace

void write_vox(const SparseGrid& g, const std::string& path) {
  // Voxels into their 256^3 blocks (bricks never straddle blocks: 256 is a multiple of 8).
  std::map<uint64_t, Block> blocks;  // by block coordinates, x-major
  const Int3 nb{(g.spec.dims.x + kModel - 1) / kModel, (g.spec.dims.y + kModel - 1) / kModel,
                (g.spec.dims.z + kModel - 1) / kModel};
  uint64_t last_key = UINT64_MAX;
  Block* last = nullptr;  // a brick's voxels all go to one block: one map lookup per brick, not per voxel
  g.for_each_active([&](int i, int j, int k, size_t, int, uint64_t at) {
    const uint64_t key =
        (uint64_t(i / kModel) * uint64_t(nb.y) + uint64_t(j / kModel)) * uint64_t(nb.z) + uint64_t(k / kModel);
    if (key != last_key) {
      last = &blocks[key];
      last_key = key;
    }
    Block& bl = *last;
    if (bl.xyzi.empty()) {
      bl.origin = {i / kModel * kModel, j / kModel * kModel, k / kModel * kModel};
      bl.size = {std::min(kModel, g.spec.dims.x - bl.origin.x), std::min(kModel, g.spec.dims.y - bl.origin.y),
                 std::min(kModel, g.spec.dims.z - bl.origin.z)};
    }
    int colour = 1;
    if (g.value_type == ValueType::kInt32) colour = std::clamp(g.ivalues[at], 1, 255);
    bl.xyzi.insert(bl.xyzi.end(),
                   {uint8_t(i - bl.origin.x), uint8_t(j - bl.origin.y), uint8_t(k - bl.origin.z), uint8_t(colour)});
  });
  if (blocks.size() > 65536)
    fail(ErrorKind::kUsage,
         path + ": " + std::to_string(blocks.size()) + " MagicaVoxel models of 256^3; .vox takes at most 65536");
  std::string children;
  if (blocks.size() > 1) {
    std::string pack;
    put32(pack, int32_t(blocks.size()));
    put_chunk(children, "PACK", pack);
  }
  for (const auto& [key, bl] : blocks) {
    std::string size, xyzi;
    put32(size, bl.size.x);
    put32(size, bl.size.y);
    put32(size, bl.size.z);
    put32(xyzi, int32_t(bl.xyzi.size() / 4));
    xyzi.append(reinterpret_cast<const char*>(bl.xyzi.data()), bl.xyzi.size());
    put_chunk(children, "SIZE", size);
    put_chunk(children, "XYZI", xyzi);
  }
  // Scene: root transform 0 -> group 1 -> (transform 2 + 2m -> shape 3 + 2m with model m).
  const int32_t n = int32_t(blocks.size());
  std::string trn0;
  put32(trn0, 0);
  trn0 += dict({});
  put32(trn0, 1);
  put32(trn0, -1);
  put32(trn0, -1);
  put32(trn0, 1);
  trn0 += dict({});
  put_chunk(children, "nTRN", trn0);
  std::string grp;
  put32(grp, 1);
  grp += dict({});
  put32(grp, n);
  for (int32_t m = 0; m < n; ++m) put32(grp, 2 + 2 * m);
  put_chunk(children, "nGRP", grp);
  int32_t m = 0;
  for (const auto& [key, bl] : blocks) {
    std::ostringstream t;
    t << bl.origin.x + bl.size.x / 2 << " " << bl.origin.y + bl.size.y / 2 << " " << bl.origin.z + bl.size.z / 2;
    std::string trn;
    put32(trn, 2 + 2 * m);
    trn += dict({});
    put32(trn, 3 + 2 * m);
    put32(trn, -1);
    put32(trn, 0);
    put32(trn, 1);
    trn += dict({{"_t", t.str()}});
    put_chunk(children, "nTRN", trn);
    std::string shp;
    put32(shp, 3 + 2 * m);
    shp += dict({});
    put32(shp, 1);
    put32(shp, m);
    shp += dict({});
    put_chunk(children, "nSHP", shp);
    ++m;
  }
  // Palette: entry i of the chunk is colour index i + 1.
  std::string rgba;
  for (int c = 1; c <= 256; ++c) {
    uint8_t p[4] = {200, 200, 200, 255};
    if (c >= 2 && c <= 255) {
      const double f = double(c - 2) / 253.0;  // blue -> yellow
      p[0] = uint8_t(40 + f * 213);
      p[1] = uint8_t(60 + f * 171);
      p[2] = uint8_t(200 - f * 170);
    }
    rgba.append(reinterpret_cast<const char*>(p), 4);
  }
  put_chunk(children, "RGBA", rgba);
  std::string file = "VOX ";
  put32(file, 150);
  put_chunk(file, "MAIN", "", children);
  AtomicFile out(path);
  out.write(file.data(), file.size());
  out.commit();
}

namespace {

class ChunkReader {
 public:
  ChunkReader(const std::string& path, const std::string& bytes, size_t pos, size_t end)
      : m_path(path), m_b(bytes), m_pos(pos), m_end(end) {}
  int32_t i32(const char* what) {
    need(4, what);
    int32_t v;
    std::memcpy(&v, m_b.data() + m_pos, 4);
    m_pos += 4;
    return v;
  }
  std::string str(const char* what) {
    const int32_t n = i32(what);
    if (n < 0) bad(what);
    need(size_t(n), what);
    std::string s = m_b.substr(m_pos, size_t(n));
    m_pos += size_t(n);
    return s;
  }
  std::map<std::string, std::string> dict(const char* what) {
    std::map<std::string, std::string> d;
    const int32_t n = i32(what);
    if (n < 0 || n > 4096) bad(what);
    for (int32_t i = 0; i < n; ++i) {
      std::string k = str(what);
      d[k] = str(what);
    }
    return d;
  }
  void need(size_t n, const char* what) const {
    if (n > m_end - m_pos) fail(ErrorKind::kInput, m_path + ": truncated .vox file (" + what + ")");
  }
  [[noreturn]] void bad(const char* what) const {
    fail(ErrorKind::kInput, m_path + ": corrupt .vox file (" + std::string(what) + ")");
  }
  size_t pos() const { return m_pos; }

 private:
  const std::string& m_path;
  const std::string& m_b;
  size_t m_pos, m_end;
};

}  // namespace

SparseGrid read_vox(const std::string& path) {
  const std::string bytes = read_input_file(path);
  if (bytes.size() < 20 || bytes.compare(0, 4, "VOX ") != 0 || bytes.compare(8, 4, "MAIN") != 0)
    fail(ErrorKind::kInput, path + ": not a MagicaVoxel .vox file");
  ChunkReader head(path, bytes, 12, bytes.size());
  const int32_t main_content = head.i32("MAIN"), main_children = head.i32("MAIN");
  if (main_content < 0 || main_children < 0 || uint64_t(main_content) + uint64_t(main_children) > bytes.size() - 20)
    fail(ErrorKind::kInput, path + ": truncated .vox file (MAIN)");
  struct Model {
    Int3 size{};
    bool has_voxels = false;  // its XYZI chunk was read
    std::vector<uint8_t> xyzi;
  };
  std::vector<Model> models;
  struct Node {
    char kind = 0;  // 'T' transform, 'G' group, 'S' shape
    std::vector<int32_t> children;
    Int3 t{};
  };
  std::map<int32_t, Node> nodes;
  size_t pos = 20 + size_t(main_content);
  const size_t end = pos + size_t(main_children);
  while (pos < end) {
    ChunkReader r(path, bytes, pos, end);
    r.need(12, "chunk header");
    const std::string id = bytes.substr(pos, 4);
    ChunkReader h(path, bytes, pos + 4, end);
    const int32_t content = h.i32("chunk"), kids = h.i32("chunk");
    if (content < 0 || kids < 0 || uint64_t(content) + uint64_t(kids) > end - pos - 12)
      fail(ErrorKind::kInput, path + ": truncated .vox file (chunk " + id + ")");
    const size_t c0 = pos + 12, c1 = c0 + size_t(content);
    ChunkReader c(path, bytes, c0, c1);
    if (id == "SIZE") {
      Model m;
      m.size = {c.i32("SIZE"), c.i32("SIZE"), c.i32("SIZE")};
      if (m.size.x < 1 || m.size.y < 1 || m.size.z < 1 || m.size.x > kModel || m.size.y > kModel || m.size.z > kModel)
        c.bad("SIZE");
      models.push_back(std::move(m));
    } else if (id == "XYZI") {
      if (models.empty() || models.back().has_voxels) c.bad("XYZI without its SIZE");
      const int32_t n = c.i32("XYZI");
      if (n < 0) c.bad("XYZI");
      c.need(size_t(n) * 4, "XYZI voxels");
      Model& m = models.back();
      m.has_voxels = true;
      m.xyzi.assign(bytes.begin() + long(c0 + 4), bytes.begin() + long(c0 + 4 + size_t(n) * 4));
      for (size_t v = 0; v < m.xyzi.size(); v += 4)
        if (m.xyzi[v] >= m.size.x || m.xyzi[v + 1] >= m.size.y || m.xyzi[v + 2] >= m.size.z)
          fail(ErrorKind::kInput, path + ": a .vox voxel lies outside its model");
    } else if (id == "nTRN" || id == "nGRP" || id == "nSHP") {
      const int32_t node = c.i32("node");
      c.dict("node attributes");
      Node n;
      if (id == "nTRN") {
        n.kind = 'T';
        n.children.push_back(c.i32("nTRN"));
        c.i32("nTRN");
        c.i32("nTRN");
        const int32_t frames = c.i32("nTRN");
        for (int32_t f = 0; f < frames; ++f) {
          const auto d = c.dict("nTRN frame");
          if (f > 0) continue;
          if (auto it = d.find("_r"); it != d.end() && it->second != "4")
            fail(ErrorKind::kInput, path + ": rotated .vox models are not supported");
          if (auto it = d.find("_t"); it != d.end()) {
            std::istringstream s(it->second);
            s >> n.t.x >> n.t.y >> n.t.z;
            if (!s) c.bad("nTRN _t");
          }
        }
      } else if (id == "nGRP") {
        n.kind = 'G';
        const int32_t k = c.i32("nGRP");
        if (k < 0 || k > 1 << 20) c.bad("nGRP");
        for (int32_t i = 0; i < k; ++i) n.children.push_back(c.i32("nGRP"));
      } else {
        n.kind = 'S';
        const int32_t k = c.i32("nSHP");
        if (k < 1) c.bad("nSHP");
        n.children.push_back(c.i32("nSHP"));  // the model (first frame)
      }
      nodes[node] = std::move(n);
    }
    pos = c1 + size_t(kids);
  }
  for (const Model& m : models)
    if (!m.has_voxels) fail(ErrorKind::kInput, path + ": a .vox SIZE chunk without its XYZI");
  // Each model's offset: the translations from the root (node 0) down to its shape, minus half its
  // size (rounded down); without a scene graph, every model at the origin.
  std::vector<Int3> offset(models.size(), Int3{0, 0, 0});
  std::vector<bool> placed(models.size(), nodes.empty());
  if (!nodes.empty()) {
    std::vector<std::pair<int32_t, Int3>> stack = {{0, Int3{0, 0, 0}}};
    size_t visits = 0;
    while (!stack.empty()) {
      const auto [id, t] = stack.back();
      stack.pop_back();
      if (++visits > nodes.size() * 4 + 16) fail(ErrorKind::kInput, path + ": the .vox scene graph has a cycle");
      const auto it = nodes.find(id);
      if (it == nodes.end()) fail(ErrorKind::kInput, path + ": the .vox scene graph names a missing node");
      const Node& n = it->second;
      if (n.kind == 'S') {
        const int32_t m = n.children[0];
        if (m < 0 || size_t(m) >= models.size()) fail(ErrorKind::kInput, path + ": a .vox shape names a missing model");
        offset[size_t(m)] = {t.x - models[size_t(m)].size.x / 2, t.y - models[size_t(m)].size.y / 2,
                             t.z - models[size_t(m)].size.z / 2};
        placed[size_t(m)] = true;
      } else {
        const Int3 tt = n.kind == 'T' ? Int3{t.x + n.t.x, t.y + n.t.y, t.z + n.t.z} : t;
        for (int32_t ch : n.children) stack.push_back({ch, tt});
      }
    }
  }
  Int3 lo{INT32_MAX, INT32_MAX, INT32_MAX}, hi{INT32_MIN, INT32_MIN, INT32_MIN};
  for (size_t mi = 0; mi < models.size(); ++mi) {
    if (!placed[mi]) continue;
    for (size_t v = 0; v < models[mi].xyzi.size(); v += 4) {
      const Int3 p{offset[mi].x + models[mi].xyzi[v], offset[mi].y + models[mi].xyzi[v + 1],
                   offset[mi].z + models[mi].xyzi[v + 2]};
      lo = {std::min(lo.x, p.x), std::min(lo.y, p.y), std::min(lo.z, p.z)};
      hi = {std::max(hi.x, p.x), std::max(hi.y, p.y), std::max(hi.z, p.z)};
    }
  }
  SparseGrid g;
  g.name = "voxels";
  g.spec.voxel_size = {1.0, 1.0, 1.0};
  if (lo.x > hi.x) {
    g.spec.dims = {1, 1, 1};
    return g;
  }
  g.spec.dims = {hi.x - lo.x + 1, hi.y - lo.y + 1, hi.z - lo.z + 1};
  std::map<uint64_t, BrickMask> acc;
  for (size_t mi = 0; mi < models.size(); ++mi) {
    if (!placed[mi]) continue;
    for (size_t v = 0; v < models[mi].xyzi.size(); v += 4) {
      const int x = offset[mi].x + models[mi].xyzi[v] - lo.x, y = offset[mi].y + models[mi].xyzi[v + 1] - lo.y,
                z = offset[mi].z + models[mi].xyzi[v + 2] - lo.z;
      acc[brick_key(x >> 3, y >> 3, z >> 3)].set(brick_offset(x & 7, y & 7, z & 7));
    }
  }
  for (const auto& [key, mask] : acc) {
    g.keys.push_back(key);
    g.masks.push_back(mask);
  }
  return g;
}

}  // namespace voxtile
