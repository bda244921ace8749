"""compile() for models with several outputs, against Keras 3.15 (TF 2.21): the logged keys it
printed for the same models (hard-coded below) and float64 numpy values of each loss and
metric; a Model subclass built from inputs/outputs; Model.from_config of get_config(); a
keras.utils.PyDataset feeding fit/evaluate/predict."""
import numpy as np
import pytest

import jitflow as jf

keras, layers = jf.keras, jf.keras.layers
rng = np.random.default_rng(0)
X = rng.random((8, 3)).astype("float32")
YA = rng.random((8, 1)).astype("float32")
YB = rng.random((8, 2)).astype("float32")
PA = X.astype(np.float64).sum(1, keepdims=True) * 4  # ones kernels, zero biases: every unit is 4 * sum(x)
PB = np.repeat(PA, 2, 1)
MSE_A, MAE_A = ((PA - YA) ** 2).mean(), np.abs(PA - YA).mean()
MSE_B, MAE_B = ((PB - YB) ** 2).mean(), np.abs(PB - YB).mean()


def _model(kind):
    inp = keras.Input((3,), name="x")
    h = layers.Dense(4, kernel_initializer="ones", name="h")(inp)
    a = layers.Dense(1, kernel_initializer="ones", name="a")(h)
    b = layers.Dense(2, kernel_initializer="ones", name="b")(h)
    return keras.Model(inp, {"a": a, "b": b} if kind == "dict" else [a, b])


CASES = [  # (outputs, loss, loss_weights, targets, metrics, Keras 3.15's logs as the numpy values)
    ("dict", {"a": "mse", "b": "mae"}, {"a": 1.0, "b": 0.5}, "dict", {"a": ["mae"], "b": ["mse"]},
     {"a_loss": MSE_A, "a_mae": MAE_A, "b_loss": MAE_B, "b_mse": MSE_B, "loss": MSE_A + 0.5 * MAE_B}),
    ("list", ["mse", "mae"], [1.0, 0.5], "list", [["mae"], ["mse"]],
     {"a_loss": MSE_A, "a_mae": MAE_A, "b_loss": MAE_B, "b_mse": MSE_B, "loss": MSE_A + 0.5 * MAE_B}),
    ("dict", {"a": "mse"}, None, "dict", None, {"loss": MSE_A}),
    ("list", "mse", None, "list", None, {"a_loss": MSE_A, "b_loss": MSE_B, "loss": MSE_A + MSE_B}),
    ("dict", {"a": "mse", "b": "mae"}, None, "dict", {"a": "mae"},
     {"a_loss": MSE_A, "a_mae": MAE_A, "b_loss": MAE_B, "loss": MSE_A + MAE_B}),
    ("dict", ["mse", "mae"], None, "dict", None, {"a_loss": MSE_A, "b_loss": MAE_B, "loss": MSE_A + MAE_B}),
    ("list", {"a": "mse", "b": "mae"}, None, "dict", None, {"a_loss": MSE_A, "b_loss": MAE_B, "loss": MSE_A + MAE_B}),
    ("list", {"a": "mse", "b": "mae"}, None, "list", None, {"a_loss": MSE_A, "b_loss": MAE_B, "loss": MSE_A + MAE_B}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_losses_weights_and_metrics_per_output(case):
    kind, loss, weights, targets, metrics, want = CASES[case]
    model = _model(kind)
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss=loss, loss_weights=weights, metrics=metrics)
    y = {"a": YA, "b": YB} if targets == "dict" else [YA, YB]
    history = model.fit(X, y, batch_size=8, epochs=1, verbose=0).history
    assert sorted(history) == sorted(want)
    for key, value in want.items():
        np.testing.assert_allclose(history[key][0], value, rtol=1e-5, err_msg=key)
    logs = model.evaluate(X, y, verbose=0, return_dict=True)
    for key, value in want.items():
        np.testing.assert_allclose(logs[key], value, rtol=1e-5, err_msg=key)


def test_training_moves_each_output_by_its_weighted_loss():
    model = _model("list")
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss=["mse", "mse"], loss_weights=[1.0, 0.0])
    before = model.get_layer("b").kernel.numpy().copy()
    model.fit(X, [YA, YB], batch_size=8, epochs=2, verbose=0)
    np.testing.assert_array_equal(model.get_layer("b").kernel.numpy(), before)  # weight 0: no gradient
    assert not np.allclose(model.get_layer("a").kernel.numpy(), 1.0)


def test_keras_errors():
    model = _model("list")
    with pytest.raises(ValueError, match="must match the number of losses, got 1 losses and 2 weights"):
        model.compile(loss="mse", loss_weights=[2.0, 1.0])
        model.fit(X, [YA, YB], verbose=0)
    with pytest.raises(ValueError, match="Invalid `metrics`"):
        model.compile(loss="mse", metrics=["mae"])
        model.fit(X, [YA, YB], verbose=0)
    with pytest.raises(ValueError, match="does not correspond to any model output"):
        model.compile(loss={"c": "mse"})
        model.fit(X, [YA, YB], verbose=0)


def test_model_subclass_built_from_inputs_and_outputs():
    steps = []

    class CustomModel(keras.Model):
        def train_step(self, data):
            steps.append(1)
            x, y = data
            with jf.GradientTape() as tape:
                loss = self.compute_loss(y=y, y_pred=self(x, training=True))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": loss}

    inputs = keras.Input(shape=(3,))
    model = CustomModel(inputs, layers.Dense(1, kernel_initializer="zeros")(inputs))
    assert isinstance(model, CustomModel) and type(model).__name__ == "CustomModel"
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(X, YA, batch_size=8, epochs=1, verbose=0).history
    np.testing.assert_allclose(history["loss"][0], (YA.astype(np.float64) ** 2).mean(), rtol=1e-6)
    assert steps == [1]  # traced once, the user's step


def test_model_from_config_of_get_config():
    @keras.saving.register_keras_serializable(package="test_multi_output")
    class Scale(layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def get_config(self):
            return {"factor": self.factor}

    inputs = keras.Input(shape=(4, 4, 2))
    x = layers.Conv2D(3, 3, kernel_initializer="ones")(inputs)
    out = Scale(3.0)(layers.GlobalAveragePooling2D()(x))
    model = keras.Model(inputs, out)
    rebuilt = keras.Model.from_config(model.get_config(), custom_objects={"Scale": Scale})
    assert rebuilt.output_shape == (None, 3) and len(rebuilt.layers) == len(model.layers)
    rebuilt.set_weights(model.get_weights())
    img = rng.random((2, 4, 4, 2)).astype("float32")
    windows = np.array([[img[n, i:i + 3, j:j + 3].astype(np.float64).sum() for i in range(2) for j in range(2)]
                        for n in range(2)])  # ones 3x3x2 kernels, zero bias, valid padding
    want = np.repeat(windows.mean(1, keepdims=True), 3, 1) * 3.0
    np.testing.assert_allclose(rebuilt(img).numpy(), want, rtol=1e-5)


def test_function_input_signature_with_dicts():
    sig = [{"a": jf.TensorSpec([None], jf.float32), "b": jf.TensorSpec([], jf.int32)}]
    f = jf.function(lambda d: d["a"] * jf.cast(d["b"], jf.float32), input_signature=sig)
    np.testing.assert_array_equal(f({"a": jf.constant([1.0, 2.0]), "b": jf.constant(3)}).numpy(), [3.0, 6.0])


def test_saved_and_loaded_with_per_output_compile(tmp_path):
    model = _model("dict")
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss={"a": "mse", "b": "mae"}, loss_weights={"a": 1.0, "b": 0.5},
                  metrics={"a": ["mae"]})
    model.fit(X, {"a": YA, "b": YB}, batch_size=8, verbose=0)
    model.save(str(tmp_path / "m.keras"))
    loaded = keras.models.load_model(str(tmp_path / "m.keras"))
    logs = loaded.evaluate(X, {"a": YA, "b": YB}, verbose=0, return_dict=True)
    assert sorted(logs) == ["a_loss", "a_mae", "b_loss", "loss"]
    np.testing.assert_allclose(logs["loss"], MSE_A + 0.5 * MAE_B, rtol=1e-5)


def test_py_dataset_feeds_fit_evaluate_predict():
    class Batches(keras.utils.Sequence):
        def __init__(self, x, y, batch_size, **kwargs):
            super().__init__(**kwargs)
            self.x, self.y, self.batch_size, self.seen, self.epochs_ended = x, y, batch_size, [], 0

        def __len__(self):
            return (len(self.x) + self.batch_size - 1) // self.batch_size

        def __getitem__(self, index):
            self.seen.append(index)
            part = slice(index * self.batch_size, (index + 1) * self.batch_size)
            return (self.x[part], self.y[part]) if self.y is not None else self.x[part]

        def on_epoch_end(self):
            self.epochs_ended += 1

    assert keras.utils.Sequence is keras.utils.PyDataset
    inputs = keras.Input((3,))
    model = keras.Model(inputs, layers.Dense(1, kernel_initializer="zeros")(inputs))
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    data = Batches(X, YA, batch_size=3, workers=2)
    assert data.workers == 2 and len(data) == 3
    history = model.fit(data, epochs=2, verbose=0, shuffle=False)
    assert data.seen == [0, 1, 2, 0, 1, 2] and data.epochs_ended == 2
    np.testing.assert_allclose(history.history["loss"][0], (YA.astype(np.float64) ** 2).mean(), rtol=1e-6)
    shuffled = Batches(X, YA, batch_size=2)
    model.fit(shuffled, epochs=1, verbose=0)
    assert sorted(shuffled.seen) == [0, 1, 2, 3]
    np.testing.assert_allclose(model.evaluate(Batches(X, YA, 4), verbose=0), (YA.astype(np.float64) ** 2).mean(),
                               rtol=1e-6)
    assert model.predict(Batches(X, None, 5), verbose=0).shape == (8, 1)
