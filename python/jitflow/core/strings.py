"""String tensors (jf.string) as Python values: a string tensor is an
immutable numpy object array of bytes, never a node of a traced graph.

Why not a C++ dtype: every kernel family, the op records' dtype columns, the coverage harness
and both code generators switch on the C++ DType; strings are eager-only in TF's XLA anyway.
The departure this costs (docs/py_function_nest_strings.md): a jf.function keys a string tensor
argument by its value, as it keys Python strings (TF traces Python strings per value too, but a
tf.string tensor once); string ops run while a function is traced, so only their numeric
results (Const nodes) reach the graph, and string ops on a traced numeric tensor raise."""
import numpy as np

from .. import _C
from .errors import InvalidArgumentError
from .export import export
from .shapes import TensorShape


class StringDType:
    """jf.string: the dtype of string tensors (TF's tf.string)."""

    name = "string"
    is_floating = is_integer = is_bool = is_complex = is_unsigned = is_quantized = False
    is_numpy_compatible = True
    as_numpy_dtype = object
    size = 0

    def __repr__(self):
        return "jf.string"

    def __str__(self):
        return "<dtype: 'string'>"

    def __eq__(self, other):
        return isinstance(other, StringDType) or other == "string"

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash("jf.string")

    def __reduce__(self):
        return "string"


string = export("string", "dtypes.string")(StringDType())


def is_string_dtype(d):
    return isinstance(d, StringDType) or (isinstance(d, str) and d == "string") or d is bytes or d is str


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

    __slots__ = ("__weakref__", "_value")
    __array_priority__ = 200  # numpy defers `ndarray == StringTensor` to us
    _is_symbolic = False

    def __init__(self, value):
        self._value = to_string_array(value)

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

    def __jf_value_key__(self):
        """The bytes jf.function keys this argument by (its shape and contents)."""
        a = self._value
        parts = [repr(a.shape).encode()] + [len(x).to_bytes(8, "little") + x for x in a.ravel().tolist()]
        return b"".join(parts)

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
    t._value = a
    return t


# ---- arguments of string ops, and the concatenation `+` makes -----------------------------

def _static(op, x):
    """x itself, or for a traced tensor its value when it is a constant of the trace; anything
    else raises TypeError."""
    if not (isinstance(x, _C.Tensor) and x._is_symbolic):
        return x
    ref = x._node_ref
    if ref is not None and ref[0].op == "Const":
        return _C.evaluate_lifted(x)
    _symbolic_refusal(op, x)


def _symbolic_refusal(op, x):
    if isinstance(x, _C.Tensor) and x._is_symbolic:
        raise TypeError(f"jf.strings.{op} of a traced tensor ({x!r}): jitflow's string tensors are "
                        "eager Python values, so string ops run while a jf.function is traced and "
                        "cannot take a tensor whose value is only known when it runs")


def _strings_arg(op, x):
    x = _static(op, x)
    if isinstance(x, (_C.Tensor,)) or hasattr(x, "__jf_tensor__"):
        dt = x.dtype.name
        raise InvalidArgumentError(f"cannot compute {op} as input #0(zero-based) was expected to be a "
                                   f"string tensor but is a {dt} tensor")
    return to_string_array(x)


@export("strings.join")
def join(inputs, separator="", name=None):
    """Elementwise concatenation of string tensors of one shape (scalars broadcast), TF's StringJoin."""
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
