"""jf.keras models: subclassed, functional (Input / Model(inputs, outputs)) and Sequential
models, Keras's layer and variable names, summary() against Keras 3's text, and the jf.nn
aliases of Dense and LSTMCell."""
import numpy as np
import pytest

import jitflow as jf

layers = jf.keras.layers


def test_unique_layer_names_and_variable_paths():
    jf.keras.backend.clear_session()
    a, b = layers.Dense(2), layers.Dense(2)
    assert (a.name, b.name) == ("dense", "dense_1")
    model = jf.keras.Sequential([layers.Input((3,)), a, b])
    assert model.name == "sequential"
    assert [v.name for v in model.weights] == ["sequential/dense/kernel:0", "sequential/dense/bias:0",
                                               "sequential/dense_1/kernel:0", "sequential/dense_1/bias:0"]
    assert model.weights[0].path == "sequential/dense/kernel"

    class MLP(jf.Module):  # two Keras layers in a Module: their own scopes, tf.Module's sorted order
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = layers.Dense(2), layers.Dense(2)

        @jf.Module.with_name_scope
        def __call__(self, x):
            return self.l2(self.l1(x))

    m = MLP()
    m(jf.ones([1, 3]))
    assert [v.name for v in m.trainable_variables] == [
        "mlp/dense_2/bias:0", "mlp/dense_2/kernel:0", "mlp/dense_3/bias:0", "mlp/dense_3/kernel:0"]


def test_nn_aliases_are_the_keras_layers():
    assert jf.nn.Dense is jf.keras.layers.Dense and jf.nn.LSTMCell is jf.keras.layers.LSTMCell
    a, b = jf.nn.Dense(3, seed=7), jf.nn.Dense(3, seed=7)
    a(jf.ones([1, 2]))
    b(jf.ones([1, 2]))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())  # jitflow's seed= extension


def test_subclassed_model_training_flag_and_losses(rng):
    class Net(jf.keras.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = layers.Dense(4, activation="relu", kernel_regularizer="l2")
            self.drop = layers.Dropout(0.5)
            self.out = layers.Dense(1)

        def call(self, x, training=False):
            return self.out(self.drop(self.hidden(x), training=training))

    net = Net()
    x = rng.normal(size=(6, 3)).astype(np.float32)
    y = net(x).numpy()
    np.testing.assert_array_equal(net(x).numpy(), y)  # inference: no dropout
    assert [v.path for v in net.trainable_weights] == [
        f"{net.name}/{net.hidden.name}/kernel", f"{net.name}/{net.hidden.name}/bias",
        f"{net.name}/{net.out.name}/kernel", f"{net.name}/{net.out.name}/bias"]
    assert net.layers == [net.hidden, net.drop, net.out]
    (reg,) = net.losses
    np.testing.assert_allclose(float(reg), 0.01 * np.sum(net.hidden.kernel.numpy() ** 2), rtol=1e-6)
    k1, b1, k2, b2 = [w.numpy().astype(np.float64) for w in net.trainable_weights]
    np.testing.assert_allclose(y, np.maximum(x @ k1 + b1, 0) @ k2 + b2, rtol=1e-5, atol=1e-6)


def test_functional_model_graph_and_calls(rng):
    inp = jf.keras.Input((5,), name="x")
    a, b = layers.Dense(4, name="a"), layers.Dense(4, name="b")
    ha, hb = a(inp), b(inp)
    assert ha.shape == (None, 4)
    out = layers.Concatenate(name="cat")([layers.Add(name="add")([ha, hb]), ha])
    model = jf.keras.Model(inp, out, name="two_paths")
    assert isinstance(model, jf.keras.Model) and model.output_shape == (None, 8)
    assert [layer.name for layer in model.layers] == ["x", "a", "b", "add", "cat"]
    x = rng.normal(size=(3, 5)).astype(np.float32)
    ka, ba, kb, bb = [w.numpy().astype(np.float64) for w in model.weights]
    ya = x @ ka + ba
    np.testing.assert_allclose(model(x).numpy(), np.concatenate([ya + x @ kb + bb, ya], -1), rtol=1e-5, atol=1e-6)
    f = jf.function(lambda x: model(x), input_signature=[jf.TensorSpec([None, 5], jf.float32)])
    np.testing.assert_allclose(f(x).numpy(), model(x).numpy(), rtol=1e-6)
    # a layer call on symbolic inputs of a known rank but an unknown batch keeps None
    with pytest.raises(ValueError, match="All `inputs` and `outputs` values must be KerasTensors"):
        jf.keras.Model(inp, jf.ones([1]))


_SEQ_SUMMARY = """\
Model: "seq"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ d1 (Dense)                      │ (None, 3)              │            15 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ drop (Dropout)                  │ (None, 3)              │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ batch_normalization             │ (None, 3)              │            12 │
│ (BatchNormalization)            │                        │               │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ d2 (Dense)                      │ (None, 2)              │             8 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 35 (140.00 B)
 Trainable params: 29 (116.00 B)
 Non-trainable params: 6 (24.00 B)"""

_FUNCTIONAL_SUMMARY = """\
Model: "fn"
┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)        ┃ Output Shape      ┃    Param # ┃ Connected to      ┃
┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩
│ x (InputLayer)      │ (None, 5)         │          0 │ -                 │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ dense_2 (Dense)     │ (None, 4)         │         24 │ x[0][0]           │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ dense_3 (Dense)     │ (None, 4)         │         24 │ x[0][0]           │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ add (Add)           │ (None, 4)         │          0 │ dense_2[0][0],    │
│                     │                   │            │ dense_3[0][0]     │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ concatenate         │ (None, 8)         │          0 │ add[0][0],        │
│ (Concatenate)       │                   │            │ dense_2[0][0]     │
└─────────────────────┴───────────────────┴────────────┴───────────────────┘
 Total params: 48 (192.00 B)
 Trainable params: 48 (192.00 B)
 Non-trainable params: 0 (0.00 B)"""


def test_summary_text_is_kerass():
    """Keras 3.15's summary() text at line_length 76, printed by TF 2.21's tf.keras for the
    same models (without colour)."""
    jf.keras.backend.clear_session()
    seq = jf.keras.Sequential([jf.keras.Input((4,)), layers.Dense(3, activation="relu", name="d1"),
                               layers.Dropout(0.1, name="drop"), layers.BatchNormalization(),
                               layers.Dense(2, name="d2")], name="seq")
    lines = []
    seq.summary(line_length=76, print_fn=lines.append)
    assert lines[0] == _SEQ_SUMMARY
    for _ in range(2):
        layers.Dense(1)  # dense, dense_1 taken, as in the reference run
    inp = jf.keras.Input((5,), name="x")
    a, b = layers.Dense(4)(inp), layers.Dense(4)(inp)
    out = layers.Concatenate()([layers.Add()([a, b]), a])
    lines = []
    jf.keras.Model(inp, out, name="fn").summary(line_length=76, print_fn=lines.append)
    assert lines[0] == _FUNCTIONAL_SUMMARY

    class M(jf.keras.Model):
        def __init__(self):
            super().__init__(name="m")
            self.d = layers.Dense(3, name="d")

        def call(self, x):
            return self.d(x)

    m = M()
    lines = []
    m.summary(line_length=76, print_fn=lines.append)
    assert "│ d (Dense)                       │ ?                      │   0 (unbuilt) │" in lines[0]
    m(np.ones((2, 4), np.float32))
    lines = []
    m.summary(line_length=76, print_fn=lines.append)
    assert "│ d (Dense)                       │ (2, 3)                 │            15 │" in lines[0]
    assert lines[0].endswith(" Non-trainable params: 0 (0.00 B)")


def test_sequential_builds_on_first_call_without_input(rng):
    model = jf.keras.Sequential(name="late")
    model.add(layers.Dense(3))
    assert not model.built and model.weights == []
    x = rng.normal(size=(2, 4)).astype(np.float32)
    y = model(x)
    assert model.built and y.shape == (2, 3)
    assert model.weights[0].name == f"late/{model.layers[0].name}/kernel:0"
    last = model.layers[-1]
    assert model.pop() is last and model.layers == []


def test_input_shape_argument_and_freezing(rng):
    model = jf.keras.Sequential([layers.Dense(4, input_shape=(3,)), layers.BatchNormalization(), layers.Dense(1)])
    assert model.built and model.layers[0].kernel.shape == (3, 4)  # built from input_shape at once
    assert len(model.trainable_weights) == 6 and len(model.non_trainable_weights) == 2
    model.layers[0].trainable = False
    assert [v.path for v in model.trainable_weights] == [v.path for v in model.weights[2:4] + model.weights[6:]]
    assert len(model.non_trainable_weights) == 4
    model.trainable = False
    assert model.trainable_weights == [] and len(model.non_trainable_weights) == 8
    x = rng.normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_array_equal(model(x).numpy(), model(x).numpy())


def _numpy_sgd_fit(w, x, y, epochs, batch, lr):
    """fit's loop in float64 numpy for Dense(relu) -> Dense: mean softmax cross-entropy, SGD."""
    w = [a.astype(np.float64) for a in w]
    for _ in range(epochs):
        for s in range(0, len(x), batch):
            xb, yb = x[s:s + batch].astype(np.float64), y[s:s + batch]
            pre = xb @ w[0] + w[1]
            h = np.maximum(pre, 0)
            z = h @ w[2] + w[3]
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(yb)), yb] -= 1
            dz = p / len(yb)
            dh = dz @ w[2].T * (pre > 0)
            for a, g in zip(w, [xb.T @ dh, dh.sum(0), h.T @ dz, dz.sum(0)]):
                a -= lr * g
    return w


@pytest.mark.parametrize("jit_compile", [False, True])
def test_sequential_fit_matches_a_numpy_training_loop(rng, jit_compile):
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    model = jf.keras.Sequential([jf.keras.Input((3,)), layers.Dense(8, activation="relu"), layers.Dense(3)])
    model.compile(jf.keras.optimizers.SGD(0.1), jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=jit_compile)
    want = _numpy_sgd_fit(model.get_weights(), x, y, epochs=3, batch=16, lr=0.1)
    model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    for got, w in zip(model.get_weights(), want):
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5)


def test_operators_on_keras_tensors(rng, tmp_path):
    inp = jf.keras.Input((4,))
    h = layers.Dense(4)(inp)
    out = abs(-(2.0 * h + inp) / 4 - h ** 2)[:, 1:3] @ np.ones((2, 1), np.float32)
    model = jf.keras.Model(inp, out)
    assert model.output_shape == (None, 1)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    k, b = [w.numpy().astype(np.float64) for w in model.weights]
    hh = x @ k + b
    want = np.abs(-(2 * hh + x) / 4 - hh ** 2)[:, 1:3] @ np.ones((2, 1))
    np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-5, atol=1e-6)
    model.save(str(tmp_path / "ops.keras"))
    np.testing.assert_allclose(jf.keras.models.load_model(str(tmp_path / "ops.keras"))(x).numpy(), model(x).numpy(),
                               rtol=1e-6)
