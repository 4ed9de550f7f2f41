"""Op-script format (docs/op-script.md): one operation a line, JSON-string paths.

    mkdir  "PATH"
    create "PATH" SIZE SEED      content byte i = (SEED + 31*i) mod 256
    write  "PATH" OFFSET SIZE SEED
    rename "FROM" "TO"
    unlink "PATH"
    rmdir  "PATH"
    truncate "PATH" SIZE
    chattr "PATH" ATTRS          a set of the letters r h s a, "-" = none
    touch  "PATH" MTIME ATIME    seconds since the epoch, an optional fraction
    label  "TEXT"                "" removes the label

The same parser feeds every writer (core, mtools, kernel agent), so the
rules for what is a valid script live here and only here.
"""
import json
import re
from dataclasses import dataclass, field

# argument kinds per operation: s = JSON string path, n = decimal number,
# a = attribute set (ATTR_LETTERS, "-" for none), t = time (Time),
# l = label text (a JSON string that is not a path)
OPS = {
    "mkdir": "s",
    "create": "snn",
    "write": "snnn",
    "rename": "ss",
    "unlink": "s",
    "rmdir": "s",
    "truncate": "sn",
    "chattr": "sa",
    "touch": "stt",
    "label": "l",
}
# the ops of the first grammar, and those that change what is not a name
# or data (attributes, times, the label: docs/op-script.md)
BASE_KINDS = ("mkdir", "create", "write", "rename", "unlink", "rmdir")
META_KINDS = ("truncate", "chattr", "touch", "label")
MAX_SIZE = 1 << 26  # 64 MiB per create/write/truncate: larger is a script error
ATTR_LETTERS = "rhsa"       # read-only, hidden, system, archive, in canonical order
ATTR_BITS = {"r": 0x01, "h": 0x02, "s": 0x04, "a": 0x20}
MAX_TIME_SEC = (1 << 63) - 1   # a time_t
_DECODER = json.JSONDecoder()
_TIME = re.compile(r"([0-9]+)(?:\.([0-9]{1,9}))?")


class Time(tuple):
    """A touch time: (seconds since the epoch, nanoseconds). str() is its
    script spelling: the fraction without trailing zeros, none when 0."""

    def __new__(cls, sec, nsec=0):
        return super().__new__(cls, (sec, nsec))

    sec = property(lambda self: self[0])
    nsec = property(lambda self: self[1])

    def __str__(self):
        if not self.nsec:
            return str(self.sec)
        return f"{self.sec}.{self.nsec:09d}".rstrip("0")

    def __repr__(self):
        return f"Time({self.sec}, {self.nsec})"


def attr_bits(letters):
    """The FAT attribute byte of a chattr set ("rh" -> 0x03)."""
    return sum(ATTR_BITS[c] for c in letters)


class OpScriptError(ValueError):
    """A script line that cannot be parsed; str() is the one-line message."""


@dataclass
class Op:
    kind: str
    args: list = field(default_factory=list)
    line: int = 0

    @property
    def path(self):
        return self.args[0]

    def __str__(self):
        return format_op(self)


def content(seed, size):
    """The bytes a create/write puts down: byte i = (seed + 31*i) mod 256."""
    seed %= 256
    pattern = bytes((seed + 31 * i) % 256 for i in range(256))
    reps, rest = divmod(size, 256)
    return pattern * reps + pattern[:rest]


def _check_path(p, lineno):
    if not p.startswith("/"):
        raise OpScriptError(f"line {lineno}: path {json.dumps(p)} is not absolute")
    if "\x00" in p:
        raise OpScriptError(f"line {lineno}: path contains a NUL character")
    try:
        p.encode("utf-8")
    except UnicodeEncodeError:
        raise OpScriptError(f"line {lineno}: path has an unpaired surrogate")


def _check_text(t, lineno):
    if "\x00" in t:
        raise OpScriptError(f"line {lineno}: label contains a NUL character")
    try:
        t.encode("utf-8")
    except UnicodeEncodeError:
        raise OpScriptError(f"line {lineno}: label has an unpaired surrogate")


def _word_end(rest, pos):
    """End of a bare word: the next blank or '#'."""
    end = pos
    while end < len(rest) and rest[end] not in " \t\r#":
        end += 1
    return end


def _attrs(w, word, lineno):
    """A chattr set: '-' (none) or distinct letters of ATTR_LETTERS in any
    order -> the letters in canonical order ('' for none)."""
    if w == "-":
        return ""
    if not w or any(c not in ATTR_LETTERS for c in w) or len(set(w)) != len(w):
        raise OpScriptError(f"line {lineno}: {word}: expected attributes: distinct letters of "
                            f"'{ATTR_LETTERS}', or '-' for none")
    return "".join(c for c in ATTR_LETTERS if c in w)


# Blanks around ops and arguments: those of the C parser (core/src/opscript.c).
WS = " \t\r"

# Line and paragraph separators other tools break lines at: written as
# escapes so that a script stays one op per line for every reader.
_SEPARATORS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _json_path(p):
    s = json.dumps(p, ensure_ascii=False)
    for ch, esc in _SEPARATORS.items():
        s = s.replace(ch, esc)
    return s


def parse_line(text, lineno=0):
    """Parse one line; returns an Op or None for blank/comment lines."""
    s = text.strip(WS)
    if not s or s.startswith("#"):
        return None
    cut = next((i for i, ch in enumerate(s) if ch in WS), len(s))
    word, rest = s[:cut], s[cut:]     # the C parser's blanks end the op's name
    if word not in OPS:
        raise OpScriptError(f"line {lineno}: unknown operation {word!r}")
    args = []
    pos = 0
    rest = rest.strip(WS)
    for kind in OPS[word]:
        while pos < len(rest) and rest[pos] in " \t":
            pos += 1
        if pos >= len(rest):
            raise OpScriptError(f"line {lineno}: {word}: missing argument")
        if kind == "s":
            if rest[pos] != '"':
                raise OpScriptError(f"line {lineno}: {word}: expected a JSON string")
            try:
                val, end = _DECODER.raw_decode(rest, pos)
            except json.JSONDecodeError as e:
                raise OpScriptError(f"line {lineno}: {word}: bad JSON string: {e.msg}")
            _check_path(val, lineno)
            args.append(val)
            pos = end
        elif kind == "l":
            if rest[pos] != '"':
                raise OpScriptError(f"line {lineno}: {word}: expected a JSON string")
            try:
                val, end = _DECODER.raw_decode(rest, pos)
            except json.JSONDecodeError as e:
                raise OpScriptError(f"line {lineno}: {word}: bad JSON string: {e.msg}")
            _check_text(val, lineno)
            args.append(val)
            pos = end
        elif kind == "a":
            end = _word_end(rest, pos)
            args.append(_attrs(rest[pos:end], word, lineno))
            pos = end
        elif kind == "t":
            end = _word_end(rest, pos)
            m = _TIME.fullmatch(rest[pos:end])
            if not m or not rest[pos:end].isascii():
                raise OpScriptError(f"line {lineno}: {word}: expected a time (seconds[.fraction])")
            sec = int(m.group(1)) if len(m.group(1)) <= 20 else MAX_TIME_SEC + 1
            if sec > MAX_TIME_SEC:
                raise OpScriptError(f"line {lineno}: {word}: time {sec} out of range")
            args.append(Time(sec, int((m.group(2) or "").ljust(9, "0"))))
            pos = end
        else:
            end = pos
            while end < len(rest) and rest[end].isdigit() and rest[end].isascii():
                end += 1
            if end == pos or (end < len(rest) and rest[end] not in " \t#"):
                raise OpScriptError(f"line {lineno}: {word}: expected a decimal number")
            val = int(rest[pos:end]) if end - pos <= 20 else 1 << 32
            if val > 0xFFFFFFFF:
                raise OpScriptError(f"line {lineno}: {word}: number {val} out of range")
            args.append(val)
            pos = end
    tail = rest[pos:].strip(WS)
    if tail and not tail.startswith("#"):
        raise OpScriptError(f"line {lineno}: {word}: unexpected text {tail[:20]!r}")
    op = Op(word, args, lineno)
    if word == "create" and args[1] > MAX_SIZE:
        raise OpScriptError(f"line {lineno}: create: size {args[1]} too large")
    if word == "truncate" and args[1] > MAX_SIZE:
        raise OpScriptError(f"line {lineno}: truncate: size {args[1]} too large")
    if word == "write" and (args[2] > MAX_SIZE or args[1] + args[2] > (1 << 32) - 1):
        raise OpScriptError(f"line {lineno}: write: range too large")
    return op


def parse(text):
    """Parse a whole script; raises OpScriptError naming the line. Lines
    end at "\n" only, as in the C parser: str.splitlines() would also end
    one at a U+2028, U+2029, U+0085, \v or \f inside a path."""
    ops = []
    for i, line in enumerate(text.split("\n"), 1):
        op = parse_line(line, i)
        if op:
            ops.append(op)
    return ops


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise OpScriptError(f"op-script is not UTF-8 (byte {e.start})")
    return parse(text)


def quote(p):
    """A path as an op-script argument (JSON string, separators escaped)."""
    return _json_path(p)


def format_op(op):
    parts = [op.kind]
    for kind, a in zip(OPS[op.kind], op.args):
        if kind in "sl":
            parts.append(_json_path(a))
        elif kind == "a":
            parts.append(a or "-")
        else:
            parts.append(str(a))
    return " ".join(parts)


def dump(ops):
    return "".join(format_op(o) + "\n" for o in ops)
