// Small file helpers shared by the readers and the CLI.
#pragma once

#include <string>

namespace voxtile {

// The extension of the file name (after the last '.' of the last path component), lower case;
// "" when there is none.
std::string lower_extension(const std::string& path);

// The whole file. Throws Error(kInput) "<path>: <problem>" when it is missing, not a regular file,
// empty or unreadable (check_input_file).
std::string read_input_file(const std::string& path);

}  // namespace voxtile
