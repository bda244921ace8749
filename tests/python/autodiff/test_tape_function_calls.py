"""An eager GradientTape around jf.function calls: each call is recorded as one op whose
gradient is a cached backward function (autodiff/function_calls.py). Gradients against
closed forms in float64 and against the same Python function run eagerly."""
import numpy as np
import pytest

import jitflow as jf


def _mlp_loss(x, w, b):
    return jf.reduce_sum(jf.tanh(jf.matmul(x, w) + b) ** 2)


def _reference(x, w, b):
    """d loss / d (x, w, b) for loss = sum(tanh(x w + b)^2), float64."""
    h = np.tanh(x @ w + b)
    dz = 2 * h * (1 - h * h)
    return dz @ w.T, x.T @ dz, dz.sum(0)


@pytest.mark.parametrize("compiled", [False, True])
def test_gradients_through_a_function_match_the_closed_form(compiled, rng):
    x64, w64, b64 = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=(5,))
    w, b = jf.Variable(w64.astype(np.float32)), jf.Variable(b64.astype(np.float32))

    @jf.function
    def f(x):
        if compiled:
            with jf.jit_scope():
                return _mlp_loss(x, w, b)
        return _mlp_loss(x, w, b)

    x = jf.constant(x64.astype(np.float32))
    for _ in range(3):  # the backward function is traced once and then reused
        with jf.GradientTape() as tape:
            tape.watch(x)
            loss = f(x)
        gx, gw, gb = tape.gradient(loss, [x, w, b])
        for got, want in zip((gx, gw, gb), _reference(x64, w64, b64)):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    assert f.experimental_get_tracing_count() == 1
    (site,) = f._jf_call_sites.values()
    assert site._backward.experimental_get_tracing_count() == 1
    if compiled:
        values = [v.read_value() for v in site.variables]
        assert site._backward.get_concrete_function([x], values, [loss]).clusters  # the backward compiles too


def test_same_gradients_as_the_python_function_run_eagerly(rng):
    w = jf.Variable(rng.normal(size=(3, 3)).astype(np.float32))

    def body(inputs, scale):
        a, b = inputs["a"], inputs["b"]
        return {"sum": jf.reduce_sum(a * jf.matmul(b, w)) * scale, "other": jf.exp(a)}

    f = jf.function(body)
    a = jf.constant(rng.normal(size=(2, 3)).astype(np.float32))
    b = jf.constant(rng.normal(size=(2, 3)).astype(np.float32))
    results = []
    for fn in (body, f):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            out = fn({"a": a, "b": b}, 1.5)
            target = out["sum"] + jf.reduce_sum(out["other"])
        results.append([g.numpy() for g in tape.gradient(target, [a, b, w])])
    for eager, traced in zip(*results):
        np.testing.assert_allclose(traced, eager, rtol=1e-5, atol=1e-6)


def test_unused_outputs_and_integer_inputs():
    @jf.function
    def f(x, n):
        return x * jf.cast(n, jf.float32), jf.sin(x)

    x, n = jf.constant([0.5, 2.0]), jf.constant([3, 4])
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y, _unused = f(x, n)
        total = jf.reduce_sum(y)
    gx, gn = tape.gradient(total, [x, n])
    np.testing.assert_allclose(gx.numpy(), [3.0, 4.0])
    assert gn is None  # integer inputs get no gradient
    np.testing.assert_allclose(tape.gradient(_unused, x).numpy(), np.cos([0.5, 2.0]), rtol=1e-6)


def test_second_order_with_nested_tapes():
    cube = jf.function(lambda x: x * x * x)
    x = jf.constant(1.5)
    with jf.GradientTape() as outer:
        outer.watch(x)
        with jf.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        dy = inner.gradient(y, x)
    np.testing.assert_allclose(float(dy.numpy()), 3 * 1.5**2, rtol=1e-6)
    np.testing.assert_allclose(float(outer.gradient(dy, x).numpy()), 6 * 1.5, rtol=1e-6)


@pytest.mark.parametrize("sampler", ["uniform", "truncated_normal", "generator"])
def test_a_random_function_is_not_replayed(sampler):
    gen = jf.random.Generator.from_seed(3)
    draw = {"uniform": lambda: jf.random.uniform([2]),
            "truncated_normal": lambda: jf.random.truncated_normal([2]),
            "generator": lambda: gen.normal([2])}[sampler]

    @jf.function
    def noisy(x):
        return x * draw()

    x = jf.constant([1.0, 2.0])
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = noisy(x)
    with pytest.warns(RuntimeWarning, match="draws random numbers") as w:
        assert tape.gradient(y, x) is None
    assert w[0].filename == __file__


def test_calls_without_a_tape_stay_on_the_fast_path():
    f = jf.function(lambda x: x + 1.0)
    x = jf.constant(1.0)
    f(x)
    f(x)
    assert "_jf_call_sites" not in f.__dict__


def test_a_method_and_an_input_signature_function():
    class Layer:
        def __init__(self):
            self.w = jf.Variable(np.ones((3, 2), np.float32))

        @jf.function
        def __call__(self, x):
            return jf.matmul(x, self.w)

    layer = Layer()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with jf.GradientTape() as tape:
        y = jf.reduce_sum(layer(jf.constant(x)) ** 2)
    np.testing.assert_allclose(tape.gradient(y, layer.w).numpy(), 2 * x.T @ (x @ np.ones((3, 2))))

    @jf.function(input_signature=[jf.TensorSpec([None], jf.float32)])
    def sum_sq(v):
        return jf.reduce_sum(v * v)

    for n in (3, 5):
        v = jf.constant(np.arange(n, dtype=np.float32))
        with jf.GradientTape() as tape:
            tape.watch(v)
            r = sum_sq(v)
        np.testing.assert_allclose(tape.gradient(r, v).numpy(), 2 * np.arange(n))
    assert sum_sq.experimental_get_tracing_count() == 1
