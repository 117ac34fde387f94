// Batch planning (no I/O beyond reading the manifest and listing directories): the job list of a
// `voxtile batch` command line, and its shards.
#pragma once

#include <string>
#include <vector>

#include "cli/cmd_batch.h"
#include "cli/job.h"

namespace voxtile {

// Inputs (files, directories' mesh files sorted, glob matches), then manifest lines, in order;
// outputs from the manifest's "output" or the --out template. Throws Error(kUsage) for bad
// templates, overrides, targets or two jobs writing one file, Error(kInput) for a bad manifest.
std::vector<Job> plan_batch(const BatchCmdOptions& options);

// "I/N": the jobs whose index mod N is I.
struct Shard {
  size_t index = 0, count = 1;
};
Shard parse_shard(const std::string& text);  // "" = everything; throws Error(kUsage)
std::vector<Job> shard_jobs(const std::vector<Job>& all, const Shard& shard);

// An output name from a template: {dir} {stem} {name} {ext} {res} {target} {mode} {index}.
// Errors name `option`.
std::string expand_template(const std::string& tmpl, const Job& job, const std::string& option = "--out");

}  // namespace voxtile
