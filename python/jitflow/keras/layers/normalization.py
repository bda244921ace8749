"""LayerNormalization and BatchNormalization with Keras 3's weights (gamma, beta; BatchNorm's
moving_mean and moving_variance non-trainable), defaults (epsilon 1e-3, momentum 0.99) and
training behaviour: BatchNorm normalizes by the batch's moments and updates its moving ones
when training, and by the moving ones otherwise."""
from ...ops import basic_ops as _ops
from .. import constraints, initializers, regularizers
from .core import _serialize_initializer
from .layer import Layer


def _axes(axis, rank):
    axes = [axis] if isinstance(axis, int) else list(axis)
    return sorted(a % rank for a in axes)


def _param_shape(input_shape, axes):
    return tuple(input_shape[a] for a in axes)


def _broadcast(v, axes, rank):
    """A [dims of axes] parameter reshaped to broadcast against the input."""
    if axes == [rank - 1]:
        return v
    shape = [1] * rank
    for a, d in zip(axes, v.shape):
        shape[a] = d
    return _ops.reshape(v, shape)


class LayerNormalization(Layer):
    """Normalizes over `axis` (the last by default) per example: (x - mean) / sqrt(var + eps)
    * gamma + beta."""

    supports_masking = True

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, rms_scaling=False,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else list(axis)
        self.epsilon = epsilon
        self.center, self.scale, self.rms_scaling = center, scale, rms_scaling
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def build(self, input_shape):
        self._jf_axes = _axes(self.axis, len(input_shape))
        shape = _param_shape(input_shape, self._jf_axes)
        self.gamma = self.add_weight(shape=shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                     name="gamma") if self.scale else None
        self.beta = self.add_weight(shape=shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                    name="beta") if self.center else None
        self.built = True

    def call(self, inputs):
        rank = len(inputs.shape)
        axes = self._jf_axes
        if self.rms_scaling:
            var = _ops.reduce_mean(_ops.square(inputs), axis=axes, keepdims=True)
            out = inputs * _ops.rsqrt(var + _ops.convert_to_tensor(self.epsilon, inputs.dtype))
            return out * _broadcast(self.gamma, axes, rank) if self.scale else out
        mean = _ops.reduce_mean(inputs, axis=axes, keepdims=True)
        centered = inputs - mean
        var = _ops.reduce_mean(_ops.square(centered), axis=axes, keepdims=True)
        out = centered * _ops.rsqrt(var + _ops.convert_to_tensor(self.epsilon, inputs.dtype))
        if self.scale:
            out = out * _broadcast(self.gamma, axes, rank)
        if self.center:
            out = out + _broadcast(self.beta, axes, rank)
        return out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"axis": self.axis, "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                       "rms_scaling": self.rms_scaling,
                       "beta_initializer": _serialize_initializer(self.beta_initializer),
                       "gamma_initializer": _serialize_initializer(self.gamma_initializer),
                       "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                       "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                       "beta_constraint": constraints.serialize(self.beta_constraint),
                       "gamma_constraint": constraints.serialize(self.gamma_constraint)})
        return config


class BatchNormalization(Layer):
    """Normalizes each feature of `axis` over the batch (and the other axes). Training:
    the batch's mean and (biased) variance, and moving = moving * momentum + batch * (1 -
    momentum); inference: the moving statistics. A mask passes through (the moments are over
    every position, where Keras weights them by the mask)."""

    supports_masking = True

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", beta_regularizer=None, gamma_regularizer=None,
                 beta_constraint=None, gamma_constraint=None, synchronized=False, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.synchronized = synchronized

    def build(self, input_shape):
        rank = len(input_shape)
        self._jf_axis = self.axis % rank
        dim = input_shape[self._jf_axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension but the layer "
                             f"received an input with shape {tuple(input_shape)}.")
        shape = (dim,)
        self.gamma = self.add_weight(shape=shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                     name="gamma") if self.scale else None
        self.beta = self.add_weight(shape=shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                    name="beta") if self.center else None
        self.moving_mean = self.add_weight(shape=shape, initializer=self.moving_mean_initializer, trainable=False,
                                           name="moving_mean")
        self.moving_variance = self.add_weight(shape=shape, initializer=self.moving_variance_initializer,
                                               trainable=False, name="moving_variance")
        self.built = True

    def call(self, inputs, training=None, mask=None):
        rank = len(inputs.shape)
        axes = [self._jf_axis]
        reduce = [a for a in range(rank) if a != self._jf_axis]
        dt = inputs.dtype
        if training and self.trainable:
            mean = _ops.reduce_mean(inputs, axis=reduce)
            var = _ops.reduce_mean(_ops.square(inputs - _broadcast(mean, axes, rank)), axis=reduce)
            m = _ops.convert_to_tensor(self.momentum, dt)
            self.moving_mean.assign(self.moving_mean.read_value() * m + mean * (1 - m))
            self.moving_variance.assign(self.moving_variance.read_value() * m + var * (1 - m))
        else:
            mean, var = self.moving_mean.read_value(), self.moving_variance.read_value()
        inv = _ops.rsqrt(var + _ops.convert_to_tensor(self.epsilon, dt))
        if self.scale:
            inv = inv * self.gamma
        out = (inputs - _broadcast(mean, axes, rank)) * _broadcast(inv, axes, rank)
        if self.center:
            out = out + _broadcast(self.beta, axes, rank)
        return out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"axis": self.axis, "momentum": self.momentum, "epsilon": self.epsilon, "center": self.center,
                       "scale": self.scale, "beta_initializer": _serialize_initializer(self.beta_initializer),
                       "gamma_initializer": _serialize_initializer(self.gamma_initializer),
                       "moving_mean_initializer": _serialize_initializer(self.moving_mean_initializer),
                       "moving_variance_initializer": _serialize_initializer(self.moving_variance_initializer),
                       "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                       "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                       "beta_constraint": constraints.serialize(self.beta_constraint),
                       "gamma_constraint": constraints.serialize(self.gamma_constraint),
                       "synchronized": self.synchronized})
        return config




class UnitNormalization(Layer):
    """x scaled to unit L2 norm over axis, as Keras: x * rsqrt(max(sum x^2, 1e-12))."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else list(axis)
        self.supports_masking = True

    def call(self, inputs):
        sq = _ops.reduce_sum(_ops.square(inputs), axis=self.axis, keepdims=True)
        return inputs * _ops.rsqrt(_ops.maximum(sq, _ops.convert_to_tensor(1e-12, inputs.dtype)))

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class RMSNormalization(Layer):
    """x * rsqrt(mean(x^2 over axis) + epsilon) * scale (a weight, ones at first)."""

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis, self.epsilon = axis, epsilon

    def build(self, input_shape):
        self._jf_axes = _axes(self.axis, len(input_shape))
        self.scale = self.add_weight(shape=_param_shape(input_shape, self._jf_axes), initializer="ones",
                                     name="scale")
        self.built = True

    def call(self, inputs):
        ms = _ops.reduce_mean(_ops.square(inputs), axis=self._jf_axes, keepdims=True)
        out = inputs * _ops.rsqrt(ms + _ops.convert_to_tensor(self.epsilon, inputs.dtype))
        return out * _broadcast(self.scale, self._jf_axes, len(inputs.shape))

    def get_config(self):
        config = super().get_config()
        config.update({"axis": self.axis, "epsilon": self.epsilon})
        return config


class GroupNormalization(Layer):
    """The channels (axis) split into `groups`; each example's group normalized by its mean and
    variance over the group's channels and all other non-batch axes, then gamma and beta per
    channel."""

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.groups, self.axis, self.epsilon = groups, axis, epsilon
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def build(self, input_shape):
        axis = self.axis % len(input_shape)
        dim = input_shape[axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension but the layer "
                             f"received an input with shape {tuple(input_shape)}.")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the number of channels ({dim}).")
        if dim % self.groups != 0:
            raise ValueError(f"Number of groups ({self.groups}) must be a multiple of the number of channels "
                             f"({dim}).")
        self.gamma = self.add_weight(shape=(dim,), initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                     name="gamma") if self.scale else None
        self.beta = self.add_weight(shape=(dim,), initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                    name="beta") if self.center else None
        self.built = True

    def call(self, inputs):
        rank = len(inputs.shape)
        axis = self.axis % rank
        dims = _ops.shape(inputs)
        per = inputs.shape[axis] // self.groups
        grouped_shape = [dims[i] for i in range(axis)] + [self.groups, per] + [dims[i] for i in range(axis + 1, rank)]
        x = _ops.reshape(inputs, _ops.stack([_ops.cast(d, dims.dtype) for d in grouped_shape]))
        reduce = [i for i in range(1, rank + 1) if i != axis]
        mean = _ops.reduce_mean(x, axis=reduce, keepdims=True)
        var = _ops.reduce_mean(_ops.square(x - mean), axis=reduce, keepdims=True)
        x = (x - mean) * _ops.rsqrt(var + _ops.convert_to_tensor(self.epsilon, inputs.dtype))
        out = _ops.reshape(x, dims)
        if self.scale:
            out = out * _broadcast(self.gamma, [axis], rank)
        if self.center:
            out = out + _broadcast(self.beta, [axis], rank)
        return out

    def get_config(self):
        config = super().get_config()
        config.update({"groups": self.groups, "axis": self.axis, "epsilon": self.epsilon, "center": self.center,
                       "scale": self.scale, "beta_initializer": _serialize_initializer(self.beta_initializer),
                       "gamma_initializer": _serialize_initializer(self.gamma_initializer),
                       "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                       "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                       "beta_constraint": constraints.serialize(self.beta_constraint),
                       "gamma_constraint": constraints.serialize(self.gamma_constraint)})
        return config
