#!/usr/bin/env bash
# Large-mesh GPU run (on a machine with a GPU): a generated mesh of 50M+ triangles voxelized at
# 1024^3 and 2048^3 (per-stage GPU times, median of RUNS), then the whole process with --stats.
#   scripts/bench-large.sh [BIN_DIR] [WORK_DIR]
# TUBES (default 17000) x 300 rings x 5 sides x 2 = 51M long, thin triangles.
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
tubes=${TUBES:-17000}
echo "# voxtile large-mesh run, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
t0=$(date +%s.%N)
"$vt" generate tubes --tubes "$tubes" --rings 300 --sides 5 -o "$work/large.ply"
t1=$(date +%s.%N)
echo "generated $(du -h "$work/large.ply" | cut -f1) in $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s"
"$bench" --runs "${RUNS:-3}" --warmup 1 --targets binary,count "$work/large.ply:1024,2048"
echo
"$vt" voxelize "$work/large.ply" -o "$work/large.vdb" -r 2048 --device gpu --stats
ls -l "$work/large.vdb"
