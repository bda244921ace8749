"""jf.nn.Dense and jf.nn.LSTMCell: layers as Modules, with Keras's weight layouts, call signatures
and activation names."""
import numpy as _np

from ..core.export import export
from ..ops import basic_ops as _ops
from ..ops import variables
from ..ops.basic_ops import relu, sigmoid
from ..ops.dispatch import to_tensor
from ..ops.nn_ops import gelu, silu, softmax, swish
from .module import Module as _Module
from .module import camel_to_snake as _camel_to_snake

_ACTIVATIONS = {None: None, "linear": None, "relu": relu, "sigmoid": sigmoid, "tanh": _ops.tanh,
                "softmax": softmax}
# Keras's names for the activations it accepts as strings (gelu exact, swish / silu with beta 1,
# leaky_relu with TF's alpha 0.2).
_ACTIVATIONS.update({"gelu": gelu, "elu": _ops.elu, "selu": _ops.selu, "swish": swish, "silu": silu,
                     "softplus": _ops.softplus, "softsign": _ops.softsign, "relu6": _ops.relu6,
                     "leaky_relu": _ops.leaky_relu})


def _activation(a):
    if callable(a):
        return a
    if a not in _ACTIVATIONS:
        raise ValueError(f"Unknown activation {a!r}; use one of {sorted(k for k in _ACTIVATIONS if k)}")
    return _ACTIVATIONS[a]


def _glorot_uniform(rng, shape, dtype):
    limit = _np.sqrt(6.0 / (shape[0] + shape[1]))
    return rng.uniform(-limit, limit, size=shape).astype(dtype)


def _orthogonal(rng, shape, dtype):
    a = rng.normal(size=(max(shape), min(shape)))
    q, r = _np.linalg.qr(a)
    q = q * _np.sign(_np.diag(r))
    return (q if shape[0] >= shape[1] else q.T)[: shape[0], : shape[1]].astype(dtype)


_layer_name_counts = {}  # snake-case class name -> layers made so far (Keras's unique names)


class Layer(_Module):
    """Minimal Keras-like layer: weights created on first call from the input's last dim.
    A jf.Module named like Keras's layers ("dense", "dense_1", ...); `variables` lists its own
    weights in creation order (Keras's order), then any others its attributes hold."""

    _jf_untracked = _Module._jf_untracked | {"_weights_in_order", "_rng"}

    def __init__(self, dtype=None, seed=None, name=None):
        if name is None:
            base = _camel_to_snake(type(self).__name__)
            n = _layer_name_counts.get(base, 0)
            _layer_name_counts[base] = n + 1
            name = base if n == 0 else f"{base}_{n}"
        super().__init__(name=name)
        self.built = False
        self.dtype = dtype
        self._rng = _np.random.default_rng(seed)
        self._weights_in_order = []

    def _weight(self, value, name):
        v = variables.Variable(value, name=name)
        self._weights_in_order.append(v)
        return v

    def __call__(self, *args, **kwargs):
        x = to_tensor(args[0])
        if not self.built:
            self.dtype = self.dtype or x.dtype
            self.build(x.shape)
            self.built = True
        return self.call(x, *args[1:], **kwargs)

    @property
    def variables(self):
        own = list(self._weights_in_order)
        seen = {id(v) for v in own}
        return own + [v for v in _Module.variables.fget(self) if id(v) not in seen]

    @property
    def trainable_variables(self):
        return [v for v in self.variables if v.trainable]

    @property
    def non_trainable_variables(self):
        return [v for v in self.variables if not v.trainable]

    @property
    def weights(self):
        return self.variables


@export("nn.Dense")
class Dense(Layer):
    """y = activation(x @ kernel + bias), kernel glorot-uniform, bias zeros (Keras's defaults)."""

    def __init__(self, units, activation=None, use_bias=True, dtype=None, seed=None, name=None):
        super().__init__(dtype, seed, name)
        self.units = int(units)
        self.activation = _activation(activation)
        self.use_bias = use_bias

    def build(self, input_shape):
        np_dt = self.dtype.as_numpy_dtype
        self.kernel = self._weight(_glorot_uniform(self._rng, (input_shape[-1], self.units), np_dt), "kernel")
        if self.use_bias:
            self.bias = self._weight(_np.zeros(self.units, np_dt), "bias")

    def call(self, x):
        # Rank > 2 contracts the last axis: BatchMatMulV2 broadcasts the 2-D kernel over the
        # batch dims (one op, so a Dense layer in a jit_scope is one cluster).
        y = _ops.matmul(x, self.kernel)
        if self.use_bias:
            y = y + self.bias
        return self.activation(y) if self.activation else y


@export("nn.LSTMCell")
class LSTMCell(Layer):
    """Keras's LSTMCell: gates i, f, c, o in one [input_dim, 4*units] kernel;
    cell(inputs, [h, c]) -> (h, [h, c])."""

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 unit_forget_bias=True, dtype=None, seed=None, name=None):
        super().__init__(dtype, seed, name)
        self.units = int(units)
        self.activation = _activation(activation)
        self.recurrent_activation = _activation(recurrent_activation)
        self.use_bias = use_bias
        self.unit_forget_bias = unit_forget_bias
        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def build(self, input_shape):
        np_dt = self.dtype.as_numpy_dtype
        u = self.units
        self.kernel = self._weight(_glorot_uniform(self._rng, (input_shape[-1], 4 * u), np_dt), "kernel")
        self.recurrent_kernel = self._weight(_orthogonal(self._rng, (u, 4 * u), np_dt), "recurrent_kernel")
        if self.use_bias:
            b = _np.zeros(4 * u, np_dt)
            if self.unit_forget_bias:
                b[u: 2 * u] = 1.0
            self.bias = self._weight(b, "bias")

    def call(self, inputs, states, training=None):
        h_tm1, c_tm1 = states[0], states[1]
        z = _ops.matmul(inputs, self.kernel) + _ops.matmul(h_tm1, self.recurrent_kernel)
        if self.use_bias:
            z = z + self.bias
        z0, z1, z2, z3 = _ops.split(z, 4, axis=1)
        i = self.recurrent_activation(z0)
        f = self.recurrent_activation(z1)
        c = f * c_tm1 + i * self.activation(z2)
        o = self.recurrent_activation(z3)
        h = o * self.activation(c)
        return h, [h, c]

    def get_initial_state(self, batch_size, dtype=None):
        dt = dtype or self.dtype or _ops._dt.float32
        return [_ops.zeros([batch_size, self.units], dt), _ops.zeros([batch_size, self.units], dt)]
