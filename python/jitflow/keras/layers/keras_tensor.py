"""Symbolic tensors of the functional API: `jf.keras.Input` returns a KerasTensor (a shape and
dtype, no value), calling a layer on KerasTensors records a Node (the layer, its call arguments,
its output KerasTensors), and a functional Model replays those nodes on real tensors."""
import itertools

from ...core import dtypes as _dt
from ...core import nest

_counter = itertools.count()


class KerasTensor:
    """A placeholder for a tensor a functional model will compute: shape (None for dims known
    only when it runs), dtype, and where it comes from (layer, node index, tensor index)."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = _dt.as_dtype(dtype)
        if name is None:
            n = next(_counter)
            name = "keras_tensor" if n == 0 else f"keras_tensor_{n}"
        self.name = name
        self._keras_history = None  # (layer, node_index, tensor_index), set by the node making it

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return (f"<KerasTensor shape={self.shape}, dtype={self.dtype.name}, sparse=False, ragged=False, "
                f"name={self.name}>")

    def __bool__(self):
        raise TypeError("A KerasTensor is symbolic: it has no value to test. Use it as the input of a layer "
                        "or a functional Model.")

    def __array__(self, *args, **kwargs):
        raise TypeError(f"A KerasTensor ({self.name}) cannot be converted to a numpy array: it is a symbolic "
                        "placeholder of the functional API. Call the model on real data instead.")


def is_keras_tensor(x):
    return isinstance(x, KerasTensor)


def any_keras_tensor(*structures):
    return any(isinstance(t, KerasTensor) for s in structures for t in nest.flatten(s))


class Node:
    """One call of a layer in a functional graph: the call's arguments (with KerasTensors in
    them) and its outputs. Appends itself to the layer's inbound nodes and stamps the outputs'
    history."""

    def __init__(self, layer, call_args, call_kwargs, outputs):
        self.layer = layer
        self.call_args = call_args
        self.call_kwargs = call_kwargs
        self.outputs = outputs  # the structure the call returned, of KerasTensors
        self.input_tensors = [t for t in nest.flatten((call_args, call_kwargs)) if isinstance(t, KerasTensor)]
        self.output_tensors = nest.flatten(outputs)
        index = len(layer._jf_inbound_nodes)
        layer._jf_inbound_nodes.append(self)
        for i, t in enumerate(self.output_tensors):
            t._keras_history = (layer, index, i)

    @property
    def parent_nodes(self):
        out = []
        for t in self.input_tensors:
            layer, index, _ = t._keras_history
            node = layer._jf_inbound_nodes[index]
            if node not in out:
                out.append(node)
        return out

    @property
    def is_input(self):
        return not self.input_tensors
