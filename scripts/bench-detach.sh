#!/usr/bin/env bash
# Whole-process wall time with and without the detached parent (cli/detach.h), on a GPU machine:
# a 12-triangle cube (start-up bound) and the bunny and dragon at 1024^3, GPU. Median of 5 runs, ms.
#   scripts/bench-detach.sh [BIN_DIR] [WORK_DIR]      (DRAGON: the 100k-triangle mesh)
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
echo "# detached parent: whole-process wall time, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
ms() { local t0=$(date +%s%N); "$@" > /dev/null 2>&1; local t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
median5() {
  local v=()
  for i in 1 2 3 4 5; do v+=("$(ms "$@")"); done
  printf '%s\n' "${v[@]}" | sort -n | sed -n 3p
}
echo
echo "| job | VOXTILE_DETACH=never | auto (detached) | saved |"
echo "|---|---|---|---|"
row() {
  local name=$1; shift
  local a b
  a=$(VOXTILE_DETACH=never median5 "$@")
  b=$(VOXTILE_DETACH=auto median5 "$@")
  echo "| $name | $a | $b | $((a - b)) |"
}
row "--version" "$vt" --version
row "cube -r 8 -d cpu" "$vt" voxelize data/formats/ply/cube_binary.ply -o "$work/c.vdb" -r 8 -d cpu
row "cube -r 8 (GPU)" "$vt" voxelize data/formats/ply/cube_binary.ply -o "$work/c.vdb" -r 8
row "bunny -r 1024 (GPU)" "$vt" voxelize data/meshes/stanford_bunny.ply -o "$work/b.vdb" -r 1024
row "dragon -r 1024 (GPU)" "$vt" voxelize "$dragon" -o "$work/d.vdb" -r 1024
row "bunny -r 1024 --stats piped to cat (GPU)" bash -c "\"$vt\" voxelize data/meshes/stanford_bunny.ply -o $work/b.vdb -r 1024 --stats | cat"
row "preview bunny -r 512 (GPU)" "$vt" preview data/meshes/stanford_bunny.ply -o "$work/b.png" -r 512
