// One voxelization job, the same for `voxtile voxelize` and `voxtile batch`: load -> grid -> voxelize
// -> write, each step a function (the batch runs them on different threads), and run_job for all
// of them in a row. What a job did is a JobReport, written as JSON by to_json.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/common.h"
#include "core/render.h"
#include "core/voxelizer.h"
#include "io/writers.h"

namespace voxtile {

struct Job {
  size_t index = 0;  // in the full (unsharded) job list
  std::string input, output;
  OutputFormat format = OutputFormat::kVdb;
  GridArgs grid;
  std::string mode = "conservative", target = "binary";
  std::string loader = "auto";  // auto, native, assimp
  std::string inside = "winding";  // solid and sdf targets: parity, winding, vote
  int band = 3;                    // sdf target: narrow-band half-width in voxels
  bool make_dirs = false;          // create the output's missing directories (batch)
  std::string preview;             // a PNG picture of the grids, written after them ("" = none)
  RenderOptions picture;           // how the picture looks
};

struct JobReport {
  std::string status = "pending";  // ok, failed, skipped, not run
  std::string error;
  std::string device;
  int gpu = -1;                    // the CUDA device that voxelized, or -1
  uint64_t triangles = 0, active_voxels = 0, bricks = 0, tile_pairs = 0, tiles = 0;
  uint64_t dropped_degenerate = 0, dropped_nonfinite = 0, dropped_bad_index = 0;
  std::string reader;                                     // the reader that loaded the mesh
  GridSpec spec;
  std::string checksum;                                   // of the first grid, hex
  nlohmann::ordered_json grids = nlohmann::json::array(); // name, type, active voxels, checksum per grid
  double ms_load = 0, ms_voxelize = 0, ms_write = 0, ms_total = 0;
  double ms_preview = -1;           // the picture (write_job), when one was asked for
  double ms_gpu_wait = -1;          // run_job: time spent waiting for the voxelizer after loading
  double ms_voxelizer_start = -1;   // the first job: how long the voxelizer took to start (GPU context)
  std::vector<std::pair<std::string, double>> voxelize_stages;  // the voxelizer's own stage times
};

// "thin" or "conservative" (anything else is refused by the option parsers).
VoxelMode parse_mode(const std::string& mode);
// A usage error unless the job's targets, grid options and format go together.
void check_job(const Job& job);
// The output's checks that the grid's spec decides (io/writers.h check_grid_output), for every
// target: run after loading, before voxelizing.
void check_job_output(const Job& job, const GridSpec& spec, const WriteOptions& base);

// The steps. load_job fills the report's load time and mesh counters; voxelize_job its voxelizer
// counters, stage times and device; write_job writes atomically (metadata: source, options,
// version, mode, target, and `fingerprint` as "job" when not empty) and fills checksums and times;
// then the job's picture (cli/preview.h), on the GPU that voxelized when there was one.
LoadedInput load_job(const Job& job, const Log& log, JobReport& report, MeshLoaderPool* loaders = nullptr,
                     const LoaderLimits& limits = {});
std::vector<SparseGrid> voxelize_job(Voxelizer& voxelizer, const Job& job, const LoadedInput& input, JobReport& report);
void write_job(const Job& job, const std::vector<SparseGrid>& grids, const WriteOptions& base,
               const std::string& fingerprint, JobReport& report);
// All three; throws Error with the input named. `voxelizer` is asked for after the mesh is loaded
// (and given it), so that a voxelizer still starting (GPU context creation) overlaps the load.
JobReport run_job(const std::function<Voxelizer&(const LoadedInput&)>& voxelizer, const Job& job,
                  const WriteOptions& base, const Log& log, MeshLoaderPool* loaders = nullptr);

// How long (ms) the CPU voxelizer would take for the job's targets on `mesh` and `spec` with
// `threads` threads, estimated from a per-core cost per triangle and per voxel crossed (each
// triangle's area across the voxels, its projections on the three axis planes over the voxel's
// faces, plus half its perimeter in voxels): within about 1.3x of the times measured on 2 and 16
// cores (README, "--device auto"). Solid and sdf targets add their inside test (per triangle and
// column, and per boundary edge and column under winding) and band (per band-box voxel), fitted on
// 16 cores.
double estimated_cpu_ms(const Job& job, const Mesh& mesh, const GridSpec& spec, int threads);

// The voxelizer --device picks, started in the background (BackgroundStart) as soon as this is
// made, so that it overlaps loading the first mesh. Under --device auto, a job the CPU finishes
// sooner than the GPU would start (small_job_on_cpu of estimated_cpu_ms) runs on the CPU instead,
// with the same bytes, and the GPU goes on starting for the jobs after it. A GPU voxelizer is left
// for the process's end to reclaim (main leaves without exit handlers) instead of freeing its
// buffers one by one (tens of milliseconds of every run).
class VoxelizerStart {
 public:
  VoxelizerStart(const DeviceArgs& device, const Log& log);
  ~VoxelizerStart();
  VoxelizerStart(const VoxelizerStart&) = delete;
  VoxelizerStart& operator=(const VoxelizerStart&) = delete;
  // The voxelizer for this loaded job; throws the start's error (then failed() is true).
  Voxelizer& pick(const Job& job, const LoadedInput& input);
  bool failed() const { return m_failed; }
  bool took_started() const { return m_started != nullptr; }  // a job took the started voxelizer
  double start_ms() const { return m_started ? m_start.ms() : -1; }  // how long its start took

 private:
  std::string m_device;
  Log m_log;
  BackgroundStart<Voxelizer> m_start;
  bool m_failed = false;
  std::unique_ptr<Voxelizer> m_started, m_cpu;
};

// A mesh given to a command that works on grids (mesh, preview): loaded and voxelized as
// `voxelize` would (the job's targets), on the voxelizer --device picks (VoxelizerStart). `gpu` is
// the GPU it ran on, -1 for the CPU, or -2 for the CPU under auto as a small job, leaving the device
// of what follows (a picture) to the caller; `source` describes it ("N triangles -> TARGET GRID
// (DEVICE)"); `stages` gets the load and voxelize times.
std::vector<SparseGrid> voxelize_mesh_input(const Job& job, const DeviceArgs& device, const LoaderLimits& limits,
                                            const Log& log, int& gpu, std::string& source,
                                            std::vector<std::pair<std::string, double>>& stages);

// "mode=... target=... resolution=..." as recorded in output metadata and reports.
std::string job_options(const Job& job);
// The one-line summary of a finished job (stderr).
std::string job_summary(const Job& job, const JobReport& report);
// The --stats object of `voxtile voxelize` and a job's entry in the batch report.
nlohmann::ordered_json stats_json(const Job& job, const JobReport& report);

}  // namespace voxtile
