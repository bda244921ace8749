"""GradientTape.jacobian and batch_jacobian, vectorized over the rows of the jacobian.

A jacobian row is a gradient with a one-hot output gradient, and a gradient is linear in its
output gradient. So the tape's backward pass runs once, with a zero output gradient (the
seed), while a recorder sees every op it runs (eager or traced, through the tapes' op hook);
then the ops that depend on the seed are replayed on all one-hot rows at once, each through
its batching rule (batching.py), and the ops that do not (the forward values the gradient
functions read) are reused as they are. One backward pass plus one batched pass, whatever
the number of rows; as TF's pfor does, an op without a rule runs once per row (counted in
`jf.debugging.stats()["jacobian_loop_fallbacks"]`, warned once), and a backward pass that
cannot be replayed at all (it goes through control flow or a custom-gradient function)
becomes the explicit loop, which is also what `experimental_use_pfor=False` asks for.
"""
import contextlib

import numpy as np

from .. import _C
from ..core.errors import warn
from ..core.nest import flatten, pack_sequence_as
from ..ops import array_ops
from ..ops import basic_ops as ops
from ..ops import variables as _variables
from ..ops.debugging import _extra_stats
from . import recording as _recording
from .backprop import unconnected_mode
from .batching import NoBatchingRule, batch_op
from .registry import JIT_ATTRS
from .shapes import static_shape

_extra_stats.setdefault("jacobian_loop_fallbacks", 0)
_NON_PERSISTENT = ("A non-persistent GradientTape can only be used to compute one set of gradients "
                   "(or jacobians)")


class _Recorder:
    """Sits in the tapes' list during the seed's backward pass: keeps every op of it."""

    def __init__(self, graph):
        self.graph = graph
        self.ops = []

    def _record(self, op_type, inputs, attrs, outputs):
        if not outputs:
            return
        first = outputs[0]
        if self.graph is None:
            if first._is_symbolic:
                return
        elif (not first._is_symbolic or first._node_ref is None
              or first._node_ref[0].graph is not self.graph):
            return  # an eager op, or one inside a cond branch being built (the If is recorded)
        self.ops.append((op_type, list(inputs), dict(attrs), list(outputs)))


def _jit_attrs_of(t):
    """The jit_scope attrs of a recorded traced op, for its batched replay (compiled alike)."""
    if not t._is_symbolic or t._node_ref is None:
        return contextlib.nullcontext()
    node = t._node_ref[0]
    return _C.attr_scope({k: node.get_attr(k) for k in JIT_ATTRS if node.has_attr(k)}, JIT_ATTRS)


def _replay(recorded, seed, rows):
    """Batched values (leading dim: the rows) of every recorded tensor that depends on seed."""
    key = _recording.key
    val = {key(seed): rows}
    for op_type, inputs, attrs, outputs in recorded:
        batched = [key(t) in val for t in inputs]
        if not any(batched):
            continue
        ins = [val[key(t)] if b else t for t, b in zip(inputs, batched)]
        with _jit_attrs_of(outputs[0]):
            results = batch_op(op_type, ins, batched, attrs, outputs)
        for y, (t, b) in zip(outputs, results):
            if b:
                val[key(y)] = t
    return val


def _tiled(g, rows):
    """g repeated for every row (a gradient that does not depend on the output gradient)."""
    g = ops.expand_dims(g, 0)
    count = [rows.shape[0]] if rows.shape[0] is not None else ops.shape(rows)[:1]
    return array_ops.tile(g, ops.concat([count, np.ones(len(g.shape) - 1, np.int32)], 0))


def _rows_gradients(tape, target, sources, rows, count, grad_scope, use_pfor):
    """For each source, its gradients for every row of output gradients, stacked: [count, *shape]
    (None when unconnected)."""
    if use_pfor:
        seed = ops.zeros_like(target)
        recorder = _Recorder(_C.current_graph())
        tapes = _recording.recording()
        tapes.append(recorder)
        _C.tape_activate(1)
        # The backward of a jf.function call recorded by an eager tape is another jf.function
        # (function_calls.py): run op by op here, its ops are recorded and vectorized too.
        was_eager = _C.functions_run_eagerly()
        _C.set_run_functions_eagerly(was_eager or not _C.is_tracing())
        try:
            grads = tape._gradient([target], sources, [seed], grad_scope, "none")
        finally:
            _C.set_run_functions_eagerly(was_eager)
            tapes.remove(recorder)
            _C.tape_activate(-1)
        try:
            val = _replay(recorder.ops, seed, rows)
        except NoBatchingRule:
            if count is None:
                raise NotImplementedError(
                    "jacobian: the backward pass goes through an op that cannot be vectorized "
                    "(control flow or a custom gradient), and the target's size is unknown when "
                    "tracing, so it cannot loop over rows either: give the jf.function an "
                    "input_signature with known dims") from None
            _extra_stats["jacobian_loop_fallbacks"] += 1
            warn("jacobian: the backward pass goes through an op that cannot be vectorized "
                 "(control flow or a custom gradient); computing it one row at a time")
        else:
            out = []
            for g in grads:
                b = None if g is None else val.get(_recording.key(g))
                out.append(b if b is not None or g is None else _tiled(g, rows))
            return out
    if count == 0:
        grads = tape._gradient([target], sources, [ops.zeros_like(target)], grad_scope, "none")
        return [None if g is None else _tiled(g, rows) for g in grads]
    per_row = [tape._gradient([target], sources, [array_ops.gather(rows, i)], grad_scope, "none")
               for i in range(count)]
    return [None if per_row[0][k] is None else ops.stack([r[k] for r in per_row], 0)
            for k in range(len(sources))]


def _shape_vector(prefix, like, drop):
    """prefix + like's shape without its first `drop` dims: a list when static, else a tensor."""
    shape = static_shape(like)
    if isinstance(prefix, _C.Tensor):  # the target's shape, unknown when tracing
        dims = ops.constant(np.asarray(shape[drop:], np.int32)) if shape is not None else ops.shape(like)[drop:]
        return ops.concat([prefix, dims], 0)
    if shape is not None:
        return list(prefix) + list(shape[drop:])
    dims = ops.shape(like)[drop:]
    if not prefix:
        return dims
    return ops.concat([ops.constant(np.asarray(prefix, np.int32)), dims], 0)


def _zeros(prefix, like, drop=0):
    return ops.fill(_shape_vector(prefix, like, drop), ops.constant(0, like.dtype))


def _reshaped(g, prefix, like, drop=0):
    return ops.reshape(g, _shape_vector(prefix, like, drop))


def _as_tensor(s):
    """A tensor, or a Variable as itself (its static shape and dtype are all that is read)."""
    return s if isinstance(s, _variables.Variable) else _C.convert_to_tensor(s)


def _dynamic_rows(target, use_pfor, what, skip=0):
    """For a target whose shape is known only at run time: its shape tensor and the identity
    matrix over its elements (past the first `skip` dims). Vectorized only: a Python loop
    needs the number of rows."""
    if not use_pfor:
        raise NotImplementedError(f"GradientTape.{what}(experimental_use_pfor=False) needs the target's "
                                  f"shape when tracing, got {tuple(target.shape)}")
    shape = ops.shape(target)
    size = ops.reduce_prod(shape[skip:])
    eye = array_ops.one_hot(ops.range(size), size, dtype=target.dtype)
    return shape, eye


def _check_usable(tape, use_pfor, what):
    if tape._used and not tape._persistent:
        raise RuntimeError(_NON_PERSISTENT)
    if not use_pfor and not _C.is_tracing() and not tape._persistent:
        raise RuntimeError(f"GradientTape must be created with persistent=True to compute the {what} "
                           "with eager execution enabled and with experimental_use_pfor set to False.")


def jacobian(tape, target, sources, unconnected_gradients, use_pfor):
    unconnected = unconnected_mode(unconnected_gradients)
    _check_usable(tape, use_pfor, "jacobian")
    target = _C.convert_to_tensor(target)
    flat = flatten(sources)
    tshape = static_shape(target)
    if tshape is not None:
        tshape = list(tshape)
        count = int(np.prod(tshape, dtype=np.int64))
        rows = ops.constant(np.eye(count, dtype=target.dtype.as_numpy_dtype).reshape([count] + tshape))
    else:
        tshape, eye = _dynamic_rows(target, use_pfor, "jacobian")
        count, rows = None, ops.reshape(eye, ops.concat([[-1], tshape], 0))
    with tape._differentiating() as grad_scope:
        grads = _rows_gradients(tape, target, flat, rows, count, grad_scope, use_pfor)
    out = []
    for s, g in zip(flat, grads):
        if s is None or (g is None and unconnected == "none"):
            out.append(None)
        elif g is None:
            out.append(_zeros(tshape, _as_tensor(s)))
        else:
            out.append(_reshaped(g, tshape, _as_tensor(s)))
    return pack_sequence_as(sources, out)


def batch_jacobian(tape, target, source, unconnected_gradients, use_pfor):
    unconnected_mode(unconnected_gradients)
    _check_usable(tape, use_pfor, "batch_jacobian")
    target = _C.convert_to_tensor(target)
    src = _as_tensor(source)
    tshape, sshape = list(target.shape), list(src.shape)
    if (len(tshape) < 2 or len(sshape) < 2
            or (tshape[0] is not None and sshape[0] is not None and tshape[0] != sshape[0])):
        raise ValueError(f"Need first dimension of target shape ({tuple(tshape)}) and source shape "
                         f"({tuple(sshape)}) to match.")
    # Row j: ones at element j of every example.
    if static_shape(target) is not None:
        batch = tshape[0]
        per_example = int(np.prod(tshape[1:], dtype=np.int64))
        eye = np.eye(per_example, dtype=target.dtype.as_numpy_dtype)[:, None, :]
        rows = np.broadcast_to(eye, (per_example, batch, per_example)).reshape([per_example] + tshape)
        rows = ops.constant(np.ascontiguousarray(rows))
    else:
        tshape, eye = _dynamic_rows(target, use_pfor, "batch_jacobian", skip=1)
        per_example = None
        ones = ops.ones(ops.concat([[1], tshape[:1], [1]], 0), target.dtype)
        rows = ops.reshape(ops.expand_dims(eye, 1) * ones, ops.concat([[-1], tshape], 0))
    with tape._differentiating() as grad_scope:
        (g,) = _rows_gradients(tape, target, [source], rows, per_example, grad_scope, use_pfor)
    if g is None:  # TF returns zeros here whatever unconnected_gradients says
        return _zeros(tshape, src, drop=1)
    perm = [1, 0] + list(range(2, len(g.shape)))
    return _reshaped(ops.transpose(g, perm), tshape, src, drop=1)
