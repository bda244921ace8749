"""Keras 3's Lambda (a Python function as a layer), Identity and Masking. A Lambda's function is
saved as Keras saves it (marshalled bytecode for a lambda, the name for a named function) and,
as in Keras, loading a marshalled lambda needs safe_mode=False."""
import codecs
import contextlib
import inspect
import marshal
import sys
import threading
import types

from ...ops import basic_ops as _ops
from ...ops import stats_ops as _stats
from ..backend_config import unsafe_deserialization_enabled
from .layer import Layer

_unsafe = threading.local()


@contextlib.contextmanager
def unsafe_deserialization(allowed):
    """While open, Lambda.from_config may rebuild marshalled lambdas (load_model(safe_mode=False))."""
    before = getattr(_unsafe, "allowed", False)
    _unsafe.allowed = bool(allowed)
    try:
        yield
    finally:
        _unsafe.allowed = before


def _dump_function(fn):
    if isinstance(fn, types.LambdaType) and fn.__name__ == "<lambda>":
        code = codecs.encode(marshal.dumps(fn.__code__), "base64").decode("ascii")
        closure = tuple(c.cell_contents for c in fn.__closure__) if fn.__closure__ else None
        return {"class_name": "__lambda__", "config": {"code": code, "defaults": fn.__defaults__,
                                                        "closure": closure}}
    return {"class_name": "function", "config": fn.__name__, "module": fn.__module__, "registered_name": None}


def _load_function(config):
    if not isinstance(config, dict):
        return config
    if config.get("class_name") == "__lambda__":
        if not (getattr(_unsafe, "allowed", False) or unsafe_deserialization_enabled()):
            raise ValueError("Requested the deserialization of a `lambda` object. This carries a potential risk of "
                             "arbitrary code execution and thus it is disallowed by default. If you trust the "
                             "source of the saved model, you can pass `safe_mode=False` to the loading function in "
                             "order to allow `lambda` loading.")
        inner = config["config"]
        code = marshal.loads(codecs.decode(inner["code"].encode("ascii"), "base64"))
        closure = inner.get("closure")
        cells = tuple(types.CellType(v) for v in closure) if closure else None
        # The rebuilt lambda sees jitflow under the names a TF program gives it.
        jitflow = sys.modules.get(__name__.split(".")[0])
        scope = {"__builtins__": __builtins__, "tf": jitflow, "jf": jitflow}
        return types.FunctionType(code, scope, None, inner.get("defaults"), cells)
    if config.get("class_name") == "function":
        module = __import__(config.get("module") or "builtins", fromlist=["_"])
        return getattr(module, config["config"])
    raise TypeError(f"Could not deserialize the Lambda's function from {config}")


class Lambda(Layer):
    """function(inputs, **arguments) as a layer; mask and training are passed when the function
    takes them, as in Keras."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"`function` must be callable. Received: {function}")
        self.function = function
        self.arguments = dict(arguments or {})
        self.mask = mask
        self._output_shape = output_shape
        params = inspect.signature(function).parameters
        self._jf_takes = {k for k in ("mask", "training") if k in params}
        self.supports_masking = mask is not None

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if "mask" in self._jf_takes:
            kwargs["mask"] = mask
        if "training" in self._jf_takes:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def get_config(self):
        config = super().get_config()
        config["function"] = _dump_function(self.function)
        if self._output_shape is not None:
            config["output_shape"] = (_dump_function(self._output_shape) if callable(self._output_shape)
                                      else self._output_shape)
        if self.mask is not None:
            config["mask"] = _dump_function(self.mask) if callable(self.mask) else self.mask
        config["arguments"] = self.arguments
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["function"] = _load_function(config["function"])
        for key in ("output_shape", "mask"):
            if isinstance(config.get(key), dict):
                config[key] = _load_function(config[key])
        return cls(**config)


class Identity(Layer):
    """Returns its input unchanged."""

    supports_masking = True

    def call(self, inputs):
        return inputs


class Masking(Layer):
    """Masks the time steps whose features all equal mask_value: they become 0 and the mask
    [batch, steps] marks them False for the layers after."""

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def _keep(self, inputs):
        return _stats.reduce_any(_ops.not_equal(inputs, _ops.convert_to_tensor(self.mask_value, inputs.dtype)),
                               axis=-1)

    def call(self, inputs):
        keep = self._keep(inputs)
        return inputs * _ops.cast(_ops.expand_dims(keep, -1), inputs.dtype)

    def compute_mask(self, inputs, mask=None):
        return self._keep(inputs)

    def get_config(self):
        config = super().get_config()
        config["mask_value"] = self.mask_value
        return config

