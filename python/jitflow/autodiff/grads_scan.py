"""Gradients of the scans and of TopKV2 (TF's math_grad and nn_grad rules): a sum scan's is the
scan of the incoming gradient run the other way, a product scan's that of prod * grad divided by
the input, a log-sum-exp scan's goes through two more such scans of the gradient's positive and
negative parts, and top-k's routes each value's gradient back to the position its index names."""
import numpy as np

from ..core import dtypes as _dt
from ..ops import array_ops as _array
from ..ops import basic_ops as ops
from ..ops import sort_ops as _sort
from .grads_math import _grad
from .registry import register_gradient
from .shapes import is_float

# Top-k gradients up to this many (k x row length) products per row are a one-hot product and
# a sum, which fuses into compiled code; larger ones scatter (an unsorted segment sum: O(k)
# per row, but no compiled form yet, so jit_compile=True refuses it by name).
_ONE_HOT_LIMIT = 1 << 14


def _scan_attrs(op):
    return bool(op.get_attr("exclusive", False)), bool(op.get_attr("reverse", False))


@_grad("Cumsum")
def _cumsum_grad(op, g):
    exclusive, reverse = _scan_attrs(op)
    return [_sort.cumsum(g, op.inputs[1], exclusive=exclusive, reverse=not reverse), None]


@_grad("Cumprod")
def _cumprod_grad(op, g):
    x, axis = op.inputs[0], op.inputs[1]
    exclusive, reverse = _scan_attrs(op)
    prod = _sort.cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = _sort.cumsum(prod * g, axis, exclusive=exclusive, reverse=not reverse)
    return [ops.divide_no_nan(out, x), None]


@_grad("CumulativeLogsumexp")
def _cumulative_logsumexp_grad(op, g):
    x, axis, y = op.inputs[0], op.inputs[1], op.outputs[0]
    exclusive, reverse = _scan_attrs(op)
    lowest = float(np.finfo(g.dtype.as_numpy_dtype).min)
    floor = ops.fill(ops.shape(g), ops.cast(lowest, g.dtype))
    pos = ops.where(ops.greater(g, 0), ops.log(ops.maximum(g, 0) + (ops.cast(g <= 0, g.dtype))), floor)
    neg = ops.where(ops.less(g, 0), ops.log(ops.maximum(-g, 0) + (ops.cast(g >= 0, g.dtype))), floor)

    # an exclusive scan's empty first sum (-inf) passes nothing back (log_g - y would be +inf)
    empty = ops.equal(y, ops.cast(float("-inf"), y.dtype))

    def part(log_g):
        s = _sort.cumulative_logsumexp(ops.where(empty, floor, log_g - y), axis, exclusive=exclusive,
                                       reverse=not reverse)
        return ops.exp(s + x)

    return [part(pos) - part(neg), None]


@register_gradient("TopKV2")
def _top_k_grad(op, g, g_indices=None):
    x, idx = op.inputs[0], op.outputs[1]
    if g is None or not is_float(x):
        return [None, None]
    n, k = x.shape[-1], idx.shape[-1]
    if n is not None and k is not None and n * k <= _ONE_HOT_LIMIT:
        hot = _array.one_hot(idx, n, dtype=g.dtype)
        return [ops.reduce_sum(hot * ops.expand_dims(g, -1), -2), None]
    xs = ops.shape(x)
    n_t = xs[-1]
    rows = ops.reduce_prod(xs[:-1])
    offsets = ops.expand_dims(ops.range(rows) * n_t, 1)
    ids = ops.reshape(ops.cast(ops.reshape(idx, ops.stack([rows, -1])), _dt.int32) + offsets, [-1])
    flat = _array.unsorted_segment_sum(ops.reshape(g, [-1]), ids, rows * n_t)
    return [ops.reshape(flat, xs), None]
