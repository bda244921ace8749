"""The C++ path for the pipeline most training loops read: from_tensor_slices, then maps whose
functions were traced and a shuffle (in any order), then batch (and prefetch). Such a batch
is a gather of source rows in the shuffle's order, each passed through the maps' graphs, so
_C.DataBatcher (cpp/runtime/slice_batcher.h) makes whole batches on worker threads without
the GIL and the iterating thread only receives finished batches: no Python per element.

The elements and their order are those the Python nodes give: the shuffle replays the same
draws (Shuffle.order) and each element is mapped from its own source row, which is the same
value whichever order the rows are mapped in, since a map before the shuffle must be free of
effects (no random ops, prints, variable writes or Python calls; reading a variable is
fine). A chain that does not fit runs through the Python nodes as before.

What differs is when an error is raised: a map error is raised with the batch holding the
failing element, where the Python nodes raise it when the shuffle buffer pulls that element
(up to buffer_size elements earlier)."""
import os

from .. import _C
from ..core.strings import is_string_dtype
from .prefetch import _run, _threads
from .shuffle import Shuffle
from .sources import TensorSlices
from .transforms import Map

enabled = True  # False: every chain through the Python nodes (benchmarks compare the two)
_AUTOTUNE_BYTES = 64 << 20
_EFFECT_FREE = {"ReadVariableOp"}  # stateful ops whose order among elements cannot matter
_stateful_ops = None


def _has_effects(cf):
    global _stateful_ops
    if _stateful_ops is None:
        _stateful_ops = {r["name"] for r in _C.op_records() if r["stateful"] or r["control_flow"]} - _EFFECT_FREE
    return any(n.op in _stateful_ops for n in cf._cf.graph.nodes())


class BatchPlan:
    """How a Batch node's batches are made in C++: its source, maps (in order) and shuffle."""

    def __init__(self, source, maps, shuffle, size, drop, workers, pure, specs):
        self.source, self.maps, self.shuffle, self.specs = source, maps, shuffle, specs
        self.size, self.drop, self.workers = size, drop, workers
        # Threads a prefetch gives it: the parallel calls asked for, or, when no map has
        # effects (so which thread maps an element cannot show), one per core. Batches still
        # come out in order; more threads keep up when the training step's own threads hold
        # the cores.
        self.prefetch_workers = max(1, workers) if workers or not pure else max(1, os.cpu_count() or 1)
        self.tensors = None

    def autotune_buffer(self):
        """prefetch(AUTOTUNE)'s buffer: as many batches as fit in _AUTOTUNE_BYTES (4 to 64).
        Batches are cheap to make here, so a deep buffer costs only memory, and it rides out
        the stretches when a loaded machine gives the workers no core."""
        size = 0
        for s in self.specs:
            n = 1
            for d in s.shape:
                n *= self.size if d is None else d
            size += n * s.dtype.size
        return max(4, min(64, _AUTOTUNE_BYTES // max(1, size)))

    def batches(self, workers=0, capacity=1):
        """An iterator of batches (flat component lists): made on the iterating thread with
        workers=0, else on that many threads with at most `capacity` batches ahead."""
        if self.tensors is None:  # the source's whole tensors (no copy when they are jf tensors)
            self.tensors = [c if isinstance(c, _C.Tensor) else _C.convert_to_tensor(a, d)
                            for c, a, d in zip(self.source.components, self.source.arrays, self.source.dtypes)]
        order = self.shuffle.order(self.source.n) if self.shuffle is not None else None
        batcher = _C.DataBatcher(self.tensors, order, self.size, self.drop, [f.cf._cf for f in self.maps],
                                 workers, max(capacity, workers))
        return _run(batcher)


def plan(batch, num_parallel_calls=None):
    """The BatchPlan for a Batch node whose input chain fits the C++ path, else None. Its
    workers: the most parallel calls of its maps and of the batch itself (0: none)."""
    if not enabled:
        return None
    maps, shuffle, pure = [], None, True
    workers = 0 if num_parallel_calls is None else _threads(num_parallel_calls)
    node = batch.node
    while True:
        if isinstance(node, Map):
            fn = node.fn
            if fn.cf is None or not fn.fast or fn.extra is not None:
                return None
            if _has_effects(fn.cf):
                if shuffle is not None:
                    return None  # mapped in output order here, in input order by the Python nodes
                pure = False
            calls = getattr(node, "calls", None)
            if calls is not None:
                workers = max(workers, _threads(calls))
            maps.append(fn)
        elif type(node) is Shuffle:
            if shuffle is not None:
                return None
            shuffle = node
        elif getattr(node, "passes_elements", False):  # with_options: the same elements
            pass
        elif type(node) is TensorSlices:
            break
        else:
            return None
        node = node.node
    if any(is_string_dtype(s.dtype) or s.dtype.name == "variant" for s in node.specs) or node.n == 0:
        return None
    if any(not hasattr(a, "dtype") or a.dtype == object for a in node.arrays):
        return None
    return BatchPlan(node, maps[::-1], shuffle, batch.size, batch.drop, workers, pure, batch.specs)

