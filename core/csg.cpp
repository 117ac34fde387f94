// CSG script parser and primitive surface sampling.
#include "core/csg.h"

#include <tbb/parallel_for.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/vec.h"

namespace voxtile {
namespace {

constexpr double kMaxCoordinate = 1e18;  // far beyond any useful scene, well inside float range

struct Token {
  std::string text;
  int column = 0;  // 1-based
};

// Splits a line into whitespace-separated tokens; a token starting with '#' (outside a colour
// value, see Parser) or "//" begins a comment.
std::vector<Token> tokenize(const std::string& line) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size()) break;
    const size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    out.push_back({line.substr(start, i - start), int(start) + 1});
  }
  return out;
}

// Half extents of the shape's local box (x, y, z).
std::array<double, 3> local_extent(const CsgPrimitive& p) {
  switch (static_cast<CsgShape>(p.shape)) {
    case CsgShape::kSphere: return {p.a, p.a, p.a};
    case CsgShape::kBox: return {p.a, p.b, p.c};
    case CsgShape::kCylinder: return {p.a, p.a, p.c};
    case CsgShape::kCapsule: return {p.a, p.a, double(p.c) + p.a};
    case CsgShape::kTorus: return {double(p.a) + p.b, double(p.a) + p.b, p.b};
  }
  return {0, 0, 0};
}

// World half extents: |R^T| e (R = rot is world -> local).
std::array<double, 3> world_extent(const CsgPrimitive& p) {
  const std::array<double, 3> e = local_extent(p);
  if (!p.rotated) return e;
  std::array<double, 3> w{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) w[i] += std::fabs(double(p.rot[3 * j + i])) * e[j];
  return w;
}

void finish_primitive(CsgPrimitive& p) {
  const std::array<double, 3> w = world_extent(p);
  const double pad = 1e-4 * std::max({w[0], w[1], w[2]});
  for (int i = 0; i < 3; ++i) {
    p.lo[i] = std::nextafter(float(double(p.center[i]) - w[i] - pad), -INFINITY);
    p.hi[i] = std::nextafter(float(double(p.center[i]) + w[i] + pad), INFINITY);
  }
}

class Parser {
 public:
  Parser(const std::string& source, int line, const std::string& text) : m_source(source), m_line(line) {
    m_tokens = tokenize(text);
    m_end_column = int(text.size()) + 1;
  }

  // Returns false for blank and comment lines.
  bool parse(CsgPrimitive& p) {
    if (at_end_or_comment()) return false;
    const Token& op = m_tokens[m_pos++];
    if (op.text == "add") p.subtract = 0;
    else if (op.text == "sub") p.subtract = 1;
    else error(op.column, "expected 'add' or 'sub', got '" + op.text + "'");
    if (at_end_or_comment()) error(m_end_column, "expected a primitive (sphere, box, cylinder, capsule, torus) after '" + op.text + "'");
    const Token& shape = m_tokens[m_pos++];
    static const char* const names[] = {"sphere", "box", "cylinder", "capsule", "torus"};
    int s = -1;
    for (int i = 0; i < 5; ++i)
      if (shape.text == names[i]) s = i;
    if (s < 0) error(shape.column, "expected a primitive (sphere, box, cylinder, capsule, torus), got '" + shape.text + "'");
    p.shape = uint32_t(s);
    p.rgb = 0xC8C8C8;
    p.material = 0;
    p.rotated = 0;
    for (int i = 0; i < 9; ++i) p.rot[i] = (i % 4 == 0) ? 1.f : 0.f;

    double center[3] = {0, 0, 0}, size[3] = {0, 0, 0}, angles[3] = {0, 0, 0};
    double radius = 0, height = 0, major = 0, minor = 0;
    std::vector<std::string> seen;
    while (!at_end_or_comment()) {
      const Token& key = m_tokens[m_pos++];
      for (const std::string& k : seen)
        if (k == key.text) error(key.column, "'" + key.text + "' given twice");
      seen.push_back(key.text);
      if (!allowed(CsgShape(s), key.text))
        error(key.column, std::string(names[s]) + " takes " + allowed_list(CsgShape(s)) + ", got '" + key.text + "'");
      if (key.text == "center") numbers(key, center, 3, false);
      else if (key.text == "size") numbers(key, size, 3, true);
      else if (key.text == "rotate") numbers(key, angles, 3, false);
      else if (key.text == "radius") numbers(key, &radius, 1, true);
      else if (key.text == "height") {
        // A capsule of height 0 is a sphere; a cylinder needs some height.
        const size_t at = m_pos;
        height = number(key, s != int(CsgShape::kCapsule));
        if (height < 0) error(m_tokens[at].column, "'height' must not be negative, got " + m_tokens[at].text);
      }
      else if (key.text == "major") numbers(key, &major, 1, true);
      else if (key.text == "minor") numbers(key, &minor, 1, true);
      else if (key.text == "material") p.material = uint32_t(integer(key, 0, 65535));
      else if (key.text == "color") p.rgb = color(key);
    }
    auto require = [&](const char* k) {
      for (const std::string& x : seen)
        if (x == k) return;
      error(shape.column, std::string(names[s]) + " needs '" + k + "'");
    };
    require("center");
    switch (CsgShape(s)) {
      case CsgShape::kSphere: require("radius"); p.a = float(radius); p.b = p.c = 0; break;
      case CsgShape::kBox: require("size"); p.a = float(size[0] / 2); p.b = float(size[1] / 2); p.c = float(size[2] / 2); break;
      case CsgShape::kCylinder:
      case CsgShape::kCapsule:
        require("radius");
        require("height");
        p.a = float(radius);
        p.b = 0;
        p.c = float(height / 2);
        break;
      case CsgShape::kTorus:
        require("major");
        require("minor");
        if (!(minor < major)) error(shape.column, "torus needs minor < major (got minor " + fmt(minor) + ", major " + fmt(major) + ")");
        p.a = float(major);
        p.b = float(minor);
        p.c = 0;
        break;
    }
    for (int i = 0; i < 3; ++i) p.center[i] = float(center[i]);
    if (angles[0] != 0 || angles[1] != 0 || angles[2] != 0) {
      // Local -> world M = Rz * Ry * Rx (x first); rot = M^T.
      const double ax = angles[0] * kPi / 180, ay = angles[1] * kPi / 180, az = angles[2] * kPi / 180;
      const double cx = std::cos(ax), sx = std::sin(ax), cy = std::cos(ay), sy = std::sin(ay), cz = std::cos(az),
                   sz = std::sin(az);
      const double m[9] = {cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx,
                           sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx,
                           -sy,     cy * sx,                cy * cx};
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) p.rot[3 * r + c] = float(m[3 * c + r]);
      p.rotated = 1;
    }
    finish_primitive(p);
    return true;
  }

 private:
  static bool allowed(CsgShape s, const std::string& k) {
    if (k == "center" || k == "rotate" || k == "color" || k == "material") return true;
    switch (s) {
      case CsgShape::kSphere: return k == "radius";
      case CsgShape::kBox: return k == "size";
      case CsgShape::kCylinder:
      case CsgShape::kCapsule: return k == "radius" || k == "height";
      case CsgShape::kTorus: return k == "major" || k == "minor";
    }
    return false;
  }
  static std::string allowed_list(CsgShape s) {
    const char* own = s == CsgShape::kSphere ? "radius" : s == CsgShape::kBox ? "size"
                      : s == CsgShape::kTorus ? "major, minor" : "radius, height";
    return std::string("center, ") + own + ", rotate, color, material";
  }
  static std::string fmt(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  bool at_end_or_comment() const {
    if (m_pos >= m_tokens.size()) return true;
    const std::string& t = m_tokens[m_pos].text;
    return t[0] == '#' || t.rfind("//", 0) == 0;
  }
  [[noreturn]] void error(int column, const std::string& what) const {
    fail(ErrorKind::kInput, m_source + ":" + std::to_string(m_line) + ":" + std::to_string(column) + ": " + what);
  }
  const Token& next_value(const Token& key, const char* what) {
    if (at_end_or_comment()) error(m_end_column, std::string("expected ") + what + " after '" + key.text + "'");
    return m_tokens[m_pos++];
  }
  double number(const Token& key, bool positive) {
    const Token& t = next_value(key, positive ? "a positive number" : "a number");
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(t.text.c_str(), &end);
    if (end != t.text.c_str() + t.text.size() || t.text.empty())
      error(t.column, "expected a number after '" + key.text + "', got '" + t.text + "'");
    if (!std::isfinite(v) || std::fabs(v) > kMaxCoordinate)
      error(t.column, "'" + key.text + "' value " + t.text + " is not a finite number of at most 1e18");
    if (positive && !(v > 0)) error(t.column, "'" + key.text + "' must be positive, got " + t.text);
    return v;
  }
  void numbers(const Token& key, double* out, int n, bool positive) {
    for (int i = 0; i < n; ++i) out[i] = number(key, positive);
  }
  long integer(const Token& key, long lo, long hi) {
    const Token& t = next_value(key, "an integer");
    char* end = nullptr;
    const long v = std::strtol(t.text.c_str(), &end, 10);
    if (end != t.text.c_str() + t.text.size() || v < lo || v > hi)
      error(t.column, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + " after '" +
                          key.text + "', got '" + t.text + "'");
    return v;
  }
  uint32_t color(const Token& key) {
    if (m_pos < m_tokens.size() && m_tokens[m_pos].text[0] == '#') {
      const Token& t = m_tokens[m_pos++];
      bool ok = t.text.size() == 7;
      for (size_t i = 1; ok && i < 7; ++i) ok = std::isxdigit(static_cast<unsigned char>(t.text[i]));
      if (!ok) error(t.column, "expected a colour #RRGGBB or three integers 0-255 after 'color', got '" + t.text + "'");
      return uint32_t(std::strtoul(t.text.c_str() + 1, nullptr, 16));
    }
    uint32_t rgb = 0;
    for (int i = 0; i < 3; ++i) rgb = (rgb << 8) | uint32_t(integer(key, 0, 255));
    return rgb;
  }

  std::string m_source;
  int m_line;
  std::vector<Token> m_tokens;
  size_t m_pos = 0;
  int m_end_column = 1;
};

// ---- sampling -------------------------------------------------------------------------------

struct Face {
  double area;
  int kind;  // per shape, see sample_face
};

std::vector<Face> faces_of(const CsgPrimitive& p) {
  const double a = p.a, b = p.b, c = p.c;
  switch (static_cast<CsgShape>(p.shape)) {
    case CsgShape::kSphere: return {{4 * kPi * a * a, 0}};
    case CsgShape::kBox:
      return {{4 * b * c, 0}, {4 * b * c, 1}, {4 * a * c, 2}, {4 * a * c, 3}, {4 * a * b, 4}, {4 * a * b, 5}};
    case CsgShape::kCylinder: return {{4 * kPi * a * c, 0}, {kPi * a * a, 1}, {kPi * a * a, 2}};
    case CsgShape::kCapsule: return {{4 * kPi * a * c, 0}, {2 * kPi * a * a, 1}, {2 * kPi * a * a, 2}};
    case CsgShape::kTorus: return {{4 * kPi * kPi * a * b, 0}};
  }
  return {};
}

// Point and outward normal (local frame) of sample (u, v) in [0,1)^2 of a face.
void sample_face(const CsgPrimitive& p, int kind, double u, double v, double q[3], double n[3]) {
  const double a = p.a, b = p.b, c = p.c;
  auto set = [&](double x, double y, double z, double nx, double ny, double nz) {
    q[0] = x, q[1] = y, q[2] = z, n[0] = nx, n[1] = ny, n[2] = nz;
  };
  switch (static_cast<CsgShape>(p.shape)) {
    case CsgShape::kSphere: {
      const double z = 1 - 2 * u, r = std::sqrt(std::max(0.0, 1 - z * z)), phi = 2 * kPi * v;
      set(a * r * std::cos(phi), a * r * std::sin(phi), a * z, r * std::cos(phi), r * std::sin(phi), z);
      return;
    }
    case CsgShape::kBox: {
      const double s = (kind & 1) ? -1 : 1, x = 2 * u - 1, y = 2 * v - 1;
      if (kind < 2) set(s * a, x * b, y * c, s, 0, 0);
      else if (kind < 4) set(x * a, s * b, y * c, 0, s, 0);
      else set(x * a, y * b, s * c, 0, 0, s);
      return;
    }
    case CsgShape::kCylinder: {
      if (kind == 0) {
        const double phi = 2 * kPi * u;
        set(a * std::cos(phi), a * std::sin(phi), (2 * v - 1) * c, std::cos(phi), std::sin(phi), 0);
      } else {
        const double s = kind == 1 ? 1 : -1, r = a * std::sqrt(u), phi = 2 * kPi * v;
        set(r * std::cos(phi), r * std::sin(phi), s * c, 0, 0, s);
      }
      return;
    }
    case CsgShape::kCapsule: {
      if (kind == 0) {
        const double phi = 2 * kPi * u;
        set(a * std::cos(phi), a * std::sin(phi), (2 * v - 1) * c, std::cos(phi), std::sin(phi), 0);
      } else {
        // Archimedes: height on a hemisphere is uniform in area.
        const double s = kind == 1 ? 1 : -1, z = u, r = std::sqrt(std::max(0.0, 1 - z * z)), phi = 2 * kPi * v;
        set(a * r * std::cos(phi), a * r * std::sin(phi), s * (c + a * z), r * std::cos(phi), r * std::sin(phi), s * z);
      }
      return;
    }
    case CsgShape::kTorus: {
      // Area density is proportional to (a + b cos theta): invert theta + k sin theta = 2 pi v.
      const double k = b / a, t = 2 * kPi * v, phi = 2 * kPi * u;
      double th = t;
      for (int it = 0; it < 12; ++it) th -= (th + k * std::sin(th) - t) / (1 + k * std::cos(th));
      const double ring = a + b * std::cos(th);
      set(ring * std::cos(phi), ring * std::sin(phi), b * std::sin(th), std::cos(th) * std::cos(phi),
          std::cos(th) * std::sin(phi), std::sin(th));
      return;
    }
  }
}

uint64_t face_count(double area, double per_area) {
  const double n = std::llround(area * per_area);
  return n > 0 ? uint64_t(n) : 0;
}

}  // namespace

Bounds CsgScript::bounds() const {
  Bounds b;
  for (const CsgPrimitive& p : prims) {
    if (p.subtract) continue;
    const std::array<double, 3> w = world_extent(p);
    b.extend({p.center[0] - w[0], p.center[1] - w[1], p.center[2] - w[2]});
    b.extend({p.center[0] + w[0], p.center[1] + w[1], p.center[2] + w[2]});
  }
  return b;
}

CsgScript parse_csg(const std::string& text, const std::string& source) {
  CsgScript script;
  script.source = source;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    CsgPrimitive p{};
    if (Parser(source, line_no, line).parse(p)) {
      script.prims.push_back(p);
      script.lines.push_back(line_no);
    }
  }
  if (script.prims.empty()) fail(ErrorKind::kInput, source + ": no primitives (expected lines like 'add sphere center 0 0 0 radius 1')");
  if (script.prims.size() > (size_t(1) << 24)) fail(ErrorKind::kInput, source + ": more than 16777216 primitives");
  return script;
}

double csg_area(const CsgPrimitive& p) {
  double area = 0;
  for (const Face& f : faces_of(p)) area += f.area;
  return area;
}

uint64_t csg_sample_count(const CsgPrimitive& p, double per_area) {
  uint64_t n = 0;
  for (const Face& f : faces_of(p)) n += face_count(f.area, per_area);
  return n;
}

CsgSamples sample_csg(const CsgScript& script, SampleDensity density, uint64_t max_samples) {
  if (!(density.per_area > 0) || !std::isfinite(density.per_area))
    fail(ErrorKind::kUsage, "the sample density must be a positive finite number");
  CsgSamples out;
  out.begin.assign(script.prims.size() + 1, 0);
  double total = 0;
  for (const CsgPrimitive& p : script.prims)
    for (const Face& f : faces_of(p)) total += std::round(f.area * density.per_area);
  if (total > double(max_samples))
    fail(ErrorKind::kUsage, script.source + ": " + std::to_string(uint64_t(total)) + " samples at this density, more than " +
                                std::to_string(max_samples) + "; use a larger --spacing or smaller --density");
  for (size_t k = 0; k < script.prims.size(); ++k)
    out.begin[k + 1] = out.begin[k] + csg_sample_count(script.prims[k], density.per_area);
  const uint64_t n = out.begin.back();
  out.positions.resize(n);
  out.params.resize(n);
  // R2 low-discrepancy sequence (Roberts): alpha = (1/g, 1/g^2), g the plastic number.
  const double g = 1.32471795724474602596, a1 = 1 / g, a2 = 1 / (g * g);
  for (size_t k = 0; k < script.prims.size(); ++k) {
    const CsgPrimitive& p = script.prims[k];
    uint64_t base = out.begin[k];
    for (const Face& f : faces_of(p)) {
      const uint64_t count = face_count(f.area, density.per_area);
      tbb::parallel_for(tbb::blocked_range<uint64_t>(0, count, 4096), [&](const tbb::blocked_range<uint64_t>& r) {
        for (uint64_t i = r.begin(); i < r.end(); ++i) {
          double u = 0.5 + a1 * double(i), v = 0.5 + a2 * double(i);
          u -= std::floor(u);
          v -= std::floor(v);
          double q[3] = {0, 0, 0}, nl[3] = {0, 0, 1};
          sample_face(p, f.kind, u, v, q, nl);
          double w[3], nw[3];
          for (int r3 = 0; r3 < 3; ++r3) {
            // local -> world: x = center + rot^T q
            w[r3] = double(p.center[r3]);
            nw[r3] = 0;
            for (int c3 = 0; c3 < 3; ++c3) {
              const double m = p.rotated ? double(p.rot[3 * c3 + r3]) : (r3 == c3 ? 1.0 : 0.0);
              w[r3] += m * q[c3];
              nw[r3] += m * nl[c3];
            }
          }
          const double len = std::sqrt(nw[0] * nw[0] + nw[1] * nw[1] + nw[2] * nw[2]);
          const double s = (p.subtract ? -1.0 : 1.0) / (len > 0 ? len : 1.0);
          out.positions[base + i] = {float(w[0]), float(w[1]), float(w[2])};
          out.params[base + i] = {{float(nw[0] * s), float(nw[1] * s), float(nw[2] * s)}, uint32_t(k)};
        }
      });
      base += count;
    }
  }
  return out;
}

}  // namespace voxtile
