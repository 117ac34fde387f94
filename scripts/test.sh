#!/usr/bin/env bash
# Installs, builds and runs every test: the Release build (with CUDA kernels when nvcc is present;
# GPU tests skip without a GPU), the main commands' CPU path under Valgrind (scripts/valgrind-check.sh),
# then the CPU test suite again under AddressSanitizer and UndefinedBehaviorSanitizer. Set
# SKIP_SANITIZERS=1 to run only the first part.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=${JOBS:-$(nproc)}

started=$SECONDS
stage() {  # prints how long the last stage took, so that CI logs show where the time goes
  echo "== $1 ($((SECONDS - started)) s so far)"
}

stage "Release build"
# The kernels are compiled for the GPU of this machine when it has one, else (CI: nvcc, no GPU) for
# Hopper machine code only, which checks that they compile and fit (ptxas) in half the time of two
# architectures; scripts/build.sh alone builds machine code for every architecture.
# VOXTILE_TEST_CUDA_ARCHS overrides.
archs=${VOXTILE_TEST_CUDA_ARCHS:-}
if [ -z "$archs" ]; then
  if nvidia-smi -L >/dev/null 2>&1; then archs=native; else archs=90-real; fi
fi
# Both builds are unity builds (CMakeLists.txt VOXTILE_UNITY): about half the CPU time of a build
# file by file, which is what a fresh clone on a 2-core CI machine spends most of its time on.
BUILD_DIR=build-test scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES="$archs" -DVOXTILE_UNITY=ON
stage "Release tests"
(cd build-test && ctest --output-on-failure -j "$jobs")
stage "Valgrind check"
scripts/valgrind-check.sh build-test/voxtile

if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "ASan/UBSan build"
  # -O1, as the sanitizers' documentation suggests, and line tables only (-g1: the reports keep their
  # file:line stacks) instead of full debug information: io/vdb.cpp compiles in 180 s instead of 233 s,
  # cli/batch/runner.cpp in 23 s instead of 34 s (one core).
  BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo scripts/build.sh -DVOXTILE_CUDA=OFF -DVOXTILE_SANITIZE=ON \
    -DVOXTILE_UNITY=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
  export UBSAN_OPTIONS=suppressions=$PWD/tests/ubsan.supp:halt_on_error=1:print_stacktrace=1
  stage "ASan/UBSan CPU tests"
  # A test that runs past its 300 s limit (tests/CMakeLists.txt; the slowest takes 50 s here) is
  # stopped and run again, at most twice: GCC 12's AddressSanitizer allocator is not fork-safe, and
  # a reader process forked while another thread (OpenVDB's log4cplus pool, TBB) holds its lock
  # waits forever (seen in the suite; io/mesh_reader.cpp now waits for the other threads to sleep
  # before it forks, which made it pass 24 of 24 times under load). Release builds use glibc's
  # malloc, which is fork-safe.
  (cd build-asan && ctest --output-on-failure -j "$jobs" --repeat after-timeout:2)
fi
stage "all tests passed"
