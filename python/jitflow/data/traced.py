"""Datasets inside a traced jf.function. TF iterates a dataset in a graph with iterator ops in
a while loop; here the graph holds two py_function nodes: one starts an iteration of the
pipeline (each run of the function gets a fresh one, as TF makes a new iterator per call), the
other pulls the next element, returning whether there was one and its components (zeros
shaped like the spec at the end). AutoGraph (tracing/autograph/staging.py) recognises a dataset
by its __jf_graph_iterator__ method and builds the while loop; iter()/next() and reduce use the
same nodes.

The pipeline itself runs eagerly when the nodes run (its map functions are their own traced
graphs); only the elements cross into the function's graph."""
import itertools
import threading
import weakref

import numpy as np

from .. import _C
from ..core.dtypes import bool as bool_dtype
from ..core.dtypes import int64
from ..core.strings import is_string_dtype
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops
from ..tracing.control_flow import while_loop
from ..tracing.py_function import py_function
from .base import UNKNOWN, DatasetSpec, Node

_ids = itertools.count(1)
_MAX_TRACED_PULLS = 10000
_MAX_OPEN = 64  # iterations a graph may leave open (a loop left by break) before old ones are dropped
_handles = weakref.WeakValueDictionary()  # handle -> a dataset's node or an iterator passed to a function
_handle_of = weakref.WeakKeyDictionary()  # the node or iterator -> its handle


def handle(obj):
    """The int64 handle a dataset argument (its pipeline node) or an iterator argument passes
    in its place."""
    h = _handle_of.get(obj)
    if h is None:
        h = next(_ids)
        _handle_of[obj] = h
        _handles[h] = obj
    return h


class ArgumentNode(Node):
    """A dataset argument inside its function's trace: its element structure, and the handle
    placeholder that names the caller's dataset when the function runs."""

    def __init__(self, node, placeholder):
        self.tree, self.specs, self.placeholder = node.tree, list(node.specs), placeholder
        self.bound = None  # the caller's node, set when an iteration starts

    def cardinality(self):
        return UNKNOWN

    def iterate(self):
        if self.bound is None:
            raise TypeError("a dataset passed to a jf.function can be iterated in it (for, iter, reduce), "
                            "not outside its trace")
        return self.bound.iterate()


def _arguments(node, out=None):
    """The ArgumentNodes a pipeline reads from."""
    out = [] if out is None else out
    if isinstance(node, ArgumentNode):
        out.append(node)
    for name in ("node", "a", "b"):
        child = getattr(node, name, None)
        if isinstance(child, Node):
            _arguments(child, out)
    for child in getattr(node, "nodes", ()):
        _arguments(child, out)
    return out


def _check_traceable(tree, specs):
    for s in specs:
        if isinstance(s, DatasetSpec) or s.shape.rank is None:
            raise TypeError(f"jitflow cannot iterate a dataset with elements {tree.pack(list(specs))} "
                            "inside a jf.function (dataset and unknown-rank components are Python "
                            "values here): iterate it eagerly")


def _filler(spec):
    """A value of spec's dtype for a pull past the end (the loop does not use it)."""
    shape = [d or 0 for d in spec.shape]
    if is_string_dtype(spec.dtype):
        return np.full(shape, b"", dtype=object)
    return np.zeros(shape, spec.dtype.as_numpy_dtype)


class GraphIterator:
    """Emits the start node when made; next() emits a pull node: (has_value, components)."""

    def __init__(self, node):
        _check_traceable(node.tree, node.specs)
        self.node, self.tree, self.specs = node, node.tree, list(node.specs)
        self.open = {}
        self.lock = threading.Lock()
        self.arguments = _arguments(node)
        self.handle = py_function(self._start, [a.placeholder for a in self.arguments], Tout=TensorSpec([], int64),
                                  name="MakeIterator")

    def _start(self, *handles):
        with self.lock:
            for a, h in zip(self.arguments, handles):
                bound = _handles.get(int(h.numpy()))
                if bound is None:
                    raise ValueError("the dataset passed to this jf.function no longer exists")
                a.bound = bound
            k = next(_ids)
            self.open[k] = self.node.iterate()
            while len(self.open) > _MAX_OPEN:
                self.open.pop(next(iter(self.open)))
        return np.int64(k)

    def _source(self, k):
        """The Python iterator a pull with handle k reads (None: ended)."""
        return self.open.get(k)

    def _pull(self, handle, strict):
        k = int(handle.numpy())
        it = self._source(k)
        try:
            if it is None:
                raise StopIteration
            comps = next(it)
        except StopIteration:
            self.open.pop(k, None)
            if strict:  # py_function reports it as OutOfRangeError, as TF's get_next
                raise StopIteration("End of sequence") from None
            return [np.bool_(False)] + [_filler(s) for s in self.specs]
        return [np.bool_(True)] + list(comps)

    def next_flat(self, strict=False):
        """(has_value, flat components) as graph tensors."""
        tout = [TensorSpec([], bool_dtype)] + [TensorSpec(s.shape, s.dtype) for s in self.specs]
        outs = py_function(lambda h: self._pull(h, strict), [self.handle], Tout=tout, name="IteratorGetNext")
        return outs[0], list(outs[1:])

    # The iterator protocol inside a trace: next() raises OutOfRangeError when the function runs
    # past the end, as TF's get_next in a graph.
    def __iter__(self):
        return self

    def __next__(self):
        self.pulls = getattr(self, "pulls", 0) + 1
        if self.pulls > _MAX_TRACED_PULLS:
            # A Python loop over a dataset in a trace (autograph=False, list(ds)) never sees an
            # end: each next() adds a node that pulls when the function runs.
            raise TypeError(f"{_MAX_TRACED_PULLS} next() calls on a dataset iterator while tracing a jf.function: a "
                            "Python loop over a dataset cannot end in a trace. Use `for x in dataset` with AutoGraph "
                            "(a graph loop), or iterate eagerly")
        return self.tree.pack(self.next_flat(strict=True)[1])

    get_next = __next__

    @property
    def element_spec(self):
        return self.tree.pack(self.specs)


class ArgumentIterator(GraphIterator):
    """An iterator passed to a jf.function, inside its trace: next() and `for` pull from the
    caller's iterator when the function runs, as TF's iterator resource does, so each call
    consumes the elements it reads (next(it) in three calls gives the first three elements)."""

    def __init__(self, tree, specs, placeholder):
        _check_traceable(tree, specs)
        self.node, self.tree, self.specs = None, tree, list(specs)
        self.open, self.lock, self.arguments = {}, threading.Lock(), []
        self.handle = placeholder

    def _source(self, k):
        owned = _handles.get(k)
        if owned is None:
            raise ValueError("the iterator passed to this jf.function no longer exists")
        return owned._it

    def __jf_graph_iterator__(self):
        return self


def is_tracing():
    return _C.is_tracing()


def reduce(node, initial_state, reduce_func, state_tree, state, fn):
    """Dataset.reduce inside a trace: a while loop pulling elements into fn(state, element)."""
    it = GraphIterator(node)
    has, comps = it.next_flat()
    n = len(state)

    def cond(has, *rest):
        return has

    def body(has, *rest):
        st, cs = list(rest[:n]), list(rest[n:])
        out = fn.call_traced(cs, st)
        nxt_has, nxt = it.next_flat()
        return [nxt_has] + list(out) + nxt

    state_tensors = [basic_ops.convert_to_tensor(s) for s in state]
    out = while_loop(cond, body, [has] + state_tensors + comps,
                     shape_invariants=[TensorSpec([], bool_dtype).shape] + [s.shape for s in state_tensors] +
                     [s.shape for s in it.specs])
    return state_tree.pack(list(out[1:1 + n]))
