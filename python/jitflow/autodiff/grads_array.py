"""Gradients of shape and data-movement ops (TF's array_grad.py), plus the ops that get
none (shapes, creation, random, state)."""
import numpy as np

from ..ops import array_ops
from ..ops import basic_ops as ops
from ..ops.dispatch import const_value
from .grads_math import _grad
from .registry import register_gradient
from .shapes import const_ints, is_float, reshape_like, static_shape, unbroadcast

# Ops without a gradient say so, and why, in their records (cpp/ir/ops.def).



@_grad("Reshape")
def _reshape_grad(op, g):
    return [reshape_like(g, op.inputs[0]), None]


@_grad("Squeeze")
def _squeeze_grad(op, g):
    return [reshape_like(g, op.inputs[0])]


@_grad("ExpandDims")
def _expand_dims_grad(op, g):
    return [reshape_like(g, op.inputs[0]), None]


@_grad("BroadcastTo")
def _broadcast_to_grad(op, g):
    return [unbroadcast(g, op.inputs[0]), None]


@_grad("Transpose")
def _transpose_grad(op, g):
    perm = const_ints(op.inputs[1], "perm", op)
    return [ops.transpose(g, list(np.argsort(perm))), None]


@_grad("Fill")
def _fill_grad(op, g):
    return [None, ops.reduce_sum(g)]


def _axis_value(op, t, rank):
    return const_ints(t, "axis", op)[0] % rank


@_grad("ConcatV2")
def _concat_grad(op, g):
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    axis = _axis_value(op, axis_t, len(g.shape))
    sizes = [v.shape[axis] for v in values]
    if any(s is None for s in sizes):
        sizes = ops.stack([ops.shape(v)[axis] for v in values])
    return list(ops.split(g, sizes, axis)) + [None]


@_grad("Pack")
def _pack_grad(op, g):
    axis = op.get_attr("axis", 0) % len(g.shape)
    parts = ops.split(g, len(op.inputs), axis)
    return [ops.squeeze(p, [axis]) for p in parts]


def _concat_output_grads(op, grads, axis):
    parts = [ops.zeros_like(y) if gi is None else gi for gi, y in zip(grads, op.outputs)]
    return parts[0] if len(parts) == 1 else ops.concat(parts, axis)


@register_gradient("Split")
def _split_grad(op, *grads):
    axis_t, value = op.inputs
    if not is_float(value):
        return [None, None]
    axis = _axis_value(op, axis_t, len(value.shape))
    return [None, _concat_output_grads(op, grads, axis)]


@register_gradient("SplitV")
def _splitv_grad(op, *grads):
    value, _, axis_t = op.inputs
    if not is_float(value):
        return [None, None, None]
    axis = _axis_value(op, axis_t, len(value.shape))
    return [_concat_output_grads(op, grads, axis), None, None]


# ---- StridedSlice ------------------------------------------------------------------------
def _canonical_slices(op, shape, begin, end, strides):
    """Per input dim: None (the whole dim), ("index", i) for a shrunk axis, or
    (start, stop, step, length) resolved like Python slicing."""
    bm, em = op.get_attr("begin_mask", 0), op.get_attr("end_mask", 0)
    elm, nam = op.get_attr("ellipsis_mask", 0), op.get_attr("new_axis_mask", 0)
    sam = op.get_attr("shrink_axis_mask", 0)
    rank = len(shape)
    n = len(begin)
    consuming = sum(1 for i in range(n) if not (nam >> i) & 1 and not (elm >> i) & 1)
    out, d, seen_ellipsis = [], 0, False
    for i in range(n):
        bit = 1 << i
        if elm & bit and not seen_ellipsis:
            seen_ellipsis = True
            for _ in range(rank - consuming):
                out.append(None)
                d += 1
            continue
        if nam & bit or elm & bit:
            continue
        dim = shape[d]
        if sam & bit:
            idx = begin[i]
            if idx < 0:
                if dim is None:
                    raise NotImplementedError(
                        f"Gradient of StridedSlice '{op.name}': a negative index into a dimension "
                        "of unknown size")
                idx += dim
            out.append(("index", idx))
        else:
            start = None if bm & bit else begin[i]
            stop = None if em & bit else end[i]
            step = strides[i]
            if start is None and stop is None and step == 1:
                out.append(None)
            elif dim is None:
                raise NotImplementedError(
                    f"Gradient of StridedSlice '{op.name}': slicing a dimension of unknown size "
                    "(a None dim of the input signature) is not supported")
            else:
                s, e, st = slice(start, stop, step).indices(dim)
                out.append((s, e, st, len(range(s, e, st))))
        d += 1
    while d < rank:
        out.append(None)
        d += 1
    return out


def _shape_with(g, axis, dims, count=1):
    """g's shape with `count` dims at `axis` replaced by `dims` (static list or int32 tensor)."""
    gs = static_shape(g)
    if gs is not None:
        return list(gs[:axis]) + list(dims) + list(gs[axis + count:])
    sh = ops.shape(g)
    return ops.concat([sh[:axis], ops.constant(list(dims), ops._dt.int32), sh[axis + count:]], 0)


def _zeros_along(g, axis, n):
    return ops.fill(_shape_with(g, axis, [n]), ops.constant(0, g.dtype))


def _take_along(g, axis, sl):
    return g[(slice(None),) * axis + (sl,)]


def _traced_index_grad(op, g):
    """Gradient of a StridedSlice whose begin, end or strides are computed at run time (x[i],
    x[:, i], x[i:], x[::i], x[None, ..., i] with a traced i: the bounds are a Pack). g gets its
    shrunk axes back and loses its new axes; an indexed axis is then g times a one-hot mask of
    the index, a sliced one a scatter of g to the positions the slice selected: the same slice
    of range(dim), so TF's clamping and negative steps hold by construction."""
    x, begin_t, end_t, strides_t = op.inputs
    strides = const_value(strides_t)
    bm, em = op.get_attr("begin_mask", 0), op.get_attr("end_mask", 0)
    elm, nam = op.get_attr("ellipsis_mask", 0), op.get_attr("new_axis_mask", 0)
    sam = op.get_attr("shrink_axis_mask", 0)
    xshape = tuple(x.shape)
    rank, n = len(xshape), begin_t.shape[0]
    consuming = sum(1 for k in range(n) if not (nam >> k) & 1 and not (elm >> k) & 1)
    indexed, sliced, out_pos = {}, {}, {}  # input dim -> its entry in begin; -> its dim in g
    d = p = 0
    for k in range(n):
        if (elm >> k) & 1:
            for _ in range(rank - consuming):
                out_pos[d], d, p = p, d + 1, p + 1
        elif (nam >> k) & 1:
            p += 1
        elif (sam >> k) & 1:
            indexed[d], d = k, d + 1
        else:
            full = (bm >> k) & 1 and (em >> k) & 1 and strides is not None and int(np.ravel(strides)[k]) == 1
            if not full:
                sliced[d] = k
            out_pos[d], d, p = p, d + 1, p + 1
    while d < rank:  # dims past the last entry are taken whole
        out_pos[d], d, p = p, d + 1, p + 1
    dims = [xshape[a] if xshape[a] is not None else ops.shape(x)[a] for a in range(rank)]
    gshape = tuple(g.shape)
    dense = [1 if a in indexed else (gshape[out_pos[a]] if gshape[out_pos[a]] is not None
                                      else ops.shape(g)[out_pos[a]]) for a in range(rank)]
    if any(not isinstance(v, int) for v in dense):
        dense = ops.stack([ops.cast(v, ops._dt.int32) if isinstance(v, ops.Tensor) else v for v in dense])
    g = ops.reshape(g, dense)
    for a, k in indexed.items():
        i = begin_t[k]
        depth = dims[a] if isinstance(dims[a], int) else ops.cast(dims[a], i.dtype)
        i = ops.where(ops.less(i, 0), i + depth, i)
        mask = array_ops.one_hot(i, depth, dtype=g.dtype)
        g = g * ops.reshape(mask, [-1 if b == a else 1 for b in range(rank)])
    for a, k in sliced.items():
        dt = begin_t.dtype
        size = dims[a] if isinstance(dims[a], int) else ops.cast(dims[a], dt)
        picked = ops.strided_slice(ops.range(0, size, 1, dtype=dt), begin_t[k:k + 1], end_t[k:k + 1],
                                   strides_t[k:k + 1], begin_mask=(bm >> k) & 1, end_mask=(em >> k) & 1)
        perm = [a] + [b for b in range(rank) if b != a]
        seg = array_ops.unsorted_segment_sum(ops.transpose(g, perm), picked, dims[a])
        g = ops.transpose(seg, [perm.index(b) for b in range(rank)])
    return [g, None, None, None]


@_grad("StridedSlice")
def _strided_slice_grad(op, g):
    x, begin_t, end_t, strides_t = op.inputs
    if const_value(begin_t) is None or const_value(end_t) is None or const_value(strides_t) is None:
        return _traced_index_grad(op, g)
    begin = const_ints(begin_t, "begin", op)
    end = const_ints(end_t, "end", op)
    strides = const_ints(strides_t, "strides", op)
    xshape = tuple(x.shape)
    try:
        specs = _canonical_slices(op, xshape, begin, end, strides)
    except NotImplementedError:  # a dim of unknown size: the run-time form handles it
        return _traced_index_grad(op, g)
    if any(s is not None and s[0] != "index" and s[3] == 0 for s in specs):
        return [ops.zeros_like(x), None, None, None]
    # Undo new axes and shrunk axes: one dim per input dim.
    dense = [1 if s is not None and s[0] == "index" else (xshape[d] if s is None else s[3])
             for d, s in enumerate(specs)]
    if any(d is None for d in dense):
        xsh = ops.shape(x)
        dense = ops.stack([xsh[i] if d is None else ops.constant(d, ops._dt.int32)
                           for i, d in enumerate(dense)])
    g = ops.reshape(g, dense)
    for axis, s in enumerate(specs):
        if s is None:
            continue
        dim = xshape[axis]
        if s[0] == "index":
            start, step, length = s[1], 1, 1
        else:
            start, _, step, length = s
            if step < 0:  # walk the selected elements upwards
                g = _take_along(g, axis, slice(None, None, -1))
                start, step = start + (length - 1) * step, -step
        span = length
        if step > 1:  # interleave step-1 zeros after each selected element
            spread = ops.concat([ops.expand_dims(g, axis + 1), _zeros_along(ops.expand_dims(g, axis + 1),
                                                                            axis + 1, step - 1)], axis + 1)
            g = ops.reshape(spread, _shape_with(spread, axis, [length * step], 2))
            span = min(length * step, dim - start)
            if span < length * step:
                g = _take_along(g, axis, slice(0, span))
        parts = []
        if start > 0:
            parts.append(_zeros_along(g, axis, start))
        parts.append(g)
        if dim - start - span > 0:
            parts.append(_zeros_along(g, axis, dim - start - span))
        if len(parts) > 1:
            g = ops.concat(parts, axis)
    return [g, None, None, None]

