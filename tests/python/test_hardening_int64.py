"""Issue 14, class 2: integers stay exact (no trip through double), argmax/argmin follow TF
eager over NaNs, and every numpy entry point honours the array's dtype, byte order and
strides. References are exact numpy for integers and TF 2.21's documented results, written
here (the tests do not import tensorflow)."""
import numpy as np
import pytest
from conftest import assert_exact, run_mode

import jitflow as jf

BIG = 2**53 + 1  # the first integer a double cannot hold
MODES = ["eager", "function"]
run = run_mode  # conftest: eagerly or as a traced jf.function
exact = assert_exact


# ---- Python ints ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_python_int_constants_are_exact(mode):
    exact(run(mode, lambda: jf.constant(2**63 - 1)), 2**63 - 1, np.int64)  # was -2**63
    exact(run(mode, lambda: jf.constant(-2**63)), -2**63, np.int64)
    exact(run(mode, lambda: jf.constant(BIG)), BIG, np.int64)  # was 2**53
    exact(run(mode, lambda: jf.constant(BIG, jf.int64)), BIG, np.int64)
    exact(run(mode, lambda: jf.convert_to_tensor(-BIG)), -BIG, np.int64)
    exact(run(mode, lambda: jf.fill([2], BIG)), [BIG, BIG], np.int64)
    exact(run(mode, lambda: jf.constant(BIG, shape=[2])), [BIG, BIG], np.int64)
    exact(run(mode, lambda: jf.constant([2**63 - 1, BIG, -2**63])), [2**63 - 1, BIG, -2**63], np.int64)
    # Into a float dtype a Python int rounds through double, as TF rounds it.
    v = 2**60 + 2**36 + 1
    exact(run(mode, lambda: jf.constant(v, jf.float32)), np.float32(float(v)), np.float32)
    exact(run(mode, lambda: jf.constant(BIG, jf.float64)), float(BIG), np.float64)


@pytest.mark.parametrize("mode", MODES)
def test_int64_tensor_with_python_int_operand_is_exact(mode):
    x = jf.constant(np.array([0, 1, -1], np.int64))
    base = np.array([0, 1, -1], np.int64)
    exact(run(mode, lambda a: a + 9007199254740993, x), base + 9007199254740993, np.int64)
    exact(run(mode, lambda a: 9007199254740993 + a, x), base + 9007199254740993, np.int64)
    exact(run(mode, lambda a: jf.add(a, BIG), x), base + BIG, np.int64)
    exact(run(mode, lambda a: a - (2**63 - 1), x), base - (2**63 - 1), np.int64)
    exact(run(mode, lambda a: jf.maximum(a, BIG), x), np.maximum(base, BIG), np.int64)
    exact(run(mode, lambda a: a * (2**40 + 1), x), base * (2**40 + 1), np.int64)
    exact(run(mode, lambda a: jf.equal(a + BIG, BIG + 1), x), base + BIG == BIG + 1, np.bool_)
    exact(run(mode, lambda a: a + [BIG, 2**62 + 1, -BIG], x), base + np.array([BIG, 2**62 + 1, -BIG]), np.int64)
    v = jf.Variable(np.array([1, 2], np.int64))
    run(mode, lambda: v.assign_add([BIG, BIG]))
    exact(v.read_value(), [BIG + 1, BIG + 2], np.int64)


def test_python_int_argument_of_a_function_is_exact():
    f = jf.function(lambda a, k: a + k)
    x = jf.constant(np.array([0, 1], np.int64))
    exact(f(x, BIG), [BIG, BIG + 1], np.int64)
    exact(f(x, 2**63 - 2), [2**63 - 2, 2**63 - 1], np.int64)


def test_int64_immediates_are_exact_when_compiled():
    x = jf.constant(np.array([0, 1], np.int64))
    exact(jf.function(lambda a: a + BIG, jit_compile=True)(x), [BIG, BIG + 1], np.int64)
    exact(jf.function(lambda a: a * 0 + (2**63 - 1), jit_compile=True)(x), [2**63 - 1] * 2, np.int64)


def test_compiled_kernels_differing_only_in_a_constant_are_distinct():
    xi = jf.constant(np.array([0, 1], np.int64))
    a = jf.function(lambda t: t + 1000000001, jit_compile=True)(xi)
    b = jf.function(lambda t: t + 1000000002, jit_compile=True)(xi)  # gave a's values
    exact(a, [1000000001, 1000000002], np.int64)
    exact(b, [1000000002, 1000000003], np.int64)
    xf = jf.constant(np.array([0.0], np.float32))
    c = jf.function(lambda t: t + 1.0000001, jit_compile=True)(xf)
    d = jf.function(lambda t: t + 1.0000002, jit_compile=True)(xf)
    exact(c, [np.float32(1.0000001)], np.float32)
    exact(d, [np.float32(1.0000002)], np.float32)


def test_ints_beyond_int64_raise_value_error_like_tf():
    x = jf.constant(np.array([1], np.int64))
    for make in (lambda: jf.constant(2**63), lambda: jf.constant([2**63, -1]),  # was float32
                 lambda: jf.constant([2**64]), lambda: x + [2**63], lambda: x + 2**63):
        with pytest.raises(ValueError, match="out-of-range integer"):
            make()
    # A float dtype takes them (TF rounds them through double).
    exact(jf.constant([2**63, 1], jf.float64), [2.0**63, 1.0], np.float64)


def test_float_to_int_conversion_is_refused_like_tf():
    # TF: TypeError "Cannot convert 3.0 to EagerTensor of dtype int32" (no silent truncation
    # and no undefined behaviour for 1e19 or nan).
    for v in (3.0, 3.5, 1e19, float("nan"), [1.0, 2.0]):
        with pytest.raises(TypeError, match="Cannot convert"):
            jf.constant(v, jf.int32)
    with pytest.raises(TypeError, match="Cannot convert"):
        jf.constant(1e19, jf.int64)


# ---- integer reductions ---------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [5, 70000])  # 70000: the one-long-row parallel path
def test_int64_reductions_are_exact(mode, n, rng):
    # Regression pins: the eager kernels were already exact (the compiled reduce_min was fixed
    # before this issue); values beyond 2**53 and at the int64 limits.
    x = rng.integers(-2**62, 2**62, size=(3, n), dtype=np.int64)
    x[0, n // 2] = 2**63 - 1
    x[1, n // 3] = -2**63
    t = jf.constant(x)
    for fn, ref in [(jf.reduce_min, np.min), (jf.reduce_max, np.max)]:
        for axis in (None, 0, 1):
            exact(run(mode, lambda a, fn=fn, axis=axis: fn(a, axis=axis), t), ref(x, axis=axis), np.int64)
    small = x % 1000
    exact(run(mode, lambda a: jf.reduce_sum(a, axis=1), jf.constant(small)), small.sum(axis=1), np.int64)
    exact(run(mode, lambda a: jf.reduce_mean(a, axis=1), jf.constant(small)),
          np.trunc(small.sum(axis=1) / n).astype(np.int64), np.int64)
    exact(run(mode, lambda a: jf.reduce_min(a), jf.constant(np.zeros([0], np.int64))), 2**63 - 1, np.int64)


# ---- argmax / argmin over NaNs: TF eager's rule -------------------------------------------
NAN, INF = np.nan, np.inf
# (values, argmax, argmin), as TF 2.21 eager gives them for float32 and float64.
ARG_CASES = [
    ([4, 5.5, NAN], 1, 0),
    ([NAN, 1, 2], 2, 1),
    ([1, NAN, 2], 2, 0),
    ([NAN, NAN, 1], 2, 2),
    ([1, NAN, NAN, 3], 3, 0),
    ([3, NAN, 1, NAN], 0, 2),
    ([NAN], 0, 0),
    ([NAN, NAN, NAN], 0, 0),
    ([NAN, -INF], 0, 1),
    ([NAN, INF], 1, 0),
    ([INF, NAN, -INF], 0, 2),
    ([-INF, NAN, -INF], 0, 0),
    ([NAN, -INF, 1], 2, 1),
    ([5, NAN, 7, 0], 2, 3),
    ([1, 1, NAN, 1], 0, 0),
    ([NAN, 2, 2], 1, 1),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_argmax_argmin_skip_nans_like_tf_eager(mode, dtype):
    for vals, amax, amin in ARG_CASES:
        x = jf.constant(np.array(vals, dtype))
        assert int(run(mode, jf.argmax, x)) == amax, ("argmax", vals)
        assert int(run(mode, jf.argmin, x)) == amin, ("argmin", vals)
    m = np.array([[1, NAN, 3], [NAN, NAN, NAN], [NAN, 5, 4], [2, 2, NAN]], dtype)
    exact(run(mode, lambda a: jf.argmax(a, 0), jf.constant(m)), [3, 2, 2], np.int64)
    exact(run(mode, lambda a: jf.argmax(a, 1), jf.constant(m)), [2, 0, 1, 0], np.int64)
    exact(run(mode, lambda a: jf.argmin(a, 0), jf.constant(m)), [0, 3, 0], np.int64)
    exact(run(mode, lambda a: jf.argmin(a, 1), jf.constant(m)), [0, 0, 2, 0], np.int64)


def test_argmax_lowest_finite_is_not_above_the_start_value():
    # TF starts from the lowest finite value: for float32 -FLT_MAX after a NaN is not greater.
    lo32 = np.finfo(np.float32).min
    assert int(jf.argmax(np.array([NAN, lo32], np.float32))) == 0
    assert int(jf.argmax(np.array([NAN, lo32], np.float64))) == 1
    assert int(jf.argmax(np.array([lo32, -INF], np.float32))) == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_argmax_argmin_large_with_nans_match_nan_skipping_numpy(dtype, rng):
    x = rng.standard_normal((300, 400)).astype(dtype)
    x[rng.random(x.shape) < 0.3] = NAN
    for axis in (0, 1):
        exact(jf.argmax(x, axis), np.argmax(np.where(np.isnan(x), -INF, x), axis), np.int64)
        exact(jf.argmin(x, axis), np.argmin(np.where(np.isnan(x), INF, x), axis), np.int64)


# ---- numpy byte order and strides -----------------------------------------------------------
def _arrays():
    """(label, array) pairs: non-native byte order, views with strides, negative strides,
    Fortran order and an unaligned buffer, of each dtype jitflow has."""
    base = np.arange(24, dtype=np.float64).reshape(4, 6) - 7.5
    out = []
    for d in ["f4", "f8", "i4", "i8"]:
        a = base.astype(d) if d[0] == "f" else (base * 2).astype(d)
        out += [(f">{d}", a.astype(">" + d)), (f">{d} strided", a.astype(">" + d)[::2, 1::2]),
                (f"{d} step", a[:, ::3]), (f"{d} reversed", a[::-1, ::-2]), (f"{d} fortran", np.asfortranarray(a)),
                (f"{d} transposed", a.T)]
    big = np.array([2**62 + 1, -2**53 - 1], ">i8")
    out.append((">i8 big", big))
    raw = np.zeros(4 * 6 + 1, np.uint8)
    unaligned = np.frombuffer(raw.data, dtype="f4", count=6, offset=1)
    out.append(("f4 unaligned", unaligned))
    b = np.array([[True, False, True], [False, False, True]])
    out.append(("bool strided", b[:, ::-2]))
    return out


ARRAYS = _arrays()
IDS = [label for label, _ in ARRAYS]


def _native(a):
    return np.ascontiguousarray(a, a.dtype.newbyteorder("="))


@pytest.mark.parametrize("label,a", ARRAYS, ids=IDS)
def test_numpy_entry_points_honour_byte_order_and_strides(label, a):
    want = _native(a)
    dt = want.dtype
    exact(jf.constant(a), want, dt)  # '>f4' was read as raw bytes: [4.6e-41, 9.0e-44]
    exact(jf.convert_to_tensor(a), want, dt)
    exact(jf.identity(a), want, dt)
    exact(jf.Variable(a).read_value(), want, dt)
    exact(jf.function(lambda v: jf.identity(v))(a), want, dt)
    v = jf.Variable(np.zeros(want.shape, dt))
    v.assign(a)
    exact(v.read_value(), want, dt)
    if dt != np.bool_:
        one = np.ones((), dt)
        exact(jf.add(a, 1), want + one, dt)  # was an error: the int 1 did not take the array's dtype
        exact(jf.constant(want) + a, want + want, dt)
        exact(a + jf.constant(want), want + want, dt)
        exact(jf.function(lambda x, y: x * y)(a, a), want * want, dt)
        exact(jf.constant(a, jf.float64), want.astype(np.float64), np.float64)


def test_numpy_operand_takes_the_peer_tensors_dtype_like_tf():
    # TF casts a numpy operand to the dtype of the op's other operand (numpy's cast).
    exact(jf.constant([1, 2]) + np.array([1.5, 2.5]), [2, 4], np.int32)
    exact(jf.constant([1.0]) + np.array([1.5], np.float16), [2.5], np.float32)
    exact(jf.constant([1.0]) + np.array([2], np.uint8), [3.0], np.float32)
    exact(jf.add(1.5, np.array([1, 2], np.int32)), [2.5, 3.5], np.float32)
    exact(jf.add(np.array([1.5], ">f8"), np.array([1], np.int32)), [2.5], np.float64)
    exact(jf.constant(np.array([1.7, -1.7]), jf.int32), [1, -1], np.int32)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int16, np.uint64, np.complex64])
def test_numpy_dtypes_jitflow_lacks_raise_type_error(dtype):
    a = np.zeros(3, dtype)
    for make in (lambda: jf.constant(a), lambda: jf.convert_to_tensor(a), lambda: jf.Variable(a),
                 lambda: jf.function(lambda v: v)(a), lambda: jf.add(a, a)):
        with pytest.raises(TypeError, match=np.dtype(dtype).name):
            make()


def test_from_dlpack_refuses_non_native_byte_order():
    # Zero-copy import cannot share bytes in another order (they were read as raw bytes).
    for a in (np.array([1.0, 2.0], ">f4"), np.array([1, 2], ">i8")[::-1]):
        with pytest.raises(TypeError, match="native byte order"):
            jf.from_dlpack(a)
    exact(jf.from_dlpack(np.arange(6.0).reshape(2, 3)[:, ::-1]), np.arange(6.0).reshape(2, 3)[:, ::-1], np.float64)
