// Names of voxelization enums and the grid-space transform.
#include "core/voxelize.h"

#include <tbb/parallel_for.h>

namespace voxtile {

const char* target_name(Target t) {
  switch (t) {
    case Target::kBinary: return "binary";
    case Target::kCount: return "count";
    case Target::kId: return "id";
    case Target::kDistance: return "distance";
  }
  return "?";
}
const char* mode_name(VoxelMode m) { return m == VoxelMode::kThin ? "thin" : "conservative"; }

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
