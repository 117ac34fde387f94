#!/usr/bin/env bash
# Solid and sdf on every kind of mesh (issue 14's question asked of the inside test and the band), on
# a GPU machine: 1M long thin triangles (closed tubes), a 307k-triangle CAD assembly (slivers up to
# 800 voxels long at 1024^3), the 100k dragon and the bunny, at 256^3 and 1024^3 under `winding`;
# per-stage GPU times (median of RUNS), = CPU checked at 256^3 on the thin kinds, then whole
# processes to .vdb at 1024^3.
#   scripts/bench-solid-kinds.sh [BIN_DIR] [WORK_DIR]      (DRAGON, BUNNY: the scanned meshes)
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
bunny=${BUNNY:-data/meshes/stanford_bunny.ply}
echo "# solid and sdf on kinds of mesh, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
"$vt" generate tubes --tubes 1000 --rings 100 --sides 5 -o "$work/tubes1m.ply" -q
"$vt" generate cad --objects 400 --sides 256 -o "$work/cad.ply" -q
echo
"$bench" --solid --targets sdf,solid --inside winding --runs "${RUNS:-5}" --warmup 1 \
  "$work/tubes1m.ply:256,1024" "$dragon:256,1024" "$bunny:256,1024" "$work/cad.ply:256"
echo
"$bench" --solid --targets sdf --inside winding --runs 3 --warmup 1 --check "$work/tubes1m.ply:256" "$work/cad.ply:256"
echo
echo '| mesh | target | whole process at 1024^3, ms |'
echo '|---|---|---|'
for m in tubes1m cad; do
  for t in sdf solid; do
    ms=$("$vt" voxelize "$work/$m.ply" -t "$t" -r 1024 -d gpu -o "$work/out.vdb" --stats 2>&1 |
      grep -o '"total":[0-9.]*' | cut -d: -f2)
    echo "| $m | $t | $ms |"
  done
done
