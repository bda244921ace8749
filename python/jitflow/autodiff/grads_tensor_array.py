"""Gradients of the traced jf.TensorArray ops (TF's TensorArray gradients on one buffer): a
write's value gets the read of the gradient buffer at its index and the buffer the gradient
with that row zeroed (it was overwritten); a read's buffer gets its gradient added at the
index; a stack's buffer gets the stacked gradient in its first rows."""
from ..core import dtypes
from ..ops import basic_ops as ops
from ..tracing.tensor_array import _DROP, _GROW, _STRICT, _read, _stack, _write
from .grads_math import _grad


def _rows(t):
    """t's leading dim as an int32 scalar (static when known)."""
    n = t.shape[0]
    return ops.constant(n, dtypes.int32) if n is not None and n >= 0 else ops.shape(t)[0]


@_grad("TensorArrayWrite")
def _tensor_array_write_grad(op, g):
    buffer, indices, values = op.inputs
    d_values = _read(g, _rows(g), indices)
    if op.get_attr("accumulate"):
        return [g, None, d_values]
    d_buffer = _write(g, indices, ops.zeros_like(values), _DROP)
    if op.get_attr("mode") == _GROW:  # the write may have grown the buffer: its first rows
        d_buffer = _stack(d_buffer, _rows(buffer))
    return [d_buffer, None, d_values]


@_grad("TensorArrayRead")
def _tensor_array_read_grad(op, g):
    buffer, _, indices = op.inputs
    return [_write(ops.zeros_like(buffer), indices, g, _DROP, accumulate=True), None, None]


@_grad("TensorArrayStack")
def _tensor_array_stack_grad(op, g):
    buffer, size = op.inputs
    if buffer.shape[0] is not None and buffer.shape[0] == g.shape[0]:
        return [g, None]
    positions = ops.range(0, ops.cast(size, dtypes.int32))
    return [_write(ops.zeros_like(buffer), positions, g, _DROP), None]


# ---- for the While gradient (grads_control.py) ------------------------------------------------
def push(acc, i, value):
    """acc [capacity, *shape] with row i set to value, in place when the loop owns acc (capacity
    doubling): the While gradient's per-iteration accumulators, O(1) amortized per push."""
    return _write(acc, i, value, _GROW)


def push_fixed(acc, i, value):
    """acc [n, *shape] with row i set to value, in place when the loop owns acc: a saved value
    of a replay whose iterations were counted first (a fixed size, so a compiled loop holding
    it runs whole)."""
    return _write(acc, i, value, _STRICT)


def peek(acc, n, k):
    """Row k of an accumulator holding n rows."""
    return _read(acc, n, k)


def write_only_loop_vars(body, nv):
    """{j: mode} for the loop vars j < nv whose body placeholder is only overwritten: every use
    is input 0 of a TensorArrayWrite (strict: a fixed size; grow: a dynamic one). The body
    computes nothing from their values and those writes' gradients need only their shape, so
    the While gradient need not save them per iteration (an array of n rows saved n times would
    be O(n^2)): a fixed-size one keeps its shape, a growing one's row count is saved."""
    phs = body.inputs()[:nv]
    index = {ph: j for j, ph in enumerate(phs)}
    modes = {j: _STRICT for j in range(nv)}
    for node in body.nodes():
        for pos, (ref, _) in enumerate(node.input_refs()):
            j = index.get(ref)
            if j is None or j not in modes:
                continue
            mode = node.get_attr("mode") if node.op == "TensorArrayWrite" and pos == 0 else None
            if mode == _GROW:
                modes[j] = _GROW
            elif mode != _STRICT:
                del modes[j]
    return modes


def rows(value):
    """A saved growing array's row count (int32 scalar)."""
    return ops.shape(value)[0]


def stand_in(final, n_rows):
    """A growing array's value in one iteration, for a replay that reads only its shape: the
    first n_rows rows of the loop's final buffer (a view: capacities only grow)."""
    return _stack(final, n_rows)
