"""jf.keras.metrics' confusion-count metrics: AUC (ROC and PR), Precision, Recall, the four
counts and F-beta/F1 (the IoU metrics are in iou.py)."""
import numpy as np

from ... import _C
from ...core import dtypes as _dt
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops import sort_ops as _sort
from ...ops.dispatch import to_tensor as _t
from .. import losses as _losses
from .base import _EPSILON, Metric, _divide_no_nan


class AUC(Metric):
    """Keras's thresholded AUC: true/false positive/negative counts at num_thresholds
    thresholds (-eps, 1/(n-1), ..., (n-2)/(n-1), 1+eps; a prediction above a threshold is
    positive); the ROC or precision-recall curve's area by Riemann sums (trapezoids, or the
    lower or upper step with 'minoring'/'majoring'); the PR curve with 'interpolation' by Davis
    and Goadrich's interpolation between thresholds, as Keras."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name="auc", dtype=None,
                 thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False):
        curve, summation_method = str(curve).upper(), str(summation_method).lower()
        if curve not in ("ROC", "PR") or summation_method not in ("interpolation", "minoring", "majoring"):
            raise NotImplementedError("jf.keras.metrics.AUC implements curve 'ROC' and 'PR' with summation_method "
                                      "'interpolation', 'minoring' or 'majoring' (not PRGAIN)")
        if multi_label or label_weights is not None:
            raise NotImplementedError("jf.keras.metrics.AUC computes over all labels together (no multi_label)")
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
        n = self.num_thresholds
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _interpolated_pr_auc(tp, fp, fn, n)
        recall = _divide_no_nan(tp, tp + fn)
        x, y = (_divide_no_nan(fp, fp + tn), recall) if self.curve == "ROC" else (recall, _divide_no_nan(tp, tp + fp))
        if self.summation_method == "interpolation":
            heights = (y[: n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = _ops.minimum(y[: n - 1], y[1:])
        else:
            heights = _ops.maximum(y[: n - 1], y[1:])
        return _ops.reduce_sum((x[: n - 1] - x[1:]) * heights)

    def get_config(self):
        config = {**super().get_config(), "num_thresholds": self.num_thresholds, "curve": self.curve,
                  "summation_method": self.summation_method, "from_logits": self._from_logits}
        if self._init_thresholds is not None:
            config["thresholds"] = self._thresholds[1:-1].tolist()
        return config


def _interpolated_pr_auc(tp, fp, fn, n):
    """The precision-recall AUC with precision interpolated between adjacent thresholds as a
    function of the positives predicted (Davis & Goadrich 2006), Keras's 'interpolation'."""
    zero = _ops.zeros_like(tp[1:])
    dtp = tp[: n - 1] - tp[1:]
    p = tp + fp
    dp = p[: n - 1] - p[1:]
    slope = _divide_no_nan(dtp, _ops.maximum(dp, zero))
    intercept = tp[1:] - slope * p[1:]
    both = _ops.logical_and(p[: n - 1] > 0, p[1:] > 0)
    ratio = _ops.where(both, _divide_no_nan(p[: n - 1], _ops.maximum(p[1:], zero)), _ops.ones_like(p[1:]))
    area = _divide_no_nan(slope * (dtp + intercept * _ops.log(ratio)), _ops.maximum(tp[1:] + fn[1:], zero))
    return _ops.reduce_sum(area)


def _flat_pairs(y_true, y_pred, sample_weight, dtype):
    """Labels as bools, predictions and weights as dtype, all [1, n] (one row per threshold
    broadcasts against them)."""
    y_true = _t(y_true)
    labels = y_true if y_true.dtype == _dt.bool else _ops.cast(y_true, _dt.bool)
    pred = _ops.cast(_losses._float(y_pred), dtype)
    w = (_ops.ones_like(pred) if sample_weight is None
         else _ops.broadcast_to(_ops.cast(_t(sample_weight), dtype), _ops.shape(pred)))
    return _ops.reshape(labels, [1, -1]), _ops.reshape(pred, [1, -1]), _ops.reshape(w, [1, -1])


class _Thresholded(Metric):
    """Counts of one or more confusion cells at thresholds (a prediction above a threshold is
    positive), Keras's top_k (only each row's k best predictions can be positive) and class_id
    (one column of multi-label predictions)."""

    _cells = ()

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name, dtype)
        default = 0.5 if top_k is None else -1e30  # with top_k every kept prediction is positive
        single = thresholds is None or not isinstance(thresholds, (list, tuple))
        self._thresholds = [default if thresholds is None else float(thresholds)] if single else \
            [float(t) for t in thresholds]
        for t in self._thresholds:
            if thresholds is not None and not 0 <= t <= 1:
                raise ValueError(f"Threshold values must be in [0, 1]. Received: {t}")
        self._single, self._init_thresholds = single, thresholds
        self.top_k, self.class_id = top_k, class_id
        for cell in self._cells:
            setattr(self, cell, self.add_variable((len(self._thresholds),), name=cell))

    @property
    def thresholds(self):
        return self._thresholds[0] if self._single else list(self._thresholds)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = _losses._float(y_pred)
        if self.top_k is not None:
            # Only the k best of each row can be positive (by top_k's indices, so ties keep k).
            best = _sort.top_k(y_pred, self.top_k).indices
            kept = _ops.reduce_sum(_array.one_hot(best, _ops.shape(y_pred)[-1], dtype=y_pred.dtype), axis=-2) > 0
            y_pred = _ops.where(kept, y_pred, _ops.fill(_ops.shape(y_pred), _ops.cast(-1e30, y_pred.dtype)))
        y_true = _t(y_true)
        if self.class_id is not None:
            y_true, y_pred = y_true[..., self.class_id], y_pred[..., self.class_id]
        label, pred, w = _flat_pairs(y_true, y_pred, sample_weight, self.dtype)
        above = _ops.greater(pred, _ops.reshape(_ops.constant(self._thresholds, self.dtype), [-1, 1]))
        cells = {"true_positives": _ops.logical_and(above, label),
                 "false_positives": _ops.logical_and(above, _ops.logical_not(label)),
                 "true_negatives": _ops.logical_and(_ops.logical_not(above), _ops.logical_not(label)),
                 "false_negatives": _ops.logical_and(_ops.logical_not(above), label)}
        for cell in self._cells:
            getattr(self, cell).assign_add(_ops.reduce_sum(_ops.cast(cells[cell], self.dtype) * w, axis=1))

    def _out(self, values):
        return values[0] if self._single else values

    def get_config(self):
        return {**super().get_config(), "thresholds": self._init_thresholds}


def _counter(cell, default_name):
    class Counter(_Thresholded):
        _cells = (cell,)

        def __init__(self, thresholds=None, name=None, dtype=None):
            super().__init__(thresholds, name=name or default_name, dtype=dtype)

        def result(self):
            return self._out(getattr(self, cell).read_value())

    return Counter


class TruePositives(_counter("true_positives", "true_positives")):
    """The weighted count of predictions above the threshold whose label is true."""


class FalsePositives(_counter("false_positives", "false_positives")):
    """The weighted count of predictions above the threshold whose label is false."""


class TrueNegatives(_counter("true_negatives", "true_negatives")):
    """The weighted count of predictions at or below the threshold whose label is false."""


class FalseNegatives(_counter("false_negatives", "false_negatives")):
    """The weighted count of predictions at or below the threshold whose label is true."""


class Precision(_Thresholded):
    """true positives / (true positives + false positives)."""

    _cells = ("true_positives", "false_positives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="precision", dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        tp = self.true_positives.read_value()
        return self._out(_divide_no_nan(tp, tp + self.false_positives.read_value()))

    def get_config(self):
        return {**super().get_config(), "top_k": self.top_k, "class_id": self.class_id}


class Recall(_Thresholded):
    """true positives / (true positives + false negatives)."""

    _cells = ("true_positives", "false_negatives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="recall", dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        tp = self.true_positives.read_value()
        return self._out(_divide_no_nan(tp, tp + self.false_negatives.read_value()))

    def get_config(self):
        return {**super().get_config(), "top_k": self.top_k, "class_id": self.class_id}


class FBetaScore(Metric):
    """Per-class F-beta of one-hot or multi-label [batch, classes] data: a prediction counts as
    positive above `threshold`, or, with threshold None, where it is its row's maximum (and not
    0); average None (per class), 'micro' (counts pooled), 'macro' or 'weighted' (by support)."""

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        super().__init__(name, dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(f"Invalid `average` argument value. Expected one of: {{None, 'micro', 'macro', "
                             f"'weighted'}}. Received: average={average}")
        if not beta > 0:
            raise ValueError(f"Invalid `beta` argument value. It should be > 0. Received: beta={beta}")
        if threshold is not None and not 0 < threshold <= 1:
            raise ValueError(f"Invalid `threshold` argument value. It should be a Python float in the range "
                             f"]0, 1]. Received: threshold={threshold}")
        self.average, self.beta, self.threshold = average, float(beta), threshold
        self._jf_built = False

    def _build(self, num_classes):
        shape = () if self.average == "micro" else (num_classes,)
        with _C.init_scope():
            for cell in ("true_positives", "false_positives", "false_negatives", "intermediate_weights"):
                setattr(self, cell, self.add_variable(shape, name=cell))
        self._jf_built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = _ops.cast(_t(y_pred), self.dtype)
        y_true = _ops.cast(_t(y_true), self.dtype)
        if len(y_pred.shape) != 2 or y_pred.shape[-1] is None:
            raise ValueError(f"FBetaScore expects 2D inputs with a known number of classes. Received: "
                             f"y_pred.shape={tuple(y_pred.shape)}")
        if not self._jf_built:
            self._build(y_pred.shape[-1])
        if self.threshold is None:
            top = _ops.reduce_max(y_pred, axis=-1, keepdims=True)
            positive = _ops.logical_and(y_pred >= top, _ops.abs(y_pred) > 1e-9)
        else:
            positive = y_pred > self.threshold
        pred = _ops.cast(positive, self.dtype)
        axis = None if self.average == "micro" else 0

        def weighted_sum(v):
            if sample_weight is not None:
                v = v * _ops.expand_dims(_ops.cast(_t(sample_weight), self.dtype), 1)
            return _ops.reduce_sum(v, axis=axis)

        self.true_positives.assign_add(weighted_sum(pred * y_true))
        self.false_positives.assign_add(weighted_sum(pred * (1 - y_true)))
        self.false_negatives.assign_add(weighted_sum((1 - pred) * y_true))
        self.intermediate_weights.assign_add(weighted_sum(y_true))

    def result(self):
        eps = _EPSILON
        tp = self.true_positives.read_value()
        precision = tp / (tp + self.false_positives.read_value() + eps)
        recall = tp / (tp + self.false_negatives.read_value() + eps)
        b2 = self.beta ** 2
        score = (1 + b2) * precision * recall / (b2 * precision + recall + eps)
        if self.average == "weighted":
            w = self.intermediate_weights.read_value()
            return _ops.reduce_sum(score * w / (_ops.reduce_sum(w) + eps))
        if self.average is not None:
            return _ops.reduce_mean(score)
        return score

    def reset_state(self):
        if self._jf_built:
            super().reset_state()

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta, "threshold": self.threshold}


class F1Score(FBetaScore):
    """FBetaScore with beta 1."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config
