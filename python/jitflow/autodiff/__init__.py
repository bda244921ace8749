"""Automatic differentiation: the gradient registry, jf.gradients (symbolic, inside a trace)
and jf.GradientTape (eager and traced). See registry.py for how to add an op's gradient."""
from . import (  # noqa: F401  (importing them registers the gradients)
    custom_gradient,
    function_calls,
    grads_activations,
    grads_array,
    grads_complex,
    grads_control,
    grads_conv,
    grads_debugging,
    grads_index,
    grads_linalg,
    grads_math,
    grads_py_function,
    grads_scan,
    grads_scatter,
    grads_signal,
    grads_stats,
    grads_tensor_array,
    jacobian,
)
from .forward import ForwardAccumulator
from .gradients import gradients
from .registry import (
    OpView,
    get_gradient_function,
    not_differentiable,
    register_gradient,
    registered_op_types,
)
from .tape import GradientTape

__all__ = ["ForwardAccumulator", "GradientTape", "OpView", "get_gradient_function", "gradients", "not_differentiable",
           "register_gradient", "registered_op_types"]
