// Shared CLI helpers.
#include "cli/common.h"

#include <sys/stat.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/progress_bar.h"
#include "core/error.h"
#include "core/inside_grid.h"
#include "core/progress.h"
#include "io/atomic_file.h"
#include "io/json_text.h"

namespace voxtile {

void Log::warn(const std::string& msg) const {
  if (level >= 1) progress_print_line("voxtile: warning: " + msg);
}
void Log::info(const std::string& msg) const {
  if (level >= 1) progress_print_line(msg);
}
void Log::detail(const std::string& msg) const {
  if (level >= 2) progress_print_line(msg);
}

void add_grid_options(CLI::App& app, GridArgs& a) {
  app.add_option("--resolution,-r", a.resolution, "Voxels along the longest axis of the bounds (default 256)")
      ->check(CLI::Range(1, kMaxGridDim));
  app.add_option("--voxel-size,-s", a.voxel_size, "World-space voxel size: S (cubic) or SX SY SZ")
      ->expected(1, 3)
      ->allow_extra_args(false);  // (one number: voxel_size_args)
  app.add_option("--bbox", a.bbox, "World-space bounds MINX MINY MINZ MAXX MAXY MAXZ (default: the input's bounds)")
      ->expected(6)
      ->allow_extra_args(false);  // (CLI11 would give a vector option every argument up to the next option)
  app.add_option("--dims", a.dims, "Exact grid size X Y Z (voxel size fits the bounds unless --voxel-size is given)")
      ->expected(3)
      ->allow_extra_args(false);
  app.add_option("--pad", a.pad, "Voxels of padding added on every side")->check(CLI::Range(0, kMaxGridDim))
      ->default_val(0);
}

std::vector<std::string> voxel_size_args(int argc, const char* const* argv) {
  auto is_number = [&](int i) {
    if (i >= argc) return false;
    char* end = nullptr;
    std::strtod(argv[i], &end);
    return end != argv[i] && *end == 0;
  };
  std::vector<std::string> args, moved;
  int i = 0;
  for (; i < argc && (i == 0 || std::string(argv[i]) != "--"); ++i) {
    const std::string a = argv[i];
    if (i > 0 && (a == "-s" || a == "--voxel-size") && is_number(i + 1) && !is_number(i + 2)) {
      moved = {a, argv[++i]};
      continue;
    }
    args.push_back(a);
  }
  args.insert(args.end(), moved.begin(), moved.end());
  args.insert(args.end(), argv + i, argv + argc);  // "--" and what follows it
  return args;
}

void add_solid_options(CLI::App& app, SolidArgs& a) {
  app.add_option("--inside", a.inside,
                 "Inside test of the solid and sdf targets: winding (generalized winding number >= 0.5; robust to "
                 "holes, overlaps and T-junctions), parity (crossings along z; exact for closed meshes, fastest) or "
                 "vote (parity along x, y and z, majority)")
      ->check(CLI::IsMember({"parity", "winding", "vote"}))
      ->capture_default_str();
  app.add_option("--band", a.band,
                 "sdf target: half-width of the narrow band in voxels (1 to 65536), or all: every voxel's distance")
      ->transform(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "all") {
              v = std::to_string(kBandAll);
              return "";
            }
            char* end = nullptr;
            const long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != 0 || n < 1 || n > kMaxBand)
              return "Value " + v + " is not a width from 1 to " + std::to_string(kMaxBand) + " voxels or all";
            return "";
          },
          "WIDTH|all"))
      ->capture_default_str();
}

void add_load_options(CLI::App& app, LoadArgs& a) {
  app.add_option("--loader", a.loader,
                 "Mesh reader: auto (voxtile's own for .ply .stl .obj .off .gltf .glb .3mf, Assimp for the rest), "
                 "native or assimp")
      ->check(CLI::IsMember({"auto", "native", "assimp"}))
      ->capture_default_str();
  app.add_option("--load-timeout", a.timeout_s,
                 "Seconds an Assimp import may take before it is stopped and the file fails (exit 3)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

LoaderLimits LoadArgs::limits() const {
  LoaderLimits l;
  l.timeout_s = timeout_s;
  return l;
}

GridOptions GridArgs::to_options() const {
  GridOptions o;
  if (resolution > 0) o.resolution = resolution;
  if (voxel_size.size() == 1) o.voxel_size = Vec3d{voxel_size[0], voxel_size[0], voxel_size[0]};
  else if (voxel_size.size() == 3) o.voxel_size = Vec3d{voxel_size[0], voxel_size[1], voxel_size[2]};
  else if (!voxel_size.empty()) fail(ErrorKind::kUsage, "--voxel-size takes 1 or 3 values");
  if (!bbox.empty()) {
    Bounds b;
    b.lo = {bbox[0], bbox[1], bbox[2]};
    b.hi = {bbox[3], bbox[4], bbox[5]};
    for (double v : bbox)
      if (!std::isfinite(v)) fail(ErrorKind::kUsage, "--bbox values must be finite");
    if (!(b.lo.x < b.hi.x && b.lo.y < b.hi.y && b.lo.z < b.hi.z))
      fail(ErrorKind::kUsage, "--bbox needs min < max on every axis");
    o.bbox = b;
  }
  if (!dims.empty()) o.dims = Int3{dims[0], dims[1], dims[2]};
  o.pad = pad;
  return o;
}

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof(b), "%016llx", static_cast<unsigned long long>(v));
  return b;
}

nlohmann::ordered_json grids_json(const std::vector<SparseGrid>& grids) {
  nlohmann::ordered_json a = nlohmann::json::array();
  for (const SparseGrid& g : grids)
    a.push_back({{"name", g.name},
                 {"type", value_type_name(g.value_type)},
                 {"active_voxels", g.active_voxels()},
                 {"checksum", hex64(g.checksum())}});
  return a;
}

nlohmann::ordered_json stages_json(const std::vector<std::pair<std::string, double>>& stages) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, ms] : stages) j[name] = ms;
  return j;
}

void print_json_line(const nlohmann::ordered_json& j) { std::cout << json_text(j) << std::endl; }

void add_format_option(CLI::App& app, std::string& format, const std::string& help) {
  app.add_option("--format,-f", format, help)->check(CLI::IsMember(format_names(), CLI::ignore_case));
}

void add_mesh_format_option(CLI::App& app, std::string& format) {
  app.add_option("--format,-f", format, "Output format: ply, obj, off, stl, glb or 3mf (default: from the extension)")
      ->check(CLI::IsMember({"ply", "obj", "off", "stl", "glb", "3mf"}, CLI::ignore_case));
}

void check_standard_output(const std::vector<std::pair<std::string, bool>>& outputs, bool stats) {
  const std::string* first = nullptr;
  for (const auto& [path, binary] : outputs) {
    if (path.empty() || !is_standard_output(path)) continue;
    if (first) fail(ErrorKind::kUsage, *first + " and " + path + " are both standard output");
    first = &path;
    struct stat st;
    const bool device = fstat(STDOUT_FILENO, &st) == 0 && S_ISCHR(st.st_mode);
    if (stats && !device)
      fail(ErrorKind::kUsage, path + ": --stats prints its JSON to standard output, where this output goes too "
                                     "(write the output to a file, or leave --stats out)");
    if (binary && isatty(STDOUT_FILENO))
      fail(ErrorKind::kUsage, path + ": standard output is a terminal; binary data goes to a file or a pipe "
                                     "(redirect it: > FILE or | PROGRAM)");
  }
}

bool png_output(const std::string& path) { return is_standard_output(path) || lower_extension(path) == "png"; }

// A byte count: digits with an optional K, M, G or T (powers of 1024), from 1 byte to 2^62 bytes.
// CLI11's unsigned conversion would take "-1" as 2^64 - 1 (no limit at all).
CLI::Option* add_bytes_option(CLI::App& app, const std::string& name, uint64_t& out, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&out, name](const std::string& text) {
            uint64_t v = 0;
            const char* end = text.data() + text.size();
            const auto r = std::from_chars(text.data(), end, v);
            int shift = 0;
            if (r.ec == std::errc() && r.ptr + 1 == end) {
              const char unit = char(std::toupper(static_cast<unsigned char>(*r.ptr)));
              shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : unit == 'T' ? 40 : -1;
            } else if (r.ec != std::errc() || r.ptr != end) {
              shift = -1;
            }
            if (shift < 0 || v == 0 || v > (uint64_t(1) << (62 - shift)))
              throw CLI::ValidationError(name, "must be a size in bytes from 1 to 2^62, optionally with K, M, G or T (got " +
                                                   text + ")");
            out = v << shift;
          },
          help)
      ->type_name("BYTES");
}

void add_grid_output_options(CLI::App& app, GridOutputArgs& a) {
  add_bytes_option(app, "--dense-limit", a.limit, "Largest .raw/.npy output in bytes, e.g. 8G (default 4 GiB)");
  app.add_flag("--force", a.force, "Write dense outputs over --dense-limit");
  app.add_flag("--vdb-bool", a.vdb_bool,
               "Write binary grids to .vdb as BoolGrids instead of MaskGrids (for Debian's pyopenvdb 10, which reads no MaskGrid)");
  app.add_flag("--vdb-half", a.vdb_half,
               "Store float and vector values (sdf, distance, normal) in .vdb files as 16-bit half floats: half the "
               "bytes, each value rounded to the nearest half (11 significant bits)");
}

WriteOptions GridOutputArgs::write_options(const Metadata& meta) const {
  WriteOptions w;
  w.dense.force = force;
  if (limit) w.dense.limit_bytes = limit;
  w.meta = meta;
  w.vdb.bool_grids = vdb_bool;
  w.vdb.half = vdb_half;
  return w;
}

void add_verbosity_flags(CLI::App& app, int& verbosity, const std::string& verbose_help) {
  app.add_flag_callback("-q,--quiet", [&verbosity] { verbosity = 0; }, "Only errors on stderr");
  app.add_flag_callback("-v,--verbose", [&verbosity] { verbosity = 2; }, verbose_help);
}

std::string check_device_spec(const std::string& devices) {
  if (devices == "auto" || devices == "cpu" || devices == "gpu" || devices == "all") return "";
  bool ok = !devices.empty() && devices.back() != ',';
  std::stringstream s(devices);
  for (std::string item; ok && std::getline(s, item, ',');)
    ok = !item.empty() && item.size() <= 4 && item.find_first_not_of("0123456789") == std::string::npos;
  return ok ? "" : "--device must be auto, cpu, gpu, all or a list of GPU indices such as 0,1 (got " + devices + ")";
}

std::vector<int> choose_devices(const std::string& devices, const Log& log) {
  const std::string bad = check_device_spec(devices);
  if (!bad.empty()) fail(ErrorKind::kUsage, bad);
  std::vector<int> ids;
  if (devices == "cpu") return ids;
  if (devices == "gpu") {
    if (!query_gpu(0).available) fail(ErrorKind::kResource, "--device gpu: " + query_gpu(0).reason);
    return {0};
  }
  if (devices == "auto") {
    if (query_gpu(0).available) ids.push_back(0);
    else note_cpu_fallback(log);
  } else if (devices == "all") {
    for (int d = 0; d < gpu_count(); ++d) ids.push_back(d);
    if (ids.empty()) fail(ErrorKind::kResource, "--device all: " + query_gpu(0).reason);
  } else {
    std::stringstream s(devices);
    for (std::string item; std::getline(s, item, ',');) ids.push_back(std::stoi(item));
    for (size_t i = 0; i < ids.size(); ++i)
      for (size_t k = 0; k < i; ++k)
        if (ids[k] == ids[i]) fail(ErrorKind::kUsage, "--device " + devices + ": GPU " + std::to_string(ids[i]) + " listed twice");
  }
  return ids;
}

int pick_gpu(const std::string& device, const Log& log) {
  const std::vector<int> ids = choose_devices(device, log);
  if (ids.empty()) return -1;
  const GpuInfo info = query_gpu(ids[0]);
  if (!info.available) fail(ErrorKind::kResource, "--device " + device + ": " + info.reason);
  if (ids.size() > 1) log.detail("voxtile: one job runs on one GPU: GPU " + std::to_string(ids[0]) + " (the first of --device " + device + ")");
  return ids[0];
}

void add_device_options(CLI::App& app, DeviceArgs& a, const std::string& gpu_memory_help) {
  app.add_option("--device,-d", a.device,
                 "auto (GPU 0 if present, else CPU; voxelize, mesh, preview and points run a job the CPU finishes before "
                 "the GPU would have started on the CPU), cpu, gpu (GPU 0), all, or a list of GPU indices such as "
                 "1,2; one run uses one GPU: the first of the list")
      ->check(CLI::Validator(check_device_spec, "DEVICE"))
      ->capture_default_str();
  add_bytes_option(app, "--gpu-memory", a.gpu_memory, gpu_memory_help);
  app.add_option("--threads", a.threads, "CPU threads (0 = all cores)")->check(CLI::Range(0, 4096))->capture_default_str();
}

bool small_job_on_cpu(const std::string& device, bool gpu_done, const std::function<double()>& cpu_ms, const Log& log,
                      const std::string& input, const std::string& verb, double limit_ms) {
  static const bool driver = access("/dev/nvidiactl", F_OK) == 0;
  if (device != "auto" || !driver || gpu_done) return false;
  const double ms = cpu_ms();
  const std::string estimate = std::isfinite(ms) ? std::to_string(int(std::ceil(ms))) + " ms" : "not estimated";
  if (ms < limit_ms) {
    log.detail("voxtile: " + input + ": " + verb + " on the CPU (estimated " + estimate + ") while the GPU starts");
    return true;
  }
  log.detail("voxtile: " + input + ": waiting for the GPU (" + verb + " on the CPU: " + estimate + ")");
  return false;
}

void note_cpu_fallback(const Log& log) { log.info("voxtile: " + query_gpu(0).reason + "; using the CPU"); }

int cpu_threads() {
  return std::min<int>(tbb::this_task_arena::max_concurrency(),
                       int(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism)));
}

std::unique_ptr<Voxelizer> open_voxelizer(const DeviceArgs& device, const Log& log, int* gpu) {
  const int id = pick_gpu(device.device, log);
  if (gpu) *gpu = id;
  if (id < 0) return std::make_unique<CpuVoxelizer>();
  GpuOptions gopt;
  gopt.memory_budget = device.gpu_memory;
  gopt.device = id;
  return make_gpu_voxelizer(gopt);
}

LoadedInput load_input(const std::string& path, const GridOptions& grid, const Log& log, Loader loader,
                       MeshLoaderPool* loaders, const LoaderLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  const ProgressStage stage("load " + path);
  LoadedInput in;
  in.loaded = loaders ? loaders->load(path, false, loader) : load_mesh(path, false, loader, limits);
  for (const std::string& w : in.loaded.warnings) log.warn(path + ": " + w);
  in.ms_load = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  try {
    in.spec = make_grid_spec(in.loaded.mesh.bounds(), grid);
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
  return in;
}

std::string options_string(const std::string& mode, const std::string& target, const GridArgs& g) {
  std::ostringstream s;
  s << "mode=" << mode << " target=" << target;
  if (g.resolution) s << " resolution=" << g.resolution;
  if (!g.voxel_size.empty()) {
    s << " voxel_size=";
    for (size_t i = 0; i < g.voxel_size.size(); ++i) s << (i ? "," : "") << g.voxel_size[i];
  }
  if (!g.bbox.empty()) {
    s << " bbox=";
    for (size_t i = 0; i < g.bbox.size(); ++i) s << (i ? "," : "") << g.bbox[i];
  }
  if (!g.dims.empty()) s << " dims=" << g.dims[0] << "," << g.dims[1] << "," << g.dims[2];
  if (g.pad) s << " pad=" << g.pad;
  return s.str();
}

}  // namespace voxtile
