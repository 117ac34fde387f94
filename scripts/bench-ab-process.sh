#!/usr/bin/env bash
# Whole-process wall time of two builds in turns (A/B on one machine): BIN_A and BIN_B are directories
# with a voxtile each (and, for builds with the OpenVDB module, its libvoxtile_vdb.so). Median of
# RUNS (default 9) alternating runs per case, ms.
#   scripts/bench-ab-process.sh BIN_A BIN_B [WORK_DIR]      (DRAGON: the 100k-triangle mesh)
set -euo pipefail
a=$1; b=$2; work=${3:-$(mktemp -d)}; mkdir -p "$work"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
runs=${RUNS:-9}
"$b/voxtile" generate scan --input "$dragon" --levels 3 -o "$work/scan.ply" -q
ms() { local t0=$(date +%s%N); "$@" > /dev/null 2>&1; local t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }
echo "| case | A ($a) | B ($b) |"
echo "|---|---|---|"
case_row() {
  local name=$1; shift
  local ta=() tb=()
  for i in $(seq "$runs"); do
    ta+=("$(ms "$a/voxtile" "$@")")
    tb+=("$(ms "$b/voxtile" "$@")")
  done
  echo "| $name | $(printf '%s\n' "${ta[@]}" | med) | $(printf '%s\n' "${tb[@]}" | med) |"
}
case_row "--version" --version
case_row "cube -r 8 -d cpu -o .vdb" voxelize data/formats/ply/cube_binary.ply -o "$work/c.vdb" -r 8 -d cpu
case_row "cube -r 8 -d cpu -o .ply" voxelize data/formats/ply/cube_binary.ply -o "$work/c.ply" -r 8 -d cpu
case_row "bunny -r 1024 -o .vdb (GPU)" voxelize data/meshes/stanford_bunny.ply -o "$work/b.vdb" -r 1024
case_row "dragon -r 1024 -o .vdb (GPU)" voxelize "$dragon" -o "$work/d.vdb" -r 1024
case_row "6.4M PLY -r 1024 -o .vdb (GPU)" voxelize "$work/scan.ply" -o "$work/s.vdb" -r 1024
