// Batch running: reader processes, the voxelizers (one per GPU worker, or the CPU), a TBB flow
// graph whose limiter bounds the meshes and grids in memory (load -> voxelize -> write), progress
// on stderr and the JSON report. Each step is cli/job.h's.
#include "cli/batch/runner.h"

#include <sys/resource.h>
#include <unistd.h>

#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/hash.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/mesh_reader.h"
#include "io/json_text.h"

namespace voxtile {
namespace {

// The voxelizers: one per GPU worker, handed out to pipeline threads one at a time; none on the CPU.
class DevicePool {
 public:
  void add(std::unique_ptr<Voxelizer> v) { m_free.push_back(m_all.emplace_back(std::move(v)).get()); }
  bool cpu() const { return m_all.empty(); }
  size_t size() const { return m_all.size(); }
  Voxelizer* take() {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_free.empty(); });
    Voxelizer* v = m_free.back();
    m_free.pop_back();
    return v;
  }
  void give(Voxelizer* v) {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_free.push_back(v);
    }
    m_cv.notify_one();
  }

 private:
  std::vector<std::unique_ptr<Voxelizer>> m_all;
  std::vector<Voxelizer*> m_free;
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

// Fingerprint of a job: the input's bytes, the options and the tool version, and for .vdb outputs
// the grids' forms (BoolGrids, half floats) where asked for.
std::string fingerprint(const Job& j, const WriteOptions& w) {
  Hasher h;
  std::ifstream f(j.input, std::ios::binary);
  if (!f) return "";
  std::vector<char> buf(1 << 20);
  while (f.read(buf.data(), std::streamsize(buf.size())) || f.gcount() > 0) h.bytes(buf.data(), size_t(f.gcount()));
  std::string opts = job_options(j) + " version=" + VOXTILE_VERSION;
  if (j.format == OutputFormat::kVdb)
    opts += std::string(w.vdb.bool_grids ? " vdb-bool" : "") + (w.vdb.half ? " vdb-half" : "");
  h.bytes(opts.data(), opts.size());
  return hex64(h.digest());
}

double cpu_seconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void write_report(const std::string& path, const std::vector<Job>& jobs, const std::vector<JobReport>& results,
                  const Progress& progress, const std::string& shard) {
  nlohmann::ordered_json r;
  r["version"] = VOXTILE_VERSION;
  r["shard"] = shard;
  r["seconds"] = progress.seconds();
  // CPU time (user + system) of this process and of the reader processes that loaded the meshes.
  r["cpu_seconds"] = {{"process", cpu_seconds(RUSAGE_SELF)}, {"readers", cpu_seconds(RUSAGE_CHILDREN)}};
  const auto counts = progress.counts();
  for (const char* k : {"ok", "failed", "skipped"}) r["summary"][k] = counts.count(k) ? counts.at(k) : 0;
  r["summary"]["not run"] = size_t(std::count_if(results.begin(), results.end(), [](const JobReport& x) { return x.status == "not run"; }));
  r["jobs"] = nlohmann::json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobReport& x = results[i];
    nlohmann::ordered_json j;
    j["index"] = jobs[i].index;
    j["input"] = jobs[i].input;
    j["output"] = jobs[i].output;
    j["status"] = x.status;
    if (!x.error.empty()) j["error"] = x.error;
    j["options"] = job_options(jobs[i]);
    if (x.status == "ok") {
      j["device"] = x.device;
      j["triangles"] = x.triangles;
      j["active_voxels"] = x.active_voxels;
      j["checksum"] = x.checksum;
      j["ms"] = {{"load", x.ms_load}, {"voxelize", x.ms_voxelize}, {"write", x.ms_write}};
      if (x.ms_preview >= 0) j["ms"]["preview"] = x.ms_preview;
      if (!jobs[i].preview.empty()) j["preview"] = jobs[i].preview;
      if (!x.voxelize_stages.empty()) j["voxelize_stages_ms"] = stages_json(x.voxelize_stages);
    }
    r["jobs"].push_back(j);
  }
  const std::string text = json_text(r, 1) + "\n";
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

// A job in flight.
struct Work {
  const Job* job = nullptr;
  JobReport* result = nullptr;
  std::string fingerprint;
  std::unique_ptr<LoadedInput> input;
  std::vector<SparseGrid> grids;
  bool done = false;  // skipped or failed before writing
};

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A relative URL from the report's directory to `path`: each byte outside the unreserved set and
// '/' percent-encoded.
std::string relative_url(const std::string& path, const std::string& report) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path base = fs::absolute(fs::path(report), ec).parent_path();
  fs::path rel = fs::absolute(fs::path(path), ec).lexically_normal().lexically_relative(base.lexically_normal());
  if (rel.empty()) rel = fs::absolute(fs::path(path), ec);
  std::string out;
  for (const unsigned char c : rel.generic_string()) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += char(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// The contact sheet: one card per job with its thumbnail (a relative link, so the report and
// pictures can be moved together and opened with no server), status, counts and timings. A small
// script counts the thumbnails that loaded and writes it into #thumbnails (read by the tests).
void write_html_report(const std::string& path, const std::vector<Job>& jobs, const std::vector<JobReport>& results,
                       const Progress& progress) {
  std::ostringstream h;
  h.precision(4);
  const auto counts = progress.counts();
  auto count = [&](const char* k) { return counts.count(k) ? counts.at(k) : size_t(0); };
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>voxtile batch report</title>\n"
    << "<style>\nbody{font-family:system-ui,sans-serif;margin:1.5em;background:#fafafa;color:#222}\n"
    << ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:14px}\n"
    << ".card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px;font-size:13px;overflow-wrap:anywhere}\n"
    << ".card img{width:100%;height:auto;display:block;background:#f2f2f2}\n"
    << ".failed{border-color:#d33}.failed .status{color:#d33}.status{font-weight:600}\n"
    << "table{border-collapse:collapse}td{padding:1px 6px 1px 0;vertical-align:top}\n"
    << "</style>\n</head>\n<body>\n<h1>voxtile batch</h1>\n<p>" << jobs.size()
    << (jobs.size() == 1 ? " job: " : " jobs: ") << count("ok") << " ok, "
    << count("failed") << " failed, " << count("skipped") << " skipped, in " << progress.seconds()
    << " s (voxtile " << VOXTILE_VERSION << ").</p>\n<p id=\"thumbnails\">thumbnails: not checked</p>\n<div class=\"grid\">\n";
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const JobReport& x = results[i];
    h << "<div class=\"card " << html_escape(x.status) << "\">\n";
    if (!j.preview.empty() && x.status == "ok" && x.ms_preview >= 0)
      h << "<a href=\"" << relative_url(j.preview, path) << "\"><img class=\"thumb\" src=\""
        << relative_url(j.preview, path) << "\" alt=\"" << html_escape(j.input) << "\"></a>\n";
    h << "<table>\n<tr><td>input</td><td>" << html_escape(j.input) << "</td></tr>\n<tr><td>output</td><td>"
      << html_escape(j.output) << "</td></tr>\n<tr><td>status</td><td class=\"status\">" << html_escape(x.status)
      << "</td></tr>\n";
    if (!x.error.empty()) h << "<tr><td>error</td><td>" << html_escape(x.error) << "</td></tr>\n";
    h << "<tr><td>options</td><td>" << html_escape(job_options(j)) << "</td></tr>\n";
    if (x.status == "ok") {
      h << "<tr><td>triangles</td><td>" << x.triangles << "</td></tr>\n<tr><td>voxels</td><td>" << x.active_voxels
        << "</td></tr>\n<tr><td>grid</td><td>" << x.spec.dims.x << "x" << x.spec.dims.y << "x" << x.spec.dims.z
        << "</td></tr>\n<tr><td>device</td><td>" << html_escape(x.device) << "</td></tr>\n<tr><td>ms</td><td>load "
        << x.ms_load << ", voxelize " << x.ms_voxelize << ", write " << x.ms_write;
      if (x.ms_preview >= 0) h << ", picture " << x.ms_preview;
      h << "</td></tr>\n<tr><td>checksum</td><td>" << x.checksum << "</td></tr>\n";
    }
    h << "</table>\n</div>\n";
  }
  h << "</div>\n<script>\n(function(){var imgs=document.querySelectorAll('img.thumb'),left=imgs.length,ok=0;\n"
    << "function done(){document.getElementById('thumbnails').textContent='thumbnails: '+ok+' of '+imgs.length+' loaded';}\n"
    << "if(!left){done();return;}\n"
    << "imgs.forEach(function(im){function fin(){if(im.complete&&im.naturalWidth>0)ok++;if(--left===0)done();}\n"
    << "if(im.complete)fin();else{im.addEventListener('load',fin);im.addEventListener('error',fin);}});})();\n"
    << "</script>\n</body>\n</html>\n";
  const std::string text = h.str();
  make_parent_dirs(path);
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace

int run_batch_jobs(const BatchCmdOptions& o, const std::vector<Job>& jobs) {
  Log log{o.verbosity};
  const int threads = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  // One reader process per loading thread, forked now, while this process is small (before any
  // GPU context): no fork per file, and no copy-on-write faults in this process while they run.
  // Files read natively are parsed on the loading threads; only Assimp's formats need these.
  const bool any_assimp = std::any_of(jobs.begin(), jobs.end(),
                                     [](const Job& j) { return !reads_natively(j.input, parse_loader(j.loader)); });
  auto loaders = std::make_unique<MeshLoaderPool>(
      any_assimp ? int(std::min<size_t>(size_t(threads), std::max<size_t>(1, jobs.size()))) : 0, o.load.limits());

  DevicePool pool;  // none when only loading: no GPU start-up
  for (int d : o.load_only ? std::vector<int>{} : choose_devices(o.devices, log)) {
    const GpuInfo info = query_gpu(d);
    if (!info.available) fail(ErrorKind::kResource, "--devices: " + info.reason);
    GpuOptions gopt;
    gopt.device = d;
    // The workers of a GPU share its memory.
    const uint64_t budget = o.gpu_memory ? o.gpu_memory : uint64_t(double(info.total_memory) * 0.7);
    gopt.memory_budget = budget / uint64_t(o.gpu_workers);
    gopt.blocking_sync = true;  // the CPU cores are busy loading and writing
    for (int k = 0; k < o.gpu_workers; ++k) pool.add(make_gpu_voxelizer(gopt));
  }
  const WriteOptions base_write = o.writing.write_options({});
  std::vector<JobReport> results(jobs.size());
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
  auto serially = [](auto&& f) {
    thread_local tbb::task_arena one(1, 1);
    one.execute(f);
  };
  // With more jobs than loading threads, each file is parsed on its loading thread alone: the
  // cores are busy with other files anyway, and nested parallel loops over small files cost more
  // than they give (measured: batch-e2e record). A few large files keep their parallel parsing.
  const bool many_jobs = jobs.size() >= 2 * size_t(threads);
  auto load_body = [&](Work* w) -> Work* {
    if (stop) {  // admitted before the first failure, not started: reported as "not run"
      w->done = true;
      return w;
    }
    const Job& j = *w->job;
    const auto t0 = Clock::now();
    try {
      if (!o.load_only) w->fingerprint = fingerprint(j, base_write);
      if (o.skip_existing && !w->fingerprint.empty() && recorded_metadata(j.output, j.format, "job") == w->fingerprint) {
        finish(*w, "skipped", "");
        return w;
      }
      auto load = [&] { w->input = std::make_unique<LoadedInput>(load_job(j, log, *w->result, loaders.get())); };
      if (many_jobs) serially(load);
      else load();
      if (!o.load_only) check_job_output(j, w->input->spec, base_write);
      if (o.load_only) finish(*w, "ok", "");
    } catch (const Error& e) {
      finish(*w, "failed", e.what());
    }
    w->result->ms_load = ms_since(t0);
    return w;
  };
  auto voxelize_step = [&](Work* w) {
    if (w->done) return;
    try {
      if (pool.cpu()) {
        CpuVoxelizer cpu;  // one per job: two CPU jobs run at a time
        w->grids = voxelize_job(cpu, *w->job, *w->input, *w->result);
      } else {
        Voxelizer* v = pool.take();
        try {
          w->grids = voxelize_job(*v, *w->job, *w->input, *w->result);
        } catch (...) {
          pool.give(v);
          throw;
        }
        pool.give(v);
      }
      w->input.reset();  // the mesh is no longer needed
    } catch (const Error& e) {
      finish(*w, "failed", e.what());
    }
  };
  auto write_step = [&](Work* w) {
    if (w->done) return;
    try {
      write_job(*w->job, w->grids, base_write, w->fingerprint, *w->result);
      finish(*w, "ok", "");
    } catch (const Error& e) {
      finish(*w, "failed", e.what());
    }
  };
  // Voxelizing and writing use parallel loops inside. With jobs in flight on every core those
  // loops run on the calling thread alone (`serially`, above), in a one-slot arena of its own: no
  // other thread is woken for a slice of a copy, and a thread waiting for its loop never picks up an unrelated
  // job's load (which would hold a GPU or a finished grid for the whole load). CPU voxelization
  // (two jobs at a time) keeps its parallel loops, isolated.
  auto voxelize_body = [&](Work* w) -> Work* {
    if (pool.cpu()) tbb::this_task_arena::isolate([&] { voxelize_step(w); });
    else serially([&] { voxelize_step(w); });
    return w;
  };
  auto write_body = [&](Work* w) {
    std::unique_ptr<Work> own(w);
    serially([&] { write_step(w); });
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
  for (JobReport& r : results)
    if (r.status == "pending") r.status = "not run";
  if (!o.report.empty()) write_report(o.report, jobs, results, progress, o.shard);
  if (!o.report_html.empty()) write_html_report(o.report_html, jobs, results, progress);
  const auto counts = progress.counts();
  const size_t failed = counts.count("failed") ? counts.at("failed") : 0;
  const size_t not_run = size_t(std::count_if(results.begin(), results.end(), [](const JobReport& r) { return r.status == "not run"; }));
  std::ostringstream s;
  s.precision(3);
  s << "voxtile batch: " << jobs.size() << (jobs.size() == 1 ? " job" : " jobs")
    << (o.shard.empty() ? "" : " (shard " + o.shard + ")") << ": "
    << (counts.count("ok") ? counts.at("ok") : 0) << " ok, " << failed << " failed, "
    << (counts.count("skipped") ? counts.at("skipped") : 0) << " skipped" << (not_run ? ", " + std::to_string(not_run) + " not run" : "")
    << " in " << std::fixed << progress.seconds() << " s";
  log.info(s.str());
  return failed ? kExitSomeFailed : 0;
}

}  // namespace voxtile
