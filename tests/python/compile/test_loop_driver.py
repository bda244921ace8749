"""A While that runs whole and whose step is only loop kernels runs its iterations in one
compiled function, the cluster's loop driver (codegen/cpu/cpu_loop_driver.cc): it calls the
kernels, tests the status word and the condition and swaps the carried buffers, and returns
to the runtime only when the loop ends. Counted in jf.debugging.stats() as
compiled_loop_driver_runs; results, errors, bounds and guarded steps are those of the
runtime's own loop."""
import numpy as np
import pytest

import jitflow as jf


def _stats():
    return jf.debugging.stats()


def _delta(before, *keys):
    after = _stats()
    return {k: after[k] - before[k] for k in keys}


KEYS = ("compiled_loop_runs", "compiled_loop_driver_runs", "compiled_loop_iterations", "cluster_runs")


def counter(x, n):
    i = jf.constant(0)
    s = x
    while i < n:
        s = s * 0.5 + jf.cast(i, jf.float32)
        i += 1
    return s


def np_counter(x, n):
    s = np.asarray(x, np.float32)
    for i in range(n):
        s = (s * np.float32(0.5) + np.float32(i)).astype(np.float32)
    return s


@pytest.mark.parametrize("size", [1, 3, 256])
@pytest.mark.parametrize("n", [1, 2, 1000])
def test_a_counter_loop_runs_in_the_driver(n, size):
    f = jf.function(counter, jit_compile=True)
    x = np.linspace(-1, 1, size).astype(np.float32)
    f(x, jf.constant(n))
    before = _stats()
    out = f(x, jf.constant(n)).numpy()
    np.testing.assert_array_equal(out, np_counter(x, n))  # the same float32 operations, in order
    d = _delta(before, *KEYS)
    assert d["compiled_loop_runs"] == 1 and d["compiled_loop_iterations"] == n, d
    # the first iteration runs in the runtime (it moves the caller's values out), the rest in
    # the driver
    assert d["compiled_loop_driver_runs"] == (1 if n > 1 else 0), d


def test_a_zero_trip_loop_and_empty_values_skip_the_driver():
    f = jf.function(counter, jit_compile=True)
    x = np.ones(4, np.float32)
    f(x, jf.constant(0))
    before = _stats()
    np.testing.assert_array_equal(f(x, jf.constant(0)).numpy(), x)
    empty = np.zeros(0, np.float32)
    assert f(empty, jf.constant(5)).shape == (0,)
    assert _delta(before, *KEYS)["compiled_loop_driver_runs"] == 0


def test_the_tanh_recurrence_matches_float64_numpy():
    @jf.function(jit_compile=True)
    def f(x, n):
        for _ in jf.range(n):
            x = jf.tanh(x * 1.01 + 0.1) * 0.9
        return x

    x = np.linspace(-1, 1, 256).astype(np.float32)
    before = _stats()
    out = f(x, jf.constant(300)).numpy()
    ref = x.astype(np.float64)
    for _ in range(300):
        ref = np.tanh(ref * 1.01 + 0.1) * 0.9
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert _delta(before, *KEYS)["compiled_loop_driver_runs"] == 1


@pytest.mark.parametrize("bound", [1, 2, 7])
def test_maximum_iterations_bounds_the_driver(bound):
    @jf.function(jit_compile=True)
    def f(x):
        return jf.while_loop(lambda i, v: i < 100, lambda i, v: (i + 1, v * 2.0 + 1.0), [0, x],
                             maximum_iterations=bound)

    x = np.float32(0.5)
    before = _stats()
    i, v = f(jf.constant(x))
    assert int(i) == bound
    assert float(v) == pytest.approx(np_float_doubling(0.5, bound))
    assert _delta(before, *KEYS)["compiled_loop_iterations"] == bound


def np_float_doubling(v, n):
    for _ in range(n):
        v = v * 2.0 + 1.0
    return v


def test_a_check_failing_mid_loop_raises_and_the_loop_runs_again():
    @jf.function(jit_compile=True)
    def f(x, n):
        i = jf.constant(0)
        while i < n:
            x = x + 100 // (5 - i)  # divides by zero in the iteration i == 5
            i += 1
        return x

    x = jf.constant([1, 2], jf.int32)
    want = np.array([1, 2]) + sum(100 // (5 - i) for i in range(5))
    np.testing.assert_array_equal(f(x, jf.constant(5)).numpy(), want)
    with pytest.raises(jf.errors.InvalidArgumentError, match="division by zero"):
        f(x, jf.constant(9))
    # the buffers the failed loop swapped are whole again
    np.testing.assert_array_equal(f(x, jf.constant(5)).numpy(), want)
    np.testing.assert_array_equal(f(x, jf.constant(3)).numpy(), np.array([1, 2]) + 20 + 25 + 33)


def test_guarded_steps_in_the_driver_are_skipped_and_counted():
    @jf.function(jit_compile=True)
    def f(params, n):
        s = jf.constant(0.0)
        for i in jf.range(n):
            if i < 3:
                s += jf.gather(params, i)  # checks its index: a guarded branch
            else:
                s -= 1.0
        return s

    p = jf.constant([1.0, 2.0, 4.0])
    f(p, jf.constant(10))
    before = _stats()
    assert float(f(p, jf.constant(10))) == 7.0 - 7.0
    d = _delta(before, *KEYS, "skipped_branch_steps")
    assert d["compiled_loop_driver_runs"] == 1 and d["skipped_branch_steps"] == 10, d


def test_a_loop_with_a_library_step_runs_whole_without_the_driver():
    w = (np.random.default_rng(1).standard_normal((48, 48)) * 0.1).astype(np.float32)

    @jf.function(jit_compile=True)
    def f(h, w, n):
        for _ in jf.range(n):
            h = jf.tanh(jf.matmul(h, w))  # 48x48x48: Eigen's GEMM, a library step
        return h

    h = np.ones((48, 48), np.float32)
    f(h, w, jf.constant(3))
    before = _stats()
    out = f(h, w, jf.constant(3)).numpy()
    ref = h.astype(np.float64)
    for _ in range(3):
        ref = np.tanh(ref @ w)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    d = _delta(before, *KEYS)
    assert d["compiled_loop_runs"] == 1 and d["compiled_loop_driver_runs"] == 0, d
