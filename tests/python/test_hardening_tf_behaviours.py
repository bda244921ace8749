"""Issue 14, class 4: TF behaviours jitflow refused, eagerly and inside jf.function: argmax's
output_type on Python inputs, shape's out_type, convert_to_tensor's dtype_hint, constant's
shape=, negative transpose perms, reshape of empty tensors with -1, and the bitwise ops
(jf.bitwise.*, ~ & | ^ on integer tensors). Expected values are TF 2.21's, written here."""
import numpy as np
import pytest
from conftest import assert_exact, run_mode

import jitflow as jf

MODES = ["eager", "function"]
run = run_mode  # conftest: eagerly or as a traced jf.function
exact = assert_exact


def compiled_runs(fn, *args):
    """fn as a jit_compile=True function; asserts compiled code ran."""
    before = jf.debugging.stats()["cluster_runs"]
    out = jf.function(fn, jit_compile=True)(*args)
    assert jf.debugging.stats()["cluster_runs"] > before, "no compiled code ran"
    return out


# ---- output types and dtype hints -------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_argmax_output_type_and_python_inputs(mode):
    exact(run(mode, lambda: jf.argmax([1.5, 2.5, 0.5], output_type=jf.int32)), 1, np.int32)  # was TypeError
    exact(run(mode, lambda: jf.argmin([[3, 1], [0, 2]], axis=1, output_type=jf.int32)), [1, 0], np.int32)
    exact(run(mode, lambda: jf.argmax(np.array([[1.0, 7.0]]), axis=-1)), [1], np.int64)
    x = jf.constant([[1, 3, 2], [9, 0, 4]])
    exact(run(mode, lambda a: jf.argmax(a, axis=1, output_type=jf.int32), x), [1, 0], np.int32)
    exact(run(mode, lambda a: jf.math.argmin(a, 0, output_type=jf.int64), x), [0, 1, 0], np.int64)


@pytest.mark.parametrize("mode", MODES)
def test_shape_out_type(mode):
    # Regression pin: this worked before (eager and traced).
    x = jf.zeros([2, 3])
    exact(run(mode, lambda a: jf.shape(a, out_type=jf.int64), x), [2, 3], np.int64)
    exact(run(mode, lambda a: jf.shape(a), x), [2, 3], np.int32)
    exact(run(mode, lambda: jf.shape([[1, 2, 3]], out_type=jf.int64)), [1, 3], np.int64)


@pytest.mark.parametrize("mode", MODES)
def test_convert_to_tensor_dtype_hint_is_a_preference(mode):
    exact(run(mode, lambda: jf.convert_to_tensor(1, dtype_hint=jf.float32)), 1.0, np.float32)
    exact(run(mode, lambda: jf.convert_to_tensor([1, 2], dtype_hint=jf.float64)), [1, 2], np.float64)
    exact(run(mode, lambda: jf.convert_to_tensor(np.array([1, 2]), dtype_hint="float64")), [1, 2], np.float64)
    exact(run(mode, lambda: jf.convert_to_tensor(np.array([1.5]), dtype_hint=jf.int32)), [1], np.int32)
    # A value that cannot take the hint converts as it would alone (TF's preferred_dtype).
    exact(run(mode, lambda: jf.convert_to_tensor(1.5, dtype_hint=jf.int32)), 1.5, np.float32)  # was TypeError
    exact(run(mode, lambda: jf.convert_to_tensor([1.5], dtype_hint=jf.int32)), [1.5], np.float32)
    exact(run(mode, lambda: jf.convert_to_tensor(True, dtype_hint=jf.int32)), 1, np.int32)
    exact(run(mode, lambda: jf.convert_to_tensor(1, dtype_hint=jf.bool)), 1, np.int32)
    exact(jf.convert_to_tensor(jf.constant([1, 2]), dtype_hint=jf.float64), [1, 2], np.int32)
    with pytest.raises(TypeError):
        jf.convert_to_tensor(1.5, dtype=jf.int32)  # dtype= stays strict


# ---- constant(shape=) ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_constant_with_shape(mode):
    exact(run(mode, lambda: jf.constant(0, shape=[2, 3])), np.zeros((2, 3)), np.int32)  # traced: RecursionError
    exact(run(mode, lambda: jf.constant(1.5, jf.float64, shape=(2,))), [1.5, 1.5], np.float64)
    exact(run(mode, lambda: jf.constant([7], shape=[2, 3])), np.full((2, 3), 7), np.int32)  # eager: TypeError
    exact(run(mode, lambda: jf.constant([1, 2, 3, 4, 5, 6], shape=[2, 3])), [[1, 2, 3], [4, 5, 6]], np.int32)
    exact(run(mode, lambda: jf.constant([[1, 2]], shape=[2])), [1, 2], np.int32)
    exact(run(mode, lambda: jf.constant([7.0], shape=[])), 7.0, np.float32)
    exact(run(mode, lambda: jf.constant(True, shape=[2])), [True, True], np.bool_)
    exact(run(mode, lambda: jf.constant(5, shape=[0, 2])), np.zeros((0, 2)), np.int32)
    exact(run(mode, lambda: jf.constant(np.array([2.5]), shape=[1, 2])), [[2.5, 2.5]], np.float64)
    exact(run(mode, lambda: jf.constant(2**40, shape=[2])), [2**40] * 2, np.int64)
    with pytest.raises(TypeError, match="shape"):
        run(mode, lambda: jf.constant([1, 2, 3, 4, 5], shape=[2, 3]))


def test_constant_with_shape_errors_follow_tf_by_mode():
    # Eager: Fill takes a scalar or 1-element vector; a negative dim is a ValueError.
    with pytest.raises(jf.errors.InvalidArgumentError, match="scalar"):
        jf.constant([[7]], shape=[2, 3])
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        jf.constant([1, 2, 3, 4], shape=[-1, 2])
    # Graph: make_tensor_proto's TypeError.
    with pytest.raises(TypeError, match=r"Expected Tensor's shape: \(2, 3\), but got \(1, 1\)"):
        jf.function(lambda: jf.constant([[7]], shape=[2, 3]))()


@pytest.mark.parametrize("mode", MODES)
def test_stack_of_python_values_is_one_constant(mode):
    exact(run(mode, lambda: jf.stack([1, 2.5])), [1.0, 2.5], np.float32)  # was Pack(int32, float32): error
    exact(run(mode, lambda: jf.stack([[1, 2], [3, 4]])), [[1, 2], [3, 4]], np.int32)
    exact(run(mode, lambda: jf.stack([jf.constant(1.0), 2.0])), [1.0, 2.0], np.float32)


# ---- transpose and reshape ----------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_transpose_with_negative_perm(mode):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = jf.constant(a)
    exact(run(mode, lambda t: jf.transpose(t, perm=[-1, 0]), x), a.T, np.float32)  # was InvalidArgumentError
    exact(run(mode, lambda t: jf.transpose(t, perm=[-1, -2]), x), a.T, np.float32)
    exact(run(mode, lambda t: jf.transpose(t, perm=[-2, -1]), x), a, np.float32)
    exact(run(mode, lambda t: jf.transpose(t, jf.constant([-1, 0])), x), a.T, np.float32)
    exact(jf.function(lambda t, p: jf.transpose(t, p))(x, jf.constant([-1, 0])), a.T, np.float32)
    b = np.arange(24).reshape(2, 3, 4)
    exact(run(mode, lambda t: jf.transpose(t, [-1, 0, -2]), jf.constant(b)), b.transpose(2, 0, 1), np.int64)
    with pytest.raises(jf.errors.InvalidArgumentError, match="out of range"):
        run(mode, lambda t: jf.transpose(t, perm=[-3, 0]), x)
    with pytest.raises(jf.errors.InvalidArgumentError, match="permutation"):
        run(mode, lambda t: jf.transpose(t, perm=[1, -1]), x)


def test_transpose_with_negative_perm_compiled():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    exact(compiled_runs(lambda t: jf.transpose(t * 2.0, [-1, 0]), jf.constant(a)), a.T * 2, np.float32)
    exact(compiled_runs(lambda t: jf.transpose(t, jf.constant([-1, 0])) * 2.0, jf.constant(a)), a.T * 2, np.float32)


# TF 2.21: zero sizes count in neither product when -1 is resolved.
RESHAPES = [((0, 3), [-1, 0], (3, 0)), ((0, 3), [-1, 3], (0, 3)), ((0, 3), [2, -1], (2, 0)),
            ((0, 3), [-1], (0,)), ((0, 3), [0, -1, 5], (0, 0, 5)), ((0, 3), [-1, 0, 5], (0, 0, 5)),
            ((3, 0, 2), [-1, 0], (6, 0)), ((2, 3), [-1, 2], (3, 2))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,target,want", RESHAPES, ids=[f"{s}->{t}" for s, t, _ in RESHAPES])
def test_reshape_minus_one_with_zero_elements(mode, shape, target, want):
    got = run(mode, lambda t: jf.reshape(t, target), jf.zeros(shape))
    assert got.shape == want


@pytest.mark.parametrize("mode", MODES)
def test_reshape_minus_one_errors(mode):
    with pytest.raises(jf.errors.InvalidArgumentError, match="6 values, but the requested shape has 0"):
        run(mode, lambda t: jf.reshape(t, [-1, 0]), jf.zeros([2, 3]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="only one input size may be -1"):
        run(mode, lambda t: jf.reshape(t, [-1, -1]), jf.zeros([0]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="multiple of 4"):
        run(mode, lambda t: jf.reshape(t, [4, -1]), jf.zeros([2, 3]))


# ---- bitwise ops and operators --------------------------------------------------------------------
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
        with pytest.raises(TypeError, match="int32 or int64"):
            fn(f, f)
    for fn in (jf.bitwise.bitwise_or, jf.bitwise.right_shift):
        with pytest.raises(TypeError, match="int32 or int64"):
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
