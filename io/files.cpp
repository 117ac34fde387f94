// Small file helpers shared by the readers and the CLI.
#include "io/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace voxtile {

namespace {
std::mutex g_inputs_mutex;
std::map<std::pair<dev_t, ino_t>, std::string> g_inputs;
std::atomic<bool> g_protect{false};
}  // namespace

void enable_input_protection() { g_protect = true; }

void check_input_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (path == "-")
      fail(ErrorKind::kInput, "-: standard input is not read (inputs are files, mapped and read in parallel; save "
                              "the data to a file first)");
    fail(ErrorKind::kInput, path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) fail(ErrorKind::kInput, path + ": is a directory");
  if (!S_ISREG(st.st_mode))
    fail(ErrorKind::kInput, path + ": not a regular file" +
                                (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode)
                                     ? " (a pipe or device: inputs are mapped and read in parallel; save the data to a file first)"
                                     : ""));
  if (access(path.c_str(), R_OK) != 0) fail(ErrorKind::kInput, path + ": " + std::strerror(errno));
  if (st.st_size == 0) fail(ErrorKind::kInput, path + ": the file is empty");
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  g_inputs.try_emplace({st.st_dev, st.st_ino}, path);
}

std::string input_file_at(dev_t device, ino_t inode) {
  if (!g_protect) return "";
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  const auto it = g_inputs.find({device, inode});
  if (it == g_inputs.end()) return "";
  // An input deleted since it was read may have given its inode number to a new file.
  struct stat st;
  if (stat(it->second.c_str(), &st) != 0 || st.st_dev != device || st.st_ino != inode) {
    g_inputs.erase(it);
    return "";
  }
  return it->second;
}

uint64_t reader_memory_limit(int processes) {
  const uint64_t phys = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  return std::max<uint64_t>(uint64_t(4) << 30, phys / 2 / uint64_t(std::max(1, processes)));
}

void limit_address_space(uint64_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  (void)bytes;
#else
  const rlimit as{rlim_t(bytes), rlim_t(bytes)};
  setrlimit(RLIMIT_AS, &as);
#endif
}

size_t other_threads(bool awake_only) {
  const long self = long(gettid());
  size_t n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || std::atol(e->d_name) == self) continue;
    if (!awake_only) {
      ++n;
      continue;
    }
    char path[300], buf[256];
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
    FILE* f = std::fopen(path, "r");
    if (!f) continue;  // the thread ended
    const size_t len = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[len] = 0;
    const char* name_end = std::strrchr(buf, ')');  // "tid (name) S ..."
    if (name_end && name_end[1] == ' ' && name_end[2] != 'S' && name_end[2] != 'D') ++n;
  }
  closedir(d);
  return n;
}

std::string lower_extension(const std::string& path) {
  const size_t slash = path.rfind('/'), dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot + 1);
  for (char& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

bool is_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool point_cloud_extension(const std::string& path) {
  const std::string ext = lower_extension(path);
  return ext == "xyz" || ext == "pts" || ext == "las" || ext == "laz";
}

std::string read_input_file(const std::string& path) {
  check_input_file(path);
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorKind::kInput, path + ": cannot open");
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad() || (!f && !f.eof())) fail(ErrorKind::kInput, path + ": cannot read");
  return s.str();
}

size_t byte_order_mark(const char* data, size_t size) {
  const auto* b = reinterpret_cast<const unsigned char*>(data);
  auto starts = [&](std::initializer_list<unsigned char> mark) {
    return size >= mark.size() && std::equal(mark.begin(), mark.end(), b);
  };
  if (starts({0xEF, 0xBB, 0xBF})) return 3;
  if (starts({0x00, 0x00, 0xFE, 0xFF}) || starts({0xFF, 0xFE, 0x00, 0x00})) return 4;
  if (starts({0xFE, 0xFF}) || starts({0xFF, 0xFE})) return 2;
  return 0;
}

namespace {
// plain_text's decoding: a view of data after a UTF-8 mark or none, UTF-16/32 decoded into storage.
std::string_view utf8_of(const std::string& path, const char* data, size_t size, std::string& storage) {
  const size_t mark = byte_order_mark(data, size);
  if (mark == 3) return std::string_view(data + 3, size - 3);
  if (mark == 0) return std::string_view(data, size);
  const auto* b = reinterpret_cast<const unsigned char*>(data);
  const int unit = int(mark);  // bytes per code unit: the mark is one
  const bool big = b[0] != 0xFF;
  const char* name = unit == 2 ? "UTF-16" : "UTF-32";
  if (size % unit != 0)
    fail(ErrorKind::kInput, path + ": " + name + " text that ends inside a character (" + std::to_string(size) +
                                " bytes: truncated?)");
  auto code_unit = [&](size_t i) {  // the code unit at byte i
    uint32_t v = 0;
    for (int k = 0; k < unit; ++k) v |= uint32_t(b[i + k]) << (8 * (big ? unit - 1 - k : k));
    return v;
  };
  storage.clear();
  storage.reserve(size / unit + size / 8);
  auto put = [&](uint32_t c) {
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) {
      storage += char(c);
    } else if (c < 0x800) {
      storage += char(0xC0 | (c >> 6));
      storage += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      storage += char(0xE0 | (c >> 12));
      storage += char(0x80 | ((c >> 6) & 0x3F));
      storage += char(0x80 | (c & 0x3F));
    } else {
      storage += char(0xF0 | (c >> 18));
      storage += char(0x80 | ((c >> 12) & 0x3F));
      storage += char(0x80 | ((c >> 6) & 0x3F));
      storage += char(0x80 | (c & 0x3F));
    }
  };
  for (size_t i = unit; i < size; i += unit) {  // (after the mark)
    uint32_t c = code_unit(i);
    if (unit == 2 && c >= 0xD800 && c <= 0xDBFF && i + 2 < size) {  // a high surrogate: its pair, if any
      const uint32_t lo = code_unit(i + 2);
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
        i += 2;
      }
    }
    put(c);
  }
  return storage;
}
}  // namespace

std::string_view plain_text(const std::string& path, const char* data, size_t size, std::string& storage) {
  const std::string_view t = utf8_of(path, data, size, storage);
  // Lines ended by '\r' alone (classic Mac OS): the text holds '\r' and no '\n' (the whole text is
  // searched only when its first 64 KB hold no '\n' and no NUL, so other files, binary ones
  // included, cost nothing).
  const size_t head = std::min<size_t>(t.size(), size_t(1) << 16);
  if (std::memchr(t.data(), '\n', head) || std::memchr(t.data(), '\0', head) ||
      !std::memchr(t.data(), '\r', t.size()) || std::memchr(t.data() + head, '\n', t.size() - head))
    return t;
  if (t.data() != storage.data()) storage.assign(t.data(), t.size());
  std::replace(storage.begin(), storage.end(), '\r', '\n');
  return storage;
}

std::string read_text_file(const std::string& path) {
  std::string bytes = read_input_file(path), storage;
  const std::string_view text = plain_text(path, bytes.data(), bytes.size(), storage);
  if (text.data() == storage.data()) return storage;
  bytes.erase(0, size_t(text.data() - bytes.data()));  // a view of the bytes: at most a mark skipped
  return bytes;
}

void make_parent_dirs(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return;
  const std::string dir = path.substr(0, slash);
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return;  // exists (a file there fails when the output is made)
  // The deepest existing ancestor, then each missing level below it.
  std::vector<std::string> missing;
  std::string d = dir;
  while (!d.empty() && stat(d.c_str(), &st) != 0) {
    missing.push_back(d);
    const size_t s2 = d.find_last_of('/');
    d = s2 == std::string::npos ? "" : d.substr(0, s2);
  }
  mode_t mode = 0777;
  if (stat(d.empty() ? "." : d.c_str(), &st) == 0) mode = st.st_mode & 0777;  // not sticky or set-id bits
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (mkdir(it->c_str(), mode) == 0) {
      chmod(it->c_str(), mode);  // the parent's permissions, not the umask's
    } else if (errno != EEXIST) {
      fail(ErrorKind::kOutput, path + ": cannot create directory " + *it + ": " + std::strerror(errno));
    }
  }
}

MappedFile::MappedFile(const std::string& path) {
  m_fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (m_fd < 0) fail(ErrorKind::kInput, path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(m_fd, &st) != 0) fail(ErrorKind::kInput, path + ": " + std::strerror(errno));
  m_size = size_t(st.st_size);
  if (m_size == 0) fail(ErrorKind::kInput, path + ": the file is empty");
  // Large files: pages are mapped as the parsing threads touch them (in parallel), with
  // read-ahead. Small ones are mapped whole in the call (one system call instead of a page fault
  // per 64 KB: in a batch, many loads at once would otherwise queue on the process's page tables).
  const int populate = m_size <= (size_t(32) << 20) ? MAP_POPULATE : 0;
  void* p = mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE | populate, m_fd, 0);
  if (p == MAP_FAILED) fail(ErrorKind::kInput, path + ": cannot map: " + std::strerror(errno));
  m_data = static_cast<const char*>(p);
  if (!populate) madvise(p, m_size, MADV_WILLNEED);
}

MappedFile::~MappedFile() {
  if (m_data) munmap(const_cast<char*>(m_data), m_size);
  if (m_fd >= 0) close(m_fd);
}

}  // namespace voxtile
