"""Scans and sorting as TF 2 exposes them: cumsum, cumprod and cumulative_logsumexp (the
Cumsum, Cumprod and CumulativeLogsumexp ops), math.top_k (TopKV2), sort and argsort built on
TopKV2 as TF builds them (the sorted axis moved last, ascending order as a descending sort of
negated values, so ties keep their order), and the composed in_top_k, searchsorted and
bincount."""
import collections

import numpy as np

from .._C import Tensor
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from .dispatch import OP, run, run_n, scalar_ints, static_value, to_tensor


def _scan(op):
    oid = OP[op]

    def f(x, axis=0, exclusive=False, reverse=False, name=None):
        x = to_tensor(x)
        ax = scalar_ints(axis, op, "ScanOp: axis must be a scalar, not {shape}", (x, None))
        return run(oid, (x, ax), {"exclusive": bool(exclusive), "reverse": bool(reverse)}, name)
    f.__name__ = op
    return f


cumsum = export("cumsum", "math.cumsum")(_scan("Cumsum"))
cumprod = export("math.cumprod")(_scan("Cumprod"))
cumulative_logsumexp = export("math.cumulative_logsumexp")(_scan("CumulativeLogsumexp"))


# TF returns top_k's outputs as a namedtuple: `.values` and `.indices` as well as unpacking.
TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


@export("math.top_k", "nn.top_k")
def top_k(input, k=1, sorted=True, index_type=_dt.int32, name=None):
    """The k largest entries of each row (last dim) and their indices, largest first, equal
    values in their order along the row."""
    x = to_tensor(input)
    kk = scalar_ints(k, "TopKV2", "k must be scalar, got shape {shape}", (x, None))
    values, indices = run_n(OP["TopKV2"], (x, kk), {"sorted": bool(sorted), "index_type": _dt.as_dtype(index_type)},
                            name)
    return TopKV2(values, indices)


def _moved_last(x, axis):
    """(x with `axis` swapped with the last one, the permutation that undoes it or None)."""
    rank = len(x.shape)
    if axis < 0:
        axis += rank
    if not 0 <= axis < rank:
        raise InvalidArgumentError(f"axis {axis} is out of range for a rank-{rank} input")
    if axis == rank - 1:
        return x, None
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return _ops.transpose(x, perm), perm


def _sort_or_argsort(values, axis, direction, return_argsort):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError("Argument `direction` should be one of ASCENDING, DESCENDING. "
                         f"Received: direction={direction}")
    if isinstance(axis, Tensor):
        axis = static_value(axis)
    if axis is None or np.ndim(axis) != 0:
        raise ValueError(f"Argument `axis` must be a constant scalar. Received: axis={axis}.")
    x = to_tensor(values)
    if x.dtype == _dt.bool:
        raise InvalidArgumentError("Value for attr 'T' of bool is not in the list of allowed values: float, double, "
                                   "int32, int64")
    ascending = direction == "ASCENDING"
    if ascending:
        # -x - 1 orders integers in reverse without overflowing at the minimum
        x = -x - 1 if x.dtype.is_integer else -x
    y, perm = _moved_last(x, int(axis))
    n = y.shape[-1] if y.shape[-1] is not None else _ops.shape(y)[-1]
    vals, idx = top_k(y, n)
    out = idx if return_argsort else vals
    if perm is not None:
        out = _ops.transpose(out, perm)
    if ascending and not return_argsort:
        out = -out - 1 if out.dtype.is_integer else -out
    return out


@export("sort")
def sort(values, axis=-1, direction="ASCENDING", name=None):
    out = _sort_or_argsort(values, axis, direction, False)
    return _ops.identity(out, name=name) if name else out


@export("argsort")
def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 indices that sort `values`; equal values keep their order (TopKV2's), stable or not."""
    out = _sort_or_argsort(values, axis, direction, True)
    return _ops.identity(out, name=name) if name else out


@export("math.in_top_k", "nn.in_top_k")
def in_top_k(targets, predictions, k, name=None):
    """Whether each row's target class is among its k largest predictions, ties at the boundary
    counting as in (TF's InTopKV2): fewer than k predictions exceed the target's, which is
    finite and a valid class. Composed of compares and a sum, so it compiles."""
    p = to_tensor(predictions)
    t = to_tensor(targets)
    if len(p.shape) != 2:
        raise InvalidArgumentError(f"predictions must be 2-dimensional, got shape {list(p.shape)}")
    if len(t.shape) != 1:
        raise InvalidArgumentError(f"targets must be 1-dimensional, got shape {list(t.shape)}")
    n = p.shape[1] if p.shape[1] is not None else _ops.shape(p)[1]
    t = _ops.cast(t, _dt.int32)
    valid = _ops.logical_and(_ops.greater_equal(t, 0), _ops.less(t, n))
    safe = _ops.where(valid, t, _ops.zeros_like(t))
    classes = _ops.expand_dims(_ops.range(n) if not isinstance(n, int) else _ops.constant(np.arange(n, dtype=np.int32)),
                               0)
    hit = _ops.equal(classes, _ops.expand_dims(safe, 1))
    target_pred = _ops.reduce_sum(_ops.where(hit, p, _ops.zeros_like(p)), 1)
    above = _ops.reduce_sum(_ops.cast(_ops.greater(p, _ops.expand_dims(target_pred, 1)), _dt.int32), 1)
    k = _ops.cast(to_tensor(k), _dt.int32)
    finite = _ops.is_finite(target_pred)
    return _ops.logical_and(_ops.logical_and(valid, finite), _ops.less(above, k), name=name)


@export("searchsorted")
def searchsorted(sorted_sequence, values, side="left", out_type=_dt.int32, name=None):
    """For each value, the number of entries of its row of sorted_sequence below it ('left') or
    not above it ('right'): one broadcast compare [..., M, N] and a sum, O(M * N) work per row
    (TF's kernel does a binary search, O(M log N)), which fuses into one compiled loop."""
    if side not in ("left", "right"):
        raise ValueError(f"Argument `side` must be either 'right' or 'left'. Received: `side` = '{side}'.")
    s = to_tensor(sorted_sequence)
    v = to_tensor(values)
    if len(s.shape) != len(v.shape) or list(s.shape[:-1]) != list(v.shape[:-1]):
        raise InvalidArgumentError("Leading dim_size of both tensors must match.")
    if s.dtype != v.dtype:
        raise TypeError(f"sorted_sequence and values must have one dtype, got {s.dtype.name} and {v.dtype.name}")
    below = _ops.less if side == "left" else _ops.less_equal
    hit = below(_ops.expand_dims(s, -2), _ops.expand_dims(v, -1))
    return _ops.reduce_sum(_ops.cast(hit, _dt.as_dtype(out_type)), -1, name=name)


@export("math.bincount", "bincount")
def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dt.int32, name=None, axis=None,
             binary_output=False):
    """Counts (or sums of weights) of each value of arr: an unsorted segment sum over
    max(arr) + 1 bins (at least minlength, at most maxlength; larger values are dropped)."""
    x = to_tensor(arr)
    if not x.dtype.is_integer:
        raise TypeError(f"bincount: arr must be an integer tensor, got {x.dtype.name}")
    if axis not in (None, 0, -1):
        raise ValueError(f"Unsupported axis value {axis}. Only 0 and -1 are currently supported.")
    per_row = axis == -1 and len(x.shape) == 2
    flat = _ops.reshape(x, [-1])
    if not x._is_symbolic and flat.numpy().size and flat.numpy().min() < 0:
        raise InvalidArgumentError("Input arr must be non-negative!")
    size = _ops.cast(_ops.reduce_max(_ops.concat([flat, _ops.constant([-1], flat.dtype)], 0)) + 1, _dt.int32)
    if minlength is not None:
        size = _ops.maximum(size, _ops.cast(to_tensor(minlength), _dt.int32))
    if maxlength is not None:
        size = _ops.minimum(size, _ops.cast(to_tensor(maxlength), _dt.int32))
    ids = _ops.cast(x, _dt.int32)
    bins = size
    if per_row:  # one set of bins per row, all of the one size
        rows = _ops.shape(x)[0]
        ids = _ops.where(_ops.less(ids, size), ids + _ops.expand_dims(_ops.range(rows) * size, 1), -_ops.ones_like(ids))
        bins = rows * size
    else:
        # values past maxlength go to no bin (an id of -1 is dropped by the segment sum)
        ids = _ops.where(_ops.less(ids, size), ids, -_ops.ones_like(ids))
    ids = _ops.reshape(ids, [-1])
    if weights is not None:
        data = _ops.reshape(to_tensor(weights), [-1])
    else:
        data = _ops.ones_like(ids, dtype=_dt.as_dtype(dtype))
    out = _array.unsorted_segment_sum(data, ids, bins)
    if per_row:
        out = _ops.reshape(out, _ops.stack([rows, size]))
    if binary_output:
        out = _ops.cast(_ops.greater(out, 0), out.dtype)
    return _ops.identity(out, name=name) if name else out


__all__ = ["argsort", "bincount", "cumprod", "cumsum", "cumulative_logsumexp", "in_top_k", "searchsorted", "sort",
           "top_k"]
