// Small file helpers shared by the readers and the CLI.
#include "io/files.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "io/mesh_reader.h"

namespace voxtile {

std::string lower_extension(const std::string& path) {
  const size_t slash = path.rfind('/'), dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot + 1);
  for (char& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
  return e;
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

}  // namespace voxtile
