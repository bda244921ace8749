"""TF's cross-entropy losses, l2_loss and gradient clipping (nn.*_cross_entropy_with_logits,
nn.l2_loss, clip_by_value / clip_by_norm / clip_by_global_norm, linalg.global_norm), composed
of jf ops with TF's stable formulas, so they fuse into a few kernels inside a jit_scope."""
import collections.abc

from .._C import Tensor
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from . import array_ops as _array_ops
from . import basic_ops as _ops
from . import stats_ops as _stats
from .dispatch import OP, run, to_tensor
from .nn_ops import log_softmax


def _shape_str(s):
    return "(" + ", ".join("None" if d is None else str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def _compatible(a, b):
    """TF's TensorShape.is_compatible_with on jf's static shapes (None: unknown dim)."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _stop(x):
    return run(OP["StopGradient"], (x,), None, None)


def _float_input(x, op):
    if not x.dtype.is_floating:
        raise TypeError(f"{op}: expected a float32 or float64 input, got {x.dtype.name}")


# ---- cross entropy ---------------------------------------------------------------------------
@export("nn.softmax_cross_entropy_with_logits")
def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """sum(labels * -log_softmax(logits), axis); labels are cast to the logits' dtype and
    broadcast against them, as TF's SoftmaxCrossEntropyWithLogits. Its gradients are TF's:
    -log_softmax(logits) for the labels, softmax - labels for the logits (not the derivative
    softmax * sum(labels) - labels when labels do not sum to 1)."""
    logits, labels = to_tensor(logits), to_tensor(labels)
    _float_input(logits, "SoftmaxCrossEntropyWithLogits")
    if len(logits.shape) == 0:
        raise InvalidArgumentError("SoftmaxCrossEntropyWithLogits: logits must have at least one dimension, "
                                   "got a scalar")
    labels = _ops.cast(labels, logits.dtype)
    # lse = logsumexp(logits) per row. The loss is sum(labels * (lse - logits)) (a zero label
    # on a -inf logit is NaN, as in TF's kernel; a zero loss is +0). Its logits gradient is
    # TF's softmax - labels: lse is held constant in that product (so it gives -labels) and
    # lse - lse adds 0 with the gradient and second derivative of logsumexp. One exp per
    # element in the forward pass, as the kernel computes it.
    lse = _stats.reduce_logsumexp(logits, axis, keepdims=True)
    per_class = labels * (_stop(lse) - logits)
    # (0 where lse is infinite: a row with no classes has lse = -inf and loss 0; an infinite
    # logit's row is NaN from per_class already)
    zero = _ops.where(_ops.is_finite(lse), lse - _stop(lse), _ops.zeros_like(lse))
    return _ops.add(_ops.reduce_sum(per_class, axis), _ops.squeeze(zero, [axis]), name=name)


@export("nn.sparse_softmax_cross_entropy_with_logits")
def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """-log_softmax(logits)[..., labels]: picked with a one-hot select (so a -inf logit elsewhere
    stays harmless); an out-of-range label is TF's InvalidArgumentError, raised by a gather of
    zeros that adds 0 to the loss, so the check also runs traced and compiled."""
    logits, labels = to_tensor(logits), to_tensor(labels)
    _float_input(logits, "SparseSoftmaxCrossEntropyWithLogits")
    if labels.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"SparseSoftmaxCrossEntropyWithLogits: labels must be int32 or int64, got {labels.dtype.name}")
    if len(logits.shape) == 0:
        raise ValueError(f"`logits` cannot be a scalar. Received logits={logits}`")
    if len(labels.shape) != len(logits.shape) - 1:
        raise ValueError(f"`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: labels.shape="
                         f"{_shape_str(labels.shape)} of rank {len(labels.shape)} and logits.shape="
                         f"{_shape_str(logits.shape)} of rank {len(logits.shape)}")
    if not _compatible(labels.shape, logits.shape[:-1]):
        raise ValueError(f"`labels.shape` must equal `logits.shape` except for the last dimension. Received: "
                         f"labels.shape={_shape_str(labels.shape)} and logits.shape={_shape_str(logits.shape)}")
    depth = logits.shape[-1]
    if depth is None:
        depth = _ops.shape(logits)[-1]
    picked = _ops.where(_array_ops.one_hot(labels, depth, True, False, dtype=_dt.bool), log_softmax(logits), 0.0)
    in_range = _array_ops.gather(_ops.zeros(_ops.reshape(depth, [1]) if isinstance(depth, Tensor) else [depth],
                                      logits.dtype), labels)
    return _ops.add(_ops.negative(_ops.reduce_sum(picked, -1)), in_range, name=name)


def _same_shape(labels, logits):
    if not _compatible(labels.shape, logits.shape):
        raise ValueError(f"`logits` and `labels` must have the same shape, received "
                         f"({_shape_str(logits.shape)} vs {_shape_str(labels.shape)}).")


@export("nn.sigmoid_cross_entropy_with_logits")
def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """TF's stable form max(x, 0) - x z + log1p(exp(-|x|)) (x: logits, z: labels)."""
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    logits, labels = to_tensor(logits), to_tensor(labels)
    _same_shape(labels, logits)
    zeros = _ops.zeros_like(logits)
    cond = logits >= zeros
    relu_logits = _ops.where(cond, logits, zeros)
    neg_abs_logits = _ops.where(cond, _ops.negative(logits), logits)
    return _ops.add(relu_logits - logits * labels, _ops.log1p(_ops.exp(neg_abs_logits)), name=name)


@export("nn.weighted_cross_entropy_with_logits")
def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """TF's stable form (1 - z) x + (1 + (q - 1) z) (log1p(exp(-|x|)) + max(-x, 0))
    (q: pos_weight)."""
    logits, labels = to_tensor(logits), to_tensor(labels)
    _same_shape(labels, logits)
    log_weight = 1 + (pos_weight - 1) * labels
    return _ops.add((1 - labels) * logits,
                    log_weight * (_ops.log1p(_ops.exp(_ops.negative(_ops.abs(logits))))
                                  + _ops.relu(_ops.negative(logits))), name=name)


@export("nn.l2_loss")
def l2_loss(t, name=None):
    """sum(t ** 2) / 2, TF's L2Loss op as a composition (Square, Sum, Mul: one fused
    reduction when compiled); floats only, as the op."""
    t = to_tensor(t)
    _float_input(t, "L2Loss")
    return _ops.multiply(_ops.reduce_sum(_ops.square(t)), _ops.cast(0.5, t.dtype), name=name)


# ---- clipping ------------------------------------------------------------------------------
def _no_broadcast(values, result):
    """TF's guard against clip bounds that broadcast t to a larger shape."""
    if not _compatible(values.shape, result.shape):
        raise ValueError(f"Shapes {_shape_str(values.shape)} and {_shape_str(result.shape)} are incompatible")


@export("clip_by_value")
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """maximum(minimum(t, max), min), bounds broadcast into t's shape (never beyond it). As in
    TF 2.21, a min above max is not an error: every element becomes min."""
    values = to_tensor(t)
    t_min = _ops.minimum(values, clip_value_max)
    _no_broadcast(values, t_min)
    t_max = _ops.maximum(t_min, clip_value_min, name=name)
    _no_broadcast(values, t_max)
    return t_max


@export("clip_by_norm")
def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(l2norm(t, axes), clip_norm), with TF's two-where trick so a zero norm
    gives finite gradients."""
    values = to_tensor(t)
    l2sum = _ops.reduce_sum(values * values, axes, keepdims=True)
    pred = l2sum > 0
    l2sum_safe = _ops.where(pred, l2sum, _ops.ones_like(l2sum))
    l2norm = _ops.where(pred, _ops.sqrt(l2sum_safe), l2sum)
    intermediate = values * clip_norm
    _no_broadcast(values, intermediate)
    return _ops.identity(intermediate / _ops.maximum(l2norm, clip_norm), name=name)


def _tensor_list(t_list):
    if not isinstance(t_list, collections.abc.Sequence) or isinstance(t_list, str):
        raise TypeError(f"`t_list` should be a sequence of tensors. Received {type(t_list)}.")
    return [None if v is None else to_tensor(v) for v in t_list]


@export("linalg.global_norm")
def global_norm(t_list, name=None):
    """sqrt(sum of squares of every tensor); None entries are skipped, an empty list is 0."""
    values = _tensor_list(t_list)
    halves = [l2_loss(v) for v in values if v is not None]
    if not halves:
        return _ops.constant(0.0, _dt.float32)
    half_squared_norm = _ops.reduce_sum(_ops.stack(halves))
    return _ops.sqrt(half_squared_norm * _ops.cast(2.0, half_squared_norm.dtype), name=name or "global_norm")


@export("clip_by_global_norm")
def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(each t * clip_norm / max(global_norm, clip_norm), global_norm); None entries pass
    through. A non-finite norm makes every clipped value NaN, as TF (scale + norm - norm)."""
    values = _tensor_list(t_list)
    if use_norm is None:
        use_norm = global_norm(values)
    use_norm = to_tensor(use_norm)
    scale_for_finite = clip_norm * _ops.minimum(1.0 / use_norm, _ops.cast(1.0, use_norm.dtype) / clip_norm)
    scale = scale_for_finite + (use_norm - use_norm)
    clipped = [None if v is None else _ops.identity(v * _ops.cast(scale, v.dtype)) for v in values]
    return clipped, use_norm


__all__ = ["clip_by_global_norm", "clip_by_norm", "clip_by_value", "global_norm", "l2_loss",
           "sigmoid_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
           "sparse_softmax_cross_entropy_with_logits", "weighted_cross_entropy_with_logits"]
