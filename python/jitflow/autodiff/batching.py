"""Batching rules: one op applied to inputs of which some carry an extra leading batch
dimension, as the op applied to each batch element and stacked (TF's pfor converters, JAX's
vmap rules). jacobian.py replays a recorded backward pass through these rules.

`batch_op(op_type, inputs, batched, attrs, outputs)` returns one (tensor, is_batched) pair
per output. The rules cover the ops that gradient functions build (elementwise, reductions,
views, matmuls, slicing, concatenation, segment sums, GatherNd/ScatterNd); any other op that has an eager kernel
runs once per batch element and is stacked (counted in `jf.debugging.stats()` as
`jacobian_loop_fallbacks`, warned once per op type); an op that cannot run alone (control
flow, a recorded function call) raises NoBatchingRule and the caller loops instead.
"""
import numpy as np

from .. import _C
from ..core.errors import warn
from ..core.nest import flatten
from ..ops import array_ops
from ..ops import basic_ops as ops
from ..ops.debugging import _extra_stats
from ..ops.dispatch import const_value

_RECORDS = {r["name"]: r for r in _C.op_records()}
_ELEMENTWISE = {"unary", "binary", "math", "cast", "select", "fill_like"}
_DIRECT = {"Identity", "StopGradient", "Softmax", "LogSoftmax"}  # act on the last axes only
_warned = set()
_extra_stats.setdefault("jacobian_loop_fallbacks", 0)


class NoBatchingRule(Exception):
    """An op that neither has a rule nor can run on one batch element alone."""


def _run(op_type, inputs, attrs):
    return _C.execute_n(op_type, list(inputs), attrs or None)


def _rank(t):
    return len(t.shape)


def _expand(x, n):
    """Batched x with n size-1 dims inserted after the batch dim."""
    for _ in range(n):
        x = _run("ExpandDims", [x, ops.constant(1)], None)[0]
    return x


def _size_vector(ref):
    """[batch size] of a batched tensor: a constant when known, else read from its shape."""
    if ref.shape[0] is not None:
        return ops.constant([ref.shape[0]])
    return ops.shape(ref)[:1]


def _materialize(x, ref):
    """Unbatched x repeated along a new leading dim, as many times as batched `ref`'s."""
    x = _run("ExpandDims", [x, ops.constant(0)], None)[0]
    multiples = ops.concat([_size_vector(ref), ops.constant(np.ones(_rank(x) - 1, np.int32))], 0)
    return _run("Tile", [x, multiples], None)[0]


def _first_batched(inputs, batched):
    return next(x for x, b in zip(inputs, batched) if b)


def _size(inputs, batched):
    return _first_batched(inputs, batched).shape[0]


def _broadcast_batched(x, core_shape):
    """Batched x (core dims already lined up) broadcast to [batch, *core_shape]."""
    return _run("Mul", [x, ops.ones([1, *core_shape], x.dtype)], None)[0]


def _shift_axes(axis_t, core_rank, dtype=None):
    """Axis values (a tensor) for the core dims, as positions in the batched tensor."""
    v = const_value(axis_t)
    if v is not None:
        a = np.asarray(v)
        shifted = (a % core_rank if core_rank else a) + 1
        return ops.constant(shifted.astype(a.dtype if a.dtype.kind == "i" else np.int32))
    mod = _run("FloorMod", [axis_t, ops.constant(core_rank, axis_t.dtype)], None)[0]
    return _run("AddV2", [mod, ops.constant(1, axis_t.dtype)], None)[0]


def _prepend(vec_t, value):
    """A shape-like int vector with `value` (an int, or a 1-element int32 tensor) in front."""
    if isinstance(value, _C.Tensor):
        return ops.concat([ops.cast(value, vec_t.dtype), vec_t], 0)
    v = const_value(vec_t)
    if v is not None:
        a = np.asarray(v)
        return ops.constant(np.concatenate([np.asarray([value], a.dtype), a.reshape(-1)]))
    return ops.concat([ops.constant([value], vec_t.dtype), vec_t], 0)


def _elementwise(op_type, inputs, batched, attrs):
    core = max(_rank(x) - (1 if b else 0) for x, b in zip(inputs, batched))
    if op_type == "AddN":  # same shapes, no broadcasting
        ref = _first_batched(inputs, batched)
        ins = [x if b else _materialize(x, ref) for x, b in zip(inputs, batched)]
    else:
        ins = [_expand(x, core - (_rank(x) - 1)) if b else x for x, b in zip(inputs, batched)]
    return [(y, True) for y in _run(op_type, ins, attrs)]


def _reduce(op_type, inputs, batched, attrs):
    x, axis = inputs
    if batched[1]:
        raise NoBatchingRule
    return [(y, True) for y in _run(op_type, [x, _shift_axes(axis, _rank(x) - 1)], attrs)]


def _matmul(op_type, inputs, batched, attrs):
    a, b = inputs
    if op_type == "MatMul":
        attrs = {"adj_x": attrs.get("transpose_a", False), "adj_y": attrs.get("transpose_b", False)}
    ra = _rank(a) - batched[0]
    rb = _rank(b) - batched[1]
    core = max(ra, rb)
    # Batched operands get size-1 dims so the batch dim lines up with the broadcast batch dims.
    a = _expand(a, core - ra) if batched[0] else a
    b = _expand(b, core - rb) if batched[1] else b
    return [(y, True) for y in _run("BatchMatMulV2", [a, b], attrs)]


def _segment(op_type, inputs, batched, attrs):
    if any(batched[1:]):
        raise NoBatchingRule
    data, ids = inputs[0], inputs[1]
    q = _rank(ids)
    r = _rank(data)
    to_front = [*range(1, q + 1), 0, *range(q + 1, r)]
    data = _run("Transpose", [data, ops.constant(to_front)], None)[0]
    y = _run(op_type, [data, *inputs[1:]], attrs)[0]
    back = [1, 0, *range(2, _rank(y))]
    return [(_run("Transpose", [y, ops.constant(back)], None)[0], True)]


def _view_or_index(op_type, inputs, batched, attrs):
    """Ops whose first input is the data and whose other inputs say where (not batched)."""
    x = inputs[0]
    if not batched[0] or any(batched[1:]):
        raise NoBatchingRule
    r = _rank(x) - 1
    rest = list(inputs[1:])
    attrs = dict(attrs or {})
    if op_type == "Reshape":
        rest[0] = _prepend(rest[0], x.shape[0] if x.shape[0] is not None else _size_vector(x))
    elif op_type == "ExpandDims":
        v = const_value(rest[0])
        if v is None:
            raise NoBatchingRule
        a = int(np.asarray(v).reshape(-1)[0])
        rest[0] = ops.constant(a + 1 if a >= 0 else a)
    elif op_type == "Squeeze":
        dims = attrs.get("squeeze_dims") or []
        if not dims:  # squeeze every size-1 core dim, never the batch dim
            core = x.shape[1:]
            if any(d is None for d in core):
                raise NoBatchingRule
            dims = [i for i, d in enumerate(core) if d == 1]
        attrs["squeeze_dims"] = [(d % r) + 1 for d in dims]
    elif op_type == "Transpose":
        v = const_value(rest[0])
        perm = np.asarray(v) if v is not None else None
        rest[0] = (ops.constant(np.concatenate([[0], perm + 1]).astype(perm.dtype)) if perm is not None
                   else ops.concat([ops.constant([0], rest[0].dtype), rest[0] + 1], 0))
    elif op_type in ("ReverseV2", "GatherV2"):
        if op_type == "GatherV2" and attrs.get("batch_dims", 0):
            raise NoBatchingRule
        rest[-1] = _shift_axes(rest[-1], r)
    elif op_type == "Roll":
        rest[1] = _shift_axes(rest[1], r)
    elif op_type == "Tile":
        rest[0] = _prepend(rest[0], 1)
    elif op_type in ("PadV2", "MirrorPad"):
        v = const_value(rest[0])
        if v is None:
            raise NoBatchingRule
        pads = np.asarray(v)
        rest[0] = ops.constant(np.concatenate([np.zeros((1, 2), pads.dtype), pads]))
    elif op_type == "BroadcastTo":
        v = const_value(rest[0])
        n = len(np.asarray(v).reshape(-1)) if v is not None else rest[0].shape[0]
        if n is None:
            raise NoBatchingRule
        x = _expand(x, n - r)
        if x.shape[0] is None:  # BroadcastTo wants its shape at trace time: broadcast by a product
            if v is None:
                raise NoBatchingRule
            return [(_broadcast_batched(x, [int(d) for d in np.asarray(v).reshape(-1)]), True)]
        rest[0] = _prepend(rest[0], x.shape[0])
    elif op_type == "StridedSlice":
        rest = [_prepend(rest[0], 0), _prepend(rest[1], 0), _prepend(rest[2], 1)]
        for m in ("begin_mask", "end_mask"):
            attrs[m] = (attrs.get(m, 0) << 1) | 1
        for m in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask"):
            attrs[m] = attrs.get(m, 0) << 1
    elif op_type == "Slice":
        rest = [_prepend(rest[0], 0), _prepend(rest[1], -1)]
    elif op_type == "Shape":
        shape = _run("Shape", [x], attrs)[0]
        return [(ops.strided_slice(shape, [1], [0], [1], end_mask=1), False)]
    else:
        raise NoBatchingRule
    return [(y, True) for y in _run(op_type, [x, *rest], attrs)]


def _concat_like(op_type, inputs, batched, attrs):
    if op_type == "ConcatV2":
        values, axis = inputs[:-1], inputs[-1]
        if batched[-1]:
            raise NoBatchingRule
        ref = _first_batched(values, batched[:-1])
        vals = [v if b else _materialize(v, ref) for v, b in zip(values, batched)]
        return [(_run(op_type, [*vals, _shift_axes(axis, _rank(vals[0]) - 1)], attrs)[0], True)]
    # Pack
    ref = _first_batched(inputs, batched)
    vals = [v if b else _materialize(v, ref) for v, b in zip(inputs, batched)]
    r = _rank(vals[0])  # the output's core rank
    a = attrs.get("axis", 0)
    attrs = dict(attrs, axis=(a % r) + 1)
    return [(_run(op_type, vals, attrs)[0], True)]


def _split(op_type, inputs, batched, attrs):
    if op_type == "Split":
        axis, x = inputs
        if batched[0] or not batched[1]:
            raise NoBatchingRule
        outs = _run(op_type, [_shift_axes(axis, _rank(x) - 1), x], attrs)
    else:
        x, sizes, axis = inputs
        if not batched[0] or any(batched[1:]):
            raise NoBatchingRule
        outs = _run(op_type, [x, sizes, _shift_axes(axis, _rank(x) - 1)], attrs)
    return [(y, True) for y in outs]


def _move_axis(x, src, dst):
    perm = list(range(_rank(x)))
    perm.insert(dst, perm.pop(src))
    return _run("Transpose", [x, ops.constant(perm)], None)[0]


def _nd_index(op_type, inputs, batched, attrs):
    """GatherNd of batched params / ScatterNd of batched updates: the batch dim moves behind
    the indexed dims, where the index tuples do not reach, and back to the front after."""
    indices = inputs[1] if op_type == "GatherNd" else inputs[0]
    k = indices.shape[-1] if _rank(indices) else None
    if k is None or batched[1 if op_type == "GatherNd" else 0]:
        raise NoBatchingRule
    q = _rank(indices) - 1  # the index tuples' own dims
    if op_type == "GatherNd":
        params = _move_axis(inputs[0], 0, k)
        return [(_move_axis(_run(op_type, [params, indices], attrs)[0], q, 0), True)]
    updates, shape = inputs[1], const_value(inputs[2])
    if not batched[1] or batched[2] or shape is None or updates.shape[0] is None:
        raise NoBatchingRule
    shape = [int(d) for d in np.asarray(shape).reshape(-1)]
    shape = shape[:k] + [updates.shape[0]] + shape[k:]
    out = _run(op_type, [indices, _move_axis(updates, 0, q), ops.constant(shape, inputs[2].dtype)], attrs)
    return [(_move_axis(out[0], k, 0), True)]


def _fill(op_type, inputs, batched, attrs):
    dims, value = inputs
    if batched[0]:
        raise NoBatchingRule
    v = const_value(dims)
    if v is None:
        raise NoBatchingRule
    dims = [int(d) for d in np.asarray(v).reshape(-1)]
    value = _expand(value, len(dims))
    if value.shape[0] is None:
        return [(_broadcast_batched(value, dims), True)]
    return [(_run("BroadcastTo", [value, ops.constant([value.shape[0], *dims])], None)[0], True)]


def _rule(op_type):
    if op_type in _DIRECT:
        return lambda t, ins, b, a: [(y, True) for y in _run(t, ins, a)]
    if op_type in ("MatMul", "BatchMatMulV2"):
        return _matmul
    if op_type == "BiasAdd":  # elementwise, but along a channel dim a batch dim would move
        return None
    if op_type in ("ConcatV2", "Pack"):
        return _concat_like
    if op_type in ("Split", "SplitV"):
        return _split
    if op_type == "Fill":
        return _fill
    if op_type in ("GatherNd", "ScatterNd"):
        return _nd_index
    if op_type in ("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
                   "SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin"):
        return _segment
    rec = _RECORDS.get(op_type)
    if rec is None:
        return None
    if rec["lower"] in _ELEMENTWISE or op_type in ("AddN", "CheckNumerics"):
        return _elementwise
    if rec["lower"] in ("reduce", "arg_reduce"):
        return _reduce
    if rec["lower"] in ("view", "transpose", "slice", "shape", "gather", "index_map", "broadcast"):
        return _view_or_index
    return None


def _loop(op_type, inputs, batched, attrs, run):
    """The op once per batch element, stacked: correct for any op that can run alone."""
    count = _size(inputs, batched)
    if count is None:
        raise NoBatchingRule
    _extra_stats["jacobian_loop_fallbacks"] += 1
    if op_type not in _warned:
        _warned.add(op_type)
        warn(f"jacobian: no batching rule for op type {op_type}; it runs once per row "
             f"({count} times) instead of vectorized")
    rows = []
    for i in range(count):
        ins = [array_ops.gather(x, i) if b else x for x, b in zip(inputs, batched)]
        rows.append(run(ins))
    return [(ops.stack([r[k] for r in rows], 0), True) for k in range(len(rows[0]))]


def batch_op(op_type, inputs, batched, attrs, outputs):
    rule = _rule(op_type)
    if rule is not None:
        try:
            return rule(op_type, list(inputs), list(batched), attrs or {})
        except NoBatchingRule:
            pass
    rec = _RECORDS.get(op_type)
    if op_type == "FunctionCall":
        site = attrs["_call_site"]
        if site.function is None:
            raise NoBatchingRule

        def run(ins):
            args, kwargs = site.tree.unflatten(list(ins[:attrs["_num_leaves"]]))
            return [t for t in flatten_tensors(site.function(*args, **kwargs))]
        return _loop(op_type, inputs, batched, attrs, run)
    if rec is None or rec["lower"] == "graph" or rec["stateful"]:
        raise NoBatchingRule
    return _loop(op_type, inputs, batched, attrs, lambda ins: _run(op_type, ins, attrs))


def flatten_tensors(out):
    return [t for t in flatten(out) if isinstance(t, _C.Tensor)]
