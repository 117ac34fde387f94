// Deterministic generators of large benchmark meshes (no files needed): subdivision of a scanned
// mesh, tangled tubes of long thin triangles, and a room of huge walls beside tiny clutter.
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
// `tubes` closed tubes of `sides` sides and `rings` rings each, along smooth random curves in
// [-1,1]^3, of `radius`: 2 * tubes * rings * sides long, thin triangles.
Mesh make_tubes(uint32_t tubes, uint32_t rings, uint32_t sides, uint64_t seed, double radius = 0.002);
// A 10 x 4 x 8 room (walls, floor, ceiling, a few large slabs: a few dozen triangles spanning
// the grid) holding `objects` small spheres of about 480 triangles each.
Mesh make_room(uint32_t objects, uint64_t seed);

}  // namespace voxtile
