// GPU interface of a build without a CUDA compiler: no device is ever available.
#include "core/error.h"
#include "kernels/api.h"
#include "kernels/testing.h"

namespace voxtile {
namespace {

[[noreturn]] void no_cuda() { fail(ErrorKind::kResource, "this voxtile was built without CUDA"); }

}  // namespace

bool gpu_compiled() { return false; }

int gpu_count() { return 0; }

void start_gpu(int) { no_cuda(); }

GpuInfo query_gpu(int) {
  GpuInfo info;
  info.reason = "this voxtile was built without CUDA";
  return info;
}

std::unique_ptr<Voxelizer> make_gpu_voxelizer(const GpuOptions&) { no_cuda(); }

Mesh gpu_grid_to_mesh(const SparseGrid&, const IsoOptions&, const SparseGrid*, int,
                      std::vector<std::pair<std::string, double>>*, uint64_t) {
  no_cuda();
}

Image gpu_render(const RenderScene&, const RenderOptions&, int, std::vector<std::pair<std::string, double>>*) {
  no_cuda();
}

struct GpuPoints::Impl {};
GpuPoints::GpuPoints(int, ScanMethod, uint64_t) : m(nullptr) { no_cuda(); }
GpuPoints::~GpuPoints() = default;
CsgSamples GpuPoints::csg(const CsgScript&, const CsgSamples&, uint32_t, CsgStats*) { no_cuda(); }
SparseGrid GpuPoints::solid(const CsgScript&, const GridSpec&, CsgStats*) { no_cuda(); }
VoxelBins GpuPoints::bin(const PointCloud&, const GridSpec&, std::vector<std::pair<std::string, double>>*) { no_cuda(); }
const std::string& GpuPoints::device_name() const { no_cuda(); }

SparseGrid gpu_voxelize_probed(const Mesh&, const GridSpec&, const VoxelizeOptions&, const GpuOptions&, GpuStageProbe*) {
  no_cuda();
}
BandTree gpu_band_tree(const Mesh&, const GridSpec&, int, const GpuOptions&) { no_cuda(); }
SparseGrid gpu_inside_centres(const Mesh&, const GridSpec&, InsideMethod, const SparseGrid*, const GpuOptions&) {
  no_cuda();
}
std::vector<uint64_t> gpu_select_indices(const std::vector<uint8_t>&, ScanMethod, int) { no_cuda(); }
double gpu_copy_bandwidth(int) { no_cuda(); }
std::vector<uint32_t> gpu_zero_ranges(uint64_t, const std::vector<std::pair<uint64_t, uint64_t>>&, int) { no_cuda(); }
std::vector<uint64_t> gpu_block_scan(const std::vector<uint32_t>&, bool, uint64_t, int) { no_cuda(); }
std::vector<std::pair<uint64_t, size_t>> gpu_staged_round_trips(const std::vector<size_t>&, int) { no_cuda(); }
CompactionCheck gpu_compaction_selftest(uint64_t, uint32_t, uint32_t, ScanMethod, int) { no_cuda(); }
void gpu_csg_bench_load(GpuPoints&, const Vec3f*, const SampleParams*, uint64_t, const CsgPrimitive*, uint32_t) {
  no_cuda();
}
std::vector<std::pair<std::string, double>> gpu_csg_bench_step(GpuPoints&, const CsgPrimitive*, uint32_t, const Vec3f*,
                                                               const SampleParams*, uint64_t, uint64_t*) {
  no_cuda();
}

}  // namespace voxtile
