#!/usr/bin/env bash
# Whole-process benchmark: how fast meshes load with each loader, against the floor of reading the
# file from the page cache, and the wall time of `voxtile voxelize` (conservative binary to .vdb)
# with its stages. The meshes are generated here by `voxtile generate` (the Stanford dragon
# subdivided, written as binary and ASCII PLY, binary and ASCII STL, OBJ, OFF, 3MF and GLB, and once with its
# triangles shuffled), plus the 69k bunny and the 100k dragon OBJ as they are.
#   scripts/bench-e2e.sh [BIN_DIR] [WORK_DIR]
# LEVELS (default 3: 6.4M triangles) subdivides the dragon; RES (default 1024) is the grid;
# REPEAT (default 3) runs per measurement, median; LOAD_ONLY=1 measures loading alone (-d cpu at
# a small grid), for machines without a GPU; DEVICE (default auto) is passed to voxelize; OLD_BIN
# (a directory with an earlier voxtile) adds that build's whole-process wall time, measured in turns;
# PAUSE (default 1) seconds between whole-process runs; TARGET (default binary) the target of the
# whole-process runs (e.g. sdf or count: .vdb files of values).
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
bunny=${BUNNY:-data/meshes/stanford_bunny.ply}
levels=${LEVELS:-3}
res=${RES:-1024}
repeat=${REPEAT:-3}
device=${DEVICE:-auto}
target=${TARGET:-binary}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
now() { date +%s.%N; }
json_field() { python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); t=d['timings_ms']; print($1)"; }

echo "# voxtile whole-process benchmark"
echo "date: $(date -u +%Y-%m-%d), commit: $commit, $(nproc) cores, $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no GPU')"
"$vt" generate scan --input "$dragon" --levels "$levels" -o "$work/scan.ply" 2>/dev/null
"$vt" generate scan --input "$work/scan.ply" --levels 0 -o "$work/scan_ascii.ply" --ascii 2>/dev/null
"$vt" generate scan --input "$work/scan.ply" --levels 0 -o "$work/scan.stl" 2>/dev/null
"$vt" generate scan --input "$dragon" --levels $((levels > 0 ? levels - 1 : 0)) -o "$work/scan_small_ascii.stl" --ascii 2>/dev/null
"$vt" generate scan --input "$work/scan.ply" --levels 0 -o "$work/scan.obj" 2>/dev/null
"$vt" generate scan --input "$work/scan.ply" --levels 0 -o "$work/scan.glb" 2>/dev/null
"$vt" generate scan --input "$work/scan.ply" --levels 0 -o "$work/scan.off" 2>/dev/null
"$vt" generate scan --input "$work/scan.ply" --levels 0 -o "$work/scan.3mf" 2>/dev/null
"$vt" generate scan --input "$work/scan.ply" --levels 0 -o "$work/scan_shuffled.ply" --shuffle 2>/dev/null
cp "$bunny" "$work/bunny.ply"
cp "$dragon" "$work/dragon.obj"
files=(bunny.ply dragon.obj scan.ply scan_shuffled.ply scan_ascii.ply scan.stl scan_small_ascii.stl scan.obj scan.off scan.3mf scan.glb)

echo
echo "Loading: MB/s of the load stage (median of $repeat; Assimp once on files over 100 MB), against reading the"
echo "file from the page cache (cat > /dev/null). Load = read + parse + the mesh checks (voxtile voxelize --stats)."
echo
echo "| file | triangles | MB | page cache MB/s | native MB/s | native ms | assimp MB/s | assimp ms | native / floor |"
echo "|---|---|---|---|---|---|---|---|---|"
for f in "${files[@]}"; do
  p=$work/$f
  mb=$(awk "BEGIN{printf \"%.1f\", $(stat -c %s "$p") / 1e6}")
  cat "$p" > /dev/null
  floor=$(for i in $(seq "$repeat"); do t0=$(now); cat "$p" > /dev/null; t1=$(now); awk "BEGIN{print $t1 - $t0}"; done | median)
  load() {  # loader -> median load ms
    local n=$repeat
    [ "$1" = assimp ] && [ "$(stat -c %s "$p")" -gt 100000000 ] && n=1
    for i in $(seq "$n"); do
      "$vt" voxelize "$p" -o "$work/load.vdb" -r 16 -d cpu --loader "$1" --stats -q | json_field "t['load']"
    done | median
  }
  tris=$("$vt" voxelize "$p" -o "$work/load.vdb" -r 16 -d cpu --stats -q | python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['triangles'])")
  nat=$(load native)
  asm=$(load assimp)
  rate() { [ "$1" = - ] && echo - || awk "BEGIN{printf \"%.0f\", $mb / ($1 / 1000)}"; }
  ratio=$([ "$nat" = - ] && echo - || awk "BEGIN{printf \"%.2f\", ($nat / 1000) / $floor}")
  printf "| %s | %s | %s | %.0f | %s | %s | %s | %.0f | %s |\n" "$f" "$tris" "$mb" "$(awk "BEGIN{print $mb / $floor}")" \
    "$(rate "$nat")" "$nat" "$(rate "$asm")" "$asm" "$ratio"
done

[ "${LOAD_ONLY:-0}" = 1 ] && exit 0
echo
echo "Whole process: \`voxtile voxelize FILE -o out.vdb -r $res -t $target --stats\` (conservative, device $device), wall time"
echo "of the process, median of $repeat, with the stages of the median run (ms): load; voxelizer_start (GPU context and"
echo "workspace, on its own thread while the mesh loads) and voxelizer_wait (what the main thread waited for it after"
echo "loading); gpu_total; write."
echo
echo "| file | wall ms | load | voxelizer_start | voxelizer_wait | upload | gpu_total | download | write | before: wall ms |"
echo "|---|---|---|---|---|---|---|---|---|---|"
# Each run starts PAUSE seconds (default 1) after the last: a GPU process's context is torn down after
# the shell got its exit code (cli/detach.h), and a process started meanwhile waits for the driver, so
# back-to-back runs time the previous run's teardown too. With OLD_BIN the two builds run in turns.
pause=${PAUSE:-1}
for f in bunny.ply dragon.obj scan.ply scan_shuffled.ply scan.obj scan.glb; do
  p=$work/$f
  rows=()
  olds=()
  for i in $(seq "$repeat"); do
    sleep "$pause"
    t0=$(now)
    js=$("$vt" voxelize "$p" -o "$work/out.vdb" -r "$res" -t "$target" -d "$device" --stats -q)
    t1=$(now)
    wall=$(awk "BEGIN{print ($t1 - $t0) * 1000}")
    rows+=("$(printf '%.1f' "$wall") $(echo "$js" | json_field "' '.join('%.1f' % t.get(k, -1) for k in ['load','voxelizer_start','voxelizer_wait','upload','gpu_total','download','write'])")")
    if [ -n "${OLD_BIN:-}" ]; then
      sleep "$pause"
      t0=$(now)
      "$OLD_BIN/voxtile" voxelize "$p" -o "$work/old.vdb" -r "$res" -t "$target" -d "$device" -q
      t1=$(now)
      olds+=("$(awk "BEGIN{printf \"%.1f\", ($t1 - $t0) * 1000}")")
    fi
  done
  med=$(printf '%s\n' "${rows[@]}" | sort -g | sed -n "$(( (repeat + 1) / 2 ))p")
  before=-
  [ -n "${OLD_BIN:-}" ] && before=$(printf '%s\n' "${olds[@]}" | median)
  echo "| $f | $(echo "$med" | tr ' ' '|' | sed 's/|/ | /g') | $before |"
done

# Batch loading alone: BATCH_JOBS copies of the 100k dragon OBJ through `voxtile batch --load-only`
# (all cores), jobs per second, and with OLD_BIN the earlier build's, in turns.
if [ "${BATCH_JOBS:-0}" -gt 0 ]; then
  mkdir -p "$work/batch"
  for i in $(seq "$BATCH_JOBS"); do ln -sf "$work/dragon.obj" "$work/batch/d$i.obj"; done
  rate() {
    local t0 t1
    t0=$(now)
    "$1/voxtile" batch "$work/batch" --out "$work/batch_out/{stem}.vdb" --load-only -q
    t1=$(now)
    awk "BEGIN{printf \"%.0f\", $BATCH_JOBS / ($t1 - $t0)}"
  }
  echo
  echo "Batch, loading alone: $BATCH_JOBS x the 100k-triangle dragon OBJ (3.4 MB), voxtile batch --load-only, jobs/s:"
  echo
  echo "| round | now | before |"
  echo "|---|---|---|"
  for r in 1 2 3; do
    n=$(rate "$bin")
    o=-
    [ -n "${OLD_BIN:-}" ] && o=$(rate "$OLD_BIN")
    echo "| $r | $n | $o |"
  done
fi
