"""Loop and branch bodies compile: inside a jit_scope and under jit_compile=True, the ops of a
While's cond and body and of an If's branches run in compiled clusters. A loop whose step (body,
then cond) is one cluster runs whole in it (test_compiled_loops.py); others run one step per
iteration on the C++ executor."""
import numpy as np
import pytest
from conftest import collatz_steps, numeric_grad, run_mode

import jitflow as jf


def _runs():
    return jf.debugging.stats()["cluster_runs"]


def _np_recurrence(x, n):
    x = np.asarray(x, np.float64)
    for _ in range(n):
        x = np.tanh(x * 1.01 + 0.1) * 0.9
    return x


def recurrence(x, n):
    for i in jf.range(n):
        x = jf.tanh(x * 1.01 + 0.1) * 0.9
    return x


def _py_collatz(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def _rows(f, *args):
    return jf.explain(f, *args).by_op()


def _body_rows(rows, prefix):
    return {k: r for k, r in rows.items() if k.startswith(prefix)}


X0 = np.linspace(-2, 2, 37).astype(np.float32)


def test_a_loop_body_inside_jit_scope_runs_compiled():
    @jf.function
    def f(x, n):
        with jf.jit_scope():
            return recurrence(x, n)

    for n in (0, 1, 7):
        before = _runs()
        out = f(X0, jf.constant(n))
        np.testing.assert_allclose(out.numpy(), _np_recurrence(X0, n), rtol=2e-6, atol=1e-6)
        # the cond runs once, then the step (the body and the cond on its results), one
        # cluster, runs every iteration in one run
        assert _runs() - before == (2 if n else 1)
    body = _body_rows(_rows(f, X0, jf.constant(3)), "While/body/")
    assert body["While/body/Tanh"].status == "compiled"
    assert body["While/body/Tanh"].cluster.startswith("While/body/cluster_")
    assert _rows(f, X0, jf.constant(3))["While"].reason.startswith("a compiled loop")


def test_a_loop_outside_any_jit_scope_stays_eager_and_says_why():
    f = jf.function(recurrence)
    before = _runs()
    np.testing.assert_allclose(f(X0, jf.constant(4)).numpy(), _np_recurrence(X0, 4), rtol=2e-6, atol=1e-6)
    assert _runs() == before
    row = _rows(f, X0, jf.constant(4))["While/body/Tanh"]
    assert row.status == "eager" and "not in a jit_scope" in row.reason


def test_jit_compile_compiles_a_loop_body_as_one_unit():
    f = jf.function(recurrence, jit_compile=True)
    for n in (0, 1, 5):
        before = _runs()
        out = f(X0, jf.constant(n))
        np.testing.assert_allclose(out.numpy(), _np_recurrence(X0, n), rtol=2e-6, atol=1e-6)
        assert _runs() - before == (2 if n else 1)  # the cond, then one run for all iterations
    rows = _rows(f, X0, jf.constant(2))
    body = _body_rows(rows, "While/body/")
    assert {r.status for r in body.values()} <= {"compiled", "removed"}, body
    # the loop counter, the range index and the math: one kernel per iteration
    assert len({r.cluster for r in body.values() if r.status == "compiled"}) == 1
    assert all(r.status in ("compiled", "removed") for r in _body_rows(rows, "While/cond/").values())


def test_jit_compile_with_a_branch_inside_a_data_dependent_loop():
    f = jf.function(collatz_steps, jit_compile=True)
    for n in (1, 6, 27):
        before = _runs()
        assert int(f(jf.constant(n))) == _py_collatz(n)
        assert _runs() > before
    rows = _rows(f, jf.constant(6))
    branch_ops = [r for k, r in rows.items() if "/If/then/" in k or "/If/else/" in k]
    assert branch_ops and all(r.status in ("compiled", "removed") for r in branch_ops)
    assert any(r.status == "compiled" for r in branch_ops)
    assert f.experimental_get_tracing_count() == 1


def test_jit_compile_loop_under_an_all_none_input_signature():
    f = jf.function(recurrence, jit_compile=True,
                    input_signature=[jf.TensorSpec([None], jf.float32), jf.TensorSpec([], jf.int32)])
    for size in (0, 1, 37):
        x = X0[:size]
        before = _runs()
        np.testing.assert_allclose(f(x, jf.constant(3)).numpy(), _np_recurrence(x, 3), rtol=2e-6, atol=1e-6)
        assert _runs() - before == 2  # the cond, then the whole loop
    assert f.experimental_get_tracing_count() == 1


def test_cond_branches_compile_inside_jit_scope():
    @jf.function
    def f(x, p):
        with jf.jit_scope():
            return jf.cond(p, lambda: jf.exp(x) * 2.0 + 1.0, lambda: jf.sin(x) - x * x)

    for p in (True, False):
        before = _runs()
        out = f(X0, jf.constant(p))
        x = X0.astype(np.float64)
        np.testing.assert_allclose(out.numpy(), np.exp(x) * 2 + 1 if p else np.sin(x) - x * x, rtol=2e-6, atol=1e-6)
        assert _runs() > before
    rows = _rows(f, X0, jf.constant(True))
    assert rows["cond/then/Exp"].status == "compiled" if "cond/then/Exp" in rows else \
        any(k.endswith("/then/Exp") and r.status == "compiled" for k, r in rows.items())
    assert any(k.endswith("/else/Sin") and r.status == "compiled" for k, r in rows.items())


def test_gradient_through_a_compiled_loop_matches_finite_differences():
    def np_loss(x, w):
        v = np.asarray(x, np.float64)
        for _ in range(4):
            v = np.tanh(v * w + 0.1)
        return float(np.sum(v * v))

    @jf.function
    def grads(x, w, n):
        with jf.GradientTape() as tape:
            tape.watch([x, w])
            with jf.jit_scope():
                v = x
                for i in jf.range(n):
                    v = jf.tanh(v * w + 0.1)
                loss = jf.reduce_sum(v * v)
        return (loss, *tape.gradient(loss, [x, w]))

    x = np.array([0.3, -0.7, 1.1], np.float64)
    w = np.array(0.9, np.float64)
    before = _runs()
    loss, gx, gw = grads(x, w, jf.constant(4))
    assert _runs() - before >= 5
    assert float(loss) == pytest.approx(np_loss(x, w), rel=1e-12)
    nx, nw = numeric_grad(np_loss, [x, w])
    np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-6, atol=1e-9)


def test_jit_compile_refuses_a_stateful_op_in_a_loop_body_naming_it():
    @jf.function(jit_compile=True)
    def f(x, n):
        for i in jf.range(n):
            x = x + 1.0
            jf.print(x)
        return x

    with pytest.raises(jf.errors.InvalidArgumentError) as info:
        f(jf.ones([2]), jf.constant(2))
    msg = str(info.value)
    assert "must compile the whole function" in msg and "(PrintV2)" in msg and "(in While/body)" in msg, msg
    assert __file__ in msg


def test_jit_compile_drops_an_assert_in_a_loop_body_with_a_warning():
    @jf.function(jit_compile=True)
    def f(x, n):
        for i in jf.range(n):
            jf.debugging.assert_less(x, 100.0)
            x = x * 2.0
        return x

    with pytest.warns(RuntimeWarning, match="does not check its assertion 'While/body/"):
        out = f(jf.ones([3]), jf.constant(10))  # the assert would fail at x = 128
    np.testing.assert_allclose(out.numpy(), [1024.0] * 3)


def test_jit_compile_loop_updating_a_variable():
    v = jf.Variable(jf.zeros([3]))

    @jf.function(jit_compile=True)
    def f(x, n):
        for i in jf.range(n):
            x = x * 0.5 + 1.0
            v.assign_add(x)
        return x

    before = _runs()
    out = f(jf.ones([3]), jf.constant(3))
    assert _runs() > before
    np.testing.assert_allclose(out.numpy(), [1.875] * 3)
    np.testing.assert_allclose(v.numpy(), [1.5 + 1.75 + 1.875] * 3)


def test_nested_loops_compile_under_jit_compile():
    @jf.function(jit_compile=True)
    def f(x, n, m):
        total = jf.zeros_like(x)
        for i in jf.range(n):
            y = x
            for j in jf.range(m):
                y = jf.sin(y) + jf.cast(j, jf.float32)
            total += y
        return total

    def ref(x, n, m):
        total = np.zeros_like(x, np.float64)
        for _ in range(n):
            y = x.astype(np.float64)
            for j in range(m):
                y = np.sin(y) + j
            total += y
        return total

    before, loops = _runs(), jf.debugging.stats()["compiled_loop_runs"]
    np.testing.assert_allclose(f(X0, jf.constant(3), jf.constant(4)).numpy(), ref(X0, 3, 4), rtol=2e-6, atol=2e-6)
    # the outer step holds the inner loop, so it runs per iteration; the inner loop runs whole
    assert jf.debugging.stats()["compiled_loop_runs"] - loops == 3
    assert _runs() - before >= 3
    rows = _rows(f, X0, jf.constant(3), jf.constant(4))
    inner = [r for k, r in rows.items() if k.startswith("While/body/While_1/body/") or
             (k.startswith("While/body/While") and "/body/" in k[len("While/body/"):])]
    assert inner and any(r.status == "compiled" for r in inner)


@pytest.mark.parametrize("scoped", [False, True])
def test_step_graph_keeps_while_semantics(scoped):
    """The executor runs the cond once, then body-then-cond steps: captures of the cond only,
    maximum_iterations, zero trips and side effects in the cond keep TF's meaning."""
    @jf.function
    def f(x, limit, scale, n_max):
        def run():
            return jf.while_loop(lambda i, v: jf.reduce_max(v) < limit,
                                 lambda i, v: (i + 1, v * scale), [0, x], maximum_iterations=n_max)
        if scoped:
            with jf.jit_scope():
                return run()
        return run()

    def ref(x, limit, scale, n_max):
        i, v = 0, np.asarray(x, np.float64)
        while i < n_max and v.max() < limit:
            i, v = i + 1, v * scale
        return i, v

    x = np.array([1.0, 2.0], np.float32)
    for limit, scale, n_max in ((100.0, 3.0, 50), (100.0, 3.0, 2), (1.5, 3.0, 50), (100.0, 3.0, 0)):
        i, v = f(x, jf.constant(limit), jf.constant(scale), n_max)
        ri, rv = ref(x, limit, scale, n_max)
        assert int(i) == ri
        np.testing.assert_allclose(v.numpy(), rv, rtol=1e-6)


def test_a_print_in_the_cond_runs_once_per_test_as_before(capfd):
    @jf.function
    def f(n):
        def cond(i):
            jf.print("test", i)
            return i < n
        return jf.while_loop(cond, lambda i: i + 1, [0])

    assert int(f(jf.constant(3))[0]) == 3
    out = capfd.readouterr().err.split()
    assert out == ["test", "0", "test", "1", "test", "2", "test", "3"], out


@pytest.mark.parametrize("mode", ["function", "jit_scope", "jit_compile"])
def test_maximum_iterations_may_be_a_traced_tensor(mode):
    """TF takes a tensor bound known only at run time (a counter loop var, i < bound)."""
    def loop(x, n_max):
        return jf.while_loop(lambda v: jf.reduce_max(v) < 100.0, lambda v: v * 3.0, [x],
                             maximum_iterations=n_max)[0]

    def body(x, n_max):
        if mode == "jit_scope":
            with jf.jit_scope():
                return loop(x, n_max)
        return loop(x, n_max)
    f = jf.function(body, jit_compile=mode == "jit_compile",
                    input_signature=[jf.TensorSpec([None]), jf.TensorSpec([], jf.int32)])
    x = np.array([1.0, 2.0], np.float32)
    before = _runs()
    for n_max, trips in ((50, 4), (2, 2), (0, 0), (-3, 0)):  # 2 * 3**4 = 162 >= 100 after 4 trips
        np.testing.assert_allclose(f(x, jf.constant(n_max)).numpy(), x * 3.0 ** trips)
    assert f.experimental_get_tracing_count() == 1
    if mode != "function":
        assert _runs() > before
    with pytest.raises(ValueError, match="must be a scalar"):
        jf.function(lambda x: loop(x, jf.constant([1, 2])))(x)
    with pytest.raises(TypeError, match="int32 or int64"):
        jf.function(loop)(x, jf.constant(2.0))
    np.testing.assert_allclose(loop(jf.constant(x), jf.constant(2)).numpy(), x * 9.0)  # eager tensor bound


# A read after a branch or loop that writes the variable must see the write in every mode:
# the If/While node takes its place in the variable's program order, so clustering cannot
# hoist the read (and what follows it) into a unit that runs before the branch.
def _read_after_cond(v, x):
    if jf.reduce_mean(x) > 0.0:
        v.read_value()
    else:
        v.assign_add(0.1 * jf.tanh(jf.reduce_sum(x)))
    return jf.tanh(v.read_value()) * x


def _read_after_while(v, x):
    i = jf.constant(0)
    while i < 3:
        v.assign(v * 0.5 + jf.reduce_sum(x))
        i += 1
    return v.read_value() * x


def _write_after_read_in_cond(v, x):
    before = v.read_value() * x
    if jf.reduce_sum(x) > 100.0:
        v.assign(v + 1.0)
    else:
        v.assign(v * 3.0)
    return before + v.read_value()


@pytest.mark.parametrize("mode", ["function", "jit_scope", "jit_compile"])
@pytest.mark.parametrize("prog", [_read_after_cond, _read_after_while, _write_after_read_in_cond],
                         ids=lambda p: p.__name__)
def test_variable_reads_keep_program_order_around_branches_and_loops(mode, prog):
    x = jf.constant(np.full((3, 2), -0.5, np.float32))
    v = jf.Variable(np.float32(0.5))
    want = prog(v, x).numpy()
    want_v = v.numpy()
    v.assign(0.5)
    got = run_mode(mode, lambda a: prog(v, a), x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), want_v, rtol=1e-6)
