"""The image size on which a formatter makes a cluster count: asked of the formatter itself.

A binary search over image sizes (a few milliseconds a format, cached per layout): the
cluster-count boundaries (vfz.geometry: 4084/4085, 65524/65525) are found from each
formatter's own layout, never from a formula of ours. Used by the campaign's geometry draw
(vfz/campaign/geometry.py) and the formatter sweep (vfz/study/formatters.py). Images stay
under MAX_IMAGE.
"""
import functools
import os
import tempfile

from vfz import geometry, oracles
from vfz.fatimg import Fat

MAX_IMAGE = 64 << 20


def clusters_of(path):
    with open(path, "rb") as f:
        fat = Fat(f.read(4096))
    return fat.clusters


@functools.lru_cache(maxsize=4096)
def size_for(layout, target):
    """The smallest image size (a multiple of the sector) on which the formatter makes
    `target` clusters with this layout (a Geometry whose size is ignored), or None when no
    size gives exactly that count (or the formatter refuses around it)."""
    f = oracles.get_formatter(layout.formatter)
    unit = layout.bytes_per_sector
    with tempfile.TemporaryDirectory(prefix="vfz-geo-") as d:
        img = os.path.join(d, "g.img")

        def count(size):
            r = f.format(img, geometry.Geometry(**{**layout.__dict__, "size": size}))
            return None if r.error else clusters_of(img)

        # grow until the count reaches the target; a refusal above an accepted size means the
        # formatter's own maximum for this layout: look for the largest size it accepts
        lo, s, ok = None, 64 * unit, None
        hi = None
        while s <= MAX_IMAGE:
            c = count(s)
            if c is not None and c >= target:
                hi = s
                break
            if c is None and ok is not None:
                a, b = ok, s
                while b - a > unit:
                    m = (a + b) // 2
                    m -= m % unit
                    if count(m) is None:
                        b = m
                    else:
                        a = m
                if count(a) >= target:
                    hi = a
                break
            if c is not None:
                ok = s
            lo = s
            s *= 2
        if hi is None:
            return None
        lo = lo or unit
        while hi - lo > unit:                # smallest accepted size with count >= target
            mid = (lo + hi) // 2
            mid -= mid % unit
            c = count(mid)
            if c is not None and c >= target:
                hi = mid
            else:
                lo = mid
        return hi if count(hi) == target else None


@functools.lru_cache(maxsize=1024)
def smallest(layout):
    """The smallest image (a multiple of the sector) the formatter makes with this layout (its
    own minimum, up to MAX_IMAGE): a doubling from 64 sectors, then a binary search below the
    first size it accepts; None when it makes none."""
    f = oracles.get_formatter(layout.formatter)
    unit = layout.bytes_per_sector
    with tempfile.TemporaryDirectory(prefix="vfz-geo-") as d:
        img = os.path.join(d, "g.img")

        def makes(size):
            return not f.format(img, geometry.Geometry(**{**layout.__dict__, "size": size})).error

        lo, size = 0, 64 * unit
        while size <= MAX_IMAGE and not makes(size):
            lo, size = size, size * 2
        if size > MAX_IMAGE:
            if lo == MAX_IMAGE or not makes(MAX_IMAGE):
                return None
            size = MAX_IMAGE
        while size - lo > unit:              # refused at lo, made at size
            mid = (lo + size) // 2
            mid -= mid % unit
            if makes(mid):
                size = mid
            else:
                lo = mid
        return size
