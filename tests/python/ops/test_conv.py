"""Convolutions (nn.conv2d, conv1d, conv2d_transpose) and nn.bias_add in the five modes against
float64 direct loops (conv_ref.py): strides, dilations, SAME / VALID / explicit padding, odd
sizes, NCHW, empty batches; gradients against finite differences; TF 2.21's errors; a
jit_compile=True conv-bias-relu step compiles with the bias and relu fused; the cached oneDNN
primitives from many threads."""
import conv_ref as R
import numpy as np
import pytest
from conftest import numeric_grad, run_in_threads, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]

# name: (x shape NHWC, filter shape HWIO, strides, padding, dilations, data_format)
CASES = {
    "same": ((2, 7, 6, 3), (3, 3, 3, 5), (1, 1), "SAME", (1, 1), "NHWC"),
    "valid_strided": ((1, 9, 8, 2), (3, 2, 2, 4), (2, 3), "VALID", (1, 1), "NHWC"),
    "dilated": ((2, 7, 7, 3), (3, 3, 3, 2), (1, 1), "SAME", (2, 1), "NHWC"),
    "strided_dilated": ((1, 9, 9, 2), (2, 3, 2, 2), (2, 2), "VALID", (2, 2), "NHWC"),
    "explicit": ((1, 6, 5, 2), (2, 3, 2, 3), (2, 1), [(1, 2), (0, 1)], (1, 1), "NHWC"),
    "nchw": ((2, 7, 6, 3), (3, 3, 3, 4), (1, 2), "SAME", (1, 1), "NCHW"),
    "nchw_explicit_dilated": ((1, 8, 7, 2), (3, 2, 2, 3), (1, 1), [(2, 0), (1, 1)], (2, 3), "NCHW"),
    "empty_batch": ((0, 5, 5, 2), (3, 3, 2, 3), (1, 1), "SAME", (1, 1), "NHWC"),
    "filter_past_input": ((1, 2, 4, 2), (3, 3, 2, 3), (1, 1), "VALID", (1, 1), "NHWC"),
}


def _tf_padding(padding, fmt):
    if isinstance(padding, str):
        return padding
    spatial = [list(p) for p in padding]
    return [[0, 0], [0, 0], *spatial] if fmt == "NCHW" else [[0, 0], *spatial, [0, 0]]


def _case(name, dtype, rng):
    xs, ws, strides, padding, dil, fmt = CASES[name]
    x = rng.uniform(-1, 1, xs).astype(dtype)
    w = rng.uniform(-1, 1, ws).astype(dtype)
    want = R.conv2d(x, w, strides, padding, dil)
    if fmt == "NCHW":
        x, want = R.nchw(x), R.nchw(want)
    fn = lambda a, b: jf.nn.conv2d(a, b, list(strides), _tf_padding(padding, fmt), fmt, list(dil))
    return x, w, fn, want


def _tol(dtype):
    return {"rtol": 2e-5, "atol": 2e-5} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_conv2d_against_direct_loops(name, mode, rng):
    x, w, fn, want = _case(name, "float32", rng)
    y = run_mode(mode, fn, jf.constant(x), jf.constant(w))
    assert y.dtype == jf.float32 and y.shape == want.shape
    np.testing.assert_allclose(y.numpy(), want, **_tol("float32"))


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
@pytest.mark.parametrize("name", ["same", "explicit", "nchw", "strided_dilated", "empty_batch"])
def test_conv2d_float64_and_int32(name, mode, rng):
    """float64 and int32 take the im2col path (oneDNN has neither)."""
    x, w, fn, want = _case(name, "float64", rng)
    y = run_mode(mode, fn, jf.constant(x), jf.constant(w))
    np.testing.assert_allclose(y.numpy(), want, **_tol("float64"))
    xi, wi = (rng.integers(-3, 4, a.shape).astype(np.int32) for a in (x, w))
    yi = run_mode(mode, fn, jf.constant(xi), jf.constant(wi))
    assert yi.dtype == jf.int32
    nhwc = R.nhwc if CASES[name][5] == "NCHW" else (lambda a: a)
    _, _, strides, padding, dil, fmt = CASES[name]
    want_i = R.conv2d(nhwc(xi), wi, strides, padding, dil)
    np.testing.assert_array_equal(yi.numpy(), R.nchw(want_i) if fmt == "NCHW" else want_i)


# Small shapes: the finite differences evaluate the loops twice per element.
GRAD_CASES = {
    "same": ((1, 5, 4, 2), (3, 2, 2, 3), (1, 1), "SAME", (1, 1), "NHWC"),
    "strided_valid": ((2, 5, 5, 1), (2, 2, 1, 2), (2, 2), "VALID", (1, 1), "NHWC"),
    "dilated_explicit": ((1, 5, 4, 2), (2, 2, 2, 2), (1, 2), [(1, 0), (2, 1)], (2, 1), "NHWC"),
    "nchw": ((1, 4, 5, 2), (3, 3, 2, 2), (2, 1), "SAME", (1, 1), "NCHW"),
}


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_conv2d_gradients_by_finite_differences(name, mode, rng):
    xs, ws, strides, padding, dil, fmt = GRAD_CASES[name]
    x = rng.uniform(-1, 1, xs)
    w = rng.uniform(-1, 1, ws)
    y_shape = R.conv2d(x, w, strides, padding, dil).shape
    r = rng.standard_normal(y_shape)
    to = R.nchw if fmt == "NCHW" else (lambda a: a)

    def loss_np(xv, wv):
        return float(np.sum(R.conv2d(xv, wv, strides, padding, dil) * r))

    def grads(a, b):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            y = jf.nn.conv2d(a, b, list(strides), _tf_padding(padding, fmt), fmt, list(dil))
            loss = jf.reduce_sum(y * jf.constant(to(r)))
        return tape.gradient(loss, [a, b])

    gx, gw = run_mode(mode, grads, jf.constant(to(x)), jf.constant(w))
    want_x, want_w = numeric_grad(loss_np, [x, w])
    np.testing.assert_allclose(gx.numpy(), to(want_x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw.numpy(), want_w, rtol=1e-6, atol=1e-8)


def test_second_order_gradient_through_the_backprop_ops(rng):
    """d/dw of sum(dL/dx) where dL/dx is Conv2DBackpropInput: against finite differences of
    the reference's input gradient."""
    x = rng.uniform(-1, 1, (1, 4, 4, 2))
    w = rng.uniform(-1, 1, (2, 2, 2, 2))
    r = rng.standard_normal((1, 2, 2, 2))
    q = rng.standard_normal(x.shape)

    def outer_np(wv):
        return float(np.sum(R.conv2d_input_grad(x.shape, wv, r, (2, 2), "VALID") * q))

    xt, wt = jf.constant(x), jf.constant(w)
    with jf.GradientTape() as outer:
        outer.watch(wt)
        with jf.GradientTape() as inner:
            inner.watch(xt)
            loss = jf.reduce_sum(jf.nn.conv2d(xt, wt, 2, "VALID") * jf.constant(r))
        gx = inner.gradient(loss, xt)
        second = jf.reduce_sum(gx * jf.constant(q))
    gw = outer.gradient(second, wt)
    np.testing.assert_allclose(gw.numpy(), numeric_grad(outer_np, [w])[0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_conv2d_transpose_is_the_input_gradient(mode, rng):
    dy = rng.uniform(-1, 1, (2, 4, 3, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3, 2, 4)).astype(np.float32)
    want = R.conv2d_input_grad((2, 8, 6, 2), w, dy, (2, 2), "SAME")
    y = run_mode(mode, lambda a, b: jf.nn.conv2d_transpose(a, b, [2, 8, 6, 2], 2), jf.constant(dy), jf.constant(w))
    assert y.shape == (2, 8, 6, 2)
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["NWC", "NCW"])
def test_conv1d(fmt, mode, rng):
    x = rng.uniform(-1, 1, (2, 9, 3))
    w = rng.uniform(-1, 1, (3, 3, 4))
    want = R.conv2d(x[:, None], w[None], (1, 2), "SAME", (1, 1))[:, 0]
    xin = np.transpose(x, (0, 2, 1)) if fmt == "NCW" else x
    y = run_mode(mode, lambda a, b: jf.nn.conv1d(a, b, 2, "SAME", fmt), jf.constant(xin), jf.constant(w))
    np.testing.assert_allclose(y.numpy(), np.transpose(want, (0, 2, 1)) if fmt == "NCW" else want,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW", "N...C 3-D", "NC.. 3-D"])
def test_bias_add(fmt, mode, rng):
    shape = (2, 3, 4, 5) if "3-D" not in fmt else (2, 3, 5)
    first = fmt.startswith("NC")
    c = shape[1] if first else shape[-1]
    x = rng.uniform(-1, 1, shape)
    b = rng.uniform(-1, 1, (c,))
    bshape = [1] * len(shape)
    bshape[1 if first else -1] = c
    df = {"NHWC": "NHWC", "NCHW": "NCHW", "N...C 3-D": "NWC", "NC.. 3-D": "NCW"}[fmt]
    y = run_mode(mode, lambda a, v: jf.nn.bias_add(a, v, df), jf.constant(x), jf.constant(b))
    np.testing.assert_array_equal(y.numpy(), x + b.reshape(bshape))


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_bias_add_gradients(fmt, rng):
    x = rng.uniform(-1, 1, (2, 3, 4, 5))
    b = rng.uniform(-1, 1, (3 if fmt == "NCHW" else 5,))
    r = rng.standard_normal(x.shape)
    bs = [1, -1, 1, 1] if fmt == "NCHW" else [1, 1, 1, -1]
    xt, bt = jf.constant(x), jf.constant(b)

    @jf.function(jit_compile=True)
    def grads(a, v):
        with jf.GradientTape() as tape:
            tape.watch([a, v])
            loss = jf.reduce_sum(jf.nn.bias_add(a, v, fmt) * jf.constant(r))
        return tape.gradient(loss, [a, v])

    gx, gb = grads(xt, bt)
    want = numeric_grad(lambda xv, bv: float(np.sum((xv + bv.reshape(bs)) * r)), [x, b])
    np.testing.assert_allclose(gx.numpy(), want[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gb.numpy(), want[1], rtol=1e-7, atol=1e-9)


def test_conv_bias_relu_step_compiles_with_the_bias_and_relu_fused(rng):
    """Under jit_compile=True the convolution, its bias add and relu are one library step
    (FusedConv2D: oneDNN post-ops) in one cluster; with the relu read twice (an output and
    a product), it stays a convolution whose bias and relu fuse into the loop after it."""
    x = jf.constant(rng.uniform(-1, 1, (2, 8, 8, 3)).astype(np.float32))
    w = jf.constant(rng.uniform(-1, 1, (3, 3, 3, 4)).astype(np.float32))
    b = jf.constant(rng.uniform(-1, 1, (4,)).astype(np.float32))

    def step(a, k, v):
        return jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v))

    f = jf.function(step, jit_compile=True)
    y = run_mode("jit_compile", step, x, w, b)
    h_np = R.conv2d(x.numpy(), w.numpy(), (1, 1), "SAME") + b.numpy()
    want = np.maximum(h_np, 0)
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-5, atol=2e-5)
    cf = f.get_concrete_function(x, w, b)
    assert len(cf.clusters) == 1 and cf.clusters[0].ops == ["FusedConv2D"], cf.clusters

    def twice(a, k, v):
        h = jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v)
        return jf.nn.relu(h), h * 2.0

    cf2 = jf.function(twice, jit_compile=True).get_concrete_function(x, w, b)
    assert len(cf2.clusters) == 1 and {"Conv2D", "BiasAdd", "Relu"} <= set(cf2.clusters[0].ops), cf2.clusters
    # The same lowering's loop steps as GPU kernels: the conv is a library step (no kernel),
    # the bias add, relu and product one fused loop.
    (module,) = cf2._cf.emit_ptx("sm_80").values()
    assert len(module["kernels"]) == 1, module["kernels"]
    y1, y2 = jf.function(twice, jit_compile=True)(x, w, b)
    np.testing.assert_allclose(y1.numpy(), want, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(y2.numpy(), 2 * h_np, rtol=2e-5, atol=2e-5)


def test_cached_primitives_from_many_threads(rng):
    x = rng.uniform(-1, 1, (2, 9, 9, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3, 4, 6)).astype(np.float32)
    want = R.conv2d(x, w, (1, 1), "SAME")
    results = [None] * 8

    def worker(k):
        outs = []
        for _ in range(5):
            outs.append(jf.nn.conv2d(jf.constant(x), jf.constant(w), 1, "SAME").numpy())
        results[k] = outs

    run_in_threads(worker, 8)
    for outs in results:
        for o in outs:
            np.testing.assert_allclose(o, want, rtol=2e-5, atol=2e-5)


# ---- TF 2.21's errors ------------------------------------------------------------------------
def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_errors_name_the_op_and_shapes():
    x, w = jf.zeros([1, 5, 5, 3]), jf.zeros([3, 3, 3, 4])
    E = jf.errors
    _raises(E.InvalidArgumentError, r"Conv2D: input depth must be evenly divisible by filter depth: 3 vs 2",
            lambda: jf.nn.conv2d(x, jf.zeros([3, 3, 2, 4]), 1, "SAME"))
    _raises(E.InvalidArgumentError, r"Conv2D: convolution input must be 4-dimensional: \[5,5,3\]",
            lambda: jf.nn.conv2d(jf.zeros([5, 5, 3]), w, 1, "SAME"))
    _raises(E.InvalidArgumentError, r"Conv2D: convolution filter must be 4-dimensional: \[3,3,3\]",
            lambda: jf.nn.conv2d(x, jf.zeros([3, 3, 3]), 1, "SAME"))
    _raises(E.InvalidArgumentError, r"Computed output size would be negative: -1 \[input_size: 1, "
            r"effective_filter_size: 3, stride: 1\]", lambda: jf.nn.conv2d(jf.zeros([1, 1, 5, 3]), w, 1, "VALID"))
    _raises(E.UnimplementedError, r"strides in the batch and depth dimensions",
            lambda: jf.nn.conv2d(x, w, [2, 1, 1, 1], "VALID"))
    _raises(ValueError, r"strides should be of length 1, 2 or 4. Received: strides=\[1, 1, 1\] of length 3",
            lambda: jf.nn.conv2d(x, w, [1, 1, 1], "VALID"))
    _raises(E.InvalidArgumentError, r"Nonzero explicit padding in the batch or depth dimensions",
            lambda: jf.nn.conv2d(x, w, 1, [[1, 0], [1, 2], [0, 1], [0, 0]]))
    _raises(E.InvalidArgumentError, r"All elements of explicit_paddings must be nonnegative",
            lambda: jf.nn.conv2d(x, w, 1, [[0, 0], [-1, 2], [0, 1], [0, 0]]))
    _raises(E.InvalidArgumentError, r"Conv2D: input #1 was expected to be a float32 tensor but is a float64",
            lambda: jf.nn.conv2d(x, jf.zeros([3, 3, 3, 4], jf.float64), 1, "SAME"))
    _raises(TypeError, r"Conv2D: expected a float32, float64, int32, float16 or bfloat16 input, got int64",
            lambda: jf.nn.conv2d(jf.zeros([1, 5, 5, 3], jf.int64), jf.zeros([3, 3, 3, 4], jf.int64), 1, "SAME"))
    _raises(E.InvalidArgumentError, r"Must provide as many biases as the last dimension of the input tensor: "
            r"\[4\] vs. \[1,5,5,3\]", lambda: jf.nn.bias_add(x, jf.zeros([4])))
    _raises(E.InvalidArgumentError, r"Biases must be 1D: \[3,1\]", lambda: jf.nn.bias_add(x, jf.zeros([3, 1])))
    _raises(E.InvalidArgumentError, r"Input tensor must be at least 2D: \[3\]",
            lambda: jf.nn.bias_add(jf.zeros([3]), jf.zeros([3])))
    _raises(E.InvalidArgumentError, r"Size of out_backprop doesn't match computed: actual = 4, computed = 5",
            lambda: jf.nn.conv2d_transpose(jf.zeros([1, 4, 5, 4]), w, [1, 5, 5, 3], 1))


def test_errors_when_traced():
    """A shape function error surfaces while tracing, as TF's does."""
    f = jf.function(lambda a, b: jf.nn.conv2d(a, b, 1, "SAME"))
    with pytest.raises(jf.errors.InvalidArgumentError, match="input depth must be evenly divisible"):
        f(jf.zeros([1, 5, 5, 3]), jf.zeros([3, 3, 2, 4]))


# ---- depthwise and separable convolutions ------------------------------------------------------
DW_CASES = {
    "same": ((2, 6, 5, 3), (3, 3, 3, 2), (1, 1), "SAME", (1, 1), "NHWC"),
    "strided_valid": ((1, 7, 7, 2), (2, 3, 2, 3), (2, 2), "VALID", (1, 1), "NHWC"),
    "dilated_explicit": ((1, 6, 6, 2), (2, 2, 2, 1), (1, 1), [(1, 0), (2, 1)], (2, 2), "NHWC"),
    "nchw": ((2, 5, 6, 3), (3, 3, 3, 2), (2, 2), "SAME", (1, 1), "NCHW"),
}


def _dw_call(strides, padding, dil, fmt):
    s = [1, 1, *strides] if fmt == "NCHW" else [1, *strides, 1]
    return lambda a, b: jf.nn.depthwise_conv2d(a, b, s, _tf_padding(padding, fmt), fmt, list(dil))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(DW_CASES))
def test_depthwise_conv2d_against_direct_loops(name, mode, dtype, rng):
    xs, ws, strides, padding, dil, fmt = DW_CASES[name]
    x = rng.uniform(-1, 1, xs).astype(dtype)
    w = rng.uniform(-1, 1, ws).astype(dtype)
    want = R.depthwise(x, w, strides, padding, dil)
    to = R.nchw if fmt == "NCHW" else (lambda a: a)
    y = run_mode(mode, _dw_call(strides, padding, dil, fmt), jf.constant(to(x)), jf.constant(w))
    np.testing.assert_allclose(y.numpy(), to(want), **_tol(dtype))


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
@pytest.mark.parametrize("name", sorted(DW_CASES))
def test_depthwise_gradients_by_finite_differences(name, mode, rng):
    xs, ws, strides, padding, dil, fmt = DW_CASES[name]
    x = rng.uniform(-1, 1, (1, *xs[1:]))
    w = rng.uniform(-1, 1, ws)
    r = rng.standard_normal(R.depthwise(x, w, strides, padding, dil).shape)
    to = R.nchw if fmt == "NCHW" else (lambda a: a)
    call = _dw_call(strides, padding, dil, fmt)

    def grads(a, b):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            loss = jf.reduce_sum(call(a, b) * jf.constant(to(r)))
        return tape.gradient(loss, [a, b])

    gx, gw = run_mode(mode, grads, jf.constant(to(x)), jf.constant(w))
    want_x, want_w = numeric_grad(lambda xv, wv: float(np.sum(R.depthwise(xv, wv, strides, padding, dil) * r)),
                                  [x, w])
    np.testing.assert_allclose(gx.numpy(), to(want_x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw.numpy(), want_w, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_separable_conv2d(mode, rng):
    x = rng.uniform(-1, 1, (2, 6, 6, 3)).astype(np.float32)
    dw = rng.uniform(-1, 1, (3, 3, 3, 2)).astype(np.float32)
    pw = rng.uniform(-1, 1, (1, 1, 6, 4)).astype(np.float32)
    want = R.conv2d(R.depthwise(x, dw, (1, 1), "SAME"), pw)
    y = run_mode(mode, lambda a, b, c: jf.nn.separable_conv2d(a, b, c, [1, 1, 1, 1], "SAME"),
                 jf.constant(x), jf.constant(dw), jf.constant(pw))
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-5, atol=2e-5)


def test_depthwise_errors():
    x = jf.zeros([1, 5, 5, 3])
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match=r"DepthwiseConv2dNative: input and filter must have the same depth: 3 vs 2"):
        jf.nn.depthwise_conv2d(x, jf.zeros([3, 3, 2, 2]), [1, 1, 1, 1], "SAME")
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"input must be 4-dimensional\[5,5,3\]"):
        jf.nn.depthwise_conv2d(jf.zeros([5, 5, 3]), jf.zeros([3, 3, 3, 2]), [1, 1, 1, 1], "SAME")
    with pytest.raises(TypeError, match=r"Expected list for 'strides'"):
        jf.nn.depthwise_conv2d(x, jf.zeros([3, 3, 3, 2]), 1, "SAME")
    with pytest.raises(ValueError, match=r"Dimensions 2 and 1 are not compatible"):
        jf.nn.separable_conv2d(x, jf.zeros([3, 3, 3, 2]), jf.zeros([1, 2, 6, 4]), [1, 1, 1, 1], "SAME")


# ---- 3-D convolutions -------------------------------------------------------------------------
C3_CASES = {
    "same": ((2, 4, 5, 4, 2), (2, 3, 2, 2, 3), (1, 1, 1), "SAME", (1, 1, 1), "NDHWC"),
    "strided_valid": ((1, 6, 5, 5, 2), (3, 2, 2, 2, 2), (2, 1, 2), "VALID", (1, 1, 1), "NDHWC"),
    "dilated": ((1, 6, 5, 5, 1), (2, 2, 2, 1, 2), (1, 1, 1), "SAME", (2, 1, 2), "NDHWC"),
    "ncdhw": ((2, 4, 4, 5, 2), (2, 2, 3, 2, 3), (1, 2, 1), "SAME", (1, 1, 1), "NCDHW"),
}


def _c3(a):
    return np.transpose(a, (0, 4, 1, 2, 3))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(C3_CASES))
def test_conv3d_against_direct_loops(name, mode, dtype, rng):
    xs, ws, strides, padding, dil, fmt = C3_CASES[name]
    x = rng.uniform(-1, 1, xs).astype(dtype)
    w = rng.uniform(-1, 1, ws).astype(dtype)
    want = R.conv3d(x, w, strides, padding, dil)
    to = _c3 if fmt == "NCDHW" else (lambda a: a)
    s5 = [1, 1, *strides] if fmt == "NCDHW" else [1, *strides, 1]
    d5 = [1, 1, *dil] if fmt == "NCDHW" else [1, *dil, 1]
    y = run_mode(mode, lambda a, b: jf.nn.conv3d(a, b, s5, padding, fmt, d5), jf.constant(to(x)), jf.constant(w))
    np.testing.assert_allclose(y.numpy(), to(want), **_tol(dtype))


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
def test_conv3d_gradients_by_finite_differences(mode, rng):
    x = rng.uniform(-1, 1, (1, 4, 3, 4, 2))
    w = rng.uniform(-1, 1, (2, 2, 3, 2, 2))
    r = rng.standard_normal(R.conv3d(x, w, (2, 1, 1), "SAME").shape)

    def grads(a, b):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            loss = jf.reduce_sum(jf.nn.conv3d(a, b, [1, 2, 1, 1, 1], "SAME") * jf.constant(r))
        return tape.gradient(loss, [a, b])

    gx, gw = run_mode(mode, grads, jf.constant(x), jf.constant(w))
    want = numeric_grad(lambda xv, wv: float(np.sum(R.conv3d(xv, wv, (2, 1, 1), "SAME") * r)), [x, w])
    np.testing.assert_allclose(gx.numpy(), want[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw.numpy(), want[1], rtol=1e-6, atol=1e-8)


def test_conv3d_errors():
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Conv3D: convolution input must be 5-dimensional"):
        jf.nn.conv3d(jf.zeros([1, 4, 4, 2]), jf.zeros([2, 2, 2, 2, 2]), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"`data_format` must be 'NDHWC' or 'NCDHW'"):
        jf.nn.conv3d(jf.zeros([1, 4, 4, 4, 2]), jf.zeros([2, 2, 2, 2, 2]), [1, 1, 1, 1, 1], "SAME", "NHWC")


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
def test_convolution_by_rank_and_conv1d_transpose(mode, rng):
    x1 = rng.uniform(-1, 1, (2, 9, 3))
    w1 = rng.uniform(-1, 1, (3, 3, 4))
    x2 = rng.uniform(-1, 1, (1, 6, 5, 2))
    w2 = rng.uniform(-1, 1, (3, 2, 2, 3))
    x3 = rng.uniform(-1, 1, (1, 4, 5, 4, 2))
    w3 = rng.uniform(-1, 1, (2, 2, 2, 2, 3))
    y1, y2, y3 = run_mode(mode, lambda a, b, c, d, e, f: (jf.nn.convolution(a, b, 2, "SAME"),
                                                          jf.nn.convolution(c, d, [1, 2], "VALID", dilations=[2, 1]),
                                                          jf.nn.convolution(e, f, None, "SAME")),
                          *[jf.constant(v) for v in (x1, w1, x2, w2, x3, w3)])
    np.testing.assert_allclose(y1.numpy(), R.conv2d(x1[:, None], w1[None], (1, 2), "SAME")[:, 0], rtol=1e-12)
    np.testing.assert_allclose(y2.numpy(), R.conv2d(x2, w2, (1, 2), "VALID", (2, 1)), rtol=1e-12)
    np.testing.assert_allclose(y3.numpy(), R.conv3d(x3, w3, (1, 1, 1), "SAME"), rtol=1e-12, atol=1e-12)
    dy = rng.uniform(-1, 1, (2, 5, 4))
    t = run_mode(mode, lambda a, b: jf.nn.conv1d_transpose(a, b, [2, 9, 3], 2), jf.constant(dy), jf.constant(w1))
    want = R.conv2d_input_grad((2, 1, 9, 3), w1[None], dy[:, None], (1, 2), "SAME")[:, 0]
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12, atol=1e-12)
