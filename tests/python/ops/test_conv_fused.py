"""A float32 Conv2D followed by its BiasAdd, a residual add and an activation runs as one
FusedConv2D node (oneDNN post-ops, made by the fuse_conv pass after differentiation): in
compiled clusters and traced functions, counted in jf.debugging.stats()["conv_postop_runs"],
against float64 numpy references; chains it must not fuse (an intermediate read twice, Relu6,
float64, a broadcast residual) run as before; training steps keep their gradients."""
import conv_ref as R
import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf
from jitflow.tracing.display import concrete_view

ACTIVATIONS = {
    "relu": (jf.nn.relu, lambda v: np.maximum(v, 0)),
    "elu": (jf.nn.elu, lambda v: np.where(v > 0, v, np.expm1(v))),
    "sigmoid": (jf.nn.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    "tanh": (jf.math.tanh, np.tanh),
    "leaky_relu": (lambda v: jf.nn.leaky_relu(v, 0.3), lambda v: np.where(v > 0, v, 0.3 * v)),
}


def _data(rng, fmt="NHWC"):
    x = rng.uniform(-1, 1, (2, 7, 6, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3, 3, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (4,)).astype(np.float32)
    r = rng.uniform(-2, 2, (2, 7, 6, 4)).astype(np.float32)
    conv = R.conv2d(x, w, (1, 1), "SAME")
    if fmt == "NCHW":
        x, r, conv = R.nchw(x), R.nchw(r), R.nchw(conv)
    return x, w, b, r, conv


def _postop_runs():
    return jf.debugging.stats()["conv_postop_runs"]


@pytest.mark.parametrize("mode", ["function", "signature", "jit_scope", "jit_compile"])
@pytest.mark.parametrize("act", sorted(ACTIVATIONS))
def test_conv_bias_activation_runs_fused(act, mode, rng):
    fn, ref = ACTIVATIONS[act]
    x, w, b, _, conv = _data(rng)
    before = _postop_runs()
    y = run_mode(mode, lambda a, k, v: fn(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v)),
                 *(jf.constant(t) for t in (x, w, b)))
    if mode != "signature":  # unknown filter dims under an all-None signature: not fused
        assert _postop_runs() > before
    np.testing.assert_allclose(y.numpy(), ref(conv + b), rtol=3e-5, atol=3e-5)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("order", ["add_then_relu", "relu_then_add", "add_only"])
@pytest.mark.parametrize("mode", ["function", "jit_scope", "jit_compile"])
def test_residual_add_runs_fused(order, fmt, mode, rng):
    x, w, b, r, conv = _data(rng, fmt)
    bias = b.reshape(1, 4, 1, 1) if fmt == "NCHW" else b

    def step(a, k, v, res):
        h = jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME", data_format=fmt), v, data_format=fmt)
        if order == "add_then_relu":
            return jf.nn.relu(res + h)
        if order == "relu_then_add":
            return jf.nn.relu(h) + res
        return h + res

    before = _postop_runs()
    y = run_mode(mode, step, *(jf.constant(t) for t in (x, w, b, r)))
    assert _postop_runs() > before
    want = {"add_then_relu": np.maximum(conv + bias + r, 0), "relu_then_add": np.maximum(conv + bias, 0) + r,
            "add_only": conv + bias + r}[order]
    np.testing.assert_allclose(y.numpy(), want, rtol=3e-5, atol=3e-5)


def test_the_cluster_holds_one_fused_node(rng):
    x, w, b, r, _ = _data(rng)

    def step(a, k, v, res):
        return jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v) + res)

    f = jf.function(step, jit_compile=True)
    cf = f.get_concrete_function(*(jf.constant(t) for t in (x, w, b, r)))
    assert len(cf.clusters) == 1 and cf.clusters[0].ops == ["FusedConv2D"], cf.clusters


def test_chains_that_do_not_fuse(rng):
    """The conv's output read twice, float64, a broadcast residual, a bias alone: no fused run,
    the same values."""
    x, w, b, r, conv = _data(rng)
    cases = {
        "read_twice": (lambda a, k, v: jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v)) +
                       jf.nn.conv2d(a, k, 1, "SAME") * 0.0 + jf.reduce_sum(jf.nn.conv2d(a, k, 1, "SAME")),
                       np.maximum(conv + b, 0) + conv.sum()),
        "relu6": (lambda a, k, v: jf.nn.relu6(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v)),
               np.clip(conv + b, 0, 6)),
        "broadcast_residual": (lambda a, k, v: jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v) +
                                                         jf.constant(r[:1])), np.maximum(conv + b + r[:1], 0)),
        "bias_alone": (lambda a, k, v: jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v), conv + b),
    }
    for name, (fn, want) in cases.items():
        before = _postop_runs()
        y = jf.function(fn, jit_compile=True)(*(jf.constant(t) for t in (x, w, b)))
        assert _postop_runs() == before, name
        np.testing.assert_allclose(y.numpy(), want, rtol=3e-5, atol=3e-4, err_msg=name)
    before = _postop_runs()
    y64 = jf.function(lambda a, k, v: jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v)))(
        *(jf.constant(t.astype(np.float64)) for t in (x, w, b)))
    assert _postop_runs() == before
    np.testing.assert_allclose(y64.numpy(), np.maximum(conv + b, 0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["function", "jit_compile"])
def test_training_step_with_fused_forward_keeps_its_gradients(mode, rng):
    """A conv-bias-relu-residual block's gradients (the relu's from the fused node's output)
    against float64 references."""
    x, w, b, r, conv = _data(rng)
    q = rng.standard_normal(r.shape)

    def step(a, k, v, res):
        with jf.GradientTape() as tape:
            tape.watch([k, v, res])
            y = jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v) + res)
            loss = jf.reduce_sum(y * jf.constant(q.astype(np.float32)))
        return [y] + tape.gradient(loss, [k, v, res])

    before = _postop_runs()
    y, gk, gv, gr = run_mode(mode, step, *(jf.constant(t) for t in (x, w, b, r)))
    assert _postop_runs() > before
    pre = conv + b + r
    dy = q * (pre > 0)
    np.testing.assert_allclose(y.numpy(), np.maximum(pre, 0), rtol=3e-5, atol=3e-5)
    np.testing.assert_allclose(gr.numpy(), dy, rtol=3e-5, atol=3e-5)
    np.testing.assert_allclose(gv.numpy(), dy.sum(axis=(0, 1, 2)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gk.numpy(), R.conv2d_filter_grad(x, w.shape, dy, (1, 1), "SAME"), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("act", sorted(ACTIVATIONS))
def test_fused_activations_keep_tfs_special_values(act, rng):
    """NaN and infinities through the fused post-ops as through TF's ops one by one (oneDNN's
    own relu would make NaN a 0)."""
    fn, ref = ACTIVATIONS[act]
    x, w, b, _, _ = _data(rng)
    x[0, 0, 0, 0], x[1, 3, 3, 1], x[1, 6, 5, 2] = np.nan, np.inf, -np.inf
    before = _postop_runs()
    y = jf.function(lambda a, k, v: fn(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v)))(
        *(jf.constant(t) for t in (x, w, b)))
    assert _postop_runs() > before
    with np.errstate(invalid="ignore", over="ignore"):
        conv = R.conv2d(x, w, (1, 1), "SAME")
        want = ref(conv + b)
    assert np.isnan(want).any() and np.isinf(conv).any()
    np.testing.assert_array_equal(np.isnan(y.numpy()), np.isnan(want))
    np.testing.assert_allclose(y.numpy(), want, rtol=3e-5, atol=3e-5)


def test_explain_names_the_fused_node(rng):
    """jf.explain and the graph drawing say which node computes the traced conv, bias add and
    relu, and where."""
    x, w, b, _, _ = _data(rng)
    args = [jf.constant(t) for t in (x, w, b)]
    step = lambda a, k, v: jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(a, k, 1, "SAME"), v))
    for f, status in ((jf.function(step, jit_compile=True), "compiled"), (jf.function(step), "eager")):
        rows = {r.op: r for r in jf.explain(f, *args)}
        for op in ("Conv2D", "BiasAdd", "Relu"):
            assert rows[op].status == status and "fused into FusedConv2D" in rows[op].reason, rows[op]
        # The graph drawing puts them where explain does.
        nodes = {n.name: n for n in concrete_view(f.get_concrete_function(*args)).nodes}
        for op in ("Conv2D", "BiasAdd", "Relu"):
            assert nodes[op].status == status, nodes[op]
            assert status == "compiled" or "fused into FusedConv2D" in nodes[op].reason, nodes[op]
