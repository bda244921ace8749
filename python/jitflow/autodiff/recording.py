"""The tapes recording on each thread, and the hooks that feed them: every op the C++
dispatcher runs, and the If/While nodes built outside it (tracing/subgraph.py)."""
import threading

from .. import _C
from ..tracing import subgraph as _subgraph

_local = threading.local()


def recording():
    """The tapes recording on this thread, innermost last."""
    tapes = getattr(_local, "tapes", None)
    if tapes is None:
        tapes = _local.tapes = []
    return tapes


def on_op(op_type, inputs, attrs, outputs):
    for tape in list(recording()):
        tape._record(op_type, inputs, attrs, outputs)


def _on_control_flow_node(outs):
    """If/While nodes, built outside the dispatcher (subgraph.notify), and the reads of the
    variables their branches or body access, which tracing adds as their inputs just before
    them (`_node_input`: a tape skips a read it recorded when it ran)."""
    if not recording() or not outs:
        return
    node = outs[0]._node_ref[0]
    inputs = [ref.output(i) for ref, i in node.input_refs()]
    for (ref, _), t in zip(node.input_refs(), inputs):
        if ref.op == "ReadVariableOp":
            on_op("ReadVariableOp", [], {"var_id": ref.get_attr("var_id"), "_node_input": True}, [t])
    on_op(node.op, inputs, {k: node.get_attr(k) for k in node.attr}, list(outs))


_C.set_tape_callback(on_op)
_subgraph.node_observers.append(_on_control_flow_node)


def key(t):
    """What identifies a tensor on a tape: its graph edge, or its buffer, shape and dtype."""
    if t._is_symbolic:
        ref = t._node_ref
        return None if ref is None else (ref[0], ref[1])
    return (t._data_ptr, t.shape, t.dtype)
