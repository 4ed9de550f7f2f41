"""The model: what Linux 6.1 vfat does with an op-script, as an oracle of its own.

Four modules: names (the name rules), tree (the expected tree and op
results: Model), root (directory slots and the FAT12/16 fixed root that
can fill), profiles (writers that differ by design: mtools, and the knobs
an oracle module may define for its own).

Why two models. harnesses/model.c is the C model that fuzz_ops checks the
core against in-process, thousands of times a second: it covers what the
fuzz target needs (op results, the tree, aliases learnt from the core's
own listing) and nothing slower. This Python model is the campaign's and
diff's oracle for every writer, the kernel included: it predicts dual
aliases itself (shortname_parts), the FAT12/16 root filling, the mtools
profile and other oracles' profiles. Both are written from Linux's
fs/fat and VFS rules, independently of the core; tests/test_models_agree
runs the same `vfat gen` scripts through both and compares the per-op
results wherever both model an op.
"""
from vfz.model.names import *  # noqa: F401,F403
from vfz.model.names import _cp437_upper, _short_able, _upper_nonascii, _bare_shown, _raw_oem  # noqa: F401
from vfz.model.profiles import *  # noqa: F401,F403
from vfz.model.profiles import mtools_store, _mtools_reserved  # noqa: F401
from vfz.model.root import *  # noqa: F401,F403
from vfz.model.tree import *  # noqa: F401,F403
