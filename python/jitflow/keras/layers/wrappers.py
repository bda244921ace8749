"""Keras 3's layer wrappers: Wrapper (the base of a layer around another), Bidirectional (a
recurrent layer run forwards and a copy run backwards, outputs merged), TimeDistributed (a
layer applied to every step of a sequence) and Pipeline (layers applied in turn)."""
import inspect

from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from . import (
    attention,
    augmentation,
    conv,
    conv_lstm,
    core,
    dot_attention,
    extra,
    functional_layers,
    lookup,
    merging,
    normalization,
    preprocessing,
    regularization,
    reshaping,
    rnn,
    text,
)
from .layer import Layer, _input_mask

_MODULES = (core, conv, extra, normalization, rnn, attention, augmentation, conv_lstm, dot_attention,
            functional_layers, lookup, merging, preprocessing, regularization, reshaping, text)


def _layer_from_config(config):
    """A built-in layer from its serialized form (a wrapped layer's config)."""
    name = config["class_name"]
    for module in _MODULES:
        cls = getattr(module, name, None)
        if isinstance(cls, type) and issubclass(cls, Layer):
            return cls.from_config(dict(config["config"]))
    raise TypeError(f"Could not locate class '{name}' for a wrapped layer (jitflow's wrappers take its built-in "
                    f"layers). Full object config: {config}")


def _serialize(layer):
    return {"module": "keras.layers", "class_name": type(layer).__name__, "config": layer.get_config(),
            "registered_name": None}


class Bidirectional(Layer):
    """layer over the sequence forwards and a copy of it backwards (go_backwards flipped), the
    backward outputs re-reversed in time and merged with the forward ones (concat, sum, mul,
    ave, or None for a list)."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        super().__init__(**kwargs)
        if merge_mode not in ("concat", "sum", "mul", "ave", None):
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should be one of "
                             "{'sum', 'mul', 'ave', 'concat', None}")
        if not isinstance(layer, rnn.RNN):
            raise ValueError(  # noqa: TRY004  (Keras raises ValueError)
                f"Please initialize `Bidirectional` layer with a `keras.layers.RNN` instance. "
                             f"Received: {layer}")
        config = layer.get_config()
        config["name"] = "forward_" + layer.name
        self.forward_layer = type(layer).from_config(config)
        if backward_layer is None:
            config = layer.get_config()
            config["name"] = "backward_" + layer.name
            config["go_backwards"] = not config.get("go_backwards", False)
            backward_layer = type(layer).from_config(config)
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        # Keras zeroes the outputs of masked steps in both directions when returning sequences.
        self.forward_layer.zero_output_for_mask = self.return_sequences
        self.backward_layer.zero_output_for_mask = self.return_sequences
        self._jf_initial_weights = weights

    def build(self, sequences_shape, initial_state_shape=None):
        self.forward_layer.build_from_config({"input_shape": tuple(sequences_shape)})
        self.backward_layer.build_from_config({"input_shape": tuple(sequences_shape)})
        if self._jf_initial_weights is not None:
            self.set_weights(self._jf_initial_weights)

    def call(self, sequences, initial_state=None, mask=None, training=None):
        kwargs = {"training": training}
        if mask is not None:
            kwargs["mask"] = mask
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd = self.forward_layer(sequences, initial_state=initial_state[:half], **kwargs)
            bwd = self.backward_layer(sequences, initial_state=initial_state[half:], **kwargs)
        else:
            fwd, bwd = self.forward_layer(sequences, **kwargs), self.backward_layer(sequences, **kwargs)
        states = []
        if self.return_state:
            states = list(fwd[1:]) + list(bwd[1:])
            fwd, bwd = fwd[0], bwd[0]
        if self.return_sequences:
            bwd = _array.reverse(bwd, [1])
        if self.merge_mode == "concat":
            out = _ops.concat([fwd, bwd], axis=-1)
        elif self.merge_mode == "sum":
            out = fwd + bwd
        elif self.merge_mode == "ave":
            out = (fwd + bwd) / _ops.convert_to_tensor(2.0, fwd.dtype)
        elif self.merge_mode == "mul":
            out = fwd * bwd
        else:
            out = [fwd, bwd]
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        outs = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            n = len(self.forward_layer.cell.state_size) if isinstance(self.forward_layer.cell.state_size,
                                                                       (list, tuple)) else 1
            return outs + [None] * (2 * n)
        return outs if self.merge_mode is None else out

    def get_config(self):
        config = super().get_config()
        config.update({"merge_mode": self.merge_mode, "layer": _serialize(self.forward_layer),
                       "backward_layer": _serialize(self.backward_layer)})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        forward = _layer_from_config(config.pop("layer"))
        backward = config.pop("backward_layer", None)
        if backward is not None:
            backward = _layer_from_config(backward)
        # The forward config is named forward_<name>; the wrapper adds the prefix again.
        name = forward.name.removeprefix("forward_")
        object.__setattr__(forward, "_name", name)
        return cls(forward, backward_layer=backward, **config)


class TimeDistributed(Layer):
    """layer applied to each step of [batch, steps, ...] inputs (one call on the batch and steps
    folded together); the mask passes through."""

    supports_masking = True

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise ValueError(  # noqa: TRY004  (Keras raises ValueError)
                f"Please initialize `TimeDistributed` layer with a `keras.layers.Layer` instance. "
                             f"Received: {layer}")
        self.layer = layer

    def build(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError(f"`TimeDistributed` Layer should be passed an `input_shape` with at least 3 dimensions, "
                             f"received: {tuple(input_shape)}")
        self.layer.build_from_config({"input_shape": (input_shape[0], *input_shape[2:])})

    def call(self, inputs, training=None, mask=None):
        dyn = _ops.shape(inputs)
        batch = inputs.shape[0] if inputs.shape[0] is not None else dyn[0]
        steps = inputs.shape[1] if inputs.shape[1] is not None else dyn[1]
        folded = _ops.reshape(inputs, [-1, *[d if d is not None else dyn[i + 2]
                                             for i, d in enumerate(inputs.shape[2:])]])
        y = self.layer(folded, training=training)
        out_dyn = _ops.shape(y)
        out = _ops.reshape(y, [batch, steps, *[d if d is not None else out_dyn[i + 1]
                                               for i, d in enumerate(y.shape[1:])]])
        return out

    def get_config(self):
        config = super().get_config()
        config["layer"] = _serialize(self.layer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(_layer_from_config(config.pop("layer")), **config)



class Wrapper(Layer):
    """The base of a layer that wraps another: `self.layer`, built with the wrapper, its config
    under "layer"."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(  # noqa: TRY004  (Keras raises ValueError)
                f"Layer {layer} supplied to Wrapper isn't a supported layer type. Please ensure wrapped layer is a "
                "valid Keras layer.")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape=None):
        if not self.layer.built:
            self.layer.build(input_shape)
        self.built = True

    def call(self, inputs, *args, **kwargs):
        return self.layer(inputs, *args, **kwargs)

    def get_config(self):
        return {**super().get_config(), "layer": _serialize(self.layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(_layer_from_config(config.pop("layer")), **config)


def _takes(layer, name):
    try:
        return name in inspect.signature(layer.call).parameters
    except (TypeError, ValueError):
        return False


class Pipeline(Layer):
    """Layers applied in turn (a preprocessing pipeline that also works in Dataset.map); each
    gets `training` and `mask` when its call takes them."""

    def __init__(self, layers, name=None):
        super().__init__(name=name)
        self._pipeline_layers = list(layers)

    @property
    def layers(self):
        return self._pipeline_layers

    def call(self, inputs, training=True, mask=None):
        for layer in self._pipeline_layers:
            kwargs = {}
            if mask is not None and _takes(layer, "mask"):
                kwargs["mask"] = mask
            if training is not None and _takes(layer, "training"):
                kwargs["training"] = training
            inputs = layer(inputs, **kwargs)
            mask = _input_mask(inputs)
        return inputs

    def get_config(self):
        return {"name": self.name, "layers": [_serialize(layer) for layer in self._pipeline_layers]}

    @classmethod
    def from_config(cls, config):
        return cls([_layer_from_config(c) for c in config["layers"]], name=config.get("name"))
