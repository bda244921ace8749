"""jf.function calls under an eager GradientTape.

A cached call runs its graph in C++, where the tape's op hook does not see it. While a tape
records, C++ routes the call here: it runs as usual and is recorded as one op,
"FunctionCall" (TF records a PartitionedCall). Its inputs are the call's tensors and the
values of the trainable variables its graph reads; its gradient is a second jf.function,
traced once per call signature, that replays the Python function under a traced tape and
differentiates it, so the backward pass is a cached graph too (and compiles if the function
uses jit_scope).

Functions that write variables or draw random numbers are not replayed: the backward pass
would write again or draw different numbers. The tape does not see inside those calls, as
before, and warns when that leaves a gradient None.
"""
from .. import _C
from ..core.nest import flatten
from ..ops import basic_ops as ops
from ..ops import variables as _variables
from ..tracing.function import function as _jf_function
from . import recording as _recording
from .registry import ops_flagged, register_gradient
from .shapes import is_float
from .tape import GradientTape

# A recorded call that writes variables or draws random numbers is not replayed for its
# gradient: the replay would write again or draw other numbers (a Generator's RngReadAndSkip
# is both: it advances the generator's state variable).
_NOT_REPLAYABLE = frozenset(("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                             "RngReadAndSkip")) | ops_flagged("random_stream")


class _CallSite:
    """One call signature of one jf.function: what its graph reads and its backward."""

    def __init__(self, function, args, kwargs, var_ids):
        cf = function.get_concrete_function(*args, **kwargs)
        operations = cf.graph.get_operations()
        self.replayable = not any(op.type in _NOT_REPLAYABLE for op in operations)
        # The graph names the variables it was traced with; this call binds its own (same specs).
        bind = dict(zip(cf._var_ids, var_ids))
        var_ids = dict.fromkeys(bind.get(op.get_attr("var_id"), op.get_attr("var_id"))
                                for op in operations if op.type == "ReadVariableOp")
        found = (_variables._by_id.get(i) for i in var_ids)
        self.variables = [v for v in found if v is not None and v.trainable and v.dtype.is_floating]
        # The arguments' structure (the signature key's traversal): the replay rebuilds them
        # around the recorded leaves.
        self.tree = _C.nest_flatten((tuple(args), dict(kwargs)))[1]
        self.function = function  # jacobians re-run a recorded call per row (batching.py)
        self.python_function = function._converted_function()  # the replay runs what was traced (AutoGraph)
        self.name = function._name
        self._backward = None

    def gradients(self, leaves, outputs, output_grads):
        """Gradients for leaves + variable values, from the cached backward function."""
        if self._backward is None:
            self._backward = _jf_function(self._replay_gradients, name=self.name + "_grad")
        dys = [g if g is not None else ops.zeros_like(o) for g, o in zip(output_grads, outputs)]
        flat = iter(self._backward(list(leaves), dys))
        return [next(flat) if is_float(t) else None for t in leaves] + [next(flat) for _ in self.variables]

    def _replay_gradients(self, leaves, dys):
        float_leaves = [t for t in leaves if is_float(t)]
        args, kwargs = self.tree.unflatten(list(leaves))
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(float_leaves)
            tape.watch(self.variables)
            out = self.python_function(*args, **kwargs)
        outs = [t for t in flatten(out) if isinstance(t, _C.Tensor)]
        return tape.gradient(outs, float_leaves + self.variables, output_gradients=dys,
                             unconnected_gradients="zero")


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
    reads = [v.read_value() for v in site.variables]  # recorded as reads when the tape watches them
    out = _C.call_recorded(function, args, kwargs)
    outs = [t for t in flatten(out) if isinstance(t, _C.Tensor)]
    _recording.on_op("FunctionCall", list(leaves) + reads, {"_call_site": site, "_num_leaves": len(leaves)},
                 outs)
    return out


@register_gradient("FunctionCall")
def _function_call_grad(op, *grads):
    n = op.get_attr("_num_leaves")
    return op.get_attr("_call_site").gradients(op.inputs[:n], op.outputs, grads)


_C.set_taped_call(_taped_call)
