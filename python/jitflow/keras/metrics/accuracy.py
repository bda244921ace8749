"""jf.keras.metrics' per-sample metrics: the accuracies (top-k too), RMSE, and the means of the
losses' values (crossentropies, hinges, KL divergence, ...)."""
from ...core import dtypes as _dt
from ...ops import basic_ops as _ops
from ...ops import sort_ops as _sort
from ...ops import stats_ops as _stats
from ...ops.dispatch import to_tensor as _t
from .. import losses as _losses
from .base import Mean, MeanMetricWrapper


def accuracy(y_true, y_pred):
    y_pred = _t(y_pred)
    y_true = _ops.cast(_t(y_true), y_pred.dtype)
    y_true, y_pred = _losses.squeeze_or_expand_to_same_rank(y_true, y_pred)
    return _ops.cast(_ops.equal(y_true, y_pred), _dt.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_pred = _losses._float(y_pred)
    y_true = _losses._float(y_true, y_pred)
    y_true, y_pred = _losses.squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = _ops.cast(_ops.greater(y_pred, _ops.cast(threshold, y_pred.dtype)), y_pred.dtype)
    return _ops.cast(_ops.equal(y_true, predicted), _dt.float32)


def categorical_accuracy(y_true, y_pred):
    return _ops.cast(_ops.equal(_ops.argmax(_t(y_true), -1), _ops.argmax(_t(y_pred), -1)), _dt.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    y_true, y_pred = _t(y_true), _t(y_pred)
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = _ops.squeeze(y_true, [-1])
    predicted = _ops.argmax(y_pred, -1)
    return _ops.cast(_ops.equal(_ops.cast(y_true, predicted.dtype), predicted), _dt.float32)


class Accuracy(MeanMetricWrapper):
    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name, dtype)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name, dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name, dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name, dtype)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(_losses.mean_squared_error, name, dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(_losses.mean_absolute_error, name, dtype)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    y_pred = _losses._float(y_pred)
    return sparse_top_k_categorical_accuracy(_ops.argmax(_t(y_true), -1), y_pred, k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    """Whether each label is among the k highest predictions (ties count against it, as TF's
    in_top_k); with from_sorted_ids, y_pred already holds the top class ids, best first."""
    y_true, y_pred = _t(y_true), _t(y_pred)
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = _ops.squeeze(y_true, [-1])
    if from_sorted_ids:
        hit = _ops.equal(y_pred[..., :k], _ops.expand_dims(_ops.cast(y_true, y_pred.dtype), -1))
        return _ops.cast(_stats.reduce_any(hit, axis=-1), _dt.float32)
    flat_pred = _ops.reshape(_losses._float(y_pred), [-1, _ops.shape(y_pred)[-1]])
    hit = _sort.in_top_k(_ops.reshape(_ops.cast(y_true, _dt.int64), [-1]), flat_pred, k)
    return _ops.reshape(_ops.cast(hit, _dt.float32), _ops.shape(y_true))


def cosine_similarity(y_true, y_pred, axis=-1):
    """The cosine of the angle between y_true and y_pred (the loss's negation)."""
    return -_losses.cosine_similarity(y_true, y_pred, axis=axis)


def log_cosh(y_true, y_pred):
    return _losses.log_cosh(y_true, y_pred)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name, dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None, from_sorted_ids=False):
        super().__init__(sparse_top_k_categorical_accuracy, name, dtype, k=k, from_sorted_ids=from_sorted_ids)


class RootMeanSquaredError(Mean):
    """sqrt of the mean of the squared errors seen so far."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name, dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _losses._prepare(y_true, y_pred)
        super().update_state(_ops.square(y_pred - y_true), sample_weight)

    def result(self):
        return _ops.sqrt(super().result())


def _wrapper(name, fn, **defaults):
    """A MeanMetricWrapper class over fn, its keyword arguments with Keras's defaults."""

    def __init__(self, name=name, dtype=None, **kwargs):
        MeanMetricWrapper.__init__(self, fn, name, dtype, **{**defaults, **kwargs})

    cls_name = "".join(p.capitalize() for p in name.split("_"))
    return type(cls_name, (MeanMetricWrapper,), {"__init__": __init__, "__doc__": f"The mean of {name}."})


MeanAbsolutePercentageError = _wrapper("mean_absolute_percentage_error", _losses.mean_absolute_percentage_error)
MeanSquaredLogarithmicError = _wrapper("mean_squared_logarithmic_error", _losses.mean_squared_logarithmic_error)
CosineSimilarity = _wrapper("cosine_similarity", cosine_similarity, axis=-1)
LogCoshError = _wrapper("logcosh", log_cosh)
LogCoshError.__name__ = LogCoshError.__qualname__ = "LogCoshError"
BinaryCrossentropy = _wrapper("binary_crossentropy", _losses.binary_crossentropy, from_logits=False,
                              label_smoothing=0.0)
CategoricalCrossentropy = _wrapper("categorical_crossentropy", _losses.categorical_crossentropy, from_logits=False,
                                   label_smoothing=0.0, axis=-1)
SparseCategoricalCrossentropy = _wrapper("sparse_categorical_crossentropy", _losses.sparse_categorical_crossentropy,
                                         from_logits=False, axis=-1)
KLDivergence = _wrapper("kl_divergence", _losses.kl_divergence)
KLDivergence.__name__ = KLDivergence.__qualname__ = "KLDivergence"
Poisson = _wrapper("poisson", _losses.poisson)
Hinge = _wrapper("hinge", _losses.hinge)
SquaredHinge = _wrapper("squared_hinge", _losses.squared_hinge)
CategoricalHinge = _wrapper("categorical_hinge", _losses.categorical_hinge)
