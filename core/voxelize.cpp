// Names of voxelization enums and the grid-space transform.
#include "core/voxelize.h"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <new>  // std::nothrow

#include "core/error.h"

namespace voxtile {

const char* target_name(Target t) {
  switch (t) {
    case Target::kBinary: return "binary";
    case Target::kCount: return "count";
    case Target::kId: return "id";
    case Target::kDistance: return "distance";
    case Target::kNormal: return "normal";
    case Target::kSolid: return "solid";
    case Target::kSdf: return "sdf";
  }
  return "?";
}
const char* blend_name(Blend b) {
  switch (b) {
    case Blend::kDefault: return "default";
    case Blend::kOr: return "or";
    case Blend::kAdd: return "add";
    case Blend::kMin: return "min";
    case Blend::kMax: return "max";
  }
  return "?";
}

std::string target_spec_name(const TargetSpec& s) {
  std::string n = target_name(s.target);
  if (s.blend != default_blend(s.target)) n += std::string("_") + blend_name(s.blend);
  return n;
}

TargetSpec make_target_spec(Target t, Blend b) {
  if (b == Blend::kDefault) b = default_blend(t);
  if (!blend_allowed(t, b))
    fail(ErrorKind::kUsage, std::string("target ") + target_name(t) + " cannot blend with " + blend_name(b));
  return {t, b};
}

TargetSpec parse_target_spec(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string t = text.substr(0, colon), b = colon == std::string::npos ? "" : text.substr(colon + 1);
  static const std::pair<const char*, Target> targets[] = {{"binary", Target::kBinary},
                                                           {"count", Target::kCount},
                                                           {"id", Target::kId},
                                                           {"distance", Target::kDistance},
                                                           {"normal", Target::kNormal},
                                                           {"solid", Target::kSolid},
                                                           {"sdf", Target::kSdf}};
  static const std::pair<const char*, Blend> blends[] = {
      {"or", Blend::kOr}, {"add", Blend::kAdd}, {"min", Blend::kMin}, {"max", Blend::kMax}};
  const Target* target = nullptr;
  for (const auto& [name, value] : targets)
    if (t == name) target = &value;
  if (!target)
    fail(ErrorKind::kUsage, "unknown target '" + t + "' (expected binary, count, id, distance, normal, solid or sdf)");
  Blend blend = Blend::kDefault;
  if (colon != std::string::npos) {
    const Blend* found = nullptr;
    for (const auto& [name, value] : blends)
      if (b == name) found = &value;
    if (!found) fail(ErrorKind::kUsage, "unknown blend '" + b + "' in target '" + text + "' (expected or, add, min or max)");
    blend = *found;
  }
  return make_target_spec(*target, blend);
}

std::vector<TargetSpec> parse_target_list(const std::string& text) {
  std::vector<TargetSpec> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) fail(ErrorKind::kUsage, "empty target in '" + text + "'");
    const TargetSpec s = parse_target_spec(item);
    for (const TargetSpec& o : out)
      if (o == s) fail(ErrorKind::kUsage, "target '" + item + "' is given twice");
    out.push_back(s);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}
const char* mode_name(VoxelMode m) { return m == VoxelMode::kThin ? "thin" : "conservative"; }

void check_grid_dims(const GridSpec& spec) {
  if (spec.dims.x < 1 || spec.dims.y < 1 || spec.dims.z < 1 || spec.dims.x > kMaxGridDim ||
      spec.dims.y > kMaxGridDim || spec.dims.z > kMaxGridDim)
    fail(ErrorKind::kUsage, "grid dimensions out of range");
}

ThreadLimit::ThreadLimit(int threads) {
  if (threads > 0)
    m_control = new tbb::global_control(tbb::global_control::max_allowed_parallelism, size_t(threads));
}
ThreadLimit::~ThreadLimit() { delete static_cast<tbb::global_control*>(m_control); }

void end_worker_threads() {
  tbb::task_scheduler_handle handle(tbb::attach{});
  (void)tbb::finalize(handle, std::nothrow);
}

std::vector<Vec3f> to_grid_space(const Mesh& mesh, const GridSpec& spec) {
  std::vector<Vec3f> g(mesh.positions.size());
  tbb::parallel_for(tbb::blocked_range<size_t>(0, g.size(), 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) {
      const Vec3f& p = mesh.positions[i];
      g[i] = spec.world_to_grid({p.x, p.y, p.z});
    }
  });
  return g;
}

}  // namespace voxtile
