"""jf.keras.Input and InputLayer: the entry points of a functional graph. Input(shape) makes an
InputLayer whose one node outputs a KerasTensor of shape (batch_size, *shape)."""
from ...core import dtypes as _dt
from .keras_tensor import KerasTensor, Node
from .layer import Layer


class InputLayer(Layer):
    def __init__(self, shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, input_tensor=None,
                 optional=False, name=None, **kwargs):
        kwargs.pop("ragged", None)
        if "input_shape" in kwargs:
            shape = kwargs.pop("input_shape")
        if "batch_input_shape" in kwargs:
            batch_shape = kwargs.pop("batch_input_shape")
        super().__init__(name=name, dtype=dtype, **kwargs)
        if sparse:
            raise ValueError("jitflow has no sparse tensors: InputLayer(sparse=True) is not supported")
        if input_tensor is not None:
            if not isinstance(input_tensor, KerasTensor):
                raise ValueError(f"Argument `input_tensor` must be a KerasTensor. Received invalid type: "
                                 f"input_tensor={input_tensor} (of type {type(input_tensor)})")
            batch_shape = input_tensor.shape
        if batch_shape is None:
            if shape is None:
                raise ValueError("You must pass a `shape` argument.")
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            batch_shape = (batch_size, *shape)
        self.batch_shape = tuple(None if d is None else int(d) for d in batch_shape)
        self.optional = optional
        if input_tensor is None:
            input_tensor = KerasTensor(self.batch_shape, self._jf_dtype, name=name)
        self._input_tensor = input_tensor
        Node(self, (), {}, input_tensor)
        self.built = True

    def call(self):
        return

    @property
    def output(self):
        return self._input_tensor

    def get_config(self):
        return {"batch_shape": self.batch_shape, "dtype": self.dtype, "sparse": False, "ragged": False,
                "name": self.name, "optional": self.optional}


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None, tensor=None,
          optional=False):
    """A symbolic input of shape (batch_size, *shape) for a functional Model."""
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=_dt.as_dtype(dtype) if dtype else None,
                       sparse=sparse, batch_shape=batch_shape, name=name, input_tensor=tensor, optional=optional)
    return layer.output
