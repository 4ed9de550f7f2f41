"""The vvfat writers: the model's tree of an op-script made into a volume by QEMU's vvfat (a formatter in the writer role)."""
import os

from vfz import model, oracles
from vfz.oracles import Writer
from vfz.oracles.vvfat import exceptions
from vfz.oracles.vvfat.volume import available, make_volume


class VvfatWriter(Writer):
    """Not a writer of ops: vvfat makes a volume from a host directory.
    apply() runs the script through the model of this registry entry (the
    checker's own prediction, so the results are the model's by
    construction), writes the model's final tree to a host directory and
    replaces the image with vvfat's volume of it. What the readers then see
    otherwise than the model's tree is vvfat's doing."""
    explain = staticmethod(exceptions.explain_read)
    known_failure = staticmethod(exceptions.known_failure)

    def __init__(self, name="vvfat-16", timeout=60.0, **cfg):
        self.name = name

    def available(self):
        return available()

    def _apply(self, image, ops, timeout, w):
        if not os.path.isfile(image):
            w.error = f"no such image: {image}"
            return
        e = oracles.entry(self.name)
        m = model.Model(e.profile, e.names, root=model.root_for(e.profile, image), rule=e.shortname)
        m.apply(ops)
        w.results = list(m.results)
        w.raw, err = make_volume(self.name, m.root, image, timeout)
        if err:
            w.error = f"vvfat: {err}"
