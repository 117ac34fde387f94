// Atomic output files: data goes to a temporary file ".NAME.voxtile-tmp-XXXXXX" in the target
// directory, synced and renamed over the final name only when complete. An error, an exception or
// a kill never leaves a partial file under the final name; a kill by SIGINT/SIGTERM/SIGHUP also
// removes the temporary file, and one left by SIGKILL or a power loss is removed by the next
// AtomicFile for the same name (the writer's flock on it tells a live writer from a dead one).
// An output that is one of this process's input files is refused (Error(kUsage); with
// enable_input_protection, as the command line does); a symbolic link
// stays a link (its target is replaced); a character device or FIFO (/dev/stdout, a pipe) gets the
// finished bytes written into it at commit, and so does standard output (is_standard_output) where
// it stands, whatever it is; any other non-regular file is refused (kOutput).
#pragma once

#include <cstdio>
#include <string>

namespace voxtile {

// Whether `path` names this process's standard output: "-", or the file that standard output is open
// on (/dev/stdout, /dev/fd/1, or any name of the same device and inode).
bool is_standard_output(const std::string& path);

class AtomicFile {
 public:
  // Creates the temporary file next to `final_path`. Throws Error(kOutput) naming the path.
  explicit AtomicFile(const std::string& final_path);
  ~AtomicFile();  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& final_path() const { return m_final; }
  const std::string& temp_path() const { return m_temp; }
  // The temporary file opened for binary writing (owned; closed by commit()).
  std::FILE* stream() { return m_file; }
  // Writes all bytes or throws Error(kOutput).
  void write(const void* data, size_t size);
  // Closes the stream if still open (for writers that reopen temp_path() themselves).
  void close_stream();
  // Flushes, syncs and renames to the final name. Throws Error(kOutput) on failure.
  void commit();

 private:
  std::string m_final, m_temp;
  std::FILE* m_file = nullptr;
  int m_slot = -1;
  int m_lock = -1;  // holds the temporary file's flock
  std::string m_target;   // the file replaced: the final path, or a symbolic link's target
  bool m_device = false;  // the final path is a character device or FIFO: written in place
  bool m_stdout = false;  // the final path is standard output: written into file descriptor 1
  void copy_to_device();
  bool m_committed = false;
  static constexpr size_t kWriteback = size_t(8) << 20;
  size_t m_unsynced = 0;  // bytes written since the last write-out was started
  long long m_synced = 0;  // the file's bytes whose write-out has been started
};

// Installs SIGINT/SIGTERM/SIGHUP handlers that remove pending temporary files, then re-raise, and
// ignores SIGXFSZ (writes over a file size limit fail as output errors).
void install_temp_file_cleanup();

}  // namespace voxtile
