"""jf.autodiff.ForwardAccumulator: Jacobian-vector products of what runs inside its block.

jitflow differentiates in reverse only, so a JVP is taken as the derivative of a VJP: with
the block recorded on a persistent tape, J·t = d/du <Jᵀu, t> at any u (the VJP is linear
in u). jvp(y) runs the tape's gradient of y with output gradients u under a second tape
watching u, then that tape's gradient of the sum against the tangents. Costs two reverse
passes per target instead of TF's one forward pass; the values are the same."""
import contextlib

from ..core.nest import flatten, pack_sequence_as
from ..ops import basic_ops as ops
from . import recording as _recording
from .backprop import unconnected_mode
from .tape import GradientTape


class ForwardAccumulator:
    """with ForwardAccumulator(primals, tangents) as acc: ...; acc.jvp(y) is the directional
    derivative of y along `tangents` at `primals` (nests of tensors or variables)."""

    def __init__(self, primals, tangents):
        self._primals = flatten(primals)
        self._tangents = [ops.convert_to_tensor(t) for t in flatten(tangents)]
        if len(self._primals) != len(self._tangents):
            raise ValueError(f"Expected primals and tangents to have the same structure, got "
                             f"{len(self._primals)} primals and {len(self._tangents)} tangents")
        for p, t in zip(self._primals, self._tangents):
            if tuple(p.shape) != tuple(t.shape):
                raise ValueError(f"Tangent {t} was expected to have shape {p.shape} but is instead of shape "
                                 f"{t.shape}")
            if p.dtype != t.dtype:
                raise ValueError(f"Tangent dtype {t.dtype.name} does not match the primal's dtype {p.dtype.name}")
        self._tape = GradientTape(persistent=True, watch_accessed_variables=False)

    def __enter__(self):
        self._tape.__enter__()
        for p in self._primals:
            self._tape.watch(p)
        return self

    def __exit__(self, *exc):
        return self._tape.__exit__(*exc)

    @contextlib.contextmanager
    def _paused(self):
        """The accumulator's own tape does not record the JVP's work (jvp may run in the block)."""
        if self._tape not in _recording.recording():
            yield
            return
        with self._tape.stop_recording():
            yield

    def jvp(self, primals, unconnected_gradients="none"):
        """The JVP of each tensor in `primals` (computed inside the block), in its structure;
        None (or zeros with UnconnectedGradients.ZERO) for one that does not depend on them."""
        mode = unconnected_mode(unconnected_gradients)
        targets = flatten(primals)
        out = []
        with self._paused():
            for y in targets:
                u = ops.zeros_like(y)
                with GradientTape() as outer:
                    outer.watch(u)
                    vjps = self._tape.gradient(y, self._primals, output_gradients=u)
                    dot = [ops.reduce_sum(g * t) for g, t in zip(vjps, self._tangents) if g is not None]
                    total = ops.add_n(dot) if dot else None
                jvp = outer.gradient(total, u) if total is not None else None
                if jvp is None and mode == "zero":
                    jvp = ops.zeros_like(y)
                out.append(jvp)
        return pack_sequence_as(primals, out)
