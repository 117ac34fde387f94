// Shared CLI helpers: logging to stderr, grid options, JSON output.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/grid_spec.h"
#include "io/dense.h"
#include "io/writers.h"
#include "core/voxelize.h"
#include "io/mesh_reader.h"
#include "kernels/api.h"

namespace voxtile {

// Verbosity: 0 = errors only (-q), 1 = warnings and summaries, 2 = details (-v).
struct Log {
  int level = 1;
  void warn(const std::string& msg) const;
  void info(const std::string& msg) const;
  void detail(const std::string& msg) const;
};

// Raw grid options as given on the command line (vectors keep CLI11 simple).
struct GridArgs {
  int32_t resolution = 0;
  std::vector<double> voxel_size;  // 1 or 3 values
  std::vector<double> bbox;        // 6 values
  std::vector<int32_t> dims;       // 3 values
  int32_t pad = 0;
  GridOptions to_options() const;  // throws Error(kUsage)
};
void add_grid_options(CLI::App& app, GridArgs& args);
// The command line with a `-s S` / `--voxel-size S` of one number moved to the end of the options
// (before any "--"): CLI11 gives an option of 1 to 3 values up to 3 of the arguments after it
// (even in the `--voxel-size=S` form), so `voxelize -s 0.1 in.obj` took the file for a second
// value and failed. Options do not depend on their order.
std::vector<std::string> voxel_size_args(int argc, const char* const* argv);
// --loader auto|native|assimp and --load-timeout, for commands that read meshes.
struct LoadArgs {
  std::string loader = "auto";
  double timeout_s = 600;
  Loader kind() const { return parse_loader(loader); }
  LoaderLimits limits() const;
};
void add_load_options(CLI::App& app, LoadArgs& args);
// --inside parity|winding|vote and --band N, for commands with solid and sdf targets.
struct SolidArgs {
  std::string inside = "winding";
  int band = 3;
};
void add_solid_options(CLI::App& app, SolidArgs& args);
// An option taking a byte count ("512M", "8G", "1000000"): 1 to 2^62 bytes, anything else a usage error.
CLI::Option* add_bytes_option(CLI::App& app, const std::string& name, uint64_t& out, const std::string& help);
// How grids are written, for every command that writes them: --dense-limit and --force (.raw/.npy),
// --vdb-bool and --vdb-half (.vdb).
struct GridOutputArgs {
  uint64_t limit = 0;  // 0: the default limit
  bool force = false;
  bool vdb_bool = false;  // binary grids as BoolGrids in .vdb files
  bool vdb_half = false;  // float and vector values as half floats in .vdb files
  WriteOptions write_options(const Metadata& meta) const;  // these and the metadata
};
void add_grid_output_options(CLI::App& app, GridOutputArgs& args);
// --device auto|cpu|gpu|all|LIST, --gpu-memory (`gpu_memory_help`) and --threads.
struct DeviceArgs {
  std::string device = "auto";
  uint64_t gpu_memory = 0;  // bytes, 0 = 80% of the free GPU memory
  int threads = 0;          // CPU threads, 0 = all cores
};
void add_device_options(CLI::App& app, DeviceArgs& args, const std::string& gpu_memory_help);
// "" when `devices` is a valid --device value (auto, cpu, gpu, all, or GPU indices "0,1"), else
// the usage message (a CLI11 validator).
std::string check_device_spec(const std::string& devices);
// The GPUs of --device: auto (GPU 0 if usable, else none, with a one-line notice), cpu (none), gpu
// (GPU 0, which must be usable: Error(kResource)), all (every GPU; none is Error(kResource)), or the
// list (a GPU listed twice is Error(kUsage)).
std::vector<int> choose_devices(const std::string& devices, const Log& log);
// The one CPU/GPU choice of the single-run commands: the GPU that --device picks (the first of
// choose_devices, which must be usable), or -1 for the CPU.
int pick_gpu(const std::string& device, const Log& log);
// -q (errors only) and -v (`verbose_help`).
void add_verbosity_flags(CLI::App& app, int& verbosity, const std::string& verbose_help);

// The voxelizer for --device (pick_gpu), with --gpu-memory and --threads; `gpu` (when given) is set
// to the GPU it runs on, or -1.
std::unique_ptr<Voxelizer> open_voxelizer(const DeviceArgs& device, const Log& log, int* gpu = nullptr);

// What a GPU command needs made before its GPU work (a voxelizer, a point binner: CUDA's start-up,
// 0.1 to 0.3 s), made by `make` on a detached thread as soon as this is constructed, so that it
// overlaps reading the input. A run that ends without taking it does not wait for it (main leaves
// without exit handlers); what nobody took is destroyed on that thread.
template <class T>
class BackgroundStart {
 public:
  explicit BackgroundStart(std::function<std::unique_ptr<T>()> make) : m_shared(std::make_shared<Shared>()) {
    std::thread([shared = m_shared, make = std::move(make)] {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        std::unique_ptr<T> made = make();
        shared->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        shared->promise.set_value(std::move(made));
      } catch (...) {
        shared->promise.set_exception(std::current_exception());
      }
    }).detach();
  }
  bool done() const { return m_shared->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  std::unique_ptr<T> take() { return m_shared->future.get(); }  // waits; throws the start's error; once
  double ms() const { return m_shared->ms; }                    // how long making it took (once taken)

 private:
  struct Shared {
    std::promise<std::unique_ptr<T>> promise;
    std::future<std::unique_ptr<T>> future = promise.get_future();
    double ms = -1;
  };
  std::shared_ptr<Shared> m_shared;
};
// Under --device `device`, whether a job runs on the CPU rather than wait for a GPU that has not
// started yet (`gpu_done`): under auto, on a machine with NVIDIA's driver (where it has none, the
// GPU's start fails at once and says so), when the job's CPU time, `cpu_ms()` (asked only then), is
// below kSmallJobCpuMs. -v says which: "INPUT: VERB on the CPU (estimated N ms) while the GPU
// starts", or "INPUT: waiting for the GPU (VERB on the CPU: N ms)". CUDA's start-up takes 200-340 ms
// on the H100 and H200 machines (a `voxelize -d gpu` process 260-370 ms for meshes up to 400k
// triangles, whatever the grid); the outputs are the same bytes.
constexpr double kSmallJobCpuMs = 100;
// (`limit_ms`: another limit, for a job whose GPU path also waits for its start.)
bool small_job_on_cpu(const std::string& device, bool gpu_done, const std::function<double()>& cpu_ms, const Log& log,
                      const std::string& input, const std::string& verb, double limit_ms = kSmallJobCpuMs);
// The one-line notice of --device auto without a usable GPU: "voxtile: WHY; using the CPU".
void note_cpu_fallback(const Log& log);
// The threads a CPU job gets (TBB's arena and --threads).
int cpu_threads();

// A loaded mesh and its grid; errors name the input. `loader` picks the reader (native formats are
// read in this process); Assimp's formats go to one of `loaders`' reader processes (batch), else to a
// reader process of their own under `limits`.
struct LoadedInput {
  MeshLoadResult loaded;
  GridSpec spec;
  double ms_load = 0;
};
LoadedInput load_input(const std::string& path, const GridOptions& grid, const Log& log, Loader loader,
                       MeshLoaderPool* loaders = nullptr, const LoaderLimits& limits = {});

// "mode=... target=... resolution=..." as recorded in output metadata.
std::string options_string(const std::string& mode, const std::string& target, const GridArgs& grid);

// 16 hex digits.
std::string hex64(uint64_t v);
// [{"name", "type", "active_voxels", "checksum"}] of each grid.
nlohmann::ordered_json grids_json(const std::vector<SparseGrid>& grids);
// {"name": ms, ...} of stage times, in order.
nlohmann::ordered_json stages_json(const std::vector<std::pair<std::string, double>>& stages);
// One JSON object on a line of stdout (--stats).
void print_json_line(const nlohmann::ordered_json& j);
// --format,-f: a grid or point format (format_names, io/writers.h).
void add_format_option(CLI::App& app, std::string& format, const std::string& help);
// --format,-f: a mesh format (ply, obj, stl or glb; io/mesh_writer.h mesh_format).
void add_mesh_format_option(CLI::App& app, std::string& format);
// The outputs (path, whether its data is binary) of a command that are standard output (`-o -`,
// /dev/stdout: is_standard_output), checked before any work: refused (Error(kUsage)) where two of
// them are, where `--stats` prints its JSON there too (unless standard output is a terminal or a
// device such as /dev/null, where nothing is parsed), and where binary data would go to a terminal.
void check_standard_output(const std::vector<std::pair<std::string, bool>>& outputs, bool stats);
// Whether a picture may be written to `path`: a .png, or standard output.
bool png_output(const std::string& path);

}  // namespace voxtile
