// Batch running: every job of a plan through reader processes, the voxelizers and writer threads.
#pragma once

#include <vector>

#include "cli/cmd_batch.h"
#include "cli/job.h"

namespace voxtile {

// Runs `jobs`; returns 0 when every job was ok or skipped, kExitSomeFailed otherwise. Throws Error
// for fatal problems before any job starts (unusable --devices).
int run_batch_jobs(const BatchCmdOptions& options, const std::vector<Job>& jobs);

}  // namespace voxtile
