"""shuffle: TF's algorithm, a buffer of buffer_size elements from which each output is drawn
uniformly and replaced by the next input element. The draws come from a numpy generator seeded
from (seed, the global seed) as TF's ops are (jf.random.set_seed makes them reproducible) and
from the epoch when reshuffle_each_iteration is on, so each iteration has its own order."""
import numpy as np

from .. import _C
from ..core import dtypes
from ..core.errors import InvalidArgumentError
from ..ops import random_ops
from .base import UNKNOWN, Node


class Shuffle(Node):
    def __init__(self, node, buffer_size, seed, reshuffle_each_iteration):
        self.node, self.tree, self.specs = node, node.tree, node.specs
        size = int(buffer_size.numpy()) if hasattr(buffer_size, "numpy") else int(buffer_size)
        if size <= 0 and size != UNKNOWN:
            raise InvalidArgumentError("buffer_size must be greater than zero or UNKNOWN_CARDINALITY")
        self.size = size
        if seed is not None and hasattr(seed, "numpy"):
            seed = int(seed.numpy())
        self.seeds = random_ops.get_seed(seed)
        self.reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        self.epoch = 0

    def cardinality(self):
        return self.node.cardinality()

    def _pass(self):
        """This pass's generator and buffer size (each pass has its own order)."""
        epoch = self.epoch
        self.epoch += 1
        rng = np.random.default_rng([self.seeds[0], self.seeds[1], epoch if self.reshuffle else 0])
        size = self.size
        if size == UNKNOWN:  # TF: the whole input
            n = self.node.cardinality()
            size = n if n >= 0 else 1 << 62
        return rng, size

    def order(self, n):
        """The positions of n input elements in this pass's output, as iterate() would emit
        them: the same draws, taken in two bulk calls (numpy gives the same integers as one
        call per draw), and the buffer replayed in C++."""
        rng, size = self._pass()
        m = min(size, n)
        steady = rng.integers(m, size=n - m) if n > m else np.zeros(0, np.int64)
        drain = rng.integers(np.arange(m, 0, -1)) if m else np.zeros(0, np.int64)
        return _C.data_shuffle_order(n, m, _C.convert_to_tensor(steady.astype(np.int64), dtypes.int64),
                                     _C.convert_to_tensor(drain.astype(np.int64), dtypes.int64))

    def iterate(self):
        rng, size = self._pass()
        buf = []
        it = self.node.iterate()
        for comps in it:
            buf.append(comps)
            if len(buf) == size:
                break
        for comps in it:
            i = int(rng.integers(len(buf)))
            out, buf[i] = buf[i], comps
            yield out
        while buf:
            i = int(rng.integers(len(buf)))
            buf[i], buf[-1] = buf[-1], buf[i]
            yield buf.pop()


