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
    for axis in range(-2, -rank - 1, -1):
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


@export("signal.overlap_and_add")
def overlap_and_add(signal, frame_step, name=None):
    """Frames [..., frames, frame_length] summed back into one signal with each frame starting
    frame_step samples after the one before."""
    x = _tensor(signal)
    r = _rank(x)
    if r < 2:
        raise ValueError("overlap_and_add needs a signal of rank 2 or more")
    frames, length = x.shape[-2], x.shape[-1]
    if frames is None or length is None:
        raise ValueError("overlap_and_add needs the frame count and length to be known")
    step = int(frame_step)
    out_len = max(0, (frames - 1) * step + length) if frames else 0
    outer = [x.shape[a] if x.shape[a] is not None else _ops.shape(x)[a] for a in range(r - 2)]
    flat = _ops.transpose(_ops.reshape(x, [-1, frames * length]))  # [frames * length, batch]
    ids = (_np.arange(frames)[:, None] * step + _np.arange(length)[None, :]).reshape(-1).astype(_np.int32)
    summed = _array.unsorted_segment_sum(flat, _ops.constant(ids), out_len)
    return _ops.reshape(_ops.transpose(summed), outer + [out_len])


@export("signal.inverse_stft_window_fn")
def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name=None):
    """The window that makes inverse_stft invert stft with forward_window_fn: the forward window
    divided by the sum of its squares over the frames overlapping each sample."""
    step = int(frame_step)

    def window(frame_length, dtype=_dt.float32):
        w = _np.asarray(forward_window_fn(frame_length, dtype=dtype).numpy(), _np.float64)
        n = w.shape[0]
        overlaps = -(-n // step)
        denom = _np.pad(w * w, (0, overlaps * step - n)).reshape(overlaps, step).sum(0)
        return _ops.constant((w / _np.tile(denom, overlaps)[:n]).astype(_dt.as_dtype(dtype).as_numpy_dtype))
    return window


@export("signal.inverse_stft")
def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window, name=None):
    """Signals from their STFTs: each frame's irfft (cropped or padded to frame_length), times
    window_fn's window, overlapped and added."""
    x = _tensor(stfts)
    frame_length = int(frame_length)
    if fft_length is None:
        fft_length = 1 << max(0, math.ceil(math.log2(frame_length)))
    frames = _fit(irfft(x, [int(fft_length)]), -1, frame_length)
    if window_fn is not None:
        frames = frames * window_fn(frame_length, dtype=frames.dtype)
    return overlap_and_add(frames, frame_step)


# ---- mel scale and cepstra ----------------------------------------------------------------------
@export("signal.linear_to_mel_weight_matrix")
def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129, sample_rate=8000, lower_edge_hertz=125.0,
                                upper_edge_hertz=3800.0, dtype=_dt.float32, name=None):
    """[num_spectrogram_bins, num_mel_bins] triangular filters, evenly spaced on the mel scale
    (1127 ln(1 + f / 700)) between the edges; the DC bin gets no weight. Computed in dtype, in
    TF's order of operations."""
    dt = _dt.as_dtype(dtype).as_numpy_dtype
    sr = static_value(sample_rate) if isinstance(sample_rate, Tensor) else sample_rate
    if num_mel_bins <= 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {num_mel_bins}")
    if lower_edge_hertz < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lower_edge_hertz}")
    if lower_edge_hertz >= upper_edge_hertz:
        raise ValueError(f"lower_edge_hertz {lower_edge_hertz} >= upper_edge_hertz {upper_edge_hertz}")
    if sr <= 0.0:
        raise ValueError(f"sample_rate must be positive. Got: {sr}")
    if upper_edge_hertz > sr / 2:
        raise ValueError(f"upper_edge_hertz must not be larger than the Nyquist frequency (sample_rate / 2). "
                         f"Got {upper_edge_hertz} for sample_rate: {sr}")
    def mel(hz):
        return (dt(1127.0) * _np.log1p(hz / dt(700.0))).astype(dt)
    freqs = _np.linspace(dt(0), dt(sr) / dt(2), num_spectrogram_bins, dtype=dt)[1:]
    bins = mel(freqs)[:, None]
    edges = _np.linspace(mel(dt(lower_edge_hertz)), mel(dt(upper_edge_hertz)), num_mel_bins + 2, dtype=dt)
    lower, center, upper = edges[:-2][None, :], edges[1:-1][None, :], edges[2:][None, :]
    weights = _np.maximum(dt(0), _np.minimum((bins - lower) / (center - lower), (upper - bins) / (upper - center)))
    return _ops.constant(_np.pad(weights, [[1, 0], [0, 0]]).astype(dt))


def _dct_matrix(n_in, kind, norm, dtype):
    """[n_in, n_in] float64 matrix M with dct(x) = x @ M for TF's DCT types I-IV."""
    n = _np.arange(n_in)[:, None].astype(_np.float64)
    k = _np.arange(n_in)[None, :].astype(_np.float64)
    N = float(n_in)
    if kind == 1:
        m = 2 * _np.cos(_np.pi * k * n / (N - 1)) if n_in > 1 else _np.ones((1, 1))
        m[0, :] = 1.0
        m[-1, :] = (-1.0) ** k[0]
    elif kind == 2:
        m = 2 * _np.cos(_np.pi * k * (2 * n + 1) / (2 * N))
        if norm == "ortho":
            m[:, 0] *= 0.5 / _np.sqrt(N)
            m[:, 1:] *= 0.5 * _np.sqrt(2.0 / N)
    elif kind == 3:
        m = 2 * _np.cos(_np.pi * n * (2 * k + 1) / (2 * N))
        m[0, :] = 1.0
        if norm == "ortho":
            m[0, :] *= 1.0 / _np.sqrt(N)
            m[1:, :] *= 1.0 / _np.sqrt(2.0 * N)
    else:
        m = 2 * _np.cos(_np.pi * (2 * n + 1) * (2 * k + 1) / (4 * N))
        if norm == "ortho":
            m *= _np.sqrt(1.0 / (2.0 * N))
    return _ops.constant(m.astype(dtype.as_numpy_dtype))


@export("signal.dct")
def dct(input, type=2, n=None, axis=-1, norm=None, name=None):
    """TF's discrete cosine transforms of types I-IV over the innermost dim (n crops or pads it),
    unnormalized or with norm="ortho" (not for type I), as one product with a cosine matrix."""
    if type not in (1, 2, 3, 4):
        raise ValueError("Types I, II, III and IV (I)DCT are supported.")
    if axis != -1:
        raise NotImplementedError(f"axis must be -1. Got: {axis}")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")
    if type == 1 and norm == "ortho":
        raise ValueError("Normalization is not supported for the Type-I DCT.")
    x = _tensor(input)
    if n is not None:
        if n < 1:
            raise ValueError("n should be a positive integer or None")
        x = _fit(x, -1, int(n))
    size = x.shape[-1]
    if size is None:
        raise ValueError("dct needs the innermost dim to be known")
    if type == 1 and size < 2:
        raise ValueError("Type-I DCT requires the dimension to be greater than one.")
    r = _rank(x)
    flat = _ops.reshape(x, [-1, size])
    y = _ops.matmul(flat, _dct_matrix(size, type, norm, x.dtype))
    return _ops.reshape(y, [x.shape[a] if x.shape[a] is not None else _ops.shape(x)[a] for a in range(r - 1)] + [size])


@export("signal.idct")
def idct(input, type=2, n=None, axis=-1, norm=None, name=None):
    """The inverse of dct of the same type and norm (up to TF's scale for norm=None)."""
    return dct(input, type={1: 1, 2: 3, 3: 2, 4: 4}[type], n=n, axis=axis, norm=norm, name=name)


@export("signal.mfccs_from_log_mel_spectrograms")
def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None):
    """The orthonormal type-II DCT of log mel spectrograms, as TF scales it."""
    x = _tensor(log_mel_spectrograms)
    bins = x.shape[-1]
    if bins is None:
        raise ValueError("mfccs_from_log_mel_spectrograms needs the number of mel bins to be known")
    return dct(x, type=2) * float(1.0 / math.sqrt(bins * 2.0))
