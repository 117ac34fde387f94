// Output format dispatch.
#include "io/writers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/progress.h"
#include "io/binvox.h"
#include "io/files.h"
#include "io/las.h"
#include "io/ply.h"
#include "io/points_io.h"
#include "io/vdb.h"
#include "io/vox.h"

namespace voxtile {

namespace {
constexpr std::pair<OutputFormat, const char*> kFormats[] = {
    {OutputFormat::kVdb, "vdb"},       {OutputFormat::kPly, "ply"}, {OutputFormat::kLas, "las"},
    {OutputFormat::kXyz, "xyz"},       {OutputFormat::kRaw, "raw"}, {OutputFormat::kNpy, "npy"},
    {OutputFormat::kBinvox, "binvox"}, {OutputFormat::kVox, "vox"}};

// "vdb, ply, ... or vox", each name after `prefix`.
std::string format_list(const char* prefix) {
  std::string s;
  const size_t n = std::size(kFormats);
  for (size_t i = 0; i < n; ++i) s += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(prefix) + kFormats[i].second;
  return s;
}
}  // namespace

const char* format_name(OutputFormat f) {
  for (const auto& [format, name] : kFormats)
    if (format == f) return name;
  return "?";
}

std::vector<std::string> format_names() {
  std::vector<std::string> names;
  for (const auto& entry : kFormats) names.push_back(entry.second);
  return names;
}

bool holds_one_grid(OutputFormat f) {
  return f != OutputFormat::kVdb && f != OutputFormat::kPly && f != OutputFormat::kLas && f != OutputFormat::kXyz;
}

OutputFormat parse_format(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const auto& [format, known] : kFormats)
    if (n == known) return format;
  fail(ErrorKind::kUsage, "unknown output format '" + name + "' (expected " + format_list("") + ")");
}

OutputFormat format_from_path(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (path == "-")
    fail(ErrorKind::kUsage, "-o -: standard output has no extension to tell the format; name it with --format (" +
                                format_list("") + ")");
  if (ext.empty()) fail(ErrorKind::kUsage, path + ": no file extension; name the format with --format (" + format_list("") + ")");
  try {
    return parse_format(ext);
  } catch (const Error&) {
    fail(ErrorKind::kUsage, path + ": unknown output extension; use " + format_list(".") + ", or --format");
  }
}

void write_grid(const SparseGrid& solid_or_surface, const std::string& path, OutputFormat format,
                const WriteOptions& options) {
  const ProgressStage stage("write " + path);
  // Only .vdb keeps a solid's interior as runs (tiles); every other format takes its voxels.
  SparseGrid storage;
  const SparseGrid& grid =
      format == OutputFormat::kVdb ? solid_or_surface : expanded_runs(solid_or_surface, storage);
  switch (format) {
    case OutputFormat::kVdb:
      write_vdb_grids({&grid}, path, options.meta, VdbWriter::kAuto, options.vdb);
      return;
    case OutputFormat::kPly: write_ply(grid, path, options.meta); return;
    case OutputFormat::kRaw: write_raw(grid, path, options.dense, options.meta); return;
    case OutputFormat::kNpy: write_npy(grid, path, options.dense); return;
    case OutputFormat::kBinvox: write_binvox(grid, path, options.dense); return;
    case OutputFormat::kVox: write_vox(grid, path); return;
    case OutputFormat::kLas: write_las_grids({&grid}, path, options.meta); return;
    case OutputFormat::kXyz: write_xyz_grids({&grid}, path); return;
  }
}

std::string recorded_metadata(const std::string& path, OutputFormat format, const std::string& key) {
  try {
    if (format == OutputFormat::kVdb) return read_vdb_meta(path, key);
    if (format == OutputFormat::kPly) {
      const std::string prefix = "voxtile_" + key + " ";
      for (const std::string& c : read_ply_header(path).comments)
        if (c.compare(0, prefix.size(), prefix) == 0) return c.substr(prefix.size());
      return "";
    }
    if (format == OutputFormat::kRaw) {
      std::ifstream f(raw_sidecar_path(path), std::ios::binary);
      if (!f) return "";
      const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
      return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
    }
    if (format == OutputFormat::kLas) return read_las_metadata(path, key);
  } catch (const Error&) {
  }
  return "";  // .npy, .binvox, .vox and .xyz record nothing
}

void check_grid_output(const GridSpec& spec, ValueType type, const std::string& path, OutputFormat format,
                       const WriteOptions& options) {
  if (format == OutputFormat::kRaw || format == OutputFormat::kNpy)
    check_dense_budget(spec.dims, type, path, options.dense);
  else if (format == OutputFormat::kBinvox) check_binvox_grid(spec, path, options.dense);
  else if (format == OutputFormat::kXyz && (type == ValueType::kInt32 || type == ValueType::kFloat32))
    fail(ErrorKind::kUsage, path + ": .xyz holds positions, colours and normals, not one value per voxel "
                                   "(write .ply or .las for the values, or .vdb)");
}

void write_grids(const std::vector<SparseGrid>& grids, const std::string& path, OutputFormat format,
                 const WriteOptions& options) {
  if (grids.size() == 1) return write_grid(grids[0], path, format, options);
  if (holds_one_grid(format))
    fail(ErrorKind::kUsage, path + ": a ." + format_name(format) + " file holds one target; write several targets to .vdb or .ply");
  const ProgressStage stage("write " + path);
  std::vector<const SparseGrid*> ptrs;
  std::vector<SparseGrid> storage(format == OutputFormat::kVdb ? 0 : grids.size());
  for (size_t i = 0; i < grids.size(); ++i)
    ptrs.push_back(format == OutputFormat::kVdb ? &grids[i] : &expanded_runs(grids[i], storage[i]));
  if (format == OutputFormat::kVdb)
    write_vdb_grids(ptrs, path, options.meta, VdbWriter::kAuto, options.vdb);
  else if (format == OutputFormat::kLas)
    write_las_grids(ptrs, path, options.meta);
  else if (format == OutputFormat::kXyz)
    write_xyz_grids(ptrs, path);
  else
    write_ply_grids(ptrs, path, options.meta);
}

}  // namespace voxtile
