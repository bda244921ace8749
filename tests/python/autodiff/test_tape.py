"""jf.GradientTape: eager and traced recording, persistence, nesting, variables, and the
tensor keying that survives Python re-wrapping and buffer aliasing."""
import warnings

import numpy as np
import pytest

import jitflow as jf


def test_watch_and_gradient_structure():
    x = jf.constant([1.0, 2.0])
    y = jf.constant(3.0)
    with jf.GradientTape() as tape:
        tape.watch([x, y])
        z = jf.reduce_sum(x * x) * y
    g = tape.gradient(z, {"x": x, "pair": (y, x)})
    np.testing.assert_allclose(g["x"].numpy(), [6.0, 12.0])
    assert isinstance(g["pair"], tuple)
    assert float(g["pair"][0]) == pytest.approx(5.0)
    np.testing.assert_allclose(g["pair"][1].numpy(), [6.0, 12.0])


def test_unwatched_constant_has_no_gradient():
    x = jf.constant(2.0)
    with jf.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_non_persistent_second_call_raises():
    x = jf.constant(2.0)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 4.0
    with pytest.raises(RuntimeError, match="A non-persistent GradientTape can only be used to compute "
                                           "one set of gradients"):
        tape.gradient(y, x)


def test_persistent_tape_many_gradients():
    x = jf.constant(3.0)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == pytest.approx(108.0)
    assert float(tape.gradient(y, x)) == pytest.approx(6.0)
    assert float(tape.gradient(z, y)) == pytest.approx(18.0)


def test_nested_tapes_second_and_third_derivative():
    x = jf.constant(1.5)
    with jf.GradientTape() as t3:
        t3.watch(x)
        with jf.GradientTape() as t2:
            t2.watch(x)
            with jf.GradientTape() as t1:
                t1.watch(x)
                y = x * x * x
            dy = t1.gradient(y, x)
        d2y = t2.gradient(dy, x)
    d3y = t3.gradient(d2y, x)
    assert float(dy) == pytest.approx(3 * 1.5**2)
    assert float(d2y) == pytest.approx(6 * 1.5)  # d2/dx2 x^3 = 6x
    assert float(d3y) == pytest.approx(6.0)


def test_second_derivative_of_tanh_matches_closed_form():
    xs = np.array([-1.0, 0.3, 2.0])
    x = jf.constant(xs)
    with jf.GradientTape() as outer:
        outer.watch(x)
        with jf.GradientTape() as inner:
            inner.watch(x)
            y = jf.tanh(x)
        dy = inner.gradient(y, x)
    d2 = outer.gradient(dy, x)
    t = np.tanh(xs)
    np.testing.assert_allclose(d2.numpy(), -2 * t * (1 - t * t), rtol=1e-12)


def test_variables_watched_automatically_when_read():
    v = jf.Variable([1.0, 2.0])
    frozen = jf.Variable([5.0, 5.0], trainable=False)
    with jf.GradientTape() as tape:
        y = jf.reduce_sum(v * v + frozen * v)
    gv, gf = tape.gradient(y, [v, frozen])
    np.testing.assert_allclose(gv.numpy(), [7.0, 9.0])
    assert gf is None  # non-trainable variables are not watched
    assert tape.watched_variables() == [v]


def test_watch_accessed_variables_false():
    v = jf.Variable(2.0)
    w = jf.Variable(3.0)
    with jf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(w)
        y = v * w
    gv, gw = tape.gradient(y, [v, w])
    assert gv is None
    assert float(gw) == 2.0


def test_stop_recording_and_reset():
    x = jf.constant(2.0)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = x * 10.0  # not recorded
        w = y + z
    assert tape.gradient(z, x) is None
    assert float(tape.gradient(w, x)) == pytest.approx(4.0)
    with tape:
        tape.reset()
        tape.watch(x)
        u = x * 5.0
    assert tape.gradient(y, x) is None  # forgotten
    assert float(tape.gradient(u, x)) == pytest.approx(5.0)


def test_output_gradients_and_multiple_targets():
    x = jf.constant([1.0, 2.0])
    with jf.GradientTape() as tape:
        tape.watch(x)
        a = x * 3.0
        b = jf.square(x)
    g = tape.gradient([a, b], x, output_gradients=[jf.constant([1.0, 0.0]), jf.constant([0.5, 1.0])])
    np.testing.assert_allclose(g.numpy(), [3.0 + 1.0, 0.0 + 4.0])


def test_unconnected_integer_and_target_as_source():
    x = jf.constant(2.0)
    unused = jf.constant(1.0)
    i = jf.constant(3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with jf.GradientTape(persistent=True) as tape:
            tape.watch([x, unused, i])
            y = x * jf.cast(i, jf.float32)
    # Attributed to the user's line (the watch call here), not to a frame inside jitflow.
    assert [m.filename for m in w if "must be floating" in str(m.message)] == [__file__]
    gx, gu, gi = tape.gradient(y, [x, unused, i])
    assert float(gx) == 3.0 and gu is None and gi is None
    assert float(tape.gradient(y, unused, unconnected_gradients="zero")) == 0.0
    assert float(tape.gradient(x, x)) == 1.0


def test_aliasing_ops_share_buffers_and_still_differentiate():
    # Identity and same-shape reshape return the input's buffer; a reshape there and back
    # yields a tensor with the same key as x. The tape must neither loop nor drop paths.
    xs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x = jf.constant(xs)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a = jf.identity(x)
        b = jf.reshape(jf.reshape(x, [3, 2]), [2, 3])
        assert a._data_ptr == x._data_ptr and b._data_ptr == x._data_ptr  # really aliases
        y = jf.reduce_sum(a * b * x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * xs**2)


def test_many_temporaries_keep_distinct_keys():
    # Intermediates are dropped by Python right away; their buffers must not be reused for
    # later tensors while the tape records (it keeps them alive).
    x = jf.constant(np.linspace(0.1, 1.0, 7))
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(60):
            y = jf.sin(y) + x * 0.01
    g = tape.gradient(y, x).numpy()
    xv, yv, dv = np.linspace(0.1, 1.0, 7), np.linspace(0.1, 1.0, 7), np.ones(7)
    for _ in range(60):
        dv = np.cos(yv) * dv + 0.01
        yv = np.sin(yv) + xv * 0.01
    np.testing.assert_allclose(g, dv, rtol=1e-12)


def test_eager_control_flow_under_a_tape():
    x = jf.constant(1.25)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = jf.while_loop(lambda v: v < 10.0, lambda v: v * x, [x])[0]
        z = jf.cond(y > 5.0, lambda: y * 2.0, lambda: y)
    # y = x^k with k = 11 for x = 1.25 (1.25^11 ~ 11.6); z = 2 y -> dz/dx = 2 k x^(k-1)
    k = 11
    assert float(y) == pytest.approx(1.25**k, rel=1e-6)
    assert float(tape.gradient(z, x)) == pytest.approx(2 * k * 1.25 ** (k - 1), rel=1e-5)


def test_tape_inside_function_matches_eager(rng):
    dense = jf.nn.Dense(3, activation="sigmoid", seed=0)
    xs = rng.normal(size=(4, 2)).astype(np.float32)
    dense(xs)

    def grads(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            loss = jf.reduce_mean(jf.square(dense(x) - 0.25))
        return tape.gradient(loss, [x, dense.kernel, dense.bias])

    eager = grads(jf.constant(xs))
    traced = jf.function(grads)(xs)
    for a, b in zip(traced, eager):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    names = [op.name for op in jf.function(grads).get_concrete_function(xs).graph.get_operations()]
    assert any(n.startswith("gradient_tape/") for n in names)


def test_traced_tape_through_cond_and_jit_scope_marks():
    @jf.function
    def f(x, p):
        with jf.GradientTape() as tape:
            tape.watch(x)
            with jf.jit_scope():
                y = jf.exp(x, name="e")
            z = jf.cond(p, lambda: y * y, lambda: y * 3.0)
        return tape.gradient(z, x)

    x = jf.constant([0.5, 1.0])
    np.testing.assert_allclose(f(x, jf.constant(True)).numpy(), 2 * np.exp(2 * np.array([0.5, 1.0])),
                               rtol=1e-5)
    np.testing.assert_allclose(f(x, jf.constant(False)).numpy(), 3 * np.exp([0.5, 1.0]), rtol=1e-5)
    ops = {op.name: op for op in f.get_concrete_function(x, jf.constant(True)).graph.get_operations()}
    assert ops["gradient_tape/e_grad/Mul"].get_attr("_XlaCompile") is True
    assert ops["gradient_tape/e_grad/Mul"].get_attr("_XlaScope") == "jit_scope_0"


def test_eager_tape_around_a_function_that_writes_a_variable():
    # As TF: the call is differentiated, and its write is not repeated by the backward pass.
    v = jf.Variable(0.0)

    @jf.function
    def f(x):
        v.assign_add(1.0)
        return x * x * v
    x = jf.constant(2.0)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert float(tape.gradient(y, x)) == 4.0
    assert float(v.numpy()) == 1.0  # the call ran once, not replayed


def test_eager_tape_around_a_function_that_draws_random_numbers_warns():
    @jf.function
    def f(x):
        return x * x + jf.random.uniform([])
    x = jf.constant(2.0)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    with pytest.warns(RuntimeWarning, match="does not see inside") as w:
        assert tape.gradient(y, x) is None
    assert w[0].filename == __file__


def test_gradient_inside_persistent_context_warns_and_works():
    x = jf.constant(2.0)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with pytest.warns(RuntimeWarning, match="persistent tape inside its context") as w:
            g = tape.gradient(y, x)
        assert w[0].filename == __file__
        z = y * 3.0  # still recording after the call
    assert float(g) == 4.0
    assert float(tape.gradient(z, x)) == 12.0


def test_gradient_tape_matches_jf_gradients(rng):
    xs = rng.normal(size=(3, 4))
    ws = rng.normal(size=(4, 4))

    def loss(x, w):
        h = jf.nn.relu(jf.matmul(x, w)) + jf.reduce_max(x, 1, keepdims=True)
        return jf.reduce_sum(jf.nn.log_softmax(h)[:, :2] * jf.sigmoid(h[:, 1:3]))

    @jf.function
    def symbolic(x, w):
        return jf.gradients(loss(x, w), [x, w])

    x, w = jf.constant(xs), jf.constant(ws)
    with jf.GradientTape() as tape:
        tape.watch([x, w])
        l = loss(x, w)
    for a, b in zip(tape.gradient(l, [x, w]), symbolic(xs, ws)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_unneeded_matmul_input_gradient_is_not_computed():
    x = jf.constant(np.ones((4, 3), np.float32))
    w = jf.Variable(np.ones((3, 2), np.float32))
    with jf.GradientTape() as tape:
        y = jf.matmul(x, w)  # x is not a source: its gradient (g @ w^T) is skipped
    jf.debugging.reset_stats()
    g = tape.gradient(y, w)
    assert jf.debugging.stats()["eager_ops"] == 2  # the ones seed and one MatMul
    np.testing.assert_allclose(g.numpy(), np.full((3, 2), 4.0))


# ---- the gradient of a source with respect to itself, as TF 2.21 ---------------------------------
def test_tape_gradient_of_a_variable_with_respect_to_itself_is_one():
    v0, v1 = jf.Variable(2.0), jf.Variable(3.0)
    with jf.GradientTape() as tape:
        pass
    g0, g1 = tape.gradient(v0, [v0, v1])
    assert g0 is not None and g0.numpy() == 1.0
    assert g1 is None


def test_tape_variable_target_is_the_handle_not_its_reads():
    v = jf.Variable([1.0, 2.0])
    with jf.GradientTape() as tape:
        _ = v * 5.0  # a recorded read: TF's target is the variable's handle, not this read
    np.testing.assert_array_equal(tape.gradient(v, v).numpy(), [1.0, 1.0])
    v2 = jf.Variable(4.0, trainable=False)
    with jf.GradientTape(watch_accessed_variables=False) as tape:
        pass
    assert tape.gradient(v2, v2).numpy() == 1.0  # TF: 1.0 even unwatched and non-trainable


def test_tape_gradient_of_a_tensor_with_respect_to_itself():
    x = jf.constant([2.0, 3.0])
    with jf.GradientTape() as tape:
        pass
    np.testing.assert_array_equal(tape.gradient(x, x).numpy(), [1.0, 1.0])  # unwatched: TF 1.0
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = x * 3.0
    np.testing.assert_array_equal(tape.gradient([x, y], x).numpy(), [4.0, 4.0])
    with jf.GradientTape() as tape:
        pass
    g = tape.gradient(x, x, output_gradients=jf.constant([5.0, 7.0]))
    np.testing.assert_array_equal(g.numpy(), [5.0, 7.0])
