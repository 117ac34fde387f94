// voxtile command-line entry point: parses, dispatches, and turns errors into exit codes.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>

#include "cli/cmd_batch.h"
#include "cli/cmd_bucket.h"
#include "cli/cmd_compare.h"
#include "cli/cmd_generate.h"
#include "cli/cmd_info.h"
#include "cli/cmd_mesh.h"
#include "cli/cmd_csg.h"
#include "cli/cmd_points.h"
#include "cli/cmd_preview.h"
#include "cli/cmd_voxelize.h"
#include "cli/common.h"
#include "cli/detach.h"
#include "cli/progress_bar.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/files.h"
#include "io/mesh_reader.h"

int main(int argc, char** argv) {
  using namespace voxtile;
  serve_as_mesh_reader_if_asked(argc, argv);  // (a reader process the loader started: never returns)
  install_temp_file_cleanup();
  enable_input_protection();  // an output that is one of this run's inputs is refused (exit 2)
  CLI::App app{"voxtile: batch voxelizer and point-cloud converter (CPU reference and CUDA)", "voxtile"};
  app.set_version_flag("--version", std::string("voxtile ") + VOXTILE_VERSION);
  app.require_subcommand(1);

  VoxelizeCmdOptions vox;
  CLI::App* vox_cmd = app.add_subcommand("voxelize", "Voxelize meshes into .vdb, .ply, .las, .xyz, .raw, .npy, .binvox or .vox grids");
  setup_voxelize(*vox_cmd, vox);
  BucketCmdOptions bucket;
  CLI::App* bucket_cmd =
      app.add_subcommand("bucket", "A-buffer: every fragment of every voxel (triangle ids, barycentrics, attributes)");
  setup_bucket(*bucket_cmd, bucket);
  BatchCmdOptions batch;
  CLI::App* batch_cmd = app.add_subcommand("batch", "Voxelize many meshes: one pipeline over CPU threads and GPUs");
  setup_batch(*batch_cmd, batch);
  CompareCmdOptions cmp;
  CLI::App* cmp_cmd = app.add_subcommand(
      "compare", "Compare two grid outputs (.vdb .ply .npy .raw .npz .binvox .vox): exit 0 equal, 1 different, 2 error");
  setup_compare(*cmp_cmd, cmp);
  CsgCmdOptions csg;
  CLI::App* csg_cmd = app.add_subcommand("csg", "CSG script to a surface point cloud (.ply) or, with --solid, a voxel grid");
  setup_csg(*csg_cmd, csg);
  PointsCmdOptions points;
  CLI::App* points_cmd = app.add_subcommand(
      "points", "Point clouds: mesh -> surface samples, points (.ply .xyz .pts .las) -> voxels, .vdb -> points");
  setup_points(*points_cmd, points);
  MeshCmdOptions mesh;
  CLI::App* mesh_cmd = app.add_subcommand("mesh",
                                          "Grids back to meshes: marching cubes of a level set, field or occupancy, or "
                                          "voxel cubes (.ply .obj .off .stl .glb .3mf)");
  setup_mesh(*mesh_cmd, mesh);
  PreviewCmdOptions preview;
  CLI::App* preview_cmd = app.add_subcommand(
      "preview", "A PNG picture of a grid (or of a mesh, voxelized first): ray-marched voxels, coloured by values");
  setup_preview(*preview_cmd, preview);
  InfoCmdOptions info;
  CLI::App* info_cmd = app.add_subcommand("info", "Describe a mesh, point cloud or .vdb file");
  setup_info(*info_cmd, info);
  GenerateCmdOptions gen;
  CLI::App* gen_cmd = app.add_subcommand("generate", "Write a large benchmark mesh (scan, tubes, room, sphere, cad)");
  setup_generate(*gen_cmd, gen);

  try {
    const std::vector<std::string> args = voxel_size_args(argc, argv);
    std::vector<const char*> arg_ptrs;
    for (const std::string& a : args) arg_ptrs.push_back(a.c_str());
    app.parse(int(arg_ptrs.size()), arg_ptrs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    std::cerr << "voxtile: error: " << msg << " (run 'voxtile --help')\n";
    return static_cast<int>(ErrorKind::kUsage);
  }

  // Commands that may use a GPU run in a child process whose GPU teardown the shell does not wait for.
  const bool may_use_gpu = (vox_cmd->parsed() && vox.device.device != "cpu") ||
                           (bucket_cmd->parsed() && bucket.device.device != "cpu") ||
                           (batch_cmd->parsed() && batch.devices != "cpu" && !batch.load_only) ||
                           (csg_cmd->parsed() && csg.device.device != "cpu") ||
                           (points_cmd->parsed() && points.device.device != "cpu") ||
                           (mesh_cmd->parsed() && mesh.device.device != "cpu") ||
                           (preview_cmd->parsed() && preview.device.device != "cpu");
  if (may_use_gpu) detach_before_gpu();

  int code = 0;
  try {
    // A progress line on a terminal for long stages (batch draws its own).
    const int verbosity = vox_cmd->parsed()      ? vox.verbosity
                          : bucket_cmd->parsed() ? bucket.verbosity
                          : batch_cmd->parsed()  ? 0
                          : cmp_cmd->parsed()    ? (cmp.quiet ? 0 : 1)
                          : csg_cmd->parsed()    ? csg.verbosity
                          : points_cmd->parsed() ? points.verbosity
                          : gen_cmd->parsed()    ? gen.verbosity
                          : mesh_cmd->parsed()   ? mesh.verbosity
                          : preview_cmd->parsed() ? preview.verbosity
                                                 : 1;
    TerminalProgress progress(verbosity);
    if (vox_cmd->parsed()) code = run_voxelize(vox);
    else if (bucket_cmd->parsed()) code = run_bucket(bucket);
    else if (batch_cmd->parsed()) code = run_batch(batch);
    else if (cmp_cmd->parsed()) code = run_compare(cmp);
    else if (csg_cmd->parsed()) code = run_csg(csg);
    else if (points_cmd->parsed()) code = run_points(points);
    else if (info_cmd->parsed()) code = run_info(info);
    else if (mesh_cmd->parsed()) code = run_mesh(mesh);
    else if (preview_cmd->parsed()) code = run_preview(preview);
    else if (gen_cmd->parsed()) code = run_generate(gen);
  } catch (const Error& e) {
    std::cerr << "voxtile: error: " << e.what() << "\n";
    code = static_cast<int>(e.kind());
  } catch (const std::bad_alloc&) {
    std::cerr << "voxtile: error: out of memory\n";
    code = static_cast<int>(ErrorKind::kResource);
  } catch (const std::exception& e) {
    std::cerr << "voxtile: error: internal: " << e.what() << "\n";
    code = static_cast<int>(ErrorKind::kInternal);
  }
  // Every output is complete and renamed into place by now. Leave without the exit handlers: the
  // CUDA runtime's teardown of the GPU context and the thread pools' would add tens of milliseconds
  // to every run, and a detached parent (cli/detach.h) leaves before the driver's teardown too.
  // (Sanitizer builds exit normally, so that leak checks still run.)
  return finish_process(code);
}
