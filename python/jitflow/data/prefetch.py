"""prefetch and parallel map: work ahead of the consumer on background threads, with bounded
buffers. A traced map function runs its graph without the GIL (the ConcreteFunction call
releases it), so several elements are mapped at once and the next batch is made while the
training step runs. An exception raised ahead of time reaches the consumer when it asks for
that element, with the traceback of where it was raised."""
import collections
import concurrent.futures
import os
import queue
import threading

from .base import AUTOTUNE, Node

_AUTOTUNE_BUFFER = 4  # elements a prefetch(AUTOTUNE) keeps ready
_END = object()


def _threads(n):
    return max(1, os.cpu_count() or 1) if n == AUTOTUNE else int(n)


class _Stop:
    """Tells a producer thread its consumer is gone (the iterator was dropped or closed)."""

    def __init__(self):
        self.event = threading.Event()


def _produce(node, q, stop):
    try:
        for comps in node.iterate():
            while True:
                if stop.event.is_set():
                    return
                try:
                    q.put((comps, None), timeout=0.05)
                    break
                except queue.Full:
                    continue
        q.put((_END, None))
    except BaseException as e:  # noqa: BLE001 (delivered to the consumer, raised there)
        q.put((_END, e))


class _Consumer:
    def __init__(self, q, stop, thread):
        self.q, self.stop, self.thread = q, stop, thread

    def __iter__(self):
        return self

    def __next__(self):
        comps, err = self.q.get()
        if comps is _END:
            self.q.put((_END, err))  # a later next() ends (or raises) the same way
            if err is not None:
                raise err
            raise StopIteration
        return comps

    def __del__(self):
        self.stop.event.set()


class Prefetch(Node):
    """prefetch(buffer_size): a thread pulls the input into a queue of at most buffer_size
    elements (the memory bound: it waits while the queue is full)."""

    def __init__(self, node, buffer_size):
        self.node, self.tree, self.specs = node, node.tree, node.specs
        n = int(buffer_size.numpy()) if hasattr(buffer_size, "numpy") else int(buffer_size)
        if n < 0 and n != AUTOTUNE:
            raise ValueError(f"buffer_size must be >= 0 or AUTOTUNE, got {n}")
        self.buffer_size = _AUTOTUNE_BUFFER if n == AUTOTUNE else n

    def cardinality(self):
        return self.node.cardinality()

    def iterate(self):
        if self.buffer_size == 0:
            yield from self.node.iterate()
            return
        q, stop = queue.Queue(maxsize=self.buffer_size), _Stop()
        t = threading.Thread(target=_produce, args=(self.node, q, stop), daemon=True, name="jf.data.prefetch")
        consumer = _Consumer(q, stop, t)
        t.start()
        try:
            yield from consumer
        finally:
            stop.event.set()


def parallel_map(fn, node, num_parallel_calls, deterministic):
    """fn over node's elements with up to num_parallel_calls calls in flight; in input order
    unless deterministic is False (then in the order they finish)."""
    n = _threads(num_parallel_calls)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=n, thread_name_prefix="jf.data.map")
    pending = collections.deque()
    try:
        it = node.iterate()
        exhausted = False
        while True:
            while not exhausted and len(pending) < n:
                try:
                    comps = next(it)
                except StopIteration:
                    exhausted = True
                    break
                pending.append(pool.submit(fn, comps))
            if not pending:
                return
            if deterministic is False:
                done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                f = next(f for f in pending if f in done)
                pending.remove(f)
            else:
                f = pending.popleft()
            yield f.result()
    finally:
        for f in pending:
            f.cancel()
        pool.shutdown(wait=False)


