"""The FatFs glue's Node process: this package's server.js (js-fatfs, FatFs R0.15 in
WebAssembly) through the shared Node glue (vfz.oracles.node). A WebAssembly trap, a
JavaScript exception, a death or a request that does not answer in time is a ServerError,
and the process is gone: the next request starts a fresh one.
"""
import os

from vfz.oracles import node
from vfz.oracles.node import START_TIMEOUT, ServerError  # noqa: F401  (the package's names)

# this package's folder: server.js, package.json, its lockfile and node_modules
NODE_DIR = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(NODE_DIR, "server.js")
WASM = os.path.join(NODE_DIR, "node_modules", "js-fatfs", "dist", "fatfs.wasm")


def available():
    """-> (True, node path) or (False, why not)."""
    return node.available(WASM, "js-fatfs", NODE_DIR)


class Server(node.NodeServer):
    """One Node process running server.js, restarted after it died."""

    def __init__(self):
        super().__init__(NODE_DIR, "FatFs", available)
