"""jf.keras.regularizers: Keras 3's weight penalties (L1, L2, L1L2, OrthogonalRegularizer is not
here), each a callable weight -> scalar loss that a layer adds to `layer.losses`."""
from ..ops import basic_ops as _ops


class Regularizer:
    def __call__(self, x):
        return _ops.constant(0.0)

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1(Regularizer):
    def __init__(self, l1=0.01):
        self.l1 = float(l1)

    def __call__(self, x):
        return _ops.convert_to_tensor(self.l1, x.dtype) * _ops.reduce_sum(_ops.abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    def __init__(self, l2=0.01):
        self.l2 = float(l2)

    def __call__(self, x):
        return _ops.convert_to_tensor(self.l2, x.dtype) * _ops.reduce_sum(_ops.square(x))

    def get_config(self):
        return {"l2": self.l2}


class L1L2(Regularizer):
    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        loss = _ops.zeros([], x.dtype)
        if self.l1:
            loss = loss + _ops.convert_to_tensor(self.l1, x.dtype) * _ops.reduce_sum(_ops.abs(x))
        if self.l2:
            loss = loss + _ops.convert_to_tensor(self.l2, x.dtype) * _ops.reduce_sum(_ops.square(x))
        return loss

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


l1, l2, l1_l2 = L1, L2, L1L2
_BY_NAME = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2}
_custom = {}


def serialize(regularizer):
    if regularizer is None:
        return None
    name = type(regularizer).__name__
    builtin = _BY_NAME.get(name) is type(regularizer)
    return {"module": "keras.regularizers" if builtin else None, "class_name": name,
            "config": regularizer.get_config(), "registered_name": None if builtin else name}


def deserialize(config, custom_objects=None):
    if isinstance(config, str):
        return get(config)
    name = config.get("registered_name") or config["class_name"]
    cls = (custom_objects or {}).get(name) or _custom.get(name) or _BY_NAME.get(config["class_name"])
    if cls is None:
        raise ValueError(f"Could not interpret regularizer identifier: {config}")
    return cls.from_config(dict(config.get("config", {})))


def get(identifier):
    """None, a Regularizer or callable, a name ("l2"), or a serialized dict."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Could not interpret regularizer identifier: {identifier}")
        return _BY_NAME[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier}")


def register(cls, name=None):
    _custom[name or cls.__name__] = cls
    return cls
