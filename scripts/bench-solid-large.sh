#!/usr/bin/env bash
# Large solids (issue 13, "scale and memory"), on a GPU machine: a closed 102k-triangle UV sphere and
# the 100k dragon as solids from 1024^3 to 8192^3, the interior held as runs of full bricks (tiles in
# .vdb). Per-stage GPU times (median of RUNS; = CPU checked up to 2048^3), then whole processes to
# .vdb at 2048^3 to 8192^3 with their peak resident memory, file size and tile/leaf counts.
#   scripts/bench-solid-large.sh [BIN_DIR] [WORK_DIR]      (DRAGON: the 100k-triangle mesh)
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
echo "# large solids, $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
"$vt" generate sphere --rings 160 -o "$work/sphere.ply" -q
for inside in ${INSIDE-parity winding}; do  # INSIDE= (empty): the process table only
  echo
  "$bench" --solid --targets solid --inside "$inside" --runs "${RUNS:-5}" --warmup 1 --check \
    "$work/sphere.ply:1024,2048" "$dragon:1024,2048"
  echo
  "$bench" --solid --targets solid --inside "$inside" --runs "${RUNS:-5}" --warmup 1 \
    "$work/sphere.ply:4096,8192" "$dragon:4096,8192"
done
echo
echo '| mesh | grid | wall s | peak RSS MB | .vdb MB | info |'
echo '|---|---|---|---|---|---|'
for r in 2048 4096 8192; do
  for m in "$work/sphere.ply" "$dragon"; do
    out="$work/solid_$r.vdb"
    start=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
      VOXTILE_DETACH=never /usr/bin/time -f "%M" -o "$work/rss" "$vt" voxelize "$m" -o "$out" -r "$r" -t solid --inside parity --device gpu -q
      rss=$(( $(cat "$work/rss") / 1024 ))
    else
      "$vt" voxelize "$m" -o "$out" -r "$r" -t solid --inside parity --device gpu -q
      rss=-
    fi
    end=$(date +%s.%N)
    size=$(( $(stat -c %s "$out") >> 20 ))
    info=$("$vt" info "$out" 2>&1 | tr '\n' ' ' | cut -c1-200)
    echo "| $(basename "$m") | $r^3 | $(awk "BEGIN{printf \"%.2f\", $end - $start}") | $rss | $size | $info |"
  done
done
