"""jf.debugging: runtime counters (traces, compilations, cache hits, cluster runs, eager ops)."""
from . import _C


def stats():
    return dict(_C.stats())


def reset_stats():
    _C.reset_stats()
