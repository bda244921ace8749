"""jf.keras.models: Model (subclassed or functional), Sequential, and the .keras file's
load_model / save_model."""
from .model import Functional, Model
from .sequential import Sequential

__all__ = ["Functional", "Model", "Sequential"]
