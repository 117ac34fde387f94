// Plain C++ interface to the GPU code (no CUDA headers): device discovery and the GPU pipelines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <memory>

#include "core/isosurface.h"
#include "core/points.h"
#include "core/render.h"
#include "core/voxelizer.h"

namespace voxtile {

struct GpuInfo {
  bool available = false;
  int device = -1;
  std::string name;    // e.g. "NVIDIA H200"
  std::string reason;  // why not available
  size_t total_memory = 0;
};

// How the fine raster lays out 32-bit value targets: chosen per batch from the triangles per
// virtual tile, or forced (tests): a 32^3 tile per block, or a 16^3 octant per two warps.
enum class ValueTiles : int { kAuto = 0, kTile = 1, kOctant = 2 };

// The scan of the compaction primitive (kernels/compact.cuh): tile counts fused into the flag
// pass and scanned by one block of our own (kTiles) or by CUB (kTilesCub, fastest measured), or
// CUB over the popcount of every keep word, as the CSG seed does (kWords).
enum class ScanMethod : int { kTiles = 0, kTilesCub = 1, kWords = 2 };
inline const char* scan_method_name(ScanMethod m) {
  return m == ScanMethod::kTiles ? "tiles" : m == ScanMethod::kTilesCub ? "tiles-cub" : "words-cub";
}

// The order in which the coarse raster visits triangles: as the mesh lists them, or along a Morton
// curve of their centroids (a radix sort of 24-bit keys, then the index triples gathered in that
// order; the same grids, since every blend is order-independent). auto is the mesh's order.
// Measured on an H200 (scripts/bench-results/issue14-coarse-h200-2026-11-24.md): since the coarse
// raster keeps its footprint in registers, Morton order pays on none of issue 14's cases (GPU total
// ms, mesh / Morton order): 6.4M dragon shuffled 1.98 / 2.16 (the sort alone 0.56), by quarters
// 1.93 / 2.06, in file order 1.53 / 1.90; 1.6M dragon shuffled 0.93 / 0.93; 3M tubes 6.95 / 7.34.
// (Before, with 232 bytes of local memory per coarse thread, the shuffled 6.4M dragon took 3.64 ms
// in mesh order and 2.82 in Morton order, and auto sampled the order to choose.)
enum class TriangleOrder : int { kAuto = 0, kMesh = 1, kMorton = 2 };

// Measured on an H200 (scripts/bench-results/issue14-h200-2026-11-24.md), fine raster ms, rows only
// / spread columns: 100k dragon at 1024^3 (1.52 pairs per triangle) 0.352 / 0.311, bunny at 2048^3
// (2.7) 0.816 / 0.738, 3M tubes 10.0 / 9.67; but subdivided dragons (about 1.05) 1.21 / 1.90 (6.4M)
// and the room 0.45 / 0.76: the kernel with the column code holds more registers and spills.
// Within the kernel with the column code, rounds of rows whose longest row had fewer than 3 columns
// were once rastered a lane per row: measured on an H200 with that path compiled out, the fine
// raster is 0.5-4.7% faster on every mesh that kernel serves (CAD slivers 4.22 -> 4.03 ms, Sponza
// 0.099 -> 0.094, closed tubes 12.33 -> 12.07; scripts/bench-results/fine-columns-h200-2026-11-27.md).
// Measured on an H200 (scripts/bench-results/row-ranges-h200-2026-11-27.md), fine raster ms, spread
// columns without / with row ranges (FineKernel kSpread / kRanges): CAD slivers (307k triangles, 14
// pairs per triangle) 5.89 / 4.22, 3.7M CAD slivers (14) 57.0 / 36.3; but 1M tubes (2.1) 1.69 /
// 1.87, the bunny at 2048^3 0.354 / 0.403, the 100k dragon 0.160 / 0.174: the rows' setup makes the
// kernel larger (computed and not used, it costs 5-24%), and these meshes have few empty rows.
// The fine raster's kernels (GpuOptions::fine_kernel), for every target; value targets in both tile
// layouts, where the same choice measured 10-34% faster than rows alone for count, distance and id on
// long thin triangles, CAD slivers, the dragon, the bunny, Sponza and a terrain (H200,
// scripts/bench-results/value-tiles-h200-2026-11-28.md), and normal:add 22-37% faster once its
// octants kept the small records (scripts/bench-results/octant-teams-h200-h100-2026-11-28.md):
//  kRows: a lane per row of a warp's 32 triangles, a kernel without the column code;
//  kSpread: the columns of each round of 32 rows spread over the lanes, each lane reading its
//    column's triangle from the batch's setups in shared memory; where a tile cuts a triangle's depth
//    range, its rows and spans only within the box of its piece in the tile's slab (also in kRanges;
//    core/overlap.h slab_box);
//  kRanges (conservative; kSpread in thin mode): kSpread with each triangle's rows in a tile only
//    those that can hold pixels of its dominant projection, along whichever of the projection's axes
//    has fewer (core/overlap.h conservative_row_range; the bounding box lists every row, and a long
//    thin triangle crossing a tile diagonally reaches few of them);
//  kAuto: kRanges from kFineRangesMinPairs (tile, triangle) pairs per triangle (long slivers); else
//    kRows below kFineSpreadMinPairs pairs per triangle, both counted without the triangles over 32
//    tile columns (a room's walls), and kSpread from there.
// The spread kernel's threshold re-measured on an H200 (2026-11-27, fine raster ms, rows / spread,
// scripts/bench-results/small-jobs-h200-h100-2026-11-27.md): the 100k dragon at 320^3 to 1024^3
// (1.15 to 1.52 pairs per triangle) 16-35% faster spread, its 400k and 1.6M subdivisions at 1.18 to
// 1.32 4-19% faster spread and at 1.11 to 1.15 rows 1-7%, the bunny subdivided twice at 1024^3
// (1.17) rows 5%, a 359k sphere at 512^3 (1.20) rows 3%, Sponza and the 1M tubes at 1.25 and up
// 6-46% spread; the room (a few walls and many tiny triangles, 1.07 to 1.34 counted with its walls)
// rows 16-38% at every size.
enum class FineKernel : int { kRows = 0, kSpread = 1, kRanges = 2, kAuto = 3 };
constexpr double kFineSpreadMinPairs = 1.2;
constexpr double kFineRangesMinPairs = 6.0;
// The kernel FineKernel::kAuto chooses for a batch of num_tris triangles and num_pairs pairs
// (`ranges`: whether kRanges may be chosen; not in thin mode): kRanges from kFineRangesMinPairs pairs
// per triangle; else kRows below kFineSpreadMinPairs pairs per triangle counted without the large
// triangles (num_large of them, with large_pairs pairs; zeros where not known), unless every triangle
// is large. (constexpr: the fine raster calls it on the device where the host has not read the pairs.)
constexpr FineKernel auto_fine_kernel(uint64_t num_pairs, uint64_t num_tris, uint64_t large_pairs, uint64_t num_large,
                                      bool ranges) {
  if (ranges && double(num_pairs) >= kFineRangesMinPairs * double(num_tris)) return FineKernel::kRanges;
  if (num_large < num_tris && large_pairs <= num_pairs) {
    num_pairs -= large_pairs;
    num_tris -= num_large;
  }
  return double(num_pairs) < kFineSpreadMinPairs * double(num_tris) ? FineKernel::kRows : FineKernel::kSpread;
}

struct GpuOptions {
  uint64_t memory_budget = 0;          // bytes the pipeline may use; 0 = 80% of the free memory
  uint32_t max_tile_triangles = 512;   // M: a tile with more triangles is split into virtual tiles
  uint64_t max_batch_pairs = 0;        // cap on (tile, triangle) pairs per batch; 0 = from the budget
  uint64_t initial_bricks = 0;         // first brick-buffer size per batch; 0 = estimate (tests force retries)
  uint64_t initial_pairs = 0;          // room for scattered pairs before the host knows their number; 0 = estimate (tests force retries)
  ValueTiles value_tiles = ValueTiles::kAuto;  // how 32-bit value targets are rastered
  TriangleOrder triangle_order = TriangleOrder::kAuto;  // the coarse raster's visiting order
  // Inside test: width in bricks of the x-slabs whose voxel bits the device holds at a time; 0 = the
  // whole grid when its bits fit the budget, else the widest slab that does (tests force slabs).
  uint32_t inside_slab_bricks = 0;
  // Winding test on boundaries with piece trees: the columns whose patience runs out handed on to the
  // kernel without trees: -1 where the columns listed make at least 8 rounds of what the SMs hold,
  // 0 never, 1 always (tests, A/B).
  int winding_hand_on = -1;
  int device = 0;                      // CUDA device index
  bool two_pass_fragment_sort = false; // bucketing: sort by triangle then voxel even when one 64-bit key would do (tests)
  bool merge_by_brick_key = false;     // brick merge: sort 64-bit brick keys even when 32-bit brick indices would do (tests, A/B)
  bool sort_pairs = false;             // coarse raster: sort the (tile, triangle) pairs even where binary targets would scatter them (tests, A/B)
  bool read_pairs_first = false;       // coarse raster: the host reads the number of pairs before the emit even where it need not (A/B)
  FineKernel fine_kernel = FineKernel::kAuto;  // the fine raster's kernel (tests, A/B)
  // Host threads sleep while they wait for the GPU (cudaDeviceScheduleBlockingSync, set for the
  // whole device) instead of spinning: for callers whose CPU cores have other work (batch).
  bool blocking_sync = false;
};

// The GPU voxelizer (kernels/voxelize/: coarse raster, radix sort by tile, fine raster in shared
// memory, brick merge; kernels/bucket/: A-buffer bucketing) behind the one Voxelizer interface:
// the same grids and buckets as CpuVoxelizer, bit for bit. Holds its device workspace across calls;
// not thread-safe, but usable from any one thread at a time (each call makes its device current).
// Throws Error(kResource) when the device is unusable.
std::unique_ptr<Voxelizer> make_gpu_voxelizer(const GpuOptions& options = {});

// The CSG point pipeline, the CSG solid and point binning on the GPU (kernels/points/csg.cu,
// kernels/points/points.cu). Workspaces grow and are reused across calls; one thread at a time.
class GpuPoints {
 public:
  explicit GpuPoints(int device = 0, ScanMethod scan = ScanMethod::kTilesCub, uint64_t memory_budget = 0);
  ~GpuPoints();
  GpuPoints(const GpuPoints&) = delete;
  GpuPoints& operator=(const GpuPoints&) = delete;

  // The script over `samples` (sample_csg) in steps of `batch` primitives (0 = all in one step):
  // the same samples, in the same order, as csg_keep_cpu.
  CsgSamples csg(const CsgScript& script, const CsgSamples& samples, uint32_t batch, CsgStats* stats = nullptr);
  // Occupancy of the solid at voxel centres: the same grid as csg_solid_cpu.
  SparseGrid solid(const CsgScript& script, const GridSpec& spec, CsgStats* stats = nullptr);
  // Points binned into the grid (sort by voxel key, reduce by key): the same bins as bin_points_cpu.
  VoxelBins bin(const PointCloud& points, const GridSpec& spec, std::vector<std::pair<std::string, double>>* stage_ms = nullptr);
  const std::string& device_name() const;

  struct Impl;  // device state (kernels/points/state.cuh), shared by the .cu files
  Impl& impl() { return *m; }

 private:
  Impl* m;
};

// Marching cubes on GPU `device` (kernels/isosurface/): the same mesh as grid_to_mesh
// (core/isosurface.h), bit for bit; voxel cubes and refused grids go to grid_to_mesh itself. A mesh
// whose arrays would take more than `memory_budget` bytes of GPU memory (0: 80% of the free memory)
// is refused (ErrorKind::kResource), before its arrays are made.
Mesh gpu_grid_to_mesh(const SparseGrid& grid, const IsoOptions& options, const SparseGrid* inside, int device,
                      std::vector<std::pair<std::string, double>>* stage_ms = nullptr, uint64_t memory_budget = 0);

// The picture of `scene` on GPU `device` (kernels/render/): the same image as render_cpu, bit for bit.
Image gpu_render(const RenderScene& scene, const RenderOptions& options, int device,
                 std::vector<std::pair<std::string, double>>* stage_ms = nullptr);

// Whether this build has CUDA kernels at all.
bool gpu_compiled();
// Looks for a usable CUDA device (never throws).
GpuInfo query_gpu(int device = 0);
// Number of CUDA devices (0 without CUDA or a driver).
int gpu_count();
// Makes GPU `device`'s CUDA context (the start-up its first CUDA call pays: 0.1 to 0.3 s), so that
// work started later finds it made; for a thread of its own while the input is read.
void start_gpu(int device);

}  // namespace voxtile
