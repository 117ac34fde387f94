#!/usr/bin/env bash
# GPU benchmark (run on a machine with a GPU): generates the benchmark meshes with the project's
# generator, prints per-stage GPU times (median of 10 after warm-up) for 256..2048, binary and
# count targets, then whole-process times (load + voxelize + write .vdb, median of 3).
#   scripts/bench-gpu.sh [BIN_DIR] [WORK_DIR]   (BIN_DIR holds voxtile and voxtile_bench)
# DRAGON names the scanned mesh to subdivide (default: the shared Stanford dragon, 100k triangles).
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
bunny=${BUNNY:-data/meshes/stanford_bunny.ply}
res=${RESOLUTIONS:-256,512,1024,2048}

echo "# voxtile GPU benchmark"
echo "date: $(date -u +%Y-%m-%d), commit: $commit"
nvidia-smi -L 2>/dev/null || true
"$vt" generate scan --input "$dragon" --levels 3 -o "$work/scan.ply"
"$vt" generate tubes --tubes 1000 --rings 300 --sides 5 -o "$work/tubes.ply"
"$vt" generate room --objects 640 -o "$work/room.ply"
"$vt" generate cad --objects 400 --sides 256 -o "$work/cad.ply"
cp "$bunny" "$work/bunny.ply"
echo
"$bench" --runs "${RUNS:-10}" --warmup 3 ${BENCH_FLAGS:-} "$work/scan.ply:$res" "$work/tubes.ply:$res" "$work/room.ply:$res" \
  "$work/cad.ply:$res" "$work/bunny.ply:$res"

echo
echo "Whole process (load + voxelize + write .vdb), conservative binary, median of 3 runs:"
echo
echo "| mesh | grid | wall s |"
echo "|---|---|---|"
for m in scan tubes room cad bunny; do
  for r in 1024 2048; do
    times=()
    for i in 1 2 3; do
      t0=$(date +%s.%N)
      "$vt" voxelize "$work/$m.ply" -o "$work/$m-$r.vdb" -r "$r" --device gpu -q
      t1=$(date +%s.%N)
      times+=("$(awk "BEGIN{printf \"%.3f\", $t1 - $t0}")")
    done
    med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
    echo "| $m | $r | $med |"
  done
done
