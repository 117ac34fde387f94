#!/usr/bin/env bash
# CSG / compaction / points benchmark (on a machine with a GPU): the seed's CSG step (10M persisted
# samples, 256 spheres, 150K new samples) per phase and per scan method against the memory-bandwidth
# floor; points -> voxels on a 100M-point generated cloud; the CSG solid; then whole-process times.
#   scripts/bench-points.sh [BIN_DIR] [WORK_DIR]
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
bp="$bin/tests/voxtile_bench_points"
[ -x "$bp" ] || bp="$bin/voxtile_bench_points"
echo "# voxtile CSG / points benchmark, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
echo
"$bp" csg --runs "${RUNS:-20}"
echo
"$bp" bin --runs 5 --points "${POINTS:-100000000}" ${CHECK:+--check}
echo
"$bp" solid --runs 5 --check data/csg/drilled_cube.csg:256,1024 data/csg/gear.csg:256,1024
echo
echo "Whole process (parse + sample + GPU + write .ply), median of 3 runs:"
echo
echo "| script | spacing | points | wall s |"
echo "|---|---|---|---|"
for s in drilled_cube gear; do
  times=()
  for i in 1 2 3; do
    t0=$(date +%s.%N)
    out=$("$vt" csg "data/csg/$s.csg" -o "$work/$s.ply" --spacing 0.002 --device gpu -q --stats)
    t1=$(date +%s.%N)
    times+=("$(awk "BEGIN{printf \"%.3f\", $t1 - $t0}")")
  done
  pts=$(echo "$out" | sed 's/.*"points":\([0-9]*\).*/\1/')
  echo "| $s | 0.002 | $pts | $(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p) |"
done
echo
echo "LAS whole process: a 20M-point LAS (surface samples of 1000 generated tubes, 3M triangles) read,"
echo "binned on the GPU (count, colour-less: intensity and class are zero, so not kept) and written; median of 3 runs:"
echo
"$vt" generate tubes -o "$work/scan.ply" -q
"$vt" points "$work/scan.ply" -o "$work/scan.las" --count "${LAS_POINTS:-20000000}" -q
echo "| command | LAS MB | wall s | load ms | bin ms | write ms |"
echo "|---|---|---|---|---|---|"
mb=$(( $(stat -c %s "$work/scan.las") / 1000000 ))
for out in vdb las; do
  times=()
  for i in 1 2 3; do
    t0=$(date +%s.%N)
    stats=$("$vt" points "$work/scan.las" -o "$work/down.$out" -r 1024 --device gpu -q --stats)
    t1=$(date +%s.%N)
    times+=("$(awk "BEGIN{printf \"%.3f\", $t1 - $t0}")")
  done
  ms() { echo "$stats" | sed "s/.*\"$1\":\([0-9.]*\).*/\1/"; }
  echo "| points scan.las -o down.$out -r 1024 | $mb | $(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p) | $(ms load) | $(ms bin) | $(ms write) |"
done
