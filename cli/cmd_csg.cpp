// `voxtile csg`: CSG scripts to surface point clouds, or with --solid to grids.
#include "cli/cmd_csg.h"

#include <iostream>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "core/timer.h"
#include "io/files.h"
#include "io/points_io.h"
#include "io/writers.h"

namespace voxtile {

void setup_csg(CLI::App& app, CsgCmdOptions& o) {
  app.add_option("script", o.input, "CSG script (.csg; README \"CSG scripts\")")->required();
  app.add_option("-o,--output", o.output,
                 "Output: .ply, .las or .xyz point cloud (positions, normals, colours, primitive, material); with "
                 "--solid a grid (.vdb .ply .las .xyz .raw .npy .binvox .vox); - for stdout")
      ->required();
  add_format_option(app, o.format, "Format: ply, las or xyz; with --solid vdb, ply, las, xyz, raw, npy, binvox or vox (default: from the extension)");
  add_sampling_options(app, o.sampling, false);
  app.add_option("--batch", o.batch, "Primitives applied per GPU step (0 = all in one step); same output for any value")
      ->capture_default_str();
  app.add_flag("--solid", o.solid, "Voxelize the solid (inside test at voxel centres) instead of sampling its surface");
  add_grid_options(app, o.grid);
  add_device_options(app, o.device, "GPU memory budget in bytes (default 80% of free)");
  app.add_option("--scan", o.scan, "GPU scan of the keep flags: tiles, tiles-cub or words-cub (same output)")
      ->check(CLI::IsMember({"tiles", "tiles-cub", "words-cub"}))
      ->capture_default_str();
  app.add_option("--max-samples", o.max_samples, "Refuse scripts that would make more surface samples than this")
      ->capture_default_str();
  app.add_flag("--stats", o.stats, "Print a JSON summary to stdout (counts, timings, checksum)");
  add_grid_output_options(app, o.writing);
  add_preview_options(app, o.preview, false);
  add_verbosity_flags(app, o.verbosity, "Per-stage details on stderr");
}

int run_csg(const CsgCmdOptions& o) {
  Log log{o.verbosity};
  ThreadLimit threads(o.device.threads);
  const auto t0 = Clock::now();
  const ScanMethod scan = o.scan == "tiles" ? ScanMethod::kTiles : o.scan == "tiles-cub" ? ScanMethod::kTilesCub : ScanMethod::kWords;
  OutputFormat format = o.format.empty() ? format_from_path(o.output) : parse_format(o.format);
  if (!o.solid && format != OutputFormat::kPly && format != OutputFormat::kLas && format != OutputFormat::kXyz)
    fail(ErrorKind::kUsage, o.output + ": CSG point clouds are written as .ply, .las or .xyz (use --solid for grids)");
  const CsgScript script = load_csg(o.input);
  const Bounds bounds = script.bounds();
  if (bounds.empty()) fail(ErrorKind::kInput, o.input + ": no additive primitive, the solid is empty");
  const RenderOptions picture = o.preview.path.empty() ? RenderOptions{} : o.preview.picture.options();
  if (!o.preview.path.empty() && !png_output(o.preview.path))
    fail(ErrorKind::kUsage, o.preview.path + ": --preview writes a .png");
  check_standard_output({{o.output, binary_format(format)}, {o.preview.path, true}}, o.stats);
  int gpu_index = -1;
  std::unique_ptr<GpuPoints> gpu = open_gpu_points(o.device, scan, log, &gpu_index);
  const Metadata meta = {{"source", o.input}, {"version", VOXTILE_VERSION}};
  CsgStats st;
  std::ostringstream line;
  nlohmann::ordered_json json = {{"input", o.input}, {"output", o.output}, {"primitives", script.prims.size()}};
  if (o.solid) {
    GridSpec spec;
    try {
      spec = make_grid_spec(bounds, o.grid.to_options());
      check_grid_dims(spec);
    } catch (const Error& e) {
      throw Error(e.kind(), o.input + ": " + e.what());
    }
    SparseGrid grid;
    {
      const ProgressStage stage(std::string("solid (") + (gpu ? gpu->device_name() : "cpu") + ")");
      grid = gpu ? gpu->solid(script, spec, &st) : csg_solid_cpu(script, spec);
    }
    if (!gpu) st.device = "cpu";
    write_grid(grid, o.output, format, o.writing.write_options(meta));
    if (!o.preview.path.empty()) write_picture({&grid}, picture, o.preview.path, gpu_index, &st.stage_ms);
    line << o.input << ": " << script.prims.size() << " primitives -> solid " << spec.describe() << ", "
         << grid.active_voxels() << " voxels (" << st.device << ") -> " << o.output;
    json["device"] = st.device;
    json["dims"] = {spec.dims.x, spec.dims.y, spec.dims.z};
    json["voxel_size"] = {spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z};
    json["origin"] = {spec.origin.x, spec.origin.y, spec.origin.z};
    json["grids"] = grids_json({grid});
  } else {
    const double per_area = o.sampling.per_area(bounds);
    const auto ts = Clock::now();
    CsgSamples samples;
    {
      const ProgressStage stage("sample");
      samples = sample_csg(script, {per_area}, o.max_samples);
    }
    const double ms_sample = ms_since(ts);
    CsgSamples kept;
    {
      const ProgressStage stage(std::string("csg (") + (gpu ? gpu->device_name() : "cpu") + ")");
      kept = gpu ? gpu->csg(script, samples, o.batch, &st) : csg_keep_cpu(script, samples, &st);
    }
    const PointCloud pc = csg_point_cloud(script, kept);
    write_point_cloud(pc, o.output, format_name(format), meta);
    if (!o.preview.path.empty()) write_cloud_picture(pc, picture, o.preview.path, gpu_index, &st.stage_ms);
    line << o.input << ": " << script.prims.size() << " primitives, " << samples.positions.size() << " samples -> "
         << pc.size() << " points (" << st.device << ", " << st.steps << " steps) -> " << o.output;
    json["device"] = st.device;
    json["samples"] = samples.positions.size();
    json["points"] = pc.size();
    json["steps"] = st.steps;
    json["checksum"] = hex64(cloud_checksum(pc));
    st.stage_ms.insert(st.stage_ms.begin(), {"sample", ms_sample});
  }
  log.info(line.str());
  for (const auto& [name, ms] : st.stage_ms) log.detail("  " + name + ": " + std::to_string(ms) + " ms");
  if (o.stats) {
    auto stages = st.stage_ms;
    stages.insert(stages.begin(), {"total", ms_since(t0)});
    json["timings_ms"] = stages_json(stages);
    print_json_line(json);
  }
  return 0;
}

}  // namespace voxtile
