"""Shape helpers for gradient functions: static shapes when known, jf.shape(...) otherwise,
constant values of axis/perm inputs, and reducing a broadcast gradient back to its input."""
import numpy as np

from ..ops import basic_ops as ops
from ..ops.dispatch import const_value


def is_float(t):
    return t is not None and t.dtype.is_floating


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
    """Sums grad over the axes along which x was broadcast, so the result has x's shape."""
    if grad is None:
        return None
    xs, gs = tuple(x.shape), tuple(grad.shape)
    if xs == gs and None not in xs:
        return grad
    lead = len(gs) - len(xs)
    if lead < 0:
        return reshape_like(grad, x)
    axes = list(range(lead))
    kept_axes = False
    ambiguous = False
    for i, d in enumerate(xs):
        gd = gs[lead + i]
        if d == 1 and gd != 1:
            axes.append(lead + i)
            kept_axes = True
        elif d is None and gd != 1:
            # Unknown at trace time: assume equal dims; the reshape below makes a wrong guess
            # (x's dim is 1 at run time) an error instead of a silently broadcast gradient.
            ambiguous = True
    out = ops.reduce_sum(grad, axes) if axes else grad
    if kept_axes or ambiguous or (static_shape(out) is None and static_shape(x) is not None):
        out = ops.reshape(out, shape_of(x))
    return out


def broadcast_like(g, x):
    """g broadcast to x's shape: BroadcastTo when x's shape is static, else g * ones_like(x)
    (BroadcastTo needs its target shape at trace time)."""
    xs = static_shape(x)
    if xs is None:
        return g * ops.ones_like(x)
    if static_shape(g) == xs:
        return g
    return ops.broadcast_to(g, list(xs))
