"""nn.pool with dilations (TF's with_space_to_batch: VALID padding and unit strides) and the
max pool's second-order gradients (MaxPoolGradGrad / MaxPool3DGradGrad) in the five modes
against float64 window loops written here; gradients by finite differences; TF 2.21's
ValueErrors for the dilated forms it refuses."""
import itertools

import conv_ref as R
import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf
from jitflow.ops.dispatch import OP, run

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]


def dilated_pool(x, window, rates, kind):
    """Channels-last x: output o per spatial dim reduces x[o + k * rate] over the window's
    taps k (VALID, stride 1), max or mean."""
    x = np.asarray(x, np.float64)
    out = [s - (w - 1) * r for s, w, r in zip(x.shape[1:-1], window, rates)]
    y = np.zeros((x.shape[0], *out, x.shape[-1]))
    for o in itertools.product(*[range(v) for v in out]):
        taps = np.stack([x[(slice(None), *[oi + ki * r for oi, ki, r in zip(o, k, rates)])]
                         for k in itertools.product(*[range(w) for w in window])])
        y[(slice(None), *o)] = taps.max(0) if kind == "MAX" else taps.mean(0)
    return y


def channels_first(a):
    return np.moveaxis(a, -1, 1)


# name: (x shape channels-last, window, dilations, data_format)
DILATED = {
    "1d": ((2, 9, 3), [2], [3], None),
    "2d": ((2, 7, 8, 2), [2, 3], [2, 2], None),
    "2d_one_dim_dilated": ((1, 6, 7, 3), [3, 2], [1, 3], "NHWC"),
    "2d_nchw": ((2, 7, 6, 3), [2, 2], [3, 2], "NCHW"),
    "3d": ((1, 5, 6, 7, 2), [2, 2, 2], [2, 1, 3], None),
    "divisible": ((1, 8, 6, 2), [2, 2], [2, 3], None),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["MAX", "AVG"])
@pytest.mark.parametrize("name", sorted(DILATED))
def test_dilated_pool_against_window_loops(name, kind, mode, rng):
    shape, window, rates, fmt = DILATED[name]
    x = rng.permutation(int(np.prod(shape))).reshape(shape) / 11.0 - 2.0
    to = channels_first if fmt == "NCHW" else (lambda a: a)
    want = to(dilated_pool(x, window, rates, kind))
    y = run_mode(mode, lambda a: jf.nn.pool(a, window, kind, padding="VALID", data_format=fmt, dilations=rates),
                 jf.constant(to(x).astype(np.float32)))
    assert y.shape == want.shape
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("kind", ["MAX", "AVG"])
def test_dilated_pool_gradients_by_finite_differences(kind, mode, rng):
    x = rng.permutation(2 * 7 * 6 * 2).reshape(2, 7, 6, 2) / 13.0  # distinct: one argmax
    r = rng.standard_normal(dilated_pool(x, [2, 2], [2, 3], kind).shape)

    def grad(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            loss = jf.reduce_sum(jf.nn.pool(a, [2, 2], kind, dilations=[2, 3]) * jf.constant(r))
        return tape.gradient(loss, a)

    g = run_mode(mode, grad, jf.constant(x))
    want = numeric_grad(lambda v: float(np.sum(dilated_pool(v, [2, 2], [2, 3], kind) * r)), [x], eps=1e-4)[0]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-7, atol=1e-8)


def test_dilated_pool_with_unknown_spatial_dims(rng):
    """Traced with every dim unknown: the padding and phases come from the run-time shape."""
    x = rng.uniform(-1, 1, (2, 7, 9, 3)).astype(np.float32)
    f = jf.function(lambda a: jf.nn.pool(a, [3, 2], "MAX", dilations=[2, 2]),
                    input_signature=[jf.TensorSpec([None] * 4, jf.float32)])
    np.testing.assert_allclose(f(jf.constant(x)).numpy(), dilated_pool(x, [3, 2], [2, 2], "MAX"), rtol=1e-6)
    x2 = x[:, :6, :8]
    np.testing.assert_allclose(f(jf.constant(x2)).numpy(), dilated_pool(x2, [3, 2], [2, 2], "MAX"), rtol=1e-6)


def test_dilated_pool_errors_are_tfs():
    x = jf.zeros([1, 6, 7, 2])
    with pytest.raises(ValueError, match="pooling with 'SAME' padding is not implemented for `dilation_rate` > 1"):
        jf.nn.pool(x, [2, 3], "MAX", padding="SAME", dilations=[2, 2])
    with pytest.raises(ValueError, match=r"`strides > 1` not supported in conjunction with `dilation_rate > 1`"):
        jf.nn.pool(x, [2, 2], "AVG", strides=[2, 2], dilations=[2, 2])
    with pytest.raises(ValueError, match=r"`strides` > `window_shape` not supported"):
        jf.nn.pool(x, [2, 2], "AVG", strides=[3, 1])
    with pytest.raises(ValueError, match=r"`len\(dilation_rate\)` should be 2"):
        jf.nn.pool(x, [2, 2], "MAX", dilations=[2])
    with pytest.raises(ValueError, match="all values of `dilation_rate` must be positive"):
        jf.nn.pool(x, [2, 2], "MAX", dilations=[0, 1])


# ---- max pooling's second order ----------------------------------------------------------

def gather_at_argmax(x, gg, k, strides, padding):
    """MaxPoolGradGrad's reference: gg (input-shaped) read at each window's first maximum,
    through the first-order reference (one-hot cotangents pick the argmax)."""
    out = R.max_pool(x, k, strides, padding).shape
    y = np.zeros(out)
    for idx in np.ndindex(*out):
        onehot = np.zeros(out)
        onehot[idx] = 1.0
        y[idx] = np.sum(R.max_pool_grad(x, onehot, k, strides, padding) * gg)
    return y


POOL2 = {
    "same": ((1, 5, 5, 2), (3, 3), (2, 2), "SAME", "NHWC"),
    "valid_overlapping": ((2, 5, 4, 2), (2, 2), (1, 1), "VALID", "NHWC"),
    "nchw": ((1, 5, 6, 3), (3, 2), (2, 1), "SAME", "NCHW"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(POOL2))
def test_max_pool_second_order_gradient(name, mode, rng):
    """d/dr of sum(q * dL/dx) with L = sum(max_pool(x) * r) is MaxPoolGradGrad(x, y, q); its
    gradient in x is zero, as TF's."""
    xs, k, s, pad, fmt = POOL2[name]
    x = rng.permutation(int(np.prod(xs))).reshape(xs) / 7.0 - 3.0
    r = rng.standard_normal(R.max_pool(x, k, s, pad).shape)
    q = rng.standard_normal(xs)
    to = R.nchw if fmt == "NCHW" else (lambda a: a)

    def second(a, rv, qv):
        with jf.GradientTape(persistent=True) as outer:
            outer.watch([a, rv])
            with jf.GradientTape() as inner:
                inner.watch(a)
                loss = jf.reduce_sum(jf.nn.max_pool2d(a, list(k), list(s), pad, fmt) * rv)
            total = jf.reduce_sum(inner.gradient(loss, a) * qv)
        return outer.gradient(total, rv), outer.gradient(total, a)

    gr, gx = run_mode(mode, second, *(jf.constant(to(v)) for v in (x, r, q)))
    np.testing.assert_allclose(gr.numpy(), to(gather_at_argmax(x, q, k, s, pad)), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(gx.numpy(), np.zeros(to(x).shape))


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
def test_max_pool_grad_grad_and_its_gradient(mode, rng):
    """MaxPoolGradGrad against the reference, and its own gradient in its gradient input
    (MaxPoolGrad again) against finite differences of that reference."""
    x = rng.permutation(2 * 6 * 5 * 2).reshape(2, 6, 5, 2) / 9.0
    q = rng.standard_normal(x.shape)
    p = rng.standard_normal(R.max_pool(x, (3, 2), (2, 2), "SAME").shape)
    attrs = {"ksize": [1, 3, 2, 1], "strides": [1, 2, 2, 1], "padding": "SAME", "data_format": "NHWC"}

    def fn(a, qv):
        y = jf.nn.max_pool2d(a, [3, 2], 2, "SAME")
        with jf.GradientTape() as tape:
            tape.watch(qv)
            gg = run(OP["MaxPoolGradGrad"], (a, y, qv), attrs, None)
            loss = jf.reduce_sum(gg * jf.constant(p))
        return gg, tape.gradient(loss, qv)

    gg, dq = run_mode(mode, fn, jf.constant(x), jf.constant(q))
    np.testing.assert_allclose(gg.numpy(), gather_at_argmax(x, q, (3, 2), (2, 2), "SAME"), rtol=1e-12)
    want = numeric_grad(lambda v: float(np.sum(gather_at_argmax(x, v, (3, 2), (2, 2), "SAME") * p)), [q])[0]
    np.testing.assert_allclose(dq.numpy(), want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
def test_max_pool3d_second_order_gradient(mode, rng):
    x = rng.permutation(2 * 4 * 5 * 4 * 2).reshape(2, 4, 5, 4, 2) / 5.0
    r = rng.standard_normal(R.pool3d(x, (2, 3, 2), (2, 2, 1), "SAME", "max").shape)
    q = rng.standard_normal(x.shape)

    def second(a, rv, qv):
        with jf.GradientTape() as outer:
            outer.watch(rv)
            with jf.GradientTape() as inner:
                inner.watch(a)
                loss = jf.reduce_sum(jf.nn.max_pool3d(a, [2, 3, 2], [2, 2, 1], "SAME") * rv)
            total = jf.reduce_sum(inner.gradient(loss, a) * qv)
        return outer.gradient(total, rv)

    got = run_mode(mode, second, *(jf.constant(v) for v in (x, r, q)))
    want = numeric_grad(lambda rv: float(np.sum(R.max_pool3d_grad(x, rv, (2, 3, 2), (2, 2, 1), "SAME") * q)),
                        [r])[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-7, atol=1e-9)


def test_max_pool_grad_grad_shape_errors():
    x = jf.zeros([1, 4, 4, 1])
    y = jf.nn.max_pool2d(x, 2, 2, "VALID")
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID", "data_format": "NHWC"}
    with pytest.raises(jf.errors.InvalidArgumentError, match="grad shape"):
        run(OP["MaxPoolGradGrad"], (x, y, jf.zeros([1, 2, 2, 1])), attrs, None)
