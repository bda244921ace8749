"""jf.keras.Model: a Layer with training (compile/fit/evaluate/predict come from the Trainer),
summary and saving. Model(inputs, outputs) makes a Functional model, which replays the graph
of layer calls recorded on KerasTensors; subclasses define call()."""
import json

from ...core import nest
from ...core.tensor_spec import TensorSpec
from ...state import saved_model as _saved_model
from ...state.module import Module
from ...tracing.function import function as _jf_function
from ..layers.keras_tensor import KerasTensor
from ..layers.layer import Layer, unique_name
from ..trainer import Trainer
from . import io as _io
from . import summary as _summary
from .io import serialize_layer


def _is_functional_init(args, kwargs):
    if "inputs" in kwargs and "outputs" in kwargs:
        return True
    return len(args) == 2 or (len(args) == 1 and "outputs" in kwargs)


# keras/saving.py (which imports this module) puts its functional-graph rebuild here.
FUNCTIONAL_FROM_CONFIG = []


class Model(Trainer, Layer):
    """Keras 3's Model. Subclass it (layers as attributes, computation in call) or call it as
    Model(inputs, outputs) on KerasTensors from jf.keras.Input."""

    _jf_is_model = True

    def __new__(cls, *args, **kwargs):
        if _is_functional_init(args, kwargs):
            if cls is Model:
                return Functional.__new__(Functional, *args, **kwargs)
            if not issubclass(cls, Functional):  # a subclass (its own train_step) built from inputs/outputs
                return Functional.__new__(_functional_subclass(cls), *args, **kwargs)
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        trainable = kwargs.pop("trainable", True)
        name = kwargs.pop("name", None)
        dtype = kwargs.pop("dtype", None)
        if name is None:
            base = "functional" if type(self) in (Model, Functional) else None
            name = unique_name(base) if base else None
        Layer.__init__(self, trainable=trainable, name=name, dtype=dtype, **kwargs)
        Trainer.__init__(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A functional model's config (layers, input_layers, output_layers) rebuilds its graph;
        any other config goes to the constructor, as Layer.from_config does."""
        if "layers" in config and "input_layers" in config and FUNCTIONAL_FROM_CONFIG:
            return FUNCTIONAL_FROM_CONFIG[0](config, custom_objects)
        return super().from_config(config)

    @property
    def layers(self):
        return self._flatten_layers(include_self=False, recursive=False)

    def get_layer(self, name=None, index=None):
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: index={index}, name={name}.")
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only has "
                                 f"{len(self.layers)} layers.")
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: {[layer.name for layer in self.layers]}.")

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                layer_range=None):
        text = _summary.render(self, self._jf_summary_layers(), line_length, positions, show_trainable,
                               self._jf_summary_nodes())
        (print_fn or print)(text)

    def _jf_summary_layers(self):
        return self.layers

    def _jf_summary_nodes(self):
        return None

    # ---- saving ----------------------------------------------------------------------------------
    def save_weights(self, filepath, overwrite=True):
        """Writes the weights in jitflow's checkpoint format (<filepath>.safetensors unless it
        already ends so); returns the file's path."""
        return _io.save_weights(self, filepath, overwrite)

    def load_weights(self, filepath, skip_mismatch=False, **kwargs):
        """Restores save_weights' file; layers not built yet take their values when they are."""
        return _io.load_weights(self, filepath)

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """Writes a .keras archive: the architecture as JSON and the weights."""
        _io.save_model(self, filepath, overwrite)

    def export(self, filepath, format="tf_saved_model", verbose=True, input_signature=None, **kwargs):
        """Writes a SavedModel (jf.saved_model) whose `serve` function and "serving_default"
        signature run the model in inference mode on inputs of the model's input specs (batch
        dim free), or of `input_signature`; jf.saved_model.load(filepath).serve(x) runs it."""
        if format != "tf_saved_model":
            raise NotImplementedError(f"jitflow's Model.export writes format='tf_saved_model' only, got {format!r}")
        specs = input_signature if input_signature is not None else self._jf_export_specs()
        single = len(specs) == 1

        def serve(*args):
            return self(args[0] if single else list(args), training=False)

        endpoint = _jf_function(serve, input_signature=list(specs))
        holder = Module()
        holder.model, holder.serve = self, endpoint
        _saved_model.save(holder, filepath, signatures={"serving_default": endpoint})
        if verbose:
            print(f"Saved artifact at '{filepath}'. The endpoint 'serve' takes "
                  f"{', '.join(str(s) for s in specs)}.")

    def _jf_export_specs(self):
        inputs = getattr(self, "inputs", None)
        if not inputs:
            build = getattr(self, "_jf_input_batch_shape", None)
            shape, dtype = build() if build is not None else (None, None)
            if shape is None:
                raise ValueError("The model has no known inputs: pass input_signature=[jf.TensorSpec(...)] to export")
            return [TensorSpec((None, *tuple(shape)[1:]), dtype)]
        return [TensorSpec((None, *tuple(t.shape)[1:]), t.dtype) for t in inputs]

    def to_json(self, **kwargs):
        """The architecture as Keras 3's JSON (jf.keras.models.model_from_json reads it back)."""
        config = _io.model_config(self)
        config.pop("compile_config", None)
        return json.dumps(config, **kwargs)

    def build_from_config(self, config):
        if not config or self.built:
            return
        shape = config.get("input_shape")
        if shape is not None and type(self).build is Model.build:
            # A subclassed model has no build of its own: run call on a symbolic input, which
            # builds every layer it uses (Keras does the same).
            self(KerasTensor(tuple(shape), self._jf_dtype))
            self._jf_build_config = config
            self.built = True
            return
        Layer.build_from_config(self, config)


class Functional(Model):
    """A model made of layer calls on KerasTensors, run in the order they were recorded."""

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        Model.__init__(self, name=name, trainable=trainable, **kwargs)
        self._jf_inputs = inputs
        self._jf_outputs = outputs
        flat_in, flat_out = nest.flatten(inputs), nest.flatten(outputs)
        for t in flat_in + flat_out:
            if not isinstance(t, KerasTensor):
                raise ValueError(  # noqa: TRY004  (Keras raises ValueError)
                    f"All `inputs` and `outputs` values must be KerasTensors. Received: inputs={inputs} "
                                 f"including invalid value {t} of type {type(t)}")
        self._jf_nodes = _topological_nodes(flat_out)
        missing = [n.layer.name for n in self._jf_nodes
                   if n.is_input and n.output_tensors[0] not in flat_in]
        if missing:
            raise ValueError(f"Graph disconnected: the outputs depend on the inputs of {missing}, which are not among "
                             "the model's inputs")
        layers = []
        for node in self._jf_nodes:
            if node.layer not in layers:
                layers.append(node.layer)
        self._layers = layers  # tracked (weights, checkpoints) in the graph's order
        self.built = True

    @property
    def layers(self):
        return list(self._layers)

    @property
    def inputs(self):
        return nest.flatten(self._jf_inputs)

    @property
    def outputs(self):
        return nest.flatten(self._jf_outputs)

    @property
    def input_shape(self):
        shapes = [t.shape for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [t.shape for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def build(self, input_shape=None):
        self.built = True

    def call(self, inputs, training=None, mask=None):
        flat_in = nest.flatten(self._jf_inputs)
        given = nest.flatten(inputs) if not isinstance(inputs, dict) or isinstance(self._jf_inputs, dict) else \
            [inputs[t._keras_history[0].name] for t in flat_in]
        if len(given) != len(flat_in):
            raise ValueError(f"Model {self.name!r} expects {len(flat_in)} input(s), but it received {len(given)} "
                             "input tensors.")
        values = {id(t): self._jf_convert_input(v, t) for t, v in zip(flat_in, given)}
        for node in self._jf_nodes:
            if node.is_input:
                continue
            args, kwargs = nest.map_structure(
                lambda x: values[id(x)] if isinstance(x, KerasTensor) else x, (node.call_args, node.call_kwargs))
            out = node.layer(*args, **kwargs)
            for t, v in zip(node.output_tensors, nest.flatten(out)):
                values[id(t)] = v
        return nest.pack_sequence_as(self._jf_outputs, [values[id(t)] for t in nest.flatten(self._jf_outputs)])

    def _jf_convert_input(self, value, kt):
        conv = self._jf_convert(value)
        return conv

    def _jf_summary_nodes(self):
        # A chain of single-input layers prints as a sequence, as Keras does.
        if all(len(n.input_tensors) <= 1 for n in self._jf_nodes) and \
                all(len(layer._jf_inbound_nodes) <= 1 for layer in self._layers) and len(self.inputs) == 1:
            return None
        return list(self._jf_nodes)

    def get_config(self):
        layer_configs = []
        for layer in self._layers:
            cfg = serialize_layer(layer)
            cfg["name"] = layer.name
            nodes = []
            for node in layer._jf_inbound_nodes:
                if node not in self._jf_nodes or node.is_input:
                    continue
                nodes.append({"args": _refs(node.call_args), "kwargs": _refs(node.call_kwargs)})
            cfg["inbound_nodes"] = nodes
            layer_configs.append(cfg)

        def ref(t):
            layer, node_index, tensor_index = t._keras_history
            return [layer.name, node_index, tensor_index]
        ins = nest.map_structure(ref, self._jf_inputs)
        outs = nest.map_structure(ref, self._jf_outputs)
        return {"name": self.name, "trainable": self.trainable, "layers": layer_configs,
                "input_layers": ins, "output_layers": outs}


def _refs(structure):
    def one(x):
        if isinstance(x, KerasTensor):
            layer, node_index, tensor_index = x._keras_history
            return {"class_name": "__keras_tensor__",
                    "config": {"shape": list(x.shape), "dtype": x.dtype.name,
                               "keras_history": [layer.name, node_index, tensor_index]}}
        return x
    return nest.map_structure(one, structure)


def _topological_nodes(flat_outputs):
    """The nodes the outputs depend on, each after its inputs' nodes, in first-visit order."""
    order, done = [], set()

    def visit(node, stack):
        if id(node) in done:
            return
        if id(node) in stack:
            raise ValueError("The functional graph has a cycle")
        stack.add(id(node))
        for parent in node.parent_nodes:
            visit(parent, stack)
        stack.discard(id(node))
        done.add(id(node))
        order.append(node)

    for t in flat_outputs:
        if t._keras_history is None:
            raise ValueError(f"Output {t} was not produced by a layer call on jf.keras.Input tensors")
        layer, index, _ = t._keras_history
        visit(layer._jf_inbound_nodes[index], set())
    return order


_FUNCTIONAL_SUBCLASSES = {}


def _functional_subclass(cls):
    """cls with Functional behind it, as Keras 3 makes a Model subclass called with (inputs,
    outputs): the subclass's methods (train_step, ...) over the functional graph."""
    sub = _FUNCTIONAL_SUBCLASSES.get(cls)
    if sub is None:
        sub = _FUNCTIONAL_SUBCLASSES[cls] = type(cls.__name__, (cls, Functional),
                                                 {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return sub
