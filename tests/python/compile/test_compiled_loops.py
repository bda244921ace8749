"""A While whose body and condition compile to one cluster runs whole in compiled code: one
cluster run for all its iterations (stats' compiled_loop_runs), results equal to float64 numpy
or exact Python references; loops that cannot keep one step per iteration and say why."""
import warnings

import numpy as np
import pytest

import jitflow as jf


def _stats():
    return jf.debugging.stats()


def _delta(before, key):
    return _stats()[key] - before[key]


def _np_recurrence(x, n):
    x = np.asarray(x, np.float64)
    for _ in range(n):
        x = np.tanh(x * 1.01 + 0.1) * 0.9
    return x


def recurrence(x, n):
    for _ in jf.range(n):
        x = jf.tanh(x * 1.01 + 0.1) * 0.9
    return x


@pytest.mark.parametrize("size", [1, 37, 256, 16384])
def test_recurrence_runs_as_one_compiled_loop(size):
    f = jf.function(recurrence, jit_compile=True)
    x0 = np.linspace(-2, 2, size).astype(np.float32)
    for n in (0, 1, 2, 7, 100):
        before = _stats()
        out = f(x0, jf.constant(n))
        np.testing.assert_allclose(out.numpy(), _np_recurrence(x0, n), rtol=3e-6, atol=2e-6)
        # the condition once on the executor, then every iteration in one run of the step
        assert _delta(before, "compiled_loop_runs") == (1 if n else 0)
        assert _delta(before, "compiled_loop_iterations") == n
        assert _delta(before, "cluster_runs") == (2 if n else 1)
        assert _delta(before, "compiled_loop_fallbacks") == 0
    row = jf.explain(f, x0, jf.constant(3)).by_op()["While"]
    assert row.status == "compiled" and row.reason.startswith("a compiled loop")
    assert row.cluster.startswith("While/body/cluster_")


def test_the_callers_value_is_never_written_and_calls_do_not_share_results():
    f = jf.function(recurrence, jit_compile=True)
    x0 = np.linspace(-1, 1, 64).astype(np.float32)
    x = jf.constant(x0)
    a = f(x, jf.constant(5))
    b = f(x, jf.constant(6))
    np.testing.assert_array_equal(x.numpy(), x0)
    np.testing.assert_allclose(a.numpy(), _np_recurrence(x0, 5), rtol=3e-6, atol=2e-6)
    np.testing.assert_allclose(b.numpy(), _np_recurrence(x0, 6), rtol=3e-6, atol=2e-6)


def test_scalar_counters_and_swapped_variables_are_exact():
    @jf.function(jit_compile=True)
    def fib(n):
        i, a, b = jf.constant(0), jf.constant(0, jf.int64), jf.constant(1, jf.int64)
        while i < n:
            a, b = b, a + b
            i += 1
        return i, a, b

    def py_fib(n):
        a, b = 0, 1
        for _ in range(n):
            a, b = b, a + b
        return a, b

    for n in (0, 1, 2, 10, 90):
        before = _stats()
        i, a, b = fib(jf.constant(n))
        assert (int(i), int(a), int(b)) == (n, *py_fib(n))
        assert _delta(before, "compiled_loop_iterations") == n


def test_maximum_iterations_stops_the_compiled_loop():
    @jf.function(jit_compile=True)
    def f(x, limit):
        return jf.while_loop(lambda i, v: i < limit, lambda i, v: (i + 1, v * 0.5 + 1.0),
                             (jf.constant(0), x), maximum_iterations=6)

    x0 = np.arange(5, dtype=np.float32)
    for limit, trips in ((3, 3), (6, 6), (100, 6), (0, 0)):
        before = _stats()
        i, v = f(x0, jf.constant(limit))
        ref = x0.astype(np.float64)
        for _ in range(trips):
            ref = ref * 0.5 + 1.0
        assert int(i) == trips
        np.testing.assert_allclose(v.numpy(), ref, rtol=1e-6)
        assert _delta(before, "compiled_loop_iterations") == trips


def test_a_reduction_inside_the_loop():
    def body(x, n):
        for _ in jf.range(n):
            x = x - 0.25 * (x - jf.reduce_mean(x, axis=1, keepdims=True)) + 0.01 * jf.reduce_max(x)
        return x

    x0 = np.random.default_rng(3).standard_normal((6, 50)).astype(np.float32)
    ref = x0.astype(np.float64)
    for _ in range(20):
        ref = ref - 0.25 * (ref - ref.mean(axis=1, keepdims=True)) + 0.01 * ref.max()
    before = _stats()
    out = jf.function(body, jit_compile=True)(x0, jf.constant(20))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    assert _delta(before, "compiled_loop_runs") == 1


def test_captures_and_a_variable_passed_through():
    @jf.function(jit_compile=True)
    def f(x, w, n):
        def body(i, v, k):
            return i + 1, v * w + k, k
        return jf.while_loop(lambda i, v, k: i < n, body, (jf.constant(0), x, jf.constant(2.0)))

    x0 = np.array([1.0, -2.0, 0.5], np.float32)
    w0 = np.array([0.5, 0.25, 2.0], np.float32)
    i, v, k = f(x0, w0, jf.constant(4))
    ref = x0.astype(np.float64)
    for _ in range(4):
        ref = ref * w0 + 2.0
    np.testing.assert_allclose(v.numpy(), ref, rtol=1e-6)
    assert int(i) == 4 and float(k) == 2.0


def test_an_error_in_a_later_iteration_raises_the_eager_error():
    @jf.function(jit_compile=True)
    def f(n):
        i, acc = jf.constant(0), jf.constant(0)
        while i < n:
            acc += 12 // (3 - i)  # i == 3 divides by zero
            i += 1
        return acc

    assert int(f(jf.constant(3))) == 4 + 6 + 12
    with pytest.raises(jf.errors.InvalidArgumentError, match="Integer division by zero"):
        f(jf.constant(5))


def test_a_nested_loop_runs_its_inner_loop_compiled():
    def f(x, n, m):
        for _ in jf.range(n):
            for _ in jf.range(m):
                x = x * 0.9 + 0.1
            x = jf.sqrt(x)
        return x

    g = jf.function(f, jit_compile=True)
    x0 = np.linspace(0.1, 2, 8).astype(np.float32)
    ref = x0.astype(np.float64)
    for _ in range(3):
        for _ in range(4):
            ref = ref * 0.9 + 0.1
        ref = np.sqrt(ref)
    before = _stats()
    np.testing.assert_allclose(g(x0, jf.constant(3), jf.constant(4)).numpy(), ref, rtol=2e-6)
    # the outer step holds a loop, so it is not one cluster: it runs per iteration, and each
    # of its 3 iterations runs the inner loop whole
    assert _delta(before, "compiled_loop_runs") == 3
    assert _delta(before, "compiled_loop_iterations") == 12
    rows = jf.explain(g, x0, jf.constant(3), jf.constant(4)).by_op()
    assert rows["While"].status == "eager"
    assert "not one compiled cluster" in rows["While"].reason
    inner = [r for k, r in rows.items() if k.startswith("While/body/") and r.type == "While"]
    assert inner and all(r.status == "compiled" for r in inner)


def test_a_library_step_inside_the_loop_runs_whole():
    # cumsum compiles as a library step (its eager kernel called from the cluster)
    def f(x, n):
        for _ in jf.range(n):
            x = jf.cumsum(jf.tanh(x), exclusive=True) * 0.5 + 1.0
        return x

    x0 = np.linspace(-1, 1, 6).astype(np.float32)
    ref = x0.astype(np.float64)
    for _ in range(3):
        t = np.tanh(ref)
        ref = (np.cumsum(t) - t) * 0.5 + 1.0
    before = _stats()
    np.testing.assert_allclose(jf.function(f, jit_compile=True)(x0, jf.constant(3)).numpy(), ref,
                               rtol=2e-6, atol=1e-6)
    assert _delta(before, "compiled_loop_runs") == 1
    assert _delta(before, "compiled_loop_iterations") == 3


def test_a_jit_scope_around_a_loop_runs_it_whole():
    @jf.function
    def f(x, n):
        with jf.jit_scope():
            for _ in jf.range(n):
                x = jf.tanh(x * 1.01 + 0.1) * 0.9
        return x

    x0 = np.linspace(-1, 1, 9).astype(np.float32)
    before = _stats()
    np.testing.assert_allclose(f(x0, jf.constant(4)).numpy(), _np_recurrence(x0, 4), rtol=3e-6, atol=2e-6)
    assert _delta(before, "compiled_loop_runs") == 1
    assert _delta(before, "cluster_runs") == 2


def test_a_loop_with_an_op_that_cannot_compile_keeps_its_steps_and_says_why():
    @jf.function
    def f(x, n):
        with jf.jit_scope():
            for _ in jf.range(n):
                s = jf.math.unsorted_segment_sum(jf.tanh(x), [0, 1, 0, 1], 2) * 0.5 + 1.0
                x = jf.concat([s, s], 0)
        return x

    x0 = np.linspace(-1, 1, 4).astype(np.float32)
    ref = x0.astype(np.float64)
    for _ in range(3):
        t = np.tanh(ref)
        s = np.array([t[0] + t[2], t[1] + t[3]]) * 0.5 + 1.0
        ref = np.concatenate([s, s])
    rows = jf.explain(f, x0, jf.constant(3)).by_op()
    seg = [r for k, r in rows.items() if k.startswith("While/body/") and r.type == "UnsortedSegmentSum"]
    assert seg and seg[0].status == "eager" and "scatter" in seg[0].reason
    before = _stats()
    np.testing.assert_allclose(f(x0, jf.constant(3)).numpy(), ref, rtol=2e-6, atol=1e-6)
    assert _delta(before, "compiled_loop_runs") == 0
    assert _delta(before, "cluster_runs") >= 3  # the compiled parts still run, per iteration
    assert rows["While"].status == "eager"
    assert "one run of its compiled step per iteration" in rows["While"].reason


def test_a_variable_that_changes_shape_runs_per_iteration_counted_and_explained():
    @jf.function(jit_compile=True)
    def f(x, n):
        return jf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, jf.concat([v, v[:1] * 2.0], 0)),
                             (jf.constant(0), x), shape_invariants=(jf.TensorShape([]), jf.TensorShape([None])))

    x0 = np.array([1.0, 2.0], np.float32)
    before = _stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, v = f(x0, jf.constant(3))
    np.testing.assert_array_equal(v.numpy(), [1, 2, 2, 2, 2])
    assert _delta(before, "compiled_loop_fallbacks") == 1
    assert _delta(before, "compiled_loop_runs") == 0
    assert any("cannot run as one compiled loop" in str(w.message) for w in caught)
    row = jf.explain(f, x0, jf.constant(3)).by_op()["While"]
    assert "ran one step per iteration instead" in row.reason and "changes from" in row.reason


def test_gradient_through_a_loop_under_jit_compile():
    def np_loss(x, w):
        v = np.asarray(x, np.float64)
        for _ in range(5):
            v = np.tanh(v * w + 0.1)
        return float(np.sum(v * v))

    @jf.function(jit_compile=True)
    def grads(x, w, n):
        with jf.GradientTape() as tape:
            tape.watch([x, w])
            v = x
            for _ in jf.range(n):
                v = jf.tanh(v * w + 0.1)
            loss = jf.reduce_sum(v * v)
        return (loss, *tape.gradient(loss, [x, w]))

    x = np.array([0.3, -0.7, 1.1], np.float64)
    w = np.array(0.9, np.float64)
    before = _stats()
    loss, gx, gw = grads(x, w, jf.constant(5))
    # every loop runs whole: the forward loop, the gradient's replay counting the iterations,
    # its replay saving each iteration's values into arrays of that size, and its loop walking
    # them back (TensorArray writes and reads compile)
    assert _delta(before, "compiled_loop_runs") == 4
    assert _delta(before, "compiled_loop_iterations") == 20
    assert _delta(before, "compiled_loop_fallbacks") == 0
    assert float(loss) == pytest.approx(np_loss(x, w), rel=1e-12)
    eps = 1e-6
    nx = [(np_loss(x + eps * e, w) - np_loss(x - eps * e, w)) / (2 * eps) for e in np.eye(3)]
    nw = (np_loss(x, w + eps) - np_loss(x, w - eps)) / (2 * eps)
    np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-6, atol=1e-9)
    assert float(gw) == pytest.approx(nw, rel=1e-6)


def _np_rnn_loss(x, w, v0, n):
    h, v = np.asarray(x, np.float64), float(v0)
    for _ in range(n):
        h = np.tanh(h @ w + 0.1 * v)
        v = v * 0.5 + 1.0
    return float(np.sum(h * h)) + v


@pytest.mark.parametrize("n", [0, 1, 7])
@pytest.mark.parametrize("mode", ["jit_compile", "jit_scope", "function"])
def test_the_gradients_replays_run_whole_in_compiled_code(mode, n):
    # The replay saving each iteration's values writes arrays sized by a first replay that
    # counts the iterations, so in compiled code it runs whole like the other loops; a variable
    # the loop writes is saved the same way. A plain function keeps one replay with doubling
    # arrays. Gradients against central differences in float64.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    w = rng.standard_normal((4, 4)) * 0.5
    v = jf.Variable(0.25, dtype=jf.float64)

    def body(x, w, n):
        v.assign(0.25)
        with jf.GradientTape() as tape:
            tape.watch([x, w])
            h = x
            for _ in jf.range(n):
                h = jf.tanh(jf.matmul(h, w) + 0.1 * v)
                v.assign(v * 0.5 + 1.0)
            loss = jf.reduce_sum(h * h) + v
        return (loss, *tape.gradient(loss, [x, w]))

    if mode == "jit_scope":
        def scoped(x, w, n):
            with jf.jit_scope():
                return body(x, w, n)
        f = jf.function(scoped)
    else:
        f = jf.function(body, jit_compile=mode == "jit_compile")
    before = _stats()
    loss, gx, gw = f(jf.constant(x), jf.constant(w), jf.constant(n))
    assert float(loss) == pytest.approx(_np_rnn_loss(x, w, 0.25, n), rel=1e-10)
    if mode == "function":
        assert _delta(before, "compiled_loop_runs") == 0
    else:
        # the counting replay, the saving replay and the backward loop: one compiled run each
        # (none for 0 iterations, where only the conditions run). The forward loop assigns the
        # variable, a side effect that stays on the executor; the replays carry its value.
        assert _delta(before, "compiled_loop_runs") == (3 if n else 0)
        assert _delta(before, "compiled_loop_fallbacks") == 0
    eps = 1e-6
    for g, arg in ((gx, 0), (gw, 1)):
        num = np.zeros_like(g.numpy())
        for idx in np.ndindex(num.shape):
            d = np.zeros_like(num)
            d[idx] = eps
            a = [x, w]
            hi = list(a)
            lo = list(a)
            hi[arg] = a[arg] + d
            lo[arg] = a[arg] - d
            num[idx] = (_np_rnn_loss(*hi, 0.25, n) - _np_rnn_loss(*lo, 0.25, n)) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), num, rtol=1e-6, atol=1e-8)
