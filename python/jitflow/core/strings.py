"""String tensors (jf.string): eager string tensors are immutable numpy object arrays of bytes
(StringTensor); inside a traced function a string is a graph value of the C++ dtype kString,
like any other dtype: a jf.function argument is a placeholder (one trace per shape), and the
string ops record graph nodes (cpp/kernels/string_ops.cc), never compiled (XLA has no
strings). A StringTensor converts to a kString tensor where C++ takes a tensor (its
_c_tensor()), and a kString value C++ gives back to Python is one (_from_c).
docs/py_function_nest_strings.md says what runs where."""
import numpy as np

from .. import _C
from .errors import InvalidArgumentError
from .export import export
from .shapes import TensorShape

string = export("string", "dtypes.string")(_C.DType.string)


def is_string_dtype(d):
    if isinstance(d, _C.DType):
        return d == string
    return (isinstance(d, str) and d == "string") or d is bytes or d is str


def _first_leaf(v):
    while isinstance(v, (list, tuple)) and v:
        v = v[0]
    return v


def is_string_value(value, dtype=None):
    """True when constant/convert_to_tensor should make a string tensor of value."""
    if dtype is not None and is_string_dtype(dtype):
        return True
    if isinstance(value, (StringTensor, str, bytes)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "US" or (value.dtype.kind == "O" and value.size > 0
                                            and isinstance(value.flat[0], (str, bytes)))
    return isinstance(value, (list, tuple)) and isinstance(_first_leaf(value), (str, bytes))


def _encode(x, whole):
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, np.bytes_):
        return bytes(x)
    if isinstance(x, (int, float, bool, np.number, np.bool_)):
        raise TypeError(f"Cannot convert {whole!r} to EagerTensor of dtype string")
    raise TypeError(f"Cannot convert {x!r} (of type {type(x).__name__}) to a string tensor")


def _nested_shape(v, whole):
    if not isinstance(v, (list, tuple)):
        return ()
    if not v:
        return (0,)
    inner = [_nested_shape(x, whole) for x in v]
    if any(s != inner[0] for s in inner) or (
            inner[0] == () and any(isinstance(x, (list, tuple)) for x in v)):
        raise ValueError("Can't convert non-rectangular Python sequence to Tensor.")
    return (len(v),) + inner[0]


def to_string_array(value):
    """value (a string tensor, str, bytes, nested lists of them, or a numpy array of them) as a
    read-only object array of bytes."""
    if isinstance(value, StringTensor):
        return value._value
    if isinstance(value, _C.Tensor) or hasattr(value, "__jf_tensor__"):
        dt = getattr(value, "dtype", None)
        raise TypeError(f"Cannot convert a tensor of dtype {getattr(dt, 'name', dt)} to a string tensor "
                        "(use jf.strings.as_string)")
    if isinstance(value, np.ndarray):
        flat = [_encode(x, value) for x in value.ravel().tolist()]
        shape = value.shape
    else:
        shape = _nested_shape(value, value)
        flat = []

        def walk(v):
            if isinstance(v, (list, tuple)):
                for x in v:
                    walk(x)
            else:
                flat.append(v)
        walk(value)
        kinds = {isinstance(x, (str, bytes, np.bytes_)) for x in flat}
        if len(kinds) > 1:
            raise ValueError("Can't convert Python sequence with mixed types to Tensor.")
        flat = [_encode(x, value) for x in flat]
    a = np.empty(len(flat), dtype=object)
    a[:] = flat
    a = a.reshape(shape)
    a.flags.writeable = False
    return a


class StringTensor:
    """An eager tensor of dtype jf.string: shape, dtype, numpy() (bytes, or an object array of
    bytes, as TF), indexing, len/iter, == and != elementwise (a bool jf.Tensor), + (concatenation)."""

    __slots__ = ("__weakref__", "_c", "_value")
    __array_priority__ = 200  # numpy defers `ndarray == StringTensor` to us
    _is_symbolic = False

    def __init__(self, value):
        self._value = to_string_array(value)
        self._c = None

    def _c_tensor(self):
        """This value as a C++ tensor of dtype string (made once)."""
        if self._c is None:
            self._c = _C.string_tensor(self._value.ravel().tolist(), list(self._value.shape))
        return self._c

    @classmethod
    def _from_c(cls, t):
        """A C++ string tensor's value as an eager string tensor (C++ calls this for every
        kString value it gives Python: function outputs, callbacks' inputs)."""
        a = t.numpy()
        if not isinstance(a, np.ndarray):  # a scalar's numpy() is its bytes
            a = np.array(a, dtype=object)
        a.flags.writeable = False
        out = object.__new__(cls)
        out._value, out._c = a, t
        return out

    @property
    def dtype(self):
        return string

    @property
    def shape(self):
        return TensorShape(self._value.shape)

    def get_shape(self):
        return self.shape

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def device(self):
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    def numpy(self):
        a = self._value
        return a[()] if a.ndim == 0 else a.copy()

    def _text(self, is_repr):
        a = self._value
        if a.ndim == 0:
            return str(a[()])
        text = np.array_repr(a) if is_repr else np.array2string(a)
        return "\n" + text if "\n" in text else text

    def __repr__(self):
        return f"<jf.Tensor: shape={self.shape}, dtype=string, numpy={self._text(True)}>"

    def __str__(self):
        return f"jf.Tensor({self._text(False)}, shape={self.shape}, dtype=string)"

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def ref(self):
        return _Ref(self)

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return (StringTensor(self._value[i]) for i in range(self._value.shape[0]))

    def __getitem__(self, idx):
        def plain(i):
            if isinstance(i, _C.Tensor):
                return int(i)
            return i
        idx = tuple(plain(i) for i in idx) if isinstance(idx, tuple) else plain(idx)
        try:
            return StringTensor(self._value[idx])
        except IndexError as e:
            raise InvalidArgumentError(f"slice index out of bounds: {e} (shape {list(self._value.shape)})") from None

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. "
                             "Use a.any() or a.all()")
        return bool(self._value.reshape(())[()])

    def _compare(self, other, ne):
        if other is None:  # TF 2: a Python bool
            return bool(ne)
        b = to_string_array(other)
        try:
            shape = np.broadcast_shapes(self._value.shape, b.shape)
        except ValueError:  # TF 2's __eq__: incompatible shapes compare unequal
            return _C.convert_to_tensor(bool(ne))
        x, y = np.broadcast_to(self._value, shape), np.broadcast_to(b, shape)
        eq = np.fromiter((p == q for p, q in zip(x.ravel().tolist(), y.ravel().tolist())), bool,
                         count=x.size).reshape(shape)
        return _C.convert_to_tensor(~eq if ne else eq)

    def __eq__(self, other):
        return self._compare(other, False)

    def __ne__(self, other):
        return self._compare(other, True)

    def __add__(self, other):
        return join([self, other])

    def __radd__(self, other):
        return join([other, self])

    def __array__(self, dtype=None, copy=None):
        return np.array(self._value, dtype=dtype or object)

    def __reduce__(self):
        return StringTensor, (self.numpy(),)

    def __copy__(self):
        return self


class _Ref:
    """tensor.ref(): a hashable reference to a string tensor (by identity), as TF's."""

    __slots__ = ("_t",)

    def __init__(self, t):
        self._t = t

    def deref(self):
        return self._t

    def __hash__(self):
        return id(self._t)

    def __eq__(self, other):
        return isinstance(other, _Ref) and other._t is self._t


def constant(value, dtype=None, shape=None):
    """jf.constant / jf.convert_to_tensor of a string value."""
    if dtype is not None and not is_string_dtype(dtype):
        if isinstance(value, StringTensor):
            raise ValueError(f"Tensor conversion requested dtype {getattr(dtype, 'name', dtype)} for "
                             f"Tensor with dtype string: {value!r}")
        first = _first_leaf(value.tolist() if isinstance(value, np.ndarray) else value)
        name = {"float32": "float", "float64": "double"}.get(getattr(dtype, "name", ""), getattr(dtype, "name", dtype))
        raise TypeError(f"Cannot convert {first!r} to EagerTensor of dtype {name}")
    if isinstance(value, StringTensor) and shape is None:
        return value
    a = to_string_array(value)
    if shape is not None:
        dims = tuple(int(d) for d in shape)
        n = int(np.prod(dims, dtype=np.int64))
        if a.size == n:
            a = a.reshape(dims)
        elif a.size == 1:
            a = np.full(dims, a.reshape(())[()], dtype=object)
        else:
            raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor {a} has "
                            f"{a.size} elements, but got `shape` {dims} with {n} elements).")
    t = object.__new__(StringTensor)
    a = a.view()
    a.flags.writeable = False
    t._value, t._c = a, None
    return t


# ---- arguments of string ops, graph nodes, and the concatenation `+` makes ------------------

def is_symbolic(x):
    return isinstance(x, _C.Tensor) and x._is_symbolic


def as_graph_input(x):
    """x for a graph op's input list: a tensor as it is, any other value as a string tensor."""
    if isinstance(x, (_C.Tensor, StringTensor)) or hasattr(x, "__jf_tensor__"):
        return x
    return constant(x)


def _strings_arg(op, x):
    """An eager string op's argument as an object array of bytes; a non-string tensor is TF's
    error."""
    if isinstance(x, (_C.Tensor,)) or hasattr(x, "__jf_tensor__"):
        dt = x.dtype.name
        raise InvalidArgumentError(f"cannot compute {op} as input #0(zero-based) was expected to be a "
                                   f"string tensor but is a {dt} tensor")
    return to_string_array(x)


def _string_operator(op, reverse, self, other):
    """`+`, `==` and `!=` of a traced string tensor (the C++ operators hand them here)."""
    if op == "AddV2":
        return join([other, self] if reverse else [self, other])
    if isinstance(other, _C.Tensor) and other.dtype != string:  # TF's graph-mode TypeError
        raise TypeError(f"Input 'y' of '{op}' Op has type {other.dtype.name} that does not match type "
                        "string of argument 'x'.")
    other = as_graph_input(other)  # TF's TypeError for a number
    a, b = tuple(self.shape), tuple(other.shape)
    for x, y in zip(reversed(a), reversed(b)):
        if x is not None and y is not None and x != y and x != 1 and y != 1:
            return _C.convert_to_tensor(op == "NotEqual")  # TF 2's incompatible shapes
    return _C.execute(op, [self, other])


@export("strings.join")
def join(inputs, separator="", name=None):
    """Elementwise concatenation of string tensors of one shape (scalars broadcast), TF's StringJoin."""
    inputs = list(inputs)
    if any(is_symbolic(x) for x in inputs):
        for x in inputs:
            if isinstance(x, _C.Tensor) and x.dtype != string:
                dts = ", ".join(getattr(y, "dtype", string).name for y in inputs)
                raise TypeError(f"Tensors in list passed to 'inputs' of 'StringJoin' Op have types [{dts}] "
                                "that do not match expected type string.")
        return _C.execute("StringJoin", [as_graph_input(x) for x in inputs],
                          {"separator": _encode(separator, separator).decode("utf-8")}, name)
    arrays = [_strings_arg("StringJoin", x) for x in inputs]
    shape = ()
    for a in arrays:
        if a.ndim:
            if shape and a.shape != shape:
                raise InvalidArgumentError(f"Input shapes do not match: {list(shape)} vs. {list(a.shape)} "
                                           "[Op:StringJoin]")
            shape = a.shape
    sep = _encode(separator, separator)
    cols = [np.broadcast_to(a, shape).ravel().tolist() for a in arrays]
    out = [sep.join(parts) for parts in zip(*cols)] if cols else [b""] * int(np.prod(shape))
    return constant(np.array(out + [None], dtype=object)[:-1].reshape(shape))


_C.set_string_tensor_type(StringTensor)
