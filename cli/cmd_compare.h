// `voxtile compare A B`: are two grid outputs the same? For golden-file tests.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace voxtile {

struct CompareCmdOptions {
  std::string a, b;
  double tolerance = 0.0;
  std::string grid;  // compare only grids of this name
  bool json = false;
  bool quiet = false;  // nothing on stdout: the exit code says (errors still on stderr)
};

void setup_compare(CLI::App& app, CompareCmdOptions& options);
// 0 when equal within the tolerance, 1 when different, 2 on any error (bad or unreadable files).
int run_compare(const CompareCmdOptions& options);

}  // namespace voxtile
