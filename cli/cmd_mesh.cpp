// `voxtile mesh IN -o OUT.(ply|obj|stl|glb)`: marching cubes of a level set or field, or of
// occupancy (smooth), or the voxel faces of occupancy (cubes); mesh inputs are voxelized first
// (sdf for smooth, solid for cubes), point clouds binned into occupancy.
#include "cli/cmd_mesh.h"

#include <cmath>
#include <sstream>

#include "cli/job.h"
#include "cli/preview.h"
#include "core/error.h"
#include "core/isosurface.h"
#include "core/progress.h"
#include "core/timer.h"
#include "io/files.h"
#include "io/grid_reader.h"
#include "io/mesh_writer.h"
#include "io/points_io.h"
#include "kernels/api.h"

namespace voxtile {
void setup_mesh(CLI::App& app, MeshCmdOptions& o) {
  app.add_option("input", o.input,
                 "A grid (.vdb level set, field or occupancy; .npy .raw .binvox .vox; voxel-centre .ply), a mesh, "
                 "voxelized first (-t sdf for smooth, solid for cubes), or a point cloud (.xyz .pts .las, .ply "
                 "without faces), binned into occupancy first")
      ->required();
  app.add_option("-o,--output", o.output,
                 "Output mesh: .ply (with normals), .obj, .off, .stl, .glb or .3mf; - for stdout")
      ->required();
  add_mesh_format_option(app, o.format);
  app.add_option("--style", o.style,
                 "smooth: marching cubes (of the field; of occupancy at 0.5); cubes: the faces between active and "
                 "inactive voxels (occupancy only); auto: smooth")
      ->check(CLI::IsMember({"auto", "smooth", "cubes"}))
      ->capture_default_str();
  app.add_option("--iso", o.iso, "Iso value of a level set or float field (world units for an sdf)")
      ->capture_default_str();
  app.add_option("--grid", o.grid_name,
                 "The grid of a multi-grid file (default: the first float grid, else the first)");
  app.add_flag("--ascii", o.ascii, "ASCII .ply or .stl instead of binary");
  add_grid_options(app, o.grid);
  add_load_options(app, o.load);
  add_solid_options(app, o.solid);
  app.add_option("--mode,-m", o.mode, "Mesh inputs: the surface voxelization of the solid (thin or conservative)")
      ->check(CLI::IsMember({"thin", "conservative"}))
      ->capture_default_str();
  add_device_options(app, o.device,
                     "GPU memory budget in bytes (default 80% of free): a mesh input's voxelization is split into "
                     "batches; marching cubes that would need more runs on the CPU under auto, else exit 5");
  app.add_flag("--stats", o.stats, "Print a JSON summary to stdout (counts, timings)");
  add_verbosity_flags(app, o.verbosity, "Per-stage details on stderr");
}

namespace {
// The CPU's marching cubes of `grid` in ms on `threads` threads, for --device auto: per brick it
// visits (a float grid's bricks; an occupancy grid's bricks that are not full, since its interior is
// skipped), shared by the threads as threads^0.8 would, then 2 ms. Fitted to -d cpu runs (the bunny's
// level set and occupancy at 160^3, the dragon's level set at 512^3 and 1024^3, the bunny's at
// 1024^3, the dragon's solid at 1024^3): 11-27 us per brick on 2 cores; on 16 cores (H200 machine)
// the time taken was 0.5 to 1.1 times the estimate (less on sparse grids, whose bricks cost less).
// A grid is meshed on the CPU under auto up to kMeshCpuMs estimated (small_job_on_cpu), unless the
// GPU has started by then: it starts while the grid is read, but most grids read sooner than it
// starts (150-340 ms), and the GPU's marching cubes with its transfers takes a quarter to a third of
// the CPU's time on 16 cores (a level set at 1024^3: 40-80 ms against 150-280), so the CPU finishes
// first up to a little more than the start (H200 machine, 16 cores, whole processes in turns: the
// dragon's level set at 1024^3, estimated 220 ms, 340-435 ms on the CPU, 408-576 on the GPU; the
// bunny's, estimated 298 ms, 448-584 on the CPU, 413-455 on the GPU; scripts/bench-results/
// mesh-gpu-bricks-h200-2026-11-29.md).
constexpr double kMeshCpuMs = 250;
double estimated_cpu_mesh_ms(const SparseGrid& grid, int threads) {
  constexpr double kBrickUs = 35.0, kFixedMs = 2.0;
  uint64_t bricks = grid.num_bricks();
  if (grid.value_type != ValueType::kFloat32) {
    bricks = 0;
    for (const BrickMask& m : grid.masks) bricks += !brick_full(m);
  }
  return kFixedMs + kBrickUs * double(bricks) / 1000.0 / std::pow(double(std::max(threads, 1)), 0.8);
}
}  // namespace

int run_mesh(const MeshCmdOptions& o) {
  Log log{o.verbosity};
  const ThreadLimit threads(o.device.threads);
  const auto t0 = Clock::now();
  const bool cubes = o.style == "cubes";
  const std::string format = mesh_format(o.output, o.format);
  check_standard_output({{o.output, binary_mesh(format, o.ascii)}}, o.stats);
  std::vector<std::pair<std::string, double>> stages;
  SparseGrid grid, solid;
  std::string source;
  int gpu_choice = -2;  // not chosen yet
  const InputKind kind = input_kind(o.input);
  // A grid or point cloud for marching cubes: the GPU starts on a thread of its own while it is read
  // (BackgroundStart; a mesh input starts its voxelizer so, cubes run on the CPU).
  struct StartedGpu {
    int index = -1;
  };
  std::unique_ptr<BackgroundStart<StartedGpu>> start;
  if (kind != InputKind::kMesh && !cubes && o.device.device != "cpu")
    start = std::make_unique<BackgroundStart<StartedGpu>>(
        [device = o.device.device, log = o.device.device == "auto" ? Log{0} : log] {
          auto s = std::make_unique<StartedGpu>();
          s->index = pick_gpu(device, log);
          if (s->index >= 0) start_gpu(s->index);
          return s;
        });
  if (kind == InputKind::kGrid) {
    GridFile f = read_grid_input(o.input, o.grid.to_options(), stages);
    warn_voxel_units(f, log);
    size_t pick = 0;
    if (!o.grid_name.empty()) {
      pick = f.grids.size();
      for (size_t g = 0; g < f.grids.size(); ++g)
        if (f.grids[g].name == o.grid_name) pick = g;
      if (pick == f.grids.size()) fail(ErrorKind::kUsage, o.input + ": no grid named '" + o.grid_name + "'");
    } else {
      for (size_t g = f.grids.size(); g-- > 0;)
        if (f.grids[g].value_type == ValueType::kFloat32) pick = g;
    }
    grid = std::move(f.grids[pick]);
    source = "grid '" + grid.name + "'";
  } else if (kind == InputKind::kPoints) {  // occupancy of the points binned
    grid = std::move(read_point_input(o.input, o.grid.to_options(), log, source, stages)[0]);
  } else {
    // A mesh: voxelized first, as `voxelize -t sdf` (smooth) or `-t solid` (cubes) would.
    Job job;
    job.input = o.input;
    job.output = o.output;
    job.grid = o.grid;
    job.loader = o.load.loader;
    job.mode = o.mode;
    job.target = cubes ? "solid" : "sdf,solid";  // smooth: the solid signs the voxels off the band
    job.inside = o.solid.inside;
    job.band = o.solid.band;
    std::vector<SparseGrid> grids = voxelize_mesh_input(job, o.device, o.load.limits(), log, gpu_choice, source, stages);
    grid = std::move(grids[0]);
    if (!cubes) solid = std::move(grids[1]);
  }
  // Marching cubes and cubes walk bricks: a solid's interior runs are written out first.
  grid.expand_runs();
  solid.expand_runs();
  if (cubes && grid.value_type == ValueType::kFloat32)
    fail(ErrorKind::kUsage, o.input + ": --style cubes meshes occupancy; grid '" + grid.name + "' is a float field");
  IsoOptions iso;
  iso.iso = o.iso;
  iso.smooth = !cubes;
  // Marching cubes on the GPU when --device picks one (the same bytes; under auto a grid or point cloud
  // the CPU meshes sooner than the GPU would, its start included, on the CPU); cubes on the CPU.
  int gpu = -1;
  if (!cubes && gpu_choice >= -1) {
    gpu = gpu_choice;  // (the GPU that voxelized a mesh input, or -1)
  } else if (start && !small_job_on_cpu(
                          o.device.device, start->done(), [&] { return estimated_cpu_mesh_ms(grid, cpu_threads()); },
                          log, o.input, "meshed", kMeshCpuMs)) {
    gpu = start->take()->index;
    if (o.device.device == "auto" && gpu < 0) note_cpu_fallback(log);
  }
  const auto tm = Clock::now();
  Mesh mesh;
  std::vector<std::pair<std::string, double>> gpu_stages;
  {
    const ProgressStage stage(std::string(cubes ? "cubes" : "marching cubes") + (gpu >= 0 ? " (gpu)" : " (cpu)"));
    try {
      const SparseGrid* inside = solid.keys.empty() ? nullptr : &solid;
      if (gpu >= 0) {
        try {
          mesh = gpu_grid_to_mesh(grid, iso, inside, gpu, &gpu_stages, o.device.gpu_memory);
        } catch (const Error& e) {
          // Under auto, a mesh the GPU cannot hold (over --gpu-memory or its free memory) is made on
          // the CPU: the same bytes.
          if (o.device.device != "auto" || e.kind() != ErrorKind::kResource) throw;
          log.warn(o.input + ": " + e.what() + "; meshing on the CPU");
          gpu = -1;
          gpu_stages.clear();
          mesh = grid_to_mesh(grid, iso, inside);
        }
      } else {
        mesh = grid_to_mesh(grid, iso, inside);
      }
    } catch (const Error& e) {
      throw Error(e.kind(), o.input + ": " + e.what());
    }
  }
  stages.emplace_back("mesh", ms_since(tm));
  for (const auto& st : gpu_stages) stages.emplace_back("mesh_" + st.first, st.second);
  if (mesh.num_triangles() == 0)
    log.warn(o.input + ": the mesh is empty (no active voxel" +
             std::string(grid.value_type == ValueType::kFloat32 ? ", or no cell crossing the iso value" : "") + ")");
  const auto tw = Clock::now();
  {
    const ProgressStage stage("write " + o.output);
    write_mesh(mesh, o.output, o.ascii, format);
  }
  stages.emplace_back("write", ms_since(tw));
  std::ostringstream line;
  line << o.input << ": " << source << ", " << grid.active_voxels() << " voxels -> " << mesh.num_triangles()
       << " triangles, " << mesh.positions.size() << " vertices (" << (cubes ? "cubes" : "marching cubes") << ", "
       << (gpu >= 0 ? "gpu" : "cpu") << ") -> " << o.output;
  log.info(line.str());
  if (o.stats) {
    stages.insert(stages.begin(), {"total", ms_since(t0)});
    nlohmann::ordered_json j = {{"input", o.input},
                                {"output", o.output},
                                {"style", cubes ? "cubes" : "smooth"},
                                {"device", gpu >= 0 ? "gpu" : "cpu"},
                                {"grid", grid.name},
                                {"active_voxels", grid.active_voxels()},
                                {"triangles", mesh.num_triangles()},
                                {"vertices", mesh.positions.size()}};
    j["timings_ms"] = stages_json(stages);
    print_json_line(j);
  }
  return 0;
}

}  // namespace voxtile
