"""The base of jf.keras.metrics: Metric (state in non-trainable jf.Variables, so update_state
runs eagerly or inside a traced training step; result() reads them and reset_state() zeroes
them), Sum, Mean and MeanMetricWrapper."""
import numpy as np

from ...core import dtypes as _dt
from ...ops import basic_ops as _ops
from ...ops.dispatch import to_tensor as _t
from ...ops.variables import Variable
from .. import losses as _losses

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
