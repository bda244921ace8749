"""jf.function calls under an eager GradientTape.

A cached call runs its graph in C++, where the tape's op hook does not see it. While a tape
records, C++ routes the call here: it runs as usual and is recorded as one op,
"FunctionCall" (TF records a PartitionedCall). Its inputs are the call's tensors and the
values of the variables its graph accesses, read before the call; its gradient is a second
jf.function, traced once per call signature, so the backward pass is a cached graph too (and
compiles if the function uses jit_scope). The backward differentiates a replay of the call:
  - of the Python function, under a traced tape (nested tapes give higher derivatives through
    it), for a function that only reads variables;
  - of the function's graph (replay.py) for one that writes variables: the replay writes
    nothing and starts from the values the variables had before the call, so it reads what
    the call read, and a read's gradient goes to the variable (TF's semantics: every read is
    a leaf of the variable, an assignment is not differentiable).
Functions that draw random numbers are not replayed (the backward would draw other numbers):
the tape does not see inside those calls and warns when that leaves a gradient None.
"""
from .. import _C
from ..core.nest import flatten
from ..ops import basic_ops as ops
from ..ops import variables as _variables
from ..tracing.function import function as _jf_function
from . import recording as _recording
from .registry import register_gradient
from .replay import _ASSIGNS, RANDOM, VariableState, replay
from .shapes import is_float
from .tape import GradientTape


def _nodes(graph):
    """graph's nodes and those of its nested subgraphs."""
    for node in graph.nodes():
        yield node
        for sub in node.subgraphs():
            yield from _nodes(sub)


class _CallSite:
    """One call signature of one jf.function: what its graph accesses and its backward."""

    def __init__(self, function, args, kwargs, var_ids):
        cf = function.get_concrete_function(*args, **kwargs)
        self.graph = cf._cf.graph
        nodes = list(_nodes(self.graph))
        self.replayable = not any(n.op in RANDOM for n in nodes)
        self.writes = any(n.op in _ASSIGNS for n in nodes)
        # The graph names the variables it was traced with; this call binds its own (same specs).
        bind = dict(zip(cf._var_ids, var_ids))
        graph_ids = list(dict.fromkeys(n.get_attr("var_id") for n in nodes
                                       if n.op == "ReadVariableOp" or n.op in _ASSIGNS))
        found = [(g, _variables._by_id.get(bind.get(g, g))) for g in graph_ids]
        found = [(g, v) for g, v in found if v is not None]
        if self.writes:  # the replay needs every variable's value, differentiable or not
            self.graph_var_ids = [g for g, _ in found]
            self.variables = [v for _, v in found]
        else:
            self.variables = [v for _, v in found if v.trainable and v.dtype.is_floating]
        # The arguments' structure (the signature key's traversal): the replay rebuilds them
        # around the recorded leaves. Jacobians re-run a recorded call per row (batching.py):
        # not one that writes variables.
        self.tree = _C.nest_flatten((tuple(args), dict(kwargs)))[1]
        self.function = None if self.writes else function
        self.python_function = function._converted_function()  # the replay runs what was traced (AutoGraph)
        self.name = function._name
        self._backward = None

    def gradients(self, leaves, values, outputs, output_grads):
        """Gradients for leaves + variable values, from the cached backward function."""
        if self._backward is None:
            fn = self._replay_graph_gradients if self.writes else self._replay_gradients
            self._backward = _jf_function(fn, name=self.name + "_grad")
        dys = [g if g is not None else ops.zeros_like(o) for g, o in zip(output_grads, outputs)]
        flat = iter(self._backward(list(leaves), list(values), dys))
        return ([next(flat) if is_float(t) else None for t in leaves]
                + [next(flat) if self._differentiable(v) else None for v in self.variables])

    @staticmethod
    def _differentiable(v):
        return v.trainable and v.dtype.is_floating

    def _replay_gradients(self, leaves, values, dys):
        float_leaves = [t for t in leaves if is_float(t)]
        args, kwargs = self.tree.unflatten(list(leaves))
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(float_leaves)
            tape.watch(self.variables)
            out = self.python_function(*args, **kwargs)
        outs = [t for t in flatten(out) if isinstance(t, _C.Tensor)]
        return tape.gradient(outs, float_leaves + self.variables, output_gradients=dys,
                             unconnected_gradients="zero")

    def _replay_graph_gradients(self, leaves, values, dys):
        float_leaves = [t for t in leaves if is_float(t)]
        sources = [t for t, v in zip(values, self.variables) if self._differentiable(v)]
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(float_leaves + sources)
            state = VariableState(dict(zip(self.graph_var_ids, values)), dict(zip(self.graph_var_ids, values)))
            outs = replay(self.graph, list(leaves), f"jf.function '{self.name}'", state)
        return tape.gradient(outs, float_leaves + sources, output_gradients=dys, unconnected_gradients="zero")


def _taped_call(function, args, kwargs):
    key, leaves, _, var_ids, _ = _C.flatten_inputs(args, kwargs)
    key = (key, tuple(var_ids))  # a site reads and replays its own variables (traces are keyed by spec)
    sites = function.__dict__.setdefault("_jf_call_sites", {})
    site = sites.get(key)
    if site is None:
        site = sites[key] = _CallSite(function, args, kwargs, var_ids)
    if not site.replayable:
        for t in _recording.recording():
            t._saw_unseen_call = True
        return _C.call_recorded(function, args, kwargs)
    values = [v.read_value() for v in site.variables]  # recorded as reads when the tape watches them
    out = _C.call_recorded(function, args, kwargs)
    outs = [t for t in flatten(out) if isinstance(t, _C.Tensor)]
    _recording.on_op("FunctionCall", list(leaves) + values, {"_call_site": site, "_num_leaves": len(leaves)},
                     outs)
    return out


@register_gradient("FunctionCall")
def _function_call_grad(op, *grads):
    n = op.get_attr("_num_leaves")
    return op.get_attr("_call_site").gradients(op.inputs[:n], op.inputs[n:], op.outputs, grads)


_C.set_taped_call(_taped_call)
