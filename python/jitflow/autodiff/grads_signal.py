"""Gradients of the FFTs (TF's fft_ops.py rules): the DFT's adjoint is n times the inverse
DFT; a real FFT's gradient is the real part of the adjoint of pad-or-crop, DFT and keeping
the first half of the bins; an inverse real FFT's is the real FFT of the gradient with the
bins its Hermitian spectrum counts twice weighted 2."""
import numpy as _np

from ..ops import basic_ops as ops
from ..ops import complex_ops as cx
from ..ops import signal_ops as sig
from .registry import register_gradient


def _inner(t):
    n = t.shape[-1]
    if n is None:
        raise ValueError("the FFT's gradient needs the transformed dim to be known")
    return n


@register_gradient("FFT")
def _fft_grad(op, g):
    return [sig.ifft(g) * ops.cast(_inner(g), g.dtype)]


@register_gradient("IFFT")
def _ifft_grad(op, g):
    return [sig.fft(g) / ops.cast(_inner(g), g.dtype)]


@register_gradient("RFFT")
def _rfft_grad(op, g):
    x = op.inputs[0]
    (length,) = sig._lengths(op.inputs[1], 1)
    spectrum = sig._fit(g, -1, length)  # the bins the output dropped: zeros
    back = cx.real(sig.ifft(spectrum)) * float(length)
    return [sig._fit(back, -1, _inner(x)), None]


@register_gradient("IRFFT")
def _irfft_grad(op, g):
    x = op.inputs[0]
    (length,) = sig._lengths(op.inputs[1], 1)
    bins = length // 2 + 1
    weight = _np.full(bins, 2.0)
    weight[0] = 1.0
    if length % 2 == 0:
        weight[-1] = 1.0
    spectrum = sig.rfft(g, [length])
    spectrum = spectrum * ops.cast(ops.constant(weight / length), spectrum.dtype)
    return [sig._fit(spectrum, -1, _inner(x)), None]

