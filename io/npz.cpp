// .npz writer: stored (uncompressed) ZIP entries (io/zip.h, ZIP64 where needed), each a .npy file.
#include "io/npz.h"

#include <cstring>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/zip.h"

namespace voxtile {
namespace {

// A .npy version 1.0 header for a C-order array.
std::string npy_header(const char* descr, const std::vector<uint64_t>& shape) {
  std::ostringstream d;
  d << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) d << shape[i] << (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  d << "), }";
  std::string dict = d.str();
  const size_t total = ((10 + dict.size() + 1 + 63) / 64) * 64;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += char(1);
  h += char(0);
  h += char(dict.size() & 0xff);
  h += char(dict.size() >> 8);
  return h + dict;
}

}  // namespace

void write_buckets_npz(const Buckets& b, const std::string& path) {
  AtomicFile out(path);
  zip::Writer zip(out);
  auto array = [&](const char* name, const char* descr, const std::vector<uint64_t>& shape, const void* data,
                   size_t bytes) {
    const std::string header = npy_header(descr, shape);
    zip.add_stored(std::string(name) + ".npy", {{header.data(), header.size()}, {data, bytes}});
  };
  const uint64_t n = b.num_voxels(), m = b.num_fragments();
  const int32_t dims[3] = {b.spec.dims.x, b.spec.dims.y, b.spec.dims.z};
  const double vs[3] = {b.spec.voxel_size.x, b.spec.voxel_size.y, b.spec.voxel_size.z};
  const double origin[3] = {b.spec.origin.x, b.spec.origin.y, b.spec.origin.z};
  array("ijk", "<i4", {n, 3}, b.ijk.data(), b.ijk.size() * 4);
  array("offsets", "<i8", {n + 1}, b.offsets.data(), b.offsets.size() * 8);
  array("triangle", "<i4", {m}, b.triangle.data(), b.triangle.size() * 4);
  if (b.attrs & kAttrBary) array("bary", "<f4", {m, 3}, b.bary.data(), b.bary.size() * 4);
  if (b.attrs & kAttrNormal) array("normal", "<f4", {m, 3}, b.normal.data(), b.normal.size() * 4);
  if (b.attrs & kAttrUv) array("uv", "<f4", {m, 2}, b.uv.data(), b.uv.size() * 4);
  if (b.attrs & kAttrMaterial) array("material", "<i4", {m}, b.material.data(), b.material.size() * 4);
  array("dims", "<i4", {3}, dims, sizeof(dims));
  array("voxel_size", "<f8", {3}, vs, sizeof(vs));
  array("origin", "<f8", {3}, origin, sizeof(origin));
  zip.finish();
  out.commit();
}

}  // namespace voxtile
