"""Gradients of the ops that build and take apart complex numbers (TF's math_grad.py
formulas): a real loss's gradient with respect to a complex value is the conjugate
Wirtinger derivative, as TF defines it."""
from ..ops import basic_ops as ops
from ..ops import complex_ops as cx
from .registry import register_gradient
from .shapes import unbroadcast


@register_gradient("Complex")
def _complex_grad(op, g):
    re, im = op.inputs
    return [unbroadcast(cx.real(g), re, im), unbroadcast(cx.imag(g), im, re)]


@register_gradient("Real")
def _real_grad(op, g):
    return [cx.complex(g, ops.zeros_like(g))]


@register_gradient("Imag")
def _imag_grad(op, g):
    return [cx.complex(ops.zeros_like(g), g)]


@register_gradient("Conj")
def _conj_grad(op, g):
    return [cx.conj(g)]


@register_gradient("Angle")
def _angle_grad(op, g):
    x = op.inputs[0]
    inv = 1.0 / cx.complex(cx.imag(x), cx.real(x))
    return [-cx.complex(g, ops.zeros_like(g)) * inv]


@register_gradient("ComplexAbs")
def _complex_abs_grad(op, g):
    # g * x / |x|, and 0 where x is 0 (TF's div_no_nan).
    y = op.outputs[0]
    scale = ops.where(ops.equal(y, 0.0), ops.zeros_like(g), g / ops.where(ops.equal(y, 0.0), ops.ones_like(y), y))
    return [cx.complex(scale, ops.zeros_like(scale)) * op.inputs[0]]
