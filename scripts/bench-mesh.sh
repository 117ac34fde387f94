#!/usr/bin/env bash
# `voxtile mesh` benchmark (on a machine with a GPU): marching cubes of the sdf of a mesh signed off its
# band by its solid, on the GPU (per stage), the CPU reference (and whether the bytes match), and
# OpenVDB's volumeToMesh on the same level set in the same run; then whole-process times.
#   scripts/bench-mesh.sh [BIN_DIR] [WORK_DIR]      (DRAGON: the 100k-triangle mesh)
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
echo "# voxtile mesh benchmark, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
echo
"$bench" --mesh --runs "${RUNS:-10}" --warmup 3 --check "$dragon:512,1024" data/meshes/stanford_bunny.ply:512,1024
echo
echo "Whole process, \`voxtile mesh MESH -r N -o out.ply\`, median of 3 runs:"
echo
echo "| mesh | grid | wall s | triangles |"
echo "|---|---|---|---|"
for res in 512 1024; do
  times=()
  for i in 1 2 3; do
    t0=$(date +%s.%N)
    out=$("$vt" mesh "$dragon" -r "$res" -o "$work/mesh.ply" --stats -q)
    t1=$(date +%s.%N)
    times+=("$(awk "BEGIN{printf \"%.3f\", $t1 - $t0}")")
  done
  tris=$(echo "$out" | sed 's/.*"triangles":\([0-9]*\).*/\1/')
  echo "| $(basename "$dragon") | $res | $(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p) | $tris |"
done
