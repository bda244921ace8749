"""Replaying a traced graph (a cond branch, a loop body, a jf.function's graph) in the current
trace or eagerly, so a gradient can differentiate the replay: the If/While gradients
(grads_control.py) and the gradient of a jf.function that writes variables called under an
eager tape (function_calls.py).

A replay computes values only. It repeats no side effect: prints are skipped, and variables are
neither read nor written. A replay keeps each variable's value itself (`VariableState`),
starting from the value the variable had where the replayed code started (an input of the
replayed node: the Placeholder marked `_variable_port` by tracing, cpp/tracing/func_builder.cc;
or the value read before a replayed jf.function call): an assignment changes that value, and a
read gives the value the forward run read at that point even when the variable has changed
since, or is written again later. A read's gradient goes to the variable's port, the value at
the start, whatever was assigned before the read (TF 2: every read of a variable is a leaf of
the variable, and an assignment is not differentiable), through `read_as`. An op that draws
random numbers cannot be replayed (it would draw other numbers) and raises."""
from .. import _C
from ..ops import basic_ops as ops
from ..tracing.control_flow import cond, while_loop
from . import recording as _recording
from .registry import ops_flagged, register_gradient

_ASSIGNS = {"AssignVariableOp": None, "AssignAddVariableOp": ops.add, "AssignSubVariableOp": ops.subtract}
_SKIPPED = {"PrintV2"}
# Ops that draw random numbers, from a stream or a Generator's state (which a replay would
# also advance again).
RANDOM = ops_flagged("random_stream") | {"RngReadAndSkip"}
# The gradient of a read in a replay (`read_as`), named by the `_gradient_op_type` attr of
# its node (TF's gradient override), which replays of replays keep.
_READ_GRADIENT = "VariableReadInReplay"
_SELECT = _C.op_id("SelectV2")


class VariableState:
    """The variables of one replay, by variable id: the value each holds at this point of the
    replay (`values`), and its port (`ports`), the tensor the gradients of its reads go to."""

    def __init__(self, values=None, ports=None):
        self.values = dict(values or {})
        self.ports = dict(ports or {})

    def copy(self):
        return VariableState(self.values, self.ports)

    def read(self, var_id, what):
        value = self.values.get(var_id)
        if value is None:
            raise NotImplementedError(f"Gradient of {what}: it reads a variable (id {var_id}) whose value "
                                      "where the replay starts is not known")
        return read_as(value, self.ports.get(var_id))

    def assign(self, op_type, var_id, value, what):
        combine = _ASSIGNS[op_type]
        if combine is not None:
            current = self.values.get(var_id)
            if current is None:
                raise NotImplementedError(f"Gradient of {what}: it updates a variable (id {var_id}) whose "
                                          "value where the replay starts is not known")
            value = combine(current, value)
        current = self.values.get(var_id)
        if current is not None and list(value.shape) != list(current.shape) and current.shape.is_fully_defined():
            value = ops.reshape(value, list(current.shape))  # a variable keeps its shape: the value had
            # unknown dims when traced, and the write checked them when it ran
        self.values[var_id] = value


def read_as(value, port):
    """`value` with the gradient going to `port` instead (to nothing when port is None): a
    variable read in a replay, which TF differentiates as a read of the variable's handle."""
    if port is None:
        return ops.identity(value)
    true = ops.constant(True)
    return _C.execute_n(_SELECT, [true, value, port], {"_gradient_op_type": _READ_GRADIENT}, None)[0]


@register_gradient(_READ_GRADIENT)
def _read_gradient(op, grad):
    return [None, None, grad]


def written_variables(node):
    """The ids of the variables that ops in node's subgraphs (recursively) write, sorted."""
    out = set()
    for graph in node.subgraphs():
        for n in graph.nodes():
            if n.op in _ASSIGNS:
                out.add(n.get_attr("var_id"))
            elif n.op in ("If", "While"):
                out.update(written_variables(n))
    return sorted(out)


def replay(graph, args, what, variables=None):
    """Recreates graph's ops in the current trace (or eagerly) with `args` as its inputs and
    returns its outputs. `variables` (a VariableState, updated in place) holds the values of the
    variables the graph accesses; its ports marked on the graph's inputs are added to it."""
    state = VariableState() if variables is None else variables
    env = {}
    for ph, a in zip(graph.inputs(), args):
        env[(ph, 0)] = a
        if ph.has_attr("_variable_port"):
            var_id = ph.get_attr("_variable_port")
            state.ports[var_id] = a
            state.values.setdefault(var_id, a)
    for node in graph.nodes():
        t = node.op
        if t == "Placeholder" or t in _SKIPPED:
            continue
        if t == "Const":
            env[(node, 0)] = node.get_attr("value")
            continue
        if t in RANDOM:
            raise NotImplementedError(
                f"Gradient of {what}: the branch or loop body samples random numbers ({t} "
                f"'{node.name}'), which a replay would draw again; sample outside the jf.cond or "
                "jf.while_loop instead")
        inputs = [env[(r, i)] for r, i in node.input_refs()]
        if t == "ReadVariableOp":
            outs = [state.read(node.get_attr("var_id"), what)]
        elif t in _ASSIGNS:
            state.assign(t, node.get_attr("var_id"), inputs[0], what)
            outs = []
        elif t == "If":
            outs = _replay_if(node, inputs, what, state)
        elif t == "While":
            outs = _replay_while(node, inputs, what, state)
        else:
            attrs = {k: node.get_attr(k) for k in node.attr
                     if not k.startswith("_") or k == "_gradient_op_type"}
            outs = _C.execute_n(_C.op_id(t), inputs, attrs, None)
        for i, o in enumerate(outs):
            env[(node, i)] = o
    return [env[(r, i)] for r, i in graph.outputs()]


def _replay_if(node, inputs, what, state):
    """A jf.cond on the replayed inputs whose branches replay node's; the variables a branch
    writes are outputs too, so `state` holds their values after it."""
    n_then = node.get_attr("num_then_inputs")
    tg, eg = node.subgraphs()
    written = written_variables(node)

    def branch(graph, args):
        def fn():
            inner = state.copy()
            outs = replay(graph, args, what, inner)
            return list(outs) + [inner.values[v] for v in written]
        return fn

    res = cond(inputs[0], branch(tg, inputs[1:1 + n_then]), branch(eg, inputs[1 + n_then:]))
    res = list(res) if isinstance(res, (list, tuple)) else [res]
    k = len(res) - len(written)
    state.values.update(zip(written, res[k:]))
    return res[:k]


def _with_dims(v, shape):
    """v, knowing none of its dims when tracing, where it knows other dims than `shape`: the
    loop built on it takes `shape` as its invariant."""
    if list(v.shape) == list(shape) or not _C.is_tracing():  # an eager loop has no invariants
        return v
    out = _C.relax_shape(v, [None] * len(v.shape))  # an Identity, built outside the dispatcher:
    _recording.on_op("Identity", [v], {}, [out])     # the tapes record it here
    return out


def _replay_while(node, inputs, what, state):
    """A jf.while_loop that replays node's cond and body, with the values of the variables the
    loop writes as more loop vars."""
    nv, nc = node.get_attr("num_loop_vars"), node.get_attr("num_cond_captures")
    cg, bg = node.subgraphs()
    loop_vars, cond_caps, body_caps = inputs[:nv], inputs[nv:nv + nc], inputs[nv + nc:]
    written = written_variables(node)
    # The loop's shape invariants, as traced: a replay with the shapes of one call may know
    # more dims of the initial values than the body keeps (its ops infer as the traced ones
    # did). Such an initial value forgets its dims, so a gradient of the replayed loop sees no
    # invariant relaxing a dim its initial value knows.
    invariants = [list(ph.output(0).shape) for ph in bg.inputs()[:nv]]
    loop_vars = [_with_dims(v, inv) for v, inv in zip(loop_vars, invariants)]

    def inner(v):
        s = state.copy()
        s.values.update(zip(written, v[nv:]))
        return s

    def body(*v):
        s = inner(v)
        outs = replay(bg, list(v[:nv]) + body_caps, what, s)
        return list(outs) + [s.values[w] for w in written]

    start = [state.values[w] for w in written]
    max_iter = node.get_attr("maximum_iterations")
    res = while_loop(lambda *v: replay(cg, list(v[:nv]) + cond_caps, what, inner(v))[0], body,
                     list(loop_vars) + start,
                     shape_invariants=invariants + [list(s.shape) for s in start],
                     maximum_iterations=None if max_iter < 0 else max_iter)
    res = list(res)
    state.values.update(zip(written, res[nv:]))
    return res[:nv]
