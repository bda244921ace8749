"""Eager ops against numpy (docs/user_guide.md, 'Eager tensors' and 'Results and errors').

Every float result is compared with a float64 numpy reference computed from the same inputs
(rtol 1e-5 for float32, 1e-12 for float64); integer and bool results must be exact. Shapes
include size-0 and size-1 dims and numpy broadcasting; NaN/Inf must propagate as in numpy.
"""
import math

import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf

F32, F64, I32, I64, BOOL = np.float32, np.float64, np.int32, np.int64, np.bool_
FLOATS = [F32, F64]
INTS = [I32, I64]
NUMERIC = FLOATS + INTS
ALL = NUMERIC + [BOOL]
RTOL = {np.dtype(F32): 1e-5, np.dtype(F64): 1e-12}
JF_DTYPE = {np.dtype(F32): jf.float32, np.dtype(F64): jf.float64, np.dtype(I32): jf.int32,
            np.dtype(I64): jf.int64, np.dtype(BOOL): jf.bool}


def name_of(dt):
    return np.dtype(dt).name


# ---- helpers -------------------------------------------------------------------------
def gen(rng, shape, dtype, low=-3.0, high=3.0):
    """Random values of `dtype`; ints are drawn from [low, high], floats from [low, high)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "i":
        return np.asarray(rng.integers(int(low), int(high), size=shape, endpoint=True), dtype)
    return np.asarray(rng.uniform(low, high, size=shape), dtype)


def f64(x):
    return np.asarray(x, np.float64)


def assert_matches(actual, expected, dtype, scale=None, atol=None):
    """`actual` (a jf.Tensor) has `dtype`, `expected`'s shape, and its values: exact for ints
    and bools; for floats |a - e| <= rtol * (|e| + scale) + atol with NaN where `expected`
    has NaN and the same infinities. `scale` is the magnitude of the terms the result was
    accumulated from (e.g. sum(|x|) for a sum), 1e-2 by default."""
    assert isinstance(actual, jf.Tensor), type(actual)
    dtype = np.dtype(dtype)
    assert actual.dtype == JF_DTYPE[dtype], (actual.dtype, dtype)
    a = actual.numpy()
    expected = np.asarray(expected)
    assert a.dtype == dtype
    assert a.shape == expected.shape, (a.shape, expected.shape)
    if dtype.kind in "bi":
        np.testing.assert_array_equal(a, expected.astype(dtype))
        return
    a64, e = f64(a), f64(expected)
    nan_a, nan_e = np.isnan(a64), np.isnan(e)
    assert np.array_equal(nan_a, nan_e), f"NaN mismatch:\n  got {a}\n  want {expected}"
    inf_e = np.isinf(e)
    assert np.array_equal(a64[inf_e], e[inf_e]), f"Inf mismatch:\n  got {a}\n  want {expected}"
    assert not np.isinf(a64[~inf_e]).any(), f"unexpected Inf:\n  got {a}\n  want {expected}"
    fin = ~(nan_e | inf_e)
    rtol = RTOL[dtype]
    sc = 1e-2 if scale is None else f64(np.broadcast_to(scale, e.shape))[fin]
    tol = rtol * (np.abs(e[fin]) + sc) + (atol or 0.0)
    err = np.abs(a64[fin] - e[fin])
    if err.size and not (err <= tol).all():
        i = int(np.argmax(err - tol))
        raise AssertionError(f"max error {err[i]:.3g} > tol {np.ravel(tol)[i]:.3g} at flat index {i}: "
                             f"got {a64[fin][i]!r}, want {e[fin][i]!r}")


def test_assert_matches_rejects_wrong_results():
    """The checker every test below relies on can fail: wrong value, NaN, Inf, shape, dtype."""
    t = jf.constant([1.0, 2.0])
    assert_matches(t, [1.0, 2.0 + 1e-6], F32)
    for bad in ([1.0, 2.001], [1.0, np.nan], [1.0, np.inf], [[1.0, 2.0]], [1.0, 2.0, 3.0]):
        with pytest.raises(AssertionError):
            assert_matches(t, bad, F32)
    with pytest.raises(AssertionError):
        assert_matches(t, [1.0, 2.0], F64)
    with pytest.raises(AssertionError):
        assert_matches(jf.constant([1, 2]), [1, 3], I32)
    with pytest.raises(AssertionError):
        assert_matches(jf.constant([np.nan, 1.0]), [np.nan, np.nan], F32)


def rand_broadcast_pairs(seed, n):
    """n random (shape_a, shape_b) pairs that broadcast, with 0 and 1 dims."""
    r = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        rank = int(r.integers(0, 5))
        full = [int(r.choice([0, 1, 2, 3, 4])) for _ in range(rank)]
        a, b = list(full), list(full)
        for i in range(rank):
            k = r.random()
            if k < 0.25:
                a[i] = 1
            elif k < 0.5:
                b[i] = 1
        b = b[int(r.integers(0, rank + 1)):]  # drop leading dims of b
        pair = (tuple(a), tuple(b)) if r.random() < 0.5 else (tuple(b), tuple(a))
        if pair not in out:
            out.append(pair)
    return out


UNARY_SHAPES = [(), (1,), (0,), (7,), (3, 1), (2, 0, 3), (4, 5), (2, 3, 1, 4), (1, 1, 1),
                (33, 17), (300, 301)]
BINARY_SHAPES = [
    ((), ()), ((5,), ()), ((), (5,)), ((4, 3), (4, 3)), ((4, 3), (3,)), ((4, 1), (1, 3)),
    ((2, 1, 4), (3, 1)), ((0,), (1,)), ((1,), (0,)), ((0, 3), (3,)), ((2, 0, 3), (2, 1, 3)),
    ((1, 1), (1,)), ((3, 1, 5, 1), (4, 1, 6)), ((200, 300), (300,)), ((1, 70000), (1,)),
    ((64, 1, 1000), (64, 3, 1)),
] + rand_broadcast_pairs(1234, 6)


def shape_id(s):
    return "x".join(map(str, s)) if s else "scalar"


def pair_id(p):
    return f"{shape_id(p[0])}-{shape_id(p[1])}"


# ---- unary elementwise ---------------------------------------------------------------
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_erf = np.vectorize(math.erf, otypes=[np.float64])

# name: (jitflow fn, float64 reference, dtypes, input range)
UNARY = {
    "identity": (jf.identity, lambda x: x, ALL, (-3, 3)),
    "negative": (jf.negative, np.negative, NUMERIC, (-3, 3)),
    "abs": (jf.abs, np.abs, NUMERIC, (-3, 3)),
    "square": (jf.square, np.square, NUMERIC, (-3, 3)),
    "relu": (jf.nn.relu, lambda x: np.maximum(x, 0), NUMERIC, (-3, 3)),
    "exp": (jf.exp, np.exp, FLOATS, (-5, 5)),
    "log": (jf.log, np.log, FLOATS, (0.01, 10)),
    "tanh": (jf.tanh, np.tanh, FLOATS, (-4, 4)),
    "sigmoid": (jf.sigmoid, _sigmoid, FLOATS, (-8, 8)),
    "nn.sigmoid": (jf.nn.sigmoid, _sigmoid, FLOATS, (-8, 8)),
    "sqrt": (jf.sqrt, np.sqrt, FLOATS, (0, 10)),
    "rsqrt": (jf.rsqrt, lambda x: 1.0 / np.sqrt(x), FLOATS, (0.01, 10)),
    "sin": (jf.sin, np.sin, FLOATS, (-10, 10)),
    "cos": (jf.cos, np.cos, FLOATS, (-10, 10)),
    "erf": (jf.erf, _erf, FLOATS, (-3, 3)),
    "logical_not": (jf.logical_not, np.logical_not, [BOOL], (0, 1)),
}
UNARY_CASES = [(op, dt) for op, spec in UNARY.items() for dt in spec[2]]


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=shape_id)
@pytest.mark.parametrize("op,dtype", UNARY_CASES, ids=[f"{o}-{name_of(d)}" for o, d in UNARY_CASES])
def test_unary(op, dtype, shape, rng):
    fn, ref, _, (lo, hi) = UNARY[op]
    x = gen(rng, shape, dtype, lo, hi)
    got = fn(jf.constant(x))
    want = ref(x) if np.dtype(dtype).kind in "bi" else ref(f64(x))
    assert_matches(got, want, dtype)


def test_unary_accepts_python_and_numpy_values():
    assert_matches(jf.exp([0.0, 1.0]), np.exp([0.0, 1.0]), F32)  # lists of floats -> float32
    assert_matches(jf.abs(np.array([-2, 3], I64)), [2, 3], I64)
    assert_matches(jf.negative(3), np.int32(-3), I32)


# ---- binary elementwise --------------------------------------------------------------
class Bin:
    def __init__(self, fn, ref, dtypes, out=None, a=(-3, 3), b=(-3, 3), nonzero=False,
                 integral=False, int_b=None):
        self.fn, self.ref, self.dtypes, self.out = fn, ref, dtypes, out
        self.a, self.b, self.nonzero, self.integral, self.int_b = a, b, nonzero, integral, int_b

    def inputs(self, rng, sa, sb, dtype):
        dtype = np.dtype(dtype)
        is_int = dtype.kind == "i"
        if self.integral and dtype.kind == "f":  # integer-valued floats: floor(a / b) is exact
            a = gen(rng, sa, I64, *self.a).astype(dtype)
            b = gen(rng, sb, I64, *self.b).astype(dtype)
        else:
            a = gen(rng, sa, dtype, *self.a)
            b = gen(rng, sb, dtype, *(self.int_b if is_int and self.int_b else self.b))
        if self.nonzero:
            b = np.where(b == 0, np.asarray(1, dtype), b)
        return a, b

    def out_dtype(self, dtype):
        return np.dtype(self.out(dtype) if callable(self.out) else (self.out or dtype))


CMP = {"out": BOOL, "a": (-2, 2), "b": (-2, 2), "integral": True}  # small ints: many ties
BINARY = {
    "add": Bin(jf.add, np.add, NUMERIC),
    "subtract": Bin(jf.subtract, np.subtract, NUMERIC),
    "multiply": Bin(jf.multiply, np.multiply, NUMERIC),
    "divide": Bin(jf.divide, lambda a, b: f64(a) / f64(b), NUMERIC, nonzero=True,
                  out=lambda d: d if np.dtype(d).kind == "f" else F64),
    "maximum": Bin(jf.maximum, np.maximum, NUMERIC),
    "minimum": Bin(jf.minimum, np.minimum, NUMERIC),
    "pow": Bin(jf.pow, np.power, NUMERIC, a=(0.1, 3), b=(-2, 2), int_b=(0, 5)),
    "floordiv": Bin(jf.floordiv, np.floor_divide, NUMERIC, a=(-20, 20), b=(-6, 6), nonzero=True,
                    integral=True),
    "floormod": Bin(jf.floormod, np.mod, NUMERIC, a=(-20, 20), b=(-6, 6), nonzero=True,
                    integral=True),
    "equal": Bin(jf.equal, np.equal, ALL, **CMP),
    "not_equal": Bin(jf.not_equal, np.not_equal, ALL, **CMP),
    "less": Bin(jf.less, np.less, NUMERIC, **CMP),
    "less_equal": Bin(jf.less_equal, np.less_equal, NUMERIC, **CMP),
    "greater": Bin(jf.greater, np.greater, NUMERIC, **CMP),
    "greater_equal": Bin(jf.greater_equal, np.greater_equal, NUMERIC, **CMP),
    "logical_and": Bin(jf.logical_and, np.logical_and, [BOOL]),
    "logical_or": Bin(jf.logical_or, np.logical_or, [BOOL]),
}
BINARY_CASES = [(op, dt) for op, spec in BINARY.items() for dt in spec.dtypes]


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=pair_id)
@pytest.mark.parametrize("op,dtype", BINARY_CASES, ids=[f"{o}-{name_of(d)}" for o, d in BINARY_CASES])
def test_binary(op, dtype, shapes, rng):
    spec = BINARY[op]
    a, b = spec.inputs(rng, *shapes, dtype)
    got = spec.fn(jf.constant(a), jf.constant(b))
    kind = np.dtype(dtype).kind
    want = spec.ref(a, b) if kind in "bi" else spec.ref(f64(a), f64(b))
    assert_matches(got, want, spec.out_dtype(dtype))


@pytest.mark.parametrize("dtype", NUMERIC, ids=name_of)
def test_integer_division_semantics(dtype):
    a = np.array([-7, 7, -7, 7, 0, -1, 6], dtype)
    b = np.array([2, -2, -2, 2, 3, 4, 3], dtype)
    assert_matches(jf.floordiv(a, b), np.floor_divide(a, b), dtype)  # floor, not truncation
    assert_matches(jf.floormod(a, b), np.mod(a, b), dtype)  # sign of the divisor
    want = np.array([-3.5, -3.5, 3.5, 3.5, 0.0, -0.25, 2.0])
    assert_matches(jf.divide(a, b), want, dtype if np.dtype(dtype).kind == "f" else F64)


@pytest.mark.parametrize("dtype", INTS, ids=name_of)
def test_integer_floordiv_lowest_by_minus_one_wraps(dtype):
    lo = np.iinfo(dtype).min
    a = np.array([lo, lo, 5], dtype)
    with np.errstate(over="ignore"):
        want_div = np.floor_divide(a, np.array(-1, dtype))
    assert_matches(jf.floordiv(a, np.array(-1, dtype)), want_div, dtype)
    assert_matches(jf.floormod(a, np.array(-1, dtype)), [0, 0, 0], dtype)


def test_integer_true_division_by_zero_is_inf_like_tf():
    got = jf.divide(jf.constant([1, -1, 0]), jf.constant([0, 0, 0]))
    assert_matches(got, [np.inf, -np.inf, np.nan], F64)


def test_int_pow_large_exponents_wrap_like_numpy():
    a = np.array([3, -2, 7], I32)
    b = np.array([25, 31, 0], I32)
    assert_matches(jf.pow(a, b), np.power(a, b), I32)


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("shape", [(), (0,), (3, 4), (2, 1, 3)], ids=shape_id)
@pytest.mark.parametrize("dtype", NUMERIC, ids=name_of)
def test_add_n(n, shape, dtype, rng):
    xs = [gen(rng, shape, dtype) for _ in range(n)]
    got = jf.add_n([jf.constant(x) for x in xs])
    want = sum(xs[1:], xs[0]) if np.dtype(dtype).kind == "i" else sum(f64(x) for x in xs)
    assert_matches(got, want, dtype)


# ---- NaN / Inf propagation -----------------------------------------------------------
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e-30, -8.0,
            -100.0, 100.0]


def specials(dtype, tile=1):
    """The special values plus subnormals of `dtype`, tiled so that the vectorized (packet)
    path of a kernel sees every one of them, not only the scalar tail."""
    fi = np.finfo(dtype)
    s = np.array(SPECIALS + [fi.tiny, fi.tiny / 4, -fi.tiny / 4, fi.smallest_subnormal], dtype)
    return np.tile(s, tile)


@pytest.mark.parametrize("op", [o for o, s in UNARY.items() if F32 in s[2]])
@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_unary_nan_inf_like_numpy(op, dtype):
    fn, ref = UNARY[op][:2]
    x = specials(dtype, tile=5)
    with np.errstate(all="ignore"):
        want = ref(f64(x)).astype(dtype)  # float64 result rounded to dtype (overflow -> inf)
    assert_matches(fn(x), want, dtype, atol=np.finfo(dtype).tiny)


# Signed zeros and negative subnormals, tiled so every vector width's packets see them: the
# results once depended on the instruction set a kernel was built for (-x of +0 was +0 with
# AVX, floor(-0) and ceil(-0.5) +0 without SSE4.1, rsqrt of a negative subnormal -inf with
# AVX2, relu(-0) -0 in part of an AVX-512 vector). TF's values; relu's and sign's zero is +0.
SIGNED_ZERO_CASES = {  # op: (function, inputs, TF's outputs), given s, the smallest subnormal
    "negative": (jf.negative, lambda s: [0.0, -0.0, s], lambda s: [-0.0, 0.0, -s]),
    "floor": (jf.floor, lambda s: [-0.0, 0.0, -0.5, s, -s], lambda s: [-0.0, 0.0, -1.0, 0.0, -1.0]),
    "ceil": (jf.math.ceil, lambda s: [-0.0, 0.0, -0.5, -s, s], lambda s: [-0.0, 0.0, -0.0, -0.0, 1.0]),
    "round": (jf.round, lambda s: [-0.0, -0.4, 0.4, -0.5, -s], lambda s: [-0.0, -0.0, 0.0, -0.0, -0.0]),
    "sqrt": (jf.sqrt, lambda s: [-0.0, -s, 4 * s, np.inf], lambda s: [-0.0, np.nan, 2 * np.sqrt(s), np.inf]),
    "rsqrt": (jf.math.rsqrt, lambda s: [-0.0, -s, -1000 * s, 0.0], lambda s: [-np.inf, np.nan, np.nan, np.inf]),
    "reciprocal": (jf.math.reciprocal, lambda s: [-0.0, 0.0, -s], lambda s: [-np.inf, np.inf, -np.inf]),
    "relu": (jf.nn.relu, lambda s: [-0.0, 0.0, -s, s], lambda s: [0.0, 0.0, 0.0, s]),
    "relu6": (jf.nn.relu6, lambda s: [-0.0, 0.0, -s, s], lambda s: [0.0, 0.0, 0.0, s]),
    "abs": (jf.abs, lambda s: [-0.0, -s], lambda s: [0.0, s]),
    "sign": (jf.sign, lambda s: [-0.0, 0.0, -s], lambda s: [0.0, 0.0, -1.0]),
    "tanh": (jf.tanh, lambda s: [-0.0, 0.0, -s], lambda s: [-0.0, 0.0, -s]),
    "exp": (jf.exp, lambda s: [-0.0, -s], lambda s: [1.0, 1.0]),
    "log": (jf.math.log, lambda s: [-0.0, -s, 0.0], lambda s: [-np.inf, np.nan, -np.inf]),
}


@pytest.mark.parametrize("op", SIGNED_ZERO_CASES)
@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
def test_unary_signed_zeros_and_subnormals_like_tf(op, dtype, mode):
    fn, xs, ws = SIGNED_ZERO_CASES[op]
    sub = np.finfo(dtype).smallest_subnormal
    x = np.tile(np.array(xs(sub), dtype), 16)
    want = np.tile(np.array(ws(np.float64(sub)), np.float64).astype(dtype), 16)
    got = run_mode(mode, fn, x).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=op)
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-6, err_msg=op)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]), err_msg=f"{op}: sign")


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum",
                                "pow"])
@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_binary_nan_inf_like_numpy(op, dtype):
    s = specials(dtype)
    a, b = np.meshgrid(s, s, indexing="ij")
    with np.errstate(all="ignore"):
        want = BINARY[op].ref(f64(a), f64(b)).astype(dtype)
    assert_matches(BINARY[op].fn(a, b), want, dtype, atol=np.finfo(dtype).tiny)


@pytest.mark.parametrize("op", ["equal", "not_equal", "less", "less_equal", "greater",
                                "greater_equal"])
def test_compare_nan_inf_like_numpy(op):
    s = specials(F32)
    a, b = np.meshgrid(s, s, indexing="ij")
    assert_matches(BINARY[op].fn(a, b), BINARY[op].ref(a, b), BOOL)


@pytest.mark.parametrize("op", ["floordiv", "floormod"])
@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_floor_ops_propagate_nan(op, dtype):
    """NaN in -> NaN out. Elsewhere numpy's results are checked where TF's floor(a / b) and
    numpy's divmod-based definition agree: finite operands and a normal quotient."""
    s = specials(dtype)
    a, b = np.meshgrid(s, s, indexing="ij")
    got = BINARY[op].fn(a, b).numpy()
    nan_in = np.isnan(a) | np.isnan(b)
    assert np.isnan(got[nan_in]).all()
    with np.errstate(all="ignore"):
        q = np.abs(a / b)
    finite = np.isfinite(a) & np.isfinite(b) & (b != 0) & np.isfinite(q) & ((q == 0) == (a == 0))
    finite &= (q == 0) | (q >= np.finfo(dtype).tiny)
    with np.errstate(all="ignore"):
        want = BINARY[op].ref(f64(a), f64(b)).astype(dtype)
    np.testing.assert_allclose(got[finite], want[finite], rtol=RTOL[np.dtype(dtype)])


# ---- reductions ----------------------------------------------------------------------
REDUCE_CASES = [
    ((), None), ((), []), ((5,), None), ((5,), 0), ((5,), -1), ((0,), None), ((0,), 0),
    ((3, 4), 0), ((3, 4), 1), ((3, 4), -2), ((3, 4), [0, 1]), ((3, 4), [-1, -2]),
    ((3, 0), 0), ((3, 0), 1), ((0, 4), 1), ((0, 4), 0),
    ((2, 3, 4), 1), ((2, 3, 4), [0, 2]), ((2, 3, 4), [-1, 0]), ((2, 3, 4), []),
    ((3, 4, 5), [0, 1]), ((3, 4, 5), [1, 2]), ((1, 3, 1), None), ((1, 3, 1), 1), ((1, 3, 1), [0, 2]),
    ((2, 1, 3, 4), [1, 3]), ((2, 3, 4, 5), [0, 2]), ((2, 3, 4, 5), [1, 3]), ((2, 3, 4, 5), (0, 3)),
    ((1, 100000), None), ((300, 400), 0), ((300, 400), 1), ((64, 3, 500), [0, 2]),
]


def _np_axis(axis, rank):
    if axis is None:
        return None
    if isinstance(axis, int):
        return axis
    return tuple(sorted({a % rank for a in axis})) if rank else tuple(axis)  # TF allows repeats


def _reduce_ref(op, x, axis, keepdims):
    """float64 (or native int) reference with TF's semantics for empty reductions."""
    kind = x.dtype.kind
    xr = f64(x) if kind == "f" else x
    kw = {"axis": axis, "keepdims": keepdims}
    if op == "sum":
        return np.sum(xr, dtype=xr.dtype, **kw), np.sum(np.abs(xr), **kw)
    if op == "prod":
        return np.prod(xr, dtype=xr.dtype, **kw), None
    if op == "max":
        init = -np.inf if kind == "f" else np.iinfo(x.dtype).min
        return np.max(xr, initial=init, **kw), None
    if op == "min":
        init = np.inf if kind == "f" else np.iinfo(x.dtype).max
        return np.min(xr, initial=init, **kw), None
    # mean; TF's integer mean truncates toward zero
    n = np.sum(np.ones_like(xr, dtype=np.int64), **kw)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sum(f64(x), **kw)
        m = s / n
        if kind == "i":
            return np.trunc(m).astype(x.dtype), None
        return m, np.sum(np.abs(f64(x)), **kw) / np.maximum(n, 1)


REDUCE_FNS = {"sum": jf.reduce_sum, "mean": jf.reduce_mean, "max": jf.reduce_max,
              "min": jf.reduce_min, "prod": jf.reduce_prod}


def _reduce_input(rng, op, shape, dtype, axis):
    axes = range(len(shape)) if axis is None else np.atleast_1d(np.asarray(axis, int))
    n_red = int(np.prod([shape[a] for a in axes]))
    if op == "prod":  # exact products: powers of two and signs (only signs for long ones)
        vals = [-1, 1] if n_red > 16 else [-1, 1, 2, -2] + ([0.5] if np.dtype(dtype).kind == "f" else [])
        return np.asarray(rng.choice(vals, size=shape), dtype)
    if op == "mean" and np.dtype(dtype).kind == "i":
        return gen(rng, shape, dtype, -50, 50)
    return gen(rng, shape, dtype)


@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keep"])
@pytest.mark.parametrize("case", REDUCE_CASES, ids=lambda c: f"{shape_id(c[0])}-ax{c[1]}")
@pytest.mark.parametrize("dtype", NUMERIC, ids=name_of)
@pytest.mark.parametrize("op", list(REDUCE_FNS))
def test_reduce(op, dtype, case, keepdims, rng):
    shape, axis = case
    if op == "mean" and np.dtype(dtype).kind == "i" and 0 in shape:
        shape = tuple(s or 1 for s in shape)  # integer mean of nothing is a division by zero
    x = _reduce_input(rng, op, shape, dtype, axis)
    got = REDUCE_FNS[op](jf.constant(x), axis=axis, keepdims=keepdims)
    want, scale = _reduce_ref(op, x, _np_axis(axis, len(shape)), keepdims)
    assert_matches(got, want, dtype, scale=scale)


def test_reduce_accepts_tuple_axis_and_numpy_input():
    x = np.arange(24, dtype=F64).reshape(2, 3, 4)
    assert_matches(jf.reduce_sum(x, axis=(0, 2)), x.sum(axis=(0, 2)), F64)
    assert_matches(jf.reduce_max(x, axis=np.int64(-1), keepdims=True), x.max(-1, keepdims=True), F64)


ARG_CASES = [((5,), 0), ((5,), -1), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1), ((2, 3, 4), -1),
             ((2, 0, 3), 2), ((1, 1), 0), ((7, 1, 300), 2), ((1000, 3), 0)]


@pytest.mark.parametrize("out", [jf.int32, jf.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("case", ARG_CASES, ids=lambda c: f"{shape_id(c[0])}-ax{c[1]}")
@pytest.mark.parametrize("dtype", NUMERIC, ids=name_of)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op, dtype, case, out, rng):
    shape, axis = case
    x = gen(rng, shape, dtype, -3, 3).round().astype(dtype)  # ties: the first index wins
    got = getattr(jf, op)(jf.constant(x), axis=axis, output_type=out)
    want = getattr(np, op)(x, axis=axis)
    assert_matches(got, want, I32 if out == jf.int32 else I64)


def test_argmax_default_axis_is_0_and_output_int64():
    x = np.array([[1, 5, 2], [4, 0, 9]], F32)
    assert_matches(jf.argmax(x), np.argmax(x, 0), I64)
    assert_matches(jf.argmin(x), np.argmin(x, 0), I64)


# ---- reductions with NaN / Inf -------------------------------------------------------
NAN_REDUCE_CASES = [((7,), None), ((4, 5), 0), ((4, 5), 1), ((3, 4, 5), [0, 2]), ((3, 4, 5), [0, 1]),
                    ((3, 4, 5), [1, 2]), ((2, 3, 4, 5), [1, 3]), ((200000,), None), ((5, 300), 0)]


@pytest.mark.parametrize("case", NAN_REDUCE_CASES, ids=lambda c: f"{shape_id(c[0])}-ax{c[1]}")
@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_reductions_propagate_nan_and_inf(op, dtype, case, rng):
    shape, axis = case
    x = gen(rng, shape, dtype)
    flat = x.reshape(-1)
    n = flat.size
    for val in (np.nan, np.inf, -np.inf):  # sprinkle specials, several per reduced slice
        flat[rng.choice(n, size=max(1, n // 7), replace=False)] = val
    flat[-1] = np.nan  # the last element: a NaN that a "first wins" loop would miss
    got = REDUCE_FNS[op](jf.constant(x), axis=axis)
    want = (np.max if op == "max" else np.min)(f64(x), axis=_np_axis(axis, len(shape)))
    assert_matches(got, want, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_sum_mean_prod_propagate_nan_and_inf(dtype):
    x = np.array([[1, np.nan, 2], [np.inf, 1, 2], [np.inf, -np.inf, 0], [1, 2, 3]], dtype)
    for fn, ref in [(jf.reduce_sum, np.sum), (jf.reduce_mean, np.mean), (jf.reduce_prod, np.prod)]:
        with np.errstate(invalid="ignore"):
            assert_matches(fn(x, axis=1), ref(f64(x), axis=1), dtype)
            assert_matches(fn(x, axis=0), ref(f64(x), axis=0), dtype)


@pytest.mark.parametrize("op,want", [("argmax", [2, 0, 0]), ("argmin", [0, 2, 0])])
def test_argmax_argmin_skip_nans_like_tf_eager(op, want):
    # TF 2.21 eager (not numpy, whose first NaN wins): NaNs are skipped (docs/user_guide.md).
    x = np.array([[1, np.nan, 3, np.nan], [np.inf, 2, -np.inf, 0], [5, 5, np.nan, 5]], F32)
    assert_matches(getattr(jf, op)(x, axis=1), np.array(want), I64)


# ---- matmul --------------------------------------------------------------------------
MATMUL_SHAPES = [
    ((2, 3), (3, 4)), ((1, 1), (1, 1)), ((0, 3), (3, 4)), ((3, 0), (0, 4)), ((3, 4), (4, 0)),
    ((5, 1), (1, 6)), ((30, 40), (40, 50)), ((130, 140), (140, 120)),
    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)),
    ((0, 3, 4), (4, 5)), ((4, 1, 3, 4), (1, 2, 4, 2)), ((7, 30, 40), (7, 40, 30)), ((2, 2, 0), (2, 0, 3)),
]


def _t(x):
    return np.swapaxes(x, -1, -2)


@pytest.mark.parametrize("tb", [False, True], ids=["", "tb"])
@pytest.mark.parametrize("ta", [False, True], ids=["", "ta"])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=pair_id)
@pytest.mark.parametrize("dtype", NUMERIC, ids=name_of)
def test_matmul(dtype, shapes, ta, tb, rng):
    a = gen(rng, shapes[0], dtype)
    b = gen(rng, shapes[1], dtype)
    a_in, b_in = (_t(a).copy() if ta else a), (_t(b).copy() if tb else b)
    got = jf.matmul(jf.constant(a_in), jf.constant(b_in), transpose_a=ta, transpose_b=tb)
    if np.dtype(dtype).kind == "i":
        assert_matches(got, np.matmul(a, b), dtype)
    else:
        assert_matches(got, np.matmul(f64(a), f64(b)), dtype,
                       scale=np.matmul(np.abs(f64(a)), np.abs(f64(b))))


# ---- shape and data-movement ops -----------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape,target", [
    ((2, 3), [3, 2]), ((2, 3), [-1]), ((2, 3), [1, -1, 1]), ((6,), [2, -1]), ((1,), []),
    ((), [1, 1]), ((0, 3), [3, 0]), ((0, 3), [-1, 3]), ((4, 0), [0]), ((2, 3, 4), [4, -1]),
], ids=lambda v: str(v))
def test_reshape(dtype, shape, target, rng):
    x = gen(rng, shape, dtype)
    assert_matches(jf.reshape(jf.constant(x), target), x.reshape(target), dtype)


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape,perm", [
    ((2, 3), None), ((2, 3), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), None), ((1, 0, 3), [2, 1, 0]),
    ((5,), [0]), ((), None), ((2, 1, 3, 4), [3, 1, 0, 2]), ((64, 300), [1, 0]),
], ids=lambda v: str(v))
def test_transpose(dtype, shape, perm, rng):
    x = gen(rng, shape, dtype)
    assert_matches(jf.transpose(jf.constant(x), perm), np.transpose(x, perm), dtype)


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shapes,axis", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 0)], 1), ([(2, 3), (2, 5)], -1), ([(0, 3), (2, 3)], 0),
    ([(3,)], 0), ([(2, 1, 4), (2, 3, 4), (2, 2, 4)], -2), ([(1, 1), (1, 1)], 0), ([(0,), (0,)], 0),
], ids=lambda v: str(v))
def test_concat(dtype, shapes, axis, rng):
    xs = [gen(rng, s, dtype) for s in shapes]
    assert_matches(jf.concat([jf.constant(x) for x in xs], axis), np.concatenate(xs, axis), dtype)


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape,n,axis", [
    ((), 3, 0), ((3,), 2, 0), ((3,), 2, 1), ((3,), 2, -1), ((2, 3), 4, 1), ((2, 3), 1, -3),
    ((0, 2), 2, 1), ((2, 0), 3, 0),
], ids=lambda v: str(v))
def test_stack(dtype, shape, n, axis, rng):
    xs = [gen(rng, shape, dtype) for _ in range(n)]
    assert_matches(jf.stack([jf.constant(x) for x in xs], axis=axis), np.stack(xs, axis), dtype)


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape,splits,axis", [
    ((6,), 3, 0), ((4, 6), 2, 1), ((4, 6), 4, 0), ((4, 6), 1, -1), ((0, 6), 3, 1), ((4, 0), 2, 0),
    ((4, 6), [1, 2, 3], 1), ((4, 6), [0, 4], 0), ((4, 6), [2, -1, 1], -1), ((2, 3, 4), [3], 1),
], ids=lambda v: str(v))
def test_split(dtype, shape, splits, axis, rng):
    x = gen(rng, shape, dtype)
    got = jf.split(jf.constant(x), splits, axis=axis)
    if isinstance(splits, int):
        want = np.split(x, splits, axis=axis)
    else:
        sizes = list(splits)
        if -1 in sizes:
            sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
        want = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        assert_matches(g, w, dtype)


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape,axis", [
    ((1, 2, 1), None), ((1, 2, 1), 0), ((1, 2, 1), -1), ((1, 2, 1), [0, 2]), ((1,), None),
    ((3,), None), ((1, 0, 1), None), ((1, 1), [-2]),
], ids=lambda v: str(v))
def test_squeeze(dtype, shape, axis, rng):
    x = gen(rng, shape, dtype)
    want = np.squeeze(x, axis=None if axis is None else tuple(np.atleast_1d(axis)))
    assert_matches(jf.squeeze(jf.constant(x), axis), want, dtype)


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape,axis", [((), 0), ((), -1), ((2, 3), 0), ((2, 3), 1), ((2, 3), 2),
                                        ((2, 3), -1), ((2, 3), -3), ((0, 3), 1)], ids=lambda v: str(v))
def test_expand_dims(dtype, shape, axis, rng):
    x = gen(rng, shape, dtype)
    assert_matches(jf.expand_dims(jf.constant(x), axis), np.expand_dims(x, axis), dtype)


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape,target", [
    ((), [2, 3]), ((3,), [2, 3]), ((2, 1), [2, 4]), ((1, 3), [0, 3]), ((1,), [1]), ((2, 1, 1), [3, 2, 4, 5]),
    ((1, 1000), [300, 1000]),
], ids=lambda v: str(v))
def test_broadcast_to(dtype, shape, target, rng):
    x = gen(rng, shape, dtype)
    assert_matches(jf.broadcast_to(jf.constant(x), target), np.broadcast_to(x, target), dtype)


CAST_VALUES = [0, 1, -1, 2, 7, -100, 1000]


@pytest.mark.parametrize("dst", ALL, ids=name_of)
@pytest.mark.parametrize("src", ALL, ids=name_of)
def test_cast_all_pairs(src, dst):
    x = (np.array(CAST_VALUES) > 0) if src == BOOL else np.array(CAST_VALUES, src)
    assert_matches(jf.cast(jf.constant(x), JF_DTYPE[np.dtype(dst)]), x.astype(dst), dst)


@pytest.mark.parametrize("dst", INTS + [BOOL], ids=name_of)
@pytest.mark.parametrize("src", FLOATS, ids=name_of)
def test_cast_float_truncates_toward_zero_and_nonzero_is_true(src, dst):
    x = np.array([1.7, -1.7, 0.5, -0.5, 0.0, -0.0, 2.5, 1e5], src)
    assert_matches(jf.cast(x, JF_DTYPE[np.dtype(dst)]), x.astype(dst), dst)


def test_cast_accepts_numpy_dtypes_and_is_identity_for_same_dtype():
    t = jf.constant([1.5, 2.5])
    assert_matches(jf.cast(t, jf.float32), [1.5, 2.5], F32)
    assert_matches(jf.cast(t, np.float64), [1.5, 2.5], F64)
    assert_matches(jf.cast(t, "int64"), [1, 2], I64)


@pytest.mark.parametrize("shapes", [((4,), (4,), (4,)), ((2, 1), (3,), ()), ((), (2, 3), (1, 3)),
                                    ((0, 1), (1, 4), (4,)), ((2, 3, 1), (1,), (3, 5))], ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=name_of)
def test_where(dtype, shapes, rng):
    c = gen(rng, shapes[0], BOOL)
    x, y = gen(rng, shapes[1], dtype), gen(rng, shapes[2], dtype)
    assert_matches(jf.where(jf.constant(c), jf.constant(x), jf.constant(y)), np.where(c, x, y), dtype)


def test_where_python_branches_take_the_other_branch_dtype():
    c = jf.constant([True, False, True])
    assert_matches(jf.where(c, 1.5, -2.0), [1.5, -2.0, 1.5], F32)
    assert_matches(jf.where(c, 1, 2), [1, 2, 1], I32)
    assert_matches(jf.where(c, jf.constant([1, 2, 3], jf.int64), 0), [1, 0, 3], I64)
    assert_matches(jf.where(c, 0, jf.constant([1.0, 2.0, 3.0], jf.float64)), [0, 2, 0], F64)
    assert_matches(jf.where(np.array([True, False]), np.array([1, 2], I64), -1), [1, -1], I64)


# ---- creation ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape", [[], [0], [3], [2, 0, 4], [2, 3]], ids=str)
def test_zeros_ones(dtype, shape):
    d = JF_DTYPE[np.dtype(dtype)]
    assert_matches(jf.zeros(shape, d), np.zeros(shape, dtype), dtype)
    assert_matches(jf.ones(shape, d), np.ones(shape, dtype), dtype)


def test_zeros_ones_default_float32():
    assert_matches(jf.zeros([2]), np.zeros(2), F32)
    assert_matches(jf.ones((1, 2)), np.ones((1, 2)), F32)


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
@pytest.mark.parametrize("shape", [(), (0,), (3, 1), (2, 0, 3)], ids=shape_id)
def test_zeros_like_ones_like(dtype, shape, rng):
    x = jf.constant(gen(rng, shape, dtype))
    assert_matches(jf.zeros_like(x), np.zeros(shape, dtype), dtype)
    assert_matches(jf.ones_like(x), np.ones(shape, dtype), dtype)
    assert_matches(jf.zeros_like(x, dtype=jf.float64), np.zeros(shape), F64)
    assert_matches(jf.ones_like(x, dtype=jf.int64), np.ones(shape, I64), I64)


@pytest.mark.parametrize("value,dtype", [(2.5, F32), (7, I32), (True, BOOL), (2**40, I64),
                                         (np.array(-1.5), F64), (np.int64(3), I64),
                                         (np.float32(0.5), F32)], ids=str)
@pytest.mark.parametrize("shape", [[], [0], [2, 3]], ids=str)
def test_fill(value, dtype, shape):
    assert_matches(jf.fill(shape, value), np.full(shape, value, dtype), dtype)


def test_fill_with_tensor_value():
    assert_matches(jf.fill([2], jf.constant(3, jf.int64)), [3, 3], I64)


def test_numpy_float64_scalar_keeps_its_dtype():
    assert_matches(jf.constant(np.float64(-1.5)), np.float64(-1.5), F64)
    assert_matches(jf.fill([2], np.float64(0.1)), [0.1, 0.1], F64)


@pytest.mark.parametrize("args,kw,dtype", [
    ((5,), {}, I32), ((2, 11, 3), {}, I32), ((10, 2, -3), {}, I32), ((0,), {}, I32), ((3, 3), {}, I32),
    ((0.0, 1.0, 0.25), {}, F32), ((1, -2, -0.5), {}, F32), ((5,), {"dtype": jf.float64}, F64),
    ((2, 2**33, 2**31), {}, I64), ((-3, 4), {"dtype": jf.int64}, I64), ((1.5, 4.0), {}, F32),
], ids=str)
def test_range(args, kw, dtype):
    got = jf.range(*args, **kw)
    want = np.arange(*args)
    assert_matches(got, f64(want) if np.dtype(dtype).kind == "f" else want, dtype)


def test_range_with_tensor_arguments_takes_their_dtype():
    assert_matches(jf.range(jf.constant(4, jf.int64)), np.arange(4), I64)
    assert_matches(jf.range(jf.constant(0.5, jf.float64), 3), np.arange(0.5, 3), F64)


def test_constant_with_shape_and_dtype():
    assert_matches(jf.constant(1.5, shape=[2, 3]), np.full((2, 3), 1.5), F32)
    assert_matches(jf.constant([1, 2, 3, 4], shape=(2, 2)), [[1, 2], [3, 4]], I32)
    assert_matches(jf.constant([1, 2], dtype=jf.float64), [1.0, 2.0], F64)
    assert_matches(jf.constant(2**40), np.int64(2**40), I64)
    assert_matches(jf.constant([True, False]), [True, False], BOOL)
    with pytest.raises(TypeError):
        jf.constant([1, 2, 3], shape=[2, 2])


# ---- nn activations ------------------------------------------------------------------
def _softmax_ref(x, axis):
    z = f64(x) - np.max(f64(x), axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True), z - np.log(np.sum(e, axis=axis, keepdims=True))


@pytest.mark.parametrize("shape,axis", [((5,), None), ((3, 4), None), ((3, 4), 0), ((3, 4), -1),
                                        ((2, 3, 4), 1), ((2, 3, 4), -2), ((1, 1), None), ((0, 3), -1),
                                        ((2, 1, 6), 1), ((64, 1000), -1)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_softmax_log_softmax(dtype, shape, axis, rng):
    x = gen(rng, shape, dtype, -10, 10)
    ax = -1 if axis is None else axis
    sm, lsm = _softmax_ref(x, ax)
    assert_matches(jf.nn.softmax(jf.constant(x), axis=axis), sm, dtype)
    assert_matches(jf.nn.log_softmax(jf.constant(x), axis=axis), lsm, dtype, scale=1.0)
    assert np.allclose(jf.nn.softmax(x, axis=axis).numpy().sum(axis=ax), 1.0, rtol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_softmax_large_logits_do_not_overflow(dtype):
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]], dtype)
    sm, lsm = _softmax_ref(x, -1)
    assert_matches(jf.nn.softmax(x), sm, dtype)
    assert_matches(jf.nn.log_softmax(x), lsm, dtype, scale=1.0)


@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_softmax_nan_inf_like_numpy_reference(dtype):
    x = np.array([[1.0, np.nan, 2.0], [1.0, -np.inf, 2.0], [np.inf, 1.0, 2.0], [-np.inf] * 3], dtype)
    with np.errstate(invalid="ignore"):
        sm, lsm = _softmax_ref(x, -1)
    assert_matches(jf.nn.softmax(x), sm, dtype)
    assert_matches(jf.nn.log_softmax(x), lsm, dtype)


# ---- operators -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMERIC, ids=name_of)
def test_arithmetic_operators(dtype, rng):
    a = gen(rng, (3, 4), dtype, 1, 5)
    b = gen(rng, (4,), dtype, 1, 5)
    ta, tb = jf.constant(a), jf.constant(b)
    is_int = np.dtype(dtype).kind == "i"
    r = (lambda v: v) if is_int else f64
    assert_matches(ta + tb, r(a) + r(b), dtype)
    assert_matches(ta - tb, r(a) - r(b), dtype)
    assert_matches(ta * tb, r(a) * r(b), dtype)
    assert_matches(ta / tb, f64(a) / f64(b), F64 if is_int else dtype)
    assert_matches(ta // tb, np.floor_divide(r(a), r(b)), dtype)
    assert_matches(ta % tb, np.mod(r(a), r(b)), dtype)
    assert_matches(ta ** tb, np.power(r(a), r(b)), dtype)
    assert_matches(-ta, -r(a), dtype)
    assert_matches(+ta, r(a), dtype)
    assert_matches(abs(ta - 3), np.abs(r(a) - 3), dtype)
    m = jf.constant(gen(rng, (4, 2), dtype))
    assert_matches(ta @ m, np.matmul(r(a), r(m.numpy())), dtype,
                   scale=np.abs(r(a)) @ np.abs(r(m.numpy())))


@pytest.mark.parametrize("dtype", NUMERIC, ids=name_of)
def test_comparison_operators(dtype, rng):
    a = gen(rng, (5, 3), dtype, -2, 2).round().astype(dtype)
    b = gen(rng, (3,), dtype, -2, 2).round().astype(dtype)
    ta, tb = jf.constant(a), jf.constant(b)
    for got, want in [(ta < tb, a < b), (ta <= tb, a <= b), (ta > tb, a > b), (ta >= tb, a >= b),
                      (ta == tb, a == b), (ta != tb, a != b), (ta < 0, a < 0), (ta == 1, a == 1),
                      (1 < ta, 1 < a), (0 >= ta, 0 >= a)]:
        assert_matches(got, want, BOOL)


def test_logical_operators():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    ta, tb = jf.constant(a), jf.constant(b)
    assert_matches(ta & tb, a & b, BOOL)
    assert_matches(ta | tb, a | b, BOOL)
    assert_matches(~ta, ~a, BOOL)
    assert_matches(ta & True, a & True, BOOL)
    assert_matches(False | tb, False | b, BOOL)
    assert_matches((ta | tb) & ~(ta & tb), a ^ b, BOOL)


def test_tensors_are_unhashable_because_eq_is_elementwise():
    t = jf.constant([1.0])
    with pytest.raises(TypeError):
        hash(t)
    assert (t == None) is False  # not a tensor operand: Python's default comparison


@pytest.mark.parametrize("dtype", NUMERIC, ids=name_of)
def test_python_scalars_take_the_tensor_dtype(dtype):
    t = jf.constant(np.array([1, 2, 4], dtype))
    r = (lambda v: v) if np.dtype(dtype).kind == "i" else f64
    x = r(t.numpy())
    for got, want in [(t + 1, x + 1), (1 + t, 1 + x), (t - 2, x - 2), (2 - t, 2 - x), (t * 3, x * 3),
                      (3 * t, 3 * x), (t // 2, x // 2), (7 // t, 7 // x), (t % 3, x % 3), (9 % t, 9 % x),
                      (t ** 2, x ** 2), (2 ** t, 2 ** x), (jf.maximum(t, 2), np.maximum(x, 2))]:
        assert_matches(got, want, dtype)


def test_python_float_scalars_with_float_tensors():
    t32, t64 = jf.constant([1.0, 2.0]), jf.constant([1.0, 2.0], jf.float64)
    assert_matches(t32 + 1.5, [2.5, 3.5], F32)
    assert_matches(1.5 * t32, [1.5, 3.0], F32)
    assert_matches(t32 / 2, [0.5, 1.0], F32)
    assert_matches(2 / t32, [2.0, 1.0], F32)
    assert_matches(t64 - 0.1, np.array([1.0, 2.0]) - 0.1, F64)  # 0.1 is not rounded to float32
    assert_matches(t32 ** 0.5, np.sqrt([1.0, 2.0]), F32)


@pytest.mark.parametrize("dtype", INTS, ids=name_of)
def test_int_true_division_gives_float64_like_tf(dtype):
    a, b = jf.constant(np.array([1, 7, -7], dtype)), jf.constant(np.array([2, 2, 2], dtype))
    assert_matches(a / b, [0.5, 3.5, -3.5], F64)
    assert_matches(a / 2, [0.5, 3.5, -3.5], F64)
    assert_matches(jf.divide(a, b), [0.5, 3.5, -3.5], F64)
    assert_matches(jf.math.truediv(a, b), [0.5, 3.5, -3.5], F64)


@pytest.mark.parametrize("expr", [lambda t: t + 1.5, lambda t: 1.5 + t, lambda t: t * 0.5,
                                  lambda t: t - 2.5, lambda t: jf.add(t, 1.5), lambda t: t < 0.5],
                         ids=["add", "radd", "mul", "sub", "jf.add", "less"])
def test_int_tensor_with_python_float_raises_type_error(expr):
    with pytest.raises(TypeError, match="1.5|0.5|2.5"):
        expr(jf.constant([1, 2]))


def test_int32_tensor_with_out_of_range_python_int_raises_type_error():
    with pytest.raises(TypeError, match="int32"):
        jf.constant([1, 2]) + 2**40


@pytest.mark.parametrize("dtype", ALL, ids=name_of)
def test_numpy_array_on_the_left(dtype, rng):
    a = gen(rng, (2, 3), dtype, 1, 4)
    b = gen(rng, (3,), dtype, 1, 4)
    tb = jf.constant(b)
    if dtype == BOOL:
        for got, want in [(a & tb, a & b), (a | tb, a | b), (a == tb, a == b)]:
            assert isinstance(got, jf.Tensor)
            assert_matches(got, want, BOOL)
        return
    r = (lambda v: v) if np.dtype(dtype).kind == "i" else f64
    for got, want in [(a + tb, r(a) + r(b)), (a - tb, r(a) - r(b)), (a * tb, r(a) * r(b)),
                      (a // tb, r(a) // r(b)), (a % tb, r(a) % r(b)), (a ** tb, r(a) ** r(b))]:
        assert isinstance(got, jf.Tensor)  # numpy defers to the tensor's reflected operator
        assert_matches(got, want, dtype)
    got = a / tb
    assert_matches(got, f64(a) / f64(b), dtype if np.dtype(dtype).kind == "f" else F64)
    m = gen(rng, (4, 2), dtype)
    assert_matches(m @ jf.constant(a), np.matmul(r(m), r(a)), dtype, scale=np.abs(r(m)) @ np.abs(r(a)))
    for got, want in [(a < tb, a < b), (a >= tb, a >= b), (a == tb, a == b)]:
        assert isinstance(got, jf.Tensor)
        assert_matches(got, want, BOOL)


def test_float64_numpy_array_with_float32_tensor_converts_like_tf():
    t = jf.constant([1.0, 2.0])
    assert_matches(t + np.array([0.5, 0.25]), [1.5, 2.25], F32)
    assert_matches(np.array([0.5, 0.25]) + t, [1.5, 2.25], F32)


def test_scalar_conversions():
    assert float(jf.constant(2.5)) == 2.5
    assert int(jf.constant(7, jf.int64)) == 7
    assert bool(jf.constant([0.0])) is False
    assert [1, 2, 3][jf.constant(1)] == 2  # __index__
    assert len(jf.zeros([4, 2])) == 4
    assert [x.numpy().tolist() for x in jf.constant([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
    assert f"{jf.constant(3.14159):.2f}" == "3.14"
    with pytest.raises(ValueError, match="ambiguous"):
        bool(jf.constant([1.0, 2.0]))
    with pytest.raises(TypeError):
        [1, 2][jf.constant(1.0)]
    with pytest.raises(TypeError):
        len(jf.constant(1.0))


# ---- __getitem__ ---------------------------------------------------------------------
GETITEM_KEYS = [
    0, 3, -1, -4, slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1),
    slice(3, 0, -2), slice(-2, None), slice(-100, 100), slice(100, -100, -3), slice(2, 2),
    (1, 2), (-1, -2, -3), (slice(None), 1), (Ellipsis, 0), (Ellipsis, slice(None, None, -2)),
    (0, Ellipsis), (1, Ellipsis, 2), (None,), (None, 0), (slice(None), None, 1),
    (Ellipsis, None), (0, None, Ellipsis, None), (slice(1, None, 2), slice(None, None, -1), -2),
    (np.int64(2), np.int32(-1)), (slice(None), slice(4, 1, -1), slice(0, 6, 4)), Ellipsis, (),
]


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=repr)
@pytest.mark.parametrize("dtype", [F32, I64, BOOL], ids=name_of)
def test_getitem_like_numpy(dtype, key, rng):
    x = gen(rng, (4, 5, 6), dtype)
    assert_matches(jf.constant(x)[key], x[key], dtype)


@pytest.mark.parametrize("key", [0, -1, slice(None), Ellipsis, (None, slice(None, None, -1))], ids=repr)
def test_getitem_on_size_zero_and_one_dims(key):
    x = np.arange(3, dtype=F32).reshape(3, 1, 1)
    y = np.zeros((2, 0), F32)
    assert_matches(jf.constant(x)[key], x[key], F32)
    assert_matches(jf.constant(y)[key], y[key], F32)


def test_getitem_with_scalar_int_tensors():
    x = np.arange(12, dtype=I32).reshape(3, 4)
    t = jf.constant(x)
    assert_matches(t[jf.constant(1)], x[1], I32)
    assert_matches(t[jf.constant(-1, jf.int64), jf.constant(2)], x[-1, 2], I32)
    assert_matches(t[jf.constant(1):, :jf.constant(-1)], x[1:, :-1], I32)


def test_getitem_scalar_tensor_with_ellipsis_and_newaxis():
    x = np.float32(3.5)
    t = jf.constant(x)
    assert_matches(t[...], np.asarray(x)[...], F32)
    assert_matches(t[None], np.asarray(x)[None], F32)


@pytest.mark.parametrize("key", [4, -5, (0, 5), (0, 0, -7), (slice(None), 5)], ids=repr)
def test_getitem_out_of_range_raises_invalid_argument(key):
    t = jf.zeros([4, 5, 6])
    with pytest.raises(jf.errors.InvalidArgumentError, match="out of bounds|out of range"):
        t[key]


# (A Python bool key is TF's boolean_mask: "mask cannot be scalar", test_mask_ops.py.)
@pytest.mark.parametrize("key", [1.0, "a", [0.5, 1], np.array([0, 1]), (0, np.array(1.0))], ids=repr)
def test_getitem_bad_key_type_raises_type_error(key):
    with pytest.raises(TypeError):
        jf.zeros([4, 5])[key]


def test_getitem_list_key_reads_as_a_tuple_like_tf():
    x = np.arange(20, dtype=F32).reshape(4, 5)
    assert_matches(jf.constant(x)[[1, 2]], x[1, 2], F32)  # TF 2's _slice_helper: x[[1, 2]] is x[1, 2]


def test_getitem_zero_step_raises():
    with pytest.raises(jf.errors.InvalidArgumentError, match="non-zero"):
        jf.zeros([4])[::0]


# ---- jf.random -----------------------------------------------------------------------
@pytest.fixture
def restore_seed():
    yield
    jf.random.set_seed(None)


def _draws():
    return [jf.random.uniform([5]).numpy(), jf.random.normal([2, 3]).numpy(),
            jf.random.uniform([4], seed=7).numpy(), jf.random.uniform([3], 0, 10, dtype=jf.int32).numpy()]


def test_set_seed_makes_sequences_reproducible(restore_seed):
    jf.random.set_seed(42)
    first = _draws()
    jf.random.set_seed(42)
    second = _draws()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    # consecutive draws within a run differ
    assert not np.array_equal(first[0], jf.random.uniform([5]).numpy())
    jf.random.set_seed(43)
    assert not np.array_equal(first[0], jf.random.uniform([5]).numpy())


def test_op_seed_reproducible_and_distinct(restore_seed):
    jf.random.set_seed(1)
    a1, a2 = jf.random.uniform([6], seed=3).numpy(), jf.random.uniform([6], seed=3).numpy()
    b = jf.random.uniform([6], seed=4).numpy()
    assert not np.array_equal(a1, a2)  # the same op seed advances its stream, like TF eager
    assert not np.array_equal(a1, b)
    jf.random.set_seed(1)
    np.testing.assert_array_equal(jf.random.uniform([6], seed=3).numpy(), a1)
    np.testing.assert_array_equal(jf.random.uniform([6], seed=3).numpy(), a2)
    jf.random.set_seed(1)
    np.testing.assert_array_equal(jf.random.uniform([6], seed=4).numpy(), b)


def test_op_seed_without_global_seed_is_reproducible_after_reset(restore_seed):
    jf.random.set_seed(None)
    a = jf.random.normal([4], seed=11).numpy()
    jf.random.set_seed(None)
    np.testing.assert_array_equal(jf.random.normal([4], seed=11).numpy(), a)


def test_no_seed_gives_different_values(restore_seed):
    jf.random.set_seed(None)
    assert not np.array_equal(jf.random.uniform([8]).numpy(), jf.random.uniform([8]).numpy())


@pytest.mark.parametrize("dtype,lo,hi", [(jf.float32, 0, 1), (jf.float32, -3.5, 2.0),
                                         (jf.float64, 5, 6), (jf.float64, -1e-3, 1e-3),
                                         (jf.int32, -5, 5), (jf.int64, 0, 2), (jf.int32, 10, 11)],
                         ids=str)
def test_uniform_range_and_dtype(dtype, lo, hi, restore_seed):
    jf.random.set_seed(5)
    x = jf.random.uniform([100000], minval=lo, maxval=hi, dtype=dtype)
    assert x.dtype == dtype and x.shape == (100000,)
    v = x.numpy()
    assert v.min() >= lo and v.max() < hi
    if dtype.is_integer:
        assert set(np.unique(v).tolist()) == set(range(lo, hi))  # every value hit
    else:
        span = hi - lo
        assert v.min() < lo + 0.01 * span and v.max() > hi - 0.01 * span
        assert abs(v.mean() - (lo + hi) / 2) < 0.01 * span
        assert abs(v.std() - span / np.sqrt(12)) < 0.01 * span


def test_uniform_default_shapes_and_errors(restore_seed):
    assert jf.random.uniform([2, 0, 3]).shape == (2, 0, 3)
    assert jf.random.uniform([]).shape == ()
    assert jf.random.uniform((2, 3)).dtype == jf.float32
    with pytest.raises(ValueError, match="maxval"):
        jf.random.uniform([3], dtype=jf.int32)


@pytest.mark.parametrize("dtype", [jf.float32, jf.float64], ids=str)
@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (2.0, 3.0), (-1.0, 0.5)])
def test_normal_moments(dtype, mean, std, restore_seed):
    jf.random.set_seed(9)
    x = jf.random.normal([100000], mean=mean, stddev=std, dtype=dtype)
    assert x.dtype == dtype
    v = f64(x.numpy())
    assert abs(v.mean() - mean) < 0.02 * std
    assert abs(v.std() - std) < 0.02 * std
    z = (v - mean) / std
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.01  # a normal, not just any distribution
    assert abs(np.mean(z ** 3)) < 0.05 and abs(np.mean(z ** 4) - 3) < 0.15


# ---- layers --------------------------------------------------------------------------
def _np_act(name):
    return {None: lambda x: x, "relu": lambda x: np.maximum(x, 0), "sigmoid": _sigmoid,
            "tanh": np.tanh, "softmax": lambda x: _softmax_ref(x, -1)[0]}[name]


@pytest.mark.parametrize("activation", [None, "relu", "sigmoid", "tanh", "softmax"], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_dense_matches_numpy(dtype, activation, rng):
    layer = jf.nn.Dense(7, activation=activation, dtype=JF_DTYPE[np.dtype(dtype)], seed=1)
    x = gen(rng, (5, 4), dtype)
    y = layer(jf.constant(x))
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    assert k.shape == (4, 7) and b.shape == (7,) and k.dtype == dtype
    layer.bias.assign(gen(rng, (7,), dtype))  # make the bias matter
    y = layer(x)
    b = layer.bias.numpy()
    z = f64(x) @ f64(k) + f64(b)
    assert_matches(y, _np_act(activation)(z), dtype, scale=np.abs(f64(x)) @ np.abs(f64(k)) + 1)


def test_dense_rank3_and_no_bias(rng):
    layer = jf.nn.Dense(3, use_bias=False)
    x = gen(rng, (2, 5, 4), F32)
    y = layer(x)
    k = f64(layer.kernel.numpy())
    assert not hasattr(layer, "bias") or layer.bias is None
    assert_matches(y, f64(x) @ k, F32, scale=np.abs(f64(x)) @ np.abs(k))
    assert len(layer.trainable_variables) == 1


def _lstm_step(x, h, c, kernel, rkernel, bias):
    """Keras's LSTMCell (implementation 2): z = x K + h R + b, gates i, f, c, o."""
    z = x @ kernel + h @ rkernel + bias
    zi, zf, zc, zo = np.split(z, 4, axis=1)
    i, f, o = _sigmoid(zi), _sigmoid(zf), _sigmoid(zo)
    c_new = f * c + i * np.tanh(zc)
    h_new = o * np.tanh(c_new)
    return h_new, c_new


@pytest.mark.parametrize("batch,units,inp", [(3, 4, 5), (1, 1, 1), (8, 16, 3)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=name_of)
def test_lstm_cell_matches_numpy(dtype, batch, units, inp, rng):
    cell = jf.nn.LSTMCell(units, dtype=JF_DTYPE[np.dtype(dtype)], seed=3)
    xs = [gen(rng, (batch, inp), dtype) for _ in range(4)]
    state = cell.get_initial_state(batch)
    assert [s.shape for s in state] == [(batch, units)] * 2
    h_ref = np.zeros((batch, units))
    c_ref = np.zeros((batch, units))
    for step, x in enumerate(xs):
        out, state = cell(jf.constant(x), state)
        if step == 0:  # weights exist after the first call; check Keras's layout and init
            kernel, rk, bias = (f64(v.numpy()) for v in (cell.kernel, cell.recurrent_kernel, cell.bias))
            assert kernel.shape == (inp, 4 * units) and rk.shape == (units, 4 * units)
            np.testing.assert_array_equal(bias, np.r_[np.zeros(units), np.ones(units), np.zeros(2 * units)])
            np.testing.assert_allclose(rk @ rk.T, np.eye(units), atol=1e-5)  # orthogonal rows
        h_ref, c_ref = _lstm_step(f64(x), h_ref, c_ref, kernel, rk, bias)
        assert_matches(out, h_ref, dtype, scale=1.0)
        assert_matches(state[0], h_ref, dtype, scale=1.0)
        assert_matches(state[1], c_ref, dtype, scale=1.0)


def test_lstm_cell_with_random_state_and_bias(rng):
    cell = jf.nn.LSTMCell(6, seed=0)
    x = gen(rng, (2, 3), F32)
    h0, c0 = gen(rng, (2, 6), F32), gen(rng, (2, 6), F32)
    cell(x, [h0, c0])
    cell.bias.assign(gen(rng, (24,), F32))
    h, (h2, c) = cell(x, [jf.constant(h0), jf.constant(c0)])
    k, rk, b = (f64(v.numpy()) for v in (cell.kernel, cell.recurrent_kernel, cell.bias))
    h_ref, c_ref = _lstm_step(f64(x), f64(h0), f64(c0), k, rk, b)
    assert_matches(h, h_ref, F32, scale=1.0)
    assert_matches(c, c_ref, F32, scale=1.0)
    assert h2 is h or np.array_equal(h2.numpy(), h.numpy())
