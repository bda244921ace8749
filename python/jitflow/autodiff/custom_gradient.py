"""tf.stop_gradient, tf.custom_gradient and tf.UnconnectedGradients (docs/autodiff.md,
'Autodiff control').

A custom-gradient call runs `f` with every tape paused (its ops are not recorded) while a
watcher collects the trainable variables it reads, then records one op, "CustomGradient", on
the tapes: its inputs are the call's tensors plus one fresh read of each variable, its
outputs f's results, its gradient the user's grad_fn. Inside a trace the results also pass
through Identity nodes tagged `_custom_gradient`, so `jf.gradients`, which walks the graph
rather than a tape, finds the same gradient (gradients.py, `custom_group`); TF does this with
an IdentityN node and a gradient override.
"""
import contextlib
import functools
import inspect
import itertools

from .. import _C
from ..core.export import export
from ..core.nest import flatten, pack_sequence_as
from ..ops import basic_ops as ops
from ..ops import variables as _variables
from . import recording as _recording
from .registry import custom_sites, register_gradient
from .shapes import is_float


@export("stop_gradient")
def stop_gradient(input, name=None):
    """Its input, through which no gradient flows (TF's StopGradient op)."""
    if isinstance(input, _variables.Variable):
        input = input.read_value()
    return _C.execute("StopGradient", (input,), None, name)


class _VariableWatcher:
    """Sits in the tapes' list while f runs: collects the trainable float variables it reads."""

    def __init__(self):
        self.variables = {}

    def _record(self, op_type, inputs, attrs, outputs):
        if op_type == "ReadVariableOp":
            var = _variables._by_id.get(attrs.get("var_id"))
            if var is not None and var.trainable and var.dtype.is_floating:
                self.variables.setdefault(var._id, var)


@contextlib.contextmanager
def _paused_tapes(watcher):
    """Every recording tape (and outer watcher) paused, `watcher` alone listening."""
    tapes = _recording.recording()
    saved = tapes[:]
    tapes[:] = [watcher]
    _C.tape_activate(1 - len(saved))
    try:
        yield
    finally:
        tapes[:] = saved
        _C.tape_activate(len(saved) - 1)


_site_ids = itertools.count(1)


class _Site:
    """One call of a custom-gradient function: its grad_fn and what it differentiates."""

    def __init__(self, name, grad_fn, num_args, variables, inputs, outputs):
        self.name, self.grad_fn, self.num_args = name, grad_fn, num_args
        self.variables, self.inputs, self.outputs = variables, inputs, outputs

    def gradients(self, output_grads):
        """The user's gradients for the args, then for the variables (one per input)."""
        dys = [g if g is not None else ops.zeros_like(y) for g, y in zip(output_grads, self.outputs)]
        if self.variables:
            result = self.grad_fn(*dys, variables=list(self.variables))
            if not isinstance(result, (list, tuple)) or len(result) != 2:
                raise ValueError(f"custom_gradient '{self.name}': a grad_fn called with variables must "
                                 "return (input gradients, variable gradients)")
            input_grads, var_grads = result
            var_grads = flatten(var_grads)
            if len(var_grads) != len(self.variables):
                raise ValueError("Must return gradient for each variable from @custom_gradient grad_fn.")
        else:
            input_grads, var_grads = self.grad_fn(*dys), []
        input_grads = flatten(input_grads)
        if len(input_grads) != self.num_args:
            raise ValueError(f"custom_gradient function expected to return {self.num_args} gradients, "
                             f"but returned {len(input_grads)} instead.")
        out = []
        for g, x in zip(input_grads + var_grads, self.inputs):
            out.append(None if g is None or not is_float(x) else _C.convert_to_tensor(g, x.dtype))
        return out


@register_gradient("CustomGradient")
def _custom_gradient_grad(op, *grads):
    return op.get_attr("_site").gradients(grads)


def _accepts_variables(fn):
    try:
        spec = inspect.getfullargspec(fn)
    except TypeError:
        return True
    return "variables" in spec.args or "variables" in spec.kwonlyargs or spec.varkw is not None


def _call(f, args, kwargs):
    tracing = _C.is_tracing()
    if tracing and kwargs:
        raise ValueError("The custom_gradient decorator currently supports keywords arguments only "
                         "when eager execution is enabled.")
    inputs = [a.read_value() if isinstance(a, _variables.Variable) else _C.convert_to_tensor(a)
              for a in args]
    watcher = _VariableWatcher()
    with _paused_tapes(watcher):
        result, grad_fn = f(*args, **kwargs)
        arg_ids = {a._id for a in args if isinstance(a, _variables.Variable)}
        variables = [v for i, v in watcher.variables.items() if i not in arg_ids]
        if variables and not _accepts_variables(grad_fn):
            raise TypeError("@tf.custom_gradient grad_fn must accept keyword argument 'variables', "
                            f"since function uses variables: {[v.name for v in variables]}")
        flat = [_C.convert_to_tensor(t) for t in flatten(result)]
        site_id = next(_site_ids)
        if tracing:
            # Tagged identities: the nodes jf.gradients recognises as this call's outputs.
            with _C.attr_scope({"_custom_gradient": site_id}, []):
                flat = [ops.identity(t) for t in flat]
        else:
            # Distinct buffers: an eager tape keys tensors by address, so a result that is an
            # input (or another result) would be that tensor to the tape.
            seen = {_recording.key(t) for t in inputs}
            for i, t in enumerate(flat):
                if _recording.key(t) in seen:
                    flat[i] = stop_gradient(t)
                seen.add(_recording.key(flat[i]))
    reads = [v.read_value() for v in variables]  # recorded as reads by tapes watching them
    site = _Site(getattr(f, "__name__", "custom_gradient"), grad_fn, len(args), variables,
                 inputs + reads, flat)
    if tracing:
        custom_sites[site_id] = site
    _recording.on_op("CustomGradient", inputs + reads, {"_site": site}, flat)
    return pack_sequence_as(result, flat)


@export("custom_gradient")
def custom_gradient(f=None):
    """Decorator: `f(*x)` returns `(y, grad_fn)`; gradients of y w.r.t. x are grad_fn(*dy).
    When f reads trainable jf.Variables, grad_fn is called with `variables=` and returns
    (input gradients, variable gradients)."""
    if f is None:
        return custom_gradient
    return _CustomGradientFunction(f)


class _CustomGradientFunction:
    """The decorated function; on a class, a method whose `self` is not differentiated (TF's
    Bind)."""

    def __init__(self, f, instance=None):
        functools.update_wrapper(self, f)
        self._f, self._instance = f, instance

    def __call__(self, *args, **kwargs):
        if self._instance is None:
            return _call(self._f, args, kwargs)
        f, instance = self._f, self._instance
        return _call(functools.wraps(f)(lambda *a, **k: f(instance, *a, **k)), args, kwargs)

    def __get__(self, instance, owner=None):
        return self if instance is None else _CustomGradientFunction(self._f, instance)
