// Incremental 64-bit XXH3 (Debian's libxxhash): grid checksums, job fingerprints, file UUIDs.
#pragma once

#include <cstddef>
#include <cstdint>

struct XXH3_state_s;

namespace voxtile {

class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void bytes(const void* p, size_t n);
  template <class T>
  void pod(const T& v) {
    bytes(&v, sizeof(v));
  }
  // The hash of everything fed so far (feeding may go on).
  uint64_t digest() const;

 private:
  XXH3_state_s* m_state;
};

}  // namespace voxtile
