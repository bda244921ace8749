"""TF 2's equality for tensors and variables: `==`/`!=` compare elementwise with broadcasting
(shapes that cannot broadcast give a scalar False/True, None gives a Python bool), so both are
unhashable, and `.ref()` gives a hashable key for dicts and sets."""
import numpy as _np

from . import _C
from ._C import Tensor
from .variables import Variable

_tensor_eq = Tensor.__eq__  # the elementwise Equal/NotEqual ops (bind_tensor.cc)
_tensor_ne = Tensor.__ne__


class Reference:
    """A hashable key standing for a tensor or variable by identity (TF's `x.ref()`)."""
    __slots__ = ("_wrapped",)

    def __init__(self, wrapped):
        self._wrapped = wrapped

    def deref(self):
        return self._wrapped

    def __eq__(self, other):
        return isinstance(other, Reference) and self._wrapped is other._wrapped

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return id(self._wrapped)

    def __repr__(self):
        return f"<Reference wrapping {self._wrapped!r}>"


def _shape_of(other):
    if isinstance(other, (Tensor, Variable)):
        return tuple(other.shape)
    if isinstance(other, (bool, int, float, complex)):
        return ()
    try:
        return _np.shape(other)
    except Exception:  # noqa: BLE001 (not array-like: the op's own conversion reports it)
        return None


def broadcastable(a, b):
    """Whether shapes a and b broadcast (an unknown dimension, None, may be anything)."""
    for x, y in zip(reversed(a), reversed(b)):
        if x is not None and y is not None and x != y and x != 1 and y != 1:
            return False
    return True


def _compare(op, incompatible):
    def f(self, other):
        if other is None:
            return incompatible
        if isinstance(other, str):  # TF: the string cannot become a tensor of self's dtype
            _C.convert_to_tensor(other, self.dtype)
        shape = _shape_of(other)
        if shape is not None and not broadcastable(tuple(self.shape), tuple(shape)):
            # TF's Equal with incompatible_shape_error=False: one scalar answer.
            from . import ops
            return ops.constant(incompatible)
        return op(self, other)
    f.__name__ = op.__name__
    return f


def _unhashable(kind):
    def f(self):
        raise TypeError(f"{kind} is unhashable. Instead, use {kind.lower()}.ref() as the key."
                        + (f" ({kind}: {self!r})" if kind == "Variable" else ""))
    return f


def _var_compare(name, incompatible):
    def f(self, other):
        if other is None:
            return incompatible
        return getattr(self.read_value(), name)(other)
    f.__name__ = name
    return f


Tensor.__eq__ = _compare(_tensor_eq, False)
Tensor.__ne__ = _compare(_tensor_ne, True)
Tensor.__hash__ = _unhashable("Tensor")
Tensor.ref = Tensor.experimental_ref = lambda self: Reference(self)
Variable.__eq__ = _var_compare("__eq__", False)
Variable.__ne__ = _var_compare("__ne__", True)
Variable.__hash__ = _unhashable("Variable")
Variable.ref = Variable.experimental_ref = lambda self: Reference(self)
