#include "cli/progress_bar.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/progress.h"

namespace voxtile {
namespace {

std::mutex g_line_mutex;  // the drawn line and stderr writes of the bar
bool g_drawn = false;

void clear_locked() {
  if (!g_drawn) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  g_drawn = false;
}

std::string render(const ProgressSnapshot& s, int tick) {
  constexpr int kWidth = 30;
  std::string bar(kWidth, ' ');
  char tail[64];
  if (s.total > 0) {
    const double f = std::min(1.0, double(s.done) / double(s.total));
    const int full = int(f * kWidth);
    for (int i = 0; i < full; ++i) bar[size_t(i)] = '#';
    std::snprintf(tail, sizeof(tail), " %3d%%  %.1f s", int(f * 100.0), s.seconds);
  } else {
    const int at = tick % (2 * (kWidth - 3));
    const int pos = at < kWidth - 3 ? at : 2 * (kWidth - 3) - at;
    bar.replace(size_t(pos), 3, "<=>");
    std::snprintf(tail, sizeof(tail), "  %.1f s", s.seconds);
  }
  std::string name = s.name;
  if (name.size() > 40) name = "..." + name.substr(name.size() - 37);
  return name + " [" + bar + "]" + tail;
}

}  // namespace

void progress_line_clear() {
  std::lock_guard<std::mutex> lock(g_line_mutex);
  clear_locked();
}

void progress_print_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_line_mutex);
  clear_locked();
  std::fflush(stdout);
  std::fputs((line + "\n").c_str(), stderr);
  std::fflush(stderr);
}

TerminalProgress::TerminalProgress(int verbosity) {
  const char* env = std::getenv("VOXTILE_PROGRESS");
  const std::string mode = env ? env : "";
  if (verbosity <= 0 || mode == "never") return;
  if (mode == "always") {
    m_after = 0;
  } else if (!isatty(2)) {
    return;
  }
  progress_enable(true);
  progress_on_close(&progress_line_clear);
  m_thread = std::thread([this] { run(); });
}

TerminalProgress::~TerminalProgress() {
  if (!m_thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  m_thread.join();
  progress_on_close(nullptr);
  progress_enable(false);
  progress_line_clear();
}

void TerminalProgress::run() {
  int tick = 0;
  uint64_t drawn_serial = ~uint64_t(0);
  std::unique_lock<std::mutex> lock(m_mutex);
  while (!m_stop) {
    m_cv.wait_for(lock, std::chrono::milliseconds(m_after > 0 ? 100 : 20), [this] { return m_stop; });
    if (m_stop) break;
    // The snapshot under the line's lock: a stage closing clears the line after it (its hook takes
    // this lock), so a line is never drawn for a stage that has already closed.
    std::lock_guard<std::mutex> line(g_line_mutex);
    const ProgressSnapshot s = progress_snapshot();
    if (s.serial != drawn_serial && g_drawn) clear_locked();  // the stage drawn has closed
    if (!s.active || s.seconds < m_after) continue;
    const std::string text = render(s, tick++);
    std::fputs(("\r\033[K" + text).c_str(), stderr);
    std::fflush(stderr);
    g_drawn = true;
    drawn_serial = s.serial;
  }
}

}  // namespace voxtile
