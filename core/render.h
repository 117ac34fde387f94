// Pictures of grids: an orthographic ray marcher over the sparse bricks, shared by the CPU (TBB
// over rows) and the GPU (kernels/render/, one thread per pixel). Every pixel is one call of
// render_pixel, the same float operations on both sides, so the two images are the same bytes.
//
// The ray walks the voxels of the occupied bounding box with a three-level DDA: an empty 64^3
// cell (a bitmap over the grid) or an empty 8^3 brick (binary search of the brick keys) is
// crossed in one step, and only occupied bricks are walked voxel by voxel. The first active voxel
// is shaded: its colour, Lambert light on the face the ray entered through plus a headlight term,
// ambient occlusion from the 8 voxels around that face (the classic per-vertex count, bilinear
// over the face), and a dark line along the voxel's edges when voxels are large enough to see.
#pragma once

#include <math.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/hd.h"
#include "core/search.h"
#include "core/sparse_grid.h"
#include "core/vec.h"

namespace voxtile {

constexpr int kRenderCellLog2 = 6;  // the coarse empty-space cells: 64^3 voxels

// Everything render_pixel reads: the scene (pointers to host or device arrays) and the camera.
struct RenderView {
  const uint64_t* keys = nullptr;    // brick keys, ascending
  const uint64_t* masks = nullptr;   // 8 words per brick (BrickMask)
  const uint32_t* first = nullptr;   // active voxels before each brick (colour ranks)
  const uint32_t* colors = nullptr;  // RGB8 (0xBBGGRR) per active voxel in key/offset order; null: `color`
  const uint64_t* cells = nullptr;   // bit per 64^3 cell: (cx * cdims.y + cy) * cdims.z + cz
  uint64_t num_bricks = 0;
  Int3 cdims{0, 0, 0};
  Int3 lo{0, 0, 0}, hi{0, 0, 0};  // occupied voxels' bounding box [lo, hi)
  uint32_t color = 0xb4a08c;      // every voxel's colour when `colors` is null
  uint32_t background = 0;        // RGBA8 (0xAABBGGRR)
  // Orthographic camera in voxel coordinates (voxel (i,j,k) spans [i,i+1) x [j,j+1) x [k,k+1)):
  // the ray of pixel (px, py) starts at origin + (px + 0.5) * du + (py + 0.5) * dv, direction dir.
  Vec3f origin{0, 0, 0}, du{0, 0, 0}, dv{0, 0, 0}, dir{0, 0, 1};
  Vec3f light{0, 0, 1};  // towards the key light, world axes (unit)
  Vec3f eye{0, 0, 1};    // towards the camera, world axes (unit)
  Vec3f edge{0, 0, 0};   // per axis: edge line width in voxels (0: no edges)
  bool ao = true;
  int width = 0, height = 0;
};

namespace render_detail {

VT_HD inline float axis_of(const Vec3f& v, int a) { return a == 0 ? v.x : (a == 1 ? v.y : v.z); }
VT_HD inline int32_t axis_of(const Int3& v, int a) { return a == 0 ? v.x : (a == 1 ? v.y : v.z); }
VT_HD inline void set_axis(Int3& v, int a, int32_t x) {
  if (a == 0)
    v.x = x;
  else if (a == 1)
    v.y = x;
  else
    v.z = x;
}
VT_HD inline int32_t clampi(int32_t x, int32_t lo, int32_t hi) { return x < lo ? lo : (x > hi ? hi : x); }
VT_HD inline float clampf(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

// Finds brick keys with a one-entry cache (neighbouring lookups mostly hit the same brick).
struct BrickFinder {
  uint64_t key = ~uint64_t(0);
  int64_t index = -1;
  VT_HD int64_t find(const RenderView& v, int32_t bx, int32_t by, int32_t bz) {
    const uint64_t k = brick_key(bx, by, bz);
    if (k == key) return index;
    key = k;
    const uint64_t i = lower_bound_index(v.keys, v.num_bricks, k);
    index = i < v.num_bricks && v.keys[i] == k ? int64_t(i) : -1;
    return index;
  }
};

VT_HD inline bool cell_occupied(const RenderView& v, const Int3& p) {
  const int64_t c =
      (int64_t(p.x >> kRenderCellLog2) * v.cdims.y + (p.y >> kRenderCellLog2)) * v.cdims.z + (p.z >> kRenderCellLog2);
  return (v.cells[c >> 6] >> (c & 63)) & 1u;
}

VT_HD inline bool inside_box(const RenderView& v, const Int3& p) {
  return p.x >= v.lo.x && p.y >= v.lo.y && p.z >= v.lo.z && p.x < v.hi.x && p.y < v.hi.y && p.z < v.hi.z;
}

// Whether voxel p is active (false outside the occupied box).
VT_HD inline bool occupied(const RenderView& v, BrickFinder& f, const Int3& p) {
  if (!inside_box(v, p) || !cell_occupied(v, p)) return false;
  const int64_t b = f.find(v, p.x >> 3, p.y >> 3, p.z >> 3);
  if (b < 0) return false;
  const int off = brick_offset(p.x & 7, p.y & 7, p.z & 7);
  return (v.masks[8 * b + (off >> 6)] >> (off & 63)) & 1u;
}

VT_HD inline uint32_t channel(uint32_t rgb, int c) { return (rgb >> (8 * c)) & 255u; }

}  // namespace render_detail

// The RGBA8 colour (0xAABBGGRR) of pixel (px, py).
VT_HD inline uint32_t render_pixel(const RenderView& v, int px, int py) {
  using namespace render_detail;
  const float fx = float(px) + 0.5f, fy = float(py) + 0.5f;
  const Vec3f o{v.origin.x + fx * v.du.x + fy * v.dv.x, v.origin.y + fx * v.du.y + fy * v.dv.y,
                v.origin.z + fx * v.du.z + fy * v.dv.z};
  const Vec3f d = v.dir;
  // Clip the ray to the occupied box (slab test); remember the axis it enters through.
  float t0 = -3.0e38f, t1 = 3.0e38f;
  int entry = -1;
  float inv[3];
  int step[3];
  for (int a = 0; a < 3; ++a) {
    const float da = axis_of(d, a), oa = axis_of(o, a);
    const float lo = float(axis_of(v.lo, a)), hi = float(axis_of(v.hi, a));
    step[a] = da > 0.0f ? 1 : (da < 0.0f ? -1 : 0);
    if (step[a] == 0) {
      inv[a] = 0.0f;
      if (oa < lo || oa >= hi) return v.background;
      continue;
    }
    inv[a] = 1.0f / da;
    float ta = (lo - oa) * inv[a], tb = (hi - oa) * inv[a];
    if (ta > tb) {
      const float s = ta;
      ta = tb;
      tb = s;
    }
    if (ta > t0) {
      t0 = ta;
      entry = a;
    }
    if (tb < t1) t1 = tb;
  }
  if (entry < 0 || t0 >= t1) return v.background;
  float t = t0;
  Int3 p;
  for (int a = 0; a < 3; ++a) {
    const int32_t lo = axis_of(v.lo, a), hi = axis_of(v.hi, a) - 1;
    int32_t c = int32_t(floorf(axis_of(o, a) + t * axis_of(d, a)));
    if (a == entry) c = step[a] > 0 ? lo : hi;
    set_axis(p, a, clampi(c, lo, hi));
  }
  BrickFinder finder;
  int64_t brick = -1;
  int hit_off = 0;
  const int max_steps = 4 * (v.hi.x - v.lo.x + v.hi.y - v.lo.y + v.hi.z - v.lo.z) + 16;
  for (int it = 0; it < max_steps; ++it) {
    // The largest empty box around p: a 64^3 cell, a brick, or the voxel itself.
    int level;  // log2 of the box size
    if (!cell_occupied(v, p)) {
      level = kRenderCellLog2;
    } else {
      brick = finder.find(v, p.x >> 3, p.y >> 3, p.z >> 3);
      if (brick < 0) {
        level = 3;
      } else {
        hit_off = brick_offset(p.x & 7, p.y & 7, p.z & 7);
        if ((v.masks[8 * brick + (hit_off >> 6)] >> (hit_off & 63)) & 1u) break;  // hit
        level = 0;
      }
    }
    // Leave the box: the axis whose boundary comes first (ties to the lower axis).
    int exit_axis = -1;
    float texit = 3.0e38f;
    int32_t box_lo[3], box_hi[3];
    for (int a = 0; a < 3; ++a) {
      const int32_t c = axis_of(p, a);
      box_lo[a] = (c >> level) << level;
      box_hi[a] = box_lo[a] + (1 << level);
      if (step[a] == 0) continue;
      const float bound = float(step[a] > 0 ? box_hi[a] : box_lo[a]);
      const float ta = (bound - axis_of(o, a)) * inv[a];
      if (ta < texit) {
        texit = ta;
        exit_axis = a;
      }
    }
    if (exit_axis < 0) return v.background;
    if (texit > t) t = texit;
    Int3 q;
    for (int a = 0; a < 3; ++a) {
      int32_t c;
      if (a == exit_axis) {
        c = step[a] > 0 ? box_hi[a] : box_lo[a] - 1;
      } else {
        c = clampi(int32_t(floorf(axis_of(o, a) + t * axis_of(d, a))), box_lo[a], box_hi[a] - 1);
      }
      set_axis(q, a, c);
    }
    p = q;
    entry = exit_axis;
    if (!inside_box(v, p)) return v.background;
    if (it + 1 == max_steps) return v.background;
  }
  if (brick < 0) return v.background;
  // Shade the face of voxel p the ray entered through (normal -step[entry] along `entry`).
  const int a = entry, ta = (a + 1) % 3, tb = (a + 2) % 3;
  const float sn = step[a] > 0 ? -1.0f : 1.0f;
  float u = axis_of(o, ta) + t * axis_of(d, ta) - float(axis_of(p, ta));
  float w = axis_of(o, tb) + t * axis_of(d, tb) - float(axis_of(p, tb));
  u = clampf(u, 0.0f, 1.0f);
  w = clampf(w, 0.0f, 1.0f);
  const float light = axis_of(v.light, a) * sn, eye = axis_of(v.eye, a) * sn;
  float shade = 0.30f + 0.60f * (light > 0.0f ? light : 0.0f) + 0.15f * (eye > 0.0f ? eye : 0.0f);
  if (v.ao) {
    // The 3x3 voxels in front of the face: occupancy counted per face corner (0 to 3 occluders).
    Int3 front = p;
    set_axis(front, a, axis_of(p, a) - step[a]);
    bool occ[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        Int3 n = front;
        set_axis(n, ta, axis_of(front, ta) + i - 1);
        set_axis(n, tb, axis_of(front, tb) + j - 1);
        occ[i][j] = (i == 1 && j == 1) ? false : occupied(v, finder, n);
      }
    float corner[2][2];
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        const bool s1 = occ[2 * i][1], s2 = occ[1][2 * j], c = occ[2 * i][2 * j];
        const int n = (s1 && s2) ? 3 : int(s1) + int(s2) + int(c);
        corner[i][j] = 1.0f - 0.16f * float(n);
      }
    const float ao = (corner[0][0] * (1.0f - u) + corner[1][0] * u) * (1.0f - w) +
                     (corner[0][1] * (1.0f - u) + corner[1][1] * u) * w;
    shade = shade * ao;
  }
  const float eu = axis_of(v.edge, ta), ew = axis_of(v.edge, tb);
  if ((eu > 0.0f && (u < eu || u > 1.0f - eu)) || (ew > 0.0f && (w < ew || w > 1.0f - ew))) shade = shade * 0.72f;
  uint32_t rgb = v.color;
  if (v.colors) {
    rgb = v.colors[v.first[brick] + mask_rank(v.masks + 8 * brick, hit_off)];
  }
  uint32_t out = 0xff000000u;
  for (int c = 0; c < 3; ++c) {
    float x = float(channel(rgb, c)) * shade + 0.5f;
    x = x > 255.0f ? 255.0f : x;
    out |= uint32_t(x) << (8 * c);
  }
  return out;
}

// A picture: width x height RGBA8 pixels, rows top to bottom.
struct Image {
  int width = 0, height = 0;
  std::vector<uint32_t> pixels;  // 0xAABBGGRR (bytes R, G, B, A in memory)
};

// How to picture a grid set.
struct RenderOptions {
  int width = 512, height = 512;
  std::string view = "iso";    // iso, front, back, left, right, top, bottom, or "AZ,EL" in degrees
  char up = 'y';               // the world axis that points up in the picture: 'y' or 'z'
  std::string color = "auto";  // auto, none (one colour), #rrggbb (that colour), or a grid whose values colour
  std::string shape;           // the grid whose active voxels are drawn ("" = the first)
  float iso = 0.0f;            // level sets: voxels with value <= iso are drawn
  bool has_range = false;      // colour-map range (default: the values' min and max)
  double range_lo = 0, range_hi = 1;
  bool edges = true, ao = true, legend = true;
  uint32_t background = 0xfff2f2f2u;  // RGBA8 (0xAABBGGRR); alpha 0 = transparent
};

// Host-side scene: the arrays a RenderView points to, plus what the legend needs.
struct RenderScene {
  GridSpec spec;
  std::vector<uint64_t> keys, masks, cells;
  std::vector<uint32_t> first, colors;
  Int3 cdims{0, 0, 0}, lo{0, 0, 0}, hi{0, 0, 0};
  uint32_t color = 0xb4a08c;
  bool empty = true;
  std::string shape_name, color_name, color_mode;  // color_mode: one, rgb, normal, map, classes
  double lo_value = 0, hi_value = 0;               // colour-map range (color_mode "map")
  uint64_t voxels = 0;
  // The view with the scene's arrays (host pointers) and the camera of `options`.
  RenderView view(const RenderOptions& options) const;
  // The same camera with arrays given by the caller (device copies).
  RenderView view_with(const RenderOptions& options, const uint64_t* keys, const uint64_t* masks, const uint32_t* first,
                       const uint32_t* colors, const uint64_t* cells) const;
};

// Parses "512" or "800x600" into width and height (1 to 16384); Error(kUsage) otherwise.
void parse_image_size(const std::string& text, int& width, int& height);
// Parses a view name or "AZ,EL"; Error(kUsage) naming the problem.
void check_view(const std::string& view);
// "#rrggbb", "rrggbb" or "transparent" to RGBA8; Error(kUsage) otherwise.
uint32_t parse_background(const std::string& text);

// The scene of a grid set: the shape grid's active voxels (level sets: value <= iso), coloured by
// the options' colour grid. Error(kUsage) for unknown grid names.
RenderScene make_scene(const std::vector<const SparseGrid*>& grids, const RenderOptions& options);
// The picture on the CPU (TBB over rows), legend included.
Image render_cpu(const RenderScene& scene, const RenderOptions& options);
// Draws the colour-map legend (a bar with the range and the grid's name) when the scene has one.
void draw_legend(const RenderScene& scene, const RenderOptions& options, Image& image);
// Draws text with the built-in 5x7 font (ASCII 32-126, lowercase shown as capitals), `scale`
// pixels per font pixel; returns the width drawn.
int draw_text(Image& image, int x, int y, const std::string& text, uint32_t rgba, int scale = 1);

}  // namespace voxtile
