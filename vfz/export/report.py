"""README.md of a reproducer: the bug report (versions, what goes wrong, steps, expected, actual, the directory entries involved).

    report(case, impl, expected_lines, status, printed, after, dirname) -> text
    package_versions(pkgs), where_run(printed, impl), clip(lines, n), dir_records(image, paths),
    hexdump(records)
"""
import os
import subprocess

from vfz import fatimg, opscript
from vfz.export.case import fs_geometry
from vfz.export.script import RESULT, last_line
from vfz.oracles.repro import lfn_text


def package_versions(pkgs):
    """{package: version} from dpkg-query (absent ones: 'not installed')."""
    out = {}
    for p in pkgs:
        try:
            r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", p], capture_output=True,
                               text=True, timeout=20)
            out[p] = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "not installed"
        except (OSError, subprocess.TimeoutExpired):
            out[p] = "unknown (no dpkg-query)"
    return out


def dir_records(image, paths, limit=12, slots=24):
    """{path: [(offset, 32 bytes, what)]} for the entries of paths: LFN
    slots and 8.3 entry, looked up by long name, else 8.3 name,
    case-insensitively. A path the image does not hold under that name
    (a tool that stored it another way) gives its parent directory's
    first used slots instead, under the key 'PATH (not found: its
    directory)'."""
    with open(image, "rb") as f:
        fat = fatimg.Fat(f.read())

    def cluster_of(off):
        start = fat.cluster_off(2)
        return 2 + (off - start) // fat.csize if off >= start else None

    def note(off, what):
        c = cluster_of(off)
        return what + (f" (cluster {c})" if c is not None else " (root)")

    out = {}
    for p in paths:
        if len(out) >= limit:
            break
        comps = [c for c in p.split("/") if c and c != "."]
        cl, recs, parent_ok = None, None, True
        for i, c in enumerate(comps):
            hit = None
            for off, name11, attr, first, size, lfn in fat.short_entries(cl):
                long = lfn_text(fat, lfn) if lfn else None
                short = fatimg.short_text(name11)
                if (long and long.lower() == c.lower()) or short.lower() == c.lower():
                    hit = (off, attr, first, lfn)
                    break
            if hit is None:
                parent_ok = i == len(comps) - 1
                recs = None
                break
            off, attr, first, lfn = hit
            recs = [(o, bytes(fat.b[o:o + 32]), note(o, f"LFN {k + 1}/{len(lfn)}"))
                    for k, o in enumerate(lfn)]
            recs.append((off, bytes(fat.b[off:off + 32]), note(off, "8.3 entry")))
            if i < len(comps) - 1:
                if not attr & 0x10:
                    recs, parent_ok = None, False
                    break
                cl = first
        if recs:
            out[p] = recs
        elif parent_ok:
            used = [(o, e) for o, e in fat.entries(cl) if e[0] != 0xE5][:slots]
            if used:
                out[f"{p} (not found: its directory)"] = [
                    (o, e, note(o, "LFN" if e[11] == 0x0F else "8.3 entry")) for o, e in used]
    return out


def hexdump(records):
    """Text: each 32-byte slot as two xxd-like lines, annotated."""
    lines = []
    for off, raw, what in records:
        for half in (0, 16):
            chunk = raw[half:half + 16]
            hx = " ".join(chunk[i:i + 2].hex() for i in range(0, 16, 2))
            asc = "".join(chr(c) if 0x20 <= c < 0x7F else "." for c in chunk)
            note = f"  {what}" if half == 0 else ""
            lines.append(f"{off + half:08x}: {hx}  {asc}{note}")
    return "\n".join(lines)


def involved_paths(case):
    """Paths the ops name that the expected tree holds (then their parents)."""
    have = {e["path"] for e in case.entries or []}
    out = []
    for op in case.ops:
        for a in op.args:
            if isinstance(a, str) and a.startswith("/"):
                p = "/" + "/".join(c for c in a.split("/") if c)
                if p in have and p not in out:
                    out.append(p)
    return out[-8:]


def report(case, impl, expected_lines, status, printed, after, dirname):
    """README.md: the bug report."""
    vers = package_versions(impl.PACKAGES)
    fat = fs_geometry(case.fs)
    L = [f"# {case.title or case.kind or 'Reproducer'}", ""]
    L.append(f"Implementation: **{case.impl}** ({'reading an image' if case.side == 'reader' else 'writing'})"
             + (f"; the image was written by `{case.writer}`" if case.writer else "")
             + (f" (seed {case.seed})" if case.seed is not None else "") + ".")
    if case.kind:
        L.append(f"vfatfuzz kind: `{case.kind}`" + (f", finding {case.signature}" if case.signature else "")
                 + ".")
    L += ["", "## Versions", ""]
    L += [f"- {p} {v}" for p, v in vers.items()]
    if hasattr(impl, "volume_note"):      # a tool that makes its own volume (vvfat) says which
        L.append("- volume: " + impl.volume_note(case))
    else:
        L.append(f"- volume: FAT{fat[0]}, {fat[1]} bytes" + (f", {fat[2]}-byte clusters" if fat[2] else "")
                 + " (mkfs.fat)" + (f", label {case.label}" if case.label else ""))
    if case.reason:
        L += ["", "## What goes wrong", "", case.reason]
    L += ["", "## Steps", "",
          "    sh run.sh            # or: sh run.sh WORKDIR to keep the work files", "",
          f"`run.sh` unpacks `image.img.xz` and {impl.STEPS}. It prints every command's "
          "output and ends with `REPRODUCED: why` (exit 0), `NOT REPRODUCED` (exit 1) or "
          "`CANNOT RUN: why` (exit 2).", ""]
    if case.side == "writer":
        L += ["The operations (vfatfuzz op-script, `ops.txt`; the expected result of each is "
              "what Linux 6.1's vfat does):", "", "```"]
        for i, op in enumerate(case.ops):
            r = case.results[i] if case.results and i < len(case.results) else "?"
            L.append(f"{opscript.format_op(op)}    # -> {r}")
        L += ["```", ""]
    else:
        L += [f"The image holds what `{case.writer}` made of these operations (`ops.txt`):", "", "```"]
        L += [opscript.format_op(op) for op in case.ops]
        L += ["```", ""]
    L += ["## Expected", "", f"`expected.txt`: {impl.EXPECTED}", "", "```"]
    L += clip(expected_lines)
    L += ["```", "", "## Actual", ""]
    if status is None:
        L.append("Not run when exported.")
    else:
        L.append(f"{where_run(printed, impl)}: **{RESULT.get(status, status)}** (`{last_line(printed)}`).")
        L += ["", "What `run.sh` printed (`printed.txt`):", "", "```"]
        L += clip(printed.rstrip("\n").split("\n"), 80)
        L += ["```"]
        if os.path.isfile(os.path.join(dirname, "seen.txt")):
            with open(os.path.join(dirname, "seen.txt"), encoding="utf-8", errors="replace") as f:
                seen = f.read().rstrip("\n").split("\n")
            L += ["", "`seen.txt`:", "", "```"] + clip(seen) + ["```"]
    paths = involved_paths(case)
    for title, img in ((("The directory entries involved, in the image the script starts from"),
                        case.image if getattr(impl, "START_IMAGE", True) else None),
                       (("The same entries after the tool ran"), after)):
        if not img or not paths:
            continue
        try:
            recs = dir_records(img, paths)
        except Exception as e:      # a damaged image: say so, the report stands
            recs, err = {}, f"{type(e).__name__}: {e}"
        else:
            err = ""
        L += ["", f"## {title}", ""]
        if not recs:
            L.append(f"(none found{': ' + err if err else ''})")
            continue
        L.append("Each 32-byte slot as offset: bytes (LFN slots first, then the 8.3 entry).")
        for p, r in recs.items():
            L += ["", f"`{p}`:", "", "```", hexdump(r), "```"]
    L += ["", "## Files", "",
          "`image.img.xz` (xz), `ops.txt`, `run.sh`, `expected.txt`, `seen.txt`, `printed.txt`"
          + (", `data/` (the bytes each create/write puts down)" if os.path.isdir(os.path.join(dirname, "data"))
             else "") + ".", ""]
    return "\n".join(L)


def where_run(printed, impl):
    """Where run.sh ran at export time: here, or where impl's
    run_elsewhere ran it (printed then starts with '# this host: ...')."""
    where = "On the exporting machine"
    if printed.startswith("# this host: "):
        where += (", whose own run said " + printed.split("\n", 1)[0][len("# this host: "):]
                  .split("; run in ")[0] + f", run in {getattr(impl, 'ELSEWHERE', 'another place')}")
    return where


def clip(lines, n=60):
    lines = [ln if len(ln) <= 300 else ln[:300] + " [...]" for ln in lines]
    if len(lines) > n:
        return lines[:n] + [f"... ({len(lines) - n} more lines)"]
    return lines
