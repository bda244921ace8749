"""Gradient of TF's CheckNumerics: the incoming gradient, itself checked (TF's
_CheckNumericsGrad), so a NaN or Inf born in backprop is reported where it crosses the check."""
from ..ops import basic_ops as ops
from .grads_math import _grad


@_grad("CheckNumerics")
def _check_numerics_grad(op, g):
    # TF formats the attr as bytes: its message reads "... in gradient. b'<message>'".
    message = op.get_attr("message")
    return [ops.check_numerics(
        g, f"Not a number (NaN) or infinity (Inf) values detected in gradient. {message.encode()!r}")]
