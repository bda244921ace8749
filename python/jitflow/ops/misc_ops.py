"""TF 2's small utility functions and math composites jitflow had no home for: the execution
mode queries (executing_eagerly, inside_function, is_tensor), grouping (no_op, group, tuple,
identity_n), static values and shape checks (get_static_value, ensure_shape, the broadcast
shapes), index and partition functions (unravel_index, reverse_sequence, dynamic_partition,
dynamic_stitch, histogram_fixed_width), and tf.math composites (reciprocal_no_nan, xdivy, rint,
invert_permutation, monotonicity checks, zero_fraction, confusion_matrix, lbeta, ndtri,
erfcinv, approx_max_k / approx_min_k), each built from jitflow ops."""
import logging
import math

import numpy as np

from .. import _C
from .._C import Tensor
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from ..core.shapes import TensorShape
from . import array_ops as _array
from . import basic_ops as _ops
from . import debugging as _debug
from . import mask_ops as _mask
from . import nn_ops as _nn
from . import scatter_ops as _scatter
from . import sort_ops as _sort
from . import stats_ops as _stats
from .dispatch import static_value, to_tensor
from .sparse_ops import SparseTensor


@export("executing_eagerly")
def executing_eagerly():
    """False while a jf.function is being traced, True otherwise."""
    return not _C.is_tracing()


@export("inside_function")
def inside_function():
    return _C.is_tracing()


@export("is_tensor")
def is_tensor(x):
    """Whether x is a jitflow tensor or variable (TF's is_tf_type)."""
    return isinstance(x, (Tensor, SparseTensor)) or hasattr(x, "__jf_tensor__") or \
        type(x).__name__ in ("Variable", "KerasVariable")


@export("is_symbolic_tensor")
def is_symbolic_tensor(tensor):
    return isinstance(tensor, Tensor) and bool(tensor._is_symbolic)


@export("no_op")
def no_op(name=None):
    """Does nothing (TF returns an Operation to depend on; ops here run in program order)."""
    return


@export("group")
def group(*inputs, name=None):
    """Returns once its inputs are computed (they already are: ops run in program order)."""
    return


@export("tuple")
def tuple(tensors, name=None, control_inputs=None):
    return [None if t is None else _ops.identity(t) for t in tensors]


@export("identity_n")
def identity_n(input, name=None):
    return [_ops.identity(t) for t in input]


@export("get_static_value")
def get_static_value(tensor, partial=False):
    """The value of a tensor known without running the function (a constant or folded from
    constants) as a numpy array, else None; an eager tensor's value."""
    if not isinstance(tensor, Tensor):
        return np.asarray(tensor)
    if not tensor._is_symbolic:
        return tensor.numpy()
    return static_value(tensor)


@export("ensure_shape")
def ensure_shape(x, shape, name=None):
    """x, checked to have a shape compatible with `shape` (None for any size): statically where
    the dims are known, when run otherwise (TF's InvalidArgumentError)."""
    x = to_tensor(x)
    want = TensorShape(shape)
    if want.rank is not None and len(x.shape) != want.rank:
        raise ValueError(f"Shape {x.shape} must have rank {want.rank}")
    got = list(x.shape)
    for g, w in zip(got, want.as_list() if want.rank is not None else []):
        if g is not None and w is not None and g != w:
            raise InvalidArgumentError(f"Shape of tensor {TensorShape(got)} is not compatible with expected shape "
                                       f"{want}.")
    known = [(i, w) for i, w in enumerate(want.as_list() if want.rank is not None else [])
             if w is not None and got[i] is None]
    if not known:
        return x
    dims = _ops.shape(x)
    ok = _stats.reduce_all(_ops.stack([_ops.equal(dims[i], w) for i, w in known]))
    _debug.Assert(ok, [f"Shape of tensor is not compatible with expected shape {want}:", dims])
    sizes = [w if w is not None else g for w, g in zip(want.as_list(), got)]
    if sizes.count(None) > 1:  # the still-unknown dims come from x itself, so the reshape checks nothing
        sizes = [dims[i] if d is None else d for i, d in enumerate(sizes)]
    return _ops.reshape(x, [-1 if d is None else d for d in sizes])


def _set_shape(self, shape):
    """TF's Tensor.set_shape: an eager tensor's shape is only checked; a traced tensor's static
    shape is refined in place. Unlike TF, the refined dims are also checked when the function
    runs (a wrong claim raises InvalidArgumentError instead of mis-shaping later ops)."""
    want, have = TensorShape(shape), self.shape
    if not have.is_compatible_with(want):
        if not self._is_symbolic:
            raise ValueError(f"Tensor's shape {have} is not compatible with supplied shape {want}.")
        raise ValueError(f"Shapes {have} and {want} are not compatible")
    if not self._is_symbolic or want.rank is None:
        return
    if have.rank is None:
        rank_ok = _ops.equal(_ops.rank(self), want.rank)
        _debug.Assert(rank_ok, [f"Tensor's rank is not {want.rank}, as set_shape claimed:", _ops.rank(self)])
        self._rebind(_ops.reshape(self, [_ops.shape(self)[i] if d is None else d
                                         for i, d in enumerate(want.as_list())]))
        return
    if have.merge_with(want).as_list() != have.as_list():
        self._rebind(ensure_shape(self, have.merge_with(want)))


Tensor.set_shape = _set_shape


@export("broadcast_static_shape")
def broadcast_static_shape(shape_x, shape_y):
    a, b = TensorShape(shape_x).as_list(), TensorShape(shape_y).as_list()
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x is not None and y is not None and x != y and 1 not in (x, y):
            raise ValueError(f"Incompatible shapes for broadcasting: {TensorShape(shape_x)} and "
                             f"{TensorShape(shape_y)}")
        out.append(y if x == 1 else x if y == 1 else (x if x is not None else y))
    return TensorShape(out[::-1])


@export("broadcast_dynamic_shape")
def broadcast_dynamic_shape(shape_x, shape_y):
    """The broadcast of two shape vectors, as a shape vector."""
    sx, sy = to_tensor(shape_x), to_tensor(shape_y)
    zx, zy = _ops.zeros(sx, _dt.int32), _ops.zeros(sy, _dt.int32)
    return _ops.shape(zx + zy, out_type=sx.dtype)


@export("parallel_stack")
def parallel_stack(values, name="parallel_stack"):
    return _ops.stack(values)


@export("realdiv")
def realdiv(x, y, name=None):
    return _ops.divide(x, y)


@export("scalar_mul", "math.scalar_mul")
def scalar_mul(scalar, x, name=None):
    x = to_tensor(x)
    return _ops.multiply(_ops.cast(scalar, x.dtype), x)


@export("unravel_index")
def unravel_index(indices, dims, name=None):
    """Flat indices to coordinates in an array of shape dims: [len(dims), *indices.shape]."""
    idx = to_tensor(indices)
    dims_t = _ops.cast(to_tensor(dims), idx.dtype)
    n = dims_t.shape[0]
    coords, rest = [], idx
    for k in range(n - 1, -1, -1):
        coords.append(_ops.floormod(rest, dims_t[k]))
        rest = _ops.floordiv(rest, dims_t[k])
    return _ops.stack(coords[::-1])


@export("reverse_sequence")
def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None):
    """Each batch entry's first seq_lengths[b] elements along seq_axis reversed, the rest kept."""
    x = to_tensor(input)
    seq_axis = seq_axis % len(x.shape)
    batch_axis = 0 if batch_axis is None else batch_axis % len(x.shape)
    lengths = _ops.cast(to_tensor(seq_lengths), _dt.int32)
    dims = _ops.shape(x)
    steps = _ops.range(dims[seq_axis])
    length = _ops.expand_dims(lengths, 1)
    src = _ops.where(steps < length, length - 1 - steps, _ops.broadcast_to(steps, _ops.shape(length - steps)))
    perm = [batch_axis, seq_axis] + [a for a in range(len(x.shape)) if a not in (batch_axis, seq_axis)]
    moved = _ops.transpose(x, perm)
    out = _array.gather(moved, src, axis=1, batch_dims=1)
    inverse = [perm.index(a) for a in range(len(perm))]
    return _ops.transpose(out, inverse)


@export("histogram_fixed_width_bins")
def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=_dt.int32, name=None):
    """The bin of each value among nbins equal bins over value_range (ends clamped)."""
    v = to_tensor(values)
    rng = _ops.cast(to_tensor(value_range), _dt.float64)
    lo, hi = rng[0], rng[1]
    scaled = (_ops.cast(v, _dt.float64) - lo) / (hi - lo) * float(nbins)
    bins = _ops.cast(_ops.floor(scaled), _dt.int64)
    return _ops.cast(_ops.minimum(_ops.maximum(bins, 0), nbins - 1), dtype)


@export("histogram_fixed_width")
def histogram_fixed_width(values, value_range, nbins=100, dtype=_dt.int32, name=None):
    bins = _ops.reshape(histogram_fixed_width_bins(values, value_range, nbins, _dt.int32), [-1])
    return _ops.cast(_sort.bincount(bins, minlength=nbins, maxlength=nbins), dtype)


@export("dynamic_partition")
def dynamic_partition(data, partitions, num_partitions, name=None):
    """data's slices split into num_partitions lists by their partition ids, in order."""
    d, p = to_tensor(data), _ops.cast(to_tensor(partitions), _dt.int32)
    return [_mask.boolean_mask(d, _ops.equal(p, k)) for k in range(int(num_partitions))]


@export("dynamic_stitch")
def dynamic_stitch(indices, data, name=None):
    """merged[indices[m][i]] = data[m][i], later pieces overwriting earlier ones."""
    idx = [_ops.reshape(_ops.cast(to_tensor(i), _dt.int32), [-1]) for i in indices]
    vals = [to_tensor(v) for v in data]
    tails = [v.shape[len(i.shape):] for v, i in zip(vals, [to_tensor(i) for i in indices])]
    flat_idx = _ops.concat(idx, 0)
    flat_vals = _ops.concat([_ops.reshape(v, [-1, *t]) for v, t in zip(vals, tails)], 0)
    size = _ops.reduce_max(flat_idx) + 1
    out = _ops.zeros(_ops.concat([_ops.reshape(size, [1]), _ops.constant(list(tails[0]), _dt.int32)], 0),
                     flat_vals.dtype)
    return _scatter.tensor_scatter_nd_update(out, _ops.expand_dims(flat_idx, 1), flat_vals)


# ---- tf.math composites -------------------------------------------------------------------

@export("math.reciprocal_no_nan")
def reciprocal_no_nan(x, name=None):
    x = to_tensor(x)
    return _ops.divide_no_nan(_ops.ones_like(x), x)


@export("math.xdivy")
def xdivy(x, y, name=None):
    x, y = to_tensor(x), to_tensor(y)
    return _ops.where(_ops.equal(x, 0), _ops.zeros_like(x), x / y)


@export("math.rint")
def rint(x, name=None):
    """The nearest integer, halves to even (TF's rint)."""
    return _ops.round(to_tensor(x))


@export("math.mod")
def mod(x, y, name=None):
    return _ops.floormod(x, y)


@export("math.invert_permutation", "invert_permutation")
def invert_permutation(x, name=None):
    x = to_tensor(x)
    n = _ops.shape(x)[0]
    return _scatter.scatter_nd(_ops.expand_dims(x, 1), _ops.range(n, dtype=x.dtype), _ops.reshape(n, [1]))


@export("math.is_non_decreasing", "debugging.is_non_decreasing")
def is_non_decreasing(x, name=None):
    flat = _ops.reshape(to_tensor(x), [-1])
    return _stats.reduce_all(flat[1:] >= flat[:-1])


@export("math.is_strictly_increasing", "debugging.is_strictly_increasing")
def is_strictly_increasing(x, name=None):
    flat = _ops.reshape(to_tensor(x), [-1])
    return _stats.reduce_all(flat[1:] > flat[:-1])


@export("math.zero_fraction", "nn.zero_fraction")
def zero_fraction(value, name=None):
    v = to_tensor(value)
    return _ops.reduce_mean(_ops.cast(_ops.equal(v, _ops.zeros([], v.dtype)), _dt.float32))


@export("math.confusion_matrix")
def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=_dt.int32, name=None):
    """[num_classes, num_classes] counts (or weight sums) of (label, prediction) pairs."""
    lab = _ops.cast(_ops.reshape(to_tensor(labels), [-1]), _dt.int64)
    pred = _ops.cast(_ops.reshape(to_tensor(predictions), [-1]), _dt.int64)
    if num_classes is None:
        num_classes = _ops.maximum(_ops.reduce_max(lab), _ops.reduce_max(pred)) + 1
    n = _ops.cast(num_classes, _dt.int64)
    w = (_ops.ones_like(lab, dtype=dtype) if weights is None
         else _ops.cast(_ops.reshape(to_tensor(weights), [-1]), dtype))
    shape = _ops.stack([n, n])
    return _scatter.scatter_nd(_ops.stack([lab, pred], axis=1), w, shape)


@export("math.lbeta")
def lbeta(x, name=None):
    """log(|Beta(x)|) over the last axis: sum(lgamma(x)) - lgamma(sum(x))."""
    x = to_tensor(x)
    return _ops.reduce_sum(_ops.lgamma(x), axis=-1) - _ops.lgamma(_ops.reduce_sum(x, axis=-1))


@export("math.ndtri")
def ndtri(x, name=None):
    """The standard normal quantile: sqrt(2) erfinv(2 x - 1)."""
    x = to_tensor(x)
    return _ops.cast(math.sqrt(2.0), x.dtype) * _ops.erfinv(2.0 * x - 1.0)


@export("math.erfcinv")
def erfcinv(x, name=None):
    x = to_tensor(x)
    return _ops.erfinv(1.0 - x)


@export("math.accumulate_n")
def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    return _ops.add_n(inputs)


@export("math.approx_max_k", "nn.approx_max_k", "approx_top_k")
def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """The k largest along reduction_dimension and their indices, computed exactly (recall 1)."""
    x = to_tensor(operand)
    axis = reduction_dimension % len(x.shape)
    last = len(x.shape) - 1
    perm = list(range(len(x.shape)))
    perm[axis], perm[last] = perm[last], perm[axis]
    values, indices = _sort.top_k(_ops.transpose(x, perm), k)
    return _ops.transpose(values, perm), _ops.transpose(indices, perm)


@export("math.approx_min_k", "nn.approx_min_k")
def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    values, indices = approx_max_k(-to_tensor(operand), k, reduction_dimension)
    return -values, indices


@export("math.log_softmax")
def log_softmax(logits, axis=None, name=None):
    return _nn.log_softmax(logits, axis=-1 if axis is None else axis)


@export("math.softmax")
def softmax(logits, axis=None, name=None):
    return _nn.softmax(logits, axis=-1 if axis is None else axis)


@export("math.softsign")
def softsign(features, name=None):
    return _ops.softsign(features)


@export("get_logger")
def get_logger():
    """The logger TF programs configure ("tensorflow"), also jitflow's."""
    return logging.getLogger("tensorflow")


# tf.version: the TensorFlow API version jitflow follows (programs compare it); jitflow's own
# version is jf.__version__.
for _name, _value in (("VERSION", "2.21.0"), ("GIT_VERSION", "jitflow"), ("COMPILER_VERSION", ""),
                      ("GRAPH_DEF_VERSION", 2125), ("GRAPH_DEF_VERSION_MIN_CONSUMER", 0),
                      ("GRAPH_DEF_VERSION_MIN_PRODUCER", 0)):
    export(f"version.{_name}")(_value)
