"""The image of the kernel-vvfat writer: the host directory vvfat wrote back, as a POSIX tar archive, with the guest kernel's own listing of the volume in its global header.

A tar keeps what the comparison needs -- names as the host has them (bytes
that are not UTF-8 kept by surrogateescape), the tree, file sizes and
contents -- in one file the findings and reproducers can carry like any
image. The guest's listing (what Linux saw on the vvfat disk before it
unmounted) rides along as evidence: where the host directory differs from
the model but the guest's listing does not, vvfat's write-back did it.
"""
import hashlib
import json
import os
import tarfile

from vfz import listing

GUEST_KEY = "VFZ.guest"          # the global PAX record holding the guest's listing
ENC = dict(encoding="utf-8", errors="surrogateescape")


def _walk(top):
    """(relative path, is_dir) of everything under top, parents first."""
    out = []
    for dirpath, dirs, files in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        for n in sorted(dirs):
            out.append((os.path.normpath(os.path.join(rel, n)), True))
        for n in sorted(files):
            out.append((os.path.normpath(os.path.join(rel, n)), False))
    return out


def write(top, image, guest=None):
    """Archive host directory top over image -> raw text (one line per
    member). guest: the guest kernel's listing (entries), kept in the
    archive's global header."""
    hdr = {GUEST_KEY: json.dumps([listing.core(e) for e in guest], ensure_ascii=True)} if guest is not None else {}
    raw = ["[host directory]"]
    tmp = image + ".tar-tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT, **ENC) as t:
        # the top directory itself first, carrying the guest's listing (an
        # archive is never empty: tarfile reads no lone global header)
        ti = t.gettarinfo(top, arcname=".")
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        ti.pax_headers = hdr
        t.addfile(ti)
        for rel, is_dir in _walk(top):
            ti = t.gettarinfo(os.path.join(top, rel), arcname=rel)
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            raw.append(f"  {'d' if is_dir else 'f'} {ti.size if not is_dir else '-':>8} /{rel}")
            if ti.isfile():
                with open(os.path.join(top, rel), "rb") as f:
                    t.addfile(ti, f)
            else:
                t.addfile(ti)
    os.replace(tmp, image)
    return "\n".join(raw) + "\n"


def read(image):
    """Archive -> (canonical entries, the guest's listing or None). Raises
    tarfile.ReadError when image is no such archive."""
    entries = []
    g = None
    with tarfile.open(image, "r:", **ENC) as t:
        for m in t:
            path = "/" + m.name.strip("/")
            if m.name in (".", "./"):           # the top directory: not an entry
                g = m.pax_headers.get(GUEST_KEY)
                continue
            if m.isdir():
                entries.append(listing.entry(path, "dir"))
            elif m.isfile():
                h = hashlib.sha256()
                f = t.extractfile(m)
                for b in iter(lambda: f.read(1 << 20), b""):
                    h.update(b)
                entries.append({"path": path, "type": "file", "size": m.size, "sha256": h.hexdigest()})
            else:
                entries.append({"path": path, "type": "other"})
    return sorted(entries, key=lambda e: e["path"]), (json.loads(g) if g is not None else None)


def file_bytes(image, path):
    """The bytes of the file at path (as read() lists it) in the archive;
    None when it holds no such file or is no archive."""
    try:
        with tarfile.open(image, "r:", **ENC) as t:
            for m in t:
                if m.isfile() and "/" + m.name.strip("/") == path:
                    return t.extractfile(m).read()
    except (OSError, tarfile.TarError):
        return None
    return None
