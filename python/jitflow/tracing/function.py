"""jf.function: traces a Python function once per input signature into a graph that runs
from C++. The call path (signature key -> cached plan -> run) is C++ (`_C.FunctionCache`);
this module holds what runs on a cache miss: tracing, input_signature checks,
reduce_retracing and the retracing warning."""
import collections
import functools
import inspect
import threading
import time
import weakref

from .. import _C
from ..core import errors as _errors
from ..core.graph import FuncGraph
from ..core.nest import flatten_outputs
from ..core.tensor_spec import TensorSpec
from ..ops import variables as _variables
from ..ops.basic_ops import convert_to_tensor
from . import display, jit_context, signatures
from .autograph import conversion, feature_names, operators

_RETRACE_WARN_COUNT = 5
_RETRACE_WINDOW_S = 60.0


Cluster = collections.namedtuple("Cluster", "name scope ops backend")
_warned_messages = set()
# Called with each new ConcreteFunction (jf.summary.trace_on records the graphs traced while on).
TRACE_LISTENERS = []


class ConcreteFunction:
    """One traced graph: `.graph` for introspection, callable with matching tensors."""

    def __init__(self, cf, output_tree, function_name, arg_names):
        for w in cf.jit_warnings:  # best-effort compilation: say once why a cluster stays eager
            if w not in _warned_messages:
                _warned_messages.add(w)
                _errors.warn(w, RuntimeWarning)
        self._cf = cf
        self._output_tree = output_tree
        self.name = function_name
        self._arg_names = arg_names
        self._var_ids, self._var_key = [], b""  # the variable arguments it was traced with
        self._parameters_of = None  # (python function, traced args, kwargs): see _parameters
        self._key, self._general = None, True  # its signature key; whether it serves others too
        self._traced_args, self._jit_compile = ((), {}), False
        self.graph = FuncGraph(cf.graph, dict(cf.op_cluster))

    @property
    def _parameters(self):
        """(name, kind, value) for each parameter as traced (tracing/signatures.py), bound on
        first use: only printing and saving read it, and inspect.signature costs a first call."""
        if self._parameters_of is not None:
            self._bound_parameters = signatures.parameters(*self._parameters_of)
            self._parameters_of = None
        return getattr(self, "_bound_parameters", [])

    def __call__(self, *args, **kwargs):
        _, leaves, _, var_ids, var_key = _C.flatten_inputs(args, kwargs)
        if len(leaves) != len(self.inputs) and not kwargs and len(args) == len(self.inputs):
            # Python numbers, lists or arrays where it was traced with tensors: converted to
            # their dtypes, as TF binds a concrete function's arguments.
            rebound = _bind_to_signature([TensorSpec(t.shape, t.dtype) for t in self.inputs], args)
            if rebound is not None:
                args = rebound
                _, leaves, _, var_ids, var_key = _C.flatten_inputs(args, kwargs)
        if var_key != self._var_key:
            raise TypeError(f"{self.name}: this concrete function was traced with variable arguments "
                            "of other dtypes, shapes or trainability (or passed in another pattern)")
        if len(leaves) != len(self.inputs):  # TF: binding the arguments fails
            want = ", ".join(f"{t.dtype.name}{list(t.shape)}" for t in self.inputs)
            raise TypeError(f"Binding inputs to jf.function {self.name} failed: got {len(leaves)} tensor "
                            f"argument(s) for the {len(self.inputs)} it was traced with ({want}); "
                            "pass tensors (Python values are part of the trace)")
        return self._output_tree.unflatten(self._cf.call(leaves, self._var_ids, var_ids))

    @property
    def structured_input_signature(self):
        """(args, kwargs) as traced: TensorSpecs where tensors were passed, Python values as they were."""
        return self._traced_args

    @property
    def structured_outputs(self):
        """The function's return value with its graph's output tensors as the leaves."""
        return self._output_tree.unflatten(self.graph.outputs)

    @property
    def clusters(self):
        """The compiled clusters: Cluster(name, scope, ops, backend)."""
        return [Cluster(c["name"], c["scope"], list(c["ops"]), c["backend"]) for c in self._cf.clusters]

    @property
    def inputs(self):
        return self.graph.inputs

    @property
    def outputs(self):
        return self.graph.outputs

    def pretty_printed_graph(self):
        return self._cf.graph.to_string()

    def _repr_html_(self):
        """In a notebook: the dataflow graph, compiled clusters as boxes, eager ops marked."""
        return display.concrete_html(self)


class _Rebound:
    """What a cache miss returns when it converted the arguments: the C++ call goes on with them."""

    def __init__(self, args):
        self._jf_rebound_args = args


def _is_tensor_leaf(value):
    """A value the argument flattening already takes as a tensor (converted values are, so a
    rebound call never converts again)."""
    return isinstance(value, _C.Tensor) or any(hasattr(value, a) for a in
                                               ("_c_tensor", "__jf_spec_leaf__", "__jf_tensor__"))


def _bind_to_signature(signature, args):
    """args with each value the signature names a TensorSpec for, but which is not a tensor
    (a Python number, a list, a numpy array), converted to the spec's dtype; None when nothing
    needs converting or the structure does not match (the signature check then says why).
    A value that does not convert is TF's TypeError, "Binding inputs to tf.function failed"."""
    if len(args) != len(signature):
        return None
    changed = False
    out = []
    for value, spec in zip(args, signature):
        if isinstance(spec, TensorSpec) and not _is_tensor_leaf(value):
            try:
                value = convert_to_tensor(value, dtype=spec.dtype)
            except (TypeError, ValueError) as e:
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise TypeError(f"Binding inputs to jf.function failed due to `{why}`. Received args: {args!r} "
                                f"for signature: {signature}") from None
            changed = True
        out.append(value)
    return tuple(out) if changed else None


class Function(_C.FunctionCache):
    """The callable jf.function returns. Calling it is the C++ cache's __call__: no Python
    frame runs on a cache hit."""

    def __init__(self, python_function, name=None, input_signature=None, jit_compile=None,
                 reduce_retracing=False, autograph=True, experimental_autograph_options=None):
        self._python_function = python_function
        self._autograph = autograph
        self._autograph_options = experimental_autograph_options
        self._autograph_features = feature_names(experimental_autograph_options)
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = (None if input_signature is None else
                                 [_as_spec(s) for s in input_signature])
        self._jit_compile = jit_compile
        self._reduce_retracing = reduce_retracing
        # The C++ cache calls back through a weak reference: a dropped function is freed at
        # once, with its concrete functions and their compiled kernels.
        _C.FunctionCache.__init__(self, python_function, _weak_method(self, "_trace_for_call"))
        self._tracing_count = 0
        self._trace_times = []
        self._last_arg_keys = None
        self._warned = False
        self._traced_specs = []
        self._concrete = []
        self._created_variables = []
        # Held while tracing: concurrent first calls of one signature trace once, the others
        # wait and take that trace (TF's per-function lock). Reentrant: a function may call
        # itself while it is traced. Cached calls never take it.
        self._trace_lock = threading.RLock()
        try:
            self._arg_names = list(inspect.signature(python_function).parameters)
        except (TypeError, ValueError):
            self._arg_names = []
        functools.update_wrapper(self, python_function)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        # A method: one Function per instance, so each instance traces and caches its own.
        key = "_jf_bound_" + self._name + "_" + str(id(self))
        bound = instance.__dict__.get(key)
        if bound is None:
            bound = Function(functools.partial(self._python_function, instance), self._name,
                             self._input_signature, self._jit_compile, self._reduce_retracing,
                             self._autograph, self._autograph_options)
            instance.__dict__[key] = bound
        return bound

    @property
    def python_function(self):
        return self._python_function

    def _repr_html_(self):
        """In a notebook: the graphs of this function's traces."""
        return display.function_html(self)

    def experimental_get_tracing_count(self):
        return self._tracing_count

    # ---- tracing (cache misses) ----------------------------------------------------------
    def _trace_for_call(self, args, kwargs, flat):
        """The C++ cache's miss: flat is its flattening of the arguments (key, tensor leaves,
        keepalive, variable ids, variable key), reused here rather than computed again. With
        an input_signature, arguments that are not tensors where it names one are converted to
        its dtype first and the call goes on with them (_Rebound), as TF binds them."""
        if self._input_signature is not None and not kwargs:
            rebound = _bind_to_signature(self._input_signature, args)
            if rebound is not None:
                return _Rebound(rebound)
        with self._trace_lock:
            if self.has_flat(flat):  # another thread traced it while we waited
                return None
            return self._trace_and_add(args, kwargs, flat)

    def _trace_and_add(self, args, kwargs, flat=None):
        key, leaves, keepalive, var_ids, var_key = flat if flat is not None else _C.flatten_inputs(args, kwargs)
        general = False
        if self._input_signature is not None:
            specs = self._check_signature(args, kwargs, leaves)
            general = True
        else:
            specs = [TensorSpec(t.shape, t.dtype) for t in leaves]
            if self._reduce_retracing and self._traced_specs:
                relaxed = _relax(self._traced_specs[-1], specs)
                if relaxed is not None:
                    specs, general = relaxed, True
        cf = self._trace(args, kwargs, specs, _C.function_placement(leaves))
        cf._var_ids, cf._var_key, cf._key, cf._general = var_ids, var_key, key, general
        self.add(key, cf._cf, cf._output_tree, general, keepalive, var_ids, var_key)
        return cf

    def _check_signature(self, args, kwargs, leaves):
        sig = self._input_signature
        if kwargs:
            raise TypeError(f"{self._name}: with an input_signature, pass arguments positionally "
                            f"(got keyword arguments {sorted(kwargs)})")
        flat_sig, _ = _C.nest_flatten(list(sig), spec_type=TensorSpec)
        if len(args) != len(sig) or len(leaves) != len(flat_sig):
            raise TypeError(f"{self._name}: expected {len(sig)} argument(s) matching input_signature "
                            f"{sig}, got {len(args)} argument(s)")
        for i, (t, s) in enumerate(zip(leaves, flat_sig)):
            if not s.is_compatible_with(t):
                name = self._arg_names[i] if i < len(self._arg_names) else f"#{i}"
                raise TypeError(
                    f"{self._name}: argument '{name}' is a tensor of shape {tuple(t.shape)} and dtype "
                    f"{t.dtype.name}, which does not match input_signature {s} (full signature: {sig})")
        return [s._for_rank(len(t.shape)) for t, s in zip(leaves, flat_sig)]

    def _trace(self, args, kwargs, specs, gpu_device=-1, spec_leaves=False):
        """Traces the Python function with a placeholder per leaf of (args, kwargs), typed by
        `specs`; with spec_leaves, TensorSpecs in the arguments are leaves too."""
        self._note_retrace(args, kwargs)
        leaves, tree = _C.nest_flatten((tuple(args), dict(kwargs)),
                                       spec_type=TensorSpec if spec_leaves else None)
        if len(leaves) != len(specs):
            raise TypeError(f"{self._name}: {len(leaves)} tensor argument(s) for {len(specs)} spec(s)")
        first = self._tracing_count == 0
        created = len(self._created_variables)
        if self._jit_compile:
            _C.cpu_jit_prepare()  # set up on another thread while this one traces
        t0 = time.perf_counter()
        graph, output_tree = self._trace_graph(tree, specs, first, leaves)
        self._tracing_count += 1
        if first and len(self._created_variables) > created:
            # As TF: a first trace that created variables is traced again at once, with creation
            # refused, so a variable created on every call (not guarded by `if self.v is None`)
            # fails on the first call rather than at some later retrace. The second graph,
            # which captures the variables the first made, is the one that runs.
            graph, output_tree = self._trace_graph(tree, specs, False, leaves)
            self._tracing_count += 1
        t1 = time.perf_counter()
        cf = ConcreteFunction(_C.make_concrete_function(graph, self._name, bool(self._jit_compile), gpu_device),
                              output_tree, self._name, self._arg_names)
        # Seconds spent tracing the Python function and building (optimizing, compiling) its graph.
        cf.trace_seconds, cf.build_seconds = t1 - t0, time.perf_counter() - t1
        # The parameters as traced: tensors by their specs, Python values as they were.
        traced = signatures.in_order_of(tree.unflatten(list(specs)), (tuple(args), dict(kwargs)))
        cf._parameters_of = (self._python_function, *traced)
        # What jf.saved_model writes: the call structure with TensorSpec leaves, and the mode.
        cf._traced_args, cf._jit_compile = traced, bool(self._jit_compile)
        self._traced_specs.append(list(specs))
        self._concrete.append(cf)
        for listener in TRACE_LISTENERS:
            listener(cf)
        return cf

    def _trace_graph(self, tree, specs, allow_creation, originals=()):
        """One run of the Python function on placeholders (the leaves of tree, typed by specs)
        into a graph; returns the graph and the output structure. An argument keyed by its
        spec (a jf.data.Dataset: __jf_spec_leaf__) is traced as the object its type makes of
        the placeholder of its tensor."""
        builder = _C.FuncBuilder()
        guard = _variables._creation_guard.stack
        guard.append((allow_creation, self._name, self._created_variables))
        try:
            with builder, jit_context.tracing(self._jit_compile):
                placeholders = [builder.placeholder(s.dtype, list(s.shape), name)
                                for s, name in zip(specs, self._leaf_names(tree))]
                placeholders = [type(o).__jf_spec_leaf_traced__(o, p) if hasattr(type(o), "__jf_spec_leaf__") else p
                                for o, p in zip(originals, placeholders)] + placeholders[len(originals):]
                new_args, new_kwargs = tree.unflatten(placeholders)
                out = self._converted_function()(*new_args, **new_kwargs)
                flat, output_tree = flatten_outputs(out)
                return builder.finish(flat), output_tree
        finally:
            guard.pop()

    def _converted_function(self):
        """The Python function as traced: AutoGraph-converted unless autograph=False."""
        if not self._autograph:
            return self._python_function
        f = conversion.converted(self._python_function)
        if not self._autograph_features:
            return f

        def with_features(*args, **kwargs):
            with operators.features(self._autograph_features):
                return f(*args, **kwargs)
        return with_features

    def _leaf_names(self, tree):
        """Placeholder names for the leaves of tree, the TreeDef of (args, kwargs): an
        argument's name for its first leaf, then name_1, name_2, ...; a keyword argument's
        name for each of its leaves."""
        names, seen = [], collections.Counter()
        for path in tree.paths():
            if path[0] == 1:
                names.append(path[1])
                continue
            i = path[1]
            base = self._arg_names[i] if i < len(self._arg_names) else f"args_{i}"
            n = seen[i]
            seen[i] += 1
            names.append(base if n == 0 else f"{base}_{n}")
        return names

    def _note_retrace(self, args, kwargs):
        now = time.monotonic()
        self._trace_times = [t for t in self._trace_times if now - t < _RETRACE_WINDOW_S] + [now]
        # Which argument changed is only worth a key per argument once a warning may follow.
        arg_keys = None
        if len(self._trace_times) >= _RETRACE_WARN_COUNT and not self._warned:
            arg_keys = [_C.flatten_inputs((a,), None)[0] for a in args] + \
                       [_C.flatten_inputs((kwargs[k],), None)[0] for k in sorted(kwargs)]
        changed = None
        if self._last_arg_keys is not None and arg_keys is not None:
            names = self._arg_names[:len(args)] + sorted(kwargs)
            for i, (a, b) in enumerate(zip(self._last_arg_keys, arg_keys)):
                if a != b:
                    changed = names[i] if i < len(names) else f"#{i}"
                    break
        self._last_arg_keys = arg_keys
        if len(self._trace_times) > _RETRACE_WARN_COUNT and not self._warned:
            self._warned = True
            why = f" The argument that changed last: '{changed}'." if changed else ""
            _errors.warn(
                f"{len(self._trace_times) - 1} retracings of jf.function '{self._name}' in the last "
                f"{_RETRACE_WINDOW_S:.0f} s.{why} Retracing is expensive: pass tensors instead of "
                "Python values that change, use input_signature with None dims, or "
                "reduce_retracing=True.", RuntimeWarning)

    def pretty_printed_concrete_signatures(self, verbose=True):
        """Each traced signature in TF's layout: every parameter with its kind and type (a
        TensorSpec, a Literal[...] Python value, or a List/Tuple/Dict of those) and the output
        structure (tracing/signatures.py)."""
        return signatures.render([(cf._parameters, cf.structured_outputs) for cf in self._concrete], verbose)

    def get_concrete_function(self, *args, **kwargs):
        leaves, _ = _C.nest_flatten((args, kwargs), spec_type=TensorSpec)
        if not any(isinstance(x, TensorSpec) for x in leaves):
            if self._input_signature is None or args:
                key, tensors, _, _, var_key = _C.flatten_inputs(args, kwargs)
                with self._trace_lock:
                    # The trace of this signature key (Python values are part of it), else a
                    # general one (input_signature, relaxed shapes) that takes these inputs.
                    for cf in self._concrete:
                        if cf._key == key or (cf._general and cf._var_key == var_key and
                                              cf._cf.accepts(tensors)):
                            return cf
                    return self._trace_and_add(args, kwargs)
            args = tuple(self._input_signature)
            leaves, _ = _C.nest_flatten((args, kwargs), spec_type=TensorSpec)
        specs = [x if isinstance(x, TensorSpec) else TensorSpec(x.shape, x.dtype) for x in leaves]
        for s in specs:
            if s.shape.rank is None:
                raise ValueError(f"{self._name}: get_concrete_function needs a known rank: jitflow traces "
                                 f"one graph per rank for {s} (call the function instead)")
        with self._trace_lock:
            for cf in self._concrete:
                if [tuple(i.shape) for i in cf.inputs] == [s.shape for s in specs] and \
                        [i.dtype for i in cf.inputs] == [s.dtype for s in specs]:
                    return cf
            cf = self._trace(args, kwargs, specs, _C.function_placement([]), spec_leaves=True)
            self.add(b"", cf._cf, cf._output_tree, True, [])
            return cf


def _weak_method(obj, name):
    """obj.name(*args) through a weak reference to obj."""
    ref = weakref.ref(obj)

    def call(*args):
        target = ref()
        if target is None:
            raise ReferenceError("the jf.function was deleted")
        return getattr(target, name)(*args)
    return call


def _as_spec(s):
    if isinstance(s, TensorSpec):
        return s
    if isinstance(s, (list, tuple)):
        return type(s)(_as_spec(x) for x in s)
    if isinstance(s, dict):
        return {k: _as_spec(v) for k, v in s.items()}
    raise TypeError(f"input_signature entries must be jf.TensorSpec, got {s!r}")


def _relax(old, new):
    """reduce_retracing: the same structure with differing dims set to None, else None."""
    if len(old) != len(new):
        return None
    out = []
    for a, b in zip(old, new):
        if a.dtype != b.dtype or len(a.shape) != len(b.shape):
            return None
        out.append(TensorSpec([x if x == y else None for x, y in zip(a.shape, b.shape)], a.dtype))
    return out


# The FunctionDef attributes tf.function accepts in experimental_attributes (TF 2.21's allowlist);
# jitflow builds no FunctionDef, so they are accepted and have no effect.
_ATTRIBUTES = frozenset({"api_implements", "api_preferred_device", "_disable_acd", "disable_summaries_at_runtime",
                         "go_backwards", "_implements", "experimental_ints_on_device", "_noinline",
                         "function_runs_at_most_once", "runtime_constant_optimization", "_tf_data_function",
                         "time_major", "_OutputsOnOpDevice"})
_DEPRECATED = {"experimental_compile": "experimental_compile is deprecated, use jit_compile instead",
               "experimental_relax_shapes": "experimental_relax_shapes is deprecated, use reduce_retracing instead",
               "experimental_follow_type_hints": "experimental_follow_type_hints is deprecated"}


def function(func=None, input_signature=None, autograph=True, jit_compile=None, reduce_retracing=False,
             experimental_implements=None, experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None, experimental_follow_type_hints=None, *,
             name=None):
    """Decorator (or call) making a graph function, like tf.function, with TF 2.21's arguments
    in its order. experimental_compile is the deprecated spelling of jit_compile and
    experimental_relax_shapes of reduce_retracing; experimental_follow_type_hints is deprecated
    and ignored (each with TF's deprecation warning). experimental_implements and
    experimental_attributes annotate a TF FunctionDef for other tools (TFLite's composite ops);
    they are checked as TF checks them and otherwise have no effect here."""
    given = {"experimental_compile": experimental_compile, "experimental_relax_shapes": experimental_relax_shapes,
             "experimental_follow_type_hints": experimental_follow_type_hints}
    for arg, value in given.items():
        if value is not None:
            _errors.warn(f"calling jf.function with {arg} is deprecated and will be removed in a future version.\n"
                         f"Instructions for updating:\n{_DEPRECATED[arg]}", DeprecationWarning)
    if experimental_compile is not None:
        if jit_compile is not None:
            raise ValueError("Cannot specify both 'experimental_compile' and 'jit_compile'.")
        jit_compile = experimental_compile
    if experimental_relax_shapes:
        reduce_retracing = True
    for attribute in experimental_attributes or {}:
        if attribute not in _ATTRIBUTES:
            raise ValueError(f"`{attribute} is not supported by tf.function as an attribute.")

    def wrap(f):
        return Function(f, name=name, input_signature=input_signature, jit_compile=jit_compile,
                        reduce_retracing=reduce_retracing, autograph=autograph,
                        experimental_autograph_options=experimental_autograph_options)
    return wrap if func is None else wrap(func)
