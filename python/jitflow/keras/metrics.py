"""jf.keras.metrics: Keras 3's streaming metrics. Their state lives in non-trainable
jf.Variables, so update_state runs eagerly or inside a traced training step; result() reads them
and reset_state() zeroes them."""
import numpy as np

from ..core import dtypes as _dt
from ..ops import basic_ops as _ops
from ..ops.dispatch import to_tensor as _t
from ..ops.variables import Variable
from . import losses as _losses

_EPSILON = 1e-7


def _divide_no_nan(a, b):
    safe = _ops.where(_ops.equal(b, _ops.zeros_like(b)), _ops.ones_like(b), b)
    return _ops.where(_ops.equal(b, _ops.zeros_like(b)), _ops.zeros_like(a), a / safe)


def _samplewise(values, sample_weight, dtype):
    """Values reduced to one per sample (the mean over trailing axes) and the weights they
    carry, as Keras's reduce_to_samplewise_values: weights of lower rank first take the mean of
    the values' extra axes, then multiply them."""
    values = _ops.cast(_t(values), dtype)
    if sample_weight is not None:
        sw = _ops.cast(_t(sample_weight), dtype)
        values, sw = _losses.squeeze_or_expand_to_same_rank(values, sw)
        if len(values.shape) > len(sw.shape):
            values = _ops.reduce_mean(values, axis=list(range(len(sw.shape), len(values.shape))))
        sw = _ops.broadcast_to(sw, _ops.shape(values))
        values = values * sw
        if len(sw.shape) > 1:
            sw = _ops.reduce_mean(sw, axis=list(range(1, len(sw.shape))))
    else:
        sw = None
    if len(values.shape) > 1:
        values = _ops.reduce_mean(values, axis=list(range(1, len(values.shape))))
    return values, sw


class Metric:
    """update_state(...) accumulates into variables, result() computes the value, reset_state()
    starts over; calling the metric updates it and returns the result."""

    def __init__(self, name=None, dtype=None):
        self.name = name or type(self).__name__.lower()
        self.dtype = _dt.as_dtype(dtype) if dtype is not None else _dt.float32
        self._variables = []

    def add_variable(self, shape, initializer="zeros", dtype=None, name=None):
        dt = _dt.as_dtype(dtype) if dtype is not None else self.dtype
        init = 0.0 if initializer == "zeros" else float(initializer)
        v = Variable(np.full(shape, init, dt.as_numpy_dtype), trainable=False, name=f"{self.name}/{name}")
        self._variables.append((v, init))
        return v

    @property
    def variables(self):
        return [v for v, _ in self._variables]

    def reset_state(self):
        for v, init in self._variables:
            v.assign(np.full(v.shape, init, v.dtype.as_numpy_dtype))

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement update_state")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must implement result")

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class Sum(Metric):
    def __init__(self, name="sum", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_variable((), name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = _samplewise(values, sample_weight, self.dtype)
        self.total.assign_add(_ops.reduce_sum(values))

    def result(self):
        return _ops.identity(self.total.read_value())


class Mean(Metric):
    """The weighted mean of everything seen: total / count, count the samples (or their weights)."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_variable((), name="total")
        self.count = self.add_variable((), name="count")

    def update_state(self, values, sample_weight=None):
        values, sw = _samplewise(values, sample_weight, self.dtype)
        self.total.assign_add(_ops.reduce_sum(values))
        if sw is None:
            n = _ops.cast(_ops.shape(values)[0], self.dtype) if len(values.shape) else _ops.cast(1, self.dtype)
        else:
            n = _ops.reduce_sum(sw)
        self.count.assign_add(n)

    def result(self):
        return _divide_no_nan(self.total.read_value(), self.count.read_value())


class MeanMetricWrapper(Mean):
    """The mean of fn(y_true, y_pred, **kwargs)'s per-sample values."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name or fn.__name__, dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


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


class AUC(Metric):
    """Keras's thresholded ROC AUC: true/false positive/negative counts at num_thresholds
    thresholds (-eps, 1/(n-1), ..., (n-2)/(n-1), 1+eps; a prediction above a threshold is
    positive), the curve's area summed by the trapezoid rule."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name="auc", dtype=None,
                 thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False):
        if curve != "ROC" or summation_method != "interpolation" or multi_label or label_weights is not None:
            raise NotImplementedError("jf.keras.metrics.AUC implements curve='ROC' with "
                                      "summation_method='interpolation' over all labels together")
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
            num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError(f"Argument `num_thresholds` must be an integer > 1. Received: num_thresholds={num_thresholds}")
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__(name, dtype)
        self.num_thresholds, self.curve, self.summation_method = num_thresholds, curve, summation_method
        self._from_logits, self._init_thresholds = from_logits, thresholds
        self._thresholds = np.array([0.0 - _EPSILON] + inner + [1.0 + _EPSILON], np.float32)
        self.true_positives = self.add_variable((num_thresholds,), name="true_positives")
        self.false_positives = self.add_variable((num_thresholds,), name="false_positives")
        self.true_negatives = self.add_variable((num_thresholds,), name="true_negatives")
        self.false_negatives = self.add_variable((num_thresholds,), name="false_negatives")

    @property
    def thresholds(self):
        return list(self._thresholds)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = _losses._float(y_pred)
        if self._from_logits:
            y_pred = _ops.sigmoid(y_pred)
        labels = _ops.cast(_t(y_true), _dt.bool) if _t(y_true).dtype != _dt.bool else _t(y_true)
        pred = _ops.reshape(_ops.cast(y_pred, self.dtype), [1, -1])
        label = _ops.reshape(labels, [1, -1])
        thr = _ops.reshape(_ops.constant(self._thresholds, self.dtype), [-1, 1])
        above = _ops.greater(pred, thr)  # [thresholds, predictions]
        if sample_weight is None:
            w = _ops.ones_like(pred)
        else:
            w = _ops.reshape(_ops.broadcast_to(_ops.cast(_t(sample_weight), self.dtype), _ops.shape(y_pred)), [1, -1])

        def count(mask):
            return _ops.reduce_sum(_ops.cast(mask, self.dtype) * w, axis=1)

        not_label, not_above = _ops.logical_not(label), _ops.logical_not(above)
        self.true_positives.assign_add(count(_ops.logical_and(above, label)))
        self.false_positives.assign_add(count(_ops.logical_and(above, not_label)))
        self.true_negatives.assign_add(count(_ops.logical_and(not_above, not_label)))
        self.false_negatives.assign_add(count(_ops.logical_and(not_above, label)))

    def result(self):
        tp, fp = self.true_positives.read_value(), self.false_positives.read_value()
        tn, fn = self.true_negatives.read_value(), self.false_negatives.read_value()
        recall = _divide_no_nan(tp, tp + fn)
        fp_rate = _divide_no_nan(fp, fp + tn)
        n = self.num_thresholds
        heights = (recall[: n - 1] + recall[1:]) / 2.0
        return _ops.reduce_sum((fp_rate[: n - 1] - fp_rate[1:]) * heights)

    def get_config(self):
        config = {**super().get_config(), "num_thresholds": self.num_thresholds, "curve": self.curve,
                  "summation_method": self.summation_method, "from_logits": self._from_logits}
        if self._init_thresholds is not None:
            config["thresholds"] = self._thresholds[1:-1].tolist()
        return config


_CLASSES = (Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy, AUC,
            MeanSquaredError, MeanAbsoluteError)
_BY_NAME = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({"accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
                 "categorical_accuracy": CategoricalAccuracy,
                 "sparse_categorical_accuracy": SparseCategoricalAccuracy, "auc": AUC,
                 "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
                 "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError})
mse = mean_squared_error = _losses.mean_squared_error
mae = mean_absolute_error = _losses.mean_absolute_error


def serialize(metric):
    return {"module": "keras.metrics", "class_name": type(metric).__name__, "config": metric.get_config(),
            "registered_name": None}


def deserialize(config, custom_objects=None):
    if isinstance(config, str):
        return get(config)
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Could not interpret metric identifier: {config}")
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """A Metric, a name ("accuracy", "auc", "mse", a class name: a new instance), a dict, or a
    function of (y_true, y_pred) (wrapped in a mean under its name)."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier in _BY_NAME:
            return _BY_NAME[identifier]()
        raise ValueError(f"Could not interpret metric identifier: {identifier}")
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"Could not interpret metric identifier: {identifier}")
