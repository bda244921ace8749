"""jf.image.resize (bilinear, nearest) and nn.space_to_depth / depth_to_space in the five modes
against float64 numpy references written here (TF 2's half-pixel-centre rule; TF's patch
order), gradients by finite differences, TF 2.21's dtypes and errors."""
import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]


# ---- references ------------------------------------------------------------------------------
def _coords(out, n):
    return (np.arange(out) + 0.5) * (n / out)


def resize_nearest_ref(x, size):
    rows = np.minimum(np.floor(_coords(size[0], x.shape[1])).astype(int), x.shape[1] - 1)
    cols = np.minimum(np.floor(_coords(size[1], x.shape[2])).astype(int), x.shape[2] - 1)
    return x[:, rows][:, :, cols]


def _lerp_axis(x, out, axis):
    n = x.shape[axis]
    src = _coords(out, n) - 0.5
    lo = np.floor(src)
    frac = src - lo
    lo_i = np.maximum(lo.astype(int), 0)
    hi_i = np.minimum(np.ceil(src).astype(int), n - 1)
    shape = [1] * x.ndim
    shape[axis] = out
    a, b = np.take(x, lo_i, axis), np.take(x, hi_i, axis)
    return a + (b - a) * frac.reshape(shape)


def resize_bilinear_ref(x, size):
    return _lerp_axis(_lerp_axis(np.asarray(x, np.float64), size[1], 2), size[0], 1)


def space_to_depth_ref(x, b):
    n, h, w, c = x.shape
    out = np.zeros((n, h // b, w // b, b * b * c), x.dtype)
    for i in range(h // b):
        for j in range(w // b):
            for bi in range(b):
                for bj in range(b):
                    out[:, i, j, (bi * b + bj) * c:(bi * b + bj + 1) * c] = x[:, i * b + bi, j * b + bj, :]
    return out


# ---- resize ------------------------------------------------------------------------------------
SIZES = [((2, 3, 5, 2), (5, 3)), ((1, 7, 4, 3), (4, 6)), ((3, 4, 4, 1), (4, 4))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("shape,size", SIZES)
def test_resize(shape, size, method, mode, rng):
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    y = run_mode(mode, lambda a: jf.image.resize(a, size, method=method), jf.constant(x))
    ref = resize_bilinear_ref if method == "bilinear" else resize_nearest_ref
    assert y.dtype == jf.float32 and y.shape == (shape[0], *size, shape[3])
    np.testing.assert_allclose(y.numpy(), ref(x, size), rtol=1e-5, atol=1e-5)


def test_resize_dtypes_and_a_single_image(rng):
    """bilinear gives float32 for any input (TF), nearest keeps the dtype; a 3-D image works."""
    xi = rng.integers(0, 100, (1, 3, 5, 2)).astype(np.int32)
    near = jf.image.resize(xi, [5, 3], method="nearest")
    assert near.dtype == jf.int32
    np.testing.assert_array_equal(near.numpy(), resize_nearest_ref(xi, (5, 3)))
    x64 = rng.uniform(-1, 1, (1, 3, 5, 2))
    assert jf.image.resize(x64, [5, 3]).dtype == jf.float32
    assert jf.image.resize(jf.constant(xi), [5, 3]).dtype == jf.float32
    # preserve_aspect_ratio: the largest size inside `size` with the image's aspect (TF 2.21's shapes).
    assert jf.image.resize(jf.zeros([1, 4, 6, 1]), [4, 4], preserve_aspect_ratio=True).shape == (1, 3, 4, 1)
    assert jf.image.resize(jf.zeros([1, 5, 2, 1]), [4, 4], preserve_aspect_ratio=True).shape == (1, 4, 2, 1)
    one = jf.image.resize(x64[0].astype(np.float32), [5, 3])
    np.testing.assert_allclose(one.numpy(), resize_bilinear_ref(x64, (5, 3))[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope"])
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_resize_gradient_by_finite_differences(method, mode, rng):
    x = rng.uniform(-1, 1, (1, 3, 4, 2)).astype(np.float32)
    r = rng.standard_normal((1, 5, 3, 2))
    ref = resize_bilinear_ref if method == "bilinear" else resize_nearest_ref

    def grad(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            loss = jf.reduce_sum(jf.image.resize(a, [5, 3], method=method) * jf.constant(r.astype(np.float32)))
        return tape.gradient(loss, a)

    g = run_mode(mode, grad, jf.constant(x))
    want = numeric_grad(lambda v: float(np.sum(ref(v, (5, 3)) * r)), [x])[0]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-5)


def test_resize_gradient_under_jit_compile_is_refused_by_name(rng):
    """The gradient of resize's gathers is an UnsortedSegmentSum, which has no emitter yet:
    jit_compile=True refuses it by name (the forward compiles)."""
    x = jf.constant(rng.uniform(-1, 1, (1, 3, 4, 2)).astype(np.float32))

    def grad(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            loss = jf.reduce_sum(jf.image.resize(a, [5, 3]))
        return tape.gradient(loss, a)

    with pytest.raises(jf.errors.InvalidArgumentError, match="UnsortedSegmentSum"):
        jf.function(grad, jit_compile=True)(x)


def test_resize_errors():
    with pytest.raises(ValueError, match="'images' must have either 3 or 4 dimensions"):
        jf.image.resize(jf.zeros([5, 3]), [2, 2])
    with pytest.raises(ValueError, match="'size' must be a 1-D Tensor of 2 elements"):
        jf.image.resize(jf.zeros([1, 5, 3, 1]), [5])
    with pytest.raises(ValueError, match="Resize method is not implemented: foo"):
        jf.image.resize(jf.zeros([1, 5, 3, 1]), [5, 3], method="foo")
    with pytest.raises(NotImplementedError, match="bicubic"):
        jf.image.resize(jf.zeros([1, 5, 3, 1]), [5, 3], method="bicubic")


# ---- space_to_depth / depth_to_space ------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_space_to_depth_and_back(fmt, mode, rng):
    x = rng.uniform(-1, 1, (2, 4, 6, 3))
    want = space_to_depth_ref(x, 2)
    to = (lambda a: np.transpose(a, (0, 3, 1, 2))) if fmt == "NCHW" else (lambda a: a)
    y = run_mode(mode, lambda a: jf.nn.space_to_depth(a, 2, fmt), jf.constant(to(x)))
    np.testing.assert_array_equal(y.numpy(), to(want))
    back = run_mode(mode, lambda a: jf.nn.depth_to_space(a, 2, fmt), jf.constant(to(want)))
    np.testing.assert_array_equal(back.numpy(), to(x))


def test_space_to_depth_gradient_and_int(rng):
    x = rng.uniform(-1, 1, (1, 4, 2, 2))
    r = rng.standard_normal((1, 2, 1, 8))
    xt = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(xt)
        loss = jf.reduce_sum(jf.nn.space_to_depth(xt, 2) * jf.constant(r))
    want = numeric_grad(lambda v: float(np.sum(space_to_depth_ref(v, 2) * r)), [x])[0]
    np.testing.assert_allclose(tape.gradient(loss, xt).numpy(), want, rtol=1e-7, atol=1e-9)
    xi = np.arange(16, dtype=np.int32).reshape(1, 4, 4, 1)
    np.testing.assert_array_equal(jf.nn.space_to_depth(xi, 2).numpy().ravel(),
                                  [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15])  # TF 2.21's output


def test_space_to_depth_errors():
    E = jf.errors
    with pytest.raises(E.InvalidArgumentError, match="Image width 5 and height 4 should be divisible by block_size: 2"):
        jf.nn.space_to_depth(jf.zeros([1, 4, 5, 3]), 2)
    with pytest.raises(E.InvalidArgumentError, match="'block_size' of 1 must be at least minimum 2"):
        jf.nn.space_to_depth(jf.zeros([1, 4, 4, 3]), 1)
    with pytest.raises(E.InvalidArgumentError, match="Input rank should be 4 instead of 3"):
        jf.nn.space_to_depth(jf.zeros([4, 6, 3]), 2)
    with pytest.raises(E.InvalidArgumentError, match="Input depth dimension 3 should be divisible by: 4"):
        jf.nn.depth_to_space(jf.zeros([1, 4, 6, 3]), 2)
