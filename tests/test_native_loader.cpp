// The native PLY, STL and OBJ readers against Assimp on every sample: the same triangles (binary
// formats bit for bit; text formats within one unit in the last place, since Assimp 5.2's number
// parser is not correctly rounded and fast_float is), the same voxels, hostile headers rejected
// before any allocation, and the loader choice.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/points.h"
#include "core/voxelize.h"
#include "io/files.h"
#include "io/mesh_reader.h"
#include "io/mesh_writer.h"
#include "io/native_mesh.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

struct Tri {
  float v[9];
};
std::vector<Tri> triangles(const Mesh& m) {
  std::vector<Tri> out(m.num_triangles());
  for (size_t t = 0; t < out.size(); ++t)
    for (int k = 0; k < 3; ++k) std::memcpy(&out[t].v[3 * k], &m.positions[m.indices[3 * t + size_t(k)]], 12);
  return out;
}
// Units in the last place between two floats of the same sign.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if ((ia < 0) != (ib < 0)) return a == b ? 0 : INT64_MAX;
  return std::llabs(int64_t(ia) - int64_t(ib));
}

// Every triangle of `a` matched to one of `b` (corners in the same order) within `max_ulps` per
// coordinate: the same multiset of triangles, whatever the order.
void expect_same_triangles(const Mesh& a, const Mesh& b, int64_t max_ulps, const std::string& what) {
  ASSERT_EQ(a.num_triangles(), b.num_triangles()) << what;
  const std::vector<Tri> ta = triangles(a), tb = triangles(b);
  const Bounds bb = b.bounds();
  const double ext = std::max({bb.hi.x - bb.lo.x, bb.hi.y - bb.lo.y, bb.hi.z - bb.lo.z, 1e-30});
  auto cell = [&](const Tri& t) {
    int64_t c[3];
    for (int a2 = 0; a2 < 3; ++a2)
      c[a2] = int64_t(std::floor((double(t.v[a2]) + t.v[3 + a2] + t.v[6 + a2]) / 3.0 / ext * 512.0));
    return std::array<int64_t, 3>{c[0], c[1], c[2]};
  };
  std::map<std::array<int64_t, 3>, std::vector<size_t>> index;
  for (size_t i = 0; i < tb.size(); ++i) index[cell(tb[i])].push_back(i);
  std::vector<uint8_t> used(tb.size(), 0);
  size_t unmatched = 0;
  for (const Tri& t : ta) {
    const auto c = cell(t);
    bool found = false;
    for (int dx = -1; dx <= 1 && !found; ++dx)
      for (int dy = -1; dy <= 1 && !found; ++dy)
        for (int dz = -1; dz <= 1 && !found; ++dz) {
          const auto it = index.find({c[0] + dx, c[1] + dy, c[2] + dz});
          if (it == index.end()) continue;
          for (size_t j : it->second) {
            if (used[j]) continue;
            // The same corners in the same cyclic order (Assimp's polygon encoding may rotate them).
            for (int rot = 0; rot < 3 && !found; ++rot) {
              bool same = true;
              for (int k = 0; k < 9 && same; ++k) same = ulps(t.v[k], tb[j].v[(k + 3 * rot) % 9]) <= max_ulps;
              if (same) {
                used[j] = 1;
                found = true;
              }
            }
            if (found) break;
          }
        }
    if (!found) ++unmatched;
  }
  EXPECT_EQ(unmatched, 0u) << what << ": triangles without a match within " << max_ulps << " ulp";
}

bool text_format(const std::string& path) {
  const std::string e = lower_extension(path);
  if (e == "obj") return true;
  if (e == "off") return read_input_file(path).find("BINARY") == std::string::npos;
  std::ifstream f(path, std::ios::binary);
  std::string head(512, '\0');
  f.read(head.data(), std::streamsize(head.size()));
  if (e == "ply") return head.find("format ascii") != std::string::npos;
  return head.rfind("solid", 0) == 0 && head.find("facet") != std::string::npos;
}

std::vector<std::string> samples() {
  std::vector<std::string> out = {test::data_path("meshes/stanford_bunny.ply"),
                                  test::data_path("formats/ply/cube_binary.ply"),
                                  test::data_path("formats/ply/cube_ascii_float32_types.ply"),
                                  test::data_path("formats/ply/color_mesh_binary_rgba.ply"),
                                  test::data_path("formats/stl/Spider_binary.stl"),
                                  test::data_path("formats/stl/Spider_ascii.stl"),
                                  test::data_path("formats/stl/sphereWithHole.stl"),
                                  test::data_path("formats/obj/spider.obj"),
                                  test::data_path("edge/box_without_lineending.obj"),
                                  test::data_path("edge/concave_polygon.obj"),
                                  test::data_path("edge/negative_indices.obj"),
                                  test::data_path("edge/number_formats.obj"),
                                  test::data_path("edge/cube_binary_header_with_RN_newline.ply"),
                                  test::data_path("edge/soup.stl"),
                                  test::data_path("edge/triangle_with_two_solids.stl"),
                                  test::data_path("edge/malformed_missing_material.obj"),
                                  test::data_path("edge/crytek_sponza_truncated.obj"),
                                  test::data_path("formats/off/Cube.off"),
                                  test::data_path("formats/off/Wuson.off"),
                                  test::data_path("formats/3mf/box.3mf")};
  // The shared corpus, where this checkout has it beside it.
  for (const char* rel : {"formats/ply/Wuson_ascii_normals_uv.ply", "formats/stl/counter.unitsmm.STL",
                          "formats/obj/monkey/monkey.obj", "formats/obj/spider/spider.obj",
                          "meshes/stanford_dragon_100k.obj", "meshes/crytek_sponza_columns_shrubbery.obj",
                          "meshes/redwood_scan_frag_115_colored.ply", "meshes/mountain_open_terrain.obj"}) {
    const std::string p = test::source_path("../shared/data/") + rel;
    if (std::ifstream(p).good()) out.push_back(p);
  }
  return out;
}

TEST(NativeLoader, SameTrianglesAndVoxelsAsAssimpOnEverySample) {
  size_t compared = 0;
  for (const std::string& path : samples()) {
    SCOPED_TRACE(path);
    MeshLoadResult native, assimp;
    bool native_ok = true, assimp_ok = true;
    try {
      native = load_mesh(path, false, Loader::kNative);
    } catch (const Error&) {
      native_ok = false;
    }
    try {
      assimp = load_mesh(path, false, Loader::kAssimp);
    } catch (const Error&) {
      assimp_ok = false;
    }
    ASSERT_EQ(native_ok, assimp_ok) << "one loader read the file, the other refused it";
    if (!native_ok) continue;
    ++compared;
    EXPECT_NE(native.format.find("native"), std::string::npos);
    const bool text = text_format(path);
    if (path.find("concave_polygon") != std::string::npos) {
      // Polygons of more than 4 corners: both ear-clip, choosing other ears: the same surface.
      auto area = [](const Mesh& m) {
        double a = 0;
        for (size_t t = 0; t < m.num_triangles(); ++t) {
          const Vec3f p0 = m.vertex(t, 0), p1 = m.vertex(t, 1), p2 = m.vertex(t, 2);
          const double e1[3] = {double(p1.x) - p0.x, double(p1.y) - p0.y, double(p1.z) - p0.z};
          const double e2[3] = {double(p2.x) - p0.x, double(p2.y) - p0.y, double(p2.z) - p0.z};
          const double c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
          a += 0.5 * std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
        }
        return a;
      };
      EXPECT_EQ(native.mesh.num_triangles(), assimp.mesh.num_triangles());
      EXPECT_NEAR(area(native.mesh), area(assimp.mesh), 1e-5 * area(assimp.mesh));
      continue;
    }
    expect_same_triangles(native.mesh, assimp.mesh, text ? 1 : 0, path);
    EXPECT_EQ(native.mesh.dropped_degenerate, assimp.mesh.dropped_degenerate);
    EXPECT_EQ(native.mesh.normals.empty(), assimp.mesh.normals.empty());
    EXPECT_EQ(native.mesh.uvs.empty(), assimp.mesh.uvs.empty());
    EXPECT_EQ(native.mesh.colors.empty(), assimp.mesh.colors.empty());
    if (!text) {
      // The same voxels: binary, count and distance grids, in both modes.
      GridOptions go;
      go.resolution = 64;
      const GridSpec spec = make_grid_spec(assimp.mesh.bounds(), go);
      EXPECT_EQ(make_grid_spec(native.mesh.bounds(), go).dims.x, spec.dims.x);
      for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative})
        for (Target t : {Target::kBinary, Target::kCount, Target::kDistance}) {
          VoxelizeOptions o;
          o.mode = mode;
          o.target = t;
          EXPECT_EQ(voxelize_cpu(native.mesh, spec, o).checksum(), voxelize_cpu(assimp.mesh, spec, o).checksum())
              << mode_name(mode) << " " << target_name(t);
        }
    }
  }
  EXPECT_GE(compared, 12u);
}

TEST(NativeLoader, HostileHeadersFailAtOnceWithoutAllocating) {
  test::TempDir dir;
  const std::string body(88 * 1024, '\0');
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.file(name), std::ios::binary) << bytes;
    return dir.file(name);
  };
  const std::vector<std::string> files = {
      write("faces.ply", "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                         "property float z\nelement face 10000000000\nproperty list uchar int vertex_indices\nend_header\n" +
                             body),
      write("verts.ply", "ply\nformat binary_little_endian 1.0\nelement vertex 99999999999\nproperty float x\nproperty "
                         "float y\nproperty float z\nend_header\n" + body),
      write("ascii.ply", "ply\nformat ascii 1.0\nelement vertex 4000000000\nproperty float x\nproperty float y\nproperty "
                         "float z\nend_header\n0 0 0\n1 0 0\n"),
      write("cut.ply", "ply\nformat ascii 1.0\nelement verte"),
      write("count.stl", std::string(80, ' ') + std::string("\xff\xff\xff\x7f", 4) + body)};
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      load_mesh(f);
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      EXPECT_EQ(std::string(e.what()).rfind(f + ": ", 0), 0u) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  }
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 100 * 1024) << "KB of resident memory grown";
}

TEST(NativeLoader, PolygonsPointsLinesAndMaterials) {
  test::TempDir dir;
  std::ofstream(dir.file("m.mtl")) << "newmtl red\nKd 1 0 0\nnewmtl blue\nKd 0 0 1\n";
  std::ofstream(dir.file("a.obj")) << "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\n"
                                      "g first\nusemtl blue\nf 1 2 3 4\nusemtl red\nf -5 -4 -1\n"
                                      "g second\nf 1/1/1 3 5\nl 1 2\np 3\nusemtl unknown\nf 2 3 5\n";
  const MeshLoadResult r = load_mesh(dir.file("a.obj"), false, Loader::kNative);
  ASSERT_EQ(r.mesh.num_triangles(), 5u);  // the quad as two, then three triangles, in file order
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.material_ids.begin(), r.mesh.material_ids.end()), (std::vector<uint32_t>{2, 2, 1, 1, 3}));
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.mesh_ids.begin(), r.mesh.mesh_ids.end()), (std::vector<uint32_t>{1, 1, 1, 2, 2}));
  EXPECT_EQ(r.mesh.num_materials, 4u);
  ASSERT_EQ(r.mesh.material_colors.size(), 4u);
  EXPECT_EQ(r.mesh.material_colors[1], 0xFF0000u);
  EXPECT_EQ(r.mesh.material_colors[2], 0x0000FFu);
  EXPECT_EQ(r.non_triangle_primitives, 2u);
  const Tri t = triangles(r.mesh)[2];  // f -5 -4 -1: vertices 1, 2 and 5
  EXPECT_EQ(t.v[3], 1.0f);
  EXPECT_EQ(t.v[8], 1.0f);
  // A file of point statements only: both readers count each vertex a statement lists (was: one
  // per statement natively, so the two named different counts).
  std::ofstream(dir.file("points.obj")) << "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\np 4 3 2 1\np 2 3\n";
  for (const Loader loader : {Loader::kNative, Loader::kAssimp}) {
    try {
      load_mesh(dir.file("points.obj"), false, loader);
      ADD_FAILURE() << loader_name(loader);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no triangles (it holds 6 points only;"), std::string::npos)
          << loader_name(loader) << ": " << e.what();
    }
  }
  // A line ending in '\\' continues on the next (as Assimp reads it), with LF or CRLF; a '\\' elsewhere,
  // or at the file's end, is no continuation.
  std::ofstream(dir.file("cont.obj"), std::ios::binary)
      << "v 0 0 0\nv 1 0 \\\r\n0\nv 0 1 0\\\n\nf 1 2 \\\n 3\n# c:\\dir\\ \nf 1 \\ 2 3 \\";
  const MeshLoadResult cont = load_mesh(dir.file("cont.obj"), false, Loader::kNative);
  ASSERT_EQ(cont.mesh.num_triangles(), 1u) << "the second face has a stray '\\' among its corners";
  EXPECT_EQ(cont.mesh.positions.size(), 3u);
  EXPECT_EQ(triangles(cont.mesh)[0].v[3], 1.0f);
  EXPECT_EQ(triangles(cont.mesh)[0].v[7], 1.0f);
  // '#' starts a comment within a corner too: "f 1# 2 3" is a face of one corner (ignored, as a
  // point), "f x#y 2 3" one malformed corner; both passes over the file agree (the first counted
  // three corners in each, the second wrote no triangle, and the slot kept uninitialised indices:
  // found by the fuzz test's mutants under ASan).
  std::ofstream(dir.file("hash.obj")) << "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1# 2 3\nf x#y 2 3\nf 1 3 4#\n"
                                         "f 1 2#3 4\n";
  for (int round = 0; round < 20; ++round) {
    const MeshLoadResult h = load_mesh(dir.file("hash.obj"), false, Loader::kNative);
    ASSERT_EQ(h.mesh.num_triangles(), 2u);
    EXPECT_EQ(h.mesh.indices, (decltype(h.mesh.indices){0, 1, 2, 0, 2, 3}));
    EXPECT_EQ(h.non_triangle_primitives, 3u);
  }
  // A text file cut at any point loads what is whole or fails cleanly, never crashes.
  const std::string full = read_input_file(test::data_path("formats/obj/spider.obj"));
  for (size_t cut : {size_t(1), size_t(100), full.size() / 3, full.size() / 2, full.size() - 7}) {
    std::ofstream(dir.file("cut.obj"), std::ios::binary) << full.substr(0, cut);
    try {
      load_mesh(dir.file("cut.obj"), false, Loader::kNative);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
    }
  }
}

// OFF (Geomview's format; ModelNet's meshes): the keyword's variants, comments anywhere, counts
// glued to the keyword, polygons of any size (Assimp 5.2 drops faces of more than 9 corners and moves
// out-of-range indices to the last vertex), colours as integers or floats, binary OFF, and the
// errors a broken file gets.
TEST(NativeLoader, OffVariantsAndErrors) {
  test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.file(name), std::ios::binary) << bytes;
    return dir.file(name);
  };
  auto load = [&](const std::string& name, const std::string& bytes) {
    return load_mesh(write(name, bytes), false, Loader::kNative);
  };
  const std::string square = "0 0 0\n1 0 0\n1 1 0\n0 1 0\n";
  // ModelNet's header: the vertex count glued to the keyword; comments and blank lines anywhere.
  MeshLoadResult r =
      load("glued.off", "OFF4 2 0\n# a comment\n\n" + square + "  # another\n3 0 1 2\n3 0 2 3 # trailing\n");
  EXPECT_EQ(r.format, "OFF (native)");
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.indices.begin(), r.mesh.indices.end()),
            (std::vector<uint32_t>{0, 1, 2, 0, 2, 3}));
  // No keyword at all; CRLF lines.
  r = load("bare.off", "4 1 0\r\n0 0 0\r\n1 0 0\r\n1 1 0\r\n0 1 0\r\n4 0 1 2 3\r\n");
  EXPECT_EQ(r.mesh.num_triangles(), 2u);
  // A 12-gon (Assimp drops faces of more than 9 corners): ear-clipped into 10 triangles; a face with
  // an index out of range is dropped and counted; a line and a point are ignored and counted.
  std::string ring = "OFF\n13 4 0\n";
  for (int i = 0; i < 12; ++i)
    ring += std::to_string(std::cos(i * M_PI / 6)) + " " + std::to_string(std::sin(i * M_PI / 6)) + " 0\n";
  ring += "0 0 1\n12 0 1 2 3 4 5 6 7 8 9 10 11\n3 0 1 13\n2 0 1\n1 5\n";
  r = load("ring.off", ring);
  EXPECT_EQ(r.mesh.num_triangles(), 10u);
  EXPECT_EQ(r.dropped_bad_index, 1u);
  EXPECT_EQ(r.non_triangle_primitives, 2u);
  // Normals, colours (integers 0..255 or floats 0..1, with alpha or not), texture coordinates,
  // homogeneous coordinates, and two-dimensional vertices.
  r = load("cn.off",
           "CNOFF\n3 1 0\n0 0 0 0 0 2 255 0 0 255\n1 0 0 0 0 1 0 128 0\n0 1 0 0 0 1 0.0 0.5 1.0 1.0\n3 0 1 2 1 0 0\n");
  ASSERT_EQ(r.mesh.colors.size(), 3u);
  EXPECT_EQ(r.mesh.colors[0], 0xFF0000u);
  EXPECT_EQ(r.mesh.colors[1], 0x008000u);
  EXPECT_EQ(r.mesh.colors[2], 0x0080FFu);
  ASSERT_EQ(r.mesh.normals.size(), 3u);
  EXPECT_EQ(r.mesh.normals[0].z, 1.0f);  // (unit length)
  r = load("st.off", "STCOFF\n3 1 0\n0 0 0 1 1 1 1 0.25 0.5\n1 0 0 1 1 1 1 1 0\n0 1 0 1 1 1 1 0 1\n3 0 1 2\n");
  ASSERT_EQ(r.mesh.uvs.size(), 3u);
  EXPECT_EQ(r.mesh.uvs[0].x, 0.25f);
  EXPECT_EQ(r.mesh.uvs[0].y, 0.5f);
  r = load("h.off", "4OFF\n3 1 0\n0 0 0 2\n2 0 0 2\n0 4 0 2\n3 0 1 2\n");
  EXPECT_EQ(r.mesh.positions[2].y, 2.0f);
  r = load("n2.off", "nOFF\n2\n3 1 0\n0 0\n1 0\n0 1\n3 0 1 2\n");
  EXPECT_EQ(r.mesh.positions[1].x, 1.0f);
  EXPECT_EQ(r.mesh.positions[1].z, 0.0f);
  // Vertices only: a point cloud, as with the other formats.
  try {
    load("pts.off", "OFF\n4 0 0\n" + square);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4 points"), std::string::npos) << e.what();
  }
  // Binary OFF: triangles (read in parallel), then a quad with a face colour (the general path).
  auto be32 = [](uint32_t v) {
    std::string s(4, '\0');
    for (int k = 0; k < 4; ++k) s[size_t(k)] = char((v >> (24 - 8 * k)) & 0xFF);
    return s;
  };
  auto bef = [&](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return be32(u);
  };
  std::string bin = "OFF BINARY\n" + be32(4) + be32(2) + be32(0);
  for (const float v : {0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 1.f, 0.f}) bin += bef(v);
  const std::string tris =
      be32(3) + be32(0) + be32(1) + be32(2) + be32(0) + be32(3) + be32(0) + be32(2) + be32(3) + be32(0);
  r = load("b.off", bin + tris);
  EXPECT_EQ(r.format, "OFF binary (native)");
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.indices.begin(), r.mesh.indices.end()),
            (std::vector<uint32_t>{0, 1, 2, 0, 2, 3}));
  EXPECT_EQ(r.mesh.positions[2].y, 1.0f);
  std::string quad = "OFF BINARY\n" + be32(4) + be32(1) + be32(0);
  for (const float v : {0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 1.f, 0.f}) quad += bef(v);
  quad += be32(4) + be32(0) + be32(1) + be32(2) + be32(3) + be32(3) + bef(1) + bef(0) + bef(0);
  EXPECT_EQ(load("bq.off", quad).mesh.num_triangles(), 2u);
  // Broken files: one-line errors naming the file, never a crash or a partial mesh.
  const std::vector<std::pair<std::string, std::string>> broken = {
      {"OFF\n5 1 0\n" + square + "3 0 1 2\n", "truncated"},
      {"OFF\n4 1 0\n0 0 0\n1 0\n1 1 0\n0 1 0\n3 0 1 2\n", "vertex 1 has too few or malformed values"},
      {"OFF\n", "truncated"},
      {"# only a comment\n", "no OFF header"},
      {"PLY\n4 1 0\n", "not an OFF file"},
      {"OFF\nfour 1 0\n", "not numbers"},
      {"nOFF\n4\n3 1 0\n0 0 0 0\n", "4-dimensional"},
      {"OFF\n99999999999 1 0\n" + square, "truncated"},
      {bin + tris.substr(0, 30), "truncated: face 1 of 2"},
      {"OFF BINARY\n" + be32(1000000) + be32(1) + be32(0), "truncated"}};
  for (size_t i = 0; i < broken.size(); ++i) {
    const std::string f = write("broken" + std::to_string(i) + ".off", broken[i].first);
    try {
      load_mesh(f, false, Loader::kNative);
      ADD_FAILURE() << f << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(f + ": ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(broken[i].second), std::string::npos) << e.what();
    }
  }
  // auto reads .off natively.
  EXPECT_EQ(load_mesh(dir.file("glued.off")).format, "OFF (native)");
}

// ASCII PLY records are parsed up to the next record, never further: blank lines and CRLF between
// records, a short face line does not take the next line's numbers, triangles then a polygon (the
// one-pass triangle path gives way to the general one, in file order), indices out of range dropped.
TEST(NativeLoader, AsciiPlyRecordsEndAtTheirLine) {
  test::TempDir dir;
  const std::string head =
      "ply\r\nformat ascii 1.0\r\nelement vertex 5\r\nproperty float x\r\nproperty float y\r\nproperty float z\r\n"
      "element face 4\r\nproperty list uchar int vertex_indices\r\nend_header\r\n";
  const std::string verts = "0 0 0\r\n\r\n1 0 0\r\n  1 1 0 \r\n0 1 0\r\n\n0 0 1\r\n";
  std::ofstream(dir.file("tri.ply"), std::ios::binary) << head << verts << "3 0 1 2\r\n3 0 2 9\r\n\r\n3 1 2 4\r\n3 4 3 0\r\n";
  MeshLoadResult r = load_mesh(dir.file("tri.ply"), false, Loader::kNative);
  EXPECT_EQ(r.mesh.positions.size(), 5u);
  EXPECT_EQ(r.mesh.positions[2].y, 1.0f);
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.indices.begin(), r.mesh.indices.end()),
            (std::vector<uint32_t>{0, 1, 2, 1, 2, 4, 4, 3, 0}));
  EXPECT_EQ(r.dropped_bad_index, 1u);
  std::ofstream(dir.file("quad.ply"), std::ios::binary) << head << verts << "3 0 1 2\n3 1 2 4\n3 4 3 0\n4 0 1 2 3\n";
  r = load_mesh(dir.file("quad.ply"), false, Loader::kNative);
  ASSERT_EQ(r.mesh.num_triangles(), 5u);
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.indices.begin(), r.mesh.indices.begin() + 9),
            (std::vector<uint32_t>{0, 1, 2, 1, 2, 4, 4, 3, 0}));
  // "3 0 1" is short: the face is dropped, and "3 1 2 4" stays a face of its own.
  std::ofstream(dir.file("short.ply"), std::ios::binary) << head << verts << "3 0 1\n3 1 2 4\n3 4 3 0\n3 0 1 2\n";
  r = load_mesh(dir.file("short.ply"), false, Loader::kNative);
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.indices.begin(), r.mesh.indices.end()),
            (std::vector<uint32_t>{1, 2, 4, 4, 3, 0, 0, 1, 2}));
  // A short vertex line is an error, not a vertex made of the next line's numbers.
  std::ofstream(dir.file("shortv.ply"), std::ios::binary) << head << "0 0\n1 0 0\n1 1 0\n0 1 0\n0 0 1\n5 5 5\n3 0 1 2\n3 0 1 2\n3 0 1 2\n3 0 1 2\n";
  EXPECT_THROW(load_mesh(dir.file("shortv.ply"), false, Loader::kNative), Error);
}

// Faces with more lists than their indices (MeshLab writes a per-face texcoord list), before or after
// the indices, binary and ASCII: the same triangles as Assimp reads.
TEST(NativeLoader, PlyFacesWithOtherLists) {
  test::TempDir dir;
  auto put = [](std::string& b, auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const bool texcoord_first : {false, true}) {
    const std::string tc = "property list uchar float texcoord\n", vi = "property list uchar int vertex_indices\n";
    std::string bin =
        "ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
        "property float z\nelement face 3\nproperty uchar flags\n" +
        (texcoord_first ? tc + vi : vi + tc) + "end_header\n";
    std::string ascii =
        "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
        "element face 3\nproperty uchar flags\n" +
        (texcoord_first ? tc + vi : vi + tc) +
        "end_header\n"
        "0 0 0\n1 0 0\n0 1 0\n1 1 1\n";
    for (const float v : {0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f, 1.f, 1.f, 1.f}) put(bin, v);
    const std::vector<std::vector<int32_t>> faces = {{0, 1, 2}, {1, 3, 2}, {0, 1, 3, 2}};
    for (const auto& face : faces) {
      std::string idx_bin, tc_bin, idx_txt = std::to_string(face.size()), tc_txt = std::to_string(2 * face.size());
      put(idx_bin, uint8_t(face.size()));
      put(tc_bin, uint8_t(2 * face.size()));
      for (const int32_t i : face) {
        put(idx_bin, i);
        put(tc_bin, 0.5f);
        put(tc_bin, 0.25f);
        idx_txt += " " + std::to_string(i);
        tc_txt += " 0.5 0.25";
      }
      bin += std::string(1, '\x07') + (texcoord_first ? tc_bin + idx_bin : idx_bin + tc_bin);
      ascii += "7 " + (texcoord_first ? tc_txt + " " + idx_txt : idx_txt + " " + tc_txt) + "\n";
    }
    for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"b.ply", bin}, {"a.ply", ascii}}) {
      SCOPED_TRACE(name + (texcoord_first ? " texcoord first" : " indices first"));
      std::ofstream(dir.file(name), std::ios::binary) << bytes;
      const MeshLoadResult native = load_mesh(dir.file(name), false, Loader::kNative);
      const MeshLoadResult assimp = load_mesh(dir.file(name), false, Loader::kAssimp);
      EXPECT_EQ(native.mesh.num_triangles(), 4u);
      expect_same_triangles(native.mesh, assimp.mesh, 0, name);
    }
  }
}

// A ZIP archive of stored entries (a 3MF package), with their CRC-32s.
std::string zip_stored(const std::vector<std::pair<std::string, std::string>>& entries) {
  auto crc32 = [](const std::string& s) {
    uint32_t c = 0xFFFFFFFFu;
    for (const unsigned char b : s) {
      c ^= b;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
  };
  auto put16 = [](std::string& s, uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); };
  auto put32 = [](std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  std::string zip, cd;
  for (const auto& [name, data] : entries) {
    const uint32_t offset = uint32_t(zip.size()), crc = crc32(data);
    for (std::string* s : {&zip, &cd}) {
      const bool central = s == &cd;
      put32(*s, central ? 0x02014b50 : 0x04034b50);
      if (central) put16(*s, 20);
      put16(*s, 20);
      put16(*s, 0);
      put16(*s, 0);  // stored
      put32(*s, 0);
      put32(*s, crc);
      put32(*s, uint32_t(data.size()));
      put32(*s, uint32_t(data.size()));
      put16(*s, uint16_t(name.size()));
      put16(*s, 0);
      if (central) {
        put16(*s, 0);
        put16(*s, 0);
        put16(*s, 0);
        put32(*s, 0);
        put32(*s, offset);
      }
      *s += name;
      if (!central) *s += data;
    }
  }
  const uint32_t cd_at = uint32_t(zip.size());
  zip += cd;
  put32(zip, 0x06054b50);
  put32(zip, 0);
  put16(zip, uint16_t(entries.size()));
  put16(zip, uint16_t(entries.size()));
  put32(zip, uint32_t(cd.size()));
  put32(zip, cd_at);
  put16(zip, 0);
  return zip;
}

// 3MF beam lattices (the beam lattice extension): a cube's twelve edges as beams of the lattice's
// radius with sphere caps, a tapered beam from one corner to the opposite one with a flat and a
// half-sphere end, a ball at that corner (ballmode mixed), a beam shorter than minlength (left out,
// with a warning), one with a vertex past the list (dropped as a bad index), clipping (a warning: not
// applied), placed by a build item's transform; and an object given by a slice stack (a warning). The
// surfaces are closed and wound outwards (every directed edge has its reverse, once), their volume is
// that of the capped cylinders, the cone frustum and the balls within the tessellation's 1/4096 of the
// object's size, and their box is the lattice's.
TEST(NativeLoader, ThreeMfBeamLattices) {
  test::TempDir dir;
  const std::string rels =
      R"(<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">)"
      R"(<Relationship Target="/3D/3dmodel.model" Id="r" Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/></Relationships>)";
  std::string vertices;
  for (int k = 0; k < 8; ++k)
    vertices += "<vertex x=\"" + std::to_string(10 * (k & 1)) + "\" y=\"" + std::to_string(10 * ((k >> 1) & 1)) +
                "\" z=\"" + std::to_string(10 * (k >> 2)) + "\"/>";
  vertices += R"(<vertex x="0.1" y="0" z="0"/>)";  // 8: 0.1 from vertex 0
  std::string beams;
  for (int a = 0; a < 8; ++a)
    for (int bit = 1; bit < 8; bit <<= 1)
      if (!(a & bit)) beams += "<b:beam v1=\"" + std::to_string(a) + "\" v2=\"" + std::to_string(a | bit) + "\"/>";
  beams += R"(<b:beam v1="0" v2="7" r1="1.5" r2="0.5" cap1="butt" cap2="hemisphere"/>)";
  beams += R"(<b:beam v1="0" v2="8"/><b:beam v1="1" v2="99"/>)";
  const std::string model = R"(<?xml version="1.0" encoding="UTF-8"?>
<model unit="millimeter" xmlns="http://schemas.microsoft.com/3dmanufacturing/core/2015/02"
       xmlns:b="http://schemas.microsoft.com/3dmanufacturing/beamlattice/2017/02"
       xmlns:s="http://schemas.microsoft.com/3dmanufacturing/slice/2015/07">
 <resources>
  <object id="1" type="model"><mesh><vertices>)" +
                            vertices + R"(</vertices><triangles/>
   <b:beamlattice radius="1" minlength="0.5" cap="sphere" ballmode="mixed" ballradius="3" clippingmode="inside" clippingmesh="2">
    <b:beams>)" + beams + R"(</b:beams><b:balls><b:ball vindex="7" r="2.5"/></b:balls>
    <b:beamsets><b:beamset name="edges"><b:ref index="0"/></b:beamset></b:beamsets>
   </b:beamlattice></mesh></object>
  <object id="3" type="model" s:slicestackid="5"/>
 </resources>
 <build><item objectid="1" transform="1 0 0 0 1 0 0 0 1 100 0 0"/><item objectid="3"/></build>
</model>)";
  std::ofstream(dir.file("lattice.3mf"), std::ios::binary)
      << zip_stored({{"_rels/.rels", rels}, {"3D/3dmodel.model", model}});
  const MeshLoadResult r = load_mesh(dir.file("lattice.3mf"), false, Loader::kNative);
  const Mesh& m = r.mesh;
  EXPECT_EQ(r.dropped_bad_index, 1u);
  EXPECT_EQ(m.dropped_degenerate, 0u);
  auto warned = [&](const std::string& part) {
    return std::any_of(r.warnings.begin(), r.warnings.end(),
                       [&](const std::string& w) { return w.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(warned("shorter than the lattice's minlength"));
  EXPECT_TRUE(warned("clippingmode inside"));
  EXPECT_TRUE(warned("slice stack"));
  // Closed and wound outwards.
  ASSERT_NO_FATAL_FAILURE(test::expect_closed_manifold(m, "lattice"));
  const double volume = test::signed_volume(m);
  double lo[3] = {1e30, 1e30, 1e30}, hi[3] = {-1e30, -1e30, -1e30};
  for (size_t t = 0; t < m.num_triangles(); ++t) {
    const Vec3f a = m.vertex(t, 0), b = m.vertex(t, 1), c = m.vertex(t, 2);
    for (const Vec3f& p : {a, b, c}) {
      const float v[3] = {p.x, p.y, p.z};
      for (int k = 0; k < 3; ++k) {
        lo[k] = std::min(lo[k], double(v[k]));
        hi[k] = std::max(hi[k], double(v[k]));
      }
    }
  }
  const double pi = 3.14159265358979323846, diagonal = std::sqrt(300.0);
  const double edge_beam = pi * 10 + 4.0 / 3.0 * pi;  // a cylinder of radius 1 and two half spheres
  const double taper = pi * diagonal * (1.5 * 1.5 + 1.5 * 0.5 + 0.5 * 0.5) / 3 + 2.0 / 3.0 * pi * 0.125;
  const double want = 12 * edge_beam + taper + 4.0 / 3.0 * pi * 2.5 * 2.5 * 2.5;
  EXPECT_GT(volume, 0.99 * want);
  EXPECT_LT(volume, want);
  // The box: the ball at the far corner (radius 2.5), the tapered beam's flat end of radius 1.5 across
  // the diagonal at the near one (1.5 sqrt(2/3) along each axis, its polygon within the tolerance).
  const double near = 1.5 * std::sqrt(2.0 / 3.0);
  const double want_lo[3] = {100 - near, -near, -near}, want_hi[3] = {112.5, 12.5, 12.5};  // (moved by 100 along x)
  for (int k = 0; k < 3; ++k) {
    EXPECT_LE(lo[k], want_lo[k] + 10.0 / 4096) << k;
    EXPECT_GE(lo[k], want_lo[k] - 1e-4) << k;  // (float rounding at 100)
    EXPECT_NEAR(hi[k], want_hi[k], 1e-4) << k;
  }
  // Bad lattice attributes are one-line errors naming the file.
  std::string no_radius = model;
  no_radius.replace(no_radius.find(R"(radius="1")"), 10, R"(radius="-1")");
  std::ofstream(dir.file("bad.3mf"), std::ios::binary)
      << zip_stored({{"_rels/.rels", rels}, {"3D/3dmodel.model", no_radius}});
  try {
    load_mesh(dir.file("bad.3mf"), false, Loader::kNative);
    ADD_FAILURE() << "a negative radius was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.3mf: a <beamlattice> whose radius is not a positive number"),
              std::string::npos)
        << e.what();
  }
}

// 3MF colour groups (the materials extension) as materials beside base materials and as vertex
// colours: an object's default colour, a triangle's own (p1) and its corners' (p2, p3: a gradient),
// colours with alpha, an index out of range and a texture group (no material; the texture group
// with a warning), a vertex given two colours (its first triangle's, with a warning), a beam lattice
// in a colour; points sampled from it take those colours.
TEST(NativeLoader, ThreeMfColourGroups) {
  test::TempDir dir;
  const std::string rels =
      R"(<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">)"
      R"(<Relationship Target="/3D/3dmodel.model" Id="r" Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/></Relationships>)";
  const std::string verts = R"(<vertices><vertex x="0" y="0" z="0"/><vertex x="1" y="0" z="0"/>
   <vertex x="0" y="1" z="0"/><vertex x="0" y="0" z="1"/></vertices>)";
  const std::string model = R"(<?xml version="1.0" encoding="UTF-8"?>
<model unit="millimeter" xmlns="http://schemas.microsoft.com/3dmanufacturing/core/2015/02"
       xmlns:m="http://schemas.microsoft.com/3dmanufacturing/material/2015/02"
       xmlns:b="http://schemas.microsoft.com/3dmanufacturing/beamlattice/2017/02">
 <resources>
  <basematerials id="1"><base name="grey" displaycolor="#808080"/></basematerials>
  <m:colorgroup id="2"><m:color color="#FF0000FF"/><m:color color="#00FF00"/><m:color color="#0000FF80"/></m:colorgroup>
  <m:texture2dgroup id="4" texid="9"><m:tex2coord u="0" v="0"/></m:texture2dgroup>
  <object id="3" type="model" pid="2" pindex="1"><mesh>)" +
                            verts + R"(
   <triangles><triangle v1="0" v2="2" v3="1"/><triangle v1="0" v2="3" v3="2" pid="2" p1="2" p2="0" p3="1"/>
    <triangle v1="1" v2="2" v3="3" pid="1" p1="0"/><triangle v1="0" v2="1" v3="3" pid="2" p1="7"/>
    <triangle v1="1" v2="3" v3="2" pid="4" p1="0"/></triangles>
  </mesh></object>
  <object id="5" type="model"><mesh>)" +
                            verts + R"(
   <triangles><triangle v1="0" v2="1" v3="2" pid="2" p1="0" p2="1" p3="2"/>
    <triangle v1="0" v2="2" v3="3" pid="2" p1="0" p2="2" p3="1"/></triangles>
  </mesh></object>
  <object id="6" type="model"><mesh><vertices><vertex x="0" y="0" z="9"/><vertex x="3" y="0" z="9"/></vertices>
   <triangles/><b:beamlattice radius="0.5" minlength="0.01" cap="sphere" pid="2" pindex="2">
    <b:beams><b:beam v1="0" v2="1"/></b:beams></b:beamlattice></mesh></object>
 </resources>
 <build><item objectid="3"/><item objectid="5" transform="1 0 0 0 1 0 0 0 1 5 0 0"/><item objectid="6"/></build>
</model>)";
  std::ofstream(dir.file("c.3mf"), std::ios::binary)
      << zip_stored({{"_rels/.rels", rels}, {"3D/3dmodel.model", model}});
  const MeshLoadResult r = load_mesh(dir.file("c.3mf"), false, Loader::kNative);
  const size_t lattice = r.mesh.num_triangles() - 7;  // (object 6: a beam, blue)
  ASSERT_GT(lattice, 0u);
  // Colours in file order: grey, red, green, blue (materials 1-4; 0: none, also for the texture
  // group); a triangle's material is its first corner's colour.
  std::vector<uint32_t> materials = {3, 4, 1, 0, 0, 2, 2};
  materials.resize(7 + lattice, 4);
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.material_ids.begin(), r.mesh.material_ids.end()), materials);
  EXPECT_EQ(r.mesh.material_colors, (std::vector<uint32_t>{0xC8C8C8, 0x808080, 0xFF0000, 0x00FF00, 0x0000FF}));
  EXPECT_EQ(r.mesh.num_materials, 5u);
  // Vertex colours: object 3's from its first triangle (green) but vertex 3 (red, from the second);
  // object 5's as its corners name them, consistently.
  // Object 6's two vertices are no triangle's (grey); its lattice's take the lattice's colour.
  ASSERT_EQ(r.mesh.colors.size(), r.mesh.positions.size());
  std::vector<uint32_t> colours = {0x00FF00, 0x00FF00, 0x00FF00, 0xFF0000, 0xFF0000,
                                   0x00FF00, 0x0000FF, 0x00FF00, 0xC8C8C8, 0xC8C8C8};
  colours.resize(r.mesh.positions.size(), 0x0000FF);
  EXPECT_EQ(r.mesh.colors, colours);
  // What is not read as written is said: object 3's vertices given two colours, the texture group.
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("take their first triangle's colour"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("texture, composite-material or multi-property group"), std::string::npos)
      << r.warnings[1];
  // Samples: on object 3's first triangle green; on object 5's first between red, green and blue
  // (the corners' gradient), each channel's share its barycentric weight.
  const PointCloud pc = sample_mesh(r.mesh, 2000);
  ASSERT_EQ(pc.colors.size(), pc.ids.size());
  int first = 0, gradient = 0;
  for (size_t i = 0; i < pc.ids.size(); ++i) {
    const Rgb8& c = pc.colors[i];
    if (pc.ids[i] == 0) {
      ++first;
      EXPECT_TRUE(c.r == 0 && c.g == 255 && c.b == 0) << i;
    } else if (pc.ids[i] == 5) {
      ++gradient;
      EXPECT_NEAR(int(c.r) + int(c.g) + int(c.b), 255, 2) << i;
    }
  }
  EXPECT_GT(first, 0);
  EXPECT_GT(gradient, 0);
}

// 3MF: build items and components with their transforms (3MF multiplies row vectors), an object in
// another model part (p:path), base material colours per triangle and per object, an index out of
// range dropped, and damaged packages refused with one line naming the file; the writer's packages
// read back bit for bit.
TEST(NativeLoader, ThreeMfPackages) {
  test::TempDir dir;
  const std::string rels =
      R"(<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">)"
      R"(<Relationship Target="/3D/main.model" Id="r" Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/></Relationships>)";
  const std::string tri = R"(<mesh><vertices><vertex x="0" y="0" z="0"/><vertex x="1" y="0" z="0"/>
      <vertex x="0" y="1" z="0"/></vertices><triangles><triangle v1="0" v2="1" v3="2"/>
      <triangle v1="0" v2="1" v3="7"/><triangle v1="2" v2="1" v3="0" pid="5" p1="1"/></triangles></mesh>)";
  const std::string main = R"(<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment <with a tag> -->
<model unit="millimeter" xmlns="http://schemas.microsoft.com/3dmanufacturing/core/2015/02"
       xmlns:p="http://schemas.microsoft.com/3dmanufacturing/production/2015/06">
 <resources>
  <basematerials id="5"><base name="red" displaycolor="#FF0000"/><base name="blue" displaycolor="#0000FFFF"/></basematerials>
  <object id="1" type="model" pid="5" pindex="0">)" +
                           tri + R"(</object>
  <object id="2" type="model"><components>
    <component objectid="1" transform="1 0 0 0 1 0 0 0 1 10 0 0"/>
    <component objectid="9" p:path="/3D/other.model" transform="0 1 0 -1 0 0 0 0 1 0 0 0"/>
  </components></object>
 </resources>
 <build><item objectid="2" transform="2 0 0 0 2 0 0 0 2 0 0 5"/><item objectid="1"/></build>
</model>)";
  const std::string other =
      R"(<?xml version="1.0"?><model xmlns="http://schemas.microsoft.com/3dmanufacturing/core/2015/02">
 <resources><object id="9">)" +
      tri + R"(</object></resources><build/></model>)";
  std::ofstream(dir.file("a.3mf"), std::ios::binary)
      << zip_stored({{"_rels/.rels", rels}, {"3D/main.model", main}, {"3D/other.model", other}});
  const MeshLoadResult r = load_mesh(dir.file("a.3mf"), false, Loader::kNative);
  EXPECT_EQ(r.format, "3MF (native)");
  // Object 2 (object 1 moved by 10 along x, object 9 turned a quarter about z), scaled by 2 and moved
  // by 5 along z; then object 1 as it is. Two triangles of each placement (one has a bad index).
  ASSERT_EQ(r.mesh.num_triangles(), 6u);
  EXPECT_EQ(r.dropped_bad_index, 3u);
  const std::vector<std::array<float, 3>> corner1 = {{22, 0, 5}, {22, 0, 5}, {0, 2, 5},
                                                     {0, 2, 5},  {1, 0, 0},  {1, 0, 0}};
  for (size_t t = 0; t < 6; ++t) {
    const Vec3f p = r.mesh.vertex(t, t % 2 ? 1 : 1);  // corner v2 = vertex 1 in both triangles
    EXPECT_EQ(p.x, corner1[t][0]) << t;
    EXPECT_EQ(p.y, corner1[t][1]) << t;
    EXPECT_EQ(p.z, corner1[t][2]) << t;
  }
  // Materials: 0 none, 1 red, 2 blue; object 1's default is red, its third triangle blue; object 9 none.
  EXPECT_EQ(std::vector<uint32_t>(r.mesh.material_ids.begin(), r.mesh.material_ids.end()),
            (std::vector<uint32_t>{1, 2, 0, 0, 1, 2}));
  EXPECT_EQ(r.mesh.material_colors, (std::vector<uint32_t>{0xC8C8C8, 0xFF0000, 0x0000FF}));
  EXPECT_EQ(r.mesh.num_source_meshes, 2u);
  // The writer's package (deflated, with a data descriptor) reads back exactly, natively and by Assimp.
  Mesh sphere;
  for (int i = 0; i <= 20; ++i)
    for (int j = 0; j <= 20; ++j)
      sphere.positions.push_back(
          {std::cos(i * 0.3f) * std::sin(j * 0.15f), std::sin(i * 0.3f) * std::sin(j * 0.15f), std::cos(j * 0.15f)});
  for (uint32_t i = 0; i < 20; ++i)
    for (uint32_t j = 0; j < 20; ++j)
      for (const uint32_t v : {i * 21 + j, i * 21 + j + 1, (i + 1) * 21 + j + 1}) sphere.indices.push_back(v);
  write_mesh(sphere, dir.file("s.3mf"));
  const MeshLoadResult back = load_mesh(dir.file("s.3mf"), false, Loader::kNative);
  ASSERT_EQ(back.mesh.num_triangles() + back.mesh.dropped_degenerate, 400u);
  EXPECT_EQ(load_mesh(dir.file("s.3mf"), false, Loader::kAssimp).mesh.num_triangles(), back.mesh.num_triangles());
  for (size_t v = 0; v < sphere.positions.size(); ++v) {  // (placing by the identity turns -0 into 0)
    ASSERT_EQ(back.mesh.positions[v].x, sphere.positions[v].x) << v;
    ASSERT_EQ(back.mesh.positions[v].y, sphere.positions[v].y) << v;
    ASSERT_EQ(back.mesh.positions[v].z, sphere.positions[v].z) << v;
  }
  // Damaged packages.
  const std::string good = zip_stored({{"_rels/.rels", rels}, {"3D/main.model", main}, {"3D/other.model", other}});
  std::string bad_crc = good;
  bad_crc[good.find("<basematerials") + 3] = 'X';
  const std::vector<std::pair<std::string, std::string>> broken = {
      {good.substr(0, good.size() - 30), "not a readable 3MF package"},
      {bad_crc, "CRC-32 does not match"},
      {zip_stored({{"_rels/.rels", rels}}), "no model part '/3D/main.model'"},
      {zip_stored({{"_rels/.rels", rels}, {"3D/main.model", "<model><build><item objectid=\"4\"/></build></model>"}}),
       "names object 4, which the model does not define"},
      {zip_stored({{"_rels/.rels", rels},
                   {"3D/main.model", "<model><build><item objectid=\"4\" transform=\"1 2\"/></build></model>"}}),
       "a transform that is not 12 numbers"},
      {zip_stored({{"_rels/.rels", rels},
                   {"3D/main.model",
                    "<model><resources><object id=\"1\"><components><component objectid=\"1\"/></components>"
                    "</object></resources><build><item objectid=\"1\"/></build></model>"}}),
       "nested more than 32 deep"},
      {zip_stored({{"_rels/.rels", rels},
                   {"3D/main.model", "<model><resources><object id=\"1\"><mesh><vertices><vertex x=\"0\"/>"}}),
       "never closed"},
      {"PK not a zip at all", "not a readable 3MF package"}};
  // The model text mutated (with valid CRCs, so that the XML itself is read): loads or fails cleanly.
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int round = 0; round < 300; ++round) {
    std::string text = main;
    for (int k = 0; k < 1 + round % 4; ++k) {
      const size_t at = next() % text.size();
      switch (next() % 3) {
        case 0:
          text[at] = "<>/=\"' x0#"[next() % 11];
          break;
        case 1:
          text.erase(at, 1 + next() % 8);
          break;
        default:
          text.resize(at);
          break;
      }
    }
    std::ofstream(dir.file("m.3mf"), std::ios::binary)
        << zip_stored({{"_rels/.rels", rels}, {"3D/main.model", text}, {"3D/other.model", other}});
    try {
      load_mesh(dir.file("m.3mf"));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput) << e.what();
    }
  }
  for (size_t i = 0; i < broken.size(); ++i) {
    const std::string f = dir.file("broken" + std::to_string(i) + ".3mf");
    std::ofstream(f, std::ios::binary) << broken[i].first;
    try {
      load_mesh(f);
      ADD_FAILURE() << f << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(f + ": ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(broken[i].second), std::string::npos) << e.what();
    }
  }
}

// Text in another encoding than ASCII/UTF-8 without a mark (io/files.h plain_text): `ascii` with a
// UTF-8 byte-order mark, or as UTF-16 or UTF-32 in either byte order with its mark.
// kMacLines: lines ended by '\r' alone (classic Mac OS).
enum class Enc { kUtf8Mark, kUtf16Le, kUtf16Be, kUtf32Le, kUtf32Be, kMacLines };
std::string encode(const std::string& ascii, Enc enc) {
  if (enc == Enc::kUtf8Mark) return "\xEF\xBB\xBF" + ascii;
  if (enc == Enc::kMacLines) {
    std::string out;
    for (size_t i = 0; i < ascii.size(); ++i)
      if (ascii[i] == '\n') out += '\r';
      else if (!(ascii[i] == '\r' && i + 1 < ascii.size() && ascii[i + 1] == '\n')) out += ascii[i];
    return out;
  }
  const int unit = enc == Enc::kUtf16Le || enc == Enc::kUtf16Be ? 2 : 4;
  const bool big = enc == Enc::kUtf16Be || enc == Enc::kUtf32Be;
  std::string out;
  auto put = [&](uint32_t c) {
    for (int k = 0; k < unit; ++k) out += char((c >> (8 * (big ? unit - 1 - k : k))) & 0xFF);
  };
  put(0xFEFF);
  for (const char c : ascii) put(static_cast<unsigned char>(c));
  return out;
}

TEST(NativeLoader, PlainTextOfMarkedTextAndMacLines) {
  std::string storage;
  auto text = [&](const std::string& bytes) {
    return std::string(plain_text("t.obj", bytes.data(), bytes.size(), storage));
  };
  EXPECT_EQ(text("v 1 2 3\n"), "v 1 2 3\n");
  EXPECT_EQ(text("\xEF\xBB\xBFv 1"), "v 1");
  EXPECT_EQ(text(""), "");
  // UTF-16 LE: 'A', U+1F600 as a surrogate pair, an unpaired high surrogate, 'B', U+00E9.
  EXPECT_EQ(text(std::string("\xFF\xFE" "A\0" "\x3D\xD8\x00\xDE" "\x3D\xD8" "B\0" "\xE9\0", 14)),
            "A\xF0\x9F\x98\x80\xEF\xBF\xBD" "B\xC3\xA9");
  // UTF-16 BE: U+20AC, an unpaired low surrogate.
  EXPECT_EQ(text(std::string("\xFE\xFF\x20\xAC\xDC\x00", 6)), "\xE2\x82\xAC\xEF\xBF\xBD");
  // UTF-32 BE and LE: U+00E9, then a value beyond U+10FFFF.
  EXPECT_EQ(text(std::string("\0\0\xFE\xFF\0\0\0\xE9\0\x11\0\0", 12)), "\xC3\xA9\xEF\xBF\xBD");
  EXPECT_EQ(text(std::string("\xFF\xFE\0\0" "z\0\0\0", 8)), "z");
  EXPECT_EQ(byte_order_mark("\xEF\xBB", 2), 0u);
  // Lines ended by '\r' alone end in '\n'; '\r' before or among '\n' (CRLF, stray) is left alone.
  EXPECT_EQ(text("v 1\rv 2\r"), "v 1\nv 2\n");
  EXPECT_EQ(text("\xEF\xBB\xBFv 1\rv 2"), "v 1\nv 2");
  EXPECT_EQ(text(std::string("\xFF\xFE" "a\0\r\0" "b\0", 8)), "a\nb");
  EXPECT_EQ(text("v 1\r\nv 2\r\n"), "v 1\r\nv 2\r\n");
  EXPECT_EQ(text(std::string("a\0b\rc", 5)), std::string("a\0b\rc", 5));  // binary (a NUL): left alone
  EXPECT_EQ(text(std::string(70000, ' ') + "\r\n\r"), std::string(70000, ' ') + "\r\n\r");
  for (const std::string& cut : {std::string("\xFF\xFE" "A", 3), std::string("\0\0\xFE\xFF\0\0", 6)}) {
    try {
      text(cut);
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      EXPECT_EQ(std::string(e.what()).rfind("t.obj: UTF-", 0), 0u) << e.what();
    }
  }
}

// Windows editors save text with a byte-order mark, some tools write UTF-16, and classic Mac OS
// ended lines with '\r': such files load exactly as their plain copies, in every reader (a vertex
// line right after a mark was once skipped, shifting every OBJ index after it; '\r' lines made one
// line of the whole file). PLY headers are ASCII: a UTF-8 mark is skipped (binary PLY
// too), UTF-16 is an input error that says so; a binary STL whose header begins with mark-like bytes
// stays binary.
TEST(NativeLoader, TextWithAByteOrderMarkLoadsAsItsPlainCopy) {
  test::TempDir dir;
  const std::vector<Enc> all = {Enc::kUtf8Mark, Enc::kUtf16Le, Enc::kUtf16Be, Enc::kUtf32Le, Enc::kUtf32Be,
                                Enc::kMacLines};
  struct Case {
    std::string file;
    std::vector<Enc> encodings;
  };
  std::ofstream(dir.file("plain.obj")) << "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 0 1\nf 2 3 4\nf 1 2 5\n";
  const std::vector<Case> cases = {
      {dir.file("plain.obj"), all},
      {test::data_path("formats/obj/spider.obj"), {Enc::kUtf8Mark, Enc::kUtf16Le, Enc::kMacLines}},
      {test::data_path("formats/stl/Spider_ascii.stl"), all},
      {test::data_path("formats/ply/cube_ascii_float32_types.ply"), {Enc::kUtf8Mark}},
      {test::data_path("formats/gltf/BoxTextured-Embedded.gltf"), {Enc::kUtf8Mark, Enc::kUtf16Le}},
      {test::data_path("formats/off/Wuson.off"), all},
  };
  for (const Case& c : cases) {
    const MeshLoadResult plain = load_mesh(c.file);
    const std::string bytes = read_input_file(c.file), ext = c.file.substr(c.file.rfind('.'));
    for (const Enc enc : c.encodings) {
      SCOPED_TRACE(c.file + " encoding " + std::to_string(int(enc)));
      const std::string name = dir.file("marked" + ext);
      std::ofstream(name, std::ios::binary) << encode(bytes, enc);
      if (ext == ".obj") {  // its material library marked the same way
        const std::string mtl = test::data_path("formats/obj/spider.mtl");
        std::ofstream(dir.file("spider.mtl"), std::ios::binary) << encode(read_input_file(mtl), enc);
      }
      const MeshLoadResult r = load_mesh(name);
      EXPECT_EQ(r.format, plain.format);
      expect_same_triangles(r.mesh, plain.mesh, 0, name);
      EXPECT_EQ(std::vector<uint32_t>(r.mesh.indices.begin(), r.mesh.indices.end()),
                std::vector<uint32_t>(plain.mesh.indices.begin(), plain.mesh.indices.end()));
      EXPECT_EQ(r.mesh.material_colors, plain.mesh.material_colors);
      EXPECT_EQ(r.warnings.size(), plain.warnings.size());
    }
  }
  // Assimp is handed marked text as UTF-8 (OFF read by Assimp).
  const std::string cube = test::data_path("formats/off/Cube.off");
  const MeshLoadResult cube_plain = load_mesh(cube, false, Loader::kAssimp);
  for (const Enc enc : {Enc::kUtf8Mark, Enc::kUtf16Be}) {
    std::ofstream(dir.file("marked_cube.off"), std::ios::binary) << encode(read_input_file(cube), enc);
    const MeshLoadResult r = load_mesh(dir.file("marked_cube.off"), false, Loader::kAssimp);
    EXPECT_EQ(r.format, cube_plain.format);
    expect_same_triangles(r.mesh, cube_plain.mesh, 0, "OFF read by Assimp, encoding " + std::to_string(int(enc)));
  }
  // The one UTF-16 sample among the edge cases (a box, big-endian).
  EXPECT_EQ(load_mesh(test::data_path("edge/box_UTF16BE.obj")).mesh.num_triangles(), 12u);
  // Binary PLY with a UTF-8 mark before "ply".
  const std::string bin = test::data_path("formats/ply/cube_binary.ply");
  std::ofstream(dir.file("bin.ply"), std::ios::binary) << encode(read_input_file(bin), Enc::kUtf8Mark);
  expect_same_triangles(load_mesh(dir.file("bin.ply")).mesh, load_mesh(bin).mesh, 0, "binary PLY");
  // UTF-16 PLY: named, not "not a PLY file".
  const std::string ply16 = dir.file("u16.ply");
  std::ofstream(ply16, std::ios::binary)
      << encode(read_input_file(test::data_path("formats/ply/cube_ascii_float32_types.ply")), Enc::kUtf16Le);
  for (const Loader loader : {Loader::kNative, Loader::kAssimp}) {
    try {
      load_mesh(ply16, false, loader);
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      EXPECT_EQ(std::string(e.what()),
                ply16 + ": UTF-16 or UTF-32 text; a PLY header is ASCII (save it as ASCII or UTF-8)");
    }
  }
  // Binary STL headers that begin like marks (UTF-16's, and UTF-8's before "solid") stay binary.
  const std::string stl = test::data_path("formats/stl/Spider_binary.stl");
  const MeshLoadResult stl_plain = load_mesh(stl);
  for (const std::string& head : {std::string("\xFF\xFE\0\0binary", 10), std::string("\xEF\xBB\xBFsolid binary")}) {
    std::string b = read_input_file(stl);
    b.replace(0, head.size(), head);
    std::ofstream(dir.file("head.stl"), std::ios::binary) << b;
    const MeshLoadResult r = load_mesh(dir.file("head.stl"));
    EXPECT_EQ(r.format, stl_plain.format);
    expect_same_triangles(r.mesh, stl_plain.mesh, 0, "binary STL, header " + head);
  }
  // UTF-16 cut inside a character: an input error naming the file.
  std::ofstream(dir.file("cut.obj"), std::ios::binary) << encode("v 0 0 0\n", Enc::kUtf16Le) << 'v';
  try {
    load_mesh(dir.file("cut.obj"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_EQ(std::string(e.what()).rfind(dir.file("cut.obj") + ": UTF-16 text that ends inside a character", 0), 0u)
        << e.what();
  }
}

TEST(NativeLoader, LoaderChoice) {
  EXPECT_EQ(parse_loader("native"), Loader::kNative);
  EXPECT_THROW(parse_loader("fast"), Error);
  EXPECT_TRUE(native_format("a/B.PLY"));
  EXPECT_TRUE(native_format("a.glb"));
  EXPECT_FALSE(native_format("a.fbx"));
  EXPECT_TRUE(native_format("a.OFF"));
  try {
    load_mesh(test::data_path("formats/dae/duck.dae"), false, Loader::kNative);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
  EXPECT_NE(load_mesh(test::data_path("formats/stl/sphereWithHole.stl")).format.find("native"), std::string::npos);
  EXPECT_EQ(load_mesh(test::data_path("formats/stl/sphereWithHole.stl"), false, Loader::kAssimp).format.find("native"),
            std::string::npos);
  // With textures wanted (voxtile points), auto still reads natively and decodes the textures.
  const MeshLoadResult textured = load_mesh(test::data_path("formats/obj/spider.obj"), true);
  EXPECT_NE(textured.format.find("native"), std::string::npos) << textured.format;
  test::TempDir dir;
  std::ofstream(dir.file("m.mtl")) << "newmtl red\nKd 1 0 0\n";
  std::ofstream(dir.file("a.obj")) << "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl red\nf 1 2 3\nf 1 2 9\n";
  const MeshLoadResult plain = load_mesh(dir.file("a.obj"), true);
  EXPECT_NE(plain.format.find("native"), std::string::npos) << plain.format;
  EXPECT_EQ(plain.mesh.num_triangles(), 1u);  // (Assimp refuses the file: a face index out of range)
  ASSERT_EQ(plain.mesh.material_colors.size(), 2u);
  EXPECT_EQ(plain.mesh.material_colors[1], 0xFF0000u);
}

}  // namespace
}  // namespace voxtile

namespace voxtile {
namespace {

// An Assimp import that outlasts the wall-clock limit is stopped: an input error naming the file,
// and the pool's next file still loads.
TEST(NativeLoader, AssimpImportsHaveAWallClockLimit) {
  // An OFF file read by Assimp, of 180k triangles: Assimp takes tens of milliseconds on it, far
  // beyond the 1 ms limit and the poll's 1 ms granularity (a small glTF once loaded within it).
  test::TempDir dir;
  const std::string off = dir.file("grid.off");
  {
    constexpr int kN = 300;
    std::ofstream f(off);
    f << "OFF\n" << (kN + 1) * (kN + 1) << " " << 2 * kN * kN << " 0\n";
    for (int j = 0; j <= kN; ++j)
      for (int i = 0; i <= kN; ++i) f << i << " " << j << " " << ((i * 7 + j * 3) % 5) << "\n";
    for (int j = 0; j < kN; ++j)
      for (int i = 0; i < kN; ++i) {
        const int v = j * (kN + 1) + i;
        f << "3 " << v << " " << v + 1 << " " << v + kN + 2 << "\n3 " << v << " " << v + kN + 2 << " " << v + kN + 1 << "\n";
      }
  }
  LoaderLimits limits;
  limits.timeout_s = 0.001;
  MeshLoaderPool pool(1, limits);
  try {
    pool.load(off, false, Loader::kAssimp);
    ADD_FAILURE() << "loaded within 1 ms";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_NE(std::string(e.what()).find("load timeout"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pool.load(test::data_path("formats/ply/cube_binary.ply")).mesh.num_triangles(), 12u);  // native
}

}  // namespace
}  // namespace voxtile
