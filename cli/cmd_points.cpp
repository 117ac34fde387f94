// `voxtile points` (and the sampling, GPU and output helpers `voxtile csg` shares).
#include "cli/cmd_points.h"

#include <cstring>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "core/hash.h"
#include "core/timer.h"
#include "core/points.h"
#include "io/files.h"
#include "io/grid_reader.h"
#include "io/grid_set.h"
#include "io/mesh_reader.h"
#include "io/points_io.h"
#include "io/writers.h"
#include "kernels/api.h"

namespace voxtile {

void add_sampling_options(CLI::App& app, SamplingArgs& s, bool with_count) {
  auto* sp = app.add_option("--spacing", s.spacing,
                            "Distance between surface samples in world units (density 1/S^2; default: the longest "
                            "extent / 512)")
                 ->check(CLI::PositiveNumber);
  auto* de = app.add_option("--density", s.density, "Surface samples per unit area")->check(CLI::PositiveNumber);
  sp->excludes(de);
  if (with_count) {
    auto* co = app.add_option("--count", s.count, "Total number of surface samples")->check(CLI::PositiveNumber);
    co->excludes(sp)->excludes(de);
  }
}

uint64_t cloud_checksum(const PointCloud& pc) {
  Hasher h;
  h.bytes(pc.positions.data(), pc.positions.size() * sizeof(Vec3f));
  h.bytes(pc.normals.data(), pc.normals.size() * sizeof(Vec3f));
  h.bytes(pc.colors.data(), pc.colors.size() * sizeof(Rgb8));
  h.bytes(pc.ids.data(), pc.ids.size() * sizeof(uint32_t));
  h.bytes(pc.materials.data(), pc.materials.size() * sizeof(uint32_t));
  return h.digest();
}

// Fitted to -d cpu runs on an H200 machine (16 cores; 70k to 16M points at 256^3 and 1024^3, 1, 4
// and 16 threads, median of 3): per point a part shared by the threads and a small one that is not,
// then 2 ms whatever the cloud (1M points on 16 threads: 29 ms estimated, 23-26 taken).
double estimated_cpu_bin_ms(uint64_t points, int threads) {
  constexpr double kSharedUs = 0.16, kSerialUs = 0.01, kFixedMs = 2.0;
  return kFixedMs + double(points) * (kSerialUs + kSharedUs / std::pow(double(std::max(threads, 1)), 0.8)) / 1000.0;
}

std::unique_ptr<GpuPoints> open_gpu_points(const DeviceArgs& device, ScanMethod scan, const Log& log, int* index) {
  const int gpu = pick_gpu(device.device, log);
  if (index) *index = gpu;
  if (gpu < 0) return nullptr;
  return std::make_unique<GpuPoints>(gpu, scan, device.gpu_memory);
}

double SamplingArgs::per_area(const Bounds& bounds) const {
  if (density > 0) return density;
  double s = spacing;
  if (!(s > 0)) {
    const double ext = std::max({bounds.hi.x - bounds.lo.x, bounds.hi.y - bounds.lo.y, bounds.hi.z - bounds.lo.z});
    s = ext / 512;
  }
  if (!(s > 0) || !std::isfinite(1.0 / (s * s))) fail(ErrorKind::kUsage, "sample spacing must give a finite density");
  return 1.0 / (s * s);
}

// ---- voxtile points ------------------------------------------------------------------------

void setup_points(CLI::App& app, PointsCmdOptions& o) {
  app.add_option(
         "input", o.input,
         "A mesh (-> .ply/.las/.xyz surface samples), a point cloud .ply/.xyz/.pts/.las (-> voxels, or a "
         "voxel-downsampled .ply/.las/.xyz), or a grid .vdb/.npy/.raw/.npz/.binvox/.vox (-> .ply/.las/.xyz voxel "
         "centres)")
      ->required();
  app.add_option("-o,--output", o.output, "Output file (.ply .las .xyz, or for point clouds .vdb .ply .las .xyz .raw .npy .binvox .vox; - for stdout)")
      ->required();
  add_format_option(app, o.format, "Output format: vdb, ply, las, xyz, raw, npy, binvox or vox (default: from the extension)");
  add_sampling_options(app, o.sampling, true);
  add_grid_options(app, o.grid);
  add_load_options(app, o.load);
  app.add_option("--values", o.values,
                 "Points -> voxels: occupancy, count, color (mean), normal (mean), intensity (mean), class "
                 "(majority), comma-separated; auto = count plus whatever the points have (.raw/.npy: count)")
      ->capture_default_str();
  app.add_option("--grid", o.grid_name, "Voxels -> points: the grid to write (default: all)");
  add_device_options(app, o.device, "GPU memory budget in bytes (default 80% of free)");
  app.add_flag("--stats", o.stats, "Print a JSON summary to stdout (counts, timings, checksum)");
  add_grid_output_options(app, o.writing);
  add_preview_options(app, o.preview, false);
  add_verbosity_flags(app, o.verbosity, "Per-stage details on stderr");
}

int run_points(const PointsCmdOptions& o) {
  Log log{o.verbosity};
  ThreadLimit threads(o.device.threads);
  const auto t0 = Clock::now();
  const OutputFormat format = o.format.empty() ? format_from_path(o.output) : parse_format(o.format);
  check_standard_output({{o.output, binary_format(format)}, {o.preview.path, true}}, o.stats);
  const Metadata meta = {{"source", o.input}, {"version", VOXTILE_VERSION}};
  const std::string in_ext = lower_extension(o.input);
  std::ostringstream line;
  nlohmann::ordered_json json = {{"input", o.input}, {"output", o.output}};
  std::vector<std::pair<std::string, double>> stages;
  const RenderOptions picture = o.preview.path.empty() ? RenderOptions{} : o.preview.picture.options();
  if (!o.preview.path.empty() && !png_output(o.preview.path))
    fail(ErrorKind::kUsage, o.preview.path + ": --preview writes a .png");
  int gpu_index = -2;  // not chosen yet
  auto preview_gpu = [&] { return gpu_index >= -1 ? gpu_index : (gpu_index = picture_gpu(o.device.device, picture, log)); };

  // Voxels -> points from any grid file (a .ply without faces is a point cloud here, even voxtile's
  // voxel centres: binned again).
  if (in_ext != "ply" && input_kind(o.input) == InputKind::kGrid) {
    if (format != OutputFormat::kPly && format != OutputFormat::kLas && format != OutputFormat::kXyz)
      fail(ErrorKind::kUsage, o.output + ": voxels -> points writes .ply, .las or .xyz");
    GridFile f = read_grid_input(o.input, o.grid.to_options(), stages);
    warn_voxel_units(f, log);
    std::vector<SparseGrid> grids = std::move(f.grids);
    if (!o.grid_name.empty()) {
      std::vector<SparseGrid> pick;
      for (SparseGrid& g : grids)
        if (g.name == o.grid_name) pick.push_back(std::move(g));
      if (pick.empty()) fail(ErrorKind::kUsage, o.input + ": no grid named '" + o.grid_name + "'");
      grids = std::move(pick);
    }
    if (grids.empty()) fail(ErrorKind::kInput, o.input + ": no grid");
    for (const SparseGrid& g : grids)
      if (!same_active_voxels(g, grids[0]))
        fail(ErrorKind::kUsage, o.input + ": its grids have different active voxels; choose one with --grid");
    write_grids(grids, o.output, format, o.writing.write_options(meta));
    if (!o.preview.path.empty()) write_picture(grid_pointers(grids), picture, o.preview.path, preview_gpu(), &stages);
    line << o.input << ": " << grids.size() << (grids.size() == 1 ? " grid, " : " grids, ") << grids[0].active_voxels()
         << " voxels -> " << o.output;
    json["mode"] = "voxels-to-points";
    json["points"] = grids[0].active_voxels();
    json["grids"] = grids_json(grids);
  } else if (is_point_cloud_file(o.input)) {  // points -> voxels
    BackgroundStart<StartedPoints> start([device = o.device, log = o.device.device == "auto" ? Log{0} : log] {
      auto s = std::make_unique<StartedPoints>();
      s->gpu = open_gpu_points(device, ScanMethod::kTilesCub, log, &s->index);
      return s;
    });
    const PointCloud pc = load_point_input(o.input, log, stages);
    const GridSpec spec = point_grid_spec(o.input, pc, o.grid.to_options());
    std::string values = o.values;
    if (values == "auto" && (format == OutputFormat::kRaw || format == OutputFormat::kNpy)) values = "count";
    // .xyz holds colours and normals but no counts: auto is occupancy and what the points have of them.
    if (values == "auto" && format == OutputFormat::kXyz)
      values = std::string("occupancy") + (pc.colors.empty() ? "" : ",color") + (pc.normals.empty() ? "" : ",normal");
    const std::vector<std::string> which = parse_point_values(values, !pc.colors.empty(), !pc.normals.empty(),
                                                              !pc.intensity.empty(), !pc.classes.empty());
    // The GPU started while the points loaded; under auto a cloud the CPU bins sooner than it would
    // start is binned on the CPU (the same bins: small_job_on_cpu).
    std::unique_ptr<GpuPoints> gpu;
    if (!small_job_on_cpu(
            o.device.device, start.done(), [&] { return estimated_cpu_bin_ms(pc.size(), cpu_threads()); }, log,
            o.input, "binned")) {
      std::unique_ptr<StartedPoints> started = start.take();
      gpu = std::move(started->gpu);
      gpu_index = started->index;
      if (o.device.device == "auto" && !gpu) note_cpu_fallback(log);
    }
    const auto tb = Clock::now();
    std::vector<std::pair<std::string, double>> gpu_stages;
    VoxelBins bins;
    {
      const ProgressStage stage(std::string("bin (") + (gpu ? gpu->device_name() : "cpu") + ")");
      bins = gpu ? gpu->bin(pc, spec, &gpu_stages) : bin_points_cpu(pc, spec);
    }
    stages.emplace_back("bin", ms_since(tb));
    for (const auto& s : gpu_stages) stages.push_back(s);
    if (bins.outside) log.warn(o.input + ": " + std::to_string(bins.outside) + " points outside the grid");
    std::vector<SparseGrid> grids = bins_to_grids(bins, spec, which);
    if (grids.size() == 1 && which[0] == "occupancy") grids[0].name = "voxels";
    const auto tw = Clock::now();
    write_grids(grids, o.output, format, o.writing.write_options(meta));
    stages.emplace_back("write", ms_since(tw));
    if (!o.preview.path.empty()) write_picture(grid_pointers(grids), picture, o.preview.path, preview_gpu(), &stages);
    const std::string device = gpu ? gpu->device_name() : "cpu";
    line << o.input << ": " << pc.size() << " points -> " << spec.describe() << ", " << bins.keys.size()
         << " voxels (" << device << ") -> " << o.output;
    json["mode"] = "points-to-voxels";
    json["points"] = pc.size();
    json["dropped_nonfinite"] = pc.dropped_nonfinite;
    json["outside"] = bins.outside;
    json["device"] = device;
    json["dims"] = {spec.dims.x, spec.dims.y, spec.dims.z};
    json["grids"] = grids_json(grids);
  } else {  // mesh -> points
    if (format != OutputFormat::kPly && format != OutputFormat::kLas && format != OutputFormat::kXyz)
      fail(ErrorKind::kUsage, o.output + ": " + o.input +
                                  " is read as a mesh, and mesh -> points writes .ply, .las or .xyz (use 'voxtile voxelize' "
                                  "for grids; point clouds are .ply files without faces, .xyz, .pts or .las)");
    const auto tl = Clock::now();
    MeshLoadResult loaded;
    {
      const ProgressStage stage("load " + o.input);
      loaded = load_mesh(o.input, true, o.load.kind(), o.load.limits());
    }
    for (const std::string& w : loaded.warnings) log.warn(o.input + ": " + w);
    stages.emplace_back("load", ms_since(tl));
    const double area = mesh_area(loaded.mesh);
    uint64_t count = o.sampling.count;
    if (!count) {
      const double n = std::round(area * o.sampling.per_area(loaded.mesh.bounds()));
      if (n > 2e9) fail(ErrorKind::kUsage, o.input + ": " + std::to_string(uint64_t(n)) + " samples at this density; use a larger --spacing");
      count = std::max<uint64_t>(1, uint64_t(n));
    }
    const auto ts = Clock::now();
    PointCloud pc;
    {
      const ProgressStage stage("sample");
      pc = sample_mesh(loaded.mesh, count);
    }
    stages.emplace_back("sample", ms_since(ts));
    const auto tw = Clock::now();
    write_point_cloud(pc, o.output, format_name(format), meta);
    stages.emplace_back("write", ms_since(tw));
    if (!o.preview.path.empty()) write_cloud_picture(pc, picture, o.preview.path, preview_gpu(), &stages);
    line << o.input << ": " << loaded.mesh.num_triangles() << " triangles, area " << area << " -> " << pc.size()
         << " points -> " << o.output;
    json["mode"] = "mesh-to-points";
    json["triangles"] = loaded.mesh.num_triangles();
    json["points"] = pc.size();
    json["checksum"] = hex64(cloud_checksum(pc));
  }
  log.info(line.str());
  for (const auto& [name, ms] : stages) log.detail("  " + name + ": " + std::to_string(ms) + " ms");
  if (o.stats) {
    stages.insert(stages.begin(), {"total", ms_since(t0)});
    json["timings_ms"] = stages_json(stages);
    print_json_line(json);
  }
  return 0;
}

}  // namespace voxtile
