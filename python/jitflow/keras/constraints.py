"""keras.constraints: projections the optimizer applies to a weight after each update (MaxNorm,
MinMaxNorm, NonNeg, UnitNorm; norms over `axis`, Keras's epsilon in the denominators), with
get/serialize/deserialize by name."""
from ..ops import basic_ops as _ops
from .backend_config import epsilon


def _norms(w, axis):
    return _ops.sqrt(_ops.reduce_sum(_ops.square(w), axis=axis, keepdims=True))


class Constraint:
    """The identity; subclasses project w."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class MaxNorm(Constraint):
    """Rescales each slice along axis whose L2 norm exceeds max_value down to it."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        w = _ops.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = _ops.minimum(norms, _ops.convert_to_tensor(float(self.max_value), w.dtype))
        return w * (desired / (epsilon() + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """max(w, 0)."""

    def __call__(self, w):
        w = _ops.convert_to_tensor(w)
        return _ops.maximum(w, _ops.zeros([], w.dtype))


class UnitNorm(Constraint):
    """Each slice along axis scaled to unit L2 norm."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = _ops.convert_to_tensor(w)
        return w / (epsilon() + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Each slice's norm moved a fraction `rate` of the way into [min_value, max_value]."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        w = _ops.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        lo = _ops.convert_to_tensor(float(self.min_value), w.dtype)
        hi = _ops.convert_to_tensor(float(self.max_value), w.dtype)
        desired = self.rate * _ops.minimum(_ops.maximum(norms, lo), hi) + (1 - self.rate) * norms
        return w * (desired / (epsilon() + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
_BY_NAME = {"MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm,
            "Constraint": Constraint, "max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
            "min_max_norm": MinMaxNorm}


def serialize(constraint):
    if constraint is None:
        return None
    return {"module": "keras.constraints", "class_name": type(constraint).__name__,
            "config": constraint.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Could not interpret constraint identifier: {config}")
    return cls.from_config(config.get("config") or {})


def get(identifier):
    """None, a constraint (or any callable) as it is, a name or a serialized dict."""
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]()
    raise ValueError(f"Could not interpret constraint identifier: {identifier}")


__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "deserialize", "get", "max_norm",
           "min_max_norm", "non_neg", "serialize", "unit_norm"]
