"""Keras 3's basic layers on jitflow's ops: Dense, Embedding, Activation, Dropout, Flatten,
Reshape, and the merging layers Concatenate and Add. Constructor arguments, weight names and
shapes, defaults and configs are Keras's."""
import math

import numpy as np

from ... import _C
from ...core import dtypes as _dt
from ...core.export import export
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops import random_ops as _random
from ...ops import stats_ops as _stats
from ...ops.variables import Variable
from .. import activations, constraints, initializers, regularizers
from ..backend_config import image_data_format
from .layer import Layer


def _serialize_initializer(init):
    return init if isinstance(init, str) else initializers.serialize(init)


def seeded(identifier, seed):
    """A default initializer made with jitflow's `seed=` extension of the jf.nn aliases (TF's
    layers take no seed; their initializers do)."""
    if seed is None or not isinstance(identifier, str):
        return initializers.get(identifier)
    init = initializers.get(identifier)
    return type(init)(seed=seed) if hasattr(init, "seed") else init


@export("nn.Dense")
class Dense(Layer):
    """y = activation(x @ kernel + bias); kernel [input_dim, units] (glorot-uniform), bias
    [units] (zeros). Inputs of rank > 2 contract their last axis (one BatchMatMulV2)."""

    supports_masking = True

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, lora_rank=None,
                 seed=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if not isinstance(units, int) and not (hasattr(units, "__index__") and not isinstance(units, float)):
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. Received: "
                             f"units={units}")
        self.units = int(units)
        if self.units <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. Received: "
                             f"units={units}")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = seeded(kernel_initializer, seed)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.bias_constraint = constraints.get(bias_constraint)

    def build(self, input_shape):
        in_dim = input_shape[-1]
        if in_dim is None:
            raise ValueError(f"The last dimension of the inputs to a Dense layer should be defined. Found None. "
                             f"Full input shape received: {tuple(input_shape)}")
        self.kernel = self.add_weight(shape=(in_dim, self.units), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        if self.use_bias:
            self.bias = self.add_weight(shape=(self.units,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        name="bias")
        else:
            self.bias = None
        self.built = True

    def call(self, inputs, training=None):
        y = _ops.matmul(inputs, self.kernel)
        if self.use_bias:
            y = y + self.bias
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape)[:-1], self.units)

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
            "kernel_initializer": _serialize_initializer(self.kernel_initializer),
            "bias_initializer": _serialize_initializer(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint)})
        return config


class Embedding(Layer):
    """Rows of an [input_dim, output_dim] table ("embeddings", uniform in [-0.05, 0.05]) gathered
    by integer ids."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, weights=None, lora_rank=None, **kwargs):
        kwargs.pop("input_length", None)  # Keras 3 accepts and ignores it
        super().__init__(**kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.embeddings_constraint = embeddings_constraint
        self.mask_zero = mask_zero
        self._jf_autocast = False  # ids stay integers
        self._jf_initial_weights = weights

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint, name="embeddings")
        self.built = True
        if self._jf_initial_weights is not None:
            self.set_weights(self._jf_initial_weights)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return _ops.not_equal(inputs, _ops.zeros([], inputs.dtype))

    def call(self, inputs):
        if inputs.dtype not in (_dt.int32, _dt.int64):
            inputs = _ops.cast(inputs, _dt.int32)
        return _array.gather(self.embeddings, inputs)

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape), self.output_dim)

    def get_config(self):
        config = super().get_config()
        config.update({"input_dim": self.input_dim, "output_dim": self.output_dim,
                       "embeddings_initializer": _serialize_initializer(self.embeddings_initializer),
                       "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                       "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                       "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
                       "mask_zero": self.mask_zero})
        return config


class Activation(Layer):
    supports_masking = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class SeedState:
    """Keras 3's SeedGenerator: a [2] int64 variable that seeds stateless random ops and moves on
    by one after each draw, so dropout draws new masks on every call yet compiles (a stateful
    RandomUniform does not). Its start is seed (with jf.random's global seed, as TF's op seeds)."""

    def __init__(self, seed=None):
        with _C.init_scope():
            self.state = Variable(np.array(_random.get_seed(seed), np.int64), trainable=False,
                                  name="seed_generator_state")

    def next(self):
        seed = self.state.read_value()
        self.state.assign_add(np.array([0, 1], np.int64))
        return seed


def stateless_dropout(x, rate, seeds, noise_shape=None):
    """x / (1 - rate) where a uniform draw >= rate, else 0 (TF's dropout, from a seed state)."""
    shape = _ops.shape(x) if noise_shape is None else noise_shape
    u = _random.stateless_uniform(shape, seed=seeds.next(), dtype=x.dtype)
    keep = u >= _ops.convert_to_tensor(float(rate), x.dtype)
    return _ops.where(keep, x * _ops.convert_to_tensor(1.0 / (1.0 - float(rate)), x.dtype), _ops.zeros([], x.dtype))


class Dropout(Layer):
    """In training, zeroes each element with probability `rate` and scales the rest by
    1 / (1 - rate); otherwise the identity."""

    supports_masking = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and "
                             f"1. Received: rate={rate}")
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed
        self._jf_seed_state = SeedState(seed)

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            noise_shape = None
            if self.noise_shape is not None:
                dyn = _ops.shape(inputs)
                noise_shape = [dyn[i] if d is None else d for i, d in enumerate(self.noise_shape)]
            if self.rate >= 1:
                return _ops.zeros_like(inputs)
            return stateless_dropout(inputs, self.rate, self._jf_seed_state, noise_shape)
        return inputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "seed": self.seed, "noise_shape": self.noise_shape})
        return config


class Flatten(Layer):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or image_data_format()

    def call(self, inputs):
        rest = inputs.shape[1:]
        if self.data_format == "channels_first" and len(rest) > 1:
            inputs = _ops.transpose(inputs, [0, *range(2, len(inputs.shape)), 1])
        if all(d is not None for d in rest):
            return _ops.reshape(inputs, [-1, math.prod(rest)])
        return _ops.reshape(inputs, [_ops.shape(inputs)[0], -1])

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        return (input_shape[0], None if any(d is None for d in rest) else math.prod(rest))

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


class Reshape(Layer):
    """[batch, ...] -> [batch, *target_shape] (one -1 allowed)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def call(self, inputs):
        batch = inputs.shape[0]
        return _ops.reshape(inputs, [batch if batch is not None else _ops.shape(inputs)[0], *self.target_shape])

    def get_config(self):
        config = super().get_config()
        config["target_shape"] = self.target_shape
        return config


class _Merge(Layer):
    supports_masking = True

    def compute_mask(self, inputs, mask=None):
        """Positions every masked input keeps (Keras's merge layers)."""
        if mask is None or all(m is None for m in mask):
            return None
        kept = [_ops.cast(m, _dt.bool) for m in mask if m is not None]
        out = kept[0]
        for m in kept[1:]:
            out = _ops.logical_and(out, m)
        return out

    def _check(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 1:
            raise ValueError(f"A merge layer should be called on a list of inputs. Received: inputs={inputs} "
                             "(not a list of tensors)")


class Concatenate(_Merge):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        self._check(inputs)
        return _ops.concat(list(inputs), axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        """Keras's: each input's mask broadcast to its shape (all True where it has none),
        concatenated along axis, then kept where every feature is."""
        if mask is None or all(m is None for m in mask):
            return None
        full = []
        for x, m in zip(inputs, mask):
            if m is None:
                full.append(_ops.ones_like(x, dtype=_dt.bool))
                continue
            m = _ops.cast(m, _dt.bool)
            while len(m.shape) < len(x.shape):
                m = _ops.expand_dims(m, -1)
            full.append(_ops.logical_and(m, _ops.ones_like(x, dtype=_dt.bool)))
        return _stats.reduce_all(_ops.concat(full, axis=self.axis), axis=-1)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class Add(_Merge):
    def call(self, inputs):
        self._check(inputs)
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out


def add(inputs, **kwargs):
    """Keras's functional form: Add(**kwargs)(inputs)."""
    return Add(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """Keras's functional form: Concatenate(axis, **kwargs)(inputs)."""
    return Concatenate(axis=axis, **kwargs)(inputs)
