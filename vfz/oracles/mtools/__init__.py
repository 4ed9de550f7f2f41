"""mtools (GNU mtools 4.0.x) as a reader and as a writer.

Reader: `mdir -/ -b -a ::/` lists the tree, one recursive `mcopy -s` gives
the contents (reader.py). Writer: each op becomes mmd / mcopy / mmove /
mdel / mrd, its POSIX outcome decided beforehand from what mtools itself
lists, since mtools has no errno (writer.py). Configuration: a generated
MTOOLSRC with codepage 437 (mtools defaults to 850), mtools_skip_check=1
(tool.py).

The package: tool.py (how mtools is run), reader.py, writer.py,
format.py (mformat as the formatter `mformat`),
exceptions.py (the named exceptions, their evidence and the catalogue),
aliases.py (mtools' 8.3 aliases, for mtools-nul-alias). This module holds
the registry entry and the public names.
"""
from vfz.oracles.evidence import few_clusters_exception
from vfz.oracles import META_OPS, OPS, Entry
from vfz.oracles.mtools.aliases import nul_alias_in_image, nul_alias_leaf, nul_alias_op  # noqa: F401
from vfz.oracles.mtools.exceptions import (ALIAS_NOTE, alias_lookup_op, check_kind,  # noqa: F401
                                           known_failure, trailing_dot_explains)
from vfz.oracles.mtools.exceptions import EXCEPTIONS as _NAME_EXCEPTIONS
from vfz.oracles.mtools.meta import EXCEPTIONS as _META_EXCEPTIONS
from vfz.oracles.mtools.reader import MtoolsReader  # noqa: F401
from vfz.oracles.mtools.tool import list_paths, mpath, mtarget, mtools_env  # noqa: F401
from vfz.oracles.mtools.writer import MtoolsWriter, short_names  # noqa: F401

EXCEPTIONS = _NAME_EXCEPTIONS + _META_EXCEPTIONS

# ---------------------------------------------------------------- registry
EXPORTS = {"mtools": "vfz.oracles.mtools.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [
    Entry("mtools", "mtools", fat_type="count", iotrace="preload", reader="vfz.oracles.mtools:MtoolsReader",
          writer="vfz.oracles.mtools:MtoolsWriter", profile="mtools", names="nodual", shorts="own",
          needs=("mtools",), default=("reader", "diff-writer"),
          supports=OPS | META_OPS | {"write-offset"}),
    Entry("mformat", "mtools", formatter="vfz.oracles.mtools.format:MformatFormatter",
          needs=("mtools",), label="mtools mformat"),
]

# decides the FAT type by the cluster count (Entry.fat_type; the checker applies it)
EXCEPTIONS = EXCEPTIONS + [few_clusters_exception("mtools")]
