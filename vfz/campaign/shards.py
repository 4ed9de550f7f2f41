"""Campaign shards: shard I of N runs disjoint iterations of the seed's sequence and its own fuzzer seed."""
from vfz.errors import UsageError


def parse_shard(text):
    """'I/N' -> (I, N), 0 <= I < N; None -> (0, 1)."""
    if not text:
        return (0, 1)
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected I/N (e.g. 0/4)") from None
    if n < 1 or not 0 <= i < n:
        raise UsageError(f"--shard {text!r}: need 0 <= I < N")
    return (i, n)


def shard_iteration(i, shard):
    """Shard I of N checks the generated iterations I, I+N, I+2N, ... of the
    seed's sequence: the shards of one seed are disjoint, their union the
    sequence one unsharded campaign would run."""
    return i * shard[1] + shard[0]


def shard_seed(seed, shard):
    """The fuzzer's seed for a shard (distinct per shard)."""
    return (seed + 1000003 * shard[0]) % (1 << 31) or 1
