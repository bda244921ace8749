"""gather_nd, scatter_nd, tensor_scatter_nd_update/add/sub/max/min and slice on their op
records (GatherNd, ScatterNd, TensorScatter*, Slice), and the compositions TF itself builds:
gather_nd with batch_dims (the batch coordinates concatenated into the index vectors) and
repeat (tile + reshape for one count, a gather of computed positions for a count per
element)."""
import builtins

import numpy as _np

from .. import _C
from ..core import dtypes as _dt
from ..core.export import export
from . import array_ops
from . import basic_ops as ops
from .array_ops import _indices, gather
from .dispatch import OP, holds_tensor, run, shape_tensor, to_tensor


def _index_pair(a, b):
    """Two integer inputs sharing one TF type attr (indices and shape, begin and size): a
    Python value takes the dtype of the other when that one is a tensor. A list holding
    tensors is packed first (TF's auto-packing)."""
    a, b = (shape_tensor(v) if isinstance(v, (list, tuple)) and holds_tensor(v) else v for v in (a, b))
    if isinstance(a, _C.Tensor) and not isinstance(b, _C.Tensor):
        return a, _C.convert_to_tensor(_as_ints(b), a.dtype)
    if isinstance(b, _C.Tensor) and not isinstance(a, _C.Tensor):
        return _C.convert_to_tensor(_as_ints(a), b.dtype), b
    if isinstance(a, _C.Tensor):
        return a, b
    a, b = _C.convert_to_tensor(_as_ints(a)), _C.convert_to_tensor(_as_ints(b))
    if a.dtype != b.dtype and a.dtype.is_integer and b.dtype.is_integer:
        a, b = ops.cast(a, _dt.int64), ops.cast(b, _dt.int64)
    return a, b


def _as_ints(v):
    """A TensorShape-like (dims with None) or a sequence of ints, as given."""
    if hasattr(v, "as_list"):
        return v.as_list()
    return v


@export("gather_nd")
def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of params at the index vectors on the last dim of indices; out-of-range
    indices raise InvalidArgumentError naming GatherNd, in every mode. batch_dims > 0: TF's
    batch_gather_nd (the leading batch coordinates join each index vector)."""
    if isinstance(batch_dims, _C.Tensor) and not batch_dims._is_symbolic:
        batch_dims = int(batch_dims.numpy())
    if not isinstance(batch_dims, int):
        raise TypeError(f"Argument `batch_dims` must be an int; got {batch_dims}")
    params, indices = to_tensor(params), _indices(indices)
    if batch_dims == 0:
        return run(OP["GatherNd"], (params, indices), None, name)
    return _batch_gather_nd(params, indices, batch_dims, name)


def _batch_gather_nd(params, indices, batch_dims, name):
    if batch_dims < 0:
        raise ValueError("tf.gather_nd does not allow negative batch_dims.")
    irank, prank = len(indices.shape), len(params.shape)
    if batch_dims >= irank:
        raise ValueError(f"Argument `batch_dims` = {batch_dims} must be less than rank(`indices`) = {irank}")
    if batch_dims >= prank:
        raise ValueError(f"Argument `batch_dims` = {batch_dims} must be less than rank(`params`) = {prank}")
    for d in builtins.range(batch_dims):
        a, b = params.shape[d], indices.shape[d]
        if a is not None and b is not None and a != b:
            raise ValueError(f"params.shape[{d}] = {a} and indices.shape[{d}] = {b} must be equal "
                             f"(the first {batch_dims} dims are batch dims)")
    ishape = list(indices.shape)
    if None not in ishape:  # static: the batch coordinates are one constant
        grid = _np.stack(_np.indices(ishape[:batch_dims]), -1)
        grid = grid.reshape(ishape[:batch_dims] + [1] * (irank - batch_dims - 1) + [batch_dims])
        grid = _np.broadcast_to(grid, ishape[:-1] + [batch_dims]).astype(indices.dtype.as_numpy_dtype)
        full = ops.concat([_C.convert_to_tensor(grid), indices], axis=-1)
        return run(OP["GatherNd"], (params, full), None, name)
    # A zero of indices' shape with a last dim of 1, to broadcast each batch coordinate.
    zero = ops.expand_dims(ops.reduce_sum(indices * 0, axis=-1), -1)
    ishape = ops.shape(indices, out_type=indices.dtype)
    parts = []
    for d in builtins.range(batch_dims):
        r = ops.range(ops.cast(0, indices.dtype), ishape[d], ops.cast(1, indices.dtype))
        parts.append(ops.reshape(r, [-1 if k == d else 1 for k in builtins.range(irank)]) + zero)
    full = ops.concat(parts + [indices], axis=-1)
    return run(OP["GatherNd"], (params, full), None, name)


@export("scatter_nd")
def scatter_nd(indices, updates, shape, name=None):
    """Zeros of `shape` with the updates added at the index vectors (duplicates add)."""
    indices, shape = _index_pair(indices, shape)
    return run(OP["ScatterNd"], (indices, to_tensor(updates), shape), None, name)


def _tensor_scatter(op):
    def fn(tensor, indices, updates, name=None):
        tensor = to_tensor(tensor)
        updates = updates if isinstance(updates, _C.Tensor) else _C.convert_to_tensor(updates, tensor.dtype)
        return run(OP[op], (tensor, _indices(indices), updates), None, name)
    return fn


tensor_scatter_nd_update = export("tensor_scatter_nd_update")(_tensor_scatter("TensorScatterUpdate"))
tensor_scatter_nd_add = export("tensor_scatter_nd_add")(_tensor_scatter("TensorScatterAdd"))
tensor_scatter_nd_sub = export("tensor_scatter_nd_sub")(_tensor_scatter("TensorScatterSub"))
tensor_scatter_nd_max = export("tensor_scatter_nd_max")(_tensor_scatter("TensorScatterMax"))
tensor_scatter_nd_min = export("tensor_scatter_nd_min")(_tensor_scatter("TensorScatterMin"))
for _n, _f in [("update", tensor_scatter_nd_update), ("add", tensor_scatter_nd_add), ("sub", tensor_scatter_nd_sub),
               ("max", tensor_scatter_nd_max), ("min", tensor_scatter_nd_min)]:
    _f.__name__ = _f.__qualname__ = "tensor_scatter_nd_" + _n


@export("slice")
def slice(input_, begin, size, name=None):
    """input_[begin[d] : begin[d] + size[d]] per dim; a size of -1 takes the rest."""
    begin, size = _index_pair(begin, size)
    return run(OP["Slice"], (to_tensor(input_), begin, size), None, name)


# ---- repeat (TF's composition) ---------------------------------------------------------
def _dims(x):
    """x's shape as Python ints, or the int32 shape tensor when a dim is unknown."""
    s = list(x.shape)
    return s if None not in s else ops.shape(x)


@export("repeat")
def repeat(input, repeats, axis=None, name=None):
    """Each element (or slice along axis) repeated; axis None: of the flattened input.
    Python or eager counts: one count tiles (expand_dims + tile + reshape), a count per
    element gathers at the computed positions; traced counts compose the positions from a
    running sum of the counts."""
    del name
    x = to_tensor(input)
    if axis is None:
        x = ops.reshape(x, [-1])
        axis = 0
    if not isinstance(axis, int):
        raise TypeError(f"Argument `axis` must be an int. Received `axis` = {axis} of type {type(axis).__name__}")
    if len(x.shape) == 0:
        x = ops.reshape(x, [1])  # TF's _with_nonzero_rank
    rank = len(x.shape)
    if not -rank <= axis < rank:
        raise ValueError(f"axis={axis} out of bounds: expected {-rank}<=axis<{rank}")
    axis %= rank
    if isinstance(repeats, _C.Tensor) and repeats._is_symbolic:
        return _repeat_traced(x, repeats, axis)
    r = repeats.numpy() if isinstance(repeats, _C.Tensor) else _np.asarray(repeats)
    if r.dtype.kind not in "iub":
        raise TypeError(f"repeats must be integers, got {r.dtype.name} values {r!r}")
    if r.ndim > 1:
        raise ValueError(f"Shape {r.shape} must have rank at most 1")
    if r.size == 1:
        n = int(r.reshape(()))
        tiled = array_ops.tile(ops.expand_dims(x, axis + 1), [1] * (axis + 1) + [n] + [1] * (rank - axis - 1))
        dims = _dims(x)
        if isinstance(dims, list):
            dims[axis] = dims[axis] * n
        else:
            dims = ops.concat([dims[:axis], dims[axis:axis + 1] * n, dims[axis + 1:]], 0)
        return ops.reshape(tiled, dims)
    n = x.shape[axis]
    if n is not None and n != r.shape[0]:
        raise ValueError(f"Dimensions {n} and {r.shape[0]} are not compatible")
    positions = _np.repeat(_np.arange(r.shape[0], dtype=_np.int32), _np.maximum(r, 0))
    return gather(x, _C.convert_to_tensor(positions), axis=axis)


def _repeat_traced(x, repeats, axis):
    """Counts known only at run time: position j of the output reads element
    #{i : ends[i] <= j}, ends the running sum of the (non-negative) counts."""
    if len(repeats.shape) > 1:
        raise ValueError(f"Shape {tuple(repeats.shape)} must have rank at most 1")
    r = ops.maximum(ops.cast(repeats, _dt.int64), ops.cast(0, _dt.int64))
    n = ops.shape(x, out_type=_dt.int64)[axis]
    r = ops.reshape(r, [-1]) + ops.zeros_like(ops.range(ops.cast(0, _dt.int64), n, ops.cast(1, _dt.int64)))
    i = ops.range(ops.cast(0, _dt.int64), n, ops.cast(1, _dt.int64))
    tri = ops.cast(ops.less_equal(ops.expand_dims(i, 0), ops.expand_dims(i, 1)), _dt.int64)  # tri[a, b] = b <= a
    ends = ops.reshape(ops.matmul(tri, ops.expand_dims(r, 1)), [-1])
    j = ops.range(ops.cast(0, _dt.int64), ops.reduce_sum(r), ops.cast(1, _dt.int64))
    pos = ops.reduce_sum(ops.cast(ops.less_equal(ops.expand_dims(ends, 0), ops.expand_dims(j, 1)), _dt.int64), axis=1)
    return gather(x, pos, axis=axis)
