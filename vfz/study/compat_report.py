"""The compatibility study's report: compat.md (the matrix per style, what the non-ok cells say, the variants)."""
import time
from collections import Counter

from vfz.study import compat_media
from vfz.study.compat_matrix import CLASSES, ROWS, SHORT, SIZES, STYLES, VERDICTS, _worst
from vfz.study.tools import tool_versions


def _cell(c, link):
    if c is None:
        return "n/a"
    parts = [f"{SHORT[v]} {c[v]}" for v in reversed(VERDICTS) if c.get(v)]
    return f"[{', '.join(parts)}]({link})"


def summary_for(cells, style, rows_present):
    tot = Counter()
    per_row = {}
    for row in rows_present:
        c = Counter()
        for cls in CLASSES:
            c.update(cells.get((row, style, cls), Counter()))
        per_row[row] = c
        tot.update(c)
    lines = []
    for row, c in per_row.items():
        n = sum(c.values())
        bad = {v: c[v] for v in VERDICTS if v != "reads correctly" and c.get(v)}
        if bad:
            lines.append(f"{row}: " + ", ".join(f"{SHORT[v]} {k}/{n}" for v, k in bad.items()))
    return lines


EXPECT = {
    "dual": "the classic layout, as Linux writes it. Every checker and reader should take it; what "
            "is not 'ok' below is a tool's own limit with that name class, shared by every style "
            "(see the table of details: e.g. an alias holding DEL 0x7F, which Linux writes too "
            "and fsck.fat renames).",
    "v1": "fsck.fat calls every v1 dummy a bad short name and `fsck.fat -a` renames each such "
          "file and drops its long name (FSCKnnnn.nnn): never run a repairing fsck on a v1 "
          "volume. Readers that find files by long name (Linux stock and patched, mtools, "
          "7-Zip, GRUB) reach them.",
    "v3": "fsck.fat exempts entries whose NT byte has 0x20 set, so v3 passes the checker and "
          "its repair. But 0x05 is one of the 35 'invalid' bytes, and 0x05 at byte 0 is the "
          "escape of a name starting with 0xE5: 7-Zip and GRUB then show the dummy as a short "
          "name and lose the long name (Linux and mtools do not). Byte 0 is a drawn byte with "
          "probability 6/8 (files) or 7/8 (directories), 0x05 with about 1/35: about 2 % of v3 "
          "long names (1 in 47 files, 1 in 40 directories). Collisions are rarer than v1 "
          "(see collisions.md).",
    "unique": "the v1 bytes, redrawn until unique in the directory: the same checker behaviour "
              "as v1 (bad short names, destructive repair), without same-directory duplicates.",
}


def _totals(cells, row, style):
    c = Counter()
    for cls in CLASSES:
        c.update(cells.get((row, style, cls), Counter()))
    return c


def _counts(c):
    n = sum(c.values())
    return ", ".join(f"{SHORT[v]} {c[v]}/{n}" for v in VERDICTS if c.get(v)) or "none"


def media_section(A, cells, rows_present, size):
    """The rows of readers of another medium: what their cells are, totals per style."""
    rows = [r for r in compat_media.MEDIA if r in rows_present]
    if not rows:
        return
    A("## The vvfat rows")
    A("")
    A("QEMU's vvfat in rw mode (`-drive file=fat:rw:DIR`: an EFI system partition shared with a "
      "guest) reads no finished image: it follows a guest's writes as they happen and writes them "
      "back to the host directory. Its row asks the matrix's question of a Linux guest writing the "
      "class's op-script on a fresh hot-plugged `fat:rw:16:` disk (mounted synchronous): in style "
      "dual the stock kernel (`kernel-vvfat`), in v1 and v3 the same guest with the seed patch's "
      "modules (`kernel-vvfat-nodual`, `kernel-vvfat-nodual-v3`, the run's seed as `nodual_seed`); "
      "unique is n/a (no kernel writes it). ok = the host directory is the model's tree of that "
      "writer (names, tree, sizes, contents; vvfat lower-cases bare 8.3 names by design, "
      "`vvfat-downcase-short-names`, applied as the other rows apply their readers' name "
      "exceptions), misreads = it differs, fails = QEMU aborted or left no host directory. A "
      "difference or abort that one of vvfat's catalogued bugs explains (vfz/oracles/vvfat/rw.py, "
      "hosttree.py) still counts as misread or failed; its detail line names it. The second row, "
      f"*{compat_media.CUT.lstrip(', ')}*, is what the checker reads after a named abort: the "
      "script cut before the first op of the kind that reaches the assertion, run again on a fresh "
      "disk (a script that did not abort counts its own verdict there). "
      f"Images per cell: {compat_media.PER_CELL[size]} (each is a guest run, an abort a reboot).")
    A("")
    A("| row | " + " | ".join(s for s in STYLES) + " |")
    A("|---|" + "---|" * len(STYLES))
    for row in rows:
        for r in (row, row + compat_media.CUT):
            A(f"| {r} | " + " | ".join(_counts(_totals(cells, r, s)) if _totals(cells, r, s) else "n/a"
                                       for s in STYLES) + " |")
    A("")


def write_md(path, cells, links, variants, notes, seed, size, secs, rows_present, notable):
    per_cell, nops = SIZES[size]
    vers = tool_versions()
    L = []
    A = L.append
    A("# Compatibility matrix: checkers and readers x write style x name class")
    A("")
    A(f"Generated by `vfatfuzz study compat --seed {seed} --size {size}` "
      f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {secs:.0f} s): {per_cell} generated "
      f"op-script(s) of {nops} ops per name class, each written by every style onto a fresh "
      f"mkfs.fat FAT16 16 MiB image, every image read by every row.")
    A("")
    for row in [r for r in compat_media.MEDIA if r in rows_present]:
        which = compat_media.CLASSES_AT[size]
        A(f"The row **{row}** reads no FAT image: the first {compat_media.PER_CELL[size]} "
          f"script(s) of {'each class' if which is None else 'the class(es) ' + ', '.join(which)} "
          f"are run live by a Linux guest on a vvfat disk (see [its section](#the-vvfat-rows)); "
          f"its cells count those images.")
        A("")
    A("Tools: " + "; ".join(f"{k}: `{v}`" for k, v in vers.items()))
    A("")
    for n in notes:
        A(f"* note: {n}")
    A("")
    A("Verdicts: **ok** = reads correctly (checkers: no complaint; repair: expected tree intact "
      "after `fsck.fat -a`), **complains** = same tree but messages (fsck.fat complaints, mcopy "
      "errors, kernel FAT-fs messages), **damages** = `fsck.fat -a` changed names or files, "
      "**misreads** = listing or contents differ from the model's expected tree (named "
      "exceptions of vfz.model applied), **fails** = could not read / crashed / timed out. "
      "Each cell: counts over its images, worst first, linking to the op-script of the image "
      "that shows the worst verdict (header: apply commands and every verdict of that script). "
      "CSV: compat.csv.")
    A("")
    A("## What a user of each style should expect")
    A("")
    for style in STYLES:
        A(f"* **{style}**: {EXPECT[style]}")
        lines = summary_for(cells, style, rows_present)
        A("  Measured (non-ok counts over all classes): " + ("; ".join(lines) if lines else
                                                             "every row read every image correctly") + ".")
    A("")
    for style in STYLES:
        A(f"## Style {style} (`{STYLES[style]}`)")
        A("")
        A("| reader \\ class | " + " | ".join(CLASSES) + " |")
        A("|---|" + "---|" * len(CLASSES))
        for row in ROWS:
            cs = []
            for cls in CLASSES:
                c = cells.get((row, style, cls))
                cs.append(_cell(c, "compat/cases/" + links[(row, style, cls, _worst(c))]) if c else "n/a")
            A(f"| {row} | " + " | ".join(cs) + " |")
        A("")
    media_section(A, cells, rows_present, size)
    A("## What the non-ok cells say")
    A("")
    A("Per row, style and verdict: the distinct first lines of the tools' details (listing diff "
      "`-` expected / `+` seen, or the complaint), how many images showed each, and one case. "
      "fsck.fat rows on v1/unique images are left out: every v1 dummy is a bad short name to "
      "fsck.fat (see the variants below).")
    A("")
    A("| row | style | verdict | images | first detail line | case |")
    A("|---|---|---|---:|---|---|")
    for (row, style, v), sigs in sorted(notable.items(), key=lambda kv: (ROWS.index(kv[0][0]),
                                                                      list(STYLES).index(kv[0][1]))):
        if row.startswith("fsck") and style in ("v1", "unique"):
            continue
        for sig, (n, case, cls) in sorted(sigs.items(), key=lambda kv: -kv[1][0])[:4]:
            A(f"| {row} | {style} | {SHORT[v]} | {n} | `{sig.replace('|', '/').replace('`', '')}` | "
              f"[{cls}](compat/cases/{case}) |")
    A("")
    A("## Why the seed's bytes are what they are: dummy variants")
    A("")
    A("Each variant: the core writes `/V/a long file name.txt` (the target), `/V/OTHER.TXT` "
      "(short name only, after it) and a directory with `INNER.TXT` (v3: `/V/a long directory "
      "name`, the target of the `v3-dir-*` rows) with v1 or v3 dummies (seed "
      f"{seed}); then the short entry of the target (the first file; the directory for the "
      "`v3-dir-*` rows) is edited in Python, its LFN checksums recomputed. Columns: what each "
      "tool does with the target (kernel: readdir + open + read in the QEMU guest, stock and "
      "patched modules), and with the rest of /V (upper case: a short-only entry, so the target is the only dummy). CSV: compat-variants.csv.")
    A("")
    cols = ["id", "description", "bytes", "nt", "kernel", "kernel-nodual", "mtools", "7-Zip", "GRUB",
            "fsck.fat -n", "fsck.fat -a"]
    A("| " + " | ".join(cols) + " |")
    A("|" + "---|" * len(cols))
    for v in variants:
        A("| " + " | ".join(str(v.get(c, "")).replace("|", "\\|") for c in cols) + " |")
    A("")
    V = {v["id"]: v for v in variants}

    def say(vid, col):
        return V.get(vid, {}).get(col, "n/a")
    A("Reading the table (every statement is the measured cell it quotes):")
    A("")
    A(f"* **'/' at byte 8.** Stock 6.1's lookup, `fat_search_long` (fs/fat/dir.c), parses "
      f"every entry's 11 bytes with `fat_parse_short` before it compares any name, and when the "
      f"parsed short name has length 0 it skips the entry (`if (len == 0) continue;`): the long "
      f"name is never compared. `fat_parse_short` counts each part up to its last byte other than "
      f"a space and stops at a NUL, so `20 00 ...` parses to nothing unless the extension holds "
      f"another byte. With the seed's '/' the parse is `./` and the long name is compared: it "
      f"reads the file (`v1-seed`: {say('v1-seed', 'kernel')}); with a space or a NUL there "
      f"readdir (which has no such check) lists the name but lookup skips the entry "
      f"(`v1-space8`: {say('v1-space8', 'kernel')}; `v1-nul8`: {say('v1-nul8', 'kernel')}). The "
      f"patched module (the seed's dir.c hunk: an empty parse no longer skips the long name) "
      f"reads all three ({say('v1-space8', 'kernel-nodual')}).")
    A(f"* **Leading space.** (Reason: no valid 8.3 name starts with a space, so a dummy can never "
      f"equal a real short name.) fsck.fat flags the entry either way (`v1-seed`: {say('v1-seed', 'fsck.fat -n')}; "
      f"`v1-noleadspace`: {say('v1-noleadspace', 'fsck.fat -n')}). Byte 0 may not be NUL "
      f"(end of directory: `v1-nul0` mtools: {say('v1-nul0', 'mtools')}) nor 0xE5 (deleted: "
      f"`v1-e5` kernel: {say('v1-e5', 'kernel')}).")
    A(f"* **fsck.fat and the NT byte.** v1 dummies are bad short names to fsck.fat and `-a` "
      f"renames them (`v1-seed`: {say('v1-seed', 'fsck.fat -a')}); with NT 0x20 (what v3 "
      f"stores) the same bytes pass (`v1-nt20`: -n {say('v1-nt20', 'fsck.fat -n')}, -a "
      f"{say('v1-nt20', 'fsck.fat -a')}); v3 bytes with NT 0 do not (`v3-nt0`: "
      f"{say('v3-nt0', 'fsck.fat -n')}; -a {say('v3-nt0', 'fsck.fat -a')}).")
    A(f"* **0x05 at byte 0 (v3).** A legal v3 draw: `v3-lead05` 7-Zip: {say('v3-lead05', '7-Zip')}; "
      f"GRUB: {say('v3-lead05', 'GRUB')}; kernel: {say('v3-lead05', 'kernel')}; mtools: "
      f"{say('v3-lead05', 'mtools')}.")
    A(f"* **'/' in directories.** The July revision keeps '/' out of directory dummies for "
      f"photo frames; the Linux readers measured here do not care (`v3-dir-slash` kernel: "
      f"{say('v3-dir-slash', 'kernel')}; fsck.fat -n: {say('v3-dir-slash', 'fsck.fat -n')}).")
    A("")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")
