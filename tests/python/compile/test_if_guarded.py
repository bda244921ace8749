"""An If in compiled code whose branches compile but may not be computed for nothing (a large
matrix product, a gather, an integer division, check_numerics) is inlined with guards: its
branches' steps are in the cluster around it and run only when their branch is taken
(cluster/if_to_select.h, Step::guard), so the untaken branch costs nothing, raises nothing,
and a loop holding the If runs whole. Steps skipped are counted in
jf.debugging.stats()['skipped_branch_steps']."""
import os

import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]
RNG = np.random.default_rng(7)
W = (RNG.standard_normal((40, 40)) * 0.2).astype(np.float32)


def _stats():
    return jf.debugging.stats()


def _delta(before, *keys):
    after = _stats()
    return {k: after[k] - before[k] for k in keys}


def product_cond(x, w, p):
    # A run-time check: the branch may not be computed for nothing (no select).
    y = jf.cond(p, lambda: jf.debugging.check_numerics(jf.tanh(jf.matmul(x, w)), "t") + jf.reduce_sum(x),
                lambda: x * 0.5)
    return y - 1.0


def np_product_cond(x, w, p):
    x = np.asarray(x, np.float64)
    y = np.tanh(x @ np.asarray(w, np.float64)) + x.sum() if p else x * 0.5
    return y - 1.0


@pytest.mark.parametrize("rows", [0, 1, 8])
@pytest.mark.parametrize("p", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_a_guarded_cond_gives_the_taken_branch_in_every_mode(mode, p, rows):
    x = RNG.standard_normal((rows, 40)).astype(np.float32)
    out = run_mode(mode, product_cond, jf.constant(x), jf.constant(W), jf.constant(p))
    assert out.shape == (rows, 40)
    np.testing.assert_allclose(out.numpy(), np_product_cond(x, W, p), rtol=1e-5, atol=1e-5)


def test_the_untaken_branch_runs_no_step_and_the_cluster_is_one_run():
    f = jf.function(product_cond, jit_compile=True)
    x = RNG.standard_normal((8, 40)).astype(np.float32)
    rows = jf.explain(f, x, W, jf.constant(True)).by_op()
    assert rows["If"].status == "compiled" and "guarded" in rows["If"].reason
    for op in ("If/then/MatMul", "If/then/Tanh", "If/else/Mul", "Sub"):
        assert rows[op].status == "compiled", op
        assert rows[op].cluster == rows["If"].cluster, op
    for p, skipped in ((True, 1), (False, 2)):  # else: one step; then: the product, and the rest
        f(x, W, jf.constant(p))  # the tiered cluster's first runs
        before = _stats()
        np.testing.assert_allclose(f(x, W, jf.constant(p)).numpy(), np_product_cond(x, W, p), rtol=1e-5, atol=1e-5)
        d = _delta(before, "cluster_runs", "skipped_branch_steps")
        assert d["cluster_runs"] == 1
        assert d["skipped_branch_steps"] >= skipped, (p, d)


def test_an_error_in_the_taken_branch_is_raised_with_its_node():
    @jf.function(jit_compile=True)
    def f(x, i):
        return jf.cond(i >= 0, lambda: jf.gather(x, i) * 2.0, lambda: jf.reduce_sum(x))

    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert float(f(x, jf.constant(2))) == 6.0
    assert float(f(x, jf.constant(-1))) == 6.0
    with pytest.raises(jf.errors.InvalidArgumentError, match="GatherV2"):
        f(x, jf.constant(3))


def test_a_check_outside_the_if_still_runs_when_only_a_branch_reads_it():
    # a // b feeds only the then branch: fused into its step, a zero divisor would go unseen
    # when the else branch runs. It stays a step of its own, run every time.
    @jf.function(jit_compile=True)
    def f(a, b, p):
        q = a // b
        return jf.cond(p, lambda: jf.matmul(jf.reshape(jf.cast(q, jf.float32), [1, 3]), jf.ones([3, 3])),
                       lambda: jf.zeros([1, 3]))

    a, b = jf.constant([4, 5, 6]), jf.constant([2, 0, 3])
    for p in (True, False):
        with pytest.raises(jf.errors.InvalidArgumentError, match="division by zero"):
            f(a, b, jf.constant(p))
    np.testing.assert_allclose(f(a, jf.constant([1, 1, 1]), jf.constant(True)).numpy(), [[15.0] * 3])


def rnn_with_a_branch(h, w, xs, every):
    n = jf.shape(xs)[0]
    x_ta = jf.TensorArray(jf.float32, size=n).unstack(xs)
    out = jf.TensorArray(jf.float32, size=n)
    for t in jf.range(n):
        if t % every == 0:
            h = jf.tanh(jf.matmul(h, w) + x_ta.read(t))  # a read checks its index: no select
        else:
            h = h * 0.9 + 0.05
        out = out.write(t, h)
    return out.stack()


def np_rnn_with_a_branch(h, w, xs, every):
    h, w = np.asarray(h, np.float64), np.asarray(w, np.float64)
    outs = []
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t]) if t % every == 0 else h * 0.9 + 0.05
        outs.append(h)
    return np.stack(outs) if outs else np.zeros((0,) + h.shape)


@pytest.mark.parametrize("scoped", [False, True], ids=["jit_compile", "jit_scope"])
def test_a_loop_with_a_guarded_if_runs_whole(scoped):
    if scoped:
        @jf.function
        def f(h, w, xs, every):
            with jf.jit_scope():
                return rnn_with_a_branch(h, w, xs, every)
    else:
        f = jf.function(rnn_with_a_branch, jit_compile=True)
    h = RNG.standard_normal((8, 40)).astype(np.float32)
    for steps in (0, 1, 9):
        xs = RNG.standard_normal((steps, 8, 40)).astype(np.float32)
        f(h, W, xs, jf.constant(3))
        before = _stats()
        out = f(h, W, xs, jf.constant(3)).numpy()
        np.testing.assert_allclose(out, np_rnn_with_a_branch(h, W, xs, 3), rtol=1e-4, atol=1e-5)
        d = _delta(before, "compiled_loop_runs", "compiled_loop_fallbacks", "skipped_branch_steps")
        assert d["compiled_loop_runs"] == (1 if steps else 0) and d["compiled_loop_fallbacks"] == 0, d
        assert d["skipped_branch_steps"] >= steps, d  # every iteration skipped one branch
    rows = jf.explain(f, h, W, xs, jf.constant(3)).by_op()
    assert rows["While"].reason.startswith("a compiled loop")
    assert rows["While/body/If"].cluster == rows["While"].cluster
    assert "guarded" in rows["While/body/If"].reason


def test_gradient_through_a_guarded_cond_matches_finite_differences():
    x0 = RNG.standard_normal((4, 40))
    w0 = W.astype(np.float64)

    def np_loss(x, w, p):
        y = np.tanh(x @ w) if p else np.sin(x) * 2.0
        return float((y * y).sum())

    @jf.function(jit_compile=True)
    def grads(x, w, p):
        with jf.GradientTape() as tape:
            tape.watch([x, w])
            y = jf.cond(p, lambda: jf.tanh(jf.matmul(x, w)), lambda: jf.sin(x) * 2.0)
            loss = jf.reduce_sum(y * y)
        return tape.gradient(loss, [x, w])

    for p in (True, False):
        gx, gw = grads(jf.constant(x0), jf.constant(w0), jf.constant(p))
        nx, nw = numeric_grad(lambda x, w, p=p: np_loss(x, w, p), [x0, w0])
        np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-5, atol=1e-6)


def test_a_side_effect_keeps_the_executor_branch():
    v = jf.Variable(0.0)

    @jf.function(jit_compile=True)
    def f(x, p):
        def then():
            v.assign_add(1.0)
            return jf.matmul(x, W)
        return jf.cond(p, then, lambda: x)

    x = np.ones((2, 40), np.float32)
    f(x, jf.constant(False))
    assert float(v.numpy()) == 0.0
    f(x, jf.constant(True))
    assert float(v.numpy()) == 1.0
    row = jf.explain(f, x, jf.constant(True)).by_op()["If"]
    assert row.status == "eager" and "side effect" in row.reason


@pytest.mark.allows_fallback
def test_a_cluster_that_fails_to_compile_keeps_the_if_as_a_branch(monkeypatch):
    # Its ops then run on eager kernels: the inlined branches would all run, so the If stays an
    # executor branch (its selects become identities of its outputs), and the untaken branch's
    # division by zero is never computed.
    monkeypatch.setenv("JITFLOW_FAIL_COMPILE", "1")

    @jf.function
    def f(a, b, p):
        with jf.jit_scope():
            y = jf.cond(p, lambda: a // b + 17, lambda: a * 3 + 17)
            return y * 2

    a, b = jf.constant([4, 5, 6]), jf.constant([2, 0, 3])
    with pytest.warns(RuntimeWarning, match="JITFLOW_FAIL_COMPILE"):
        np.testing.assert_array_equal(f(a, b, jf.constant(False)).numpy(), (np.array([4, 5, 6]) * 3 + 17) * 2)
    with pytest.raises(jf.errors.InvalidArgumentError):
        f(a, b, jf.constant(True))
    row = jf.explain(f, a, b, jf.constant(True)).by_op()["If"]
    assert row.status == "eager" and "could not be compiled" in row.reason


@pytest.mark.allows_fallback
def test_the_eager_fallback_of_a_cluster_runs_only_the_taken_branch(monkeypatch):
    # Inputs of another size-1 pattern than traced need a specialization; when it cannot be
    # compiled the cluster's ops run on eager kernels, honouring the guards.
    spec = [jf.TensorSpec([None, None], jf.int32)] * 2 + [jf.TensorSpec([], jf.int32), jf.TensorSpec([], jf.bool)]

    @jf.function(input_signature=spec)
    def f(x, y, d, p):
        with jf.jit_scope():
            s = x + y
            return jf.cond(p, lambda: s // d, lambda: s * 4) + 13

    x = np.array([[6, 8, 10], [1, 2, 3]], np.int32)
    f(x, x, jf.constant(2), jf.constant(True))
    assert "guarded" in jf.explain(f, x, x, jf.constant(2), jf.constant(True)).by_op()["If"].reason
    monkeypatch.setenv("JITFLOW_FAIL_COMPILE", "1")
    y = np.array([[2, 2, 2]], np.int32)
    before = _stats()
    with pytest.warns(RuntimeWarning, match="eager kernels"):
        out = f(x, y, jf.constant(0), jf.constant(False)).numpy()
    np.testing.assert_array_equal(out, (x + y) * 4 + 13)
    assert _delta(before, "cluster_fallbacks")["cluster_fallbacks"] == 1
    np.testing.assert_array_equal(f(x, y, jf.constant(2), jf.constant(True)).numpy(), (x + y) // 2 + 13)
    with pytest.raises(jf.errors.InvalidArgumentError):
        f(x, y, jf.constant(0), jf.constant(True))


def test_no_fallback_env_leaks():
    assert os.environ.get("JITFLOW_FAIL_COMPILE") in (None, "", "0")
