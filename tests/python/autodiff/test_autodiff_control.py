"""Controlling what autodiff differentiates: jf.stop_gradient, jf.custom_gradient, GradientTape.jacobian and
batch_jacobian (vectorized), UnconnectedGradients, stop_recording and
watch_accessed_variables, eagerly, traced and compiled, against float64 numpy."""
import warnings

import numpy as np
import pytest
from conftest import numeric_grad

import jitflow as jf

MODES = ["eager", "function", "jit_scope", "jit_compile"]


def run(mode, fn, *args):
    """fn(*args) in a mode; compiled modes assert that compiled code ran."""
    if mode == "eager":
        return fn(*args)
    if mode == "function":
        return jf.function(fn)(*args)
    if mode == "jit_scope":
        def scoped(*a):
            with jf.jit_scope():
                return fn(*a)
        f = jf.function(scoped)
    else:
        f = jf.function(fn, jit_compile=True)
    before = jf.debugging.stats()["cluster_runs"]
    out = f(*args)
    assert jf.debugging.stats()["cluster_runs"] > before, f"{mode}: no compiled code ran"
    return out


def f32(a):
    return jf.constant(np.asarray(a, np.float32))


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got.numpy(), np.float64), want, rtol=tol, atol=tol)


# ---- stop_gradient ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_stop_gradient_blocks_tape_and_gradients(mode, rng):
    xv = rng.normal(size=(2, 3))

    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.reduce_sum(jf.stop_gradient(x * x) * x + jf.sin(x))
        g = tape.gradient(y, x)
        if mode == "eager":
            return y, g, g
        return y, g, jf.gradients(jf.reduce_sum(jf.stop_gradient(x * x) * x + jf.sin(x)), x)[0]

    y, g_tape, g_sym = run(mode, step, f32(xv))
    want = xv * xv + np.cos(xv)  # d/dx (c*x + sin x) with c = x*x held constant
    close(y, np.sum(xv ** 3 + np.sin(xv)), 1e-4)
    close(g_tape, want)
    close(g_sym, want)


def test_stop_gradient_values_and_variables():
    v = jf.Variable([1.0, 2.0])
    with jf.GradientTape() as tape:
        y = jf.reduce_sum(jf.stop_gradient(v) * v)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(jf.stop_gradient([1, 2]).numpy(), np.array([1, 2], np.int32))
    x = jf.constant([3.0])
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = jf.stop_gradient(x)
    assert tape.gradient(y, x) is None
    assert jf.stop_gradient(x).numpy().tolist() == [3.0]


# ---- custom_gradient ----------------------------------------------------------------------------
@jf.custom_gradient
def log1pexp(x):
    e = jf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))
    return jf.math.log(1 + e), grad


@jf.custom_gradient
def square_times_three_grad(x):
    """x**2 whose gradient is deliberately 3*x (not 2*x): shows the custom one is used."""
    def grad(dy):
        return dy * 3.0 * x
    return x * x, grad


@pytest.mark.parametrize("mode", MODES)
def test_custom_gradient_log1pexp_is_finite_at_100(mode):
    xv = np.array([-3.0, 0.5, 100.0])

    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = log1pexp(x) * 2.0
        g = tape.gradient(y, x)
        return g, (g if mode == "eager" else jf.gradients(log1pexp(x) * 2.0, x)[0])

    g_tape, g_sym = run(mode, step, f32(xv))
    want = 2.0 / (1.0 + np.exp(-xv))
    assert np.all(np.isfinite(g_tape.numpy()))
    close(g_tape, want)
    close(g_sym, want)


@pytest.mark.parametrize("mode", MODES)
def test_custom_gradient_is_the_one_used(mode, rng):
    xv = rng.normal(size=(3,))

    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.reduce_sum(square_times_three_grad(jf.sin(x)))
        g = tape.gradient(y, x)
        return y, g, (g if mode == "eager" else
                      jf.gradients(jf.reduce_sum(square_times_three_grad(jf.sin(x))), x)[0])

    y, g_tape, g_sym = run(mode, step, f32(xv))
    close(y, np.sum(np.sin(xv) ** 2))
    close(g_tape, 3.0 * np.sin(xv) * np.cos(xv))
    close(g_sym, 3.0 * np.sin(xv) * np.cos(xv))


@pytest.mark.parametrize("mode", MODES)
def test_custom_gradient_two_inputs_two_outputs_vs_finite_differences(mode, rng):
    @jf.custom_gradient
    def f(a, b):
        def grad(d1, d2):
            return d1 * b + d2 * jf.cos(a), d1 * a
        return (a * b, jf.sin(a)), grad

    av, bv = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))

    def step(a, b):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            p, s = f(a, b)
            y = jf.reduce_sum(p * p + 3.0 * s)
        return tape.gradient(y, [a, b])

    ga, gb = run(mode, step, f32(av), f32(bv))
    na, nb = numeric_grad(lambda a, b: np.sum((a * b) ** 2 + 3 * np.sin(a)), [av, bv])
    close(ga, na, 1e-4)
    close(gb, nb, 1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_custom_gradient_with_variables(mode, rng):
    wv = rng.normal(size=(3,))
    w = jf.Variable(wv.astype(np.float32))

    @jf.custom_gradient
    def scale(x):
        def grad(dy, variables=None):
            assert [v.name for v in variables] == [w.name]
            return dy * w, [dy * x * 10.0]  # the variable's gradient scaled: it must be this one
        return x * w, grad

    xv = rng.normal(size=(3,))

    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.reduce_sum(scale(x))
        gx, gw = tape.gradient(y, [x, w])
        if mode == "eager":
            return gx, gw, gx, gw
        sx, sw = jf.gradients(jf.reduce_sum(scale(x)), [x, w])
        return gx, gw, sx, sw

    gx, gw, sx, sw = run(mode, step, f32(xv))
    for g in (gx, sx):
        close(g, wv)
    for g in (gw, sw):
        close(g, 10.0 * xv)


def test_custom_gradient_errors():
    x = jf.constant([1.0, 2.0])
    v = jf.Variable([3.0, 4.0])

    @jf.custom_gradient
    def too_few(a, b):
        return a * b, lambda dy: dy

    with jf.GradientTape() as tape:
        tape.watch(x)
        y = too_few(x, x)
    with pytest.raises(ValueError, match="expected to return 2 gradients, but returned 1"):
        tape.gradient(y, x)

    @jf.custom_gradient
    def no_variables_kwarg(a):
        return a * v, lambda dy: dy

    with jf.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match="must accept keyword argument 'variables'"):
            no_variables_kwarg(x)

    @jf.custom_gradient
    def wrong_variable_count(a):
        def grad(dy, variables=None):
            return dy * v, [dy * a, dy]
        return a * v, grad

    with jf.GradientTape() as tape:
        tape.watch(x)
        y = wrong_variable_count(x)
    with pytest.raises(ValueError, match="Must return gradient for each variable"):
        tape.gradient(y, [x, v])

    @jf.function
    def traced_kwargs(a):
        return square_times_three_grad(x=a)
    with pytest.raises(ValueError, match="keywords arguments only when eager"):
        traced_kwargs(x)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_nested_custom_gradients_second_order(mode, rng):
    """TF's nested pattern: the first-order gradient is itself a custom-gradient function, so
    the second derivative comes from the inner grad_fn (deliberately 7x here, not 6x)."""
    @jf.custom_gradient
    def cube(x):
        def first(dy):
            @jf.custom_gradient
            def slope(z):
                def second(ddy):
                    return ddy * 7.0 * z
                return 3.0 * z * z, second
            return dy * slope(x)
        return x * x * x, first

    @jf.custom_gradient
    def outer(x):  # a custom-gradient function calling another in its forward
        y = cube(x)

        def grad(dy):
            return dy * 2.0 * x
        return y + 1.0, grad

    xv = rng.normal(size=(3,))

    def step(x):
        with jf.GradientTape() as t2:
            t2.watch(x)
            with jf.GradientTape() as t1:
                t1.watch(x)
                y = jf.reduce_sum(cube(x))
            g1 = t1.gradient(y, x)
        g2 = t2.gradient(g1, x)
        with jf.GradientTape() as t3:
            t3.watch(x)
            o = jf.reduce_sum(outer(x))
        return g1, g2, o, t3.gradient(o, x)

    g1, g2, o, go = run(mode, step, f32(xv))
    close(g1, 3 * xv ** 2)
    close(g2, 7 * xv)
    close(o, np.sum(xv ** 3 + 1), 1e-4)
    close(go, 2 * xv)


def test_custom_gradient_compiled_training_step(rng):
    w = jf.Variable(rng.normal(size=(4, 2)).astype(np.float32))
    xv = rng.normal(size=(5, 4)).astype(np.float32)

    @jf.function(jit_compile=True)
    def step(x):
        with jf.GradientTape() as tape:
            y = jf.reduce_mean(log1pexp(jf.matmul(x, w)))
        return y, tape.gradient(y, w)

    before = jf.debugging.stats()["cluster_runs"]
    y, g = step(jf.constant(xv))
    assert jf.debugging.stats()["cluster_runs"] > before
    z = xv.astype(np.float64) @ w.numpy().astype(np.float64)
    close(y, np.mean(np.log1p(np.exp(z))))
    close(g, xv.T.astype(np.float64) @ (1 / (1 + np.exp(-z)) / z.size))


# ---- jacobian -----------------------------------------------------------------------------------
def _loop_reference(tape, target, source):
    """Row by row: one tape.gradient per target element, with a one-hot output gradient."""
    n = int(np.prod(target.shape))
    rows = []
    for i in range(n):
        onehot = np.zeros(n, target.dtype.as_numpy_dtype)
        onehot[i] = 1
        rows.append(tape.gradient(target, source, output_gradients=jf.constant(onehot.reshape(target.shape)))
                    .numpy())
    return np.stack(rows).reshape(tuple(target.shape) + tuple(source.shape))


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


CASES = {
    # name: (function of x [3, 4], float64 analytic jacobian [*y.shape, 3, 4])
    "elementwise": (lambda x: jf.sin(x) * x,
                    lambda x: np.einsum("ij,ik,jl->ijkl", np.cos(x) * x + np.sin(x), np.eye(3), np.eye(4))),
    "matmul": (lambda x: jf.matmul(x, jf.transpose(x)),
               lambda x: np.einsum("ik,jl->ijkl", np.eye(3), x) + np.einsum("jk,il->ijkl", np.eye(3), x)),
    "reductions": (lambda x: jf.reduce_sum(x * x, axis=1) + jf.reduce_mean(x) + jf.reduce_max(x, axis=1),
                   lambda x: (np.einsum("ik,il->ikl", np.eye(3), 2 * x) + 1 / 12
                              + np.einsum("ik,il->ikl", np.eye(3), (x == x.max(1, keepdims=True)) * 1.0))),
    "softmax": (lambda x: jf.nn.softmax(x),
                lambda x: np.einsum("ik,ijl->ijkl", np.eye(3),
                                    np.einsum("ij,jl->ijl", _softmax(x), np.eye(4))
                                    - np.einsum("ij,il->ijl", _softmax(x), _softmax(x)))),
}
CASES["broadcasting"] = (
    lambda x: x[:, :, None] * jf.constant(np.array([1.0, -2.0], np.float32)) + jf.reduce_sum(x, 0)[:, None],
    lambda x: (np.einsum("ik,jl,m->ijmkl", np.eye(3), np.eye(4), np.array([1.0, -2.0]))
               + np.einsum("jl,ik,m->ijmkl", np.eye(4), np.ones((3, 3)), np.ones(2))))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mode", MODES)
def test_jacobian_against_row_loop_and_numpy(case, mode, rng):
    fn, analytic = CASES[case]
    xv = rng.normal(size=(3, 4))

    def step(x):
        with jf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = fn(x)
        # y too: a linear case's jacobian is a constant, which would leave nothing to compile
        return y, tape.jacobian(y, x), tape.jacobian(y, x, experimental_use_pfor=False)

    before = jf.debugging.stats()["jacobian_loop_fallbacks"]
    _, j, j_loop = run(mode, step, f32(xv))
    assert jf.debugging.stats()["jacobian_loop_fallbacks"] == before  # vectorized throughout
    close(j, analytic(xv), 1e-4)
    np.testing.assert_allclose(j.numpy(), j_loop.numpy(), rtol=1e-6, atol=1e-6)
    if mode == "eager":
        x = f32(xv)
        with jf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = fn(x)
        np.testing.assert_allclose(j.numpy(), _loop_reference(tape, y, x), rtol=1e-6, atol=1e-6)


def _mlp(x, w1, b1, w2):
    return jf.matmul(jf.tanh(jf.matmul(x, w1) + b1), w2)


def _mlp_np(x, w1, b1, w2):
    return np.tanh(x @ w1 + b1) @ w2


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_small_mlp_vs_finite_differences(mode, rng):
    x, w1, b1, w2 = (rng.normal(size=s) for s in [(2, 3), (3, 5), (5,), (5, 2)])

    def step(*args):
        with jf.GradientTape() as tape:
            tape.watch(list(args))
            y = _mlp(*args)
        return tape.jacobian(y, {"x": args[0], "w1": args[1], "b1": args[2], "w2": args[3]})

    jac = run(mode, step, *(f32(a) for a in (x, w1, b1, w2)))
    args = [x, w1, b1, w2]
    for name, k in [("x", 0), ("w1", 1), ("b1", 2), ("w2", 3)]:
        assert tuple(jac[name].shape) == (2, 2) + args[k].shape
        for idx in np.ndindex(2, 2):
            num = numeric_grad(lambda *a, idx=idx: _mlp_np(*a)[idx], args)[k]
            close(jac[name][idx], num, 2e-4)


@pytest.mark.parametrize("mode", MODES)
def test_batch_jacobian_per_example(mode, rng):
    xv, wv = rng.normal(size=(4, 3)), rng.normal(size=(3, 2))

    def step(x, w):
        with jf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = jf.tanh(jf.matmul(x, w)) * x[:, :1]  # [4, 2]
        return tape.batch_jacobian(y, x), tape.batch_jacobian(y, x, experimental_use_pfor=False)

    bj, bj_loop = run(mode, step, f32(xv), f32(wv))
    t = np.tanh(xv @ wv)
    want = (1 - t ** 2)[:, :, None] * wv.T[None] * xv[:, :1, None]
    want[:, :, 0] += t
    assert tuple(bj.shape) == (4, 2, 3)
    close(bj, want)
    np.testing.assert_allclose(bj.numpy(), bj_loop.numpy(), rtol=1e-6, atol=1e-6)


def test_batch_jacobian_higher_rank_shapes(rng):
    xv = rng.normal(size=(2, 3))
    x = f32(xv)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = jf.sin(x)[:, :, None] * jf.ones([1, 1, 4])
    bj = tape.batch_jacobian(y, x)
    assert tuple(bj.shape) == (2, 3, 4, 3)
    want = np.einsum("bi,ij,k->bikj", np.cos(xv), np.eye(3), np.ones(4))
    close(bj, want)


def test_jacobian_is_vectorized_not_a_row_loop(rng):
    """Eager ops executed by one jacobian do not grow with the number of rows."""
    def eager_ops_for(n, use_pfor):
        x = f32(rng.normal(size=(n,)))
        w = f32(rng.normal(size=(n, n)))
        with jf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = jf.nn.softmax(jf.tanh(jf.matmul(w, x[:, None])[:, 0]))
        before = jf.debugging.stats()["eager_ops"]
        tape.jacobian(y, x, experimental_use_pfor=use_pfor)
        return jf.debugging.stats()["eager_ops"] - before

    assert eager_ops_for(4, True) == eager_ops_for(64, True)
    assert eager_ops_for(64, False) > 8 * eager_ops_for(4, True)


def test_jacobian_hessian_with_nested_tapes(rng):
    xv = rng.normal(size=(4,))
    x = f32(xv)
    with jf.GradientTape() as outer:
        outer.watch(x)
        with jf.GradientTape() as inner:
            inner.watch(x)
            y = jf.reduce_sum(jf.sin(x)) * jf.reduce_sum(x * x)
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x)
    s, q = np.sum(np.sin(xv)), np.sum(xv * xv)
    want = (np.diag(-np.sin(xv)) * q + 2 * np.outer(np.cos(xv), xv) + 2 * np.outer(xv, np.cos(xv))
            + 2 * s * np.eye(4))
    close(h, want, 1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_gather_nd_scatter_nd_rules(mode, rng):
    xv = rng.normal(size=(3, 2))
    indices = np.array([[2, 1], [0, 0], [2, 1]], np.int32)

    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.gather_nd(jf.sin(x), indices) * 2.0
        return y, tape.jacobian(y, x)

    before = jf.debugging.stats()["jacobian_loop_fallbacks"]
    _, j = run(mode, step, f32(xv))
    assert jf.debugging.stats()["jacobian_loop_fallbacks"] == before
    want = np.zeros((3, 3, 2))
    for r, (a, b) in enumerate(indices):
        want[r, a, b] = 2.0 * np.cos(xv[a, b])
    close(j, want)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_jacobian_op_without_rule_loops_per_op_with_warning(mode, rng):
    xv = rng.normal(size=(3, 2))
    indices = np.array([[2, 1], [0, 0]], np.int32)

    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.tensor_scatter_nd_update(x * 2.0, indices, jf.constant([5.0, 6.0]))
        return tape.jacobian(y, x)

    before = jf.debugging.stats()["jacobian_loop_fallbacks"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        j = run(mode, step, f32(xv))
    assert jf.debugging.stats()["jacobian_loop_fallbacks"] > before
    assert any("TensorScatterUpdate" in str(w.message) for w in caught) or mode == "function"
    want = 2.0 * np.einsum("ik,jl->ijkl", np.eye(3), np.eye(2))
    want[2, 1, 2, 1] = want[0, 0, 0, 0] = 0.0  # the updated elements do not depend on x
    close(j, want)


def test_jacobian_through_cond_falls_back_to_the_row_loop(rng):
    xv = rng.normal(size=(3,))

    @jf.function
    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.cond(jf.reduce_sum(x) > -100.0, lambda: jf.sin(x) * x, lambda: x)
        return tape.jacobian(y, x)

    before = jf.debugging.stats()["jacobian_loop_fallbacks"]
    with pytest.warns(RuntimeWarning, match="one row at a time") as w:
        j = step(f32(xv))
    assert w[0].filename == __file__  # the user's line, however deep the trace went
    assert jf.debugging.stats()["jacobian_loop_fallbacks"] > before
    close(j, np.diag(np.cos(xv) * xv + np.sin(xv)))


def test_jacobian_tape_rules_and_errors(rng):
    x = f32(rng.normal(size=(3,)))
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        j = tape.jacobian(y, x)  # inside the context, non-persistent: allowed once, as TF
    close(j, np.diag(2 * x.numpy()))
    with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
        tape.jacobian(y, x)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.jacobian(y, x, experimental_use_pfor=False)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x[None, :] * x[:, None]
    with pytest.raises(ValueError, match="must have rank at least 2|Need first dimension"):
        tape.batch_jacobian(y, x)
    with pytest.raises(ValueError, match="Need first dimension"):
        tape.batch_jacobian(y[:2], y)
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        tape.jacobian(y, x, unconnected_gradients="bad")


def test_jacobian_unconnected_gradients(rng):
    x = f32(rng.normal(size=(3,)))
    z = jf.constant(np.ones((2, 2)), jf.float64)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * 2.0
        yb = x[:, None] * jf.ones([1, 2])
    assert tape.jacobian(y, z) is None
    jz = tape.jacobian(y, z, unconnected_gradients=jf.UnconnectedGradients.ZERO)
    assert tuple(jz.shape) == (3, 2, 2) and jz.dtype == jf.float64
    assert not np.any(jz.numpy())
    jz2 = tape.jacobian(y, [z, x], unconnected_gradients="zero")
    assert tuple(jz2[0].shape) == (3, 2, 2)
    close(jz2[1], 2 * np.eye(3))
    bj = tape.batch_jacobian(yb, jf.zeros([3, 2]))  # unconnected: zeros, as TF, whatever the mode
    assert tuple(bj.shape) == (3, 2, 2) and not np.any(bj.numpy())


# ---- UnconnectedGradients, stop_recording, watch_accessed_variables -----------------------------
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_unconnected_gradients_zero(mode):
    v = jf.Variable(np.ones((2, 2)), dtype=jf.float64)

    def step(x, c):
        with jf.GradientTape(persistent=True) as tape:
            tape.watch([x, c])
            y = x * 3.0
        a = tape.gradient(y, [c, v], unconnected_gradients=jf.UnconnectedGradients.ZERO)
        b = tape.gradient(y, c, unconnected_gradients="zero")
        n = tape.gradient(y, c)
        out = [a[0], a[1], b, n is None]
        if mode == "function":
            out += jf.gradients(y, [c, v], unconnected_gradients=jf.UnconnectedGradients.ZERO)
            out.append(jf.gradients(y, c)[0] is None)
        return out

    out = run(mode, step, f32([1.0, 2.0]), jf.constant([[1.0, 2.0, 3.0]], jf.float64))
    zeros_c, zeros_v = out[0], out[1]
    assert tuple(zeros_c.shape) == (1, 3) and zeros_c.dtype == jf.float64 and not np.any(zeros_c.numpy())
    assert tuple(zeros_v.shape) == (2, 2) and zeros_v.dtype == jf.float64 and not np.any(zeros_v.numpy())
    assert tuple(out[2].shape) == (1, 3) and not np.any(out[2].numpy())
    assert out[3] is True or bool(out[3])
    if mode == "function":
        assert tuple(out[4].shape) == (1, 3) and tuple(out[5].shape) == (2, 2)
        assert bool(out[6])
    assert jf.UnconnectedGradients("zero") is jf.UnconnectedGradients.ZERO
    assert [u.value for u in jf.UnconnectedGradients] == ["none", "zero"]


def test_unconnected_gradients_bad_value():
    x = jf.constant(1.0)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'bad'"):
        tape.gradient(y, x, unconnected_gradients="bad")

    @jf.function
    def f(x):
        return jf.gradients(x * x, x, unconnected_gradients="bad")
    with pytest.raises(ValueError, match="Unknown value"):
        f(x)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_stop_recording(mode):
    def step(x):
        with jf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            with tape.stop_recording():
                hidden = x * x
            seen = x * x
            recorded = hidden * 1.0
        return tape.gradient(hidden, x) is None, tape.gradient(recorded, x) is None, tape.gradient(seen, x)

    a, b, g = run(mode, step, f32([1.0, 2.0]))
    assert bool(a) and bool(b)
    close(g, [2.0, 4.0])


def test_stop_recording_errors():
    fresh = jf.GradientTape()
    with pytest.raises(RuntimeError, match="Trying to stop recording a tape which is not recording"), \
            fresh.stop_recording():
        pass
    x = jf.constant(2.0)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="Tape is not recording"), tape.stop_recording():
        pass
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.gradient(y, x)
        with pytest.raises(RuntimeError, match="Trying to stop recording"), tape.stop_recording():
            pass


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_watch_accessed_variables_false(mode):
    a = jf.Variable([1.0, 2.0])
    b = jf.Variable(3.0)

    def step():
        with jf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(a)
            y = jf.reduce_sum(a * b)
        ga, gb = tape.gradient(y, [a, b])
        return ga, gb is None, len(tape.watched_variables())

    ga, gb_none, n = run(mode, step)
    close(ga, [3.0, 3.0])
    assert bool(gb_none) and int(n) == 1


@pytest.mark.parametrize("mode", ["function", "jit_scope"])
def test_jacobians_with_shapes_unknown_when_tracing(mode, rng):
    xv, wv = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    w = f32(wv)

    def body(x):
        with jf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = jf.nn.softmax(jf.tanh(jf.matmul(x, w)))
        return y, tape.jacobian(y, x), tape.batch_jacobian(y, x)

    if mode == "jit_scope":
        def scoped(x):
            with jf.jit_scope():
                return body(x)
        fn = scoped
    else:
        fn = body
    f = jf.function(fn, input_signature=[jf.TensorSpec([None, None], jf.float32)])
    before = jf.debugging.stats()["cluster_runs"]
    y, j, bj = f(f32(xv))
    if mode == "jit_scope":
        assert jf.debugging.stats()["cluster_runs"] > before
    s = _softmax(np.tanh(xv @ wv))
    dt = 1 - np.tanh(xv @ wv) ** 2
    # per example b: dy[b, j] / dx[b, l] = sum_k (s_j (d_jk - s_k)) dt_k w_lk
    per = np.einsum("bj,jk->bjk", s, np.eye(2)) - np.einsum("bj,bk->bjk", s, s)
    want_bj = np.einsum("bjk,bk,lk->bjl", per, dt, wv)
    close(bj, want_bj)
    want_j = np.einsum("bjl,bc->bjcl", want_bj, np.eye(3))
    close(j, want_j)
    assert tuple(y.shape) == (3, 2)


def test_gradients_stop_gradients_argument(rng):
    xv = rng.normal(size=(3,))

    @jf.function
    def f(x):
        h = x * x
        y = jf.reduce_sum(h * x)
        return jf.gradients(y, x, stop_gradients=[h])[0], jf.gradients(y, x)[0]

    stopped, full = f(f32(xv))
    close(stopped, xv * xv)  # h held constant: d(h x)/dx = h
    close(full, 3 * xv * xv)


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
def test_jacobian_with_variable_sources(mode, rng):
    wv = rng.normal(size=(2, 3))
    w = jf.Variable(wv.astype(np.float32))
    xv = rng.normal(size=(3,))

    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.tanh(jf.matmul(w, x[:, None])[:, 0])  # [2]
        return tape.jacobian(y, [w, x])

    jw, jx = run(mode, step, f32(xv))
    dt = 1 - np.tanh(wv @ xv) ** 2
    close(jw, np.einsum("i,ik,l->ikl", dt, np.eye(2), xv))
    close(jx, dt[:, None] * wv)


def test_custom_gradient_with_unknown_dims_when_tracing(rng):
    xv = rng.normal(size=(2, 3))
    sig = [jf.TensorSpec([None, None], jf.float32)]

    def step(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.reduce_sum(square_times_three_grad(x) + log1pexp(x))
        return tape.gradient(y, x), jf.gradients(jf.reduce_sum(square_times_three_grad(x)), x)[0]

    for kw in ({}, {"jit_compile": True}):
        before = jf.debugging.stats()["cluster_runs"]
        g, s = jf.function(step, input_signature=sig, **kw)(f32(xv))
        if kw:
            assert jf.debugging.stats()["cluster_runs"] > before
        close(g, 3 * xv + 1 / (1 + np.exp(-xv)))
        close(s, 3 * xv)


def test_jacobian_through_a_function_called_under_an_eager_tape(rng):
    xv, wv = rng.normal(size=(3,)), rng.normal(size=(3, 3))
    w = f32(wv)

    @jf.function
    def layer(x):
        return jf.tanh(jf.matmul(w, x[:, None])[:, 0]) * x

    x = f32(xv)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    before = jf.debugging.stats()["jacobian_loop_fallbacks"]
    j = tape.jacobian(y, x)
    assert jf.debugging.stats()["jacobian_loop_fallbacks"] == before  # vectorized through the call
    t = np.tanh(wv @ xv)
    close(j, (1 - t ** 2)[:, None] * wv * xv[:, None] + np.diag(t))
    assert not jf.config.functions_run_eagerly()


def test_custom_gradient_on_a_method():
    class Scaler:
        def __init__(self, k):
            self.k = k

        @jf.custom_gradient
        def apply(self, x):
            return x * self.k, lambda dy: dy * 100.0  # a gradient that shows it is this one

    s = Scaler(2.0)
    x = jf.constant([1.0, 2.0])
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = s.apply(x)
    assert y.numpy().tolist() == [2.0, 4.0]
    assert tape.gradient(y, x).numpy().tolist() == [100.0, 100.0]
    assert Scaler.apply.__name__ == "apply"
