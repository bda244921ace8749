"""tf.signal: FFTs (the 1-D ops over the innermost dim; the 2-D and 3-D transforms apply them
along each axis, which is the same transform), fftshift, framing, windows and the short-time
Fourier transform, with TF's signatures and defaults."""
import math

import numpy as _np

from .._C import Tensor
from ..core import dtypes as _dt
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from . import scatter_ops as _scatter
from .dispatch import OP, run, static_value, to_tensor


def _tensor(x):
    return x if isinstance(x, Tensor) else to_tensor(x)


def _rank(x):
    r = x.shape.rank
    if r is None:
        raise ValueError("jf.signal needs the input's rank to be known")
    return r


def _along(x, axis, fn):
    """fn (an innermost-dim transform) applied along `axis` (negative) of x."""
    r = _rank(x)
    a = axis % r
    if a == r - 1:
        return fn(x)
    perm = list(range(r))
    perm[a], perm[-1] = perm[-1], perm[a]
    return _ops.transpose(fn(_ops.transpose(x, perm)), perm)


def _dim(x, axis):
    """The dim of x along axis: an int when known, else a scalar int32 tensor."""
    d = x.shape[axis]
    return d if d is not None else _ops.shape(x)[axis]


def _fit(x, axis, length):
    """x cropped or zero-padded along axis to `length` (an int)."""
    n = x.shape[axis]
    if n is not None and n == length:
        return x
    r = _rank(x)
    a = axis % r
    if n is not None and n > length:
        begin, size = [0] * r, [-1] * r
        size[a] = length
        return _scatter.slice(x, begin, size)
    pad = [[0, 0] for _ in range(r)]
    pad[a][1] = (length - n) if n is not None else _ops.maximum(length - _ops.shape(x)[a], 0)
    if n is None:
        begin, size = [0] * r, [-1] * r
        size[a] = _ops.minimum(_ops.shape(x)[a], length)
        x = _scatter.slice(x, begin, size)
    return _array.pad(x, pad)


def _lengths(fft_length, rank):
    """fft_length as a list of `rank` ints (it must be known when tracing, as TF's shapes need it)."""
    v = static_value(fft_length) if isinstance(fft_length, Tensor) else fft_length
    if v is None:
        raise ValueError("fft_length must be known when the transform is built")
    v = [int(i) for i in _np.asarray(v).reshape(-1)]
    if len(v) != rank:
        raise ValueError(f"fft_length must have {rank} element(s), got {v}")
    return v


@export("signal.fft")
def fft(input, name=None):
    """The DFT of a complex tensor over its innermost dim."""
    return run(OP["FFT"], (_tensor(input),), None, name)


@export("signal.ifft")
def ifft(input, name=None):
    """The inverse DFT (scaled by 1 / n) over the innermost dim."""
    return run(OP["IFFT"], (_tensor(input),), None, name)


def _nd(x, rank, fn):
    for axis in range(-1, -rank - 1, -1):
        x = _along(x, axis, fn)
    return x


@export("signal.fft2d")
def fft2d(input, name=None):
    return _nd(_tensor(input), 2, fft)


@export("signal.ifft2d")
def ifft2d(input, name=None):
    return _nd(_tensor(input), 2, ifft)


@export("signal.fft3d")
def fft3d(input, name=None):
    return _nd(_tensor(input), 3, fft)


@export("signal.ifft3d")
def ifft3d(input, name=None):
    return _nd(_tensor(input), 3, ifft)


def _rfft1(x, length, name=None):
    return run(OP["RFFT"], (x, _ops.constant([length], _dt.int32)), None, name)


def _irfft1(x, length, name=None):
    return run(OP["IRFFT"], (x, _ops.constant([length], _dt.int32)), None, name)


def _default_lengths(x, rank, inverse):
    dims = [x.shape[a] for a in range(-rank, 0)]
    if any(d is None for d in dims):
        raise ValueError("fft_length is needed when the input's inner dims are not known")
    if inverse:
        dims[-1] = 2 * (dims[-1] - 1)
    return dims


@export("signal.rfft")
def rfft(input_tensor, fft_length=None, name=None):
    """The first fft_length / 2 + 1 bins of the DFT of a real signal's innermost dim (cropped or
    zero-padded to fft_length; its own length by default)."""
    x = _tensor(input_tensor)
    (length,) = _lengths(fft_length, 1) if fft_length is not None else _default_lengths(x, 1, False)
    return _rfft1(x, length, name)


@export("signal.irfft")
def irfft(input_tensor, fft_length=None, name=None):
    """The real signal of length fft_length (2 * (bins - 1) by default) whose half spectrum is
    the innermost dim."""
    x = _tensor(input_tensor)
    (length,) = _lengths(fft_length, 1) if fft_length is not None else _default_lengths(x, 1, True)
    return _irfft1(x, length, name)


def _rfft_nd(x, rank, fft_length):
    lengths = _lengths(fft_length, rank) if fft_length is not None else _default_lengths(x, rank, False)
    for axis, n in zip(range(-rank, -1), lengths):
        x = _fit(x, axis, n)
    y = _rfft1(x, lengths[-1])
    for axis, n in zip(range(-2, -rank - 1, -1), reversed(lengths[:-1])):
        y = _along(y, axis, fft)
    return y


def _irfft_nd(x, rank, fft_length):
    lengths = _lengths(fft_length, rank) if fft_length is not None else _default_lengths(x, rank, True)
    for axis, n in zip(range(-rank, -1), lengths):
        x = _along(_fit(x, axis, n), axis, ifft)
    return _irfft1(x, lengths[-1])


@export("signal.rfft2d")
def rfft2d(input_tensor, fft_length=None, name=None):
    return _rfft_nd(_tensor(input_tensor), 2, fft_length)


@export("signal.irfft2d")
def irfft2d(input_tensor, fft_length=None, name=None):
    return _irfft_nd(_tensor(input_tensor), 2, fft_length)


@export("signal.rfft3d")
def rfft3d(input_tensor, fft_length=None, name=None):
    return _rfft_nd(_tensor(input_tensor), 3, fft_length)


@export("signal.irfft3d")
def irfft3d(input_tensor, fft_length=None, name=None):
    return _irfft_nd(_tensor(input_tensor), 3, fft_length)


def _shift(x, axes, sign):
    x = _tensor(x)
    r = _rank(x)
    axes = list(range(r)) if axes is None else ([axes] if isinstance(axes, int) else list(axes))
    shifts = [sign * (x.shape[a] // 2) for a in axes]
    return _array.roll(x, shifts, axes)


@export("signal.fftshift")
def fftshift(x, axes=None, name=None):
    """The zero-frequency bin moved to the middle (numpy's fftshift)."""
    return _shift(x, axes, 1)


@export("signal.ifftshift")
def ifftshift(x, axes=None, name=None):
    """fftshift undone."""
    return _shift(x, axes, -1)


# ---- framing, windows, the short-time Fourier transform ------------------------------------
@export("signal.frame")
def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """Frames of frame_length samples every frame_step samples along axis: that dim becomes
    [frames, frame_length]. With pad_end the signal is padded with pad_value so that every
    sample starts a frame's worth."""
    x = _tensor(signal)
    r = _rank(x)
    a = axis % r
    n = x.shape[a]
    if n is None:
        raise ValueError("frame needs the framed dim to be known")
    frame_length, frame_step = int(frame_length), int(frame_step)
    if pad_end:
        frames = -(-n // frame_step)
        pad_to = max((frames - 1) * frame_step + frame_length, n)
        pads = [[0, 0] for _ in range(r)]
        pads[a][1] = pad_to - n
        x = _array.pad(x, pads, constant_values=pad_value)
    else:
        frames = max(0, (n - frame_length) // frame_step + 1) if n >= frame_length else 0
    idx = (_np.arange(frames)[:, None] * frame_step + _np.arange(frame_length)[None, :]).astype(_np.int32)
    return _array.gather(x, _ops.constant(idx), axis=a)


def _window(window_length, periodic, dtype, a, b):
    n = int(static_value(window_length) if isinstance(window_length, Tensor) else window_length)
    dt = _dt.as_dtype(dtype)
    if n == 1:
        return _ops.ones([1], dt)
    denom = n - 1 + (1 if periodic and n % 2 == 0 else 0)  # TF: periodic changes even lengths only
    k = _np.arange(n, dtype=_np.float64)
    return _ops.constant((a - b * _np.cos(2 * math.pi * k / denom)).astype(dt.as_numpy_dtype))


@export("signal.hann_window")
def hann_window(window_length, periodic=True, dtype=_dt.float32, name=None):
    return _window(window_length, periodic, dtype, 0.5, 0.5)


@export("signal.hamming_window")
def hamming_window(window_length, periodic=True, dtype=_dt.float32, name=None):
    return _window(window_length, periodic, dtype, 0.54, 0.46)


@export("signal.stft")
def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window, pad_end=False, name=None):
    """rfft of the windowed frames of the signals' innermost dim; fft_length defaults to the
    smallest power of 2 holding a frame."""
    x = _tensor(signals)
    frame_length = int(frame_length)
    if fft_length is None:
        fft_length = 1 << max(0, math.ceil(math.log2(frame_length)))
    frames = frame(x, frame_length, frame_step, pad_end=pad_end)
    if window_fn is not None:
        frames = frames * window_fn(frame_length, dtype=x.dtype)
    return rfft(frames, [int(fft_length)])
