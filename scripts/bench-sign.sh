#!/usr/bin/env bash
# Sign of the sdf against OpenVDB's meshToLevelSet (issue 13), on a GPU machine: a large exactly closed
# mesh (a UV sphere of 1.96M triangles), the crossing tubes, the dragon; where the signs differ, who is
# right by the brute-force generalized winding number of the voxel centre (400 sampled voxels).
#   scripts/bench-sign.sh [BIN_DIR] [WORK_DIR]      (DRAGON: the 100k-triangle mesh)
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
echo "# sdf sign against OpenVDB, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
"$vt" generate sphere --rings 700 -o "$work/sphere.ply" -q
"$vt" generate tubes --tubes 300 --rings 200 --sides 6 -o "$work/tubes.ply" -q
echo
"$bench" --solid --targets sdf --inside winding --vdb --runs "${RUNS:-3}" --warmup 1 \
  "$work/sphere.ply:1024" "$work/tubes.ply:1024" "$dragon:1024"
