"""Pooling (nn.max_pool2d / avg_pool2d, the 1-D forms and nn.max_pool / avg_pool) in the five
modes against float64 window loops (conv_ref.py): strides, SAME / VALID / explicit padding,
odd sizes, NCHW, empty batches, int max pools, TF's NaN rule; gradients (max through the
argmax) against finite differences; TF 2.21's errors."""
import conv_ref as R
import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]

# name: (x shape NHWC, ksize, strides, padding, data_format)
CASES = {
    "same": ((2, 7, 6, 3), (3, 3), (2, 2), "SAME", "NHWC"),
    "valid": ((1, 9, 8, 2), (2, 3), (2, 3), "VALID", "NHWC"),
    "overlapping": ((2, 5, 5, 2), (3, 3), (1, 1), "SAME", "NHWC"),
    "nchw": ((2, 7, 6, 3), (3, 2), (2, 1), "SAME", "NCHW"),
    "empty_batch": ((0, 5, 5, 2), (2, 2), (2, 2), "VALID", "NHWC"),
    "window_past_input": ((1, 2, 4, 2), (3, 3), (1, 1), "VALID", "NHWC"),
}


def _prepare(name, rng, dtype="float32"):
    xs, k, s, pad, fmt = CASES[name]
    x = rng.permutation(int(np.prod(xs))).reshape(xs).astype(dtype) / 7.0 - 3.0  # distinct: one argmax
    to = R.nchw if fmt == "NCHW" else (lambda a: a)
    return x, k, s, pad, fmt, to


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_pool_against_window_loops(name, kind, mode, rng):
    x, k, s, pad, fmt, to = _prepare(name, rng)
    fn = jf.nn.max_pool2d if kind == "max" else jf.nn.avg_pool2d
    ref = R.max_pool if kind == "max" else R.avg_pool
    y = run_mode(mode, lambda a: fn(a, list(k), list(s), pad, fmt), jf.constant(to(x)))
    want = to(ref(x, k, s, pad))
    assert y.shape == want.shape and y.dtype == jf.float32
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_max_pool_other_dtypes(dtype, mode, rng):
    x = rng.integers(-50, 50, (2, 5, 7, 3)).astype(dtype)
    y = run_mode(mode, lambda a: jf.nn.max_pool2d(a, 3, 2, "SAME"), jf.constant(x))
    assert y.dtype.name == dtype
    np.testing.assert_array_equal(y.numpy(), R.max_pool(x, (3, 3), (2, 2), "SAME").astype(dtype))


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
def test_max_pool_explicit_padding(mode, rng):
    x = -rng.uniform(1, 2, (1, 5, 4, 2)).astype(np.float32)  # all negative: padding must not win
    pads = [[0, 0], [1, 2], [2, 0], [0, 0]]
    y = run_mode(mode, lambda a: jf.nn.max_pool2d(a, 3, [1, 2], pads), jf.constant(x))
    np.testing.assert_array_equal(y.numpy(), R.max_pool(x, (3, 3), (1, 2), [(1, 2), (2, 0)]).astype(np.float32))


def test_max_pool_nan_and_infinity_follow_tf():
    """TF's max pool starts from the lowest float and keeps a value only when larger: NaN is
    skipped, an all -inf (or all NaN) window gives the lowest float (TF 2.21 without oneDNN)."""
    x = np.array([[np.nan, 1, 2, 3], [1, np.nan, 2, -np.inf], [-np.inf] * 4, [np.nan] * 4], np.float32)
    y = jf.nn.max_pool2d(jf.constant(x.reshape(4, 2, 2, 1)), 2, 2, "VALID").numpy().ravel()
    lowest = np.finfo(np.float32).min
    np.testing.assert_array_equal(y, np.array([3, 2, lowest, lowest], np.float32))


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("name", ["same", "valid", "overlapping", "nchw"])
def test_pool_gradients_by_finite_differences(name, kind, mode, rng):
    x, k, s, pad, fmt, to = _prepare(name, rng, "float64")
    x = x[:1, :5, :5, :2]  # small: the differences evaluate the loops twice per element
    ref = R.max_pool if kind == "max" else R.avg_pool
    fn = jf.nn.max_pool2d if kind == "max" else jf.nn.avg_pool2d
    r = rng.standard_normal(ref(x, k, s, pad).shape)

    def grads(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            loss = jf.reduce_sum(fn(a, list(k), list(s), pad, fmt) * jf.constant(to(r)))
        return tape.gradient(loss, a)

    g = run_mode(mode, grads, jf.constant(to(x)))
    want = numeric_grad(lambda v: float(np.sum(ref(v, k, s, pad) * r)), [x])[0]
    np.testing.assert_allclose(g.numpy(), to(want), rtol=1e-6, atol=1e-8)


def test_max_pool_gradient_goes_to_the_first_maximum():
    """Ties send the whole gradient to the window's first largest element, as TF's argmax."""
    x = jf.constant(np.array([1.0, 3.0, 3.0, 2.0]).reshape(1, 2, 2, 1))
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = jf.nn.max_pool2d(x, 2, 2, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy().ravel(), [0, 1, 0, 0])


def test_avg_pool_second_order_gradient(rng):
    """AvgPoolGrad is linear in its gradient input: its own gradient is an average pool."""
    x = rng.uniform(-1, 1, (1, 5, 5, 2))
    q = rng.standard_normal(x.shape)
    r = rng.standard_normal((1, 3, 3, 2))

    def outer_np(rv):
        return float(np.sum(R.avg_pool_grad(x.shape, rv, (3, 3), (2, 2), "SAME") * q))

    xt, rt = jf.constant(x), jf.constant(r)
    with jf.GradientTape() as outer:
        outer.watch(rt)
        with jf.GradientTape() as inner:
            inner.watch(xt)
            loss = jf.reduce_sum(jf.nn.avg_pool2d(xt, 3, 2, "SAME") * rt)
        second = jf.reduce_sum(inner.gradient(loss, xt) * jf.constant(q))
    np.testing.assert_allclose(outer.gradient(second, rt).numpy(), numeric_grad(outer_np, [r])[0],
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["NWC", "NCW"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool1d_and_rank_dispatch(kind, fmt, mode, rng):
    x = rng.uniform(-1, 1, (2, 9, 3))
    ref = R.max_pool if kind == "max" else R.avg_pool
    want = ref(x[:, None], (1, 3), (1, 2), "SAME")[:, 0]
    first = fmt == "NCW"
    xin = np.transpose(x, (0, 2, 1)) if first else x
    fn1 = jf.nn.max_pool1d if kind == "max" else jf.nn.avg_pool1d
    fnd = jf.nn.max_pool if kind == "max" else jf.nn.avg_pool
    y1 = run_mode(mode, lambda a: fn1(a, 3, 2, "SAME", fmt), jf.constant(xin))
    yd = run_mode(mode, lambda a: fnd(a, 3, 2, "SAME", fmt), jf.constant(xin))
    w = np.transpose(want, (0, 2, 1)) if first else want
    np.testing.assert_allclose(y1.numpy(), w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(yd.numpy(), w, rtol=1e-12, atol=1e-12)


def test_rank_dispatch_of_a_4d_input(rng):
    x = rng.uniform(-1, 1, (1, 4, 4, 2))
    np.testing.assert_array_equal(jf.nn.max_pool(jf.constant(x), 2, 2, "VALID").numpy(),
                                  R.max_pool(x, (2, 2), (2, 2), "VALID"))


def test_errors():
    x = jf.zeros([1, 5, 5, 3])
    E = jf.errors
    with pytest.raises(E.InvalidArgumentError, match=r"MaxPool: input must be 4-dimensional: \[4,4,1\]"):
        jf.nn.max_pool2d(jf.zeros([4, 4, 1]), 2, 2, "VALID")
    with pytest.raises(E.UnimplementedError, match=r"MaxPool: Pooling is not yet supported on the batch"):
        jf.nn.max_pool2d(x, [2, 2, 2, 1], 1, "VALID")
    with pytest.raises(E.InvalidArgumentError, match=r"AvgPool: Computed output size would be negative"):
        jf.nn.avg_pool2d(x, 7, 1, "VALID")
    with pytest.raises(TypeError, match=r"AvgPool: expected a float32, float64, float16 or bfloat16 input, got int32"):
        jf.nn.avg_pool2d(jf.zeros([1, 4, 4, 1], jf.int32), 2, 2, "VALID")
    with pytest.raises(E.InvalidArgumentError, match=r"MaxPool: Left padding 2 needs to be smaller than the window "
                       r"size 2"):
        jf.nn.max_pool2d(x, 2, 1, [[0, 0], [1, 1], [2, 0], [0, 0]])
    with pytest.raises(TypeError, match=r"Expected string for argument 'padding'"):
        jf.nn.avg_pool2d(x, 2, 1, [[0, 0], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match=r"ksize should be of length 1, 2 or 4"):
        jf.nn.max_pool2d(x, [2, 2, 2], 1, "VALID")
    with pytest.raises(ValueError, match=r"`input.shape.rank` must be 3, 4 or 5"):
        jf.nn.max_pool(jf.zeros([3, 3]), 2, 2, "VALID")


# ---- 3-D pooling --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("fmt", ["NDHWC", "NCDHW"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_pool3d(padding, fmt, kind, mode, rng):
    x = (rng.permutation(2 * 5 * 4 * 6 * 3).reshape(2, 5, 4, 6, 3) / 7.0 - 3.0).astype(np.float32)
    want = R.pool3d(x, (2, 3, 2), (2, 1, 2), padding, kind)
    first = fmt == "NCDHW"
    to = (lambda a: np.transpose(a, (0, 4, 1, 2, 3))) if first else (lambda a: a)
    k = [1, 1, 2, 3, 2] if first else [1, 2, 3, 2, 1]
    s = [1, 1, 2, 1, 2] if first else [1, 2, 1, 2, 1]
    fn = jf.nn.max_pool3d if kind == "max" else jf.nn.avg_pool3d
    y = run_mode(mode, lambda a: fn(a, k, s, padding, fmt), jf.constant(to(x)))
    np.testing.assert_allclose(y.numpy(), to(want), rtol=1e-6, atol=1e-6)
    if fmt == "NDHWC":  # the rank-dispatching forms reach the same op
        fnd = jf.nn.max_pool if kind == "max" else jf.nn.avg_pool
        np.testing.assert_allclose(fnd(jf.constant(x), [2, 3, 2], [2, 1, 2], padding).numpy(), want, rtol=1e-6,
                                   atol=1e-6)
        np.testing.assert_allclose(jf.nn.pool(jf.constant(x), [2, 3, 2], kind.upper(), [2, 1, 2], padding).numpy(),
                                   want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d_gradients_by_finite_differences(kind, mode, rng):
    x = rng.permutation(1 * 4 * 3 * 4 * 2).reshape(1, 4, 3, 4, 2) / 5.0
    r = rng.standard_normal(R.pool3d(x, (2, 2, 3), (2, 1, 2), "SAME", kind).shape)
    fn = jf.nn.max_pool3d if kind == "max" else jf.nn.avg_pool3d

    def grad(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            loss = jf.reduce_sum(fn(a, [1, 2, 2, 3, 1], [1, 2, 1, 2, 1], "SAME") * jf.constant(r))
        return tape.gradient(loss, a)

    g = run_mode(mode, grad, jf.constant(x))
    want = numeric_grad(lambda v: float(np.sum(R.pool3d(v, (2, 2, 3), (2, 1, 2), "SAME", kind) * r)), [x])[0]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-8)


def test_pool_2d_forms_of_nn_pool(rng):
    x = rng.uniform(-1, 1, (1, 5, 5, 2))
    np.testing.assert_allclose(jf.nn.pool(jf.constant(x), [2, 2], "AVG", [2, 2], "SAME").numpy(),
                               R.avg_pool(x, (2, 2), (2, 2), "SAME"), rtol=1e-12)
    with pytest.raises(ValueError, match="2-D MIN pooling is not supported"):  # TF 2.21's words
        jf.nn.pool(jf.constant(x), [2, 2], "MIN")
