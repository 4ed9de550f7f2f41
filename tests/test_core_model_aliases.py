#!/usr/bin/python3
"""The model's dual-mode aliases (vfz/model.py) against the core.

The core in dual mode writes the kernel's aliases byte for byte (checked
against Linux 6.1 in tests/test_dual_bytes.py), so it is the reference
here: op-scripts full of long names are applied with `vfat apply --names
dual`, and for every op the model's predicted result must equal the
core's. After each script the trees must be equal too, and so must the
aliases: the model's alias of an entry against the short entry the core
wrote (`vfat ls`): a plain or ~N alias byte for byte, a HexAlias by shape
(XX####~D plus the extension), no alias for a bare 8.3 entry.

The names come from several classes: long names with spaces, with dots,
with cp437 letters (and with characters cp437 lacks), lower/upper mixes,
names whose 6-character base collides so that ~1..~9 and then hex tails
are used, names with + , ; = [ ], and names that spell aliases back: the
aliases the model predicts for existing entries (create/mkdir them, write,
rename, unlink, rmdir through them, rename onto them) and ~N forms of
bases in use before the long names that would take them exist. The
model's predictions steer the script, the core judges them. The scripts
are deterministic (seeded); the same four also agree with the real kernel
(`vfatfuzz diff --ops SCRIPT --writers kernel`), which needs the VM and so
is not part of this core-only test.

A second test replays a fixed script whose verdicts follow from the
kernel's rules (a plain form taken: EEXIST; the renamed entry's own alias
counts; freed ~N forms are reused; hex-tailed entries block nothing).
"""
import json
import os
import random
import re
import sys
import tempfile
import unittest
from collections import Counter

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, SRC)
sys.path.insert(0, os.path.join(SRC, "tests"))

from vfz import model, opscript# noqa: E402
import util_images as U  # noqa: E402

SCRIPTS = 4            # op-scripts, each on a fresh image
OPS_PER_SCRIPT = 450
FS = "fat32"           # no fixed-size root directory to fill up

# Bases chosen to collide in their first 6 characters (no hex digits
# beyond the first two, so a hex tail cannot spell one of their ~N forms).
COLLIDE = ["longfilename", "Long File Name", "photographs", "windows_system", "my document",
           "Rosetta.stone", "ünïcödé files", "x+y=z plus"]
SPACE_WORDS = ["my file", "new folder", "a b", "x y z", "Program Files", "in ner", " lead"]
DOT_FORMS = [".hidden{i}", "a.b.c{i}", "x..y{i}.txt", "...test{i}", "v{i}.2.3", "name{i}.longext",
             "tar{i}.gz.bak", ".{i}rc", "dot.{i}", "ext{i}.t x"]
CP437_LETTERS = "éÉñÑæÆüÜöÖåÅçÇáíóúàèìòùâêîôûäëïÿßσφαπµΣΦ"
FOREIGN = ["ŝ", "ĉ", "日", "本", "\U0001F600", "ẞ", "ő"]   # not in cp437: '_' in aliases
REPLACE = "+,;=[]"
EXTS = ["", ".txt", ".TXT", ".Txt", ".jpeg", ".c", ".tar", ".é"]


def decode_short(hexbytes):
    """The 11 bytes of a short entry (vfat ls) shown as Linux shows an
    alias: cp437, trailing spaces of each part dropped, 0x05 is 0xE5."""
    sn = bytearray(bytes.fromhex(hexbytes))
    if sn[0] == 0x05:
        sn[0] = 0xE5
    base, ext = bytes(sn[:8]).rstrip(b" "), bytes(sn[8:]).rstrip(b" ")
    return base.decode("cp437") + ("." + ext.decode("cp437") if ext else "")


def recase(rng, s):
    return "".join(c.lower() if rng.random() < 0.5 else c for c in s)


class Gen:
    """Builds one op-script, using a dual-mode model to know the tree and
    the aliases it predicts (which the script then spells)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.m = model.Model(names="dual")
        self.lines = []
        self.names = set()
        self.kinds = Counter()
        self.serial = 0
        self.cp437_seen = []

    # ---------------------------------------------------------- state
    def entries(self):
        """[(path, node)] of every entry, directories first-class."""
        out, stack = [], [(self.m.root, "")]
        while stack:
            d, p = stack.pop()
            for k in d.kids.values():
                out.append((p + "/" + k.name, k))
                if k.is_dir:
                    stack.append((k, p + "/" + k.name))
        return out

    def dirs(self):
        return [""] + [p for p, n in self.entries() if n.is_dir]

    def emit(self, kind, *args, tag):
        line = " ".join([kind] + [json.dumps(a) if isinstance(a, str) else str(a) for a in args])
        self.m.apply(opscript.parse(line + "\n"))
        self.lines.append(line)
        self.kinds[tag] += 1

    # ---------------------------------------------------------- names
    def fresh(self):
        self.serial += 1
        return self.serial

    def name_spaces(self):
        i = self.fresh()
        return f"{self.rng.choice(SPACE_WORDS)} {i}{self.rng.choice(EXTS)}"

    def name_dots(self):
        return self.rng.choice(DOT_FORMS).format(i=self.fresh())

    def name_cp437(self):
        r = self.rng
        if self.cp437_seen and r.random() < 0.35:
            # an earlier name with its letters in the other case: a lookup
            # misses it when non-ASCII letters differ, but the plain form
            # (cp437 upper case) may be taken: EEXIST in dual mode only
            return r.choice(self.cp437_seen).swapcase()
        chars = [r.choice(CP437_LETTERS) if r.random() < 0.6 else r.choice("abcXYZ_-1")
                 for _ in range(r.randint(1, 9))]
        if r.random() < 0.15:
            chars.insert(r.randrange(len(chars) + 1), r.choice(FOREIGN))
        name = "".join(chars) + r.choice(EXTS)
        self.cp437_seen.append(name)
        return name

    def name_case(self):
        r = self.rng
        letters = "abcdefgjkmnoqrsuvwz"     # a few names collide on purpose
        base = "".join(r.choice(letters) for _ in range(r.randint(1, 8)))
        ext = "".join(r.choice(letters) for _ in range(r.randint(0, 3)))
        name = base + ("." + ext if ext else "")
        return r.choice([name, name.upper(), name.capitalize(), recase(r, name.upper())])

    def name_collide(self):
        r = self.rng
        return f"{r.choice(COLLIDE)}{r.randint(0, 14)}{r.choice(['', '.txt', '.TXT', '.Txt', '.c'])}"

    def name_replace(self):
        r = self.rng
        s = "".join(r.choice("abQR" + REPLACE) for _ in range(r.randint(2, 10)))
        return s.strip() or "q"

    def name_tail_spelled(self):
        """A ~N form of a colliding base, maybe before its long name takes it."""
        r = self.rng
        base, ext, _ = model.shortname_parts(r.choice(COLLIDE) + r.choice(EXTS))
        form = f"{base[:6]}~{r.randint(1, 9)}" + ("." + ext if ext else "")
        return r.choice([form, form.lower(), recase(r, form)])

    def new_name(self):
        r = self.rng
        kind = r.choice(["spaces", "dots", "cp437", "case", "collide", "collide", "collide",
                         "replace", "tail"])
        n = getattr(self, "name_" + ("tail_spelled" if kind == "tail" else kind))()
        self.names.add(n)
        return kind, n

    # ---------------------------------------------------------- ops
    def alias_paths(self):
        """[(path through an alias, node)] of entries with a nameable alias."""
        out = []
        for p, n in self.entries():
            if isinstance(n.alias, str):
                out.append((p.rpartition("/")[0] + "/" + recase(self.rng, n.alias), n))
        return out

    def step(self):
        r = self.rng
        ents = self.entries()
        via_alias = self.alias_paths()
        roll = r.random()
        if roll < 0.03:
            # a burst of one colliding base: ~1..~9, then hex tails
            base, ext, d = r.choice(COLLIDE), r.choice(EXTS), r.choice(self.dirs())
            for _ in range(r.randint(8, 13)):
                n = f"{base}{self.fresh()}{ext}"
                self.names.add(n)
                self.emit("create", d + "/" + n, 1, 2, tag="create burst")
        elif roll < 0.40 or not ents:
            kind, n = self.new_name()
            d = "" if kind == "collide" and r.random() < 0.7 else r.choice(self.dirs())
            if r.random() < 0.2:
                self.emit("mkdir", d + "/" + n, tag="mkdir " + kind)
            else:
                self.emit("create", d + "/" + n, r.randint(0, 40), r.randint(0, 255), tag="create " + kind)
        elif roll < 0.62 and via_alias:
            p, node = r.choice(via_alias)
            what = r.choice(["create", "mkdir", "write", "rename-from", "rename-onto", "remove",
                             "sub"])
            if what == "create":
                self.emit("create", p, 3, 1, tag="alias create")
            elif what == "mkdir":
                self.emit("mkdir", p, tag="alias mkdir")
            elif what == "write":
                self.emit("write", p, r.randint(0, 20), r.randint(0, 9), 7, tag="alias write")
            elif what == "rename-from":
                d = r.choice([p.rpartition("/")[0], r.choice(self.dirs())])
                self.emit("rename", p, d + "/" + self.new_name()[1], tag="alias rename-from")
            elif what == "rename-onto":
                src = r.choice(ents)[0]
                self.emit("rename", src, p, tag="alias rename-onto")
            elif what == "remove":
                self.emit("rmdir" if node.is_dir else "unlink", p, tag="alias remove")
            else:
                self.emit("create", p + "/" + self.new_name()[1], 1, 1, tag="alias subpath")
        elif roll < 0.80:
            src = r.choice(ents)[0]
            par = src.rpartition("/")[0]
            d = par if r.random() < 0.6 else r.choice(self.dirs())
            self.emit("rename", src, d + "/" + self.new_name()[1], tag="rename new")
        elif roll < 0.92:
            p, node = r.choice(ents)
            self.emit("rmdir" if node.is_dir else "unlink", p, tag="remove")
        else:
            # respell an existing long name: case only (a no-op) or exactly
            p, node = r.choice(ents)
            self.emit("create", p.rpartition("/")[0] + "/" + recase(r, node.name.upper()), 1, 1,
                      tag="respell")


def alias_problems(m_aliases, core_entries):
    """The entries whose alias the model got wrong, as text lines."""
    bad = []
    core = {e["path"]: e for e in core_entries}
    for path, alias in sorted(m_aliases.items()):
        e = core.get(path)
        if e is None:
            continue                      # the tree comparison reports it
        shown = decode_short(e["short"])
        leaf = path.rpartition("/")[2]
        if isinstance(alias, model.HexAlias):
            pat = (re.escape(alias.base) + "[0-9A-F]{4}~[1-8]"
                   + (re.escape("." + alias.ext) if alias.ext else ""))
            ok = re.fullmatch(pat, shown) is not None and e["lfn"] > 0
        elif alias is None:
            ok = e["lfn"] == 0 and shown == leaf
        else:
            ok = shown == alias and e["lfn"] > 0
        if not ok:
            bad.append(f"  {path!r}: model {alias!r}, core wrote {shown!r} (lfn slots {e['lfn']})")
    return bad


class ModelAliasTests(unittest.TestCase):
    def test_model_predicts_core_dual_results(self):
        totals, names, n_ops = Counter(), set(), 0
        alias_kinds = Counter()
        with tempfile.TemporaryDirectory() as tmp:
            for s in range(SCRIPTS):
                g = Gen(1000 + s)
                for _ in range(OPS_PER_SCRIPT):
                    g.step()
                text = "\n".join(g.lines) + "\n"
                ops = opscript.parse(text)
                m = model.Model(names="dual")
                m.apply(ops)
                img = os.path.join(tmp, f"s{s}.img")
                U.core_mkfs(img, FS)
                got = U.core_apply(img, text, "dual", seed=s + 1)
                self.assertEqual(len(got), len(ops), f"script {s}: core answered {len(got)} ops")
                bad = [f"  line {o.line}: {opscript.format_op(o)}: model {want}, core {have['result']}"
                       for o, want, have in zip(ops, m.results, got) if want != have["result"]]
                if bad:
                    self.fail(f"script {s} (seed {1000 + s}): {len(bad)} of {len(ops)} op results "
                              f"differ:\n" + "\n".join(bad[:40]))
                listing = U.core_ls(img)
                diff = U.listing_diff(m.entries(), listing)
                if diff:
                    self.fail(f"script {s}: trees differ:\n{diff[:6000]}")
                bad = alias_problems(m.aliases(), listing)
                if bad:
                    self.fail(f"script {s}: aliases differ:\n" + "\n".join(bad[:40]))
                totals.update(g.kinds)
                totals.update(f"result {r}" for r in m.results)
                names |= g.names
                n_ops += len(ops)
                for a in m.aliases().values():
                    if isinstance(a, model.HexAlias):
                        alias_kinds["hex"] += 1
                    elif a is None:
                        alias_kinds["bare 8.3"] += 1
                    elif re.search(r"~[1-9](\.|$)", a):
                        alias_kinds["~" + re.search(r"~([1-9])", a).group(1)] += 1
                    else:
                        alias_kinds["plain"] += 1
        print(f"\n{len(names)} distinct names, {n_ops} ops compared; ops: {dict(sorted(totals.items()))}; "
              f"final aliases: {dict(sorted(alias_kinds.items()))}", file=sys.stderr)
        # the scripts must really exercise what they are about
        self.assertGreaterEqual(len(names), 300)
        self.assertGreaterEqual(totals["alias create"] + totals["alias mkdir"], 20)
        self.assertGreaterEqual(totals["alias rename-onto"] + totals["alias remove"], 20)
        for k in ("plain", "~1", "~2", "~9", "hex", "bare 8.3"):
            self.assertGreater(alias_kinds[k], 0, f"no {k} alias at the end: {alias_kinds}")
        self.assertGreater(totals["result EEXIST"], 50)

    def test_plain_form_clash_and_numtail(self):
        """Fixed cases whose verdicts follow from the kernel's rules:
        the core must agree with the model on them too."""
        text = "\n".join([
            'create "/longfilename.txt" 3 1',
            'create "/LONGFI~1.TXT" 3 2',             # the alias of the line above
            'mkdir "/d"',
            'rename "/d" "/LONGFI~2.TXT"',            # bare, so the next long name gets ~3
            'create "/longfilenameB.txt" 1 1',
            'write "/longfi~3.txt" 0 2 9',
            'create "/É" 1 1',
            'create "/é" 1 1',                        # lookup misses, the plain form É is taken
            'rename "/É" "/é"',                       # É's own alias takes the form: EEXIST
            'rename "/longfilename.txt" "/longfilenameC.txt"',   # own ~1 still there: ~4
            'unlink "/LONGFI~3.TXT"',
            'create "/longfilenameD.txt" 1 1',        # ~1 (free again after the rename)
            'create "/longfilenameE.txt" 1 1',        # ~3
        ] + [f'create "/longfilename{k}.txt" 1 1' for k in range(8)] + [
            'create "/LONGFI~9.TXT" 1 1',             # the alias of longfilename4.txt
            # hex aliases (longfilename5..7) block no form and match no lookup
            'rename "/longfilename5.txt" "/longfilename5b.txt"',   # ~1..~9 taken: hex again
            'unlink "/LONGFI~6.TXT"',                 # longfilename1.txt
            'create "/longfilenameF.txt" 1 1',        # ~6, not a hex tail
            'mkdir "/longfilename6.txt"',             # found by its long name: EEXIST
            'create "/LONGFI~6.TXT/x" 1 1',           # a path through the new ~6
        ]) + "\n"
        ops = opscript.parse(text)
        m = model.Model(names="dual")
        m.apply(ops)
        with tempfile.TemporaryDirectory() as tmp:
            img = os.path.join(tmp, "f.img")
            U.core_mkfs(img, "fat16")
            got = [r["result"] for r in U.core_apply(img, text, "dual")]
            listing = U.core_ls(img)
        self.assertEqual(m.results, got)
        self.assertEqual(got[1], "EEXIST")
        self.assertEqual(got[7:9], ["EEXIST", "EEXIST"])
        self.assertEqual(alias_problems(m.aliases(), listing), [])
        shown = {e["path"]: decode_short(e["short"]) for e in listing}
        self.assertEqual(shown["/longfilenameC.txt"], "LONGFI~4.TXT")
        self.assertEqual(shown["/longfilenameD.txt"], "LONGFI~1.TXT")
        self.assertEqual(shown["/longfilenameE.txt"], "LONGFI~3.TXT")
        self.assertEqual(shown["/longfilenameF.txt"], "LONGFI~6.TXT")
        self.assertEqual(got[-4:], ["ok", "ok", "EEXIST", "ENOTDIR"])
        hexes = sorted(p for p, a in m.aliases().items() if isinstance(a, model.HexAlias))
        self.assertEqual(hexes, ["/longfilename5b.txt", "/longfilename6.txt", "/longfilename7.txt"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
