"""A While that runs whole and whose step is only loop kernels runs its iterations in one
compiled function, the cluster's loop driver (codegen/cpu/cpu_loop_driver.cc): it calls the
kernels, tests the status word and the condition and swaps the carried buffers, and returns
to the runtime only when the loop ends. Counted in jf.debugging.stats() as
compiled_loop_driver_runs; results, errors, bounds and guarded steps are those of the
runtime's own loop."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitflow as jf
from jitflow import _C


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


def rnn(h, w, xs):
    n = jf.shape(xs)[0]
    x_ta = jf.TensorArray(jf.float32, size=n).unstack(xs)
    out = jf.TensorArray(jf.float32, size=n)
    for t in jf.range(n):
        h = jf.tanh(jf.matmul(h, w) + x_ta.read(t))  # 8x16x16: the cluster's own product code
        out = out.write(t, h)
    return out.stack()


def np_rnn(h, w, xs):
    h, w = h.astype(np.float64), w.astype(np.float64)
    outs = []
    for x in xs:
        h = np.tanh(h @ w + x)
        outs.append(h)
    return np.stack(outs)


def test_an_rnn_with_arrays_and_small_products_runs_in_the_driver():
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
    h = rng.standard_normal((8, 16)).astype(np.float32)
    xs = rng.standard_normal((50, 8, 16)).astype(np.float32)
    f = jf.function(rnn, jit_compile=True)
    f(h, w, xs)
    _C.cpu_wait_for_upgrades()  # the products' code is the full tier's
    before = _stats()
    out = f(h, w, xs).numpy()
    np.testing.assert_allclose(out, np_rnn(h, w, xs), rtol=1e-5, atol=1e-5)
    d = _delta(before, *KEYS, "small_dot_runs", "tensor_array_copied_bytes")
    assert d["compiled_loop_driver_runs"] == 1 and d["compiled_loop_iterations"] == 50, d
    assert d["small_dot_runs"] == 50, d  # every iteration's product on the cluster's code
    assert d["tensor_array_copied_bytes"] == out.nbytes, d  # the output array copied once


def test_an_array_write_past_the_end_in_the_driver_raises_eagers_error():
    @jf.function(jit_compile=True)
    def f(x, n):
        out = jf.TensorArray(jf.float32, size=4)
        for t in jf.range(n):
            x = x * 2.0 + 1.0
            out = out.write(t + 1, x)  # the write of t == 3 is past the end
        return out.stack()

    x = jf.constant([1.0, -1.0])
    f(x, jf.constant(3))
    np.testing.assert_array_equal(f(x, jf.constant(3)).numpy(), [[0, 0], [3, -1], [7, -1], [15, -1]])
    before = _stats()
    with pytest.raises(jf.errors.InvalidArgumentError, match="Trying to modify element 4 in a list with 4 elements"):
        f(x, jf.constant(6))
    assert _delta(before, *KEYS)["compiled_loop_driver_runs"] == 1
    np.testing.assert_array_equal(f(x, jf.constant(3)).numpy(), [[0, 0], [3, -1], [7, -1], [15, -1]])


def test_quick_code_runs_the_products_outside_the_driver(tmp_path):
    # Before the full tier is in, a small product's entry is a stub: the runtime's own loop
    # runs the products on the C++ reference, with the same values.
    script = textwrap.dedent("""
        import json, numpy as np, jitflow as jf
        rng = np.random.default_rng(3)
        w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
        h = rng.standard_normal((8, 16)).astype(np.float32)
        xs = rng.standard_normal((20, 8, 16)).astype(np.float32)
        def rnn(h, w, xs):
            n = jf.shape(xs)[0]
            x_ta = jf.TensorArray(jf.float32, size=n).unstack(xs)
            for t in jf.range(n):
                h = jf.tanh(jf.matmul(h, w) + x_ta.read(t))
            return h
        out = jf.function(rnn, jit_compile=True)(h, w, xs).numpy()
        s = jf.debugging.stats()
        print(json.dumps({"out": out.tolist(), "driver": s["compiled_loop_driver_runs"],
                          "loops": s["compiled_loop_runs"]}))
    """)
    env = dict(os.environ, JITFLOW_TIERED="quick", JITFLOW_CACHE_DIR=str(tmp_path))
    path = tmp_path / "quick_rnn.py"  # a file: AutoGraph reads the function's source
    path.write_text(script)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["loops"] == 1 and got["driver"] == 0, got
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
    h = rng.standard_normal((8, 16)).astype(np.float32)
    xs = rng.standard_normal((20, 8, 16)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(got["out"]), np_rnn(h, w, xs)[-1], rtol=1e-5, atol=1e-5)
