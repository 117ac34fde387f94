#!/usr/bin/env bash
# Batch throughput (on a machine with a GPU): COPIES (default 1000) jobs cycling over the shared
# meshes of 10k-200k triangles (each job its own file: a hard link, so every input is read), at
# 256^3 and 1024^3. Prints jobs/s of loading alone (--load-only) and of the whole batch with the
# same threads, the CPU time of each run (user + system, reader processes included), and where the
# time goes (summed per-job stage times from the report).
#   scripts/bench-batch.sh [BIN_DIR] [WORK_DIR]    (REPEAT=N runs the four measurements N times)
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"
shared=${SHARED:-../shared/data/meshes}
copies=${COPIES:-1000}
threads=${THREADS:-$(nproc)}
echo "# voxtile batch benchmark, $(date -u +%Y-%m-%d), commit $commit, $threads CPU threads"
nvidia-smi -L 2>/dev/null || true
mkdir -p "$work/in" "$work/out"
meshes=("$shared"/stanford_bunny.ply "$shared"/stanford_dragon_100k.obj "$shared"/mountain_open_terrain.obj \
        "$shared"/crytek_sponza_columns_shrubbery.obj "$shared"/redwood_scan_frag_115_colored.ply)
for m in "${meshes[@]}"; do cp "$m" "$work/in/src_$(basename "$m")"; done
for ((i = 0; i < copies; i++)); do
  m=${meshes[$((i % ${#meshes[@]}))]}
  ln -f "$work/in/src_$(basename "$m")" "$work/in/job$(printf %04d $i)_$(basename "$m")"
done
rm -f "$work"/in/src_*
summary() {  # jobs/s, CPU seconds and summed stage times from a report
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cpu = float(sys.argv[2])
c = r.get("cpu_seconds", {})
jobs = [j for j in r["jobs"] if j["status"] == "ok"]
s = {k: sum(j.get("ms", {}).get(k, 0) for j in jobs) / 1000 for k in ("load", "voxelize", "write")}
g = sum(j.get("voxelize_stages_ms", {}).get("gpu_total", 0) for j in jobs) / 1000
print(f"| {len(jobs)} | {r['seconds']:.2f} | {len(jobs) / r['seconds']:.1f} | {cpu:.1f} | {c.get('process', 0):.1f} | "
      f"{c.get('readers', 0):.1f} | {s['load']:.1f} | {s['voxelize']:.1f} | {g:.1f} | {s['write']:.1f} |")
PY
}
cpu_seconds() {  # runs a command; prints its user + system CPU seconds (children included)
  local TIMEFORMAT='%U %S' t
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
  awk '{print $1 + $2}' <<< "$t"
}
echo
echo "| run | jobs ok | wall s | jobs/s | CPU s | of which process | of which readers | sum load s | sum voxelize s | of which GPU s | sum write s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for ((rep = 0; rep < ${REPEAT:-1}; rep++)); do for r in 256 1024; do
  c=$(cpu_seconds "$vt" batch "$work/in" --out "$work/out/{stem}_{res}.vdb" -r "$r" -j "$threads" --load-only -q \
      --report "$work/l.json")
  echo -n "| load only, $r "; summary "$work/l.json" "$c"
  c=$(cpu_seconds "$vt" batch "$work/in" --out "$work/out/{stem}_{res}.vdb" -r "$r" -j "$threads" \
      --devices "${DEVICES:-auto}" -q --report "$work/b.json")
  echo -n "| batch, $r "; summary "$work/b.json" "$c"
  rm -f "$work"/out/*
done; done
