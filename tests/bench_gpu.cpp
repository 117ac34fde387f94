// GPU voxelizer benchmark: per-stage CUDA-event times (median of N runs after warm-up), triangles
// per second, pairs, bricks and active voxels, as Markdown table rows. Every configuration is
// also checked once against the CPU reference when --check is given.
//   voxtile_bench [--runs 10] [--warmup 3] [--check] [--mode conservative|thin] [--tile-triangles M]
//                 [--targets binary,count,distance] MESH:RES[,RES...] ...
//   voxtile_bench --bucket [--attrs bary] [--runs 10] [--check] MESH:RES[,RES...] ...   (A-buffer)
// Each target is timed on its own (a run of `voxtile voxelize -t T`); --targets a+b+c times one
// multi-target run (stage names then carry the target, e.g. fine:count).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/bucket.h"
#include "core/error.h"
#include "core/voxelize.h"
#include "io/mesh_reader.h"
#include "kernels/api.h"

using namespace voxtile;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
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

int main(int argc, char** argv) {
  int runs = 10, warmup = 3;
  bool check = false;
  GpuOptions gopt;
  VoxelMode mode = VoxelMode::kConservative;
  std::vector<std::string> jobs;
  std::string target_list = "binary,count,distance";
  bool bucket = false;
  std::string attrs = "bary";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = std::atoi(argv[++i]);
    else if (a == "--check") check = true;
    else if (a == "--targets" && i + 1 < argc) target_list = argv[++i];
    else if (a == "--bucket") bucket = true;
    else if (a == "--attrs" && i + 1 < argc) attrs = argv[++i];
    else if (a == "--tile-triangles" && i + 1 < argc) gopt.max_tile_triangles = uint32_t(std::atoi(argv[++i]));
    else if (a == "--mode" && i + 1 < argc) mode = std::string(argv[++i]) == "thin" ? VoxelMode::kThin : VoxelMode::kConservative;
    else jobs.push_back(a);
  }
  try {
    if (bucket) return run_bucket_bench(jobs, runs, warmup, check, mode, parse_bucket_attrs(attrs), attrs);
    const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer(gopt);
  Voxelizer& gpu = *gpu_owner;
    std::cout << "GPU: " << gpu.device_name() << "; mode " << mode_name(mode) << "; virtual tiles of at most "
              << gopt.max_tile_triangles << " triangles" << "; median of " << runs << " runs after "
              << warmup << " warm-up runs; times in ms (CUDA events)\n\n";
    const char* stages[] = {"transform", "coarse", "sort", "tiles", "fine", "merge", "download"};
    std::cout << "| mesh | triangles | grid | target | transform | coarse | sort | tiles | fine | merge | GPU total "
                 "(excl. download) | download | Mtri/s | pairs | bricks | active voxels |"
              << (check ? " = CPU |" : "") << "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
              << (check ? "---|" : "") << "\n";
    for (const std::string& job : jobs) {
      const auto [path, resolutions] = parse_job(job);
      const Mesh mesh = load_mesh(path).mesh;
      gpu.set_mesh(mesh);
      const std::string name = path.substr(path.rfind('/') + 1);
      for (int res : resolutions) {
        GridOptions go;
        go.resolution = res;
        const GridSpec spec = make_grid_spec(mesh.bounds(), go);
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
          std::snprintf(row, sizeof(row), "| %s | %zu | %dx%dx%d | %s |%s %.3f | %.3f | %.0f | %llu | %llu | %llu |%s\n",
                        name.c_str(), mesh.num_triangles(), spec.dims.x, spec.dims.y, spec.dims.z, group.c_str(),
                        cells.c_str(), gpu_ms, median(ms["download"]), mesh.num_triangles() / gpu_ms / 1e3,
                        (unsigned long long)last.tile_pairs, (unsigned long long)last.bricks,
                        (unsigned long long)last.active_voxels, eq.c_str());
          std::cout << row << std::flush;
        }
      }
    }
  } catch (const Error& e) {
    std::cerr << "voxtile_bench: error: " << e.what() << "\n";
    return int(e.kind());
  }
  return 0;
}
