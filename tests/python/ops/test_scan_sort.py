"""Scans (cumsum, cumprod, cumulative_logsumexp with exclusive/reverse), math.top_k, sort and
argsort, in_top_k, searchsorted and bincount against float64 numpy references in the five modes
(the compiled ones asserting compiled code ran: scans and TopKV2 are library steps), their
dtypes, empty and size-1 dims, finite-difference gradients and TF 2.21's errors."""
import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]


def scan_ref(fn, x, axis, exclusive, reverse):
    """An inclusive numpy scan made exclusive and/or reversed along axis."""
    x = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    if reverse:
        x = x[..., ::-1]
    y = fn(x)
    if exclusive:
        init = {"sum": 0.0, "prod": 1.0, "lse": -np.inf}[fn.kind]
        y = np.concatenate([np.full(y.shape[:-1] + (1,), init), y[..., :-1]], -1)[..., :x.shape[-1]]
    if reverse:
        y = y[..., ::-1]
    return np.moveaxis(y, -1, axis)


def _kind(f, k):
    f.kind = k
    return f


SCANS = {
    "cumsum": (jf.cumsum, _kind(lambda x: np.cumsum(x, -1), "sum")),
    "cumprod": (jf.math.cumprod, _kind(lambda x: np.cumprod(x, -1), "prod")),
    "cumulative_logsumexp": (jf.math.cumulative_logsumexp, _kind(lambda x: np.logaddexp.accumulate(x, -1), "lse")),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(SCANS))
@pytest.mark.parametrize("shape,axis", [((2, 5), 1), ((3, 4, 2), 1), ((4,), 0), ((2, 0, 3), -1), ((1, 1), 0)])
@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, False), (False, True), (True, True)])
def test_scans(name, shape, axis, exclusive, reverse, mode, rng):
    op, ref = SCANS[name]
    x = rng.uniform(0.5, 1.5, shape).astype(np.float32)
    got = run_mode(mode, lambda a: op(a, axis, exclusive=exclusive, reverse=reverse), jf.constant(x))
    assert got.dtype == jf.float32 and got.shape == shape
    np.testing.assert_allclose(got.numpy(), scan_ref(ref, x, axis, exclusive, reverse), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
def test_scan_dtypes(dtype, rng):
    x = rng.integers(-3, 4, (3, 4)).astype(dtype)
    for mode in ("eager", "jit_compile"):
        got = run_mode(mode, lambda a: jf.cumsum(a, 1, reverse=True), jf.constant(x))
        assert got.numpy().dtype == dtype
        np.testing.assert_array_equal(got.numpy(), np.cumsum(x[:, ::-1], 1)[:, ::-1])
        got = run_mode(mode, lambda a: jf.math.cumprod(a, 0, exclusive=True), jf.constant(x))
        np.testing.assert_array_equal(got.numpy(), scan_ref(SCANS["cumprod"][1], x, 0, True, False).astype(dtype))
    with pytest.raises(TypeError):
        jf.math.cumulative_logsumexp(jf.constant([1, 2]))
    with pytest.raises(TypeError):
        jf.cumsum(jf.constant([True]))


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("name", list(SCANS))
@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, True)])
def test_scan_gradients(name, exclusive, reverse, mode, rng):
    op, ref = SCANS[name]
    x = rng.uniform(0.5, 1.5, (2, 4))
    w = rng.standard_normal((2, 4))

    if exclusive:  # the empty sums: 0, 1 or -inf (which a weight would make inf or NaN)
        w[:, -1 if reverse else 0] = 0.0

    def fn(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            y = op(a, 1, exclusive=exclusive, reverse=reverse)
            y = jf.reduce_sum(jf.where(w != 0, y, jf.zeros_like(y)) * w)
        return tape.gradient(y, a)

    def loss(a):
        y = scan_ref(ref, a, 1, exclusive, reverse)
        return float(np.sum(np.where(w != 0, y, 0) * w))

    got = run_mode(mode, fn, jf.constant(x))
    want = numeric_grad(loss, [x])[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


def test_logsumexp_gradient_mixed_signs(rng):
    x = rng.standard_normal(5)
    w = np.array([1.0, -2.0, 0.0, 3.0, -0.5])

    def fn(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            y = jf.reduce_sum(jf.math.cumulative_logsumexp(a) * w)
        return tape.gradient(y, a)

    want = numeric_grad(lambda a: float(np.sum(np.logaddexp.accumulate(a) * w)), [x])[0]
    np.testing.assert_allclose(fn(jf.constant(x)).numpy(), want, rtol=1e-6, atol=1e-7)


def top_k_ref(x, k):
    idx = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, -1), idx


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,k", [((2, 6), 3), ((3, 2, 5), 5), ((4,), 1), ((2, 3), 0), ((0, 3), 2), ((2, 1), 1)])
def test_top_k(shape, k, mode, rng):
    x = rng.integers(-3, 4, shape).astype(np.float32)  # many ties: equal values keep their order
    vals, idx = run_mode(mode, lambda a: jf.math.top_k(a, k), jf.constant(x))
    want_v, want_i = top_k_ref(x, k)
    assert idx.dtype == jf.int32
    np.testing.assert_array_equal(vals.numpy(), want_v)
    np.testing.assert_array_equal(idx.numpy(), want_i)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
def test_top_k_dtypes(dtype, rng):
    x = rng.integers(-50, 50, (3, 7)).astype(dtype)
    for mode in ("eager", "jit_compile"):
        vals, idx = run_mode(mode, lambda a: jf.math.top_k(a, 4), jf.constant(x))
        want_v, want_i = top_k_ref(x, 4)
        assert vals.numpy().dtype == dtype
        np.testing.assert_array_equal(vals.numpy(), want_v)
        np.testing.assert_array_equal(idx.numpy(), want_i)
    _, idx = jf.math.top_k(jf.constant(x), 2, index_type=jf.int64)
    assert idx.dtype == jf.int64


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("shape,k", [((2, 5), 2), ((3, 4), 4)])
def test_top_k_gradient(shape, k, mode, rng):
    x = rng.permutation(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape) / 3.0  # distinct values
    w = rng.standard_normal(shape[:-1] + (k,))

    def fn(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            y = jf.reduce_sum(jf.math.top_k(a, k)[0] * w)
        return tape.gradient(y, a)

    got = run_mode(mode, fn, jf.constant(x))
    want = numeric_grad(lambda a: float(np.sum(top_k_ref(a, k)[0] * w)), [x])[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


def test_top_k_gradient_scatters_large_rows(rng):
    x = rng.permutation(400).astype(np.float64).reshape(1, 400)
    with jf.GradientTape() as tape:
        a = jf.constant(x)
        tape.watch(a)
        y = jf.reduce_sum(jf.sort(a) * np.arange(400.0))
    g = tape.gradient(y, a).numpy()
    np.testing.assert_array_equal(g[0], np.argsort(np.argsort(x[0])).astype(np.float64))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
@pytest.mark.parametrize("shape,axis", [((2, 7), -1), ((4, 3, 2), 0), ((3, 4), 1), ((5,), 0), ((2, 0), 1)])
def test_sort_argsort(shape, axis, direction, mode, rng):
    x = rng.integers(-3, 4, shape).astype(np.float32)
    key = x if direction == "ASCENDING" else -x
    want_i = np.argsort(key, axis=axis, kind="stable")
    got_s = run_mode(mode, lambda a: jf.sort(a, axis=axis, direction=direction), jf.constant(x))
    np.testing.assert_array_equal(got_s.numpy(), np.take_along_axis(x, want_i, axis))
    got_i = run_mode(mode, lambda a: jf.argsort(a, axis=axis, direction=direction, stable=True), jf.constant(x))
    assert got_i.dtype == jf.int32
    np.testing.assert_array_equal(got_i.numpy(), want_i)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_sort_dtypes_extremes(dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind == "i" else np.finfo(dtype)
    x = np.array([3, info.min, 0, info.max, -1, info.min], dtype)
    for mode in ("eager", "jit_compile"):
        got = run_mode(mode, jf.sort, jf.constant(x))
        np.testing.assert_array_equal(got.numpy(), np.sort(x))
        got = run_mode(mode, lambda a: jf.argsort(a, direction="DESCENDING"), jf.constant(x))
        np.testing.assert_array_equal(got.numpy(), np.argsort(-x.astype(np.float64), kind="stable"))


def test_sort_gradient(rng):
    x = rng.permutation(12).astype(np.float64).reshape(3, 4) / 5.0
    w = rng.standard_normal((3, 4))

    def fn(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            y = jf.reduce_sum(jf.sort(a, axis=0, direction="DESCENDING") * w)
        return tape.gradient(y, a)

    got = run_mode("jit_compile", fn, jf.constant(x))
    want = numeric_grad(lambda a: float(np.sum(-np.sort(-a, axis=0) * w)), [x])[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_in_top_k(mode):
    pred = np.array([[1., 1, 1, 0], [1, 2, 3, 4], [4, 3, 2, np.inf], [0, 5, 5, 1]], np.float32)
    targets = np.array([0, 3, 3, 2], np.int32)
    want = {1: [True, True, False, True], 2: [True, True, False, True]}  # TF 2.21's: an inf target is out
    for k in (1, 2):
        got = run_mode(mode, lambda p, t, k=k: jf.math.in_top_k(t, p, k), jf.constant(pred), jf.constant(targets))
        np.testing.assert_array_equal(got.numpy(), want[k])
    targets = np.array([3, 0, 1, 0], np.int32)
    got = run_mode(mode, lambda p, t: jf.math.in_top_k(t, p, 2), jf.constant(pred), jf.constant(targets))
    np.testing.assert_array_equal(got.numpy(), [False, False, False, False])  # TF 2.21's values
    got = jf.math.in_top_k(jf.constant([0, 5, -1, 0]), jf.constant(pred), 4)  # bad class ids: False
    np.testing.assert_array_equal(got.numpy(), [True, False, False, True])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side, mode, rng):
    seq = np.sort(rng.integers(0, 6, (3, 8)), axis=-1).astype(np.float32)
    vals = rng.integers(-1, 7, (3, 5)).astype(np.float32)
    want = np.stack([np.searchsorted(s, v, side) for s, v in zip(seq, vals)])
    got = run_mode(mode, lambda s, v: jf.searchsorted(s, v, side=side), jf.constant(seq), jf.constant(vals))
    assert got.dtype == jf.int32
    np.testing.assert_array_equal(got.numpy(), want)
    got = jf.searchsorted(jf.constant(seq[0]), jf.constant(vals[0]), side=side, out_type=jf.int64)
    assert got.dtype == jf.int64
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq[0], vals[0], side))


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_bincount(mode):
    arr = np.array([1, 1, 4, 0, 1], np.int32)
    got = run_mode(mode, jf.math.bincount, jf.constant(arr))
    np.testing.assert_array_equal(got.numpy(), np.bincount(arr))
    got = run_mode(mode, lambda a: jf.math.bincount(a, minlength=2, maxlength=3), jf.constant(arr))
    np.testing.assert_array_equal(got.numpy(), [1, 3, 0])  # TF 2.21: values past maxlength dropped
    w = np.array([.5, 1, 2, 3, .25])
    got = run_mode(mode, lambda a, b: jf.math.bincount(a, weights=b), jf.constant(arr), jf.constant(w))
    assert got.dtype == jf.float64
    np.testing.assert_allclose(got.numpy(), np.bincount(arr, w))
    got = jf.math.bincount(jf.constant(arr), binary_output=True, minlength=7)
    np.testing.assert_array_equal(got.numpy(), [1, 1, 0, 0, 1, 0, 0])
    got = jf.math.bincount(jf.constant([[1, 1], [4, 0]]), axis=-1)
    np.testing.assert_array_equal(got.numpy(), [[0, 2, 0, 0, 0], [1, 0, 0, 0, 1]])
    assert jf.math.bincount(jf.constant(np.zeros(0, np.int32))).shape == (0,)


def test_errors():
    x = jf.constant([[3., 1, 2], [1, 1, 0]])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Expected scan axis in the range \[-2, 2\), but got 2"):
        jf.cumsum(x, axis=2)
    with pytest.raises(jf.errors.InvalidArgumentError, match="axis must be a scalar"):
        jf.cumsum(x, axis=[0])
    with pytest.raises(jf.errors.InvalidArgumentError, match="input must have at least k columns. Had 3, needed 5"):
        jf.math.top_k(x, 5)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Need k >= 0, got -1"):
        jf.math.top_k(x, -1)
    with pytest.raises(jf.errors.InvalidArgumentError, match="input must be >= 1-D, got shape \\[\\]"):
        jf.math.top_k(jf.constant(1.0), 1)
    with pytest.raises(jf.errors.InvalidArgumentError, match="k must be scalar, got shape \\[2\\]"):
        jf.math.top_k(x, [1, 2])
    with pytest.raises(TypeError):
        jf.math.top_k(jf.constant([True, False]), 1)
    with pytest.raises(ValueError, match="Argument `direction` should be one of ASCENDING, DESCENDING"):
        jf.sort(x, direction="UP")
    with pytest.raises(ValueError, match="Argument `side` must be either 'right' or 'left'"):
        jf.searchsorted(x, x, side="mid")
    with pytest.raises(jf.errors.InvalidArgumentError, match="Input arr must be non-negative!"):
        jf.math.bincount(jf.constant([1, -1, 4]))


def test_top_k_returns_tf_namedtuple():
    """TF's top_k result has .values and .indices (programs index it by name) and unpacks."""
    out = jf.math.top_k(jf.constant([[1.0, 5.0, 3.0]]), k=2)
    np.testing.assert_array_equal(out.values.numpy(), [[5.0, 3.0]])
    np.testing.assert_array_equal(out.indices.numpy(), [[1, 2]])
    values, indices = out
    assert type(out).__name__ == "TopKV2" and values is out.values and indices is out.indices
