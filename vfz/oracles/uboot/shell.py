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
    literally; anything else (a "'" with other bytes, a LF or NUL, 0xFF, a
    '\\', a line too long) is Unnameable. Measured on all 255 low bytes of
    U+54xx in a name: every other control byte (CR, 0x0B ...) reaches
    fatls and fatload intact through a variable."""
    if 0 in path or 10 in path:
        # measured: a LF ends an `env import -t` value (and a typed line);
        # no U-Boot name holds a NUL (slot2str ends the name there)
        raise Unnameable("a LF or NUL byte")
    if 0xFF in path:
        raise Unnameable("a byte 0xFF (hush reads it as the end of input: syntax error)")
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
        # the variables imported by the board's last two runs() (kept on the
        # board: its environment outlives a session): U-Boot's environment
        # holds about 460 (measured: of ~770 names imported in one read, the
        # last dozen came out empty, "Failed to load ''"), so older ones are
        # deleted ("name=" in the import); a word may be used in the script
        # after the one it was made for (a write's fatwrite)
        if getattr(board, "env_gens", None) is None:
            board.env_gens, board.nvar = [set(), set()], 0

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
            self.board.nvar += 1
            try:
                w, e = word(p, f"p{self.board.nvar}")
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
        gens = self.board.env_gens
        old = gens[0] - set(env) - gens[1]
        self.board.env_gens = [gens[1], set(env)]
        # the deletions first: the import makes room before it adds
        env = dict({k: b"" for k in sorted(old)}, **env)
        return self.board.cmds(lines, self.left(), env)


FILE_LINE = re.compile(rb"^ (\s*\d+)   (.*)$", re.S)
SUMMARY = re.compile(rb"^(\d+) file\(s\), (\d+) dir\(s\)$")


def parse_ls(out):
    """fatls output -> ([(name bytes, 'file'|'dir', size)], summary counts or None, unparsed lines).

    fs_ls_generic prints " %8lld   NAME" or 12 blanks + "NAME/" per entry,
    then a blank line and the summary. A name may hold a LF (a UTF-16 unit
    whose low byte is 0x0A: '上' U+4E0A): a line that does not start with a
    blank continues the entry before it (an empty one too, but the blank
    line before the summary). A name holding a LF followed by a blank is
    read as two lines (one unparsed)."""
    lines = out.split(b"\n")
    at = next((k for k in range(len(lines) - 1, -1, -1) if SUMMARY.match(lines[k])), None)
    summary = None
    if at is not None:
        m = SUMMARY.match(lines[at])
        summary = (int(m.group(1)), int(m.group(2)))
        body = lines[:at - 1] if at and lines[at - 1] == b"" else lines[:at]
    else:
        body = [x for x in lines if x]
    records, bad = [], []
    for line in body:
        if line.startswith(b" ") or not records:
            records.append(line)
        else:
            records[-1] += b"\n" + line
    items = []
    for rec in records:
        if rec.startswith(b" " * 12) and rec.endswith(b"/"):
            name = rec[12:-1]
            if name not in (b".", b".."):
                items.append((name, "dir", None))
            continue
        m = FILE_LINE.match(rec)
        if m:
            items.append((m.group(2), "file", int(m.group(1))))
            continue
        if rec:
            bad.append(rec)
    return items, summary, bad
