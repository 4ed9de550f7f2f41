#!/bin/bash -eu
# Build the fuzz targets the way OSS-Fuzz / ClusterFuzzLite call it:
#   CC CFLAGS (sanitizer + -fsanitize=fuzzer-no-link), optional CXX
#   CXXFLAGS, LIB_FUZZING_ENGINE (e.g. -fsanitize=fuzzer), OUT.
# Copies into $OUT: each target, its .options, its dictionary and
# <target>_seed_corpus.zip. Runs from any directory; SRC_DIR overrides
# the checkout (default: the directory above this script).
SRC_DIR=${SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
: "${OUT:?OUT must name the output directory}"
: "${LIB_FUZZING_ENGINE:?LIB_FUZZING_ENGINE must be set (e.g. -fsanitize=fuzzer)}"
CC=${CC:-clang}
CFLAGS=${CFLAGS:-}
LINK=${CXX:-$CC}
LINKFLAGS=${CXXFLAGS:-$CFLAGS}
WORKDIR=$(mktemp -d)
trap 'rm -rf "$WORKDIR"' EXIT
mkdir -p "$OUT"
cd "$SRC_DIR"

INC="-Icore/include -Icore/src -Iharnesses"
objs=()
for f in core/src/*.c harnesses/model.c; do
  o="$WORKDIR/$(basename "${f%.c}").o"
  # shellcheck disable=SC2086
  $CC $CFLAGS -std=c11 $INC -c "$f" -o "$o"
  objs+=("$o")
done

# fuzz_ops keeps comparison tracing only in the code that compares input
# bytes (decoder, name generator, op-script), and edge coverage only in
# the code under test (not in the checker, the model or the harness); see
# harnesses/CMakeLists.txt.
NOCMP=""
NOCOV=""
case "$CFLAGS" in *sanitize=fuzzer*|*trace-cmp*)
  NOCMP="-fno-sanitize-coverage=trace-cmp"
  NOCOV="-fno-sanitize-coverage=inline-8bit-counters,pc-table" ;;
esac
ops_objs=("${objs[@]}")
if [ -n "$NOCMP" ]; then
  ops_objs=()
  mkdir -p "$WORKDIR/ops"
  for f in core/src/*.c harnesses/model.c; do
    b=$(basename "${f%.c}")
    case "$b" in fuzzinput|gen|opscript) ops_objs+=("$WORKDIR/$b.o"); continue ;; esac
    flags=$NOCMP
    case "$b" in check|check_*|model) flags="$NOCMP $NOCOV" ;; esac
    # shellcheck disable=SC2086
    $CC $CFLAGS $flags -std=c11 $INC -c "$f" -o "$WORKDIR/ops/$b.o"
    ops_objs+=("$WORKDIR/ops/$b.o")
  done
fi

for t in fuzz_ops fuzz_image fuzz_names; do
  tobjs=("${objs[@]}")
  tflags=""
  if [ "$t" = fuzz_ops ]; then tobjs=("${ops_objs[@]}"); tflags="$NOCMP $NOCOV"; fi
  # shellcheck disable=SC2086
  $CC $CFLAGS $tflags -std=c11 $INC -c "harnesses/$t.c" -o "$WORKDIR/$t.o"
  # shellcheck disable=SC2086
  $LINK $LINKFLAGS "$WORKDIR/$t.o" "${tobjs[@]}" $LIB_FUZZING_ENGINE -o "$OUT/$t"
  cp "harnesses/$t.options" "$OUT/$t.options"
  cp "corpus/$t.dict" "$OUT/$t.dict"
  python3 - "$OUT/${t}_seed_corpus.zip" "corpus/$t" <<'PY'
import os, sys, zipfile
out, src = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name)
        if os.path.isfile(p):
            z.write(p, name)
PY
done
echo "build.sh: fuzz_ops fuzz_image fuzz_names -> $OUT"
