// PNG pictures: written with Debian's libpng, read with stb_image (libstb).
#pragma once

#include <string>

#include "core/render.h"

namespace voxtile {

// Writes `image` as an 8-bit RGBA PNG (RGB when every pixel is opaque), atomically: the same bytes
// for the same pixels. Throws Error(kOutput) naming the file.
void write_png(const Image& image, const std::string& path);
// Reads a PNG (or any picture stb_image reads) as RGBA8. Throws Error(kInput) naming the file.
Image read_png(const std::string& path);

}  // namespace voxtile
