"""keras.layers.Pipeline (layers in turn, training passed to those that take it, in a
Dataset.map too) and keras.layers.Wrapper (the base of a layer around another), against numpy."""
import numpy as np
import pytest

import jitflow as jf

layers = jf.keras.layers


def test_pipeline_applies_layers_in_turn():
    pipe = layers.Pipeline([layers.Rescaling(0.5), layers.Dropout(0.5, seed=1), layers.Rescaling(1.0, offset=1.0)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(pipe(x, training=False).numpy(), x * 0.5 + 1.0)
    trained = pipe(x, training=True).numpy()  # dropout active: kept values scaled by 2, the others 0
    assert set(np.round(trained - 1.0, 5).ravel().tolist()) <= set((x.ravel()).tolist()) | {0.0}
    assert [type(layer).__name__ for layer in pipe.layers] == ["Rescaling", "Dropout", "Rescaling"]
    again = layers.Pipeline.from_config(pipe.get_config())
    np.testing.assert_allclose(again(x, training=False).numpy(), x * 0.5 + 1.0)
    ds = jf.data.Dataset.from_tensor_slices(x).map(lambda v: pipe(v, training=False))
    np.testing.assert_allclose(np.stack(list(ds.as_numpy_iterator())), x * 0.5 + 1.0)


class _Doubled(layers.Wrapper):
    def call(self, inputs):
        return 2.0 * self.layer(inputs)


def test_wrapper_base():
    dense = layers.Dense(2, kernel_initializer="ones", bias_initializer="zeros")
    wrapped = _Doubled(dense)
    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(wrapped(x).numpy(), np.full((3, 2), 8.0))
    assert wrapped.layer is dense and len(wrapped.trainable_weights) == 2
    assert wrapped.get_config()["layer"]["class_name"] == "Dense"
    with pytest.raises(ValueError, match="isn't a supported layer type"):
        layers.Wrapper(object())
