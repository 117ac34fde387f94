// CPU reference of A-buffer bucketing: count fragments per triangle, scan, emit (voxel, triangle)
// pairs in triangle order, sort them, run-length encode the voxels, compute the attributes.
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>

#include "core/bucket.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/progress.h"
#include "core/timer.h"
#include "core/voxelizer.h"

namespace voxtile {
namespace {

struct Frag {
  uint64_t voxel;
  uint32_t tri;
  bool operator<(const Frag& o) const { return voxel != o.voxel ? voxel < o.voxel : tri < o.tri; }
};

}  // namespace

uint32_t parse_bucket_attrs(const std::string& text) {
  uint32_t attrs = 0;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = text.find(',', start);
    const std::string a = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (a == "bary") attrs |= kAttrBary;
    else if (a == "normal") attrs |= kAttrNormal;
    else if (a == "uv") attrs |= kAttrUv;
    else if (a == "material") attrs |= kAttrMaterial;
    else fail(ErrorKind::kUsage, "unknown attribute '" + a + "' (expected bary, normal, uv or material)");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return attrs;
}

void check_bucket_attrs(const Mesh& mesh, uint32_t attrs) {
  if ((attrs & kAttrUv) && mesh.uvs.empty()) fail(ErrorKind::kInput, "the mesh has no texture coordinates (--attrs uv)");
}

uint64_t Buckets::checksum() const {
  Hasher h;
  h.pod(spec.dims.x);
  h.pod(spec.dims.y);
  h.pod(spec.dims.z);
  h.pod(attrs);
  auto arr = [&](const auto& v) {
    h.pod(uint64_t(v.size()));
    h.bytes(v.data(), v.size() * sizeof(v[0]));
  };
  arr(ijk);
  arr(offsets);
  arr(triangle);
  arr(bary);
  arr(normal);
  arr(uv);
  arr(material);
  return h.digest();
}

SparseGrid Buckets::count_grid() const {
  SparseGridBuilder b(spec, ValueType::kInt32, "fragments", "buckets");
  for (size_t v = 0; v < num_voxels(); ++v) {
    const uint32_t count = uint32_t(std::min<int64_t>(offsets[v + 1] - offsets[v], 0x7fffffff));
    b.add(ijk[3 * v], ijk[3 * v + 1], ijk[3 * v + 2], &count);
  }
  return b.build();
}

Buckets bucket_cpu(const Mesh& mesh, const GridSpec& spec, const BucketOptions& options, VoxelizeStats* stats) {
  CpuVoxelizer cpu;
  cpu.set_mesh(mesh);
  return cpu.bucket(spec, options, stats);
}

Buckets CpuVoxelizer::bucket_mesh(const GridSpec& spec, const BucketOptions& options, VoxelizeStats& stats) {
  const ThreadLimit limit(options.threads);
  const Mesh& mesh = this->mesh();
  const size_t num_tris = mesh.num_triangles();
  const VoxelBox clip{{0, 0, 0}, {spec.dims.x - 1, spec.dims.y - 1, spec.dims.z - 1}};
  auto t0 = Clock::now();
  const std::vector<Vec3f> g = to_grid_space(mesh, spec);
  auto for_each_fragment = [&](size_t t, auto&& f) {
    const TriSetup ts = setup_triangle(g[mesh.indices[3 * t]], g[mesh.indices[3 * t + 1]], g[mesh.indices[3 * t + 2]]);
    for_each_voxel(ts, options.mode, clip, spec.dims, f);
  };
  std::vector<uint64_t> offs(num_tris + 1, 0);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, num_tris, 1024), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t t = r.begin(); t < r.end(); ++t) {
      uint64_t n = 0;
      for_each_fragment(t, [&](int32_t, int32_t, int32_t) { ++n; });
      offs[t + 1] = n;
    }
  });
  std::partial_sum(offs.begin(), offs.end(), offs.begin());
  std::vector<Frag> frags(offs[num_tris]);
  progress_total(num_tris);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, num_tris, 1024), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t t = r.begin(); t < r.end(); ++t) {
      uint64_t o = offs[t];
      for_each_fragment(t, [&](int32_t i, int32_t j, int32_t k) { frags[o++] = {voxel_linear_index(i, j, k, spec.dims), uint32_t(t)}; });
    }
    progress_advance(r.size());
  });
  const double ms_emit = ms_since(t0);
  t0 = Clock::now();
  tbb::parallel_sort(frags.begin(), frags.end());
  const double ms_sort = ms_since(t0);

  t0 = Clock::now();
  Buckets out;
  out.spec = spec;
  out.attrs = options.attrs;
  const size_t m = frags.size();
  out.triangle.resize(m);
  for (size_t f = 0; f < m; ++f) {
    out.triangle[f] = int32_t(frags[f].tri);
    if (f == 0 || frags[f].voxel != frags[f - 1].voxel) {
      int32_t ijk[3];
      voxel_from_linear(frags[f].voxel, spec.dims, ijk);
      out.ijk.insert(out.ijk.end(), ijk, ijk + 3);
      out.offsets.push_back(int64_t(f));
    }
  }
  out.offsets.push_back(int64_t(m));
  const bool bary = options.attrs & kAttrBary, normal = options.attrs & kAttrNormal, uv = options.attrs & kAttrUv,
             material = options.attrs & kAttrMaterial;
  if (bary) out.bary.resize(3 * m);
  if (normal) out.normal.resize(3 * m);
  if (uv) out.uv.resize(2 * m);
  if (material) out.material.resize(m);
  const Vec3f vs{float(spec.voxel_size.x), float(spec.voxel_size.y), float(spec.voxel_size.z)};
  const size_t nv = out.num_voxels();
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nv, 256), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t v = r.begin(); v < r.end(); ++v) {
      const int32_t i = out.ijk[3 * v], j = out.ijk[3 * v + 1], k = out.ijk[3 * v + 2];
      for (int64_t f = out.offsets[v]; f < out.offsets[v + 1]; ++f) {
        const uint32_t t = uint32_t(out.triangle[size_t(f)]);
        Vec3f tv[3];
        for (int q = 0; q < 3; ++q) tv[q] = g[mesh.indices[3 * t + q]];
        float b[3];
        voxel_barycentrics(tv, i, j, k, vs, b);
        if (bary)
          for (int c = 0; c < 3; ++c) out.bary[3 * size_t(f) + c] = b[c];
        if (normal) {
          Vec3f vn[3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
          if (!mesh.normals.empty())
            for (int q = 0; q < 3; ++q) vn[q] = mesh.normals[mesh.indices[3 * t + q]];
          const Vec3f n = interpolate_normal(vn, b, world_normal(tv, vs));
          out.normal[3 * size_t(f)] = n.x;
          out.normal[3 * size_t(f) + 1] = n.y;
          out.normal[3 * size_t(f) + 2] = n.z;
        }
        if (uv) {
          const Vec2f u[3] = {mesh.uvs[mesh.indices[3 * t]], mesh.uvs[mesh.indices[3 * t + 1]], mesh.uvs[mesh.indices[3 * t + 2]]};
          const Vec2f p = interpolate_uv(u, b);
          out.uv[2 * size_t(f)] = p.x;
          out.uv[2 * size_t(f) + 1] = p.y;
        }
        if (material) out.material[size_t(f)] = int32_t(mesh.material_ids.empty() ? 0 : mesh.material_ids[t]);
      }
    }
  });
  const double ms_attrs = ms_since(t0);
  stats.add_stage("emit", ms_emit);
  stats.add_stage("sort", ms_sort);
  stats.add_stage("attributes", ms_attrs);
  return out;
}

}  // namespace voxtile
