"""An If in compiled code whose branches are small, pure and cannot fail at run time is computed
inside the cluster around it: both branches run and a select per output picks the taken one
(cluster/if_to_select.h), so the function is one compiled cluster and a loop holding the If
runs whole. An If whose untaken branch could be observed (a run-time check, an integer
division, a gather) or would cost much (a large product) is inlined with guards instead: the
cluster runs only the taken branch's steps (test_if_guarded.py has more of those). An If with
a side effect (a print) keeps its executor branch, and jf.explain says why."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]
X0 = np.linspace(-2, 2, 37).astype(np.float32)


def _runs():
    return jf.debugging.stats()["cluster_runs"]


def _skipped():
    return jf.debugging.stats()["skipped_branch_steps"]


def assert_guarded(row):
    assert row.status == "compiled" and "guarded" in row.reason, row


def branchy(x, p):
    y = x * 2.0
    z = jf.cond(p, lambda: jf.tanh(y) + 1.0, lambda: y - 3.0)
    return z * 0.5


def np_branchy(x, p):
    y = np.asarray(x, np.float64) * 2.0
    return ((np.tanh(y) + 1.0) if p else (y - 3.0)) * 0.5


@pytest.mark.parametrize("size", [0, 1, 37])
@pytest.mark.parametrize("p", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_a_small_cond_gives_the_taken_branch_in_every_mode(mode, p, size):
    x = X0[:size]
    out = run_mode(mode, branchy, jf.constant(x), jf.constant(p))
    assert out.shape == (size,)
    np.testing.assert_allclose(out.numpy(), np_branchy(x, p), rtol=2e-6, atol=1e-6)


def test_a_small_cond_inside_jit_scope_is_part_of_one_cluster():
    @jf.function
    def f(x, p):
        with jf.jit_scope():
            return branchy(x, p)

    for p in (True, False):
        before = _runs()
        np.testing.assert_allclose(f(X0, jf.constant(p)).numpy(), np_branchy(X0, p), rtol=2e-6, atol=1e-6)
        assert _runs() - before == 1  # one cluster: the If did not split it
    rows = jf.explain(f, X0, jf.constant(True)).by_op()
    assert rows["If"].status == "compiled" and "computed inline" in rows["If"].reason
    cluster = rows["If"].cluster
    for op in ("If/then/Tanh", "If/else/Sub", "Mul", "Mul_1"):
        assert rows[op].status == "compiled" and rows[op].cluster == cluster, op


def step_loop(x, n):
    for i in jf.range(n):
        if i % 3 == 0:
            x = jf.tanh(x * 1.01 + 0.1) * 0.9
        else:
            x = x * 0.95 + 0.01
    return x


def np_step_loop(x, n):
    x = np.asarray(x, np.float64)
    for i in range(n):
        x = np.tanh(x * 1.01 + 0.1) * 0.9 if i % 3 == 0 else x * 0.95 + 0.01
    return x


@pytest.mark.parametrize("scoped", [False, True], ids=["jit_compile", "jit_scope"])
def test_a_loop_with_a_small_if_inside_runs_whole(scoped):
    if scoped:
        @jf.function
        def f(x, n):
            with jf.jit_scope():
                return step_loop(x, n)
    else:
        f = jf.function(step_loop, jit_compile=True)
    for n in (0, 1, 2, 50):
        before = _runs()
        np.testing.assert_allclose(f(X0, jf.constant(n)).numpy(), np_step_loop(X0, n), rtol=2e-5, atol=1e-6)
        # the cond once, then every iteration in one run of the step's cluster
        assert _runs() - before == (2 if n else 1), n
    rows = jf.explain(f, X0, jf.constant(5)).by_op()
    assert rows["While"].reason.startswith("a compiled loop")
    assert rows["While/body/If"].status == "compiled"
    assert rows["While/body/If"].cluster == rows["While"].cluster


def test_a_loop_with_a_small_if_runs_whole_under_an_all_none_signature():
    f = jf.function(step_loop, jit_compile=True,
                    input_signature=[jf.TensorSpec([None], jf.float32), jf.TensorSpec([], jf.int32)])
    for size in (0, 1, 37):
        x = X0[:size]
        before = _runs()
        np.testing.assert_allclose(f(x, jf.constant(7)).numpy(), np_step_loop(x, 7), rtol=2e-5, atol=1e-6)
        assert _runs() - before == 2
    assert f.experimental_get_tracing_count() == 1
    assert jf.explain(f, X0, jf.constant(7)).by_op()["While/body/If"].status == "compiled"


def test_branches_returning_inputs_of_unknown_shapes_keep_the_branch():
    # x and y may differ in size at run time: a select could not pick either whole
    f = jf.function(lambda p, x, y: jf.cond(p, lambda: x * 2.0, lambda: y + 1.0), jit_compile=True,
                    input_signature=[jf.TensorSpec([], jf.bool), jf.TensorSpec([None], jf.float32),
                                     jf.TensorSpec([None], jf.float32)])
    x, y = X0[:5], X0[:3]
    np.testing.assert_allclose(f(jf.constant(True), x, y).numpy(), x * 2.0)
    np.testing.assert_allclose(f(jf.constant(False), x, y).numpy(), y + 1.0)
    row = jf.explain(f, jf.constant(True), x, y).by_op()["If"]
    assert row.status == "eager" and "not provably the same shape" in row.reason


def test_nested_small_conds_are_one_cluster():
    @jf.function(jit_compile=True)
    def f(x, a, b):
        return jf.cond(a, lambda: jf.cond(b, lambda: x + 1.0, lambda: x * 3.0), lambda: -x) * 2.0

    for a in (True, False):
        for b in (True, False):
            before = _runs()
            want = ((X0 + 1.0) if b else (X0 * 3.0)) if a else -X0
            np.testing.assert_allclose(f(X0, jf.constant(a), jf.constant(b)).numpy(), want * 2.0, rtol=1e-6)
            assert _runs() - before == 1
    rows = jf.explain(f, X0, jf.constant(True), jf.constant(True)).by_op()
    assert rows["If"].status == "compiled"


def test_gradient_through_an_inlined_cond_matches_finite_differences():
    def np_loss(x, w, p):
        v = np.tanh(x * w) if p else np.sin(x) * w
        return float(np.sum(v * v))

    @jf.function
    def grads(x, w, p):
        with jf.GradientTape() as tape:
            tape.watch([x, w])
            with jf.jit_scope():
                v = jf.cond(p, lambda: jf.tanh(x * w), lambda: jf.sin(x) * w)
                loss = jf.reduce_sum(v * v)
        return (loss, *tape.gradient(loss, [x, w]))

    x = np.array([0.3, -0.7, 1.1], np.float64)
    w = np.array(0.9, np.float64)
    for p in (True, False):
        loss, gx, gw = grads(x, w, jf.constant(p))
        assert float(loss) == pytest.approx(np_loss(x, w, p), rel=1e-12)
        nx, nw = numeric_grad(lambda a, b, p=p: np_loss(a, b, p), [x, w])
        np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-6, atol=1e-9)


# Each untaken branch below would raise (or print) if it ran: the If must stay a branch.
def test_an_integer_division_by_zero_in_the_untaken_branch_does_not_raise():
    @jf.function(jit_compile=True)
    def f(x, d):
        return jf.cond(d != 0, lambda: x // d, lambda: x + 0)

    x = np.array([7, -7, 9], np.int32)
    before = _skipped()
    np.testing.assert_array_equal(f(x, jf.constant(0)).numpy(), x)
    assert _skipped() > before  # the division's step did not run
    np.testing.assert_array_equal(f(x, jf.constant(2)).numpy(), x // 2)
    assert_guarded(jf.explain(f, x, jf.constant(0)).by_op()["If"])


def test_an_out_of_range_gather_in_the_untaken_branch_does_not_raise():
    @jf.function(jit_compile=True)
    def f(x, i):
        return jf.cond(i < 3, lambda: jf.gather(x, i), lambda: jf.constant(-1.0))

    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert float(f(x, jf.constant(5))) == -1.0
    assert float(f(x, jf.constant(1))) == 2.0
    assert_guarded(jf.explain(f, x, jf.constant(1)).by_op()["If"])


def test_check_numerics_in_the_untaken_branch_does_not_raise():
    @jf.function
    def f(x):
        with jf.jit_scope():
            return jf.cond(jf.reduce_all(x > 0), lambda: jf.debugging.check_numerics(jf.math.log(x), "log"),
                           lambda: x * 2.0)

    x = np.array([-1.0, 2.0], np.float32)
    np.testing.assert_allclose(f(x).numpy(), x * 2.0)
    with pytest.raises(jf.errors.InvalidArgumentError):
        f(np.array([np.inf, 2.0], np.float32))
    assert_guarded(jf.explain(f, x).by_op()["If"])


def test_a_print_runs_only_in_the_taken_branch(capfd):
    @jf.function
    def f(x, p):
        def loud():
            jf.print("then ran")
            return x + 1.0
        with jf.jit_scope():
            return jf.cond(p, loud, lambda: x - 1.0)

    np.testing.assert_allclose(f(X0, jf.constant(False)).numpy(), X0 - 1.0)
    assert "then ran" not in capfd.readouterr().err
    np.testing.assert_allclose(f(X0, jf.constant(True)).numpy(), X0 + 1.0)
    assert "then ran" in capfd.readouterr().err
    assert "side effect" in jf.explain(f, X0, jf.constant(True)).by_op()["If"].reason


def test_a_cond_outside_the_scope_says_so():
    @jf.function
    def f(x, p):
        z = jf.cond(p, lambda: x + 1.0, lambda: x - 1.0)
        with jf.jit_scope():
            return z * 2.0 + 1.0

    np.testing.assert_allclose(f(X0, jf.constant(True)).numpy(), (X0 + 1.0) * 2.0 + 1.0, rtol=1e-6)
    row = jf.explain(f, X0, jf.constant(True)).by_op()["If"]
    assert row.status == "eager" and "not in compiled code" in row.reason


# A select whose condition is one scalar (an inlined If's) runs its kernel in two versions,
# each computing only its side (cpu_loops.cc: versioning_condition).
def scalar_where(x, p):
    return jf.where(p, jf.tanh(x) * 2.0, jf.exp(x) - 1.0)


def checked_where(x, d, p):
    return jf.where(p, x // d, x)


@pytest.mark.parametrize("size", [0, 1, 37])
@pytest.mark.parametrize("p", [True, False])
def test_a_select_on_a_scalar_condition_gives_its_side(p, size):
    x = X0[:size]
    out = run_mode("jit_compile", scalar_where, x, jf.constant(p))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out.numpy(), np.tanh(x64) * 2.0 if p else np.expm1(x64), rtol=2e-6, atol=1e-6)


def test_a_side_that_can_raise_is_still_computed():
    # as eagerly (and in TF): x // 0 raises even where the select discards it
    f = jf.function(checked_where, jit_compile=True)
    x = np.array([7, -7, 9], np.int32)
    np.testing.assert_array_equal(f(x, jf.constant(2), jf.constant(False)).numpy(), x)
    with pytest.raises(jf.errors.InvalidArgumentError, match="division by zero"):
        f(x, jf.constant(0), jf.constant(False))


def test_the_kernels_are_versioned_only_where_no_side_can_raise(tmp_path):
    names = {"step_loop": "(X0, jf.constant(4))", "scalar_where": "(X0, jf.constant(True))",
             "checked_where": "(np.arange(3, dtype=np.int32), jf.constant(2), jf.constant(True))"}
    calls = "\n".join(
        f"os.environ['JITFLOW_DUMP'] = os.path.join({str(tmp_path)!r}, {n!r}); "
        f"os.mkdir(os.environ['JITFLOW_DUMP']); jf.function(t.{n}, jit_compile=True){a}"
        for n, a in names.items())
    script = textwrap.dedent(f"""
        import os, sys
        import numpy as np
        here = {os.path.dirname(os.path.abspath(__file__))!r}
        sys.path[:0] = [here, os.path.dirname(here)]
        import jitflow as jf
        import test_if_inline as t
        X0 = t.X0
    """) + calls + "\n"
    env = dict(os.environ, JITFLOW_CACHE_DIR="off")
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    versions = {n: sum(ll.read_text().count("version.true:") for ll in (tmp_path / n).glob("*.before_opt.ll"))
                for n in names}
    assert versions["step_loop"] >= 1 and versions["scalar_where"] >= 1, versions
    assert versions["checked_where"] == 0, versions


def test_an_inlined_cond_with_nothing_left_to_compile_says_so():
    @jf.function(jit_compile=True)
    def f(x, p):
        return jf.cond(p, lambda: x, lambda: x) * 2.0

    np.testing.assert_allclose(f(X0, jf.constant(False)).numpy(), X0 * 2.0)
    row = jf.explain(f, X0, jf.constant(False)).by_op()["If"]
    assert row.reason.startswith("computed inline") and "none of its ops" in row.reason


# Small matrix products in the branches (cluster/if_to_select.cc: kMaxInlineProduct).
W8 = np.random.default_rng(5).standard_normal((8, 8)).astype(np.float32) * 0.3


def product_branches(x, w, p):
    z = jf.cond(p, lambda: jf.matmul(x, w) * 2.0, lambda: jf.matmul(x * 0.5, w, transpose_b=True) + 1.0)
    return jf.tanh(z)


def np_product_branches(x, w, p):
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    return np.tanh(x @ w * 2.0 if p else (x * 0.5) @ w.T + 1.0)


@pytest.mark.parametrize("p", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_a_cond_of_small_products_gives_the_taken_branch_in_every_mode(mode, p):
    x = np.linspace(-1, 1, 32).astype(np.float32).reshape(4, 8)
    out = run_mode(mode, product_branches, jf.constant(x), jf.constant(W8), jf.constant(p))
    np.testing.assert_allclose(out.numpy(), np_product_branches(x, W8, p), rtol=2e-5, atol=2e-6)


def test_a_cond_of_small_products_is_computed_inside_one_cluster():
    f = jf.function(product_branches, jit_compile=True)
    x = np.linspace(-1, 1, 32).astype(np.float32).reshape(4, 8)
    for p in (True, False):
        before = _runs()
        np.testing.assert_allclose(f(x, W8, jf.constant(p)).numpy(), np_product_branches(x, W8, p),
                                   rtol=2e-5, atol=2e-6)
        assert _runs() - before == 1  # one cluster: the If did not split it
    rows = jf.explain(f, x, W8, jf.constant(True)).by_op()
    assert rows["If"].status == "compiled" and "computed inline" in rows["If"].reason
    for op in ("If/then/MatMul", "If/else/MatMul", "Tanh"):
        assert rows[op].status == "compiled" and rows[op].cluster == rows["If"].cluster, op


def rnn_with_a_branch(h, w, n):
    for i in jf.range(n):
        if i % 2 == 0:
            h = jf.tanh(jf.matmul(h, w) + 0.1)
        else:
            h = h * 0.9
    return h


def np_rnn_with_a_branch(h, w, n):
    h, w = np.asarray(h, np.float64), np.asarray(w, np.float64)
    for i in range(n):
        h = np.tanh(h @ w + 0.1) if i % 2 == 0 else h * 0.9
    return h


def test_a_loop_with_a_product_in_an_if_runs_whole():
    f = jf.function(rnn_with_a_branch, jit_compile=True)
    h = np.linspace(-1, 1, 24).astype(np.float32).reshape(3, 8)
    for n in (0, 1, 2, 9):
        s0 = jf.debugging.stats()
        np.testing.assert_allclose(f(h, W8, jf.constant(n)).numpy(), np_rnn_with_a_branch(h, W8, n),
                                   rtol=2e-5, atol=2e-6)
        s1 = jf.debugging.stats()
        assert s1["cluster_runs"] - s0["cluster_runs"] == (2 if n else 1), n
        assert s1["compiled_loop_runs"] - s0["compiled_loop_runs"] == (1 if n else 0), n
    rows = jf.explain(f, h, W8, jf.constant(3)).by_op()
    assert rows["While"].reason.startswith("a compiled loop")
    assert rows["While/body/If"].status == "compiled"


def test_a_large_product_is_guarded_not_selected():
    # 64x64 by 64x64 is 262,144 multiply-adds: computed for nothing, it would cost more than
    # the whole If, so the product's step runs only when its branch is taken.
    x = np.ones((64, 64), np.float32)
    w = np.full((64, 64), 0.01, np.float32)
    f = jf.function(lambda x, w, p: jf.cond(p, lambda: jf.matmul(x, w), lambda: x * 2.0), jit_compile=True)
    np.testing.assert_allclose(f(x, w, jf.constant(True)).numpy(), np.full((64, 64), 0.64), rtol=1e-5)
    before = _skipped()
    np.testing.assert_allclose(f(x, w, jf.constant(False)).numpy(), x * 2.0)
    assert _skipped() > before
    assert_guarded(jf.explain(f, x, w, jf.constant(True)).by_op()["If"])
