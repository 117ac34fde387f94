// `voxtile batch`: many meshes through one pipeline (parallel loading, the GPU(s), parallel writing).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/preview.h"

namespace voxtile {

// Exit code of a batch in which some jobs failed (the others completed); fatal errors use the
// usual codes (2 usage, 3 unreadable manifest, 5 resource).
constexpr int kExitSomeFailed = 6;

struct BatchCmdOptions {
  std::vector<std::string> inputs;  // files, directories, glob patterns
  std::string manifest;             // JSON Lines
  std::string out_template;         // e.g. "{dir}/{stem}_{res}.vdb"
  std::string format;
  GridArgs grid;
  LoadArgs load;
  std::string mode = "conservative";
  std::string target = "binary";
  SolidArgs solid;
  std::string devices = "auto";     // auto | cpu | all | 0,1,...
  int jobs = 0;                     // loader/writer threads, 0 = all cores
  uint64_t gpu_memory = 0;
  int gpu_workers = 2;  // voxelize workers (streams, host threads) per GPU
  bool keep_going = false;
  bool skip_existing = false;
  std::string report;
  std::string shard;                // "I/N"
  GridOutputArgs writing;  // how grids are written
  PreviewArgs preview;     // --preview TEMPLATE: a picture per job
  std::string report_html; // a contact sheet of the jobs (thumbnails, counts, timings)
  bool load_only = false;           // benchmark aid: load every input, voxelize and write nothing
  int verbosity = 1;
};

void setup_batch(CLI::App& app, BatchCmdOptions& options);
int run_batch(const BatchCmdOptions& options);

}  // namespace voxtile
