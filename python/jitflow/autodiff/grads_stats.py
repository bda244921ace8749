"""Gradients of EuclideanNorm and the segment reductions, as TF's math_grad.py: sums gather g back to the rows,
means divide by the row counts first, max/min send g to the rows equal to the result, split
evenly among ties; unsorted ids that are negative (dropped rows) get 0."""
from ..core import dtypes as _dt
from ..ops import array_ops, stats_ops
from ..ops import basic_ops as ops
from .grads_math import _grad, _keepdims_grad


@_grad("EuclideanNorm")
def _euclidean_norm_grad(op, g):
    """TF's: x / (norm / g), the norm and g given the input's rank (NaN where the norm is 0)."""
    gk, _ = _keepdims_grad(op, g)
    norm, _ = _keepdims_grad(op, op.outputs[0])
    return [op.inputs[0] / (norm / gk), None]


def _gather_drop_negatives(params, ids, clipped=None, keep=None):
    """params gathered at max(ids, 0), zero where the id is negative (TF's
    _GatherDropNegatives); returns the clipped ids and the broadcast mask for reuse."""
    if clipped is None:
        clipped = ops.maximum(ids, ops.zeros_like(ids))
    gathered = array_ops.gather(params, clipped)
    if keep is None:
        extra = len(gathered.shape) - len(ids.shape)
        keep = ops.reshape(ops.greater_equal(ids, ops.zeros_like(ids)), ops.concat(
            [ops.shape(ids), ops.ones([extra], _dt.int32)], 0) if extra else ops.shape(ids))
        keep = ops.logical_and(keep, ops.ones_like(gathered, dtype=_dt.bool))
    return ops.where(keep, gathered, ops.zeros_like(gathered)), clipped, keep


@_grad("SegmentSum")
def _segment_sum_grad(op, g):
    return [array_ops.gather(g, op.inputs[1]), None]


@_grad("SegmentMean")
def _segment_mean_grad(op, g):
    data, ids = op.inputs[0], op.inputs[1]
    ones = ops.cast(ops.ones_like(ids), g.dtype)
    counts = stats_ops.segment_sum(ones, ids)
    counts = ops.reshape(counts, [-1] + [1] * (len(data.shape) - 1))
    return [array_ops.gather(g / counts, ids), None]


def _segment_min_or_max_grad(op, g):
    data, ids = op.inputs[0], op.inputs[1]
    selected = ops.equal(data, array_ops.gather(op.outputs[0], ids))
    num = stats_ops.segment_sum(ops.cast(selected, g.dtype), ids)
    gathered = array_ops.gather(g / num, ids)
    return [ops.where(selected, gathered, ops.zeros_like(data)), None]


_grad("SegmentMax")(_segment_min_or_max_grad)
_grad("SegmentMin")(_segment_min_or_max_grad)


def _unsorted_min_or_max_grad(op, g):
    data, ids, n = op.inputs
    gathered_out, clipped, keep = _gather_drop_negatives(op.outputs[0], ids)
    selected = ops.logical_and(ops.equal(data, gathered_out), keep)
    num = array_ops.unsorted_segment_sum(ops.cast(selected, g.dtype), ids, n)
    gathered, _, _ = _gather_drop_negatives(g / num, None, clipped, keep)
    return [ops.where(selected, gathered, ops.zeros_like(gathered)), None, None]


_grad("UnsortedSegmentMax")(_unsorted_min_or_max_grad)
_grad("UnsortedSegmentMin")(_unsorted_min_or_max_grad)


def _prod_grad(op, g, segment_sum, segment_prod, gather):
    """TF's product gradient: prod / x where x != 0; at a segment's only zero, the product of
    the other elements; 0 for segments with more than one zero."""
    data = op.inputs[0]
    is_zero = ops.equal(data, ops.zeros_like(data))
    num_zeros = segment_sum(ops.cast(is_zero, _dt.int32))
    g = ops.where(ops.greater(num_zeros, ops.ones_like(num_zeros)), ops.zeros_like(g), g)
    non_zero = ops.where(is_zero, ops.ones_like(data), data)
    partial = ops.where(is_zero, gather(segment_prod(non_zero)), gather(op.outputs[0]) / non_zero)
    return gather(g) * partial


@_grad("SegmentProd")
def _segment_prod_grad(op, g):
    ids = op.inputs[1]
    return [_prod_grad(op, g, lambda v: stats_ops.segment_sum(v, ids), lambda v: stats_ops.segment_prod(v, ids),
                       lambda v: array_ops.gather(v, ids)), None]


@_grad("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op, g):
    ids, n = op.inputs[1], op.inputs[2]
    gathered_out, clipped, keep = _gather_drop_negatives(op.outputs[0], ids)

    def gather(v):  # rows of dropped (negative) ids get 0
        return gathered_out if v is op.outputs[0] else _gather_drop_negatives(v, None, clipped, keep)[0]
    return [_prod_grad(op, g, lambda v: array_ops.unsorted_segment_sum(v, ids, n),
                       lambda v: stats_ops.unsorted_segment_prod(v, ids, n), gather), None, None]
