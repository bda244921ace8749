"""The gradient of a py_function node (TF's _EagerPyFuncGrad)."""
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as ops
from ..tracing.py_function import callback, convert_outputs, py_function
from .registry import register_gradient
from .tape import GradientTape


@register_gradient("EagerPyFunc")
def _eager_py_func_grad(op, *grads):
    """TF's _EagerPyFuncGrad: another EagerPyFunc that runs func under a GradientTape on the
    forward inputs and returns the tape's gradients for the incoming output gradients."""
    token = int(op.get_attr("token").numpy())
    fwd = callback(token)
    if fwd is None:
        raise ValueError(f"the Python function of py_function node {op.name} no longer exists")
    xs = list(op.inputs)
    n = len(xs)
    wrt = [i for i, x in enumerate(xs) if x.dtype.is_floating]
    with_grad = [j for j, y in enumerate(op.outputs) if y.dtype.is_floating]
    if not wrt or not with_grad:
        return [None] * n
    dys = [ops.zeros_like(op.outputs[j]) if grads[j] is None else grads[j] for j in with_grad]

    def backward(*args):
        xv, dv = list(args[:n]), list(args[n:])
        with GradientTape() as tape:
            for i in wrt:
                tape.watch(xv[i])
            ys = convert_outputs(fwd, fwd.func(*xv))
        targets = [ys[j] for j in with_grad]
        dx = tape.gradient(targets, [xv[i] for i in wrt], output_gradients=dv)
        return [ops.zeros_like(xv[i]) if d is None else d for i, d in zip(wrt, dx)]

    tout = [TensorSpec(xs[i].shape, xs[i].dtype) for i in wrt]
    dx = py_function(backward, xs + dys, tout)
    out = [None] * n
    for i, d in zip(wrt, dx):
        out[i] = d
    return out
