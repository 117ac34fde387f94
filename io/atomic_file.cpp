// AtomicFile: temporary file + rename, with removal on error or signal.
#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace voxtile {
namespace {

// Pending temporary files, readable from a signal handler without locks.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
std::atomic<bool> g_used[kSlots];
std::mutex g_register_mutex;

int register_temp(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  std::lock_guard<std::mutex> lock(g_register_mutex);
  for (int i = 0; i < kSlots; ++i) {
    if (!g_used[i].load()) {
      std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
      g_used[i].store(true);
      return i;
    }
  }
  return -1;
}

void unregister_temp(int slot) {
  if (slot >= 0) g_used[slot].store(false);
}

extern "C" void cleanup_and_reraise(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_used[i].load()) unlink(g_paths[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

mode_t file_mode() {
  static const mode_t mode = [] {
    const mode_t mask = umask(022);
    umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

void install_temp_file_cleanup() {
  file_mode();
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, cleanup_and_reraise);
}

AtomicFile::AtomicFile(const std::string& final_path) : m_final(final_path) {
  if (final_path.empty()) fail(ErrorKind::kOutput, "empty output path");
  const std::string dir = dir_of(final_path);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail(ErrorKind::kOutput, final_path + ": directory " + dir + " does not exist");
  if (stat(final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    fail(ErrorKind::kOutput, final_path + ": is a directory");
  std::string tmpl = dir + "/." + base_of(final_path) + ".tmp-XXXXXX";
  int fd = mkstemp(tmpl.data());
  if (fd < 0) fail(ErrorKind::kOutput, final_path + ": cannot create a file in " + dir + ": " + std::strerror(errno));
  m_temp = tmpl;
  m_slot = register_temp(m_temp);
  fchmod(fd, file_mode());
  m_file = fdopen(fd, "wb");
  if (!m_file) {
    const int e = errno;
    close(fd);
    unlink(m_temp.c_str());
    unregister_temp(m_slot);
    fail(ErrorKind::kOutput, final_path + ": " + std::strerror(e));
  }
}

AtomicFile::~AtomicFile() {
  if (m_file) std::fclose(m_file);
  if (!m_committed) unlink(m_temp.c_str());
  unregister_temp(m_slot);
}

void AtomicFile::write(const void* data, size_t size) {
  if (!m_file) fail(ErrorKind::kInternal, m_final + ": write after close");
  if (size && std::fwrite(data, 1, size, m_file) != size)
    fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(errno));
}

void AtomicFile::close_stream() {
  if (m_file) {
    const bool ok = std::fclose(m_file) == 0;
    m_file = nullptr;
    if (!ok) fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(errno));
  }
}

void AtomicFile::commit() {
  if (m_file) {
    if (std::fflush(m_file) != 0) fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(errno));
    fsync(fileno(m_file));
    close_stream();
  }
  if (std::rename(m_temp.c_str(), m_final.c_str()) != 0)
    fail(ErrorKind::kOutput, m_final + ": cannot rename the finished file into place: " + std::strerror(errno));
  m_committed = true;
}

}  // namespace voxtile
