"""jf.keras.Sequential: a Model that calls its layers in order. With an input shape known (an
Input first, or input_shape= on the first layer) it is built at once, symbolically, so summary()
shows every output shape; otherwise it builds on its first call."""
from ...core.name_scope import current_module_scope, name_scope
from ..layers.input_layer import InputLayer
from ..layers.keras_tensor import KerasTensor
from ..layers.layer import Layer, unique_name
from .io import serialize_layer
from .model import Model


class Sequential(Model):
    def __init__(self, layers=None, trainable=True, name=None):
        Model.__init__(self, trainable=trainable, name=name or unique_name("sequential"))
        # The InputLayer is kept apart, so checkpoint keys (_layers/0/kernel) do not depend on
        # whether the model was given an Input.
        self._jf_input_layer = None
        self._layers = []
        for layer in layers or []:
            self.add(layer, rebuild=False)
        self._jf_symbolic_build()

    def add(self, layer, rebuild=True):
        if isinstance(layer, KerasTensor):
            layer = layer._keras_history[0]
        if not isinstance(layer, Layer):
            raise ValueError(  # noqa: TRY004  (Keras raises ValueError)
                f"Only instances of `keras.Layer` can be added to a Sequential model. Received: "
                             f"{layer} (of type {type(layer)})")
        if isinstance(layer, InputLayer):
            if self._layers or self._jf_input_layer is not None:
                raise ValueError(f"Sequential model '{self.name}' has already been configured to use an input "
                                 "layer: an InputLayer can only be its first layer.")
            self._jf_input_layer = layer
            if rebuild:
                self._jf_symbolic_build()
            return
        if any(existing.name == layer.name for existing in self._layers):
            raise ValueError(f"All layers added to a Sequential model should have unique names. Name '{layer.name}' "
                             "is already the name of a layer in this model. Update the `name` argument to pass a "
                             "unique name.")
        self._layers.append(layer)
        self.built = False
        if rebuild:
            self._jf_symbolic_build()

    def pop(self, rebuild=True):
        layer = self._layers.pop()
        self.built = False
        if rebuild:
            self._jf_symbolic_build()
        return layer

    @property
    def layers(self):
        return list(self._layers)

    def _jf_input_batch_shape(self):
        if self._jf_input_layer is not None:
            return self._jf_input_layer.batch_shape, self._jf_input_layer._jf_dtype
        if self._layers and self._layers[0]._jf_batch_input_shape is not None:
            return self._layers[0]._jf_batch_input_shape, self._layers[0]._jf_dtype
        return None, None

    def _jf_symbolic_build(self):
        """Runs the layers on a KerasTensor of the input shape (building them under this model's
        name scope); no-op while no input shape is known."""
        shape, dtype = self._jf_input_batch_shape()
        if shape is None or not self.layers:
            return
        if self._jf_input_layer is None:
            self._jf_input_layer = InputLayer(batch_shape=shape, dtype=dtype)
        x = self._jf_input_layer.output
        scope = current_module_scope() + self.name
        if self._jf_path is None:
            self._jf_path = scope
        with name_scope(scope + "/"):
            for layer in self.layers:
                x = layer(x)
        self._jf_build_config = {"input_shape": shape}
        self.built = True

    def build(self, input_shape=None):
        if input_shape is None:
            self.built = True
            return
        if self._jf_input_layer is None:
            self._jf_input_layer = InputLayer(batch_shape=tuple(input_shape))
        x = self._jf_input_layer.output
        for layer in self.layers:
            x = layer(x)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        x = inputs
        for layer in self.layers:
            x = layer(x)
        return x

    @property
    def input_shape(self):
        return self._jf_input_batch_shape()[0]

    def get_config(self):
        layer_configs = [serialize_layer(layer) for layer in
                         ([self._jf_input_layer] if self._jf_input_layer is not None else []) + self._layers]
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype, "layers": layer_configs}
        if self._jf_build_config is not None and "input_shape" in self._jf_build_config:
            config["build_input_shape"] = self._jf_build_config["input_shape"]
        return config
