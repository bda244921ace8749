"""jf.keras.metrics' intersection-over-union metrics, Keras 3's: IoU over chosen target classes,
MeanIoU over all, BinaryIoU (scores thresholded to class 0 or 1) and OneHotIoU /
OneHotMeanIoU (one-hot or score predictions, by argmax). They accumulate one weighted
[num_classes, num_classes] confusion matrix (rows true, columns predicted); ids outside
[0, num_classes) and ignore_class are left out, and classes with an empty union do not count.
As in Keras the matrix is int64 unless a dtype is given, so float sample weights are truncated
(with Keras's warning)."""
import warnings

from ...core import dtypes as _dt
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops import linalg_ops as _linalg
from ...ops.dispatch import to_tensor as _t
from .base import _EPSILON, Metric


class IoU(Metric):
    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(name or "io_u", dtype or "int64")
        self.num_classes, self.ignore_class = int(num_classes), ignore_class
        self.target_class_ids = list(target_class_ids)
        if self.target_class_ids and max(self.target_class_ids) >= self.num_classes:
            raise ValueError(f"Target class id {max(self.target_class_ids)} is out of range, which is "
                             f"[0, {self.num_classes}).")
        self.sparse_y_true, self.sparse_y_pred, self.axis = sparse_y_true, sparse_y_pred, axis
        self.total_cm = self.add_variable((self.num_classes, self.num_classes), name="total_confusion_matrix")

    def _predicted(self, y_pred):
        return y_pred

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _t(y_true), self._predicted(_t(y_pred))
        if not self.sparse_y_true:
            y_true = _ops.argmax(y_true, self.axis)
        if not self.sparse_y_pred:
            y_pred = _ops.argmax(y_pred, self.axis)
        t = _ops.reshape(_ops.cast(y_true, _dt.int64), [-1])
        p = _ops.reshape(_ops.cast(y_pred, _dt.int64), [-1])
        if sample_weight is None:
            w = _ops.ones_like(t, dtype=self.dtype)
        else:
            sample_weight = _t(sample_weight)
            if sample_weight.dtype.is_floating and self.dtype.is_integer:
                warnings.warn("You are passing weight as `float`, but dtype is `int`. This may result in an incorrect "
                              "weight due to type casting Consider using integer weights.", stacklevel=2)
            w = _ops.reshape(_ops.broadcast_to(_ops.cast(sample_weight, self.dtype), _ops.shape(y_true)), [-1])
        n = self.num_classes
        inside = _ops.logical_and(_ops.logical_and(t >= 0, t < n), _ops.logical_and(p >= 0, p < n))
        if self.ignore_class is not None:
            inside = _ops.logical_and(inside, _ops.not_equal(t, self.ignore_class))
        w = _ops.where(inside, w, _ops.zeros_like(w))
        cell = _ops.where(inside, t * n + p, _ops.zeros_like(t))
        counts = _array.unsorted_segment_sum(w, cell, n * n)
        self.total_cm.assign_add(_ops.reshape(counts, [n, n]))

    def result(self):
        cm = _ops.cast(self.total_cm.read_value(), _dt.float32)
        tp = _linalg.diag_part(cm)
        union = _ops.reduce_sum(cm, axis=0) + _ops.reduce_sum(cm, axis=1) - tp
        ids = _ops.constant(self.target_class_ids, _dt.int32)
        tp, union = _array.gather(tp, ids), _array.gather(union, ids)
        valid = _ops.cast(union > 1e-9, _dt.float32)
        iou = _ops.where(union > 1e-9, tp / (union + _EPSILON), _ops.zeros_like(tp))
        return _ops.reduce_sum(iou) / (_ops.reduce_sum(valid) + _EPSILON)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class MeanIoU(IoU):
    """IoU averaged over every class."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(int(num_classes))), name or "mean_io_u", dtype, ignore_class,
                         sparse_y_true, sparse_y_pred, axis)

    def get_config(self):
        config = super().get_config()
        del config["target_class_ids"]
        return config


class BinaryIoU(IoU):
    """IoU of two classes, a prediction being class 1 when its score is at least threshold."""

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(2, target_class_ids, name or "binary_io_u", dtype)
        self.threshold = float(threshold)

    def _predicted(self, y_pred):
        return _ops.cast(_ops.cast(y_pred, _dt.float32) >= self.threshold, _dt.int64)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype.name, "target_class_ids": self.target_class_ids,
                "threshold": self.threshold}


class OneHotIoU(IoU):
    """IoU of one-hot labels and score predictions (both by argmax)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_pred=False,
                 axis=-1):
        super().__init__(num_classes, target_class_ids, name or "one_hot_io_u", dtype, ignore_class, False,
                         sparse_y_pred, axis)

    def get_config(self):
        config = super().get_config()
        del config["sparse_y_true"]
        return config


class OneHotMeanIoU(MeanIoU):
    """MeanIoU of one-hot labels and score predictions (both by argmax)."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name or "one_hot_mean_io_u", dtype, ignore_class, False, sparse_y_pred, axis)

    def get_config(self):
        config = super().get_config()
        del config["sparse_y_true"]
        return config
