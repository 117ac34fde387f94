// Output format dispatch.
#include "io/writers.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "io/files.h"
#include "io/ply.h"
#include "io/vdb.h"

namespace voxtile {

const char* format_name(OutputFormat f) {
  switch (f) {
    case OutputFormat::kVdb: return "vdb";
    case OutputFormat::kPly: return "ply";
    case OutputFormat::kRaw: return "raw";
    case OutputFormat::kNpy: return "npy";
  }
  return "?";
}

OutputFormat parse_format(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (n == "vdb") return OutputFormat::kVdb;
  if (n == "ply") return OutputFormat::kPly;
  if (n == "raw") return OutputFormat::kRaw;
  if (n == "npy") return OutputFormat::kNpy;
  fail(ErrorKind::kUsage, "unknown output format '" + name + "' (expected vdb, ply, raw or npy)");
}

OutputFormat format_from_path(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext.empty()) fail(ErrorKind::kUsage, path + ": no file extension; name the format with --format vdb|ply|raw|npy");
  try {
    return parse_format(ext);
  } catch (const Error&) {
    fail(ErrorKind::kUsage, path + ": unknown output extension; use .vdb, .ply, .raw or .npy, or --format");
  }
}

void write_grid(const SparseGrid& grid, const std::string& path, OutputFormat format, const WriteOptions& options) {
  switch (format) {
    case OutputFormat::kVdb: write_vdb(grid, path, options.meta); return;
    case OutputFormat::kPly: write_ply(grid, path, options.meta); return;
    case OutputFormat::kRaw: write_raw(grid, path, options.dense, options.meta); return;
    case OutputFormat::kNpy: write_npy(grid, path, options.dense); return;
  }
}

std::string recorded_metadata(const std::string& path, OutputFormat format, const std::string& key) {
  if (format == OutputFormat::kVdb) return read_vdb_meta(path, key);
  std::string text;
  std::ifstream f(format == OutputFormat::kRaw ? raw_sidecar_path(path) : path, std::ios::binary);
  if (!f) return "";
  if (format == OutputFormat::kPly) {
    for (std::string line; std::getline(f, line) && line != "end_header";) {
      const std::string prefix = "comment voxtile_" + key + " ";
      if (line.compare(0, prefix.size(), prefix) == 0) return line.substr(prefix.size());
    }
    return "";
  }
  if (format == OutputFormat::kRaw) {
    std::ostringstream s;
    s << f.rdbuf();
    text = s.str();
    const std::string k = "\"" + key + "\": \"";
    const size_t p = text.find(k);
    if (p == std::string::npos) return "";
    const size_t e = text.find('"', p + k.size());
    return e == std::string::npos ? "" : text.substr(p + k.size(), e - p - k.size());
  }
  return "";
}

void write_grids(const std::vector<SparseGrid>& grids, const std::string& path, OutputFormat format,
                 const WriteOptions& options) {
  if (grids.size() == 1) return write_grid(grids[0], path, format, options);
  std::vector<const SparseGrid*> ptrs;
  for (const SparseGrid& g : grids) ptrs.push_back(&g);
  switch (format) {
    case OutputFormat::kVdb: write_vdb_grids(ptrs, path, options.meta); return;
    case OutputFormat::kPly: write_ply_grids(ptrs, path, options.meta); return;
    case OutputFormat::kRaw:
    case OutputFormat::kNpy:
      fail(ErrorKind::kUsage, path + ": a ." + format_name(format) + " file holds one target; write several targets to .vdb or .ply");
  }
}

}  // namespace voxtile
