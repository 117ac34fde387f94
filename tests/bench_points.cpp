// Benchmarks of the CSG point pipeline, the CSG solid and point binning (GPU), as Markdown tables.
//   voxtile_bench_points csg [--runs 20] [--persisted 10000000] [--prims 256] [--new 150000]
//       The seed's workload: one step adding a sphere (150K new samples) to 10M persisted samples
//       and 256 earlier spheres; per-phase medians for each scan method, and the memory-bandwidth
//       floor of the step from the measured device-to-device copy bandwidth.
//   voxtile_bench_points bin [--runs 5] [--points 100000000] [--check]   points -> voxels
//   voxtile_bench_points solid [--runs 5] SCRIPT:RES[,RES...] ...         the CSG solid
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/csg.h"
#include "core/error.h"
#include "core/points.h"
#include "io/points_io.h"
#include "kernels/api.h"
#include "kernels/testing.h"

using namespace voxtile;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

static CsgPrimitive sphere(float x, float y, float z, float r, bool sub) {
  std::ostringstream s;
  s << (sub ? "sub" : "add") << " sphere center " << x << " " << y << " " << z << " radius " << r << "\n";
  return parse_csg(s.str(), "bench").prims[0];
}

// Surface samples of `prims` (sample_csg), about `n` in all, tagged with primitive ids from `first_id`.
static CsgSamples samples_of(const std::vector<CsgPrimitive>& prims, uint64_t n, uint32_t first_id) {
  CsgScript s;
  s.source = "bench";
  s.prims = prims;
  double area = 0;
  for (const CsgPrimitive& p : prims) area += csg_area(p);
  CsgSamples out = sample_csg(s, {double(n) / area}, uint64_t(1) << 40);
  for (SampleParams& p : out.params) p.prim += first_id;
  return out;
}

static int bench_csg(int runs, uint64_t persisted, uint32_t nprims, uint64_t nnew) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<CsgPrimitive> prims;
  for (uint32_t k = 0; k < nprims; ++k)
    prims.push_back(sphere(u(rng), u(rng), u(rng), 0.05f + 0.1f * u(rng), k % 4 == 3));
  const CsgSamples old_samples = samples_of(prims, persisted, 0);
  const std::vector<Vec3f>& pos = old_samples.positions;
  const std::vector<SampleParams>& par = old_samples.params;
  persisted = pos.size();
  const CsgPrimitive added = sphere(0.5f, 0.5f, 0.5f, 0.15f, false);
  const CsgSamples new_samples = samples_of({added}, nnew, nprims);
  const std::vector<Vec3f>& npos = new_samples.positions;
  const std::vector<SampleParams>& npar = new_samples.params;
  nnew = npos.size();
  // CPU count of the step's survivors.
  std::vector<CsgPrimitive> all = prims;
  all.push_back(added);
  uint64_t expect = 0;
  for (const Vec3f& p : pos) expect += csg_keep_old(all.data(), nprims, nprims + 1, p);
  for (const Vec3f& p : npos) expect += csg_keep_new(all.data(), nprims, nprims + 1, p);

  const double bw = gpu_copy_bandwidth();
  const uint64_t n = persisted + nnew;
  // Bytes the step must move: positions read by the intersect pass, keep words written and read,
  // positions and parameters read and written by the scatter (kept ones), and the tile counts.
  const double bytes = double(n) * 12 + double(n) / 8 * 2 + double(n) * 28 + double(expect) * 28 + double(n) / 1024 * 20;
  const double floor_ms = bytes / (bw * 1e9) * 1e3;
  std::cout << "Seed workload: " << persisted << " persisted samples, " << nprims << " sphere primitives, one new sphere with "
            << nnew << " samples; median of " << runs << " steps; " << expect << " samples survive (CPU: "
            << expect << ")\n";
  std::cout << "Measured device-to-device copy bandwidth: " << bw << " GB/s; bytes moved by a step: " << bytes / 1e6
            << " MB; bandwidth floor: " << floor_ms << " ms\n\n";
  std::cout << "| scan | intersect | scan | compact | finalize | total | samples/s | x floor | survivors |\n";
  std::cout << "|---|---|---|---|---|---|---|---|---|\n";
  for (int method = 0; method < 3; ++method) {
    GpuPoints gpu(0, ScanMethod(method));
    std::map<std::string, std::vector<double>> ms;
    std::vector<double> totals;
    uint64_t live = 0;
    for (int r = 0; r < runs + 2; ++r) {
      gpu_csg_bench_load(gpu, pos.data(), par.data(), persisted, prims.data(), nprims);
      const auto st = gpu_csg_bench_step(gpu, &added, 1, npos.data(), npar.data(), nnew, &live);
      if (live != expect) {
        std::cerr << "MISMATCH: GPU kept " << live << ", CPU " << expect << "\n";
        return 1;
      }
      if (r < 2) continue;
      double total = 0;
      for (const auto& [name, v] : st) {
        ms[name].push_back(v);
        if (name != "upload") total += v;
      }
      totals.push_back(total);
    }
    const double t = median(totals);
    const char* names[] = {"tiles (own one-block scan)", "tiles (CUB scan)", "words (CUB scan of every keep word)"};
    std::cout << "| " << names[method] << " | " << median(ms["intersect"]) << " | " << median(ms["scan"]) << " | "
              << median(ms["compact"]) << " | " << median(ms["finalize"]) << " | " << t << " | "
              << double(n) / (t * 1e-3) / 1e9 << " G | " << t / floor_ms << " | " << live << " |\n";
  }
  return 0;
}

static int bench_bin(int runs, uint64_t npoints, bool check) {
  std::cout << "Points -> voxels: " << npoints << " generated points (clustered in the unit cube); median of " << runs
            << " runs; times in ms\n\n";
  std::cout << "| attributes | grid | upload | keys | sort | reduce | download | GPU (keys+sort+reduce) | points/s (GPU) | "
               "points/s (with transfers) | voxels | equal to CPU |\n";
  std::cout << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  PointCloud pc;
  pc.positions.resize(npoints);
  {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    std::normal_distribution<float> nd(0.f, 0.02f);
    std::vector<Vec3f> centres(4096);
    for (Vec3f& c : centres) c = {u(rng), u(rng), u(rng)};
    for (uint64_t i = 0; i < npoints; ++i) {
      const Vec3f c = centres[rng() % centres.size()];
      pc.positions[i] = {std::clamp(c.x + nd(rng), 0.f, 1.f), std::clamp(c.y + nd(rng), 0.f, 1.f), std::clamp(c.z + nd(rng), 0.f, 1.f)};
    }
  }
  for (int variant : {0, 1, 2}) {
    const bool attrs = variant == 1;
    if (variant == 2) {  // LiDAR-like: double positions at UTM offsets, intensity and class; no colour/normal
      pc.colors.clear();
      pc.normals.clear();
      pc.positions64.resize(npoints);
      pc.intensity.resize(npoints);
      pc.classes.resize(npoints);
      for (uint64_t i = 0; i < npoints; ++i) {
        pc.positions64[i] = {500000.0 + pc.positions[i].x, 4100000.0 + pc.positions[i].y, 100.0 + pc.positions[i].z};
        pc.intensity[i] = uint16_t(i * 2654435761u >> 16);
        pc.classes[i] = uint8_t((i * 40503u >> 12) % 7);
      }
    }
    if (attrs) {
      pc.colors.resize(npoints);
      pc.normals.resize(npoints);
      for (uint64_t i = 0; i < npoints; ++i) {
        pc.colors[i] = {uint8_t(i), uint8_t(i >> 8), uint8_t(i >> 16)};
        const float a = float(i % 1000) * 0.00628f;
        pc.normals[i] = {std::cos(a), std::sin(a), 0.f};
      }
    }
    for (int res : {256, 1024}) {
      GridOptions go;
      go.resolution = res;
      Bounds b;
      b.lo = {0, 0, 0};
      b.hi = {1, 1, 1};
      if (variant == 2) b.lo = {500000, 4100000, 100}, b.hi = {500001, 4100001, 101};
      const GridSpec spec = make_grid_spec(b, go);
      GpuPoints gpu;
      std::map<std::string, std::vector<double>> ms;
      std::vector<double> gpu_ms, all_ms;
      VoxelBins bins;
      for (int r = 0; r < runs + 1; ++r) {
        std::vector<std::pair<std::string, double>> st;
        bins = gpu.bin(pc, spec, &st);
        if (r == 0) continue;
        double g = 0, a = 0;
        for (const auto& [name, v] : st) {
          ms[name].push_back(v);
          a += v;
          if (name == "keys" || name == "sort" || name == "reduce") g += v;
        }
        gpu_ms.push_back(g);
        all_ms.push_back(a);
      }
      std::string equal = "not checked";
      if (check) {
        const VoxelBins cpu = bin_points_cpu(pc, spec);
        equal = cpu.keys == bins.keys && cpu.counts == bins.counts && cpu.outside == bins.outside &&
                        cpu.sums.size() == bins.sums.size() &&
                        std::memcmp(cpu.sums.data(), bins.sums.data(), cpu.sums.size() * sizeof(VoxelAcc)) == 0 &&
                        cpu.classes == bins.classes
                    ? "yes"
                    : "NO";
      }
      const double g = median(gpu_ms), a = median(all_ms);
      const char* what = variant == 0 ? "none" : variant == 1 ? "colour + normal" : "LAS: double xyz, intensity, class";
      std::cout << "| " << what << " | " << res << "^3 | " << median(ms["upload"]) << " | "
                << median(ms["keys"]) << " | " << median(ms["sort"]) << " | " << median(ms["reduce"]) << " | "
                << median(ms["download"]) << " | " << g << " | " << double(npoints) / (g * 1e-3) / 1e9 << " G | "
                << double(npoints) / (a * 1e-3) / 1e9 << " G | " << bins.keys.size() << " | " << equal << " |\n";
    }
  }
  return 0;
}

static int bench_solid(int runs, const std::vector<std::string>& jobs, bool check) {
  std::cout << "CSG solid (inside test at voxel centres + brick compaction); median of " << runs << " runs; ms\n\n";
  std::cout << "| script | primitives | grid | inside | compact | download | total | voxels | equal to CPU |\n|---|---|---|---|---|---|---|---|---|\n";
  GpuPoints gpu;
  for (const std::string& job : jobs) {
    const size_t colon = job.rfind(':');
    const CsgScript s = load_csg(job.substr(0, colon));
    std::stringstream rs(job.substr(colon + 1));
    for (std::string r; std::getline(rs, r, ',');) {
      GridOptions go;
      go.resolution = std::stoi(r);
      const GridSpec spec = make_grid_spec(s.bounds(), go);
      std::map<std::string, std::vector<double>> ms;
      std::vector<double> totals;
      SparseGrid g;
      for (int k = 0; k < runs + 1; ++k) {
        CsgStats st;
        g = gpu.solid(s, spec, &st);
        if (k == 0) continue;
        double t = 0;
        for (const auto& [name, v] : st.stage_ms) {
          ms[name].push_back(v);
          if (name != "upload") t += v;
        }
        totals.push_back(t);
      }
      std::string equal = "not checked";
      if (check) equal = csg_solid_cpu(s, spec).checksum() == g.checksum() ? "yes" : "NO";
      std::cout << "| " << job.substr(0, colon) << " | " << s.prims.size() << " | " << r << "^3 | " << median(ms["inside"])
                << " | " << median(ms["compact"]) << " | " << median(ms["download"]) << " | " << median(totals) << " | "
                << g.active_voxels() << " | " << equal << " |\n";
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: voxtile_bench_points csg|bin|solid [options]\n";
    return 2;
  }
  const std::string mode = argv[1];
  int runs = mode == "csg" ? 20 : 5;
  uint64_t persisted = 10000000, nnew = 150000, points = 100000000;
  uint32_t prims = 256;
  bool check = false;
  std::vector<std::string> jobs;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (a == "--persisted" && i + 1 < argc) persisted = std::stoull(argv[++i]);
    else if (a == "--prims" && i + 1 < argc) prims = uint32_t(std::stoul(argv[++i]));
    else if (a == "--new" && i + 1 < argc) nnew = std::stoull(argv[++i]);
    else if (a == "--points" && i + 1 < argc) points = std::stoull(argv[++i]);
    else if (a == "--check") check = true;
    else jobs.push_back(a);
  }
  try {
    const GpuInfo info = query_gpu();
    if (!info.available) {
      std::cerr << "no GPU: " << info.reason << "\n";
      return 5;
    }
    std::cout << "GPU: " << info.name << "\n\n";
    if (mode == "csg") return bench_csg(runs, persisted, prims, nnew);
    if (mode == "bin") return bench_bin(runs, points, check);
    if (mode == "solid") return bench_solid(runs, jobs, check);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return int(e.kind());
  }
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
