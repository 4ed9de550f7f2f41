"""Run an exported Linux reproducer (vfz/oracles/kernel/export.py's run.sh) inside
the kernel oracle's guest, for a host whose kernel cannot loop-mount vfat
(this project's machines: no vfat module, no KVM).

The guest (vfz/oracles/kernel/: Debian's 6.1 kernel, its stock fat/vfat,
busybox-static in the initramfs) gets the reproducer directory as a tar
through the agent's image frame (`I`: the bytes land in /tmp/img), and one
shell frame (`S`) installs the busybox applets, unpacks it under /repro
and runs `sh run.sh` there as root -- the very script a maintainer gets,
loop mount included. Its output and exit status come back as they would
on a Linux box: 0 REPRODUCED, 1 NOT REPRODUCED, 2 CANNOT RUN.

    run_in_vm(dirname, timeout=120.0, vm=None) -> (status, printed, seen)

seen: the text of the seen.txt run.sh wrote in the guest (None if none).

vm: a booted vfz.oracles.kernel.vm.VM to share (a test's, the campaign's);
by default the stock kernel oracle's pooled VM of this process.
"""
import io
import os
import tarfile

from vfz.oracles.repro import ExportError

GUEST_DIR = "/repro"
SEEN_MARK = "@@vfz-seen.txt@@"


def _tar(dirname):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for root, dirs, files in os.walk(dirname):
            dirs.sort()
            for n in sorted(files):
                p = os.path.join(root, n)
                rel = os.path.relpath(p, dirname)
                if rel in ("printed.txt", "seen.txt", "README.md"):
                    continue
                t.add(p, arcname=rel, recursive=False)
    return buf.getvalue()


def stock_vm():
    """The stock kernel oracle's pooled VM (booted)."""
    from vfz.oracles.kernel import KernelReader
    return KernelReader().vm()


def run_in_vm(dirname, timeout=120.0, vm=None):
    """-> (status, printed, seen): run.sh of DIRNAME run as root in the guest."""
    from vfz.oracles.kernel.vm import VMError, encode_image, s
    if not os.path.isfile(os.path.join(dirname, "run.sh")):
        raise ExportError(f"{dirname}: no run.sh")
    if vm is None:
        try:
            vm = stock_vm()
        except VMError as e:
            return 2, f"CANNOT RUN: the kernel oracle's VM did not start: {e}\n", None
    inner = max(10, int(timeout) - 10)
    cmd = ("export PATH=/bin:/sbin:/usr/bin:/usr/sbin LC_ALL=C.UTF-8; "
           "[ -e /bin/xz ] || busybox --install -s /bin; "
           f"rm -rf {GUEST_DIR} && mkdir -p {GUEST_DIR}/pkg && cd {GUEST_DIR}/pkg && "
           "tar xf /tmp/img || exit 3; "
           f"timeout {inner} sh {GUEST_DIR}/pkg/run.sh {GUEST_DIR}/work; rc=$?; "
           f"[ -f {GUEST_DIR}/work/seen.txt ] && {{ echo '{SEEN_MARK}'; cat {GUEST_DIR}/work/seen.txt; }}; "
           f"cd /; umount {GUEST_DIR}/work/mnt 2>/dev/null; rm -rf {GUEST_DIR}; exit $rc")
    try:
        (ist, ip), (sst, sp) = vm.pipeline([("I", encode_image(_tar(dirname))), ("S", s(cmd))],
                                           timeout)
    except VMError as e:
        return 2, f"CANNOT RUN: the guest did not answer: {e}\n", None
    if ist != "o":
        return 2, f"CANNOT RUN: the guest did not take the reproducer: {ip.decode('utf-8', 'replace')}\n", None
    text = sp.decode("utf-8", "replace")
    head, _, out = text.partition("\n")
    seen = None
    if "\n" + SEEN_MARK + "\n" in "\n" + out:
        out, _, seen = ("\n" + out).rpartition("\n" + SEEN_MARK + "\n")
        out = out[1:] + "\n"
    try:
        rc = int(head.strip().split("=", 1)[1])
    except (IndexError, ValueError):
        return 2, f"CANNOT RUN: unexpected guest answer {head[:80]!r}\n", None
    if sst != "o" or rc == 3:
        return 2, out + f"\nCANNOT RUN: the guest could not unpack the reproducer (rc {rc})\n", None
    if rc not in (0, 1, 2):
        out += f"\nCANNOT RUN: run.sh ended with status {rc} in the guest" + \
               (" (timeout)" if rc == 143 else "") + "\n"
        rc = 2
    return rc, out, seen
