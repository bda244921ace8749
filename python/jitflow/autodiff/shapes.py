"""Shape helpers for gradient functions: static shapes when known, jf.shape(...) otherwise,
constant values of axis/perm inputs, and reducing a broadcast gradient back to its input."""
import numpy as np

from .. import _C
from ..ops import basic_ops as ops
from ..ops.dispatch import const_value


def is_float(t):
    """Whether gradients flow through t: floats and complex values (TF's backpropagatable
    dtypes); integers and bools get none."""
    return t is not None and (t.dtype.is_floating or t.dtype.is_complex)


MAX_RANK = 8  # the largest rank a tensor may have (cpp/core/shape.h, kMaxRank)


def static_shape(t):
    """The shape as a tuple of ints, or None when a dim is unknown (traced with None dims)."""
    s = tuple(t.shape)
    return None if any(d is None for d in s) else s


def fill_like(t, value, name=None):
    """`value` in t's shape and dtype, with no edge from t when its shape is static: a Fill
    of constants (it folds to a constant, and clusters with the ops it feeds rather than with
    t's producer); OnesLike/ZerosLike(t) when a dim is unknown."""
    shape = static_shape(t)
    if shape is None:
        return (ops.ones_like if value else ops.zeros_like)(t, name=name)
    return ops.fill(list(shape), ops.constant(value, t.dtype), name=name)


def shape_of(t):
    """A static shape (list of ints) when known, else the int32 tensor jf.shape(t)."""
    s = static_shape(t)
    return list(s) if s is not None else ops.shape(t)


def const_ints(t, what, op):
    v = const_value(t)
    if v is None:
        raise NotImplementedError(
            f"Gradient of {op.type} op '{op.name}': its {what} must be a constant (a Python "
            "value or a tensor computed from constants), not a value computed at run time")
    return [int(i) for i in np.asarray(v).reshape(-1)]


def reduction_axes(op, x, axis_t):
    rank = len(x.shape)
    return sorted({a % rank if rank else 0 for a in const_ints(axis_t, "axis", op)})


def reshape_like(g, x):
    """g reshaped to x's shape (no op when the static shapes already agree)."""
    xs = static_shape(x)
    if xs is not None and static_shape(g) == xs:
        return g
    return ops.reshape(g, shape_of(x))


def unbroadcast(grad, x, *others):
    """Sums grad over the axes along which x was broadcast, so the result has x's shape.

    An axis whose dim x does not know when traced may or may not have been broadcast (x's dim 1
    at run time). TF decides with BroadcastGradientArgs when it runs; here it is decided when
    tracing where the op's other operands (`others`) show that x's dim is the result's there:
    none of them has that axis, all have dim 1, or all have x's run-time shape (_same_shape). A
    reshape to x's run-time shape then keeps that a checked fact. Any other such axis is summed
    over a split that the run-time shapes decide (_sum_unknown_broadcasts)."""
    if grad is None:
        return None
    xs, gs = tuple(x.shape), tuple(grad.shape)
    if xs == gs and None not in xs:
        return grad
    lead = len(gs) - len(xs)
    if lead < 0:
        return reshape_like(grad, x)
    out = ops.reduce_sum(grad, list(range(lead))) if lead else grad
    kept = [i for i, d in enumerate(xs) if d == 1 and gs[lead + i] != 1]
    if kept:
        out = ops.reduce_sum(out, kept, keepdims=True)
    unknown = [i for i, d in enumerate(xs) if d is None and gs[lead + i] != 1]
    settled = others and all(_same_shape(o, x) for o in others)
    maybe = [i for i in unknown if not settled
             and not (others and all(_dim_from_end(o, len(xs) - i) in (1, "absent") for o in others))]
    if maybe:
        out = _sum_unknown_broadcasts(out, x, maybe)
    elif unknown:
        out = ops.reshape(out, ops.shape(x))  # an error, not a wrong gradient, if the reasoning fails
    if static_shape(x) is not None and static_shape(out) != static_shape(x):
        out = ops.reshape(out, list(static_shape(x)))
    return out


def _dim_from_end(t, k):
    """t's static dim k places from its last (1: the last), or "absent" past its rank."""
    shape = tuple(t.shape)
    return "absent" if k > len(shape) else shape[len(shape) - k]


# Ops whose output has the shape of their one input, and elementwise ops whose output has the
# shape their inputs share (by the op records' lowering kinds).
_SHAPE_KEEPING = {r["name"] for r in _C.op_records()
                  if r["lower"] in ("unary", "math", "cast", "fill_like") and r["num_inputs"] == 1}
_SHAPE_KEEPING |= {"Identity", "StopGradient"}
_ELEMENTWISE = {r["name"] for r in _C.op_records()
                if r["lower"] in ("binary", "math", "select") and r["num_inputs"] != 1}


def _shape_root(t, memo, depth=16):
    """The traced tensor whose run-time shape t has, found back through ops that keep a shape:
    (node, index), or None for an eager tensor. Dims the trace does not know are equal between
    two tensors of one root (h and sigmoid(h) * h), whatever they are when it runs. The walk
    stops `depth` ops back (a shorter answer is only more cautious)."""
    if not t._is_symbolic or t._node_ref is None:
        return None
    node, index = t._node_ref
    key = (node, index, depth)
    if key in memo:
        return memo[key]
    root = (node, index)
    if depth > 0 and index == 0:
        ins = [ref.output(i) for ref, i in node.input_refs()]
        if node.op in _SHAPE_KEEPING and ins:
            root = _shape_root(ins[0], memo, depth - 1)
        elif node.op in _ELEMENTWISE:
            shape = list(t.shape)
            # Inputs of the output's static shape must share a root; the others may only be
            # broadcast into it (dims 1, or fewer axes).
            full = [i for i in ins if list(i.shape) == shape]
            rest_trivial = all(all(d == 1 for d in i.shape) for i in ins if list(i.shape) != shape)
            roots = {_shape_root(i, memo, depth - 1) for i in full}
            if full and rest_trivial and len(roots) == 1 and None not in roots:
                root = roots.pop()
    memo[key] = root
    return root


def _same_shape(a, b):
    """Whether a and b have one run-time shape: equal static shapes and one shape root."""
    if list(a.shape) != list(b.shape):
        return False
    memo = {}
    ra = _shape_root(a, memo)
    return ra is not None and ra == _shape_root(b, memo)


def _sum_unknown_broadcasts(g, x, axes):
    """g (x's rank, each dim x's or broadcast from 1) summed over those of `axes` along which x's
    dim is 1 when it runs: each such axis of g is split into [x's dim, g's dim / x's dim] and the
    second part summed, which sums it all when x's dim is 1 and sums one element when the dims
    are equal. Branch-free, with constant axes, so it compiles (a reshape to run-time dims)."""
    room = MAX_RANK - len(x.shape)  # the split adds one dim per axis
    if room <= 0:
        return ops.reshape(g, ops.shape(x))  # guesses x's dims are g's: a reshape error if not
    xsh = ops.shape(x)
    for k in range(0, len(axes), room):
        gsh, chunk = ops.shape(g), axes[k:k + room]
        dims, summed = [], []
        for i, d in enumerate(x.shape):
            if i in chunk:
                xd = xsh[i]
                dims += [xd, gsh[i] // ops.maximum(xd, 1)]  # 0 // 1 for an empty axis
                summed.append(len(dims) - 1)
            else:
                dims.append(d if d is not None else gsh[i])
        g = ops.reduce_sum(ops.reshape(g, ops.stack(dims)), summed)
    return g


def broadcast_like(g, x):
    """g broadcast to x's shape: BroadcastTo when x's shape is static, else g * ones_like(x)
    (BroadcastTo needs its target shape at trace time)."""
    xs = static_shape(x)
    if xs is None:
        return g * ops.ones_like(x)
    if static_shape(g) == xs:
        return g
    return ops.broadcast_to(g, list(xs))
