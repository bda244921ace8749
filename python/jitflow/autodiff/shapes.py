"""Shape helpers for gradient functions: static shapes when known, jf.shape(...) otherwise,
constant values of axis/perm inputs, and reducing a broadcast gradient back to its input."""
import numpy as np

from ..ops import basic_ops as ops
from ..ops.dispatch import const_value


def is_float(t):
    return t is not None and t.dtype.is_floating


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


def unbroadcast(grad, x):
    """Sums grad over the axes along which x was broadcast, so the result has x's shape. An axis
    whose dim x does not know when traced may or may not have been broadcast (x's dim 1 at run
    time): it is summed over a split that the run-time shapes decide (_sum_unknown_broadcasts),
    as TF decides with BroadcastGradientArgs."""
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
    if unknown:
        out = _sum_unknown_broadcasts(out, x, unknown)
    if static_shape(x) is not None and static_shape(out) != static_shape(x):
        out = ops.reshape(out, list(static_shape(x)))
    return out


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
