// voxtile command-line entry point: parses, dispatches, and turns errors into exit codes.
#include <CLI/CLI.hpp>
#include <iostream>
#include <new>

#include "cli/cmd_batch.h"
#include "cli/cmd_bucket.h"
#include "cli/cmd_compare.h"
#include "cli/cmd_generate.h"
#include "cli/cmd_info.h"
#include "cli/cmd_csg.h"
#include "cli/cmd_points.h"
#include "cli/cmd_voxelize.h"
#include "core/error.h"
#include "io/atomic_file.h"

int main(int argc, char** argv) {
  using namespace voxtile;
  install_temp_file_cleanup();
  CLI::App app{"voxtile: batch voxelizer and point-cloud converter (CPU reference and CUDA)", "voxtile"};
  app.set_version_flag("--version", std::string("voxtile ") + VOXTILE_VERSION);
  app.require_subcommand(1);

  VoxelizeCmdOptions vox;
  CLI::App* vox_cmd = app.add_subcommand("voxelize", "Voxelize meshes into .vdb, .ply, .raw or .npy grids");
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
      "compare", "Compare two grid outputs (.vdb .ply .npy .raw .npz): exit 0 equal, 1 different, 2 error");
  setup_compare(*cmp_cmd, cmp);
  CsgCmdOptions csg;
  CLI::App* csg_cmd = app.add_subcommand("csg", "CSG script to a surface point cloud (.ply) or, with --solid, a voxel grid");
  setup_csg(*csg_cmd, csg);
  PointsCmdOptions points;
  CLI::App* points_cmd = app.add_subcommand(
      "points", "Point clouds: mesh -> surface samples, points -> voxels (.vdb .ply .raw .npy), .vdb -> points");
  setup_points(*points_cmd, points);
  InfoCmdOptions info;
  CLI::App* info_cmd = app.add_subcommand("info", "Describe a mesh, point cloud or .vdb file");
  setup_info(*info_cmd, info);
  GenerateCmdOptions gen;
  CLI::App* gen_cmd = app.add_subcommand("generate", "Write a large benchmark mesh (scan, tubes, room)");
  setup_generate(*gen_cmd, gen);

  try {
    app.parse(argc, argv);
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

  try {
    if (vox_cmd->parsed()) return run_voxelize(vox);
    if (bucket_cmd->parsed()) return run_bucket(bucket);
    if (batch_cmd->parsed()) return run_batch(batch);
    if (cmp_cmd->parsed()) return run_compare(cmp);
    if (csg_cmd->parsed()) return run_csg(csg);
    if (points_cmd->parsed()) return run_points(points);
    if (info_cmd->parsed()) return run_info(info);
    if (gen_cmd->parsed()) return run_generate(gen);
  } catch (const Error& e) {
    std::cerr << "voxtile: error: " << e.what() << "\n";
    return static_cast<int>(e.kind());
  } catch (const std::bad_alloc&) {
    std::cerr << "voxtile: error: out of memory\n";
    return static_cast<int>(ErrorKind::kResource);
  } catch (const std::exception& e) {
    std::cerr << "voxtile: error: internal: " << e.what() << "\n";
    return static_cast<int>(ErrorKind::kInternal);
  }
  return 0;
}
