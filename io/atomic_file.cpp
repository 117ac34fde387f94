// AtomicFile: temporary file + rename, with removal on error or signal.
#include "io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <ctime>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "core/error.h"
#include "io/files.h"

namespace voxtile {
namespace {

// The signals whose default action ends the process and after which temporary files are removed.
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Pending temporary files, readable from a signal handler without locks.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
std::atomic<bool> g_used[kSlots];
std::mutex g_register_mutex;
// Threads between creating a temporary file and registering it block the cleanup signals and
// count themselves in g_creating. The handler, which may run in another thread, first sets
// g_dying (from then on no thread creates a file) and waits for g_creating to reach zero, so that
// every file made is registered when it removes them (both are sequentially consistent: a thread
// either sees g_dying or is waited for).
std::atomic<int> g_creating{0};
std::atomic<bool> g_dying{false};

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
  g_dying.store(true);
  while (g_creating.load() > 0) {
  }
  for (int i = 0; i < kSlots; ++i)
    if (g_used[i].load()) unlink(g_paths[i]);
  // Dies here rather than when the handler returns: other threads run until then.
  std::signal(sig, SIG_DFL);
  sigset_t this_signal;
  sigemptyset(&this_signal);
  sigaddset(&this_signal, sig);
  pthread_sigmask(SIG_UNBLOCK, &this_signal, nullptr);
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

// Temporary files are named ".NAME<kTempTag>XXXXXX" and locked (flock) by their writer for its
// whole life: the lock goes with the process, however it ends.
constexpr const char* kTempTag = ".voxtile-tmp-";

// Removes the temporary files of `base` in `dir` that no writer holds: left by a writer killed with
// SIGKILL, or by a machine that lost power. A file younger than 10 s is left alone (its writer may
// not have taken its lock yet). The directory is read once per process; later outputs to it look
// up their names in what was found.
void remove_stale_temps(const std::string& dir, const std::string& base) {
  static std::mutex mutex;
  static std::map<std::string, std::set<std::string>> found;  // dir -> temporary file names
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, first] = found.try_emplace(dir);
  if (first) {
    if (DIR* d = opendir(dir.c_str())) {
      while (const dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        const size_t tag = name.rfind(kTempTag);
        if (name[0] == '.' && tag != std::string::npos && name.size() == tag + std::strlen(kTempTag) + 6)
          it->second.insert(name);
      }
      closedir(d);
    }
  }
  const std::string prefix = "." + base + kTempTag;
  std::set<std::string>& names = it->second;
  for (auto n = names.lower_bound(prefix); n != names.end() && n->compare(0, prefix.size(), prefix) == 0;) {
    if (n->size() != prefix.size() + 6) {
      ++n;
      continue;
    }
    const std::string path = dir + "/" + *n;
    const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    bool removed = false;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && std::time(nullptr) - st.st_mtime > 10 &&
        flock(fd, LOCK_EX | LOCK_NB) == 0) {
      removed = unlink(path.c_str()) == 0;
    }
    if (fd >= 0) close(fd);
    n = removed || fd < 0 ? names.erase(n) : std::next(n);
  }
}

}  // namespace

void install_temp_file_cleanup() {
  file_mode();
  for (int sig : kCleanupSignals) std::signal(sig, cleanup_and_reraise);
  // A file size limit (ulimit -f) makes writes fail with EFBIG, and a pipe whose reader has gone
  // (`-o - | head -c 100`) with EPIPE, reported as output errors (exit 4) and with the temporary
  // file removed, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
}

bool is_standard_output(const std::string& path) {
  if (path == "-") return true;
  struct stat out, st;
  return path.size() > 1 && fstat(STDOUT_FILENO, &out) == 0 && stat(path.c_str(), &st) == 0 &&
         st.st_dev == out.st_dev && st.st_ino == out.st_ino;
}

AtomicFile::AtomicFile(const std::string& final_path) : m_final(final_path) {
  if (final_path.empty()) fail(ErrorKind::kOutput, "empty output path");
  std::string target = final_path;  // the file replaced: a symbolic link's target
  struct stat st;
  if (is_standard_output(final_path)) {
    m_device = m_stdout = true;  // written into file descriptor 1 at commit, as it stands
    target = "stdout";  // (names the temporary file)
  } else if (stat(final_path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail(ErrorKind::kOutput, final_path + ": is a directory");
    const std::string input = input_file_at(st.st_dev, st.st_ino);
    if (!input.empty())
      fail(ErrorKind::kUsage, final_path + ": is the input file " + (input == final_path ? "" : input + " ") +
                                  "(give another output name)");
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      m_device = true;  // /dev/stdout, a pipe, /dev/null: written in place at commit
    } else if (!S_ISREG(st.st_mode)) {
      fail(ErrorKind::kOutput, final_path + ": not a regular file, character device or FIFO");
    } else if (char* real = realpath(final_path.c_str(), nullptr)) {
      target = real;  // a link stays a link; its target is replaced
      std::free(real);
    }
  } else if (lstat(final_path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char link[4096];  // a link to a file not made yet: the file is made where it points
    const ssize_t n = readlink(final_path.c_str(), link, sizeof(link));
    if (n > 0 && size_t(n) < sizeof(link)) {
      const std::string to(link, size_t(n));
      target = to[0] == '/' ? to : dir_of(final_path) + "/" + to;
    }
  }
  // A device's bytes are made in a temporary file of TMPDIR first: writers seek, and nothing is
  // created in /dev.
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string dir = m_device ? (tmpdir && *tmpdir ? tmpdir : "/tmp") : dir_of(target);
  if (!is_directory(dir))
    fail(ErrorKind::kOutput, final_path + ": directory " + dir + " does not exist");
  m_target = target;
  if (!m_device) remove_stale_temps(dir, base_of(target));
  std::string tmpl = dir + "/." + base_of(target) + kTempTag + "XXXXXX";
  sigset_t cleanup_signals, old_mask;
  sigemptyset(&cleanup_signals);
  for (int sig : kCleanupSignals) sigaddset(&cleanup_signals, sig);
  pthread_sigmask(SIG_BLOCK, &cleanup_signals, &old_mask);
  g_creating.fetch_add(1);
  if (g_dying.load()) {  // a handler in another thread is about to end the process
    g_creating.fetch_sub(1);
    for (;;) pause();
  }
  int fd = mkstemp(tmpl.data());
  const int create_errno = errno;
  if (fd >= 0) m_slot = register_temp(tmpl);
  g_creating.fetch_sub(1);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (fd < 0)
    fail(ErrorKind::kOutput, final_path + ": cannot create a file in " + dir + ": " + std::strerror(create_errno));
  m_temp = tmpl;
  // The lock stays with m_lock (the same open file) when the stream is closed for writers that
  // reopen the file by name, until commit or destruction.
  m_lock = dup(fd);
  if (m_lock >= 0) flock(m_lock, LOCK_EX | LOCK_NB);
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
  if (m_lock >= 0) close(m_lock);
  unregister_temp(m_slot);
}

void AtomicFile::write(const void* data, size_t size) {
  if (!m_file) fail(ErrorKind::kInternal, m_final + ": write after close");
  if (size && std::fwrite(data, 1, size, m_file) != size)
    fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(errno));
  // Every kWriteback bytes, the disk starts writing what the file holds so far, so that commit()'s
  // fsync waits for the last piece only instead of the whole file (the write-out overlaps the
  // writer's own work). Errors are left to that fsync.
  m_unsynced += size;
  if (m_unsynced >= kWriteback) {
    if (std::fflush(m_file) != 0) fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(errno));
    const off_t end = ::lseek(fileno(m_file), 0, SEEK_CUR);
    if (end > m_synced) {
      ::sync_file_range(fileno(m_file), m_synced, end - m_synced, SYNC_FILE_RANGE_WRITE);
      m_synced = end;
    }
    m_unsynced = 0;
  }
}

void AtomicFile::close_stream() {
  if (m_file) {
    const bool ok = std::fclose(m_file) == 0;
    m_file = nullptr;
    if (!ok) fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(errno));
  }
}

void AtomicFile::commit() {
  if (m_file && std::fflush(m_file) != 0) fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(errno));
  // On the disk before it takes the final name; fsync also reports write errors the kernel met
  // after write() returned (a full disk on NFS or with delayed allocation), also for writers that
  // wrote through their own stream.
  const int fd = m_file ? fileno(m_file) : m_lock;
  if (fd >= 0 && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
    fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(errno));
  close_stream();
  if (m_device) {
    copy_to_device();
    return;
  }
  if (std::rename(m_temp.c_str(), m_target.c_str()) != 0)
    fail(ErrorKind::kOutput, m_final + ": cannot rename the finished file into place: " + std::strerror(errno));
  m_committed = true;
}

void AtomicFile::copy_to_device() {
  const int in = open(m_temp.c_str(), O_RDONLY | O_CLOEXEC);
  const int out = m_stdout ? fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0) : open(m_final.c_str(), O_WRONLY | O_CLOEXEC);
  if (in < 0 || out < 0) {
    const int e = errno;
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    fail(ErrorKind::kOutput, m_final + ": cannot open: " + std::strerror(e));
  }
  std::vector<char> buf(size_t(1) << 20);
  int error = 0;
  for (;;) {
    const ssize_t n = read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) error = errno;
      break;
    }
    for (ssize_t done = 0; done < n && !error;) {
      const ssize_t w = ::write(out, buf.data() + done, size_t(n - done));
      if (w < 0 && errno != EINTR) error = errno;
      if (w > 0) done += w;
    }
    if (error) break;
  }
  close(in);
  if (close(out) != 0 && !error) error = errno;
  if (error) fail(ErrorKind::kOutput, m_final + ": write failed: " + std::strerror(error));
  // Nothing is left under a final name to keep: the temporary file goes (destructor).
}

}  // namespace voxtile
