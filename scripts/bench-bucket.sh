#!/usr/bin/env bash
# A-buffer bucketing benchmark (on a machine with a GPU): per-stage GPU times (median of RUNS after
# warm-up), fragments per second, equality with the CPU, then whole-process times (load + bucket +
# write .npz). Meshes from `voxtile generate` as in bench-gpu.sh.
#   scripts/bench-bucket.sh [BIN_DIR] [WORK_DIR]
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
bunny=${BUNNY:-data/meshes/stanford_bunny.ply}
echo "# voxtile A-buffer benchmark, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
[ -f "$work/scan.ply" ] || "$vt" generate scan --input "$dragon" --levels 3 -o "$work/scan.ply"
[ -f "$work/tubes.ply" ] || "$vt" generate tubes --tubes 1000 --rings 300 --sides 5 -o "$work/tubes.ply"
[ -f "$work/room.ply" ] || "$vt" generate room --objects 640 -o "$work/room.ply"
cp "$bunny" "$work/bunny.ply"
for attrs in "" bary; do
  echo
  "$bench" --bucket --attrs "$attrs" --runs "${RUNS:-10}" --warmup 3 ${BENCH_FLAGS:-} "$work/scan.ply:512,1024" \
    "$work/tubes.ply:512,1024" "$work/room.ply:512,1024" "$work/bunny.ply:512,1024"
done
echo
echo "Whole process (load + bucket + write .npz with barycentrics), median of 3 runs:"
echo
echo "| mesh | grid | wall s |"
echo "|---|---|---|"
for m in scan tubes room bunny; do
  times=()
  for i in 1 2 3; do
    t0=$(date +%s.%N)
    "$vt" bucket "$work/$m.ply" -o "$work/$m.npz" -r 1024 --device gpu -q
    t1=$(date +%s.%N)
    times+=("$(awk "BEGIN{printf \"%.3f\", $t1 - $t0}")")
  done
  echo "| $m | 1024 | $(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p) |"
done
