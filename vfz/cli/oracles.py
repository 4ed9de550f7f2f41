"""vfatfuzz oracles [--json|--markdown]: the registry, one row per oracle with its traits."""
import json
from dataclasses import asdict

from vfz import oracles

HELP = "list the registered oracles and their traits (roles, model profile, names mode, cost, needs)"


def add_arguments(p):
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help="the traits as JSON")
    g.add_argument("--markdown", action="store_true", help="the table the README shows")


def row(e):
    profile = e.profile if isinstance(e.profile, str) else f"{e.family} (own)"
    writer = e.writer is not None
    return {
        "name": e.name,
        "roles": "+".join(e.roles),
        "family": e.family,
        "profile": profile if writer else "-",
        "names": f"{e.names}/{e.shorts}" + (f", {e.shortname}" if e.shortname != "win95" else "")
                 if writer else "-",
        "no": (",".join(sorted((oracles.OPS | oracles.META_OPS | {"write-offset"}) - e.supports)) or "-") if writer else "-",
        "cost": e.cost,
        "default": ",".join(e.default) or "-",
    }


def markdown():
    rows = [row(e) for e in oracles.entries().values()]
    head = ["name", "roles", "family", "model profile", "names/short entries", "unsupported",
            "cost", "default"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join(f"`{r['name']}`" if k == "name" else r[k] for k in r) + " |")
    return "\n".join(out)


def run(args):
    es = oracles.entries()
    if args.json:
        def plain(e):
            d = asdict(e)
            d["supports"] = sorted(d["supports"])
            if not isinstance(d["profile"], str):
                d["profile"] = f"{e.family} (own)"
            return d
        print(json.dumps([plain(e) for e in es.values()], indent=1))
    elif args.markdown:
        print(markdown())
    else:
        for e in es.values():
            r = row(e)
            print(f"{e.name:<18} {r['roles']:<14} profile {r['profile']:<10} names {r['names']:<20} "
                  f"cost {e.cost:<8} needs {' '.join(e.needs) or '-'}")
    return 0
