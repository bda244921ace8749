"""keras.ops, Keras 3's backend-neutral, numpy-shaped op namespace, on jitflow's ops: numpy's
argument names and defaults (axis=None reduces everything, split takes sections or indices,
concatenate joins along axis 0), Keras's activation defaults (gelu approximate=True,
leaky_relu slope 0.2), and keras.ops.nn / linalg / numpy as views of the same functions. A
Keras op not written here raises AttributeError naming it."""
import builtins
import math
import types

import numpy as np

from ..autodiff.custom_gradient import custom_gradient, stop_gradient
from ..core import dtypes as _dt
from ..core.tensor import Tensor
from ..ops import array_ops as _array
from ..ops import basic_ops as _b
from ..ops import decomp_ops as _decomp
from ..ops import einsum_ops as _einsum
from ..ops import linalg_ops as _linalg
from ..ops import losses_clipping as _clip
from ..ops import nn_ops as _nn
from ..ops import scatter_ops as _scatter
from ..ops import sort_ops as _sort
from ..ops import stats_ops as _stats
from ..tracing import control_flow as _cf
from .backend_config import floatx


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    return _b.convert_to_tensor(x, dtype=dtype)


def convert_to_numpy(x):
    return _b.convert_to_tensor(x).numpy() if not isinstance(x, np.ndarray) else x


def is_tensor(x):
    return isinstance(x, Tensor)


def _t(x):
    return x if isinstance(x, Tensor) else _b.convert_to_tensor(x)


def _pair(a, b):
    """Both operands as tensors, a Python number taking the other operand's dtype (numpy's weak
    scalars), so 2 * int32 stays int32 and 0.5 * float64 stays float64."""
    if isinstance(a, Tensor) and not isinstance(b, Tensor) and np.ndim(b) == 0:
        return a, _b.convert_to_tensor(b, a.dtype if not (isinstance(b, float) and a.dtype.is_integer)
                                       else _dt.float32)
    if isinstance(b, Tensor) and not isinstance(a, Tensor) and np.ndim(a) == 0:
        return _b.convert_to_tensor(a, b.dtype if not (isinstance(a, float) and b.dtype.is_integer)
                                    else _dt.float32), b
    a, b = _t(a), _t(b)
    if a.dtype != b.dtype:  # numpy-style promotion to the wider float
        dt = _dt.as_dtype(np.result_type(a.dtype.as_numpy_dtype, b.dtype.as_numpy_dtype))
        a, b = _b.cast(a, dt), _b.cast(b, dt)
    return a, b


def _binary(fn):
    def op(x1, x2):
        return fn(*_pair(x1, x2))
    op.__name__ = fn.__name__
    return op


def _float(x):
    x = _t(x)
    return x if x.dtype.is_floating else _b.cast(x, floatx())


def _unary_float(fn):
    def op(x):
        return fn(_float(x))
    op.__name__ = fn.__name__
    return op


add, subtract, multiply = _binary(_b.add), _binary(_b.subtract), _binary(_b.multiply)
maximum, minimum, power = _binary(_b.maximum), _binary(_b.minimum), _binary(_b.pow)
equal, not_equal = _binary(_b.equal), _binary(_b.not_equal)
greater, greater_equal, less, less_equal = (_binary(_b.greater), _binary(_b.greater_equal), _binary(_b.less),
                                            _binary(_b.less_equal))
floor_divide, mod = _binary(_b.floordiv), _binary(_b.floormod)
logical_and, logical_or, logical_xor = _binary(_b.logical_and), _binary(_b.logical_or), _binary(_b.logical_xor)
arctan2 = _binary(lambda a, b: _b.atan2(_float(a), _float(b)))


def divide(x1, x2):
    a, b = _pair(x1, x2)
    return _b.divide(_float(a), _float(b))


true_divide = divide


def divide_no_nan(x1, x2):
    a, b = _pair(x1, x2)
    return _b.divide_no_nan(_float(a), _float(b)) if hasattr(_b, "divide_no_nan") else _b.where(
        _b.equal(b, 0), _b.zeros_like(_float(a)), _b.divide(_float(a), _float(b)))


exp, log, log1p, expm1, sqrt, rsqrt = map(_unary_float, (_b.exp, _b.log, _b.log1p, _b.expm1, _b.sqrt, _b.rsqrt))
sin, cos, tan, tanh, sinh, cosh = map(_unary_float, (_b.sin, _b.cos, _b.tan, _b.tanh, _b.sinh, _b.cosh))
arcsin, arccos, arctan = map(_unary_float, (_b.asin, _b.acos, _b.atan))
arcsinh, arccosh, arctanh = map(_unary_float, (_b.asinh, _b.acosh, _b.atanh))
erf, erfinv, reciprocal = _unary_float(_b.erf), _unary_float(_b.erfinv), _unary_float(_b.reciprocal)
log2 = _unary_float(lambda x: _b.log(x) / _b.convert_to_tensor(math.log(2.0), x.dtype))
log10 = _unary_float(lambda x: _b.log(x) / _b.convert_to_tensor(math.log(10.0), x.dtype))


def abs(x):
    return _b.abs(_t(x))


absolute = abs


def square(x):
    return _b.square(_t(x))


def negative(x):
    return _b.negative(_t(x))


def sign(x):
    return _b.sign(_t(x))


def floor(x):
    return _b.floor(_float(x))


def ceil(x):
    return _b.ceil(_float(x))


def round(x, decimals=0):
    x = _t(x)
    if decimals == 0:
        return _b.round(x)
    scale = _b.convert_to_tensor(10.0 ** decimals, x.dtype)
    return _b.round(x * scale) / scale


def logical_not(x):
    return _b.logical_not(_t(x))


def isnan(x):
    return _b.is_nan(_float(x))


def isinf(x):
    return _b.is_inf(_float(x))


def isfinite(x):
    return _b.is_finite(_float(x))


def clip(x, x_min, x_max):
    x = _t(x)
    return _clip.clip_by_value(x, _b.cast(x_min, x.dtype), _b.cast(x_max, x.dtype))


def where(condition, x1=None, x2=None):
    if x1 is None and x2 is None:
        raise NotImplementedError("jitflow's keras.ops.where does not implement the one-argument (nonzero) form yet")
    a, b = _pair(x1, x2)
    return _b.where(_b.cast(condition, _dt.bool), a, b)


def cast(x, dtype):
    return _b.cast(x, dtype)


def _reduce(fn, flatten_ints=False):
    def op(x, axis=None, keepdims=False):
        x = _t(x)
        if flatten_ints and not x.dtype.is_floating:
            x = _b.cast(x, floatx())
        return fn(x, axis=axis, keepdims=keepdims)
    op.__name__ = fn.__name__
    return op


sum, prod = _reduce(_b.reduce_sum), _reduce(_b.reduce_prod)
mean = _reduce(_b.reduce_mean, flatten_ints=True)
max, min = _reduce(_b.reduce_max), _reduce(_b.reduce_min)
amax, amin = max, min
var, std = _reduce(_stats.reduce_variance, flatten_ints=True), _reduce(_stats.reduce_std, flatten_ints=True)
logsumexp = _reduce(_stats.reduce_logsumexp, flatten_ints=True)


def any(x, axis=None, keepdims=False):
    return _stats.reduce_any(_b.cast(x, _dt.bool), axis=axis, keepdims=keepdims)


def all(x, axis=None, keepdims=False):
    return _stats.reduce_all(_b.cast(x, _dt.bool), axis=axis, keepdims=keepdims)


def count_nonzero(x, axis=None):
    return _stats.count_nonzero(_t(x), axis=axis)


def _flat_or(x, axis):
    x = _t(x)
    return (_b.reshape(x, [-1]), 0) if axis is None else (x, axis)


def argmax(x, axis=None, keepdims=False):
    x, ax = _flat_or(x, axis)
    out = _b.argmax(x, axis=ax, output_type=_dt.int32)
    return _b.expand_dims(out, ax) if keepdims and axis is not None else out


def argmin(x, axis=None, keepdims=False):
    x, ax = _flat_or(x, axis)
    out = _b.argmin(x, axis=ax, output_type=_dt.int32)
    return _b.expand_dims(out, ax) if keepdims and axis is not None else out


def cumsum(x, axis=None, dtype=None):
    x, ax = _flat_or(x, axis)
    return _sort.cumsum(x if dtype is None else _b.cast(x, dtype), axis=ax)


def cumprod(x, axis=None, dtype=None):
    x, ax = _flat_or(x, axis)
    return _sort.cumprod(x if dtype is None else _b.cast(x, dtype), axis=ax)


def sort(x, axis=-1):
    return _sort.sort(_t(x), axis=axis)


def argsort(x, axis=-1):
    return _sort.argsort(_t(x), axis=axis, stable=True)


def top_k(x, k, sorted=True):
    return _sort.top_k(_t(x), k=k, sorted=sorted)


def searchsorted(sorted_sequence, values, side="left"):
    return _sort.searchsorted(_t(sorted_sequence), _t(values), side=side)


def concatenate(xs, axis=0):
    return _b.concat([_t(x) for x in xs], axis=axis)


def stack(x, axis=0):
    return _b.stack([_t(v) for v in x], axis=axis)


def unstack(x, num=None, axis=0):
    return _array.unstack(_t(x), num=num, axis=axis)


def split(x, indices_or_sections, axis=0):
    """numpy's split: a number of equal sections, or the indices where new pieces start."""
    x = _t(x)
    if isinstance(indices_or_sections, int):
        return _b.split(x, indices_or_sections, axis=axis)
    n = x.shape[axis]
    bounds = [0, *[int(i) for i in indices_or_sections], n]
    return _b.split(x, [b_ - a_ for a_, b_ in zip(bounds[:-1], bounds[1:])], axis=axis)


def reshape(x, newshape):
    return _b.reshape(_t(x), [newshape] if isinstance(newshape, int) else list(newshape))


def ravel(x):
    return _b.reshape(_t(x), [-1])


def transpose(x, axes=None):
    return _b.transpose(_t(x), axes)


def swapaxes(x, axis1, axis2):
    x = _t(x)
    perm = list(range(len(x.shape)))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return _b.transpose(x, perm)


def moveaxis(x, source, destination):
    x = _t(x)
    rank = len(x.shape)
    perm = [a for a in range(rank) if a != source % rank]
    perm.insert(destination % rank, source % rank)
    return _b.transpose(x, perm)


def expand_dims(x, axis):
    return _b.expand_dims(_t(x), axis)


def squeeze(x, axis=None):
    return _b.squeeze(_t(x), None if axis is None else ([axis] if isinstance(axis, int) else list(axis)))


def tile(x, repeats):
    return _array.tile(_t(x), [repeats] if isinstance(repeats, int) else list(repeats))


def repeat(x, repeats, axis=None):
    return _scatter.repeat(_t(x), repeats, axis=axis)


def roll(x, shift, axis=None):
    flat, ax = _flat_or(x, axis)
    out = _array.roll(flat, shift, ax)
    return _b.reshape(out, _b.shape(_t(x))) if axis is None else out


def flip(x, axis=None):
    x = _t(x)
    axes = list(range(len(x.shape))) if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    return _array.reverse(x, axes)


def broadcast_to(x, shape):
    return _b.broadcast_to(_t(x), shape)


def pad(x, pad_width, mode="constant", constant_values=None):
    x = _t(x)
    widths = [[int(p), int(p)] if np.ndim(p) == 0 else [int(v) for v in p] for p in pad_width]
    if len(widths) == 1 and len(x.shape) > 1:
        widths = widths * len(x.shape)
    return _array.pad(x, widths, mode=mode.upper(), constant_values=constant_values or 0)


def take(x, indices, axis=None):
    x, ax = _flat_or(x, axis)
    return _array.gather(x, _t(indices), axis=ax)


def take_along_axis(x, indices, axis=None):
    """x's elements at `indices` along axis, the other axes indexed by position (numpy's)."""
    x, ax = _flat_or(x, axis)
    idx = _b.cast(_t(indices), _dt.int64)
    rank = len(x.shape)
    ax %= rank
    idx = _b.broadcast_to(idx, _b.concat([_b.shape(x, out_type=_dt.int64)[:ax], _b.shape(idx, out_type=_dt.int64)[ax:ax + 1],
                                          _b.shape(x, out_type=_dt.int64)[ax + 1:]], 0))
    grids = _array.meshgrid(*[_b.range(_b.shape(idx, out_type=_dt.int64)[d]) for d in range(rank)], indexing="ij")
    coords = [idx if d == ax else grids[d] for d in range(rank)]
    return _scatter.gather_nd(x, _b.stack(coords, axis=-1))


def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    return _array.one_hot(_b.cast(x, _dt.int64), num_classes, axis=axis, dtype=dtype or floatx())


def zeros(shape, dtype=None):
    return _b.zeros(shape, dtype or floatx())


def ones(shape, dtype=None):
    return _b.ones(shape, dtype or floatx())


def full(shape, fill_value, dtype=None):
    return _b.fill(shape, _b.convert_to_tensor(fill_value, dtype or floatx()))


def zeros_like(x, dtype=None):
    return _b.zeros_like(_t(x), dtype=dtype)


def ones_like(x, dtype=None):
    return _b.ones_like(_t(x), dtype=dtype)


def full_like(x, fill_value, dtype=None):
    x = _t(x)
    return _b.fill(_b.shape(x), _b.convert_to_tensor(fill_value, dtype or x.dtype))


def eye(N, M=None, k=0, dtype=None):
    return _b.cast(_b.equal(_offsets(N, N if M is None else M), k), dtype or floatx())


def identity(n, dtype=None):
    return _array.eye(n, dtype=dtype or floatx())


def arange(start, stop=None, step=1, dtype=None):
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = "int32" if builtins.all(isinstance(v, int) for v in (start, stop, step)) else floatx()
    return _b.range(start, stop, step, dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    if not endpoint:
        stop = start + (stop - start) * (num - 1) / num
    out = _array.linspace(_b.cast(start, floatx()), _b.cast(stop, floatx()), num, axis=axis)
    return out if dtype is None else _b.cast(out, dtype)


def meshgrid(*x, indexing="xy"):
    return _array.meshgrid(*[_t(v) for v in x], indexing=indexing)


def matmul(x1, x2):
    return _b.matmul(*_pair(x1, x2))


def dot(x1, x2):
    a, b = _pair(x1, x2)
    if len(a.shape) == 0 or len(b.shape) == 0:
        return a * b
    if len(b.shape) == 1:
        return _einsum.tensordot(a, b, [[len(a.shape) - 1], [0]])
    return _einsum.tensordot(a, b, [[len(a.shape) - 1], [len(b.shape) - 2]])


def tensordot(x1, x2, axes=2):
    return _einsum.tensordot(*_pair(x1, x2), axes)


def einsum(subscripts, *operands):
    return _einsum.einsum(subscripts, *[_t(o) for o in operands])


def outer(x1, x2):
    a, b = _pair(x1, x2)
    return _b.reshape(a, [-1, 1]) * _b.reshape(b, [1, -1])


def trace(x, offset=0, axis1=0, axis2=1):
    x = _t(x)
    rank = len(x.shape)
    a1, a2 = axis1 % rank, axis2 % rank
    x = _b.transpose(x, [a for a in range(rank) if a not in (a1, a2)] + [a1, a2])
    return _b.reduce_sum(_linalg.diag_part(x, k=offset), axis=-1)


def norm(x, ord=None, axis=None, keepdims=False):
    x = _float(x)
    if ord is None:
        ord = "euclidean"
    return _linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def shape(x):
    """The static shape as a tuple, a scalar tensor where a dim is unknown."""
    x = _t(x)
    dims = _b.shape(x)
    return tuple(d if d is not None else dims[i] for i, d in enumerate(x.shape))


def ndim(x):
    return len(_t(x).shape)


def size(x):
    return _array.size(_t(x))


def dtype(x):
    return _t(x).dtype.name


def relu(x):
    return _b.relu(_t(x))


def relu6(x):
    return _b.relu6(_t(x))


def sigmoid(x):
    return _b.sigmoid(_float(x))


def softmax(x, axis=-1):
    return _nn.softmax(_float(x), axis=axis)


def log_softmax(x, axis=-1):
    return _nn.log_softmax(_float(x), axis=axis)


def softplus(x):
    return _b.softplus(_float(x))


def softsign(x):
    return _b.softsign(_float(x))


def silu(x):
    return _nn.silu(_float(x))


swish = silu


def gelu(x, approximate=True):
    return _nn.gelu(_float(x), approximate=approximate)


def elu(x, alpha=1.0):
    x = _float(x)
    return _b.where(x > 0, x, _b.convert_to_tensor(alpha, x.dtype) * _b.expm1(_b.minimum(x, 0)))


def selu(x):
    return _b.selu(_float(x))


def leaky_relu(x, negative_slope=0.2):
    return _b.leaky_relu(_float(x), alpha=negative_slope)


def log_sigmoid(x):
    return _nn.log_sigmoid(_float(x))


def hard_sigmoid(x):
    x = _float(x)
    return _clip.clip_by_value(x / 6.0 + 0.5, 0.0, 1.0)


def moments(x, axes, keepdims=False, synchronized=False):
    return _stats.moments(_float(x), axes, keepdims=keepdims)


def normalize(x, axis=-1, order=2, epsilon=None):
    if order != 2:
        raise NotImplementedError("jitflow's keras.ops.normalize implements order=2 only")
    return _nn.l2_normalize(_float(x), axis=axis, epsilon=epsilon or 1e-12)


def binary_crossentropy(target, output, from_logits=False):
    """Elementwise, as Keras's: -(t log o + (1 - t) log(1 - o)), o clipped to [1e-7, 1 - 1e-7]."""
    t, o = _float(target), _float(output)
    if from_logits:
        return _b.relu(o) - o * t + _b.log1p(_b.exp(-_b.abs(o)))
    eps = 1e-7
    o = _clip.clip_by_value(o, eps, 1.0 - eps)
    return -(t * _b.log(o) + (1.0 - t) * _b.log(1.0 - o))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    t, o = _float(target), _float(output)
    if from_logits:
        return -_b.reduce_sum(t * _nn.log_softmax(o, axis=axis), axis=axis)
    o = o / _b.reduce_sum(o, axis=axis, keepdims=True)
    o = _clip.clip_by_value(o, 1e-7, 1.0 - 1e-7)
    return -_b.reduce_sum(t * _b.log(o), axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    o = _float(output)
    return categorical_crossentropy(one_hot(target, o.shape[axis], axis=axis, dtype=o.dtype), o, from_logits, axis)


def cond(pred, true_fn, false_fn):
    return _cf.cond(pred, true_fn, false_fn)


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    single = not isinstance(loop_vars, (list, tuple))
    out = _cf.while_loop(cond, body, [loop_vars] if single else loop_vars, maximum_iterations=maximum_iterations)
    return out[0] if single else out


def fori_loop(lower, upper, body_fun, init_val):
    def body(i, val):
        return i + 1, body_fun(i, val)
    return _cf.while_loop(lambda i, _: i < upper, body, [_b.convert_to_tensor(lower), init_val])[1]


def diag(x, k=0):
    x = _t(x)
    return _linalg.diag(x, k=k) if len(x.shape) == 1 else _linalg.diag_part(x, k=k)


def _offsets(rows, cols):
    """column - row of each element of a rows x cols matrix."""
    return _b.expand_dims(_b.range(cols), 0) - _b.expand_dims(_b.range(rows), 1)


def tril(x, k=0):
    x = _t(x)
    dims = _b.shape(x)
    return _b.where(_offsets(dims[-2], dims[-1]) <= k, x, _b.zeros_like(x))


def triu(x, k=0):
    x = _t(x)
    dims = _b.shape(x)
    return _b.where(_offsets(dims[-2], dims[-1]) >= k, x, _b.zeros_like(x))


linalg = types.SimpleNamespace(cholesky=_decomp.cholesky, det=_decomp.det, eigh=_decomp.eigh, inv=_decomp.inv,
                               lstsq=_decomp.lstsq, norm=norm, qr=_decomp.qr, slogdet=_decomp.slogdet,
                               solve=_decomp.solve, solve_triangular=_decomp.triangular_solve, svd=_decomp.svd)
_NN = ("relu", "relu6", "sigmoid", "softmax", "log_softmax", "softplus", "softsign", "silu", "swish", "gelu", "elu",
       "selu", "leaky_relu", "log_sigmoid", "hard_sigmoid", "moments", "normalize", "one_hot", "binary_crossentropy",
       "categorical_crossentropy", "sparse_categorical_crossentropy")
nn = types.SimpleNamespace(**{n: globals()[n] for n in _NN})
numpy = types.SimpleNamespace(**{n: v for n, v in globals().items() if callable(v) and not n.startswith("_")
                                 and n not in _NN and not isinstance(v, type)})
_REEXPORTED = (custom_gradient, stop_gradient)  # keras.ops.custom_gradient / stop_gradient


def __getattr__(name):
    raise AttributeError(f"jitflow does not implement keras.ops.{name} yet (module 'jitflow.keras.ops' has no "
                         f"attribute '{name}')")
