"""jf.keras.metrics read off a thresholded confusion curve: SensitivityAtSpecificity,
SpecificityAtSensitivity, PrecisionAtRecall and RecallAtPrecision (the best of one rate where
the other meets a target, over Keras's evenly spaced thresholds 0, 1/(n-1), ..., 1), and the
regression R2Score (per output column, aggregated as Keras does)."""
import warnings

from ... import _C
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops.dispatch import to_tensor as _t
from .. import losses as _losses
from .base import Metric, _divide_no_nan
from .confusion import _flat_pairs


class _AtConstraint(Metric):
    """The four confusion counts at num_thresholds thresholds (a prediction above a threshold
    is positive); result(): the largest `dependent` rate among thresholds whose `constrained`
    rate is at least `value` (0 when none is)."""

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(name, dtype)
        if num_thresholds <= 0:
            raise ValueError(f"Argument `num_thresholds` must be an integer > 0. Received: num_thresholds={num_thresholds}")
        self.value, self.num_thresholds, self.class_id = value, num_thresholds, class_id
        self.thresholds = [0.5] if num_thresholds == 1 else \
            [0.0] + [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)] + [1.0]
        n = len(self.thresholds)
        self.true_positives = self.add_variable((n,), name="true_positives")
        self.false_positives = self.add_variable((n,), name="false_positives")
        self.true_negatives = self.add_variable((n,), name="true_negatives")
        self.false_negatives = self.add_variable((n,), name="false_negatives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred, y_true = _losses._float(y_pred), _t(y_true)
        if self.class_id is not None:
            y_true, y_pred = y_true[..., self.class_id], y_pred[..., self.class_id]
        label, pred, w = _flat_pairs(y_true, y_pred, sample_weight, self.dtype)
        above = _ops.greater(pred, _ops.reshape(_ops.constant(self.thresholds, self.dtype), [-1, 1]))
        below, negative = _ops.logical_not(above), _ops.logical_not(label)
        for var, cell in ((self.true_positives, _ops.logical_and(above, label)),
                          (self.false_positives, _ops.logical_and(above, negative)),
                          (self.true_negatives, _ops.logical_and(below, negative)),
                          (self.false_negatives, _ops.logical_and(below, label))):
            var.assign_add(_ops.reduce_sum(_ops.cast(cell, self.dtype) * w, axis=1))

    def _rates(self):
        tp, fp = self.true_positives.read_value(), self.false_positives.read_value()
        tn, fn = self.true_negatives.read_value(), self.false_negatives.read_value()
        return {"sensitivity": _divide_no_nan(tp, tp + fn), "specificity": _divide_no_nan(tn, tn + fp),
                "precision": _divide_no_nan(tp, tp + fp)}

    def _best(self, constrained, dependent):
        feasible = _ops.greater_equal(constrained, _ops.cast(self.value, constrained.dtype))
        return _ops.reduce_max(_ops.concat([_ops.where(feasible, dependent, _ops.zeros_like(dependent)),
                                            _ops.zeros([1], dependent.dtype)], 0))

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "class_id": self.class_id}


def _at(cls_name, value_name, constrained, dependent, default_name):
    def __init__(self, value=None, num_thresholds=200, class_id=None, name=None, dtype=None, **keyword):
        if value_name in keyword:  # Keras's own argument name (specificity=, recall=, ...)
            value = keyword.pop(value_name)
        if keyword or value is None:
            raise TypeError(f"{cls_name}() takes `{value_name}`, num_thresholds, class_id, name and dtype; got "
                            f"{sorted(keyword) or 'no ' + value_name}")
        if value < 0 or value > 1:
            raise ValueError(f"Argument `{value_name}` must be in the range [0, 1]. Received: {value_name}={value}")
        _AtConstraint.__init__(self, value, num_thresholds, class_id, name or default_name, dtype)

    def result(self):
        rates = self._rates()
        return self._best(rates[constrained], rates[dependent])

    def get_config(self):
        return {**_AtConstraint.get_config(self), value_name: self.value}

    doc = f"The best {dependent} over the thresholds whose {constrained} is at least `{value_name}`."
    return type(cls_name, (_AtConstraint,), {"__init__": __init__, "result": result, "get_config": get_config,
                                             "__doc__": doc, "__module__": __name__})


SensitivityAtSpecificity = _at("SensitivityAtSpecificity", "specificity", "specificity", "sensitivity",
                               "sensitivity_at_specificity")
SpecificityAtSensitivity = _at("SpecificityAtSensitivity", "sensitivity", "sensitivity", "specificity",
                               "specificity_at_sensitivity")
PrecisionAtRecall = _at("PrecisionAtRecall", "recall", "sensitivity", "precision", "precision_at_recall")
RecallAtPrecision = _at("RecallAtPrecision", "precision", "precision", "sensitivity", "recall_at_precision")


class R2Score(Metric):
    """The coefficient of determination per output column of [batch, outputs] data, weighted by
    sample_weight; class_aggregation "uniform_average" (the mean), "variance_weighted_average"
    or None (per column); num_regressors > 0 gives the adjusted score."""

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score", dtype=None):
        super().__init__(name, dtype)
        allowed = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in allowed:
            raise ValueError(f"Invalid value for argument `class_aggregation`. Expected one of {allowed}. "
                             f"Received: class_aggregation={class_aggregation}")
        if num_regressors < 0:
            raise ValueError("Invalid value for argument `num_regressors`. Expected a value >= 0. "
                             f"Received: num_regressors={num_regressors}")
        self.class_aggregation, self.num_regressors = class_aggregation, num_regressors
        self.num_samples = self.add_variable((), name="num_samples")
        self._columns = None

    def _build(self, y_true, y_pred):
        if len(y_true.shape) != 2 or len(y_pred.shape) != 2 or y_pred.shape[-1] is None:
            raise ValueError("R2Score expects 2D inputs with shape (batch_size, output_dim), with output_dim fully "
                             f"defined (not None). Received input shapes: y_pred.shape={tuple(y_pred.shape)} and "
                             f"y_true.shape={tuple(y_true.shape)}.")
        n = y_pred.shape[-1]
        self.squared_sum = self.add_variable((n,), name="squared_sum")
        self.sum = self.add_variable((n,), name="sum")
        self.total_mse = self.add_variable((n,), name="residual")
        self.count = self.add_variable((n,), name="count")
        self._columns = n

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = _ops.cast(_t(y_true), self.dtype)
        y_pred = _ops.cast(_t(y_pred), self.dtype)
        y_true, y_pred = _losses.squeeze_or_expand_to_same_rank(y_true, y_pred)
        if self._columns is None:
            self._build(y_true, y_pred)
        w = _ops.ones([], self.dtype) if sample_weight is None else _ops.cast(_t(sample_weight), self.dtype)
        if len(w.shape) == 1:
            w = _ops.expand_dims(w, 1)
        w = _ops.broadcast_to(w, _ops.shape(y_true))
        self.sum.assign_add(_ops.reduce_sum(y_true * w, axis=0))
        self.squared_sum.assign_add(_ops.reduce_sum(y_true * y_true * w, axis=0))
        self.total_mse.assign_add(_ops.reduce_sum(_ops.square(y_true - y_pred) * w, axis=0))
        self.count.assign_add(_ops.reduce_sum(w, axis=0))
        self.num_samples.assign_add(_ops.cast(_array.size(y_true), self.dtype))

    def result(self):
        total_sum = self.sum.read_value()
        total = self.squared_sum.read_value() - total_sum * (total_sum / self.count.read_value())
        raw = 1.0 - self.total_mse.read_value() / total
        raw = _ops.where(_ops.is_inf(raw), _ops.zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            score = _ops.reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = _ops.reduce_sum(total * raw) / _ops.reduce_sum(total)
        else:
            score = raw
        if self.num_regressors:
            n, p = self.num_samples.read_value(), float(self.num_regressors)
            valid = n - 1.0 > p
            if not _C.is_tracing() and not bool(valid.numpy()):
                why = ("Division by zero in Adjusted R2 score." if float(n.numpy()) - 1.0 == p else
                       "More independent predictors than datapoints in adjusted R2 score.")
                warnings.warn(why + " Falling back to standard R2 score.", stacklevel=2)
            adjusted = 1.0 - (1.0 - score) * (n - 1.0) / _ops.where(valid, n - p - 1.0, _ops.ones_like(n))
            score = _ops.where(valid, adjusted, score)
        return score

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}

