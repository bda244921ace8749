"""keras.layers.InputSpec and the check Keras makes of a layer's inputs against its
`input_spec` on every call (rank, dtype, fixed axes, shape), with Keras's ValueError messages."""
from ...core import dtypes as _dt
from ...core import nest


class InputSpec:
    """What a layer accepts: dtype, shape, ndim or max_ndim/min_ndim, and axes {axis: size}."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
                 allow_last_axis_squeeze=False, name=None, optional=False):
        self.dtype = None if dtype is None else _dt.as_dtype(dtype).name
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.name, self.optional, self.allow_last_axis_squeeze = name, optional, allow_last_axis_squeeze
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        if self.axes and self.ndim is None and self.min_ndim is None:
            raise ValueError("Axis ... not allowed: ndim or min_ndim required when axes are given")

    def __repr__(self):
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                                           ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                                           ("axes", self.axes or None)) if v is not None]
        return f"InputSpec({', '.join(parts)})"

    def get_config(self):
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim, "max_ndim": self.max_ndim,
                "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def check_inputs(layer, inputs):
    """Keras's assert_input_compatibility: ValueError naming the input and the layer when an
    input breaks its spec."""
    specs = nest.flatten(layer.input_spec)
    values = nest.flatten(inputs)
    if len(values) != len(specs) and not all(s.optional for s in specs[len(values):]):
        raise ValueError(f'Layer "{layer.name}" expects {len(specs)} input(s), but it received {len(values)} input '
                         "tensors.")
    for i, (x, spec) in enumerate(zip(values, specs)):
        if spec is None or not hasattr(x, "shape"):
            continue
        shape = tuple(x.shape)
        ndim = len(shape)
        where = f"Input {i} with name '{spec.name}' of layer '{layer.name}' is incompatible with the layer: "
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and ndim != spec.ndim:
            raise ValueError(f"{where}expected ndim={spec.ndim}, found ndim={ndim}. Full shape received: {shape}")
        if spec.max_ndim is not None and ndim > spec.max_ndim:
            raise ValueError(f"{where}expected max_ndim={spec.max_ndim}, found ndim={ndim}")
        if spec.min_ndim is not None and ndim < spec.min_ndim:
            raise ValueError(f"{where}expected min_ndim={spec.min_ndim}, found ndim={ndim}. Full shape received: "
                             f"{shape}")
        if spec.dtype is not None and x.dtype.name != spec.dtype:
            raise ValueError(f"{where}expected dtype={spec.dtype}, found dtype={x.dtype.name}")
        for axis, size in spec.axes.items():
            if size is not None and -ndim <= axis < ndim and shape[axis] not in (size, None):
                raise ValueError(f"{where}expected axis {axis} of input shape to have value {size}, but received "
                                 f"input with shape {shape}")
        if spec.shape is not None and ndim == len(spec.shape):
            for want, got in zip(spec.shape, shape):
                if want is not None and got is not None and want != got:
                    raise ValueError(f"{where}expected shape={spec.shape}, found shape={shape}")
