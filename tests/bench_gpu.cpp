// GPU voxelizer benchmark: per-stage CUDA-event times (median of N runs after warm-up), triangles
// per second, pairs, bricks and active voxels, as Markdown table rows. Every configuration is
// also checked once against the CPU reference when --check is given.
//   voxtile_bench [--runs 10] [--warmup 3] [--check] [--mode conservative|thin] [--tile-triangles M]
//                 [--sort-pairs] [--read-pairs-first] [--fine-kernel rows|spread|ranges|auto]
//                 [--value-tiles auto|tile|octant] [--targets binary,count,distance] MESH:RES[,RES...] ...
//   voxtile_bench --bucket [--attrs bary] [--runs 10] [--check] MESH:RES[,RES...] ...   (A-buffer)
// Each target is timed on its own (a run of `voxtile voxelize -t T`); --targets a+b+c times one
// multi-target run (stage names then carry the target, e.g. fine:count).
#include <openvdb/openvdb.h>
#include <openvdb/tools/MeshToVolume.h>
#include <openvdb/tools/SignedFloodFill.h>
#include <openvdb/tools/VolumeToMesh.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/bucket.h"
#include "core/error.h"
#include "core/inside_grid.h"
#include "core/timer.h"
#include "core/voxelize.h"
#include "io/mesh_reader.h"
#include "io/png.h"
#include "kernels/api.h"

using namespace voxtile;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

// "stage 1.234, stage 0.567" of the medians, in first-seen order, with `digits` decimals.
static std::string stage_list(const std::vector<std::string>& order, std::map<std::string, std::vector<double>>& ms,
                              int digits = 3) {
  std::string out;
  char cell[128];
  for (const std::string& st : order) {
    std::snprintf(cell, sizeof(cell), "%s%s %.*f", out.empty() ? "" : ", ", st.c_str(), digits, median(ms[st]));
    out += cell;
  }
  return out;
}

// "MESH:RES[,RES...]" -> the mesh path and the resolutions.
static std::pair<std::string, std::vector<int>> parse_job(const std::string& job) {
  const size_t colon = job.rfind(':');
  std::vector<int> resolutions;
  std::stringstream rs(job.substr(colon + 1));
  for (std::string r; std::getline(rs, r, ',');) resolutions.push_back(std::stoi(r));
  return {job.substr(0, colon), resolutions};
}

// A-buffer bucketing: per-stage medians, fragments, fragments per second (GPU total, and with the
// download of the lists to host memory).
static int run_bucket_bench(const std::vector<std::string>& jobs, int runs, int warmup, bool check, VoxelMode mode,
                            uint32_t attrs, const std::string& attr_names) {
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  std::cout << "GPU: " << gpu.device_name() << "; A-buffer bucketing, mode " << mode_name(mode) << ", attributes "
            << (attr_names.empty() ? "none" : attr_names) << "; median of " << runs << " runs after " << warmup
            << " warm-up runs; times in ms (CUDA events)\n\n";
  const char* stages[] = {"transform", "classify", "sort_triangles", "emit", "sort_fragments", "rle", "attributes"};
  std::cout << "| mesh | triangles | grid | transform | classify | sort tris | emit | sort frags | rle | attributes | "
               "GPU total | download | fragments | voxels | Gfrag/s (GPU) | Gfrag/s (with download) |"
            << (check ? " = CPU |" : "") << "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
            << (check ? "---|" : "") << "\n";
  for (const std::string& job : jobs) {
    const auto [path, resolutions] = parse_job(job);
    const Mesh mesh = load_mesh(path).mesh;
    const std::string name = path.substr(path.rfind('/') + 1);
    for (int res : resolutions) {
      GridOptions go;
      go.resolution = res;
      const GridSpec spec = make_grid_spec(mesh.bounds(), go);
      BucketOptions o;
      o.mode = mode;
      o.attrs = attrs;
      std::map<std::string, std::vector<double>> ms;
      std::vector<double> totals, with_download;
      Buckets result;
      for (int r = 0; r < warmup + runs; ++r) {
        VoxelizeStats st;
        gpu.set_mesh(mesh);
        result = gpu.bucket(spec, o, &st);
        if (r < warmup) continue;
        double total = 0, download = 0;
        for (const auto& [stage, t] : st.stage_ms) {
          ms[stage].push_back(t);
          if (stage == "download") download = t;
          else if (stage != "upload" && stage != "gpu_total" && stage != "wall") total += t;
        }
        totals.push_back(total);
        with_download.push_back(total + download);
      }
      std::string cells;
      char row[1024];
      for (const char* s : stages) {
        std::snprintf(row, sizeof(row), " %.3f |", median(ms[s]));
        cells += row;
      }
      std::string eq;
      if (check) eq = bucket_cpu(mesh, spec, o).checksum() == result.checksum() ? " yes |" : " **NO** |";
      const double gpu_ms = median(totals), all_ms = median(with_download);
      const double frags = double(result.num_fragments());
      std::snprintf(row, sizeof(row), "| %s | %zu | %dx%dx%d |%s %.3f | %.3f | %.0f | %zu | %.2f | %.2f |%s\n", name.c_str(),
                    mesh.num_triangles(), spec.dims.x, spec.dims.y, spec.dims.z, cells.c_str(), gpu_ms,
                    median(ms["download"]), frags, result.num_voxels(), frags / gpu_ms / 1e6, frags / all_ms / 1e6,
                    eq.c_str());
      std::cout << row << std::flush;
    }
  }
  return 0;
}

// Calls f(mesh, name, spec) for every MESH:RES job, the mesh loaded once and set on `gpu`.
template <class F>
static void for_each_grid(const std::vector<std::string>& jobs, Voxelizer& gpu, int pad, F&& f) {
  for (const std::string& job : jobs) {
    const auto [path, resolutions] = parse_job(job);
    const Mesh mesh = load_mesh(path).mesh;
    gpu.set_mesh(mesh);
    const std::string name = path.substr(path.rfind('/') + 1);
    for (int res : resolutions) {
      GridOptions go;
      go.resolution = res;
      go.pad = pad;
      f(mesh, name, make_grid_spec(mesh.bounds(), go));
    }
  }
}

// Solid and sdf targets: GPU stages (inside_*, band_*), the host's merge and sign, the CPU
// reference, and OpenVDB's meshToLevelSet (CPU, TBB) on the same voxel size and band, with the
// sign of every band voxel compared.
static int run_solid_bench(const std::vector<std::string>& jobs, int runs, int warmup, const std::string& target_list,
                           InsideMethod inside, int band, bool vdb, bool check) {
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  openvdb::initialize();
  std::cout << "GPU: " << gpu.device_name() << "; inside " << inside_name(inside) << "; band " << band << "; median of "
            << runs << " runs after " << warmup << " warm-up runs; ms (CUDA events; host steps by the clock)\n\n";
  std::cout << "| mesh | triangles | grid | target | GPU stages | GPU total (excl. download) | download | host merge/sign | "
               "active voxels | bricks + interior runs (run bricks) |" << (vdb ? " OpenVDB meshToLevelSet | x faster | same sign | where they differ, right by the brute-force winding number |" : "")
            << (check ? " = CPU | CPU ms |" : "") << "\n|---|---|---|---|---|---|---|---|---|---|"
            << (vdb ? "---|---|---|---|" : "") << (check ? "---|---|" : "") << "\n";
  for_each_grid(jobs, gpu, band + 1, [&](const Mesh& mesh, const std::string& name, const GridSpec& spec) {
      std::stringstream ts(target_list);
      for (std::string group; std::getline(ts, group, ',');) {
        std::replace(group.begin(), group.end(), '+', ',');
        const std::vector<TargetSpec> targets = parse_target_list(group);
        VoxelizeOptions o;
        o.inside = inside;
        o.band = band;
        std::map<std::string, std::vector<double>> ms;
        std::vector<double> totals, downloads, hosts;
        std::vector<SparseGrid> result;
        std::vector<std::string> order;
        for (int r = 0; r < warmup + runs; ++r) {
          VoxelizeStats st;
          result = gpu.voxelize(spec, o, targets, &st);
          if (r < warmup) continue;
          double total = 0, down = 0, host = 0;
          for (const auto& [stage, t] : st.stage_ms) {
            if (stage == "upload" || stage == "wall" || stage.find("gpu_total") != std::string::npos ||
                stage.find("_wall") != std::string::npos)
              continue;
            if (stage.find("download") != std::string::npos) down += t;
            else if (stage == "solid_merge" || stage == "sdf_sign") host += t;
            else {
              total += t;
              if (!ms.count(stage)) order.push_back(stage);
              ms[stage].push_back(t);
            }
          }
          totals.push_back(total);
          downloads.push_back(down);
          hosts.push_back(host);
        }
        const std::string stages = stage_list(order, ms);
        char cell[256];
        std::string extra;
        if (vdb) {
          // OpenVDB's meshToLevelSet: same voxel size, half-width = band, world-space points.
          std::vector<openvdb::Vec3s> pts(mesh.positions.size());
          for (size_t i = 0; i < pts.size(); ++i) {
            const Vec3f g = spec.world_to_grid({mesh.positions[i].x, mesh.positions[i].y, mesh.positions[i].z});
            pts[i] = openvdb::Vec3s(g.x - 0.5f, g.y - 0.5f, g.z - 0.5f);  // voxel centres at integer coordinates
          }
          std::vector<openvdb::Vec3I> tris(mesh.num_triangles());
          for (size_t t = 0; t < tris.size(); ++t)
            tris[t] = openvdb::Vec3I(mesh.indices[3 * t], mesh.indices[3 * t + 1], mesh.indices[3 * t + 2]);
          auto xform = openvdb::math::Transform::createLinearTransform(1.0);
          std::vector<double> vms;
          openvdb::FloatGrid::Ptr ls;
          for (int r = 0; r < std::max(1, runs / 3); ++r) {
            const auto t0 = Clock::now();
            ls = openvdb::tools::meshToLevelSet<openvdb::FloatGrid>(*xform, pts, tris, float(band));
            vms.push_back(ms_since(t0));
          }
          const SparseGrid* sdf = nullptr;
          for (const SparseGrid& g : result)
            if (g.level_set) sdf = &g;
          uint64_t same = 0, compared = 0;
          std::vector<std::array<int32_t, 3>> differ;  // voxels where the signs differ
          std::vector<uint8_t> ours_inside;
          if (sdf) {
            auto acc = ls->getConstAccessor();
            sdf->for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int, uint64_t at) {
              const float v = sdf->fvalues[at];
              const float w = acc.getValue(openvdb::Coord(i, j, k));
              if (std::fabs(v) < 0.5f * float(spec.voxel_size.x)) return;  // on the surface: either sign
              ++compared;
              same += (v < 0) == (w < 0);
              if ((v < 0) != (w < 0)) {
                differ.push_back({i, j, k});
                ours_inside.push_back(v < 0);
              }
            });
          }
          std::string verdict = "-";
          if (!differ.empty()) {
            // Who is right where the signs differ: the generalized winding number of the voxel centre by
            // brute force in double (every triangle's solid angle, Van Oosterom and Strackee), on up to
            // 400 of those voxels taken at even steps; "inside" at >= 0.5.
            const size_t n = std::min<size_t>(400, differ.size()), stride = differ.size() / n;
            std::vector<std::array<double, 3>> p(mesh.positions.size());
            for (size_t v = 0; v < p.size(); ++v)
              p[v] = {(double(mesh.positions[v].x) - spec.origin.x) / spec.voxel_size.x,
                      (double(mesh.positions[v].y) - spec.origin.y) / spec.voxel_size.y,
                      (double(mesh.positions[v].z) - spec.origin.z) / spec.voxel_size.z};
            std::vector<double> wn(n);
            tbb::parallel_for(size_t(0), n, [&](size_t s) {
              const auto& c = differ[s * stride];
              const double q[3] = {c[0] + 0.5, c[1] + 0.5, c[2] + 0.5};
              double sum = 0;
              for (size_t t = 0; t < mesh.num_triangles(); ++t) {
                double a[3], b[3], d[3];
                for (int x = 0; x < 3; ++x) {
                  a[x] = p[mesh.indices[3 * t]][x] - q[x];
                  b[x] = p[mesh.indices[3 * t + 1]][x] - q[x];
                  d[x] = p[mesh.indices[3 * t + 2]][x] - q[x];
                }
                const double la = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
                const double lb = std::sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
                const double ld = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
                const double det = a[0] * (b[1] * d[2] - b[2] * d[1]) - a[1] * (b[0] * d[2] - b[2] * d[0]) +
                                   a[2] * (b[0] * d[1] - b[1] * d[0]);
                const double ab = a[0] * b[0] + a[1] * b[1] + a[2] * b[2], ad = a[0] * d[0] + a[1] * d[1] + a[2] * d[2];
                const double bd = b[0] * d[0] + b[1] * d[1] + b[2] * d[2];
                sum += 2 * std::atan2(det, la * lb * ld + ab * ld + ad * lb + bd * la);
              }
              wn[s] = sum / (4 * M_PI);
            });
            size_t ours_right = 0, near_half = 0;
            for (size_t s = 0; s < n; ++s) {
              ours_right += (wn[s] >= 0.5) == bool(ours_inside[s * stride]);
              near_half += std::fabs(wn[s] - 0.5) < 0.05;
            }
            verdict = std::to_string(ours_right) + " of " + std::to_string(n) + " sampled: ours (" +
                      std::to_string(near_half) + " within 0.05 of 1/2)";
          }
          std::snprintf(cell, sizeof(cell), " %.1f | %.1f | %s | %s |", median(vms), median(vms) / median(totals),
                        sdf ? (std::to_string(same) + " / " + std::to_string(compared)).c_str() : "-", verdict.c_str());
          extra += cell;
        }
        if (check) {
          CpuVoxelizer cpu;
          cpu.set_mesh(mesh);
          const auto t0 = Clock::now();
          const auto c = cpu.voxelize(spec, o, targets);
          const double cms = ms_since(t0);
          bool eq = c.size() == result.size();
          for (size_t i = 0; eq && i < c.size(); ++i) eq = c[i].checksum() == result[i].checksum();
          std::snprintf(cell, sizeof(cell), " %s | %.0f |", eq ? "yes" : "**NO**", cms);
          extra += cell;
        }
        std::printf("| %s | %zu | %dx%dx%d | %s | %s | %.3f | %.3f | %.3f | %llu | %zu + %zu (%llu) |%s\n", name.c_str(),
                    mesh.num_triangles(), spec.dims.x, spec.dims.y, spec.dims.z, group.c_str(), stages.c_str(),
                    median(totals), median(downloads), median(hosts), (unsigned long long)result[0].active_voxels(),
                    result[0].keys.size(), result[0].runs.size(), (unsigned long long)result[0].run_bricks(),
                    extra.c_str());
        std::fflush(stdout);
      }
  });
  return 0;
}

// Marching cubes of the sdf (signed off its band by the solid) on the GPU, the CPU reference, and
// OpenVDB's volumeToMesh (CPU, TBB) of the same level set in the same run.
// Pictures: per mesh and grid, the scene building (host), the GPU render's stages (upload, render,
// download) at 1024x1024 and 256x256, the CPU render, the PNG encoding, and whether GPU = CPU.
static int run_render_bench(const std::vector<std::string>& jobs, int runs, int warmup, const std::string& target_list,
                            bool check) {
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  std::cout << "GPU: " << gpu.device_name() << "; median of " << runs << " runs after " << warmup
            << " warm-up runs; ms (GPU stages by CUDA events, totals by the clock)\n\n";
  std::cout << "| mesh | grid | target | drawn voxels | picture | scene (host) | GPU stages | GPU total | "
               "Mpixel/s (render) | PNG encode |" << (check ? " = CPU | CPU ms |" : "") << "\n|---|---|---|---|---|---|---|---|---|---|"
            << (check ? "---|---|" : "") << "\n";
  for_each_grid(jobs, gpu, 0, [&](const Mesh&, const std::string& name, const GridSpec& spec) {
    VoxelizeOptions vo;
    const std::vector<SparseGrid> grids = gpu.voxelize(spec, vo, parse_target_list(target_list));
    std::vector<const SparseGrid*> ptrs;
    for (const SparseGrid& g : grids) ptrs.push_back(&g);
    for (int size : {1024, 256}) {
      RenderOptions o;
      o.width = o.height = size;
      std::map<std::string, std::vector<double>> ms;
      std::vector<std::string> order;
      std::vector<double> totals, scene_ms, png_ms;
      Image img;
      RenderScene scene;
      for (int r = 0; r < warmup + runs; ++r) {
        const auto ts = std::chrono::steady_clock::now();
        scene = make_scene(ptrs, o);
        const double sms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - ts).count();
        std::vector<std::pair<std::string, double>> st;
        const auto t0 = std::chrono::steady_clock::now();
        img = gpu_render(scene, o, 0, &st);
        const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        const auto tp = std::chrono::steady_clock::now();
        write_png(img, "/tmp/voxtile_bench_render.png");
        const double pms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tp).count();
        if (r < warmup) continue;
        totals.push_back(total);
        scene_ms.push_back(sms);
        png_ms.push_back(pms);
        for (const auto& [stage, t] : st) {
          if (!ms.count(stage)) order.push_back(stage);
          ms[stage].push_back(t);
        }
      }
      const std::string stages = stage_list(order, ms);
      char cell[128];
      std::string extra;
      if (check) {
        const auto t0 = std::chrono::steady_clock::now();
        const Image cpu = render_cpu(scene, o);
        const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::snprintf(cell, sizeof(cell), " %s | %.1f |", cpu.pixels == img.pixels ? "yes" : "NO", cpu_ms);
        extra = cell;
      }
      std::printf("| %s | %dx%dx%d | %s | %llu | %dx%d | %.2f | %s | %.2f | %.0f | %.1f |%s\n", name.c_str(), spec.dims.x,
                  spec.dims.y, spec.dims.z, target_list.c_str(), (unsigned long long)scene.voxels, size, size,
                  median(scene_ms), stages.c_str(), median(totals), double(size) * size / (median(ms["render"]) * 1e3),
                  median(png_ms), extra.c_str());
      std::fflush(stdout);
    }
  });
  return 0;
}

static int run_mesh_bench(const std::vector<std::string>& jobs, int runs, int warmup, bool check) {
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  openvdb::initialize();
  std::cout << "GPU: " << gpu.device_name() << "; median of " << runs << " runs after " << warmup
            << " warm-up runs; ms (GPU stages by CUDA events, totals by the clock)\n\n";
  std::cout << "| mesh | grid | band voxels | GPU stages | GPU total (with transfers) | Mtri/s | triangles | "
               "OpenVDB volumeToMesh | x faster |" << (check ? " = CPU | CPU ms |" : "") << "\n|---|---|---|---|---|---|---|---|---|"
            << (check ? "---|---|" : "") << "\n";
  for_each_grid(jobs, gpu, 4, [&](const Mesh& mesh, const std::string& name, const GridSpec& spec) {
    (void)mesh;
    VoxelizeOptions o;
    o.band = 3;
    const std::vector<SparseGrid> grids = gpu.voxelize(spec, o, parse_target_list("sdf,solid"));
    std::map<std::string, std::vector<double>> ms;
    std::vector<std::string> order;
    std::vector<double> totals;
    Mesh m;
    for (int r = 0; r < warmup + runs; ++r) {
      std::vector<std::pair<std::string, double>> st;
      const auto t0 = std::chrono::steady_clock::now();
      m = gpu_grid_to_mesh(grids[0], {0.0f, true}, &grids[1], 0, &st);
      const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r < warmup) continue;
      totals.push_back(total);
      for (const auto& [stage, t] : st) {
        if (!ms.count(stage)) order.push_back(stage);
        ms[stage].push_back(t);
      }
    }
    const std::string stages = stage_list(order, ms, 2);
    char cell[128];
    // OpenVDB: the same level set (voxel centres at integer coordinates), volumeToMesh at 0.
    openvdb::FloatGrid::Ptr ls = openvdb::FloatGrid::create(grids[0].background);
    ls->setGridClass(openvdb::GRID_LEVEL_SET);
    auto acc = ls->getAccessor();
    grids[0].for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int, uint64_t at) {
      acc.setValue(openvdb::Coord(i, j, k), grids[0].fvalues[at]);
    });
    openvdb::tools::signedFloodFill(ls->tree());
    std::vector<double> vdb_ms;
    size_t vdb_tris = 0;
    for (int r = 0; r < std::max(1, runs / 3); ++r) {
      std::vector<openvdb::Vec3s> pts;
      std::vector<openvdb::Vec3I> tris;
      std::vector<openvdb::Vec4I> quads;
      const auto t0 = std::chrono::steady_clock::now();
      openvdb::tools::volumeToMesh(*ls, pts, tris, quads, 0.0, 0.0);
      vdb_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      vdb_tris = tris.size() + 2 * quads.size();
    }
    std::string extra;
    if (check) {
      const auto t0 = std::chrono::steady_clock::now();
      const Mesh cpu = grid_to_mesh(grids[0], {0.0f, true}, &grids[1]);
      const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const bool same = cpu.positions.size() == m.positions.size() && cpu.indices == m.indices &&
                        std::memcmp(cpu.positions.data(), m.positions.data(), m.positions.size() * sizeof(Vec3f)) == 0 &&
                        std::memcmp(cpu.normals.data(), m.normals.data(), m.normals.size() * sizeof(Vec3f)) == 0;
      std::snprintf(cell, sizeof(cell), " %s | %.1f |", same ? "yes" : "NO", cpu_ms);
      extra = cell;
    }
    const double t = median(totals), v = median(vdb_ms);
    std::printf("| %s | %dx%dx%d | %llu | %s | %.2f | %.0f | %zu | %.1f (%zu triangles) | %.0f |%s\n", name.c_str(), spec.dims.x,
                spec.dims.y, spec.dims.z, (unsigned long long)grids[0].active_voxels(), stages.c_str(), t,
                double(m.num_triangles()) / (t * 1e3), m.num_triangles(), v, vdb_tris, v / t, extra.c_str());
    std::fflush(stdout);
  });
  return 0;
}

int main(int argc, char** argv) {
  serve_as_mesh_reader_if_asked(argc, argv);  // (a reader process load_mesh started: never returns)
  int runs = 10, warmup = 3;
  bool check = false;
  GpuOptions gopt;
  VoxelMode mode = VoxelMode::kConservative;
  std::vector<std::string> jobs;
  std::string target_list = "binary,count,distance";
  bool bucket = false;
  std::string attrs = "bary";
  bool solid = false, vdb = false, mesh_bench = false, render_bench = false;
  InsideMethod inside = InsideMethod::kWinding;
  int band = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = std::atoi(argv[++i]);
    else if (a == "--check") check = true;
    else if (a == "--targets" && i + 1 < argc) target_list = argv[++i];
    else if (a == "--bucket") bucket = true;
    else if (a == "--solid") solid = true;
    else if (a == "--vdb") vdb = true;
    else if (a == "--mesh") mesh_bench = true;
    else if (a == "--render") render_bench = true;
    else if (a == "--inside" && i + 1 < argc) inside = parse_inside(argv[++i]);
    else if (a == "--band" && i + 1 < argc) {
      const std::string w = argv[++i];
      band = w == "all" ? kBandAll : std::atoi(w.c_str());
    } else if (a == "--attrs" && i + 1 < argc)
      attrs = argv[++i];
    else if (a == "--merge-by-key") gopt.merge_by_brick_key = true;
    else if (a == "--sort-pairs") gopt.sort_pairs = true;
    else if (a == "--read-pairs-first") gopt.read_pairs_first = true;
    else if ((a == "--fine-kernel" || a == "--value-tiles") && i + 1 < argc) {  // api.h FineKernel, ValueTiles
      const bool kernel = a == "--fine-kernel";
      const std::vector<std::string> names = kernel ? std::vector<std::string>{"rows", "spread", "ranges", "auto"}
                                                    : std::vector<std::string>{"auto", "tile", "octant"};
      const auto it = std::find(names.begin(), names.end(), std::string(argv[++i]));
      if (it == names.end()) {
        std::cerr << "voxtile_bench: error: " << a << " takes";
        for (const std::string& n : names) std::cerr << " " << n;
        std::cerr << "\n";
        return 2;
      }
      if (kernel)
        gopt.fine_kernel = FineKernel(it - names.begin());
      else
        gopt.value_tiles = ValueTiles(it - names.begin());
    } else if (a == "--tile-triangles" && i + 1 < argc)
      gopt.max_tile_triangles = uint32_t(std::atoi(argv[++i]));
    else if (a == "--order" && i + 1 < argc) {
      const std::string v = argv[++i];
      gopt.triangle_order = v == "mesh" ? TriangleOrder::kMesh : v == "morton" ? TriangleOrder::kMorton : TriangleOrder::kAuto;
    }
    else if (a == "--mode" && i + 1 < argc) mode = std::string(argv[++i]) == "thin" ? VoxelMode::kThin : VoxelMode::kConservative;
    else jobs.push_back(a);
  }
  try {
    if (mesh_bench) return run_mesh_bench(jobs, runs, warmup, check);
    if (render_bench) return run_render_bench(jobs, runs, warmup, target_list, check);
    if (solid) return run_solid_bench(jobs, runs, warmup, target_list, inside, band, vdb, check);
    if (bucket) return run_bucket_bench(jobs, runs, warmup, check, mode, parse_bucket_attrs(attrs), attrs);
    const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer(gopt);
  Voxelizer& gpu = *gpu_owner;
    std::cout << "GPU: " << gpu.device_name() << "; mode " << mode_name(mode) << "; virtual tiles of at most "
              << gopt.max_tile_triangles << " triangles" << "; median of " << runs << " runs after "
              << warmup << " warm-up runs; times in ms (CUDA events)\n\n";
    const char* stages[] = {"transform", "order", "coarse", "sort", "tiles", "fine", "merge", "download"};
    std::cout
        << "| mesh | triangles | grid | target | transform | order | coarse | sort | tiles | fine | merge | GPU total "
           "(excl. download) | download | Mtri/s | pairs | bricks | active voxels | order | tiles | virtual tiles |"
        << (check ? " = CPU |" : "")
        << "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        << (check ? "---|" : "") << "\n";
    for_each_grid(jobs, gpu, 0, [&](const Mesh& mesh, const std::string& name, const GridSpec& spec) {
        std::vector<std::string> groups;
        std::stringstream ts(target_list);
        for (std::string t; std::getline(ts, t, ',');) groups.push_back(t);
        for (std::string group : groups) {
          std::replace(group.begin(), group.end(), '+', ',');
          const std::vector<TargetSpec> targets = parse_target_list(group);
          VoxelizeOptions o;
          o.mode = mode;
          std::map<std::string, std::vector<double>> ms;
          std::vector<double> totals;
          VoxelizeStats last;
          SparseGrid result;
          for (int r = 0; r < warmup + runs; ++r) {
            VoxelizeStats st;
            std::vector<SparseGrid> grids = gpu.voxelize(spec, o, targets, &st);
            result = std::move(grids[0]);
            if (r < warmup) continue;
            double total = 0;
            std::map<std::string, double> sums;  // "fine:count" counts as "fine"
            for (const auto& [stage, t] : st.stage_ms) {
              sums[stage.substr(0, stage.find(':'))] += t;
              if (stage.rfind("download", 0) != 0 && stage != "upload" && stage != "gpu_total" && stage != "wall")
                total += t;
            }
            for (const auto& [stage, t] : sums) ms[stage].push_back(t);
            totals.push_back(total);
            last = st;
          }
          const double gpu_ms = median(totals);
          char row[1024];
          std::string cells;
          for (const char* s : stages) {
            if (std::string(s) == "download") continue;
            std::snprintf(row, sizeof(row), " %.3f |", median(ms[s]));
            cells += row;
          }
          std::string eq;
          if (check) {
            const SparseGrid cpu = voxelize_cpu_targets(mesh, spec, o, targets)[0];
            eq = cpu.checksum() == result.checksum() ? " yes |" : " **NO** |";
          }
          const char* order = last.morton_order ? "morton" : "mesh";
          std::snprintf(
              row, sizeof(row),
              "| %s | %zu | %dx%dx%d | %s |%s %.3f | %.3f | %.0f | %llu | %llu | %llu | %s | %llu | %llu |%s\n",
              name.c_str(), mesh.num_triangles(), spec.dims.x, spec.dims.y, spec.dims.z, group.c_str(), cells.c_str(),
              gpu_ms, median(ms["download"]), mesh.num_triangles() / gpu_ms / 1e3, (unsigned long long)last.tile_pairs,
              (unsigned long long)last.bricks, (unsigned long long)last.active_voxels, order,
              (unsigned long long)last.tiles, (unsigned long long)last.virtual_tiles, eq.c_str());
          std::cout << row << std::flush;
        }
    });
  } catch (const Error& e) {
    std::cerr << "voxtile_bench: error: " << e.what() << "\n";
    return int(e.kind());
  }
  return 0;
}
