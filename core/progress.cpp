#include "core/progress.h"

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace voxtile {
namespace {

using Clock = std::chrono::steady_clock;

// Entries live for the whole process (a fixed stack), so progress_advance never touches freed memory.
struct Entry {
  std::string name;
  std::atomic<uint64_t> done{0}, total{0};
  Clock::time_point start;
};
constexpr int kDepth = 16;
std::array<Entry, kDepth> g_stack;
std::mutex g_mutex;
int g_depth = 0;  // open stages (under g_mutex)
std::atomic<Entry*> g_top{nullptr};
std::atomic<bool> g_on{false};
std::thread::id g_owner;
uint64_t g_serial = 0;
std::atomic<void (*)()> g_on_close{nullptr};

}  // namespace

void progress_enable(bool on) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_owner = std::this_thread::get_id();
  g_on.store(on);
}

ProgressStage::ProgressStage(const std::string& name, uint64_t total) {
  if (!g_on.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (std::this_thread::get_id() != g_owner || g_depth >= kDepth) return;
  Entry& e = g_stack[size_t(g_depth++)];
  e.name = name;
  e.done.store(0);
  e.total.store(total);
  e.start = Clock::now();
  g_top.store(&e);
  ++g_serial;
  m_open = true;
}

ProgressStage::~ProgressStage() {
  if (!m_open) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    --g_depth;
    g_top.store(g_depth ? &g_stack[size_t(g_depth - 1)] : nullptr);
    ++g_serial;
  }
  if (void (*hook)() = g_on_close.load()) hook();
}

void progress_on_close(void (*hook)()) { g_on_close.store(hook); }

void progress_total(uint64_t total) {
  if (Entry* e = g_top.load(std::memory_order_relaxed)) {
    e->done.store(0, std::memory_order_relaxed);
    e->total.store(total, std::memory_order_relaxed);
  }
}

void progress_advance(uint64_t done) {
  if (Entry* e = g_top.load(std::memory_order_relaxed)) e->done.fetch_add(done, std::memory_order_relaxed);
}

ProgressSnapshot progress_snapshot() {
  std::lock_guard<std::mutex> lock(g_mutex);
  ProgressSnapshot s;
  s.serial = g_serial;
  if (!g_depth) return s;
  const Entry& e = g_stack[size_t(g_depth - 1)];
  s.active = true;
  for (int d = 0; d < g_depth; ++d) s.name += (d ? ": " : "") + g_stack[size_t(d)].name;
  s.done = e.done.load(std::memory_order_relaxed);
  s.total = e.total.load(std::memory_order_relaxed);
  s.seconds = std::chrono::duration<double>(Clock::now() - e.start).count();
  return s;
}

}  // namespace voxtile
