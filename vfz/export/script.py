"""run.sh: the common preamble and tail around a template's body, the expected listing, and running it.

    script(case, impl, data) -> sh text     impl: the case's template module
    preamble(title, needs), TAIL            the pieces, for the hostile reproducers
    listing_lines(case, impl)               expected.txt's lines
    run_script(dirname, timeout, env)       -> (status, printed, work directory)

The preamble defines what every body may call: cannot, need, bug, indent,
$HERE (the reproducer), $OUT (the work directory), $IMG (the unpacked
image); the tail prints REPRODUCED / NOT REPRODUCED from the bugs seen.
"""
import os
import tempfile

from vfz import proc

RESULT = {0: "REPRODUCED", 1: "NOT REPRODUCED", 2: "CANNOT RUN"}


def listing_lines(case, impl):
    """expected.txt: the expected entries in the implementation's listing form."""
    out = []
    for e in case.entries or []:
        p = impl.shown(case, e["path"])
        if e["type"] == "dir":
            out.append(f"d {p}")
        elif impl.SHA and e.get("sha256"):
            out.append(f"f {p} {e.get('size')} {e['sha256']}")
        else:
            out.append(f"f {p} {e.get('size')}")
    return sorted(out, key=lambda s: s.encode("utf-8", "surrogatepass"))


PREAMBLE = r"""#!/bin/sh
# {title}
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# {tools}, xz and coreutils.
# Usage: sh run.sh [WORKDIR]
# Ends with one line and exit status:
#   REPRODUCED: <why>  (0)   NOT REPRODUCED  (1)   CANNOT RUN: <why>  (2)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${{1:-$(mktemp -d "${{TMPDIR:-/tmp}}/repro.XXXXXX")}}
mkdir -p "$OUT" || exit 2
cannot() {{ echo "CANNOT RUN: $*"; exit 2; }}
need() {{ command -v "$1" >/dev/null 2>&1 || cannot "$1 not found (Debian package $2)"; }}
BUGS=0
WHY=""
bug() {{ echo "BUG: $*"; BUGS=$((BUGS + 1)); [ -n "$WHY" ] || WHY="$*"; }}
indent() {{ sed 's/^/    /'; }}
need xz xz-utils
{needs}
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"
"""

TAIL_LISTING = r"""
LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what {tool} shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "{tool} shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi
"""

TAIL = r"""
if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
"""


def preamble(title, needs):
    """PREAMBLE for a script titled title that needs [(command, package)]."""
    return PREAMBLE.format(title=title.replace("\n", " "), tools=", ".join(sorted({p for _, p in needs})),
                           needs="\n".join(f"need {c} {p}" for c, p in needs))


def script(case, impl, data):
    """run.sh of case: the preamble, impl's body, the listing's comparison, the tail."""
    text = preamble(case.title or case.kind or "reproducer", impl.NEEDS)
    text += impl.body(case, data)
    if impl.LISTING:
        text += TAIL_LISTING.format(tool=impl.TOOL)
    return text + TAIL


def run_script(dirname, timeout=300, env=None):
    """Run DIR/run.sh with a scratch work directory -> (status, printed
    text, work directory). status: 0 reproduced, 1 not, 2 cannot run.
    A timeout kills the script's whole process group (the QEMU or the
    fusefat it started too), as does the death of this process.
    env: variables set for it (a template's hostile_env)."""
    work = tempfile.mkdtemp(prefix="vfz-export-run-")
    r = proc.run(["sh", os.path.join(dirname, "run.sh"), work], timeout=timeout, env=env or None)
    if r.timed_out:
        return 2, r.text + f"\nCANNOT RUN: timeout after {timeout}s\n", work
    if r.rc is None:
        return 2, f"CANNOT RUN: {r.error}\n", work
    return r.rc, (r.out + r.err).decode("utf-8", "replace"), work


def last_line(text):
    lines = [ln for ln in text.strip().split("\n") if ln.strip()]
    return lines[-1] if lines else ""


