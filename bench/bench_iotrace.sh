#!/bin/sh
# The I/O-bounds oracle's preload library: runs/s of one command with and
# without it (docs/iobounds.md).
#   bench/bench_iotrace.sh N IMAGE COMMAND...   e.g.
#   bench/bench_iotrace.sh 40 v.img fsck.fat -n v.img
set -eu
[ $# -ge 3 ] || { echo "usage: $0 N IMAGE COMMAND..." >&2; exit 2; }
n=$1 img=$2
shift 2
lib=${VFAT_BUILD:-$(dirname "$0")/../build}/libvfz_iotrace.so
[ -f "$lib" ] || { echo "error: $lib not built (cmake --build --preset default)" >&2; exit 2; }
trace=$(mktemp)
loop() { i=0; while [ $i -lt "$n" ]; do "$@" >/dev/null 2>&1 || true; i=$((i + 1)); done; }
t0=$(date +%s.%N); loop "$@"; t1=$(date +%s.%N)
t2=$(date +%s.%N)
VFZ_IOTRACE_FILE=$trace VFZ_IOTRACE_IMAGE=$img VFZ_IOTRACE_SIZE=$(stat -c %s "$img") \
	VFZ_IOTRACE_OP=bench LD_PRELOAD=$lib loop "$@"
t3=$(date +%s.%N)
lines=$(wc -l < "$trace")
rm -f "$trace"
echo "$* (load $(cut -d' ' -f1 /proc/loadavg)): plain $(echo "$n / ($t1 - $t0)" | bc -l | cut -c1-6) runs/s," \
	"traced $(echo "$n / ($t3 - $t2)" | bc -l | cut -c1-6) runs/s, $((lines / n)) trace lines a run"
