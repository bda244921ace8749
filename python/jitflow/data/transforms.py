"""Transformations that keep one element in, one out or regroup them: map, filter, batch,
padded_batch, unbatch, repeat, take, skip, shard, scan, cache, and the nesting ones
(flat_map, interleave, window). Shuffling and prefetching are in shuffle.py / prefetch.py."""
import os

import numpy as np

from ..core.errors import DataLossError, InvalidArgumentError
from ..core.shapes import TensorShape
from ..core.strings import is_string_dtype
from ..core.tensor_spec import TensorSpec
from . import structure
from .base import INFINITE, UNKNOWN, DatasetSpec, Node
from .functions import ElementFunction
from .prefetch import Ahead, parallel_batches


class Map(Node):
    def __init__(self, node, func):
        self.node = node
        self.fn = ElementFunction(func, node.tree, node.specs, "map")
        self._peeked = self.fn.out_tree is not None

    def _peek(self):
        if not self._peeked:
            self._peeked = True
            for comps in self.node.iterate():
                self.fn(comps)
                break
            if self.fn.out_tree is None:  # an empty input: nothing to learn the result from
                self.fn.out_tree, self.fn.out_specs = structure.Tree.of(None), [TensorSpec(None, "float32")]

    @property
    def tree(self):
        self._peek()
        return self.fn.out_tree

    @property
    def specs(self):
        self._peek()
        return self.fn.out_specs

    def cardinality(self):
        return self.node.cardinality()

    def iterate(self):
        fn = self.fn
        for comps in self.node.iterate():
            yield fn(comps)


class Filter(Node):
    def __init__(self, node, predicate):
        self.node, self.tree, self.specs = node, node.tree, node.specs
        self.fn = ElementFunction(predicate, node.tree, node.specs, "filter")
        if self.fn.out_specs is not None:
            _check_predicate(self.fn.out_tree, self.fn.out_specs)

    def cardinality(self):
        return INFINITE if self.node.cardinality() == INFINITE else UNKNOWN

    def iterate(self):
        fn = self.fn
        for comps in self.node.iterate():
            out = fn(comps)
            _check_predicate(fn.out_tree, fn.out_specs)
            if bool(out[0].numpy()):
                yield comps


class TakeWhile(Node):
    def __init__(self, node, predicate):
        self.node, self.tree, self.specs = node, node.tree, node.specs
        self.fn = ElementFunction(predicate, node.tree, node.specs, "take_while")
        if self.fn.out_specs is not None:
            _check_predicate(self.fn.out_tree, self.fn.out_specs)

    def cardinality(self):
        return UNKNOWN

    def iterate(self):
        for comps in self.node.iterate():
            if not bool(self.fn(comps)[0].numpy()):
                return
            yield comps


class Unique(Node):
    """unique(): each value once, in order of first appearance (scalar int or string elements)."""

    def __init__(self, node):
        if node.tree.kind != "leaf" or len(node.specs[0].shape) != 0 or not (
                node.specs[0].dtype.is_integer or is_string_dtype(node.specs[0].dtype)):
            raise TypeError(f"`tf.data.Dataset.unique` does not support type {node.tree.pack(list(node.specs))}: it "
                            "needs scalar integer or string elements.")
        self.node, self.tree, self.specs = node, node.tree, node.specs

    def cardinality(self):
        return INFINITE if self.node.cardinality() == INFINITE else UNKNOWN

    def iterate(self):
        seen = set()
        for comps in self.node.iterate():
            v = structure.numpy_of(comps[0])
            v = v.item() if hasattr(v, "item") else v
            if v not in seen:
                seen.add(v)
                yield comps


def _check_predicate(tree, specs):
    if tree.kind != "leaf" or specs[0].dtype.name != "bool" or list(specs[0].shape) != []:
        what = structure.spec_text(specs[0]) if tree.kind == "leaf" else tree.pack(
            [structure.spec_text(s) for s in specs])
        raise ValueError("Invalid `predicate`. `predicate` must return a `tf.bool` scalar tensor, but its "
                         f"return type is {what}.")


def _stack(values, spec, index):
    """np.stack of one component's values, with TF's error for different shapes."""
    if is_string_dtype(spec.dtype):  # string components arrive as bytes or object arrays
        values = [np.asarray(v, dtype=object) for v in values]
    first = values[0].shape
    for v in values[1:]:
        if v.shape != first:
            raise InvalidArgumentError(
                "Cannot add tensor to the batch: number of elements does not match. Shapes are: [tensor]: "
                f"[{', '.join(map(str, v.shape))}], [batch]: [{', '.join(map(str, first))}]")
    return structure.from_numpy(np.stack(values), spec.dtype)


def _batch_cardinality(n, size, drop):
    if n < 0:
        return n
    return n // size if drop else -(-n // size)


class _Batching(Node):
    """batch and padded_batch: groups of `size` elements, each made into one by _make; the
    last, shorter group too unless drop_remainder. With num_parallel_calls (batch only),
    groups are made on that many C++ threads."""

    calls = deterministic = None

    def cardinality(self):
        return _batch_cardinality(self.node.cardinality(), self.size, self.drop)

    def _groups(self):
        buf = []
        for comps in self.node.iterate():
            buf.append(comps)
            if len(buf) == self.size:
                yield buf
                buf = []
        if buf and not self.drop:
            yield buf

    def iterate(self):
        if self.calls is None:
            return map(self._make, self._groups())
        return parallel_batches(self._groups(), self._make, self.calls, self.deterministic)


class Batch(_Batching):
    plan = None  # a fast.BatchPlan when the input chain runs in C++ (set by Dataset.batch)

    def __init__(self, node, batch_size, drop_remainder, num_parallel_calls=None, deterministic=None):
        self.node, self.tree, self.size, self.drop = node, node.tree, _positive(batch_size, "Batch size"), drop_remainder
        self.calls = None if num_parallel_calls in (None, 1) else num_parallel_calls
        self.deterministic = deterministic
        dim = self.size if drop_remainder else None
        self.specs = [TensorSpec(structure.batched_shape(s.shape, dim), s.dtype) for s in node.specs]

    def iterate(self):
        if self.plan is not None:
            return self.plan.batches(self.plan.workers, self.plan.workers)
        return super().iterate()

    def _make(self, buf):
        return [_stack([structure.numpy_of(e[i]) for e in buf], s, i) for i, s in enumerate(self.node.specs)]


def _positive(v, what):
    v = int(v.numpy()) if hasattr(v, "numpy") else int(v)
    if v <= 0:
        raise InvalidArgumentError(f"{what} must be greater than zero.")
    return v


class PaddedBatch(_Batching):
    def __init__(self, node, batch_size, padded_shapes, padding_values, drop_remainder):
        self.node, self.tree, self.drop = node, node.tree, drop_remainder
        self.size = _positive(batch_size, "Batch size")
        n = len(node.specs)
        if padded_shapes is None:
            shapes = [TensorShape([None] * len(s.shape)) for s in node.specs]
        else:
            shapes = [TensorShape(s) for s in structure.flatten_up_to(node.tree, padded_shapes)]
        if padding_values is None:
            pads = [None] * n
        else:
            pads = structure.flatten_up_to(node.tree, padding_values)
        self.shapes = shapes
        self.pads = [_pad_value(p, s.dtype) for p, s in zip(pads, node.specs)]
        dim = self.size if drop_remainder else None
        self.specs = [TensorSpec([dim] + [d if d is not None else (e if e is not None else None)
                                          for d, e in zip(sh, s.shape)], s.dtype)
                      for sh, s in zip(shapes, node.specs)]

    def _make(self, buf):
        out = []
        for i, s in enumerate(self.node.specs):
            vals = [np.asarray(structure.numpy_of(e[i])) for e in buf]
            target = [d if d is not None else max(v.shape[k] for v in vals) for k, d in enumerate(self.shapes[i])]
            a = np.full([len(vals)] + target, self.pads[i], dtype=object if is_string_dtype(s.dtype) else vals[0].dtype)
            for j, v in enumerate(vals):
                if any(x > t for x, t in zip(v.shape, target)):
                    raise DataLossError("Attempted to pad to a smaller size than the input element.")
                a[(j,) + tuple(slice(0, x) for x in v.shape)] = v
            out.append(structure.from_numpy(a, s.dtype))
        return out


def _pad_value(p, dtype):
    if p is None:
        return b"" if is_string_dtype(dtype) else 0
    v = structure.numpy_of(p) if hasattr(p, "numpy") else p
    if is_string_dtype(dtype):
        return v.encode() if isinstance(v, str) else v
    return np.asarray(v).astype(dtype.as_numpy_dtype)[()]


class Unbatch(Node):
    def __init__(self, node):
        if any(s.shape.rank == 0 for s in node.specs):
            raise ValueError("Cannot unbatch an input with scalar components.")
        self.node, self.tree = node, node.tree
        self.specs = [TensorSpec(TensorShape(list(s.shape)[1:]) if s.shape.rank is not None else TensorShape(None),
                                 s.dtype) for s in node.specs]

    def cardinality(self):
        return INFINITE if self.node.cardinality() == INFINITE else UNKNOWN

    def iterate(self):
        for comps in self.node.iterate():
            arrays = [np.asarray(structure.numpy_of(c)) for c in comps]
            n = arrays[0].shape[0]
            for a in arrays[1:]:
                if a.shape[0] != n:
                    raise InvalidArgumentError(f"Input element must have the same batch size in each component. "
                                               f"Component 0 had size {n} but component had size {a.shape[0]}.")
            for i in range(n):
                yield [structure.from_numpy(a[i], s.dtype) for a, s in zip(arrays, self.node.specs)]


class Repeat(Node):
    def __init__(self, node, count):
        self.node, self.tree, self.specs = node, node.tree, node.specs
        self.count = -1 if count is None else _int(count)

    def cardinality(self):
        n = self.node.cardinality()
        if self.count == 0 or n == 0:
            return 0
        if self.count < 0 or n == INFINITE:
            return INFINITE
        return UNKNOWN if n == UNKNOWN else n * self.count

    def iterate(self):
        k = 0
        while self.count < 0 or k < self.count:
            empty = True
            for comps in self.node.iterate():
                empty = False
                yield comps
            if empty:
                return
            k += 1


def _int(v):
    if hasattr(v, "numpy"):
        return int(v.numpy())
    if isinstance(v, (int, np.integer)):
        return int(v)
    raise TypeError(f"Cannot convert {v!r} to EagerTensor of dtype int64")


class Take(Node):
    def __init__(self, node, count):
        self.node, self.tree, self.specs, self.count = node, node.tree, node.specs, _int(count)

    def cardinality(self):
        n = self.node.cardinality()
        if self.count < 0:
            return n
        if n == UNKNOWN:
            return UNKNOWN
        return self.count if n == INFINITE else min(n, self.count)

    def iterate(self):
        if self.count == 0:
            return
        for i, comps in enumerate(self.node.iterate()):
            yield comps
            if i + 1 == self.count:
                return


class Skip(Node):
    def __init__(self, node, count):
        self.node, self.tree, self.specs, self.count = node, node.tree, node.specs, _int(count)

    def cardinality(self):
        n = self.node.cardinality()
        if n < 0:
            return n
        return 0 if self.count < 0 else max(n - self.count, 0)

    def iterate(self):
        it = self.node.iterate()
        if self.count < 0:
            for _ in it:
                pass
            return
        for i, comps in enumerate(it):
            if i >= self.count:
                yield comps


class Shard(Node):
    def __init__(self, node, num_shards, index):
        self.node, self.tree, self.specs = node, node.tree, node.specs
        self.n, self.index = _int(num_shards), _int(index)
        if self.n <= 0:
            raise InvalidArgumentError("Number of shards must be greater than zero (currently num_shards = "
                                       f"{self.n}).")
        if not 0 <= self.index < self.n:
            raise InvalidArgumentError(f"Index must be between 0 and {self.n - 1} (currently index = {self.index}).")

    def cardinality(self):
        n = self.node.cardinality()
        if n < 0:
            return n
        return n // self.n + (1 if n % self.n > self.index else 0)

    def iterate(self):
        for i, comps in enumerate(self.node.iterate()):
            if i % self.n == self.index:
                yield comps


class Scan(Node):
    def __init__(self, node, initial_state, scan_func):
        self.node = node
        self.state_tree = structure.Tree.of(initial_state)
        self.state = [structure.to_component(x) for x in self.state_tree.flatten(initial_state)]
        state_specs = [structure.spec_of(c) for c in self.state]
        self.fn = ElementFunction(scan_func, node.tree, node.specs, "scan", (self.state_tree, state_specs))
        if self.fn.out_tree is not None:
            self._split(self.fn.out_tree, self.fn.out_specs)

    def _split(self, tree, specs):
        if tree.kind != "tuple" or len(tree.children) != 2:
            raise TypeError("The scan function must return a pair comprising the new state and the output value.")
        ns = tree.children[0].num_leaves
        new_state_tree = tree.children[0]
        if not new_state_tree.same(self.state_tree) or ns != len(self.state):
            raise TypeError(f"The element structure for the new state must match the initial state. Expected "
                            f"{self.state_tree.outline()}; got {new_state_tree.outline()}.")
        for s, c in zip(specs[:ns], self.state):
            if s.dtype != c.dtype:
                raise TypeError(f"The element types for the new state must match the initial state. Expected "
                                f"{c.dtype.name}; got {s.dtype.name}.")
        self.ns, self.tree, self.specs = ns, tree.children[1], specs[ns:]

    def cardinality(self):
        return self.node.cardinality()

    def iterate(self):
        state = list(self.state)
        for comps in self.node.iterate():
            out = self.fn(comps, state)
            if not hasattr(self, "ns"):
                self._split(self.fn.out_tree, self.fn.out_specs)
            state = out[:self.ns]
            yield out[self.ns:]


def _write_cache(f, record):
    """A cache file: an .npz of plain arrays (never pickled objects, so reading one runs no
    code). A string component is its bytes joined, with each string's length and the shape."""
    arrays = {"count": np.array(len(record), np.int64)}
    for i, comps in enumerate(record):
        for j, a in enumerate(comps):
            if a.dtype == object:
                items = [bytes(x) for x in a.reshape(-1)]
                arrays[f"{i}_{j}_bytes"] = np.frombuffer(b"".join(items), np.uint8)
                arrays[f"{i}_{j}_lens"] = np.array([len(x) for x in items], np.int64)
                arrays[f"{i}_{j}_shape"] = np.array(a.shape, np.int64)
            else:
                arrays[f"{i}_{j}"] = a
    np.savez(f, **arrays)


def _read_cache(path, n_components):
    with np.load(path, allow_pickle=False) as z:
        record = []
        for i in range(int(z["count"])):
            comps = []
            for j in range(n_components):
                if f"{i}_{j}" in z:
                    comps.append(z[f"{i}_{j}"])
                    continue
                data, lens = z[f"{i}_{j}_bytes"].tobytes(), z[f"{i}_{j}_lens"]
                ends = np.cumsum(lens)
                items = [data[e - n:e] for e, n in zip(ends, lens)]
                comps.append(np.array(items + [None], dtype=object)[:-1].reshape(tuple(z[f"{i}_{j}_shape"])))
            record.append(comps)
    return record


class Cache(Node):
    """cache(): the first complete iteration is recorded (in memory, or in a file when a name
    is given) and every later iteration replays it; an incomplete one records nothing."""

    def __init__(self, node, filename):
        self.node, self.tree, self.specs, self.filename = node, node.tree, node.specs, filename
        self.memory = None

    def cardinality(self):
        return self.node.cardinality()

    def _path(self):
        return self.filename + ".jfcache"

    def iterate(self):
        if self.memory is None and self.filename and os.path.exists(self._path()):
            self.memory = _read_cache(self._path(), len(self.specs))
        if self.memory is not None:
            for arrays in self.memory:
                yield [structure.from_numpy(a, s.dtype) for a, s in zip(arrays, self.specs)]
            return
        record = []
        for comps in self.node.iterate():
            record.append([np.asarray(structure.numpy_of(c)) for c in comps])
            yield comps
        if self.filename:
            tmp = self._path() + ".tmp"
            with open(tmp, "wb") as f:
                _write_cache(f, record)
            os.replace(tmp, self._path())
        self.memory = record


class Interleave(Node):
    """interleave / flat_map: func maps each element to a dataset; cycle_length of them are
    read block_length elements at a time, round robin (flat_map: one at a time, to the end)."""

    def __init__(self, node, func, cycle_length, block_length, as_node, num_parallel_calls=None,
                 deterministic=None):
        self.node, self.func, self.as_node = node, func, as_node
        # With num_parallel_calls, each dataset in the cycle is read ahead by its own C++ worker
        # (so cycle_length of them produce at once); the order stays the sequential one unless
        # deterministic is False, when a dataset with an element ready goes before one without.
        self.parallel = num_parallel_calls is not None and num_parallel_calls != 1
        self.loose = self.parallel and deterministic is False
        self.cycle = max(1, os.cpu_count() or 1) if cycle_length is None or cycle_length < 0 else int(cycle_length)
        self.block = int(block_length)
        self.unpack = node.tree.kind == "tuple" and node.tree.meta is tuple
        self._first = None

    def _child(self, comps):
        value = self.node.tree.pack(comps)
        ds = self.func(*value) if self.unpack else self.func(value)
        child = self.as_node(ds)
        if child is None:
            raise TypeError(f"The `map_func` argument must return a `Dataset` object. Got {type(ds)!r}.")
        return child

    def _peek(self):
        if self._first is None:
            for comps in self.node.iterate():
                self._first = self._child(comps)
                break
            if self._first is None:
                raise ValueError("cannot tell the element structure of an interleave over an empty dataset")
        return self._first

    @property
    def tree(self):
        return self._peek().tree

    @property
    def specs(self):
        return self._peek().specs

    def cardinality(self):
        return INFINITE if self.node.cardinality() == INFINITE else UNKNOWN

    def _open(self, comps):
        it = self._child(comps).iterate()
        return Ahead(it, max(2, self.block)) if self.parallel else it

    def iterate(self):
        outer = self.node.iterate()
        slots = []
        exhausted = False
        while True:
            while not exhausted and len(slots) < self.cycle:
                try:
                    comps = next(outer)
                except StopIteration:
                    exhausted = True
                    break
                slots.append(self._open(comps))
            if not slots:
                return
            i = 0
            while i < len(slots):
                if self.loose and not slots[i].ready:
                    i = next((k for k, s in enumerate(slots) if s.ready), i)
                done = False
                for _ in range(self.block):
                    try:
                        yield next(slots[i])
                    except StopIteration:
                        done = True
                        break
                if done:
                    # The next input element's dataset takes the finished one's place in the cycle.
                    if not exhausted:
                        try:
                            slots[i] = self._open(next(outer))
                            i += 1  # its turn comes in the next round, as TF's
                            continue
                        except StopIteration:
                            exhausted = True
                    del slots[i]
                    continue
                i += 1


class Window(Node):
    """window: each element a structure of datasets (one per component) of up to `size`
    consecutive elements, starting every `shift`, taking every `stride`-th."""

    def __init__(self, node, size, shift, stride, drop_remainder, make_dataset):
        self.node, self.tree = node, node.tree
        self.size, self.shift, self.stride = _positive(size, "size"), _positive(shift if shift is not None else size,
                                                                                 "shift"), _positive(stride, "stride")
        self.drop, self.make = drop_remainder, make_dataset
        self.specs = [DatasetSpec(s) for s in node.specs]

    def cardinality(self):
        n = self.node.cardinality()
        if n < 0:
            return n
        if self.drop:
            span = (self.size - 1) * self.stride + 1
            return 0 if n < span else (n - span) // self.shift + 1
        return -(-n // self.shift)

    def iterate(self):
        span = (self.size - 1) * self.stride + 1
        buf, it, done = [], self.node.iterate(), False
        while True:
            while not done and len(buf) < span:
                try:
                    buf.append(next(it))
                except StopIteration:
                    done = True
            if not buf:
                return
            window = buf[::self.stride][:self.size]
            if self.drop and len(window) < self.size:
                return
            yield [self.make([e[i] for e in window], s) for i, s in enumerate(self.node.specs)]
            if self.shift < len(buf):
                buf = buf[self.shift:]
                continue
            skip, buf = self.shift - len(buf), []
            while skip and not done:
                try:
                    next(it)
                    skip -= 1
                except StopIteration:
                    done = True
