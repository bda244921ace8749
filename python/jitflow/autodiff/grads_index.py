"""Gradients of the index-map ops (TF's array_grad.py rules, dense): a gather's gradient is a
scatter-add into zeros of the params' shape; the per-dim maps run backwards."""
import numpy as np

from ..ops import array_ops
from ..ops import basic_ops as ops
from .grads_math import _grad
from .grads_stats import _gather_drop_negatives
from .shapes import const_ints, shape_of


@_grad("GatherV2")
def _gather_grad(op, g):
    """Moves the gathered axis first, sums rows per index (UnsortedSegmentSum), moves it back.
    batch_dims > 0: the batch index is folded into the segment id (TF's _BatchGatherGrad)."""
    params, indices = op.inputs[0], op.inputs[1]
    axis = const_ints(op.inputs[2], "axis", op)[0]
    prank, irank = len(params.shape), len(indices.shape)
    axis = axis % prank
    bd = op.get_attr("batch_dims", 0)
    bd = bd + irank if bd < 0 else bd
    pshape = shape_of(params)
    # g: params[:axis] + indices[bd:] + params[axis+1:]. Bring [batch, index dims] first.
    gi = list(range(bd)) + list(range(axis, axis + irank - bd))
    rest = [d for d in range(len(g.shape)) if d not in gi]
    gt = ops.transpose(g, gi + rest)
    n = pshape[axis]
    rest_shape = [pshape[d] for d in range(bd, prank) if d != axis]
    ids = ops.cast(indices, indices.dtype)
    if bd:
        nb = int(np.prod([pshape[d] for d in range(bd)]))
        per = int(np.prod(indices.shape[bd:]))
        offs = ops.reshape(ops.range(nb, dtype=indices.dtype) * n, [nb] + [1] * (irank - bd))
        ids = ops.reshape(indices, [nb] + list(indices.shape[bd:])) + offs
        seg = array_ops.unsorted_segment_sum(ops.reshape(gt, [nb * per] + rest_shape), ops.reshape(ids, [-1]),
                                             nb * n)
        seg = ops.reshape(seg, [pshape[d] for d in range(bd)] + [n] + rest_shape)
    else:
        seg = array_ops.unsorted_segment_sum(gt, ids, n)
    # seg: params[:bd] + [n] + params[bd:axis] + params[axis+1:]: move n back to `axis`.
    order = list(range(bd)) + list(range(bd + 1, axis + 1)) + [bd] + list(range(axis + 1, prank))
    return [ops.transpose(seg, order), None, None]


@_grad("UnsortedSegmentSum")
def _segment_sum_grad(op, g):
    return [_gather_drop_negatives(g, op.inputs[1])[0], None, None]


@_grad("ReverseV2")
def _reverse_grad(op, g):
    return [ops.identity(array_ops.reverse(g, op.inputs[1])), None]


@_grad("Tile")
def _tile_grad(op, g):
    """Splits each tiled dim into (multiple, dim) and sums the multiples."""
    x = op.inputs[0]
    mult = const_ints(op.inputs[1], "multiples", op)
    xs = shape_of(x)
    split = []
    for m, d in zip(mult, xs):
        split += [m, d]
    s = ops.reduce_sum(ops.reshape(g, split), axis=list(range(0, 2 * len(mult), 2)))
    return [ops.reshape(s, xs), None]


@_grad("PadV2")
def _pad_grad(op, g):
    x = op.inputs[0]
    pads = const_ints(op.inputs[1], "paddings", op)
    xs = shape_of(x)
    begin = pads[0::2]
    return [ops.strided_slice(g, begin, [b + d for b, d in zip(begin, xs)]), None, None]


@_grad("MirrorPad")
def _mirror_pad_grad(op, g):
    """Per padded dim: the middle, plus the mirrored edges added back where they came from."""
    pads = const_ints(op.inputs[1], "paddings", op)
    sym = 1 if op.get_attr("mode", "REFLECT") in ("SYMMETRIC", b"SYMMETRIC") else 0
    xs = shape_of(op.inputs[0])
    for d, n in enumerate(xs):
        lo, hi = pads[2 * d], pads[2 * d + 1]
        if lo == 0 and hi == 0:
            continue

        def take(a, b, g=g, d=d):
            begin, end = [0] * len(xs), [0] * len(xs)
            bm = em = (1 << len(xs)) - 1 & ~(1 << d)
            begin[d], end[d] = a, b
            return ops.strided_slice(g, begin, end, None, bm, em)

        def zpad(t, before, after, d=d):
            p = [[0, 0]] * len(xs)
            p[d] = [before, after]
            return array_ops.pad(t, p)
        mid = take(lo, lo + n)
        if lo:  # edge element k (from the left) came from input 1 - sym + ... mirrored
            left = array_ops.reverse(take(0, lo), [d])
            mid = mid + zpad(left, 1 - sym, n - lo - (1 - sym))
        if hi:
            right = array_ops.reverse(take(lo + n, lo + n + hi), [d])
            mid = mid + zpad(right, n - hi - (1 - sym), 1 - sym)
        g = mid
    return [g, None]


@_grad("Roll")
def _roll_grad(op, g):
    return [array_ops.roll(g, ops.negative(op.inputs[1]), op.inputs[2]), None, None]
