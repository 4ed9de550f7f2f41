"""The C mutator: the mutation sites of a core/src file (sites), in the order a seed tries them (select).

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
every file is listed in source order; a seed shuffles each file's sites
(random.Random(seed)), and the files are taken in turn.
"""
import random
import re
import subprocess
from collections import OrderedDict

from vfz import REPO

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
