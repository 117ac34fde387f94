// io/vdb.h through the dlopen'ed OpenVDB module (io/vdb_module.h).
#include <dlfcn.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "io/grid_reader.h"
#include "io/vdb_direct.h"
#include "io/vdb_module.h"

namespace voxtile {
namespace {

constexpr const char* kModule = "libvoxtile_vdb.so";

std::string exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, size_t(n));
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// Looks next to the executable, in ../lib/voxtile (an installed tree), one directory up (the tests
// in build/tests), then in $VOXTILE_LIB_DIR first when it is set.
const VdbApi* load_module() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("VOXTILE_LIB_DIR")) dirs.push_back(env);
  const std::string d = exe_dir();
  dirs.insert(dirs.end(), {d, d + "/../lib/voxtile", d + "/.."});
  std::string why;
  for (const std::string& dir : dirs) {
    const std::string path = dir + "/" + kModule;
    if (access(path.c_str(), F_OK) != 0) continue;
    void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);  // lazy: as a linked library binds functions
    if (!h) {
      const char* e = dlerror();
      why = e ? e : "dlopen failed";
      continue;
    }
    using Entry = const VdbApi* (*)();
    const auto entry = reinterpret_cast<Entry>(dlsym(h, "voxtile_vdb_api"));
    const VdbApi* api = entry ? entry() : nullptr;
    if (api && api->version == kVdbApiVersion) return api;
    why = path + " is not this voxtile's OpenVDB module";
  }
  fail(ErrorKind::kResource,
       std::string("cannot load ") + kModule + " (OpenVDB support), looked in " + d + (why.empty() ? "" : ": " + why));
}

std::once_flag g_once;
const VdbApi* g_api = nullptr;
std::exception_ptr g_error;

const VdbApi& api() {
  std::call_once(g_once, [] {
    try {
      g_api = load_module();
    } catch (...) {
      g_error = std::current_exception();
    }
  });
  if (g_error) std::rethrow_exception(g_error);
  return *g_api;
}

}  // namespace

void write_vdb(const SparseGrid& grid, const std::string& path, const Metadata& meta) {
  write_vdb_grids({&grid}, path, meta, VdbWriter::kAuto, {});
}
namespace {

// With half floats, a usage error (before any file exists) where a value lies beyond a half's range:
// half_bits would store it as infinity.
void check_half_range(const std::vector<const SparseGrid*>& grids, const std::string& path) {
  for (const SparseGrid* g : grids) {
    if (g->value_type != ValueType::kFloat32 && g->value_type != ValueType::kVec3f) continue;
    const auto& v = g->fvalues;
    const float largest = tbb::parallel_reduce(
        tbb::blocked_range<size_t>(0, v.size(), 1 << 16), std::fabs(g->background),
        [&](const tbb::blocked_range<size_t>& r, float m) {
          for (size_t i = r.begin(); i != r.end(); ++i) m = std::fmax(m, std::fabs(v[i]));
          return m;
        },
        [](float a, float b) { return std::fmax(a, b); });
    if (std::isinf(half_to_float(half_bits(largest)))) {
      std::ostringstream msg;
      msg << path << ": grid \"" << g->name << "\" holds values up to " << largest
          << ", beyond a half float's range (65504): write it without --vdb-half, or in larger units";
      fail(ErrorKind::kUsage, msg.str());
    }
  }
}

}  // namespace

// Grids are written without loading the module where io/vdb_direct.h can, the rest through OpenVDB.
void write_vdb_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta,
                     VdbWriter writer, const VdbWriteOptions& options) {
  if (options.half) check_half_range(grids, path);
  if (writer != VdbWriter::kOpenVdb && writer != VdbWriter::kTree && write_direct_vdb(grids, path, meta, options))
    return;
  api().write_vdb_grids(grids, path, meta, writer, options);
}
// Files of the grids io/vdb_direct.h writes are read without the module too.
SparseGrid read_vdb(const std::string& path, const std::string& grid_name) {
  std::vector<SparseGrid> grids;
  if (read_direct_vdb(path, grid_name, false, &grids)) return std::move(grids.front());
  return api().read_vdb(path, grid_name);
}
SparseGrid read_vdb_openvdb(const std::string& path, const std::string& grid_name) {
  return api().read_vdb(path, grid_name);
}
std::vector<SparseGrid> read_vdb_grids(const std::string& path) {
  std::vector<SparseGrid> grids;
  if (read_direct_vdb(path, "", true, &grids)) return grids;
  return api().read_vdb_grids(path);
}
std::string read_vdb_meta(const std::string& path, const std::string& key) {
  std::string value;
  if (read_direct_vdb_meta(path, key, &value)) return value;
  return api().read_vdb_meta(path, key);
}
std::string read_vdb_meta_openvdb(const std::string& path, const std::string& key) {
  return api().read_vdb_meta(path, key);
}
std::vector<std::string> describe_vdb(const std::string& path) {
  std::vector<std::string> lines;
  if (describe_direct_vdb(path, &lines)) return lines;
  return api().describe_vdb(path);
}
std::vector<std::string> describe_vdb_openvdb(const std::string& path) { return api().describe_vdb(path); }

}  // namespace voxtile
