"""TF's higher-order functions over the first axis of tensors: map_fn, scan, foldl, foldr and
vectorized_map, the multi-way branches switch_case and case, and timestamp. Eagerly they are Python loops
and branches; traced, the loops are one jf.while_loop over TensorArrays (so the length may be
unknown until run) and the branches nested jf.conds."""
import time

import numpy as np

from .. import _C
from ..core import dtypes as _dt
from ..core import nest
from ..core.errors import InvalidArgumentError
from ..core.export import export
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as _ops
from .control_flow import cond, while_loop
from .py_function import py_function
from .tensor_array import TensorArray


def _leaves(elems):
    flat = [_ops.convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError(f"elems must be a Tensor or (possibly nested) sequence of Tensors. Got {elems}")
    for e in flat:
        if len(e.shape) == 0:
            raise ValueError(f"Elements in elems must be 1+ dimensional Tensors, not scalars: {e}")
    return flat


def _length(flat):
    n = flat[0].shape[0]
    return n if n is not None else _ops.shape(flat[0])[0]


def _specs(signature, like):
    """The dtypes of fn's outputs: fn_output_signature (dtypes or TensorSpecs, nested), else
    those of `like`."""
    if signature is None:
        return [t.dtype for t in nest.flatten(like)], like
    flat = nest.flatten(signature)
    return [s.dtype if isinstance(s, TensorSpec) else _dt.as_dtype(s) for s in flat], signature


def _element(elems, flat_arrays, i):
    return nest.pack_sequence_as(elems, [ta.read(i) for ta in flat_arrays])


@export("map_fn")
def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """fn applied to each slice elems[i] (of every tensor of a nested elems), the results
    stacked along a new first axis."""
    flat = _leaves(elems)
    signature = fn_output_signature if fn_output_signature is not None else dtype
    if not _C.is_tracing():
        n = int(flat[0].shape[0])
        results = [fn(nest.pack_sequence_as(elems, [e[i] for e in flat])) for i in range(n)]
        dtypes, structure = _specs(signature, elems)
        if not results:
            return nest.pack_sequence_as(structure, [_ops.zeros([0], dt) for dt in dtypes])
        columns = zip(*[nest.flatten(r) for r in results])
        stacked = [_ops.stack([_ops.convert_to_tensor(v, dt) for v in col]) for col, dt in zip(columns, dtypes)]
        return nest.pack_sequence_as(results[0], stacked)
    n = _length(flat)
    inputs = [TensorArray(e.dtype, size=n).unstack(e) for e in flat]
    dtypes, structure = _specs(signature, elems)
    outs = [TensorArray(dt, size=n, infer_shape=infer_shape) for dt in dtypes]
    holder = {}

    def body(i, *acc):
        result = fn(_element(elems, inputs, i))
        holder["structure"] = result
        values = nest.flatten(result)
        if len(values) != len(acc):
            raise ValueError(f"The structure of fn's output ({len(values)} tensors) does not match "
                             f"fn_output_signature ({len(acc)}); pass fn_output_signature when fn changes it")
        return (i + 1, *[ta.write(i, _ops.convert_to_tensor(v, ta.dtype)) for ta, v in zip(acc, values)])

    res = while_loop(lambda i, *_: i < n, body, (_ops.constant(0), *outs))
    return nest.pack_sequence_as(holder.get("structure", structure), [ta.stack() for ta in res[1:]])


@export("vectorized_map")
def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """fn over the first axis, computed as map_fn (one call per element, not vectorized)."""
    return map_fn(fn, elems)


@export("scan")
def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, infer_shape=True,
         reverse=False, name=None):
    """The successive accumulators a_i = fn(a_{i-1}, elems[i]) stacked (a_0 = initializer, or
    elems[0] which is then the first output), from the end with reverse=True."""
    flat = _leaves(elems)
    if not _C.is_tracing():
        n = int(flat[0].shape[0])
        order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
        if initializer is None:
            acc, order = nest.pack_sequence_as(elems, [e[order[0]] for e in flat]), order[1:]
            outputs = [acc]
        else:
            acc, outputs = initializer, []
        for i in order:
            acc = fn(acc, nest.pack_sequence_as(elems, [e[i] for e in flat]))
            outputs.append(acc)
        if reverse:
            outputs.reverse()
        columns = zip(*[nest.flatten(o) for o in outputs])
        return nest.pack_sequence_as(outputs[0], [_ops.stack([_ops.convert_to_tensor(v) for v in c]) for c in columns])
    n = _length(flat)
    inputs = [TensorArray(e.dtype, size=n).unstack(e) for e in flat]
    if initializer is None:
        first = n - 1 if reverse else 0
        init = _element(elems, inputs, first)
        start = 1
    else:
        init, start = initializer, 0
    init_flat = [_ops.convert_to_tensor(v) for v in nest.flatten(init)]
    outs = [TensorArray(v.dtype, size=n, infer_shape=infer_shape) for v in init_flat]
    if initializer is None:
        outs = [ta.write(n - 1 if reverse else 0, v) for ta, v in zip(outs, init_flat)]

    def body(k, *state):
        accs, tas = state[:len(init_flat)], state[len(init_flat):]
        i = (n - 1 - k) if reverse else k
        acc = fn(nest.pack_sequence_as(init, list(accs)), _element(elems, inputs, i))
        values = [_ops.convert_to_tensor(v, a.dtype) for v, a in zip(nest.flatten(acc), accs)]
        return (k + 1, *values, *[ta.write(i, v) for ta, v in zip(tas, values)])

    res = while_loop(lambda k, *_: k < n, body, (_ops.constant(start), *init_flat, *outs))
    return nest.pack_sequence_as(init, [ta.stack() for ta in res[1 + len(init_flat):]])


def _fold(fn, elems, initializer, reverse):
    flat = _leaves(elems)
    if not _C.is_tracing():
        n = int(flat[0].shape[0])
        order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
        if initializer is None:
            acc, order = nest.pack_sequence_as(elems, [e[order[0]] for e in flat]), order[1:]
        else:
            acc = initializer
        for i in order:
            acc = fn(acc, nest.pack_sequence_as(elems, [e[i] for e in flat]))
        return acc
    n = _length(flat)
    inputs = [TensorArray(e.dtype, size=n).unstack(e) for e in flat]
    if initializer is None:
        init, start = _element(elems, inputs, n - 1 if reverse else 0), 1
    else:
        init, start = initializer, 0
    init_flat = [_ops.convert_to_tensor(v) for v in nest.flatten(init)]

    def body(k, *accs):
        i = (n - 1 - k) if reverse else k
        acc = fn(nest.pack_sequence_as(init, list(accs)), _element(elems, inputs, i))
        return (k + 1, *[_ops.convert_to_tensor(v, a.dtype) for v, a in zip(nest.flatten(acc), accs)])

    res = while_loop(lambda k, *_: k < n, body, (_ops.constant(start), *init_flat))
    return nest.pack_sequence_as(init, list(res[1:]))


@export("foldl")
def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1]) (initializer defaults to
    elems[0], folded from elems[1])."""
    return _fold(fn, elems, initializer, reverse=False)


@export("foldr")
def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """foldl from the last element to the first."""
    return _fold(fn, elems, initializer, reverse=True)


@export("switch_case")
def switch_case(branch_index, branch_fns, default=None, name=None):
    """branch_fns[branch_index]() (default, or the last branch, when the index is out of range);
    branch_fns is a list or a dict of index -> fn."""
    pairs = sorted(branch_fns.items()) if isinstance(branch_fns, dict) else list(enumerate(branch_fns))
    if not pairs:
        raise ValueError("branch_fns must be a non-empty list or dict")
    fallback = default if default is not None else pairs[-1][1]
    index = _ops.convert_to_tensor(branch_index)
    if index.dtype != _dt.int32:
        raise TypeError(f"branch_index must be an int32 Tensor, got {index.dtype.name}")
    if not _C.is_tracing():
        return dict(pairs).get(int(index), fallback)()

    def chain(k):
        if k == len(pairs):
            return fallback()
        key, fn = pairs[k]
        return cond(_ops.equal(index, key), fn, lambda: chain(k + 1))
    return chain(0)


@export("case")
def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name=None):
    """The fn of the first pair whose predicate holds (with exclusive=True, more than one true
    predicate is an error), else default() (or the last pair's fn)."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    if not pairs:
        if default is None:
            raise ValueError("No predicates and no default")
        return default()
    fallback = default if default is not None else pairs[-1][1]
    if exclusive:
        preds = [_ops.cast(_ops.convert_to_tensor(p), _dt.int32) for p, _ in pairs]
        total = preds[0]
        for p in preds[1:]:
            total = total + p
        if not _C.is_tracing() and int(total) > 1:
            raise InvalidArgumentError("Input error: exclusive=True: more than 1 conditions are true")

    def chain(k):
        if k == len(pairs):
            return fallback()
        pred, fn = pairs[k]
        return cond(pred, fn, lambda: chain(k + 1))
    return chain(0)


@export("timestamp")
def timestamp(name=None):
    """Seconds since the epoch as float64, read when called eagerly, or each time a traced
    function runs (a py_function)."""
    if _C.is_tracing():
        return py_function(lambda: np.float64(time.time()), [], Tout=_dt.float64)
    return _ops.constant(time.time(), _dt.float64)


__all__ = ["case", "foldl", "foldr", "map_fn", "scan", "switch_case", "timestamp", "vectorized_map"]
