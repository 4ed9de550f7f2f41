"""Detection power measured by automatic mutants of the core (issue 18).

    vfatfuzz selftest --mutants N [--seed S] [--budget SECONDS] [--files LIST]
                      [--mutants-out JSONL] [--rerun JSONL] [--unit]

No mutation tool for C is packaged for Debian 12 (mull, dextool,
universalmutator: none in bookworm; the npm ones mutate JavaScript), so
the operators are ours and small: a tokenizer over the C source lines of
core/src that skips comments, string and character literals, preprocessor
lines and code under `#ifdef VFAT_FAULT_*` / `VFAT_INDEX_PARANOID`:

    ror   relational swap          <  <=  >  >=  ==  !=
    aor   arithmetic / bitwise     + -  * /  % /  << >>  & |  ^ |  && ||
                                   += -=  &= |=  ++ --
    cst   off by one in a constant N -> N+1, N-1 (decimal or hex literal)
    neg   negated condition        if (c) -> if (!(c)), while (c) -> while (!(c))
    del   deleted statement/call   a one-line statement -> ';'
    swp   swapped arguments        f(a, b) -> f(b, a)

A binary operator is taken only between a value and a space-separated
right operand (Linux style writes `a - b`, `*p`, `-1`), so pointer
declarators, dereferences and unary minus are left alone. Every site of
every file is listed in source order; --seed shuffles each file's sites
(random.Random(seed), printed), and the files are taken in turn until N
mutants compiled. A mutant that does not compile is skipped (counted),
and so is one that breaks a rule GCC 14 enforces (an integer passed for
a pointer: -Werror=int-conversion and kin; GCC 12 only warns).

Each mutant is built as only the vfat CLI by vfz.selftest.hunt.build_fault
from a copy of the source tree (build-mutants/TAG/tree/ from git HEAD, one
file mutated at a time; build-fault-TAG/, TAG = MUTANT by default, so each
build recompiles one object). A mutant
whose stripped binary equals the unmutated tree's is equivalent by
construction (TCE) and is not hunted. The others are hunted by
vfz.selftest.hunt.hunt, the planted faults' focused loop: generated and
enriched scripts on FAT12/16/32 written by the core writers of the mutant
build, read by the readers, and a divergence counts only when the
reference build (build/vfat) does not show the same signature. The first
one is minimised. Survivors (with --unit) also run the C unit suites
(tests/unit_*.c) built against the mutant: a survivor that passes them and
stays silent under a long budget (--rerun with a larger --budget) is an
equivalent candidate.

Closing the gaps the first full run's survivors showed (reports/mutation.md):
--twins [LIST] adds the core writers' twins (the kernel writers, Entry.twin)
as writers no reader reads (Checker(unread=)), so vfz.check.twins compares the
mutant's bytes with the kernel's; --sanitize builds every tree with the asan
preset (a sanitizer report or assertion aborts the tool: a failed answer);
--formatters vfat makes the pristine volumes with the mutant's own mkfs;
--tour starts each hunt with vfz.campaign.steer's tours (and, on the mutant's
volumes, a probe of every other FAT type first); the reader vfat-check-own
is the mutant's own checker. --git REV mutates REV's core/src (behind HEAD's
CLI front end), so a later run hunts the same mutants.

One JSON line per mutant goes to --mutants-out (default
build-mutants/TAG/results.jsonl) as soon as it is known, so a run in the
background can be read while it goes on and resumed (same file: done
mutants are skipped). `python3 -m vfz.selftest.mutants report JSONL...` prints the
Markdown report (killed, survivors with their diff, score per file).
"""
import filecmp
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, OrderedDict

from vfz import REPO, errors
from vfz.campaign import loop as campaign
from vfz.check import checker


SRC = os.path.join(REPO, "core", "src")
DEFAULT_FILES = ["names.c", "namei.c", "dir.c", "fatent.c", "mkfs.c"]
WORK = os.path.join(REPO, "build-mutants")
TREE_FILES = ["CMakeLists.txt", "CMakePresets.json"]
FAULT_NAME = "MUTANT"
DEAD_MACROS = re.compile(r"\bVFAT_(FAULT_\w+|INDEX_PARANOID)\b")

ROR = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
AOR = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "/", "<<": ">>", ">>": "<<", "&": "|",
       "|": "&", "^": "|", "&&": "||", "||": "&&", "+=": "-=", "-=": "+=", "&=": "|=",
       "|=": "&=", "++": "--", "--": "++"}
PUNCT = sorted(["<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
                "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="], key=len, reverse=True)
TYPE_WORDS = {"int", "unsigned", "signed", "char", "short", "long", "void", "const", "struct",
              "static", "size_t", "bool", "enum", "union", "register", "volatile", "double",
              "float", "vfat_vol"}
NOT_CALLS = {"if", "while", "for", "switch", "return", "sizeof", "case"}
NUM = re.compile(r"(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)$")


class Mutant:
    """One textual change of one line: text[line][col:end] old -> new."""

    def __init__(self, file, line, col, end, old, new, op):
        self.file, self.line, self.col, self.end = file, line, col, end
        self.old, self.new, self.op = old, new, op

    @property
    def id(self):
        d = ""
        if self.op == "cst":        # two mutants of one constant
            d = "+1" if int(NUM.match(self.new).group(1), 0) > int(NUM.match(self.old).group(1), 0) else "-1"
        return f"{self.file}:{self.line}:{self.col}:{self.op}{d}"

    @property
    def key(self):
        return (self.file, self.line, self.col, self.new)

    def apply(self, text):
        lines = text.split("\n")
        ln = lines[self.line - 1]
        assert ln[self.col:self.end] == self.old, (self.id, ln[self.col:self.end], self.old)
        lines[self.line - 1] = ln[:self.col] + self.new + ln[self.end:]
        return "\n".join(lines)

    def diff(self, text):
        a = text.split("\n")[self.line - 1]
        b = self.apply(text).split("\n")[self.line - 1]
        return f"{self.file}:{self.line}\n- {a.strip()}\n+ {b.strip()}"

    def describe(self):
        return f"{self.op} {self.old.strip()[:40]!r} -> {self.new.strip()[:40]!r}"

    def to_dict(self):
        return {"id": self.id, "file": self.file, "line": self.line, "col": self.col,
                "op": self.op, "old": self.old, "new": self.new}


# ---------------------------------------------------------------- scanning
def code_spans(text):
    """-> [(lineno, line, [(start, end) of code outside comments and
    literals], live)], skipping preprocessor lines; live is False inside a
    VFAT_FAULT_* / VFAT_INDEX_PARANOID conditional (dead in normal builds).
    String and char literals are kept as opaque spans marked by kind."""
    out = []
    in_comment = False
    cont = False          # preprocessor continuation
    stack = []            # per #if: dead-branch flag
    for no, line in enumerate(text.split("\n"), 1):
        s = line.lstrip()
        if cont or (not in_comment and s.startswith("#")):
            if not cont:
                d = s[1:].strip()
                word = d.split(None, 1)[0] if d else ""
                cond = d[len(word):]
                if word in ("if", "ifdef", "ifndef"):
                    dead_if = bool(DEAD_MACROS.search(cond)) and word != "ifndef"
                    dead_else = bool(DEAD_MACROS.search(cond)) and word == "ifndef"
                    stack.append([dead_if, dead_else, False])
                elif word in ("else", "elif") and stack:
                    stack[-1][2] = True
                elif word == "endif" and stack:
                    stack.pop()
            cont = line.rstrip().endswith("\\")
            continue
        live = not any(e[1] if e[2] else e[0] for e in stack)
        spans = []
        i, n = 0, len(line)
        start = 0
        while i < n:
            if in_comment:
                j = line.find("*/", i)
                if j < 0:
                    i = n
                    start = n
                    break
                in_comment = False
                i = j + 2
                start = i
                continue
            c = line[i]
            if line.startswith("/*", i):
                if i > start:
                    spans.append((start, i))
                in_comment = True
                i += 2
                continue
            if line.startswith("//", i):
                if i > start:
                    spans.append((start, i))
                start = i = n
                break
            if c in "\"'":
                if i > start:
                    spans.append((start, i))
                j = i + 1
                while j < n and line[j] != c:
                    j += 2 if line[j] == "\\" else 1
                spans.append((i, min(j + 1, n), "lit"))
                i = start = min(j + 1, n)
                continue
            i += 1
        if not in_comment and start < n:
            spans.append((start, n))
        out.append((no, line, spans, live))
    return out


def tokens(line, spans):
    """-> [(start, end, text, kind)] with kind in ident|num|punct|lit."""
    toks = []
    for sp in spans:
        if len(sp) == 3:
            toks.append((sp[0], sp[1], line[sp[0]:sp[1]], "lit"))
            continue
        i, end = sp
        while i < end:
            c = line[i]
            if c.isspace():
                i += 1
            elif c.isalpha() or c == "_":
                j = i
                while j < end and (line[j].isalnum() or line[j] == "_"):
                    j += 1
                toks.append((i, j, line[i:j], "ident"))
                i = j
            elif c.isdigit():
                j = i
                while j < end and (line[j].isalnum() or line[j] in "._"):
                    j += 1
                toks.append((i, j, line[i:j], "num"))
                i = j
            else:
                p = next((p for p in PUNCT if line.startswith(p, i) and i + len(p) <= end), c)
                toks.append((i, i + len(p), p, "punct"))
                i += len(p)
    return toks


def _value_end(tok):
    return tok is not None and (tok[3] in ("ident", "num", "lit") or tok[2] in (")", "]")) \
        and tok[2] not in NOT_CALLS


def _match(toks, k):
    """Index of the token closing the bracket at toks[k] (same line), or None."""
    o = toks[k][2]
    c = {"(": ")", "[": "]", "{": "}"}[o]
    depth = 0
    for j in range(k, len(toks)):
        if toks[j][2] == o:
            depth += 1
        elif toks[j][2] == c:
            depth -= 1
            if depth == 0:
                return j
    return None


def _is_decl(toks):
    if not toks:
        return True
    if toks[0][2] in TYPE_WORDS or toks[0][2].endswith("_t"):
        return True
    if len(toks) >= 2 and toks[0][3] == "ident" and toks[1][3] == "ident":
        return True
    if len(toks) >= 3 and toks[0][3] == "ident" and toks[1][2] == "*" and toks[2][3] == "ident" \
            and toks[1][0] == toks[2][0] - 1:
        return True
    return False


def sites(fname, text):
    """Every mutation site of one file, in source order."""
    out = []
    lines = code_spans(text)
    prev_code = ""
    for idx, (no, line, spans, live) in enumerate(lines):
        toks = tokens(line, spans)
        code = "".join(line[a:b] if len(sp) == 2 else '""' for sp in spans for a, b in [sp[:2]])
        if not live or not toks:
            if code.strip():
                prev_code = code.strip()
            continue
        for k, (a, b, t, kind) in enumerate(toks):
            prev = toks[k - 1] if k else None
            spaced = a > 0 and line[a - 1] == " " and b < len(line) and line[b] == " "
            if kind == "punct" and t in ROR and _value_end(prev) and spaced:
                out.append(Mutant(fname, no, a, b, t, ROR[t], "ror"))
            elif kind == "punct" and t in ("++", "--"):
                out.append(Mutant(fname, no, a, b, t, AOR[t], "aor"))
            elif kind == "punct" and t in AOR and _value_end(prev) and spaced:
                out.append(Mutant(fname, no, a, b, t, AOR[t], "aor"))
            elif kind == "num":
                m = NUM.match(t)
                if not m or (prev and prev[2] == "[" and k == 2):
                    continue
                body, suf = m.groups()
                v = int(body, 0)
                fmt = (lambda x: f"0x{x:X}" + suf) if body[:2] in ("0x", "0X") else (lambda x: f"{x}{suf}")
                out.append(Mutant(fname, no, a, b, t, fmt(v + 1), "cst"))
                if v > 0:
                    out.append(Mutant(fname, no, a, b, t, fmt(v - 1), "cst"))
            elif kind == "ident" and t in ("if", "while") and k + 1 < len(toks) and toks[k + 1][2] == "(":
                j = _match(toks, k + 1)
                if j is not None and not (prev and prev[2] == "}" and t == "while"):
                    s, e = toks[k + 1][0], toks[j][1]
                    inner = line[s + 1:e - 1]
                    out.append(Mutant(fname, no, s, e, line[s:e], f"(!({inner}))", "neg"))
            elif kind == "ident" and t not in NOT_CALLS and k + 1 < len(toks) and toks[k + 1][2] == "(" \
                    and (prev is None or prev[2] not in ("*",) and prev[3] != "ident"):
                j = _match(toks, k + 1)
                if j is None:
                    continue
                args, depth, st = [], 0, k + 2
                for q in range(k + 2, j):
                    if toks[q][2] in "([{":
                        depth += 1
                    elif toks[q][2] in ")]}":
                        depth -= 1
                    elif toks[q][2] == "," and depth == 0:
                        args.append((st, q - 1))
                        st = q + 1
                if st <= j - 1:
                    args.append((st, j - 1))
                for q in range(len(args) - 1):
                    (s1, e1), (s2, e2) = args[q], args[q + 1]
                    x = line[toks[s1][0]:toks[e1][1]]
                    y = line[toks[s2][0]:toks[e2][1]]
                    if x != y:
                        out.append(Mutant(fname, no, toks[s1][0], toks[e2][1],
                                          line[toks[s1][0]:toks[e2][1]],
                                          f"{y}{line[toks[e1][1]:toks[s2][0]]}{x}", "swp"))
        # deleted statement: one whole statement on this line
        st = line.strip()
        starts_stmt = prev_code.endswith((";", "{", "}", ")", ":")) or prev_code.startswith(("else",))
        if st.endswith(";") and starts_stmt and toks[-1][2] == ";" and not _is_decl(toks) \
                and toks[0][2] not in ("for", "case", "default", "if", "while", "else") \
                and sum(1 for x in toks if x[2] == ";") == 1 and "{" not in st and "}" not in st \
                and not (toks[0][2] == "return" and line.startswith("\t") and not line.startswith("\t\t")):
            parens = sum(1 for x in toks if x[2] == "(") - sum(1 for x in toks if x[2] == ")")
            if parens == 0:
                a = toks[0][0]
                out.append(Mutant(fname, no, a, toks[-1][1], line[a:toks[-1][1]], ";", "del"))
        if code.strip():
            prev_code = code.strip()
    return out


def select(files, seed, texts=None):
    """Yield mutants in the order they are tried. Each file's sites are
    grouped by operator and each group shuffled by random.Random(seed);
    a file yields its operators in turn (so the many constants of the
    tables do not crowd out the rest), and the files are taken in turn."""
    rng = random.Random(seed)
    queues = OrderedDict()
    for f in files:
        text = texts[f] if texts else read_src(f)
        groups = OrderedDict()
        for m in sites(f, text):
            groups.setdefault(m.op, []).append(m)
        for g in groups.values():
            rng.shuffle(g)
        order = list(groups)
        rng.shuffle(order)
        q = []
        while any(groups.values()):
            for op in order:
                if groups[op]:
                    q.append(groups[op].pop(0))
        queues[f] = q
    while any(queues.values()):
        for f in queues:
            if queues[f]:
                yield queues[f].pop(0)


def read_src(f):
    """core/src/f as committed (git HEAD)."""
    return subprocess.run(["git", "-C", REPO, "show", f"HEAD:core/src/{f}"], capture_output=True,
                          text=True, check=True).stdout


# ---------------------------------------------------------------- building
class Tree:
    """A copy of the sources the vfat CLI and the unit suites build from
    (build-mutants/TAG/tree/), with at most one file mutated at a time."""

    def __init__(self, tag=FAULT_NAME, rev="HEAD", preset="default"):
        self.tag = tag
        self.rev = rev
        self.preset = preset          # "asan": the sanitizers' build (build-fault-TAG-asan/)
        self.root = os.path.join(WORK, tag, "tree")
        self.orig = {}

    @property
    def bdir(self):
        return os.path.join(REPO, f"build-fault-{self.tag}" + ("" if self.preset == "default"
                                                               else f"-{self.preset}"))

    def sync(self):
        """The committed sources (git HEAD, or the revision asked for), not
        the working tree: others edit core/src while a run goes on."""
        old = {}
        for d, _, fs in os.walk(self.root):
            for f in fs:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    old[os.path.relpath(p, self.root)] = (fh.read(), os.stat(p).st_mtime)
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)
        units = ["tests"]            # the unit suites, and the tests CMakeLists.txt names
        cml = subprocess.run(["git", "-C", REPO, "show", f"{self.rev}:CMakeLists.txt"], capture_output=True,
                             text=True, check=True).stdout
        extra = [f for args in re.findall(r"add_executable\(\w+ ([^)$]*)\)", cml)    # study_collide, ...
                 for f in args.split() if f.endswith(".c")]
        arch = subprocess.run(["git", "-C", REPO, "archive", self.rev, *TREE_FILES, "core", *units, *extra],
                              capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", self.root], input=arch.stdout, check=True)
        if self.rev != "HEAD":
            # an earlier core behind today's CLI front end (core/cli: its
            # sparse image I/O; 2a2bfb7's read and rewrote every byte of a
            # 34 MB FAT32 image per call, ~1 s each at our disk's pace)
            arch = subprocess.run(["git", "-C", REPO, "archive", "HEAD", "core/cli"],
                                  capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", self.root], input=arch.stdout, check=True)
        # tar gives the commit's time, older than the objects of an earlier
        # mutant in build-fault-TAG/: a file keeps the time it had in the
        # last tree when its text is the same, else it is dated now
        now = time.time()
        for d, _, fs in os.walk(self.root):
            for f in fs:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    prev = old.get(os.path.relpath(p, self.root))
                    t = prev[1] if prev and prev[0] == fh.read() else now
                os.utime(p, (t, t))
        self.head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", self.rev],
                                   capture_output=True, text=True).stdout.strip()

    def text(self, f):
        if f not in self.orig:
            with open(os.path.join(self.root, "core", "src", f), encoding="utf-8") as fh:
                self.orig[f] = fh.read()
        return self.orig[f]

    def write(self, f, text):
        p = os.path.join(self.root, "core", "src", f)
        with open(p + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(p + ".tmp", p)

    def mutate(self, m):
        self.write(m.file, m.apply(self.text(m.file)))

    def restore(self, m):
        self.write(m.file, self.text(m.file))


def build(tree, preset=None):
    """The vfat CLI of the tree as it is, in build-fault-<TAG>/ (the
    planted faults' builder, warnings not fatal: a mutant is a plausible
    bug, not lint; preset asan: build-fault-<TAG>-asan/) -> (path, error)."""
    from vfz.selftest import hunt as cmd_selftest
    vfat, err, _ = cmd_selftest.build_fault(tree.tag, werror=False, src=tree.root,
                                            preset=preset or tree.preset)
    return vfat, err


STRICT = ["-Werror=int-conversion", "-Werror=incompatible-pointer-types", "-Werror=int-to-pointer-cast",
          "-Werror=implicit-function-declaration", "-Werror=return-type"]


def strict_error(tree, m):
    """The first error of the mutated file under the C rules GCC 14
    enforces by default (an integer passed for a pointer and the like:
    constraint violations GCC 12 only warns about), or None. Such a
    mutant does not compile, it is not a plausible bug."""
    p = subprocess.run(["cc", "-std=c11", "-fsyntax-only", *STRICT,
                        "-I", os.path.join(tree.root, "core", "include"),
                        "-I", os.path.join(tree.root, "core", "src"),
                        os.path.join(tree.root, "core", "src", m.file)],
                       capture_output=True, text=True, errors="replace")
    if p.returncode == 0:
        return None
    return next((ln.strip() for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:200])


def stripped(vfat, out):
    """A copy of vfat without symbols and debug info (column numbers move
    when a token grows) -> out."""
    p = subprocess.run(["strip", "-o", out, vfat], capture_output=True, text=True, errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"strip failed: {p.stderr.strip()}")
    return out


def unit_suites(tree):
    """Build and run the C unit suites against the tree -> (ok, detail)."""
    bdir = tree.bdir
    names = sorted(f[:-2] for f in os.listdir(os.path.join(tree.root, "tests"))
                   if f.startswith("unit_") and f.endswith(".c"))
    p = subprocess.run(["cmake", "--build", bdir, "-j2", "--target", *names], capture_output=True,
                       text=True, errors="replace", timeout=900)
    if p.returncode != 0:
        return False, "unit suites do not build: " + next(
            (ln.strip() for ln in (p.stdout + p.stderr).splitlines() if "error" in ln), "?")[:160]
    for n in names:
        try:
            q = subprocess.run([os.path.join(bdir, n)], capture_output=True, text=True, errors="replace",
                               timeout=120)
        except subprocess.TimeoutExpired:
            return False, f"{n}: timeout"
        if q.returncode != 0:
            last = (q.stdout + q.stderr).strip().splitlines()[-1:] or [f"exit {q.returncode}"]
            return False, f"{n}: {last[0][:160]}"
    return True, ", ".join(names) + " pass"


# ---------------------------------------------------------------- running
MUTANT_WRITE_TIMEOUT = 20.0     # a mutant may loop for ever; the core applies a script in < 1 s


def add_arguments(p):
    p.add_argument("--mutants", type=int, metavar="N",
                   help="instead of the planted faults: N compiling mutants of core/src (vfz.selftest.mutants)")
    p.add_argument("--files", help=f"with --mutants: core/src files to mutate (default "
                                   f"{','.join(DEFAULT_FILES)})")
    p.add_argument("--mutants-out", help="with --mutants: JSON lines, one per mutant, appended "
                                         "(default build-mutants/TAG/results.jsonl; done mutants are skipped)")
    p.add_argument("--rerun", help="with --mutants: hunt again only the survivors of this JSONL "
                                   "(same seed and files)")
    p.add_argument("--mutants-tag", default=FAULT_NAME, metavar="TAG",
                   help="with --mutants: work in build-mutants/TAG/ and build-fault-TAG/ (default "
                        f"{FAULT_NAME}; two runs at once need two tags)")
    p.add_argument("--formatters", help="with --mutants: who makes the pristine volumes, the budget "
                                        "shared in turn: mkfs.fat (default), vfat (the mutant's own "
                                        "`vfat mkfs`), or both: mkfs.fat,vfat")
    p.add_argument("--shard", default="0/1", metavar="I/N",
                   help="with --mutants: take only the I-th of every N mutants of the sequence and "
                        "N/M of the count (N processes, each with its own --mutants-tag and output, "
                        "share one run; the union is the sample of a single process)")
    p.add_argument("--tour", action="store_true",
                   help="with --mutants: each hunt starts with vfz.campaign.steer's tour (near-full volume, "
                        "allocation wrapping into a freed hole, dirs to and from the root, a deep "
                        "tree, every name class; FAT12 on the first formatter, FAT16 on the second)")
    p.add_argument("--unit", action="store_true",
                   help="with --mutants: run the C unit suites on each survivor")
    p.add_argument("--twins", nargs="?", const="all", metavar="LIST",
                   help="with --mutants: the core writers' twins (Entry.twin: the kernel writers, one "
                        "persistent QEMU guest per module set for the whole run) write every script "
                        "too, unread, for the twin byte comparison (vfz.check.twins); LIST: only these "
                        "twins (e.g. kernel: core-dual's)")
    p.add_argument("--sanitize", action="store_true",
                   help="with --mutants: build the unmutated tree and each mutant with the asan "
                        "preset only (clang -O0, ASan+UBSan+LSan, directory index cross-checked): "
                        "a memory error or leak of a writer or of `vfat ls` is a failed answer")
    p.add_argument("--git", default="HEAD", metavar="REV",
                   help="with --mutants: mutate core/src as committed in REV (default HEAD; an "
                        "earlier run's revision draws the same mutants with the same seed); the vfat "
                        "CLI front end (core/cli) stays HEAD's")


def confirm(h, vfat, base, readers, writers, formatter="mkfs.fat", unread=()):
    """A kill seen by the hunt, checked once more on fresh checkers (no
    state shared with the long-lived reference checker): the minimised
    script must show the signature on the mutant and not on the
    unmutated build -> (confirmed, note)."""
    from vfz import findings, opscript
    ops = opscript.parse(h["script"])
    rdr = [h["oracle"]] if "role=reader" in (h["signature"] or "") else []
    seen = []
    for v in (vfat, base):
        ck = checker.Checker(readers, writers, vfat=v, timeout=30.0, notes=[], unread=unread,
                             **({"formatter": formatter} if formatter != "mkfs.fat" else {}))
        try:
            res = ck.check(ops, h["fs"], writers=[h["writer"]], readers=rdr)
            seen.append(any(findings.sig_text(d.fields) == h["signature"] for d in res.divs.values()))
        finally:
            ck.close()
    if not seen[0]:
        return False, "the mutant does not show the signature again on a fresh checker"
    if seen[1]:
        return False, "a fresh checker shows the same signature on the unmutated build"
    return True, ""


def load_rows(path):
    rows = []
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for ln in f:
                ln = ln.strip()
                if ln:
                    rows.append(json.loads(ln))
    return rows


def run(args):
    from vfz.selftest import hunt as cmd_selftest
    from vfz.check import diff
    if args.mutants <= 0 or args.budget <= 0:
        print("vfatfuzz selftest: --mutants and --budget must be positive", file=sys.stderr)
        return 2
    files = [f.strip() for f in (args.files or ",".join(DEFAULT_FILES)).split(",") if f.strip()]
    for f in files:
        if not os.path.isfile(os.path.join(SRC, f)) or not f.endswith(".c"):
            print(f"vfatfuzz selftest: --files: no core/src/{f}", file=sys.stderr)
            return 2
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", args.mutants_tag or ""):
        print("vfatfuzz selftest: --mutants-tag: upper-case letters, digits and '_'", file=sys.stderr)
        return 2
    work = os.path.join(WORK, args.mutants_tag)
    out = os.path.abspath(args.mutants_out or os.path.join(work, "results.jsonl"))
    shard = re.fullmatch(r"(\d+)/(\d+)", args.shard or "")
    if not shard or int(shard.group(1)) >= int(shard.group(2)):
        print("vfatfuzz selftest: --shard: I/N with 0 <= I < N", file=sys.stderr)
        return 2
    shard_i, shard_n = int(shard.group(1)), int(shard.group(2))
    if subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", "--quiet", f"{args.git}^{{commit}}"],
                      capture_output=True).returncode != 0:
        print(f"vfatfuzz selftest: --git: no commit {args.git}", file=sys.stderr)
        return 2
    writers = args.writers.split(",") if args.writers else list(checker.DEFAULT_WRITERS)
    unread = []
    if args.twins:
        from vfz import oracles
        unread = [t for t in dict.fromkeys(oracles.entry(w).twin for w in writers) if t and t not in writers]
        if args.twins != "all":
            want = [t.strip() for t in args.twins.split(",") if t.strip()]
            bad = [t for t in want if t not in unread]
            if bad:
                print(f"vfatfuzz selftest: --twins: {','.join(bad)} is no twin of the writers "
                      f"(twins: {','.join(unread)})", file=sys.stderr)
                return 2
            unread = want
        writers = writers + unread
    if args.sanitize:
        # a sanitizer report aborts the tool: the writer (or `vfat ls`) failed
        os.environ["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1:allocator_may_return_null=1"
        os.environ["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"
    rerun = None
    if args.rerun:
        if not os.path.isfile(args.rerun):
            print(f"vfatfuzz selftest: --rerun: no file {args.rerun}", file=sys.stderr)
            return 2
        rerun = {(r["file"], r["line"], r["col"], r["new"]) for r in load_rows(args.rerun)
                 if r.get("status") in ("survived", "unconfirmed")}
    print(f"mutants: seed {args.seed}, {args.mutants} over {','.join(files)}, budget {args.budget:g} s, "
          f"results in {out}", flush=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    prior = load_rows(out)
    done = {r["id"] for r in prior if r.get("status") != "nocompile"}
    failed = {r["id"] for r in prior if r.get("status") == "nocompile"}
    diff.WRITE_TIMEOUT = MUTANT_WRITE_TIMEOUT
    # --sanitize: the asan preset builds every tree (clang, -O0): what
    # compiles is what gcc's -fsyntax-only (strict_error) and clang accept
    tree = Tree(args.mutants_tag, args.git, "asan" if args.sanitize else "default")
    tree.sync()
    t = time.monotonic()
    base, err = build(tree)
    if err:
        print(f"vfatfuzz selftest: the unmutated tree does not build: {err}", file=sys.stderr)
        return 2
    base_copy = os.path.join(work, "vfat-base")
    shutil.copy2(base, base_copy)
    base_strip = stripped(base_copy, os.path.join(work, "vfat-base.stripped"))
    print(f"unmutated tree (git {tree.head}) built in {time.monotonic() - t:.0f} s", flush=True)
    ref = campaign.vfat_default()
    cmd_selftest._REF[:] = [ref]
    notes = []
    readers = args.oracles.split(",") if args.oracles else cmd_selftest.FAST_READERS
    formatters = [f.strip() for f in (args.formatters or "mkfs.fat").split(",") if f.strip()]
    refcks = []
    try:
        # the reference writers are the unmutated tree's, so a change made
        # to core/src by someone else during the run is never a detection;
        # one reference checker per formatter of the pristine volumes
        for fmt in formatters:
            refcks.append(checker.Checker(readers, writers, vfat=base_copy, timeout=30.0, notes=notes,
                                          unread=unread,
                                          **({"formatter": fmt} if fmt != "mkfs.fat" else {})))
    except errors.UsageError as e:
        print(f"vfatfuzz selftest: {e}", file=sys.stderr)
        for ck in refcks:
            ck.close()
        return 2
    refck = refcks[0]
    for n in notes:
        print(f"note: {n[:300]}")
    print(f"readers {','.join(refck.reader_names)}; writers {','.join(refck.writer_names)}"
          + (f" ({','.join(unread)} unread: twins)" if unread else "")
          + f"; volumes by {' then '.join(formatters)} ({args.budget / len(formatters):g} s each)"
          + (f"; core of git {tree.head}" + ("; asan builds" if args.sanitize else "")), flush=True)
    config = {"twins": sorted(set(refck.writer_names) & set(unread)), "sanitize": bool(args.sanitize),
              "tour": bool(args.tour), "writers": refck.writer_names}
    t = time.monotonic()
    for ck in refcks:
        # the VMs boot and the pristine volumes are made before any budget runs
        from vfz.campaign import steer
        for fs in campaign.DEFAULT_FS:
            ck.check(steer.probe(), fs)
    print(f"warm-up (pristine volumes{', VM boots' if unread else ''}) {time.monotonic() - t:.0f} s",
          flush=True)
    tours = None
    if args.tour:
        from vfz.campaign import steer
        # small volumes: the FAT32 tour writes ~30 MB, minutes per check at load 25
        picks = [["fat12", "fat16"]] if len(refcks) == 1 else [["fat12"], ["fat16"]] * 5
        tours = []
        for ck, fss in zip(refcks, picks):
            t = [(steer.tour(*steer.volume_free(ck.pristine_image(fs))), fs) for fs in fss]
            if getattr(ck, "formatter", None) == "vfat":
                # the mutant's mkfs on every FAT type first: a short script each
                t = [(steer.probe(), fs) for fs in campaign.DEFAULT_FS if fs not in fss] + t
            tours.append(t)
    counted = skipped = 0
    want = len(rerun) if rerun is not None else args.mutants
    if shard_n > 1 and rerun is None:
        want = (want + shard_n - 1 - shard_i) // shard_n
    try:
        for k, m in enumerate(select(files, args.seed, {f: tree.text(f) for f in files})):
            if counted >= want and rerun is None:
                break
            if k % shard_n != shard_i:
                continue
            if rerun is not None and m.key not in rerun:
                continue
            if rerun is None and m.id in done:
                counted += 1
                continue
            if rerun is None and m.id in failed:
                continue
            row = dict(m.to_dict(), diff=m.diff(tree.text(m.file)), seed=args.seed, budget=args.budget,
                       git=tree.head, readers=refck.reader_names, formatters=formatters, **config)
            try:
                tree.mutate(m)
                t = time.monotonic()
                try:
                    err = strict_error(tree, m)
                    vfat = None
                    if not err:
                        vfat, err = build(tree)
                finally:
                    tree.restore(m)
                row["build_s"] = round(time.monotonic() - t, 1)
                if err:
                    skipped += 1
                    row.update(status="nocompile", note=err[:200])
                    _append(out, row)
                    continue
                counted += 1
                if filecmp.cmp(stripped(vfat, os.path.join(work, "vfat-mut.stripped")), base_strip,
                               shallow=False):
                    row.update(status="equivalent", why="same machine code as the unmutated build (TCE)")
                else:
                    h, fmt = hunt(m, vfat, refcks, args, notes, tours)
                    row.update({k: h.get(k) for k in ("seconds", "ops", "oracle", "signature", "scripts",
                                                      "writer", "fs", "ops_orig", "script")})
                    row["status"] = "killed" if h["found"] else "survived"
                    if h["found"]:
                        row["formatter"] = fmt
                    if h["found"] and h.get("script") and "role=reader" in (h.get("signature") or ""):
                        # a writer's result or crash is the mutant's own; a
                        # reader's verdict is checked again on fresh checkers
                        ok, why = confirm(h, vfat, base_copy, refck.reader_names, refck.writer_names, fmt,
                                          unread)
                        if not ok:
                            row.update(status="unconfirmed", note=why)
                    if not h["found"] and args.unit:
                        tree.mutate(m)
                        try:
                            row["unit_ok"], row["unit"] = unit_suites(tree)
                        finally:
                            tree.restore(m)
                _append(out, row)
                print(f"[{counted}/{want}] {m.id} {m.describe()}: {row['status']}"
                      + (f" after {row['seconds']} s by {row['oracle']} ({row['ops']} ops): {row['signature']}"
                         if row["status"] == "killed" else "")
                      + (f" (unit: {row['unit']})" if "unit" in row else ""), flush=True)
            except Exception as e:       # a harness failure on one mutant is recorded, the run goes on
                row.update(status="error", note=f"{type(e).__name__}: {e}"[:300])
                _append(out, row)
                print(f"{m.id}: error: {row['note']}", flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        for ck in refcks:
            ck.close()
    rows = [r for r in load_rows(out) if r.get("seed") == args.seed]
    print()
    print(score_table(rows))
    print(f"{skipped} mutants did not compile (skipped)")
    return 0


def hunt(m, vfat, refcks, args, notes, tours=None):
    """cmd_selftest.hunt once per reference checker (formatter of the
    pristine volumes), the budget shared equally -> (row, formatter); the
    seconds of a kill count from the start of the first share."""
    import argparse
    from vfz.selftest import hunt as cmd_selftest
    share = argparse.Namespace(**dict(vars(args), budget=args.budget / len(refcks)))
    spent, scripts, h = 0.0, 0, None
    for k, ck in enumerate(refcks):
        t = time.monotonic()
        try:
            h = cmd_selftest.hunt(m.id, vfat, ck, share, notes, first=tours[k] if tours else ())
        except errors.UsageError as e:
            if getattr(ck, "formatter", None) != "vfat" or "vfat mkfs failed" not in str(e):
                raise
            for fs in campaign.DEFAULT_FS:      # the unmutated build formats them all
                ck.pristine_image(fs)
            return ({"found": True, "seconds": round(spent + time.monotonic() - t, 1), "ops": 0,
                     "oracle": "vfat mkfs", "scripts": scripts, "script": "", "writer": None, "fs": None,
                     "signature": "role=writer oracle=core verdict=failed kind=" + mkfs_failure(str(e))}, "vfat")
        scripts += h.get("scripts") or 0
        if h["found"]:
            h["seconds"] = round(h["seconds"] + spent, 1)
            h["scripts"] = scripts
            return h, getattr(ck, "formatter", "mkfs.fat")
        spent += time.monotonic() - t
    h["scripts"] = scripts
    return h, None


def mkfs_failure(msg):
    """The kind of a failed `vfat mkfs` (a sanitizer's report is long)."""
    if "Sanitizer" in msg or "runtime error" in msg:
        return "vfat mkfs failed: sanitizer report"
    return msg[:100]


def _append(path, row):
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- report
def latest(rows):
    """The last row per mutant id (a rerun supersedes)."""
    d = OrderedDict()
    for r in rows:
        d[r["id"]] = r
    return list(d.values())


def score_table(rows, budget=None):
    rows = [r for r in latest(rows) if r["status"] not in ("nocompile", "error")]
    per = OrderedDict()
    for r in rows:
        per.setdefault(r["file"], Counter())[r["status"]] += 1
    lines = ["| file | mutants | equivalent (TCE) | killed | survived | unconfirmed kill | score |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    tot = Counter()
    for f, c in list(per.items()) + [("all", None)]:
        if c is None:
            c = tot
        else:
            tot.update(c)
        n = sum(c.values())
        live = n - c["equivalent"]
        sc = f"{100.0 * c['killed'] / live:.0f} %" if live else "-"
        lines.append(f"| {f} | {n} | {c['equivalent']} | {c['killed']} | {c['survived']} | "
                     f"{c['unconfirmed']} | {sc} |")
    return "\n".join(lines)


def _cell(x):
    return str(x).replace("|", "\\|").replace("\n", " ")


def render(rows, title="Mutation score of the core"):
    """Markdown: score per file, kills by oracle, killed, survivors with diffs."""
    rows = latest(rows)
    comp = [r for r in rows if r["status"] != "nocompile"]
    killed = [r for r in comp if r["status"] == "killed"]
    surv = [r for r in comp if r["status"] in ("survived", "unconfirmed")]
    eq = [r for r in comp if r["status"] == "equivalent"]
    out = [f"## {title}", ""]
    seeds = sorted({r.get("seed") for r in rows})
    budgets = sorted({r.get("budget") for r in comp})
    readers = sorted({",".join(r.get("readers") or []) for r in comp})
    out.append(f"Seed {', '.join(map(str, seeds))}; budget {', '.join(map(str, budgets))} s per mutant; "
               f"core at git {', '.join(sorted({r.get('git', '?') for r in rows}))}; readers "
               f"{'; '.join(readers)}; {len(comp)} compiled mutants, "
               f"{len(rows) - len(comp)} did not compile (skipped).")
    out += ["", score_table(rows), ""]
    ops = Counter(r["op"] for r in comp)
    kops = Counter(r["op"] for r in killed)
    out.append("Per operator (killed/compiled): " + ", ".join(f"{o} {kops[o]}/{ops[o]}" for o in sorted(ops)))
    by = Counter(r.get("oracle") for r in killed)
    out.append("Killed by: " + ", ".join(f"{o} {n}" for o, n in by.most_common()))
    if killed:
        secs = sorted(r["seconds"] for r in killed)
        out.append(f"Seconds to the kill: median {secs[len(secs) // 2]}, max {secs[-1]}; minimised ops: "
                   f"median {sorted(r['ops'] or 0 for r in killed)[len(killed) // 2]}")
    out += ["", "### Killed", "", "| mutant | change | oracle | s | scripts | min ops | signature |",
            "|---|---|---|---:|---:|---:|---|"]
    for r in killed:
        out.append(f"| {r['id']} | {_cell(r['old'].strip()[:30])} → {_cell(r['new'].strip()[:30])} | "
                   f"{r['oracle']} | {r['seconds']} | {r.get('scripts')} | {r['ops']} | "
                   f"{_cell((r.get('signature') or '')[:110])} |")
    out += ["", "### Survivors", ""]
    for r in surv:
        out.append(f"- **{r['id']}** ({r['status']}{'; ' + r['note'] if r.get('note') else ''}; "
                   f"{r.get('scripts')} scripts"
                   + (f"; unit suites: {r['unit']}" if "unit" in r else "") + ")")
        out.append("")
        out.append("  ```diff")
        out += ["  " + ln for ln in r["diff"].splitlines()]
        out.append("  ```")
    if eq:
        out += ["", "### Equivalent by construction (same machine code)", ""]
        out += [f"- {r['id']}: {_cell(r['old'].strip())} → {_cell(r['new'].strip())}" for r in eq]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) >= 2 and argv[0] == "report":
        rows = []
        for p in argv[1:]:
            if not os.path.isfile(p):
                print(f"vfz.selftest.mutants: no file {p}", file=sys.stderr)
                return 2
            rows += load_rows(p)
        sys.stdout.write(render(rows))
        return 0
    if len(argv) >= 1 and argv[0] == "sites":
        for f in argv[1:] or DEFAULT_FILES:
            ss = sites(f, read_src(f))
            print(f, len(ss), dict(Counter(m.op for m in ss)))
        return 0
    print("usage: python3 -m vfz.selftest.mutants report JSONL... | sites [FILE...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
