// PNG writing and reading through stb (io/png.h).
#include "io/png.h"

#include <stb_image.h>
#include <stb_image_write.h>

#include <memory>

#include "core/error.h"
#include "io/atomic_file.h"

namespace voxtile {

void write_png(const Image& image, const std::string& path) {
  if (image.width <= 0 || image.height <= 0 || image.pixels.size() != size_t(image.width) * size_t(image.height))
    fail(ErrorKind::kInternal, path + ": no picture to write");
  bool opaque = true;
  for (const uint32_t p : image.pixels) opaque = opaque && (p >> 24) == 255;
  // Bytes R, G, B (, A) per pixel, rows top to bottom.
  const int comp = opaque ? 3 : 4;
  std::vector<unsigned char> bytes(size_t(image.width) * image.height * comp);
  for (size_t i = 0; i < image.pixels.size(); ++i)
    for (int c = 0; c < comp; ++c) bytes[i * comp + c] = static_cast<unsigned char>(image.pixels[i] >> (8 * c));
  std::vector<unsigned char> png;
  auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<unsigned char>*>(context);
    out->insert(out->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + size);
  };
  if (!stbi_write_png_to_func(append, &png, image.width, image.height, comp, bytes.data(), image.width * comp) ||
      png.empty())
    fail(ErrorKind::kResource, path + ": cannot encode the PNG (out of memory)");
  AtomicFile out(path);
  out.write(png.data(), png.size());
  out.commit();
}

Image read_png(const std::string& path) {
  int w = 0, h = 0, comp = 0;
  const std::unique_ptr<unsigned char, void (*)(void*)> px(stbi_load(path.c_str(), &w, &h, &comp, 4), stbi_image_free);
  if (!px)
    fail(ErrorKind::kInput, path + ": cannot read the picture (" +
                                std::string(stbi_failure_reason() ? stbi_failure_reason() : "unknown") + ")");
  Image img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * size_t(h));
  const unsigned char* p = px.get();
  for (size_t i = 0; i < img.pixels.size(); ++i)
    img.pixels[i] =
        uint32_t(p[4 * i]) | uint32_t(p[4 * i + 1]) << 8 | uint32_t(p[4 * i + 2]) << 16 | uint32_t(p[4 * i + 3]) << 24;
  return img;
}

}  // namespace voxtile
