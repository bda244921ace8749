"""Gradients of variables read inside jf.cond branches and traced loop bodies, with TF 2's
semantics (every read of a variable is one of its leaves, an assignment is not
differentiable), from a tape inside the function, from an eager tape around the call, and from
jf.gradients, in function, jit_scope, jit_compile and all-None input_signature modes. The
expected values are TF 2.21's."""
import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf

MODES = ["function", "jit_scope", "jit_compile", "signature"]


def outer_tape(mode, fn, x, sources):
    """fn as a jf.function in `mode` called under an eager tape: (value, gradients)."""
    def call(a):
        return fn(a)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = run_mode(mode, call, x)
    return y, tape.gradient(y, sources)


def inner_tape(mode, fn, x, sources_of):
    """A tape inside the function: (value, gradients)."""
    def step(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            y = fn(a)
        return y, tape.gradient(y, sources_of(a))
    return run_mode(mode, step, x)


def _matmul_loop_reference(x, w, n):
    """d sum(x W^n) / d W, summed over the n reads of W (float64)."""
    xs = [x]
    for _ in range(n):
        xs.append(xs[-1] @ w)
    g, grad = np.ones_like(xs[-1]), np.zeros_like(w)
    for k in range(n, 0, -1):
        grad += xs[k - 1].T @ g
        g = g @ w.T
    return grad, g


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tape", ["inner", "outer"])
def test_variable_read_in_a_loop_body(mode, tape):
    # It was None from the outer tape (silently) and an error from the inner one.
    x0 = np.array([[1.0, -0.5, 0.25]], np.float32)
    w0 = np.array([[0.5, 0.1, -0.2], [0.3, -0.4, 0.2], [0.1, 0.2, 0.6]], np.float32)
    w = jf.Variable(w0)

    def fn(x):
        for _ in jf.range(3):
            x = jf.matmul(x, w)
        return jf.reduce_sum(x)

    x = jf.constant(x0)
    if tape == "outer":
        _, (gx, gw) = outer_tape(mode, fn, x, [x, w])
    else:
        _, (gx, gw) = inner_tape(mode, fn, x, lambda a: [a, w])
    want_w, want_x = _matmul_loop_reference(x0.astype(np.float64), w0.astype(np.float64), 3)
    np.testing.assert_allclose(gw.numpy(), want_w, rtol=1e-5)
    np.testing.assert_allclose(gx.numpy(), want_x, rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tape", ["inner", "outer", "gradients"])
def test_variable_read_in_a_branch(mode, tape):
    v = jf.Variable([1.0, 2.0, 3.0])

    def fn(x):
        y = jf.cond(jf.reduce_sum(x) > 0, lambda: x * v * v, lambda: x - v)
        return jf.reduce_sum(y)

    x = jf.constant([1.0, 1.0, 2.0])
    if tape == "outer":
        _, (gx, gv) = outer_tape(mode, fn, x, [x, v])
    elif tape == "inner":
        _, (gx, gv) = inner_tape(mode, fn, x, lambda a: [a, v])
    else:
        gx, gv = run_mode(mode, lambda a: jf.gradients(fn(a), [a, v]), x)
    np.testing.assert_allclose(gx.numpy(), [1.0, 4.0, 9.0])
    np.testing.assert_allclose(gv.numpy(), [2.0, 4.0, 12.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tape", ["inner", "outer"])
def test_a_read_after_an_assignment_in_the_body_is_a_leaf_of_the_variable(mode, tape):
    # Each iteration halves W, then multiplies by it: the gradient sums the three reads after
    # the assignments (TF 2.21: [0.21875, 0.875, 1.96875]); the reads feeding the assignments
    # get none. The loop writes W once per iteration, also when an eager tape recorded the call.
    w = jf.Variable([1.0, 2.0, 3.0])

    def fn(x):
        for _ in jf.range(3):
            w.assign(w * 0.5)
            x = x * w
        return jf.reduce_sum(x)

    x = jf.constant([1.0, 1.0, 1.0])
    if tape == "outer":
        y, (gx, gw) = outer_tape(mode, fn, x, [x, w])
    else:
        y, (gx, gw) = inner_tape(mode, fn, x, lambda a: [a, w])
    np.testing.assert_allclose(float(y), 0.5625)
    np.testing.assert_allclose(gw.numpy(), [0.21875, 0.875, 1.96875])
    np.testing.assert_allclose(gx.numpy(), [0.015625, 0.125, 0.421875])
    np.testing.assert_allclose(w.numpy(), [0.125, 0.25, 0.375])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tape", ["inner", "outer"])
def test_a_branch_that_assigns_then_reads(mode, tape):
    # TF 2.21: d/dx [8, 18, 32] (no path through the assignment), d/dW [4, 6, 8].
    w = jf.Variable([1.0, 2.0, 3.0])

    def fn(x):
        if jf.reduce_sum(x) > 0:
            w.assign_add(x)
            y = w * x
        else:
            y = x
        return jf.reduce_sum(y * y)

    x = jf.constant([1.0, 1.0, 1.0])
    if tape == "outer":
        _, (gx, gw) = outer_tape(mode, fn, x, [x, w])
    else:
        _, (gx, gw) = inner_tape(mode, fn, x, lambda a: [a, w])
    np.testing.assert_allclose(gx.numpy(), [8.0, 18.0, 32.0])
    np.testing.assert_allclose(gw.numpy(), [4.0, 6.0, 8.0])
    np.testing.assert_allclose(w.numpy(), [2.0, 3.0, 4.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tape", ["inner", "outer"])
def test_nested_loop_in_a_branch_with_a_step_counter(mode, tape):
    # An int counter written in the loop picks the branch of each iteration: the gradient's
    # replays follow its values (even, odd, even: x v^2, + v, then v^2 again).
    v = jf.Variable([2.0, 3.0])
    step = jf.Variable(0)

    def fn(x):
        for _ in jf.range(3):
            if step % 2 == 0:
                for _ in jf.range(2):
                    x = x * v
            else:
                x = x + v
            step.assign_add(1)
        return jf.reduce_sum(x)

    x = jf.constant([1.0, 1.0])
    if tape == "outer":
        _, (gx, gv) = outer_tape(mode, fn, x, [x, v])
    else:
        _, (gx, gv) = inner_tape(mode, fn, x, lambda a: [a, v])
    vv = np.array([2.0, 3.0])
    np.testing.assert_allclose(gx.numpy(), vv ** 4)  # y = x v^4 + v^3
    np.testing.assert_allclose(gv.numpy(), 4 * vv ** 3 + 3 * vv ** 2)
    assert int(step.numpy()) == 3


@pytest.mark.parametrize("mode", MODES)
def test_an_outer_tape_asked_only_for_input_gradients(mode):
    # The variable is read before the branch and in it; only d/dx is asked for (it raised the
    # variable's NotImplementedError).
    v = jf.Variable([1.0, 2.0])

    def fn(x):
        y = x * v
        if jf.reduce_sum(x) > 0:
            y = y * v
        return jf.reduce_sum(y)

    x = jf.constant([1.0, 3.0])
    _, gx = outer_tape(mode, fn, x, x)
    np.testing.assert_allclose(gx.numpy(), [1.0, 4.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("positive", [True, False])
def test_an_outer_tape_around_a_writing_function_with_branches_of_two_shapes(mode, positive):
    # The backward replays the function's graph with the call's shapes: a cond output that is
    # a row in one branch and the batch in the other (its gradient, the caller's, has the
    # batch's shape), and a loop carrying a row whose body gives it dims the trace did not
    # know. Against the eager tape (TF's semantics, every shape known).
    def fn(x, row):
        v.assign_add(jf.reduce_mean(x, axis=0))
        y = jf.cond(jf.reduce_sum(x) > 0, lambda: x * v, lambda: row * v)
        z = row
        for _ in jf.range(2):
            ta = jf.TensorArray(jf.float32, size=1)
            for j in jf.range(1):
                ta = ta.write(j, jf.nn.relu(row * v))
            z = jf.tanh(z * v) + jf.reduce_mean(ta.stack(), axis=0)
        return jf.reduce_sum(z) + jf.reduce_sum(y * y), y

    x = jf.constant(np.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6]], np.float32) * (1 if positive else -1))
    row = jf.constant([[0.2, -0.3, 0.4]])
    results = []
    for m in ("eager", mode):
        v = jf.Variable([0.5, -0.5, 0.25])
        with jf.GradientTape() as tape:
            tape.watch([x, row])
            loss, y = run_mode(m, fn, x, row)
        results.append([loss, y, *tape.gradient([loss, y], [x, row, v]), v.read_value()])
    for got, want in zip(results[1], results[0]):
        if want is None:  # eagerly unconnected: row when the cond takes x
            assert got is None or not np.any(got.numpy())
        else:
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)
