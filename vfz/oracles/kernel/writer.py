"""The kernel writer: the guest's agent applies an op-script to the mounted image, fetched back after.

One pipeline per script: (the nodual seed,) the image in, the mount, one
request per op (its errno name), the unmount, the image out, the kernel
messages. Ops answered before the guest hung or died are kept. The
variants differ only in their module set (and the seed they write).
"""
import struct

from vfz.oracles import Timer, Writer, WriteResult
from vfz.opscript import attr_bits
from vfz.oracles.kernel.answers import STORAGE_RE, _txt, parse_kmsg
from vfz.oracles.kernel import trace
from vfz.oracles.kernel.guest import _KernelBase
from vfz.oracles.kernel.vm import VMError, encode_image_file, s, write_image


OP_CODES = {"mkdir": "m", "create": "c", "write": "w", "rename": "r", "unlink": "u", "rmdir": "d",
            "truncate": "t", "chattr": "a", "touch": "T"}


def encode_op(op):
    """One op as the agent's X payload (agent.c: truncate(2), the
    FAT_IOCTL_SET_ATTRIBUTES ioctl, utimensat(2) for the second grammar)."""
    code = OP_CODES[op.kind]
    a = op.args
    p = struct.pack("<B", ord(code)) + s(a[0])
    if op.kind == "create":
        p += struct.pack("<QQ", a[1], a[2])
    elif op.kind == "write":
        p += struct.pack("<QQQ", a[1], a[2], a[3])
    elif op.kind == "rename":
        p += s(a[1])
    elif op.kind == "truncate":
        p += struct.pack("<Q", a[1])
    elif op.kind == "chattr":
        p += struct.pack("<I", attr_bits(a[1]))
    elif op.kind == "touch":
        p += struct.pack("<QQQQ", a[1].sec, a[1].nsec, a[2].sec, a[2].nsec)
    return p


class KernelWriter(_KernelBase, Writer):

    def __init__(self, name="kernel", **cfg):
        _KernelBase.__init__(self, name, **cfg)
        self.last_iotrace = None    # traced: the last apply's sectors (trace.py)

    def apply(self, image, ops, timeout=60.0, options=None):
        """options: mount options for this request only (default cfg options)."""
        w = WriteResult(self.name)
        with Timer() as t:
            try:
                # its data extents only (traced: the host puts it on the drive)
                data = b"" if self.iotrace else encode_image_file(image)
            except OSError as e:
                w.error = f"cannot read image: {e.strerror}"
                data = None
            if data is not None:
                try:
                    self._apply(w, image, data, ops, timeout, options or self.options)
                except VMError as e:
                    w.error = f"kernel VM: {e}"
                    w.raw += f"[error] {e}\n"
                except OSError as e:
                    w.error = f"cannot write the image back: {e.strerror}"
        w.seconds = t.seconds
        return w

    def _apply(self, w, image, data, ops, timeout, options):
        vm, mods = self._vm()
        frames = []
        if self.seed is not None:
            frames.append(("W", s("/sys/module/vfat/parameters/nodual_seed") + s(str(self.seed))))
        frames += [("B" if self.iotrace else "I", data),
                   ("O", struct.pack("<I", 0) + s(self.fstype) + s(options))]
        first_op = len(frames)
        frames += [("X", encode_op(op)) for op in ops]
        if self.hang_ms:   # test hook: the guest stops answering after the ops
            frames.append(("H", struct.pack("<I", self.hang_ms)))
        frames += [("U", self._uflags())] + ([] if self.iotrace else [("G", b"")]) + [("K", b"")]
        self.last_iotrace = None
        try:
            if self.iotrace:    # the image on the traced drive, by op; copied back from it (trace.py)
                groups = trace.writer_groups(frames, f"mount -t {self.fstype} -o {options}", ops)
                replies, self.last_iotrace = trace.pipeline(vm, image, groups, timeout, mods, save=True)
                replies.insert(len(replies) - 1, ("o", None))     # G: the drive was read back
            else:
                replies = vm.pipeline(frames, timeout, modules=mods)
        except VMError as e:
            # the ops that answered before the guest hung or died
            got = list(e.partial)[first_op:first_op + len(ops)]
            w.results = [_txt(p) if st == "o" else "EHARNESS" for st, p in got]
            if len(e.partial) < first_op:
                w.raw += "[no answer] to the image/mount request\n"
            elif len(w.results) < len(ops):
                w.raw += f"[no answer] op {len(w.results) + 1}: {ops[len(w.results)]}\n"
            else:
                w.raw += "[no answer] after the last op (unmount/image)\n"
            raise
        finally:
            if not self.persistent:
                vm.close()
        if self.seed is not None:
            wst, wp = replies.pop(0)
            w.raw += f"[nodual_seed={self.seed}] {_txt(wp)}\n"
            if wst != "o":
                w.error = f"cannot set nodual_seed: {_txt(wp)}"
                return
        (ist, ip), (mst, mp) = replies[0], replies[1]
        opr = replies[2:2 + len(ops)]
        if self.hang_ms:
            del replies[2 + len(ops)]
        (ust, up), (gst, gp), (_, kp) = replies[2 + len(ops):]
        msgs = parse_kmsg(kp)
        w.raw += (f"[image] {_txt(ip).strip()}\n[mount {self.fstype} {options}] "
                  f"{_txt(mp)}\n")
        if ist != "o":
            w.error = "image transfer failed: " + _txt(ip).strip()
            return
        if mst != "o":
            w.error = f"mount failed: {_txt(mp)}"
            w.raw += "[kmsg]\n" + "".join(m + "\n" for m in msgs)
            return
        for op, (st, p) in zip(ops, opr):
            res = _txt(p) if st == "o" else "EHARNESS"
            w.results.append(res)
            w.raw += f"{op} -> {res}\n"
        w.raw += f"[umount] {_txt(up).strip()}\n[kmsg]\n" + "".join(m + "\n" for m in msgs)
        bad = [m for m in msgs if STORAGE_RE.search(m)]
        if bad:
            w.error = f"guest storage failed (image too large for mem={self.mem}?): {bad[0]}"
        if ust != "o":
            w.error = "umount failed: " + _txt(up).strip()
        if gst != "o":
            w.error = "cannot fetch image: " + _txt(gp)
            return
        if gp is not None:
            write_image(image, gp)      # sparse: the same bytes, holes for zeros


class KernelNodualWriter(KernelWriter):
    variant = "v1"
    seeded = True

    def __init__(self, name="kernel-nodual", **cfg):
        KernelWriter.__init__(self, name, **cfg)


class KernelNodualV3Writer(KernelWriter):
    variant = "v3"
    seeded = True

    def __init__(self, name="kernel-nodual-v3", **cfg):
        KernelWriter.__init__(self, name, **cfg)


class KernelNo83Writer(KernelWriter):
    variant = "no83"

    def __init__(self, name="kernel-no83", **cfg):
        KernelWriter.__init__(self, name, **cfg)
