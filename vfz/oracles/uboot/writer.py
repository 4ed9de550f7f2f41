"""U-Boot as a writer: the op-script onto fatmkdir, fatwrite and fatrm; its messages as errnos.

Part of the uboot oracle (vfz/oracles/uboot/). What Linux decides in the
VFS, the glue decides by asking U-Boot's own lookups (UbootWriter's doc);
the model profile that predicts the answers is profile.py, the named
exceptions are recognised in explain.py.
"""
import os
import re
import time

from vfz import opscript
from vfz.oracles import Writer, WriteResult, Timer
from vfz.oracles.uboot.board import DATA_ADDR, Board, Boards, Trap, available
from vfz.oracles.uboot.explain import known_failure, result_exception, writer_explain
from vfz.oracles.uboot.profile import uboot_name_err
from vfz.oracles.uboot.shell import (
    DEV, Session, Unnameable, enc, enc_or_root, norm_path, uboot_norm, word)

# U-Boot's messages -> errno names. fatmkdir / fatwrite print
# "<parent>: doesn't exist (-N)" with the errno of the failed path walk
# (fat_itr_resolve: -ENOENT, -ENOTDIR), mapped by number; the rest by text.
WALK_ERR = re.compile(rb": doesn't exist \((-\d+)\)")
MESSAGES = (
    (rb": already ex", "EEXIST"),                  # fatmkdir onto any existing name
    # (U-Boot's printf cuts a line at its buffer: "...: doesn't exis")
    (rb"illegal filename", "EINVAL"),              # normalize_longname: < 0x20, <>:"/\|?* or >= 256 bytes
    (rb"directory is not empty", "ENOTEMPTY"),     # fatrm
    (rb"cannot remove root", "EBUSY"),             # fatrm /
    (rb": doesn't ex", "ENOENT"),                  # fatrm (no number printed)
    (rb"no space left|[Nn]o space|Disk full|allocat", "ENOSPC"),
)


PBSIZE = 532     # U-Boot's printf buffer (CONFIG_SYS_PBSIZE): a line of 531 characters at most
CUT_PARENT = PBSIZE - 1 - len(b": doesn't exist (-20)\n")


def uboot_parent(path):
    """The directory U-Boot's split_filename gives for path (bytes): trailing
    slashes dropped, everything before the last run of slashes, or "/"."""
    p = path.rstrip(b"/")
    i = p.rfind(b"/")
    while i > 0 and p[i - 1:i] == b"/":
        i -= 1
    return p[:i] if i > 0 else b"/"


def cut_walk(out, parent):
    """Did U-Boot print "PARENT: doesn't exist (N)" cut by its printf buffer
    before the number (a parent of 510 bytes or more)?"""
    line = (parent + b": doesn't exist (")[:PBSIZE - 1]
    return not WALK_ERR.search(out) and any(x.lstrip(b"\r").startswith(line)
                                            for x in out.split(b"\n"))


def errno_of(out):
    """U-Boot's output of a failed fatmkdir/fatwrite/fatrm -> errno name (EIO
    when no message is recognised; the raw text is kept in WriteResult.raw)."""
    import errno as _errno
    m = WALK_ERR.search(out)
    if m:
        return _errno.errorcode.get(-int(m.group(1)), "EIO")
    for pat, name in MESSAGES:
        if re.search(pat, out):
            return name
    return "EIO"


class UbootWriter(Writer):
    """The op-script onto fatmkdir, fatwrite and fatrm.

    What Linux decides in the VFS the glue decides, asking U-Boot's own
    lookups (`size` finds any entry, as fat_itr_resolve does with both the
    long and the short name, ASCII and Latin-1 case-insensitively; `fatls`
    succeeds on a directory only):
      * a last component "." or "..": the parent walked first (ENOENT,
        ENOTDIR), then mkdir/create EEXIST, unlink EISDIR, rmdir "." EINVAL,
        ".." ENOTEMPTY, write EISDIR (Linux's answers);
      * create of an existing name EEXIST (fatwrite would overwrite it);
      * write to a missing file ENOENT, to a directory EISDIR; unlink of a
        directory EISDIR; rmdir of a file ENOTDIR (fatrm removes both);
      * a '\\' in the path: U-Boot takes it for a separator; a new leaf
        with one EINVAL, other paths ENOENT (Linux's answers);
      * rename: ENOSYS (no FAT rename in U-Boot 2023.01; the Entry does not
        support it, so the campaign does not send it);
      * a path U-Boot's shell cannot be given (a character beyond U+00FF:
        U-Boot keeps one byte per UTF-16 unit; a "'" with non-ASCII bytes;
        CR/LF): EILSEQ, before U-Boot sees it (profile name_err predicts it
        for new names).
    Contents (vfz.opscript.content) go to RAM through the transfer disk.
    write: fatwrite with its OFFSET argument; a gap past the end is written
    as zeros from the old end (fatwrite refuses an offset past the end:
    "Unable to write"); fatwrite sets the file's size to OFFSET + BYTES
    (measured: a 100-byte file after `fatwrite ... 5 a` has 15 bytes; at
    offset 0 it rewrites the file), so a write ending before the old end
    also writes the old tail, loaded with fatload first.
    Errors: errno_of(U-Boot's message), see MESSAGES. U-Boot's printf cuts
    a line at 531 characters, so "PARENT: doesn't exist (N)" loses N for a
    parent of 510 bytes or more: the script then asks `size` and `fatls`
    about the parent right after the op (a file: ENOTDIR, else ENOENT, as
    fat_itr_resolve answers; cut_walk).
    The uboot profile predicts the order of these answers: the glue's
    EILSEQ before any lookup (path_err), U-Boot's check of a new leaf
    before the parent walk (name_first)."""
    explain = staticmethod(writer_explain)
    result_exception = staticmethod(result_exception)
    known_failure = staticmethod(known_failure)


    def __init__(self, name="uboot", board=None, **cfg):
        self.name = name
        self.boards = Boards(board)
        self.board = board

    def available(self):
        return available()

    def apply(self, image, ops, timeout=60.0):
        w = WriteResult(self.name)
        if os.path.isfile(image):
            self.board = self.boards.get(image)
        elif self.board is None:
            self.board = Board()
        self.board.log = b""
        notes = []
        with Timer() as t:
            try:
                if not os.path.isfile(image):
                    w.error = f"no such image: {image}"
                else:
                    self.board.load(image)
                    s = Session(self.board, time.monotonic() + timeout)
                    w.results, notes = self._apply(s, ops)
                    self.board.save(image)
            except Trap as e:
                w.error = f"trap: {e}"
            except Exception as e:
                self.board.kill()
                w.error = f"uboot writer: {type(e).__name__}: {e}"
            self.board.pause()
        w.raw = "".join(f"# line {o.line}: {o} -> {r}" + (f" [{n}]" if n else "") + "\n"
                        for o, r, n in zip(ops, w.results, notes))
        w.raw += self.board.log.decode("latin-1")[-20000:]
        w.seconds = t.seconds
        return w

    # glue verdicts inside the scripts ("@@M CODE"): codes above any exit code
    CODES = {201: "EEXIST", 202: "EISDIR", 203: "ENOTDIR", 204: "EISDIR", 205: "ENOENT",
             206: "EINVAL", 207: "ENOTEMPTY"}

    @staticmethod
    def _static(op):
        """(result, note) decided without U-Boot, or None."""
        if op.kind == "rename":
            return "ENOSYS", "no FAT rename in U-Boot 2023.01"
        comps = [c for c in op.args[0].split("/") if c]
        last = comps[-1] if comps else ""

        def bad(c):
            return "\\" in c or any(ord(x) < 0x20 for x in c)
        if last in (".", ".."):
            # Linux walks the parent first (ENOENT/ENOTDIR): the script asks
            # U-Boot about a parent other than the root (DOT_CODES)
            if len(comps) > 1:
                if any(bad(c) for c in comps[:-1]):
                    return "ENOENT", "a '\\' or a control byte before the leaf (glue)"
                try:
                    enc("/" + "/".join(comps[:-1]))
                except Unnameable:
                    return "ENOENT", "a parent U-Boot cannot be given: no entry holds it (glue)"
                return None
            return {"mkdir": "EEXIST", "create": "EEXIST", "unlink": "EISDIR", "write": "EISDIR",
                    "rmdir": "EINVAL" if last == "." else "ENOTEMPTY"}[op.kind], "VFS (glue)"
        if not comps:
            return {"mkdir": "EEXIST", "create": "EEXIST", "unlink": "EISDIR", "write": "EISDIR",
                    "rmdir": "EBUSY"}[op.kind], "VFS (glue)"
        if any(bad(c) for c in comps):
            # U-Boot splits paths at '\\' too (ISDIRDELIM): "/caca\\" would write
            # "caca"; a LF cannot be handed over (the glue answers for every
            # control byte alike). Both are
            # refused in new names by Linux and by U-Boot (normalize_longname),
            # so no entry has one: a new leaf with one EINVAL (U-Boot checks the
            # leaf before it walks the parent), any other path ENOENT; a create
            # with a trailing '/' walks the parent first, as Linux does (below)
            from vfz.model.names import trailing_slash
            if op.kind == "create" and trailing_slash(op.args[0]):
                if any(bad(c) for c in comps[:-1]):
                    return "ENOENT", "a '\\' or a control byte before the leaf (glue)"
                try:
                    word(enc("/" + "/".join(comps[:-1])), "p")
                except Unnameable:
                    # the parent only is sent; no entry has a name U-Boot's
                    # shell cannot be given (the uboot writer cannot make one)
                    return "ENOENT", "a parent U-Boot cannot be given: no entry holds it (glue)"
                return None
            if op.kind in ("mkdir", "create"):
                # U-Boot checks the leaf before it walks the parent
                err = uboot_name_err(comps[-1])
                if err:
                    return err, "the leaf refused before the walk (glue, U-Boot's order)"
            return "ENOENT", "a '\\' or a control byte before the leaf (glue)"
        try:
            enc(op.args[0])
        except Unnameable as x:
            return "EILSEQ", str(x)
        return None

    def _apply(self, s, ops):
        from vfz.model.names import trailing_slash
        """Runs of ops in one script each: mkdir, create, unlink and rmdir
        decide in the script itself (if size/fatls ...; then @@M CODE; else
        ...); a write needs the file's size first, so its probe ends a
        script and its fatwrite opens the next."""
        n = len(ops)
        res, notes = [None] * n, [""] * n
        head = [b"virtio scan"]          # commands of the next script before its ops
        head_owner = [None]
        cut = {}                         # op -> its parent, probed (see CUT_PARENT)
        data = b""                       # contents for the next script's RAM window
        i = 0
        while i < n or head:
            batch = []
            while i < n:
                st = self._static(ops[i])
                if st:
                    res[i], notes[i] = st
                    i += 1
                    continue
                batch.append(i)
                i += 1
                if ops[batch[-1]].kind == "write":
                    break
            # the probes look the leaf up as fatwrite/fatmkdir/fatrm will:
            # normalised (uboot_norm); the command gets the path as given
            # (a path enc refuses reaches here only for the branches below
            # that send its parent alone: a trailing-'/' create, a "."/"..")
            paths = [enc_or_root(ops[k].args[0]) for k in batch]
            probes = [enc_or_root(norm_path(ops[k].args[0])) for k in batch]
            words = s.words(paths + probes)
            words, pwords = words[:len(paths)], words[len(paths):]
            lines, owners = list(head), list(head_owner)
            probe = None
            for k, wd, pw in zip(batch, words, pwords):
                op = ops[k]
                dots = [c for c in op.args[0].split("/") if c]
                if dots[-1] in (".", ".."):
                    # a last component "." or "..": the parent walked first (as
                    # Linux), then Linux's answer for the leaf
                    [pp] = s.words([enc("/" + "/".join(dots[:-1]))])
                    if isinstance(pp, Unnameable):
                        res[k], notes[k] = "ENOENT", "a parent U-Boot cannot be given: no entry holds it"
                        continue
                    code = {"mkdir": 201, "create": 201, "unlink": 202, "write": 202,
                            "rmdir": 206 if dots[-1] == "." else 207}[op.kind]
                    lines.append(b"if fatls %s %s; then @@M %d; else if size %s %s; then @@M 203; "
                                 b"else @@M 205; fi; fi" % (DEV, pp, code, DEV, pp))
                    owners.append(k)
                    continue
                if op.kind == "create" and trailing_slash(op.args[0]):
                    # Linux walks the parent first: ENOENT / ENOTDIR, else EISDIR
                    # (the leaf itself is never sent: it may hold a control byte)
                    par = enc(op.args[0].rstrip("/").rpartition("/")[0] or "/")
                    [pp] = s.words([par])
                    if isinstance(pp, Unnameable):
                        res[k], notes[k] = "EILSEQ", str(pp)
                        continue
                    lines.append(b"if fatls %s %s; then @@M 204; else if size %s %s; then @@M 203; "
                                 b"else @@M 205; fi; fi" % (DEV, pp, DEV, pp))
                    owners.append(k)
                    continue
                if isinstance(pw, Unnameable):
                    wd = pw
                elif uboot_norm([c for c in op.args[0].split("/") if c][-1]) in ("", ".", ".."):
                    if op.kind == "write":
                        # write creates nothing, and no entry has such a name
                        # (Linux: ENOENT); fatwrite would write the leaf U-Boot
                        # makes of it
                        res[k], notes[k] = "ENOENT", "a leaf U-Boot normalises away (glue)"
                        continue
                    # nothing to look up: U-Boot refuses the leaf itself
                    lines.append(b"fatwrite %s %#x %s 0x1" % (DEV, DATA_ADDR, wd)
                                 if op.kind in ("create", "write") else
                                 b"fatmkdir %s %s" % (DEV, wd) if op.kind == "mkdir" else
                                 b"fatrm %s %s" % (DEV, wd))
                    owners.append(k)
                    continue
                if isinstance(wd, Unnameable):
                    res[k], notes[k] = "EILSEQ", str(wd)
                    continue
                if op.kind == "mkdir":
                    lines.append(b"fatmkdir %s %s" % (DEV, wd))
                elif op.kind == "create":
                    size, seed = op.args[1], op.args[2]
                    at = len(data)
                    data += opscript.content(seed, size) + bytes(-size % 512)
                    lines.append(b"if size %s %s; then @@M 201; else fatwrite %s %#x %s %#x; @@M $?; fi"
                                 % (DEV, pw, DEV, DATA_ADDR + at, wd, size))
                elif op.kind == "unlink" and trailing_slash(op.args[0]):
                    lines.append(b"if fatls %s %s; then @@M 202; else if size %s %s; then @@M 203; "
                                 b"else fatrm %s %s; @@M $?; fi; fi" % (DEV, pw, DEV, pw, DEV, wd))
                elif op.kind == "unlink":
                    lines.append(b"if fatls %s %s; then @@M 202; else fatrm %s %s; @@M $?; fi"
                                 % (DEV, pw, DEV, wd))
                elif op.kind == "rmdir":
                    lines.append(b"if size %s %s; then if fatls %s %s; then fatrm %s %s; @@M $?; "
                                 b"else @@M 203; fi; else fatrm %s %s; @@M $?; fi"
                                 % (DEV, pw, DEV, pw, DEV, wd, DEV, wd))
                elif op.kind == "write":
                    probe = (k, wd, pw)
                    lines += [b"size %s %s" % (DEV, pw), b"printenv filesize",
                              b"fatls %s %s" % (DEV, pw)]
                    owners += [None, None]
                else:
                    res[k], notes[k] = "ENOSYS", f"unknown op {op.kind}"
                    continue
                owners.append(k)
                par = uboot_parent(enc(op.args[0]))
                if op.kind != "write" and len(par) >= CUT_PARENT:
                    # U-Boot's "PARENT: doesn't exist (N)" will be cut before N
                    # (ENOENT or ENOTDIR from fat_itr_resolve): ask size and
                    # fatls about the parent right after the op, on the same state
                    [pp] = s.words([par])
                    lines += [b"size %s %s" % (DEV, pp), b"fatls %s %s" % (DEV, pp)]
                    owners += [("size", k), ("ls", k)]
                    cut[k] = par
            if data:
                self.board.put_file(data)
                lines.insert(0, self.board.put_cmd(len(data)))
                owners.insert(0, None)
            head, head_owner, data = [], [], b""
            out = s.runs(lines)
            prc = {k: rc for k, (_, rc) in zip(owners, out) if isinstance(k, tuple)}
            for k, (text, rc) in zip(owners, out):
                if isinstance(k, tuple):
                    continue
                if k is None:
                    if rc and text and b"virtio read" in text:
                        raise Trap(f"virtio read failed: {text[-200:]!r}")
                    continue
                if ops[k].kind == "write" and probe and k == probe[0]:
                    continue
                if rc in self.CODES:
                    res[k], notes[k] = self.CODES[rc], "glue: " + {201: "size: exists",
                                                                   202: "fatls: a directory",
                                                                   203: "fatls: not a directory",
                                                                   204: "a trailing '/'",
                                                                   205: "parent missing",
                                                                   206: "rmdir '.'",
                                                                   207: "rmdir '..'"}[rc]
                elif rc == 0:
                    res[k] = "ok"
                elif k in cut and cut_walk(text, cut[k]):
                    # fat_itr_resolve(parent, TYPE_DIR): -ENOTDIR when the
                    # parent is a file, else -ENOENT
                    isfile = prc.get(("size", k)) == 0 and prc.get(("ls", k)) != 0
                    res[k] = "ENOTDIR" if isfile else "ENOENT"
                    notes[k] = "doesn't exist (cut); parent " + ("a file" if isfile else "missing")
                else:
                    res[k], notes[k] = errno_of(text), text.decode("latin-1").strip()[-200:]
            if probe:
                k, wd, pw = probe
                (o1, rc1), (o2, _), (o3, rc3) = out[-3:]
                act = self._write_action(s, ops[k], wd, pw, rc1, o2, rc3)
                if isinstance(act[0], str):
                    res[k], notes[k] = act
                else:
                    payload, line = act
                    data = payload + bytes(-len(payload) % 512)
                    head, head_owner = [line], [k]
        return [r or "EIO" for r in res], notes

    def _write_action(self, s, op, wd, pw, rc_size, printenv, rc_ls):
        """-> (result, note) when decided, or (contents, fatwrite line) to run
        next (contents at DATA_ADDR)."""
        off, size, seed = op.args[1], op.args[2], op.args[3]
        if rc_size != 0:
            return "ENOENT", "glue: size: missing"
        if rc_ls == 0:
            return "EISDIR", "glue: fatls: a directory"
        from vfz.model.names import trailing_slash
        if trailing_slash(op.args[0]):
            return "ENOTDIR", "glue: a file named with a trailing '/'"
        m = re.search(rb"filesize=([0-9a-fA-F]+)", printenv)
        if not m:
            return "EIO", "size printed no filesize"
        cur = int(m.group(1), 16)
        if size == 0:
            return "ok", "nothing to write"
        data = opscript.content(seed, size)
        if off > cur:
            data, off = bytes(off - cur) + data, cur
        if off + len(data) < cur:
            # fatwrite sets the size to OFFSET + BYTES: keep the old tail
            (out, rc), = s.runs([b"fatload %s %#x %s" % (DEV, DATA_ADDR, pw)])
            if rc != 0:
                return errno_of(out), out.decode("latin-1").strip()[-200:]
            old = s.board.get_data(0, cur, s.left())
            data = data + old[off + len(data):]
        if off == 0:
            return data, b"fatwrite %s %#x %s %#x" % (DEV, DATA_ADDR, wd, len(data))
        return data, b"fatwrite %s %#x %s %#x %#x" % (DEV, DATA_ADDR, wd, len(data), off)

    def close(self):
        self.boards.kill()
        if self.board is not None:
            self.board.kill()
