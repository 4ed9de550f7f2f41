#!/usr/bin/python3
"""Applies ops and walks trees inside a mounted FUSE volume, chrooted into it.

    python3 agent.py MOUNTPOINT

Standalone (no vfz import): the FUSE oracles (vfz.oracles.fusefat) start it
as a child so that a request the FUSE daemon never answers blocks this
process, not the harness; the parent kills it on its per-request timeout.
It chroots into MOUNTPOINT (as the kernel oracle's agent does), so "/.." is
the volume root and no path leaves the volume.

Protocol: one JSON object a line on stdin, one JSON answer a line on stdout.
    {"op": "mkdir", "args": ["/a"]}                -> {"result": "ok" | "ENOENT" | ...}
    {"op": "create", "args": ["/f", SIZE, SEED]}  (O_CREAT|O_EXCL, then the content)
    {"op": "write", "args": ["/f", OFF, SIZE, SEED]}  (O_WRONLY, pwrite at OFF)
    {"op": "rename"|"unlink"|"rmdir", "args": [...]}
    {"op": "truncate", "args": ["/f", SIZE]}       (truncate(2))
    {"op": "touch", "args": ["/f", [S, NS], [S, NS]]}  (utimensat: modify, access time)
    {"op": "chattr", "args": ["/f", LETTERS]}      (FAT_IOCTL_SET_ATTRIBUTES)
    {"op": "walk"}  -> {"entries": [[path, "file"|"dir", size, sha256 | null, error | null,
                                     [mtime, atime] | null]]}
Paths travel as JSON strings; names the host cannot decode as UTF-8 are
sent with surrogateescape code points, which json encodes as lone
surrogates (the parent maps them to U+FFFD per byte).
"""
import errno
import fcntl        # (imported before the chroot: nothing can be imported after it)
import hashlib
import json
import os
import struct
import sys


def content(seed, size, start=0):
    """Bytes start..start+size of the pattern (seed + 31*i) mod 256 (vfz.opscript.content)."""
    seed %= 256
    pat = bytes((seed + 31 * i) % 256 for i in range(256))
    out = bytearray()
    i = start % 256
    while len(out) < size:
        n = min(256 - i, size - len(out))
        out += pat[i:i + n]
        i = 0
    return bytes(out)


def ename(e):
    return errno.errorcode.get(e.errno, f"E{e.errno}") if isinstance(e, OSError) else type(e).__name__


def put(fd, off, size, seed):
    data = content(seed, size)
    done = 0
    while done < size:
        n = os.pwrite(fd, data[done:done + (1 << 20)], off + done)
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        done += n


def apply_op(op, a):
    if op == "mkdir":
        os.mkdir(a[0], 0o755)
    elif op == "create":
        fd = os.open(a[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            put(fd, 0, a[1], a[2])
        finally:
            os.close(fd)
    elif op == "write":
        fd = os.open(a[0], os.O_WRONLY)
        try:
            put(fd, a[1], a[2], a[3])
        finally:
            os.close(fd)
    elif op == "rename":
        os.rename(a[0], a[1])
    elif op == "unlink":
        os.unlink(a[0])
    elif op == "rmdir":
        os.rmdir(a[0])
    elif op == "truncate":
        os.truncate(a[0], a[1])
    elif op == "touch":
        # utimensat with both times ([seconds, nanoseconds] each)
        os.utime(a[0], ns=(a[2][0] * 10**9 + a[2][1], a[1][0] * 10**9 + a[1][1]))
    elif op == "chattr":
        # FAT_IOCTL_SET_ATTRIBUTES (_IOW('r', 0x11, __u32)) on open(O_RDONLY),
        # as the kernel oracle's agent does it
        bits = sum({"r": 1, "h": 2, "s": 4, "a": 32}[c] for c in a[1] if c != "-")
        fd = os.open(a[0], os.O_RDONLY)
        try:
            fcntl.ioctl(fd, 0x40047211, struct.pack("I", bits))
        finally:
            os.close(fd)
    else:
        raise ValueError(f"unknown op {op!r}")


def walk():
    out = []
    for root, dirs, files in os.walk("/"):
        dirs.sort()
        for d in dirs:
            out.append([os.path.join(root, d), "dir", None, None, None, times(os.path.join(root, d))])
        for f in sorted(files):
            p = os.path.join(root, f)
            try:
                h = hashlib.sha256()
                n = 0
                with open(p, "rb") as fh:
                    while True:
                        b = fh.read(1 << 20)
                        if not b:
                            break
                        h.update(b)
                        n += len(b)
                out.append([p, "file", n, h.hexdigest(), None, times(p)])
            except OSError as e:
                out.append([p, "file", None, None, ename(e), times(p)])
    return out


def times(p):
    """[modify, access] seconds of lstat(p), or None."""
    try:
        st = os.lstat(p)
    except OSError:
        return None
    return [int(st.st_mtime), int(st.st_atime)]


def main():
    if len(sys.argv) != 2:
        print("usage: agent.py MOUNTPOINT", file=sys.stderr)
        return 2
    os.chroot(sys.argv[1])
    os.chdir("/")
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            if req["op"] == "walk":
                ans = {"entries": walk()}
            else:
                apply_op(req["op"], req.get("args", []))
                ans = {"result": "ok"}
        except OSError as e:
            ans = {"result": ename(e)}
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
