"""jf.GradientTape: records the ops that run (eagerly) or are traced (inside a jf.function)
while it is active, and differentiates them in reverse.

Recording uses the dispatcher's tape hook (`_C.set_tape_callback`): after every op, each
recording tape looks at the op's inputs; if one is watched or was computed from a watched
tensor, it keeps the op, its attrs and its input/output tensors.

Tensors are passed to the hook as fresh Python wrappers, so a tape keys them by value
identity, not by `id()`: a symbolic tensor by (graph node, output index), an eager tensor
by (buffer address, shape, dtype). The tape keeps every recorded tensor alive, so an address
is never reused while it is recording. Ops that return their input unchanged (Identity,
a same-shape Reshape, ...) share the input's buffer, and so its key: they are not recorded
(their gradient is the identity). A key seen again later (x reshaped there and back) gets a
new version: uses read the newest version, sources the oldest, so the gradient w.r.t. the
original tensor still sums every path.

Calls of a jf.function run their graph without the dispatcher; while a tape records they
are recorded as one op instead (function_calls.py), except calls of functions that draw
random numbers: the tape does not see inside those. Put the tape inside such a function
(recording then happens at trace time, symbolically), as in a training step.
"""
import contextlib

from .. import _C
from ..core.errors import warn
from ..core.nest import flatten, pack_sequence_as
from ..ops import basic_ops as ops
from ..ops import variables as _variables
from . import jacobian as _jacobian
from . import recording as _recording
from .backprop import aggregate, apply_gradient, unconnected_mode
from .registry import OpView
from .shapes import is_float


class _Record:
    __slots__ = ("attrs", "in_ids", "inputs", "out_ids", "outputs", "type")

    def __init__(self, op_type, inputs, attrs, outputs, in_ids, out_ids):
        self.type, self.inputs, self.attrs, self.outputs = op_type, inputs, attrs, outputs
        self.in_ids, self.out_ids = in_ids, out_ids


class GradientTape:
    """Records operations for automatic differentiation (TF's tf.GradientTape).

    with jf.GradientTape() as tape:
        y = x * x            # x a watched tensor, or a jf.Variable read inside
    dy_dx = tape.gradient(y, x)
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._depth = 0
        self._entered = False  # entered at least once (TF: the tape exists)
        self.reset()

    # ---- recording --------------------------------------------------------------------
    def __enter__(self):
        if self._depth:
            raise ValueError("This GradientTape is already recording; it cannot be entered twice")
        self._graph = _C.current_graph()
        self._depth = 1
        self._entered = True
        self._start()
        return self

    def __exit__(self, *exc):
        self._stop()
        self._depth = 0
        return False

    def _start(self):
        _recording.recording().append(self)
        _C.tape_activate(1)

    def _stop(self):
        tapes = _recording.recording()
        if self in tapes:
            tapes.remove(self)
            _C.tape_activate(-1)

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops run inside are not recorded on this tape. TF's errors: RuntimeError for a tape
        that was never entered (or a non-persistent one whose gradient was taken), ValueError
        for one that is not recording now (its context has exited)."""
        if not self._entered or (self._used and not self._persistent):
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        if self not in _recording.recording():
            raise ValueError("Tape is not recording.")
        self._stop()
        try:
            yield
        finally:
            self._start()

    def reset(self):
        """Forgets everything recorded so far (the tape stays active if it was)."""
        self._versions = {}      # key -> [id, ...] (oldest first)
        self._next_id = 0
        self._records = []
        self._var_reads = {}     # variable id -> [tensor id, ...]
        self._watched_vars = {}  # variable id -> Variable
        self._accessed = {}      # variable id -> Variable (watched_variables())
        self._keep = []          # watched tensors, kept alive
        self._used = False
        self._saw_unseen_call = False  # a jf.function call ran that the tape cannot see into

    def watch(self, tensor):
        """Records operations on `tensor` (a tensor, a Variable, or a nested list of them)."""
        for t in flatten(tensor):
            if isinstance(t, _variables.Variable):
                self._watched_vars[t._id] = t
                self._accessed[t._id] = t
                continue
            t = _C.convert_to_tensor(t)
            if not is_float(t):
                warn(f"The dtype of the watched tensor must be floating (e.g. jf.float32), "
                     f"got {t.dtype.name}")
                continue
            k = _recording.key(t)
            if k is not None and k not in self._versions:
                self._versions[k] = [self._new_id()]
                self._keep.append(t)

    def watched_variables(self):
        return list(self._accessed.values())

    def _new_id(self):
        self._next_id += 1
        return self._next_id

    def _lookup(self, t):
        if not is_float(t):
            return None
        v = self._versions.get(_recording.key(t))
        return v[-1] if v else None

    def _record(self, op_type, inputs, attrs, outputs):
        if not outputs:
            return
        first = outputs[0]
        if self._graph is None:
            if first._is_symbolic:  # a trace under an eager tape: the trace's ops, not the tape's
                return
        elif not first._is_symbolic or first._node_ref[0].graph is not self._graph:
            return  # an eager op, or a nested graph's op (cond branch): the If node is recorded
        if op_type == "ReadVariableOp":
            if attrs.get("_node_input") and _recording.key(first) in self._versions:
                return  # an input of an If/While node that the tape saw when it was read
            vid = attrs.get("var_id")
            var = self._watched_vars.get(vid)
            if var is None and self._watch_accessed_variables:
                var = _variables._by_id.get(vid)
                if var is not None and not var.trainable:
                    var = None
            if var is not None and is_float(first):
                self._accessed[vid] = var
                tid = self._new_id()
                self._versions.setdefault(_recording.key(first), []).append(tid)
                self._var_reads.setdefault(vid, []).append(tid)
                self._keep.append(first)
            return
        in_ids = [self._lookup(t) for t in inputs]
        if all(i is None for i in in_ids):
            return
        in_keys = {_recording.key(t) for t, i in zip(inputs, in_ids) if i is not None}
        out_ids = []
        for y in outputs:
            k = _recording.key(y) if is_float(y) else None
            if k is None or k in in_keys:  # not differentiable, or the input itself (alias)
                out_ids.append(None)
                continue
            tid = self._new_id()
            self._versions.setdefault(k, []).append(tid)
            out_ids.append(tid)
        if all(o is None for o in out_ids):
            return
        self._records.append(_Record(op_type, list(inputs), attrs, list(outputs), in_ids, out_ids))

    # ---- differentiation --------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """d(sum of target)/d(source) for each source, in the structure of `sources`."""
        unconnected_gradients = unconnected_mode(unconnected_gradients)
        with self._differentiating() as grad_scope:
            flat = self._gradient(flatten(target), flatten(sources), output_gradients,
                                  grad_scope, unconnected_gradients)
        return pack_sequence_as(sources, flat)

    def jacobian(self, target, sources, unconnected_gradients="none", parallel_iterations=None,
                 experimental_use_pfor=True):
        """d(target)/d(source) for each source: shape target.shape + source.shape. Vectorized
        (jacobian.py) unless experimental_use_pfor=False, which loops over target elements."""
        return _jacobian.jacobian(self, target, sources, unconnected_gradients, experimental_use_pfor)

    def batch_jacobian(self, target, source, unconnected_gradients="none", parallel_iterations=None,
                       experimental_use_pfor=True):
        """Per-example jacobians: target [b, y...] and source [b, x...] give [b, y..., x...],
        assuming target[i] depends on source[i] only."""
        return _jacobian.batch_jacobian(self, target, source, unconnected_gradients, experimental_use_pfor)

    @contextlib.contextmanager
    def _differentiating(self):
        """Around one gradient (or jacobian) computation: TF's non-persistent rule, recording
        paused, the `gradient_tape` name scope (yields its jit-scope suffix); a non-persistent
        tape forgets its records afterwards."""
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                               "of gradients (or jacobians)")
        recording = self in _recording.recording()
        if recording:
            if self._persistent:
                warn("Calling GradientTape.gradient on a persistent tape inside its context "
                     "is less efficient than calling it outside the context (it does not "
                     "record its own gradient computation).")
            self._stop()
        try:
            with _C.name_scope("gradient_tape") as scope:
                yield scope.rstrip("/").replace("/", "_")
        finally:
            if recording:
                self._start()
        self._used = True
        if not self._persistent:
            self._records, self._versions, self._var_reads, self._keep = [], {}, {}, []

    def _source_ids(self, s):
        if isinstance(s, _variables.Variable):
            return list(self._var_reads.get(s._id, ()))
        if s is None:
            return []
        t = _C.convert_to_tensor(s)
        v = self._versions.get(_recording.key(t)) if is_float(t) else None
        return [v[0]] if v else []

    @staticmethod
    def _direct(direct, s):
        """The output gradients of the targets that are `s` itself."""
        if not direct or s is None:
            return []
        if isinstance(s, _variables.Variable):
            return direct.get(("var", s._id), [])
        t = _C.convert_to_tensor(s)
        return direct.get(("key", _recording.key(t)), []) if is_float(t) else []

    def _gradient(self, targets, sources, output_gradients, grad_scope, unconnected):
        if output_gradients is not None:
            output_gradients = flatten(output_gradients)
            if len(output_gradients) != len(targets):
                raise ValueError(f"{len(output_gradients)} output_gradients for {len(targets)} targets")
        grads = {}
        # A target that is itself a source has gradient 1 with respect to it, watched or not
        # (TF matches targets and sources by tensor, and a variable by its handle, not its reads).
        direct = {}  # ("var", id) or ("key", tensor key) -> [output gradient, ...]
        for i, t in enumerate(targets):
            if t is None:
                raise TypeError("GradientTape.gradient: target must be a tensor, got None")
            var = t if isinstance(t, _variables.Variable) else None
            t = _C.convert_to_tensor(t)
            tid = None if var is not None else self._lookup(t)
            g = output_gradients[i] if output_gradients is not None else None
            if tid is None:
                if is_float(t):
                    k = ("var", var._id) if var is not None else ("key", _recording.key(t))
                    g = ops.ones_like(t) if g is None else _C.convert_to_tensor(g, t.dtype)
                    direct.setdefault(k, []).append(g)
                continue
            g = ops.ones_like(t) if g is None else _C.convert_to_tensor(g, t.dtype)
            grads.setdefault(tid, []).append(g)
        source_ids = [self._source_ids(s) for s in sources]
        reach = {i for ids in source_ids for i in ids}
        live = []
        for rec in self._records:
            if any(i in reach for i in rec.in_ids if i is not None):
                live.append(rec)
                reach.update(o for o in rec.out_ids if o is not None)
        for rec in reversed(live):
            out_grads = []
            for o in rec.out_ids:
                gs = grads.get(o) if o is not None else None
                if gs is not None and len(gs) > 1:
                    gs[:] = [aggregate(gs)]
                out_grads.append(gs[0] if gs else None)
            if all(g is None for g in out_grads):
                continue
            node = rec.outputs[0]._node_ref[0] if rec.outputs[0]._is_symbolic else None
            skip = tuple(k for k, i in enumerate(rec.in_ids) if i is None or i not in reach)
            op = OpView(rec.type, node.name if node is not None else rec.type, rec.inputs,
                        rec.outputs, rec.attrs, node, skip)
            for i, g in zip(rec.in_ids, apply_gradient(op, out_grads, grad_scope)):
                if i is not None and g is not None and i in reach:
                    grads.setdefault(i, []).append(g)
        result = []
        for s, ids in zip(sources, source_ids):
            g = aggregate([g for i in ids for g in grads.get(i, [])] + self._direct(direct, s))
            if g is None and unconnected == "zero" and s is not None:
                g = ops.zeros_like(s.read_value() if isinstance(s, _variables.Variable) else s)
            result.append(g)
        if self._saw_unseen_call and any(g is None for g in result):
            warn("GradientTape: a jf.function that draws random numbers ran "
                 "while this eager tape was recording; the tape does not see inside such calls, "
                 "so some gradients are None. Put the tape inside the jf.function.")
        return result
