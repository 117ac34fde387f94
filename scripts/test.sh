#!/usr/bin/env bash
# Installs, builds and runs every test: the Release build (with CUDA kernels when nvcc is present;
# GPU tests skip without a GPU), then the CPU test suite again under AddressSanitizer and
# UndefinedBehaviorSanitizer. Set SKIP_SANITIZERS=1 to run only the first part.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=${JOBS:-$(nproc)}

echo "== Release build and tests"
# The kernels are compiled for Turing code (PTX, which the driver compiles for any newer GPU) and
# Hopper machine code only, so that a 2-core CI machine builds them in a few minutes; scripts/build.sh
# alone builds machine code for every architecture. VOXTILE_TEST_CUDA_ARCHS overrides.
BUILD_DIR=build-test scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES="${VOXTILE_TEST_CUDA_ARCHS:-75;90-real}"
(cd build-test && ctest --output-on-failure -j "$jobs")

if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== ASan/UBSan build and CPU tests"
  # -O1, as the sanitizers' documentation suggests: a third less compile time on OpenVDB-heavy files
  # (io/vdb.cpp: 222 s instead of 308 s on one core) for slightly slower tests.
  BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo scripts/build.sh -DVOXTILE_CUDA=OFF -DVOXTILE_SANITIZE=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
  export UBSAN_OPTIONS=suppressions=$PWD/tests/ubsan.supp:halt_on_error=1:print_stacktrace=1
  (cd build-asan && ctest --output-on-failure -j "$jobs")
fi
