"""U-Boot as a reader: fatls from the root down, fatload of every file, the bytes hashed on the host.

Part of the uboot oracle (vfz/oracles/uboot/); the board it runs on is
board.py, the named exceptions it is excused by are recognised in
explain.py.

`fatls virtio 0:0 "${p}"` from the root down (fs_ls_generic's
lines: " %8lld   NAME" for a file, 12 blanks + "NAME/" for a directory,
"./" and "../" skipped), then each file is loaded (`fatload`, to RAM
packed at 512-byte boundaries) and the loaded region written to the
transfer disk in one `virtio write`; the host hashes the bytes (sha256),
so entries carry the full canonical keys (path, type, size, sha256).
The transfer is raw block I/O, not U-Boot's FAT code: what is hashed is
exactly what fatload put in RAM. Each file entry also carries "read":
the byte count fatload reported. An entry whose name U-Boot's shell
cannot be given (its U-Boot form holds '/' or '\\', separators to U-Boot,
0xFF, the end of input to hush, or a LF, the end of an imported value;
measured on all 255 low bytes of U+54xx, the other control bytes reach
fatload intact) is listed with "unread": "uboot-unaddressable" and no
sha256 (a directory: not walked), with no complaint; UbootReader.explain names such a divergence. A failed fatls
or fatload of any other entry is a complaint. Names: U-Boot builds a long name from
the low byte of each UTF-16 unit (fs/fat/fat.c slot2str), stopping a
slot at a unit whose low byte is 0; the reader decodes those bytes as
Latin-1 (one character per byte, lossless), so names in U+0000..U+00FF
come back right and others as the bytes U-Boot holds (named exception
uboot-lfn-low-byte, recognised by UbootReader.name_exception computing
exactly that transformation). A name that comes out empty (first unit
U+xx00) is listed as "DIR/" with "unread": "uboot-unaddressable" and is
neither walked into nor loaded: "DIR/" names DIR itself, and walking it
was a walk without end (campaign seed 9101). A bare 8.3 name comes back as its raw OEM
bytes (lower-cased by the NT case bits with U-Boot's Latin-1 ctype):
exception uboot-83-oem-bytes.
"""
import os
import re
import time

from vfz import listing
from vfz.oracles import Reader, ReadResult, Timer
from vfz.oracles.uboot.board import DATA_ADDR, DATA_MAX, Board, Boards, Trap, available
from vfz.oracles.uboot.exceptions import UNADDRESSABLE
from vfz.oracles.uboot.explain import reader_explain, reader_name_exception
from vfz.oracles.uboot.fresh import fresh_exceptions as uboot_fresh
from vfz.oracles.uboot.shell import DEV, Session, Unnameable, parse_ls

HOSTILE_BOARDS = 12
READ_LINE = re.compile(rb"^(\d+) bytes read")
BATCH = 200                     # names per round trip (the environment holds a few hundred)


class UbootReader(Reader):
    """fatls and fatload on a Board; see the module doc."""
    name_exception = staticmethod(reader_name_exception)
    explain = staticmethod(reader_explain)
    fresh_exceptions = staticmethod(uboot_fresh)

    @classmethod
    def hostile_cfg(cls, asan_bin=None):
        """In the hostile campaign QEMU logs the guest's sectors (vfz.iobounds), and a
        board is kept for each of up to HOSTILE_BOARDS image sizes (a swap, not a boot)."""
        return {"iotrace": True, "boards": HOSTILE_BOARDS}

    def __init__(self, name="uboot", board=None, iotrace=False, boards=None, **cfg):
        self.name = name
        self.boards = Boards(board, iotrace, boards)
        self.board = board

    def available(self):
        return available()

    def read(self, image, timeout=60.0):
        r = ReadResult(self.name)
        if os.path.isfile(image):
            self.board = self.boards.get(image)
        elif self.board is None:
            self.board = Board()
        self.board.log = b""
        with Timer() as t:
            try:
                if not os.path.isfile(image):
                    r.error = f"no such image: {image}"
                else:
                    try:
                        self._read(image, timeout, r)
                    finally:
                        if self.board.iotrace and self.board.tmp:
                            r.extra["iotrace"] = self.board.trace_since(self.board.trace_mark,
                                                                        "U-Boot fatls/fatload")
            except Trap as e:
                r.error = f"trap: {e}"
                r.listing = None
            except Exception as e:  # an oracle never crashes the harness
                self.board.kill()
                r.error = f"uboot reader: {type(e).__name__}: {e}"
                r.listing = None
            self.board.pause()
        r.raw = self.board.log.decode("latin-1")[-20000:]
        r.seconds = t.seconds
        return r

    def _read(self, image, timeout, r):
        deadline = time.monotonic() + timeout
        self.board.load(image)
        s = Session(self.board, deadline)
        scan = [b"virtio scan"]           # re-scan with the first level's listing
        entries, files = [], []
        level = [b""]
        ndirs = 0
        while level:
            ndirs += len(level)
            if ndirs > 4096:
                r.complaints.append("more than 4096 directories (a loop?)")
                break
            nxt = []
            for at in range(0, len(level), BATCH):
                part = level[at:at + BATCH]
                words = s.words([d or b"/" for d in part])
                todo, cmds = [], []
                for d, w in zip(part, words):
                    if isinstance(w, Unnameable):
                        # not U-Boot's FAT code: its shell cannot be given the name
                        # (exception uboot-unaddressable, UbootReader.explain)
                        for e in entries:
                            if e["path"] == d.decode("latin-1"):
                                e["unread"] = UNADDRESSABLE
                    else:
                        todo.append(d)
                        cmds.append(b"fatls %s %s" % (DEV, w))
                res = s.runs(scan + cmds)[len(scan):]
                scan = []
                for d, (out, rc) in zip(todo, res):
                    shown = d.decode("latin-1") or "/"
                    if rc != 0:
                        msg = out.decode("latin-1").strip()[-200:]
                        if d == b"":
                            r.error = f"fatls /: {msg} (exit {rc})"
                            return
                        r.complaints.append(f"fatls {shown}: {msg}")
                        continue
                    items, summary, bad = parse_ls(out)
                    for line in bad:
                        r.complaints.append(f"fatls {shown}: unparsed line {line!r}")
                    if summary is None:
                        r.complaints.append(f"fatls {shown}: no summary line")
                    elif summary != (sum(k == "file" for _, k, _ in items),
                                     sum(k == "dir" for _, k, _ in items) + (2 if d else 0)):
                        r.complaints.append(f"fatls {shown}: summary {summary} for {len(items)} lines")
                    for name, kind, size in items:
                        path = d + b"/" + name
                        if name == b"" or b"/" in name:
                            # a long name whose first unit's low byte is 0 shows
                            # as "" (uboot-lfn-low-byte): "d/" would name d itself
                            # (a walk without end); one with a unit whose low byte
                            # is '/' ('启' U+542F) names a path U-Boot splits there:
                            # neither is walked into nor read
                            entries.append(listing.entry(path.decode("latin-1"), kind, size=size,
                                                         unread=UNADDRESSABLE,
                                                         why="a '/' in the name" if name else "an empty name"))
                        elif kind == "dir":
                            entries.append(listing.entry(path.decode("latin-1"), "dir"))
                            nxt.append(path)
                        else:
                            files.append((path, size))
            level = nxt
        entries += self._contents(s, files, r)
        r.listing = sorted(entries, key=lambda e: e["path"])

    def _contents(self, s, files, r):
        out_entries = []
        window = DATA_MAX - DATA_ADDR
        i = 0
        while i < len(files):
            # a batch of files that fits the RAM window
            batch, off = [], 0
            while i < len(files):
                path, size = files[i]
                need = (size + 511) // 512 * 512
                if batch and (off + need > window or len(batch) >= BATCH):
                    break
                batch.append((path, size, off))
                off += need
                i += 1
            total = off
            words = s.words([p for p, _, _ in batch])
            loaded, cmds, todo = [], [], []
            for (path, size, off), w in zip(batch, words):
                text = path.decode("latin-1")
                if isinstance(w, Unnameable):
                    out_entries.append(listing.entry(text, "file", size=size, unread=UNADDRESSABLE,
                                                     why=str(w)))
                    continue
                if size > window:
                    r.complaints.append(f"{text}: {size} bytes, more than the RAM window")
                    out_entries.append(listing.entry(text, "file", size=size, unread="too large"))
                    continue
                # at most the listed size: a file never spills into the next slot
                cmds.append(b"fatload %s %#x %s" % (DEV, DATA_ADDR + off, w)
                            + (b" %#x" % size if size else b""))
                todo.append((text, size, off))
            if not cmds:
                continue
            # and the whole window to the transfer disk, in the same round trip
            cmds.append(self.board.get_cmd(0, total))
            res = s.runs(cmds)
            (wout, wrc), res = res[-1], res[:-1]
            if wrc != 0:
                raise Trap(f"virtio write failed: {wout[-200:]!r}")
            for (text, size, off), (out, rc) in zip(todo, res):
                got = None
                for line in out.split(b"\n"):
                    m = READ_LINE.match(line)
                    if m:
                        got = int(m.group(1))
                if rc != 0 or got is None:
                    r.complaints.append(f"fatload {text}: {out.decode('latin-1').strip()[-200:]}")
                    out_entries.append(listing.entry(text, "file", size=size, unread="fatload failed"))
                    continue
                if got != size:
                    r.complaints.append(f"{text}: fatls says {size} bytes, fatload read {got}")
                loaded.append((text, size, off, got))
            if loaded:
                end = max(off + got for _, _, off, got in loaded)
                blob = self.board.read_xfer(0, end)
                for text, size, off, got in loaded:
                    e = listing.entry(text, "file", blob[off:off + got])
                    e["read"] = got
                    out_entries.append(e)
        return out_entries

    def close(self):
        self.boards.kill()
        if self.board is not None:
            self.board.kill()
