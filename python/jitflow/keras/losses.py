"""jf.keras.losses: Keras 3's losses as classes (reduction, sample weights, get_config) and as
functions (per-sample values, averaged over the last axis), on jitflow ops. Probabilities are
clipped to [1e-7, 1 - 1e-7] before their log, logits go through TF's fused cross-entropy ops, as
Keras's TF backend does."""
from .. import distribute as _distribute
from ..core import dtypes as _dt
from ..ops import array_ops as _array
from ..ops import basic_ops as _ops
from ..ops import losses_clipping as _xent
from ..ops import nn_ops as _nn
from ..ops import stats_ops as _stats
from ..ops.dispatch import to_tensor as _t

EPSILON = 1e-7
_REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)


def _float(x, like=None):
    x = _t(x)
    dt = like.dtype if like is not None and like.dtype.is_floating else _dt.float32
    return x if x.dtype == dt else _ops.cast(x, dt)


def _rank(x):
    return len(x.shape)


def squeeze_or_expand_to_same_rank(a, b, expand_rank_1=True):
    """Ranks one apart with a last dim of 1 on the longer one: a rank-1 shorter one gets that
    axis too (labels [N] against predictions [N, 1]), otherwise the longer one's is squeezed, as
    Keras lines up y_true, y_pred and sample weights."""
    ra, rb = _rank(a), _rank(b)
    if ra == rb + 1 and a.shape[-1] == 1:
        if rb == 1 and expand_rank_1:
            return a, _ops.expand_dims(b, -1)
        return _ops.squeeze(a, [-1]), b
    if rb == ra + 1 and b.shape[-1] == 1:
        if ra == 1 and expand_rank_1:
            return _ops.expand_dims(a, -1), b
        return a, _ops.squeeze(b, [-1])
    return a, b


def _prepare(y_true, y_pred):
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


# ---- the functions: one value per sample ------------------------------------------------
def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return _ops.reduce_mean(_ops.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return _ops.reduce_mean(_ops.abs(y_pred - y_true), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """0.5 e^2 where |e| <= delta, delta |e| - 0.5 delta^2 beyond, e = y_pred - y_true."""
    y_true, y_pred = _prepare(y_true, y_pred)
    error = _ops.abs(y_pred - y_true)
    d = _ops.cast(delta, y_pred.dtype)
    quadratic = 0.5 * _ops.square(error)
    linear = d * error - 0.5 * d * d
    return _ops.reduce_mean(_ops.where(_ops.less_equal(error, d), quadratic, linear), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        per_entry = _xent.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _xent.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        per_entry = -(y_true * _ops.log(p) + (1.0 - y_true) * _ops.log(1.0 - p))
    return _ops.reduce_mean(per_entry, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    if y_true.shape[-1] is not None and y_pred.shape[-1] is not None and len(y_true.shape) != len(y_pred.shape):
        raise ValueError("Arguments `target` and `output` must have the same shape. Received: "
                         f"target.shape={tuple(y_true.shape)}, output.shape={tuple(y_pred.shape)}")
    if label_smoothing:
        classes = _ops.cast(_ops.shape(y_true)[axis], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        return _xent.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    p = y_pred / _ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = _xent.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    return -_ops.reduce_sum(y_true * _ops.log(p), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    if ignore_class is not None:
        raise NotImplementedError("jf.keras.losses.sparse_categorical_crossentropy does not implement "
                                  "`ignore_class` yet")
    y_pred = _float(y_pred)
    y_true = _t(y_true)
    if _rank(y_true) == _rank(y_pred) and y_true.shape[-1] == 1:
        y_true = _ops.squeeze(y_true, [-1])
    labels = y_true if y_true.dtype in (_dt.int32, _dt.int64) else _ops.cast(y_true, _dt.int64)
    if from_logits:
        return _xent.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=y_pred)
    p = y_pred / _ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = _xent.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    depth = y_pred.shape[-1]
    if depth is None:
        raise ValueError("sparse_categorical_crossentropy needs the number of classes (y_pred's last dim) "
                         "known when traced")
    onehot = _array.one_hot(labels, depth, dtype=y_pred.dtype)
    return -_ops.reduce_sum(onehot * _ops.log(p), axis=axis)


def _hinge_labels(y_true):
    """Binary {0, 1} labels as {-1, 1}, as Keras converts them for the hinge losses (labels that
    are not all 0 or 1 stay as they are)."""
    binary = _stats.reduce_all(_ops.logical_or(_ops.equal(y_true, 0.0), _ops.equal(y_true, 1.0)))
    return _ops.where(binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return _ops.reduce_mean(_ops.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return _ops.reduce_mean(_ops.square(_ops.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    pos = _ops.reduce_sum(y_true * y_pred, axis=-1)
    neg = _ops.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return _ops.maximum(neg - pos + 1.0, 0.0)


def mean_absolute_percentage_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    diff = _ops.abs((y_true - y_pred) / _ops.maximum(_ops.abs(y_true), EPSILON))
    return 100.0 * _ops.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    first = _ops.log(_ops.maximum(y_pred, EPSILON) + 1.0)
    second = _ops.log(_ops.maximum(y_true, EPSILON) + 1.0)
    return _ops.reduce_mean(_ops.square(first - second), axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    """Minus the cosine of the angle between y_true and y_pred along axis (Keras's loss sign)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    return -_ops.reduce_sum(_nn.l2_normalize(y_true, axis=axis) * _nn.l2_normalize(y_pred, axis=axis), axis=axis)


def log_cosh(y_true, y_pred):
    """log(cosh(e)) written as e + softplus(-2 e) - log 2, which does not overflow."""
    y_true, y_pred = _prepare(y_true, y_pred)
    e = y_pred - y_true
    return _ops.reduce_mean(e + _ops.softplus(-2.0 * e) - _ops.cast(0.6931471805599453, e.dtype), axis=-1)


def kl_divergence(y_true, y_pred):
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    y_true = _xent.clip_by_value(y_true, EPSILON, 1.0)
    y_pred = _xent.clip_by_value(y_pred, EPSILON, 1.0)
    return _ops.reduce_sum(y_true * _ops.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    return _ops.reduce_mean(y_pred - y_true * _ops.log(y_pred + EPSILON), axis=-1)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0,
                              from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy per entry scaled by (1 - p_t)^gamma, p_t the probability given to the
    true label (and by alpha / 1 - alpha for positives / negatives with class balancing)."""
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        y_pred = _ops.sigmoid(y_pred)
    p = _xent.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
    bce = -(y_true * _ops.log(p) + (1.0 - y_true) * _ops.log(1.0 - p))
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal = _ops.pow(1.0 - p_t, _ops.cast(gamma, y_pred.dtype)) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return _ops.reduce_mean(focal, axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                                   axis=-1):
    """Categorical cross-entropy per class scaled by alpha (1 - p)^gamma, summed over classes."""
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    if label_smoothing:
        classes = _ops.cast(_ops.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        y_pred = _nn.softmax(y_pred, axis=axis)
    p = _xent.clip_by_value(y_pred / _ops.reduce_sum(y_pred, axis=axis, keepdims=True), EPSILON, 1.0 - EPSILON)
    factor = _ops.pow(1.0 - p, _ops.cast(gamma, p.dtype)) * alpha
    return _ops.reduce_sum(factor * (-y_true * _ops.log(p)), axis=axis)


def dice(y_true, y_pred, axis=None):
    """1 - 2 |y_true . y_pred| / (|y_true| + |y_pred| + epsilon), summed over axis (all when None)."""
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    overlap = _ops.reduce_sum(y_true * y_pred, axis=axis)
    total = _ops.reduce_sum(y_true, axis=axis) + _ops.reduce_sum(y_pred, axis=axis) + EPSILON
    return 1.0 - 2.0 * overlap / total


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """1 - TP / (TP + alpha FP + beta FN), the soft counts taken from y_true and y_pred."""
    y_pred = _float(y_pred)
    y_true = _float(y_true, y_pred)
    tp = _ops.reduce_sum(y_true * y_pred, axis=axis)
    fp = _ops.reduce_sum((1.0 - y_pred) * y_true, axis=axis)
    fn = _ops.reduce_sum(y_pred * (1.0 - y_true), axis=axis)
    return 1.0 - tp / (tp + fp * alpha + fn * beta + EPSILON)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh


# ---- the classes: reduced over the batch ------------------------------------------------
def scale_loss_for_distribution(value):
    """value divided by the replicas in sync of the strategy in effect (Keras's scaling under
    tf.distribute): each replica's mean over its own rows, so divided, sums over the replicas to
    the global batch's mean, and so do its gradients."""
    replicas = _distribute.get_strategy().num_replicas_in_sync
    return value if replicas == 1 else value * _ops.cast(1.0 / replicas, value.dtype)


def reduce_values(values, sample_weight=None, reduction="sum_over_batch_size"):
    """Weights each value (sample_weight lined up with the values' rank) and reduces: the
    mean over every value ("sum_over_batch_size"/"mean"), the sum, the weighted mean
    ("mean_with_sample_weight"), or no reduction ("none"/None). Means are scaled for the strategy
    in effect (scale_loss_for_distribution), as Keras's are."""
    if sample_weight is not None:
        sw = _float(sample_weight, values)
        values, sw = squeeze_or_expand_to_same_rank(values, sw)
        while _rank(sw) < _rank(values):
            sw = _ops.expand_dims(sw, -1)
        weighted = values * sw
    else:
        weighted, sw = values, None
    if reduction in (None, "none"):
        return weighted
    if reduction == "sum":
        return _ops.reduce_sum(weighted)
    if reduction == "mean_with_sample_weight" and sw is not None:
        return scale_loss_for_distribution(_ops.reduce_sum(weighted) / _ops.reduce_sum(sw * _ops.ones_like(values)))
    return scale_loss_for_distribution(_ops.reduce_mean(weighted))


class Loss:
    """loss(y_true, y_pred, sample_weight=None): `call`'s per-sample values, reduced."""

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"Invalid value for argument `reduction`. Expected one of {list(_REDUCTIONS)}. "
                             f"Received: reduction={reduction}")
        self.name = name or type(self).__name__
        self.reduction = reduction
        self.dtype = dtype

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.call(y_true, y_pred)
        if self.dtype is not None:
            values = _ops.cast(values, _dt.as_dtype(self.dtype))
        return reduce_values(values, sample_weight, self.reduction)

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A loss class around a per-sample function and its keyword arguments."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.fn, self._fn_kwargs = fn, kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


class MeanSquaredError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction, name, dtype)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, reduction, name, dtype)


class Huber(LossFunctionWrapper):
    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss", dtype=None):
        super().__init__(huber, reduction, name, dtype, delta=delta)


class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="binary_crossentropy", dtype=None):
        super().__init__(binary_crossentropy, reduction, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class CategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy", dtype=None):
        super().__init__(categorical_crossentropy, reduction, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, reduction, name, dtype, from_logits=from_logits,
                         ignore_class=ignore_class)
        self.from_logits = from_logits


class Hinge(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(hinge, reduction, name, dtype)


class SquaredHinge(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, reduction, name, dtype)


class CategoricalHinge(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, reduction, name, dtype)


class MeanAbsolutePercentageError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, reduction, name, dtype)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(mean_squared_logarithmic_error, reduction, name, dtype)


class CosineSimilarity(LossFunctionWrapper):
    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity", dtype=None):
        super().__init__(cosine_similarity, reduction, name, dtype, axis=axis)


class LogCosh(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(log_cosh, reduction, name, dtype)


class KLDivergence(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, reduction, name, dtype)


class Poisson(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(poisson, reduction, name, dtype)


class BinaryFocalCrossentropy(LossFunctionWrapper):
    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                 axis=-1, reduction="sum_over_batch_size", name="binary_focal_crossentropy", dtype=None):
        super().__init__(binary_focal_crossentropy, reduction, name, dtype, apply_class_balancing=apply_class_balancing,
                         alpha=alpha, gamma=gamma, from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class CategoricalFocalCrossentropy(LossFunctionWrapper):
    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_focal_crossentropy", dtype=None):
        super().__init__(categorical_focal_crossentropy, reduction, name, dtype, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class Dice(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="dice", axis=None, dtype=None):
        super().__init__(dice, reduction, name, dtype, axis=axis)


class Tversky(LossFunctionWrapper):
    def __init__(self, alpha=0.5, beta=0.5, reduction="sum_over_batch_size", name="tversky", axis=None, dtype=None):
        super().__init__(tversky, reduction, name, dtype, alpha=alpha, beta=beta, axis=axis)


_CLASSES = (MeanSquaredError, MeanAbsoluteError, Huber, BinaryCrossentropy, CategoricalCrossentropy,
            SparseCategoricalCrossentropy, Hinge, SquaredHinge, CategoricalHinge, MeanAbsolutePercentageError,
            MeanSquaredLogarithmicError, CosineSimilarity, LogCosh, KLDivergence, Poisson, BinaryFocalCrossentropy,
            CategoricalFocalCrossentropy, Dice, Tversky)
_FUNCTIONS = {"mean_squared_error": mean_squared_error, "mse": mean_squared_error, "MSE": mean_squared_error,
              "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error, "MAE": mean_absolute_error,
              "huber": huber, "binary_crossentropy": binary_crossentropy,
              "categorical_crossentropy": categorical_crossentropy,
              "sparse_categorical_crossentropy": sparse_categorical_crossentropy, "hinge": hinge,
              "squared_hinge": squared_hinge, "categorical_hinge": categorical_hinge,
              "mean_absolute_percentage_error": mean_absolute_percentage_error,
              "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
              "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
              "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
              "cosine_similarity": cosine_similarity, "log_cosh": log_cosh, "logcosh": log_cosh,
              "kl_divergence": kl_divergence, "kld": kl_divergence, "KLD": kl_divergence,
              "kullback_leibler_divergence": kl_divergence, "poisson": poisson,
              "binary_focal_crossentropy": binary_focal_crossentropy,
              "categorical_focal_crossentropy": categorical_focal_crossentropy, "dice": dice, "tversky": tversky}
_BY_NAME = {c.__name__: c for c in _CLASSES}


def serialize(loss):
    if isinstance(loss, Loss):
        return {"module": "keras.losses", "class_name": type(loss).__name__, "config": loss.get_config(),
                "registered_name": None}
    name = getattr(loss, "__name__", None)
    if _FUNCTIONS.get(name) is loss:
        return name
    raise ValueError(f"Could not serialize loss {loss!r}")


def deserialize(config, custom_objects=None):
    if isinstance(config, str):
        return get(config)
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Could not interpret loss identifier: {config}")
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """None, a Loss, a function, a function's name ("mse", "categorical_crossentropy"), a class
    name ("MeanSquaredError": an instance), or a dict from serialize()."""
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]
        if identifier in _BY_NAME:
            return _BY_NAME[identifier]()
        raise ValueError(f"Could not interpret loss identifier: {identifier}")
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss identifier: {identifier}")
