// JSON text for files and stdout: file names and metadata need not be UTF-8 (a Latin-1 name is a
// valid Linux path), so invalid bytes are written as U+FFFD instead of nlohmann's exception.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace voxtile {

template <class Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace voxtile
