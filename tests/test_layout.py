#!/usr/bin/python3
"""The layout stays true (docs/architecture.md): imports flow one way
(cli -> subsystems -> check -> oracles -> model -> contracts), no module
imports another in a circle, no module is over ~500 lines and each opens
with a docstring, every package says its concern and what it may import,
and no code outside vfz/oracles/ tests an oracle's name.

Static: it parses every module of vfz/ (lazy imports inside functions
included) and needs no tool.
"""
import ast
import os
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import oracles  # noqa: E402

# top-level module or folder of vfz -> rank; a module may import a lower
# rank or its own folder. Folders of one rank never import each other.
CONTRACTS = ("__init__", "errors", "opscript", "listing", "findings", "proc", "lifeline", "fatimg", "geometry",
             "iobounds", "sanitizer")
RANKS = dict(contracts=0, model=1, oracles=2, check=3, campaign=4, hostile=4,
             export=5, study=5, selftest=5, report=5, cli=6)
MAX_LINES = 520          # "~500": a module a little over is not split for its own sake


def modules():
    """dotted name -> path of every module of vfz/."""
    out = {}
    for root, dirs, files in os.walk(os.path.join(REPO, "vfz")):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "node_modules")]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), REPO)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join(rel)] = os.path.join(root, f)
    return out


MODS = modules()


def source(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def imports_of(name, path):
    """The vfz modules the module imports, anywhere in its body."""
    tree = ast.parse(source(path), path)
    pkg = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("vfz")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[:len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            if not base.startswith("vfz"):
                continue
            for a in node.names:
                full = base + "." + a.name
                out.add(full if full in MODS else base)
    return {m for m in out if m in MODS and m != name}


def unit(name):
    """The layout unit of a module: its folder under vfz, or the module."""
    parts = name.split(".")
    top = "__init__" if len(parts) == 1 else parts[1]
    return "contracts" if top in CONTRACTS else top


GRAPH = {n: imports_of(n, p) for n, p in MODS.items()}


class LayoutTests(unittest.TestCase):
    def test_every_unit_has_a_rank(self):
        self.assertEqual(sorted({unit(n) for n in MODS} - set(RANKS)), [],
                         "a module or folder of vfz/ that the layering does not place")

    def test_imports_flow_one_way(self):
        bad = []
        for n, deps in GRAPH.items():
            for d in deps:
                a, b = unit(n), unit(d)
                if a != b and RANKS[b] >= RANKS[a]:
                    bad.append(f"{n} imports {d} ({a} rank {RANKS[a]} -> {b} rank {RANKS[b]})")
        self.assertEqual(bad, [])

    def test_no_circles(self):
        # Tarjan's strongly connected components over the whole import graph
        index, low, stack, on, sccs = {}, {}, [], set(), []
        sys.setrecursionlimit(10000)

        def visit(v):
            index[v] = low[v] = len(index)
            stack.append(v)
            on.add(v)
            for w in GRAPH[v]:
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(sorted(comp))

        for v in sorted(GRAPH):
            if v not in index:
                visit(v)
        # a package's __init__ re-exported by its own modules is not a circle of concerns
        sccs = [c for c in sccs if not all(m.startswith(min(c, key=len) + ".") or m == min(c, key=len)
                                           for m in c) or len(c) > 2]
        self.assertEqual(sccs, [], "modules that import each other in a circle")

    def test_every_vfz_import_resolves(self):
        """Every `from vfz... import name` and `import vfz...` in vfz/, tests/, bench/ and
        scripts/ (lazy ones inside functions too) names a module or an attribute that exists:
        a module that moved leaves no import behind."""
        import importlib
        files = list(MODS.values())
        for d in ("tests", "bench", "scripts"):
            for root, _, names in os.walk(os.path.join(REPO, d)):
                files += [os.path.join(root, n) for n in names if n.endswith(".py")]
        bad = []
        for path in files:
            for node in ast.walk(ast.parse(source(path), path)):
                if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("vfz"):
                    try:
                        mod = importlib.import_module(node.module)
                    except ImportError as e:
                        bad.append(f"{path}:{node.lineno}: {node.module}: {e}")
                        continue
                    for a in node.names:
                        if a.name != "*" and not hasattr(mod, a.name):
                            try:
                                importlib.import_module(f"{node.module}.{a.name}")
                            except ImportError:
                                bad.append(f"{path}:{node.lineno}: {node.module} has no {a.name}")
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        if a.name.startswith("vfz"):
                            try:
                                importlib.import_module(a.name)
                            except ImportError as e:
                                bad.append(f"{path}:{node.lineno}: {a.name}: {e}")
        self.assertEqual(bad, [])

    def test_module_size_and_docstring(self):
        bad = []
        for n, p in sorted(MODS.items()):
            src = source(p)
            lines = src.count("\n")
            if lines > MAX_LINES:
                bad.append(f"{p}: {lines} lines")
            if not ast.get_docstring(ast.parse(src)) and src.strip():
                bad.append(f"{p}: no docstring stating its concern")
        self.assertEqual(bad, [])

    def test_packages_say_what_they_may_import(self):
        for n, p in MODS.items():
            if p.endswith("__init__.py") and n.count(".") == 1 and unit(n) not in ("oracles", "model"):
                doc = ast.get_docstring(ast.parse(source(p))) or ""
                self.assertIn("Layer:", doc, f"{p} does not say what it may import")

    def test_no_oracle_name_tested_outside_oracles(self):
        names = set(oracles.entries()) | {e.family for e in oracles.entries().values()}
        bad = []
        for n, p in MODS.items():
            if unit(n) == "oracles":
                continue
            tree = ast.parse(source(p), p)
            for node in ast.walk(tree):
                if not isinstance(node, ast.Compare):
                    continue
                for c in [node.left] + list(node.comparators):
                    consts = [c] if isinstance(c, ast.Constant) else \
                        list(c.elts) if isinstance(c, (ast.Tuple, ast.List, ast.Set)) else []
                    for k in consts:
                        if isinstance(k, ast.Constant) and k.value in names:
                            bad.append(f"{p}:{node.lineno}: tests oracle name {k.value!r}")
        self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main()
