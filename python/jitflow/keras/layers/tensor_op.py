"""Python operators on KerasTensors (x + y, 2 * x, x @ w, -x, abs(x), x[:, 0]) in functional
models, as Keras 3 allows: each becomes a TensorOp layer call, whose config names the operator
and holds its constant operand or index as plain JSON, so models using them save and load."""
import numpy as np

from ...ops import basic_ops as _ops
from . import keras_tensor
from .layer import Layer

_BINARY = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "power": lambda a, b: a ** b,
    "matmul": lambda a, b: _ops.matmul(a, b),
}
_UNARY = {"negative": lambda a: -a, "abs": lambda a: _ops.abs(a)}


def _encode_key(key):
    if isinstance(key, tuple):
        return [_encode_key(k) for k in key]
    if isinstance(key, slice):
        return {"slice": [key.start, key.stop, key.step]}
    if key is None:
        return {"newaxis": True}
    if key is Ellipsis:
        return {"ellipsis": True}
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return int(key)
    raise TypeError(f"A KerasTensor can be indexed by ints, slices, None and Ellipsis; got {key!r}")


def _decode_key(key):
    if isinstance(key, list):
        return tuple(_decode_key(k) for k in key)
    if isinstance(key, dict):
        if "slice" in key:
            return slice(*key["slice"])
        return None if key.get("newaxis") else Ellipsis
    return key


class TensorOp(Layer):
    """One operator applied to the inputs: a binary op on two tensors (inputs [a, b]) or on a
    tensor and a constant, a unary op, or indexing."""

    def __init__(self, op, constant=None, reverse=False, key=None, **kwargs):
        super().__init__(**kwargs)
        if op not in _BINARY and op not in _UNARY and op != "getitem":
            raise ValueError(f"Unknown TensorOp {op!r}")
        self.op, self.constant, self.reverse, self.key = op, constant, bool(reverse), key
        self._jf_autocast = False  # the operands keep their dtypes, as the operator would

    def call(self, inputs):
        if self.op == "getitem":
            return inputs[_decode_key(self.key)]
        if self.op in _UNARY:
            return _UNARY[self.op](inputs)
        if self.constant is None:
            a, b = inputs
        else:
            a, b = inputs, _ops.convert_to_tensor(np.asarray(self.constant), inputs.dtype)
            if self.reverse:
                a, b = b, a
        return _BINARY[self.op](a, b)

    def get_config(self):
        config = super().get_config()
        config.update({"op": self.op, "constant": self.constant, "reverse": self.reverse, "key": self.key})
        return config


def _binary(op, x, other, reverse=False):
    if isinstance(other, keras_tensor.KerasTensor):
        return TensorOp(op)([other, x] if reverse else [x, other])
    constant = np.asarray(other)
    if constant.dtype == object:
        return NotImplemented
    return TensorOp(op, constant=constant.tolist(), reverse=reverse)(x)


def _install():
    kt = keras_tensor.KerasTensor
    for name, op in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "divide"),
                     ("pow", "power"), ("matmul", "matmul")):
        setattr(kt, f"__{name}__", lambda self, other, op=op: _binary(op, self, other))
        setattr(kt, f"__r{name}__", lambda self, other, op=op: _binary(op, self, other, reverse=True))
    kt.__neg__ = lambda self: TensorOp("negative")(self)
    kt.__abs__ = lambda self: TensorOp("abs")(self)
    kt.__getitem__ = lambda self, key: TensorOp("getitem", key=_encode_key(key))(self)


_install()
