"""vfatfuzz Python side: the one package of the project.

The contracts (listing, opscript, proc, findings), the model, the oracles
(vfz.oracles, one module per implementation, and their registry) and the
drivers (one module per subcommand: cmd_<name>). Entry points (scripts/vfatfuzz,
tests/, bench/) put the repository root on sys.path; nothing in here does.
"""
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
