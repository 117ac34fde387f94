// LAS: files made by a writer written here from the ASPRS LAS 1.4 R15 tables (not io/las.cpp), read
// by voxtile; voxtile's LAS output decoded here the same way; large coordinates binned exactly;
// broken and compressed files refused with one clean error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/points.h"
#include "helpers.h"
#include "io/las.h"
#include "io/points_io.h"

namespace voxtile {
namespace {

// ---- an independent LAS writer ------------------------------------------------------------------

struct TestPoint {
  int32_t x, y, z;
  uint16_t intensity;
  uint8_t cls;  // classification value
  uint16_t r, g, b;
};

struct TestFile {
  int minor = 2;
  int format = 0;
  int extra = 0;  // extra bytes per record
  double scale[3] = {0.01, 0.01, 0.01};
  double offset[3] = {0, 0, 0};
  std::vector<TestPoint> points;
  int64_t claim = -1;  // point count written in the header (-1: the real one)
  bool laz_bit = false;
};

void le(std::string& s, size_t at, const void* v, size_t n) { std::memcpy(&s[at], v, n); }
template <class T>
void le(std::string& s, size_t at, T v) {
  le(s, at, &v, sizeof(T));
}

// Record layout per format, from the specification's tables: core 20 bytes (0-5) or 30 (6-10),
// then GPS time (1, 3, 4, 5 at 20), RGB (2 at 20, 3 and 5 at 28, 7, 8, 10 at 30), NIR (8, 10 at 36),
// wave packets (4 and 5 after the rest: 29 bytes; 9 and 10 likewise).
int record_size(int f) {
  static const int sizes[11] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};
  return sizes[f];
}
int rgb_offset(int f) {
  switch (f) {
    case 2:
      return 20;
    case 3:
    case 5:
      return 28;
    case 7:
    case 8:
    case 10:
      return 30;
    default:
      return -1;
  }
}

std::string make_las(const TestFile& t) {
  const size_t header = t.minor == 4 ? 375 : t.minor == 3 ? 235 : 227;
  const size_t vlr = 54 + 10;  // one unrelated VLR before the points
  const size_t rec = size_t(record_size(t.format) + t.extra);
  std::string s(header + vlr + rec * t.points.size(), '\0');
  std::memcpy(&s[0], "LASF", 4);
  s[24] = 1;
  s[25] = char(t.minor);
  std::memcpy(&s[26], "test writer", 11);
  le<uint16_t>(s, 94, uint16_t(header));
  le<uint32_t>(s, 96, uint32_t(header + vlr));
  le<uint32_t>(s, 100, 1);
  s[104] = char(t.format | (t.laz_bit ? 0x80 : 0));
  le<uint16_t>(s, 105, uint16_t(rec));
  const uint64_t n = t.claim >= 0 ? uint64_t(t.claim) : t.points.size();
  if (t.format < 6) le<uint32_t>(s, 107, uint32_t(n));
  for (int a = 0; a < 3; ++a) {
    le<double>(s, 131 + 8 * a, t.scale[a]);
    le<double>(s, 155 + 8 * a, t.offset[a]);
  }
  if (t.minor == 4) le<uint64_t>(s, 247, n);
  // The VLR: user "test", record 7, 10 bytes of payload.
  std::memcpy(&s[header + 2], "test", 4);
  le<uint16_t>(s, header + 18, 7);
  le<uint16_t>(s, header + 20, 10);
  for (size_t i = 0; i < t.points.size(); ++i) {
    const TestPoint& p = t.points[i];
    const size_t r = header + vlr + i * rec;
    le<int32_t>(s, r, p.x);
    le<int32_t>(s, r + 4, p.y);
    le<int32_t>(s, r + 8, p.z);
    le<uint16_t>(s, r + 12, p.intensity);
    if (t.format < 6) {
      s[r + 14] = char(0x09);          // return 1 of 1, scan direction flag set
      s[r + 15] = char(p.cls | 0xE0);  // the synthetic/key-point/withheld flags above the class
      s[r + 16] = char(-12);           // scan angle rank
      if (t.format != 0 && t.format != 2) le<double>(s, r + 20, 123.5);  // GPS time
    } else {
      s[r + 14] = char(0x11);
      s[r + 15] = char(0x0F);  // classification flags
      s[r + 16] = char(p.cls);
      le<int16_t>(s, r + 18, int16_t(-300));
      le<double>(s, r + 22, 456.25);
    }
    const int rgb = rgb_offset(t.format);
    if (rgb >= 0) {
      le<uint16_t>(s, r + size_t(rgb), p.r);
      le<uint16_t>(s, r + size_t(rgb) + 2, p.g);
      le<uint16_t>(s, r + size_t(rgb) + 4, p.b);
    }
    for (int e = 0; e < t.extra; ++e) s[r + size_t(record_size(t.format)) + size_t(e)] = char(0x5A);
  }
  return s;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

std::vector<TestPoint> random_points(size_t n, unsigned seed, bool eight_bit) {
  std::mt19937 rng(seed);
  std::vector<TestPoint> pts;
  for (size_t i = 0; i < n; ++i) {
    TestPoint p;
    p.x = int32_t(rng() % 2000001) - 1000000;
    p.y = int32_t(rng() % 2000001) - 1000000;
    p.z = int32_t(rng() % 20001);
    p.intensity = uint16_t(rng());
    p.cls = uint8_t(rng() % 19);
    const uint16_t m = eight_bit ? 255 : 65535;
    p.r = uint16_t(rng() % (m + 1u)), p.g = uint16_t(rng() % (m + 1u)), p.b = uint16_t(rng() % (m + 1u));
    pts.push_back(p);
  }
  return pts;
}

// ---- reading --------------------------------------------------------------------------------

TEST(LasRead, EveryVersionAndPointFormat) {
  test::TempDir dir;
  const std::pair<int, int> cases[] = {{0, 0}, {0, 1}, {1, 0}, {2, 2}, {2, 3},  {3, 4}, {3, 5},
                                       {4, 6}, {4, 7}, {4, 8}, {4, 9}, {4, 10}, {2, 1}};
  for (const auto& [minor, format] : cases) {
    for (int extra : {0, 7}) {
      TestFile t;
      t.minor = minor;
      t.format = format;
      t.extra = extra;
      t.scale[0] = 0.001, t.scale[1] = 0.002, t.scale[2] = 0.01;
      t.offset[0] = 512000, t.offset[1] = 5400000, t.offset[2] = -50;
      t.points = random_points(3001, unsigned(format * 10 + extra), false);
      const std::string path = dir.file("f" + std::to_string(minor) + std::to_string(format) + ".las");
      write_bytes(path, make_las(t));
      const std::string what = "1." + std::to_string(minor) + " format " + std::to_string(format);
      const PointCloud pc = read_las(path);
      ASSERT_EQ(pc.size(), t.points.size()) << what;
      ASSERT_EQ(pc.positions64.size(), pc.size());
      const bool rgb = rgb_offset(format) >= 0;
      EXPECT_EQ(pc.colors.size(), rgb ? pc.size() : 0u) << what;
      ASSERT_EQ(pc.intensity.size(), pc.size()) << what;
      ASSERT_EQ(pc.classes.size(), pc.size()) << what;
      for (size_t i = 0; i < pc.size(); ++i) {
        const TestPoint& p = t.points[i];
        ASSERT_EQ(pc.positions64[i].x, double(p.x) * 0.001 + 512000) << what << " point " << i;
        ASSERT_EQ(pc.positions64[i].y, double(p.y) * 0.002 + 5400000) << what;
        ASSERT_EQ(pc.positions64[i].z, double(p.z) * 0.01 - 50) << what;
        ASSERT_EQ(pc.positions[i].x, float(pc.positions64[i].x));
        ASSERT_EQ(pc.intensity[i], p.intensity);
        ASSERT_EQ(pc.classes[i], p.cls) << what;  // formats 0-5: the flag bits are not part of the class
        if (rgb) {
          ASSERT_EQ(pc.colors[i].r, p.r >> 8) << what;
          ASSERT_EQ(pc.colors[i].g, p.g >> 8);
          ASSERT_EQ(pc.colors[i].b, p.b >> 8);
        }
      }
    }
  }
}

TEST(LasRead, EightBitColoursAreTakenAsTheyAreAndZeroAttributesAreLeftOut) {
  test::TempDir dir;
  TestFile t;
  t.format = 2;
  t.points = random_points(500, 3, true);
  for (TestPoint& p : t.points) p.intensity = 0, p.cls = 0;
  write_bytes(dir.file("c.las"), make_las(t));
  const PointCloud pc = read_las(dir.file("c.las"));
  ASSERT_EQ(pc.colors.size(), 500u);
  for (size_t i = 0; i < 500; ++i) ASSERT_EQ(pc.colors[i].g, t.points[i].g);
  EXPECT_TRUE(pc.intensity.empty());
  EXPECT_TRUE(pc.classes.empty());
}

// A LAS reader that rounds positions to float puts points a few centimetres from where they are
// at UTM coordinates; binned from the file's integers, every point lands in the voxel that its
// offset from the grid origin, counted in the file's integer units, says.
TEST(LasRead, UtmSizeCoordinatesBinExactlyAsTheirOffsetsSay) {
  test::TempDir dir;
  TestFile t;
  t.format = 1;
  t.scale[0] = t.scale[1] = t.scale[2] = 0.001;
  t.offset[0] = 500000, t.offset[1] = 4100000, t.offset[2] = 0;
  std::mt19937 rng(17);
  for (int i = 0; i < 20000; ++i) {
    TestPoint p{};
    // Millimetres from the offset; many exactly on voxel faces (multiples of 10 mm) and next to them.
    const int32_t base[3] = {int32_t(rng() % 5000), int32_t(rng() % 5000), int32_t(rng() % 3000)};
    const int32_t nudge = int32_t(rng() % 3) - 1;
    p.x = (i % 3 == 0 ? base[0] / 10 * 10 : base[0]) + (i % 5 == 0 ? nudge : 0);
    p.y = base[1];
    p.z = base[2];
    if (p.x < 0) p.x = 0;
    t.points.push_back(p);
  }
  t.points[0].x = 123, t.points[0].y = 456, t.points[0].z = 0;  // x = 500000.123, y = 4100000.456
  write_bytes(dir.file("utm.las"), make_las(t));
  PointCloud pc = read_las(dir.file("utm.las"));
  GridOptions o;
  o.bbox = test::make_bounds(500000.0, 4100000.0, 0.0, 500005.12, 4100005.12, 3.2);
  o.voxel_size = Vec3d{0.01, 0.01, 0.01};  // 1 cm voxels: 512 x 512 x 320
  const GridSpec spec = make_grid_spec(o.bbox.value(), o);
  ASSERT_EQ(spec.dims.x, 512);
  ASSERT_EQ(spec.origin.x, 500000.0);
  const VoxelBins bins = bin_points_cpu(pc, spec);
  EXPECT_EQ(bins.outside, 0u);
  // Expected voxel from integer millimetres: floor(mm / 10). A point exactly on a voxel face (mm a
  // multiple of 10) is on it only in decimal: in double, 500000.13 - 500000 is 0.12999999994, and
  // such a point goes to the voxel the double formula floor((x - origin) / size) gives, on either
  // side; every other point must land exactly where its millimetres say.
  const GridView view = GridView::make(spec);
  std::map<uint64_t, uint32_t> per_key;
  size_t on_face = 0;
  for (size_t i = 0; i < t.points.size(); ++i) {
    const TestPoint& p = t.points[i];
    const Int3 got = view.voxel(view.key(pc.positions64[i]));
    ++per_key[view.key(pc.positions64[i])];
    const int32_t mm[3] = {p.x, p.y, p.z}, v[3] = {got.x, got.y, got.z};
    const double w[3] = {pc.positions64[i].x, pc.positions64[i].y, pc.positions64[i].z},
                 o[3] = {spec.origin.x, spec.origin.y, spec.origin.z};
    for (int a = 0; a < 3; ++a) {
      if (mm[a] % 10 == 0) {
        ++on_face;
        ASSERT_TRUE(v[a] == mm[a] / 10 || v[a] == mm[a] / 10 - 1) << i;
        ASSERT_EQ(v[a], int32_t(std::floor((w[a] - o[a]) / 0.01))) << i;
      } else {
        ASSERT_EQ(v[a], mm[a] / 10) << "point " << i << " axis " << a;
      }
    }
  }
  EXPECT_GT(on_face, t.points.size() / 4);
  ASSERT_EQ(bins.keys.size(), per_key.size());
  size_t v = 0;
  for (const auto& [key, count] : per_key) {
    ASSERT_EQ(bins.keys[v], key);
    ASSERT_EQ(bins.counts[v++], count);
  }
  const Int3 first = view.voxel(view.key(pc.positions64[0]));
  EXPECT_EQ(first.x, 12);
  EXPECT_EQ(first.y, 45);
  // The same points rounded to float (what a float-only reader keeps) land elsewhere: the test
  // can tell the two apart.
  size_t moved = 0;
  for (size_t i = 0; i < pc.size(); ++i) moved += view.key(pc.positions[i]) != view.key(pc.positions64[i]);
  EXPECT_GT(moved, pc.size() / 4);
}

TEST(LasRead, BrokenAndCompressedFilesGiveOneCleanError) {
  test::TempDir dir;
  TestFile good;
  good.format = 3;
  good.points = random_points(100, 1, false);
  const std::string bytes = make_las(good);
  auto expect_error = [&](const std::string& name, const std::string& content, const std::string& words) {
    const std::string path = dir.file(name);
    write_bytes(path, content);
    try {
      read_las(path);
      ADD_FAILURE() << name << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput) << name;
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find(words), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  };
  expect_error("empty.las", "", "empty");
  expect_error("text.las", "ply\nformat ascii 1.0\n", "not a LAS file");
  expect_error("short.las", bytes.substr(0, 100), "truncated LAS header");
  expect_error("cut.las", bytes.substr(0, bytes.size() - 5),
               "truncated: the header gives 100 points, the file holds 99");
  TestFile huge = good;
  huge.claim = int64_t(1) << 40;  // hostile: refused before any allocation
  huge.minor = 4;
  huge.format = 7;
  expect_error("huge.las", make_las(huge), "the header gives 1099511627776 points");
  TestFile laz = good;
  laz.laz_bit = true;
  expect_error("points.laz", make_las(laz), "LAZ (compressed LAS) is not read; decompress it first");
  std::string v2 = bytes;
  v2[24] = 2;
  expect_error("v2.las", v2, "LAS version 2.2 is not supported");
  std::string f11 = bytes;
  f11[104] = 11;
  expect_error("f11.las", f11, "unknown LAS point format 11");
  std::string shortrec = bytes;
  shortrec[105] = 20, shortrec[106] = 0;
  expect_error("rec.las", shortrec, "shorter than format 3 needs (34)");
  std::string zero = bytes;
  std::memset(&zero[131], 0, 8);
  expect_error("scale.las", zero, "scale factors");
  TestFile none = good;
  none.points.clear();
  expect_error("none.las", make_las(none), "no points");
  // A real LAZ file (PDAL's autzen_trim.laz).
  try {
    read_las(test::data_path("points/autzen_trim.laz"));
    ADD_FAILURE() << "autzen_trim.laz read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LAZ (compressed LAS)"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(is_laz_file(test::data_path("points/autzen_trim.laz")));
  EXPECT_FALSE(is_laz_file(dir.file("cut.las")));
}

TEST(LasBinning, MajorityClassWithTiesToTheSmallerAndMeanIntensity) {
  PointCloud pc;
  std::mt19937 rng(21);
  for (int i = 0; i < 30000; ++i) {
    pc.positions.push_back({float(rng() % 50) + 0.5f, float(rng() % 4) + 0.5f, 0.5f});
    pc.classes.push_back(uint8_t(rng() % 5 == 0 ? 200 : rng() % 4));
    pc.intensity.push_back(uint16_t(rng() % 60000));
  }
  // A voxel with a tie: two points of class 9, two of class 3 -> 3.
  for (uint8_t c : {9, 3, 9, 3}) {
    pc.positions.push_back({60.5f, 0.5f, 0.5f});
    pc.classes.push_back(c);
    pc.intensity.push_back(c);
  }
  GridOptions o;
  o.bbox = test::make_bounds(0, 0, 0, 64, 4, 1);
  o.voxel_size = Vec3d{1, 1, 1};
  const GridSpec spec = make_grid_spec(o.bbox.value(), o);
  const VoxelBins bins = bin_points_cpu(pc, spec);
  const std::vector<SparseGrid> grids = bins_to_grids(bins, spec, {"class", "intensity"});
  std::map<std::pair<int, int>, std::map<int, int>> hist;
  std::map<std::pair<int, int>, double> isum;
  std::map<std::pair<int, int>, int> n;
  for (size_t i = 0; i < pc.size(); ++i) {
    const std::pair<int, int> v = {int(pc.positions[i].x), int(pc.positions[i].y)};
    ++hist[v][pc.classes[i]];
    isum[v] += pc.intensity[i];
    ++n[v];
  }
  size_t checked = 0;
  grids[0].for_each_active([&](int32_t i, int32_t j, int32_t, size_t, int, uint64_t at) {
    const auto& h = hist.at({i, j});
    int best = -1, count = 0;
    for (const auto& [c, k] : h)
      if (k > count) best = c, count = k;  // ascending classes: ties keep the smaller
    ASSERT_EQ(grids[0].ivalues[at], best) << i << " " << j;
    ASSERT_FLOAT_EQ(grids[1].fvalues[at], float(isum.at({i, j}) / n.at({i, j})));
    ++checked;
  });
  EXPECT_EQ(checked, hist.size());
  const GridView view = GridView::make(spec);
  for (size_t v = 0; v < bins.keys.size(); ++v) EXPECT_TRUE(view.voxel(bins.keys[v]).x != 60 || bins.classes[v] == 3);
  EXPECT_EQ(parse_point_values("auto", false, false, true, true),
            (std::vector<std::string>{"count", "intensity", "class"}));
  EXPECT_THROW(parse_point_values("class", true, true, true, false), Error);
}

// ---- writing, decoded here ----------------------------------------------------------------------

struct Decoded {
  int minor = 0, format = 0, record = 0;
  uint64_t count = 0;
  double scale[3], offset[3], max[3], min[3];
  std::map<std::string, std::pair<int, int>> extras;  // name -> (type, byte offset in the record)
  std::string meta_json;
  std::vector<std::string> records;
};

template <class T>
T rd(const std::string& s, size_t at) {
  T v;
  std::memcpy(&v, &s[at], sizeof(T));
  return v;
}

Decoded decode(const std::string& s) {
  Decoded d;
  EXPECT_EQ(s.compare(0, 4, "LASF"), 0);
  EXPECT_EQ(s[24], 1);
  d.minor = s[25];
  const size_t header = rd<uint16_t>(s, 94), start = rd<uint32_t>(s, 96);
  const uint32_t vlrs = rd<uint32_t>(s, 100);
  d.format = uint8_t(s[104]);
  d.record = rd<uint16_t>(s, 105);
  d.count = rd<uint64_t>(s, 247);
  EXPECT_EQ(rd<uint32_t>(s, 107), 0u);  // legacy count: 0 with formats 6-10
  for (int a = 0; a < 3; ++a) {
    d.scale[a] = rd<double>(s, 131 + 8 * a);
    d.offset[a] = rd<double>(s, 155 + 8 * a);
    d.max[a] = rd<double>(s, 179 + 16 * a);
    d.min[a] = rd<double>(s, 187 + 16 * a);
  }
  size_t at = header;
  int extra_at = d.format == 7 ? 36 : 30;
  for (uint32_t v = 0; v < vlrs; ++v) {
    const std::string user = s.substr(at + 2, 16).c_str();
    const uint16_t id = rd<uint16_t>(s, at + 18), len = rd<uint16_t>(s, at + 20);
    const size_t body = at + 54;
    if (user == "LASF_Spec" && id == 4) {
      for (size_t e = 0; e * 192 < len; ++e) {
        const int type = uint8_t(s[body + e * 192 + 2]);
        d.extras[s.substr(body + e * 192 + 4, 32).c_str()] = {type, extra_at};
        extra_at += 4;  // types 5, 6, 9: four bytes
      }
    }
    if (user == "voxtile") d.meta_json = s.substr(body, len);
    at = body + len;
  }
  EXPECT_EQ(at, start);
  EXPECT_EQ(extra_at, d.record);
  for (uint64_t i = 0; i < d.count; ++i) d.records.push_back(s.substr(start + i * size_t(d.record), size_t(d.record)));
  EXPECT_EQ(s.size(), start + d.count * size_t(d.record));
  return d;
}

double coord(const Decoded& d, const std::string& r, int a) { return rd<int32_t>(r, 4 * a) * d.scale[a] + d.offset[a]; }

TEST(LasWrite, VoxelCentresWithColourIntensityClassCountAndOtherGrids) {
  test::TempDir dir;
  // Points near UTM coordinates, binned into 0.25 m voxels, written as a downsampled LAS.
  PointCloud pc;
  std::mt19937 rng(4);
  for (int i = 0; i < 4000; ++i) {
    const Vec3d p = {630000.0 + double(rng() % 4000) * 0.003, 4830000.0 + double(rng() % 3000) * 0.003,
                     80.0 + double(rng() % 1000) * 0.003};
    pc.positions64.push_back(p);
    pc.positions.push_back({float(p.x), float(p.y), float(p.z)});
    pc.colors.push_back({uint8_t(rng()), uint8_t(rng()), uint8_t(rng())});
    pc.intensity.push_back(uint16_t(rng() % 1000));
    pc.classes.push_back(uint8_t(rng() % 3 + 1));
  }
  GridOptions o;
  o.voxel_size = Vec3d{0.25, 0.25, 0.25};
  const GridSpec spec = make_grid_spec(point_bounds(pc), o);
  const VoxelBins bins = bin_points_cpu(pc, spec);
  const std::vector<SparseGrid> grids =
      bins_to_grids(bins, spec, {"count", "color", "intensity", "class", "occupancy"});
  std::vector<const SparseGrid*> ptrs;
  for (const SparseGrid& g : grids) ptrs.push_back(&g);
  write_las_grids(ptrs, dir.file("d.las"), {{"source", "test"}});
  const Decoded d = decode(test::read_file(dir.file("d.las")));
  EXPECT_EQ(d.minor, 4);
  EXPECT_EQ(d.format, 7);
  ASSERT_EQ(d.count, grids[0].active_voxels());
  ASSERT_EQ(d.extras.size(), 1u);
  ASSERT_EQ(d.extras.count("count"), 1u);
  EXPECT_EQ(d.extras.at("count").first, 5);  // uint32
  EXPECT_NE(d.meta_json.find("\"source\":\"test\""), std::string::npos);
  EXPECT_EQ(read_las_metadata(dir.file("d.las"), "source"), "test");
  for (int a = 0; a < 3; ++a) EXPECT_LE(d.scale[a], 0.25 / 1000);
  size_t i = 0;
  uint64_t total = 0;
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  grids[0].for_each_active([&](int32_t x, int32_t y, int32_t z, size_t, int, uint64_t at) {
    const std::string& r = d.records[i++];
    const Vec3d c = spec.voxel_center(x, y, z);
    const double cc[3] = {c.x, c.y, c.z};
    for (int a = 0; a < 3; ++a) {
      ASSERT_NEAR(coord(d, r, a), cc[a], d.scale[a] * 0.5 + 1e-9);
      lo[a] = std::min(lo[a], coord(d, r, a)), hi[a] = std::max(hi[a], coord(d, r, a));
    }
    const uint32_t count = rd<uint32_t>(r, size_t(d.extras.at("count").second));
    ASSERT_EQ(count, uint32_t(grids[0].ivalues[at]));
    total += count;
    ASSERT_EQ(rd<uint16_t>(r, 12), uint16_t(std::lround(grids[2].fvalues[at])));  // mean intensity
    ASSERT_EQ(uint8_t(r[16]), uint8_t(grids[3].ivalues[at]));                     // majority class
    ASSERT_EQ(uint8_t(r[14]), 0x11);
    for (int c = 0; c < 3; ++c)
      ASSERT_EQ(rd<uint16_t>(r, 30 + 2 * size_t(c)),
                uint16_t(std::lround(grids[1].fvalues[3 * at + size_t(c)] * 65535.0)));
  });
  EXPECT_EQ(total, pc.size());
  for (int a = 0; a < 3; ++a) {
    EXPECT_EQ(d.min[a], lo[a]);
    EXPECT_EQ(d.max[a], hi[a]);
  }
  // Read back by voxtile: one point per voxel, at its centre.
  const PointCloud back = read_las(dir.file("d.las"));
  EXPECT_EQ(back.size(), d.count);
  EXPECT_EQ(bin_points_cpu(back, spec).keys, bins.keys);
}

TEST(LasWrite, MeshSamplesKeepNormalsIdsAndColours) {
  test::TempDir dir;
  PointCloud pc;
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (int i = 0; i < 1000; ++i) {
    pc.positions.push_back({u(rng), u(rng), u(rng) + 100.f});
    pc.normals.push_back({0.f, 0.6f, -0.8f});
    pc.colors.push_back({uint8_t(i), 7, 255});
    pc.ids.push_back(uint32_t(i * 3));
    pc.materials.push_back(uint32_t(i % 4));
  }
  write_point_cloud(pc, dir.file("s.las"), "", {});
  const Decoded d = decode(test::read_file(dir.file("s.las")));
  EXPECT_EQ(d.format, 7);
  ASSERT_EQ(d.count, 1000u);
  for (const char* name : {"normal_x", "normal_y", "normal_z", "id", "material"})
    ASSERT_EQ(d.extras.count(name), 1u) << name;
  for (size_t i = 0; i < 1000; ++i) {
    const std::string& r = d.records[i];
    const float p[3] = {pc.positions[i].x, pc.positions[i].y, pc.positions[i].z};
    for (int a = 0; a < 3; ++a) ASSERT_NEAR(coord(d, r, a), p[a], d.scale[a] * 0.5 + 1e-12);
    for (int a = 0; a < 3; ++a) ASSERT_LE(d.scale[a], std::abs(p[a]) * 1e-6 + 1e-6);
    ASSERT_EQ(rd<float>(r, size_t(d.extras.at("normal_z").second)), -0.8f);
    ASSERT_EQ(rd<uint32_t>(r, size_t(d.extras.at("id").second)), uint32_t(i * 3));
    ASSERT_EQ(rd<uint32_t>(r, size_t(d.extras.at("material").second)), uint32_t(i % 4));
    ASSERT_EQ(rd<uint16_t>(r, 30), uint16_t(i % 256 * 257));
  }
  // Read back: colours 16-bit -> 8-bit exactly, positions within the quantization.
  const PointCloud back = read_las(dir.file("s.las"));
  for (size_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(back.colors[i].r, uint8_t(i));
    ASSERT_NEAR(back.positions64[i].y, pc.positions[i].y, d.scale[1]);
  }
  EXPECT_THROW(write_point_cloud(pc, dir.file("s.pts"), "", {}), Error);  // (points are written as .ply, .las or .xyz)
}

TEST(LasCli, PointsToVoxelsDownsampledLasAndErrors) {
  test::TempDir dir;
  TestFile t;
  t.format = 3;
  t.offset[0] = 500000, t.offset[1] = 4100000;
  t.points = random_points(20000, 6, false);
  write_bytes(dir.file("scan.las"), make_las(t));
  test::RunResult r =
      test::run_voxtile({"points", dir.file("scan.las"), "-o", dir.file("g.vdb"), "--voxel-size", "500", "--stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* grid : {"\"count\"", "\"color\"", "\"intensity\"", "\"class\""})
    EXPECT_NE(r.out.find(grid), std::string::npos) << grid << "\n" << r.out;
  r = test::run_voxtile({"points", dir.file("scan.las"), "-o", dir.file("down.las"), "--voxel-size", "500"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Decoded d = decode(test::read_file(dir.file("down.las")));
  EXPECT_EQ(d.format, 7);
  EXPECT_GT(d.count, 100u);
  EXPECT_LT(d.count, 20000u);
  EXPECT_EQ(d.extras.count("count"), 1u);
  // Same bytes again (no dates in the header).
  r = test::run_voxtile({"points", dir.file("scan.las"), "-o", dir.file("down2.las"), "--voxel-size", "500"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(dir.file("down.las")), test::read_file(dir.file("down2.las")));
  r = test::run_voxtile({"points", test::data_path("points/autzen_trim.laz"), "-o", dir.file("a.vdb")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("decompress it first"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(test::file_exists(dir.file("a.vdb")));
  TestFile cut = t;
  cut.claim = 10000000000;
  cut.minor = 4;
  write_bytes(dir.file("cut.las"), make_las(cut));
  r = test::run_voxtile({"points", dir.file("cut.las"), "-o", dir.file("c.vdb")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  // A mesh sampled into a LAS file; the info command describes LAS files.
  r = test::run_voxtile(
      {"points", test::data_path("meshes/stanford_bunny.ply"), "-o", dir.file("bunny.las"), "--count", "5000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(decode(test::read_file(dir.file("bunny.las"))).count, 5000u);
  r = test::run_voxtile({"info", dir.file("scan.las")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("20000"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace voxtile
