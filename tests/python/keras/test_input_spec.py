"""keras.layers.InputSpec: a layer that sets input_spec has every call's input checked, with
Keras 3's ValueError messages (as TF 2.21 prints them, hard-coded), eagerly and traced."""
import numpy as np
import pytest

import jitflow as jf

layers = jf.keras.layers


class _Checked(layers.Layer):
    def __init__(self, spec, **kwargs):
        super().__init__(**kwargs)
        self.input_spec = spec

    def call(self, x):
        return x * 2.0


def test_rank_axes_and_dtype_are_checked():
    layer = _Checked(layers.InputSpec(ndim=2, axes={-1: 3}), name="l")
    np.testing.assert_array_equal(layer(np.ones((2, 3), np.float32)).numpy(), np.full((2, 3), 2.0))
    with pytest.raises(ValueError, match=r"Input 0 with name 'None' of layer 'l' is incompatible with the layer: "
                                         r"expected ndim=2, found ndim=1. Full shape received: \(3,\)"):
        layer(np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"expected axis -1 of input shape to have value 3, but received input with "
                                         r"shape \(2, 4\)"):
        layer(np.ones((2, 4), np.float32))
    deep = _Checked(layers.InputSpec(min_ndim=3), name="m")
    with pytest.raises(ValueError, match=r"expected min_ndim=3, found ndim=2. Full shape received: \(2, 2\)"):
        deep(np.ones((2, 2), np.float32))
    typed = _Checked(layers.InputSpec(dtype="float64"), name="t")
    with pytest.raises(ValueError, match="expected dtype=float64, found dtype=float32"):
        typed(jf.ones([2]))
    f = jf.function(lambda x: layer(x))
    np.testing.assert_array_equal(f(jf.ones([1, 3])).numpy(), [[2.0, 2.0, 2.0]])
    with pytest.raises(ValueError, match="expected ndim=2"):
        f(jf.ones([1, 3, 1]))
    assert repr(layers.InputSpec(ndim=2, axes={-1: 3})) == "InputSpec(ndim=2, axes={-1: 3})"
