"""The differential rows: one per op record (cpp/ir/ops.def), saying how to call the op through
its public function on generated inputs of a dtype, and the float64 (or exact) numpy result it
must give. ops/test_op_coverage.py runs every row for every dtype its record claims, eagerly and
compiled, and checks gradients against finite differences; an op added to the records without
a row here fails that test.

A row: `make(dtype, rng) -> inputs` (numpy arrays, or Python values), `call(*inputs)` (the
jitflow call; numpy arrays become tensors), `ref(*inputs)` (numpy, computed in float64 for
floats), and `grad` — the indices of the inputs to differentiate (float dtypes only)."""
import dataclasses
import math

import ml_dtypes
import numpy as np

import jitflow as jf

F32, F64, I32, I64, BOOL = "float32", "float64", "int32", "int64", "bool"
# The dtypes after the original five: half floats, small and unsigned integers, complex.
F16, BF16, C64, C128 = "float16", "bfloat16", "complex64", "complex128"
SMALL_INTS = ("int8", "int16", "uint8", "uint16", "uint32", "uint64")
HALVES = (F16, BF16)


@dataclasses.dataclass
class Row:
    make: object
    call: object
    ref: object = None
    grad: tuple = ()
    # Instead of `ref`, for ops without reference values (random numbers):
    # check(outputs as numpy, dtype) raises AssertionError.
    check: object = None
    # Compiled mode passes the inputs as values baked into the function, not as arguments
    # (Const takes values, not graph tensors).
    baked: bool = False
    # Whether the row's call works for any size of its 2-dims (see `sized`); False when the
    # call names a size itself.
    resizable: bool = True
    # Variable reads and writes: jit_compile=True runs them around the compiled unit (as XLA
    # passes resource variables in and out of a computation) instead of refusing them.
    runs_around_jit: bool = False
    # The gradient check's input dtype, and its float64 reference when `ref` rounds (a cast).
    grad_dtype: str = F64
    grad_ref: object = None
    # Under special_values(): which of special_inputs() the row's float inputs take ("all",
    # "finite" for an op that raises on NaN/Inf, "no_inf" where the float64 reference cannot
    # follow a product's order of underflow and overflow, "no_nan" where TF's result depends
    # on where a NaN comes in a segment), and a reference for them when `ref` is not TF's
    # rule there.
    special_inputs: str = "all"
    special_ref: object = None


def _np_dtype(d):
    return np.dtype(d)


# The size that stands for every dim written as 2 in a row's shapes: the harness runs each
# row with 2, and with 1 and 0 (size-1 and empty dims) for rows that allow it.
_SIZE = [2]


class sized:
    """`with sized(0): row.make(...)`: the row's inputs with its 2-dims of size 0."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        _SIZE.append(self.n)

    def __exit__(self, *exc):
        _SIZE.pop()


# ---- special values ------------------------------------------------------------------------
# ops/test_op_coverage.py also runs every float row on these: subnormals and signed zeros,
# whose results have depended on the host that built or runs a kernel (a flushed subnormal, a
# lost -0 in a vectorized path), the smallest normal, infinities, NaN and a few ordinary values.
_SPECIAL = [None]


def special_inputs(d, which="all"):
    """The special float values of dtype d (16: one AVX-512 vector of float32)."""
    fi = np.finfo(d)
    v = [fi.tiny / 4, -fi.tiny / 4, fi.smallest_subnormal, -fi.smallest_subnormal, 0.0, -0.0, fi.tiny, -fi.tiny,
         3 * fi.tiny / 4, -3 * fi.tiny / 4, np.inf, -np.inf, np.nan, 1.0, -1.0, -2.5]
    if which == "finite":
        v = [x for x in v if np.isfinite(x)]
    elif which == "no_inf":
        v = [x for x in v if not np.isinf(x)]
    elif which == "no_nan":
        v = [x for x in v if not np.isnan(x)]
    return np.array(v, d)


class special_values:
    """`with special_values(): row.make(...)`: the row's float inputs cycle through
    special_inputs() (each input from its own starting point, so binary ops meet mixed pairs);
    with `sized(8)` an input has 16 or more elements, enough for a kernel's vector loop."""

    def __init__(self, which="all"):
        self.which = which

    def __enter__(self):
        _SPECIAL.append(self.which)

    def __exit__(self, *exc):
        _SPECIAL.pop()


def data(shape, lo=-3.0, hi=3.0, nonzero=False):
    """Inputs of one shape: floats uniform in [lo, hi), ints in [lo, hi], bools at random
    (floats from special_inputs() under special_values())."""
    def make(d, rng):
        shape_now = tuple(_SIZE[-1] if n == 2 else n for n in shape)
        return _make(shape_now, d, rng)

    def _make(shape, d, rng):
        if _SPECIAL[-1] and d in (F32, F64):
            v = special_inputs(d, _SPECIAL[-1])
            return np.resize(np.roll(v, int(rng.integers(v.size))), shape)
        if d == BOOL:
            return np.asarray(rng.random(shape) < 0.5)
        if d in (I32, I64) or d in SMALL_INTS:
            info = np.iinfo(d)  # unsigned: the part of [lo, hi] they hold
            v = np.asarray(rng.integers(max(int(lo), info.min), min(int(hi), info.max) + 1, size=shape).astype(d))
            if nonzero:
                v[v == 0] = 1
            return np.asarray(v)
        if d in (C64, C128):
            v = np.asarray(rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape)).astype(d)
            if nonzero:
                v[np.abs(v) < 0.1] = 0.5
            return v
        v = np.asarray(rng.uniform(lo, hi, size=shape).astype(d))
        if nonzero:
            v[np.abs(v) < 0.1] = 0.5
        return v
    return make


def inputs(*makers):
    return lambda d, rng: tuple(m(d, rng) for m in makers)


def _is_float(dt):
    return dt.kind == "f" or dt == np.dtype(BF16)


def _f64(fn):
    """A numpy reference computed in float64 for float inputs, cast back to their dtype."""
    def ref(*xs):
        dt = next((x.dtype for x in xs if isinstance(x, np.ndarray)), None)
        up = [x.astype(np.float64) if isinstance(x, np.ndarray) and _is_float(x.dtype) else x for x in xs]
        r = fn(*up)
        if dt is not None and _is_float(dt) and isinstance(r, np.ndarray) and r.dtype.kind == "f":
            r = r.astype(dt)
        return r
    return ref


def unary(fn, ref, lo=-3.0, hi=3.0, grad=(0,)):
    return Row(inputs(data((2, 3), lo, hi)), fn, _f64(ref), grad)


def binary(fn, ref, nonzero=False, lo=-3.0, hi=3.0, grad=(0, 1)):
    # (2, 3) with (3,): numpy broadcasting in every row.
    return Row(inputs(data((2, 3), lo, hi), data((3,), lo, hi, nonzero)), fn, _f64(ref), grad)


def _halves(shape):
    """Floats on a half grid (ties for Round: half to even), ints as they are."""
    base = data(shape)

    def make(d, rng):
        v = base(d, rng)
        if _SPECIAL[-1]:
            return v
        return np.asarray(np.round(v * 2) / 2).astype(v.dtype) if v.dtype.kind == "f" else v
    return make


def _specials(shape):
    """Floats with NaN, +Inf, -Inf and -0 among them (for the float predicates)."""
    base = data(shape)

    def make(d, rng):
        v = base(d, rng).copy()
        if v.dtype.kind != "f":
            return v
        flat = v.reshape(-1)
        for i, s in zip(range(flat.size), (np.nan, np.inf, -np.inf, -0.0)):
            flat[i] = s
        return v
    return make


def _with_zero(make):
    """The inputs of `make` with their first element 0 (multiply_no_nan's y == 0 case; x == 0
    of xlogy is not in its row: TF's gradient there is 0, not the finite difference)."""
    def m(d, rng):
        v = make(d, rng).copy()
        if v.size:
            v.reshape(-1)[0] = 0
        return v
    return m


def _truncdiv(x, y):
    if x.dtype.kind == "f":
        return np.trunc(x / y)
    return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(x.dtype)


def _no_nan(op):
    return lambda x, y: np.where(y == 0, 0.0, op(x, np.where(y == 0, 1.0, y)))


def _xlogy(log):
    return lambda x, y: np.where(x == 0, 0.0, x * log(y))


def _digamma_ref(x):
    """psi(x) in float64 (scipy is not installed): the reflection below 0.5, the recurrence
    up to x + 20 and the asymptotic series there (error far below float64's epsilon)."""
    x = np.asarray(x, np.float64)
    neg = x < 0.5
    y = np.where(neg, 1.0 - x, x)
    acc = sum(1.0 / (y + k) for k in range(20))
    z = y + 20.0
    r = 1.0 / (z * z)
    series = np.log(z) - 0.5 / z - r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r / 132))))
    psi = series - acc
    psi = np.where(neg, psi - np.pi / np.tan(np.pi * x), psi)
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, psi)  # TF's NaN at the poles


def _erfinv_ref(x):
    """erfinv in float64 by Newton's method on math.erf from 0 (monotone: erf is concave
    beyond 0) for |x| < 1; +-inf at +-1, NaN beyond."""
    def one(v):
        if not abs(v) < 1:
            return math.copysign(math.inf, v) if abs(v) == 1 else math.nan
        y = 0.0
        for _ in range(200):
            y -= (math.erf(y) - v) / (2 / math.sqrt(math.pi) * math.exp(-y * y))
        return y
    return np.vectorize(one, otypes=[np.float64])(x)


def _math_ref(fn, pole):
    """A math-module function over an array, `pole` where it reports a pole (math.lgamma
    raises ValueError at 0, -1, ...; TF gives +inf there)."""
    def one(v):
        try:
            return fn(v)
        except ValueError:
            return pole
    return np.vectorize(one, otypes=[np.float64])


def _tf_floormod(x, y):
    """TF's float floormod: fmod, moved into y's sign when it is nonzero."""
    m = np.fmod(x, y)
    return np.where((m != 0) & ((m < 0) != (y < 0)), m + y, m)


def _tf_argreduce(is_max):
    """TF eager's rule along axis 1: from index 0 holding the lowest (highest) finite value,
    move to each element strictly greater (less); NaN compares false."""
    def ref(x):
        out = np.zeros(x.shape[0], np.int64)
        lim = np.finfo(x.dtype).max if x.dtype.kind == "f" else None
        for r in range(x.shape[0]):
            best, bv = 0, (-lim if is_max else lim)
            for k, v in enumerate(x[r]):
                if (v > bv) if is_max else (v < bv):
                    best, bv = k, v
            out[r] = best
        return out
    return ref


def _floordiv(x, y):
    return np.floor_divide(x, y)


def _split_ref(x):
    return tuple(np.split(x, 2, axis=1))


def _mean_ref(x):
    if x.dtype.kind == "c":
        return np.mean(x, axis=1)
    if _is_float(x.dtype):
        return np.mean(x.astype(np.float64), axis=1).astype(x.dtype)
    return np.trunc(np.sum(x, axis=1) / x.shape[1]).astype(x.dtype)  # C++ integer division


def _segment_sum_ref(x, ids):
    out = np.zeros((3,) + x.shape[1:], x.dtype)
    np.add.at(out, ids, x)
    return out


def _nd_indices(rows):
    """Index vectors (int32 [n, C]): the first n of `rows`, n the size the row runs with (its
    index count follows the 2-dims of the updates; the indexed tensor keeps its size)."""
    def make():
        return np.resize(np.array(rows, np.int32), (_SIZE[-1], len(rows[0])))
    return make


def _scatter_nd_ref(i, u):
    out = np.zeros((4, 3), u.dtype)
    np.add.at(out, i[:, 0], u)
    return out


def _tensor_scatter_row(fn, combine, rows):
    def ref(t, i, u):
        out = t.copy()
        for k in range(i.shape[0]):
            out[i[k, 0]] = combine(out[i[k, 0]], u[k])
        return out
    return Row(lambda d, rng: (data((4, 3))(d, rng), _nd_indices(rows)(), data((2, 3))(d, rng)),
               lambda t, i, u: fn(t, jf.reshape(i, [-1, 1]), u), ref, (0, 2))


def _one_hot_ref(i):
    return (np.arange(4) == i[..., None]).astype(np.float32)


def _shift_ref(np_shift):
    """TF's shifts clamp the amount to [0, bits - 1]."""
    def ref(x, y):
        return np_shift(x, np.clip(y, 0, x.dtype.itemsize * 8 - 1).astype(x.dtype))
    return ref


def _check_uniform(out, d):
    assert out.shape == (500,) and out.dtype == np.dtype(d)
    assert out.min() >= 0 and out.max() < 1 and 0.4 < out.mean() < 0.6, (out.min(), out.max(), out.mean())


def _check_normal(out, d):
    assert out.shape == (500,) and out.dtype == np.dtype(d)
    assert abs(out.mean()) < 0.2 and 0.8 < out.std() < 1.2, (out.mean(), out.std())


# The rows' variables by the input they were made from. A jf.function whose first trace made a
# variable traces again at once (as TF), and that trace must take the same variable, as a
# function guarded by `if self.v is None` does. Inputs are made afresh for each run of a row,
# so each function and each eager call still gets a variable of its own; an entry keeps its
# input alive, so the id is not reused.
_ROW_VARIABLES = {}


def _variable(fn, ref):
    """A row running fn(v, y) on a new variable v holding x, then reading v. Its inputs are
    baked into functions: a variable's initial value cannot be a traced input."""
    def call(x, y):
        if id(x) not in _ROW_VARIABLES:
            _ROW_VARIABLES[id(x)] = (x, jf.Variable(x))
        v = _ROW_VARIABLES[id(x)][1]
        fn(v, y)
        return v.read_value()
    return Row(inputs(data((2, 3)), data((2, 3))), call, ref, baked=True, runs_around_jit=True)


ROWS = {
    "Const": Row(inputs(data((2, 3))), lambda x: jf.constant(x), lambda x: x, baked=True),
    "Identity": unary(jf.identity, lambda x: x),
    "Neg": unary(jf.negative, np.negative),
    "Abs": Row(inputs(data((2, 3), nonzero=True)), jf.abs, _f64(np.abs), (0,)),
    "Square": unary(jf.square, np.square),
    "Relu": Row(inputs(data((2, 3), nonzero=True)), jf.nn.relu, _f64(lambda x: np.maximum(x, 0)), (0,)),
    "Exp": unary(jf.exp, np.exp),
    "Log": unary(jf.math.log, np.log, lo=0.2, hi=3.0),
    "Log1p": unary(jf.math.log1p, np.log1p, lo=-0.5, hi=3.0),
    "Tanh": unary(jf.tanh, np.tanh),
    "Sigmoid": unary(jf.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "Expm1": unary(jf.math.expm1, np.expm1),
    "Tan": unary(jf.math.tan, np.tan, lo=-1.2, hi=1.2),
    "Atan": unary(jf.math.atan, np.arctan),
    "Asin": unary(jf.math.asin, np.arcsin, lo=-0.9, hi=0.9),
    "Acos": unary(jf.math.acos, np.arccos, lo=-0.9, hi=0.9),
    "Sinh": unary(jf.math.sinh, np.sinh),
    "Cosh": unary(jf.math.cosh, np.cosh),
    "Asinh": unary(jf.math.asinh, np.arcsinh),
    "Acosh": unary(jf.math.acosh, np.arccosh, lo=1.2, hi=3.0),
    "Atanh": unary(jf.math.atanh, np.arctanh, lo=-0.9, hi=0.9),
    "Erfc": unary(jf.math.erfc, np.vectorize(math.erfc, otypes=[np.float64])),
    "Lgamma": unary(jf.math.lgamma, _math_ref(math.lgamma, np.inf), lo=-2.7, hi=4.0),
    "Digamma": unary(jf.math.digamma, _digamma_ref, lo=-2.7, hi=6.0),
    "Erfinv": unary(jf.math.erfinv, _erfinv_ref, lo=-0.95, hi=0.95),
    "Floor": unary(jf.floor, np.floor, grad=()),
    "Ceil": unary(jf.math.ceil, np.ceil, grad=()),
    "Round": Row(inputs(_halves((2, 3))), jf.round, _f64(np.round)),
    "Sign": unary(jf.sign, np.sign),
    "Reciprocal": Row(inputs(data((2, 3), nonzero=True)), jf.math.reciprocal, _f64(lambda x: 1 / x), (0,)),
    "IsNan": Row(inputs(_specials((2, 3))), jf.math.is_nan, np.isnan),
    "IsInf": Row(inputs(_specials((2, 3))), jf.math.is_inf, np.isinf),
    "IsFinite": Row(inputs(_specials((2, 3))), jf.math.is_finite, np.isfinite),
    "Sqrt": unary(jf.sqrt, np.sqrt, lo=0.2, hi=3.0),
    "Rsqrt": unary(jf.math.rsqrt, lambda x: 1 / np.sqrt(x), lo=0.2, hi=3.0),
    "Sin": unary(jf.sin, np.sin),
    "Cos": unary(jf.cos, np.cos),
    "Erf": unary(jf.math.erf, np.vectorize(math.erf, otypes=[np.float64])),
    "LogicalNot": unary(jf.logical_not, np.logical_not, grad=()),
    # To another dtype (a cast to the same dtype is no op at all).
    "Cast": Row(inputs(data((2, 3))), lambda x: jf.cast(x, jf.float32 if x.dtype == jf.float64 else jf.float64),
                lambda x: x.astype(np.float32 if x.dtype == np.float64 else np.float64), (0,),
                grad_dtype=F32, grad_ref=lambda x: x),
    # Every dtype's bytes as uint8: a dim of the element size appended (none for 1-byte ones).
    "Bitcast": Row(inputs(data((2, 3))), lambda x: jf.bitcast(x, jf.uint8),
                   lambda x: np.ascontiguousarray(x).view(np.uint8).reshape(
                       x.shape + ((x.dtype.itemsize,) if x.dtype.itemsize > 1 else ()))),
    "AddV2": binary(jf.add, np.add),
    "Sub": binary(jf.subtract, np.subtract),
    "Mul": binary(jf.multiply, np.multiply),
    "RealDiv": binary(jf.math.truediv, np.divide, nonzero=True),
    # On special values TF's definitions, computed in the inputs' own dtype (numpy's float32
    # arithmetic is IEEE's): floor(x / y) rounds the quotient before the floor.
    "FloorDiv": dataclasses.replace(binary(jf.math.floordiv, _floordiv, nonzero=True, grad=()),
                                    special_ref=lambda x, y: np.floor(x / y)),
    "FloorMod": dataclasses.replace(binary(jf.math.floormod, np.mod, nonzero=True, grad=(0,)),
                                    special_ref=_tf_floormod),
    "Maximum": binary(jf.maximum, np.maximum),
    "Minimum": binary(jf.minimum, np.minimum),
    "Pow": binary(jf.pow, np.power, lo=0.0, hi=3.0, grad=(0,)),
    "Atan2": Row(inputs(data((2, 3)), data((3,), 0.2, 3.0)), jf.math.atan2, _f64(np.arctan2), (0, 1)),
    # complex: (x - y) times its conjugate, TF's rule
    "SquaredDifference": binary(jf.math.squared_difference, lambda x, y: (x - y) * np.conj(x - y)),
    "TruncateDiv": dataclasses.replace(binary(jf.truncatediv, _truncdiv, nonzero=True, grad=()),
                                       special_ref=lambda x, y: np.trunc(x / y)),
    "TruncateMod": binary(jf.truncatemod, np.fmod, nonzero=True, grad=()),
    "DivNoNan": binary(jf.math.divide_no_nan, _no_nan(np.divide), nonzero=True),
    "MulNoNan": Row(inputs(data((2, 3)), _with_zero(data((3,)))), jf.math.multiply_no_nan,
                    _f64(_no_nan(np.multiply)), (0, 1)),
    "Xlogy": Row(inputs(data((2, 3)), data((3,), 0.2, 3.0)), jf.math.xlogy, _f64(_xlogy(np.log)), (0, 1)),
    "Xlog1py": Row(inputs(data((2, 3)), data((3,), -0.8, 3.0)), jf.math.xlog1py,
                   _f64(_xlogy(np.log1p)), (0, 1)),
    "NextAfter": dataclasses.replace(binary(jf.math.nextafter, np.nextafter), special_ref=np.nextafter),
    "Equal": binary(jf.equal, np.equal, lo=-1, hi=1, grad=()),
    "NotEqual": binary(jf.not_equal, np.not_equal, lo=-1, hi=1, grad=()),
    "Less": binary(jf.less, np.less, grad=()),
    "LessEqual": binary(jf.less_equal, np.less_equal, grad=()),
    "Greater": binary(jf.greater, np.greater, grad=()),
    "GreaterEqual": binary(jf.greater_equal, np.greater_equal, grad=()),
    "LogicalAnd": binary(jf.logical_and, np.logical_and, grad=()),
    "LogicalOr": binary(jf.logical_or, np.logical_or, grad=()),
    "BitwiseAnd": binary(jf.bitwise.bitwise_and, np.bitwise_and, lo=-50, hi=50, grad=()),
    "BitwiseOr": binary(jf.bitwise.bitwise_or, np.bitwise_or, lo=-50, hi=50, grad=()),
    "BitwiseXor": binary(jf.bitwise.bitwise_xor, np.bitwise_xor, lo=-50, hi=50, grad=()),
    "Invert": unary(jf.bitwise.invert, np.invert, lo=-50, hi=50, grad=()),
    "LeftShift": binary(jf.bitwise.left_shift, _shift_ref(np.left_shift), lo=-3, hi=70, grad=()),
    "RightShift": binary(jf.bitwise.right_shift, _shift_ref(np.right_shift), lo=-3, hi=70, grad=()),
    "SelectV2": Row(lambda d, rng: (data((2, 3))(BOOL, rng),) + inputs(data((2, 3)), data((3,)))(d, rng),
                    jf.where, _f64(np.where), (1, 2)),
    "AddN": Row(inputs(data((2, 3)), data((2, 3)), data((2, 3))), lambda *xs: jf.add_n(list(xs)),
                _f64(lambda *xs: sum(xs)), (0, 1, 2)),
    "Sum": unary(lambda x: jf.reduce_sum(x, axis=1), lambda x: np.sum(x, axis=1)),
    "Mean": Row(inputs(data((2, 4))), lambda x: jf.reduce_mean(x, axis=1), _mean_ref, (0,)),
    "Max": Row(inputs(data((2, 3))), lambda x: jf.reduce_max(x, axis=1), _f64(lambda x: np.max(x, axis=1)), (0,)),
    "Min": Row(inputs(data((2, 3))), lambda x: jf.reduce_min(x, axis=1), _f64(lambda x: np.min(x, axis=1)), (0,)),
    "Prod": dataclasses.replace(unary(lambda x: jf.reduce_prod(x, axis=1), lambda x: np.prod(x, axis=1)),
                                special_inputs="no_inf"),
    "ArgMax": Row(inputs(data((2, 5), -100, 100)), lambda x: jf.argmax(x, axis=1), lambda x: np.argmax(x, axis=1),
                  special_ref=_tf_argreduce(True)),
    "ArgMin": Row(inputs(data((2, 5), -100, 100)), lambda x: jf.argmin(x, axis=1), lambda x: np.argmin(x, axis=1),
                  special_ref=_tf_argreduce(False)),
    # The row's max is subtracted first, as TF's kernel does (an inf in a row makes it NaN).
    "Softmax": unary(jf.nn.softmax, lambda x: np.exp(x - x.max(-1, keepdims=True))
                     / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "LogSoftmax": unary(jf.nn.log_softmax, lambda x: x - x.max(-1, keepdims=True)
                        - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))),
    "MatMul": Row(inputs(data((2, 3)), data((3, 4))), jf.matmul, _f64(np.matmul), (0, 1)),
    "BatchMatMulV2": Row(inputs(data((2, 2, 3)), data((2, 3, 4))), jf.matmul, _f64(np.matmul), (0, 1)),
    "Reshape": unary(lambda x: jf.reshape(x, [3, -1]), lambda x: x.reshape(3, -1)),
    "Transpose": unary(jf.transpose, np.transpose),
    "ConcatV2": Row(inputs(data((2, 3)), data((2, 2))), lambda a, b: jf.concat([a, b], axis=1),
                    lambda a, b: np.concatenate([a, b], axis=1), (0, 1)),
    "Pack": Row(inputs(data((2, 3)), data((2, 3))), lambda a, b: jf.stack([a, b], axis=1),
                lambda a, b: np.stack([a, b], axis=1), (0, 1)),
    "Split": Row(inputs(data((2, 4))), lambda x: tuple(jf.split(x, 2, axis=1)), _split_ref, (0,)),
    "SplitV": Row(inputs(data((2, 4))), lambda x: tuple(jf.split(x, [1, 3], axis=1)),
                  lambda x: (x[:, :1], x[:, 1:]), (0,)),
    "Squeeze": Row(inputs(data((2, 1, 3))), lambda x: jf.squeeze(x, 1), lambda x: x.squeeze(1), (0,)),
    "ExpandDims": unary(lambda x: jf.expand_dims(x, 1), lambda x: x[:, None]),
    "BroadcastTo": Row(inputs(data((1, 3))), lambda x: jf.broadcast_to(x, [2, 3]),
                       lambda x: np.broadcast_to(x, (2, 3)), (0,)),
    "StridedSlice": Row(inputs(data((4, 5))), lambda x: jf.strided_slice(x, [1, 0], [4, 5], [2, 2]),
                        lambda x: x[1:4:2, 0:5:2], (0,)),
    "Shape": unary(lambda x: jf.shape(x), lambda x: np.array(x.shape, np.int32), grad=()),
    "GatherV2": Row(lambda d, rng: (data((2, 3))(d, rng), np.array([[1, 0, 2], [2, 2, 0]], np.int32)),
                    lambda p, i: jf.gather(p, i, axis=1), lambda p, i: np.take(p, i, axis=1), (0,)),
    "OneHot": Row(inputs(data((2, 3), -1, 4)), lambda i: jf.one_hot(i, 4), _one_hot_ref),
    "ReverseV2": unary(lambda x: jf.reverse(x, [1]), lambda x: x[:, ::-1]),
    "Tile": unary(lambda x: jf.tile(x, [2, 3]), lambda x: np.tile(x, (2, 3))),
    "PadV2": unary(lambda x: jf.pad(x, [[1, 0], [2, 1]]), lambda x: np.pad(x, ((1, 0), (2, 1)))),
    "MirrorPad": Row(inputs(data((3, 5))), lambda x: jf.pad(x, [[1, 2], [2, 3]], "REFLECT"),
                     lambda x: np.pad(x, ((1, 2), (2, 3)), mode="reflect"), (0,)),
    "Roll": unary(lambda x: jf.roll(x, [1, -4], [0, 1]), lambda x: np.roll(x, (1, -4), (0, 1))),
    "UnsortedSegmentSum": Row(lambda d, rng: (data((4, 3))(d, rng), np.array([0, 2, 0, 1], np.int32)),
                              lambda x, i: jf.math.unsorted_segment_sum(x, i, 3), _segment_sum_ref, (0,)),
    # gather_nd, the nd scatters and Slice: index counts follow the size, indexed tensors keep theirs.
    "GatherNd": Row(lambda d, rng: (data((3, 4, 3))(d, rng), _nd_indices([[0, 1], [2, 3]])()),
                    lambda p, i: jf.gather_nd(p, jf.reshape(i, [-1, 2])), lambda p, i: p[tuple(i.T)], (0,)),
    "ScatterNd": Row(lambda d, rng: (_nd_indices([[3], [3]])(), data((2, 3))(d, rng)),
                     lambda i, u: jf.scatter_nd(jf.reshape(i, [-1, 1]), u, [4, 3]), _scatter_nd_ref, (1,)),
    "TensorScatterUpdate": _tensor_scatter_row(jf.tensor_scatter_nd_update, lambda a, b: b, [[1], [3]]),
    "TensorScatterAdd": _tensor_scatter_row(jf.tensor_scatter_nd_add, np.add, [[1], [1]]),
    "TensorScatterSub": _tensor_scatter_row(jf.tensor_scatter_nd_sub, np.subtract, [[1], [1]]),
    # Without NaN on special values: TF's rule keeps a NaN already there and never takes one
    # (tests/python/ops/test_scatter_ops.py checks it), where np.maximum propagates both.
    "TensorScatterMax": dataclasses.replace(_tensor_scatter_row(jf.tensor_scatter_nd_max, np.maximum, [[1], [1]]),
                                            special_inputs="no_nan"),
    "TensorScatterMin": dataclasses.replace(_tensor_scatter_row(jf.tensor_scatter_nd_min, np.minimum, [[1], [1]]),
                                            special_inputs="no_nan"),
    "Slice": Row(inputs(data((4, 2))), lambda x: jf.slice(x, [1, 0], [2, -1]), lambda x: x[1:3, :], (0,)),
    "Fill": Row(lambda d, rng: (data((), 0, 3)(d, rng),), lambda v: jf.fill([2, 3], v),
                lambda v: np.full((2, 3), v), (0,)),
    "ZerosLike": unary(jf.zeros_like, np.zeros_like, grad=()),
    "OnesLike": unary(jf.ones_like, np.ones_like, grad=()),
    "Range": Row(lambda d, rng: (np.array(1, d), np.array(9, d), np.array(2, d)),
                 lambda a, b, c: jf.range(a, b, c), lambda a, b, c: np.arange(a, b, c).astype(a.dtype)),
    "RandomUniform": Row(lambda d, rng: (), None, check=_check_uniform),
    "RandomStandardNormal": Row(lambda d, rng: (), None, check=_check_normal),
    "ReadVariableOp": _variable(lambda v, y: None, lambda x, y: x),
    "AssignVariableOp": _variable(lambda v, y: v.assign(y), lambda x, y: y),
    "AssignAddVariableOp": _variable(lambda v, y: v.assign_add(y), lambda x, y: x + y),
    "AssignSubVariableOp": _variable(lambda v, y: v.assign_sub(y), lambda x, y: x - y),
}

# Random rows take their dtype from the call.
ROWS["RandomUniform"].call = lambda d: jf.random.uniform([500], dtype=getattr(jf, d))
ROWS["RandomStandardNormal"].call = lambda d: jf.random.normal([500], dtype=getattr(jf, d))

# ---- data-dependent output shapes (eager only): Where, Unique, UniqueWithCounts -------------
def _with_zeros(shape):
    """data(shape) with about 40% zeros (false) for every dtype."""
    def make(d, rng):
        x = data(shape, -2, 2)(d, rng)
        x[rng.random(x.shape) < 0.4] = 0
        return x
    return make


def _repeating(d, rng):
    """A vector of 3 * size values, each value of a size-vector three times, shuffled."""
    x = np.tile(data((2,), -2, 2)(d, rng), 3)
    return (x[rng.permutation(x.size)],)


def _unique_ref(counts):
    def ref(x):
        _, first, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
        order = np.argsort(first)  # distinct values in order of first occurrence
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y, idx = x[first[order]], rank[inv.reshape(-1)].astype(np.int32)
        return (y, idx, cnt[order].astype(np.int32)) if counts else (y, idx)
    return ref


def _unique_ref_tf(counts):
    """TF's hash-map rule where np.unique's sorting differs: -0 and +0 are one value (the
    first seen is kept), each NaN is a value of its own."""
    def ref(x):
        first, ys, idx, cnt = {}, [], [], []
        for v in x.tolist():
            nan = math.isnan(v)
            k = None if nan else first.get(v)
            if k is None:
                k = len(ys)
                ys.append(v)
                cnt.append(0)
                if not nan:
                    first[v] = k
            idx.append(k)
            cnt[k] += 1
        out = (np.array(ys, x.dtype), np.array(idx, np.int32), np.array(cnt, np.int32))
        return out if counts else out[:2]
    return ref


ROWS.update({
    "Where": Row(inputs(_with_zeros((2, 3))), jf.where, lambda x: np.argwhere(x).astype(np.int64)),
    "Unique": Row(_repeating, jf.unique, _unique_ref(False), special_ref=_unique_ref_tf(False)),
    "UniqueWithCounts": Row(_repeating, jf.unique_with_counts, _unique_ref(True), special_ref=_unique_ref_tf(True)),
})


# ---- scans and top-k: reverse exclusive sums, products kept near 1, and top-k's ties in
# their order along the row (a stable descending argsort).
def _rev_excl_cumsum(x):
    rev = x[:, ::-1]
    ex = np.concatenate([np.zeros_like(rev[:, :1]), np.cumsum(rev, 1)[:, :-1]], 1)
    return ex[:, ::-1]


def _top_k_ref(x):
    key = -x.astype(np.float64) if _is_float(x.dtype) else -x.astype(np.int64)
    idx = np.argsort(key, axis=-1, kind="stable")[:, :3]
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


ROWS.update({
    "Cumsum": unary(lambda x: jf.cumsum(x, axis=1, exclusive=True, reverse=True), _rev_excl_cumsum),
    "Cumprod": unary(lambda x: jf.math.cumprod(x, 1), lambda x: np.cumprod(x, 1), lo=0.5, hi=1.5),
    "CumulativeLogsumexp": unary(lambda x: jf.math.cumulative_logsumexp(x, 1), lambda x: np.logaddexp.accumulate(x, 1)),
    "TopKV2": Row(inputs(data((2, 5))), lambda x: jf.math.top_k(x, 3), _top_k_ref, (0,), resizable=False,
                  special_inputs="no_nan"),
})


# ---- decompositions and solvers: inputs kept well-conditioned (3 I added, or x x^T + 3 I for
# the symmetric positive definite ones); factors numpy may sign differently are compared
# through sign-free functions of them (q r, the squares of singular and eigen vectors).
def _cond(x):
    return x + 3 * np.eye(x.shape[-1], dtype=x.dtype)


def _jf_cond(x):  # the rows' matrices are 3x3 (only their batch dim is resized)
    return x + jf.constant(3 * np.eye(3), dtype=x.dtype)


def _spd(x):  # Hermitian positive definite for complex x
    return x @ np.conj(np.swapaxes(x, -1, -2)) + 3 * np.eye(x.shape[-1], dtype=x.dtype)


def _jf_spd(x):
    return _jf_cond(jf.matmul(x, x, adjoint_b=True))


# A factorization matches numpy's only up to signs and rounding: rows check its residual and
# orthonormality instead, shifted by 1 so that rounding-level residuals compare equal to the
# exact 1 on special values as well.
def _qr_call(x):
    q, r = jf.linalg.qr(x)
    return jf.matmul(q, r) - x + 1, jf.matmul(q, q, adjoint_a=True) + 1


def _svd_call(x):
    s, u, v = jf.linalg.svd(x)  # a complex matrix's singular values are real
    return (jf.matmul(u * jf.cast(jf.expand_dims(s, -2), u.dtype), v, adjoint_b=True) - x + 1,
            jf.matmul(u, u, adjoint_a=True) + 1)


def _factor_ref(x):
    """What _qr_call and _svd_call give exactly."""
    return np.ones_like(x), np.broadcast_to(np.eye(3, dtype=x.dtype), x.shape[:-2] + (3, 3)) + 1


def _eigh_call(x):
    a = _jf_spd(x)
    e, v = jf.linalg.eigh(a)
    return jf.matmul(v * jf.expand_dims(e, -2), v, adjoint_b=True) - a + 1, jf.matmul(v, v, adjoint_a=True) + 1


def _eigh_ref(x):
    return np.ones_like(x), np.broadcast_to(np.eye(3, dtype=x.dtype), x.shape[:-2] + (3, 3)) + 1


_SQ = data((2, 3, 3), -1, 1)
ROWS.update({
    "MatrixDeterminant": Row(inputs(_SQ), lambda x: jf.linalg.det(_jf_cond(x)),
                             _f64(lambda x: np.linalg.det(_cond(x))), (0,), special_inputs="finite"),
    "LogMatrixDeterminant": Row(inputs(_SQ), lambda x: jf.linalg.slogdet(_jf_cond(x)),
                                _f64(lambda x: tuple(np.linalg.slogdet(_cond(x)))), (0,), special_inputs="finite"),
    "MatrixInverse": Row(inputs(_SQ), lambda x: jf.linalg.inv(_jf_cond(x)),
                         _f64(lambda x: np.linalg.inv(_cond(x))), (0,), special_inputs="finite"),
    "MatrixSolve": Row(inputs(_SQ, data((2, 3, 2), -1, 1)), lambda a, b: jf.linalg.solve(_jf_cond(a), b),
                       _f64(lambda a, b: np.linalg.solve(_cond(a), b)), (0, 1), special_inputs="finite"),
    "MatrixTriangularSolve": Row(inputs(_SQ, data((2, 3, 2), -1, 1)),
                                 lambda a, b: jf.linalg.triangular_solve(_jf_cond(a), b),
                                 _f64(lambda a, b: np.linalg.solve(np.tril(_cond(a)), b)), (0, 1),
                                 special_inputs="finite"),
    "Cholesky": Row(inputs(_SQ), lambda x: jf.linalg.cholesky(_jf_spd(x)), _f64(lambda x: np.linalg.cholesky(_spd(x))),
                    (0,), special_inputs="finite"),
    "Qr": Row(inputs(data((2, 4, 3), -1, 1)), _qr_call, _factor_ref, (0,), special_inputs="finite"),
    "Svd": Row(inputs(data((2, 4, 3), -1, 1)), _svd_call, _factor_ref, (0,), special_inputs="finite"),
    "SelfAdjointEigV2": Row(inputs(_SQ), _eigh_call, _eigh_ref, (0,), special_inputs="finite"),
})


# ---- activations (jf.nn): inputs kept off the kinks (0, and 6 for Relu6) for the
# finite differences; Softplus over both of TF's thresholds (float32's is +-13.9).
_SELU_SCALE, _SELU_SCALE_ALPHA = 1.0507009873554804934193349852946, 1.7580993408473768599402175208123


def _off_kinks(shape, lo, hi, kinks):
    base = data(shape, lo, hi)

    def make(d, rng):
        v = base(d, rng)
        if _SPECIAL[-1]:
            return v
        for k in kinks:
            v[np.abs(v - k) < 0.1] = k + 0.5
        return v
    return make


def _softplus_ref(x):
    return np.logaddexp(0.0, x)


ROWS.update({
    "Relu6": Row(inputs(_off_kinks((2, 3), -3.0, 9.0, (0, 6))), jf.nn.relu6,
                 _f64(lambda x: np.minimum(np.maximum(x, 0), 6)), (0,)),  # relu6(-0) is +0
    "Elu": unary(jf.nn.elu, lambda x: np.where(x < 0, np.expm1(x), x)),
    "Selu": Row(inputs(_off_kinks((2, 3), -3.0, 3.0, (0,))), jf.nn.selu,
                _f64(lambda x: np.where(x < 0, _SELU_SCALE_ALPHA * np.expm1(x), _SELU_SCALE * x)), (0,)),
    "Softplus": unary(jf.nn.softplus, _softplus_ref, lo=-40.0, hi=40.0),
    "Softsign": unary(jf.nn.softsign, lambda x: x / (1 + np.abs(x))),
    "LeakyRelu": Row(inputs(_off_kinks((2, 3), -3.0, 3.0, (0,))), lambda x: jf.nn.leaky_relu(x, alpha=0.3),
                     _f64(lambda x: np.where(x > 0, x, 0.3 * x)), (0,)),
})


# ---- statistics (stats_ops.py): bool reductions over a 2-dim (size 0: the identity), segment
# reductions with an empty segment (sorted) and a dropped negative id (unsorted; no empty
# segment there: its lowest value would overflow the finite differences' weighted sum).
def _segment_ref(combine, n=None, init=None, mean=False):
    """Per segment, combine(rows) of x (in x's dtype: max/min are exact; integer products
    wrap as TF's); empty: init, or 1 for products and 0 otherwise."""
    def ref(x, ids):
        count = n if n is not None else (int(ids[-1]) + 1 if ids.size else 0)
        empty = 1 if combine is np.prod else 0 if init is None else init(x.dtype)
        out = np.full((count,) + x.shape[1:], empty, x.dtype)
        for s in range(count):
            rows = x[ids == s]
            if len(rows):
                v = combine(rows, axis=0)
                out[s] = np.trunc(v / len(rows)) if mean and x.dtype.kind == "i" else (v / len(rows) if mean else v)
        return out
    return ref


def _euclidean_ref(x):
    """sqrt(sum(x * x)) in float64 (complex: x times its conjugate); integers square and sum in
    their dtype (wrapping) and take the truncated root, a signed sum that wrapped negative the
    dtype's lowest value, as TF's kernel."""
    if _is_float(x.dtype):
        return np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=1)).astype(x.dtype)
    if x.dtype.kind == "c":
        z = x.astype(np.complex128)
        return np.sqrt(np.sum(z * np.conj(z), axis=1)).astype(x.dtype)
    s = np.sum(x * x, axis=1, dtype=x.dtype)
    with np.errstate(invalid="ignore"):
        r = np.trunc(np.sqrt(s.astype(np.float64)))
    return np.where(s < 0, np.iinfo(x.dtype).min, np.nan_to_num(r)).astype(x.dtype)


def _euclidean_squares_in_dtype(x):
    """TF's kernel squares in the input's dtype, unscaled: a subnormal's square is 0."""
    return np.sqrt(np.sum((x * x).astype(np.float64), axis=1)).astype(x.dtype)


def _lowest(d):
    return ml_dtypes.finfo(d).min if _is_float(d) else np.iinfo(d).min


def _highest(d):
    return ml_dtypes.finfo(d).max if _is_float(d) else np.iinfo(d).max


def _special_inputs_of(combine):
    """Max and min segments see no NaN on special values: which of a segment's values TF's
    kernels keep then depends on their order. Products see no inf (see Row.special_inputs)."""
    return {np.max: "no_nan", np.min: "no_nan", np.prod: "no_inf"}.get(combine, "all")


def _sorted_segment_row(fn, combine, mean=False):
    return Row(lambda d, rng: (data((4, 2))(d, rng), np.array([0, 0, 2, 3], np.int32)), fn,
               _segment_ref(combine, mean=mean), (0,), special_inputs=_special_inputs_of(combine))


def _unsorted_segment_row(fn, combine, init):
    # An unsorted max (min) starts from the lowest (highest) finite value, which -inf (inf)
    # never beats.
    start = {np.max: np.maximum, np.min: np.minimum}.get(combine)
    special = None if start is None else (
        lambda x, i: start(_segment_ref(combine, 2, init)(x, i), init(x.dtype)))
    return Row(lambda d, rng: (data((4, 2))(d, rng), np.array([1, 0, -1, 1], np.int64)),
               lambda x, i: fn(x, i, 2), _segment_ref(combine, 2, init), (0,),
               special_inputs=_special_inputs_of(combine), special_ref=special)


ROWS.update({
    "Any": Row(inputs(data((3, 2))), lambda x: jf.reduce_any(x, axis=1), lambda x: np.any(x, axis=1)),
    "All": Row(inputs(data((3, 2))), lambda x: jf.math.reduce_all(x, axis=1), lambda x: np.all(x, axis=1)),
    "EuclideanNorm": Row(inputs(data((3, 2), -9, 9)), lambda x: jf.math.reduce_euclidean_norm(x, axis=1),
                         _euclidean_ref, (0,), special_ref=_euclidean_squares_in_dtype),
    "SegmentSum": _sorted_segment_row(jf.math.segment_sum, np.sum),
    "SegmentMean": _sorted_segment_row(jf.math.segment_mean, np.sum, mean=True),
    "SegmentMax": _sorted_segment_row(jf.math.segment_max, np.max),
    "SegmentMin": _sorted_segment_row(jf.math.segment_min, np.min),
    "UnsortedSegmentMax": _unsorted_segment_row(jf.math.unsorted_segment_max, np.max, _lowest),
    "UnsortedSegmentMin": _unsorted_segment_row(jf.math.unsorted_segment_min, np.min, _highest),
    "SegmentProd": _sorted_segment_row(jf.math.segment_prod, np.prod),
    "UnsortedSegmentProd": _unsorted_segment_row(jf.math.unsorted_segment_prod, np.prod, None),
})


# ---- debugging (jf.debugging): CheckNumerics on finite values is its input (NaN/Inf, the
# messages and the asserts' failures: tests/python/ops/test_debugging_ops.py). Assert's row
# passes (a true condition) and returns its data through an Identity; under jit_compile=True
# it is dropped, as TF's XLA does, instead of refused.
def _assert_row_make(d, rng):
    x = data((2, 3))(F32, rng)
    return (np.asarray(True) if d == BOOL else np.ones((), np.dtype(d)), x)


def _assert_row_call(c, x):
    jf.debugging.Assert(c, [x, "data"], summarize=4)
    return jf.identity(x)


ROWS.update({
    "CheckNumerics": dataclasses.replace(unary(lambda x: jf.debugging.check_numerics(x, "row"), lambda x: x),
                                         special_inputs="finite"),  # NaN and Inf raise
    "Assert": Row(_assert_row_make, _assert_row_call, lambda c, x: x, runs_around_jit=True),
})


# Autodiff control: StopGradient is an identity; that no gradient passes is
# tests/python/autodiff/test_autodiff_control.py's.
ROWS.update({
    "StopGradient": unary(jf.stop_gradient, lambda x: x, grad=()),
})


# Ops without a row, and why (each is exercised by its own tests).
EXEMPT = {
    "Placeholder": "a function's input: every function-mode row makes them",
    "XlaLaunch": "a compiled cluster: every jit_compile row runs one",
    "If": "control flow: tests/python/tracing/test_function.py, test_control_flow.py and test_while_grad.py",
    "While": "control flow: tests/python/tracing/test_function.py, test_control_flow.py and test_while_grad.py",
    "PrintV2": "prints, returns nothing: tests/python/tracing/test_function.py (test_print_*)",
    "EagerPyFunc": "calls Python (jf.py_function): tests/python/tracing/test_py_function.py, every mode and dtype",
    "PyFunc": "calls Python (jf.numpy_function): tests/python/tracing/test_py_function.py",
    "CollectiveAllReduce": "an all-reduce across MPI processes: tests/python/distribute/ under mpirun -np 2",
    "StringJoin": "strings: tests/python/tracing/test_string_inputs.py and ops/test_strings.py",
    "StringLength": "strings: tests/python/tracing/test_string_inputs.py and ops/test_strings.py",
    "StringFormat": "strings: tests/python/tracing/test_string_inputs.py and ops/test_strings.py",
    "AsString": "strings: tests/python/tracing/test_string_inputs.py and ops/test_strings.py",
    "StringToNumber": "strings: tests/python/tracing/test_string_inputs.py and ops/test_strings.py",
    "StringToHashBucketFast": "strings: TF's bucket numbers in every mode, tests/python/ops/test_string_hash.py",
    "StringToHashBucketStrong": "strings: TF's bucket numbers in every mode, tests/python/ops/test_string_hash.py",
}


# TensorArray buffer ops: reached through jf.TensorArray; the rows call them
# directly (tests/python/tracing/test_tensor_array.py tests the array). Under jit_compile=True they run
# on the executor around the compiled unit, as variable accesses do.
def _ta_write_ref(b, v):
    out = np.array(b, copy=True)
    out[1] = v
    return out


def _ta_ops():
    from jitflow.tracing import tensor_array as ta
    return ta


ROWS.update({
    "TensorArrayWrite": Row(inputs(data((4, 2)), data((2,))),
                            lambda b, v: _ta_ops()._write(b, jf.constant(1), v, 0), _ta_write_ref, (0, 1),
                            runs_around_jit=True),
    "TensorArrayRead": Row(inputs(data((4, 2))),
                           lambda b: _ta_ops()._read(b, jf.constant(4), jf.constant([2, 0])),
                           lambda b: b[[2, 0]], (0,), runs_around_jit=True),
    "TensorArrayStack": Row(inputs(data((4, 2))), lambda b: _ta_ops()._stack(b, jf.constant(3)),
                            lambda b: b[:3], (0,), runs_around_jit=True),
})


# ---- Philox samplers (jf.random; tests/python/random_ref.py is their numpy reference) ---------
# They take an int64[3] generator state (their types column), so the rows pass one state; the
# uniform and int samplers are exact, the normals (log/sin/cos) are checked to a tolerance
# against the reference in check rows, with more draws in tests/python/ops/test_random_philox.py.
def _philox_rows():
    import random_ref as R

    state = R.from_seed(7, 11)
    st = lambda d: np.array(state).astype(d)
    shape = lambda: [_SIZE[-1], 3]
    n = lambda: _SIZE[-1] * 3

    def sample(op, s, dtype, extra=()):
        return jf.random._sample(op, shape(), s, dtype, extra)

    def both(op, ref):  # a float32 and a float64 draw from one state
        return Row(lambda d, rng: (st(d),),
                   lambda s: (sample(op, s, jf.float32), sample(op, s, jf.float64)),
                   lambda s: tuple(ref(s, n(), t).reshape(shape()) for t in (np.float32, np.float64)))

    def normal_check(ref):
        def call(s):  # the harness passes the dtype's name in check mode, tensors otherwise
            s = state if isinstance(s, str) else s
            return (ref[0](jf.constant(s) if isinstance(s, np.ndarray) else s, jf.float32),
                    ref[0](jf.constant(s) if isinstance(s, np.ndarray) else s, jf.float64))

        def check(out, d):
            want = ref[1](state, out.size, out.dtype.type).reshape(out.shape)
            np.testing.assert_allclose(out, want, rtol=2e-6 if out.dtype == np.float32 else 1e-12, atol=1e-6)
        return Row(lambda d, rng: (st(d),), call, check=check)

    def dist_check(op, param, mean, var, extra=None):
        def call(x):
            a = np.full([4000], param, x) if isinstance(x, str) else x
            args = (a,) if extra is None else (a, np.full(np.shape(a), extra, np.asarray(a).dtype))
            return jf.random._x(op, tuple(jf.constant(v) if isinstance(v, np.ndarray) else v for v in args)
                                + (jf.constant(state),))

        def check(out, d):
            assert out.shape == (4000,) and out.dtype == np.dtype(d)
            out = out.astype(np.float64)  # float16 sums of squares overflow
            assert abs(out.mean() - mean) < 0.1 * max(1, mean) and abs(out.var() - var) < 0.15 * max(1, var)
        return Row(lambda d, rng: (np.full([4], param).astype(d),), call, check=check)

    def index_call(x):
        idx = np.arange(10, dtype=x) if isinstance(x, str) else x
        return jf.random.experimental.index_shuffle(idx, np.array([2, 3], np.asarray(idx).dtype), 9)

    def index_check(out, d):
        assert out.dtype == np.dtype(d) and sorted(out.tolist()) == list(range(10))

    return {
        "StatelessRandomGetKeyCounter": Row(lambda d, rng: (np.array([7, 11], d),), jf.random._seed_state,
                                            lambda s: R.from_seed(*s), resizable=False),
        "StatelessRandomUniformV2": both("StatelessRandomUniformV2", R.uniform),
        "StatelessRandomUniformFullIntV2": Row(
            lambda d, rng: (st(d),),
            lambda s: (sample("StatelessRandomUniformFullIntV2", s, jf.int32),
                       sample("StatelessRandomUniformFullIntV2", s, jf.int64)),
            lambda s: tuple(R.bits(s, n(), t).reshape(shape()) for t in (np.int32, np.int64))),
        "StatelessRandomUniformIntV2": Row(
            lambda d, rng: (st(d), np.array(-5, np.int32), np.array(100, np.int32)),
            lambda s, lo, hi: sample("StatelessRandomUniformIntV2", s, None, (lo, hi)),
            lambda s, lo, hi: R.uniform_int(s, n(), -5, 100, np.int32).reshape(shape())),
        "StatelessRandomNormalV2": normal_check(
            (lambda s, t: jf.random._sample("StatelessRandomNormalV2", [6, 7], s, t),
             lambda s, k, t: R.normal(s, k, t))),
        "StatelessTruncatedNormalV2": normal_check(
            (lambda s, t: jf.random._sample("StatelessTruncatedNormalV2", [6, 7], s, t),
             lambda s, k, t: R.truncated_normal(s, k, t))),
        "StatelessShuffle": Row(lambda d, rng: (data((4, 2))(d, rng), np.array(state)),
                                lambda x, s: jf.random._x("StatelessShuffle", (x, s)),
                                lambda x, s: R.shuffle(s, x)),
        "StatelessRandomGammaV3": dist_check("StatelessRandomGammaV3", 3.0, 3.0, 3.0),
        "StatelessRandomPoisson": dist_check("StatelessRandomPoisson", 20.0, 20.0, 20.0),
        "StatelessRandomBinomial": dist_check("StatelessRandomBinomial", 40.0, 12.0, 8.4, extra=0.3),
        "RandomIndexShuffle": Row(lambda d, rng: (np.arange(10).astype(d),), index_call, check=index_check),
    }


ROWS.update(_philox_rows())
EXEMPT.update({
    "RandomPhiloxState": "internal and stateful (a fresh state per run): tests/python/ops/test_random_philox.py",
    "RngReadAndSkip": "a Generator's state variable op: tests/python/state/test_random_generator.py",
})


# ---- convolution and pooling (conv_ref.py's direct loops; tests/python/ops/test_conv.py and
# test_pool.py cover layouts, paddings, dilations and errors). The batch is the row's 2-dim.
def _conv_rows():
    import conv_ref as C

    from jitflow.ops.dispatch import OP, run

    def conv(x, w):
        return jf.nn.conv2d(x, w, [1, 2, 1, 1], "SAME")

    def batch_sizes(t, rest):  # [t's batch, *rest], known only at run time under input_signature
        return jf.concat([jf.shape(t)[:1], jf.constant(rest)], 0)

    pool = {"k": (3, 3), "strides": (2, 2), "padding": "SAME"}
    pool3 = {"k": (3, 3, 3), "strides": (2, 2, 2), "padding": "SAME"}
    return {
        "Conv2D": Row(inputs(data((2, 5, 5, 3), -1, 1), data((3, 3, 3, 3), -1, 1)), conv,
                      _f64(lambda x, w: C.conv2d(x, w, (2, 1), "SAME")), (0, 1), resizable=True),
        "FusedConv2D": Row(
            inputs(data((2, 5, 5, 3), -1, 1), data((3, 3, 3, 3), -1, 1), data((3,), -1, 1)),
            lambda x, w, b: run(OP["FusedConv2D"], (x, w, b), {"strides": [1, 2, 1, 1], "padding": "SAME",
                                                              "fused_ops": ["BiasAdd", "Relu"]}, None),
            _f64(lambda x, w, b: np.maximum(C.conv2d(x, w, (2, 1), "SAME") + b, 0))),
        "FusedDepthwiseConv2dNative": Row(
            inputs(data((2, 5, 5, 3), -1, 1), data((3, 3, 3, 3), -1, 1), data((9,), -1, 1)),
            lambda x, w, b: run(OP["FusedDepthwiseConv2dNative"], (x, w, b),
                                {"strides": [1, 2, 1, 1], "padding": "SAME", "fused_ops": ["BiasAdd", "Relu"]}, None),
            _f64(lambda x, w, b: np.maximum(C.depthwise(x, w, (2, 1), "SAME") + b, 0))),
        "FusedConv3D": Row(
            inputs(data((2, 5, 5, 4, 3), -1, 1), data((3, 1, 3, 3, 4), -1, 1), data((4,), -1, 1)),
            lambda x, w, b: run(OP["FusedConv3D"], (x, w, b), {"strides": [1, 2, 1, 1, 1], "padding": "SAME",
                                                              "fused_ops": ["BiasAdd", "Tanh"]}, None),
            _f64(lambda x, w, b: np.tanh(C.conv3d(x, w, (2, 1, 1), "SAME") + b))),
        "FusedConv2DBackpropInput": Row(
            inputs(data((2, 3, 5, 4), -1, 1), data((3, 3, 3, 4), -1, 1), data((3,), -1, 1)),
            lambda dy, w, b: run(OP["FusedConv2DBackpropInput"], (batch_sizes(dy, [5, 5, 3]), w, dy, b),
                                 {"strides": [1, 2, 1, 1], "padding": "SAME", "fused_ops": ["BiasAdd", "Relu"]},
                                 None),
            _f64(lambda dy, w, b: np.maximum(C.conv2d_input_grad((dy.shape[0], 5, 5, 3), w, dy, (2, 1), "SAME") + b,
                                             0))),
        "Conv2DBackpropInput": Row(
            inputs(data((2, 3, 5, 4), -1, 1), data((3, 3, 3, 4), -1, 1)),
            lambda dy, w: jf.nn.conv2d_transpose(dy, w, batch_sizes(dy, [5, 5, 3]), [1, 2, 1, 1], "SAME"),
            _f64(lambda dy, w: C.conv2d_input_grad((dy.shape[0], 5, 5, 3), w, dy, (2, 1), "SAME")), (0, 1)),
        "Conv2DBackpropFilter": Row(
            inputs(data((2, 5, 5, 3), -1, 1), data((2, 3, 5, 4), -1, 1)),
            lambda x, dy: run(OP["Conv2DBackpropFilter"], (x, jf.constant([3, 3, 3, 4]), dy),
                              {"strides": [1, 2, 1, 1], "padding": "SAME"}, None),
            _f64(lambda x, dy: C.conv2d_filter_grad(x, (3, 3, 3, 4), dy, (2, 1), "SAME")), (0, 1)),
        "DepthwiseConv2dNative": Row(
            inputs(data((2, 5, 5, 3), -1, 1), data((3, 3, 3, 3), -1, 1)),
            lambda x, w: jf.nn.depthwise_conv2d(x, w, [1, 2, 1, 1], "SAME"),
            _f64(lambda x, w: C.depthwise(x, w, (2, 1), "SAME")), (0, 1)),
        "DepthwiseConv2dNativeBackpropInput": Row(
            inputs(data((2, 3, 5, 9), -1, 1), data((3, 3, 3, 3), -1, 1)),
            lambda dy, w: jf.nn.depthwise_conv2d_backprop_input(batch_sizes(dy, [5, 5, 3]), w, dy, [1, 2, 1, 1],
                                                                "SAME"),
            _f64(lambda dy, w: C.depthwise_input_grad((dy.shape[0], 5, 5, 3), w, dy, (2, 1), "SAME")), (0, 1)),
        "DepthwiseConv2dNativeBackpropFilter": Row(
            inputs(data((2, 5, 5, 3), -1, 1), data((2, 3, 5, 9), -1, 1)),
            lambda x, dy: jf.nn.depthwise_conv2d_backprop_filter(x, [3, 3, 3, 3], dy, [1, 2, 1, 1], "SAME"),
            _f64(lambda x, dy: C.depthwise_filter_grad(x, (3, 3, 3, 3), dy, (2, 1), "SAME")), (0, 1)),
        "Conv3D": Row(inputs(data((2, 5, 5, 4, 3), -1, 1), data((3, 1, 3, 3, 4), -1, 1)),
                      lambda x, w: jf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME"),
                      _f64(lambda x, w: C.conv3d(x, w, (2, 1, 1), "SAME")), (0, 1)),
        "Conv3DBackpropInputV2": Row(
            inputs(data((2, 3, 5, 4, 4), -1, 1), data((3, 1, 3, 3, 4), -1, 1)),
            lambda dy, w: jf.nn.conv3d_transpose(dy, w, batch_sizes(dy, [5, 5, 4, 3]), [1, 2, 1, 1, 1], "SAME"),
            _f64(lambda dy, w: C.conv3d_input_grad((dy.shape[0], 5, 5, 4, 3), w, dy, (2, 1, 1), "SAME")), (0, 1)),
        "Conv3DBackpropFilterV2": Row(
            inputs(data((2, 5, 5, 4, 3), -1, 1), data((2, 3, 5, 4, 4), -1, 1)),
            lambda x, dy: run(OP["Conv3DBackpropFilterV2"], (x, jf.constant([3, 1, 3, 3, 4]), dy),
                              {"strides": [1, 2, 1, 1, 1], "padding": "SAME"}, None),
            _f64(lambda x, dy: C.conv3d_filter_grad(x, (3, 1, 3, 3, 4), dy, (2, 1, 1), "SAME")), (0, 1)),
        "MaxPool3D": Row(inputs(data((2, 7, 5, 6, 3))), lambda x: jf.nn.max_pool3d(x, 3, 2, "SAME"),
                         lambda x: C.pool3d(x, **pool3, kind="max").astype(x.dtype), (0,)),
        "MaxPool3DGrad": Row(
            inputs(data((2, 7, 5, 6, 3)), data((2, 4, 3, 3, 3))),
            lambda x, g: run(OP["MaxPool3DGrad"], (x, jf.nn.max_pool3d(x, 3, 2, "SAME"), g),
                             {"ksize": [1, 3, 3, 3, 1], "strides": [1, 2, 2, 2, 1], "padding": "SAME"}, None),
            lambda x, g: C.max_pool3d_grad(x, g, **pool3).astype(x.dtype), (1,)),
        "MaxPool3DGradGrad": Row(
            inputs(data((2, 7, 5, 6, 3)), data((2, 7, 5, 6, 3))),
            lambda x, g: run(OP["MaxPool3DGradGrad"], (x, jf.nn.max_pool3d(x, 3, 2, "SAME"), g),
                             {"ksize": [1, 3, 3, 3, 1], "strides": [1, 2, 2, 2, 1], "padding": "SAME"}, None),
            lambda x, g: C.max_pool3d_grad_grad(x, g, **pool3).astype(x.dtype), (1,)),
        "AvgPool3D": Row(inputs(data((2, 7, 5, 6, 3))), lambda x: jf.nn.avg_pool3d(x, 3, 2, "SAME"),
                         _f64(lambda x: C.pool3d(x, **pool3, kind="avg")), (0,)),
        "AvgPool3DGrad": Row(
            inputs(data((2, 4, 3, 3, 3))),
            lambda g: run(OP["AvgPool3DGrad"], (batch_sizes(g, [7, 5, 6, 3]), g),
                          {"ksize": [1, 3, 3, 3, 1], "strides": [1, 2, 2, 2, 1], "padding": "SAME"}, None),
            _f64(lambda g: C.avg_pool3d_grad((g.shape[0], 7, 5, 6, 3), g, **pool3)), (0,)),
        "BiasAdd": Row(inputs(data((2, 3, 4)), data((4,))), jf.nn.bias_add, _f64(lambda x, b: x + b), (0, 1)),
        "BiasAddGrad": Row(inputs(data((2, 3, 4))), lambda g: run(OP["BiasAddGrad"], (g,), None, None),
                           _f64(lambda g: g.sum(axis=(0, 1))), (0,)),
        "MaxPool": Row(inputs(data((2, 5, 5, 3))), lambda x: jf.nn.max_pool2d(x, 3, 2, "SAME"),
                       lambda x: C.max_pool(x, **pool).astype(x.dtype), (0,)),
        "MaxPoolGrad": Row(
            inputs(data((2, 5, 5, 3)), data((2, 3, 3, 3))),
            lambda x, g: run(OP["MaxPoolGrad"], (x, jf.nn.max_pool2d(x, 3, 2, "SAME"), g),
                             {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}, None),
            lambda x, g: C.max_pool_grad(x, g, **pool).astype(x.dtype), (1,)),
        "MaxPoolGradGrad": Row(
            inputs(data((2, 5, 5, 3)), data((2, 5, 5, 3))),
            lambda x, g: run(OP["MaxPoolGradGrad"], (x, jf.nn.max_pool2d(x, 3, 2, "SAME"), g),
                             {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}, None),
            lambda x, g: C.max_pool_grad_grad(x, g, **pool).astype(x.dtype), (1,)),
        "AvgPool": Row(inputs(data((2, 5, 5, 3))), lambda x: jf.nn.avg_pool2d(x, 3, 2, "SAME"),
                       _f64(lambda x: C.avg_pool(x, **pool)), (0,)),
        "AvgPoolGrad": Row(
            inputs(data((2, 3, 3, 3))),
            lambda g: run(OP["AvgPoolGrad"], (batch_sizes(g, [5, 5, 3]), g),
                          {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}, None),
            _f64(lambda g: C.avg_pool_grad((g.shape[0], 5, 5, 3), g, **pool)), (0,)),
    }


ROWS.update(_conv_rows())


# ---- complex numbers ------------------------------------------------------------------------
def _as_complex(x):
    """A complex input for the complex-only ops' rows; the gradient check draws float64
    values and goes through jf.complex (so both parts of the gradient are checked)."""
    return x if x.dtype.kind == "c" else x + 1j * (1.5 - 0.5 * x)


def _complex_row(fn, ref):
    def call(x):
        return fn(x if x.dtype.is_complex else jf.complex(x, 1.5 - 0.5 * x))
    return Row(inputs(data((2, 3), nonzero=True)), call, lambda x: ref(_as_complex(x)), (0,))


ROWS.update({
    "Complex": Row(inputs(data((2, 3)), data((3,))), jf.complex, lambda re, im: re + 1j * im, (0, 1)),
    "Real": _complex_row(jf.math.real, np.real),
    "Imag": _complex_row(jf.math.imag, np.imag),
    "Conj": _complex_row(jf.math.conj, np.conj),
    "Angle": _complex_row(jf.math.angle, np.angle),
    "ComplexAbs": _complex_row(jf.abs, np.abs),
    # FFTs (tests/python/ops/test_signal.py covers lengths, 2-D/3-D and TF's conventions).
    "FFT": _complex_row(jf.signal.fft, lambda z: np.fft.fft(z).astype(z.dtype)),
    "IFFT": _complex_row(jf.signal.ifft, lambda z: np.fft.ifft(z).astype(z.dtype)),
    "RFFT": Row(inputs(data((2, 3))), lambda x: jf.signal.rfft(x, [4]), lambda x: np.fft.rfft(x, 4), (0,)),
    "IRFFT": _complex_row(lambda z: jf.signal.irfft(z, [4]), lambda z: np.fft.irfft(z, 4)),
})
