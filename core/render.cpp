// Scenes, cameras and legends for core/render.h; the CPU renderer.
#include "core/render.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace voxtile {
namespace {

// 5x7 glyphs of ASCII 32-126 (bit 4 is the leftmost column); lowercase letters are drawn as
// capitals (x excepted, for "800x600"); characters without a glyph as '?'.
constexpr uint8_t kFont[95][7] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, {0x0a, 0x0a, 0x1f, 0x0a, 0x1f, 0x0a, 0x0a},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, {0x04, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00},
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}, {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08},
    {0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00}, {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00},
    {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08}, {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00},
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}, {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00},
    {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}, {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}, {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e},
    {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}, {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e},
    {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}, {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},
    {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}, {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c},
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}, {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04},
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}, {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00},
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}, {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11},
    {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}, {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e},
    {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c}, {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f},
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}, {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f},
    {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e},
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}, {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11},
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}, {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11},
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}, {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e},
    {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}, {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d},
    {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}, {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e},
    {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e},
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}, {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a},
    {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}, {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04},
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}, {0x0e, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0e},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, {0x0e, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0e},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11},
    {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}, {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e},
    {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c}, {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f},
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}, {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f},
    {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e},
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}, {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11},
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}, {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11},
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}, {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e},
    {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}, {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d},
    {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}, {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e},
    {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e},
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}, {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a},
    {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11}, {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04},
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}, {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}};

struct V3 {
  double x, y, z;
};
V3 operator+(V3 a, V3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
V3 operator-(V3 a, V3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
V3 operator*(double s, V3 a) { return {s * a.x, s * a.y, s * a.z}; }
double dot(V3 a, V3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
V3 cross(V3 a, V3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
V3 normalized(V3 a) { return (1.0 / std::sqrt(dot(a, a))) * a; }
Vec3f to_f(V3 a) { return {float(a.x), float(a.y), float(a.z)}; }
double axis(V3 a, int i) { return i == 0 ? a.x : (i == 1 ? a.y : a.z); }

// Azimuth and elevation (degrees) of a view name or "AZ,EL"; false when it is neither.
bool view_angles(const std::string& view, double& az, double& el) {
  static const struct {
    const char* name;
    double az, el;
  } named[] = {{"iso", 45, 35.26438968275466},
               {"front", 0, 0},
               {"right", 90, 0},
               {"back", 180, 0},
               {"left", 270, 0},
               {"top", 0, 90},
               {"bottom", 0, -90}};
  for (const auto& n : named)
    if (view == n.name) {
      az = n.az;
      el = n.el;
      return true;
    }
  const size_t comma = view.find(',');
  if (comma == std::string::npos) return false;
  char* end = nullptr;
  const std::string a = view.substr(0, comma), e = view.substr(comma + 1);
  az = std::strtod(a.c_str(), &end);
  if (a.empty() || *end) return false;
  el = std::strtod(e.c_str(), &end);
  if (e.empty() || *end) return false;
  return std::isfinite(az) && std::isfinite(el) && el >= -90 && el <= 90;
}

// Matplotlib's viridis at 0, 0.1, ..., 1.
constexpr uint8_t kViridis[11][3] = {{68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},
                                     {42, 120, 142}, {33, 145, 140}, {34, 168, 132}, {68, 191, 112},
                                     {122, 209, 81}, {189, 223, 38}, {253, 231, 37}};
uint32_t rgb8(int r, int g, int b) { return uint32_t(r) | uint32_t(g) << 8 | uint32_t(b) << 16; }
uint32_t viridis(double t) {
  if (!(t > 0)) t = 0;  // NaN too
  if (t > 1) t = 1;
  const double x = t * 10;
  const int i = std::min(9, int(x));
  const double f = x - i;
  int c[3];
  for (int k = 0; k < 3; ++k) c[k] = int(std::lround(kViridis[i][k] * (1 - f) + kViridis[i + 1][k] * f));
  return rgb8(c[0], c[1], c[2]);
}
// Twelve distinguishable colours for ids and classes (Tableau's palette).
constexpr uint32_t kCategories[12] = {0xb4771f, 0x0e7fff, 0x2ca02c, 0x2827d6, 0xbd6794, 0x4b568c,
                                      0xc277e3, 0x7f7f7f, 0x22bdbc, 0xcfbe17, 0xe8c7ae, 0x78bbff};
uint32_t unit_rgb(double r, double g, double b) {
  auto c = [](double x) { return int(std::lround(std::min(1.0, std::max(0.0, std::isfinite(x) ? x : 0.0)) * 255)); };
  return rgb8(c(r), c(g), c(b));
}

const SparseGrid* find_grid(const std::vector<const SparseGrid*>& grids, const std::string& name, const char* what) {
  for (const SparseGrid* g : grids)
    if (g->name == name) return g;
  std::string known;
  for (const SparseGrid* g : grids) known += (known.empty() ? "" : ", ") + g->name;
  fail(ErrorKind::kUsage, std::string(what) + ": no grid named '" + name + "' (the input has: " + known + ")");
}

bool starts_with(const std::string& s, const char* p) { return s.compare(0, std::strlen(p), p) == 0; }

int legend_scale(const RenderOptions& o) { return std::max(1, std::min(o.width, o.height) / 320); }
int legend_width(const RenderScene& s, const RenderOptions& o) {
  return s.color_mode == "map" && o.legend ? 72 * legend_scale(o) : 0;
}

}  // namespace

void parse_image_size(const std::string& text, int& width, int& height) {
  unsigned long w = 0, h = 0;
  char x = 0, extra = 0;
  const int n = std::sscanf(text.c_str(), "%lu%c%lu%c", &w, &x, &h, &extra);
  if (n == 1) h = w;
  const bool ok =
      (n == 1 || (n == 3 && (x == 'x' || x == 'X'))) && text.find_first_not_of("0123456789xX") == std::string::npos;
  if (!ok || w < 1 || h < 1 || w > 16384 || h > 16384)
    fail(ErrorKind::kUsage, "image size '" + text + "': expected N or WxH, 1 to 16384 pixels");
  width = int(w);
  height = int(h);
}

void check_view(const std::string& view) {
  double az, el;
  if (!view_angles(view, az, el))
    fail(ErrorKind::kUsage, "view '" + view +
                                "': expected iso, front, back, left, right, top, bottom, or AZ,EL in degrees "
                                "(elevation -90 to 90)");
}

// RGB8 of "#rrggbb" or "rrggbb"; false when text is neither.
static bool parse_hex_rgb(const std::string& text, uint32_t* rgb) {
  const std::string hex = !text.empty() && text[0] == '#' ? text.substr(1) : text;
  if (hex.size() != 6 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return false;
  const unsigned long v = std::strtoul(hex.c_str(), nullptr, 16);
  *rgb = rgb8(int(v >> 16 & 255), int(v >> 8 & 255), int(v & 255));
  return true;
}

uint32_t parse_background(const std::string& text) {
  if (text == "transparent" || text == "none") return 0x00ffffffu;
  uint32_t rgb = 0;
  if (!parse_hex_rgb(text, &rgb)) fail(ErrorKind::kUsage, "background '" + text + "': expected #rrggbb or transparent");
  return 0xff000000u | rgb;
}

namespace {

// Calls f(offset) for every set bit of a brick mask, in ascending order.
template <class F>
void for_each_bit(const uint64_t* w, F&& f) {
  for (int word = 0; word < 8; ++word)
    for (uint64_t bits = w[word]; bits; bits &= bits - 1) f(word * 64 + __builtin_ctzll(bits));
}

}  // namespace

RenderScene make_scene(const std::vector<const SparseGrid*>& grids, const RenderOptions& o) {
  if (grids.empty()) fail(ErrorKind::kUsage, "no grid to picture");
  const SparseGrid& shape = o.shape.empty() ? *grids[0] : *find_grid(grids, o.shape, "--grid");
  RenderScene s;
  s.spec = shape.spec;
  s.shape_name = shape.name;
  // The drawn voxels: every active one; of a level set, those at or below the iso value.
  const bool level = shape.level_set && shape.value_type == ValueType::kFloat32;
  std::vector<uint32_t> source;  // brick of `shape` behind each scene brick
  if (level) {
    std::vector<BrickMask> kept(shape.keys.size());
    tbb::parallel_for(tbb::blocked_range<size_t>(0, shape.keys.size(), 256), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t b = r.begin(); b < r.end(); ++b) {
        BrickMask m{};
        const float* v = shape.fvalues.data() + shape.value_begin[b];  // (the active voxels' in offset order)
        for_each_bit(shape.masks[b].w, [&](int off) {
          if (*v++ <= o.iso) m.set(off);
        });
        kept[b] = m;
      }
    });
    for (size_t b = 0; b < kept.size(); ++b)
      if (kept[b].any()) source.push_back(uint32_t(b));
    s.keys.resize(source.size());
    s.masks.resize(8 * source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      s.keys[i] = shape.keys[source[i]];
      std::memcpy(&s.masks[8 * i], kept[source[i]].w, sizeof(BrickMask));
    }
  } else {
    s.keys.assign(shape.keys.begin(), shape.keys.end());
    s.masks.resize(8 * shape.masks.size());
    if (!shape.masks.empty()) std::memcpy(s.masks.data(), shape.masks.data(), shape.masks.size() * sizeof(BrickMask));
    source.resize(shape.keys.size());
    for (size_t b = 0; b < source.size(); ++b) source[b] = uint32_t(b);
  }
  const size_t nb = s.keys.size();
  s.first.resize(nb + 1);
  s.first[0] = 0;
  uint64_t voxels = 0;
  Int3 lo{INT32_MAX, INT32_MAX, INT32_MAX}, hi{INT32_MIN, INT32_MIN, INT32_MIN};
  const Int3 dims = s.spec.dims;
  s.cdims = {(dims.x + 63) >> 6, (dims.y + 63) >> 6, (dims.z + 63) >> 6};
  s.cells.assign((uint64_t(s.cdims.x) * s.cdims.y * s.cdims.z + 63) / 64, 0);
  for (size_t b = 0; b < nb; ++b) {
    const uint64_t* w = &s.masks[8 * b];
    const Int3 bc = brick_coord(s.keys[b]);
    // Word x holds the voxels of local x; byte y of the OR of the words those of local y, bit z of z.
    uint64_t all = 0;
    int xs = 8, xe = -1, count = 0;
    for (int x = 0; x < 8; ++x) {
      all |= w[x];
      count += popcount64(w[x]);
      if (w[x]) {
        xs = std::min(xs, x);
        xe = x;
      }
    }
    uint8_t zbits = 0;
    int ys = 8, ye = -1;
    for (int y = 0; y < 8; ++y) {
      const uint8_t byte = uint8_t(all >> (8 * y));
      zbits |= byte;
      if (byte) {
        ys = std::min(ys, y);
        ye = y;
      }
    }
    const int zs = __builtin_ctz(zbits), ze = 31 - __builtin_clz(zbits);
    lo = {std::min(lo.x, bc.x * 8 + xs), std::min(lo.y, bc.y * 8 + ys), std::min(lo.z, bc.z * 8 + zs)};
    hi = {std::max(hi.x, bc.x * 8 + xe + 1), std::max(hi.y, bc.y * 8 + ye + 1), std::max(hi.z, bc.z * 8 + ze + 1)};
    const uint64_t c = (uint64_t(bc.x >> 3) * s.cdims.y + uint64_t(bc.y >> 3)) * s.cdims.z + uint64_t(bc.z >> 3);
    s.cells[c >> 6] |= uint64_t(1) << (c & 63);
    voxels += uint64_t(count);
    s.first[b + 1] = uint32_t(std::min<uint64_t>(voxels, UINT32_MAX));
  }
  s.voxels = voxels;
  s.empty = nb == 0;
  if (!s.empty) {
    s.lo = lo;
    s.hi = hi;
  }
  // Colours.
  const SparseGrid* cg = nullptr;
  if (o.color == "auto") {
    for (const SparseGrid* g : grids)
      if (g->name == "color" && g->value_type == ValueType::kVec3f) cg = g;
    if (!cg && shape.value_type != ValueType::kNone && !level) cg = &shape;
  } else if (!o.color.empty() && o.color[0] == '#') {  // one colour, given
    if (!parse_hex_rgb(o.color, &s.color)) fail(ErrorKind::kUsage, "--color '" + o.color + "': expected #rrggbb");
  } else if (o.color != "none") {
    cg = find_grid(grids, o.color, "--color");
  }
  if (!cg || cg->value_type == ValueType::kNone || s.empty) {
    s.color_mode = "one";
    return s;
  }
  if (voxels > (uint64_t(1) << 28))
    fail(ErrorKind::kResource, "colouring " + std::to_string(voxels) +
                                   " voxels by a grid needs more memory than a picture should: use --color none");
  s.color_name = cg->name;
  enum Mode { kRgb, kNormal, kClasses, kMap } mode;
  if (cg->value_type == ValueType::kVec3f)
    mode = starts_with(cg->name, "color") || starts_with(cg->name, "colour") ? kRgb : kNormal;
  else if (cg->value_type == ValueType::kInt32 && (starts_with(cg->name, "id") || starts_with(cg->name, "class")))
    mode = kClasses;
  else
    mode = kMap;
  s.color_mode = mode == kRgb ? "rgb" : mode == kNormal ? "normal" : mode == kClasses ? "classes" : "map";
  const bool ints = cg->value_type == ValueType::kInt32;
  auto scalar = [&](uint64_t v) { return ints ? double(cg->ivalues[v]) : double(cg->fvalues[v]); };
  if (mode == kMap) {
    if (o.has_range) {
      s.lo_value = o.range_lo;
      s.hi_value = o.range_hi;
    } else {
      using MinMax = std::pair<double, double>;
      const MinMax mm = tbb::parallel_reduce(
          tbb::blocked_range<uint64_t>(0, cg->active_voxels(), 1 << 14), MinMax{INFINITY, -INFINITY},
          [&](const tbb::blocked_range<uint64_t>& r, MinMax m) {
            for (uint64_t v = r.begin(); v < r.end(); ++v) {
              const double x = scalar(v);
              if (std::isfinite(x)) {
                m.first = std::min(m.first, x);
                m.second = std::max(m.second, x);
              }
            }
            return m;
          },
          [](MinMax a, MinMax b) {
            return MinMax{std::min(a.first, b.first), std::max(a.second, b.second)};
          });
      s.lo_value = std::isfinite(mm.first) ? mm.first : 0;
      s.hi_value = std::isfinite(mm.second) ? mm.second : 1;
    }
  }
  s.colors.resize(voxels);
  const double span = s.hi_value - s.lo_value;
  const bool same = cg == &shape;
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nb, 256), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b) {
      int64_t cb = int64_t(source[b]);
      if (!same) {
        const auto it = std::lower_bound(cg->keys.begin(), cg->keys.end(), s.keys[b]);
        cb = it != cg->keys.end() && *it == s.keys[b] ? int64_t(it - cg->keys.begin()) : -1;
      }
      uint32_t at = s.first[b];
      uint64_t word_first[8] = {};  // where the colour brick's values of each mask word begin
      if (cb >= 0)
        for (int w = 0, n = 0; w < 8; n += popcount64(cg->masks[size_t(cb)].w[w]), ++w)
          word_first[w] = cg->value_begin[size_t(cb)] + uint64_t(n);
      for_each_bit(&s.masks[8 * b], [&](int off) {
        uint32_t c = 0x808080;
        if (cb >= 0 && cg->masks[size_t(cb)].test(off)) {
          const uint64_t below = cg->masks[size_t(cb)].w[off >> 6] & ((uint64_t(1) << (off & 63)) - 1);
          const uint64_t v = word_first[off >> 6] + uint64_t(popcount64(below));
          switch (mode) {
            case kRgb:
              c = unit_rgb(cg->fvalues[3 * v], cg->fvalues[3 * v + 1], cg->fvalues[3 * v + 2]);
              break;
            case kNormal:
              c = unit_rgb(0.5 + 0.5 * cg->fvalues[3 * v], 0.5 + 0.5 * cg->fvalues[3 * v + 1],
                           0.5 + 0.5 * cg->fvalues[3 * v + 2]);
              break;
            case kClasses:
              c = kCategories[((uint32_t(cg->ivalues[v]) * 2654435761u) >> 16) % 12];
              break;
            case kMap:
              c = viridis(span > 0 ? (scalar(v) - s.lo_value) / span : 0.5);
              break;
          }
        }
        s.colors[at++] = c;
      });
    }
  });
  return s;
}

RenderView RenderScene::view(const RenderOptions& o) const {
  return view_with(o, keys.data(), masks.data(), first.data(), colors.empty() ? nullptr : colors.data(), cells.data());
}

RenderView RenderScene::view_with(const RenderOptions& o, const uint64_t* k, const uint64_t* m, const uint32_t* f,
                                  const uint32_t* c, const uint64_t* cl) const {
  RenderView v;
  v.keys = k;
  v.masks = m;
  v.first = f;
  v.colors = c;
  v.cells = cl;
  v.num_bricks = keys.size();
  v.cdims = cdims;
  v.lo = lo;
  v.hi = hi;
  v.color = color;
  v.background = o.background;
  v.ao = o.ao;
  v.width = o.width;
  v.height = o.height;
  if (empty) return v;  // every ray misses
  double az = 0, el = 0;
  check_view(o.view);
  view_angles(o.view, az, el);
  // World axes: up, front (towards the viewer of the front view) and right (right-handed).
  const V3 up = o.up == 'z' ? V3{0, 0, 1} : V3{0, 1, 0};
  const V3 front = o.up == 'z' ? V3{0, -1, 0} : V3{0, 0, 1};
  const V3 right = {1, 0, 0};
  const double a = az * kPi / 180, e = el * kPi / 180;
  const V3 to_eye = normalized(std::cos(e) * (std::sin(a) * right + std::cos(a) * front) + std::sin(e) * up);
  const V3 d = -1.0 * to_eye;
  const V3 hint = std::fabs(el) > 89.99 ? (el > 0 ? -1.0 * front : front) : up;
  const V3 r = normalized(cross(d, hint));
  const V3 u = cross(r, d);
  // The occupied box in world units relative to the grid's origin.
  const V3 vs{spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z};
  const V3 blo{lo.x * vs.x, lo.y * vs.y, lo.z * vs.z}, bhi{hi.x * vs.x, hi.y * vs.y, hi.z * vs.z};
  const V3 centre = 0.5 * (blo + bhi), half = 0.5 * (bhi - blo);
  const double er = std::fabs(half.x * r.x) + std::fabs(half.y * r.y) + std::fabs(half.z * r.z);
  const double eu = std::fabs(half.x * u.x) + std::fabs(half.y * u.y) + std::fabs(half.z * u.z);
  const int area_w = std::max(1, o.width - legend_width(*this, o));
  const double s = std::max(2 * er / (0.92 * area_w), 2 * eu / (0.92 * o.height));  // world units per pixel
  const double dist = 2 * std::sqrt(dot(half, half)) + 2 * std::max(vs.x, std::max(vs.y, vs.z));
  const V3 origin = centre - dist * d - (0.5 * area_w * s) * r + (0.5 * o.height * s) * u;
  auto to_voxels = [&](V3 p) { return V3{p.x / vs.x, p.y / vs.y, p.z / vs.z}; };
  v.origin = to_f(to_voxels(origin));
  v.du = to_f(to_voxels(s * r));
  v.dv = to_f(to_voxels(-s * u));
  v.dir = to_f(to_voxels(d));
  v.light = to_f(normalized(-0.5 * r + 0.7 * u + 0.5 * to_eye));
  v.eye = to_f(to_eye);
  if (o.edges)
    for (int i = 0; i < 3; ++i) {
      const double pixels = axis(vs, i) / s;  // a voxel's size on screen
      const float w = pixels >= 5 ? float(0.6 / pixels) : 0.0f;
      if (i == 0)
        v.edge.x = w;
      else if (i == 1)
        v.edge.y = w;
      else
        v.edge.z = w;
    }
  return v;
}

int draw_text(Image& img, int x, int y, const std::string& text, uint32_t rgba, int scale) {
  int cx = x;
  for (const char ch : text) {
    const int c = (ch >= 32 && ch < 127) ? ch - 32 : '?' - 32;
    for (int row = 0; row < 7; ++row)
      for (int col = 0; col < 5; ++col) {
        if (!((kFont[c][row] >> (4 - col)) & 1)) continue;
        for (int sy = 0; sy < scale; ++sy)
          for (int sx = 0; sx < scale; ++sx) {
            const int px = cx + col * scale + sx, py = y + row * scale + sy;
            if (px >= 0 && py >= 0 && px < img.width && py < img.height) img.pixels[size_t(py) * img.width + px] = rgba;
          }
      }
    cx += 6 * scale;
  }
  return cx - x;
}

void draw_legend(const RenderScene& s, const RenderOptions& o, Image& img) {
  const int lw = legend_width(s, o);
  if (lw == 0) return;
  const int k = legend_scale(o);
  // Dark text on light backgrounds (and transparent ones), light text on dark ones.
  const uint32_t bg = o.background;
  const int luma = int(bg & 255) + int(bg >> 8 & 255) + int(bg >> 16 & 255);
  const uint32_t ink = (bg >> 24) != 0 && luma < 3 * 110 ? 0xffe6e6e6u : 0xff333333u;
  const int bar_w = 10 * k, x0 = o.width - lw + 4 * k, top = o.height / 5, bottom = o.height - o.height / 5;
  if (bottom - top < 16 * k) return;  // too small a picture for a legend
  for (int y = top; y < bottom; ++y) {
    const uint32_t c = viridis(double(bottom - 1 - y) / double(std::max(1, bottom - top - 1)));
    for (int x = x0; x < x0 + bar_w; ++x)
      if (x >= 0 && x < img.width) img.pixels[size_t(y) * img.width + x] = 0xff000000u | c;
  }
  char hi[32], lo[32];
  std::snprintf(hi, sizeof hi, "%.4g", s.hi_value);
  std::snprintf(lo, sizeof lo, "%.4g", s.lo_value);
  const int tx = x0 + bar_w + 3 * k;
  draw_text(img, tx, top, hi, ink, k);
  draw_text(img, tx, bottom - 7 * k, lo, ink, k);
  std::string name = s.color_name;
  const size_t fit = size_t(std::max(1, lw / (6 * k)));
  if (name.size() > fit) name = name.substr(0, fit);
  draw_text(img, o.width - lw + 2 * k, top - 12 * k, name, ink, k);
}

Image render_cpu(const RenderScene& scene, const RenderOptions& o) {
  Image img;
  img.width = o.width;
  img.height = o.height;
  img.pixels.resize(size_t(o.width) * size_t(o.height));
  const RenderView v = scene.view(o);
  tbb::parallel_for(tbb::blocked_range<int>(0, o.height, 4), [&](const tbb::blocked_range<int>& r) {
    for (int y = r.begin(); y < r.end(); ++y)
      for (int x = 0; x < o.width; ++x) img.pixels[size_t(y) * o.width + x] = render_pixel(v, x, y);
  });
  draw_legend(scene, o, img);
  return img;
}

}  // namespace voxtile
