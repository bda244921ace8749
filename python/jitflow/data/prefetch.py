"""prefetch and parallel map: work ahead of the consumer on C++ worker threads
(_C.DataPipeline, cpp/runtime/data_pipeline.h) with bounded buffers. A traced map function's
ConcreteFunction runs there without the GIL, so several elements are mapped at once and the
next batch is made while the training step runs; the workers take the GIL only to pull from
the Python side of the pipeline or to run a map function that had to stay Python (string
elements). An exception raised ahead of time reaches the consumer when it asks for that
element, with its traceback."""
import atexit
import os
import threading

from .. import _C
from .base import AUTOTUNE, Node

_AUTOTUNE_BUFFER = 4  # elements a prefetch(AUTOTUNE) keeps ready
_CHUNK = 16  # elements a parallel map's worker takes at once
_live = {}  # id -> pipeline not closed yet (closed at exit, before the interpreter goes)
_lock = threading.Lock()


def _threads(n):
    return max(1, os.cpu_count() or 1) if n == AUTOTUNE else max(1, int(n))


def _run(pipeline):
    """Yields the pipeline's elements; closes it (joining its threads) however the loop ends."""
    with _lock:
        _live[id(pipeline)] = pipeline
    try:
        yield from pipeline
    finally:
        with _lock:
            _live.pop(id(pipeline), None)
        pipeline.close()


@atexit.register
def _close_all():
    with _lock:
        live = list(_live.values())
        _live.clear()
    for p in live:
        p.close()


class Prefetch(Node):
    """prefetch(buffer_size): a worker pulls the input into a buffer of at most buffer_size
    elements (the memory bound: it waits while the buffer is full)."""

    def __init__(self, node, buffer_size):
        self.node, self.tree, self.specs = node, node.tree, node.specs
        n = int(buffer_size.numpy()) if hasattr(buffer_size, "numpy") else int(buffer_size)
        if n < 0 and n != AUTOTUNE:
            raise ValueError(f"buffer_size must be >= 0 or AUTOTUNE, got {n}")
        self.buffer_size = _AUTOTUNE_BUFFER if n == AUTOTUNE else n
        self.autotune = n == AUTOTUNE

    def cardinality(self):
        return self.node.cardinality()

    def iterate(self):
        if self.buffer_size == 0:
            return self.node.iterate()
        plan = getattr(self.node, "plan", None)
        if plan is not None:  # whole batches made ahead on C++ threads (data/fast.py)
            return plan.batches(plan.prefetch_workers, plan.autotune_buffer() if self.autotune else self.buffer_size)
        return _run(_C.DataPipeline(self.node.iterate(), 1, self.buffer_size))


class Ahead:
    """An iterator's elements pulled ahead by one C++ worker into a buffer of `buffer`, so
    several of them (interleave's cycle) produce at once; `ready` says whether next() would
    not wait."""

    def __init__(self, it, buffer):
        self.pipeline = _C.DataPipeline(it, 1, buffer)
        self._it = _run(self.pipeline)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    @property
    def ready(self):
        return self.pipeline.ready


def parallel_batches(groups, make, num_parallel_calls, deterministic):
    """batch(num_parallel_calls=k): make(group) for the groups of elements on k threads,
    at most 2k groups ahead, in order unless deterministic is False."""
    n = _threads(num_parallel_calls)
    return _run(_C.DataPipeline(groups, n, 2 * n, deterministic is not False, python_function=make))


def parallel_map(fn, node, num_parallel_calls, deterministic):
    """fn (a data.functions.ElementFunction) over node's elements with up to
    num_parallel_calls calls in flight; in input order unless deterministic is False. A traced
    function maps chunks of elements per worker: each chunk is pulled and converted under one
    hold of the GIL, where one element at a time spent more on handing the GIL between the
    workers and the iterating thread than a cheap map costs."""
    n = _threads(num_parallel_calls)
    compiled = fn.cf is not None and fn.fast
    if not compiled:
        return _run(_C.DataPipeline(node.iterate(), n, 2 * n, deterministic is not False, python_function=fn))
    pipeline = _C.DataPipeline(node.iterate(), n, 2 * n, deterministic is not False, function=fn.cf._cf,
                               chunk=_CHUNK)
    return (element for chunk in _run(pipeline) for element in chunk)
