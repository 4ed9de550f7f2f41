#!/bin/sh
# llvm-cov HTML report of the core lines reached by the fuzz corpora.
#   cmake --preset coverage && cmake --build build-coverage -j2 --target coverage-report
# or directly: VFAT_BUILD=build-coverage sh harnesses/coverage.sh [TARGET=DIR ...]
# Runs every target once over corpus/<target>/ (+ corpus/regressions/<target>/
# and any TARGET=DIR given, e.g. fuzz_ops=/tmp/campaign/corpus), merges the
# profiles and writes $VFAT_BUILD/coverage/index.html and summary.txt.
set -eu
S=${VFAT_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
B=${VFAT_BUILD:-$S/build-coverage}
PROFDATA=$(command -v llvm-profdata-14 || command -v llvm-profdata)
COV=$(command -v llvm-cov-14 || command -v llvm-cov)
O=$B/coverage
rm -rf "$O"
mkdir -p "$O/profraw"
for t in fuzz_ops fuzz_image fuzz_names; do
  dirs="$S/corpus/$t"
  [ -d "$S/corpus/regressions/$t" ] && dirs="$dirs $S/corpus/regressions/$t"
  for a in "$@"; do
    case "$a" in "$t="*) dirs="$dirs ${a#*=}" ;; esac
  done
  # shellcheck disable=SC2086
  LLVM_PROFILE_FILE="$O/profraw/$t-%p.profraw" "$B/fuzz/$t" -runs=0 $dirs >"$O/$t.log" 2>&1 ||
    { echo "coverage.sh: $t failed on its corpus, see $O/$t.log" >&2; exit 1; }
done
"$PROFDATA" merge -sparse "$O"/profraw/*.profraw -o "$O/all.profdata"
"$COV" show -format=html -output-dir="$O" -instr-profile="$O/all.profdata" \
  "$B/fuzz/fuzz_ops" -object "$B/fuzz/fuzz_image" -object "$B/fuzz/fuzz_names" "$S/core/src"
"$COV" report -instr-profile="$O/all.profdata" \
  "$B/fuzz/fuzz_ops" -object "$B/fuzz/fuzz_image" -object "$B/fuzz/fuzz_names" "$S/core/src" >"$O/summary.txt"
tail -1 "$O/summary.txt"
echo "coverage.sh: report in $O/index.html"
