// The terminal progress bar of the single-run commands: a thread that redraws one line on stderr
// while a stage (core/progress.h) has been running for about a second or more, with a bar and a
// percentage where the stage knows its amount of work, else a moving marker and the elapsed time.
// On only when stderr is a terminal and the command is not quiet; VOXTILE_PROGRESS=always draws on
// any stderr at once (tests), VOXTILE_PROGRESS=never turns it off.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace voxtile {

class TerminalProgress {
 public:
  explicit TerminalProgress(int verbosity);
  ~TerminalProgress();  // stops the thread and clears the line
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

 private:
  void run();
  std::thread m_thread;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stop = false;
  double m_after = 1.0;  // seconds a stage runs before it is shown
};

// Clears the progress line if one is drawn.
void progress_line_clear();
// Prints `line` and a newline on stderr, above the progress line (Log's messages): the bar is
// cleared first and redrawn below at its next tick.
void progress_print_line(const std::string& line);

}  // namespace voxtile
