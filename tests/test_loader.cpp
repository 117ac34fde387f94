// Mesh input: every format Assimp reads that we ship a sample of, node transforms, and broken files.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/meshgen.h"
#include "io/files.h"
#include "io/mesh_reader.h"
#include "io/png.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

struct Sample {
  const char* path;
  size_t triangles;
  size_t dropped_degenerate;
};

// Counts after triangulation and removal of zero-area triangles (Assimp 5.2, Debian 12).
const Sample kSamples[] = {
    {"meshes/stanford_bunny.ply", 69451, 0},
    {"formats/gltf/Duck.glb", 4212, 0},
    {"formats/gltf/BoxTextured/BoxTextured.gltf", 12, 0},
    {"formats/gltf/BoxTextured-Embedded.gltf", 12, 0},
    {"formats/gltf/Lantern-Draco/Lantern.gltf", 5220, 174},
    {"formats/stl/Spider_binary.stl", 1312, 56},
    {"formats/stl/Spider_ascii.stl", 1312, 56},
    {"formats/stl/sphereWithHole.stl", 285, 0},
    {"formats/ply/cube_binary.ply", 12, 0},
    {"formats/ply/cube_ascii_float32_types.ply", 12, 0},
    {"formats/ply/color_mesh_binary_rgba.ply", 5537, 0},
    {"formats/obj/spider.obj", 1312, 56},
    {"formats/off/Cube.off", 12, 0},
    {"formats/off/Wuson.off", 3732, 0},
    {"formats/3mf/box.3mf", 12, 0},
    {"formats/fbx/boxWithCompressedCTypeArray.FBX", 12, 0},
    {"formats/fbx/spider.fbx", 1312, 56},
    {"formats/dae/duck.dae", 4212, 0},
};

TEST(Loader, ReadsEverySampleFormat) {
  for (const Sample& s : kSamples) {
    SCOPED_TRACE(s.path);
    const MeshLoadResult r = load_mesh(test::data_path(s.path));
    EXPECT_EQ(r.mesh.num_triangles(), s.triangles);
    EXPECT_EQ(r.mesh.dropped_degenerate, s.dropped_degenerate);
    EXPECT_EQ(r.mesh.mesh_ids.size(), s.triangles);
    EXPECT_EQ(r.mesh.material_ids.size(), s.triangles);
    EXPECT_FALSE(r.mesh.bounds().empty());
    for (uint32_t i : r.mesh.indices) ASSERT_LT(i, r.mesh.positions.size());
    if (s.dropped_degenerate) {
      ASSERT_FALSE(r.warnings.empty());
    }
    // Assimp's notes on these files (3MF parts it skips, FBX versions, default materials) are not
    // changes to the geometry, so none is passed on.
    for (const std::string& w : r.warnings) EXPECT_EQ(w.find("Assimp:"), std::string::npos) << w;
  }
}

// What Assimp changes and says only in its log becomes a warning of the load.
TEST(Loader, AssimpsChangesToTheGeometryBecomeWarnings) {
  auto has = [](const MeshLoadResult& r, const std::string& text) {
    return std::any_of(r.warnings.begin(), r.warnings.end(), [&](const std::string& w) { return w == text; });
  };
  const MeshLoadResult gltf = load_mesh(test::data_path("edge/IndexOutOfRange.gltf"), false, Loader::kAssimp);
  EXPECT_EQ(gltf.mesh.num_triangles(), 11u);  // 12 in the file, one with an index past the vertices
  EXPECT_TRUE(has(gltf, "Assimp: Some faces had out-of-range indices. Those faces were dropped")) << gltf.warnings.size();
  test::TempDir dir;
  // Assimp moves an OFF index past the vertices to the last vertex, and drops a face of no vertices;
  // the native reader (auto) drops the face with the bad index and says so.
  std::ofstream(dir.file("index.off")) << "OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0 7 9\n";
  std::ofstream(dir.file("empty_face.off")) << "OFF\n4 3 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n0\n3 0 1 3\n";
  const MeshLoadResult index = load_mesh(dir.file("index.off"), false, Loader::kAssimp);
  EXPECT_TRUE(has(index, "Assimp: OFF: Vertex index is out of range")) << index.warnings.size();
  const MeshLoadResult empty_face = load_mesh(dir.file("empty_face.off"), false, Loader::kAssimp);
  EXPECT_TRUE(has(empty_face, "Assimp: OFF: Faces with zero indices aren't allowed")) << empty_face.warnings.size();
  const MeshLoadResult native_index = load_mesh(dir.file("index.off"));
  EXPECT_EQ(native_index.mesh.num_triangles(), 1u);
  EXPECT_EQ(native_index.dropped_bad_index, 1u);
  EXPECT_EQ(load_mesh(dir.file("empty_face.off")).mesh.num_triangles(), 2u);
  // Notes that change nothing read are left out, Assimp's readers of the native formats' files
  // included; a file named "..._truncated.obj" whose material library is missing is not truncated.
  for (const char* f : {"edge/crytek_sponza_truncated.obj", "formats/obj/spider.obj", "formats/stl/Spider_ascii.stl",
                        "formats/ply/color_mesh_binary_rgba.ply", "edge/negative_indices.obj"}) {
    SCOPED_TRACE(f);
    for (const std::string& w : load_mesh(test::data_path(f), false, Loader::kAssimp).warnings)
      EXPECT_EQ(w.find("Assimp:"), std::string::npos) << w;
  }
  // The same file read twice gives the same warnings (the log's messages are per read).
  EXPECT_EQ(load_mesh(dir.file("index.off"), false, Loader::kAssimp).warnings,
            load_mesh(dir.file("index.off"), false, Loader::kAssimp).warnings);
}

TEST(Loader, BinaryAndAsciiStlGiveTheSameBounds) {
  const Bounds a = load_mesh(test::data_path("formats/stl/Spider_ascii.stl")).mesh.bounds();
  const Bounds b = load_mesh(test::data_path("formats/stl/Spider_binary.stl")).mesh.bounds();
  EXPECT_FLOAT_EQ(float(a.lo.x), float(b.lo.x));
  EXPECT_FLOAT_EQ(float(a.hi.z), float(b.hi.z));
}

// A glTF with one triangle mesh used by two nodes: a translated parent with a scaled child.
std::string base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = (unsigned char)in[i] << 16;
    out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8;
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

TEST(Loader, AppliesNodeTransformsAndKeepsEveryInstance) {
  const float v[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  const std::string bin(reinterpret_cast<const char*>(v), sizeof(v));
  const std::string gltf = R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],
    "nodes":[{"translation":[10,0,0],"mesh":0,"children":[1]},{"scale":[2,2,2],"translation":[0,5,0],"mesh":0}],
    "meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}],
    "accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}],
    "bufferViews":[{"buffer":0,"byteLength":36}],
    "buffers":[{"byteLength":36,"uri":"data:application/octet-stream;base64,)" +
                           base64(bin) + R"("}]})";
  test::TempDir dir;
  std::ofstream(dir.file("two.gltf")) << gltf;
  const MeshLoadResult r = load_mesh(dir.file("two.gltf"));
  ASSERT_EQ(r.mesh.num_triangles(), 2u);
  const Bounds b = r.mesh.bounds();
  EXPECT_FLOAT_EQ(float(b.lo.x), 10.0f);  // parent: translated by 10
  EXPECT_FLOAT_EQ(float(b.hi.x), 12.0f);  // child: scaled by 2 inside the parent
  EXPECT_FLOAT_EQ(float(b.hi.y), 7.0f);   // child: translated by 5, scaled 1 -> 2
}

// Every broken or odd file either loads with triangles or fails with one clean input error.
// A glTF whose scene lists every node of a 300-node chain as a root instances the one-triangle mesh
// n(n+1)/2 = 45150 times. Gathering the instances is linear in their number (it was quadratic:
// 201 nodes took 11 s).
TEST(Loader, ManyInstancesOfASmallMeshLoadInLinearTime) {
  test::TempDir dir;
  const int n = 300;
  std::string nodes, roots;
  for (int i = 0; i < n; ++i) {
    nodes += std::string(i ? "," : "") + "{\"mesh\":0,\"translation\":[0.01,0,0]" +
             (i + 1 < n ? ",\"children\":[" + std::to_string(i + 1) + "]" : "") + "}";
    roots += std::string(i ? "," : "") + std::to_string(i);
  }
  // One triangle: positions (0,0,0) (1,0,0) (0,1,0) then indices 0 1 2, base64.
  const std::string gltf =
      "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,\"scenes\":[{\"nodes\":[" + roots + "]}],\"nodes\":[" + nodes +
      "],\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0},\"indices\":1}]}],"
      "\"buffers\":[{\"byteLength\":48,\"uri\":\"data:application/octet-stream;base64,"
      "AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAAAAAAEAAAACAAAA\"}],"
      "\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,\"byteLength\":36},{\"buffer\":0,\"byteOffset\":36,\"byteLength\":12}],"
      "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\",\"min\":[0,0,0],\"max\":[1,1,0]},"
      "{\"bufferView\":1,\"componentType\":5125,\"count\":3,\"type\":\"SCALAR\"}]}";
  std::ofstream(dir.file("chain.gltf")) << gltf;
  const auto t0 = std::chrono::steady_clock::now();
  const MeshLoadResult r = load_mesh(dir.file("chain.gltf"));
  EXPECT_EQ(r.mesh.num_triangles(), size_t(n) * (n + 1) / 2);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0) << "hang guard";
}

template <class T>
void append(std::string& b, std::initializer_list<T> values) {
  for (T v : values) b.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// The native glTF reader gives the Mesh Assimp gives where Assimp reads the file right: the same
// triangles (each corner's position bit for bit), source meshes, materials and their colours,
// normals, texture coordinates and vertex colours.
void expect_same_mesh(const MeshLoadResult& a, const MeshLoadResult& b) {
  ASSERT_EQ(a.mesh.num_triangles(), b.mesh.num_triangles());
  EXPECT_EQ(a.mesh.num_source_meshes, b.mesh.num_source_meshes);
  EXPECT_EQ(a.mesh.num_materials, b.mesh.num_materials);
  EXPECT_EQ(a.mesh.material_colors, b.mesh.material_colors);
  EXPECT_EQ(a.mesh.normals.empty(), b.mesh.normals.empty());
  EXPECT_EQ(a.mesh.uvs.empty(), b.mesh.uvs.empty());
  EXPECT_EQ(a.mesh.colors.empty(), b.mesh.colors.empty());
  EXPECT_EQ(a.mesh.dropped_degenerate, b.mesh.dropped_degenerate);
  size_t differ = 0;
  for (size_t t = 0; t < a.mesh.num_triangles(); ++t) {
    differ += a.mesh.mesh_ids[t] != b.mesh.mesh_ids[t] || a.mesh.material_ids[t] != b.mesh.material_ids[t];
    for (int c = 0; c < 3; ++c) {
      const uint32_t ia = a.mesh.indices[3 * t + c], ib = b.mesh.indices[3 * t + c];
      differ += std::memcmp(&a.mesh.positions[ia], &b.mesh.positions[ib], sizeof(Vec3f)) != 0;
      if (!a.mesh.normals.empty() && !b.mesh.normals.empty())
        differ += std::memcmp(&a.mesh.normals[ia], &b.mesh.normals[ib], sizeof(Vec3f)) != 0;
      if (!a.mesh.uvs.empty() && !b.mesh.uvs.empty()) differ += std::memcmp(&a.mesh.uvs[ia], &b.mesh.uvs[ib], sizeof(Vec2f)) != 0;
      if (!a.mesh.colors.empty() && !b.mesh.colors.empty()) differ += a.mesh.colors[ia] != b.mesh.colors[ib];
    }
  }
  EXPECT_EQ(differ, 0u);
}

TEST(Loader, NativeGltfEqualsAssimp) {
  for (const char* f : {"formats/gltf/Duck.glb", "formats/gltf/BoxTextured/BoxTextured.gltf",
                        "formats/gltf/BoxTextured-Embedded.gltf", "edge/IndexOutOfRange.gltf"}) {
    SCOPED_TRACE(f);
    const MeshLoadResult native = load_mesh(test::data_path(f), false, Loader::kNative);
    EXPECT_EQ(native.format, "glTF 2.0 (native)");
    expect_same_mesh(native, load_mesh(test::data_path(f), false, Loader::kAssimp));
    EXPECT_EQ(load_mesh(test::data_path(f)).format, "glTF 2.0 (native)");  // auto reads it natively
  }
  // glTF 1.0 (its own layout: objects by name) goes to Assimp under auto.
  {
    test::TempDir dir;
    std::ofstream(dir.file("v1.gltf")) << R"({"asset":{"version":"1.0"},"scene":"s","scenes":{"s":{"nodes":["n"]}},)"
                                          R"("nodes":{"n":{"meshes":["m"]}},"meshes":{"m":{"primitives":[{"attributes":)"
                                          R"({"POSITION":"a"},"mode":4}]}},"accessors":{"a":{"bufferView":"v","byteOffset":0,)"
                                          R"("byteStride":0,"componentType":5126,"count":3,"type":"VEC3"}},"bufferViews":{"v":)"
                                          R"({"buffer":"b","byteOffset":0,"byteLength":36}},"buffers":{"b":{"byteLength":36,)"
                                          R"("type":"arraybuffer","uri":"data:application/octet-stream;base64,)"
                                          R"(AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAA"}}})";
    const MeshLoadResult v1 = load_mesh(dir.file("v1.gltf"));
    EXPECT_EQ(v1.mesh.num_triangles(), 1u);
    EXPECT_EQ(v1.format.find("native"), std::string::npos) << v1.format;
  }
  // Crafted: three root nodes (matrix; rotation, translation and scale; a child), two primitives
  // (a strip of 4 vertices, a fan of 5) with normals, texture coordinates, 8-bit colours and
  // materials, indexed by 8- and 16-bit indices, and a sparse accessor substituting two positions.
  std::string bin;
  append<float>(bin, {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0.5f, 2, 0.25f, 1});  // 5 positions (60 bytes)
  append<float>(bin, {0, 0, 1, 0, 0, 1, 0, 1, 0, 0.6f, 0, 0.8f, 1, 0, 0});    // normals (60)
  append<float>(bin, {0, 0, 1, 0, 0, 1, 1, 1, 0.5f, 0.5f});                  // uvs (40)
  append<uint8_t>(bin, {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 9, 99, 199, 255, 1, 2, 3, 4});  // colours (20)
  append<uint8_t>(bin, {0, 1, 2, 3});                                        // strip indices (4)
  append<uint16_t>(bin, {0, 1, 2, 3, 4, 0});                                 // fan indices, padded (12)
  append<uint8_t>(bin, {1, 3, 0, 0});                                        // sparse indices (4)
  append<float>(bin, {5, 5, 5, -1, -2, -3});                                 // sparse values (24)
  ASSERT_EQ(bin.size(), 224u);
  const std::string gltf = R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0,1,3]}],
    "nodes":[{"matrix":[0.8,0,-0.6,0, 0,1,0,0, 0.6,0,0.8,0, 3,-1,7,1],"mesh":0},
             {"translation":[0.1,0.2,0.3],"rotation":[0.1825742,0.3651484,0.5477226,0.7302967],"scale":[2,3,0.5],
              "children":[2]},
             {"rotation":[0,0.7071068,0,0.7071068],"mesh":1},
             {"mesh":1,"scale":[-1,1,1]}],
    "materials":[{"pbrMetallicRoughness":{"baseColorFactor":[0.2,0.4,0.6,1]}},{}],
    "meshes":[{"primitives":[{"attributes":{"POSITION":0,"NORMAL":1,"TEXCOORD_0":2,"COLOR_0":3},"indices":4,"mode":5,
                              "material":1}]},
              {"primitives":[{"attributes":{"POSITION":6,"NORMAL":1},"indices":5,"mode":6},
                             {"attributes":{"POSITION":0},"material":0}]}],
    "accessors":[{"bufferView":0,"componentType":5126,"count":5,"type":"VEC3","min":[0,0,0],"max":[2,1,1]},
                 {"bufferView":1,"componentType":5126,"count":5,"type":"VEC3"},
                 {"bufferView":2,"componentType":5126,"count":5,"type":"VEC2"},
                 {"bufferView":3,"componentType":5121,"normalized":true,"count":5,"type":"VEC4"},
                 {"bufferView":4,"componentType":5121,"count":4,"type":"SCALAR"},
                 {"bufferView":5,"componentType":5123,"count":5,"type":"SCALAR"},
                 {"bufferView":0,"componentType":5126,"count":5,"type":"VEC3","min":[-1,-2,-3],"max":[5,5,5],
                  "sparse":{"count":2,"indices":{"bufferView":6,"componentType":5121},"values":{"bufferView":7}}}],
    "bufferViews":[{"buffer":0,"byteOffset":0,"byteLength":60},{"buffer":0,"byteOffset":60,"byteLength":60},
                   {"buffer":0,"byteOffset":120,"byteLength":40},{"buffer":0,"byteOffset":160,"byteLength":20},
                   {"buffer":0,"byteOffset":180,"byteLength":4},{"buffer":0,"byteOffset":184,"byteLength":12},
                   {"buffer":0,"byteOffset":196,"byteLength":4},{"buffer":0,"byteOffset":200,"byteLength":24}],
    "buffers":[{"byteLength":224,"uri":"data:application/octet-stream;base64,)" +
                           base64(bin) + R"("}]})";
  test::TempDir dir;
  std::ofstream(dir.file("scene.gltf")) << gltf;
  const MeshLoadResult native = load_mesh(dir.file("scene.gltf"), false, Loader::kNative);
  EXPECT_EQ(native.mesh.num_triangles(), 2u + 2u * (3u + 1u));  // a strip of 2; mesh 1 twice: a fan of 3, a soup of 1
  expect_same_mesh(native, load_mesh(dir.file("scene.gltf"), false, Loader::kAssimp));
  // The roots in another order: meshes without colours come before the one with them (whose vertex
  // colours then join the material colours of the vertices before), and the numbering changes.
  std::string reordered = gltf;
  reordered.replace(reordered.find("\"nodes\":[0,1,3]"), 15, "\"nodes\":[3,0,1]");
  std::ofstream(dir.file("reordered.gltf")) << reordered;
  expect_same_mesh(load_mesh(dir.file("reordered.gltf"), false, Loader::kNative),
                   load_mesh(dir.file("reordered.gltf"), false, Loader::kAssimp));
}

// What Assimp 5.2 reads wrongly without an error (integer attributes, meshopt buffers, GPU
// instancing) is refused or dropped with a warning, never passed on as geometry.
TEST(Loader, GltfContentAssimpMisreadsIsRefusedOrDropped) {
  // (read with Assimp; the native reader reads them right: Loader.NativeGltfReadsWhatAssimpMisreads)
  auto message = [](const std::string& path) {
    try {
      load_mesh(path, false, Loader::kAssimp);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  // The Khronos sample's positions are unsigned 16-bit integers (Assimp read them as zeros).
  const std::string quantized = message(test::data_path("formats/gltf/Lantern-Quantized/Lantern.gltf"));
  EXPECT_NE(quantized.find("positions are stored as unsigned 16-bit integers (KHR_mesh_quantization)"),
            std::string::npos) << quantized;
  // A triangle with float positions, 8-bit normals and 16-bit texture coordinates: it loads, without
  // the normals and texture coordinates, with a warning for each.
  std::string bin;
  append<float>(bin, {0, 0, 0, 1, 0, 0, 0, 1, 0});                       // positions, 36 bytes
  append<int8_t>(bin, {0, 0, 127, 0, 0, 0, 127, 0, 0, 0, 127, 0});     // normals, stride 4
  append<uint16_t>(bin, {0, 0, 65535, 0, 0, 65535});                   // texture coordinates
  append<uint32_t>(bin, {0, 1, 2});                                    // indices
  auto gltf = [&](const std::string& position_type, const std::string& extras, bool instanced = false) {
    return "{\"asset\":{\"version\":\"2.0\"}," + extras + "\"scene\":0,\"scenes\":[{\"nodes\":[0]}],\"nodes\":[{\"mesh\":0" +
           (instanced ? ",\"extensions\":{\"EXT_mesh_gpu_instancing\":{}}" : "") +
           "}],\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0,\"NORMAL\":1,\"TEXCOORD_0\":2},\"indices\":3}]}],"
           "\"buffers\":[{\"byteLength\":72,\"uri\":\"data:application/octet-stream;base64," + base64(bin) + "\"}],"
           "\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,\"byteLength\":36},"
           "{\"buffer\":0,\"byteOffset\":36,\"byteLength\":12,\"byteStride\":4},"
           "{\"buffer\":0,\"byteOffset\":48,\"byteLength\":12},{\"buffer\":0,\"byteOffset\":60,\"byteLength\":12}],"
           "\"accessors\":[{\"bufferView\":0,\"componentType\":" + position_type +
           ",\"count\":3,\"type\":\"VEC3\",\"min\":[0,0,0],\"max\":[1,1,0]},"
           "{\"bufferView\":1,\"componentType\":5120,\"normalized\":true,\"count\":3,\"type\":\"VEC3\"},"
           "{\"bufferView\":2,\"componentType\":5123,\"normalized\":true,\"count\":3,\"type\":\"VEC2\"},"
           "{\"bufferView\":3,\"componentType\":5125,\"count\":3,\"type\":\"SCALAR\"}]}";
  };
  test::TempDir dir;
  std::ofstream(dir.file("attributes.gltf")) << gltf("5126", "\"extensionsUsed\":[\"KHR_mesh_quantization\"],");
  const MeshLoadResult r = load_mesh(dir.file("attributes.gltf"), false, Loader::kAssimp);
  EXPECT_EQ(r.mesh.num_triangles(), 1u);
  EXPECT_TRUE(r.mesh.normals.empty());
  EXPECT_TRUE(r.mesh.uvs.empty());
  const std::string warnings = [&] {
    std::string all;
    for (const std::string& w : r.warnings) all += w + "\n";
    return all;
  }();
  EXPECT_NE(warnings.find("normals stored as integers (KHR_mesh_quantization) are not decoded"), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("texture coordinates stored as integers are not decoded"), std::string::npos) << warnings;
  // Integer positions (the same bytes read as 16-bit numbers), a compressed buffer, instancing.
  std::ofstream(dir.file("positions.gltf")) << gltf("5123", "");
  EXPECT_NE(message(dir.file("positions.gltf")).find("positions are stored as unsigned 16-bit integers"),
            std::string::npos);
  std::ofstream(dir.file("meshopt.gltf"))
      << gltf("5126", "\"extensionsUsed\":[\"EXT_meshopt_compression\"],\"extensionsRequired\":[\"EXT_meshopt_compression\"],");
  EXPECT_NE(message(dir.file("meshopt.gltf")).find("compressed (EXT_meshopt_compression)"), std::string::npos);
  std::ofstream(dir.file("instanced.gltf")) << gltf("5126", "\"extensionsUsed\":[\"EXT_mesh_gpu_instancing\"],", true);
  EXPECT_NE(message(dir.file("instanced.gltf")).find("1 node(s) instance their mesh (EXT_mesh_gpu_instancing)"),
            std::string::npos) << message(dir.file("instanced.gltf"));
  // The same in a binary glTF: its JSON chunk is read.
  std::string json = gltf("5123", "");
  json.append((4 - json.size() % 4) % 4, ' ');
  std::string glb;
  append<uint32_t>(glb, {0x46546C67u, 2, uint32_t(12 + 8 + json.size()), uint32_t(json.size()), 0x4E4F534Au});
  glb += json;
  std::ofstream(dir.file("positions.glb"), std::ios::binary) << glb;
  EXPECT_NE(message(dir.file("positions.glb")).find("positions are stored as unsigned 16-bit integers"),
            std::string::npos) << message(dir.file("positions.glb"));
}

// What Assimp misreads, read natively: integer positions, normals and texture coordinates
// dequantized as the spec says, instances expanded; compressed buffers and unknown required
// extensions refused.
TEST(Loader, NativeGltfReadsWhatAssimpMisreads) {
  const MeshLoadResult lantern = load_mesh(test::data_path("formats/gltf/Lantern-Quantized/Lantern.gltf"));
  EXPECT_EQ(lantern.mesh.num_triangles() + lantern.mesh.dropped_degenerate, 5394u);  // every triangle of the file
  // The same lantern compressed with Draco (read by Assimp) has the same extent, to the quantization's precision.
  const Bounds q = lantern.mesh.bounds(), d = load_mesh(test::data_path("formats/gltf/Lantern-Draco/Lantern.gltf")).mesh.bounds();
  EXPECT_NEAR(q.lo.y, d.lo.y, 0.01 * (d.hi.y - d.lo.y));
  EXPECT_NEAR(q.hi.y, d.hi.y, 0.01 * (d.hi.y - d.lo.y));
  EXPECT_NEAR(q.hi.x - q.lo.x, d.hi.x - d.lo.x, 0.01 * (d.hi.y - d.lo.y));
  std::string bin;
  append<float>(bin, {0, 0, 0, 1, 0, 0, 0, 1, 0});
  append<int8_t>(bin, {0, 0, 127, 0, 0, 0, 127, 0, -128, 0, 0, 0});
  append<uint16_t>(bin, {0, 0, 65535, 0, 0, 65535});
  append<uint32_t>(bin, {0, 1, 2});
  append<float>(bin, {0, 0, 0, 10, 0, 0});               // instance translations (offset 72)
  append<int16_t>(bin, {0, 0, 0, 32767, 0, 0, 32767, 0});  // instance rotations: identity, 180 degrees about z
  const std::string gltf = R"({"asset":{"version":"2.0"},"extensionsUsed":["KHR_mesh_quantization","EXT_mesh_gpu_instancing"],
    "extensionsRequired":["KHR_mesh_quantization"],"scene":0,"scenes":[{"nodes":[0]}],
    "nodes":[{"mesh":0,"extensions":{"EXT_mesh_gpu_instancing":{"attributes":{"TRANSLATION":4,"ROTATION":5}}}}],
    "meshes":[{"primitives":[{"attributes":{"POSITION":0,"NORMAL":1,"TEXCOORD_0":2},"indices":3}]}],
    "buffers":[{"byteLength":112,"uri":"data:application/octet-stream;base64,)" +
                           base64(bin) + R"("}],
    "bufferViews":[{"buffer":0,"byteOffset":0,"byteLength":36},{"buffer":0,"byteOffset":36,"byteLength":12,"byteStride":4},
                   {"buffer":0,"byteOffset":48,"byteLength":12},{"buffer":0,"byteOffset":60,"byteLength":12},
                   {"buffer":0,"byteOffset":72,"byteLength":24},{"buffer":0,"byteOffset":96,"byteLength":16}],
    "accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]},
                 {"bufferView":1,"componentType":5120,"normalized":true,"count":3,"type":"VEC3"},
                 {"bufferView":2,"componentType":5123,"normalized":true,"count":3,"type":"VEC2"},
                 {"bufferView":3,"componentType":5125,"count":3,"type":"SCALAR"},
                 {"bufferView":4,"componentType":5126,"count":2,"type":"VEC3"},
                 {"bufferView":5,"componentType":5122,"normalized":true,"count":2,"type":"VEC4"}]})";
  ASSERT_EQ(bin.size(), 112u);
  test::TempDir dir;
  std::ofstream(dir.file("instanced.gltf")) << gltf;
  const MeshLoadResult r = load_mesh(dir.file("instanced.gltf"));
  ASSERT_EQ(r.mesh.num_triangles(), 2u);  // two instances
  const Bounds b = r.mesh.bounds();
  EXPECT_EQ(b.lo.x, 0.0);   // the first at the origin, x in [0, 1]; the second turned half round about z
  EXPECT_EQ(b.hi.x, 10.0);  // (x in [-1, 0], y in [-1, 0]) and moved by 10 along x
  EXPECT_EQ(b.lo.y, -1.0);
  ASSERT_EQ(r.mesh.normals.size(), r.mesh.positions.size());
  EXPECT_EQ(r.mesh.normals[0].z, 1.0f);   // 8-bit normal (0, 0, 127) -> (0, 0, 1)
  EXPECT_EQ(r.mesh.normals[2].x, -1.0f);  // (-128, 0, 0) -> -1 (clamped), unit length
  ASSERT_EQ(r.mesh.uvs.size(), r.mesh.positions.size());
  EXPECT_EQ(r.mesh.uvs[1].x, 1.0f);  // 65535 -> 1
  EXPECT_EQ(r.mesh.uvs[2].y, 0.0f);  // v = 1 flipped to 0
  // Compressed buffers and required extensions it does not know are refused.
  const std::string required = "\"extensionsRequired\":[\"KHR_mesh_quantization\"]";
  std::string meshopt = gltf, unknown = gltf;
  meshopt.replace(meshopt.find(required), required.size(), "\"extensionsRequired\":[\"EXT_meshopt_compression\"]");
  unknown.replace(unknown.find(required), required.size(), "\"extensionsRequired\":[\"EXT_some_new_geometry\"]");
  std::ofstream(dir.file("meshopt.gltf")) << meshopt;
  std::ofstream(dir.file("unknown.gltf")) << unknown;
  for (const auto& [f, text] : {std::pair<std::string, std::string>{"meshopt.gltf", "compressed (EXT_meshopt_compression)"},
                                {"unknown.gltf", "requires the glTF extension 'EXT_some_new_geometry'"}}) {
    try {
      load_mesh(dir.file(f));
      ADD_FAILURE() << f << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
}

// Textures are decoded by the native readers as Assimp's path decodes them: the same pictures per
// material (and for glTF the same texture coordinates), in file order; a missing picture is a warning
// and the geometry stays (the lantern's PNGs are not in the repository).
TEST(Loader, TexturesDecodedNativelyAsThroughAssimp) {
  std::vector<std::string> files = {test::data_path("formats/gltf/Duck.glb"),
                                    test::data_path("formats/gltf/BoxTextured/BoxTextured.gltf"),
                                    test::data_path("formats/gltf/BoxTextured-Embedded.gltf")};
  for (const char* rel : {"formats/obj/spider/spider.obj", "formats/obj/monkey/monkey.obj"}) {
    const std::string p = test::source_path("../shared/data/") + rel;
    if (std::ifstream(p).good()) files.push_back(p);
  }
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const MeshLoadResult native = load_mesh(f, true), assimp = load_mesh(f, true, Loader::kAssimp);
    EXPECT_NE(native.format.find("native"), std::string::npos) << native.format;
    ASSERT_FALSE(native.mesh.material_textures.empty());
    ASSERT_EQ(native.mesh.material_textures.size(), assimp.mesh.material_textures.size());
    for (size_t k = 0; k < native.mesh.material_textures.size(); ++k) {
      const Texture &a = native.mesh.material_textures[k], &b = assimp.mesh.material_textures[k];
      EXPECT_EQ(a.width, b.width) << "material " << k;
      EXPECT_EQ(a.height, b.height) << "material " << k;
      EXPECT_TRUE(a.rgb == b.rgb) << "material " << k;
    }
    EXPECT_EQ(native.warnings, assimp.warnings);
    if (lower_extension(f) != "obj") {  // (Assimp regroups OBJ faces by material)
      ASSERT_EQ(native.mesh.uvs.size(), assimp.mesh.uvs.size());
      for (size_t v = 0; v < native.mesh.uvs.size(); ++v) {
        ASSERT_EQ(native.mesh.uvs[v].x, assimp.mesh.uvs[v].x) << v;
        ASSERT_EQ(native.mesh.uvs[v].y, assimp.mesh.uvs[v].y) << v;
      }
    }
  }
  const MeshLoadResult lantern = load_mesh(test::data_path("formats/gltf/Lantern-Quantized/Lantern.gltf"), true);
  EXPECT_EQ(lantern.mesh.num_triangles() + lantern.mesh.dropped_degenerate, 5394u);
  EXPECT_NE(lantern.format.find("native"), std::string::npos) << lantern.format;
  EXPECT_TRUE(lantern.mesh.material_textures.empty());
  EXPECT_TRUE(std::any_of(lantern.warnings.begin(), lantern.warnings.end(), [](const std::string& w) {
    return w.rfind("texture 'Lantern_baseColor.png' not used: cannot open ", 0) == 0;
  })) << (lantern.warnings.empty() ? "" : lantern.warnings[0]);
}

// What only the native readers read: map_Kd options and a file name with a space, and glTF's
// texCoord and KHR_texture_transform (the extension's own example: the lower left quadrant, turned).
// A 2x2 picture: top row red green, bottom row blue white (or all one colour, 0xAABBGGRR).
void write_test_texture(const std::string& path, uint32_t all = 0) {
  Image img;
  img.width = img.height = 2;
  img.pixels = {0xFF0000FFu, 0xFF00FF00u, 0xFFFF0000u, 0xFFFFFFFFu};
  if (all) img.pixels.assign(4, all);
  write_png(img, path);
}

TEST(Loader, TextureOptionsSetsAndTransforms) {
  test::TempDir dir;
  write_test_texture(dir.file("my tex.png"));
  std::ofstream(dir.file("m.mtl")) << "newmtl a\nKd 1 1 1\nmap_Kd -s 1 1 1 -clamp on -o 0 0 my tex.png\n"
                                      "newmtl b\nmap_Kd none.png\n";
  std::ofstream(dir.file("t.obj"))
      << "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0.25 0.75\nvt 0.75 0.75\nvt 0.25 0.25\n"
         "usemtl a\nf 1/1 2/2 3/3\nusemtl b\nf 1/1 2/2 3/3\n";
  const MeshLoadResult obj = load_mesh(dir.file("t.obj"), true);
  ASSERT_EQ(obj.mesh.material_textures.size(), 3u);
  const Texture& t = obj.mesh.material_textures[1];
  ASSERT_EQ(t.width, 2);
  EXPECT_EQ(t.lookup(0.25f, 0.75f), 0xFF0000u);
  EXPECT_EQ(t.lookup(0.75f, 0.75f), 0x00FF00u);
  EXPECT_EQ(t.lookup(0.25f, 0.25f), 0x0000FFu);
  EXPECT_TRUE(obj.mesh.material_textures[2].empty());
  ASSERT_EQ(obj.warnings.size(), 1u);
  EXPECT_EQ(obj.warnings[0].rfind("texture '" + dir.file("none.png") + "' not used: cannot open", 0), 0u)
      << obj.warnings[0];
  // glTF: the texture samples TEXCOORD_1, moved by offset (0, 1), rotation pi/2, scale 0.5.
  std::string bin;
  append<float>(bin, {0, 0, 0, 1, 0, 0, 0, 1, 0});
  append<float>(bin, {0, 0, 0, 0, 0, 0});
  append<float>(bin, {1, 0, 0, 0, 0, 1});
  const std::string png = test::read_file(dir.file("my tex.png"));
  const std::string gltf = R"({"asset":{"version":"2.0"},"extensionsUsed":["KHR_texture_transform"],"scene":0,
    "scenes":[{"nodes":[0]}],"nodes":[{"mesh":0}],
    "meshes":[{"primitives":[{"attributes":{"POSITION":0,"TEXCOORD_0":1,"TEXCOORD_1":2},"material":0}]}],
    "materials":[{"pbrMetallicRoughness":{"baseColorTexture":{"index":0,"texCoord":1,"extensions":{"KHR_texture_transform":
      {"offset":[0,1],"rotation":1.57079632679,"scale":[0.5,0.5]}}}}}],
    "textures":[{"source":0}],"images":[{"uri":"data:image/png;base64,)" +
                           base64(png) + R"("}],
    "buffers":[{"byteLength":84,"uri":"data:application/octet-stream;base64,)" +
                           base64(bin) + R"("}],
    "bufferViews":[{"buffer":0,"byteOffset":0,"byteLength":36},{"buffer":0,"byteOffset":36,"byteLength":24},
                   {"buffer":0,"byteOffset":60,"byteLength":24}],
    "accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]},
                 {"bufferView":1,"componentType":5126,"count":3,"type":"VEC2"},
                 {"bufferView":2,"componentType":5126,"count":3,"type":"VEC2"}]})";
  std::ofstream(dir.file("t.gltf")) << gltf;
  const MeshLoadResult g = load_mesh(dir.file("t.gltf"), true);
  ASSERT_EQ(g.mesh.material_textures.size(), 2u);
  EXPECT_EQ(g.mesh.material_textures[0].width, 2);
  ASSERT_EQ(g.mesh.uvs.size(), 3u);
  // glTF (u, v) -> (u', v') -> the Mesh's (u', 1 - v'): (1, 0) -> (0, 0.5); (0, 0) -> (0, 1); (0, 1) -> (0.5, 1).
  const float want[3][2] = {{0, 0.5f}, {0, 0}, {0.5f, 0}};
  for (int v = 0; v < 3; ++v) {
    EXPECT_NEAR(g.mesh.uvs[size_t(v)].x, want[v][0], 1e-6) << v;
    EXPECT_NEAR(g.mesh.uvs[size_t(v)].y, want[v][1], 1e-6) << v;
  }
  // Without textures asked for, the first set as it is.
  const MeshLoadResult plain = load_mesh(dir.file("t.gltf"));
  EXPECT_TRUE(plain.mesh.material_textures.empty());
  EXPECT_EQ(plain.mesh.uvs[0].y, 1.0f);
}

// Textured PLY as MeshLab writes it: "comment TextureFile" pictures, texture coordinates per face
// corner ("texcoord", with "texnumber" naming the picture), binary and ASCII: with textures asked for,
// each triangle's corners become vertices of their own, so two faces sharing a vertex keep their own
// coordinates (Assimp 5.2 keeps one per vertex, the last face's); per-vertex coordinates too.
TEST(Loader, TexturedPlyPerCornerCoordinates) {
  test::TempDir dir;
  write_test_texture(dir.file("a.png"));
  write_test_texture(dir.file("b.png"), 0xFF00FF00u);  // all green
  const std::string head =
      "comment TextureFile a.png\ncomment TextureFile b.png\nelement vertex 4\nproperty float x\n"
      "property float y\nproperty float z\nelement face 3\nproperty list uchar int vertex_indices\n"
      "property list uchar float texcoord\nproperty int texnumber\nend_header\n";
  // Faces: (0 1 2) red, (1 3 2) white, both of a.png; (0 1 3) of b.png.
  const std::vector<std::vector<int>> faces = {{0, 1, 2}, {1, 3, 2}, {0, 1, 3}};
  const std::vector<std::vector<float>> uvs = {
      {0.2f, 0.7f, 0.3f, 0.7f, 0.2f, 0.8f}, {0.7f, 0.2f, 0.8f, 0.2f, 0.7f, 0.3f}, {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}};
  std::string ascii = "ply\nformat ascii 1.0\n" + head + "0 0 0\n1 0 0\n0 1 0\n1 1 0\n";
  std::string bin = "ply\nformat binary_little_endian 1.0\n" + head;
  append<float>(bin, {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0});
  for (size_t i = 0; i < faces.size(); ++i) {
    ascii += "3";
    bin += char(3);
    for (const int v : faces[i]) {
      ascii += " " + std::to_string(v);
      append<int32_t>(bin, {v});
    }
    ascii += " 6";
    bin += char(6);
    for (const float u : uvs[i]) {
      ascii += " " + std::to_string(u);
      append<float>(bin, {u});
    }
    ascii += " " + std::to_string(i == 2 ? 1 : 0) + "\n";
    append<int32_t>(bin, {i == 2 ? 1 : 0});
  }
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"t.ply", ascii}, {"b.ply", bin}}) {
    SCOPED_TRACE(name);
    std::ofstream(dir.file(name), std::ios::binary) << bytes;
    const MeshLoadResult r = load_mesh(dir.file(name), true);
    ASSERT_EQ(r.mesh.num_triangles(), 3u);
    ASSERT_EQ(r.mesh.positions.size(), 9u);
    ASSERT_EQ(r.mesh.uvs.size(), 9u);
    ASSERT_EQ(r.mesh.material_textures.size(), 2u);
    EXPECT_EQ(std::vector<uint32_t>(r.mesh.material_ids.begin(), r.mesh.material_ids.end()),
              (std::vector<uint32_t>{0, 0, 1}));
    const uint32_t want[3] = {0xFF0000u, 0xFFFFFFu, 0x00FF00u};
    for (size_t c = 0; c < 9; ++c) {
      const Texture& t = r.mesh.material_textures[r.mesh.material_ids[c / 3]];
      EXPECT_EQ(t.lookup(r.mesh.uvs[c].x, r.mesh.uvs[c].y), want[c / 3]) << "corner " << c;
    }
    EXPECT_EQ(r.mesh.vertex(1, 0).x, 1.0f);  // face (1 3 2): its first corner is vertex 1
    EXPECT_EQ(r.mesh.vertex(1, 1).y, 1.0f);
    // Without textures: the file's vertices, shared.
    const MeshLoadResult plain = load_mesh(dir.file(name));
    EXPECT_EQ(plain.mesh.positions.size(), 4u);
    EXPECT_EQ(plain.mesh.num_triangles(), 3u);
    EXPECT_TRUE(plain.mesh.material_textures.empty());
  }
  // Per-vertex coordinates with a TextureFile; a missing picture is a warning.
  std::ofstream(dir.file("v.ply"))
      << "ply\nformat ascii 1.0\ncomment TextureFile a.png\nelement vertex 3\nproperty float x\n"
         "property float y\nproperty float z\nproperty float s\nproperty float t\nelement face 1\n"
         "property list uchar int vertex_indices\nend_header\n0 0 0 0.25 0.25\n1 0 0 0.25 0.25\n"
         "0 1 0 0.25 0.25\n3 0 1 2\n";
  const MeshLoadResult v = load_mesh(dir.file("v.ply"), true);
  ASSERT_EQ(v.mesh.material_textures.size(), 1u);
  EXPECT_EQ(v.mesh.material_textures[0].lookup(v.mesh.uvs[0].x, v.mesh.uvs[0].y), 0x0000FFu);
  std::ofstream(dir.file("m.ply"))
      << "ply\nformat ascii 1.0\ncomment TextureFile none.png\nelement vertex 3\nproperty float x\n"
         "property float y\nproperty float z\nproperty float s\nproperty float t\nelement face 1\n"
         "property list uchar int vertex_indices\nend_header\n0 0 0 0 0\n1 0 0 0 0\n0 1 0 0 0\n3 0 1 2\n";
  const MeshLoadResult m = load_mesh(dir.file("m.ply"), true);
  EXPECT_TRUE(m.mesh.material_textures.empty());
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0].rfind("texture 'none.png' not used: cannot open", 0), 0u) << m.warnings[0];
}

// A small file cannot make the native reader allocate or loop without bound.
TEST(Loader, NativeGltfRefusesScenesThatExplode) {
  std::string nodes;  // node k lists node k + 1 twice: 2^40 paths
  for (int k = 0; k < 40; ++k) nodes += "{\"children\":[" + std::to_string(k + 1) + "," + std::to_string(k + 1) + "]},";
  nodes += "{\"mesh\":0}";
  auto file = [](const std::string& nodes_json, const std::string& position_accessor) {
    return R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],"nodes":[)" + nodes_json +
           R"(],"meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}],"accessors":[)" + position_accessor + "]}";
  };
  const std::string zeros = R"({"componentType":5126,"count":3,"type":"VEC3"})";
  test::TempDir dir;
  std::ofstream(dir.file("dag.gltf")) << file(nodes, zeros);
  std::ofstream(dir.file("cycle.gltf")) << file(R"({"children":[1]},{"children":[0],"mesh":0})", zeros);
  std::ofstream(dir.file("huge.gltf")) << file(R"({"mesh":0})", R"({"componentType":5126,"count":4000000000,"type":"VEC3"})");
  for (const auto& [f, text] : {std::pair<std::string, std::string>{"dag.gltf", "expands to more than 2^20 nodes"},
                                {"cycle.gltf", "deeper than 1000 levels"},
                                {"huge.gltf", "an accessor of 4000000000 elements without data"}}) {
    SCOPED_TRACE(f);
    try {
      load_mesh(dir.file(f));
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
}

TEST(Loader, EveryEdgeCaseFileLoadsOrFailsCleanly) {
  const char* files[] = {"BoxWithInfinites.glb",
                         "IndexOutOfRange.gltf",
                         "OutOfMemory.off",
                         "box_UTF16BE.obj",
                         "box_without_lineending.obj",
                         "concave_polygon.obj",
                         "crash-fuzz.ply",
                         "crytek_sponza_truncated.obj",
                         "cube_binary_header_with_RN_newline.ply",
                         "cubes_with_outofrange_float.fbx",
                         "empty.obj",
                         "empty.off",
                         "empty.ply",
                         "malformed_missing_material.obj",
                         "malformed_out_of_range_indices.obj",
                         "negative_indices.obj",
                         "number_formats.obj",
                         "ply_empty_header.ply",
                         "ply_points_bin.ply",
                         "soup.stl",
                         "stl_empty_bin.stl",
                         "testline.obj",
                         "testpoints.obj",
                         "triangle_with_two_solids.stl"};
  size_t loaded = 0, failed = 0;
  for (const char* f : files) {
    SCOPED_TRACE(f);
    const std::string path = test::data_path(std::string("edge/") + f);
    try {
      const MeshLoadResult r = load_mesh(path);
      EXPECT_GT(r.mesh.num_triangles(), 0u);
      ++loaded;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      ++failed;
    }
  }
  EXPECT_GT(loaded, 5u);
  EXPECT_GT(failed, 5u);
}

// A triangle indexing past the vertices (the readers drop such faces and count them, so only a
// reader's bug leaves one) is an internal error from sanitize(), not a read out of bounds.
TEST(Loader, SanitizeRefusesIndicesPastTheVertices) {
  Mesh m = make_uv_sphere(0.0f, 0.0f, 0.0f, 1.0f, 4, 6);
  const size_t n = m.num_triangles(), nv = m.positions.size();
  Mesh ok = m;
  ok.sanitize();
  EXPECT_EQ(ok.num_triangles(), n);
  for (uint32_t past : {uint32_t(nv), uint32_t(nv + 7), ~0u}) {
    Mesh bad = m;
    bad.indices[3 * (n / 2) + 1] = past;
    try {
      bad.sanitize();
      ADD_FAILURE() << past;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInternal);
      EXPECT_NE(std::string(e.what()).find("1 triangles index vertices past the " + std::to_string(nv)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Loader, SpecificBrokenFilesGiveSpecificErrors) {
  auto message = [](const std::string& rel) {
    try {
      load_mesh(test::data_path(rel));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_NE(message("edge/empty.obj").find("the file is empty"), std::string::npos);
  // An importer crash is contained in its reader process (injected: VOXTILE_TEST_READER_CRASH).
  {
    test::TempDir dir;
    std::ofstream(dir.file("x-crash.off"), std::ios::binary) << test::read_file(test::data_path("formats/off/Wuson.off"));
    setenv("VOXTILE_TEST_READER_CRASH", "x-crash.off", 1);
    try {
      load_mesh(dir.file("x-crash.off"), false, Loader::kAssimp);
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("importer crashed"), std::string::npos) << e.what();
    }
    unsetenv("VOXTILE_TEST_READER_CRASH");
  }
  // Assimp crashed on this PLY, whose header is cut short: both loaders now refuse it first.
  EXPECT_NE(message("edge/crash-fuzz.ply").find("truncated PLY header"), std::string::npos);
  try {
    load_mesh(test::data_path("edge/crash-fuzz.ply"), false, Loader::kAssimp);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated PLY header"), std::string::npos) << e.what();
  }
  // A hostile count: refused before the importer allocates for it.
  EXPECT_NE(message("edge/OutOfMemory.off").find("the header declares 353535235358 vertices"), std::string::npos);
  EXPECT_NE(message("edge/BoxWithInfinites.glb").find("no usable triangles"), std::string::npos);
  EXPECT_NE(message("edge/testpoints.obj").find("points only; 'voxtile points' bins"), std::string::npos);
  // Point-cloud formats no mesh reader reads: said so, with the command that reads them.
  EXPECT_NE(message("points/points_cloudcompare.xyz").find("a point cloud, not a mesh ('voxtile points'"),
            std::string::npos)
      << message("points/points_cloudcompare.xyz");
  EXPECT_NE(message("edge/does_not_exist.obj").find("No such file"), std::string::npos);
  EXPECT_NE(message("edge").find("is a directory"), std::string::npos);
  // Files no importer takes: a format nobody reads, a material library, a known format's garbage.
  EXPECT_NE(message("edge/IndexOutOfRange.bin").find("IndexOutOfRange.bin: not a mesh format voxtile reads"),
            std::string::npos)
      << message("edge/IndexOutOfRange.bin");
  EXPECT_NE(message("edge/concave_polygon.mtl").find("a material library, not a mesh"), std::string::npos);
  test::TempDir dir;
  std::ofstream(dir.file("junk.glb"), std::ios::binary) << std::string(300, 'j');
  try {
    load_mesh(dir.file("junk.glb"));
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.glb: not a binary glTF (no 'glTF' magic)"), std::string::npos)
        << e.what();
  }
}

TEST(Loader, TruncatedFilesLoadWhatIsThere) {
  const MeshLoadResult r = load_mesh(test::data_path("edge/crytek_sponza_truncated.obj"));
  EXPECT_GT(r.mesh.num_triangles(), 1000u);
}

TEST(Loader, PointCloudsAreRecognisedByInspect) {
  const MeshLoadResult r = inspect_mesh(test::data_path("edge/ply_points_bin.ply"));
  EXPECT_EQ(r.mesh.num_triangles(), 0u);
  EXPECT_EQ(r.points, 8u);
}

// A pool of reader processes (Assimp) gives what load_mesh gives, from several threads at once, and
// outlives importer crashes: the crashed process is replaced and later files still load.
TEST(Loader, ReaderPoolMatchesLoadMeshAndSurvivesCrashes) {
  test::TempDir dir;
  std::ofstream(dir.file("x-crash.off"), std::ios::binary) << test::read_file(test::data_path("formats/off/Wuson.off"));
  setenv("VOXTILE_TEST_READER_CRASH", "x-crash.off", 1);  // that file crashes its reader process
  const std::vector<std::string> files = {test::data_path("meshes/stanford_bunny.ply"), test::data_path("formats/off/Wuson.off"),
                                          dir.file("x-crash.off"), test::data_path("formats/fbx/spider.fbx"),
                                          test::data_path("edge/empty.obj"), test::data_path("formats/dae/duck.dae")};
  std::vector<std::string> want;
  for (const std::string& f : files) {
    try {
      const MeshLoadResult r = load_mesh(f, false, Loader::kAssimp);
      want.push_back(std::to_string(r.mesh.num_triangles()) + " " + std::to_string(r.mesh.positions.size()) + " " +
                     std::to_string(r.mesh.bounds().hi.x) + " " + r.format);
    } catch (const Error& e) {
      want.push_back(std::string("error: ") + e.what());
    }
  }
  ASSERT_NE(want[2].find("importer crashed"), std::string::npos) << want[2];
  MeshLoaderPool pool(2);
  const int kThreads = 4, kRounds = 3;
  std::vector<std::vector<std::string>> got(kThreads);
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r)
        for (size_t k = 0; k < files.size(); ++k) {
          const std::string& f = files[(k + size_t(t)) % files.size()];
          try {
            const MeshLoadResult m = pool.load(f, false, Loader::kAssimp);
            got[size_t(t)].push_back(f + " " + std::to_string(m.mesh.num_triangles()) + " " +
                                     std::to_string(m.mesh.positions.size()) + " " + std::to_string(m.mesh.bounds().hi.x) +
                                     " " + m.format);
          } catch (const Error& e) {
            got[size_t(t)].push_back(f + " error: " + e.what());
          }
        }
    });
  for (std::thread& w : workers) w.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(got[size_t(t)].size(), size_t(kRounds) * files.size());
    for (int r = 0; r < kRounds; ++r)
      for (size_t k = 0; k < files.size(); ++k) {
        const size_t f = (k + size_t(t)) % files.size();
        EXPECT_EQ(got[size_t(t)][size_t(r) * files.size() + k], files[f] + " " + want[f]);
      }
  }
  // Still serving after 12 crashes.
  EXPECT_EQ(pool.load(test::data_path("formats/ply/cube_binary.ply")).mesh.num_triangles(), 12u);
  EXPECT_EQ(pool.inspect(test::data_path("edge/ply_points_bin.ply")).points, 8u);
  unsetenv("VOXTILE_TEST_READER_CRASH");
}

// This process's children: (pid, command line with spaces for NULs). A child is listed once its
// command line is there: a spawned child may still be inside execve (its command line empty) when
// posix_spawn returns, which waits only until the child has left this process's memory.
std::vector<std::pair<int, std::string>> child_commands() {
  std::vector<std::pair<int, std::string>> out;
  for (int attempt = 0; attempt < 500; ++attempt, std::this_thread::sleep_for(std::chrono::milliseconds(10))) {
    out.clear();
    bool complete = true;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::istringstream children(test::read_file((task.path() / "children").string()));
      for (int pid; children >> pid;) {
        std::string cmd = test::read_file("/proc/" + std::to_string(pid) + "/cmdline");
        complete = complete && !cmd.empty();
        std::replace(cmd.begin(), cmd.end(), '\0', ' ');
        out.emplace_back(pid, cmd);
      }
    }
    if (complete) break;
  }
  return out;
}

// A reader started while this process has other threads is this program started again (a forked
// copy of a process with threads can wait forever on a lock another thread held): so are the
// pool's first reader and the one that replaces a crashed reader, and both serve.
TEST(Loader, ReadersStartedBesideOtherThreadsAreNewProcessImages) {
  struct OtherThread {  // waits for the whole test
    std::mutex m;
    std::unique_lock<std::mutex> held{m};
    std::thread t{[this] { std::lock_guard<std::mutex> wait(m); }};
    ~OtherThread() {
      held.unlock();
      t.join();
    }
  } other;
  test::TempDir dir;
  std::ofstream(dir.file("y-crash.off"), std::ios::binary) << test::read_file(test::data_path("formats/off/Cube.off"));
  setenv("VOXTILE_TEST_READER_CRASH", "y-crash.off", 1);
  {
    MeshLoaderPool pool(1);
    auto readers = [] {
      std::vector<int> pids;
      for (const auto& [pid, cmd] : child_commands())
        if (cmd.find("--voxtile-internal-mesh-reader") != std::string::npos) pids.push_back(pid);
      return pids;
    };
    const std::vector<int> first = readers();
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(pool.load(test::data_path("formats/off/Wuson.off"), false, Loader::kAssimp).mesh.num_triangles(), 3732u);
    EXPECT_THROW(
        try { pool.load(dir.file("y-crash.off"), false, Loader::kAssimp); } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("importer crashed"), std::string::npos) << e.what();
          throw;
        },
        Error);
    const std::vector<int> second = readers();
    std::string all;
    for (const auto& [pid, cmd] : child_commands()) all += std::to_string(pid) + ": " + cmd + "\n";
    ASSERT_EQ(second.size(), 1u) << all;
    EXPECT_NE(second[0], first[0]);
    EXPECT_EQ(pool.load(test::data_path("formats/off/Cube.off"), false, Loader::kAssimp).mesh.num_triangles(), 12u);
  }
  unsetenv("VOXTILE_TEST_READER_CRASH");
}

// voxtile started with the readers' argument but without their socket says so and fails.
TEST(Loader, TheReaderArgumentAloneIsRefused) {
  const test::RunResult r = test::run_voxtile({"--voxtile-internal-mesh-reader", "0"}, "exec 3<&-; ");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is voxtile's own"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace voxtile
