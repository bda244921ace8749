"""jf.keras.initializers: Keras 3's weight initializers (names, defaults, statistics, configs),
drawing from jitflow's stateless random ops so a seeded initializer gives the same values on
every call, as Keras's does."""
import math

import numpy as np

from ..core import dtypes as _dt
from ..core.export import export
from ..ops import basic_ops as _ops
from ..ops import random_ops as _random

# The factor that makes a normal truncated at two standard deviations have the requested
# standard deviation (the std of a standard normal truncated to [-2, 2]).
_TRUNCATED_STDDEV_FACTOR = 0.87962566103423978


def _dtype(dtype):
    return _dt.float32 if dtype is None else _dt.as_dtype(dtype)


def _shape(shape):
    return [int(d) for d in shape]


def compute_fans(shape, input_axes=None, output_axes=None):
    """(fan_in, fan_out) of a weight shape as Keras counts them: a vector is its own fan, a
    matrix is [in, out], a convolution kernel [..., in, out] multiplies by its window."""
    shape = tuple(shape)
    if input_axes is not None and output_axes is not None:
        return (int(np.prod([shape[a] for a in input_axes])), int(np.prod([shape[a] for a in output_axes])))
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return int(shape[0]), int(shape[0])
    if len(shape) == 2:
        return int(shape[0]), int(shape[1])
    window = int(np.prod(shape[:-2]))
    return int(shape[-2]) * window, int(shape[-1]) * window


class Initializer:
    """An initializer is called with (shape, dtype) and returns a tensor; get_config/from_config
    round-trip its arguments."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(shape, dtype)")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def clone(self):
        return type(self).from_config(self.get_config())


class Zeros(Initializer):
    def __call__(self, shape, dtype=None):
        return _ops.zeros(_shape(shape), _dtype(dtype))


class Ones(Initializer):
    def __call__(self, shape, dtype=None):
        return _ops.ones(_shape(shape), _dtype(dtype))


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        dt = _dtype(dtype)
        value = np.asarray(self.value, dt.as_numpy_dtype)
        return _ops.constant(np.broadcast_to(value, _shape(shape)).copy(), dt)

    def get_config(self):
        return {"value": self.value}


class RandomInitializer(Initializer):
    """A seeded initializer draws the same values on every call (Keras 3). An unseeded one takes
    its seed when made, from jf.random's global seed when one is set (so jf.random.set_seed makes
    a model's initial weights reproducible), else from the OS."""

    def __init__(self, seed=None):
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError("`seed` argument should be an instance of `keras.random.SeedGenerator()` or an "
                             f"integer. Received: seed={seed!r}")
        self._init_seed = seed
        self.seed = seed
        if seed is None:
            s0, s1 = _random.get_seed(None)
            self._stateless_seed = [int(s0), int(s1)]
        else:
            self._stateless_seed = [int(seed), 0]

    def get_config(self):
        return {"seed": self._init_seed}

    def _uniform(self, shape, low, high, dtype):
        return _random.stateless_uniform(_shape(shape), self._stateless_seed, low, high, dtype)

    def _normal(self, shape, mean, stddev, dtype):
        return _random.stateless_normal(_shape(shape), self._stateless_seed, mean, stddev, dtype)

    def _truncated(self, shape, mean, stddev, dtype):
        return _random.stateless_truncated_normal(_shape(shape), self._stateless_seed, mean, stddev, dtype)


class RandomNormal(RandomInitializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        return self._normal(shape, self.mean, self.stddev, _dtype(dtype))

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}


class TruncatedNormal(RandomInitializer):
    """Normal values more than two standard deviations from the mean are redrawn."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        return self._truncated(shape, self.mean, self.stddev, _dtype(dtype))

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}


class RandomUniform(RandomInitializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=None):
        return self._uniform(shape, self.minval, self.maxval, _dtype(dtype))

    def get_config(self):
        return {**super().get_config(), "minval": self.minval, "maxval": self.maxval}


class VarianceScaling(RandomInitializer):
    """Values with variance scale / n, n the fan_in, fan_out or their mean: a normal truncated
    at two standard deviations (its stddev corrected for the truncation), an untruncated
    normal, or a uniform on [-limit, limit] with limit = sqrt(3 * scale / n)."""

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 input_axes=None, output_axes=None):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be positive float. Received: scale={scale}")
        if mode not in self._MODES:
            raise ValueError(f"Invalid `mode` argument: expected one of {list(self._MODES)}. Received: mode={mode}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"Invalid `distribution` argument: expected one of {list(self._DISTRIBUTIONS)}. "
                             f"Received: distribution={distribution}")
        super().__init__(seed)
        self.scale, self.mode, self.distribution = scale, mode, distribution
        self.input_axes, self.output_axes = input_axes, output_axes

    def __call__(self, shape, dtype=None):
        dt = _dtype(dtype)
        fan_in, fan_out = compute_fans(shape, self.input_axes, self.output_axes)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            return self._truncated(shape, 0.0, math.sqrt(scale) / _TRUNCATED_STDDEV_FACTOR, dt)
        if self.distribution == "untruncated_normal":
            return self._normal(shape, 0.0, math.sqrt(scale), dt)
        limit = math.sqrt(3.0 * scale)
        return self._uniform(shape, -limit, limit, dt)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "mode": self.mode,
                "distribution": self.distribution, "input_axes": self.input_axes, "output_axes": self.output_axes}


def _fixed(scale, mode, distribution, doc):
    """A VarianceScaling with fixed arguments, whose config holds only the seed (Keras's)."""

    class Fixed(VarianceScaling):
        def __init__(self, seed=None, input_axes=None, output_axes=None):
            super().__init__(scale, mode, distribution, seed, input_axes, output_axes)

        def get_config(self):
            return {"seed": self._init_seed, "input_axes": self.input_axes, "output_axes": self.output_axes}

    Fixed.__doc__ = doc
    return Fixed


class GlorotUniform(_fixed(1.0, "fan_avg", "uniform", "")):
    """Uniform on [-limit, limit], limit = sqrt(6 / (fan_in + fan_out))."""


class GlorotNormal(_fixed(1.0, "fan_avg", "truncated_normal", "")):
    """Truncated normal, stddev sqrt(2 / (fan_in + fan_out))."""


class HeNormal(_fixed(2.0, "fan_in", "truncated_normal", "")):
    """Truncated normal, stddev sqrt(2 / fan_in)."""


class HeUniform(_fixed(2.0, "fan_in", "uniform", "")):
    """Uniform on [-limit, limit], limit = sqrt(6 / fan_in)."""


class LecunNormal(_fixed(1.0, "fan_in", "truncated_normal", "")):
    """Truncated normal, stddev sqrt(1 / fan_in)."""


class LecunUniform(_fixed(1.0, "fan_in", "uniform", "")):
    """Uniform on [-limit, limit], limit = sqrt(3 / fan_in)."""


class Orthogonal(RandomInitializer):
    """gain times an orthogonal matrix: the Q of a normal matrix's QR decomposition with the
    signs of R's diagonal, over the shape flattened to [prod(shape[:-1]), shape[-1]]. The QR
    runs in numpy on the drawn values (initializers run once, eagerly)."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape, dtype=None):
        dt = _dtype(dtype)
        shape = _shape(shape)
        if len(shape) < 2:
            raise ValueError("Orthogonal initializer requires a kernel of rank >= 2. "
                             f"Received: input_shape={tuple(shape)}")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        a = self._normal([max(rows, cols), min(rows, cols)], 0.0, 1.0, _dt.float32).numpy().astype(np.float64)
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return _ops.constant((self.gain * q.reshape(shape)).astype(dt.as_numpy_dtype), dt)

    def get_config(self):
        return {**super().get_config(), "gain": self.gain}


class Identity(Initializer):
    """gain times the identity matrix (2-D shapes only)."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        dt = _dtype(dtype)
        if len(shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices. "
                             f"Received: shape={tuple(shape)} of rank {len(shape)}.")
        return _ops.constant((self.gain * np.eye(int(shape[0]), int(shape[1]))).astype(dt.as_numpy_dtype), dt)

    def get_config(self):
        return {"gain": self.gain}


_CLASSES = [Constant, GlorotNormal, GlorotUniform, HeNormal, HeUniform, Identity, LecunNormal, LecunUniform,
            Ones, Orthogonal, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling, Zeros]
_BY_NAME = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({"IdentityInitializer": Identity, "OrthogonalInitializer": Orthogonal,
                 "constant": Constant, "glorot_normal": GlorotNormal, "glorot_uniform": GlorotUniform,
                 "he_normal": HeNormal, "he_uniform": HeUniform, "identity": Identity,
                 "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "normal": RandomNormal,
                 "one": Ones, "ones": Ones, "orthogonal": Orthogonal, "random_normal": RandomNormal,
                 "random_uniform": RandomUniform, "truncated_normal": TruncatedNormal, "uniform": RandomUniform,
                 "variance_scaling": VarianceScaling, "zero": Zeros, "zeros": Zeros})
_custom = {}  # registered name -> class (register_keras_serializable's table is the model helper's)


def serialize(initializer):
    """Keras's serialized form: {"module", "class_name", "config", "registered_name"}."""
    if initializer is None:
        return None
    if not isinstance(initializer, Initializer):
        raise TypeError(f"Cannot serialize {initializer!r}: it is not a Keras initializer")
    name = type(initializer).__name__
    custom = _BY_NAME.get(name) is not type(initializer)
    return {"module": None if custom else "keras.initializers", "class_name": name,
            "config": initializer.get_config(), "registered_name": name if custom else None}


def deserialize(config, custom_objects=None):
    if isinstance(config, str):
        return get(config) if custom_objects is None else get({"class_name": config, "config": {}}, custom_objects)
    name = config.get("registered_name") or config["class_name"]
    cls = (custom_objects or {}).get(name) or _custom.get(name) or _BY_NAME.get(config["class_name"])
    if cls is None:
        raise ValueError(f"Could not interpret initializer identifier: {config}")
    return cls.from_config(dict(config.get("config", {})))


def get(identifier, custom_objects=None):
    """None, an Initializer, a callable (shape, dtype) -> tensor, a name ("glorot_uniform",
    "GlorotUniform"), or a dict from serialize()/{"class_name", "config"}."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    if isinstance(identifier, str):
        cls = (custom_objects or {}).get(identifier) or _custom.get(identifier) or _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"Could not interpret initializer identifier: {identifier}")
        return cls()
    if callable(identifier):
        if isinstance(identifier, type):
            return identifier()
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier}")


def register(cls, name=None):
    """Makes get()/deserialize() find a custom initializer class by name."""
    _custom[name or cls.__name__] = cls
    return cls


# Keras's lower-case function-style aliases.
zeros, ones, constant = Zeros, Ones, Constant
glorot_uniform, glorot_normal, he_normal, he_uniform = GlorotUniform, GlorotNormal, HeNormal, HeUniform
lecun_normal, lecun_uniform, orthogonal, identity = LecunNormal, LecunUniform, Orthogonal, Identity
random_normal, random_uniform, truncated_normal, variance_scaling = RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling


# TF 2's tf.constant_initializer, tf.zeros_initializer, ... are these classes under other names.
for _cls, _name in ((Constant, "constant_initializer"), (Zeros, "zeros_initializer"), (Ones, "ones_initializer"),
                    (RandomNormal, "random_normal_initializer"), (RandomUniform, "random_uniform_initializer")):
    export(_name)(_cls)
