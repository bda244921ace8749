"""jf.keras: Keras 3's API (as shipped with TF 2.21) on jitflow: layers, models, saving,
initializers, activations, regularizers, optimizers, losses, metrics and training. Everything
runs on jitflow's ops, so a model called inside a jf.function is traced and compiled like any
other jitflow code (docs/keras.md)."""
import types as _types

from ..tracing import ctc as _ctc
from . import (
    activations,
    backend_config,
    callbacks,
    constraints,
    datasets,
    initializers,
    layers,
    losses,
    metrics,
    models,
    ops,
    optimizers,
    preprocessing,
    regularizers,
    saving,
    utils,
)
from .layers import Input, InputLayer, Layer
from .layers.layer import clear_session
from .models import Model, Sequential
from .saving import load_model

models.load_model = load_model
models.save_model = saving.save_model
models.model_from_json = saving.model_from_json

_settings = {n: getattr(backend_config, n) for n in ("floatx", "set_floatx", "epsilon", "set_epsilon",
                                                      "image_data_format", "set_image_data_format")}
# keras.backend keeps Keras 2's names TF programs still call (clear_session forgets the layer
# names given so far: dense, dense_1, ...); keras.config has Keras 3's.
backend = _types.SimpleNamespace(clear_session=clear_session, backend=backend_config.backend,
                                 ctc_batch_cost=_ctc.ctc_batch_cost, **_settings)
config = _types.SimpleNamespace(backend=backend_config.backend,
                                enable_unsafe_deserialization=backend_config.enable_unsafe_deserialization,
                                **_settings)

__all__ = ["Input", "InputLayer", "Layer", "Model", "Sequential", "activations", "backend", "callbacks", "config", "constraints", "datasets",
           "initializers", "layers", "load_model", "losses", "metrics", "models", "ops", "optimizers", "preprocessing", "regularizers", "saving",
           "utils"]
