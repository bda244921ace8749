"""The math ops on the dtypes beyond the original five where TF's rule is more than the float64
reference of the coverage rows: integer wraparound, signs and division by zero of the small and
unsigned integers, shift amounts out of range, half types' arg-reductions from the type's own
limits (eager and compiled), half-type ranges and checks, complex cumulative products and their
gradient. Values marked "TF 2.21" were printed by TF 2.21's CPU kernels and are hard-coded."""

import ml_dtypes
import numpy as np
import pytest

import jitflow as jf


def _compiled(fn, *xs):
    """fn(*xs) under jit_compile=True, asserting compiled code ran."""
    before = jf.debugging.stats()["cluster_runs"]
    out = jf.function(fn, jit_compile=True)(*xs)
    assert jf.debugging.stats()["cluster_runs"] > before, "no compiled code ran"
    return out


# TF 2.21: argmax starts at index 0 holding the dtype's lowest finite value and moves only to a
# strictly greater element, so float16's -65504 never beats its start (bfloat16's lowest is
# -3.39e38); argmin mirrors it from the highest finite value.
@pytest.mark.parametrize(
    "dtype,values,want_max,want_min",
    [
        ("float16", [-np.inf, -65504], 0, 0),
        ("bfloat16", [-np.inf, -65504], 1, 0),
        ("float16", [np.inf, 65504], 0, 0),
        ("bfloat16", [np.inf, 65504], 0, 1),
        ("float16", [-np.inf, -np.inf, -1], 2, 0),
        ("float16", [np.nan, 1, 2], 2, 1),
        ("bfloat16", [1, np.nan, 2], 2, 0),
    ],
)
def test_half_argmax_argmin_start_from_the_types_limits(dtype, values, want_max, want_min):
    x = jf.constant(np.array(values, dtype=np.dtype(dtype)))
    assert int(jf.argmax(x).numpy()) == want_max and int(jf.argmin(x).numpy()) == want_min
    assert int(_compiled(lambda v: jf.argmax(v), x).numpy()) == want_max
    assert int(_compiled(lambda v: jf.argmin(v), x).numpy()) == want_min
    # a computed half value too (its limit is the dtype's, not float32's)
    assert (
        int(_compiled(lambda v: jf.argmax(v * jf.constant(np.array(1, np.dtype(dtype)))), x).numpy())
        == want_max
    )


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("op", [jf.math.floordiv, jf.math.floormod, jf.truncatediv])
def test_small_int_division_by_zero_raises(op, dtype):
    with pytest.raises(jf.errors.InvalidArgumentError, match="Integer division by zero"):
        op(jf.constant(np.array([3, 4], dtype)), jf.constant(np.array([1, 0], dtype)))


def test_int8_floor_division_signs_and_wraparound():
    # TF 2.21: floordiv([-7, 7, -128], [2, -2, -1]) = [-4, -4, -128], floormod = [1, -1, 0]
    x, y = jf.constant(np.array([-7, 7, -128], np.int8)), jf.constant(np.array([2, -2, -1], np.int8))
    np.testing.assert_array_equal(jf.math.floordiv(x, y).numpy(), [-4, -4, -128])
    np.testing.assert_array_equal(jf.math.floormod(x, y).numpy(), [1, -1, 0])
    np.testing.assert_array_equal(jf.truncatediv(x, y).numpy(), [-3, -3, -128])
    u = jf.constant(np.array([250, 7], np.uint8))
    np.testing.assert_array_equal(
        jf.math.floordiv(u, jf.constant(np.array([3, 2], np.uint8))).numpy(), [83, 3]
    )
    np.testing.assert_array_equal(
        jf.math.floormod(u, jf.constant(np.array([3, 2], np.uint8))).numpy(), [1, 1]
    )


def test_small_int_shifts_clamp_the_amount():
    # TF 2.21: [1, 255, 3] << [7, 9, 200] on uint8 = [128, 128, 128];
    # [-128, -1, 100] >> [3, 100, -5] on int8 = [-16, -1, 100]
    u = jf.bitwise.left_shift(
        jf.constant(np.array([1, 255, 3], np.uint8)), jf.constant(np.array([7, 9, 200], np.uint8))
    )
    np.testing.assert_array_equal(u.numpy(), [128, 128, 128])
    s = jf.bitwise.right_shift(
        jf.constant(np.array([-128, -1, 100], np.int8)), jf.constant(np.array([3, 100, -5], np.int8))
    )
    np.testing.assert_array_equal(s.numpy(), [-16, -1, 100])
    big = jf.bitwise.right_shift(
        jf.constant(np.array([2**63 + 8], np.uint64)), jf.constant(np.array([3], np.uint64))
    )
    assert big.numpy()[0] == (2**63 + 8) >> 3  # logical, not arithmetic


def test_small_int_pow_sign_and_scans_wrap():
    # TF 2.21: pow([3, -2, 5], [5, 3, 4]) on int8 = [-13, -8, 113]
    p = jf.pow(jf.constant(np.array([3, -2, 5], np.int8)), jf.constant(np.array([5, 3, 4], np.int8)))
    np.testing.assert_array_equal(p.numpy(), [-13, -8, 113])
    with pytest.raises(jf.errors.InvalidArgumentError, match="negative integer powers"):
        jf.pow(jf.constant(np.array([3], np.int16)), jf.constant(np.array([-1], np.int16)))
    np.testing.assert_array_equal(jf.sign(jf.constant(np.array([-5, 0, 7], np.int8))).numpy(), [-1, 0, 1])
    # TF 2.21: cumsum([100, 200, 44]) on uint8 = [100, 44, 88]; cumprod([2, 3, 50]) on int8 = [2, 6, 44]
    np.testing.assert_array_equal(
        jf.cumsum(jf.constant(np.array([100, 200, 44], np.uint8))).numpy(), [100, 44, 88]
    )
    np.testing.assert_array_equal(
        jf.math.cumprod(jf.constant(np.array([2, 3, 50], np.int8))).numpy(), [2, 6, 44]
    )
    # TF 2.21: relu6([-5, 0, 7, 200]) on int16 = [0, 0, 6, 6]
    np.testing.assert_array_equal(
        jf.nn.relu6(jf.constant(np.array([-5, 0, 7, 200], np.int16))).numpy(), [0, 0, 6, 6]
    )


def test_int16_batch_matmul_wraps():
    a = np.array([[[300, 2]]], np.int16)
    b = np.array([[[200], [1]]], np.int16)
    out = jf.matmul(jf.constant(a), jf.constant(b)).numpy()
    assert out.dtype == np.int16 and out[0, 0, 0] == np.int16(60002 - 65536)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_range_counts_and_steps_in_the_dtype(dtype):
    h = np.dtype(dtype).type
    start, limit, delta = h(0), h(30), h(0.1)
    got = jf.range(jf.constant(start), jf.constant(limit), jf.constant(delta)).numpy()
    # TF's size is ceil(|limit - start| / delta) rounded in the dtype (float16: 300, where the
    # exact quotient 300.07 would give 301), its elements start + i * delta in the dtype.
    n = int(np.ceil(np.abs(h(h(limit - start) / delta))))
    if dtype == "float16":
        assert n == 300  # TF 2.21's length
    want = np.array([h(start + h(h(i) * delta)) for i in range(n)], np.dtype(dtype))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_check_numerics_eager_and_compiled(dtype):
    bad = jf.constant(np.array([1, np.inf], np.dtype(dtype)))
    with pytest.raises(jf.errors.InvalidArgumentError, match="msg : Tensor had Inf values"):
        jf.debugging.check_numerics(bad, "msg")
    with pytest.raises(jf.errors.InvalidArgumentError, match="Tensor had Inf values"):
        jf.function(lambda v: jf.debugging.check_numerics(v * 2, "msg"), jit_compile=True)(bad)
    ok = jf.constant(np.array([1, 2], np.dtype(dtype)))
    out = _compiled(lambda v: jf.debugging.check_numerics(v * 2, "msg"), ok)
    np.testing.assert_array_equal(out.numpy().astype(np.float64), [2, 4])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_cumulative_logsumexp(dtype):
    x = np.array([1, 2, 3, -np.inf, 0.5], np.dtype(dtype))
    want = np.logaddexp.accumulate(x.astype(np.float64))
    tol = 2e-3 if dtype == "float16" else 1.6e-2
    for got in (
        jf.math.cumulative_logsumexp(jf.constant(x)),
        _compiled(lambda v: jf.math.cumulative_logsumexp(v), jf.constant(x)),
    ):
        assert got.dtype.name == dtype
        np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=tol, atol=tol)


def test_complex_cumprod_and_its_gradient_match_tf():
    x = np.array([[1 + 2j, 0.5 - 1j, -1 + 0.5j], [2 - 1j, 1j, 1.5 + 0.25j]], np.complex128)
    w = np.array([[0.3 - 0.2j, 1 + 1j, -0.5 + 2j], [1 - 0.5j, 0.25j, 2 + 0j]], np.complex128)
    np.testing.assert_allclose(jf.math.cumprod(jf.constant(x), 1).numpy(), np.cumprod(x, 1), rtol=1e-12)
    np.testing.assert_allclose(
        jf.math.cumprod(jf.constant(x.astype(np.complex64)), 1).numpy(), np.cumprod(x, 1), rtol=1e-5
    )
    # TF 2.21's gradients of sum(real(cumprod(x) * w)), inclusive and exclusive-reversed
    want = {
        (False, False): [[2.3 - 1.925j, 1 + 5.75j, -1.25 - 5j], [0.75 + 3.5j, 6.25 - 2.5j, 2 + 4j]],
        (True, True): [[0j, -0.4 - 0.05j, 1.35 - 1.2j], [0j, 1.375 + 1j, -0.5 + 0.75j]],
    }
    for (exclusive, reverse), g_tf in want.items():
        xt = jf.constant(x)
        with jf.GradientTape() as tape:
            tape.watch(xt)
            y = jf.math.cumprod(xt, 1, exclusive=exclusive, reverse=reverse)
            loss = jf.reduce_sum(jf.math.real(y * jf.constant(w)))
        np.testing.assert_allclose(tape.gradient(loss, xt).numpy(), np.array(g_tf), rtol=1e-12, atol=1e-12)


def test_bfloat16_top_k_orders_by_value():
    x = np.array([[1.5, -2.0, 7.0, 7.0, 0.25]], ml_dtypes.bfloat16)
    v, i = jf.math.top_k(jf.constant(x), 3)
    np.testing.assert_array_equal(i.numpy(), [[2, 3, 0]])
    np.testing.assert_array_equal(v.numpy().astype(np.float64), [[7.0, 7.0, 1.5]])
    v2, i2 = _compiled(lambda t: jf.math.top_k(t, 3), jf.constant(x))
    np.testing.assert_array_equal(i2.numpy(), [[2, 3, 0]])
    np.testing.assert_array_equal(v2.numpy().astype(np.float64), [[7.0, 7.0, 1.5]])


def test_half_quotient_is_rounded_to_the_type_before_floor_or_trunc():
    # TF 2.21 in float16: [-125, -124.9, -124.8] // 0.1 = [-1250, -1249, -1248] (the float32
    # quotients -1250.3... would floor to -1251, ...); truncatediv([25.6875, 26.1875, 26.6875],
    # 0.1) = [257, 262, 267] (float32: 256, 261, 266)
    y = jf.constant(np.array([0.1], np.float16))
    x = jf.constant(np.array([-125.0, -124.9, -124.8], np.float16))
    np.testing.assert_array_equal(jf.math.floordiv(x, y).numpy().astype(np.float64), [-1250, -1249, -1248])
    x = jf.constant(np.array([25.6875, 26.1875, 26.6875], np.float16))
    np.testing.assert_array_equal(jf.truncatediv(x, y).numpy().astype(np.float64), [257, 262, 267])
