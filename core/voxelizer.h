// One interface for the CPU reference and the GPU pipeline. The rules both backends must agree on
// (target planning: which targets are rastered and which grids are taken from another's masks, the
// triangle-index limits, grid names, the checks of grids and bucket attributes, summary counters)
// are written once here, in the non-virtual voxelize() and bucket(); a backend implements only the
// raster of a list of targets and the bucketing of its mesh.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/bucket.h"
#include "core/voxelize.h"

namespace voxtile {

// How a list of requested targets is produced.
struct TargetPlan {
  std::vector<TargetSpec> rastered;  // targets with a raster pass of their own, in request order
  bool solid = false, sdf = false;   // field targets requested (solid: rastered holds a surface target)
  std::vector<size_t> source;        // per requested target: its grid's index in `rastered`
  std::vector<bool> masks_only;      // per requested target: a binary target taken from a value target's masks
  std::vector<std::string> names;    // per requested target: the grid's name
};
// A binary target beside a value target is that target's masks (no raster pass of its own); grids
// are named by target_spec_name(), except that a lone binary target is named "voxels". A solid
// target takes the surface from the first rastered target (a binary raster of its own when there
// is none); field targets have no source (source = SIZE_MAX). Throws
// Error(kUsage) for an empty list, a blend the target does not allow, or an id target with 2^31 or
// more triangles.
TargetPlan plan_targets(const std::vector<TargetSpec>& targets, uint64_t num_triangles);

class Voxelizer {
 public:
  virtual ~Voxelizer() = default;
  Voxelizer(const Voxelizer&) = delete;
  Voxelizer& operator=(const Voxelizer&) = delete;

  // The mesh of the following calls. The GPU uploads it; the CPU reads it in place, and bucketing
  // attributes are read from it on both: it must stay alive and unchanged until the next set_mesh.
  void set_mesh(const Mesh& mesh);
  // One grid per target, in the order given (options.target and options.blend are ignored); the
  // surface targets' grids have the same active voxels; solid is the surface plus the voxels whose
  // centre is inside (options.inside), sdf the narrow band (options.band) signed by the same inside
  // test. Same bytes on every backend.
  std::vector<SparseGrid> voxelize(const GridSpec& spec, const VoxelizeOptions& options,
                                   const std::vector<TargetSpec>& targets, VoxelizeStats* stats = nullptr);
  // options.spec() alone.
  SparseGrid voxelize(const GridSpec& spec, const VoxelizeOptions& options, VoxelizeStats* stats = nullptr);
  // A-buffer bucketing of the mesh: every fragment of every voxel (core/bucket.h).
  Buckets bucket(const GridSpec& spec, const BucketOptions& options, VoxelizeStats* stats = nullptr);

  virtual const std::string& device_name() const = 0;  // "cpu" or the GPU's name
  virtual bool on_gpu() const = 0;
  virtual int gpu_index() const { return -1; }  // the CUDA device it runs on, or -1

 protected:
  Voxelizer() = default;
  const Mesh& mesh() const;
  // Called by set_mesh.
  virtual void load_mesh(const Mesh& mesh) = 0;
  // Rasters every target of `targets` (never binary beside a value target) into one grid each, in
  // order, with their values; records stage times and the tile counters in `stats`.
  virtual std::vector<SparseGrid> raster(const GridSpec& spec, const VoxelizeOptions& options,
                                         const std::vector<TargetSpec>& targets, VoxelizeStats& stats) = 0;
  // The buckets of the mesh (options already checked); stage times and counters in `stats`.
  virtual Buckets bucket_mesh(const GridSpec& spec, const BucketOptions& options, VoxelizeStats& stats) = 0;
  // Occupancy of the voxel centres inside the mesh (core/inside.h), the same grid as inside_cpu (with
  // `only`: right in only's bricks, inside_grid_cpu).
  virtual SparseGrid inside_centres(const GridSpec& spec, InsideMethod method, VoxelizeStats& stats,
                                    const SparseGrid* only) = 0;
  // Unsigned distance of the voxels within `band` of the surface, as band_distance_cpu.
  virtual SparseGrid band_distance(const GridSpec& spec, int band, VoxelizeStats& stats) = 0;

 private:
  const Mesh* m_mesh = nullptr;
};

// The CPU reference (core/reference/): the sort-middle design of the GPU pipeline on TBB threads.
// Deterministic for any thread count.
class CpuVoxelizer final : public Voxelizer {
 public:
  CpuVoxelizer() = default;
  const std::string& device_name() const override;
  bool on_gpu() const override { return false; }

 protected:
  void load_mesh(const Mesh&) override {}
  std::vector<SparseGrid> raster(const GridSpec& spec, const VoxelizeOptions& options,
                                 const std::vector<TargetSpec>& targets, VoxelizeStats& stats) override;
  Buckets bucket_mesh(const GridSpec& spec, const BucketOptions& options, VoxelizeStats& stats) override;
  SparseGrid inside_centres(const GridSpec& spec, InsideMethod method, VoxelizeStats& stats,
                            const SparseGrid* only) override;
  SparseGrid band_distance(const GridSpec& spec, int band, VoxelizeStats& stats) override;
};

// Step 1-3 of the CPU reference, exposed for the GPU's per-stage tests: grid-space vertices, the
// (tile, triangle) pairs of every triangle's tile footprint sorted by tile then triangle, and where
// each tile's pairs begin.
struct TileBinning {
  struct Pair {
    uint64_t tile;  // linear tile index (x-major over kTileDim^3 tiles)
    uint32_t tri;
    bool operator<(const Pair& o) const { return tile != o.tile ? tile < o.tile : tri < o.tri; }
    bool operator==(const Pair& o) const { return tile == o.tile && tri == o.tri; }
  };
  std::vector<Vec3f> grid_vertices;
  std::vector<Pair> pairs;
  std::vector<size_t> tile_begin;  // num_tiles + 1
  size_t num_tiles = 0;
  Int3 tiles{};
};
TileBinning bin_triangles(const Mesh& mesh, const GridSpec& spec, VoxelMode mode, double* ms_transform = nullptr,
                          double* ms_bin = nullptr);

}  // namespace voxtile
