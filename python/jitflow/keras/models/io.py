"""Writing and reading a model's weights and its .keras archive. Weights go in jitflow's
checkpoint format (one safetensors file: object paths such as `_layers/1/kernel`, see
docs/checkpoints.md); a .keras file is a zip of config.json (the architecture, Keras 3's
serialized form), metadata.json and model.weights.safetensors. Nothing is pickled and nothing
in the file is executed: classes are looked up by name among the built-in layers and the
registered custom ones."""
import datetime
import json
import os
import tempfile
import zipfile

from ...core import nest
from ...ops.variables import Variable
from ...state.checkpoint import Checkpoint
from ...state.checkpoint_format import SUFFIX
from .. import losses as _losses
from .. import metrics as _metrics
from .. import optimizers as _optimizers
from ..layers.input_layer import InputLayer
from ..layers.layer import Layer

CONFIG_FILE, METADATA_FILE, WEIGHTS_FILE = "config.json", "metadata.json", "model.weights" + SUFFIX
KERAS_VERSION = "3.15.1"  # the Keras whose format and behaviour this follows

# register_keras_serializable's tables (Keras's GLOBAL_CUSTOM_OBJECTS / GLOBAL_CUSTOM_NAMES).
CUSTOM_OBJECTS = {}
CUSTOM_NAMES = {}


def registered_name(cls):
    return CUSTOM_NAMES.get(cls)


def serialize_layer(layer):
    """Keras 3's serialized layer: module, class_name, config, registered_name, build_config."""
    cls = type(layer)
    registered = registered_name(cls)
    builtin = cls.__module__.startswith("jitflow.keras.") and registered is None
    if builtin:
        module = "keras" if getattr(cls, "_jf_is_model", False) else "keras.layers"
    else:
        module = cls.__module__
    out = {"module": module, "class_name": cls.__name__, "config": layer.get_config(),
           "registered_name": registered if registered else (None if builtin else cls.__name__)}
    if layer.built and layer.get_build_config() is not None and not isinstance(layer, InputLayer):
        out["build_config"] = _jsonable(layer.get_build_config())
    return out


def _jsonable(x):
    if isinstance(x, tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    return x


def _holds_weights(value):
    leaves = [value] if isinstance(value, (Layer, Variable)) else (
        nest.flatten(value) if isinstance(value, (list, tuple, dict)) else [])
    return bool(leaves) and any(isinstance(v, (Layer, Variable)) for v in leaves) and \
        all(isinstance(v, (Layer, Variable)) or v is None for v in leaves)


def weights_checkpoint(model, with_optimizer=False):
    """A Checkpoint of the model's layers and variables only: what save_weights writes (the
    optimizer and metrics the trainer holds are not weights, as in Keras). with_optimizer adds
    a compiled model's optimizer (its iterations and slots), as a .keras archive keeps it."""
    ignored = type(model)._jf_untracked
    objects = {k: v for k, v in vars(model).items()
               if k not in ignored and not k.startswith("_jf_") and _holds_weights(v)}
    if with_optimizer and getattr(model, "compiled", False) and model.optimizer is not None:
        objects[".optimizer"] = model.optimizer
    return Checkpoint(**objects)


def _weights_path(filepath):
    filepath = os.fspath(filepath)
    return filepath if filepath.endswith(SUFFIX) else filepath + SUFFIX


def save_weights(model, filepath, overwrite=True):
    path = _weights_path(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} exists and overwrite=False")
    weights_checkpoint(model).write(path)
    return path


def load_weights(model, filepath, with_optimizer=False):
    path = _weights_path(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No weights file found at {path!r} (written by save_weights)")
    return weights_checkpoint(model, with_optimizer).read(path)


def _serialize_spec(spec, module):
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, dict):  # per output
        return {k: _serialize_spec(v, module) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return [_serialize_spec(v, module) for v in spec]
    if hasattr(spec, "get_config"):
        return module.serialize(spec)
    name = getattr(spec, "__name__", None)
    if name is None:
        raise ValueError(f"Cannot serialize {spec!r} in the model's compile config")
    return name


def compile_config(model):
    """Keras 3's compile_config of a compiled model (optimizer, loss, metrics, jit_compile), or
    None. The Trainer's own get_compile_config is used when it has one."""
    if not getattr(model, "compiled", False):
        return None
    if callable(getattr(model, "get_compile_config", None)):
        return model.get_compile_config()
    state = model._jf_state()
    jit = model.jit_compile
    weights = state.compiled_loss.loss_weights if state.compiled_loss is not None else None
    return {"optimizer": _optimizers.serialize(model.optimizer), "loss": _serialize_spec(model.loss, _losses),
            "metrics": _serialize_spec(state.metric_specs, _metrics) or None, "loss_weights": weights,
            "weighted_metrics": None, "run_eagerly": bool(model.run_eagerly), "steps_per_execution": 1,
            "jit_compile": jit if isinstance(jit, bool) else "auto"}


def compile_from_config(model, config, custom_objects=None):
    """compile() with a compile_config's values (fresh optimizer state, restored afterwards from
    the archive's weights)."""
    if callable(getattr(model, "compile_from_config", None)):
        return model.compile_from_config(config)
    def spec(value, module):  # a name, a serialized object, or a list/dict of them per output
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, list):
            return [spec(v, module) for v in value]
        if isinstance(value, dict) and "class_name" not in value:
            return {k: spec(v, module) for k, v in value.items()}
        return module.deserialize(value, custom_objects)
    return model.compile(optimizer=_optimizers.deserialize(config["optimizer"], custom_objects),
                         loss=spec(config.get("loss"), _losses), loss_weights=config.get("loss_weights"),
                         metrics=spec(config.get("metrics"), _metrics) or None,
                         run_eagerly=config.get("run_eagerly", False),
                         jit_compile=config.get("jit_compile", "auto"))


def model_config(model):
    out = serialize_layer(model)
    cfg = compile_config(model)
    if cfg is not None:
        out["compile_config"] = cfg
    return _jsonable(out)


def save_model(model, filepath, overwrite=True):
    filepath = os.fspath(filepath)
    if not filepath.endswith(".keras"):
        raise ValueError(f"Invalid filepath extension for saving. Please add the `.keras` extension, e.g. "
                         f"`model.save('{filepath}.keras')`. Received: filepath={filepath}")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists and overwrite=False")
    config = json.dumps(model_config(model))
    metadata = json.dumps({"keras_version": KERAS_VERSION, "saved_by": "jitflow",
                           "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")})
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, WEIGHTS_FILE)
        weights_checkpoint(model, with_optimizer=True).write(weights)
        tmp_zip = filepath + ".tmp"
        with zipfile.ZipFile(tmp_zip, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(METADATA_FILE, metadata)
            z.writestr(CONFIG_FILE, config)
            z.write(weights, WEIGHTS_FILE)
        os.replace(tmp_zip, filepath)


def read_archive(filepath):
    """(config dict, path of the weights file extracted into a temporary directory, the
    TemporaryDirectory to clean up)."""
    filepath = os.fspath(filepath)
    if not zipfile.is_zipfile(filepath):
        raise ValueError(f"File format not supported: filepath={filepath}. jitflow loads .keras archives (a zip of "
                         "config.json and model.weights.safetensors).")
    tmp = tempfile.TemporaryDirectory()
    with zipfile.ZipFile(filepath) as z:
        names = set(z.namelist())
        if CONFIG_FILE not in names:
            raise ValueError(f"{filepath} has no {CONFIG_FILE}: not a .keras archive")
        config = json.loads(z.read(CONFIG_FILE))
        weights = None
        if WEIGHTS_FILE in names:
            weights = os.path.join(tmp.name, WEIGHTS_FILE)
            with open(weights, "wb") as f:
                f.write(z.read(WEIGHTS_FILE))
        elif "model.weights.h5" in names:
            raise ValueError(f"{filepath} holds Keras's HDF5 weights (model.weights.h5), which jitflow does not read; "
                             "save the model with jitflow")
    return config, weights, tmp
