"""More of Keras 3's weightless layers: global pooling over the spatial or time axes, and the
activation layers ReLU, LeakyReLU and Softmax (with Keras's masked softmax)."""
from ...core import dtypes as _dt
from ...ops import basic_ops as _ops
from ...ops import nn_ops as _nn
from .. import activations, constraints, initializers, regularizers
from ..backend_config import image_data_format
from .core import _serialize_initializer
from .layer import Layer


class _GlobalPooling(Layer):
    _jf_rank = 1  # spatial dims pooled

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or image_data_format()
        if self.data_format not in ("channels_last", "channels_first"):
            raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                             f"Received: data_format={data_format}")
        self.keepdims = keepdims

    def _axes(self):
        first = 1 if self.data_format == "channels_last" else 2
        return list(range(first, first + self._jf_rank))

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "keepdims": self.keepdims})
        return config


class _GlobalAverage(_GlobalPooling):
    def call(self, inputs):
        return _ops.reduce_mean(inputs, axis=self._axes(), keepdims=self.keepdims)


class _GlobalMax(_GlobalPooling):
    def call(self, inputs):
        return _ops.reduce_max(inputs, axis=self._axes(), keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalAverage):
    """The mean over the time axis of [batch, steps, features]; with a mask [batch, steps],
    over the kept steps (the mask is consumed)."""

    supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        axis = 1 if self.data_format == "channels_last" else 2
        m = _ops.expand_dims(_ops.cast(mask, inputs.dtype), 2 if self.data_format == "channels_last" else 1)
        return (_ops.reduce_sum(inputs * m, axis=axis, keepdims=self.keepdims)
                / _ops.reduce_sum(m, axis=axis, keepdims=self.keepdims))

    def compute_mask(self, inputs, mask=None):
        return None


class GlobalAveragePooling2D(_GlobalAverage):
    """The mean over height and width."""

    _jf_rank = 2


class GlobalMaxPooling1D(_GlobalMax):
    """The maximum over the time axis."""


class GlobalMaxPooling2D(_GlobalMax):
    """The maximum over height and width."""

    _jf_rank = 2


class GlobalAveragePooling3D(_GlobalAverage):
    """The mean over depth, height and width."""

    _jf_rank = 3


class GlobalMaxPooling3D(_GlobalMax):
    """The maximum over depth, height and width."""

    _jf_rank = 3


GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D


class ReLU(Layer):
    """x for x >= threshold, negative_slope * (x - threshold) below it, capped at max_value."""

    supports_masking = True

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError(f"max_value of a ReLU layer cannot be a negative value. Received: {max_value}")
        if negative_slope is None or negative_slope < 0:
            raise ValueError(f"negative_slope of a ReLU layer cannot be a negative value. Received: {negative_slope}")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def call(self, inputs):
        # Python floats enter in the input's dtype (a float64 input keeps slope 0.1 exact).
        dt = inputs.dtype
        t = _ops.convert_to_tensor(self.threshold, dt)
        above = inputs > t
        out = _ops.where(above, inputs, _ops.zeros([], dt))
        if self.negative_slope:
            out = out + _ops.where(above, _ops.zeros([], dt), _ops.convert_to_tensor(self.negative_slope, dt) * (inputs - t))
        if self.max_value is not None:
            out = _ops.minimum(out, _ops.convert_to_tensor(self.max_value, dt))
        return out

    def get_config(self):
        config = super().get_config()
        config.update({"max_value": self.max_value, "negative_slope": self.negative_slope,
                       "threshold": self.threshold})
        return config


class LeakyReLU(Layer):
    """x for x >= 0, negative_slope * x below (Keras's default slope 0.3)."""

    supports_masking = True

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        if negative_slope is None or negative_slope < 0:
            raise ValueError(f"The negative_slope value of a Leaky ReLU layer cannot be None or negative value. "
                             f"Expected a float. Received: negative_slope={negative_slope}")
        self.negative_slope = negative_slope

    def call(self, inputs):
        return activations.leaky_relu(inputs, negative_slope=self.negative_slope)

    def get_config(self):
        config = super().get_config()
        config["negative_slope"] = self.negative_slope
        return config


class Softmax(Layer):
    """softmax over `axis`; with a mask, masked entries get -1e9 before and 0 after (Keras)."""

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs, mask=None):
        if mask is None:
            return _nn.softmax(inputs, axis=self.axis)
        mask = _ops.convert_to_tensor(mask)
        if mask.dtype != _dt.bool:
            mask = _ops.greater(mask, _ops.convert_to_tensor(0.5, mask.dtype))
        mask = _ops.logical_and(mask, _ops.ones_like(inputs, dtype=_dt.bool))
        masked = _ops.where(mask, inputs, _ops.convert_to_tensor(-1e9, inputs.dtype))
        return _ops.where(mask, _nn.softmax(masked, axis=self.axis), _ops.zeros([], inputs.dtype))

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class ELU(Layer):
    """x for x > 0, alpha * (exp(x) - 1) below."""

    supports_masking = True

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = alpha

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)

    def get_config(self):
        config = super().get_config()
        config["alpha"] = self.alpha
        return config


class PReLU(Layer):
    """x for x >= 0, alpha * x below, with alpha a weight per element of the non-batch axes
    (shared, size 1, along shared_axes)."""

    supports_masking = True

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        else:
            self.shared_axes = list(shared_axes) if isinstance(shared_axes, (list, tuple)) else [shared_axes]

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for axis in self.shared_axes or []:
            shape[axis - 1] = 1
        if any(d is None for d in shape):
            raise ValueError(f"PReLU needs the non-batch dims that are not shared to be known. Received input "
                             f"shape {tuple(input_shape)} with shared_axes={self.shared_axes}")
        self.alpha = self.add_weight(shape=shape, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer, constraint=self.alpha_constraint, name="alpha")
        self.built = True

    def call(self, inputs):
        return _ops.relu(inputs) - self.alpha * _ops.relu(-inputs)

    def get_config(self):
        config = super().get_config()
        config.update({"alpha_initializer": _serialize_initializer(self.alpha_initializer),
                       "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                       "alpha_constraint": constraints.serialize(self.alpha_constraint),
                       "shared_axes": self.shared_axes})
        return config
