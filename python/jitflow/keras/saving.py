"""jf.keras.saving: load_model / save_model for .keras archives, and Keras 3's registry of custom
classes (register_keras_serializable, custom_objects, custom_object_scope). A class is found
by name only — among jf.keras's own layers and models, the registered classes and the
custom_objects given — and built with its from_config; an archive naming any other class is
refused with Keras's TypeError, so loading never imports or runs code named by the file."""
import json
import threading

from . import layers as _layers
from .layers.functional_layers import unsafe_deserialization
from .layers.input_layer import InputLayer
from .layers.keras_tensor import KerasTensor
from .models import io as _io
from .models import model as _model_module
from .models.model import Functional, Model
from .models.sequential import Sequential

_BUILTINS = {name: getattr(_layers, name) for name in _layers.__all__}
_BUILTINS.update({"Model": Model, "Functional": Functional, "Sequential": Sequential})


class _Scope(threading.local):
    def __init__(self):
        self.stack = []


_scopes = _Scope()


def register_keras_serializable(package="Custom", name=None):
    """Decorator: registers the class as "package>name" so load_model finds it by that name."""
    def decorator(cls):
        key = f"{package}>{name if name is not None else cls.__name__}"
        if isinstance(cls, type) and not hasattr(cls, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() method.")
        _io.CUSTOM_OBJECTS[key] = cls
        _io.CUSTOM_NAMES[cls] = key
        return cls
    return decorator


def get_registered_name(obj):
    return _io.CUSTOM_NAMES.get(obj, getattr(obj, "__name__", None))


def get_registered_object(name, custom_objects=None, module_objects=None):
    for table in (*reversed(_scopes.stack), custom_objects or {}, _io.CUSTOM_OBJECTS, module_objects or {}):
        if name in table:
            return table[name]
    return None


def get_custom_objects():
    return _io.CUSTOM_OBJECTS


class custom_object_scope:
    """with custom_object_scope({"MyLayer": MyLayer}): load_model finds MyLayer by name."""

    def __init__(self, custom_objects):
        self.custom_objects = dict(custom_objects or {})

    def __enter__(self):
        _scopes.stack.append(self.custom_objects)
        return self

    def __exit__(self, *exc):
        _scopes.stack.pop()


CustomObjectScope = custom_object_scope


def serialize_keras_object(obj):
    return _io.serialize_layer(obj)


def _locate(config, custom_objects):
    class_name = config.get("class_name")
    registered = config.get("registered_name")
    for key in (registered, class_name):
        if key:
            cls = get_registered_object(key, custom_objects)
            if cls is not None:
                return cls
    module = config.get("module") or ""
    if (module == "keras" or module.startswith("keras.")) and class_name in _BUILTINS:
        return _BUILTINS[class_name]
    raise TypeError(f"Could not locate class '{class_name}'. Make sure custom classes and functions are decorated "
                    "with `@keras.saving.register_keras_serializable()`. If they are already decorated, make sure "
                    "they are all imported so that the decorator is run before trying to load them. Full object "
                    f"config: {config}")


def deserialize_keras_object(config, custom_objects=None):
    """A layer or model from its serialized form (module, class_name, config, build_config)."""
    cls = _locate(config, custom_objects)
    inner = dict(config.get("config") or {})
    if cls is Functional or (cls is Model and "layers" in inner and "input_layers" in inner):
        obj = _functional_from_config(inner, custom_objects)
    elif cls is Sequential:
        obj = _sequential_from_config(inner, custom_objects)
    else:
        if "dtype" in inner and isinstance(inner["dtype"], dict):  # Keras's DTypePolicy form
            inner["dtype"] = inner["dtype"].get("config", {}).get("name")
        obj = cls.from_config(inner)
        if config.get("build_config") and not obj.built:
            obj.build_from_config(config["build_config"])
    return obj


def _sequential_from_config(config, custom_objects):
    layers = [deserialize_keras_object(c, custom_objects) for c in config.get("layers", [])]
    model = Sequential(name=config.get("name"), trainable=config.get("trainable", True))
    for layer in layers:
        model.add(layer, rebuild=False)
    model._jf_symbolic_build()
    if not model.built and config.get("build_input_shape") is not None:
        model.build(tuple(config["build_input_shape"]))
    return model


def _functional_from_config(config, custom_objects):
    """Rebuilds the graph: each layer from its config, then its recorded calls replayed on the
    rebuilt KerasTensors, a call waiting until the tensors it takes exist."""
    created, pending = {}, []
    for layer_config in config["layers"]:
        base = {k: v for k, v in layer_config.items() if k not in ("inbound_nodes", "name", "build_config")}
        layer = deserialize_keras_object(base, custom_objects)
        created[layer_config["name"]] = layer
        for node in layer_config.get("inbound_nodes", []):
            pending.append((layer_config["name"], layer, node))
    outputs = {}  # (layer name, node index, tensor index) -> KerasTensor
    for name, layer in created.items():
        if isinstance(layer, InputLayer):
            outputs[(name, 0, 0)] = layer.output

    def resolve(x):
        if isinstance(x, dict) and x.get("class_name") == "__keras_tensor__":
            return outputs[tuple(x["config"]["keras_history"])]
        if isinstance(x, dict):
            return {k: resolve(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):  # tuples where a config was not JSON round-tripped
            return [resolve(v) for v in x]
        return x

    def ready(x):
        if isinstance(x, dict) and x.get("class_name") == "__keras_tensor__":
            return tuple(x["config"]["keras_history"]) in outputs
        if isinstance(x, dict):
            return all(ready(v) for v in x.values())
        if isinstance(x, (list, tuple)):
            return all(ready(v) for v in x)
        return True

    while pending:
        progressed = False
        for item in list(pending):
            name, layer, node = item  # the config's name: a rebuilt layer may have been named anew
            if not (ready(node["args"]) and ready(node["kwargs"])):
                continue
            out = layer(*resolve(node["args"]), **resolve(node["kwargs"]))
            index = len(layer._jf_inbound_nodes) - 1
            flat = out if isinstance(out, (list, tuple)) else [out]
            for i, t in enumerate(flat):
                if isinstance(t, KerasTensor):
                    outputs[(name, index, i)] = t
            pending.remove(item)
            progressed = True
        if not progressed:
            raise ValueError("The functional model's config has layer calls whose inputs are never produced")

    def pick(ref):
        if isinstance(ref, (list, tuple)) and len(ref) == 3 and isinstance(ref[0], str) and isinstance(ref[1], int):
            return outputs[tuple(ref)]
        if isinstance(ref, dict):  # inputs or outputs by name
            return {k: pick(v) for k, v in ref.items()}
        return [pick(r) for r in ref]
    inputs, outs = pick(config["input_layers"]), pick(config["output_layers"])
    return Functional(inputs, outs, name=config.get("name"), trainable=config.get("trainable", True))


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    _io.save_model(model, filepath, overwrite)


def model_from_json(json_string, custom_objects=None):
    """A model (not built weights: fresh ones) from Model.to_json's text."""
    return deserialize_keras_object(json.loads(json_string), custom_objects)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """The model of a .keras archive written by model.save: rebuilt from its config (classes by
    name only), then its weights restored."""
    config, weights, tmp = _io.read_archive(filepath)
    try:
        with unsafe_deserialization(not safe_mode):
            model = deserialize_keras_object(config, custom_objects)
        compile_config = config.get("compile_config")
        compiled = bool(compile and compile_config is not None)
        if compiled:
            _io.compile_from_config(model, compile_config, custom_objects)
        if weights is not None:
            # A compiled model also takes its optimizer's state (iterations, and slots when
            # the optimizer makes them), so training resumes where it stopped.
            _io.load_weights(model, weights, with_optimizer=compiled)
    finally:
        tmp.cleanup()
    return model


_model_module.FUNCTIONAL_FROM_CONFIG[:] = [_functional_from_config]
