#!/usr/bin/env bash
# `voxtile preview` benchmark (on a machine with a GPU): per mesh and grid, the scene built on the host,
# the GPU render per stage at 1024x1024 and 256x256, the PNG encoding, the CPU render (and whether the
# bytes match); then whole-process times of `voxtile preview` and of `voxelize` with and without --preview.
#   scripts/bench-preview.sh [BIN_DIR] [WORK_DIR]      (DRAGON: the 100k-triangle mesh)
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
echo "# voxtile preview benchmark, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
echo
for t in binary count "sdf"; do
  "$bench" --render --targets "$t" --runs "${RUNS:-10}" --warmup 3 --check "$dragon:1024" data/meshes/stanford_bunny.ply:1024
  echo
done
"$bench" --render --targets solid --runs "${RUNS:-10}" --warmup 3 --check "$dragon:512,1024"
echo
echo "Whole process, median of 3 runs (s):"
echo
echo "| command | wall s |"
echo "|---|---|"
median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
run3() {
  local times=()
  for i in 1 2 3; do
    t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
    times+=("$(awk "BEGIN{printf \"%.3f\", $t1 - $t0}")")
  done
  median3 "${times[@]}"
}
"$vt" voxelize "$dragon" -r 1024 -o "$work/d.vdb" -q
echo "| voxelize dragon -r 1024 -o d.vdb | $(run3 "$vt" voxelize "$dragon" -r 1024 -o "$work/d.vdb" -q) |"
echo "| voxelize dragon -r 1024 -o d.vdb --preview d.png (512x512) | $(run3 "$vt" voxelize "$dragon" -r 1024 -o "$work/d.vdb" -q --preview "$work/d.png") |"
echo "| preview d.vdb -o p.png --size 1024 (auto: the CPU for a file) | $(run3 "$vt" preview "$work/d.vdb" -o "$work/p.png" --size 1024 -q) |"
echo "| preview d.vdb -o p.png --size 1024 -d gpu | $(run3 "$vt" preview "$work/d.vdb" -o "$work/p.png" --size 1024 -q -d gpu) |"
echo "| preview dragon -r 1024 -o p.png --size 1024 (voxelized first, on the GPU) | $(run3 "$vt" preview "$dragon" -r 1024 -o "$work/p.png" --size 1024 -q) |"
echo "| preview d.vdb -o p.png --size 1024 -d cpu | $(run3 "$vt" preview "$work/d.vdb" -o "$work/p.png" --size 1024 -q -d cpu) |"
