"""The kernel-vvfat reader: the host directory vvfat wrote back from the guest kernel's writes, listed from its archive (names, tree, sizes, contents).

It reads only the kernel-vvfat writer's images (the registry's medium
"dir"); the checker never hands it a FAT volume, nor a FAT reader its
archives.
"""
import tarfile

from vfz.oracles import Reader
from vfz.oracles.vvfat import archive, exceptions, rw


class VvfatDirReader(Reader):
    glue = "kernel-vvfat"
    explain = staticmethod(exceptions.explain_dir)
    name_exception = staticmethod(rw.name_exception)

    def __init__(self, name="kernel-vvfat", **cfg):
        self.name = name

    def available(self):
        return True, ""

    def _read(self, image, timeout, r):
        try:
            entries, guest = archive.read(image)
        except tarfile.ReadError as e:
            r.error = f"not a host-directory archive of the kernel-vvfat writer: {e}"
            return
        r.listing = entries
        r.extra["guest"] = guest
        r.raw = "".join(f"{e['type'][0]} {e.get('size', '-'):>8} {e['path']}\n" for e in entries)
