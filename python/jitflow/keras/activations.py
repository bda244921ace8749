"""jf.keras.activations: Keras 3's activation functions under their Keras names and arguments,
built on jitflow ops, with get/serialize/deserialize by name."""
from ..ops import basic_ops as _ops
from ..ops import nn_ops as _nn
from ..ops.dispatch import to_tensor as _t


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """max(x, 0) by default; at or below `threshold` the output is negative_slope * (x - threshold),
    and it is clipped at max_value when given (Keras's arguments)."""
    x = _t(x)
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return _ops.relu(x)
    if negative_slope == 0.0 and max_value == 6.0 and threshold == 0.0:
        return _ops.relu6(x)
    dt = x.dtype
    th = _ops.cast(threshold, dt)
    y = _ops.where(_ops.greater(x, th), x, _ops.zeros_like(x))
    if max_value is not None:
        y = _ops.minimum(y, _ops.cast(max_value, dt))
    if negative_slope:
        y = y + _ops.where(_ops.less(x, th), _ops.cast(negative_slope, dt) * (x - th), _ops.zeros_like(x))
    return y


def relu6(x):
    return _ops.relu6(_t(x))


def leaky_relu(x, negative_slope=0.2):
    return _ops.leaky_relu(_t(x), alpha=negative_slope)


def elu(x, alpha=1.0):
    x = _t(x)
    y = _ops.elu(x)
    return y if alpha == 1.0 else _ops.where(_ops.greater(x, _ops.zeros_like(x)), y, _ops.cast(alpha, x.dtype) * y)


def selu(x):
    return _ops.selu(_t(x))


def softplus(x):
    return _ops.softplus(_t(x))


def softsign(x):
    return _ops.softsign(_t(x))


def silu(x):
    """x * sigmoid(x) (Keras's swish is the same function)."""
    return _nn.silu(_t(x))


swish = silu


def gelu(x, approximate=False):
    return _nn.gelu(_t(x), approximate=approximate)


def tanh(x):
    return _ops.tanh(_t(x))


def sigmoid(x):
    return _ops.sigmoid(_t(x))


def exponential(x):
    return _ops.exp(_t(x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between (Keras 3's definition)."""
    x = _t(x)
    return _ops.relu6(x + _ops.cast(3.0, x.dtype)) / _ops.cast(6.0, x.dtype)


def hard_silu(x):
    x = _t(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    x = _t(x)
    return x * _ops.tanh(_ops.softplus(x))


def log_sigmoid(x):
    return _nn.log_sigmoid(_t(x))


def softmax(x, axis=-1):
    return _nn.softmax(_t(x), axis=axis)


def log_softmax(x, axis=-1):
    return _nn.log_softmax(_t(x), axis=axis)


def linear(x):
    """The identity (what None and "linear" mean for a layer's activation)."""
    return x


_BY_NAME = {f.__name__: f for f in (relu, relu6, leaky_relu, elu, selu, softplus, softsign, silu, gelu, tanh,
                                    sigmoid, exponential, hard_sigmoid, hard_silu, mish, log_sigmoid, softmax,
                                    log_softmax, linear)}
_BY_NAME.update({"swish": silu, "hard_swish": hard_silu})
_custom = {}


def serialize(activation):
    """The activation's name (Keras 3 serializes the built-ins as their names; swish is silu)."""
    if activation is None:
        return "linear"
    if hasattr(activation, "get_config"):
        return {"module": None, "class_name": type(activation).__name__, "config": activation.get_config(),
                "registered_name": type(activation).__name__}
    name = getattr(activation, "__name__", None)
    if name in _BY_NAME and _BY_NAME[name] is activation:
        return name
    for key, fn in _custom.items():
        if fn is activation:
            return key
    raise ValueError(f"Could not serialize activation {activation!r}: it is neither a built-in activation "
                     "nor registered (jf.keras.activations.register)")


def deserialize(config, custom_objects=None):
    if isinstance(config, dict):
        name = config.get("registered_name") or config.get("class_name")
        obj = (custom_objects or {}).get(name) or _custom.get(name)
        if obj is None:
            raise ValueError(f"Unknown activation function: {name!r}")
        return obj.from_config(config.get("config", {})) if hasattr(obj, "from_config") else obj
    fn = (custom_objects or {}).get(config) or _custom.get(config) or _BY_NAME.get(config)
    if fn is None:
        raise ValueError(f"Unknown activation function: '{config}'. Please ensure you are using a "
                         "`keras.utils.custom_object_scope` and that this object is included in the scope.")
    return fn


def get(identifier):
    """None -> linear; a name -> its function; a dict -> deserialized; a callable as it is."""
    if identifier is None:
        return linear
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: {identifier}")


def register(fn, name=None):
    """Makes get()/serialize() know a custom activation by name."""
    _custom[name or fn.__name__] = fn
    return fn
