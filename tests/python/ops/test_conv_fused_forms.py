"""The fused convolutions beyond Conv2D: a float32 DepthwiseConv2dNative, Conv3D or
conv2d_transpose with its bias add, residual add and activation as oneDNN post-ops
(FusedDepthwiseConv2dNative, FusedConv3D, FusedConv2DBackpropInput), and an inference batch
norm after any of them (x * scale + shift, Keras' (x - mean) * inv + beta) folded in as
per-channel post-ops; against float64 numpy references, with conv_postop_runs proving the fused
node ran and the node named in the cluster."""

import conv_ref as R
import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf


def _postop_runs():
    return jf.debugging.stats()["conv_postop_runs"]


def _f32(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _cluster_ops(fn, *args):
    cf = jf.function(fn, jit_compile=True).get_concrete_function(*args)
    return [op for c in cf.clusters for op in c.ops]


def _check(mode, fn, args, want, fused, tol=3e-5):
    tensors = [jf.constant(a) for a in args]
    before = _postop_runs()
    y = run_mode(mode, fn, *tensors)
    assert _postop_runs() > before, "the fused node did not run"
    np.testing.assert_allclose(y.numpy(), want, rtol=tol, atol=tol)
    if mode == "jit_compile":
        assert fused in _cluster_ops(fn, *tensors)


MODES = ["function", "jit_scope", "jit_compile"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strides", [1, 2])
def test_depthwise_bias_relu(mode, strides, rng):
    x, w, b = _f32(rng, 2, 7, 6, 3), _f32(rng, 3, 3, 3, 2), _f32(rng, 6)
    want = np.maximum(R.depthwise(x, w, (strides, strides), "SAME") + b, 0)
    _check(
        mode,
        lambda a, k, v: jf.nn.relu(
            jf.nn.bias_add(jf.nn.depthwise_conv2d(a, k, [1, strides, strides, 1], "SAME"), v)
        ),
        (x, w, b),
        want,
        "FusedDepthwiseConv2dNative",
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["NDHWC", "NCDHW"])
def test_conv3d_bias_residual_elu(mode, fmt, rng):
    x, w, b = _f32(rng, 2, 4, 5, 6, 3), _f32(rng, 2, 3, 3, 3, 4), _f32(rng, 4)
    conv = R.conv3d(x, w, (1, 2, 1), "SAME")
    r = _f32(rng, *conv.shape, lo=-2, hi=2)
    pre = conv + b + r
    want = np.where(pre > 0, pre, np.expm1(pre))
    strides = [1, 1, 2, 1, 1]
    if fmt == "NCDHW":
        x, r, want = (np.ascontiguousarray(np.moveaxis(t, -1, 1)) for t in (x, r, want))
        strides = [1, 1, 1, 2, 1]
    _check(
        mode,
        lambda a, k, v, res: jf.nn.elu(
            jf.nn.bias_add(jf.nn.conv3d(a, k, strides, "SAME", data_format=fmt), v, data_format=fmt) + res
        ),
        (x, w, b, r),
        want,
        "FusedConv3D",
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "padding,strides,size", [("SAME", 2, 9), ("VALID", 2, 9), ("SAME", 1, 5), ("VALID", 3, 9)]
)
def test_conv2d_transpose_bias_activation(mode, padding, strides, size, rng):
    k = 3
    out_hw = R.out_and_pad(size, k, strides, 1, padding)[0]
    dy, w, b = _f32(rng, 2, out_hw, out_hw, 5), _f32(rng, k, k, 4, 5), _f32(rng, 4)
    want = np.tanh(R.conv2d_input_grad((2, size, size, 4), w, dy, (strides, strides), padding) + b)
    _check(
        mode,
        lambda g, f, v: jf.math.tanh(
            jf.nn.bias_add(jf.nn.conv2d_transpose(g, f, [2, size, size, 4], strides, padding), v)
        ),
        (dy, w, b),
        want,
        "FusedConv2DBackpropInput",
    )


def test_conv2d_transpose_nchw_and_dilated(rng):
    dy, w, b = _f32(rng, 2, 4, 3, 5), _f32(rng, 3, 2, 3, 5), _f32(rng, 3)
    want = np.maximum(R.conv2d_input_grad((2, 8, 6, 3), w, dy, (1, 1), "VALID", (2, 3)) + b, 0)
    _check(
        "jit_compile",
        lambda g, f, v: jf.nn.relu(
            jf.nn.bias_add(jf.nn.conv2d_transpose(g, f, [2, 8, 6, 3], 1, "VALID", dilations=[1, 2, 3, 1]), v)
        ),
        (dy, w, b),
        want,
        "FusedConv2DBackpropInput",
    )
    dy, w = _f32(rng, 2, 4, 3, 4), _f32(rng, 3, 3, 3, 4)
    want = np.maximum(
        R.nchw(R.conv2d_input_grad((2, 8, 6, 3), w, dy, (2, 2), "SAME")) + b.reshape(1, 3, 1, 1), 0
    )
    _check(
        "jit_compile",
        lambda g, f, v: jf.nn.relu(
            jf.nn.bias_add(
                jf.nn.conv2d_transpose(g, f, [2, 3, 8, 6], 2, "SAME", data_format="NCHW"),
                v,
                data_format="NCHW",
            )
        ),
        (R.nchw(dy), w, b),
        want,
        "FusedConv2DBackpropInput",
    )


def test_conv2d_transpose_oneDNN_cannot_cover_is_not_fused(rng):
    """VALID, stride 2, an output one row past what the last window reaches (TF allows it; a
    deconvolution cannot): runs unfused, same values."""
    dy, w, b = _f32(rng, 2, 3, 3, 5), _f32(rng, 3, 3, 4, 5), _f32(rng, 4)
    want = np.maximum(R.conv2d_input_grad((2, 8, 8, 4), w, dy, (2, 2), "VALID") + b, 0)
    before = _postop_runs()
    y = jf.function(
        lambda g, f, v: jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d_transpose(g, f, [2, 8, 8, 4], 2, "VALID"), v)),
        jit_compile=True,
    )(*(jf.constant(t) for t in (dy, w, b)))
    assert _postop_runs() == before
    np.testing.assert_allclose(y.numpy(), want, rtol=3e-5, atol=3e-5)


def _bn(rng, c):
    mean, var = _f32(rng, c), _f32(rng, c, lo=0.2, hi=2.0)
    gamma, beta = _f32(rng, c, lo=0.5, hi=1.5), _f32(rng, c)
    return mean, var, gamma, beta


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("head", ["conv2d", "depthwise", "conv3d", "transpose"])
def test_batch_norm_folds_into_the_convolution(mode, head, rng):
    """tf.nn.batch_normalization (x * inv + (beta - mean * inv)) after a convolution and its
    bias, then relu: three per-channel post-ops and the activation."""
    if head == "conv2d":
        x, w = _f32(rng, 2, 6, 5, 3), _f32(rng, 3, 3, 3, 4)
        conv, c = R.conv2d(x, w, (1, 1), "SAME"), 4
        op = lambda a, k: jf.nn.conv2d(a, k, 1, "SAME")
        fused = "FusedConv2D"
    elif head == "depthwise":
        x, w = _f32(rng, 2, 6, 5, 3), _f32(rng, 3, 3, 3, 2)
        conv, c = R.depthwise(x, w, (1, 1), "SAME"), 6
        op = lambda a, k: jf.nn.depthwise_conv2d(a, k, [1, 1, 1, 1], "SAME")
        fused = "FusedDepthwiseConv2dNative"
    elif head == "conv3d":
        x, w = _f32(rng, 2, 3, 5, 4, 3), _f32(rng, 2, 3, 3, 3, 4)
        conv, c = R.conv3d(x, w, (1, 1, 1), "SAME"), 4
        op = lambda a, k: jf.nn.conv3d(a, k, [1] * 5, "SAME")
        fused = "FusedConv3D"
    else:
        x, w = _f32(rng, 2, 3, 3, 5), _f32(rng, 3, 3, 4, 5)
        conv, c = R.conv2d_input_grad((2, 6, 6, 4), w, x, (2, 2), "SAME"), 4
        op = lambda a, k: jf.nn.conv2d_transpose(a, k, [2, 6, 6, 4], 2, "SAME")
        fused = "FusedConv2DBackpropInput"
    b = _f32(rng, c)
    mean, var, gamma, beta = _bn(rng, c)
    inv = gamma / np.sqrt(var.astype(np.float64) + 1e-3)
    want = np.maximum((conv + b) * inv + (beta - mean * inv), 0)

    def step(a, k, v, m, s2, g, o):
        return jf.nn.relu(jf.nn.batch_normalization(jf.nn.bias_add(op(a, k), v), m, s2, o, g, 1e-3))

    _check(mode, step, (x, w, b, mean, var, gamma, beta), want, fused, tol=1e-4)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_keras_style_batch_norm_without_bias(fmt, rng):
    """(conv - mean) * inv + beta with no bias (Keras' BatchNormalization after a bias-free
    Conv2D): subtract, multiply and add per channel, broadcast as [C] or [C, 1, 1]."""
    x, w = _f32(rng, 2, 6, 5, 3), _f32(rng, 3, 3, 3, 4)
    mean, var, gamma, beta = _bn(rng, 4)
    inv = (gamma / np.sqrt(var.astype(np.float64) + 1e-3)).astype(np.float32)
    conv = R.conv2d(x, w, (1, 1), "SAME")
    want = np.maximum((conv - mean) * inv.astype(np.float64) + beta, 0)
    shape = [4, 1, 1] if fmt == "NCHW" else [4]
    if fmt == "NCHW":
        x, want = R.nchw(x), R.nchw(want)

    def step(a, k, m, i, o):
        h = jf.nn.conv2d(a, k, 1, "SAME", data_format=fmt)
        return jf.nn.relu((h - jf.reshape(m, shape)) * jf.reshape(i, shape) + jf.reshape(o, shape))

    _check("jit_compile", step, (x, w, mean, inv, beta), want, "FusedConv2D")
    rows = {
        r.op: r
        for r in jf.explain(
            jf.function(step, jit_compile=True), *(jf.constant(t) for t in (x, w, mean, inv, beta))
        )
    }
    for op in ("Conv2D", "Sub", "Mul", "AddV2", "Relu"):
        assert "fused into FusedConv2D" in rows[op].reason, rows[op]


def test_keras_model_inference_fuses_conv_and_batch_norm(rng):
    layers = jf.keras.layers
    model = jf.keras.Sequential(
        [
            layers.Input((8, 8, 3)),
            layers.Conv2D(4, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
        ]
    )
    bn = model.layers[1]
    bn.moving_mean.assign(_f32(rng, 4))
    bn.moving_variance.assign(_f32(rng, 4, lo=0.5, hi=2.0))
    bn.gamma.assign(_f32(rng, 4, lo=0.5, hi=1.5))
    bn.beta.assign(_f32(rng, 4))
    x = _f32(rng, 2, 8, 8, 3)
    kernel = model.layers[0].kernel.numpy()
    inv = bn.gamma.numpy() / np.sqrt(bn.moving_variance.numpy().astype(np.float64) + bn.epsilon)
    want = np.maximum(
        (R.conv2d(x, kernel, (1, 1), "SAME") - bn.moving_mean.numpy()) * inv + bn.beta.numpy(), 0
    )
    f = jf.function(lambda t: model(t, training=False), jit_compile=True)
    before = _postop_runs()
    y = f(jf.constant(x))
    assert _postop_runs() > before
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)


def test_channel_ops_that_do_not_fuse(rng):
    """A vector that is not one per channel (a [W] broadcast in NCHW, a [1] scalar-like),
    a Sub with the convolution on the right: not fused, the same values."""
    x, w = _f32(rng, 2, 6, 5, 3), _f32(rng, 3, 3, 3, 4)
    conv = R.conv2d(x, w, (1, 1), "SAME")
    v5, v1 = _f32(rng, 5), _f32(rng, 1)
    cases = {
        "width_vector_nchw": (
            lambda a, k: jf.nn.relu(jf.nn.conv2d(a, k, 1, "SAME", data_format="NCHW") * jf.constant(v5)),
            np.maximum(R.nchw(conv) * v5, 0),
            True,
        ),
        "scalar_like": (
            lambda a, k: jf.nn.relu(jf.nn.conv2d(a, k, 1, "SAME") * jf.constant(v1)),
            np.maximum(conv * v1, 0),
            False,
        ),
        "reversed_sub": (
            lambda a, k: jf.nn.relu(jf.constant(np.ones(4, np.float32)) - jf.nn.conv2d(a, k, 1, "SAME")),
            np.maximum(1 - conv, 0),
            False,
        ),
    }
    for name, (fn, want, nchw) in cases.items():
        before = _postop_runs()
        y = jf.function(fn, jit_compile=True)(jf.constant(R.nchw(x) if nchw else x), jf.constant(w))
        assert _postop_runs() == before, name
        np.testing.assert_allclose(y.numpy(), want, rtol=3e-5, atol=3e-5, err_msg=name)


@pytest.mark.parametrize("head", ["depthwise", "conv3d", "transpose"])
def test_training_steps_keep_their_gradients(head, rng):
    """The forward fuses (its relu's gradient reads the fused node's output); the filter and
    bias gradients against float64 references."""
    if head == "depthwise":
        x, w = _f32(rng, 2, 6, 5, 3), _f32(rng, 3, 3, 3, 2)
        pre_conv = R.depthwise(x, w, (1, 1), "SAME")

        def op(a, k):
            return jf.nn.depthwise_conv2d(a, k, [1, 1, 1, 1], "SAME")

        def filter_grad(g):
            return R.depthwise_filter_grad(x, w.shape, g, (1, 1), "SAME")
    elif head == "conv3d":
        x, w = _f32(rng, 2, 3, 5, 4, 3), _f32(rng, 2, 3, 3, 3, 4)
        pre_conv = R.conv3d(x, w, (1, 1, 1), "SAME")

        def op(a, k):
            return jf.nn.conv3d(a, k, [1] * 5, "SAME")

        def filter_grad(g):
            return R.conv3d_filter_grad(x, w.shape, g, (1, 1, 1), "SAME")
    else:
        x, w = _f32(rng, 2, 3, 3, 5), _f32(rng, 3, 3, 4, 5)
        pre_conv = R.conv2d_input_grad((2, 6, 6, 4), w, x, (2, 2), "SAME")

        def op(a, k):
            return jf.nn.conv2d_transpose(a, k, [2, 6, 6, 4], 2, "SAME")

        def filter_grad(g):  # conv2d_transpose's filter gradient: its input convolved with g
            return R.conv2d_filter_grad(g, w.shape, x, (2, 2), "SAME")

    b = _f32(rng, pre_conv.shape[-1])
    q = rng.standard_normal(pre_conv.shape)

    def step(a, k, v):
        with jf.GradientTape() as tape:
            tape.watch([k, v])
            y = jf.nn.relu(jf.nn.bias_add(op(a, k), v))
            loss = jf.reduce_sum(y * jf.constant(q.astype(np.float32)))
        return [y, *tape.gradient(loss, [k, v])]

    before = _postop_runs()
    y, gk, gv = run_mode("jit_compile", step, *(jf.constant(t) for t in (x, w, b)))
    assert _postop_runs() > before
    pre = pre_conv + b
    g = q * (pre > 0)
    np.testing.assert_allclose(y.numpy(), np.maximum(pre, 0), rtol=3e-5, atol=3e-5)
    np.testing.assert_allclose(gv.numpy(), g.reshape(-1, g.shape[-1]).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gk.numpy(), filter_grad(g), rtol=1e-4, atol=1e-4)


def test_folded_batch_norm_then_residual_relu_and_a_scale_after(rng):
    """The affine ops before the residual fold into the filter and bias; the residual add, the
    relu and a per-channel multiply after it stay post-ops: all against float64."""
    x, w, b = _f32(rng, 2, 6, 5, 3), _f32(rng, 3, 3, 3, 4), _f32(rng, 4)
    s1, s2, t = _f32(rng, 4, lo=0.5, hi=1.5), _f32(rng, 4, lo=-2, hi=2), _f32(rng, 4)
    conv = R.conv2d(x, w, (1, 1), "SAME")
    r = _f32(rng, *conv.shape)
    want = np.maximum((conv + b) * s1 + t + r, 0) * s2

    def step(a, k, v, m, o, res, q):
        return jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v) * m + o + res) * q

    _check("jit_compile", step, (x, w, b, s1, t, r, s2), want, "FusedConv2D", tol=1e-4)
