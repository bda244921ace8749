"""Math ops (ops.py, jf.math, jf.bitwise) where test_eager_ops.py's numpy comparisons do not
reach, eagerly, inside jf.function and compiled, with TF 2.21's results and exception types:
argmax/argmin's output_type, Python inputs and NaN rule (TF eager skips NaNs), exact int64
reductions and duplicate reduction axes, the bitwise ops and operators (shift amounts clamped as
TF's kernels clamp them), and sign, the no-NaN ops, xlogy and erfinv at their special values.
Expected values are TF 2.21's, written here (the tests do not import tensorflow)."""
import numpy as np
import pytest
from conftest import assert_exact, compiled_runs, eager_and_traced, run_mode

import jitflow as jf

IAE = jf.errors.InvalidArgumentError
MODES = ["eager", "function"]
run = run_mode  # conftest: eagerly or as a traced jf.function
exact = assert_exact


# ---- argmax and argmin: output types -------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_argmax_output_type_and_python_inputs(mode):
    exact(run(mode, lambda: jf.argmax([1.5, 2.5, 0.5], output_type=jf.int32)), 1, np.int32)  # was TypeError
    exact(run(mode, lambda: jf.argmin([[3, 1], [0, 2]], axis=1, output_type=jf.int32)), [1, 0], np.int32)
    exact(run(mode, lambda: jf.argmax(np.array([[1.0, 7.0]]), axis=-1)), [1], np.int64)
    x = jf.constant([[1, 3, 2], [9, 0, 4]])
    exact(run(mode, lambda a: jf.argmax(a, axis=1, output_type=jf.int32), x), [1, 0], np.int32)
    exact(run(mode, lambda a: jf.math.argmin(a, 0, output_type=jf.int64), x), [0, 1, 0], np.int64)


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
def test_argmax_and_argmin_of_bools(mode):
    # TF's kernels take bool (false < true): the first true, the first false, 0 when all equal.
    exact(run(mode, lambda: jf.argmax(jf.constant([False, True]))), 1, np.int64)
    exact(run(mode, lambda: jf.argmin(jf.constant([True, False, True]))), 1, np.int64)
    b = jf.constant([[False, False], [True, True], [False, True]])
    exact(run(mode, lambda x: jf.argmax(x, axis=1, output_type=jf.int32), b), [0, 0, 1], np.int32)
    exact(run(mode, lambda x: jf.argmin(x, axis=0), b), [0, 0], np.int64)


@pytest.mark.parametrize("call", [
    lambda x: jf.argmax(x, output_type=jf.float32),
    lambda x: jf.argmin(x, output_type=jf.bool),
    lambda x: jf.shape(x, out_type=jf.bool),
    lambda x: jf.shape(x, out_type=jf.float32),
], ids=["argmax_float32", "argmin_bool", "shape_bool", "shape_float32"])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_index_output_type_must_be_int32_or_int64(call, mode):
    # TF: InvalidArgumentError "Value for attr 'output_type' of float is not in the list of
    # allowed values: int16, uint16, int32, int64" (int16/uint16 do not exist in jitflow).
    with pytest.raises(IAE, match="is not in the list of allowed values: int32, int64"):
        eager_and_traced(call)[mode](jf.ones([2, 3]))


def test_argmax_int32_output_of_a_dimension_past_int32_raises():
    x = jf.zeros([2**31 + 1, 0])  # empty: the check is on the reduced dim, before any work
    with pytest.raises(IAE, match="int32 cannot hold an index"):
        jf.argmax(x, axis=0, output_type=jf.int32)
    assert jf.argmax(x, axis=0, output_type=jf.int64).shape == (0,)


# ---- argmax and argmin over NaNs: TF eager's rule ------------------------------------------------
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


# ---- reductions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [5, 70000])  # 70000: the one-long-row parallel path
def test_int64_reductions_are_exact(mode, n, rng):
    # Regression pins: the eager kernels were already exact (and the compiled reduce_min was
    # fixed earlier); values beyond 2**53 and at the int64 limits.
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


@pytest.mark.parametrize("fn", [jf.reduce_sum, jf.reduce_mean, jf.reduce_max, jf.reduce_min, jf.reduce_prod],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [(0, 0), (1, -1), [0, 1, 0]], ids=repr)
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_duplicate_reduction_axes_raise(fn, axis, mode):
    # TF: InvalidArgumentError "Invalid reduction arguments: Axes contains duplicate dimension: 0"
    with pytest.raises(IAE, match="Axes contains duplicate dimension"):
        eager_and_traced(lambda x: fn(x, axis=axis))[mode](jf.ones([2, 3]))


# ---- bitwise ops and operators -------------------------------------------------------------------
def _bits_ref(dtype):
    x = np.array([[5, -5, 0, 123456], [-1, 7, 2**20 + 3, -77]], dtype)
    y = np.array([3, -6, 12, 1], dtype)
    return x, y


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bitwise_ops_and_operators_on_integers(mode, dtype):
    x, y = _bits_ref(dtype)
    tx, ty = jf.constant(x), jf.constant(y)
    exact(run(mode, jf.bitwise.bitwise_and, tx, ty), x & y, dtype)
    exact(run(mode, jf.bitwise.bitwise_or, tx, ty), x | y, dtype)
    exact(run(mode, jf.bitwise.bitwise_xor, tx, ty), x ^ y, dtype)
    exact(run(mode, jf.bitwise.invert, tx), ~x, dtype)
    exact(run(mode, lambda a, b: a & b, tx, ty), x & y, dtype)  # was TypeError (LogicalAnd)
    exact(run(mode, lambda a, b: a | b, tx, ty), x | y, dtype)
    exact(run(mode, lambda a, b: a ^ b, tx, ty), x ^ y, dtype)
    exact(run(mode, lambda a: ~a, tx), ~x, dtype)
    exact(run(mode, lambda a: a & 6, tx), x & 6, dtype)
    exact(run(mode, lambda a: 6 | a, tx), 6 | x, dtype)
    exact(run(mode, lambda a: 3 ^ a, tx), 3 ^ x, dtype)
    exact(run(mode, lambda a: a ^ np.array([1, 2, 3, 4], dtype), tx), x ^ np.array([1, 2, 3, 4], dtype), dtype)


@pytest.mark.parametrize("mode", MODES)
def test_bool_operators_keep_logical_meaning(mode):
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    ta, tb = jf.constant(a), jf.constant(b)
    exact(run(mode, lambda p, q: p & q, ta, tb), a & b, np.bool_)
    exact(run(mode, lambda p, q: p | q, ta, tb), a | b, np.bool_)
    exact(run(mode, lambda p, q: p ^ q, ta, tb), a ^ b, np.bool_)  # was TypeError (no __xor__)
    exact(run(mode, lambda p: p ^ True, ta), a ^ True, np.bool_)
    exact(run(mode, lambda p: ~p, ta), ~a, np.bool_)
    exact(run(mode, jf.math.logical_xor, ta, tb), a ^ b, np.bool_)


def test_bitwise_refuses_non_integers_and_shift_operators_stay_tf_errors():
    f, b = jf.constant([1.0]), jf.constant([True])
    for fn in (jf.bitwise.bitwise_and, jf.bitwise.left_shift, lambda p, q: p & q, lambda p, q: p ^ q):
        with pytest.raises(TypeError, match="int32(,| or) int64"):
            fn(f, f)
    for fn in (jf.bitwise.bitwise_or, jf.bitwise.right_shift):
        with pytest.raises(TypeError, match="int32(,| or) int64"):
            fn(b, b)
    with pytest.raises(TypeError, match="Invert"):
        _ = ~f
    with pytest.raises(TypeError, match="Invert"):
        jf.bitwise.invert(b)
    # TF 2.21's Tensor defines no << or >>: Python's TypeError, as in TF.
    i = jf.constant([1, 2])
    for fn in (lambda: i << 1, lambda: i >> 1, lambda: 1 << i):
        with pytest.raises(TypeError, match="unsupported operand"):
            fn()


# Shift amounts below 0 or at least the bit width: TF's kernels clamp to [0, bits - 1].
SHIFTS = [-65, -1, 0, 1, 31, 32, 33, 63, 64, 65]


def _shift_want(dtype, left):
    bits = np.dtype(dtype).itemsize * 8
    x = np.array([5, -5, 2**30 + 7, -(2**30) - 7], dtype)
    u = np.dtype(f"uint{bits}")
    rows = []
    for s in SHIFTS:
        c = np.array(min(max(s, 0), bits - 1), dtype)
        rows.append(np.left_shift(x.astype(u), c.astype(u)).astype(dtype) if left else np.right_shift(x, c))
    return x, np.array(SHIFTS, dtype)[:, None], np.stack(rows)


@pytest.mark.parametrize("mode", MODES + ["jit_compile"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("left", [True, False], ids=["left_shift", "right_shift"])
def test_shifts_clamp_out_of_range_amounts_like_tf(mode, dtype, left):
    x, s, want = _shift_want(dtype, left)
    fn = jf.bitwise.left_shift if left else jf.bitwise.right_shift
    if mode == "jit_compile":
        got = compiled_runs(fn, jf.constant(x), jf.constant(s))
    else:
        got = run(mode, fn, jf.constant(x), jf.constant(s))
    exact(got, want, dtype)
    # TF 2.21 spot values: int32 5 << 32 == 5 << 31 == -2**31, -5 >> 40 == -1, 5 << -1 == 5.
    if dtype == np.int32 and mode == "eager":
        exact(fn(jf.constant([5, -5]), jf.constant(40)), [-(2**31), -(2**31)] if left else [0, -1], np.int32)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bitwise_ops_compiled(dtype):
    x, y = _bits_ref(dtype)
    got = compiled_runs(lambda a, b: (~(a & b) | (a ^ b)) ^ jf.bitwise.invert(b), jf.constant(x), jf.constant(y))
    exact(got, (~(x & y) | (x ^ y)) ^ ~y, dtype)


# ---- special values ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES + ["jit_compile"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sign_keeps_nan_and_gives_plus_zero_like_tf(mode, dtype):
    # TF 2.21: sign([nan, -0., 0., -2., 3., -inf]) == [nan, 0., 0., -1., 1., -1.], the zeros +0.
    x = jf.constant(np.array([np.nan, -0.0, 0.0, -2.0, 3.0, -np.inf], dtype))
    got = compiled_runs(jf.sign, x) if mode == "jit_compile" else run(mode, jf.sign, x)
    got = np.asarray(got)
    np.testing.assert_array_equal(got, np.array([np.nan, 0.0, 0.0, -1.0, 1.0, -1.0], dtype))
    assert not np.signbit(got[1])


@pytest.mark.parametrize("mode", MODES + ["jit_compile"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_nan_ops_and_xlogy_at_zero_like_tf(mode, dtype):
    # TF 2.21: divide_no_nan(x, 0) == multiply_no_nan(inf, 0) == 0, even for x = nan or inf;
    # xlogy(0, y) == xlog1py(0, y) == 0 for y = 0, -1, nan (values from TF 2.21).
    x = jf.constant(np.array([np.nan, np.inf, 1.0, 0.0, 0.0, 2.0], dtype))
    y = jf.constant(np.array([0.0, 0.0, 0.0, 0.0, np.nan, 4.0], dtype))

    def fn(x, y):
        return (jf.math.divide_no_nan(x, y), jf.math.multiply_no_nan(x, y),
                jf.math.xlogy(x, y), jf.math.xlog1py(x, y - 1.0))
    got = compiled_runs(fn, x, y) if mode == "jit_compile" else run(mode, fn, x, y)
    got = [np.asarray(g) for g in got]
    np.testing.assert_array_equal(got[0], np.array([0, 0, 0, 0, np.nan, 0.5], dtype))
    np.testing.assert_array_equal(got[1], np.array([0, 0, 0, 0, np.nan, 8.0], dtype))
    np.testing.assert_allclose(got[2], np.array([np.nan, -np.inf, -np.inf, 0, 0, 2 * np.log(4.0)], dtype), rtol=1e-6)
    np.testing.assert_allclose(got[3], np.array([np.nan, -np.inf, -np.inf, 0, 0, 2 * np.log(4.0)], dtype), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES + ["jit_compile"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfinv_ends_and_out_of_domain_like_tf(mode, dtype):
    # TF 2.21: erfinv(+-1) == +-inf, NaN beyond [-1, 1] and for NaN; erfinv(1e-8) == 8.86e-9.
    x = jf.constant(np.array([-1.5, -1.0, 0.0, 1e-8, 1.0, 1.5, np.nan], dtype))
    got = compiled_runs(jf.math.erfinv, x) if mode == "jit_compile" else run(mode, jf.math.erfinv, x)
    want = np.array([np.nan, -np.inf, 0.0, 8.86226925e-09 if dtype == np.float64 else 0.0, np.inf, np.nan, np.nan])
    np.testing.assert_allclose(np.asarray(got), want.astype(dtype), rtol=1e-6)
