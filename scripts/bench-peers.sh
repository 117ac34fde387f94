#!/usr/bin/env bash
# Issue 14's cases against the best public GPU voxelizer (run on a GPU machine): conservative binary,
# GPU total (median of 10 after 3 warm-up runs, downloads excluded) per mesh, in file order, with its
# triangles shuffled (fixed seed) and, for subdivided meshes, children listed quarter by quarter; and
# "x best peer" against the peer figures the issue measured on an H200 (one thread per triangle with
# global atomics, or NanoVDB's MeshToGrid, whichever was faster).
#   scripts/bench-peers.sh [BIN_DIR] [WORK_DIR]      (DRAGON: the 100k-triangle mesh; ORDER: the coarse
#   raster's triangle order, auto (default: the mesh's), mesh or morton, as voxtile_bench --order; KERNEL: the
#   fine raster's kernel, rows, spread, ranges or auto, as voxtile_bench --fine-kernel)
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
bunny=${BUNNY:-data/meshes/stanford_bunny.ply}
echo "# voxtile against the best peer (issue 14 cases), $(date -u +%Y-%m-%d), commit $commit"
nvidia-smi -L 2>/dev/null || true
# REUSE=1: keep meshes already generated in WORK_DIR
g() {
  [ -n "${REUSE:-}" ] && [ -s "${@: -1}" ] && return 0
  "$vt" generate "$@" -q
}
# tubes: 2500 tubes of 6 sides, radius 0.004, 100 segments: 3M long thin triangles. The issue's lie along
# random curves in a unit ball, of a length it does not give: here 2 (the ball's diameter; segments ~10 x 2
# voxels at 1024^3), and the generator's closed curves in [-1,1]^3 (about 10 long: ~50 x 2 voxels)
g tubes --tubes 2500 --rings 100 --sides 6 --radius 0.004 --length 2 -o "$work/tubes.ply"
g tubes --tubes 2500 --rings 100 --sides 6 --radius 0.004 --length 2 --shuffle -o "$work/tubes_shuffled.ply"
g tubes --tubes 2500 --rings 100 --sides 6 --radius 0.004 -o "$work/tubes10.ply"
g scan --input "$bunny" --levels 0 -o "$work/bunny.ply"
g scan --input "$bunny" --levels 0 --shuffle -o "$work/bunny_shuffled.ply"
g scan --input "$dragon" --levels 0 -o "$work/dragon.ply"
g scan --input "$dragon" --levels 0 --shuffle -o "$work/dragon_shuffled.ply"
for l in 2 3; do
  g scan --input "$dragon" --levels $l -o "$work/dragon$l.ply"
  g scan --input "$dragon" --levels $l --shuffle -o "$work/dragon${l}_shuffled.ply"
  g scan --input "$dragon" --levels $l --order quarters -o "$work/dragon${l}_quarters.ply"
done
g room --objects 640 -o "$work/room.ply"
g room --objects 640 --shuffle -o "$work/room_shuffled.ply"
g cad --objects 400 --sides 256 -o "$work/cad.ply"
g cad --objects 400 --sides 256 --shuffle -o "$work/cad_shuffled.ply"
# case | file | resolution | best peer ms (issue 14)
cases=(
  "tubes 3M, 2 long|tubes|1024|15.2"
  "tubes 3M, closed ~10 long (not the issue's)|tubes10|1024|15.2"
  "bunny 69k|bunny|2048|8.9"
  "dragon 100k|dragon|1024|3.6"
  "dragon 1.6M (subdivided)|dragon2|1024|10.0"
  "dragon 6.4M (subdivided)|dragon3|1024|22.1"
  "room (here 307k: walls + 640 spheres)|room|2048|13.6"
  "CAD slivers 307k (400 parts of 256 sides; no peer measured)|cad|1024|"
)
echo
echo "| case | order | grid | visiting order | Morton sort | coarse | fine | GPU total ms | best peer ms | x best peer |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  IFS='|' read -r name file res peer <<< "$c"
  for order in "" _shuffled _quarters; do
    [ -f "$work/$file$order.ply" ] || continue
    row=$("$bench" --targets binary --order "${ORDER:-auto}" ${KERNEL:+--fine-kernel "$KERNEL"} --runs "${RUNS:-10}" --warmup 3 "$work/$file$order.ply:$res" | grep '^| ' | tail -1)
    # | mesh | triangles | grid | target | transform | order | coarse | sort | tiles | fine | merge | GPU total | ...
    f() { echo "$row" | awk -F'|' -v k="$1" '{gsub(/ /,"",$k); print $k}'; }
    grid=$(f 4); sort=$(f 7); coarse=$(f 8); fine=$(f 11); total=$(f 13); dis=$(echo "$row" | awk -F'|' '{print $19}')
    x=-
    [ -n "$peer" ] && x=$(awk "BEGIN{printf \"%.1fx\", $peer / $total}")
    label=${order#_}
    [ -n "$label" ] || label=file
    echo "| $name | $label | $grid |$dis| $sort | $coarse | $fine | $total | ${peer:--} | $x |"
  done
done
