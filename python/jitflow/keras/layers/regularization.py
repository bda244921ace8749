"""Keras 3's noise and dropout variants (GaussianNoise, GaussianDropout, AlphaDropout,
SpatialDropout1D/2D/3D: active only in training, drawing from a seed state as Dropout does) and
ActivityRegularization."""
import math

from ...ops import basic_ops as _ops
from ...ops import random_ops as _random
from .. import regularizers
from .conv import _data_format
from .core import Dropout, SeedState
from .layer import Layer


def _check_rate(rate):
    if not 0 <= rate <= 1:
        raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                         f"Received: rate={rate}")
    return rate


class GaussianNoise(Layer):
    """x + N(0, stddev) in training."""

    supports_masking = True

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= stddev <= 1:
            raise ValueError(f"Invalid value received for argument `stddev`. Expected a float value between 0 and 1. "
                             f"Received: stddev={stddev}")
        self.stddev, self.seed = stddev, seed
        self._jf_seed_state = SeedState(seed)

    def call(self, inputs, training=False):
        if training and self.stddev > 0:
            return inputs + _random.stateless_normal(_ops.shape(inputs), self._jf_seed_state.next(),
                                                     stddev=self.stddev, dtype=inputs.dtype)
        return inputs

    def get_config(self):
        config = super().get_config()
        config.update({"stddev": self.stddev, "seed": self.seed})
        return config


class GaussianDropout(Layer):
    """x * N(1, sqrt(rate / (1 - rate))) in training."""

    supports_masking = True

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _check_rate(rate), seed
        self._jf_seed_state = SeedState(seed)

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            stddev = math.sqrt(self.rate / (1.0 - self.rate))
            return inputs * _random.stateless_normal(_ops.shape(inputs), self._jf_seed_state.next(), mean=1.0,
                                                     stddev=stddev, dtype=inputs.dtype)
        return inputs

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "seed": self.seed})
        return config


class AlphaDropout(Layer):
    """Dropout that keeps SELU's mean and variance: dropped units take SELU's negative saturation
    value, then an affine map restores the moments (Keras's formula)."""

    supports_masking = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.noise_shape, self.seed = _check_rate(rate), noise_shape, seed
        self._jf_seed_state = SeedState(seed)

    def call(self, inputs, training=False):
        if not (training and self.rate > 0):
            return inputs
        dyn = _ops.shape(inputs)
        shape = dyn if self.noise_shape is None else [dyn[i] if d is None else d
                                                      for i, d in enumerate(self.noise_shape)]
        alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
        kept = _ops.cast(_random.stateless_uniform(shape, self._jf_seed_state.next(), dtype=inputs.dtype)
                         >= _ops.convert_to_tensor(self.rate, inputs.dtype), inputs.dtype)
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        return a * (inputs * kept + alpha_p * (1 - kept)) + b

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "seed": self.seed, "noise_shape": self.noise_shape})
        return config


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one draw per (example, channel)."""

    rank = 1

    def __init__(self, rate, data_format=None, seed=None, name=None, dtype=None, **kwargs):
        super().__init__(rate, seed=seed, name=name, dtype=dtype, **kwargs)
        self.data_format = _data_format(data_format)

    def call(self, inputs, training=False):
        if self.data_format == "channels_last":
            self.noise_shape = (None, *([1] * self.rank), None)
        else:
            self.noise_shape = (None, None, *([1] * self.rank))
        return super().call(inputs, training=training)

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape")
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


class SpatialDropout1D(_SpatialDropout):
    rank = 1


class SpatialDropout2D(_SpatialDropout):
    rank = 2


class SpatialDropout3D(_SpatialDropout):
    rank = 3


class ActivityRegularization(Layer):
    """The identity, adding l1 * sum|x| + l2 * sum x^2 to the layer's losses."""

    supports_masking = True

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = l1, l2

    def call(self, inputs):
        return inputs

    def get_config(self):
        config = super().get_config()
        config.pop("activity_regularizer", None)
        config.update({"l1": self.l1, "l2": self.l2})
        return config
