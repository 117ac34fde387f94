// SparseGrid: the result type shared by the CPU path, the GPU path and every writer.
//
// The grid is stored as 8x8x8 bricks (the size of an OpenVDB leaf node), sorted by brick key, each
// with a 512-bit occupancy mask and, for value targets, the values of its active voxels. Memory is
// proportional to the number of non-empty bricks and active voxels: the dense grid is never
// materialised. Occupancy grids may also hold
// runs of full bricks (a solid's interior: OpenVDB's tiles), so memory is proportional to the
// surface, not the volume.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/grid_spec.h"
#include "core/hd.h"

namespace voxtile {

constexpr int kBrickLog2 = 3;
constexpr int kBrickDim = 8;
constexpr int kBrickVoxels = 512;
constexpr int kBrickKeyBits = 21;  // per axis: up to 2^21 bricks, far beyond kMaxGridDim

// Occupancy of one brick. Voxel (x,y,z) local to the brick (0..7 each) has offset
// x*64 + y*8 + z (OpenVDB's LeafNode::coordToOffset), bit (offset & 63) of word (offset >> 6).
struct BrickMask {
  uint64_t w[8];
  bool test(int offset) const { return (w[offset >> 6] >> (offset & 63)) & 1u; }
  void set(int offset) { w[offset >> 6] |= uint64_t(1) << (offset & 63); }
  bool any() const { return (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) != 0; }
  int count() const;
  int rank(int offset) const { return int(mask_rank(w, offset)); }  // active voxels below `offset`
};

inline bool brick_full(const BrickMask& m) {
  return (m.w[0] & m.w[1] & m.w[2] & m.w[3] & m.w[4] & m.w[5] & m.w[6] & m.w[7]) == ~uint64_t(0);
}
inline BrickMask full_brick_mask() {
  BrickMask m;
  for (uint64_t& w : m.w) w = ~uint64_t(0);
  return m;
}

// `count` full bricks along z: keys key, key + 1, ..., key + count - 1 (one brick column: brick
// keys step along z, and a run never reaches past the grid).
struct BrickRun {
  uint64_t key;
  uint64_t count;
};

VT_HD inline int brick_offset(int x, int y, int z) { return (x << 6) | (y << 3) | z; }
// Key of brick (bx,by,bz) (non-negative brick coordinates): bx in the high bits, so ascending keys
// are x-major order, and all bricks of one x-slab of 8 voxels are contiguous.
VT_HD inline uint64_t brick_key(int32_t bx, int32_t by, int32_t bz) {
  return (uint64_t(bx) << (2 * kBrickKeyBits)) | (uint64_t(by) << kBrickKeyBits) | uint64_t(bz);
}
// Bricks per axis of a grid of `dims` voxels (the last ones clipped).
VT_HD inline Int3 grid_bricks(const Int3& dims) {
  return {(dims.x + kBrickDim - 1) / kBrickDim, (dims.y + kBrickDim - 1) / kBrickDim, (dims.z + kBrickDim - 1) / kBrickDim};
}
VT_HD inline Int3 brick_coord(uint64_t key) {
  const uint64_t m = (uint64_t(1) << kBrickKeyBits) - 1;
  return {int32_t(key >> (2 * kBrickKeyBits)), int32_t((key >> kBrickKeyBits) & m), int32_t(key & m)};
}
// Calls f(first brick's coordinates, bricks) for each piece of `runs` cut where z crosses a multiple
// of `align` bricks (OpenVDB's nodes: 16 bricks for 128^3 voxels, 512 for 4096^3).
template <class F>
void for_each_run_piece(const std::vector<BrickRun>& runs, uint64_t align, F&& f) {
  for (const BrickRun& r : runs) {
    const Int3 c = brick_coord(r.key);
    for (uint64_t z = uint64_t(c.z), end = z + r.count; z < end;) {
      const uint64_t stop = end < (z / align + 1) * align ? end : (z / align + 1) * align;
      f(Int3{c.x, c.y, int32_t(z)}, stop - z);
      z = stop;
    }
  }
}

// Allocator whose resize() leaves new elements uninitialised: every resize of a value array is
// followed by a full overwrite, so large grids are written once (in parallel) instead of being
// zero-filled by one thread first.
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <class T>
using ValueArray = std::vector<T, NoInitAllocator<T>>;
using BrickKeys = ValueArray<uint64_t>;
using BrickMasks = ValueArray<BrickMask>;

enum class ValueType : uint8_t {
  kNone = 0,   // occupancy only (binary target)
  kInt32 = 1,  // one int32 per voxel (count target)
  kFloat32 = 2,
  kVec3f = 3,  // three floats per voxel (normal target)
};
// Values per voxel of a value type (0 for occupancy only).
inline int value_channels(ValueType t) { return t == ValueType::kNone ? 0 : (t == ValueType::kVec3f ? 3 : 1); }
const char* value_type_name(ValueType t);

struct SparseGrid {
  GridSpec spec;
  ValueType value_type = ValueType::kNone;
  std::string name = "voxels";         // grid name written to files
  // A narrow-band level set (the sdf target): inactive voxels are -background inside the surface
  // and +background outside (OpenVDB's level-set convention; writers fill or flood them so).
  bool level_set = false;
  float background = 0.0f;
  // Keys and masks are ValueArrays: resize() leaves new elements uninitialised (a resize that
  // needs zeros says so: resize(n, BrickMask{})), so a large grid downloaded from the GPU or filled
  // in parallel is written once, by the threads that fill it, instead of zero-filled by one first.
  BrickKeys keys;    // num_bricks, strictly ascending
  BrickMasks masks;  // num_bricks, none empty
  // Occupancy grids (kNone) only: full bricks held as runs instead of masks; sorted, disjoint from
  // `keys`. Producers keep the canonical form of make_runs(); consumers that walk bricks (keys,
  // masks, for_each_active) see no run: they take expanded_runs() / expand_runs() first.
  std::vector<BrickRun> runs;
  // Value grids: the values of the active voxels alone, brick by brick in key order and within a
  // brick in ascending offset, value_channels(value_type) words each (x, y, z for kVec3f);
  // value_begin[b] counts the active voxels of the bricks before b (num_bricks + 1 entries). A
  // producer sets keys and masks, calls index_values(), then writes every value. Inactive voxels
  // hold none (0 in dense outputs; a level set's +-background in files).
  ValueArray<uint64_t> value_begin;
  ValueArray<int32_t> ivalues;  // kInt32
  ValueArray<float> fvalues;    // kFloat32, kVec3f

  size_t num_bricks() const { return keys.size(); }  // bricks with masks (runs not included)
  uint64_t run_bricks() const;                       // full bricks held in runs
  uint64_t active_voxels() const;
  // 64-bit XXH3 over the canonical content: dims, value type, the brick keys, the brick masks, and
  // brick by brick the values of the active voxels; for occupancy grids with full bricks, those are
  // hashed as maximal runs after the others (so the same voxels give the same checksum however the
  // full bricks are held). Independent of files, metadata and thread counts.
  uint64_t checksum() const;
  // Canonical form of an occupancy grid: every full brick in `runs`, adjacent runs merged. No-op for
  // value grids.
  void make_runs();
  // make_runs for the bricks from index `first` on, which follow every run (a producer appending
  // slab by slab in key order keeps its memory proportional to the surface).
  void make_runs_from(size_t first);
  // Every run written out as full bricks (runs emptied). Error(kResource) when the bricks would take
  // more than half the machine's memory (a huge solid: write .vdb, which keeps the runs as tiles).
  void expand_runs();
  // Throws Error(kInternal) if the invariants above do not hold.
  void validate() const;
  // Value of voxel `offset` of brick `b` as a double (1 for occupancy-only grids; 0 where inactive);
  // channel c of vector grids.
  double value(size_t b, int offset, int c = 0) const;
  // Sets value_begin from the masks (on all cores) and, with `size_values`, sizes the value array for
  // the active voxels, leaving the values to the caller (resize: uninitialised).
  void index_values(bool size_values = true);
  // Where active voxel `offset` of brick b is among the values (in voxels: times the channels).
  uint64_t value_index(size_t b, int offset) const { return value_begin[b] + uint64_t(masks[b].rank(offset)); }
  // Brick b's values as 512 voxels' (value_channels words each, 32-bit), 0 where inactive.
  void brick_values(size_t b, void* out) const;

  // Calls f(i, j, k, brick_index, offset) for every active voxel in ascending key / offset order,
  // or f(i, j, k, brick_index, offset, index) where f takes it: the voxel's index among the active
  // ones (where its values are: times the channels).
  template <class F>
  void for_each_active(F&& f) const {
    uint64_t at = 0;
    for (size_t b = 0; b < keys.size(); ++b) {
      const Int3 bc = brick_coord(keys[b]);
      for (int word = 0; word < 8; ++word) {
        uint64_t bits = masks[b].w[word];
        while (bits) {
          const int bit = __builtin_ctzll(bits);
          bits &= bits - 1;
          const int off = word * 64 + bit;
          if constexpr (std::is_invocable_v<F, int32_t, int32_t, int32_t, size_t, int, uint64_t>)
            f(bc.x * 8 + (off >> 6), bc.y * 8 + ((off >> 3) & 7), bc.z * 8 + (off & 7), b, off, at++);
          else
            f(bc.x * 8 + (off >> 6), bc.y * 8 + ((off >> 3) & 7), bc.z * 8 + (off & 7), b, off);
        }
      }
    }
  }
};

// Writes one brick's values as 512 voxels' (channels 32-bit words each) from its active voxels'
// alone (`active`: each active voxel's `channels` words in ascending offset); the other voxels'
// words are 0.
void expand_brick_values(const BrickMask& mask, int channels, const void* active, void* brick);
// The reverse: the active voxels' words of a brick's 512 voxels' (`brick`), in ascending offset, to
// `active`; returns the words written.
size_t compact_brick_values(const BrickMask& mask, int channels, const void* brick, void* active);

// Advises the kernel to back the whole 2 MB pages inside [p, p + bytes) with transparent huge pages
// (Linux: madvise MADV_HUGEPAGE, which Ubuntu's and Debian's default THP mode `madvise` waits for;
// elsewhere nothing), for a large array about to be written for the first time: its pages then
// fault in 2 MB at a time. Advice only: the memory and its contents are unchanged.
void advise_huge_pages(void* p, size_t bytes);

// `g` itself when it holds no run, else a copy with its runs expanded into `storage`.
const SparseGrid& expanded_runs(const SparseGrid& g, SparseGrid& storage);

// Builds a SparseGrid from active voxels given in any order: sorts them into bricks by key.
class SparseGridBuilder {
 public:
  // `source` names the data in errors (a file path).
  SparseGridBuilder(const GridSpec& spec, ValueType type, const std::string& name, const std::string& source);
  // `value` holds value_channels(type) 32-bit words (int32 or float bits); none for masks.
  // Throws Error(kInput) for a voxel outside spec.dims.
  void add(int32_t i, int32_t j, int32_t k, const uint32_t* value = nullptr);
  // Throws Error(kInput) if a voxel was added twice.
  SparseGrid build();

 private:
  struct Entry {
    uint64_t key;
    uint16_t off;
    size_t value;
  };
  SparseGrid m_grid;
  std::string m_source;
  std::vector<Entry> m_entries;
  std::vector<uint32_t> m_values;
};

}  // namespace voxtile
