"""jf.signal: FFTs against numpy.fft (float64), in each kind of function, with gradients
against central differences; framing, windows and the STFT against TF 2.21's outputs
(hard-coded below, taken with tensorflow-cpu 2.21), since their conventions are TF's."""
import numpy as np
import pytest
from conftest import numeric_grad

import jitflow as jf


def _modes(fn, *args):
    """fn's results eagerly, traced, in a jit_scope and with an all-None input_signature."""
    ts = [jf.constant(a) for a in args]

    def scoped(*a):
        with jf.jit_scope():
            return fn(*a)
    sig = [jf.TensorSpec([None] * a.ndim, jf.as_dtype(a.dtype)) for a in args]
    return [fn(*ts), jf.function(fn)(*ts), jf.function(scoped)(*ts), jf.function(fn, input_signature=sig)(*ts)]


def _close(got, want, dtype):
    tol = 2e-5 if dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0))))


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", [1, 6, 7, 16])
def test_fft_and_ifft_match_numpy(dt, n, rng):
    x = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(dt)
    for got in _modes(jf.signal.fft, x):
        assert got.dtype == jf.as_dtype(dt)
        _close(got.numpy(), np.fft.fft(x.astype(np.complex128)), dt)
    for got in _modes(jf.signal.ifft, x):
        _close(got.numpy(), np.fft.ifft(x.astype(np.complex128)), dt)


def test_fft_of_empty_and_scalar_inputs():
    assert jf.signal.fft(jf.zeros([0, 4], jf.complex64)).shape == (0, 4)
    assert jf.signal.fft(jf.zeros([2, 0], jf.complex64)).shape == (2, 0)
    with pytest.raises(jf.errors.InvalidArgumentError, match="at least rank 1"):
        jf.signal.fft(jf.constant(1j))
    with pytest.raises(TypeError):
        jf.signal.fft(jf.constant([1.0, 2.0]))  # TF: FFT takes complex values only


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("length", [1, 5, 8, 12, 17])
def test_rfft_and_irfft_crop_or_pad_like_numpy(dt, length, rng):
    x = rng.standard_normal((2, 12)).astype(dt)
    for got in _modes(lambda v: jf.signal.rfft(v, [length]), x):
        assert got.dtype == (jf.complex64 if dt == np.float32 else jf.complex128)
        _close(got.numpy(), np.fft.rfft(x.astype(np.float64), length), dt)
    spec = np.fft.rfft(x.astype(np.float64)).astype(np.complex64 if dt == np.float32 else np.complex128)
    for got in _modes(lambda v: jf.signal.irfft(v, [length]), spec):
        _close(got.numpy(), np.fft.irfft(spec.astype(np.complex128), length), dt)
    _close(jf.signal.irfft(jf.constant(spec)).numpy(), np.fft.irfft(spec.astype(np.complex128)), dt)
    assert jf.signal.rfft(jf.constant(x), [0]).numpy().tolist() == [[0j], [0j]]


def test_multidimensional_transforms_and_shifts_match_numpy(rng):
    x = rng.standard_normal((2, 5, 6)) + 1j * rng.standard_normal((2, 5, 6))
    r = rng.standard_normal((2, 5, 6))
    _close(jf.signal.fft2d(jf.constant(x)).numpy(), np.fft.fft2(x), np.complex128)
    _close(jf.signal.ifft2d(jf.constant(x)).numpy(), np.fft.ifft2(x), np.complex128)
    _close(jf.signal.fft3d(jf.constant(x)).numpy(), np.fft.fftn(x), np.complex128)
    _close(jf.signal.ifft3d(jf.constant(x)).numpy(), np.fft.ifftn(x), np.complex128)
    _close(jf.signal.rfft2d(jf.constant(r)).numpy(), np.fft.rfft2(r), np.complex128)
    _close(jf.signal.rfft2d(jf.constant(r), [3, 9]).numpy(), np.fft.rfft2(r, (3, 9)), np.complex128)
    spec = np.fft.rfft2(r)
    _close(jf.signal.irfft2d(jf.constant(spec)).numpy(), np.fft.irfft2(spec), np.complex128)
    _close(jf.signal.irfft2d(jf.constant(spec), [5, 7]).numpy(), np.fft.irfft2(spec, (5, 7)), np.complex128)
    _close(jf.signal.rfft3d(jf.constant(r)).numpy(), np.fft.rfftn(r), np.complex128)
    np.testing.assert_array_equal(jf.signal.fftshift(jf.constant(r)).numpy(), np.fft.fftshift(r))
    np.testing.assert_array_equal(jf.signal.ifftshift(jf.constant(r), axes=1).numpy(), np.fft.ifftshift(r, axes=1))


def _real_loss_grad(fn, x, rng):
    """(jitflow's gradient, central differences) of sum(Re f * w1 + Im f * w2) at x, with
    dL/dRe + 1j dL/dIm for complex x (TF's convention)."""
    out = fn(jf.constant(x)).numpy()
    w1, w2 = rng.standard_normal(out.shape), rng.standard_normal(out.shape)
    t = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(t)
        y = fn(t)
        loss = jf.reduce_sum(jf.math.real(y) * w1) + jf.reduce_sum(jf.math.imag(y) * w2)
    got = tape.gradient(loss, t).numpy()

    def loss_np(v):
        y = fn(jf.constant(v)).numpy()
        return float(np.sum(y.real * w1 + y.imag * w2))
    if np.iscomplexobj(x):
        gr, gi = numeric_grad(lambda a, b: loss_np(a + 1j * b), [x.real, x.imag])
        return got, gr + 1j * gi
    return got, numeric_grad(loss_np, [x])[0]


@pytest.mark.parametrize("case", ["fft", "ifft", "fft2d", "rfft_same", "rfft_pad", "rfft_crop", "irfft_even",
                                  "irfft_odd", "rfft2d", "irfft2d"])
def test_gradients_match_finite_differences(case, rng):
    c = rng.standard_normal((2, 8)) + 1j * rng.standard_normal((2, 8))
    r = rng.standard_normal((2, 8))
    fn, x = {
        "fft": (jf.signal.fft, c),
        "ifft": (jf.signal.ifft, c),
        "fft2d": (jf.signal.fft2d, c),
        "rfft_same": (jf.signal.rfft, r),
        "rfft_pad": (lambda v: jf.signal.rfft(v, [11]), r),
        "rfft_crop": (lambda v: jf.signal.rfft(v, [5]), r),
        "irfft_even": (lambda v: jf.signal.irfft(v, [14]), c),
        "irfft_odd": (lambda v: jf.signal.irfft(v, [15]), c),
        "rfft2d": (jf.signal.rfft2d, r),
        "irfft2d": (lambda v: jf.signal.irfft2d(v, [2, 14]), c),
    }[case]
    got, want = _real_loss_grad(fn, x, rng)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_real_fft_gradients_match_tf_2_21():
    r = jf.constant(np.linspace(-1, 1, 6))
    with jf.GradientTape(persistent=True) as t:
        t.watch(r)
        y = jf.signal.rfft(r, [8])
        loss = jf.reduce_sum(jf.math.real(y) * np.arange(5.0) + jf.math.imag(y) * np.arange(5.0) ** 2)
        z = jf.signal.irfft(jf.complex(r, r * 0.5)[:4], [6])
        loss2 = jf.reduce_sum(z * np.arange(6.0))
    np.testing.assert_allclose(t.gradient(loss, r).numpy(), [10.0, -16.4852813742, 10.0, -5.6568542495, 2.0,
                                                             0.4852813742], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(t.gradient(loss2, r).numpy(), [2.5, -0.1339745962, -0.7113248654, -0.5, 0.0, 0.0],
                               rtol=1e-9, atol=1e-9)


# ---- frames, windows, STFT: TF 2.21's values ------------------------------------------------
def test_frame_follows_tf():
    x = jf.constant(np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(jf.signal.frame(x, 4, 3).numpy(), [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]])
    np.testing.assert_array_equal(jf.signal.frame(x, 4, 3, pad_end=True, pad_value=-1).numpy(),
                                  [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9], [9, -1, -1, -1]])
    got = jf.signal.frame(jf.reshape(jf.range(12.0), [3, 4]), 2, 1, axis=0).numpy()
    np.testing.assert_array_equal(got, [[[0, 1, 2, 3], [4, 5, 6, 7]], [[4, 5, 6, 7], [8, 9, 10, 11]]])
    assert jf.signal.frame(x, 20, 3).shape == (0, 20)


def test_windows_follow_tf():
    np.testing.assert_allclose(jf.signal.hann_window(5).numpy(), [0, 0.5, 1, 0.5, 0], atol=1e-7)
    np.testing.assert_allclose(jf.signal.hann_window(5, periodic=False).numpy(), [0, 0.5, 1, 0.5, 0], atol=1e-7)
    np.testing.assert_allclose(jf.signal.hann_window(4).numpy(), [0, 0.5, 1, 0.5], atol=1e-7)
    np.testing.assert_allclose(jf.signal.hamming_window(4).numpy(), [0.08, 0.54, 1, 0.54], atol=1e-7)
    assert jf.signal.hann_window(1).numpy().tolist() == [1.0]
    assert jf.signal.hann_window(4, dtype=jf.float64).dtype == jf.float64


def test_stft_follows_tf():
    s = np.sin(np.arange(16, dtype=np.float64) * 0.7)
    want = [[0.7797748393, -0.6792900571 - 1.8296693226j, 0.2780511714 + 0.797987145j,
             0.0093137568 + 0.0273561798j, 0.0040754186],
            [-1.4694425485, 1.2800845352 + 1.5060448413j, -0.523972051 - 0.6568424187j,
             -0.0175512594 - 0.0225175298j, -0.0076799009],
            [1.9893083558, -1.7329584369 - 1.0083888685j, 0.7093451734 + 0.4397960573j,
             0.0237606207 + 0.0150768594j, 0.0103969298]]
    np.testing.assert_allclose(jf.signal.stft(jf.constant(s), 8, 4).numpy(), want, rtol=1e-8, atol=1e-9)
    assert jf.signal.stft(jf.zeros([2, 100]), 25, 10).shape == (2, 8, 17)
    assert jf.signal.stft(jf.zeros([2, 100]), 25, 10, pad_end=True).shape == (2, 10, 17)
    f = jf.function(lambda v: jf.abs(jf.signal.stft(v, 25, 10)))
    np.testing.assert_allclose(f(jf.constant(np.ones((1, 100), np.float32))).numpy(),
                               np.abs(jf.signal.stft(jf.ones([1, 100]), 25, 10).numpy()), rtol=1e-6)


def test_jit_compile_refuses_the_fft_naming_it(rng):
    with pytest.raises(jf.errors.InvalidArgumentError, match="FFT"):
        jf.function(jf.signal.fft, jit_compile=True)(jf.constant(np.ones(4, np.complex64)))


# TF 2.21's values for x = cos(0.3 * arange(12)).reshape(2, 6), first row.
_X = np.cos(np.arange(12.0) * 0.3).reshape(2, 6)
_DCT = {
    (1, None): [6.6000168552, 2.0146319196, -0.4560901025, 0.2331467651, -0.167075321, 0.1507566223],
    (2, None): [7.6707540569, 2.739252596, -0.651612031, 0.1874659112, -0.1177057024, 0.0359909786],
    (2, "ortho"): [1.5657861151, 0.7907541118, -0.1881041908, 0.0541167471, -0.0339787095, 0.0103897006],
    (3, None): [5.5531548657, 0.647207553, -0.3150823758, 0.1807514481, -0.0966385709, 0.0306070799],
    (3, "ortho"): [1.7226308841, 0.3064058833, 0.0286167086, 0.1717516045, 0.0916760034, 0.1284086588],
    (4, None): [6.1103139933, 0.0749822369, -0.1876245003, 0.0798435786, -0.0972344144, 0.0777075337],
    (4, "ortho"): [1.7638957144, 0.0216455073, -0.0541625279, 0.0230488558, -0.0280691577, 0.0224322328],
}


@pytest.mark.parametrize("kind,norm", sorted(_DCT, key=str))
def test_dct_follows_tf(kind, norm):
    got = jf.signal.dct(jf.constant(_X), type=kind, norm=norm).numpy()
    np.testing.assert_allclose(got[0], _DCT[(kind, norm)], rtol=1e-9, atol=1e-9)
    assert got.shape == (2, 6)


def test_idct_dct_mfcc_and_mel_follow_tf():
    np.testing.assert_allclose(jf.signal.idct(jf.constant(_X), type=2, norm="ortho").numpy()[0], _DCT[(3, "ortho")],
                               rtol=1e-9, atol=1e-9)
    x = jf.constant(_X)
    np.testing.assert_allclose(jf.signal.idct(jf.signal.dct(x, norm="ortho"), norm="ortho").numpy(), _X, atol=1e-12)
    np.testing.assert_allclose(jf.signal.dct(x, n=4).numpy()[0], [6.8045641446, 0.7986719728, -0.2249478297,
                                                                  0.0493968984], rtol=1e-9)
    np.testing.assert_allclose(jf.signal.mfccs_from_log_mel_spectrograms(jf.constant(_X, jf.float32)).numpy()[0],
                               [2.214356, 0.790754, -0.1881042, 0.054116726, -0.033978727, 0.010389663], rtol=2e-6,
                               atol=1e-7)
    m = jf.signal.linear_to_mel_weight_matrix(4, 9, 8000, 100.0, 3000.0)
    want = np.zeros((9, 4), np.float32)
    want[1, :2] = [0.676228, 0.323772]
    want[2, 1:3] = [0.5390681, 0.46093187]
    want[3, 2:] = [0.69730175, 0.30269825]
    want[4, 2:] = [0.028684124, 0.97131586]
    want[5, 3] = 0.47399408
    assert m.dtype == jf.float32
    # float32 arithmetic in another order than TF's linspace: a few float32 ulps of 1
    np.testing.assert_allclose(m.numpy(), want, rtol=2e-6, atol=1e-6)
    with pytest.raises(ValueError, match="Nyquist"):
        jf.signal.linear_to_mel_weight_matrix(4, 9, 8000, 100.0, 5000.0)
    with pytest.raises(ValueError, match="Type-I"):
        jf.signal.dct(x, type=1, norm="ortho")


def test_overlap_and_add_and_inverse_stft_follow_tf():
    np.testing.assert_array_equal(jf.signal.overlap_and_add(jf.constant(np.arange(12.0).reshape(3, 4)), 2).numpy(),
                                  [0, 1, 6, 8, 14, 16, 10, 11])
    np.testing.assert_allclose(jf.signal.inverse_stft_window_fn(3)(8, jf.float64).numpy(),
                               [0.0, 0.1404233979, 0.5109583236, 0.8722604191, 0.958870939, 0.8722604191,
                                0.5109583236, 0.1404233979], rtol=1e-9, atol=1e-12)
    s = np.sin(np.arange(40.0) * 0.37)
    st = jf.signal.stft(jf.constant(s), 8, 2)
    back = jf.signal.inverse_stft(st, 8, 2, window_fn=jf.signal.inverse_stft_window_fn(2)).numpy()
    np.testing.assert_allclose(back[:12], [0.0, 0.0051702833, 0.1123813186, 0.4478493428, 0.8299007038, 0.9475311404,
                                           0.7965654722, 0.5240443417, 0.1805962679, -0.1872946635, -0.5298361409,
                                           -0.8006667822], rtol=1e-8, atol=1e-9)
    # away from the edges the pair reconstructs the signal
    np.testing.assert_allclose(back[8:30], s[8:30], atol=1e-12)


def test_overlap_and_add_gradient_matches_finite_differences(rng):
    x = rng.standard_normal((2, 3, 4))
    got, want = _real_loss_grad(lambda v: jf.signal.overlap_and_add(v, 3), x, rng)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
