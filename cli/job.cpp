// One voxelization job: load, voxelize, write, report.
#include "cli/job.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <sstream>

#include "cli/preview.h"
#include "core/band_search.h"
#include "core/error.h"
#include "core/inside_grid.h"
#include "core/progress.h"
#include "core/timer.h"
#include "core/vectorized.h"
#include "core/voxelize.h"
#include "io/files.h"

namespace voxtile {

VoxelMode parse_mode(const std::string& mode) { return mode == "thin" ? VoxelMode::kThin : VoxelMode::kConservative; }

void check_job(const Job& job) {
  const std::vector<TargetSpec> targets = parse_target_list(job.target);
  job.grid.to_options();
  parse_loader(job.loader);
  parse_inside(job.inside);
  if (job.band != kBandAll && (job.band < 1 || job.band > kMaxBand))
    fail(ErrorKind::kUsage,
         "--band must be 1 to " + std::to_string(kMaxBand) + " voxels or all (got " + std::to_string(job.band) + ")");
  if (targets.size() > 1 && holds_one_grid(job.format))
    fail(ErrorKind::kUsage, job.output + ": a ." + format_name(job.format) +
                                " file holds one target; write several targets to .vdb or .ply");
  if (!job.preview.empty()) {
    if (!png_output(job.preview)) fail(ErrorKind::kUsage, job.preview + ": --preview writes a .png");
    if (job.preview == job.output) fail(ErrorKind::kUsage, job.preview + ": the picture would replace the grid output");
  }
}

void check_job_output(const Job& job, const GridSpec& spec, const WriteOptions& base) {
  for (const TargetSpec& t : parse_target_list(job.target))
    check_grid_output(spec, target_value_type(t.target), job.output, job.format, base);
}

std::string job_options(const Job& job) {
  std::string s = options_string(job.mode, job.target, job.grid);
  bool solid = false, sdf = false;
  for (const TargetSpec& t : parse_target_list(job.target)) {
    solid |= t.target == Target::kSolid;
    sdf |= t.target == Target::kSdf;
  }
  if (solid || sdf) s += " inside=" + job.inside;
  if (sdf) s += " band=" + (job.band == kBandAll ? std::string("all") : std::to_string(job.band));
  return s;
}

LoadedInput load_job(const Job& job, const Log& log, JobReport& report, MeshLoaderPool* loaders,
                     const LoaderLimits& limits) {
  LoadedInput in = load_input(job.input, job.grid.to_options(), log, parse_loader(job.loader), loaders, limits);
  report.reader = in.loaded.format;
  report.ms_load = in.ms_load;
  report.triangles = in.loaded.mesh.num_triangles();
  report.dropped_degenerate = in.loaded.mesh.dropped_degenerate;
  report.dropped_nonfinite = in.loaded.mesh.dropped_nonfinite;
  report.dropped_bad_index = in.loaded.dropped_bad_index;
  report.spec = in.spec;
  return in;
}

std::vector<SparseGrid> voxelize_job(Voxelizer& voxelizer, const Job& job, const LoadedInput& input, JobReport& report) {
  const auto t0 = Clock::now();
  VoxelizeOptions options;
  options.mode = parse_mode(job.mode);
  options.inside = parse_inside(job.inside);
  options.band = job.band;
  VoxelizeStats st;
  std::vector<SparseGrid> grids;
  const ProgressStage stage("voxelize (" + voxelizer.device_name() + ")");
  try {
    voxelizer.set_mesh(input.loaded.mesh);
    grids = voxelizer.voxelize(input.spec, options, parse_target_list(job.target), &st);
  } catch (const Error& e) {
    throw Error(e.kind(), job.input + ": " + e.what());
  }
  report.device = st.device;
  report.gpu = voxelizer.gpu_index();
  report.active_voxels = st.active_voxels;
  report.bricks = st.bricks;
  report.tile_pairs = st.tile_pairs;
  report.tiles = st.tiles;
  report.voxelize_stages = st.stage_ms;
  report.ms_voxelize = ms_since(t0);
  return grids;
}

void write_job(const Job& job, const std::vector<SparseGrid>& grids, const WriteOptions& base,
               const std::string& fingerprint, JobReport& report) {
  const auto t0 = Clock::now();
  WriteOptions w = base;
  w.meta = {{"source", job.input},
            {"options", job_options(job)},
            {"version", VOXTILE_VERSION},
            {"mode", job.mode},
            {"target", job.target}};
  if (!fingerprint.empty()) w.meta.push_back({"job", fingerprint});
  if (job.make_dirs) make_parent_dirs(job.output);
  // The checksums (one pass over every value) are taken on another thread while the file is written.
  std::future<nlohmann::ordered_json> sums = std::async(std::launch::async, [&] { return grids_json(grids); });
  try {
    write_grids(grids, job.output, job.format, w);
  } catch (...) {
    sums.wait();
    throw;
  }
  report.grids = sums.get();
  report.checksum = report.grids[0]["checksum"].get<std::string>();
  report.ms_write = ms_since(t0);
  if (!job.preview.empty()) {
    const auto tp = Clock::now();
    if (job.make_dirs) make_parent_dirs(job.preview);
    try {
      write_picture(grid_pointers(grids), job.picture, job.preview, report.gpu);
    } catch (const Error& e) {
      throw Error(e.kind(), job.input + ": " + e.what());
    }
    report.ms_preview = ms_since(tp);
  }
}

JobReport run_job(const std::function<Voxelizer&(const LoadedInput&)>& voxelizer, const Job& job,
                  const WriteOptions& base, const Log& log, MeshLoaderPool* loaders) {
  const auto t0 = Clock::now();
  JobReport report;
  const LoadedInput in = load_job(job, log, report, loaders);
  check_job_output(job, in.spec, base);
  const auto t_wait = Clock::now();
  Voxelizer& v = voxelizer(in);  // may still be starting (GPU context) while the mesh loaded
  report.ms_gpu_wait = ms_since(t_wait);
  const std::vector<SparseGrid> grids = voxelize_job(v, job, in, report);
  write_job(job, grids, base, "", report);
  report.ms_total = ms_since(t0);
  report.status = "ok";
  return report;
}

double estimated_cpu_ms(const Job& job, const Mesh& mesh, const GridSpec& spec, int threads) {
  const std::vector<TargetSpec> targets = parse_target_list(job.target);
  bool sdf = false, solid = false;
  for (const TargetSpec& t : targets) {
    sdf = sdf || t.target == Target::kSdf;
    solid = solid || t.target == Target::kSolid;
  }
  // Microseconds of one core per target, fitted to -d cpu runs (conservative binary, 30 runs: six
  // meshes from 600 to 100k triangles, scans, tubes, CAD slivers, a room, Sponza, at 64^3 to 1024^3;
  // the estimate was 0.79x to 1.23x the time taken on 2 cores): per triangle, per voxel its area
  // crosses, per voxel along its edges; then 2 ms whatever the job. The threads share it as
  // threads^0.8 would (16 cores of the H200 machine took 1.6-2x the time of perfect sharing). A
  // solid's surface is one such raster, an sdf has none.
  constexpr double kTriangleUs = 0.35, kAreaVoxelUs = 0.027, kEdgeVoxelUs = 0.16, kFixedMs = 2.0;
  // Solid and sdf targets add the inside test and the band, fitted to -d cpu runs on the H200
  // machine's 16 cores (the 100k dragon, the bunny, a 359k-triangle sphere and 360k-triangle tubes at
  // 128^3 to 1024^3: the estimate 0.6x to 1.9x the time taken, scripts/bench-results/cpu-fields-h200-2026-11-28.md):
  // per triangle and per column of the inside test (three axes under vote), per boundary edge and
  // column (winding), per triangle and per band voxel. Each step stops once the estimate is over the
  // small jobs' limit (the boundary's edges are sorted only for small meshes).
  // The boundary's cost per edge and column is that of the bunny (few columns the crossings leave
  // open: 0.012-0.015 with the vectorised sums, core/vectorized.h) to a terrain and a scan fragment
  // (nearly all: 0.041-0.056), 2.5-3.5x that with the scalar sums; taken between them.
  constexpr double kInsideTriangleUs = 1.0, kInsideColumnUs = 0.01;
  const double kBoundaryColumnUs = cpu_has_x86_64_v4() ? 0.03 : 0.08;
  // The band per voxel: 0.012 fitted before its x86-64-v4 loop (e92e549), 0.008-0.010 with it.
  constexpr double kBandTriangleUs = 1.0;
  const double kBandVoxelUs = cpu_has_x86_64_v4() ? 0.010 : 0.012;
  // A wide band's search (core/band_search.h), per voxel it walks.
  constexpr double kBandSearchVoxelUs = 1.0;  // (2 cores: the bunny at 128^3, every voxel 1.4, a band of 16 0.5)
  const double share = 1.0 / 1000.0 / std::pow(double(std::max(threads, 1)), 0.8);
  const double rasters = double(targets.size()) - (sdf ? 1.0 : 0.0);
  const double n = double(mesh.num_triangles());
  const double axes = job.inside == "vote" ? 3.0 : 1.0;
  double ms = kFixedMs + n * kTriangleUs * rasters * share;
  if (sdf || solid) ms += (axes * kInsideTriangleUs + (sdf ? kBandTriangleUs : 0.0)) * n * share;
  if (ms >= kSmallJobCpuMs) return ms;
  if (sdf || solid) {
    const InsideRange range = inside_range(mesh, spec);
    const double columns =
        double(std::max(0, range.hi[0] - range.lo[0])) * double(std::max(0, range.hi[1] - range.lo[1]));
    ms += axes * kInsideColumnUs * columns * share;
    std::vector<Vec3f> g;  // the grid-space vertices, for the band and the boundary
    if ((sdf || job.inside == "winding") && ms < kSmallJobCpuMs) g = to_grid_space(mesh, spec);
    if (sdf && ms < kSmallJobCpuMs) {
      const BandSetup bs = band_setup(spec, job.band);
      const GridBox box = mesh_grid_box(mesh, spec);
      double boxes = -1.0;  // (counted by the rule: every width but kBandAll)
      if (band_by_search(mesh, g, spec, box, job.band, kBandRuleCpu, &boxes))
        ms += kBandSearchVoxelUs * band_search_voxels(box, spec, bs) * share;
      else
        ms += kBandVoxelUs * (boxes >= 0.0 ? boxes : band_box_voxels(mesh, g, spec, bs)) * share;
    }
    if (job.inside == "winding" && ms < kSmallJobCpuMs) {
      // The boundary as the test finds it (vertices welded by position: a mesh whose triangles have
      // vertices of their own has the welded one's boundary).
      const double edges = double(prepare_inside(mesh, g, spec, 2, true, false).boundary.size());
      ms += kBoundaryColumnUs * edges * columns * share;
    }
    if (ms >= kSmallJobCpuMs || rasters == 0) return ms;
  }
  const double per_thread = rasters * share;
  const double vx = spec.voxel_size.x, vy = spec.voxel_size.y, vz = spec.voxel_size.z;
  const double vmin = std::min(vx, std::min(vy, vz));
  const double voxels = tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, mesh.num_triangles(), 4096), 0.0,
      [&](const tbb::blocked_range<size_t>& r, double sum) {
        for (size_t t = r.begin(); t < r.end(); ++t) {
          const Vec3f a = mesh.vertex(t, 0), b = mesh.vertex(t, 1), c = mesh.vertex(t, 2);
          const double e1[3] = {double(b.x) - a.x, double(b.y) - a.y, double(b.z) - a.z};
          const double e2[3] = {double(c.x) - a.x, double(c.y) - a.y, double(c.z) - a.z};
          const double e3[3] = {double(c.x) - b.x, double(c.y) - b.y, double(c.z) - b.z};
          const double cx = e1[1] * e2[2] - e1[2] * e2[1], cy = e1[2] * e2[0] - e1[0] * e2[2],
                       cz = e1[0] * e2[1] - e1[1] * e2[0];
          auto len = [](const double* e) { return std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]); };
          sum +=
              kAreaVoxelUs * 0.5 * (std::fabs(cx) / (vy * vz) + std::fabs(cy) / (vx * vz) + std::fabs(cz) / (vx * vy)) +
              kEdgeVoxelUs * 0.5 * (len(e1) + len(e2) + len(e3)) / vmin;
        }
        return sum;
      },
      std::plus<double>());
  return ms + voxels * per_thread;
}

// (Under auto the start says nothing: "no GPU; using the CPU" is said by the job that takes it.)
VoxelizerStart::VoxelizerStart(const DeviceArgs& device, const Log& log)
    : m_device(device.device),
      m_log(log),
      m_start([device, log = device.device == "auto" ? Log{0} : log] { return open_voxelizer(device, log); }) {}

VoxelizerStart::~VoxelizerStart() {
  if (m_started && m_started->on_gpu()) m_started.release();
}

Voxelizer& VoxelizerStart::pick(const Job& job, const LoadedInput& input) {
  if (m_started) return *m_started;
  if (small_job_on_cpu(
          m_device, m_start.done(), [&] { return estimated_cpu_ms(job, input.loaded.mesh, input.spec, cpu_threads()); },
          m_log, job.input, "voxelized")) {
    if (!m_cpu) m_cpu = std::make_unique<CpuVoxelizer>();
    return *m_cpu;
  }
  try {
    m_started = m_start.take();
  } catch (...) {
    m_failed = true;
    throw;
  }
  if (m_device == "auto" && !m_started->on_gpu()) note_cpu_fallback(m_log);
  return *m_started;
}

std::vector<SparseGrid> voxelize_mesh_input(const Job& job, const DeviceArgs& device, const LoaderLimits& limits,
                                            const Log& log, int& gpu, std::string& source,
                                            std::vector<std::pair<std::string, double>>& stages) {
  check_job(job);
  VoxelizerStart start(device, log);
  JobReport report;
  const LoadedInput in = load_job(job, log, report, nullptr, limits);
  stages.emplace_back("load", report.ms_load);
  Voxelizer& voxelizer = start.pick(job, in);
  gpu = voxelizer.gpu_index();
  if (gpu < 0 && !start.took_started()) gpu = -2;  // a small job: what follows picks its own device
  std::vector<SparseGrid> grids = voxelize_job(voxelizer, job, in, report);
  stages.emplace_back("voxelize", report.ms_voxelize);
  source = std::to_string(report.triangles) + " triangles -> " + job.target + " " + in.spec.describe() + " (" +
           report.device + ")";
  return grids;
}

std::string job_summary(const Job& job, const JobReport& r) {
  std::ostringstream line;
  line.precision(3);
  line << job.input << ": " << r.triangles << " triangles -> " << r.spec.dims.x << "x" << r.spec.dims.y << "x"
       << r.spec.dims.z << " grid, " << r.active_voxels << " voxels (" << job.target << ", " << job.mode << ", "
       << r.device << ") -> " << job.output << " in " << std::fixed << r.ms_total / 1000.0 << " s";
  return line.str();
}

nlohmann::ordered_json stats_json(const Job& job, const JobReport& r) {
  const GridSpec& s = r.spec;
  nlohmann::ordered_json j;
  j["input"] = job.input;
  j["output"] = job.output;
  if (!job.preview.empty()) j["preview"] = job.preview;
  j["format"] = format_name(job.format);
  j["reader"] = r.reader;
  j["triangles"] = r.triangles;
  j["dropped_degenerate"] = r.dropped_degenerate;
  j["dropped_nonfinite"] = r.dropped_nonfinite;
  j["dropped_bad_index"] = r.dropped_bad_index;
  j["grid"] = {{"dims", {s.dims.x, s.dims.y, s.dims.z}},
               {"voxel_size", {s.voxel_size.x, s.voxel_size.y, s.voxel_size.z}},
               {"origin", {s.origin.x, s.origin.y, s.origin.z}}};
  j["mode"] = job.mode;
  j["target"] = job.target;
  j["device"] = r.device;
  j["active_voxels"] = r.active_voxels;
  j["bricks"] = r.bricks;
  j["tile_pairs"] = r.tile_pairs;
  j["tiles"] = r.tiles;
  j["checksum"] = r.checksum;
  j["grids"] = r.grids;
  nlohmann::ordered_json t;
  t["load"] = r.ms_load;
  if (r.ms_voxelizer_start >= 0) t["voxelizer_start"] = r.ms_voxelizer_start;
  if (r.ms_gpu_wait >= 0) t["voxelizer_wait"] = r.ms_gpu_wait;
  for (const auto& [name, ms] : r.voxelize_stages) t[name] = ms;
  t["write"] = r.ms_write;
  if (r.ms_preview >= 0) t["preview"] = r.ms_preview;
  t["total"] = r.ms_total;
  j["timings_ms"] = t;
  return j;
}

}  // namespace voxtile
