#include "core/hash.h"

#include <xxhash.h>

#include <new>

namespace voxtile {

Hasher::Hasher() : m_state(XXH3_createState()) {
  if (!m_state) throw std::bad_alloc();
  XXH3_64bits_reset(m_state);
}

Hasher::~Hasher() { XXH3_freeState(m_state); }

void Hasher::bytes(const void* p, size_t n) {
  if (n) XXH3_64bits_update(m_state, p, n);
}

uint64_t Hasher::digest() const { return XXH3_64bits_digest(m_state); }

}  // namespace voxtile
