"""The Tensor's Python face, in one place: its shape (a TensorShape), TF 2's equality (`==`/`!=`
elementwise with broadcasting, so tensors are unhashable and `.ref()` gives a key), repr,
Python number protocols, pickling and graph properties. The class, its data and its arithmetic
operators are defined in C++ (bind_tensor.cc); nothing later replaces what is set here."""
import numpy as _np

from .._C import DType as _DType
from .._C import Tensor
from .._C import convert_to_tensor as _convert_to_tensor
from .graph import FuncGraph
from .shapes import TensorShape

_raw_shape = Tensor._shape_tuple  # the C++ property: a tuple (None dims unknown), or None


def _shape(self, _get=_raw_shape.__get__, _new=tuple.__new__):
    s = _get(self)
    return TensorShape(None) if s is None else _new(TensorShape, s)  # C++ dims are ints or None


Tensor.shape = property(_shape, doc="The tensor's shape, a jf.TensorShape.")


def _numpy_text(self, is_repr):
    """TF's numpy_text: a scalar prints as its value (1.0, 3, True); a multi-line array
    starts on a new line."""
    a = self.numpy()
    if a.ndim == 0:
        text = str(a[()])
    else:
        text = _np.array_repr(a) if is_repr else _np.array2string(a)
    return "\n" + text if "\n" in text else text


def _repr(self):
    if self._is_symbolic:
        return f"<jf.Tensor '{getattr(self, 'name', '?')}' shape={self.shape} dtype={self.dtype.name}>"
    return f"<jf.Tensor: shape={self.shape}, dtype={self.dtype.name}, numpy={_numpy_text(self, True)}>"


def _str(self):
    if self._is_symbolic:
        return _repr(self)
    return f"jf.Tensor({_numpy_text(self, False)}, shape={self.shape}, dtype={self.dtype.name})"


def _scalar(self, kind):
    if self._is_symbolic:
        raise TypeError(
            f"Using a symbolic jf.Tensor as a Python {kind} is not allowed while tracing a "
            "jf.function: its value is not known until the function runs. Use jf.cond / "
            "jf.while_loop for data-dependent control flow, or compute the value outside.")
    return self.numpy()


def _bool(self):
    v = _scalar(self, "bool")
    if v.size != 1:
        raise ValueError("The truth value of an array with more than one element is ambiguous. "
                         "Use a.any() or a.all()")
    return bool(v.reshape(()))


def _len(self):
    if self.shape.rank == 0:
        raise TypeError("len() of a 0-d tensor")
    if self.shape[0] is None:
        raise TypeError("len() of a tensor whose first dimension is unknown")
    return self.shape[0]


def _iter(self):
    if self.shape.rank == 0:
        raise TypeError("Cannot iterate over a scalar tensor.")
    for i in range(_len(self)):
        yield self[i]


def _format(self, spec):
    if not self._is_symbolic and self.ndim == 0:
        return format(self.numpy().item(), spec)
    return format(str(self), spec)


Tensor.__repr__ = _repr
Tensor.__str__ = _str
Tensor.__len__ = _len
Tensor.__iter__ = _iter
Tensor.__bool__ = _bool
Tensor.__float__ = lambda self: float(_scalar(self, "float"))
Tensor.__int__ = lambda self: int(_scalar(self, "int"))
Tensor.__index__ = lambda self: int(_scalar(self, "int")) if self.dtype.is_integer else _bad_index(self)
Tensor.__format__ = _format
Tensor.get_shape = lambda self: self.shape
Tensor.__array_priority__ = 100  # numpy defers `ndarray op Tensor` to our reflected operators


def _reduce(self):
    """Pickling and deepcopy, as TF: (convert_to_tensor, (value,)). Without it,
    object.__reduce__ aborted the interpreter (pybind11 cannot allocate a bare Tensor); a
    symbolic tensor has no value to pickle (TypeError from numpy())."""
    return _convert_to_tensor, (self.numpy(),)


Tensor.__reduce__ = _reduce
Tensor.__reduce_ex__ = lambda self, protocol: _reduce(self)
Tensor.__copy__ = lambda self: self  # tensors are immutable; TF's copy.copy returns the tensor


def _bad_index(self):
    raise TypeError(f"only integer tensors can be used as indices, not {self.dtype.name}")


def _op(self):
    ref = self._node_ref
    if ref is None:
        raise AttributeError("Tensor.op is only available for symbolic tensors inside a jf.function "
                             "(eager tensors have no op)")
    return FuncGraph(ref[0].graph)._op(ref[0])


def _name(self):
    ref = self._node_ref
    if ref is None:
        raise AttributeError("Tensor.name is only available for symbolic tensors inside a jf.function")
    return f"{ref[0].name}:{ref[1]}"


Tensor.op = property(_op)
Tensor.name = property(_name)
Tensor.graph = property(lambda self: _op(self).graph)


# ---- TF 2's equality --------------------------------------------------------------------------
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
    if isinstance(other, Tensor) or (hasattr(other, "__jf_tensor__") and hasattr(other, "shape")):
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


_STRING = _DType.string


def _compare(op, incompatible):
    """TF 2's `==`/`!=` of a tensor: op elementwise when the shapes broadcast, else one scalar
    answer (TF's incompatible_shape_error=False); None compares as a Python bool."""
    def f(self, other):
        if other is None:
            return incompatible
        if isinstance(other, str) and self.dtype != _STRING:  # TF: it cannot become one of self's dtype
            _convert_to_tensor(other, self.dtype)
        shape = _shape_of(other)
        if shape is not None and not broadcastable(tuple(self.shape), tuple(shape)):
            # TF's Equal with incompatible_shape_error=False: one scalar answer.
            return _convert_to_tensor(incompatible)
        return op(self, other)
    f.__name__ = op.__name__
    return f


def unhashable(kind):
    def f(self):
        raise TypeError(f"{kind} is unhashable. Instead, use {kind.lower()}.ref() as the key."
                        + (f" ({kind}: {self!r})" if kind == "Variable" else ""))
    return f


Tensor.__eq__ = _compare(Tensor._equal, False)
Tensor.__ne__ = _compare(Tensor._not_equal, True)
Tensor.__hash__ = unhashable("Tensor")
Tensor.ref = Tensor.experimental_ref = lambda self: Reference(self)
