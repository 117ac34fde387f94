// PNG pictures: written with Debian's libpng, read with stb_image (libstb); mesh textures decoded
// with stb_image.
#pragma once

#include <string>

#include "core/mesh.h"
#include "core/render.h"

namespace voxtile {

// Writes `image` as an 8-bit RGBA PNG (RGB when every pixel is opaque), atomically: the same bytes
// for the same pixels. Throws Error(kOutput) naming the file.
void write_png(const Image& image, const std::string& path);
// Reads a PNG (or any picture stb_image reads) as RGBA8. Throws Error(kInput) naming the file.
Image read_png(const std::string& path);

// A texture image in memory (PNG, JPEG, BMP, TGA, GIF, PSD, HDR, PNM: what stb_image decodes) as RGB8;
// false with the reason when it cannot be decoded.
bool decode_texture(const unsigned char* data, size_t size, Texture& t, std::string& why);
// The same of a file (its whole content); false with the reason (cannot open, cannot decode).
bool load_texture_file(const std::string& file, Texture& t, std::string& why);
// Where a material file names a picture: `name` with '\\' read as '/', relative to the directory of
// `beside` (the model or material library naming it) unless absolute.
std::string texture_path(const std::string& beside, std::string name);

}  // namespace voxtile
