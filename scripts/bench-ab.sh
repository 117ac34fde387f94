#!/usr/bin/env bash
# A/B benchmark of two builds on one GPU in one run: voxtile_bench of OLD_BIN and NEW_BIN take turns
# (old, new, old, new, ...) on the same generated meshes, so that a change to kernels/ is compared
# with its parent on the same machine, under the same clocks.
#   scripts/bench-ab.sh OLD_BIN NEW_BIN [WORK_DIR]   (each BIN holds voxtile_bench; NEW_BIN also voxtile)
# ROUNDS (default 2) turns each; RUNS (default 10) runs per bench call; TARGETS (default
# binary,count,distance:add) and CASES (default scan tubes room bunny) pick what is measured.
set -euo pipefail
old=$1
new=$2
work=${3:-$(mktemp -d)}
mkdir -p "$work"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
[ -f "$dragon" ] || dragon=${DRAGON_FALLBACK:-data/meshes/stanford_bunny.ply}
vt=$new/voxtile
bench_of() { if [ -x "$1/voxtile_bench" ]; then echo "$1/voxtile_bench"; else echo "$1/tests/voxtile_bench"; fi; }
echo "# A/B: $(bench_of "$old") vs $(bench_of "$new"), $(date -u +%Y-%m-%d)"
nvidia-smi -L 2>/dev/null || true
"$vt" generate scan --input "$dragon" --levels 3 -o "$work/scan.ply" >/dev/null
"$vt" generate tubes --tubes 1000 --rings 300 --sides 5 -o "$work/tubes.ply" >/dev/null
"$vt" generate room --objects 640 -o "$work/room.ply" >/dev/null
cp data/meshes/stanford_bunny.ply "$work/bunny.ply"
jobs=()
for c in ${CASES:-scan tubes room bunny}; do
  case $c in
    scan|tubes) jobs+=("$work/$c.ply:1024") ;;
    *) jobs+=("$work/$c.ply:1024,2048") ;;
  esac
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for side in old new; do
    bin=$old
    [ $side = new ] && bin=$new
    echo
    echo "## $side, round $r"
    "$(bench_of "$bin")" --runs "${RUNS:-10}" --warmup 3 --targets "${TARGETS:-binary,count,distance:add}" "${jobs[@]}"
  done
done
