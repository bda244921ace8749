"""More of jf.sparse, for the row-oriented uses of sparse tensors (bags of ids, per-row values):
reduce_max and softmax over the stored values, fill_empty_rows, to_indicator, split,
maximum/minimum, map_values, reset_shape, the sparse segment reductions, and
nn.embedding_lookup_sparse / safe_embedding_lookup_sparse. Built from dense jitflow ops on
the indices and values, as ops/sparse_ops.py is."""
from ..core import dtypes as _dt
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from . import mask_ops as _mask
from . import stats_ops as _stats
from .dispatch import to_tensor
from .sparse_ops import SparseTensor, _check_sparse, _in_order, _int64, _strides, add


def _kept_dims(sp, axis):
    """The reduced dims as a sorted Python list (all dims for None)."""
    rank = sp.indices.shape[1]
    if axis is None:
        return list(range(rank))
    axes = [axis] if isinstance(axis, int) else list(axis)
    return sorted({a % rank for a in axes})


def _segments_over(sp, reduced):
    """Each value's position in the output with `reduced` dims removed (its segment), and the
    output's shape (dims kept, in order)."""
    rank = sp.indices.shape[1]
    kept = [d for d in range(rank) if d not in reduced]
    if not kept:
        return _ops.zeros_like(sp.values, dtype=_dt.int64), _ops.zeros([0], _dt.int64)
    idx = _array.gather(sp.indices, kept, axis=1)
    shape = _array.gather(sp.dense_shape, kept)
    seg = _ops.reduce_sum(idx * _ops.expand_dims(_strides(shape), 0), axis=1)
    return seg, shape


@export("sparse.reduce_max")
def reduce_max(sp_input, axis=None, keepdims=False, output_is_sparse=False, name=None):
    """The largest stored value over `axis` (TF: positions with no stored value are ignored,
    and an output with none gets 0), as a dense tensor."""
    if output_is_sparse:
        raise NotImplementedError("jitflow's sparse.reduce_max returns a dense tensor (output_is_sparse=False)")
    sp = _check_sparse(sp_input)
    reduced = _kept_dims(sp, axis)
    seg, shape = _segments_over(sp, reduced)
    n = _ops.reduce_prod(shape)
    best = _stats.unsorted_segment_max(sp.values, seg, n)
    count = _array.unsorted_segment_sum(_ops.ones_like(seg), seg, n)
    out = _ops.reshape(_ops.where(count > 0, best, _ops.zeros_like(best)), shape)
    if keepdims:
        mask = _ops.constant([d in reduced for d in range(sp.indices.shape[1])])
        out = _ops.reshape(out, _ops.where(mask, _ops.ones_like(sp.dense_shape), sp.dense_shape))
    return out


@export("sparse.softmax")
def softmax(sp_input, name=None):
    """Softmax over the stored values of each innermost row (the other positions do not take part)."""
    sp = _check_sparse(sp_input)
    rank = sp.indices.shape[1]
    seg, _ = _segments_over(sp, [rank - 1])
    n = _ops.reduce_max(_ops.concat([seg + 1, _ops.zeros([1], _dt.int64)], 0))
    peak = _array.gather(_stats.unsorted_segment_max(sp.values, seg, n), seg)
    e = _ops.exp(sp.values - peak)
    return sp.with_values(e / _array.gather(_array.unsorted_segment_sum(e, seg, n), seg))


@export("sparse.fill_empty_rows")
def fill_empty_rows(sp_input, default_value, name=None):
    """The sparse tensor with [row, 0, ...] = default_value added to every row holding no value,
    in row-major order, and the bool indicator of the rows that were empty."""
    sp = _check_sparse(sp_input)
    rows = sp.dense_shape[0]
    present = _array.unsorted_segment_sum(_ops.ones_like(sp.indices[:, 0]), sp.indices[:, 0], rows) > 0
    empty = _ops.logical_not(present)
    new_rows = _ops.cast(_ops.reshape(_ops.where(empty), [-1]), _dt.int64)
    zeros = _ops.zeros(_ops.stack([_ops.shape(new_rows, out_type=_dt.int64)[0],
                                   _ops.shape(sp.indices, out_type=_dt.int64)[1] - 1]), _dt.int64)
    extra = _ops.concat([_ops.expand_dims(new_rows, 1), zeros], 1)
    fill = _ops.zeros_like(new_rows, dtype=sp.dtype) + _ops.convert_to_tensor(default_value, sp.dtype)
    out = SparseTensor(_ops.concat([sp.indices, extra], 0), _ops.concat([sp.values, fill], 0), sp.dense_shape)
    return _in_order(out), empty


@export("sparse.to_indicator")
def to_indicator(sp_input, vocab_size, name=None):
    """A bool tensor of the ids' rows: [..., vocab_size], True at each id a row holds."""
    sp = _check_sparse(sp_input)
    lead = _ops.concat([sp.indices[:, :-1], _ops.expand_dims(_ops.cast(sp.values, _dt.int64), 1)], 1)
    shape = _ops.concat([sp.dense_shape[:-1], _ops.reshape(_ops.cast(vocab_size, _dt.int64), [1])], 0)
    dense = _array.unsorted_segment_sum(_ops.ones_like(sp.values, dtype=_dt.int32),
                                        _ops.reduce_sum(lead * _ops.expand_dims(_strides(shape), 0), axis=1),
                                        _ops.reduce_prod(shape))
    return _ops.reshape(dense > 0, shape)


@export("sparse.map_values")
def map_values(op, *args, **kwargs):
    """op applied to the values of the sparse arguments (one index set), a sparse result."""
    sparse = [a for a in list(args) + list(kwargs.values()) if isinstance(a, SparseTensor)]
    if not sparse:
        raise ValueError("No SparseTensor in argument list of map_values")
    unpack = (lambda a: a.values if isinstance(a, SparseTensor) else a)
    return sparse[0].with_values(op(*[unpack(a) for a in args], **{k: unpack(v) for k, v in kwargs.items()}))


@export("sparse.reset_shape")
def reset_shape(sp_input, new_shape=None):
    """The same entries with dense_shape new_shape, or the tightest shape holding them."""
    sp = _check_sparse(sp_input)
    if new_shape is None:
        tight = _ops.reduce_max(sp.indices, axis=0) + 1
        return SparseTensor(sp.indices, sp.values, tight)
    return SparseTensor(sp.indices, sp.values, _int64(new_shape))


def _elementwise(a, b, fn):
    """fn of two sparse tensors of one shape over the union of their indices (absent = 0)."""
    a, b = _check_sparse(a), _check_sparse(b)
    zero_b = SparseTensor(b.indices, _ops.zeros_like(b.values), b.dense_shape)
    zero_a = SparseTensor(a.indices, _ops.zeros_like(a.values), a.dense_shape)
    left, right = add(a, zero_b), add(zero_a, b)  # both now hold the union, in one order
    return left.with_values(fn(left.values, right.values))


@export("sparse.maximum")
def maximum(sp_a, sp_b, name=None):
    return _elementwise(sp_a, sp_b, _ops.maximum)


@export("sparse.minimum")
def minimum(sp_a, sp_b, name=None):
    return _elementwise(sp_a, sp_b, _ops.minimum)


@export("sparse.split")
def split(sp_input=None, num_split=None, axis=None, name=None):
    """num_split sparse tensors along `axis`, the first dim % num_split of them one larger."""
    sp = _check_sparse(sp_input)
    size = int(sp.dense_shape[axis].numpy()) if not sp.dense_shape._is_symbolic else None
    if size is None:
        raise NotImplementedError("jitflow's sparse.split needs the split dim's size when traced")
    base, extra = divmod(size, num_split)
    pieces, start = [], 0
    for i in range(num_split):
        n = base + (1 if i < extra else 0)
        inside = _ops.logical_and(sp.indices[:, axis] >= start, sp.indices[:, axis] < start + n)
        shift = _array.one_hot(axis, sp.indices.shape[1], dtype=_dt.int64) * start
        shape = sp.dense_shape * (1 - _array.one_hot(axis, sp.indices.shape[1], dtype=_dt.int64)) + \
            _array.one_hot(axis, sp.indices.shape[1], dtype=_dt.int64) * n
        pieces.append(SparseTensor(_mask.boolean_mask(sp.indices, inside) - shift,
                                   _mask.boolean_mask(sp.values, inside), shape))
        start += n
    return pieces


def _segment(kind, data, indices, segment_ids, num_segments):
    data = to_tensor(data)
    rows = _array.gather(data, to_tensor(indices))
    ids = to_tensor(segment_ids)
    n = num_segments if num_segments is not None else _ops.reduce_max(
        _ops.concat([_ops.cast(ids, _dt.int64) + 1, _ops.zeros([1], _dt.int64)], 0))
    total = _array.unsorted_segment_sum(rows, ids, n)
    if kind == "sum":
        return total
    count = _array.unsorted_segment_sum(_ops.ones_like(ids, dtype=data.dtype), ids, n)
    count = _ops.reshape(count, _ops.concat([_ops.shape(count), _ops.ones_like(_ops.shape(data)[1:])], 0))
    scale = _ops.maximum(count, _ops.ones_like(count))
    return total / (scale if kind == "mean" else _ops.sqrt(scale))


@export("sparse.segment_sum")
def segment_sum(data, indices, segment_ids, num_segments=None, name=None):
    """Sums of the rows data[indices] per segment id."""
    return _segment("sum", data, indices, segment_ids, num_segments)


@export("sparse.segment_mean")
def segment_mean(data, indices, segment_ids, num_segments=None, name=None):
    return _segment("mean", data, indices, segment_ids, num_segments)


@export("sparse.segment_sqrt_n")
def segment_sqrt_n(data, indices, segment_ids, num_segments=None, name=None):
    return _segment("sqrt_n", data, indices, segment_ids, num_segments)


def _combine(params, rows, ids, weights, combiner, n):
    """Per row, the (weighted) embeddings of its ids combined by sum, mean or sqrtn."""
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    emb = _array.gather(to_tensor(params), ids)
    w = _ops.ones_like(ids, dtype=emb.dtype) if weights is None else _ops.cast(weights, emb.dtype)
    total = _array.unsorted_segment_sum(emb * _ops.expand_dims(w, 1), rows, n)
    if combiner == "sum":
        return total
    norm = _array.unsorted_segment_sum(w if combiner == "mean" else _ops.square(w), rows, n)
    norm = norm if combiner == "mean" else _ops.sqrt(norm)
    return _ops.where(_ops.expand_dims(norm > 0, 1), total / _ops.expand_dims(_ops.maximum(norm, 1e-30), 1),
                      _ops.zeros_like(total))


@export("nn.embedding_lookup_sparse")
def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy=None, name=None, combiner=None,
                            max_norm=None, allow_fast_lookup=False):
    """For each row of the [rows, k] sparse ids, its ids' rows of params combined ('mean' by
    default, weighted by sp_weights' values): [last row with an id + 1, dim]."""
    sp_ids = _check_sparse(sp_ids)
    if max_norm is not None:
        raise NotImplementedError("jitflow's embedding_lookup_sparse does not implement max_norm yet")
    rows = sp_ids.indices[:, 0]
    n = _ops.reduce_max(_ops.concat([rows + 1, _ops.zeros([1], _dt.int64)], 0))
    weights = None if sp_weights is None else _check_sparse(sp_weights).values
    return _combine(params, rows, _ops.cast(sp_ids.values, _dt.int64), weights, combiner or "mean", n)


@export("nn.safe_embedding_lookup_sparse")
def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None, combiner="mean",
                                 default_id=None, name=None, partition_strategy="div", max_norm=None,
                                 allow_fast_lookup=False):
    """embedding_lookup_sparse for every row of sparse_ids' dense shape: ids < 0 (and weights
    <= 0) dropped first; a row left empty gets params[default_id], or zeros."""
    sp_ids = _check_sparse(sparse_ids)
    keep = _ops.cast(sp_ids.values, _dt.int64) >= 0
    if sparse_weights is not None:
        keep = _ops.logical_and(keep, _check_sparse(sparse_weights).values > 0)
    rows = _mask.boolean_mask(sp_ids.indices[:, 0], keep)
    ids = _mask.boolean_mask(_ops.cast(sp_ids.values, _dt.int64), keep)
    weights = None if sparse_weights is None else _mask.boolean_mask(sparse_weights.values, keep)
    n = sp_ids.dense_shape[0]
    out = _combine(embedding_weights, rows, ids, weights, combiner, n)
    present = _array.unsorted_segment_sum(_ops.ones_like(rows), rows, n) > 0
    if default_id is None:
        fill = _ops.zeros_like(out)
    else:
        fill = _ops.zeros_like(out) + _array.gather(to_tensor(embedding_weights), default_id)
    return _ops.where(_ops.expand_dims(present, 1), out, fill)

