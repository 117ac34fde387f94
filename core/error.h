// The one exception type of voxtile: a one-line message plus the kind that picks the exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace voxtile {

// Exit codes of the CLI, one per kind (README "Exit codes").
enum class ErrorKind : int {
  kInternal = 1,  // a bug or an unexpected failure
  kUsage = 2,     // bad command line or options
  kInput = 3,     // an input file is missing, unreadable, malformed or unusable
  kOutput = 4,    // an output cannot be written
  kResource = 5,  // GPU unavailable or failing, out of memory, over a size budget
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
  ErrorKind kind() const { return m_kind; }

 private:
  ErrorKind m_kind;
};

[[noreturn]] inline void fail(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

}  // namespace voxtile
