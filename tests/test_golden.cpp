// Golden outputs of the CPU reference: dims, active voxels and the canonical checksum of every case
// in the matrix. Regenerate only with scripts/update-goldens.sh, and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "io/mesh_reader.h"
#include "tests/golden_cases.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

const std::string kGoldenFile = "tests/golden/cpu.txt";

std::string golden_line(const test::GoldenCase& c, const SparseGrid& g) {
  std::ostringstream s;
  s << c.id() << " | " << g.spec.dims.x << "x" << g.spec.dims.y << "x" << g.spec.dims.z << " " << g.active_voxels()
    << " " << std::hex << g.checksum();
  return s.str();
}

TEST(Golden, CpuReferenceMatchesTheCommittedGoldens) {
  std::map<std::string, Mesh> meshes;
  std::vector<std::string> got;
  for (const test::GoldenCase& c : test::golden_cases()) {
    if (!meshes.count(c.mesh)) meshes[c.mesh] = load_mesh(test::data_path(c.mesh)).mesh;
    const Mesh& m = meshes[c.mesh];
    VoxelizeOptions o;
    o.mode = c.mode;
    o.target = c.target.target;
    o.blend = c.target.blend;
    got.push_back(golden_line(c, voxelize_cpu(m, make_grid_spec(m.bounds(), test::golden_grid(c.grid)), o)));
  }
  const std::string path = test::source_path(kGoldenFile);
  if (std::getenv("VOXTILE_UPDATE_GOLDENS")) {
    std::ofstream f(path);
    f << "# mesh grid mode target | dims active_voxels checksum (scripts/update-goldens.sh)\n";
    for (const auto& l : got) f << l << "\n";
    GTEST_SKIP() << "goldens written to " << path;
  }
  std::ifstream f(path);
  ASSERT_TRUE(f) << "missing " << path << "; run scripts/update-goldens.sh";
  std::vector<std::string> want;
  for (std::string line; std::getline(f, line);)
    if (!line.empty() && line[0] != '#') want.push_back(line);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]);
}

}  // namespace
}  // namespace voxtile
