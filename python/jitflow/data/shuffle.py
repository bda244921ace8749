"""shuffle: TF's algorithm, a buffer of buffer_size elements from which each output is drawn
uniformly and replaced by the next input element. The draws come from a numpy generator seeded
from (seed, the global seed) as TF's ops are (jf.random.set_seed makes them reproducible) and
from the epoch when reshuffle_each_iteration is on, so each iteration has its own order."""
import numpy as np

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

    def iterate(self):
        epoch = self.epoch
        self.epoch += 1
        rng = np.random.default_rng([self.seeds[0], self.seeds[1], epoch if self.reshuffle else 0])
        size = self.size
        if size == UNKNOWN:  # TF: the whole input
            n = self.node.cardinality()
            size = n if n >= 0 else 1 << 62
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


