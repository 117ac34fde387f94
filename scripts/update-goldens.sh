#!/usr/bin/env bash
# Regenerates tests/golden/cpu.txt from the CPU reference. Review the diff before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
VOXTILE_UPDATE_GOLDENS=1 build/tests/voxtile_tests --gtest_filter='Golden.*'
git diff --stat tests/golden || true
