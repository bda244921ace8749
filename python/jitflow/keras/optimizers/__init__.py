"""jf.keras.optimizers: SGD and Adam (the same classes as jf.optimizers), AdamW, RMSprop,
Adagrad, Adamax, Nadam, Adadelta, Ftrl, Lion, the learning-rate schedules, and
get/serialize/deserialize by name."""
from ...state.optimizers import SGD, Adam, Optimizer
from . import schedules
from .more import Adadelta, Adagrad, Adamax, AdamW, Ftrl, Lion, Nadam, RMSprop

_BY_NAME = {c.__name__: c for c in (SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, Nadam, Adadelta, Ftrl, Lion)}
_BY_NAME.update({name.lower(): cls for name, cls in list(_BY_NAME.items())})


def serialize(optimizer):
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Could not interpret optimizer identifier: {config}")
    return cls.from_config(config.get("config", {}), custom_objects)


def get(identifier):
    """An Optimizer as it is, a name ("adam", "SGD") for one with Keras's defaults, or a dict."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")


__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Ftrl", "Lion", "Nadam", "Optimizer", "RMSprop",
           "deserialize", "get", "schedules", "serialize"]
