"""TF-named op functions. Each is a thin call into the C++ dispatcher (`_C.execute`): the op
type, its inputs and attrs. Argument normalisation (axis lists, default perms) is here; shape
and dtype rules, kernels and errors live in C++."""
import builtins
import functools

import numpy as _np

from .. import _C
from .._C import Tensor
from ..core import device as _device
from ..core import dtypes as _dt
from ..core import strings as _strings
from ..core.errors import InvalidArgumentError
from ..core.export import export, exported
from . import string_arrays as _sa
from .complex_ops import abs, conj, real  # noqa: F401 (tf.abs of complex values; before the generated wrappers)
from .dispatch import (
    OP,
    axis_tensor,
    holds_tensor,
    int_tensor,
    pack,
    run,
    run_n,
    scalar_ints,
    to_integer,
    to_ints,
    to_tensor,
)

# Module globals: one lookup each on the smallest calls' path.
_ndarray, _eager_array_tensor, _transpose_reversed = _np.ndarray, _C.eager_array_tensor, _C.transpose_reversed


def _fast(kind):
    """The function behind a C++ front that runs its commonest eager call (positional
    arguments: an ndarray, an eager CPU tensor) directly and passes every other call to it;
    the front carries its name, doc and signature."""
    def wrap(f):
        return functools.update_wrapper(_C.fast_front(kind, f), f)
    return wrap


# ---- creation ------------------------------------------------------------------------
@export('constant')
@_fast('constant')
def constant(value, dtype=None, shape=None, name=None):
    if type(value) is _ndarray and dtype is None and shape is None and name is None:
        # The common eager case (a numeric array, nothing else asked, not tracing, no GPU
        # scope): converted in C++, which copies a contiguous native-order array's bytes.
        t = _eager_array_tensor(value)
        if t is not None:
            return t
    if _strings.is_string_value(value, dtype):  # jf.string tensors are Python values (core/strings.py)
        return _strings.constant(value, dtype, shape)
    if (isinstance(value, Tensor) and value._is_symbolic) or \
            (isinstance(value, (list, tuple)) and _C.is_tracing() and holds_tensor(value, _is_graph_value)):
        # TF's graph-mode constant takes values, not graph tensors (a Const holding a symbolic
        # tensor has no value to hold); jf.convert_to_tensor packs a list of them.
        raise TypeError(f"Expected any non-tensor type, but got a tensor instead: {value!r}. "
                        "jf.constant takes values; use jf.identity or jf.cast on a graph tensor, or "
                        "jf.convert_to_tensor or jf.stack on a list holding graph tensors.")
    t = _C.convert_to_tensor(value, dtype)
    if _C.is_tracing():  # inside a trace a constant is a Const node, like TF's graph mode
        if shape is not None:
            t = _graph_constant_shaped(t, shape)
        return run(OP["Const"], (), {"value": t, "dtype": t.dtype}, name)
    if shape is not None:
        t = _eager_constant_shaped(t, value, shape)
    if name is not None or _device.current().startswith("/GPU"):
        t = identity(t, name=name)  # under jf.device("/GPU:0") the constant lives there, as in TF
    return t


def _dims(shape):
    return [to_integer(s) for s in (shape.numpy().tolist() if isinstance(shape, Tensor) else shape)]


def _eager_constant_shaped(t, value, shape):
    """TF's eager tf.constant(value, shape=): the value itself when the shapes agree, reshaped
    when the sizes agree, else filled from a single element."""
    dims = _dims(shape)
    for d in dims:
        if d < 0:
            raise ValueError(f"Dimension {d} must be >= 0")
    if tuple(dims) == t.shape:
        return t
    n, nt = _prod(dims), _numel(t)
    if nt == n:
        return reshape(t, dims)
    if nt == 1:
        if t.ndim > 1:  # TF's Fill takes a scalar or a 1-element vector
            raise InvalidArgumentError(f"Fill: value must represent a scalar, got shape {list(t.shape)}")
        return fill(dims, reshape(t, []))
    raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor {t.numpy()} "
                    f"(converted from {value!r}) has {nt} elements, but got `shape` {tuple(dims)} "
                    f"with {n} elements).")


def _graph_constant_shaped(t, shape):
    """TF's graph tf.constant(value, shape=) (make_tensor_proto with allow_broadcast): a size-0
    shape is empty, a scalar or 1-element vector is broadcast, an equal size reshaped. Computed
    on the value, so the trace holds one Const."""
    import numpy as np
    dims = _dims(shape)
    a = t.numpy()
    if any(d < 0 for d in dims) or not (_prod(dims) == 0 or a.shape in ((), (1,)) or a.size == _prod(dims)):
        raise TypeError(f"Expected Tensor's shape: {tuple(dims)}, but got {a.shape}.")
    if _prod(dims) == 0:
        a = np.zeros(dims, a.dtype)
    elif a.size == _prod(dims):
        a = a.reshape(dims)
    else:
        a = np.full(dims, a.reshape(()), a.dtype)
    return _C.convert_to_tensor(a)


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _numel(t):
    n = 1
    for s in t.shape:
        n *= s
    return n


@export('convert_to_tensor')
def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    # dtype_hint is TF's preferred_dtype: used when the value can take it, else ignored.
    if isinstance(value, (list, tuple)) and holds_tensor(value):
        # TF's auto-packing; a dtype asked for (or preferred) casts the tensors to it, as TF.
        if dtype is not None:
            return pack(value, _dt.as_dtype(dtype))
        if dtype_hint is not None:
            try:
                return pack(value, _dt.as_dtype(dtype_hint))
            except (TypeError, ValueError):
                pass
        return pack(value)
    if _strings.is_string_value(value, dtype):
        return _strings.constant(value, dtype)
    return _C.convert_to_tensor(value, dtype, dtype_hint, True)


def _is_graph_value(x):
    """A tensor that has no value while tracing: a symbolic one, or a variable's read."""
    return (isinstance(x, Tensor) and x._is_symbolic) or hasattr(x, "__jf_tensor__")


@export('identity')
def identity(input, name=None):
    return run(OP["Identity"], (input,), None, name)


@export('fill')
def fill(dims, value, name=None):
    if _sa.is_eager_string(value):
        return _sa.fill(dims, value)
    value = to_tensor(value)
    return run(OP["Fill"], (_shape_vector(dims, "Fill", lambda d: [d, value]), value), None, name)


def _shape_vector(shape, op, inputs=None, always=False):
    """A shape argument as an int vector: TF's kernels (Fill, Reshape) take a scalar as a
    vector of one, eagerly; their graph shape functions refuse a traced scalar, which
    zeros/ones (`always`) reshape to a vector first, as TF's Python does."""
    if not isinstance(shape, Tensor):
        scalar = getattr(shape, "ndim", None) == 0 or not (hasattr(shape, "__len__") or hasattr(shape, "__iter__"))
        return to_ints([shape] if scalar else shape)
    if shape.shape.rank:  # rank >= 1: the op checks it is a vector
        return shape
    if shape._is_symbolic and not always and shape.shape is not None:
        shapes = ", ".join(str(list(t.shape)) for t in inputs(shape))
        raise ValueError(f"Shape must be rank 1 but is rank 0 for '{op}' with input shapes: {shapes}.")
    return run(OP["Reshape"], (shape, int_tensor([-1])), None, None)


def _scalar_of(value, dtype):
    dtype = _dt.as_dtype(dtype)
    return _C.convert_to_tensor(builtins.bool(value) if dtype == _dt.bool else value, dtype)


@export('zeros')
def zeros(shape, dtype=_dt.float32, name=None):
    zero = _strings.constant(b"") if _strings.is_string_dtype(dtype) else _scalar_of(0, dtype)  # TF: empty strings
    return fill(_shape_vector(shape, "Fill", always=True), zero, name=name)


@export('ones')
def ones(shape, dtype=_dt.float32, name=None):
    return fill(_shape_vector(shape, "Fill", always=True), _scalar_of(1, dtype), name=name)


@export('zeros_like')
def zeros_like(input, dtype=None, name=None):
    y = run(OP["ZerosLike"], (input,), None, name)
    return y if dtype is None else cast(y, dtype)


@export('ones_like')
def ones_like(input, dtype=None, name=None):
    y = run(OP["OnesLike"], (input,), None, name)
    return y if dtype is None else cast(y, dtype)


@export('range')
def range(start, limit=None, delta=1, dtype=None, name="range"):
    if limit is None:
        start, limit = 0, start
    if dtype is None:
        vals = (start, limit, delta)
        if any(isinstance(v, Tensor) for v in vals):
            dtype = max((v.dtype for v in vals if isinstance(v, Tensor)), key=lambda d: d.value)
        elif any(isinstance(v, float) for v in vals):
            dtype = _dt.float32
        elif all(-2**31 <= int(v) < 2**31 for v in vals):
            dtype = _dt.int32
        else:  # like TF: a Python int that does not fit int32 converts to int64
            dtype = _dt.int64
    args = tuple(v if isinstance(v, Tensor) and v.dtype == dtype else
                 (cast(v, dtype) if isinstance(v, Tensor) else _C.convert_to_tensor(v, dtype))
                 for v in (start, limit, delta))
    return run(OP["Range"], args, None, None if name == "range" else name)


# ---- elementwise ---------------------------------------------------------------------
def _composite(fn, op, x, y=None, binary=False):
    """TF's dispatch of an elementwise op to a composite tensor (RaggedTensor, SparseTensor):
    its __jf_elementwise__ applies fn to its values, or returns NotImplemented (then the
    original TypeError stands)."""
    for arg, other, reverse in ((x, y, False), (y, x, True)) if binary else ((x, None, False),):
        handler = getattr(type(arg), "__jf_elementwise__", None)
        if handler is not None:
            out = handler(arg, fn, op, other, reverse)
            if out is not NotImplemented:
                return out
    return NotImplemented


def _unary(op):
    oid = OP[op]

    def f(x, name=None):
        try:
            return run(oid, (x,), None, name)
        except TypeError:
            out = _composite(f, op, x)
            if out is NotImplemented:
                raise
            return out
    f.__name__ = op
    f.__doc__ = f"Elementwise {op} (TF op type `{op}`)."
    return f


def _binary(op):
    oid = OP[op]

    def f(x, y, name=None):
        try:
            return run(oid, (x, y), None, name)
        except TypeError:
            out = _composite(f, op, x, y, binary=True)
            if out is NotImplemented:
                raise
            return out
    f.__name__ = op
    f.__doc__ = f"Elementwise {op} with numpy broadcasting (TF op type `{op}`)."
    return f


# Wrappers of the elementwise ops not written by hand are made from their records
# (cpp/ir/ops.def: lowering kind unary, binary or math, with their public names); see the
# end of this module.

# ---- debugging: CheckNumerics takes its message as an attr (the asserts: debugging.py) ----
@export("debugging.check_numerics")
def check_numerics(tensor, message, name=None):
    """TF's tf.debugging.check_numerics: `tensor` itself, or InvalidArgumentError
    "<message> : Tensor had NaN values" (Inf, Inf and NaN) when it holds any, eagerly, traced
    and compiled."""
    if isinstance(message, bytes):
        message = message.decode()
    if not isinstance(message, str):
        raise TypeError(f"check_numerics: message must be a string, got {message!r}")
    return run(OP["CheckNumerics"], (tensor,), {"message": message}, name)


@export('divide', 'math.divide')
def divide(x, y, name=None):
    """x / y; integer inputs are divided as float64, like tf.math.divide."""
    return _C.truediv(x, y, name)


truediv = export("truediv", "math.truediv")(divide)


@export("math.polyval")
def polyval(coeffs, x, name=None):
    """coeffs[0] * x**(n-1) + ... + coeffs[n-1] by Horner's rule, as tf.math.polyval (a
    composition of Mul and AddV2); zeros_like(x) for no coefficients."""
    if not isinstance(coeffs, list):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}.")  # noqa: TRY004 (TF raises ValueError)
    x = convert_to_tensor(x)
    if not coeffs:
        return zeros_like(x)
    p = convert_to_tensor(coeffs[0], dtype_hint=x.dtype)
    for c in coeffs[1:]:
        p = convert_to_tensor(c, dtype_hint=x.dtype) + p * x
    return p


@export('add_n', 'math.add_n')
def add_n(inputs, name=None):
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: inputs must be a non-empty list of tensors")
    return run(OP["AddN"], inputs, None, name)


@export('cast', 'dtypes.cast')
def cast(x, dtype, name=None):
    try:
        return _C.cast(x, _dt.as_dtype(dtype), name)
    except TypeError:
        out = _composite(lambda v: cast(v, dtype), "Cast", x)
        if out is NotImplemented:
            raise
        return out


def where_coordinates(condition, name=None):
    """tf.where(condition): int64 [number of true (nonzero) elements, rank], row-major."""
    return run(OP["Where"], (to_tensor(condition),), None, name)


@export('bitcast')
def bitcast(input, type, name=None):
    """TF's tf.bitcast: the same bytes as `type`; a narrower type adds a last dim of the size
    ratio, a wider one consumes a last dim of that size."""
    return run(OP["Bitcast"], (to_tensor(input),), {"type": _dt.as_dtype(type)}, name)


@export('saturate_cast', 'dtypes.saturate_cast')
def saturate_cast(value, dtype, name=None):
    """TF's tf.dtypes.saturate_cast: clipped to the bounds of `dtype` that the input dtype can
    hold (a bound it rounds beyond is moved one step toward zero), then cast. A complex input
    to a real dtype keeps its real part; complex to complex is a cast."""
    value = to_tensor(value)
    dtype = _dt.as_dtype(dtype)
    in_dtype = value.dtype
    if in_dtype.is_complex:
        if dtype.is_complex:
            return cast(value, dtype, name)
        in_dtype = in_dtype.real_dtype
        value = cast(value, in_dtype)  # the real part
    out_real = dtype.real_dtype
    np_dtype = in_dtype.as_numpy_dtype
    try:
        promoted = _np.promote_types(np_dtype, out_real.as_numpy_dtype)
    except TypeError:
        promoted = float
    with _np.errstate(over="ignore", invalid="ignore"):  # as TF: a bound beyond the input dtype
        lo = np_dtype(_np.maximum(in_dtype.min, out_real.min))
        hi = np_dtype(_np.minimum(float(in_dtype.max), float(out_real.max)))
    if _np.array([lo, out_real.min], dtype=promoted)[0] < _np.array([lo, out_real.min], dtype=promoted)[1]:
        lo = _np.nextafter(lo, np_dtype(0), dtype=np_dtype)
    if _np.array([hi, out_real.max], dtype=promoted)[0] > _np.array([hi, out_real.max], dtype=promoted)[1]:
        hi = _np.nextafter(hi, np_dtype(0), dtype=np_dtype)
    value = run(OP["Minimum"], (value, to_tensor(_np.asarray(hi, np_dtype))), None, None)
    value = run(OP["Maximum"], (value, to_tensor(_np.asarray(lo, np_dtype))), None, None)
    return cast(value, dtype, name)


@export('where')
def where(condition, x=None, y=None, name=None):
    if x is None and y is None:  # TF's op Where: the coordinates of the true elements
        return where_coordinates(condition, name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    if _sa.is_eager_string(x) or _sa.is_eager_string(y):
        return _sa.where(condition, x, y)
    # Python values take the other branch's dtype (not the bool condition's).
    if _is_tensorlike(y) and not _is_tensorlike(x):
        y = to_tensor(y)
        x = _C.convert_to_tensor(x, None, y.dtype)
    else:
        x = to_tensor(x)
        if not _is_tensorlike(y):
            y = _C.convert_to_tensor(y, None, x.dtype)
    return run(OP["SelectV2"], (to_tensor(condition), x, y), None, name)


def _is_tensorlike(v):
    return isinstance(v, Tensor) or hasattr(v, "__jf_tensor__")


@export('math.logical_xor')
def logical_xor(x, y, name="LogicalXor"):
    """x ^ y for bool tensors, composed as TF composes it: (x | y) & ~(x & y)."""
    x, y = to_tensor(x), to_tensor(y)
    both = run(OP["LogicalAnd"], (x, y), None, None)
    return run(OP["LogicalAnd"], (run(OP["LogicalOr"], (x, y), None, None), run(OP["LogicalNot"], (both,), None, None)),
              None, None if name == "LogicalXor" else name)


# ---- linear algebra ------------------------------------------------------------------
@export('matmul', 'linalg.matmul')
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    """a @ b over the last two dims (batch dims broadcast). An adjoint is the transpose of the
    conjugate (the transpose itself for real values); the sparsity hints change nothing."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    if adjoint_a or adjoint_b or transpose_a or transpose_b:
        a, b = to_tensor(a), to_tensor(b)
        if a.dtype.is_complex:
            # MatMul's flags transpose, BatchMatMulV2's take the adjoint (C++ frontend.cc
            # picks by rank): conjugate what the op's flag does not.
            batch = not (a.shape.rank == 2 and b.shape.rank == 2)
            if adjoint_a if not batch else transpose_a:
                a = conj(a)
            if adjoint_b if not batch else transpose_b:
                b = conj(b)
    return _C.matmul(a, b, transpose_a or adjoint_a, transpose_b or adjoint_b, name)


# ---- reductions ----------------------------------------------------------------------
def _reduce(op):
    oid = OP[op]

    def f(input_tensor, axis=None, keepdims=False, name=None):
        if type(input_tensor) is not Tensor and hasattr(input_tensor, "__jf_reduce__"):
            return input_tensor.__jf_reduce__(op, axis, keepdims)  # TF's dispatch (a RaggedTensor)
        x = to_tensor(input_tensor)
        return run(oid, (x, axis_tensor(x, axis)), {"keep_dims": True} if keepdims else None, name)
    f.__name__ = op
    return f


reduce_sum = export("reduce_sum", "math.reduce_sum")(_reduce("Sum"))
reduce_mean = export("reduce_mean", "math.reduce_mean")(_reduce("Mean"))
reduce_max = export("reduce_max", "math.reduce_max")(_reduce("Max"))
reduce_min = export("reduce_min", "math.reduce_min")(_reduce("Min"))
reduce_prod = export("reduce_prod", "math.reduce_prod")(_reduce("Prod"))


@export('argmax', 'math.argmax')
def argmax(input, axis=None, output_type=_dt.int64, name=None):
    if axis is not None and not hasattr(axis, "dtype") and not isinstance(axis, int):
        raise TypeError("axis must be int or Tensor with integer datatype")  # TF's argmax_v2 checks in Python
    return _arg_reduce("ArgMax", input, axis, output_type, name)


@export('argmin', 'math.argmin')
def argmin(input, axis=None, output_type=_dt.int64, name=None):
    return _arg_reduce("ArgMin", input, axis, output_type, name)


def _arg_reduce(op, input, axis, output_type, name):
    dim = scalar_ints(0 if axis is None else axis, op, "dim must be a scalar, but received tensor of shape: {shape}",
                      (input, None))
    return run(OP[op], (input, dim), {"output_type": output_type}, name)


# ---- shapes --------------------------------------------------------------------------
@export('reshape')
@_fast('reshape')
def reshape(tensor, shape, name=None):
    if type(tensor) is _strings.StringTensor:
        return _sa.reshape(tensor, shape)
    if type(shape) is list or type(shape) is tuple:
        shape = to_ints(shape)  # a rank-1 int tensor (packed when it holds graph tensors)
    if not isinstance(shape, Tensor) or shape.ndim == 0:
        tensor = to_tensor(tensor)
        shape = _shape_vector(shape, "Reshape", lambda s: [tensor, s])
    return run(_RESHAPE, (tensor, shape), None, name)


_RESHAPE, _TRANSPOSE = OP["Reshape"], OP["Transpose"]


@export('transpose')
@_fast('transpose')
def transpose(a, perm=None, name=None):
    if perm is None and type(a) is Tensor:  # the reversed dims, directly in C++ when eager
        t = _transpose_reversed(a, name)  # None for a tensor of unknown rank
        if t is not None:
            return t
    if type(a) is _strings.StringTensor:
        return _sa.transpose(a, perm)
    a = to_tensor(a)
    if perm is None:
        perm = list(builtins.range(len(a.shape)))[::-1]
    else:
        # TF accepts entries in [-rank, rank); graphs and kernels get them non-negative (a
        # traced perm through a select that folds away when the perm is a constant).
        r = len(a.shape)
        if isinstance(perm, Tensor) and perm._is_symbolic:
            perm = where(perm < 0, perm + r, perm)
        else:
            if isinstance(perm, Tensor):
                perm = perm.numpy().tolist()
            if hasattr(perm, "__len__"):
                perm = [p + r if -r <= p < 0 else p for p in (to_integer(p) for p in perm)]
    return run(OP["Transpose"], (a, to_ints(perm)), None, name)


@export('concat')
def concat(values, axis, name="concat"):
    values = list(values)
    if len(values) == 1:
        rank = len(axis.shape) if isinstance(axis, Tensor) else _np.ndim(axis)
        if rank:  # TF checks the axis of a single value in Python
            raise ValueError(f"Shape {tuple(axis.shape) if isinstance(axis, Tensor) else _np.shape(axis)} "
                             "must have rank 0")
        return identity(values[0])
    if _sa.any_eager_string(values):
        return _sa.concat(values, axis)
    values = _packed(values, cast=True)
    axis = scalar_ints(axis, "ConcatV2", "axis tensor should be a scalar integer, but got shape {shape}",
                       values + [None], one_element=True)
    return run(OP["ConcatV2"], values + [axis], None, None if name == "concat" else name)


@export('stack')
def stack(values, axis=0, name="stack"):
    values = list(values)
    if _sa.any_eager_string(values):
        return _sa.stack(values, axis)
    if axis == 0 and values and not any(_is_tensorlike(v) for v in values) and not holds_tensor(values):
        # TF converts a list of Python or numpy values as one constant ([1, 2.5] is float32).
        return _C.convert_to_tensor(values)
    values = _packed(values)
    return run(OP["Pack"], values, {"axis": int(axis), "N": len(values)},
              None if name == "stack" else name)


def _packed(values, cast=False):
    """The values of concat or stack, each list or tuple holding tensors packed (TF converts each
    value, auto-packing it); other Python values are left to the op, which converts them to
    the tensors' dtype. With `cast` (concat), a packed list takes the dtype of the first value
    that is a tensor, casting what it holds, as TF's concat converts its values to it; TF's
    stack packs each list on its own."""
    first = next((v.dtype for v in values if isinstance(v, Tensor)), None) if cast else None
    return [pack(v, first) if isinstance(v, (list, tuple)) and holds_tensor(v) else v for v in values]


@export('split')
def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    nm = None if name == "split" else name
    if isinstance(num_or_size_splits, int):
        value = to_tensor(value)
        dim = scalar_ints(axis, "Split", "split_dim must be a scalar but has rank {rank}", (None, value))
        return run_n(OP["Split"], (dim, value), {"num_split": num_or_size_splits}, nm)
    sizes = to_ints(num_or_size_splits)
    dim = scalar_ints(axis, "SplitV", "split_dim_tensor must have exactly one element.", (value, sizes, None),
                      one_element=True)
    return run_n(OP["SplitV"], (value, sizes, dim), {"num_split": sizes.shape[0]}, nm)


@export('squeeze')
def squeeze(input, axis=None, name=None):
    if axis is not None and not hasattr(axis, "__len__"):
        axis = [axis]
    if type(input) is _strings.StringTensor:
        return _sa.squeeze(input, axis)
    return run(OP["Squeeze"], (input,), {"squeeze_dims": list(axis) if axis else []}, name)


@export('expand_dims')
def expand_dims(input, axis, name=None):
    if type(input) is _strings.StringTensor:
        return _sa.expand_dims(input, axis)
    return run(OP["ExpandDims"], (input, to_ints(axis)), None, name)


@export('broadcast_to')
def broadcast_to(input, shape, name=None):
    if type(input) is _strings.StringTensor:
        return _sa.broadcast_to(input, shape)
    return run(OP["BroadcastTo"], (input, to_ints(shape)), None, name)


@export('shape')
def shape(input, out_type=_dt.int32, name=None):
    if type(input) is _strings.StringTensor:
        return _sa.shape(input, out_type)
    return run(OP["Shape"], (input,), {"out_type": out_type}, name)


@export('rank')
def rank(input, name=None):
    return constant(len(to_tensor(input).shape), _dt.int32)


@export('strided_slice')
def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, name=None):
    if strides is None:
        strides = [1] * len(begin)
    attrs = {"begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
             "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}
    return run(OP["StridedSlice"], (input_, to_ints(begin), to_ints(end), to_ints(strides)), attrs, name)


newaxis = None
export("newaxis")(newaxis)


# ---- activations: TF's argument name `features`; LeakyRelu's alpha attr ---------------------
def _activation_op(op, public):
    oid = OP[op]

    def f(features, name=None):
        return run(oid, (features,), None, name)
    f.__name__ = f.__qualname__ = public[0].split(".")[-1]
    f.__doc__ = f"TF's {op} activation op, elementwise."
    return export(*public)(f)


relu6 = _activation_op("Relu6", ("nn.relu6",))
elu = _activation_op("Elu", ("nn.elu",))
selu = _activation_op("Selu", ("nn.selu",))
softplus = _activation_op("Softplus", ("nn.softplus", "math.softplus"))
softsign = _activation_op("Softsign", ("nn.softsign",))


@export("nn.leaky_relu")
def leaky_relu(features, alpha=0.2, name=None):
    """features > 0 ? features : alpha * features (TF's LeakyRelu op; any alpha, not clamped).
    Integer features are cast to float32 first, as TF does."""
    x = to_tensor(features)
    if x.dtype.is_integer:
        x = cast(x, _dt.float32)
    if hasattr(alpha, "item") and not isinstance(alpha, Tensor):  # a numpy scalar or array
        alpha = alpha.item()
    return run(OP["LeakyRelu"], (x,), {"alpha": float(alpha)}, name)


@export("nn.bias_add")
def bias_add(value, bias, data_format=None, name=None):
    """value + bias along value's channel dim: the last ("N...C", the default) or the second
    ("NC..."), as TF's BiasAdd. Hand-written here, before the record's generated wrapper would
    be, for its data_format."""
    if data_format is not None:
        if data_format.startswith("NC"):
            data_format = "NCHW"
        elif data_format.startswith("N") and data_format.endswith("C"):
            data_format = "NHWC"
        else:
            raise ValueError("data_format must be of the form `N...C` or `NC...`")
    x = to_tensor(value)
    b = bias if isinstance(bias, Tensor) else convert_to_tensor(bias, x.dtype)
    return run(OP["BiasAdd"], (x, b), {"data_format": data_format or "NHWC"}, name)


def _export_elementwise():
    """A wrapper `f(x[, y], name=None)` for each unary, binary or math op record whose public
    names have no hand-written function, exported under those names and kept here under the
    first name's leaf (ops.exp, ops.relu) for the package's own use."""
    for r in _C.op_records():
        if r["lower"] not in ("unary", "binary", "math") or not r["py_names"]:
            continue
        if any(exported(n) is not None for n in r["py_names"]):
            continue
        fn = (_unary if r["num_inputs"] == 1 else _binary)(r["name"])
        fn.__name__ = fn.__qualname__ = r["py_names"][0].split(".")[-1]
        export(*r["py_names"])(fn)
        globals().setdefault(fn.__name__, fn)


_export_elementwise()
