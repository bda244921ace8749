"""jf.keras saving: save_weights/load_weights (jitflow's checkpoint format) and model.save /
load_model (.keras: the architecture as JSON plus the weights) round trips for Sequential,
functional and subclassed models, registered custom layers, and the refusal of a class that is
neither built in nor registered."""
import json
import zipfile

import numpy as np
import pytest

import jitflow as jf

layers = jf.keras.layers


def _mlp():
    return jf.keras.Sequential([jf.keras.Input((4,)), layers.Dense(8, activation="tanh"),
                                layers.BatchNormalization(), layers.Dense(2)])


def test_save_and_load_weights_round_trip(tmp_path, rng):
    model = _mlp()
    x = rng.normal(size=(5, 4)).astype(np.float32)
    model(x, training=True)  # moves the BatchNorm statistics away from their initial values
    want = model(x).numpy()
    path = model.save_weights(str(tmp_path / "w"))
    assert path.endswith(".safetensors")
    fresh = _mlp()
    assert not np.allclose(fresh(x).numpy(), want)
    fresh.load_weights(str(tmp_path / "w"))
    np.testing.assert_array_equal(fresh(x).numpy(), want)
    for a, b in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # a model not built yet takes the values when its layers are built
    late = jf.keras.Sequential([layers.Dense(8, activation="tanh"), layers.BatchNormalization(), layers.Dense(2)])
    late.load_weights(str(tmp_path / "w"))
    np.testing.assert_array_equal(late(x).numpy(), want)
    # another architecture is refused
    other = jf.keras.Sequential([jf.keras.Input((4,)), layers.Dense(3)])
    with pytest.raises(Exception, match="shape|match"):
        other.load_weights(str(tmp_path / "w"))


def test_keras_archive_round_trip_sequential_and_functional(tmp_path, rng):
    x = rng.normal(size=(3, 4)).astype(np.float32)
    seq = _mlp()
    seq.save(str(tmp_path / "seq.keras"))
    with zipfile.ZipFile(tmp_path / "seq.keras") as z:
        assert sorted(z.namelist()) == ["config.json", "metadata.json", "model.weights.safetensors"]
        config = json.loads(z.read("config.json"))
    assert config["class_name"] == "Sequential" and config["module"] == "keras"
    assert [c["class_name"] for c in config["config"]["layers"]] == ["InputLayer", "Dense", "BatchNormalization",
                                                                     "Dense"]
    dense = config["config"]["layers"][1]
    assert dense["config"]["activation"] == "tanh" and dense["build_config"] == {"input_shape": [None, 4]}
    loaded = jf.keras.models.load_model(str(tmp_path / "seq.keras"))
    assert isinstance(loaded, jf.keras.Sequential)
    np.testing.assert_array_equal(loaded(x).numpy(), seq(x).numpy())

    inp = jf.keras.Input((4,), name="features")
    h = layers.Dense(6, activation="relu")(inp)
    out = layers.Concatenate()([layers.Dense(2)(h), layers.LayerNormalization()(h)])
    fn = jf.keras.Model(inp, out, name="fn")
    fn.save(str(tmp_path / "fn.keras"))
    back = jf.keras.models.load_model(str(tmp_path / "fn.keras"))
    assert back.name == "fn" and [layer.name for layer in back.layers] == [layer.name for layer in fn.layers]
    np.testing.assert_array_equal(back(x).numpy(), fn(x).numpy())
    with pytest.raises(ValueError, match="`.keras` extension"):
        fn.save(str(tmp_path / "fn.h5"))


@jf.keras.saving.register_keras_serializable(package="tests")
class Scale(layers.Layer):
    """A custom layer with its own weight and config."""

    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal", name="w")

    def call(self, x):
        return x * self.w * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class Unregistered(layers.Layer):
    def call(self, x):
        return x * 2


def test_custom_layers_registered_or_given_and_unregistered_refused(tmp_path, rng):
    x = rng.normal(size=(2, 3)).astype(np.float32)
    model = jf.keras.Sequential([jf.keras.Input((3,)), Scale(3.0), layers.Dense(2)])
    model.save(str(tmp_path / "custom.keras"))
    cfg = json.loads(zipfile.ZipFile(tmp_path / "custom.keras").read("config.json"))
    assert cfg["config"]["layers"][1]["registered_name"] == "tests>Scale"
    back = jf.keras.models.load_model(str(tmp_path / "custom.keras"))
    assert isinstance(back.layers[0], Scale) and back.layers[0].factor == 3.0
    np.testing.assert_array_equal(back(x).numpy(), model(x).numpy())

    bad = jf.keras.Sequential([jf.keras.Input((3,)), Unregistered()])
    bad.save(str(tmp_path / "bad.keras"))
    with pytest.raises(TypeError, match="Could not locate class 'Unregistered'"):
        jf.keras.models.load_model(str(tmp_path / "bad.keras"))
    again = jf.keras.models.load_model(str(tmp_path / "bad.keras"), custom_objects={"Unregistered": Unregistered})
    np.testing.assert_array_equal(again(x).numpy(), 2 * x)


def test_subclassed_model_archive(tmp_path, rng):
    @jf.keras.saving.register_keras_serializable(package="tests")
    class Net(jf.keras.Model):
        def __init__(self, units=3, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.d1 = layers.Dense(units, activation="relu")
            self.d2 = layers.Dense(1)

        def call(self, x):
            return self.d2(self.d1(x))

    net = Net(units=5)
    x = rng.normal(size=(4, 2)).astype(np.float32)
    want = net(x).numpy()
    net.save(str(tmp_path / "net.keras"))
    back = jf.keras.saving.load_model(str(tmp_path / "net.keras"))
    assert type(back) is Net and back.units == 5 and back.built
    np.testing.assert_array_equal(back(x).numpy(), want)


def test_every_layer_survives_a_keras_archive(tmp_path, rng):
    """A functional model using each jf.keras layer: the loaded model has the same configs,
    weights and outputs."""
    ids = jf.keras.Input((6,), dtype="int32", name="ids")
    e = layers.Embedding(20, 8)(ids)
    seq = layers.LSTM(8, return_sequences=True)(e)
    seq = layers.LayerNormalization()(layers.Add()([seq, layers.MultiHeadAttention(2, 4)(seq, e)]))
    g = layers.GRU(5)(layers.Dropout(0.2)(seq))
    img = jf.keras.Input((6, 6, 2), name="img")
    c = layers.MaxPooling2D()(layers.Conv2D(3, 3, padding="same", activation="relu")(img))
    c = layers.Flatten()(layers.AveragePooling2D(pool_size=1)(c))
    r = layers.Reshape((3, 9))(c)
    cell_seq = layers.RNN(layers.GRUCell(4))(r)
    out = layers.Dense(2, activation="softmax")(layers.Concatenate()([g, layers.Activation("tanh")(cell_seq),
                                                                        layers.BatchNormalization()(c)]))
    model = jf.keras.Model([ids, img], out, name="zoo")
    x = [rng.integers(0, 20, size=(3, 6)).astype(np.int32), rng.normal(size=(3, 6, 6, 2)).astype(np.float32)]
    want = model(x).numpy()
    model.save(str(tmp_path / "zoo.keras"))
    back = jf.keras.models.load_model(str(tmp_path / "zoo.keras"))
    assert [type(a).__name__ for a in back.layers] == [type(a).__name__ for a in model.layers]
    for a, b in zip(model.layers, back.layers):
        assert a.get_config() == b.get_config(), a.name
    assert [v.path for v in back.weights] == [v.path for v in model.weights]
    for a, b in zip(model.weights, back.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(back(x).numpy(), want, rtol=1e-6, atol=1e-7)


def test_to_json_and_model_from_json(rng):
    model = _mlp()
    text = model.to_json()
    back = jf.keras.models.model_from_json(text)
    assert isinstance(back, jf.keras.Sequential) and back.to_json() == text.replace(model.name, back.name)
    assert [v.shape for v in back.weights] == [v.shape for v in model.weights]
    x = rng.normal(size=(2, 4)).astype(np.float32)
    assert back(x).shape == (2, 2)


def test_compiled_model_archive_resumes_training(tmp_path, rng):
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = rng.integers(0, 2, size=32)
    model = jf.keras.Sequential([jf.keras.Input((4,)), layers.Dense(8, activation="relu"), layers.Dense(2)])
    model.compile(jf.keras.optimizers.Adam(0.01), jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    model.save(str(tmp_path / "c.keras"))
    cfg = json.loads(zipfile.ZipFile(tmp_path / "c.keras").read("config.json"))["compile_config"]
    assert cfg["optimizer"]["class_name"] == "Adam" and cfg["metrics"] == ["accuracy"]
    back = jf.keras.models.load_model(str(tmp_path / "c.keras"))
    assert back.compiled and type(back.optimizer) is type(model.optimizer)
    assert int(back.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy()) == 8
    # one more epoch from the restored moments gives the original model's weights
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    back.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), back.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    plain = jf.keras.models.load_model(str(tmp_path / "c.keras"), compile=False)
    assert not plain.compiled
    np.testing.assert_array_equal(plain(x).numpy(), jf.keras.models.load_model(str(tmp_path / "c.keras"))(x).numpy())


def test_model_export_writes_a_saved_model(tmp_path, rng):
    """Model.export: a SavedModel whose `serve` runs the model (inference mode) on any batch size."""
    layers = jf.keras.layers
    model = jf.keras.Sequential([layers.Input((3,)), layers.Dense(4, activation="relu"), layers.Dropout(0.5),
                                 layers.Dense(2)])
    x = rng.normal(size=(5, 3)).astype(np.float32)
    model.export(str(tmp_path / "seq"), verbose=False)
    loaded = jf.saved_model.load(str(tmp_path / "seq"))
    np.testing.assert_allclose(loaded.serve(jf.constant(x)).numpy(), model(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(loaded.serve(jf.constant(x[:2])).numpy(), model(x[:2]).numpy(), rtol=1e-6)
    assert "serving_default" in loaded.signatures
    a, b = jf.keras.Input((4,)), jf.keras.Input((2,))
    two = jf.keras.Model([a, b], layers.Dense(1)(layers.Concatenate()([a, b])))
    two.export(str(tmp_path / "two"), verbose=False)
    u, v = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(3, 2)).astype(np.float32)
    np.testing.assert_allclose(jf.saved_model.load(str(tmp_path / "two")).serve(jf.constant(u), jf.constant(v)).numpy(),
                               two([u, v]).numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="tf_saved_model"):
        model.export(str(tmp_path / "x"), format="onnx")
