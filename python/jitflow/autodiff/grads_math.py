"""Gradients of elementwise math, reductions, matmul and softmax (TF's math_grad.py and
nn_grad.py formulas, built from jf ops)."""
import math

from ..ops import basic_ops as ops
from .registry import register_gradient
from .shapes import broadcast_like, is_float, reduction_axes, reshape_like, static_shape, unbroadcast

# Ops without a gradient say so, and why, in their records (cpp/ir/ops.def).


def _float_only(fn):
    """Integer inputs get no gradient (TF backpropagates through float tensors only)."""
    def wrapped(op, *grads):
        if not all(is_float(t) for t in op.outputs if t is not None):
            return [None] * len(op.inputs)
        return [g if is_float(x) else None for g, x in zip(fn(op, *grads), op.inputs)]
    wrapped.__name__ = fn.__name__
    return wrapped


def _grad(op_type):
    def wrap(fn):
        return register_gradient(op_type)(_float_only(fn))
    return wrap


# ---- elementwise unary -------------------------------------------------------------------
@_grad("Identity")
def _identity_grad(op, g):
    return [g]


@_grad("Neg")
def _neg_grad(op, g):
    return [-g]


@_grad("Abs")
def _abs_grad(op, g):
    x = op.inputs[0]
    return [ops.where(x > 0, g, ops.where(x < 0, -g, 0.0))]


@_grad("Square")
def _square_grad(op, g):
    return [g * (2.0 * ops.conj(op.inputs[0]))]


@_grad("Relu")
def _relu_grad(op, g):
    return [ops.where(op.outputs[0] > 0, g, 0.0)]


@_grad("Exp")
def _exp_grad(op, g):
    return [g * ops.conj(op.outputs[0])]


@_grad("Log")
def _log_grad(op, g):
    return [g / ops.conj(op.inputs[0])]


@_grad("Log1p")
def _log1p_grad(op, g):
    return [g / (1.0 + ops.conj(op.inputs[0]))]


@_grad("Tanh")
def _tanh_grad(op, g):
    y = ops.conj(op.outputs[0])
    return [g * (1.0 - y * y)]


@_grad("Sigmoid")
def _sigmoid_grad(op, g):
    y = ops.conj(op.outputs[0])
    return [g * (y * (1.0 - y))]


@_grad("Sqrt")
def _sqrt_grad(op, g):
    return [g * 0.5 / ops.conj(op.outputs[0])]


@_grad("Rsqrt")
def _rsqrt_grad(op, g):
    y = ops.conj(op.outputs[0])
    return [g * (-0.5 * y * y * y)]


@_grad("Sin")
def _sin_grad(op, g):
    return [g * ops.cos(ops.conj(op.inputs[0]))]


@_grad("Cos")
def _cos_grad(op, g):
    return [-g * ops.sin(ops.conj(op.inputs[0]))]


@_grad("Erf")
def _erf_grad(op, g):
    x = op.inputs[0]
    return [g * (2.0 / math.sqrt(math.pi)) * ops.exp(-ops.square(x))]


@_grad("Expm1")
def _expm1_grad(op, g):
    return [g * ops.exp(ops.conj(op.inputs[0]))]


@_grad("Tan")
def _tan_grad(op, g):
    return [g * ops.square(1.0 / ops.cos(ops.conj(op.inputs[0])))]


@_grad("Atan")
def _atan_grad(op, g):
    return [g / (1.0 + ops.square(ops.conj(op.inputs[0])))]


@_grad("Asin")
def _asin_grad(op, g):
    return [g * ops.rsqrt(1.0 - ops.square(ops.conj(op.inputs[0])))]


@_grad("Acos")
def _acos_grad(op, g):
    return [-g * ops.rsqrt(1.0 - ops.square(ops.conj(op.inputs[0])))]


@_grad("Sinh")
def _sinh_grad(op, g):
    return [g * ops.cosh(ops.conj(op.inputs[0]))]


@_grad("Cosh")
def _cosh_grad(op, g):
    return [g * ops.sinh(ops.conj(op.inputs[0]))]


@_grad("Asinh")
def _asinh_grad(op, g):
    return [g / ops.cosh(ops.conj(op.outputs[0]))]


@_grad("Acosh")
def _acosh_grad(op, g):
    return [g / ops.sinh(ops.conj(op.outputs[0]))]


@_grad("Atanh")
def _atanh_grad(op, g):
    return [g / (1.0 - ops.square(ops.conj(op.inputs[0])))]


@_grad("Erfc")
def _erfc_grad(op, g):
    x = op.inputs[0]
    return [g * (-2.0 / math.sqrt(math.pi)) * ops.exp(-ops.square(x))]


def _trigamma(x):
    """polygamma(1, x) from jf ops (no Polygamma op yet): the reflection
    pi^2 / sin^2(pi x) - psi1(1 - x) below 0.5, the recurrence psi1(y) = psi1(y + 6) +
    sum 1 / (y + k)^2, and the asymptotic series at y + 6."""
    neg = x < 0.5
    y = ops.where(neg, 1.0 - x, x)
    acc = 0.0
    for k in range(6):
        acc = acc + 1.0 / ops.square(y + float(k))
    z = y + 6.0
    r = 1.0 / ops.square(z)
    series = (1.0 + (0.5 + (1.0 / 6 - r * (1.0 / 30 - r * (1.0 / 42 - r / 30))) / z) / z) / z
    psi1 = series + acc
    xs = ops.where(neg, x, 0.25)
    return ops.where(neg, math.pi ** 2 / ops.square(ops.sin(math.pi * xs)) - psi1, psi1)


@_grad("Erfinv")
def _erfinv_grad(op, g):
    return [g * (math.sqrt(math.pi) / 2) * ops.exp(ops.square(op.outputs[0]))]


@_grad("Lgamma")
def _lgamma_grad(op, g):
    return [g * ops.digamma(op.inputs[0])]


@_grad("Digamma")
def _digamma_grad(op, g):
    return [g * _trigamma(op.inputs[0])]


@_grad("Sign")
def _sign_grad(op, g):
    return [ops.zeros_like(op.inputs[0])]


@_grad("Reciprocal")
def _reciprocal_grad(op, g):
    y = ops.conj(op.outputs[0])
    return [-g * y * y]


@register_gradient("Cast")
def _cast_grad(op, g):
    x, y = op.inputs[0], op.outputs[0]
    if is_float(x) and is_float(y):
        return [ops.cast(g, x.dtype)]
    return [None]


# ---- elementwise binary (numpy broadcasting) ---------------------------------------------
@_grad("AddV2")
def _add_grad(op, g):
    x, y = op.inputs
    return [unbroadcast(g, x, y), unbroadcast(g, y, x)]


@_grad("Sub")
def _sub_grad(op, g):
    x, y = op.inputs
    return [unbroadcast(g, x, y), unbroadcast(-g, y, x)]


@_grad("Mul")
def _mul_grad(op, g):
    x, y = op.inputs
    cx, cy = ops.conj(x), ops.conj(y)  # complex: TF's convention (a real tensor is its own conj)
    return [unbroadcast(g * cy, x, y), unbroadcast(cx * g, y, x)]


@_grad("RealDiv")
def _realdiv_grad(op, g):
    x, y = op.inputs
    cx, cy = ops.conj(x), ops.conj(y)
    return [unbroadcast(g / cy, x, y), unbroadcast(g * (-cx / cy / cy), y, x)]


@_grad("Pow")
def _pow_grad(op, g):
    x, y = op.inputs
    z = op.outputs[0]
    if x.dtype.is_complex:  # TF: conjugates, and log(x) wherever x != 0
        x, y, z = ops.conj(x), ops.conj(y), ops.conj(z)
    gx = unbroadcast(g * y * ops.pow(x, y - 1.0), op.inputs[0], op.inputs[1])
    positive = ops.not_equal(x, 0.0) if x.dtype.is_complex else x > 0
    # log(x) where x > 0, else 0 (TF's choice); the inner where keeps log's own gradient finite.
    log_x = ops.where(positive, ops.log(ops.where(positive, x, 1.0)), 0.0)
    gy = unbroadcast(g * z * log_x, op.inputs[1], op.inputs[0])
    return [gx, gy]


@_grad("Atan2")
def _atan2_grad(op, g):
    y, x = op.inputs
    inv = g / (ops.square(x) + ops.square(y))
    return [unbroadcast(x * inv, y, x), unbroadcast(-y * inv, x, y)]


@_grad("SquaredDifference")
def _squared_difference_grad(op, g):
    x, y = op.inputs
    gx = (2.0 * g) * (x - y)
    return [unbroadcast(gx, x, y), unbroadcast(-gx, y, x)]


@_grad("DivNoNan")
def _div_no_nan_grad(op, g):
    x, y = op.inputs
    cx, cy = ops.conj(x), ops.conj(y)
    gx = ops.divide_no_nan(g, cy)
    gy = g * ops.divide_no_nan(ops.divide_no_nan(-cx, cy), cy)
    return [unbroadcast(gx, x, y), unbroadcast(gy, y, x)]


@_grad("MulNoNan")
def _mul_no_nan_grad(op, g):
    x, y = op.inputs
    return [unbroadcast(ops.multiply_no_nan(g, y), x, y), unbroadcast(ops.multiply_no_nan(x, g), y, x)]


def _xdivy(x, y):
    """0 where x == 0, else x / y (TF's Xdivy)."""
    zero = ops.equal(x, 0.0)
    return ops.where(zero, 0.0, x / ops.where(zero, 1.0, y))


@_grad("Xlogy")
def _xlogy_grad(op, g):
    x, y = op.inputs
    cx, cy = ops.conj(x), ops.conj(y)
    not_zero_x = ops.cast(ops.not_equal(cx, 0.0), x.dtype)
    return [unbroadcast(ops.xlogy(not_zero_x, cy) * g, x, y), unbroadcast(_xdivy(cx, cy) * g, y, x)]


@_grad("Xlog1py")
def _xlog1py_grad(op, g):
    x, y = op.inputs
    cx, cy = ops.conj(x), ops.conj(y)
    not_zero_x = ops.cast(ops.not_equal(cx, 0.0), x.dtype)
    return [unbroadcast(ops.xlog1py(not_zero_x, cy) * g, x, y), unbroadcast(_xdivy(cx, cy + 1.0) * g, y, x)]


@_grad("NextAfter")
def _nextafter_grad(op, g):
    x, y = op.inputs
    return [unbroadcast(g, x, y), unbroadcast(ops.zeros_like(g), y, x)]


@_grad("Maximum")
def _maximum_grad(op, g):
    x, y = op.inputs
    xmask = ops.greater_equal(x, y)
    return [unbroadcast(ops.where(xmask, g, 0.0), x, y), unbroadcast(ops.where(xmask, 0.0, g), y, x)]


@_grad("Minimum")
def _minimum_grad(op, g):
    x, y = op.inputs
    xmask = ops.less_equal(x, y)
    return [unbroadcast(ops.where(xmask, g, 0.0), x, y), unbroadcast(ops.where(xmask, 0.0, g), y, x)]


@_grad("FloorMod")
def _floormod_grad(op, g):
    x, y = op.inputs
    return [unbroadcast(g, x, y), unbroadcast(-g * ops.floordiv(x, y), y, x)]


@register_gradient("SelectV2")
def _select_grad(op, g):
    c, x, y = op.inputs
    if not is_float(op.outputs[0]):
        return [None, None, None]
    return [None, unbroadcast(ops.where(c, g, 0.0), x, c, y), unbroadcast(ops.where(c, 0.0, g), y, c, x)]


@_grad("AddN")
def _addn_grad(op, g):
    return [g] * len(op.inputs)


# ---- matmul ------------------------------------------------------------------------------
def _matmul_grads(a, b, g, ta, tb, skip, flag="transpose"):
    """(grad a, grad b) of matmul(a, b, ta, tb), TF's four cases; None for skipped inputs.
    `flag` is the product's flag: a transpose (MatMul, whose complex gradient conjugates the
    operands first) or an adjoint (BatchMatMulV2)."""
    if flag == "transpose":
        a, b = ops.conj(a), ops.conj(b)
    fa, fb = flag + "_a", flag + "_b"

    def mm(x, y, xa=False, yb=False):
        return ops.matmul(x, y, **{fa: xa, fb: yb})
    if not ta and not tb:
        ga = lambda: mm(g, b, yb=True)
        gb = lambda: mm(a, g, xa=True)
    elif not ta and tb:
        ga = lambda: mm(g, b)
        gb = lambda: mm(g, a, xa=True)
    elif ta and not tb:
        ga = lambda: mm(b, g, yb=True)
        gb = lambda: mm(a, g)
    else:
        ga = lambda: mm(b, g, xa=True, yb=True)
        gb = lambda: mm(g, a, xa=True, yb=True)
    return (None if 0 in skip else ga()), (None if 1 in skip else gb())


@_grad("MatMul")
def _matmul_grad(op, g):
    a, b = op.inputs
    return list(_matmul_grads(a, b, g, op.get_attr("transpose_a", False),
                              op.get_attr("transpose_b", False), op.skip_input_indices))


@_grad("BatchMatMulV2")
def _batch_matmul_grad(op, g):
    a, b = op.inputs
    ga, gb = _matmul_grads(a, b, g, op.get_attr("adj_x", False), op.get_attr("adj_y", False),
                           op.skip_input_indices, flag="adjoint")
    # Batch dims broadcast (a [B, T, k] @ kernel [k, u]): sum them back.
    return [unbroadcast(ga, a), unbroadcast(gb, b)]


# ---- reductions --------------------------------------------------------------------------
def _keepdims_grad(op, g):
    """The output gradient reshaped to the input's rank (reduced axes of size 1), and the
    reduced axes."""
    x, axis_t = op.inputs
    axes = reduction_axes(op, x, axis_t)
    if op.get_attr("keep_dims", False):
        return g, axes
    xs = static_shape(x)
    if xs is not None:
        return ops.reshape(g, [1 if i in axes else d for i, d in enumerate(xs)]), axes
    for a in axes:
        g = ops.expand_dims(g, a)
    return g, axes


@_grad("Sum")
def _sum_grad(op, g):
    x = op.inputs[0]
    gk, _ = _keepdims_grad(op, g)
    return [broadcast_like(gk, x), None]


@_grad("Mean")
def _mean_grad(op, g):
    x, y = op.inputs[0], op.outputs[0]
    gk, axes = _keepdims_grad(op, g)
    xs = static_shape(x)
    if xs is not None:
        count = 1
        for a in axes:
            count *= xs[a]
        scale = 1.0 / max(count, 1)
    else:
        dt = x.dtype
        scale = (ops.cast(ops.maximum(ops.reduce_prod(ops.shape(y)), 1), dt) /
                 ops.cast(ops.maximum(ops.reduce_prod(ops.shape(x)), 1), dt))
    return [broadcast_like(gk * scale, x), None]


def _minmax_grad(op, g):
    x = op.inputs[0]
    gk, axes = _keepdims_grad(op, g)
    yk = reshape_like(op.outputs[0], gk)
    indicators = ops.cast(ops.equal(x, yk), x.dtype)
    count = ops.reduce_sum(indicators, axes, keepdims=True)
    return [indicators / count * gk, None]


register_gradient("Max")(_float_only(_minmax_grad))
register_gradient("Min")(_float_only(_minmax_grad))


@_grad("Prod")
def _prod_grad(op, g):
    # d prod / d x_i = product of the others. Without dividing by zero: with no zero in the
    # slice it is prod / x_i; with exactly one zero, only that element gets the product of
    # the non-zeros; with two or more zeros every element gets 0.
    x = op.inputs[0]
    gk, axes = _keepdims_grad(op, g)
    zero = ops.equal(x, 0.0)
    nonzero = ops.where(zero, 1.0, x)
    prod_nz = ops.reduce_prod(nonzero, axes, keepdims=True)
    zeros = ops.reduce_sum(ops.cast(zero, x.dtype), axes, keepdims=True)
    one_zero = ops.logical_and(zero, ops.equal(zeros, 1.0))
    dx = ops.where(ops.equal(zeros, 0.0), prod_nz / nonzero, ops.where(one_zero, prod_nz, 0.0))
    return [ops.conj(dx) * gk, None]


# ---- softmax -----------------------------------------------------------------------------
@_grad("Softmax")
def _softmax_grad(op, g):
    y = op.outputs[0]
    return [(g - ops.reduce_sum(g * y, -1, keepdims=True)) * y]


@_grad("LogSoftmax")
def _log_softmax_grad(op, g):
    softmax = ops.exp(op.outputs[0])
    return [g - ops.reduce_sum(g, -1, keepdims=True) * softmax]

