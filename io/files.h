// Small file helpers shared by the readers and the CLI.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace voxtile {

// The extension of the file name (after the last '.' of the last path component), lower case;
// "" when there is none.
std::string lower_extension(const std::string& path);
// Whether the extension names a point-cloud format no mesh or grid reader reads: .xyz, .pts, .las,
// .laz (a .ply may be either: is_point_cloud_file, io/points_io.h, reads its header).
bool point_cloud_extension(const std::string& path);

// Whether `path` names a directory (through symbolic links).
bool is_directory(const std::string& path);

// Throws Error(kInput) "<path>: <problem>" unless `path` is a readable, non-empty regular file, and
// notes it as an input of this process (its device and inode: through hard and symbolic links).
void check_input_file(const std::string& path);
// The input noted by check_input_file that is the file (device, inode), or "" when none is or
// when input protection is off.
std::string input_file_at(dev_t device, ino_t inode);
// Turns on the refusal of outputs that are inputs (AtomicFile): the command line's rule, for a
// process that is one run. Off in library use, where reading a file and then rewriting it is fine.
void enable_input_protection();

// The address-space limit of a reader process (Assimp's importers, OpenVDB's reader): half the
// machine's memory shared among `processes`, at least 4 GiB. limit_address_space applies it to the
// calling (child) process, so that a reader exploding on a hostile file fails its allocation instead
// of taking the machine; not under AddressSanitizer, whose shadow memory alone reserves terabytes.
uint64_t reader_memory_limit(int processes = 1);
void limit_address_space(uint64_t bytes);

// Threads of this process other than the calling one: all of them, or with `awake_only` those that
// are not sleeping (/proc/self/task/*/stat state other than S or D). For the forks of sanitizer
// builds: GCC 12's AddressSanitizer allocator is not fork-safe (a child forked while another thread
// holds its lock waits forever); glibc's malloc, in Release builds, is.
size_t other_threads(bool awake_only = false);

// Creates the missing directories above `path` (mkdir -p of its directory), each with the
// permissions of the directory it is made in; directories made at the same time by another process
// are fine. Throws Error(kOutput) "<path>: cannot create directory D: <reason>".
void make_parent_dirs(const std::string& path);

// The whole file. Throws Error(kInput) "<path>: <problem>" when it is missing, not a regular file,
// empty or unreadable (check_input_file).
std::string read_input_file(const std::string& path);

// Text files may begin with a byte-order mark (Windows tools write one, and some write UTF-16), and
// old ones end their lines with '\r' alone (classic Mac OS). The text of a file's bytes as the text
// parsers take it, UTF-8 with lines ending in '\n': after a UTF-8 mark, the rest; UTF-16 or UTF-32
// text, either byte order, named by its mark, decoded (unpaired surrogates and values beyond
// U+10FFFF become U+FFFD); when the text holds '\r' and no '\n', each '\r' ends a line. A view of
// data where nothing changes (the common case: no copy), else of `storage`.
// Throws Error(kInput) "<path>: ..." when UTF-16 or UTF-32 text ends inside a character.
std::string_view plain_text(const std::string& path, const char* data, size_t size, std::string& storage);
// The length of the byte-order mark that data begins with (UTF-8: 3, UTF-16: 2, UTF-32: 4), or 0.
size_t byte_order_mark(const char* data, size_t size);
// read_input_file as plain_text.
std::string read_text_file(const std::string& path);

// A read-only memory map of a whole input file. Throws Error(kInput) "<path>: <problem>" when it
// cannot be opened or mapped, or is empty. Files up to 32 MiB are mapped whole at once; larger ones
// page in as they are read, with read-ahead.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const char* data() const { return m_data; }
  size_t size() const { return m_size; }

 private:
  int m_fd = -1;
  const char* m_data = nullptr;
  size_t m_size = 0;
};

}  // namespace voxtile
