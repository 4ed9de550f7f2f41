"""The Node process of the jsfatfs oracle: this package's server.js (natevw's npm fatfs)
through the shared Node glue (vfz.oracles.node): one persistent process, JSON lines in and
out, restarted after a throw that reached Node's event loop (the server answers it and
exits), a crash or a hang; the ServerError's `answer` is the server's last word, with the
results of the ops answered before.
"""
import os

from vfz.oracles import node
from vfz.oracles.node import START_TIMEOUT, ServerError  # noqa: F401  (the package's names)

NODE_DIR = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(NODE_DIR, "server.js")
PACKAGE = os.path.join(NODE_DIR, "node_modules", "fatfs", "package.json")


def available():
    """-> (True, node path) or (False, why not)."""
    return node.available(PACKAGE, "the npm package fatfs", NODE_DIR)


class Server(node.NodeServer):
    """One Node process running server.js, restarted after it died."""

    def __init__(self):
        super().__init__(NODE_DIR, "jsfatfs", available)
