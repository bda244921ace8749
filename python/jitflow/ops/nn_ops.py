"""jf.nn's functions: softmax / log_softmax on their op records, and TF's activation
compositions (nn.gelu, nn.silu / nn.swish, math.log_sigmoid, nn.l2_normalize, nn.dropout),
built from jf ops as TF builds them from its ops: they run eagerly, traced and compiled, fuse
inside a jit_scope and get their gradients from their parts."""
import numbers

from .._C import Tensor
from ..core.errors import InvalidArgumentError, _at_caller
from ..core.export import export
from . import basic_ops as _ops
from . import random_ops as _random
from .dispatch import OP, run, to_integer, to_tensor


def _is_floating(x):
    return x.dtype.is_floating


@export("nn.gelu")
def gelu(features, approximate=False, name=None):
    """0.5 x (1 + erf(x / sqrt(2))), or with approximate=True TF's tanh form
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    x = to_tensor(features)
    if not _is_floating(x):
        raise ValueError(f"`features.dtype` must be a floating point tensor.Received:features.dtype={x.dtype!r}")
    if approximate:
        coeff = _ops.cast(0.044715, x.dtype)
        inner = 0.7978845608028654 * (x + coeff * _ops.pow(x, _ops.cast(3.0, x.dtype)))
        return _ops.multiply(0.5 * x, 1.0 + _ops.tanh(inner), name=name)
    return _ops.multiply(0.5 * x, 1.0 + _ops.erf(x / _ops.cast(1.4142135623730951, x.dtype)), name=name)


@export("nn.silu", "nn.swish")
def silu(features, beta=1.0):
    """features * sigmoid(beta * features); beta is cast to the features' dtype (a tensor beta
    gets its gradient, TF's reduce_sum(dy x^2 s (1 - s)))."""
    x = to_tensor(features)
    b = _ops.cast(beta if isinstance(beta, Tensor) else _ops.convert_to_tensor(beta), x.dtype)
    return x * _ops.sigmoid(b * x)


swish = silu


@export("math.log_sigmoid")
def log_sigmoid(x, name=None):
    """TF's stable form -softplus(-x): no overflow for large |x|."""
    return _ops.negative(_ops.softplus(_ops.negative(to_tensor(x))), name=name)


@export("nn.l2_normalize", "math.l2_normalize", "linalg.l2_normalize")
def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x^2, axis), epsilon)), as TF (axis None: all axes; `dim` is TF's
    deprecated name for axis)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    x = to_tensor(x)
    square_sum = _ops.reduce_sum(_ops.square(x), axis, keepdims=True)
    # epsilon converts to x's dtype as TF converts it: 1e-12 is a TypeError for integers.
    inv_norm = _ops.rsqrt(_ops.maximum(square_sum, _ops.convert_to_tensor(epsilon, x.dtype)))
    return _ops.multiply(x, inv_norm, name=name)


def _noise_shape(x, noise_shape):
    """TF's _get_noise_shape: the shape of x, or noise_shape with its None dims taken from x."""
    if noise_shape is None:
        return _ops.shape(x)
    if isinstance(noise_shape, Tensor):
        return noise_shape
    dims = list(noise_shape)
    if len(dims) == len(x.shape):
        dims = [x.shape[i] if d is None and x.shape[i] is not None else d for i, d in enumerate(dims)]
    if any(d is None for d in dims):
        raise ValueError(f"`noise_shape` {list(noise_shape)} has unknown dims that x {x.shape} does not fill")
    return dims


@export("nn.dropout")
def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zeroes each element with probability `rate` (drawn with jf.random.uniform, kept where
    the draw >= rate) and scales the rest by 1 / (1 - rate), as TF's dropout_v2."""
    is_rate_number = isinstance(rate, numbers.Real)
    if is_rate_number and (rate < 0 or rate >= 1):
        raise ValueError(f"`rate` must be a scalar tensor or a float in the range [0, 1). Received: rate={rate}")
    x = to_tensor(x)
    if not _is_floating(x):
        raise ValueError(f"`x.dtype` must be a floating point tensor as `x` will be scaled. Received: "
                         f"x_dtype={x.dtype!r}")
    if is_rate_number and rate == 0:
        # TF's fast path: x itself, after drawing the op seed so the seed sequence is unchanged.
        _random.get_seed(seed)
        return x
    if isinstance(rate, Tensor):
        if len(rate.shape) != 0:
            raise ValueError(f"Shape {tuple(rate.shape)} must have rank 0")
        if rate.dtype != x.dtype:
            raise ValueError(f"`x.dtype` must be compatible with `rate.dtype`. Received: x.dtype={x.dtype!r} "
                             f"and rate.dtype={rate.dtype!r}")
        ret = x / (_ops.cast(1.0, x.dtype) - rate)
    elif is_rate_number:
        ret = x * _ops.convert_to_tensor(1.0 / (1.0 - float(rate)), x.dtype)
    else:
        raise ValueError(f"`rate` must be a scalar or scalar tensor. Received: rate={rate}")
    u = _random.uniform(_noise_shape(x, noise_shape), dtype=x.dtype, seed=seed)
    keep = u >= (rate if isinstance(rate, Tensor) else _ops.convert_to_tensor(float(rate), x.dtype))
    return _ops.where(keep, ret, _ops.zeros([], x.dtype), name=name)


__all__ = ["dropout", "gelu", "l2_normalize", "log_sigmoid", "silu", "swish"]


@export("nn.softmax")
def softmax(logits, axis=None, name=None):
    return _softmax("Softmax", logits, axis, name)


@export("nn.log_softmax")
def log_softmax(logits, axis=None, name=None):
    return _softmax("LogSoftmax", logits, axis, name)


def _softmax(op, logits, axis, name):
    x = to_tensor(logits)
    r = len(x.shape)
    if axis is not None:
        axis = to_integer(axis)
        if not -r <= axis < r:  # TF's check (an axis wrapped modulo the rank is a silent wrong answer)
            raise InvalidArgumentError(_at_caller(f"`dim` must be in the range [{-r}, {r}) where {r} is the number of "
                                                   f"dimensions in the input. Received: dim={axis}"))
    if axis is None or axis == -1 or axis == r - 1:
        return run(OP[op], (x,), None, name)
    # Like TF: move the axis last, normalise, move it back.
    axis = axis % r
    perm = list(range(r))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return _ops.transpose(run(OP[op], (_ops.transpose(x, perm),), None, None), perm, name=name)
