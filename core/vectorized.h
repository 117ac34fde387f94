// The CPU's vectorised loops (core/vectorized.cpp), each the same bits as the shared scalar code it
// replaces: the band's distances (voxel_distance of many voxels of one brick to one triangle) and the
// winding number's boundary term (inside_boundary_parts at one point, inside_column_decided).
#pragma once

#include <cstdint>
#include <vector>

#include "core/inside.h"
#include "core/inside_tree.h"
#include "core/vec.h"

namespace voxtile {

// Builds that compile versions of some loops for x86-64-v4, chosen by the CPU (GCC on x86-64).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(VT_NO_TARGET_CLONES)
#define VT_X86_64_V4 1
#endif

// Whether this CPU has x86-64-v4 (AVX-512 F, VL, DQ, BW, CD): the level the vectorised loops below
// are compiled for where they choose by the CPU (false on builds without those versions).
bool cpu_has_x86_64_v4();

// Voxels per step of band_min_voxels: lists of offsets are padded to a multiple of it.
constexpr int kBandMinBlock = 16;

// best[o] = min(best[o], voxel_distance(t, base + voxel o)) for the brick offsets o (x << 6 | y << 3 | z)
// in offsets[0, n), n a multiple of kBandMinBlock (an offset listed twice is harmless: the same
// minimum). t: a grid-space triangle; vs: the voxel size.
void band_min_voxels(const Vec3f t[3], const int32_t base[3], const uint16_t* offsets, int n, const Vec3f& vs,
                     float* best);

// d[l] = voxel_distance(t, (i[l], j[l], k[l])) for the kBandMinBlock lanes l, by band_min_voxels'
// operations (the same bits).
void band_distance_lanes(const Vec3f t[3], const int32_t* i, const int32_t* j, const int32_t* k, const Vec3f& vs,
                         float* d);

// voxel_distance by band_min_voxels' branch-free operations (for the tests: the same bits).
float voxel_distance_select(const Vec3f t[3], int32_t i, int32_t j, int32_t k, const Vec3f& vs);

// A mesh's boundary edges (InsideEdge) field by field, padded to whole rounds of kInsideLanes (the
// padding's multiplicity 0, never summed), for inside_boundary_parts_vectorized.
struct InsideEdgeLanes {
  std::vector<int64_t> au, av, bu, bv;
  std::vector<double> aw, bw, mult, abs_mult;
  size_t count = 0;  // the real edges
};
InsideEdgeLanes inside_edge_lanes(const InsideEdge* edges, uint64_t ne);
void inside_edge_lanes(InsideEdgeLanes& l, const InsideEdge* edges, uint64_t ne);  // into l (its storage reused)
// inside_boundary_parts (core/inside.h) at voxel k of column (pu, pv): the same sums in the same
// order, the lanes' terms evaluated eight at a time without branches. Only where
// cpu_has_x86_64_v4().
InsideParts inside_boundary_parts_vectorized(const InsideEdgeLanes& e, int64_t pu, int64_t pv, int64_t k,
                                             const InsideScale& s);
// The same lanes' sums of inside_edge_solid_angle_approx's terms (core/inside.h: each within 2.7e-7 of
// the exact term), in the same order: the bits of inside_lane_parts_approx's lanes combined as
// inside_boundary_parts combines them. Only where cpu_has_x86_64_v4().
InsideParts inside_boundary_parts_approx_vectorized(const InsideEdgeLanes& e, int64_t pu, int64_t pv, int64_t k,
                                                    const InsideScale& s);
// A column's far balls of the piece trees (core/inside_tree.h) field by field, padded to whole rounds
// of kInsideLanes (the padding: no area, far away), for inside_far_vectorized.
struct InsideFarLanes {
  std::vector<double> cu, cv, cw, mu, mv, mw, r, ar2, m2;
};
void inside_far_lanes(InsideFarLanes& l, const InsideNode* nodes, const uint32_t* index, size_t n);
// inside_listed_far over the listed balls: each ball's terms by inside_far_add's operations, summed in
// another order (bounds: any order of the sums is within their margin, inside_bounds_decide). Only
// where cpu_has_x86_64_v4().
InsideFar inside_far_vectorized(const InsideFarLanes& l, const InsideColumn& col, double wm, double h);

// inside_column_decided (core/inside.h) of column (pu, pv): the same answer (its terms summed in the
// same order), the terms evaluated eight at a time. Only where cpu_has_x86_64_v4().
bool inside_column_decided_vectorized(const InsideEdgeLanes& e, int64_t pu, int64_t pv, const InsideScale& s);

}  // namespace voxtile
