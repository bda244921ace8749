"""jf.optimizers.SGD and Adam: Keras's update rules against numpy references, eagerly, in a
jf.function and compiled; minimize; slot creation; an MLP whose loss goes down; gradients of
another shape than their variable's refused, as TF's resource-apply kernels refuse them."""
import warnings

import numpy as np
import pytest
from conftest import eager_and_traced

import jitflow as jf


def _quadratic_grads(v0, target, steps, opt_factory, mode):
    """Runs `steps` updates of loss = sum((v - target)^2) and returns v after each."""
    v = jf.Variable(v0)
    opt = opt_factory()

    def step():
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(jf.square(v - target))
        (g,) = tape.gradient(loss, [v])
        opt.apply_gradients([(g, v)])
        return loss

    def compiled():
        with jf.jit_scope():
            return step()

    run = {"eager": step, "function": jf.function(step), "compiled": jf.function(compiled)}[mode]
    out = []
    for _ in range(steps):
        run()
        out.append(v.numpy().copy())
    return out, opt


V0 = np.array([1.0, -2.0, 0.5], np.float32)
TARGET = np.array([0.5, 0.5, 0.5], np.float32)


def _sgd_ref(lr, momentum, nesterov, steps):
    v, vel, out = V0.astype(np.float64), np.zeros(3), []
    for _ in range(steps):
        g = 2 * (v - TARGET)
        if momentum:
            vel = momentum * vel - lr * g
            v = v + (momentum * vel - lr * g if nesterov else vel)
        else:
            v = v - lr * g
        out.append(v)
    return out


def _adam_ref(lr, b1, b2, eps, steps):
    v, m, s, out = V0.astype(np.float64), np.zeros(3), np.zeros(3), []
    for t in range(1, steps + 1):
        g = 2 * (v - TARGET)
        alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        m = m + (g - m) * (1 - b1)
        s = s + (g * g - s) * (1 - b2)
        v = v - alpha * m / (np.sqrt(s) + eps)
        out.append(v)
    return out


@pytest.mark.parametrize("mode", ["eager", "function", "compiled"])
@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.5, True)])
def test_sgd_matches_reference(mode, momentum, nesterov):
    got, opt = _quadratic_grads(V0, TARGET, 4, lambda: jf.optimizers.SGD(0.1, momentum, nesterov), mode)
    for a, b in zip(got, _sgd_ref(0.1, momentum, nesterov, 4)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert int(opt.iterations.numpy()) == 4
    assert len(opt.variables) == (2 if momentum else 1)


@pytest.mark.parametrize("mode", ["eager", "function", "compiled"])
def test_adam_matches_reference(mode):
    got, opt = _quadratic_grads(V0, TARGET, 5, lambda: jf.optimizers.Adam(0.05, 0.8, 0.99, 1e-7), mode)
    for a, b in zip(got, _adam_ref(0.05, 0.8, 0.99, 1e-7, 5)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert int(opt.iterations.numpy()) == 5
    (var,) = {k[1] for k in opt._slots}
    assert var is not None and len(opt.variables) == 3


def test_adam_defaults_are_kerass():
    opt = jf.optimizers.Adam()
    assert (opt.learning_rate, opt.beta_1, opt.beta_2, opt.epsilon) == (0.001, 0.9, 0.999, 1e-7)
    assert jf.optimizers.SGD().learning_rate == 0.01


def test_minimize_with_callable_and_with_tape():
    v = jf.Variable([3.0])
    opt = jf.optimizers.SGD(0.25)
    loss = opt.minimize(lambda: jf.reduce_sum(jf.square(v)), [v])
    assert float(loss) == 9.0
    np.testing.assert_allclose(v.numpy(), [3.0 - 0.25 * 6.0])
    with jf.GradientTape() as tape:
        l2 = jf.reduce_sum(v * 2.0)
    opt.minimize(l2, [v], tape=tape)
    np.testing.assert_allclose(v.numpy(), [1.5 - 0.5])
    with pytest.raises(ValueError, match="tape"):
        opt.minimize(l2, [v])


def test_none_gradients_are_skipped_all_none_raises():
    a, b = jf.Variable([1.0]), jf.Variable([1.0])
    opt = jf.optimizers.SGD(1.0)
    with pytest.warns(UserWarning, match="Gradients do not exist for variables"):
        opt.apply_gradients([(jf.constant([0.5]), a), (None, b)])
    np.testing.assert_allclose(a.numpy(), [0.5])
    np.testing.assert_allclose(b.numpy(), [1.0])
    with pytest.raises(ValueError, match="No gradients provided for any variable."):
        opt.apply_gradients([(None, a)])


def _missing(names):
    """Keras 3's text (TF 2.21's tf.keras) for variables without a gradient."""
    return (f"Gradients do not exist for variables {names} when minimizing the loss. If using "
            "`model.compile()`, did you forget to provide a `loss` argument?")


def test_none_gradient_warns_once_per_optimizer_and_variables_at_the_callers_line():
    # A variable the loss does not reach was skipped silently: it never trained, and nothing said so.
    a, b, c = jf.Variable([1.0], name="a"), jf.Variable([1.0], name="b"), jf.Variable([1.0], name="c")
    opt = jf.optimizers.SGD(1.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):  # a training loop: one warning, not one per step
            opt.apply_gradients([(jf.constant([0.5]), a), (None, b), (None, c)])
        opt.apply_gradients([(jf.constant([0.5]), a), (None, b)])  # another set of variables
        jf.optimizers.SGD(1.0).apply_gradients([(jf.constant([0.5]), a), (None, b)])  # another optimizer
    assert [str(m.message) for m in w] == [_missing(["b:0", "c:0"]), _missing(["b:0"]), _missing(["b:0"])]
    assert all(m.category is UserWarning and m.filename == __file__ for m in w)

    adam = jf.optimizers.Adam(0.1)

    @jf.function
    def step(x):
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(a * x)
        adam.apply_gradients(zip(tape.gradient(loss, [a, b]), [a, b]))  # b's gradient is None

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for x in ([1.0], [1.0], [1.0, 2.0]):  # traced twice
            step(jf.constant(x))
    assert [str(m.message) for m in w] == [_missing(["b:0"])]
    assert w[0].filename == __file__


def test_slots_created_on_first_trace_reused_on_retrace():
    v = jf.Variable(np.ones(2, np.float32))
    opt = jf.optimizers.Adam(0.1)

    @jf.function
    def step(x):
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(jf.square(v * x))
        opt.apply_gradients(zip(tape.gradient(loss, [v]), [v]))
        return loss

    step(jf.constant([1.0, 2.0]))  # first trace creates m and v; traced again at once, as TF
    assert step.experimental_get_tracing_count() == 2
    step(jf.constant([[1.0, 2.0]]))  # a retrace must not create variables again
    assert step.experimental_get_tracing_count() == 3
    assert len(opt.variables) == 3
    assert np.all(v.numpy() < 1.0)


def _spiral(rng, n=96):
    t = rng.uniform(0.0, 3.0, n)
    label = rng.integers(0, 2, n)
    r = t + 0.5
    angle = t * 2.0 + np.pi * label
    x = np.stack([r * np.cos(angle), r * np.sin(angle)], 1) + rng.normal(0, 0.05, (n, 2))
    return x.astype(np.float32), np.eye(2, dtype=np.float32)[label]


@pytest.mark.parametrize("compiled", [False, True])
def test_mlp_training_loss_goes_down(rng, compiled):
    x, y = _spiral(rng)
    l1 = jf.nn.Dense(24, activation="tanh", seed=1)
    l2 = jf.nn.Dense(2, seed=2)
    l2(l1(x))
    variables = l1.trainable_variables + l2.trainable_variables
    opt = jf.optimizers.Adam(0.03)

    def step(x, y):
        with jf.GradientTape() as tape:
            logits = l2(l1(x))
            loss = -jf.reduce_mean(jf.reduce_sum(y * jf.nn.log_softmax(logits), 1))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    def compiled_step(x, y):
        with jf.jit_scope():
            return step(x, y)

    run = jf.function(compiled_step) if compiled else step
    losses = [float(run(x, y)) for _ in range(60)]
    assert losses[-1] < 0.75 * losses[0]
    if compiled:
        assert jf.function(compiled_step).get_concrete_function(x, y).clusters


def test_train_mlp_example_runs_and_learns():
    import pathlib
    import subprocess
    import sys
    script = pathlib.Path(__file__).resolve().parents[3] / "examples" / "train_mlp.py"
    out = subprocess.run([sys.executable, str(script), "--steps", "40", "--n", "128", "--hidden", "16"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines()
             if line.split() and line.split()[0] in ("eager", "function", "compiled")}
    assert set(lines) == {"eager", "function", "compiled"}
    for line in lines.values():
        first, last = (float(v) for v in line.split("loss")[1].split("accuracy")[0].split("->"))
        assert last < first and "us/step" in line


# ---- gradients of another shape than the variable's are refused ----------------------------------
@pytest.mark.parametrize("make", [lambda: jf.optimizers.SGD(0.1), lambda: jf.optimizers.SGD(0.1, momentum=0.9),
                                  lambda: jf.optimizers.Adam(0.1)], ids=["sgd", "momentum", "adam"])
@pytest.mark.parametrize("grad_shape", [[3], [1, 3], [3, 2]], ids=repr)
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_optimizer_refuses_a_gradient_of_another_shape(make, grad_shape, mode):
    # Momentum and Adam broadcast a [3] gradient over a [2, 3] variable: a silently wrong step.
    # TF's ResourceApply*/AssignSub: InvalidArgumentError "Cannot update variable with shape
    # [2,3] using a Tensor with shape [3], shapes must be equal."
    v = jf.Variable(jf.ones([2, 3]))
    opt = make()
    opt.build([v])
    step = eager_and_traced(lambda g: opt.apply_gradients([(g, v)]))[mode]
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match=r"Cannot update variable with shape \[2,3\] using a Tensor with shape"):
        step(jf.ones(grad_shape))
    np.testing.assert_array_equal(v.numpy(), np.ones((2, 3)))


def test_optimizer_gradient_with_unknown_dims_is_checked_when_run():
    v = jf.Variable(jf.ones([2, 3]))
    opt = jf.optimizers.SGD(0.1, momentum=0.9)
    opt.build([v])
    step = jf.function(lambda g: opt.apply_gradients([(g, v)]),
                       input_signature=[jf.TensorSpec([None, 3], jf.float32)])
    step(jf.ones([2, 3]))
    with pytest.raises(jf.errors.InvalidArgumentError):
        step(jf.ones([1, 3]))
