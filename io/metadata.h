// Key/value metadata written into output files (source, options, tool version).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace voxtile {

using Metadata = std::vector<std::pair<std::string, std::string>>;

}  // namespace voxtile
