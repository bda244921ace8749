"""jf.keras.metrics: Keras 3's streaming metrics (base.py: Metric, Mean, Sum; accuracy.py: the
per-sample ones; confusion.py: the ones built on confusion counts), found by name with get."""
from .. import losses as _losses
from .accuracy import (
    Accuracy,
    BinaryAccuracy,
    BinaryCrossentropy,
    CategoricalAccuracy,
    CategoricalCrossentropy,
    CategoricalHinge,
    CosineSimilarity,
    Hinge,
    KLDivergence,
    LogCoshError,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    Poisson,
    RootMeanSquaredError,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    SparseTopKCategoricalAccuracy,
    SquaredHinge,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    cosine_similarity,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from .base import Mean, MeanMetricWrapper, Metric, Sum
from .confusion import (
    AUC,
    F1Score,
    FalseNegatives,
    FalsePositives,
    FBetaScore,
    Precision,
    Recall,
    TrueNegatives,
    TruePositives,
)
from .curves import (
    PrecisionAtRecall,
    R2Score,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
)
from .iou import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU

_CLASSES = (Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy, AUC,
            MeanSquaredError, MeanAbsoluteError, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
            RootMeanSquaredError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError, CosineSimilarity,
            LogCoshError, BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, KLDivergence,
            Poisson, Hinge, SquaredHinge, CategoricalHinge, Precision, Recall, TruePositives, FalsePositives,
            TrueNegatives, FalseNegatives, FBetaScore, F1Score, MeanIoU, SensitivityAtSpecificity,
            SpecificityAtSensitivity, PrecisionAtRecall, RecallAtPrecision, R2Score, IoU, BinaryIoU, OneHotIoU,
            OneHotMeanIoU)
_BY_NAME = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({"accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
                 "categorical_accuracy": CategoricalAccuracy,
                 "sparse_categorical_accuracy": SparseCategoricalAccuracy, "auc": AUC,
                 "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
                 "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
                 "top_k_categorical_accuracy": TopKCategoricalAccuracy,
                 "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
                 "mape": MeanAbsolutePercentageError, "mean_absolute_percentage_error": MeanAbsolutePercentageError,
                 "msle": MeanSquaredLogarithmicError, "mean_squared_logarithmic_error": MeanSquaredLogarithmicError,
                 "cosine_similarity": CosineSimilarity, "logcosh": LogCoshError,
                 "binary_crossentropy": BinaryCrossentropy, "categorical_crossentropy": CategoricalCrossentropy,
                 "sparse_categorical_crossentropy": SparseCategoricalCrossentropy, "kld": KLDivergence,
                 "kl_divergence": KLDivergence, "poisson": Poisson, "hinge": Hinge, "squared_hinge": SquaredHinge,
                 "categorical_hinge": CategoricalHinge, "precision": Precision, "recall": Recall})
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


__all__ = [c.__name__ for c in _CLASSES] + [
    "MeanMetricWrapper", "Metric", "accuracy", "binary_accuracy", "categorical_accuracy", "cosine_similarity",
    "deserialize", "get", "mae", "mean_absolute_error", "mean_squared_error", "mse", "serialize",
    "sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy", "top_k_categorical_accuracy"]
