#!/usr/bin/env bash
# A/B builds of one kernel source: compiles it with extra flags (or from another file) into a copy of
# the kernels library and links a copy of voxtile_bench against it, leaving the build tree untouched.
#
#   scripts/kernel-variant.sh BUILD_DIR NAME "FLAGS" [SOURCE] [KERNEL_FILE]
#     BUILD_DIR    a configured Ninja build (e.g. build)
#     NAME         the variant: writes BUILD_DIR/variants/voxtile_bench_NAME
#     FLAGS        extra nvcc flags, e.g. "-DVT_SOMETHING=2 -Xptxas -v" ("" for none)
#     SOURCE       the file to compile instead of the tree's (default: the tree's KERNEL_FILE)
#     KERNEL_FILE  the tree's kernel source (default: kernels/voxelize/fine.cu, the binary target's fine
#                  raster; each value target's is fine_<target>.cu, all instantiating the kernel
#                  template of fine.cuh: flags reach the file's own target only, and a SOURCE standing
#                  for fine.cu that changes the template includes its own copy of fine.cuh)
#
# Do not compile an object by hand and then run ninja: ninja finds the object's dependency record
# stale and compiles it again without the flags, so every "variant" is the same binary (this is how
# two earlier A/B comparisons of the fine raster came out equal; see
# scripts/bench-results/lines-h200-2026-11-25.md). A variant whose flags change the code differs in
# size from the tree's build (without flags it differs only in a few bytes); add "-Xptxas -v" to see
# its registers and spills.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '5,10p' "$0"; exit 2; }
build=$(cd "$1" && pwd) name=$2 flags=$3
kernel=${5:-kernels/voxelize/fine.cu}
src=${4:-}
obj="CMakeFiles/voxtile_kernels.dir/$kernel.o"
cd "$build"
ninja tests/voxtile_bench > /dev/null
out="$build/variants/$name"
rm -rf "$out" && mkdir -p "$out"
compile=$(ninja -t commands "$obj" | tail -1)
compile=$(sed -e "s# -MD -MT [^ ]* -MF [^ ]*##" -e "s# -o $obj# -o $out/$(basename "$obj")#" <<< "$compile")
[ -n "$src" ] && compile=$(sed "s# -c [^ ]*$kernel# -c $(realpath "$src")#" <<< "$compile")
eval "$compile $flags"
cp libvoxtile_kernels.a "$out/libvoxtile_kernels.a"
ar r "$out/libvoxtile_kernels.a" "$out/$(basename "$obj")" 2> /dev/null
link=$(ninja -t commands tests/voxtile_bench | tail -1)
link=$(sed -e "s# libvoxtile_kernels.a # $out/libvoxtile_kernels.a #g" \
           -e "s# -o tests/voxtile_bench # -o $build/variants/voxtile_bench_$name #" <<< "$link")
grep -q "$out/libvoxtile_kernels.a" <<< "$link" || { echo "kernel-variant: the kernels library is not in the link line" >&2; exit 1; }
eval "$link"
ls -l "$build/variants/voxtile_bench_$name" "$build/tests/voxtile_bench" | awk '{print $5, $NF}'
