// Workspace of the GPU inside test and narrow band (kernels/solid/solid.cu), kept across calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/band_search.h"
#include "core/inside_grid.h"
#include "core/inside_tree.h"
#include "core/voxelize.h"
#include "kernels/common.cuh"
#include "kernels/mesh.cuh"

namespace voxtile {

struct GpuContext;

struct SolidState {
  DeviceBuffer<int64_t> d_u, d_v;
  DeviceBuffer<float> d_w;
  DeviceBuffer<uint64_t> d_counts, d_offsets, d_run_offsets, d_bricks, d_num;
  DeviceBuffer<unsigned long long> d_kept_lin;
  DeviceBuffer<uint32_t> d_kept_masks;
  DeviceBuffer<float> d_kept_values;
  DeviceBuffer<uint64_t> d_value_begin;
  DeviceBuffer<unsigned long long> d_keys[2], d_counter;
  DeviceBuffer<int32_t> d_signs[2];
  DeviceBuffer<uint32_t> d_tris[2], d_run_counts, d_bits, d_masks, d_list;
  DeviceBuffer<uint32_t> d_vkeys[2], d_vidx[2], d_head, d_weld, d_rep;
  DeviceBuffer<uint8_t> d_tile_flags, d_col_flags;
  DeviceBuffer<InsideEdge> d_edges;
  DeviceBuffer<uint32_t> d_rest_list;  // the winding test's columns handed on (k_undecided's WindingRest)
  DeviceBuffer<int32_t> d_rest_start;
  DeviceBuffer<unsigned long long> d_rest_count;
  DeviceBuffer<InsideEdgeX> d_edges_x;  // the same edges as doubles (k_undecided's exact sums without trees)
  DeviceBuffer<InsideNode> d_nodes;  // the winding test's piece trees (core/inside_tree.h)
  DeviceBuffer<uint32_t> d_chunks;
  DeviceBuffer<uint32_t> d_need;  // inside()'s `only`: a bit per brick of the grid
  DeviceBuffer<InsideEdge> d_piece_edges, d_loose;
  InsideTreeView trees{};  // their device view for the job in progress
  int tree_patience = 0;   // InsideTree::patience (0: no trees)
  DeviceBuffer<float> d_values;
  DeviceBuffer<BandBound> d_bounds;
  DeviceBuffer<BandNode> d_band_nodes;  // band_search's tree (core/band_search.h)
  DeviceBuffer<Vec3f> d_band_tris, d_band_loose;
  DeviceBuffer<BandNodeBox> d_band_boxes;  // per reference: its piece's box and margins
  float tree_piece = kBandPieceVoxels;     // the piece length the last tree was cut at
  DeviceBuffer<float> d_tree_k2;           // its build: the triangles' margins
  DeviceBuffer<BandNodeBox> d_ref_boxes;   // and references, by triangle
  DeviceBuffer<uint32_t> d_ref_tri;
  DeviceBuffer<uint32_t> d_tree_shape;  // the shape (band_shape_node)
  DeviceBuffer<uint8_t> d_tree_depth;
  DeviceBuffer<double> d_box_voxels;       // (band_box_voxels' sum)
  DeviceBuffer<BandNodeBox> d_tree_boxes;  // every node's box
  DeviceBuffer<unsigned long long> d_band_lin;
  DeviceBuffer<uint64_t> d_row_counts, d_row_offsets;  // the inside test's rows (prepare_axis)
  DeviceBuffer<uint32_t> d_row_tri;
  DeviceBuffer<int32_t> d_row_lo, d_row_j;
  DeviceBuffer<uint64_t> d_run_starts, d_run_ends;

  // Occupancy of the voxel centres inside the mesh: the same grid as inside_cpu.
  SparseGrid inside(GpuContext& ctx, DeviceMesh& mesh, const Mesh& host_mesh, const GridSpec& spec, InsideMethod method,
                    VoxelizeStats& stats, const SparseGrid* only = nullptr);
  // Unsigned band distances: the same grid as band_distance_cpu (by the pairs, or for wide bands by
  // band_search).
  SparseGrid band(GpuContext& ctx, DeviceMesh& mesh, const Mesh& host_mesh, const GridSpec& spec, int band,
                  VoxelizeStats& stats);
  // The band by nearest-triangle search (core/band_search.h; box: mesh_grid_box; the mesh transformed
  // for spec), its stages recorded on band()'s timer.
  SparseGrid band_search(GpuContext& ctx, const DeviceMesh& mesh, const GridBox& box, const GridSpec& spec, int band,
                         VoxelizeStats& stats, class StageTimer& timer, std::chrono::steady_clock::time_point wall0);
  // core/band_search.h band_box_voxels on the device (the mesh transformed for spec).
  double band_box_voxels(GpuContext& ctx, const DeviceMesh& mesh, const GridSpec& spec, const BandSetup& bs,
                         double per_brick);
  // The search's tree (build_band_tree's, built on the GPU from the transformed mesh), its arrays in
  // this state's buffers; fails (kResource) where it and other_bytes need more than the memory budget.
  BandTreeView band_tree(GpuContext& ctx, const DeviceMesh& mesh, const GridBox& box, const BandSetup& bs,
                         uint64_t other_bytes = 0);

 private:
  struct AxisPrep;
  // The crossings of the columns along `axis`, sorted, with their prefix sums, and the columns the
  // winding test evaluates span by span.
  AxisPrep prepare_axis(GpuContext& ctx, const DeviceMesh& mesh, const GridSpec& spec, int axis, bool winding,
                        uint64_t ne, const InsideRange& range, class StageTimer& timer);
  // Sets the bits of the inside voxels of x-slab [bx0, bx1) (bricks) in `bits` (the slab's bricks).
  void paint_axis(GpuContext& ctx, const AxisPrep& p, const InsideRange& range, int32_t bx0, int32_t bx1,
                  uint32_t* bits, class StageTimer& timer, const uint32_t* need = nullptr);
  // The slab's partial bricks into out's keys and masks, its full bricks as runs into out.runs.
  void keep_solid_bricks(GpuContext& ctx, uint64_t n, const uint32_t* mask_words, int32_t bx0, const Int3& nb,
                         class StageTimer& timer, SparseGrid& out);
  // The non-empty bricks among n candidates (16 mask words each; 512 values each when `values` is
  // given; candidate i is linear brick lin[i], or i without `lin`), in candidate order, into out's
  // keys, masks and values: selected and gathered on the device, then downloaded.
  void keep_bricks(GpuContext& ctx, uint64_t n, const uint32_t* mask_words, const unsigned long long* lin,
                   const float* values, const Int3& nb, const std::string& prefix, class StageTimer& timer,
                   SparseGrid& out);
  // The expansion of n items into sub-items: count(counts) writes each item's count, then
  // offsets = 0 followed by their inclusive sums; returns the total, refused (Error(kResource))
  // when bytes_per_item per sub-item exceed the memory budget. counts and offsets: d_counts and
  // d_offsets unless given (a second expansion that reads the first's offsets).
  template <class CountItems>
  uint64_t expand(GpuContext& ctx, uint64_t n, uint64_t bytes_per_item, const char* what, CountItems&& count,
                  DeviceBuffer<uint64_t>* counts = nullptr, DeviceBuffer<uint64_t>* offsets = nullptr);
  // The mesh's boundary edges across column axis `axis` into d_edges (prepare_inside's, in its
  // order); returns their number.
  uint64_t boundary(GpuContext& ctx, const DeviceMesh& mesh, int axis);
  // The piece trees of the ne edges in d_edges (built on the host: the boundary is small beside the
  // mesh) into the device buffers and `trees`.
  void upload_trees(GpuContext& ctx, uint64_t ne, const InsideScale& s);
};

}  // namespace voxtile
