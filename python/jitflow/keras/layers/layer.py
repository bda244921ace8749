"""jf.keras.layers.Layer: Keras 3's layer base on jf.Module. A layer builds its weights on its
first call from the input's shape, names itself uniquely per class (dense, dense_1, ...),
names its variables by the scope it was built in (sequential/dense/kernel:0), passes the
`training` flag down to the layers it calls, collects regularization losses, and serializes
itself through get_config/from_config."""
import functools
import inspect
import math
import re
import threading
import weakref

import numpy as np

from ...core import dtypes as _dt
from ...core import nest
from ...core.errors import warn as _warn
from ...core.name_scope import current_module_scope, name_scope
from ...core.tensor import Tensor
from ...core.tensor_spec import TensorSpec
from ...ops import basic_ops as _ops
from ...ops.variables import Variable
from ...state.module import Module
from ...tracing.function import function as _jf_function
from .. import constraints, initializers, regularizers
from ..backend_config import floatx
from .input_spec import check_inputs
from .keras_tensor import KerasTensor, Node, any_keras_tensor

# Keras's global name counters ("dense", "dense_1", ...); clear_session() resets them.
_uids = {}


def snake_case(name):
    """Keras's snake case of a class name: Conv2D -> conv2d, LSTMCell -> lstm_cell (jf.Module's
    TF rule would give conv2_d)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def unique_name(base):
    n = _uids.get(base, 0)
    _uids[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def clear_session():
    """Forgets the layer names given so far (Keras's keras.backend.clear_session for names)."""
    _uids.clear()


class _CallContext(threading.local):
    def __init__(self):
        self.stack = []  # per outer layer call: the training value it resolved (or None)


_context = _CallContext()
# The layers holding add_loss values (id -> layer), so a call clears losses only when some exist.
_with_losses = weakref.WeakValueDictionary()


class KerasVariable(Variable):
    """A jf.Variable made by Layer.add_weight. `name` is jitflow's (TF's) full name
    ("sequential/dense/kernel:0"); `path` is Keras 3's ("sequential/dense/kernel"), and the
    regularizer and constraint given to add_weight travel with it."""

    def __init__(self, initial_value, trainable, name, scope, regularizer=None, constraint=None, dtype=None):
        with name_scope(scope + "/" if scope else "/"):
            super().__init__(initial_value, trainable=trainable, name=name, dtype=dtype)
        self.path = f"{scope}/{name}" if scope else name
        self.regularizer = regularizer
        self.constraint = constraint


def _has_keras_tensor(args, kwargs):
    """Whether a call is symbolic: a KerasTensor among the arguments, in a list or dict of them,
    or deeper (checked with nest only when some argument is a container)."""
    for a in (*args, *kwargs.values()):
        if type(a) is KerasTensor:
            return True
        if isinstance(a, (list, tuple, dict)) and any_keras_tensor(a):
            return True
    return False


def _shape_tuple(x):
    if isinstance(x, (KerasTensor, Tensor, Variable, np.ndarray)) or hasattr(x, "shape"):
        return tuple(None if d is None else int(d) for d in x.shape)
    return None


def shapes_of(structure):
    """The shapes of a (nested) call argument, as Keras passes them to build: a tuple per tensor,
    lists for lists."""
    if isinstance(structure, (list, tuple)) and not hasattr(structure, "shape"):
        return [shapes_of(s) for s in structure]
    if isinstance(structure, dict):
        return {k: shapes_of(v) for k, v in structure.items()}
    return _shape_tuple(structure)


@functools.cache
def _training_arg(call):
    """(whether call takes `training`, its default): looked up once per call method, since
    inspecting a signature costs more than a small layer's eager call."""
    try:
        params = inspect.signature(call).parameters
    except (TypeError, ValueError):
        return False, None
    p = params.get("training")
    if p is None:
        return any(q.kind is q.VAR_KEYWORD for q in params.values()), None
    return True, None if p.default is inspect.Parameter.empty else p.default


@functools.cache
def _takes_mask(call):
    try:
        return "mask" in inspect.signature(call).parameters
    except (TypeError, ValueError):
        return False


# Keras masks ride on tensors (Keras sets tensor._keras_mask); jitflow's tensors take no
# attributes, so the masks live here, keyed by the tensor's id while the tensor is alive.
_masks = {}


def get_mask(t):
    """The Keras mask attached to a tensor by the layer that made it, or None."""
    entry = _masks.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else None


def set_mask(t, mask):
    if mask is None or not isinstance(t, Tensor):
        return
    key = id(t)
    _masks[key] = (weakref.ref(t, lambda _, key=key: _masks.pop(key, None)), mask)


def _input_mask(x):
    if isinstance(x, (list, tuple)):
        masks = [get_mask(t) for t in x]
        return masks if any(m is not None for m in masks) else None
    return get_mask(x)


def _json_safe(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_json_safe(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_safe(v) for k, v in value.items())
    return False


class Layer(Module):
    """Keras 3's Layer. Subclasses create weights in build(input_shape) with add_weight and
    compute in call(inputs, ...); __call__ converts inputs, builds once, and runs call under the
    layer's name scope."""

    # Bookkeeping that jf.Module's walk and checkpoints skip: a Module holding layers lists their
    # variables in TF's sorted-attribute order (bias before kernel), as it did for jf.nn layers.
    _jf_untracked = Module._jf_untracked | frozenset(
        "_jf_" + n for n in ("autocast", "axes", "axis", "batch_input_shape", "build_config", "dtype",
                             "inbound_nodes", "init_args", "initial_weights", "input_layer", "inputs", "losses", "mask_warned",
                             "nodes", "output_shape", "outputs", "path", "scopes", "seed_state", "trainable", "weights"))
    input_spec = None  # Keras's: when a layer sets one, every call checks its inputs (input_spec.py)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # As Keras wraps build: a layer built by hand (layer.build(shape)) is built, whether or
        # not its build sets `built`, so its first call does not make the weights again.
        if "build" in cls.__dict__:
            original = cls.__dict__["build"]

            @functools.wraps(original)
            def build(self, *args, **kwargs):
                out = original(self, *args, **kwargs)
                self.built = True
                return out
            cls.build = build

    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        # Keras 3's auto-config: the constructor arguments, used by get_config when a subclass
        # does not define one and every argument is a plain (JSON) value.
        object.__setattr__(self, "_jf_init_args", (args, dict(kwargs)))
        return self

    def __init__(self, *, activity_regularizer=None, trainable=True, dtype=None, autocast=True, name=None,
                 **kwargs):
        batch_shape = kwargs.pop("batch_input_shape", None)
        input_shape = kwargs.pop("input_shape", None)
        input_dim = kwargs.pop("input_dim", None)
        batch_size = kwargs.pop("batch_size", None)
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments passed to {type(self).__name__}: {kwargs}")
        if batch_shape is None and input_shape is not None:
            batch_shape = (batch_size, *tuple(input_shape))
        elif batch_shape is None and input_dim is not None:
            batch_shape = (batch_size, input_dim)
        if name is None:
            name = unique_name(snake_case(type(self).__name__))
        elif not isinstance(name, str) or "/" in name:
            raise ValueError(f"Argument `name` must be a string and cannot contain character `/`. "
                             f"Received: name={name!r} (of type {type(name)})")
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_name_scope", name_scope(name))
        self._jf_dtype = _dt.as_dtype(floatx() if dtype is None else getattr(dtype, "name", dtype))
        self._jf_autocast = autocast
        self._jf_trainable = bool(trainable)
        self._jf_weights = []  # add_weight's variables, in creation order (Keras's weight order)
        self._jf_losses = []  # add_loss values from the last call
        self._jf_inbound_nodes = []  # functional-graph calls of this layer
        self._jf_path = None  # the scope its weights were made in ("sequential/dense")
        self._jf_batch_input_shape = tuple(batch_shape) if batch_shape is not None else None
        self._jf_build_config = None
        self._jf_output_shape = None
        self._jf_scopes = {}
        self._jf_mask_warned = False
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.built = False

    # ---- identity and dtype --------------------------------------------------------------------
    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        return name_scope((self._jf_path or self._name) + "/")

    @property
    def path(self):
        return self._jf_path or self._name

    @property
    def dtype(self):
        """The variables' dtype name ("float32"), as Keras 3's layer.dtype."""
        return self._jf_dtype.name

    @property
    def compute_dtype(self):
        return self._jf_dtype.name

    @property
    def variable_dtype(self):
        return self._jf_dtype.name

    @property
    def input_dtype(self):
        return self._jf_dtype.name

    @property
    def trainable(self):
        return self._jf_trainable

    @trainable.setter
    def trainable(self, value):
        value = bool(value)
        self._jf_trainable = value
        for layer in self._flatten_layers(include_self=False):
            layer._jf_trainable = value

    # ---- weights ---------------------------------------------------------------------------------
    def add_weight(self, shape=None, initializer=None, dtype=None, trainable=True, autocast=True,
                   regularizer=None, constraint=None, aggregation="none", overwrite_with_gradient=False,
                   name=None):
        shape = () if shape is None else tuple(int(d) for d in shape)
        dtype = self._jf_dtype if dtype is None else _dt.as_dtype(getattr(dtype, "name", dtype))
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        init = initializers.get(initializer)
        if name is None:
            name = "variable" if not any(w.path.endswith("/variable") for w in self._jf_weights) else \
                f"variable_{len(self._jf_weights)}"
        scope = self._jf_path
        if scope is None:  # a weight made in __init__, before any build: the layer's own scope
            scope = current_module_scope() + self._name
        v = KerasVariable(lambda: _ops.cast(init(shape, dtype=dtype), dtype), trainable=trainable, name=name,
                          scope=scope, regularizer=regularizers.get(regularizer), constraint=constraints.get(constraint))
        self._jf_weights.append(v)
        return v

    def _flatten_layers(self, include_self=True, recursive=True):
        """This layer and the layers its attributes hold (lists and dicts included), in the order
        the attributes were set, each once (Keras's _flatten_layers)."""
        seen, out = set(), []

        def visit(layer):
            if id(layer) in seen:
                return
            seen.add(id(layer))
            out.append(layer)
            if not recursive and layer is not self:
                return
            for sub in layer._jf_direct_sublayers():
                visit(sub)

        visit(self)
        return out if include_self else out[1:]

    def _jf_direct_sublayers(self):
        subs = []
        ignored = type(self)._jf_untracked
        for key, value in vars(self).items():
            if key in ignored or key.startswith("_jf_"):
                continue
            if isinstance(value, Layer):
                subs.append(value)
            elif isinstance(value, (list, tuple, dict)):
                subs.extend(v for v in nest.flatten(value) if isinstance(v, Layer))
        return subs

    def _jf_own_variables(self):
        """add_weight's variables, then jf.Variables set directly as attributes."""
        own = list(self._jf_weights)
        seen = {id(v) for v in own}
        ignored = type(self)._jf_untracked
        for key, value in vars(self).items():
            if key in ignored or key.startswith("_jf_"):
                continue
            leaves = [value] if isinstance(value, Variable) else (
                nest.flatten(value) if isinstance(value, (list, tuple, dict)) else [])
            for v in leaves:
                if isinstance(v, Variable) and id(v) not in seen:
                    seen.add(id(v))
                    own.append(v)
        return own

    def _jf_collect(self, pick):
        out, seen = [], set()
        for layer in self._flatten_layers():
            for v in pick(layer):
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    @property
    def weights(self):
        return self._jf_collect(lambda layer: layer._jf_own_variables())

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        return self._jf_collect(lambda layer: [v for v in layer._jf_own_variables() if v.trainable]
                                if layer.trainable else [])

    @property
    def non_trainable_weights(self):
        if not self.trainable:
            return self.weights
        trainable = {id(v) for v in self.trainable_weights}
        return [v for v in self.weights if id(v) not in trainable]

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def layers(self):
        """The layers this layer's attributes hold directly."""
        return self._flatten_layers(include_self=False, recursive=False)

    def count_params(self):
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer '{self.name}', but the layer isn't "
                             "built. You can build it manually via: `layer.build(input_shape)`.")
        return int(sum(math.prod(v.shape) for v in self.weights))

    def get_weights(self):
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights):
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f"You called `set_weights(weights)` on layer '{self.name}' with a weight list of "
                             f"length {len(weights)}, but the layer was expecting {len(mine)} weights.")
        for v, w in zip(mine, weights):
            w = np.asarray(w)
            if tuple(w.shape) != tuple(v.shape):
                raise ValueError(f"Layer {self.name} weight shape {tuple(v.shape)} is not compatible with "
                                 f"provided weight shape {tuple(w.shape)}.")
            v.assign(w.astype(v.dtype.as_numpy_dtype))

    # ---- losses ----------------------------------------------------------------------------------
    def add_loss(self, loss):
        if not self._jf_losses:
            _with_losses[id(self)] = self
        self._jf_losses.append(loss)

    @property
    def losses(self):
        """add_loss values of the last call, then the weights' regularization penalties (computed
        now, so inside a jf.function they are part of the trace)."""
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._jf_losses)
        for layer in self._flatten_layers():
            for v in layer._jf_weights:
                if v.regularizer is not None:
                    out.append(v.regularizer(v.read_value()))
        return out

    def _jf_clear_losses(self):
        if not _with_losses:  # walking every sublayer on each call costs more than a small layer's call
            return
        for layer in self._flatten_layers():
            if layer._jf_losses:
                layer._jf_losses = []
                _with_losses.pop(id(layer), None)

    # ---- building and calling --------------------------------------------------------------------
    supports_masking = False  # whether the input's mask passes to the output unchanged

    def compute_mask(self, inputs, mask=None):
        return mask if self.supports_masking else None

    def build(self, input_shape=None):
        self.built = True

    def call(self, *args, **kwargs):
        raise NotImplementedError(f"Layer {type(self).__name__} does not have a `call()` method implemented.")

    def compute_output_shape(self, *args, **kwargs):
        raise NotImplementedError(f"Layer {type(self).__name__} has no compute_output_shape; call it on a "
                                  "jf.keras.Input to get its output shape.")

    def _jf_convert(self, x):
        """Inputs as Keras 3 takes them: arrays become tensors, floating inputs are cast to the
        layer's compute dtype (autocast)."""
        def conv(t):
            if isinstance(t, (np.ndarray, np.generic, float)) or (isinstance(t, int) and not isinstance(t, bool)):
                t = _ops.convert_to_tensor(t)
            if isinstance(t, Variable):
                t = t.read_value()
            if (self._jf_autocast and isinstance(t, Tensor) and t.dtype.is_floating
                    and t.dtype != self._jf_dtype):
                t = _ops.cast(t, self._jf_dtype)
            return t
        if isinstance(x, (list, tuple, dict)):
            return nest.map_structure(conv, x)
        return conv(x)

    def _jf_maybe_build(self, args, kwargs):
        build_params = [p for p in inspect.signature(self.build).parameters.values()
                        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if len(build_params) <= 1:
            shape = shapes_of(args[0]) if args else None
            self.build(shape)
            self._jf_build_config = {"input_shape": shape}
        else:
            try:
                bound = inspect.signature(self.call).bind_partial(*args, **kwargs).arguments
            except TypeError:
                bound = {}
            shapes = {}
            for p in build_params:
                arg = p.name.removesuffix("_shape")
                shapes[p.name] = shapes_of(bound[arg]) if bound.get(arg) is not None else None
            self.build(**shapes)
            self._jf_build_config = {"shapes_dict": shapes}
        self.built = True

    def _jf_resolve_training(self, kwargs):
        takes, default = _training_arg(type(self).call)
        if not takes:
            kwargs.pop("training", None)
            return None
        training = kwargs.get("training")
        if training is None and _context.stack:
            training = _context.stack[-1]
        if training is None:
            training = default
        kwargs["training"] = training
        return training

    def __call__(self, *args, **kwargs):
        if _has_keras_tensor(args, kwargs):
            return _symbolic_call(self, args, kwargs)
        previous_mask = None
        if args:
            first = args[0]
            previous_mask = _input_mask(first) if _masks else None
            if not (type(first) is Tensor and (first.dtype == self._jf_dtype or not first.dtype.is_floating)):
                args = (self._jf_convert(first),) + tuple(args[1:])
        elif "inputs" in kwargs:
            kwargs["inputs"] = self._jf_convert(kwargs["inputs"])
        if self.input_spec is not None:
            check_inputs(self, args[0] if args else kwargs.get("inputs"))
        if previous_mask is not None and kwargs.get("mask") is None and _takes_mask(type(self).call):
            kwargs["mask"] = previous_mask
        stack = _context.stack
        if not stack:
            self._jf_clear_losses()
        training = self._jf_resolve_training(kwargs)
        scope = current_module_scope() + self._name
        entered = self._jf_scopes.get(scope)
        if entered is None:  # a name_scope object per scope: making one per call costs as much as a small op
            entered = self._jf_scopes[scope] = name_scope(scope + "/")
        with entered:
            building = not self.built
            if building:
                if self._jf_path is None:
                    self._jf_path = scope
                self._jf_maybe_build(args, kwargs)
            stack.append(training if training is not None else (stack[-1] if stack else None))
            try:
                outputs = self.call(*args, **kwargs)
            finally:
                stack.pop()
        if self.activity_regularizer is not None:
            for t in nest.flatten(outputs):
                loss = self.activity_regularizer(t)
                if len(t.shape):  # Keras: per example, 0 for an empty batch
                    loss = _ops.divide_no_nan(loss, _ops.cast(_ops.shape(t)[0], loss.dtype))
                self.add_loss(loss)
        if (previous_mask is not None and not self.supports_masking and type(self).compute_mask is Layer.compute_mask
                and "mask" not in kwargs and not self._jf_mask_warned):
            self._jf_mask_warned = True
            _warn(f"Layer '{self.name}' (of type {type(self).__name__}) was passed an input with a mask attached to "
                  "it. However, this layer does not support masking and will therefore destroy the mask "
                  "information. Downstream layers will not see the mask.", UserWarning)
        if previous_mask is not None or type(self).compute_mask is not Layer.compute_mask:
            _attach_masks(outputs, self.compute_mask(args[0] if args else kwargs.get("inputs"),
                                                     kwargs.get("mask", previous_mask)))
        if building:  # the shape summary() shows for a layer outside a functional graph
            flat = nest.flatten(outputs)
            if len(flat) == 1 and hasattr(flat[0], "shape"):
                self._jf_output_shape = _shape_tuple(flat[0])
        return outputs

    # ---- serialization ---------------------------------------------------------------------------
    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        if type(self).get_config is Layer.get_config and type(self) not in _BUILTIN_BASES:
            args, kwargs = self._jf_init_args
            params = [p for p in inspect.signature(type(self).__init__).parameters.values()][1:]
            named = {}
            for p, a in zip([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)], args):
                named[p.name] = a
            named.update(kwargs)
            if not _json_safe(named):
                raise NotImplementedError(
                    f"Object {type(self).__name__} was created by passing non-serializable argument values in "
                    "`__init__()`, and therefore the object must override `get_config()` in order to be "
                    "serializable. Please implement `get_config()`.")
            config.update(named)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_build_config(self):
        return self._jf_build_config

    def build_from_config(self, config):
        if not config:
            return
        scope = current_module_scope() + self._name
        with name_scope(scope + "/"):
            if self._jf_path is None:
                self._jf_path = scope
            if "input_shape" in config:
                self.build(_as_shapes(config["input_shape"]))
            else:
                self.build(**{k: _as_shapes(v) for k, v in config["shapes_dict"].items()})
        self._jf_build_config = config
        self.built = True

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _attach_masks(outputs, mask):
    if mask is None:
        return
    if isinstance(outputs, (list, tuple)) and isinstance(mask, (list, tuple)):
        for t, m in zip(outputs, mask):
            set_mask(t, m)
    elif not isinstance(outputs, (list, tuple)):
        set_mask(outputs, mask)


def _as_shapes(s):
    """A shape as JSON gives it back (lists) into the tuples build expects."""
    if s is None:
        return None
    if isinstance(s, (list, tuple)) and all(d is None or isinstance(d, int) for d in s):
        return tuple(s)
    if isinstance(s, dict):
        return {k: _as_shapes(v) for k, v in s.items()}
    return [_as_shapes(v) for v in s]


_BUILTIN_BASES = {Layer}


# ---- the functional API's symbolic call ---------------------------------------------------------------
def _symbolic_call(layer, args, kwargs):
    """Calls the layer on KerasTensors: traces the call with their shapes (None dims stay None)
    to learn the outputs' shapes and dtypes and build the layer, then records a Node."""
    flat = nest.flatten((args, kwargs))
    kts = [t for t in flat if isinstance(t, KerasTensor)]
    specs = [TensorSpec(list(t.shape), t.dtype) for t in kts]
    scope = current_module_scope()

    def trace(*tensors):
        it = iter(tensors)
        filled = [next(it) if isinstance(t, KerasTensor) else t for t in flat]
        a, k = nest.pack_sequence_as((args, kwargs), filled)
        if scope:
            with name_scope(scope):
                return layer(*a, **k)
        return layer(*a, **k)

    cf = _jf_function(trace, autograph=False).get_concrete_function(*specs)
    outputs = nest.map_structure(lambda t: KerasTensor(_shape_tuple(t), t.dtype), cf.structured_outputs)
    Node(layer, args, kwargs, outputs)
    return outputs

