"""Shape and data-movement ops on eager string tensors: an eager jf.string tensor (a numpy
object array of bytes, core/strings.py) is rearranged here with numpy and stays a string
tensor, with TF's results and error types, without a round trip through a C++ kString value.
Inside a traced function the ops' C++ kernels move the strings (docs/py_function_nest_strings.md)."""
import numpy as np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.strings import StringTensor, constant, to_string_array


def is_eager_string(x):
    return type(x) is StringTensor or isinstance(x, (str, bytes))


def any_eager_string(values):
    return any(is_eager_string(v) or (isinstance(v, (list, tuple)) and v and any_eager_string(v)) for v in values)


def _ints(v):
    if isinstance(v, _C.Tensor):
        v = v.numpy()
    return np.asarray(v, dtype=np.int64)


def _axis(axis, rank, op):
    a = int(_ints(axis).reshape(-1)[0])
    if not -rank <= a < rank:
        raise InvalidArgumentError(f"{op}: axis {a} is out of the valid range [{-rank}, {rank}) for a tensor of "
                                   f"rank {rank - (op == 'ExpandDims')}")
    return a + rank if a < 0 else a


def _out(a):
    return constant(np.asarray(a, dtype=object))


def reshape(tensor, shape):
    a = to_string_array(tensor)
    dims = [int(d) for d in _ints(shape).reshape(-1)]
    known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    if dims.count(-1) > 1:
        raise InvalidArgumentError(f"Reshape: only one input size may be -1, not both in {dims}")
    if (a.size != known if -1 not in dims else (known == 0 or a.size % known)):
        raise InvalidArgumentError(f"Input to reshape is a tensor with {a.size} values, but the requested shape "
                                   f"has {known} (op Reshape, shapes {list(a.shape)} and {dims})")
    return _out(a.reshape(dims))


def expand_dims(input, axis):
    a = to_string_array(input)
    return _out(np.expand_dims(a, _axis(axis, a.ndim + 1, "ExpandDims")))


def squeeze(input, axis):
    a = to_string_array(input)
    if not axis:
        return _out(a.reshape([d for d in a.shape if d != 1]))
    axes = sorted({_axis(x, max(a.ndim, 1), "Squeeze") for x in axis})
    for x in axes:
        if a.shape[x] != 1:
            raise InvalidArgumentError(f"Can not squeeze dim[{x}], expected a dimension of 1, got {a.shape[x]} "
                                       f"(op Squeeze, shape {list(a.shape)})")
    return _out(np.squeeze(a, tuple(axes)))


def _same_rank(arrays, op):
    shapes = [list(a.shape) for a in arrays]
    if any(len(s) != len(shapes[0]) for s in shapes):
        raise InvalidArgumentError(f"{op}: ranks of all input tensors should match: shapes {shapes}")


def concat(values, axis):
    arrays = [to_string_array(v) for v in values]
    _same_rank(arrays, "ConcatV2")
    if arrays[0].ndim == 0:
        raise InvalidArgumentError("ConcatOp : Can't concatenate scalars (use tf.stack instead)")
    ax = _axis(axis, arrays[0].ndim, "ConcatV2")
    try:
        return _out(np.concatenate(arrays, ax))
    except ValueError:
        raise InvalidArgumentError(f"ConcatOp : Dimension mismatch in the inputs of ConcatV2 along axis {ax}: "
                                   f"shapes {[list(a.shape) for a in arrays]}") from None


def stack(values, axis):
    arrays = [to_string_array(v) for v in values]
    if any(a.shape != arrays[0].shape for a in arrays):
        raise InvalidArgumentError(f"Shapes of all inputs must match: values[0].shape = {list(arrays[0].shape)} "
                                   f"!= values[i].shape for some i: {[list(a.shape) for a in arrays]} (op Pack)")
    return _out(np.stack(arrays, _axis(axis, arrays[0].ndim + 1, "Pack")))


def unstack(value, num, axis):
    a = to_string_array(value)
    ax = _axis(axis, a.ndim, "Unpack")
    if num is not None and num != a.shape[ax]:
        raise InvalidArgumentError(f"Input shape axis {ax} must equal {num}, got shape {list(a.shape)}")
    return [_out(x) for x in np.moveaxis(a, ax, 0)]


def gather(params, indices, axis, batch_dims):
    a = to_string_array(params)
    idx = _ints(indices)
    ax = _axis(0 if axis is None else axis, a.ndim, "GatherV2")
    if batch_dims:
        raise NotImplementedError("jf.gather of an eager string tensor takes batch_dims=0 only")
    bad = idx[(idx < 0) | (idx >= a.shape[ax])]
    if bad.size:
        raise InvalidArgumentError(f"indices = {int(bad.reshape(-1)[0])} is not in [0, {a.shape[ax]}) "
                                   f"(op GatherV2, params shape {list(a.shape)})")
    return _out(np.take(a, idx, axis=ax))


def transpose(a, perm):
    arr = to_string_array(a)
    perm = list(range(arr.ndim))[::-1] if perm is None else [int(p) % max(arr.ndim, 1) for p in _ints(perm)]
    if sorted(perm) != list(range(arr.ndim)):
        raise InvalidArgumentError(f"transpose expects a vector of size {arr.ndim}. But input(1) is a vector of "
                                   f"size {len(perm)}")
    return _out(np.transpose(arr, perm))


def tile(input, multiples):
    a = to_string_array(input)
    m = [int(x) for x in _ints(multiples).reshape(-1)]
    if len(m) != a.ndim:
        raise InvalidArgumentError(f"Expected multiples argument to be a vector of length {a.ndim} but got length "
                                   f"{len(m)} (op Tile)")
    return _out(np.tile(a, m))


def reverse(tensor, axis):
    a = to_string_array(tensor)
    return _out(np.flip(a, tuple(_axis(x, a.ndim, "ReverseV2") for x in _ints(axis).reshape(-1))))


def where(condition, x, y):
    c = condition.numpy() if hasattr(condition, "numpy") else np.asarray(condition)
    xa, ya = to_string_array(x), to_string_array(y)
    try:
        return _out(np.where(c.astype(bool), xa, ya))
    except ValueError:
        raise InvalidArgumentError(f"condition, then and else must be broadcastable: shapes {list(c.shape)}, "
                                   f"{list(xa.shape)} and {list(ya.shape)} (op SelectV2)") from None


def fill(dims, value):
    v = to_string_array(value)
    if v.ndim:
        raise InvalidArgumentError(f"value must be a scalar, got shape {list(v.shape)} (op Fill)")
    return _out(np.full([int(d) for d in _ints(dims).reshape(-1)], v[()], dtype=object))


def broadcast_to(input, shape):
    a = to_string_array(input)
    dims = [int(d) for d in _ints(shape).reshape(-1)]
    try:
        return _out(np.broadcast_to(a, dims))
    except ValueError:
        raise InvalidArgumentError(f"Unable to broadcast tensor of shape {list(a.shape)} to tensor of shape "
                                   f"{dims} (op BroadcastTo)") from None


def shape(input, out_type):
    return _C.convert_to_tensor(np.asarray(to_string_array(input).shape, np.int64), _dt.as_dtype(out_type))


def size(input, out_type):
    return _C.convert_to_tensor(np.int64(to_string_array(input).size), _dt.as_dtype(out_type))
