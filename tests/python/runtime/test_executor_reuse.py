"""The executor keeps small buffers between runs of a plan (and a compiled cluster keeps
its materialized buffers): a buffer is reused only when nothing else holds it. These tests
hold results (as tensors and as zero-copy numpy views) across calls and race threads with
different inputs, traced and compiled, and check every value against numpy."""

import numpy as np
import pytest
from conftest import run_in_threads

import jitflow as jf


def _step(x, w):
    h = jf.tanh(jf.matmul(x, w) + 1.0)
    return h * jf.sigmoid(h), jf.reduce_sum(h, axis=1)


def _reference(x, w):
    h = np.tanh(x.astype(np.float64) @ w + 1.0)
    return h * (1 / (1 + np.exp(-h))), h.sum(axis=1)


def _functions():
    traced = jf.function(_step)

    @jf.function
    def compiled(x, w):
        with jf.jit_scope():
            return _step(x, w)
    return {"traced": traced, "compiled": compiled}


def _data(seed, n):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    return w, [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("mode", ["traced", "compiled"])
def test_held_results_are_not_overwritten_by_later_calls(mode):
    f = _functions()[mode]
    w, xs = _data(0, 6)
    held = [f(x, w) for x in xs]               # tensors kept alive
    views = [r[0].numpy() for r in held[:3]]   # zero-copy views of some of them
    for _ in range(5):                         # more runs that could reuse buffers
        f(xs[0], w)
    for x, (a, b) in zip(xs, held):
        ra, rb = _reference(x, w)
        np.testing.assert_allclose(a.numpy(), ra, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.numpy(), rb, rtol=1e-5, atol=1e-5)
    for x, v in zip(xs, views):
        np.testing.assert_allclose(v, _reference(x, w)[0], rtol=1e-5, atol=1e-6)
    if mode == "compiled":
        assert len(f.get_concrete_function(xs[0], w).clusters) == 1


@pytest.mark.parametrize("mode", ["traced", "compiled"])
def test_threads_with_different_inputs_get_their_own_values(mode):
    f = _functions()[mode]
    w, xs = _data(1, 4)
    refs = [_reference(x, w) for x in xs]
    f(xs[0], w)
    errors = []

    def worker(k):
        for _ in range(300):
            a, b = f(xs[k], w)
            if not (np.allclose(a.numpy(), refs[k][0], rtol=1e-5, atol=1e-6)
                    and np.allclose(b.numpy(), refs[k][1], rtol=1e-5, atol=1e-5)):
                errors.append(k)
    run_in_threads(worker, 4)
    assert errors == []
    assert f.experimental_get_tracing_count() == 1


def test_a_failing_run_leaves_the_plan_usable():
    @jf.function
    def f(x, shape):
        return jf.reshape(jf.exp(x), shape) * 2.0

    x = np.arange(6, dtype=np.float32)
    shape = np.array([2, 3], np.int32)
    np.testing.assert_allclose(f(x, shape).numpy(), np.exp(x).reshape(2, 3) * 2, rtol=1e-6)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Reshape"):
        f(x, np.array([4, 2], np.int32))  # same signature, bad value: fails mid-run
    np.testing.assert_allclose(f(x, np.array([3, 2], np.int32)).numpy(), np.exp(x).reshape(3, 2) * 2,
                               rtol=1e-6)
