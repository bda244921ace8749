"""What jf.gradients and GradientTape share: calling one op's gradient function under its
`<op name>_grad` name scope and jit attr scope, and summing several gradients (AddN)."""
import enum

from .. import _C
from ..core.export import export
from ..ops import basic_ops as ops
from .registry import get_gradient_function, grad_attr_scope, unmarked_scope


def apply_gradient(op, out_grads, grad_scope):
    """The input gradients of one forward op (an OpView), one per input (None = none). A node's
    `_gradient_op_type` attr names the gradient to use instead of its type's (TF's override)."""
    try:
        fn = get_gradient_function(op.get_attr("_gradient_op_type", op.type))
    except LookupError:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type}). "
                          "Register one with jf.autodiff.register_gradient") from None
    if fn is None:
        return [None] * len(op.inputs)
    with _C.name_scope(op.name + "_grad"), grad_attr_scope(op.node, grad_scope):
        grads = fn(op, *out_grads)
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    if len(grads) != len(op.inputs):
        raise ValueError(f"The gradient function of {op.type} returned {len(grads)} gradients for "
                         f"{len(op.inputs)} inputs (op '{op.name}')")
    return grads


def aggregate(grads):
    """None, the one gradient, or their AddN (unmarked: docs/autodiff.md, 'Gradients of compiled ops')."""
    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    with unmarked_scope():
        return ops.add_n(grads)


@export("UnconnectedGradients")
class UnconnectedGradients(enum.Enum):
    """What a gradient is when the target does not depend on the source: None or zeros."""
    NONE = "none"
    ZERO = "zero"


def unconnected_mode(value):
    """'none' or 'zero' from the enum or its string (TF's ValueError otherwise)."""
    try:
        return UnconnectedGradients(value).value
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}") from None
