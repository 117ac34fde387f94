// Deterministic generators of large benchmark meshes (no files needed): subdivision of a scanned
// mesh, tangled tubes of long thin triangles, a room of huge walls beside tiny clutter, a CAD-like
// assembly of cylinders and plates.
#pragma once

#include <cstdint>

#include "core/mesh.h"

namespace voxtile {

// UV sphere of radius r centred at c with `rings` x `segments` quads (poles as fans); closed.
Mesh make_uv_sphere(float cx, float cy, float cz, float r, int rings, int segments);
// Axis-aligned box [lo, hi] as 12 triangles; closed.
Mesh make_box_mesh(float x0, float y0, float z0, float x1, float y1, float z1);

// Splits every triangle into 4 at its edge midpoints, `levels` times (x4^levels triangles). The
// surface is unchanged; the triangles get small.
// by_quarter: each level lists all first children, then all second children, ... (as some exporters
// of subdivided meshes do) instead of each parent's four children together.
Mesh subdivide(const Mesh& mesh, int levels, bool by_quarter = false);
// `tubes` tubes of `sides` sides and `radius`, 2 * tubes * rings * sides long, thin triangles, along
// smooth random curves (per axis a sum of two sinusoids). length 0: closed tubes of `rings` rings
// around whole curves in [-1,1]^3 (about 10 long each); length > 0: open tubes (no caps) of `rings`
// segments, `length` long, along a piece of such a curve shrunk into the unit ball, from a random
// start, rings evenly spaced along it.
Mesh make_tubes(uint32_t tubes, uint32_t rings, uint32_t sides, uint64_t seed, double radius = 0.002,
                double length = 0);
// A 10 x 4 x 8 room (walls, floor, ceiling, a few large slabs: a few dozen triangles spanning
// the grid) holding `objects` small spheres of about 480 triangles each.
Mesh make_room(uint32_t objects, uint64_t seed);
// A CAD-like assembly, as CAD exporters triangulate it: `parts` parts centred in [-0.8, 0.8]^3,
// three of four cylinders (up to 1.6 long, radius up to 0.25) of `sides` sides along random axes (each side segment one
// long quad from end to end, the caps fans from one rim vertex: slivers of every width), every fourth a thin plate (12
// triangles).
Mesh make_cad(uint32_t parts, uint32_t sides, uint64_t seed);

// Lists m's triangles in a random order (std::shuffle with std::mt19937_64(seed)), as some exporters
// do: the order that a voxelizer's speed must not depend on.
void shuffle_triangles(Mesh& m, uint64_t seed);

}  // namespace voxtile
