#!/usr/bin/env bash
# `--device auto` on small and medium jobs: the whole process of `voxtile voxelize` (conservative
# binary to .vdb, and solid and sdf targets: a case MESH:RES[:TARGET]) under auto, where a job the CPU finishes before the GPU has started runs on the
# CPU (cli/job.h VoxelizerStart), against `-d gpu` (what auto did before), in turns; with the
# device auto chose, the CPU estimate (-v) and the stages (--stats), and the two files compared.
#   scripts/bench-auto.sh [BIN_DIR] [WORK_DIR]
# REPEAT (default 5) runs per measurement, median. The meshes: the bunny, the 100k dragon, Sponza's
# columns (../shared/data; DRAGON= and SPONZA= elsewhere), and generated tubes, CAD parts, a room
# and the dragon subdivided once and twice (400k and 1.6M triangles) and three times (6.4M).
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
nvidia-smi -L > /dev/null 2>&1 || { echo "bench-auto.sh: needs a GPU (it compares auto with -d gpu)" >&2; exit 1; }
dragon=${DRAGON:-../shared/data/meshes/stanford_dragon_100k.obj}
sponza=${SPONZA:-../shared/data/meshes/crytek_sponza_columns_shrubbery.obj}
bunny=${BUNNY:-data/meshes/stanford_bunny.ply}
repeat=${REPEAT:-5}
cp "$bunny" "$work/bunny.ply"
cp "$dragon" "$work/dragon.obj"
cp "$sponza" "$work/sponza.obj"
"$vt" generate tubes --tubes 100 --rings 100 -o "$work/tubes.ply" -q
"$vt" generate cad --objects 40 -o "$work/cad.ply" -q
"$vt" generate cad --objects 400 --sides 256 -o "$work/cad307k.ply" -q
"$vt" generate room --objects 50 -o "$work/room.ply" -q
for l in 1 2 3; do "$vt" generate scan --input "$work/dragon.obj" --levels $l -o "$work/scan$l.ply" -q; done

echo "# voxtile --device auto: small jobs on the CPU while the GPU starts"
echo "date: $(date -u +%Y-%m-%d), commit: $commit, $(nproc) cores, $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no GPU')"
echo
echo "| mesh | triangles | grid | target | auto ms | -d gpu ms | gpu / auto | auto chose | CPU estimate ms | CPU stages ms | same file |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
now() { date +%s.%N; }
run() {  # file res device target: prints "wall device estimate cpu_stages triangles"
  local t0 t1 s
  t0=$(now)
  s=$("$vt" voxelize "$work/$1" -o "$work/$3.vdb" -r "$2" -d "$3" -t "$4" --stats -v 2>&1)
  t1=$(now)
  S="$s" python3 - "$t0" "$t1" <<'PY'
import json, os, re, sys
s = os.environ['S']
d = json.loads([l for l in s.splitlines() if l.startswith('{')][0])
t = d['timings_ms']
m = re.search(r'(?:estimated|on the CPU:) ([0-9]+) ms', s)
stages = sum(t.get(k, 0) for k in ('transform', 'bin', 'raster', 'assemble', 'inside', 'band', 'sdf_sign')) if d['device'] == 'cpu' else 0
print('%.1f %s %s %.1f %d' % ((float(sys.argv[2]) - float(sys.argv[1])) * 1000, d['device'].replace(' ', '_'),
                              m.group(1) if m else '-', stages, d['triangles']))
PY
}
for c in bunny.ply:64 bunny.ply:256 bunny.ply:1024 bunny.ply:2048 dragon.obj:256 dragon.obj:1024 dragon.obj:2048 \
         sponza.obj:256 sponza.obj:1024 tubes.ply:256 tubes.ply:1024 cad.ply:256 cad.ply:1024 cad307k.ply:256 \
         cad307k.ply:1024 room.ply:512 scan1.ply:256 scan1.ply:1024 scan2.ply:256 scan2.ply:1024 scan3.ply:1024 \
         dragon.obj:128:sdf dragon.obj:256:sdf dragon.obj:512:sdf bunny.ply:128:sdf bunny.ply:256:sdf \
         dragon.obj:256:solid dragon.obj:1024:solid bunny.ply:256:solid bunny.ply:512:solid scan1.ply:256:sdf; do
  IFS=: read -r f r t <<< "$c"
  t=${t:-binary}
  a=() g=()
  for ((i = 0; i < repeat; i++)); do
    read -r wa dev est st tris < <(run "$f" "$r" auto "$t")
    read -r wg _ _ _ _ < <(run "$f" "$r" gpu "$t")
    a+=("$wa") g+=("$wg")
  done
  ma=$(printf '%s\n' "${a[@]}" | median) mg=$(printf '%s\n' "${g[@]}" | median)
  same=$(cmp -s "$work/auto.vdb" "$work/gpu.vdb" && echo yes || echo NO)
  echo "| $f | $tris | $r^3 | $t | $ma | $mg | $(awk "BEGIN{printf \"%.2f\", $mg / $ma}") | ${dev//_/ } | $est | $([ "$dev" = cpu ] && echo "$st" || echo -) | $same |"
done
