"""What a check finds: a divergence (its signature fields, writer and detail) and the result of one check.

A divergence's fields are structural -- role, oracle (a writer by its
family), verdict, kind, the op that touched the path (op_for_path) and the
name class of its leaf (name_class) -- so one bug gives one signature
whatever the script's names; its sig is their hash (vfz.findings.sig_hash).
"""
from vfz import findings, opscript, oracles


def family(writer):
    return oracles.entry(writer).family


def first_bad(ops, m, wr, wcls):
    """Index of the first op whose result differs from the model's, after
    the writer's named exceptions; None when all agree."""
    if wr.error:
        return None
    for i, op in enumerate(ops):
        e = m.results[i] if i < len(m.results) else None
        a = wr.results[i] if i < len(wr.results) else None
        if e == a or (a is not None and wcls.result_exception(op, e, a)):
            continue
        return i
    return None


def fold_path(p):
    return p.upper()


def op_for_path(ops, path):
    """Kind of the last op that touched path (by exact or case-folded path,
    or by leaf name), '-' when none did."""
    if not path:
        return "-"
    leaf = findings.leaf_of(path).upper()
    best = "-"
    for op in ops:
        for k, a in zip(opscript.OPS[op.kind], op.args):
            if k == "s" and (a == path or fold_path(a) == fold_path(path) or
                             findings.leaf_of(a).upper() == leaf):
                best = op.kind
    return best


def ops_for(wn, ops):
    """The ops writer wn is sent: those its traits say it supports (no
    renames for a writer without rename; no write at an offset for one
    without "write-offset"). The model predicts the same cut script."""
    sup = oracles.entry(wn).supports
    return [op for op in ops if op.kind in sup and
            not (op.kind == "write" and op.args[1] and "write-offset" not in sup)]


def name_class(path):
    return findings.name_class(findings.leaf_of(path)) if path else "-"


def _own_exception(fields):
    """The divergence is a reader's named exception of its own family."""
    fam = oracles.entry(fields["oracle"]).family if fields.get("role") == "reader" else None
    return fam is not None and any(x.oracle == fam for x in oracles.exception(fields["kind"]))


class Divergence:
    def __init__(self, fields, writer, detail):
        self.fields = fields
        self.sig = findings.sig_hash(fields)
        self.writer = writer
        self.detail = detail

    def __repr__(self):
        return f"<{self.sig} {findings.sig_text(self.fields)} via {self.writer}>"


class CheckResult:
    def __init__(self):
        self.divs = {}            # sig -> Divergence (first writer wins)
        self.images = {}          # writer -> image after
        self.raws = {}            # "writer" / "writer.oracle" -> raw text
        self.verdicts = {}        # writer -> {oracle: verdict}
        self.details = {}         # writer -> {oracle: detail}
        self.results = {}         # writer -> its per-op results (the whole script)

    def add(self, d):
        self.divs.setdefault(d.sig, d)
