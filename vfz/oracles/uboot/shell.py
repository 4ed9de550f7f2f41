"""Handing paths to U-Boot's shell: words for names, sessions on one loaded image, fatls output.

The word that carries a name to a command (word, enc), the leaf U-Boot's
writer works on (uboot_norm), commands in round trips on one loaded image
(Session), fatls's lines parsed (parse_ls).

Part of the uboot oracle (vfz/oracles/uboot/), shared by its reader and
writer. Measured on U-Boot 2023.01's hush (see word()).
"""
import re
import time

DEV = b"virtio 0:0"           # the image under test, as the FAT commands name it


class Unnameable(Exception):
    """A path U-Boot's shell cannot be given (see word())."""


def word(path, var):
    """The shell word that hands path (bytes) to a command, and the env
    values it needs: -> (word, {name: value}).

    Measured on this build's hush: a byte >= 0x80 typed on the line is a
    "syntax error", but one inside "${var}" (imported with env import)
    reaches the command intact, and so do '"', '$', ';' and blanks; a "'"
    inside a variable's value, or a \' next to a "${var}", is a syntax
    error (the line is parsed again after the expansion), while 'literal'
    and \' work on a line without variables. So: a path without "'" goes
    in one variable (printable ASCII under 160 bytes literally, in '...'); a path with "'" must be printable ASCII and goes
    literally; anything else (a "'" with other bytes, CR/LF/NUL, a line
    too long) is Unnameable."""
    if any(b in (0, 10, 13) for b in path):
        raise Unnameable("a CR, LF or NUL byte")
    if 0xFF in path:
        raise Unnameable("a byte 0xFF (hush reads it as the end of input: syntax error)")
    if any(b < 0x20 for b in path):
        # measured: a name with 0x0B and 0x1E (the low bytes of astral
        # characters) did not reach fatload intact
        raise Unnameable("a control byte (does not reach the command intact)")
    if b"\\" in path:
        raise Unnameable("a '\\' (U-Boot splits paths at it, ISDIRDELIM)")
    printable = all(0x20 <= b < 0x7f for b in path)
    if printable and b"'" not in path and len(path) < 160:
        return b"'%s'" % path, {}
    if b"'" not in path:
        return b'"${%s}"' % var.encode(), {var: path}
    if any(b < 0x20 or b >= 0x7f for b in path):
        raise Unnameable("a quote with bytes the shell cannot take")
    if len(path) > 400:
        raise Unnameable("a quote in a path too long for one command line")
    return b"\\'".join(b"'%s'" % run if run else b"" for run in path.split(b"'")), {}


def uboot_norm(leaf):
    """The leaf U-Boot's writer works on (fs/fat/fat_write.c split_filename:
    leading blanks and trailing dots and blanks dropped, "." and ".." kept;
    "FAT spec v1.03 requires leading and trailing spaces as well as trailing
    periods to be ignored"). fatwrite, fatmkdir and fatrm look the leaf up
    and store it in this form; the components before it are matched as
    given (fat_itr_resolve)."""
    s = leaf.lstrip(" ")
    if s in (".", ".."):
        return s
    return s.rstrip(" .")


def norm_path(path):
    par, _, leaf = path.rstrip("/").rpartition("/")
    return par + "/" + uboot_norm(leaf)


def enc(path):
    """A canonical path (str) as the bytes U-Boot compares with its names
    (one byte per character: Latin-1); Unnameable beyond U+00FF."""
    try:
        b = path.encode("latin-1")
    except UnicodeEncodeError:
        raise Unnameable("a character beyond U+00FF (U-Boot holds one byte per UTF-16 unit)")
    if 0xFF in b:
        raise Unnameable("a U+00FF (byte 0xFF: hush reads it as the end of input)")
    return b


def enc_or_root(path):
    try:
        return enc(path)
    except Unnameable:
        return b"/"


class Session:
    """Commands on one loaded image, with paths handed over as words."""

    def __init__(self, board, deadline):
        self.board = board
        self.deadline = deadline
        self.env = {}                 # variables the next runs() imports
        self.nvar = 0

    def left(self):
        t = self.deadline - time.monotonic()
        if t <= 0:
            raise self.board._trap("the image's time limit ran out")
        return t

    def words(self, paths):
        """-> one shell word per path (bytes), or the Unnameable for it;
        the variables all of them need are imported in one go."""
        out, env = [], {}
        for p in paths:
            # names unique in the session: a word built for one script may
            # run in the next (a write's fatwrite), whose import adds others
            self.nvar += 1
            try:
                w, e = word(p, f"p{self.nvar}")
                out.append(w)
                env.update(e)
            except Unnameable as x:
                out.append(x)
        self.env.update(env)
        return out

    def run(self, line):
        return self.runs([line])[0]

    def runs(self, lines):
        """Commands in one round trip, with the names words() prepared."""
        if not lines:
            return []
        env, self.env = self.env, {}
        return self.board.cmds(lines, self.left(), env)


FILE_LINE = re.compile(rb"^ (\s*\d+)   (.*)$")
SUMMARY = re.compile(rb"^(\d+) file\(s\), (\d+) dir\(s\)$")


def parse_ls(out):
    """fatls output -> ([(name bytes, 'file'|'dir', size)], summary counts or None, unparsed lines)."""
    items, bad, summary = [], [], None
    for line in out.split(b"\n"):
        if not line:
            continue
        m = SUMMARY.match(line)
        if m:
            summary = (int(m.group(1)), int(m.group(2)))
            continue
        if line.startswith(b" " * 12) and line.endswith(b"/"):
            name = line[12:-1]
            if name not in (b".", b".."):
                items.append((name, "dir", None))
            continue
        m = FILE_LINE.match(line)
        if m:
            items.append((m.group(2), "file", int(m.group(1))))
            continue
        bad.append(line)
    return items, summary, bad
