// `voxtile batch`: plans the jobs (cli/batch/plan.cpp) and runs them (cli/batch/runner.cpp).
#include "cli/cmd_batch.h"

#include "cli/batch/plan.h"
#include "cli/batch/runner.h"

namespace voxtile {

void setup_batch(CLI::App& app, BatchCmdOptions& o) {
  app.add_option("inputs", o.inputs, "Mesh files, directories (their mesh files) or quoted glob patterns");
  app.add_option("--manifest", o.manifest,
                 "JSON Lines: one job per line, {\"input\": ..., \"output\": ..., and any of resolution, voxel_size, "
                 "dims, pad, bbox, mode, target, inside, band}");
  app.add_option("-o,--output,--out", o.out_template,
                 "Output name template: {dir} {stem} {name} {ext} {res} {target} {mode} {index}, e.g. "
                 "'out/{stem}_{res}.vdb'; missing directories are created");
  add_format_option(app, o.format, "Output format: vdb, ply, las, xyz, raw, npy, binvox or vox (default: from the output name)");
  add_grid_options(app, o.grid);
  add_load_options(app, o.load);
  add_solid_options(app, o.solid);
  app.add_option("--mode,-m", o.mode, "thin or conservative")->check(CLI::IsMember({"thin", "conservative"}))->capture_default_str();
  app.add_option("--target,-t", o.target, "Targets as for voxelize")->capture_default_str();
  app.add_option("-d,--device,--devices", o.devices,
                 "auto (GPU 0 if present, else CPU), cpu, gpu (GPU 0), all (every GPU), or a list: 0,1")
      ->check(CLI::Validator(check_device_spec, "DEVICE"))
      ->capture_default_str();
  app.add_option("--jobs,-j", o.jobs, "Jobs in flight on CPU threads (loading, writing); 0 = all cores")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  add_bytes_option(app, "--gpu-memory", o.gpu_memory, "GPU memory budget per GPU in bytes, e.g. 40G (default 70% of the GPU's memory)");
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
  add_grid_output_options(app, o.writing);
  add_preview_options(app, o.preview, true);
  app.add_option("--report-html", o.report_html,
                 "Write an HTML contact sheet: per job its --preview thumbnail, status, counts and timings (opens in a "
                 "browser with no server; pictures are linked relative to it)");
  app.add_flag("--load-only", o.load_only, "Only load the inputs (measures loading throughput; writes nothing)");
  add_verbosity_flags(app, o.verbosity, "A line per job on stderr");
}

int run_batch(const BatchCmdOptions& o) {
  const Shard shard = parse_shard(o.shard);
  return run_batch_jobs(o, shard_jobs(plan_batch(o), shard));
}

}  // namespace voxtile
