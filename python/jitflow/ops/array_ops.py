"""Gathering and shaping ops with TF's signatures: gather, one_hot, reverse, tile, pad, roll,
unsorted_segment_sum and embedding_lookup on their op records, and the compositions TF itself
builds from other ops (eye, sequence_mask, size, shape_n, unstack, meshgrid, linspace)."""
import builtins

import numpy as _np

from .. import _C
from ..core import dtypes as _dt
from ..core.export import export
from . import basic_ops as ops
from . import string_arrays as _sa
from .dispatch import OP, holds_tensor, int_tensor, run, run_n, scalar_ints, shape_tensor, to_ints, to_tensor


def _indices(v):
    """Index arguments keep their own integer dtype (a Python list is int32), not the params'."""
    return v if isinstance(v, _C.Tensor) else _C.convert_to_tensor(v)




@export("gather")
def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """params gathered along `axis` (default: batch_dims) at `indices`; out-of-range indices
    raise InvalidArgumentError (TF's CPU kernel), in every mode."""
    del validate_indices  # deprecated in TF, ignored there too
    if axis is None:
        axis = batch_dims
    if _sa.is_eager_string(params):
        return _sa.gather(params, indices, axis, batch_dims)
    params, indices = to_tensor(params), _indices(indices)
    axis = scalar_ints(axis, "GatherV2", "axis must be scalar", (params, indices, None))
    return run(OP["GatherV2"], (params, indices, axis), {"batch_dims": int(batch_dims)}, name)


@export("nn.embedding_lookup")
def embedding_lookup(params, ids, max_norm=None, name=None):
    """Rows of params at ids (one table; TF's partitioned lists of tables are not supported)."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("jf.nn.embedding_lookup: a partitioned list of tables is not supported")
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("jf.nn.embedding_lookup: max_norm is not supported")
    return gather(params, ids, name=name)


@export("one_hot")
def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """TF's dtype rule: dtype, else on_value's or off_value's, else float32."""
    if dtype is None:
        for v in (on_value, off_value):
            if isinstance(v, _C.Tensor):
                dtype = v.dtype
                break
        else:
            dtype = _dt.float32 if on_value is None and off_value is None else None
    dtype = _dt.as_dtype(dtype) if dtype is not None else None
    on = _C.convert_to_tensor(1 if on_value is None else on_value, dtype)
    off = _C.convert_to_tensor(0 if off_value is None else off_value, dtype or on.dtype)
    return run(OP["OneHot"], (_indices(indices), to_ints(depth, True), on, off), {"axis": -1 if axis is None else int(axis)},
              name)


@export("reverse")
def reverse(tensor, axis, name=None):
    if _sa.is_eager_string(tensor):
        return _sa.reverse(tensor, axis)
    return run(OP["ReverseV2"], (tensor, to_ints(axis)), None, name)


@export("tile")
def tile(input, multiples, name=None):
    if _sa.is_eager_string(input):
        return _sa.tile(input, multiples)
    return run(OP["Tile"], (input, to_ints(multiples)), None, name)


@export("pad")
def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """mode CONSTANT, REFLECT or SYMMETRIC (any case, as TF)."""
    mode = str(mode).upper()
    x = to_tensor(tensor)
    # A Python list becomes an eager (constant) tensor: traced, its values stay known; one
    # holding tensors is packed (a constant still when their values are known while tracing).
    if isinstance(paddings, _C.Tensor):
        p = paddings
    elif isinstance(paddings, (list, tuple)) and holds_tensor(paddings):
        p = shape_tensor(paddings)
    else:
        p = _C.convert_to_tensor(_np.asarray(paddings, _np.int32))
    if mode == "CONSTANT":
        if not isinstance(constant_values, _C.Tensor) and constant_values == 0:
            # TF's default pads any dtype with its zero (strings: empty ones)
            constant_values = False if x.dtype == _dt.bool else b"" if x.dtype == _C.DType.string else 0
        c = _C.convert_to_tensor(constant_values, x.dtype)
        return run(OP["PadV2"], (x, p, c), None, name)
    if mode in ("REFLECT", "SYMMETRIC"):
        return run(OP["MirrorPad"], (x, p), {"mode": mode}, name)
    raise ValueError(f"Value of argument `mode` expected to be one of \"CONSTANT\", \"REFLECT\", or "
                     f"\"SYMMETRIC\". Received `mode` = {mode}")


@export("roll")
def roll(input, shift, axis, name=None):
    scalar = not hasattr(shift, "__len__") and not isinstance(shift, _C.Tensor)
    return run(OP["Roll"], (input, to_ints(shift, scalar), to_ints(axis, scalar)), None, name)


@export("math.unsorted_segment_sum")
def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    return run(OP["UnsortedSegmentSum"], (to_tensor(data), _indices(segment_ids), to_ints(num_segments, True)), None, name)


# ---- compositions (TF builds these from other ops too) ----------------------------------
@export("eye", "linalg.eye")
def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dt.float32, name=None):
    cols = num_rows if num_columns is None else num_columns
    r = ops.range(int(num_rows), dtype=_dt.int32)
    c = ops.range(int(cols), dtype=_dt.int32)
    m = ops.cast(ops.equal(ops.expand_dims(r, 1), ops.expand_dims(c, 0)), dtype)
    if batch_shape is not None:
        batch = [int(b) for b in batch_shape]
        m = ops.broadcast_to(m, batch + [int(num_rows), int(cols)])
    return m if name is None else ops.identity(m, name=name)


@export("sequence_mask")
def sequence_mask(lengths, maxlen=None, dtype=_dt.bool, name=None):
    """mask[..., j] = j < lengths[...], for j < maxlen (default: max(lengths), at least 0)."""
    lengths = to_tensor(lengths)
    if maxlen is None:
        maxlen = ops.maximum(ops.reduce_max(lengths), ops.cast(0, lengths.dtype))
    else:
        maxlen = to_tensor(maxlen)  # its own dtype (a Python int past int32 is int64), as TF
    row = ops.range(ops.cast(0, maxlen.dtype), maxlen, ops.cast(1, maxlen.dtype))
    mask = ops.less(row, ops.cast(ops.expand_dims(lengths, -1), maxlen.dtype))
    return mask if _dt.as_dtype(dtype) == _dt.bool else ops.cast(mask, dtype, name=name)


@export("size")
def size(input, out_type=_dt.int32, name=None):
    return ops.reduce_prod(ops.shape(input, out_type=out_type), name=name)


@export("shape_n")
def shape_n(input, out_type=_dt.int32, name=None):
    return [ops.shape(x, out_type=out_type) for x in input]


@export("unstack")
def unstack(value, num=None, axis=0, name="unstack"):
    if _sa.is_eager_string(value):
        return _sa.unstack(value, num, axis)
    x = to_tensor(value)
    rank = len(x.shape)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < builtins.max(rank, 1):
        raise ValueError(f"Argument `axis` = {axis} not in range [{-rank}, {rank})")
    n = x.shape[axis] if num is None else num
    if n is None:
        raise ValueError(f"Cannot infer argument `num` from shape {tuple(x.shape)}")
    if n == 0:
        return []
    parts = run_n(OP["Split"], (int_tensor([axis], True), x), {"num_split": int(n)}, None)
    return [ops.squeeze(p, axis) for p in parts]


@export("meshgrid")
def meshgrid(*args, **kwargs):
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"'{next(iter(kwargs))}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Argument `indexing` parameter must be either 'xy' or 'ij', got '{indexing}'")
    xs = [ops.reshape(to_tensor(a), [-1]) for a in args]
    n = len(xs)
    sizes = [x.shape[0] for x in xs]
    axis_of = list(builtins.range(n))
    if indexing == "xy" and n > 1:  # x varies along columns, y along rows
        axis_of[0], axis_of[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    shaped = []
    for x, axis in zip(xs, axis_of):
        shape = [1] * n
        shape[axis] = -1
        shaped.append(ops.reshape(x, shape))
    if None not in sizes:
        return [ops.broadcast_to(x, sizes) for x in shaped]
    # Sizes unknown when traced: broadcast by adding zeros shaped like the others.
    out = []
    for i, x in enumerate(shaped):
        for j, y in enumerate(shaped):
            if j != i:
                x = x + ops.cast(ops.zeros_like(y), x.dtype)
        out.append(x)
    return out


@export("linspace", "lin_space")
def linspace(start, stop, num, name=None, axis=0):
    start, stop = to_tensor(start), to_tensor(stop)
    dt = start.dtype if start.dtype.is_floating else _dt.float64
    start, stop = ops.cast(start, dt), ops.cast(stop, dt)
    n = int(num)
    steps = ops.cast(ops.range(n, dtype=_dt.int32), dt)
    denom = float(builtins.max(n - 1, 1))
    shape = [n] + [1] * len(start.shape)
    t = ops.reshape(steps, shape) / denom
    out = start + (stop - start) * t
    if n > 1:  # TF: the last value is exactly stop
        out = ops.concat([out[:-1], ops.expand_dims(stop, 0)], 0)
    if axis != 0:
        r = len(out.shape)
        axis = axis % r
        perm = list(builtins.range(1, axis + 1)) + [0] + list(builtins.range(axis + 1, r))
        out = ops.transpose(out, perm)
    return out
