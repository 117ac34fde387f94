#!/usr/bin/env bash
# The CPU path of the main commands under Valgrind's memcheck, on small inputs: a read of
# uninitialised memory, which AddressSanitizer does not report, fails the check. (Grids' keys,
# masks and values are left unfilled when resized, core/sparse_grid.h ValueArray: every producer
# must write all of them.) Usage: scripts/valgrind-check.sh [VOXTILE_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/voxtile}")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bunny=data/meshes/stanford_bunny.ply
run() {
  if ! valgrind -q --error-exitcode=9 "$bin" "$@" > "$out/log" 2>&1; then
    echo "valgrind-check: FAILED: voxtile $*"
    cat "$out/log"
    exit 1
  fi
  echo "valgrind-check: ok: voxtile $*"
}
run voxelize "$bunny" -r 48 -d cpu -o "$out/b.vdb"
run voxelize "$bunny" -r 48 -d cpu -t count -o "$out/c.vdb"
run voxelize "$bunny" -r 48 -d cpu -t binary,normal -o "$out/n.vdb"
run voxelize "$bunny" -r 48 -d cpu -t solid -o "$out/s.vdb"
run voxelize "$bunny" -r 48 -d cpu -t sdf -o "$out/d.vdb"
run voxelize "$bunny" -r 48 -d cpu -o "$out/b.npy"
run voxelize "$bunny" -r 48 -d cpu -o "$out/b.ply"
run info "$out/b.vdb"
run compare "$out/b.vdb" "$out/b.npy"
run mesh "$out/s.vdb" -o "$out/m.ply" -d cpu
run preview "$out/d.vdb" -o "$out/p.png" -d cpu
run points data/points/pond.0.ply -r 32 -d cpu -o "$out/p.vdb"
run csg data/csg/drilled_cube.csg --solid -r 32 -d cpu -o "$out/csg.vdb"
run voxelize data/formats/3mf/lattice.3mf -r 32 -d cpu -t solid -o "$out/l.vdb"
