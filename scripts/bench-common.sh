# Sourced by the bench-*.sh scripts: BIN_DIR (voxtile, voxtile_bench) and WORK_DIR from $1 and $2.
bin=${1:-build}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
vt=$bin/voxtile
bench=$bin/voxtile_bench
[ -x "$bench" ] || bench=$bin/tests/voxtile_bench
commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
