#!/usr/bin/env bash
# Where the time of a tiny job goes (run on the GPU machine from the checkout): process start and exit
# (--version), a CPU job, a GPU job (CUDA start-up), eagerly loaded kernels. scripts/bench-startup.sh [VOXTILE]
t() { local t0=$(date +%s.%N); "$@" > /dev/null 2>&1; local t1=$(date +%s.%N); awk "BEGIN{printf \"%.1f\", ($t1 - $t0) * 1000}"; }
vt=${1:-voxtile}
echo "voxtile --version: $(t $vt --version) $(t $vt --version) $(t $vt --version) ms"
echo "cube -r 8 -d cpu: $(t $vt voxelize data/formats/ply/cube_binary.ply -o /tmp/c.vdb -r 8 -d cpu) $(t $vt voxelize data/formats/ply/cube_binary.ply -o /tmp/c.vdb -r 8 -d cpu) ms"
echo "cube -r 8 -d gpu: $(t $vt voxelize data/formats/ply/cube_binary.ply -o /tmp/c.vdb -r 8 -d gpu) $(t $vt voxelize data/formats/ply/cube_binary.ply -o /tmp/c.vdb -r 8 -d gpu) ms"
echo "cube -r 8 -d gpu EAGER: $(CUDA_MODULE_LOADING=EAGER t $vt voxelize data/formats/ply/cube_binary.ply -o /tmp/c.vdb -r 8 -d gpu) ms"
$vt voxelize data/formats/ply/cube_binary.ply -o /tmp/c.vdb -r 8 -d gpu --stats -q
