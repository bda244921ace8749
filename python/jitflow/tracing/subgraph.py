"""Subgraphs of a trace: a Python callable traced into its own graph (a branch, a loop body,
a probe of a loop body), and the hook that lets a traced tape see the If/While nodes built
from them."""
from .. import _C
from ..core.nest import flatten_outputs

# If/While nodes are built outside the op dispatcher (no tape hook): jitflow.autodiff.tape
# registers a callback here so a traced GradientTape still records them.
node_observers = []


def notify(outs):
    """Tells the observers (a traced GradientTape) of a new If/While node's outputs."""
    for observe in node_observers:
        observe(outs)


def trace_branch(fn, arg_specs=(), names=()):
    """Traces fn(*placeholders) into a subgraph: (its builder, the graph, the output TreeDef)."""
    b = _C.FuncBuilder(True)
    with b:
        args = [b.placeholder(dt, list(shape), n) for (dt, shape), n in zip(arg_specs, names)]
        out = fn(*args)
        flat, tree = flatten_outputs(out)
        graph = b.finish(flat)
    return b, graph, tree
