"""TF's statistics and normalization functions: reduce_any/all, reduce_euclidean_norm and
the segment reductions on their op records (Any, All, EuclideanNorm, Segment*,
UnsortedSegmentMax/Min/Prod), and the compositions TF itself builds in Python from other ops
(reduce_variance, reduce_std, reduce_logsumexp, count_nonzero, unsorted_segment_mean/sqrt_n,
nn.moments, nn.batch_normalization), written as TF writes them so their values, NaN/Inf
rules and gradients are TF's, and they fuse when compiled."""
from ..core import dtypes as _dt
from ..core.export import export
from . import basic_ops as ops
from .array_ops import _indices, unsorted_segment_sum
from .dispatch import OP, run, to_ints, to_tensor

# ---- bool reductions (TF's Any and All ops) -------------------------------------------
reduce_any = export("reduce_any", "math.reduce_any")(ops._reduce("Any"))
reduce_all = export("reduce_all", "math.reduce_all")(ops._reduce("All"))
# TF's EuclideanNorm op: sqrt(sum(x * x)) without rescaling (float32 overflows past ~1.8e19 as
# TF's does); integers take the truncated root.
reduce_euclidean_norm = export("math.reduce_euclidean_norm")(ops._reduce("EuclideanNorm"))


def _stop_gradient(x):
    # TF stops the gradient at the subtracted max (logsumexp) and the mean (moments): the
    # result does not depend on them, so only the direct path is differentiated.
    return run(OP["StopGradient"], (x,), None, None)


def _name(y, name):
    return ops.identity(y, name=name) if name is not None else y


# ---- reductions TF composes ------------------------------------------------------------
@export("math.reduce_variance")
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """TF's form: the mean of the squared deviations from the mean (not E[x^2] - E[x]^2)."""
    x = to_tensor(input_tensor)
    means = ops.reduce_mean(x, axis=axis, keepdims=True)
    if means.dtype.is_integer:
        raise TypeError(f"Input must be either real or complex. Received integer type {means.dtype}.")
    return _name(ops.reduce_mean(ops.square(x - means), axis=axis, keepdims=keepdims), name)


@export("math.reduce_std")
def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    return _name(ops.sqrt(reduce_variance(input_tensor, axis=axis, keepdims=keepdims)), name)


@export("reduce_logsumexp", "math.reduce_logsumexp")
def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """TF's stable form: log(sum(exp(x - m))) + m with m the max where it is finite, else 0,
    so an all -inf row gives -inf, a +inf gives +inf and a NaN gives NaN."""
    x = to_tensor(input_tensor)
    raw_max = ops.reduce_max(x, axis=axis, keepdims=True)
    my_max = _stop_gradient(ops.where(ops.is_finite(raw_max), raw_max, ops.zeros_like(raw_max)))
    result = ops.log(ops.reduce_sum(ops.exp(x - my_max), axis=axis, keepdims=keepdims))
    if not keepdims:
        my_max = ops.reshape(my_max, ops.shape(result))
    return _name(result + my_max, name)


@export("math.count_nonzero")
def count_nonzero(input, axis=None, keepdims=None, dtype=_dt.int64, name=None):
    """The number of elements != 0 (NaN counts, -0.0 does not), summed as int64 and cast to
    `dtype`, as TF."""
    x = to_tensor(input)
    nz = ops.not_equal(x, ops.zeros([], x.dtype))
    n = ops.reduce_sum(ops.cast(nz, _dt.int64), axis=axis, keepdims=bool(keepdims))
    return _name(ops.cast(n, dtype), name)


# ---- normalization ---------------------------------------------------------------------
@export("nn.moments")
def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) over `axes`; TF ignores `shift` (the mean is subtracted instead)."""
    y = to_tensor(x)
    mean = ops.reduce_mean(y, axis=axes, keepdims=True)
    variance = ops.reduce_mean(ops.squared_difference(y, _stop_gradient(mean)), axis=axes, keepdims=True)
    if not keepdims:
        sq = list(axes) if isinstance(axes, (list, tuple)) else axes
        mean, variance = ops.squeeze(mean, sq), ops.squeeze(variance, sq)
    return mean, variance


@export("nn.batch_normalization")
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset, as TF arranges it:
    x * inv + (offset - mean * inv) with inv = rsqrt(variance + epsilon) * scale."""
    x = to_tensor(x)
    inv = ops.rsqrt(to_tensor(variance + variance_epsilon))
    if scale is not None:
        inv = inv * scale
    shift = offset - mean * inv if offset is not None else -mean * inv
    return _name(x * ops.cast(inv, x.dtype) + ops.cast(shift, x.dtype), name)


# ---- segment reductions ----------------------------------------------------------------
def _sorted(op, public):
    oid = OP[op]

    def f(data, segment_ids, name=None):
        return run(oid, (to_tensor(data), _indices(segment_ids)), None, name)
    f.__name__ = f.__qualname__ = public.split(".")[-1]
    f.__doc__ = (f"TF's {op}: one row per id up to the last (sorted, increasing ids); an empty "
                 "segment gives 0 (1 for a product).")
    return export(public)(f)


segment_sum = _sorted("SegmentSum", "math.segment_sum")
segment_mean = _sorted("SegmentMean", "math.segment_mean")
segment_max = _sorted("SegmentMax", "math.segment_max")
segment_min = _sorted("SegmentMin", "math.segment_min")
segment_prod = _sorted("SegmentProd", "math.segment_prod")


def _unsorted(op, public):
    oid = OP[op]

    def f(data, segment_ids, num_segments, name=None):
        return run(oid, (to_tensor(data), _indices(segment_ids), to_ints(num_segments, True)), None, name)
    f.__name__ = f.__qualname__ = public.split(".")[-1]
    f.__doc__ = (f"TF's {op}: negative ids are dropped, ids >= num_segments raise; an empty "
                 "segment holds the dtype's lowest (max) or highest (min) value, or 1 (prod).")
    return export(public)(f)


unsorted_segment_max = _unsorted("UnsortedSegmentMax", "math.unsorted_segment_max")
unsorted_segment_min = _unsorted("UnsortedSegmentMin", "math.unsorted_segment_min")
unsorted_segment_prod = _unsorted("UnsortedSegmentProd", "math.unsorted_segment_prod")


def _unsorted_segment_n(data, segment_ids, num_segments):
    """Rows per segment (at least 1), shaped to broadcast against the segment sums."""
    ones = ops.cast(ops.ones_like(segment_ids), data.dtype)
    n = unsorted_segment_sum(ones, segment_ids, num_segments)
    n = ops.reshape(n, [-1] + [1] * (len(data.shape) - len(segment_ids.shape)))
    return ops.maximum(n, ops.ones([], data.dtype))


@export("math.unsorted_segment_mean")
def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The segment sums divided by the row counts (an empty segment gives 0; integer data
    divides as float64, TF's truediv)."""
    data, segment_ids = to_tensor(data), _indices(segment_ids)
    n = _unsorted_segment_n(data, segment_ids, num_segments)
    return _name(ops.truediv(unsorted_segment_sum(data, segment_ids, num_segments), n), name)


@export("math.unsorted_segment_sqrt_n")
def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    data, segment_ids = to_tensor(data), _indices(segment_ids)
    n = _unsorted_segment_n(data, segment_ids, num_segments)
    return _name(unsorted_segment_sum(data, segment_ids, num_segments) / ops.sqrt(n), name)
