"""jf.Variable: mutable state. Eagerly it holds a tensor; `assign`/`assign_add` replace it."""
from ._C import Tensor, convert_to_tensor

_counter = [0]


class Variable:
    def __init__(self, initial_value, trainable=True, name=None, dtype=None):
        if callable(initial_value):
            initial_value = initial_value()
        self._value = convert_to_tensor(initial_value, dtype)
        self.trainable = trainable
        if name is None:
            name = "Variable" if _counter[0] == 0 else f"Variable_{_counter[0]}"
            _counter[0] += 1
        self.name = name + ":0"

    def __jf_tensor__(self):
        return self.read_value()

    def read_value(self):
        return self._value

    def value(self):
        return self.read_value()

    def assign(self, value, read_value=True):
        v = convert_to_tensor(value, self._value.dtype)
        if tuple(v.shape) != tuple(self._value.shape):
            raise ValueError(f"Cannot assign value of shape {v.shape} to variable '{self.name}' "
                             f"of shape {self._value.shape}")
        self._value = v
        return self if read_value else None

    def assign_add(self, delta, read_value=True):
        return self.assign(self._value + delta, read_value)

    def assign_sub(self, delta, read_value=True):
        return self.assign(self._value - delta, read_value)

    dtype = property(lambda self: self._value.dtype)
    shape = property(lambda self: self._value.shape)
    ndim = property(lambda self: self._value.ndim)

    def numpy(self):
        return self.read_value().numpy()

    def __array__(self, dtype=None, copy=None):
        return self.read_value().__array__(dtype)

    def __repr__(self):
        return (f"<jf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={self.numpy()!r}>")


def _delegate(op):
    def f(self, *args):
        return getattr(self.read_value(), op)(*args)
    f.__name__ = op
    return f


for _op in ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
            "__rtruediv__", "__matmul__", "__rmatmul__", "__pow__", "__rpow__", "__neg__",
            "__abs__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__floordiv__",
            "__mod__", "__float__", "__int__", "__bool__", "__len__", "__iter__"]:
    setattr(Variable, _op, _delegate(_op))
Variable.__hash__ = object.__hash__
Tensor  # re-exported for isinstance checks in callers
