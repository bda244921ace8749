"""Gradients through traced jf.while_loop (While nodes): values checked in float64 against
closed forms, numpy and central finite differences; jf.gradients and a traced GradientTape;
data-dependent trip counts, body captures, mixed int/float/bool loop vars,
maximum_iterations, zero iterations, nested loops, jit_scope, and the unsupported cases
(shape-changing loop vars, second order, random numbers in the body) as clear errors."""
import numpy as np
import pytest
from conftest import numeric_grad

import jitflow as jf

F64 = jf.float64


def c64(v):
    return jf.constant(np.asarray(v, np.float64))


def while_ops(f, *args):
    return [op for op in f.get_concrete_function(*args).graph.get_operations() if op.type == "While"]


# ---- jf.gradients ------------------------------------------------------------------------
def test_squaring_with_a_tensor_trip_count():
    # y = x ** (2 ** n), n a runtime tensor: dy/dx = 2**n x ** (2**n - 1).
    @jf.function
    def f(x, n):
        y = jf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * v), [0, x])[1]
        return y, jf.gradients(jf.reduce_sum(y), x)[0]

    xs = np.array([0.9, 1.1, -1.05])
    for n in (0, 1, 3, 5):
        y, g = f(c64(xs), jf.constant(n))
        p = 2**n
        np.testing.assert_allclose(y.numpy(), xs**p, rtol=1e-12)
        np.testing.assert_allclose(g.numpy(), p * xs ** (p - 1), rtol=1e-12)


def test_data_dependent_trip_count_matches_finite_differences():
    # Runs until the sum passes 10: the trip count depends on x itself.
    def np_f(x, w):
        v = x.copy()
        while v.sum() < 10.0:
            v = v * w + 0.5
        return v.sum()

    @jf.function
    def f(x, w):
        y = jf.while_loop(lambda v: jf.reduce_sum(v) < 10.0, lambda v: v * w + 0.5, [x])[0]
        return jf.reduce_sum(y), jf.gradients(jf.reduce_sum(y), [x, w])

    x, w = np.array([0.5, 1.0]), np.array(1.3)
    y, (gx, gw) = f(c64(x), c64(w))
    assert float(y) == pytest.approx(np_f(x, w), rel=1e-12)
    nx, nw = numeric_grad(np_f, [x, w])
    np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-6)


def test_body_capture_gradient_sums_over_iterations():
    def np_f(x, w):
        v = x.copy()
        for _ in range(4):
            v = np.sin(v * w) + w
        return v.sum()

    @jf.function
    def f(x, w):
        y = jf.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, jf.sin(v * w) + w), [0, x])[1]
        return jf.gradients(jf.reduce_sum(y), [x, w])

    x, w = np.array([0.3, 0.7, -0.4]), np.array(0.9)
    gx, gw = f(c64(x), c64(w))
    nx, nw = numeric_grad(np_f, [x, w])
    np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-6)
    # Linear in w with a known sum: v -> v * w three times gives x w^3, d/dw = 3 x w^2.

    @jf.function
    def lin(x, w):
        y = jf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * w), [0, x])[1]
        return jf.gradients(y, w)[0]

    assert float(lin(c64(2.0), c64(0.5))) == pytest.approx(3 * 2.0 * 0.25, rel=1e-14)


def test_matrix_recurrence_with_captured_weights(rng):
    # h <- tanh(h @ W + b), five steps: gradients for h0, W and b.
    def np_f(h, W, b):
        for _ in range(5):
            h = np.tanh(h @ W + b)
        return (h * np.arange(1, h.size + 1).reshape(h.shape)).sum()

    @jf.function
    def f(h, W, b):
        y = jf.while_loop(lambda i, h: i < 5, lambda i, h: (i + 1, jf.tanh(jf.matmul(h, W) + b)),
                          [0, h])[1]
        loss = jf.reduce_sum(y * c64(np.arange(1, 7).reshape(2, 3)))
        return jf.gradients(loss, [h, W, b])

    h, W, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(3,))
    got = f(c64(h), c64(W), c64(b))
    for a, n in zip(got, numeric_grad(np_f, [h, W, b])):
        np.testing.assert_allclose(a.numpy(), n, rtol=1e-6, atol=1e-9)


def test_int_float_and_bool_loop_vars():
    # i (int counter, used in the arithmetic), a and b (floats feeding each other), flag
    # (bool, toggles which update applies), s (an int sum nobody differentiates).
    def np_f(a, b, w):
        flag = True
        for i in range(5):
            a, b = (a * b + i * w, b * 0.9) if flag else (a + np.sin(b), b * w)
            flag = not flag
        return a.sum() + 2 * b.sum()

    @jf.function
    def f(a, b, w, s0):
        def body(i, a, b, flag, s):
            fi = jf.cast(i, F64)
            na = jf.where(flag, a * b + fi * w, a + jf.sin(b))
            nb = jf.where(flag, b * 0.9, b * w)
            return i + 1, na, nb, jf.logical_not(flag), s + i

        _, a2, b2, _, s = jf.while_loop(lambda i, *rest: i < 5, body,
                                        [0, a, b, jf.constant(True), s0])
        loss = jf.reduce_sum(a2) + 2.0 * jf.reduce_sum(b2)
        return s, jf.gradients(loss, [a, b, w, s0])

    a, b, w = np.array([0.5, -0.2]), np.array([1.2, 0.8]), np.array(0.7)
    s, (ga, gb, gw, gs) = f(c64(a), c64(b), c64(w), jf.constant(1))
    assert int(s) == 1 + 0 + 1 + 2 + 3 + 4
    assert gs is None  # int loop var: no gradient
    for got, want in zip((ga, gb, gw), numeric_grad(np_f, [a, b, w])):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_maximum_iterations_stops_the_loop():
    # The cond alone would run forever (v grows); maximum_iterations=4 stops it: y = x * 3^4.
    @jf.function
    def f(x):
        y = jf.while_loop(lambda v: v > 0.0, lambda v: jf.sin(v) + v * 3.0, [x],
                          maximum_iterations=4)[0]
        return y, jf.gradients(y, x)[0]

    def np_f(x):
        for _ in range(4):
            x = np.sin(x) + x * 3.0
        return x

    y, g = f(c64(0.2))
    assert float(y) == pytest.approx(np_f(0.2), rel=1e-12)
    assert float(g) == pytest.approx(numeric_grad(np_f, [np.array(0.2)])[0], rel=1e-6)
    assert [op.get_attr("maximum_iterations") for op in while_ops(f, c64(0.2))] == [4, 4, -1]

    # The cond stops first: maximum_iterations is only an upper bound (2 trips of v * 3).
    @jf.function
    def h(x):
        y = jf.while_loop(lambda v: v < 1.0, lambda v: v * 3.0, [x], maximum_iterations=10)[0]
        return jf.gradients(y, x)[0]

    assert float(h(c64(0.2))) == pytest.approx(9.0)


def test_zero_iterations_pass_grad_ys_through():
    @jf.function
    def f(x, w, n):
        y = jf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * w), [0, x])[1]
        return jf.gradients(y, [x, w], grad_ys=c64([2.0, -3.0]))

    gx, gw = f(c64([1.5, 2.5]), c64(4.0), jf.constant(0))
    np.testing.assert_array_equal(gx.numpy(), [2.0, -3.0])
    assert float(gw) == 0.0
    gx, gw = f(c64([1.5, 2.5]), c64(4.0), jf.constant(2))
    np.testing.assert_allclose(gx.numpy(), [32.0, -48.0])
    assert float(gw) == pytest.approx(2 * 4.0 * (2.0 * 1.5 - 3.0 * 2.5))


def test_cond_captures_and_unconnected_outputs():
    # t is only read by the cond: no gradient (None), like an int input. The gradient of a
    # loop var that the loss does not use (b) is zeros, not an error.
    @jf.function
    def f(x, b, t):
        out = jf.while_loop(lambda v, b: v < t, lambda v, b: (v * 1.5, b + v), [x, b])
        return jf.gradients(out[0], [x, b, t])

    gx, gb, gt = f(c64(1.0), c64(0.0), c64(3.0))
    assert float(gx) == pytest.approx(1.5**3) and gt is None
    assert gb is None  # out[0] does not depend on b at all

    @jf.function
    def g(x, b, t):
        out = jf.while_loop(lambda v, b: v < t, lambda v, b: (v * 1.5, b + v), [x, b])
        return jf.gradients(out[1], [x, b])

    gx, gb = g(c64(1.0), c64(0.0), c64(3.0))
    # b_final = b + x (1 + 1.5 + 2.25)
    assert float(gx) == pytest.approx(4.75) and float(gb) == 1.0

    # t read by both the cond and the body: it is a cond capture and a body capture (two
    # While inputs); only the body's use has a gradient. v: 1 -> 1.82 -> 3.05 -> 4.895.
    @jf.function
    def h(x, t):
        y = jf.while_loop(lambda v: v < t, lambda v: v * 1.5 + t * 0.1, [x])[0]
        return y, jf.gradients(y, [x, t])

    y, (gx, gt) = h(c64(1.0), c64(3.2))
    assert float(y) == pytest.approx(4.895)
    assert float(gx) == pytest.approx(1.5**3)
    assert float(gt) == pytest.approx(0.1 * (1 + 1.5 + 1.5**2))


def test_unknown_dims_from_an_input_signature():
    @jf.function(input_signature=[jf.TensorSpec([None, 2], F64), jf.TensorSpec([], jf.int32)])
    def f(x, n):
        y = jf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, jf.sin(v) * 1.5), [0, x])[1]
        return jf.gradients(jf.reduce_sum(y), x)[0]

    x = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    np.testing.assert_allclose(f(c64(x), jf.constant(2)).numpy(),
                               np.cos(np.sin(x) * 1.5) * 1.5 * np.cos(x) * 1.5, rtol=1e-12)
    np.testing.assert_allclose(f(c64(x[:1]), jf.constant(0)).numpy(), np.ones((1, 2)))


def test_nested_while_loops():
    def np_f(x, n, m):
        v = x
        for _ in range(n):
            u = v
            for _ in range(m):
                u = np.sin(u) * x
            v = u + v
        return v

    @jf.function
    def f(x, n, m):
        def outer(i, v):
            inner = jf.while_loop(lambda j, u: j < m, lambda j, u: (j + 1, jf.sin(u) * x), [0, v])[1]
            return i + 1, inner + v
        y = jf.while_loop(lambda i, v: i < n, outer, [0, x])[1]
        return y, jf.gradients(y, x)[0]

    for n, m in ((3, 2), (2, 0), (0, 3)):
        y, g = f(c64(0.8), jf.constant(n), jf.constant(m))
        assert float(y) == pytest.approx(np_f(0.8, n, m), rel=1e-12)
        num = numeric_grad(lambda x, n=n, m=m: np_f(x, n, m), [np.array(0.8)])[0]
        assert float(g) == pytest.approx(num, rel=1e-6)


def test_while_inside_cond_and_cond_inside_while():
    @jf.function
    def f(x, p):
        def body(i, v):
            return i + 1, jf.cond(v > 1.0, lambda: v * 0.5, lambda: v * v + 1.0)
        y = jf.cond(p, lambda: jf.while_loop(lambda i, v: i < 4, body, [0, x])[1], lambda: x * 7.0)
        return jf.gradients(y, x)[0]

    def np_f(x):
        for _ in range(4):
            x = x * 0.5 if x > 1.0 else x * x + 1.0
        return x

    assert float(f(c64(0.6), jf.constant(True))) == pytest.approx(
        numeric_grad(np_f, [np.array(0.6)])[0], rel=1e-6)
    assert float(f(c64(0.6), jf.constant(False))) == 7.0


def test_gradient_ops_are_named_under_the_while_grad_scope():
    @jf.function
    def f(x):
        y = jf.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, [x], name="doubling")[0]
        return jf.gradients(y, x, name="g")[0]

    names = [op.name for op in while_ops(f, c64(1.0))]
    assert names[0] == "doubling" and len(names) == 3
    assert all(n.startswith("g/doubling_grad/") for n in names[1:])


# ---- GradientTape ------------------------------------------------------------------------
def test_traced_tape_over_a_while_loop():
    @jf.function
    def f(x, w):
        with jf.GradientTape() as tape:
            tape.watch([x, w])
            y = jf.while_loop(lambda v: jf.reduce_sum(v) < 10.0, lambda v: v * w + 0.5, [x])[0]
            loss = jf.reduce_sum(y * y)
        return tape.gradient(loss, [x, w])

    def np_f(x, w):
        v = x.copy()
        while v.sum() < 10.0:
            v = v * w + 0.5
        return (v * v).sum()

    x, w = np.array([0.5, 1.0]), np.array(1.3)
    gx, gw = f(c64(x), c64(w))
    nx, nw = numeric_grad(np_f, [x, w])
    np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-6)


def test_variables_read_before_the_loop_get_gradients():
    # A variable read outside the loop is a body capture of the While, so both the tape and
    # jf.gradients see it. (Reads inside a loop body are not seen: see docs/autodiff.md.)
    v = jf.Variable(0.9, dtype=F64)

    @jf.function
    def f(x, n):
        with jf.GradientTape() as tape:
            w = v.read_value()
            y = jf.while_loop(lambda i, u: i < n, lambda i, u: (i + 1, u * w), [0, x])[1]
        return tape.gradient(y, v), jf.gradients(y, v)[0]

    g_tape, g_sym = f(c64(2.0), jf.constant(3))
    assert float(g_tape) == pytest.approx(3 * 2.0 * 0.81, rel=1e-14)
    assert float(g_sym) == pytest.approx(3 * 2.0 * 0.81, rel=1e-14)


def test_training_a_loop_parameter_with_sgd():
    # Fit w so that x * w^3 (three loop iterations) hits 8 from x = 1: w -> 2.
    w = jf.Variable(1.5, dtype=F64)
    opt = jf.optimizers.SGD(learning_rate=0.002)

    @jf.function
    def step(x):
        with jf.GradientTape() as tape:
            wv = w.read_value()
            y = jf.while_loop(lambda i, u: i < 3, lambda i, u: (i + 1, u * wv), [0, x])[1]
            loss = (y - 8.0) ** 2
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    for _ in range(60):
        loss = step(c64(1.0))
    assert float(loss) < 1e-10
    assert float(w.numpy()) == pytest.approx(2.0, rel=1e-6)


# ---- jit_scope ---------------------------------------------------------------------------
def test_jit_scope_ops_around_the_loop_compile_and_match():
    def body(x, w, scoped):
        def fwd():
            a = jf.tanh(x * w)
            y = jf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * a + w), [0, a])[1]
            return jf.reduce_sum(y * y)
        if scoped:
            with jf.jit_scope():
                z = fwd()
        else:
            z = fwd()
        return z, jf.gradients(z, [x, w])

    compiled = jf.function(lambda x, w: body(x, w, True))
    plain = jf.function(lambda x, w: body(x, w, False))
    x, w = np.array([0.3, -0.2, 0.5]), np.array(0.7)
    cf = compiled.get_concrete_function(c64(x), c64(w))
    assert cf.clusters and all(c.scope == "jit_scope_0" for c in cf.clusters)
    ops = {o for c in cf.clusters for o in c.ops}
    assert {"Tanh", "gradients/Tanh_grad/Mul_1"} <= ops
    assert any(o.startswith("gradients/While_grad/") for o in ops)  # the accumulators' setup
    assert not plain.get_concrete_function(c64(x), c64(w)).clusters
    (z, (gx, gw)), (zp, (gxp, gwp)) = compiled(c64(x), c64(w)), plain(c64(x), c64(w))

    def np_f(x, w):
        a = np.tanh(x * w)
        v = a
        for _ in range(3):
            v = v * a + w
        return (v * v).sum()

    assert float(z) == pytest.approx(np_f(x, w), rel=1e-12)
    nx, nw = numeric_grad(np_f, [x, w])
    np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), gxp.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), gwp.numpy(), rtol=1e-12)
    assert float(z) == pytest.approx(float(zp), rel=1e-12)


def test_gradient_of_a_capture_inside_a_jit_scope():
    # Only the loop is in the scope and w only feeds the body: the zeros that start w's
    # gradient sum must not become a compiled cluster of their own.
    @jf.function
    def f(x, w):
        with jf.jit_scope():
            y = jf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * w), [0, x])[1]
        return jf.gradients(y, [x, w])

    gx, gw = f(c64([0.3, -0.2, 0.5]), c64(0.7))
    np.testing.assert_allclose(gx.numpy(), [0.343] * 3, rtol=1e-12)
    assert float(gw) == pytest.approx(0.6 * 3 * 0.49, rel=1e-12)


# ---- unsupported: clear errors -----------------------------------------------------------
def test_shape_changing_loop_var_is_a_clear_error():
    @jf.function
    def f(x):
        y = jf.while_loop(lambda v: jf.shape(v)[0] < 8, lambda v: jf.concat([v, v * 2.0], 0), [x],
                          shape_invariants=[[None]])[0]
        return jf.gradients(jf.reduce_sum(y), x)

    with pytest.raises(NotImplementedError, match=r"While op 'While' .*loop var 0 has shape invariant "
                       r"\[None\] but starts with shape \[2\]"):
        f(c64([1.0, 2.0]))


def test_shape_changing_int_loop_var_that_floats_do_not_read_is_fine():
    @jf.function
    def f(x):
        _, y, seen = jf.while_loop(
            lambda i, v, seen: i < 3,
            lambda i, v, seen: (i + 1, v * 2.0, jf.concat([seen, jf.expand_dims(i, 0)], 0)),
            [0, x, jf.constant([7])], shape_invariants=[[], [2], [None]])
        return seen, jf.gradients(jf.reduce_sum(y), x)[0]

    seen, g = f(c64([1.0, 2.0]))
    np.testing.assert_array_equal(seen.numpy(), [7, 0, 1, 2])
    np.testing.assert_array_equal(g.numpy(), [8.0, 8.0])


def test_second_order_is_a_clear_error():
    @jf.function
    def f(x):
        y = jf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * v), [0, x])[1]
        g = jf.gradients(y, x)[0]
        return jf.gradients(g, x)

    with pytest.raises(NotImplementedError, match="second-order gradients through a traced "
                       "jf.while_loop are not supported"):
        f(c64(1.1))


# Every sampler that draws from a stateful stream, including those that take a fresh Philox
# state and sample statelessly from it (the record's kRandomStream flag says which ops).
_SAMPLERS = {
    "uniform": lambda: jf.random.uniform([], dtype=F64),
    "truncated_normal": lambda: jf.random.truncated_normal([], dtype=F64),
    "uniform_int": lambda: jf.cast(jf.random.uniform([], maxval=5, dtype=jf.int32), F64),
    "generator": lambda: _GENERATOR.normal([], dtype=F64),
}
_GENERATOR = jf.random.Generator.from_seed(5)


@pytest.mark.parametrize("sampler", sorted(_SAMPLERS))
def test_random_numbers_in_the_body_are_a_clear_error(sampler):
    draw = _SAMPLERS[sampler]

    @jf.function
    def f(x):
        y = jf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * draw()), [0, x])[1]
        return jf.gradients(y, x)

    with pytest.raises(NotImplementedError, match="jf.while_loop 'While': the branch or loop body "
                       "samples random numbers"):
        f(c64(1.1))


@pytest.mark.parametrize("control", ["while", "cond"])
@pytest.mark.parametrize("how", ["gradients", "tape"])
def test_variable_read_inside_a_body(control, how):
    # The read becomes an input of the If/While node (a read before it): its gradient reaches
    # the variable (autodiff/test_variables_in_control_flow.py has more).
    v = jf.Variable(np.float64(2.0), name="w")

    def body_op(x):
        if control == "while":
            return jf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * v), [0, x])[1]
        return jf.cond(x > 0, lambda: x * v, lambda: x)

    @jf.function
    def f(x):
        if how == "gradients":
            return jf.gradients(body_op(x), [v])[0]
        with jf.GradientTape() as tape:
            y = body_op(x)
        return tape.gradient(y, v)

    want = 3 * 1.5 * 2.0 ** 2 if control == "while" else 1.5
    assert float(f(c64(1.5))) == pytest.approx(want)


def test_variable_read_before_the_loop_still_differentiates():
    v = jf.Variable(np.float64(2.0), name="w")

    @jf.function
    def f(x):
        w = v.read_value()
        y = jf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w), [0, x])[1]
        return jf.gradients(y, [v])[0]

    assert float(f(c64(1.5))) == pytest.approx(3 * 1.5 * 2.0 ** 2)
