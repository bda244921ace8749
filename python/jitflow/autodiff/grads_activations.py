"""Gradients of TF's activation ops (Relu6, Elu, Selu, Softplus, Softsign, LeakyRelu): the
formulas of TF's Relu6Grad, EluGrad, SeluGrad, SoftplusGrad, SoftsignGrad and LeakyReluGrad
kernels, built from jf ops (so they trace, compile and differentiate again)."""
from ..ops import basic_ops as ops
from .grads_math import _grad

# SELU's constants, as TF's kernels spell them.
_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_SCALE_ALPHA = 1.7580993408473768599402175208123


@_grad("Relu6")
def _relu6_grad(op, g):
    # TF's Relu6Grad reads the output: 0 at both kinks.
    y = op.outputs[0]
    return [ops.where(ops.logical_and(y > 0, y < 6), g, 0.0)]


@_grad("Elu")
def _elu_grad(op, g):
    y = op.outputs[0]
    return [ops.where(y < 0, g * (y + 1.0), g)]


@_grad("Selu")
def _selu_grad(op, g):
    y = op.outputs[0]
    return [ops.where(y < 0, g * (y + _SELU_SCALE_ALPHA), g * _SELU_SCALE)]


@_grad("Softplus")
def _softplus_grad(op, g):
    return [g / (ops.exp(-op.inputs[0]) + 1.0)]


@_grad("Softsign")
def _softsign_grad(op, g):
    return [g / ops.square(ops.abs(op.inputs[0]) + 1.0)]


@_grad("LeakyRelu")
def _leaky_relu_grad(op, g):
    alpha = op.get_attr("alpha", 0.2)
    return [ops.where(op.inputs[0] > 0, g, g * alpha)]
