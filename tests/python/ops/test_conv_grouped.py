"""Grouped convolutions (a filter whose in_channels divide the input's: nn.conv2d, conv1d,
conv3d, and the transposes' backprop ops) in the five modes against float64 references built
from per-group direct loops (conv_ref.py), float32 on oneDNN and float64 / int32 on the direct
fallback; gradients by finite differences; TF 2.21's error for an output depth the groups do
not divide."""
import conv_ref as R
import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]


def grouped(conv, x, w, *args):
    """The grouped convolution as one `conv` per group on its channel slices, outputs
    concatenated (group-major, as TF orders them)."""
    cg, oc = w.shape[-2], w.shape[-1]
    groups = x.shape[-1] // cg
    mg = oc // groups
    return np.concatenate([conv(x[..., q * cg:(q + 1) * cg], w[..., q * mg:(q + 1) * mg], *args)
                           for q in range(groups)], axis=-1)


# name: (x shape NHWC, filter shape HWIO (in_channels = input's / groups), strides, padding,
# dilations, data_format)
CASES = {
    "two_groups_same": ((2, 6, 5, 4), (3, 3, 2, 6), (1, 1), "SAME", (1, 1), "NHWC"),
    "three_groups_strided": ((1, 7, 8, 6), (2, 3, 2, 3), (2, 3), "VALID", (1, 1), "NHWC"),
    "four_groups_dilated": ((2, 7, 7, 4), (3, 2, 1, 8), (1, 1), "SAME", (2, 2), "NHWC"),
    "explicit": ((1, 5, 6, 6), (2, 2, 3, 4), (1, 2), [(1, 0), (2, 1)], (1, 1), "NHWC"),
    "nchw": ((2, 5, 6, 4), (3, 3, 2, 4), (2, 1), "SAME", (1, 1), "NCHW"),
}


def _tf_padding(padding, fmt):
    if isinstance(padding, str):
        return padding
    spatial = [list(p) for p in padding]
    return [[0, 0], [0, 0], *spatial] if fmt == "NCHW" else [[0, 0], *spatial, [0, 0]]


def _case(name, dtype, rng):
    xs, ws, strides, padding, dil, fmt = CASES[name]
    if dtype == "int32":
        x, w = rng.integers(-3, 4, xs).astype(dtype), rng.integers(-3, 4, ws).astype(dtype)
    else:
        x, w = rng.uniform(-1, 1, xs).astype(dtype), rng.uniform(-1, 1, ws).astype(dtype)
    want = grouped(R.conv2d, x, w, strides, padding, dil)
    if fmt == "NCHW":
        x, want = R.nchw(x), R.nchw(want)
    fn = lambda a, b: jf.nn.conv2d(a, b, list(strides), _tf_padding(padding, fmt), fmt, list(dil))
    return x, w, fn, want


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_conv2d_float32(name, mode, rng):
    x, w, fn, want = _case(name, "float32", rng)
    y = run_mode(mode, fn, jf.constant(x), jf.constant(w))
    assert y.dtype == jf.float32 and y.shape == want.shape
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_conv2d_float64_and_int32(name, mode, rng):
    """float64 and int32 run on the direct loops (oneDNN has neither)."""
    x, w, fn, want = _case(name, "float64", rng)
    y = run_mode(mode, fn, jf.constant(x), jf.constant(w))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    xi, wi, fn, want_i = _case(name, "int32", rng)
    yi = run_mode(mode, fn, jf.constant(xi), jf.constant(wi))
    assert yi.dtype == jf.int32
    np.testing.assert_array_equal(yi.numpy(), want_i.astype(np.int64))


@pytest.mark.parametrize("mode", MODES)
def test_grouped_conv1d(mode, rng):
    x = rng.uniform(-1, 1, (2, 9, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 2, 6)).astype(np.float32)
    want = grouped(R.conv2d, x[:, None], w[None], (1, 2), "SAME", (1, 1))[:, 0]
    y = run_mode(mode, lambda a, b: jf.nn.conv1d(a, b, 2, "SAME"), jf.constant(x), jf.constant(w))
    assert y.shape == want.shape
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
def test_grouped_conv3d(mode, dtype, rng):
    """TF's CPU Conv3D refuses groups; jitflow's oneDNN and direct kernels take them."""
    x = rng.uniform(-1, 1, (2, 4, 5, 4, 4)).astype(dtype)
    w = rng.uniform(-1, 1, (2, 3, 2, 2, 6)).astype(dtype)
    want = grouped(R.conv3d, x, w, (1, 2, 1), "SAME", (1, 1, 1))
    y = run_mode(mode, lambda a, b: jf.nn.conv3d(a, b, [1, 1, 2, 1, 1], "SAME"), jf.constant(x), jf.constant(w))
    assert y.shape == want.shape
    tol = 2e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(y.numpy(), want, rtol=tol, atol=tol)


GRAD_CASES = {
    "same": ((1, 4, 5, 4), (3, 2, 2, 4), (1, 1), "SAME", (1, 1), "NHWC"),
    "strided_dilated": ((2, 6, 5, 6), (2, 2, 2, 3), (2, 1), "VALID", (1, 2), "NHWC"),
    "nchw": ((1, 4, 4, 4), (2, 3, 1, 8), (1, 2), "SAME", (1, 1), "NCHW"),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grouped_conv2d_gradients_by_finite_differences(name, mode, dtype, rng):
    xs, ws, strides, padding, dil, fmt = GRAD_CASES[name]
    x = rng.uniform(-1, 1, xs)
    w = rng.uniform(-1, 1, ws)
    r = rng.standard_normal(grouped(R.conv2d, x, w, strides, padding, dil).shape)
    to = R.nchw if fmt == "NCHW" else (lambda a: a)

    def loss_np(xv, wv):
        return float(np.sum(grouped(R.conv2d, xv, wv, strides, padding, dil) * r))

    def grads(a, b):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            y = jf.nn.conv2d(a, b, list(strides), padding, fmt, list(dil))
            loss = jf.reduce_sum(y * jf.constant(to(r).astype(dtype)))
        return tape.gradient(loss, [a, b])

    gx, gw = run_mode(mode, grads, jf.constant(to(x).astype(dtype)), jf.constant(w.astype(dtype)))
    want_x, want_w = numeric_grad(loss_np, [x, w])
    tol = {"rtol": 2e-4, "atol": 2e-4} if dtype == "float32" else {"rtol": 1e-6, "atol": 1e-8}
    np.testing.assert_allclose(gx.numpy(), to(want_x), **tol)
    np.testing.assert_allclose(gw.numpy(), want_w, **tol)


def test_grouped_conv2d_second_order(rng):
    """d/dw of sum(q * dL/dx): the grouped input gradient's own gradient (a grouped filter
    gradient) against finite differences."""
    x = rng.uniform(-1, 1, (1, 4, 4, 4))
    w = rng.uniform(-1, 1, (2, 2, 2, 4))
    r = rng.standard_normal((1, 3, 3, 4))
    q = rng.standard_normal(x.shape)

    def outer_np(wv):
        # dL/dx of L = sum(conv(x, w) * r), per group from the reference's input gradient.
        return float(np.sum(np.concatenate(
            [R.conv2d_input_grad((1, 4, 4, 2), wv[..., 2 * g:2 * g + 2], r[..., 2 * g:2 * g + 2])
             for g in range(2)], -1) * q))

    xt, wt = jf.constant(x), jf.constant(w)
    with jf.GradientTape() as outer:
        outer.watch(wt)
        with jf.GradientTape() as inner:
            inner.watch(xt)
            loss = jf.reduce_sum(jf.nn.conv2d(xt, wt, 1, "VALID") * jf.constant(r))
        second = jf.reduce_sum(inner.gradient(loss, xt) * jf.constant(q))
    np.testing.assert_allclose(outer.gradient(second, wt).numpy(), numeric_grad(outer_np, [w])[0],
                               rtol=1e-6, atol=1e-8)


def test_grouped_backprop_ops_take_the_full_input_sizes(rng):
    """conv2d_transpose of a grouped filter: the input gradient, whose depth is the groups'
    total (the filter's in_channels times the groups)."""
    dy = rng.uniform(-1, 1, (1, 3, 3, 4))
    w = rng.uniform(-1, 1, (2, 2, 2, 4))
    want = np.concatenate([R.conv2d_input_grad((1, 6, 6, 2), w[..., 2 * g:2 * g + 2], dy[..., 2 * g:2 * g + 2],
                                               (2, 2), "VALID") for g in range(2)], -1)
    y = jf.nn.conv2d_transpose(jf.constant(dy), jf.constant(w), [1, 6, 6, 4], 2, "VALID")
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)


def test_grouped_errors():
    x = jf.zeros([1, 5, 5, 4])
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match="output depth must be evenly divisible by number of groups: 5 vs 2"):
        jf.nn.conv2d(x, jf.zeros([3, 3, 2, 5]), 1, "SAME")
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match="input depth must be evenly divisible by filter depth: 4 vs 3"):
        jf.nn.conv2d(x, jf.zeros([3, 3, 3, 6]), 1, "SAME")


def test_keras_conv2d_groups(rng):
    """Keras's Conv2D(groups=...): a kernel of in_channels / groups, the grouped convolution
    plus bias, and Keras 3.15's ValueErrors."""
    x = rng.uniform(-1, 1, (2, 6, 5, 4)).astype(np.float32)
    layer = jf.keras.layers.Conv2D(6, 3, padding="same", groups=2)
    y = layer(jf.constant(x))
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    assert k.shape == (3, 3, 2, 6) and layer.get_config()["groups"] == 2
    np.testing.assert_allclose(y.numpy(), grouped(R.conv2d, x, k, (1, 1), "SAME", (1, 1)) + b, rtol=2e-5, atol=2e-5)
    with pytest.raises(ValueError, match="number of filters must be evenly divisible by the number of groups"):
        jf.keras.layers.Conv2D(5, 3, groups=2)
    with pytest.raises(ValueError, match="number of input channels must be evenly divisible"):
        jf.keras.layers.Conv2D(6, 3, groups=3)(jf.constant(x))
