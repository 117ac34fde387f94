// `voxtile batch`: plans jobs (inputs, directories, globs or a JSON Lines manifest; output names
// from a template; an optional shard), then runs them through a TBB flow graph whose limiter bounds
// the meshes and grids in memory: load (parallel) -> voxelize (--gpu-workers per GPU, or the CPU) ->
// write (parallel). Progress on stderr, an optional JSON report.
#include "cli/cmd_batch.h"

#include <glob.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/hash.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/mesh_reader.h"
#include "io/writers.h"
#include "kernels/api.h"

namespace voxtile {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// ---- Planning ---------------------------------------------------------------------------------

struct Job {
  size_t index = 0;  // in the full (unsharded) job list
  std::string input, output;
  OutputFormat format = OutputFormat::kVdb;
  GridArgs grid;
  std::string mode, target;
};

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

const char* const kMeshExtensions[] = {"obj", "ply", "stl", "gltf", "glb", "fbx", "off", "dae", "3mf", "3ds", "x3d", "blend"};

bool mesh_extension(const std::string& path) {
  const std::string e = lower_extension(path);
  for (const char* m : kMeshExtensions)
    if (e == m) return true;
  return false;
}

// Files, directories (their mesh files, sorted, not recursive) and glob patterns, in order.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    if (is_dir(in)) {
      std::vector<std::string> files;
      if (DIR* d = opendir(in.c_str())) {
        while (dirent* e = readdir(d)) {
          const std::string name = e->d_name;
          const std::string path = (in.back() == '/' ? in : in + "/") + name;
          if (name[0] != '.' && !is_dir(path) && mesh_extension(name)) files.push_back(path);
        }
        closedir(d);
      }
      std::sort(files.begin(), files.end());
      out.insert(out.end(), files.begin(), files.end());
    } else if (in.find_first_of("*?[") != std::string::npos) {
      glob_t g{};
      if (glob(in.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
      globfree(&g);  // glob sorts its matches
    } else {
      out.push_back(in);
    }
  }
  return out;
}

std::string res_tag(const GridArgs& g) {
  std::ostringstream s;
  if (!g.dims.empty()) s << g.dims[0] << "x" << g.dims[1] << "x" << g.dims[2];
  else if (!g.voxel_size.empty()) s << "vs" << g.voxel_size[0];
  else s << (g.resolution ? g.resolution : 256);
  return s.str();
}

std::string expand_template(const std::string& t, const Job& j) {
  const size_t slash = j.input.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : j.input.substr(0, slash);
  const std::string name = slash == std::string::npos ? j.input : j.input.substr(slash + 1);
  const size_t dot = name.rfind('.');
  const std::string stem = dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
  const std::string ext = dot == std::string::npos || dot == 0 ? "" : name.substr(dot + 1);
  std::string target = j.target;
  std::replace(target.begin(), target.end(), ',', '+');
  std::replace(target.begin(), target.end(), ':', '_');
  const std::map<std::string, std::string> vars = {{"dir", dir},       {"stem", stem},           {"name", name},
                                                   {"ext", ext},       {"res", res_tag(j.grid)}, {"target", target},
                                                   {"mode", j.mode}, {"index", std::to_string(j.index)}};
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '{') {
      out += t[i];
      continue;
    }
    const size_t close = t.find('}', i);
    if (close == std::string::npos) fail(ErrorKind::kUsage, "--out: unclosed '{' in " + t);
    const auto it = vars.find(t.substr(i + 1, close - i - 1));
    if (it == vars.end())
      fail(ErrorKind::kUsage, "--out: unknown field {" + t.substr(i + 1, close - i - 1) +
                                  "} (known: dir, stem, name, ext, res, target, mode, index)");
    out += it->second;
    i = close;
  }
  return out;
}

// A manifest line's overrides of the command-line options.
void apply_overrides(const nlohmann::json& o, Job& j, const std::string& where) {
  auto numbers = [&](const char* key, size_t n) {
    std::vector<double> v;
    const nlohmann::json& x = o.at(key);
    if (x.is_number()) v.push_back(x.get<double>());
    else if (x.is_array())
      for (const auto& e : x) {
        if (!e.is_number()) fail(ErrorKind::kUsage, where + ": \"" + key + "\" must hold numbers");
        v.push_back(e.get<double>());
      }
    else fail(ErrorKind::kUsage, where + ": \"" + key + "\" must be a number or an array");
    if (n && v.size() != n) fail(ErrorKind::kUsage, where + ": \"" + key + "\" needs " + std::to_string(n) + " numbers");
    return v;
  };
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    if (k == "input" || k == "output") continue;
    if (k == "resolution" || k == "voxel_size" || k == "dims") {
      j.grid.resolution = 0;
      j.grid.voxel_size.clear();
      j.grid.dims.clear();
    }
  }
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    if (k == "input" || k == "output") continue;
    if (k == "resolution") j.grid.resolution = int32_t(numbers("resolution", 1)[0]);
    else if (k == "voxel_size") j.grid.voxel_size = numbers("voxel_size", 0);
    else if (k == "dims") {
      const auto v = numbers("dims", 3);
      j.grid.dims = {int32_t(v[0]), int32_t(v[1]), int32_t(v[2])};
    } else if (k == "pad") j.grid.pad = int32_t(numbers("pad", 1)[0]);
    else if (k == "bbox") j.grid.bbox = numbers("bbox", 6);
    else if (k == "mode" && it->is_string()) j.mode = it->get<std::string>();
    else if (k == "target" && it->is_string()) j.target = it->get<std::string>();
    else fail(ErrorKind::kUsage, where + ": unknown or mistyped key \"" + k + "\"");
  }
  if (j.mode != "thin" && j.mode != "conservative") fail(ErrorKind::kUsage, where + ": mode must be thin or conservative");
}

std::vector<Job> plan(const BatchCmdOptions& o) {
  Job base;
  base.grid = o.grid;
  base.mode = o.mode;
  base.target = o.target;
  std::vector<std::pair<Job, std::string>> jobs;  // job, explicit output
  for (const std::string& in : expand_inputs(o.inputs)) {
    Job j = base;
    j.input = in;
    jobs.push_back({j, ""});
  }
  if (!o.manifest.empty()) {
    check_input_file(o.manifest);
    std::ifstream f(o.manifest);
    size_t line_no = 0;
    for (std::string line; std::getline(f, line);) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = o.manifest + ":" + std::to_string(line_no);
      nlohmann::json obj;
      try {
        obj = nlohmann::json::parse(line);
      } catch (const std::exception& e) {
        fail(ErrorKind::kInput, where + ": not JSON (" + std::string(e.what()) + ")");
      }
      if (!obj.is_object() || !obj.contains("input") || !obj["input"].is_string())
        fail(ErrorKind::kInput, where + ": each line needs an object with a string \"input\"");
      Job j = base;
      j.input = obj["input"].get<std::string>();
      apply_overrides(obj, j, where);
      jobs.push_back({j, obj.contains("output") && obj["output"].is_string() ? obj["output"].get<std::string>() : ""});
    }
  }
  if (jobs.empty()) fail(ErrorKind::kUsage, "no input: give files, directories, patterns or --manifest");
  std::vector<Job> out;
  std::map<std::string, std::string> seen;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job j = jobs[i].first;
    j.index = i;
    if (!jobs[i].second.empty()) j.output = jobs[i].second;
    else if (!o.out_template.empty()) j.output = expand_template(o.out_template, j);
    else fail(ErrorKind::kUsage, j.input + ": no output: give --out TEMPLATE or \"output\" in the manifest");
    j.format = o.format.empty() ? format_from_path(j.output) : parse_format(o.format);
    parse_target_list(j.target);  // fails early on a bad target
    j.grid.to_options();
    if (parse_target_list(j.target).size() > 1 && (j.format == OutputFormat::kNpy || j.format == OutputFormat::kRaw))
      fail(ErrorKind::kUsage, j.output + ": a ." + format_name(j.format) + " file holds one target");
    auto [it, fresh] = seen.emplace(j.output, j.input);
    if (!fresh) fail(ErrorKind::kUsage, j.input + " and " + it->second + " would both write " + j.output);
    out.push_back(j);
  }
  return out;
}

// ---- Running ----------------------------------------------------------------------------------

struct Result {
  std::string status = "pending";  // ok, failed, skipped
  std::string error;
  uint64_t triangles = 0, active_voxels = 0;
  std::string checksum, device;
  double ms_load = 0, ms_voxelize = 0, ms_write = 0;
  std::vector<std::pair<std::string, double>> voxelize_stages;  // the voxelizer's own stage times
};

struct Work {
  const Job* job = nullptr;
  Result* result = nullptr;
  std::string fingerprint;
  std::unique_ptr<LoadedInput> input;
  std::vector<SparseGrid> grids;
  bool done = false;  // skipped or failed before writing
};

// The voxelizers: one per GPU, handed out to pipeline threads one at a time.
class DevicePool {
 public:
  void add(std::unique_ptr<GpuVoxelizer> g) { m_free.push_back(m_all.emplace_back(std::move(g)).get()); }
  bool cpu() const { return m_all.empty(); }
  size_t size() const { return m_all.size(); }
  GpuVoxelizer* take() {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_free.empty(); });
    GpuVoxelizer* g = m_free.back();
    m_free.pop_back();
    return g;
  }
  void give(GpuVoxelizer* g) {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_free.push_back(g);
    }
    m_cv.notify_one();
  }

 private:
  std::vector<std::unique_ptr<GpuVoxelizer>> m_all;
  std::vector<GpuVoxelizer*> m_free;
  std::mutex m_mutex;
  std::condition_variable m_cv;
};

class Progress {
 public:
  Progress(size_t total, int verbosity) : m_total(total), m_verbosity(verbosity), m_tty(isatty(2)), m_t0(Clock::now()) {}
  void update(const std::string& status) {
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_done;
    ++m_counts[status];
    if (m_verbosity == 0) return;
    const double s = ms_since(m_t0) / 1000.0;
    const bool last = m_done == m_total;
    if (m_tty) {
      const int width = 30, filled = int(width * m_done / std::max<size_t>(1, m_total));
      std::fprintf(stderr, "\r[%s%s] %zu/%zu  ok %zu  failed %zu  skipped %zu  %.1f jobs/s%s",
                   std::string(size_t(filled), '#').c_str(), std::string(size_t(width - filled), '.').c_str(), m_done,
                   m_total, m_counts["ok"], m_counts["failed"], m_counts["skipped"], m_done / std::max(s, 1e-9),
                   last ? "\n" : "");
    } else if (last || s - m_last_line >= 5.0) {
      m_last_line = s;
      std::fprintf(stderr, "voxtile batch: %zu/%zu done (ok %zu, failed %zu, skipped %zu), %.1f s\n", m_done, m_total,
                   m_counts["ok"], m_counts["failed"], m_counts["skipped"], s);
    }
  }
  std::map<std::string, size_t> counts() const { return m_counts; }
  double seconds() const { return ms_since(m_t0) / 1000.0; }

 private:
  size_t m_total, m_done = 0;
  int m_verbosity;
  bool m_tty;
  Clock::time_point m_t0;
  double m_last_line = 0;
  std::map<std::string, size_t> m_counts;
  std::mutex m_mutex;
};

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof(b), "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// Fingerprint of a job: the input's bytes, the options and the tool version.
std::string fingerprint(const Job& j) {
  Hasher h;
  std::ifstream f(j.input, std::ios::binary);
  if (!f) return "";
  std::vector<char> buf(1 << 20);
  while (f.read(buf.data(), std::streamsize(buf.size())) || f.gcount() > 0) h.bytes(buf.data(), size_t(f.gcount()));
  const std::string opts = options_string(j.mode, j.target, j.grid) + " version=" + VOXTILE_VERSION;
  h.bytes(opts.data(), opts.size());
  return hex64(h.digest());
}

double cpu_seconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void write_report(const std::string& path, const std::vector<Job>& jobs, const std::vector<Result>& results,
                  const Progress& progress, const std::string& shard) {
  nlohmann::ordered_json r;
  r["version"] = VOXTILE_VERSION;
  r["shard"] = shard;
  r["seconds"] = progress.seconds();
  // CPU time (user + system) of this process and of the reader processes that loaded the meshes.
  r["cpu_seconds"] = {{"process", cpu_seconds(RUSAGE_SELF)}, {"readers", cpu_seconds(RUSAGE_CHILDREN)}};
  const auto counts = progress.counts();
  for (const char* k : {"ok", "failed", "skipped"}) r["summary"][k] = counts.count(k) ? counts.at(k) : 0;
  r["jobs"] = nlohmann::json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Result& x = results[i];
    nlohmann::ordered_json j;
    j["index"] = jobs[i].index;
    j["input"] = jobs[i].input;
    j["output"] = jobs[i].output;
    j["status"] = x.status;
    if (!x.error.empty()) j["error"] = x.error;
    j["options"] = options_string(jobs[i].mode, jobs[i].target, jobs[i].grid);
    if (x.status == "ok") {
      j["device"] = x.device;
      j["triangles"] = x.triangles;
      j["active_voxels"] = x.active_voxels;
      j["checksum"] = x.checksum;
      j["ms"] = {{"load", x.ms_load}, {"voxelize", x.ms_voxelize}, {"write", x.ms_write}};
      for (const auto& [stage, ms] : x.voxelize_stages) j["voxelize_stages_ms"][stage] = ms;
    }
    r["jobs"].push_back(j);
  }
  const std::string text = r.dump(1) + "\n";
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace

void setup_batch(CLI::App& app, BatchCmdOptions& o) {
  app.add_option("inputs", o.inputs, "Mesh files, directories (their mesh files) or quoted glob patterns");
  app.add_option("--manifest", o.manifest,
                 "JSON Lines: one job per line, {\"input\": ..., \"output\": ..., and any of resolution, voxel_size, "
                 "dims, pad, bbox, mode, target}");
  app.add_option("--out", o.out_template,
                 "Output name template: {dir} {stem} {name} {ext} {res} {target} {mode} {index}, e.g. "
                 "'out/{stem}_{res}.vdb'");
  add_format_option(app, o.format, "Output format: vdb, ply, raw or npy (default: from the output name)");
  add_grid_options(app, o.grid);
  app.add_option("--mode,-m", o.mode, "thin or conservative")->check(CLI::IsMember({"thin", "conservative"}))->capture_default_str();
  app.add_option("--target,-t", o.target, "Targets as for voxelize")->capture_default_str();
  app.add_option("--devices", o.devices, "auto (GPU 0 if present, else CPU), cpu, all (every GPU), or a list: 0,1")
      ->capture_default_str();
  app.add_option("--jobs,-j", o.jobs, "Jobs in flight on CPU threads (loading, writing); 0 = all cores")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--gpu-memory", o.gpu_memory, "GPU memory budget per GPU in bytes (default 70% of the GPU's memory)");
  app.add_option("--gpu-workers", o.gpu_workers,
                 "Jobs in flight per GPU: each worker has its own stream and workspace, so one job's host work "
                 "(upload, download) overlaps another's kernels")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_flag("--keep-going,-k", o.keep_going, "Run every job even after failures (default: stop at the first)");
  app.add_flag("--skip-existing", o.skip_existing,
               "Skip jobs whose output exists and records the same input and options (.vdb, .ply, .raw)");
  app.add_option("--report", o.report, "Write a JSON report: per job status, error, counts, timings, checksum");
  app.add_option("--shard", o.shard, "I/N: run only jobs whose index mod N is I (0 <= I < N)");
  add_dense_options(app, o.dense_limit, o.force);
  app.add_flag("--load-only", o.load_only, "Only load the inputs (measures loading throughput; writes nothing)");
  add_verbosity_flags(app, o.verbosity, "A line per job on stderr");
}

int run_batch(const BatchCmdOptions& o) {
  Log log{o.verbosity};
  size_t shard_i = 0, shard_n = 1;
  if (!o.shard.empty()) {
    unsigned long i = 0, n = 0;
    char slash = 0;
    std::istringstream s(o.shard);
    if (!(s >> i >> slash >> n) || slash != '/' || n == 0 || i >= n || !s.eof())
      fail(ErrorKind::kUsage, "--shard must be I/N with 0 <= I < N (got " + o.shard + ")");
    shard_i = i;
    shard_n = n;
  }
  const std::vector<Job> all = plan(o);
  std::vector<Job> jobs;
  for (const Job& j : all)
    if (j.index % shard_n == shard_i) jobs.push_back(j);
  const int threads = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  // One reader process per loading thread, forked now, while this process is small (before any
  // GPU context): no fork per file, and no copy-on-write faults in this process while they run.
  auto loaders = std::make_unique<MeshLoaderPool>(int(std::min<size_t>(size_t(threads), std::max<size_t>(1, jobs.size()))));

  DevicePool pool;
  if (o.devices != "cpu") {
    std::vector<int> ids;
    if (o.devices == "auto") {
      if (query_gpu(0).available) ids.push_back(0);
      else log.info("voxtile: " + query_gpu(0).reason + "; using the CPU");
    } else if (o.devices == "all") {
      for (int d = 0; d < gpu_count(); ++d) ids.push_back(d);
      if (ids.empty()) fail(ErrorKind::kResource, "--devices all: " + query_gpu(0).reason);
    } else {
      std::stringstream s(o.devices);
      for (std::string item; std::getline(s, item, ',');) {
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
          fail(ErrorKind::kUsage, "--devices must be auto, cpu, all or a list of GPU indices (got " + o.devices + ")");
        ids.push_back(std::stoi(item));
      }
    }
    for (int d : ids) {
      const GpuInfo info = query_gpu(d);
      if (!info.available) fail(ErrorKind::kResource, "--devices: " + info.reason);
      GpuOptions gopt;
      gopt.device = d;
      // The workers of a GPU share its memory.
      const uint64_t budget = o.gpu_memory ? o.gpu_memory : uint64_t(double(info.total_memory) * 0.7);
      gopt.memory_budget = budget / uint64_t(o.gpu_workers);
      gopt.blocking_sync = true;  // the CPU cores are busy loading and writing
      for (int k = 0; k < o.gpu_workers; ++k) pool.add(std::make_unique<GpuVoxelizer>(gopt));
    }
  }

  WriteOptions base_write;
  base_write.dense.force = o.force;
  if (o.dense_limit) base_write.dense.limit_bytes = o.dense_limit;
  std::vector<Result> results(jobs.size());
  Progress progress(jobs.size(), o.verbosity);
  std::atomic<bool> stop{false};
  std::atomic<size_t> next{0};
  // Jobs in flight (meshes and grids held): the memory bound. Enough for every loading thread to
  // be busy while other jobs wait for a GPU worker or are being written.
  const size_t voxelizers = pool.cpu() ? 2 : pool.size();
  const size_t tokens = 2 * size_t(threads) + 2 * voxelizers;

  auto finish = [&](Work& w, const std::string& status, const std::string& error) {
    w.result->status = status;
    w.result->error = error;
    w.done = true;
    w.input.reset();
    w.grids.clear();
    if (status == "failed") {
      std::cerr << "voxtile: error: " << error << "\n";
      if (!o.keep_going) stop = true;
    }
    if (o.verbosity >= 2 && status != "failed") log.detail(w.job->input + ": " + status);
    progress.update(status);
  };

  // A flow graph: the limiter bounds the jobs in flight (memory); loading and writing run on up to
  // `threads` CPU threads, voxelizing on as many workers as GPUs, so no thread ever waits for a GPU
  // while there is loading or writing to do.
  namespace flow = tbb::flow;
  auto load_body = [&](Work* w) -> Work* {
    if (stop) {  // admitted before the first failure, not started: reported as "not run"
      w->done = true;
      return w;
    }
    const Job& j = *w->job;
    const auto t0 = Clock::now();
    try {
      if (!o.load_only) w->fingerprint = fingerprint(j);
      if (o.skip_existing && !w->fingerprint.empty() && recorded_metadata(j.output, j.format, "job") == w->fingerprint) {
        finish(*w, "skipped", "");
        return w;
      }
      w->input = std::make_unique<LoadedInput>(load_input(j.input, j.grid.to_options(), log, loaders.get()));
      if (o.load_only) {
        w->result->triangles = w->input->loaded.mesh.num_triangles();
        finish(*w, "ok", "");
      }
    } catch (const Error& e) {
      finish(*w, "failed", e.what());
    }
    w->result->ms_load = ms_since(t0);
    return w;
  };
  auto voxelize_job = [&](Work* w) {
    if (w->done) return;
    const Job& j = *w->job;
    const auto t0 = Clock::now();
    try {
      VoxelizeOptions vopt;
      vopt.mode = j.mode == "thin" ? VoxelMode::kThin : VoxelMode::kConservative;
      const std::vector<TargetSpec> targets = parse_target_list(j.target);
      VoxelizeStats st;
      if (pool.cpu()) {
        w->grids = voxelize_cpu_targets(w->input->loaded.mesh, w->input->spec, vopt, targets, &st);
      } else {
        GpuVoxelizer* g = pool.take();
        try {
          g->set_mesh(w->input->loaded.mesh);
          w->grids = g->voxelize_targets(w->input->spec, vopt, targets, &st);
        } catch (...) {
          pool.give(g);
          throw;
        }
        pool.give(g);
      }
      if (targets.size() == 1 && targets[0].target == Target::kBinary) w->grids[0].name = "voxels";
      w->result->triangles = w->input->loaded.mesh.num_triangles();
      w->result->active_voxels = st.active_voxels;
      w->result->device = st.device;
      w->result->voxelize_stages = st.stage_ms;
      w->input.reset();  // the mesh is no longer needed
    } catch (const Error& e) {
      finish(*w, "failed", j.input + ": " + e.what());
    }
    w->result->ms_voxelize = ms_since(t0);
  };
  auto write_job = [&](Work* w) {
    if (w->done) return;
    const Job& j = *w->job;
    const auto t0 = Clock::now();
    try {
      WriteOptions wopt = base_write;
      wopt.meta = {{"source", j.input},
                   {"options", options_string(j.mode, j.target, j.grid)},
                   {"version", VOXTILE_VERSION},
                   {"mode", j.mode},
                   {"target", j.target},
                   {"job", w->fingerprint}};
      write_grids(w->grids, j.output, j.format, wopt);
      w->result->checksum = hex64(w->grids[0].checksum());
      w->result->ms_write = ms_since(t0);
      finish(*w, "ok", "");
    } catch (const Error& e) {
      finish(*w, "failed", e.what());
    }
  };
  // Voxelizing and writing use parallel loops inside. With jobs in flight on every core those
  // loops run on the calling thread alone, in a one-slot arena of its own: no other thread is
  // woken for a slice of a copy, and a thread waiting for its loop never picks up an unrelated
  // job's load (which would hold a GPU or a finished grid for the whole load). CPU voxelization
  // (two jobs at a time) keeps its parallel loops, isolated.
  auto serially = [](auto&& f) {
    thread_local tbb::task_arena one(1, 1);
    one.execute(f);
  };
  auto voxelize_body = [&](Work* w) -> Work* {
    if (pool.cpu()) tbb::this_task_arena::isolate([&] { voxelize_job(w); });
    else serially([&] { voxelize_job(w); });
    return w;
  };
  auto write_body = [&](Work* w) {
    std::unique_ptr<Work> own(w);
    serially([&] { write_job(w); });
    return flow::continue_msg();
  };
  // Loading threads mostly wait for their reader process, so the arena has threads for loading,
  // for writing and for the voxelizers: a GPU worker never waits for a thread.
  const int arena_threads = 2 * threads + int(voxelizers);
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, size_t(arena_threads));
  tbb::task_arena arena(arena_threads);
  arena.execute([&] {
    flow::graph g;
    flow::input_node<Work*> source(g, [&](tbb::flow_control& fc) -> Work* {
      const size_t i = next++;
      if (i >= jobs.size() || stop) {
        fc.stop();
        return nullptr;
      }
      Work* w = new Work;
      w->job = &jobs[i];
      w->result = &results[i];
      return w;
    });
    flow::limiter_node<Work*> limit(g, tokens);
    flow::function_node<Work*, Work*> load(g, size_t(threads), load_body);
    // CPU voxelization is itself parallel: two jobs at a time keep the cores busy.
    flow::function_node<Work*, Work*> voxelize(g, voxelizers, voxelize_body);
    flow::function_node<Work*, flow::continue_msg> write(g, size_t(threads), write_body);
    flow::make_edge(source, limit);
    flow::make_edge(limit, load);
    flow::make_edge(load, voxelize);
    flow::make_edge(voxelize, write);
    flow::make_edge(write, limit.decrementer());
    source.activate();
    g.wait_for_all();
  });

  loaders.reset();  // ends the reader processes, so that their CPU time is counted below
  for (Result& r : results)
    if (r.status == "pending") r.status = "not run";
  if (!o.report.empty()) write_report(o.report, jobs, results, progress, o.shard);
  const auto counts = progress.counts();
  const size_t failed = counts.count("failed") ? counts.at("failed") : 0;
  const size_t not_run = size_t(std::count_if(results.begin(), results.end(), [](const Result& r) { return r.status == "not run"; }));
  std::ostringstream s;
  s.precision(3);
  s << "voxtile batch: " << jobs.size() << " jobs" << (o.shard.empty() ? "" : " (shard " + o.shard + ")") << ": "
    << (counts.count("ok") ? counts.at("ok") : 0) << " ok, " << failed << " failed, "
    << (counts.count("skipped") ? counts.at("skipped") : 0) << " skipped" << (not_run ? ", " + std::to_string(not_run) + " not run" : "")
    << " in " << std::fixed << progress.seconds() << " s";
  log.info(s.str());
  return failed ? kExitSomeFailed : 0;
}

}  // namespace voxtile
