// Marching cubes on the GPU: the same mesh as grid_to_mesh (core/isosurface.h), bit for bit. The
// candidate cells (8 around every active voxel, or the active voxels of a level set, and around the
// inside's boundary voxels) are written in parallel at ranks from per-brick popcounts, radix-sorted
// and made unique; then per cell the sign pattern and triangle count, a scan for the offsets, the
// triangles' vertex keys; the keys sorted and made unique are the vertices (computed by the shared
// host/device functions of core/isosurface_cell.h), and the triangles' indices are found by binary
// search. Every step keeps the CPU's order, so the arrays are the CPU's.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>

#include "core/isosurface.h"
#include "kernels/api.h"
#include "kernels/common.cuh"

namespace voxtile {
namespace {

struct DeviceGrid {
  DeviceBuffer<uint64_t> keys, masks;
  DeviceBuffer<float> values;
  DeviceBuffer<uint64_t> first;  // active voxels before each brick (bricks + 1)
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
  std::vector<uint64_t> first;
  if (g.value_begin.size() != nb + 1) {  // (occupancy grids hold no index)
    first.assign(nb + 1, 0);
    for (size_t b = 0; b < nb; ++b) first[b + 1] = first[b] + uint64_t(g.masks[b].count());
  }
  const uint64_t* begin = first.empty() ? g.value_begin.data() : first.data();
  d.voxels = begin[nb];
  d.first.grow(nb + 1);
  staging.upload(d.first.data(), begin, (nb + 1) * sizeof(uint64_t), stream);
  if (values) {
    d.values.grow(std::max<size_t>(d.voxels, 1));
    staging.upload(d.values.data(), g.fvalues.data(), d.voxels * sizeof(float), stream);
  }
  d.view.keys = d.keys.data();
  d.view.masks = d.masks.data();
  d.view.values = values ? d.values.data() : nullptr;
  d.view.value_begin = values ? d.first.data() : nullptr;
}

__device__ void brick_voxel(const IsoGridView& g, uint64_t b, int off, int64_t& i, int64_t& j, int64_t& k) {
  const uint64_t m = (uint64_t(1) << kBrickKeyBits) - 1, key = g.keys[b];
  i = int64_t(key >> (2 * kBrickKeyBits)) * 8 + (off >> 6);
  j = int64_t((key >> kBrickKeyBits) & m) * 8 + (off >> 3 & 7);
  k = int64_t(key & m) * 8 + (off & 7);
}

// One block of 512 threads per brick of `g`: the cells around (or at) each voxel set in `masks` (8
// words per brick: the grid's own, or a subset), written at the voxel's rank from `first`.
__global__ void cells_of_mask(IsoGridView g, const uint64_t* masks, const uint64_t* first, IsoKeys keys, bool around,
                              uint64_t* out) {
  const uint64_t b = blockIdx.x;
  const int off = int(threadIdx.x);
  const uint64_t* w = masks + 8 * b;
  if (!(w[off >> 6] >> (off & 63) & 1)) return;
  int64_t i, j, k;
  brick_voxel(g, b, off, i, j, k);
  const uint64_t at = first[b] + mask_rank(w, off);
  if (around)
    keys.cells_around(i, j, k, out + 8 * at);
  else
    out[at] = keys.key(i, j, k);
}

// The inside's boundary voxels: per brick, a mask of them and their number (cells_of_mask then
// writes the cells around each).
__global__ void inside_boundary(IsoGridView in, uint64_t* bmask, uint32_t* count) {
  const uint64_t b = blockIdx.x;
  const int off = int(threadIdx.x);
  const uint64_t* w = in.masks + 8 * b;
  bool flag = false;
  if (w[off >> 6] >> (off & 63) & 1) {
    int64_t i, j, k;
    brick_voxel(in, b, off, i, j, k);
    flag = on_boundary(in, i, j, k);
  }
  const unsigned bits = __ballot_sync(kFull, flag);
  __shared__ unsigned words[16];
  if ((threadIdx.x & 31) == 0) words[threadIdx.x >> 5] = bits;
  __syncthreads();
  if (threadIdx.x < 8) bmask[8 * b + threadIdx.x] = uint64_t(words[2 * threadIdx.x]) | uint64_t(words[2 * threadIdx.x + 1]) << 32;
  if (threadIdx.x == 0) {
    uint32_t n = 0;
    for (int q = 0; q < 16; ++q) n += uint32_t(__popc(words[q]));
    count[b] = n;
  }
}

__global__ void classify(IsoField f, const McTable* t, IsoKeys keys, const uint64_t* cells, uint64_t n, float iso,
                         uint8_t* pattern, uint32_t* count) {
  for (uint64_t c = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; c < n; c += uint64_t(gridDim.x) * blockDim.x) {
    int64_t i, j, k;
    keys.ijk(cells[c], i, j, k);
    const int p = f.pattern(i, j, k, iso);
    pattern[c] = uint8_t(p);
    count[c] = t->count[p];
  }
}

__global__ void emit(const McTable* t, IsoKeys keys, const uint64_t* cells, const uint8_t* pattern, const uint64_t* first,
                     uint64_t n, uint64_t* corners) {
  for (uint64_t c = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; c < n; c += uint64_t(gridDim.x) * blockDim.x) {
    const int p = pattern[c];
    if (!t->count[p]) continue;
    int64_t i, j, k;
    keys.ijk(cells[c], i, j, k);
    iso_cell_corners(*t, keys, p, i, j, k, corners + 3 * first[c]);
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

__global__ void indices(const uint64_t* corners, uint64_t n, const uint64_t* verts, uint64_t nv, uint32_t* out) {
  for (uint64_t c = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; c < n; c += uint64_t(gridDim.x) * blockDim.x) {
    out[c] = uint32_t(lower_bound_index<uint64_t>(verts, nv, corners[c]));
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

unsigned grid_blocks(uint64_t n) { return unsigned(std::max<uint64_t>(1, std::min<uint64_t>((n + 255) / 256, 65536))); }

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
                      std::vector<std::pair<std::string, double>>* stage_ms) {
  // (bricks walked: full bricks held as runs written out first)
  SparseGrid grid_storage, inside_storage;
  const SparseGrid& grid = expanded_runs(grid_in, grid_storage);
  const SparseGrid* inside = inside_in ? &expanded_runs(*inside_in, inside_storage) : nullptr;
  if (grid.value_type == ValueType::kVec3f || (!options.smooth && grid.value_type != ValueType::kFloat32))
    return grid_to_mesh(grid, options, inside);  // errors and cubes: the CPU's
  if (grid.value_type == ValueType::kFloat32 && !std::isfinite(options.iso)) fail(ErrorKind::kUsage, "--iso must be finite");
  const DeviceStream owned(device);
  const cudaStream_t stream = owned.get();
  const bool occupancy = grid.value_type != ValueType::kFloat32;
  const float iso = occupancy ? 0.0f : options.iso;
  const bool use_inside = inside && !occupancy;
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

  timer.begin("cells");
  const bool around = occupancy || use_inside;
  uint64_t ncand = dg.voxels * (around ? 8 : 1);
  DeviceBuffer<uint32_t> bcount;
  DeviceBuffer<uint64_t> bmask, bfirst;
  uint64_t nboundary = 0;
  if (use_inside && di.view.bricks > 0) {
    const uint64_t nb = di.view.bricks;
    bmask.grow(8 * nb);
    bcount.grow(nb);
    bfirst.grow(nb + 1);
    inside_boundary<<<unsigned(nb), 512, 0, stream>>>(di.view, bmask.data(), bcount.data());
    VT_CUDA_CHECK_LAUNCH();
    nboundary = offsets_of(bcount.data(), bfirst.data(), nb, cub, stream);
  }
  const uint64_t total = ncand + 8 * nboundary;
  DeviceBuffer<uint64_t> cand(std::max<uint64_t>(total, 1)), tmp, cells;
  if (dg.view.bricks)
    cells_of_mask<<<unsigned(dg.view.bricks), 512, 0, stream>>>(dg.view, dg.view.masks, dg.first.data(), keys, around,
                                                                cand.data());
  VT_CUDA_CHECK_LAUNCH();
  if (nboundary)
    cells_of_mask<<<unsigned(di.view.bricks), 512, 0, stream>>>(di.view, bmask.data(), bfirst.data(), keys, true,
                                                                cand.data() + ncand);
  VT_CUDA_CHECK_LAUNCH();
  // Cell keys are below the grown grid's bricks x 512, vertex keys 8 times that.
  const uint64_t key_end = keys.bricks() * 512;
  int key_bits = 1;
  while (key_bits < 61 && (uint64_t(1) << key_bits) < key_end) ++key_bits;
  const uint64_t ncells = total ? sort_unique(cand, tmp, cells, total, key_bits, cub, count, stream) : 0;

  timer.begin("classify");
  DeviceBuffer<uint8_t> pattern(std::max<uint64_t>(ncells, 1));
  DeviceBuffer<uint32_t> tris(std::max<uint64_t>(ncells, 1));
  DeviceBuffer<uint64_t> first(ncells + 1);
  uint64_t ntri = 0;
  if (ncells) {
    classify<<<grid_blocks(ncells), 256, 0, stream>>>(field, table.data(), keys, cells.data(), ncells, iso,
                                                      pattern.data(), tris.data());
    VT_CUDA_CHECK_LAUNCH();
    ntri = offsets_of(tris.data(), first.data(), ncells, cub, stream);
  }
  if (ntri > uint64_t(UINT32_MAX) / 3) fail(ErrorKind::kUsage, "the mesh would have more than 1.4 billion triangles");

  timer.begin("emit");
  DeviceBuffer<uint64_t> corners(std::max<uint64_t>(3 * ntri, 1)), verts;
  if (ntri) {
    emit<<<grid_blocks(ncells), 256, 0, stream>>>(table.data(), keys, cells.data(), pattern.data(), first.data(), ncells,
                                                  corners.data());
    VT_CUDA_CHECK_LAUNCH();
  }
  timer.begin("vertices");
  const uint64_t nv = ntri ? sort_unique(corners, tmp, verts, 3 * ntri, key_bits + 3, cub, count, stream) : 0;
  Frame frame = {{s.origin.x, s.origin.y, s.origin.z}, {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z}};
  DeviceBuffer<Vec3f> pos(std::max<uint64_t>(nv, 1)), nrm(std::max<uint64_t>(nv, 1));
  DeviceBuffer<uint32_t> idx(std::max<uint64_t>(3 * ntri, 1));
  if (nv) {
    vertices<<<grid_blocks(nv), 256, 0, stream>>>(field, table.data(), keys, verts.data(), nv, iso, frame, pos.data(),
                                                  nrm.data());
    VT_CUDA_CHECK_LAUNCH();
    indices<<<grid_blocks(3 * ntri), 256, 0, stream>>>(corners.data(), 3 * ntri, verts.data(), nv, idx.data());
    VT_CUDA_CHECK_LAUNCH();
  }
  timer.begin("download");
  Mesh m;
  m.num_source_meshes = 1;
  m.num_materials = 1;
  m.positions.resize(nv);
  m.normals.resize(nv);
  m.indices.resize(3 * ntri);
  staging.download(m.positions.data(), pos.data(), nv * sizeof(Vec3f), stream);
  staging.download(m.normals.data(), nrm.data(), nv * sizeof(Vec3f), stream);
  staging.download(m.indices.data(), idx.data(), 3 * ntri * sizeof(uint32_t), stream);
  timer.end();
  const auto ms = timer.resolve();
  if (stage_ms) *stage_ms = ms;
  m.mesh_ids.assign(ntri, 0);
  m.material_ids.assign(ntri, 0);
  return m;
}

}  // namespace voxtile
