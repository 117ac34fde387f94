// Progress of the stage in progress, for the terminal progress bar of the command line
// (cli/progress_bar.h). Stages nest and the innermost one is shown. Only the thread that turned
// progress on (progress_enable) opens stages; on other threads, and while progress is off (library
// use, batch jobs), ProgressStage does nothing. progress_advance may be called from any thread (TBB
// workers): one relaxed atomic add.
#pragma once

#include <cstdint>
#include <string>

namespace voxtile {

class ProgressStage {
 public:
  // `total`: the amount of work (0: unknown until progress_total, or never: elapsed time only).
  explicit ProgressStage(const std::string& name, uint64_t total = 0);
  ~ProgressStage();
  ProgressStage(const ProgressStage&) = delete;
  ProgressStage& operator=(const ProgressStage&) = delete;

 private:
  bool m_open = false;
};

// The innermost stage's amount of work, and work done in it.
void progress_total(uint64_t total);
void progress_advance(uint64_t done);

struct ProgressSnapshot {
  bool active = false;           // a stage is open
  std::string name;              // the open stages' names, outermost first, joined by ": "
  uint64_t done = 0, total = 0;  // of the innermost stage
  double seconds = 0;            // since the innermost stage opened
  uint64_t serial = 0;           // changes whenever a stage opens or closes
};
ProgressSnapshot progress_snapshot();

// Turns stage recording on for the calling thread (on = true) or off.
void progress_enable(bool on);
// Called (outside any lock) each time a stage closes, so that a drawn progress line is cleared
// before the command prints what the stage produced; null for none.
void progress_on_close(void (*hook)());

}  // namespace voxtile
