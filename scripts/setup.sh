#!/usr/bin/env bash
# Installs the Debian packages voxtile builds with; skips what is installed. Idempotent.
# The CUDA toolkit (nvcc) is not a Debian package here: it is used from /usr/local/cuda when present.
set -euo pipefail
packages=(cmake ninja-build g++ libassimp-dev zlib1g-dev libdeflate-dev nlohmann-json3-dev libopenvdb-dev libblosc-dev libimath-dev libboost-iostreams-dev libtbb-dev
          libcli11-dev libgtest-dev libstb-dev libxxhash-dev libfast-float-dev libpng-dev
          chromium   # chromium: the test that opens batch --report-html in a headless browser
          valgrind)  # valgrind: scripts/valgrind-check.sh (reads of uninitialised memory)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
