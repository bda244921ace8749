"""jf.keras: Keras 3's API (as shipped with TF 2.21) on jitflow: layers, models, saving,
initializers, activations, regularizers, optimizers, losses, metrics and training. Everything
runs on jitflow's ops, so a model called inside a jf.function is traced and compiled like any
other jitflow code (docs/keras.md)."""
import types as _types

from . import activations, initializers, layers, losses, metrics, models, optimizers, regularizers, saving
from .layers import Input, InputLayer, Layer
from .layers.layer import clear_session
from .models import Model, Sequential
from .saving import load_model

models.load_model = load_model
models.save_model = saving.save_model
models.model_from_json = saving.model_from_json

# keras.backend.clear_session: forgets the layer names given so far (dense, dense_1, ...).
backend = _types.SimpleNamespace(clear_session=clear_session)

__all__ = ["Input", "InputLayer", "Layer", "Model", "Sequential", "activations", "backend", "initializers", "layers",
           "load_model", "losses", "metrics", "models", "optimizers", "regularizers", "saving"]
