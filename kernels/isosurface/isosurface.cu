// Marching cubes on the GPU: the same mesh as grid_to_mesh (core/isosurface.h), bit for bit, brick by
// brick over the grown grid as the CPU goes (the shared functions of core/isosurface_cell.h): the
// bricks that may hold cells with triangles (8 per brick of the grid and of the inside, radix-sorted
// and made unique), a thread per brick counting its cells' triangles, a scan for the offsets, the
// triangles' vertex keys written by the same threads and set in a bitmap per brick; the bitmap's
// counts number the vertices in ascending key order and give each corner its vertex, as the CPU's
// BrickKeySet does. Every step keeps the CPU's order, so the arrays are the CPU's.
#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <stdexcept>

#include "core/isosurface.h"
#include "core/timer.h"
#include "kernels/api.h"
#include "kernels/common.cuh"

namespace voxtile {
namespace {

struct DeviceGrid {
  DeviceBuffer<uint64_t> keys, masks;
  DeviceBuffer<float> values;
  DeviceBuffer<uint64_t> first;  // a float grid's active voxels before each brick (bricks + 1)
  IsoGridView view;
  uint64_t voxels = 0;
};

void upload_grid(const SparseGrid& g, bool values, DeviceGrid& d, StagedCopy& staging, cudaStream_t stream) {
  d.view = iso_view(g);
  const size_t nb = g.keys.size();
  d.keys.grow(std::max<size_t>(nb, 1));
  d.masks.grow(std::max<size_t>(8 * nb, 1));
  staging.upload(d.keys.data(), g.keys.data(), nb * sizeof(uint64_t), stream);
  staging.upload(d.masks.data(), g.masks.data(), nb * sizeof(BrickMask), stream);
  d.view.keys = d.keys.data();
  d.view.masks = d.masks.data();
  d.view.values = nullptr;
  d.view.value_begin = nullptr;
  if (values) {  // (float grids: their value index)
    std::vector<uint64_t> first;
    if (g.value_begin.size() != nb + 1) {
      first.assign(nb + 1, 0);
      for (size_t b = 0; b < nb; ++b) first[b + 1] = first[b] + uint64_t(g.masks[b].count());
    }
    const uint64_t* begin = first.empty() ? g.value_begin.data() : first.data();
    d.voxels = begin[nb];
    d.first.grow(nb + 1);
    staging.upload(d.first.data(), begin, (nb + 1) * sizeof(uint64_t), stream);
    d.values.grow(std::max<size_t>(d.voxels, 1));
    staging.upload(d.values.data(), g.fvalues.data(), d.voxels * sizeof(float), stream);
    d.view.values = d.values.data();
    d.view.value_begin = d.first.data();
  }
}

// Grid brick b's grown bricks (iso_bricks_around, marching cubes' reach), 8 per brick into `out`.
__global__ void bricks_around(IsoGridView g, IsoKeys keys, bool interior_skipped, uint64_t* out) {
  for (uint64_t b = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; b < g.bricks;
       b += uint64_t(gridDim.x) * blockDim.x)
    iso_bricks_around(g, keys, b, 7, interior_skipped, keys.bricks(), out + 8 * b);
}

// Per grown brick: the triangles of its cells (iso_brick_cells).
__global__ void brick_triangles(IsoField f, const McTable* t, IsoKeys keys, const uint64_t* bricks, uint64_t n,
                                float iso, uint32_t* count) {
  for (uint64_t q = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; q < n; q += uint64_t(gridDim.x) * blockDim.x) {
    int64_t gx, gy, gz;
    keys.brick_coords(bricks[q], gx, gy, gz);
    uint32_t tris = 0;
    iso_brick_cells(f, gx, gy, gz, iso, [&](int, int p) { tris += t->count[p]; });
    count[q] = tris;
  }
}

// The CPU's BrickKeySet for the vertex keys (core/isosurface.cpp) on the device: 8 x 512 bits per
// candidate brick (a vertex key is its brick << 12 | offset << 3 | code), a key's brick found by a
// table of the grown grid's bricks where that is small enough, else by searching the bricks; the keys
// numbered in ascending order by the words' counts.
struct VertexBits {
  const uint64_t* bricks = nullptr;
  uint64_t nbricks = 0;
  const uint32_t* table = nullptr;  // grown brick -> its place among `bricks` (kNone), or null
  uint64_t* bits = nullptr;         // 64 words per brick
  const uint64_t* first = nullptr;  // the keys before each word, once numbered
  unsigned* outside = nullptr;      // set when a key lies outside the bricks (add_bricks_around: never)
  static constexpr uint32_t kNone = 0xffffffffu;
  __device__ bool word(uint64_t key, uint64_t& w) const {
    const uint64_t brick = key >> 12;
    uint64_t s;
    if (table) {
      s = table[brick];
      if (s == kNone) s = nbricks;
    } else {
      s = lower_bound_index<uint64_t>(bricks, nbricks, brick);
      if (s < nbricks && bricks[s] != brick) s = nbricks;
    }
    if (s == nbricks) {
      atomicExch(outside, 1u);
      return false;
    }
    w = s * 64 + ((key >> 6) & 63);
    return true;
  }
};

// Per grown brick: its triangles' vertex keys, from its first triangle on, each set in `vb`.
__global__ void brick_corners(IsoField f, const McTable* t, IsoKeys keys, const uint64_t* bricks, uint64_t n, float iso,
                              const uint64_t* first, uint64_t* corners, VertexBits vb) {
  for (uint64_t q = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; q < n; q += uint64_t(gridDim.x) * blockDim.x) {
    int64_t gx, gy, gz;
    keys.brick_coords(bricks[q], gx, gy, gz);
    uint64_t* out = corners + 3 * first[q];
    iso_brick_cells(f, gx, gy, gz, iso, [&](int off, int p) {
      iso_cell_corners(*t, keys, p, gx * 8 + (off >> 6) - 1, gy * 8 + (off >> 3 & 7) - 1, gz * 8 + (off & 7) - 1, out);
      for (int c = 0; c < 3 * t->count[p]; ++c) {
        uint64_t w;
        if (vb.word(out[c], w)) atomicOr(reinterpret_cast<unsigned long long*>(vb.bits + w), 1ull << (out[c] & 63));
      }
      out += 3 * t->count[p];
    });
  }
}

__global__ void brick_slots(const uint64_t* bricks, uint64_t n, uint32_t* table) {
  for (uint64_t s = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; s < n; s += uint64_t(gridDim.x) * blockDim.x)
    table[bricks[s]] = uint32_t(s);
}

__global__ void word_counts(const uint64_t* bits, uint64_t n, uint32_t* counts) {
  for (uint64_t w = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; w < n; w += uint64_t(gridDim.x) * blockDim.x)
    counts[w] = uint32_t(__popcll(bits[w]));
}

// The vertex keys in ascending order, word by word.
__global__ void vertex_keys(VertexBits vb, uint64_t words, uint64_t* verts) {
  for (uint64_t w = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; w < words; w += uint64_t(gridDim.x) * blockDim.x) {
    uint64_t at = vb.first[w];
    for (uint64_t m = vb.bits[w]; m; m &= m - 1)
      verts[at++] = vb.bricks[w >> 6] << 12 | (w & 63) << 6 | uint64_t(ctz64(m));
  }
}

struct Frame {
  double origin[3], size[3];
};

__global__ void vertices(IsoField f, const McTable* t, IsoKeys keys, const uint64_t* verts, uint64_t n, float iso,
                         Frame frame, Vec3f* pos, Vec3f* nrm) {
  for (uint64_t v = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; v < n; v += uint64_t(gridDim.x) * blockDim.x)
    iso_vertex(f, *t, keys, verts[v], iso, frame.origin, frame.size, &pos[v].x, &nrm[v].x);
}

// Each corner's vertex: its key's place among the keys.
__global__ void indices(const uint64_t* corners, uint64_t n, VertexBits vb, uint32_t* out) {
  for (uint64_t c = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; c < n; c += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t key = corners[c];
    uint64_t w = 0;
    out[c] = vb.word(key, w) ? uint32_t(vb.first[w] + uint64_t(__popcll(vb.bits[w] & ((1ull << (key & 63)) - 1)))) : 0u;
  }
}

// Inclusive sum of counts[0, n) into first[1, n], first[0] = 0; returns the total (synchronises).
uint64_t offsets_of(const uint32_t* counts, uint64_t* first, uint64_t n, CubTemp& cub, cudaStream_t stream) {
  VT_CUDA_CHECK(cudaMemsetAsync(first, 0, sizeof(uint64_t), stream));
  cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceScan::InclusiveSum(t, bytes, counts, first + 1, int64_t(n), stream);
  });
  uint64_t total = 0;
  VT_CUDA_CHECK(cudaMemcpyAsync(&total, first + n, sizeof(uint64_t), cudaMemcpyDeviceToHost, stream));
  VT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return total;
}

unsigned grid_blocks(uint64_t n, unsigned threads = 256) {
  return unsigned(std::max<uint64_t>(1, std::min<uint64_t>((n + threads - 1) / threads, 65536)));
}

// Sorted unique keys of `in[0, n)` into `out`; returns their number.
// Sorts on the `bits` low bits only (the keys' range: half the passes of a full 64-bit sort).
uint64_t sort_unique(DeviceBuffer<uint64_t>& in, DeviceBuffer<uint64_t>& tmp, DeviceBuffer<uint64_t>& out, uint64_t n,
                     int bits, CubTemp& cub, DeviceBuffer<int64_t>& count, cudaStream_t stream) {
  tmp.grow(std::max<uint64_t>(n, 1));
  out.grow(std::max<uint64_t>(n, 1));
  cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceRadixSort::SortKeys(t, bytes, in.data(), tmp.data(), int64_t(n), 0, bits, stream);
  });
  cub.run([&](void* t, size_t& bytes) {
    return cub::DeviceSelect::Unique(t, bytes, tmp.data(), out.data(), count.data(), int64_t(n), stream);
  });
  int64_t m = 0;
  VT_CUDA_CHECK(cudaMemcpyAsync(&m, count.data(), sizeof(m), cudaMemcpyDeviceToHost, stream));
  VT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return uint64_t(m);
}

}  // namespace

Mesh gpu_grid_to_mesh(const SparseGrid& grid_in, const IsoOptions& options, const SparseGrid* inside_in, int device,
                      std::vector<std::pair<std::string, double>>* stage_ms, uint64_t memory_budget) {
  // (bricks walked: full bricks held as runs written out first)
  SparseGrid grid_storage, inside_storage;
  const SparseGrid& grid = expanded_runs(grid_in, grid_storage);
  const SparseGrid* inside = inside_in ? &expanded_runs(*inside_in, inside_storage) : nullptr;
  if (grid.value_type == ValueType::kVec3f || (!options.smooth && grid.value_type != ValueType::kFloat32))
    return grid_to_mesh(grid, options, inside);  // errors and cubes: the CPU's
  if (grid.value_type == ValueType::kFloat32 && !std::isfinite(options.iso)) fail(ErrorKind::kUsage, "--iso must be finite");
  Mesh m;
  m.num_source_meshes = 1;
  m.num_materials = 1;
  std::vector<std::pair<std::string, double>> ms;
  Clock::time_point downloaded;
  {
    const DeviceStream owned(device);
    const cudaStream_t stream = owned.get();
    const bool occupancy = grid.value_type != ValueType::kFloat32;
    const float iso = occupancy ? 0.0f : options.iso;
    const bool use_inside = inside && !occupancy;
    // The arrays' GPU memory at its largest, checked against the budget before they are made (CUB's
    // sorts take as much again as the keys they sort).
    const uint64_t budget = budget_or_free_share(memory_budget);
    auto need = [&](uint64_t bytes) {
      if (bytes > budget)
        fail(ErrorKind::kResource, "marching cubes needs at least " + std::to_string((bytes + (1 << 20) - 1) >> 20) +
                                       " MB of GPU memory, over its budget of " + std::to_string(budget >> 20) +
                                       " MB (--gpu-memory)");
    };
    const uint64_t nbg = grid.keys.size(), nbi = use_inside ? inside->keys.size() : 0;
    const uint64_t grid_bytes =
        nbg * (8 + 64 + 8) + (occupancy ? 0 : 4 * grid.active_voxels()) + nbi * (8 + 64) + sizeof(McTable) + (1 << 20);
    const uint64_t ncand = 8 * (nbg + nbi);
    need(grid_bytes + 4 * 8 * ncand);  // candidate bricks, sorted, unique, CUB's
    StagedCopy staging;
    CubTemp cub;
    StageTimer timer(stream);
    timer.begin("upload");
    DeviceGrid dg, di;
    upload_grid(grid, !occupancy, dg, staging, stream);
    IsoField field = iso_field(grid, use_inside ? inside : nullptr);
    field.grid = dg.view;
    if (use_inside) {
      upload_grid(*inside, false, di, staging, stream);
      field.inside = di.view;
    }
    const McTable& host_table = mc_table();
    DeviceBuffer<McTable> table(1);
    VT_CUDA_CHECK(cudaMemcpyAsync(table.data(), &host_table, sizeof(McTable), cudaMemcpyHostToDevice, stream));
    const GridSpec& s = grid.spec;
    const IsoKeys keys = IsoKeys::make(s.dims.x, s.dims.y, s.dims.z);
    DeviceBuffer<int64_t> count(1);

    timer.begin("bricks");
    DeviceBuffer<uint64_t> cand(std::max<uint64_t>(ncand, 1)), tmp, bricks;
    if (dg.view.bricks) {
      bricks_around<<<grid_blocks(dg.view.bricks), 256, 0, stream>>>(dg.view, keys, occupancy, cand.data());
      VT_CUDA_CHECK_LAUNCH();
    }
    if (use_inside && di.view.bricks) {
      bricks_around<<<grid_blocks(di.view.bricks), 256, 0, stream>>>(di.view, keys, true,
                                                                     cand.data() + 8 * dg.view.bricks);
      VT_CUDA_CHECK_LAUNCH();
    }
    // Grown brick indices up to keys.bricks() (none).
    int brick_bits = 1;
    while (brick_bits < 61 && (uint64_t(1) << brick_bits) <= keys.bricks()) ++brick_bits;
    uint64_t nbricks = ncand ? sort_unique(cand, tmp, bricks, ncand, brick_bits, cub, count, stream) : 0;
    if (nbricks) {
      uint64_t last = 0;
      VT_CUDA_CHECK(cudaMemcpyAsync(&last, bricks.data() + nbricks - 1, sizeof(last), cudaMemcpyDeviceToHost, stream));
      VT_CUDA_CHECK(cudaStreamSynchronize(stream));
      if (last == keys.bricks()) --nbricks;
    }
    cand = DeviceBuffer<uint64_t>();
    tmp = DeviceBuffer<uint64_t>();

    timer.begin("cells");
    DeviceBuffer<uint32_t> tris(std::max<uint64_t>(nbricks, 1));
    DeviceBuffer<uint64_t> first(nbricks + 1);
    uint64_t ntri = 0;
    if (nbricks) {
      brick_triangles<<<grid_blocks(nbricks, 128), 128, 0, stream>>>(field, table.data(), keys, bricks.data(), nbricks,
                                                                     iso, tris.data());
      VT_CUDA_CHECK_LAUNCH();
      ntri = offsets_of(tris.data(), first.data(), nbricks, cub, stream);
    }
    if (ntri > uint64_t(UINT32_MAX) / 3) fail(ErrorKind::kUsage, "the mesh would have more than 1.4 billion triangles");
    // The bricks (and CUB's room from their sort, kept), each brick's triangles and first, its vertex
    // bits, their counts and firsts, the grown bricks' table (where used), the corners and the indices;
    // then the vertices (checked when counted).
    const uint64_t words = 64 * nbricks;
    const bool use_table = iso_table_pays(keys.bricks(), nbricks);
    const uint64_t mesh_bytes = grid_bytes + 2 * 8 * ncand + 12 * nbricks + words * (8 + 4 + 8) +
                                (use_table ? 4 * keys.bricks() : 0) + (24 + 12) * ntri;
    need(mesh_bytes);

    timer.begin("emit");
    DeviceBuffer<uint64_t> corners(std::max<uint64_t>(3 * ntri, 1)), bits(std::max<uint64_t>(words, 1)), verts;
    DeviceBuffer<uint32_t> slots;
    DeviceBuffer<unsigned> outside(1);
    VT_CUDA_CHECK(cudaMemsetAsync(outside.data(), 0, sizeof(unsigned), stream));
    VertexBits vb;
    vb.bricks = bricks.data();
    vb.nbricks = nbricks;
    vb.bits = bits.data();
    vb.outside = outside.data();
    if (ntri) {
      VT_CUDA_CHECK(cudaMemsetAsync(bits.data(), 0, words * sizeof(uint64_t), stream));
      if (use_table) {
        slots.grow(keys.bricks());
        VT_CUDA_CHECK(cudaMemsetAsync(slots.data(), 0xff, keys.bricks() * sizeof(uint32_t), stream));
        brick_slots<<<grid_blocks(nbricks), 256, 0, stream>>>(bricks.data(), nbricks, slots.data());
        VT_CUDA_CHECK_LAUNCH();
        vb.table = slots.data();
      }
      brick_corners<<<grid_blocks(nbricks, 128), 128, 0, stream>>>(field, table.data(), keys, bricks.data(), nbricks,
                                                                   iso, first.data(), corners.data(), vb);
      VT_CUDA_CHECK_LAUNCH();
    }
    timer.begin("vertices");
    uint64_t nv = 0;
    DeviceBuffer<uint64_t> word_first;
    if (ntri) {
      DeviceBuffer<uint32_t> counts(words);
      word_first.grow(words + 1);
      word_counts<<<grid_blocks(words), 256, 0, stream>>>(bits.data(), words, counts.data());
      VT_CUDA_CHECK_LAUNCH();
      nv = offsets_of(counts.data(), word_first.data(), words, cub, stream);
      vb.first = word_first.data();
    }
    if (nv > uint64_t(UINT32_MAX)) fail(ErrorKind::kUsage, "the mesh would have more than 4 billion vertices");
    need(mesh_bytes + 32 * nv);
    verts.grow(std::max<uint64_t>(nv, 1));
    Frame frame = {{s.origin.x, s.origin.y, s.origin.z}, {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z}};
    DeviceBuffer<Vec3f> pos(std::max<uint64_t>(nv, 1)), nrm(std::max<uint64_t>(nv, 1));
    DeviceBuffer<uint32_t> idx(std::max<uint64_t>(3 * ntri, 1));
    if (nv) {
      vertex_keys<<<grid_blocks(words), 256, 0, stream>>>(vb, words, verts.data());
      VT_CUDA_CHECK_LAUNCH();
      vertices<<<grid_blocks(nv), 256, 0, stream>>>(field, table.data(), keys, verts.data(), nv, iso, frame, pos.data(),
                                                    nrm.data());
      VT_CUDA_CHECK_LAUNCH();
      indices<<<grid_blocks(3 * ntri), 256, 0, stream>>>(corners.data(), 3 * ntri, vb, idx.data());
      VT_CUDA_CHECK_LAUNCH();
    }
    timer.begin("download");
    m.positions.resize(nv);
    m.normals.resize(nv);
    m.indices.resize(3 * ntri);
    staging.download(m.positions.data(), pos.data(), nv * sizeof(Vec3f), stream);
    staging.download(m.normals.data(), nrm.data(), nv * sizeof(Vec3f), stream);
    staging.download(m.indices.data(), idx.data(), 3 * ntri * sizeof(uint32_t), stream);
    unsigned outside_keys = 0;
    VT_CUDA_CHECK(cudaMemcpyAsync(&outside_keys, outside.data(), sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    VT_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (outside_keys) throw std::logic_error("marching cubes: a key outside the candidate bricks");
    timer.end();
    ms = timer.resolve();
    downloaded = Clock::now();
  }  // (the device buffers released)
  ms.emplace_back("release", ms_since(downloaded));
  const Clock::time_point ids = Clock::now();
  single_source_ids(m);
  ms.emplace_back("ids", ms_since(ids));
  if (stage_ms) *stage_ms = ms;
  return m;
}

}  // namespace voxtile
