// Pictures of grids on the GPU: the scene's arrays uploaded once, render_pixel (core/render.h) per
// pixel, one thread each, the image downloaded; the legend drawn on the host. The same bytes as
// render_cpu: the same float operations in the same order (-fmad=false).
#include "core/render.h"
#include "kernels/api.h"
#include "kernels/common.cuh"

namespace voxtile {
namespace {

__global__ void render_kernel(RenderView v, uint32_t* out) {
  const int x = int(blockIdx.x * blockDim.x + threadIdx.x), y = int(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= v.width || y >= v.height) return;
  out[size_t(y) * size_t(v.width) + size_t(x)] = render_pixel(v, x, y);
}

// Pageable copies: a picture is made once per grid, so a pinned staging buffer (allocated per call)
// costs more than it saves (measured on an H200: 5-25 ms staged against ... plain).
template <class T>
void put(DeviceBuffer<T>& d, const std::vector<T>& h, cudaStream_t stream) {
  d.grow(std::max<size_t>(h.size(), 1));
  if (!h.empty())
    VT_CUDA_CHECK(cudaMemcpyAsync(d.data(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
}

}  // namespace

Image gpu_render(const RenderScene& scene, const RenderOptions& options, int device,
                 std::vector<std::pair<std::string, double>>* stage_ms) {
  const DeviceStream owned(device);
  const cudaStream_t stream = owned.get();
  StageTimer timer(stream);
  timer.begin("upload");
  DeviceBuffer<uint64_t> keys, masks, cells;
  DeviceBuffer<uint32_t> first, colors;
  put(keys, scene.keys, stream);
  put(masks, scene.masks, stream);
  put(cells, scene.cells, stream);
  put(first, scene.first, stream);
  put(colors, scene.colors, stream);
  const RenderView v = scene.view_with(options, keys.data(), masks.data(), first.data(),
                                       scene.colors.empty() ? nullptr : colors.data(), cells.data());
  Image img;
  img.width = options.width;
  img.height = options.height;
  img.pixels.resize(size_t(img.width) * size_t(img.height));
  DeviceBuffer<uint32_t> out(img.pixels.size());
  timer.begin("render");
  const dim3 block(16, 8), grid((img.width + 15) / 16, (img.height + 7) / 8);
  render_kernel<<<grid, block, 0, stream>>>(v, out.data());
  VT_CUDA_CHECK_LAUNCH();
  timer.begin("download");
  VT_CUDA_CHECK(cudaMemcpyAsync(img.pixels.data(), out.data(), img.pixels.size() * sizeof(uint32_t),
                                cudaMemcpyDeviceToHost, stream));
  VT_CUDA_CHECK(cudaStreamSynchronize(stream));
  timer.end();
  const auto stages = timer.resolve();
  if (stage_ms) stage_ms->insert(stage_ms->end(), stages.begin(), stages.end());
  draw_legend(scene, options, img);
  return img;
}

}  // namespace voxtile
