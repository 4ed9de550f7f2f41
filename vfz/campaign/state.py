"""The campaign's state file (<workdir>/state.json): seeds and iterations, written atomically; an unreadable one is an error."""
import json
import os

from vfz.errors import UsageError


def load_state(workdir, fresh=False):
    """The workdir's state.json ({} when there is none, or when fresh). A
    state that cannot be read is an error, never silently replaced."""
    path = os.path.join(workdir, "state.json")
    if fresh or not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            st = json.load(f)
        if not isinstance(st, dict) or not isinstance(st.get("seeds", {}), dict):
            raise ValueError("not a campaign state object")
        return st
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: unreadable campaign state ({e}); --fresh starts afresh "
                         f"(the findings are kept)") from None


def save_state(workdir, st):
    tmp = os.path.join(workdir, f".state.json.{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1)
    os.replace(tmp, os.path.join(workdir, "state.json"))
