"""The activations, losses and clipping (nn_activations.py, losses_clipping.py): every
composition in the five modes against float64 numpy / scipy references, gradients against
finite differences, the activation records at NaN / Inf and their edge dtypes, fusion inside a
jit_scope, dropout's statistics and seeds, softmax's axis checks, and TF 2.21's errors."""
import numpy as np
import pytest
from conftest import eager_and_traced, numeric_grad
from scipy import special

import jitflow as jf
from jitflow.ops import dispatch

MODES = ["eager", "function", "jit_scope", "jit_compile", "none_signature"]
SELU_SCALE, SELU_SCALE_ALPHA = 1.0507009873554804934193349852946, 1.7580993408473768599402175208123


# ---- float64 references ------------------------------------------------------------------
def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(z, axis=-1):
    return z - special.logsumexp(z, axis=axis, keepdims=True)


# TF casts gelu's constants from Python floats, which become float32 first: float64 gelu
# carries float32-rounded sqrt(2) and 0.044715 (TF 2.21 is 5e-9 off the exact erf form).
_SQRT2_TF, _COEFF_TF = float(np.float32(np.sqrt(2))), float(np.float32(0.044715))


def _gelu(x):
    return 0.5 * x * (1 + special.erf(x / _SQRT2_TF))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + _COEFF_TF * x**3)))


def _l2n(x, axis):
    return x / np.sqrt(np.maximum(np.sum(x * x, axis=axis, keepdims=True), 1e-12))


def _clip_by_norm(x, c, axes=None):
    n = np.sqrt(np.sum(x * x, axis=axes, keepdims=True))
    return x * c / np.maximum(n, c)


def _sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def _weighted_xent(z, x, q):
    return (1 - z) * x + (1 + (q - 1) * z) * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))


def _global_clip(xs, c):
    g = np.sqrt(sum(np.sum(x * x) for x in xs))
    return [x * c / max(g, c) for x in xs] + [np.asarray(g)]


# ---- the compositions: (call on tensors, float64 reference, inputs, inputs to differentiate)
def _u(shape, lo=-3.0, hi=3.0):
    return lambda rng: rng.uniform(lo, hi, shape)


def _probs(shape, axis=-1):
    """Labels that sum to 1 along the class axis."""
    return lambda rng: _softmax(rng.uniform(-2, 2, shape), axis)


def _labels(n, depth):
    return lambda rng: rng.integers(0, depth, n).astype(np.int32)


COMPOSITIONS = {
    "gelu": (jf.nn.gelu, _gelu, [_u((2, 3))], (0,)),
    "gelu_tanh": (lambda x: jf.nn.gelu(x, approximate=True), _gelu_tanh, [_u((2, 3))], (0,)),
    "silu": (jf.nn.silu, lambda x: x * special.expit(x), [_u((2, 3))], (0,)),
    "swish_beta": (lambda x: jf.nn.swish(x, beta=1.5), lambda x: x * special.expit(1.5 * x), [_u((2, 3))], (0,)),
    "log_sigmoid": (jf.math.log_sigmoid, lambda x: -np.logaddexp(0, -x), [_u((2, 3), -40, 40)], (0,)),
    "l2_normalize": (lambda x: jf.nn.l2_normalize(x), lambda x: _l2n(x, None), [_u((2, 3))], (0,)),
    "l2_normalize_axis": (lambda x: jf.nn.l2_normalize(x, axis=1), lambda x: _l2n(x, 1), [_u((2, 3))], (0,)),
    "clip_by_value": (lambda x: jf.clip_by_value(x, -1.0, [0.5, 1.0, 2.0]),
                      lambda x: np.clip(x, -1.0, [0.5, 1.0, 2.0]), [_u((2, 3))], (0,)),
    "clip_by_norm": (lambda x: jf.clip_by_norm(x, 1.5), lambda x: _clip_by_norm(x, 1.5), [_u((2, 3))], (0,)),
    "clip_by_norm_axes": (lambda x: jf.clip_by_norm(x, 1.5, axes=[1]), lambda x: _clip_by_norm(x, 1.5, 1),
                          [_u((2, 3))], (0,)),
    "global_norm": (lambda x, y: jf.linalg.global_norm([x, None, y]),
                    lambda x, y: np.sqrt(np.sum(x * x) + np.sum(y * y)), [_u((2, 3)), _u((3,))], (0, 1)),
    "clip_by_global_norm": (lambda x, y: [v for v in jf.clip_by_global_norm([x, None, y], 2.0)[0] if v is not None]
                            + [jf.clip_by_global_norm([x, y], 2.0)[1]],
                            lambda x, y: _global_clip([x, y], 2.0), [_u((2, 3)), _u((3,))], (0, 1)),
    "softmax_xent": (jf.nn.softmax_cross_entropy_with_logits, lambda z, x: -np.sum(z * _log_softmax(x), -1),
                     [_probs((2, 3)), _u((2, 3))], (0, 1)),
    "softmax_xent_axis0": (lambda z, x: jf.nn.softmax_cross_entropy_with_logits(z, x, axis=0),
                           lambda z, x: -np.sum(z * _log_softmax(x, 0), 0), [_probs((3, 2), 0), _u((3, 2))], (0, 1)),
    "sparse_softmax_xent": (jf.nn.sparse_softmax_cross_entropy_with_logits,
                            lambda lab, x: -np.take_along_axis(_log_softmax(x), lab[:, None].astype(np.int64), -1)[:, 0],
                            [_labels(2, 3), _u((2, 3))], (1,)),
    "sigmoid_xent": (lambda z, x: jf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x), _sigmoid_xent,
                     [_u((2, 3), 0, 1), _u((2, 3), -30, 30)], (0, 1)),
    "weighted_xent": (lambda z, x: jf.nn.weighted_cross_entropy_with_logits(z, x, 2.5),
                      lambda z, x: _weighted_xent(z, x, 2.5), [_u((2, 3), 0, 1), _u((2, 3), -30, 30)], (0, 1)),
    "l2_loss": (jf.nn.l2_loss, lambda x: np.sum(x * x) / 2, [_u((2, 3))], (0,)),
}


def _inputs(name, dtype, rng):
    return [a if a.dtype.kind == "i" else a.astype(dtype) for a in (m(rng) for m in COMPOSITIONS[name][2])]


def _outs(r):
    return [o.numpy() for o in (r if isinstance(r, (list, tuple)) else [r])]


def _run(fn, xs, mode):
    """fn on tensors of xs in the mode; returns (outputs as numpy, cluster runs it added)."""
    ts = [jf.constant(x) for x in xs]
    if mode == "eager":
        return _outs(fn(*ts)), 0

    def body(*a):
        if mode == "jit_scope":
            with jf.jit_scope():
                return fn(*a)
        return fn(*a)
    kw = {"jit_compile": True} if mode in ("jit_compile", "none_signature") else {}
    if mode == "none_signature":
        kw["input_signature"] = [jf.TensorSpec([None] * x.ndim, getattr(jf, x.dtype.name)) for x in xs]
    before = jf.debugging.stats()["cluster_runs"]
    out = _outs(jf.function(body, **kw)(*ts))
    return out, jf.debugging.stats()["cluster_runs"] - before


def _close(got, want, dtype):
    tol = {"rtol": 3e-5, "atol": 3e-6} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.dtype(dtype), (g.dtype, dtype)
        np.testing.assert_allclose(g, np.asarray(w, np.float64), **tol)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_composition_in_every_mode(name, dtype, mode, rng):
    fn, ref, _, _ = COMPOSITIONS[name]
    xs = _inputs(name, dtype, rng)
    got, ran = _run(fn, xs, mode)
    want = ref(*[x.astype(np.float64) if x.dtype.kind == "f" else x for x in xs])
    _close(got, want if isinstance(want, list) else [want], dtype)
    if mode not in ("eager", "function"):
        assert ran > 0, f"{name} {mode}: no compiled code ran"


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_composition_gradient(name, mode, rng):
    """Tape gradients of sum(w * outputs) against central differences of the float64 reference."""
    fn, ref, _, gi = COMPOSITIONS[name]
    xs = _inputs(name, "float64", rng)
    want_out = ref(*xs)
    ws = [rng.uniform(0.5, 1.5, np.shape(w)) for w in (want_out if isinstance(want_out, list) else [want_out])]

    def scalar_ref(*a):
        r = ref(*a)
        return sum(np.sum(w * o) for w, o in zip(ws, r if isinstance(r, list) else [r]))

    def grads(*ts):
        with jf.GradientTape() as tape:
            for i in gi:
                tape.watch(ts[i])
            r = fn(*ts)
            loss = jf.add_n([jf.reduce_sum(o * w) for o, w in zip(r if isinstance(r, list) else [r], ws)])
        return tape.gradient(loss, [ts[i] for i in gi])

    ts = [jf.constant(x) for x in xs]
    g = grads(*ts) if mode == "eager" else jf.function(grads, jit_compile=mode == "jit_compile")(*ts)
    num = numeric_grad(lambda *a: scalar_ref(*[a[gi.index(i)] if i in gi else xs[i] for i in range(len(xs))]),
                       [xs[i] for i in gi])
    for got, n in zip(g, num):
        np.testing.assert_allclose(got.numpy(), n, rtol=1e-6, atol=1e-7)


# ---- TF's gradient formulas where they differ from the function's derivative --------------
def test_softmax_xent_label_gradient_is_minus_log_softmax(rng):
    z, x = rng.uniform(0, 1, (2, 4)), rng.uniform(-2, 2, (2, 4))
    lab, lg = jf.constant(z), jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(lab)
        loss = jf.nn.softmax_cross_entropy_with_logits(lab, lg)
    np.testing.assert_allclose(tape.gradient(loss, lab).numpy(), -_log_softmax(x), rtol=1e-12)


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
def test_softmax_xent_logits_gradient_is_softmax_minus_labels(mode, rng):
    """TF's gradient, also where labels do not sum to 1 (TF 2.21 printed, for labels
    [0.5, 1, 0.2] and logits [1, 2, 3]: [-0.40996942 -0.75527155 0.46524096])."""
    z = np.array([[0.5, 1.0, 0.2], [0.0, 0.0, 0.0]]) + rng.uniform(0, 0.1, (2, 3))
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])

    def grads(lab, lg):
        with jf.GradientTape() as tape:
            tape.watch([lab, lg])
            loss = jf.nn.softmax_cross_entropy_with_logits(lab, lg)
        return loss, tape.gradient(loss, [lab, lg])
    f = grads if mode == "eager" else jf.function(grads, jit_compile=mode == "jit_compile")
    loss, (g_lab, g_lg) = f(jf.constant(z), jf.constant(x))
    np.testing.assert_allclose(loss.numpy(), -np.sum(z * _log_softmax(x), -1), rtol=1e-12)
    np.testing.assert_allclose(g_lg.numpy(), _softmax(x) - z, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g_lab.numpy(), -_log_softmax(x), rtol=1e-12)
    g = jf.nn.softmax_cross_entropy_with_logits  # TF's printed case, float32
    with jf.GradientTape() as tape:
        lg = jf.constant([[1.0, 2.0, 3.0]])
        tape.watch(lg)
        loss = g(jf.constant([[0.5, 1.0, 0.2]]), lg)
    np.testing.assert_allclose(tape.gradient(loss, lg).numpy(), [[-0.40996942, -0.75527155, 0.46524096]], rtol=1e-6)


def test_softmax_xent_second_derivative_is_softmax_jacobian(rng):
    """TF's second derivative w.r.t. the logits, (diag(p) - p p^T) v, whatever the labels."""
    z, x, v = rng.uniform(0, 1, (1, 4)), rng.uniform(-2, 2, (1, 4)), rng.uniform(-1, 1, (1, 4))
    lg = jf.constant(x)
    with jf.GradientTape() as outer:
        outer.watch(lg)
        with jf.GradientTape() as inner:
            inner.watch(lg)
            loss = jf.nn.softmax_cross_entropy_with_logits(jf.constant(z), lg)
        gv = jf.reduce_sum(inner.gradient(loss, lg) * v)
    p = _softmax(x)[0]
    np.testing.assert_allclose(outer.gradient(gv, lg).numpy()[0], (np.diag(p) - np.outer(p, p)) @ v[0], rtol=1e-10)


def test_silu_beta_gradient(rng):
    x, b = rng.uniform(-2, 2, (5,)), 1.5
    xt, bt = jf.constant(x), jf.constant(b, jf.float64)
    with jf.GradientTape() as tape:
        tape.watch(bt)
        y = jf.nn.silu(xt, beta=bt)
    s = special.expit(b * x)
    np.testing.assert_allclose(tape.gradient(y, bt).numpy(), np.sum(x * x * s * (1 - s)), rtol=1e-12)


def test_sparse_softmax_xent_gradient_is_softmax_minus_onehot():
    x = np.array([[1.0, -np.inf, 0.5], [0.0, 2.0, -1.0]])
    with jf.GradientTape() as tape:
        lg = jf.constant(x)
        tape.watch(lg)
        loss = jf.nn.sparse_softmax_cross_entropy_with_logits(jf.constant([0, 1]), lg)
    # A -inf logit off the label leaves the loss finite (TF's kernel).
    np.testing.assert_allclose(loss.numpy(), -_log_softmax(x)[[0, 1], [0, 1]])
    np.testing.assert_allclose(tape.gradient(loss, lg).numpy(), _softmax(x) - np.eye(3)[[0, 1]], atol=1e-15)


# ---- the activation records: NaN / Inf and TF 2.21's values -------------------------------
_SPECIALS = np.array([-np.inf, -100.0, -20.0, -1.0, -0.0, 0.0, 1e-8, 1.0, 6.0, 20.0, 100.0, np.inf, np.nan])


def _softplus(x):
    return np.logaddexp(0.0, x)


ACTIVATION_REFS = {
    "relu6": (jf.nn.relu6, lambda x: np.clip(x, 0, 6)),
    "elu": (jf.nn.elu, lambda x: np.where(x < 0, np.expm1(x), x)),
    "selu": (jf.nn.selu, lambda x: np.where(x < 0, SELU_SCALE_ALPHA * np.expm1(x), SELU_SCALE * x)),
    "softplus": (jf.nn.softplus, _softplus),
    "math.softplus": (jf.math.softplus, _softplus),
    "softsign": (jf.nn.softsign, lambda x: x / (1 + np.abs(x))),
    "leaky_relu": (jf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
    "leaky_relu_2": (lambda x: jf.nn.leaky_relu(x, alpha=2.0), lambda x: np.where(x > 0, x, 2.0 * x)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ACTIVATION_REFS))
def test_activation_specials(name, dtype, mode):
    fn, ref = ACTIVATION_REFS[name]
    x = _SPECIALS.astype(dtype)
    got, ran = _run(fn, [x], mode)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(want))
    np.testing.assert_allclose(got[0], want, rtol=1e-6 if dtype == "float32" else 1e-14, atol=0)
    if mode not in ("eager", "function"):
        assert ran > 0


def test_activation_edges_match_tf():
    """TF 2.21's printed values at the edges: softsign(+-inf) and gelu(-inf) are NaN, relu6
    clamps inf, leaky_relu keeps -inf, and the float32 softplus thresholds."""
    x = jf.constant([-np.inf, np.inf])
    assert np.isnan(jf.nn.softsign(x).numpy()).all()
    assert np.isnan(jf.nn.gelu(x).numpy()[0]) and jf.nn.gelu(x).numpy()[1] == np.inf
    np.testing.assert_array_equal(jf.nn.relu6(x).numpy(), [0, 6])
    np.testing.assert_array_equal(jf.nn.leaky_relu(x).numpy(), [-np.inf, np.inf])
    # Above -threshold (13.94 for float32) softplus is x itself; below threshold exp(x).
    np.testing.assert_array_equal(jf.nn.softplus(jf.constant([14.0, 30.0])).numpy(), np.float32([14.0, 30.0]))
    assert jf.nn.softplus(jf.constant([-15.0])).numpy()[0] == np.exp(np.float32(-15.0))


def test_relu6_integers_exact():
    for dt in (jf.int32, jf.int64):
        x = jf.constant([-7, 0, 3, 6, 9], dt)
        np.testing.assert_array_equal(jf.nn.relu6(x).numpy(), [0, 0, 3, 6, 6])
        np.testing.assert_array_equal(jf.function(jf.nn.relu6, jit_compile=True)(x).numpy(), [0, 0, 3, 6, 6])


def test_leaky_relu_casts_integers_and_the_op_refuses_them():
    y = jf.nn.leaky_relu(jf.constant([-2, 3]))
    assert y.dtype == jf.float32
    np.testing.assert_allclose(y.numpy(), [-0.4, 3.0], rtol=1e-7)
    np.testing.assert_allclose(jf.nn.leaky_relu(jf.constant([-1.0]), alpha=np.float64(0.5)).numpy(), [-0.5])
    with pytest.raises((TypeError, jf.errors.InvalidArgumentError), match="LeakyRelu"):
        dispatch.run(dispatch.OP["LeakyRelu"], (jf.constant([1, 2]),), {"alpha": 0.2}, None)


def test_leaky_relu_alpha_is_part_of_the_compiled_kernel():
    """Two functions differing only in alpha must not share compiled code."""
    x = jf.constant([-1.0, 2.0])
    f1 = jf.function(lambda a: jf.nn.leaky_relu(a, alpha=0.1), jit_compile=True)
    f2 = jf.function(lambda a: jf.nn.leaky_relu(a, alpha=0.7), jit_compile=True)
    np.testing.assert_allclose(f1(x).numpy(), [-0.1, 2.0], rtol=1e-7)
    np.testing.assert_allclose(f2(x).numpy(), [-0.7, 2.0], rtol=1e-7)

    @jf.function(jit_compile=True)
    def both(a):
        return jf.nn.leaky_relu(a, 0.25) + jf.nn.leaky_relu(a, 0.5)
    np.testing.assert_allclose(both(x).numpy(), [-0.75, 4.0], rtol=1e-7)


@pytest.mark.parametrize("name", ["relu6", "elu", "selu", "softplus", "softsign", "leaky_relu"])
def test_activation_second_derivative(name, rng):
    """The gradients are built from jf ops, so they differentiate again."""
    fn, ref = ACTIVATION_REFS[name]
    x = rng.uniform(0.2, 3.0, (4,)) * rng.choice([-1, 1], 4)
    xt = jf.constant(x)
    with jf.GradientTape() as outer:
        outer.watch(xt)
        with jf.GradientTape() as inner:
            inner.watch(xt)
            y = fn(xt)
        g = inner.gradient(y, xt)
    gg = outer.gradient(g, xt)
    num = numeric_grad(lambda a: np.sum(numeric_grad(lambda b: np.sum(ref(b)), [a], 1e-5)[0]), [x], 1e-4)[0]
    np.testing.assert_allclose(gg.numpy() if gg is not None else np.zeros_like(x), num, atol=1e-4)


def test_keras_activation_names():
    _activation = jf.keras.activations.get
    for name in ["gelu", "elu", "selu", "swish", "silu", "softplus", "softsign", "relu6", "leaky_relu"]:
        assert callable(_activation(name)), name
    layer = jf.nn.Dense(4, activation="gelu", seed=0)
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float32)
    y = layer(jf.constant(x)).numpy()
    z = x.astype(np.float64) @ layer.kernel.numpy().astype(np.float64)
    np.testing.assert_allclose(y, 0.5 * z * (1 + special.erf(z / np.sqrt(2))), rtol=1e-5, atol=1e-6)


# ---- fusion --------------------------------------------------------------------------------
def _clusters_and_kernels(f, *args):
    report = jf.explain(f, *args)
    clusters = {r.cluster for r in report if r.status == "compiled"}
    eager = [r.type for r in report if r.status == "eager"]
    kernels = sum(len(k) for k in jf.experimental.ptx_kernels(f, *args).values())
    return len(clusters), kernels, eager


def test_losses_fuse_in_a_jit_scope(rng):
    z = jf.constant(_softmax(rng.uniform(-1, 1, (8, 10))).astype(np.float32))
    x = jf.constant(rng.uniform(-1, 1, (8, 10)).astype(np.float32))

    def under_scope(loss):
        @jf.function
        def f(a, b):
            with jf.jit_scope():
                with jf.GradientTape() as tape:
                    tape.watch(b)
                    v = jf.reduce_mean(loss(a, b))
                return v, tape.gradient(v, b)
        return f

    # Softmax lowers to its row reductions; the NVPTX backend keeps each a kernel of its own
    # (the CPU fuses them into row groups): 8 kernels for the loss and its gradient.
    for loss, max_kernels in [(jf.nn.softmax_cross_entropy_with_logits, 8),
                              (lambda a, b: jf.nn.sigmoid_cross_entropy_with_logits(labels=a, logits=b), 3)]:
        f = under_scope(loss)
        n_clusters, kernels, eager = _clusters_and_kernels(f, z, x)
        assert n_clusters == 1 and not eager, (n_clusters, eager)
        assert kernels <= max_kernels, kernels
        before = jf.debugging.stats()["cluster_runs"]
        f(z, x)
        assert jf.debugging.stats()["cluster_runs"] > before
    # The sparse loss: its range check (a gather of zeros) adds no gradient ops of its own.
    labels = jf.constant(rng.integers(0, 10, 8).astype(np.int32))
    f = under_scope(jf.nn.sparse_softmax_cross_entropy_with_logits)
    n_clusters, kernels, eager = _clusters_and_kernels(f, labels, x)
    assert n_clusters == 1 and not eager and kernels <= 8, (n_clusters, eager, kernels)
    before = jf.debugging.stats()["cluster_runs"]
    f(labels, x)
    assert jf.debugging.stats()["cluster_runs"] > before


def test_gelu_ffn_fuses(rng):
    x = jf.constant(rng.uniform(-1, 1, (4, 8)).astype(np.float32))
    w1 = jf.constant(rng.uniform(-1, 1, (8, 16)).astype(np.float32))
    w2 = jf.constant(rng.uniform(-1, 1, (16, 8)).astype(np.float32))

    @jf.function
    def f(a, b, c):
        with jf.jit_scope():
            return jf.matmul(jf.nn.gelu(jf.matmul(a, b) + 0.5), c)
    n_clusters, kernels, eager = _clusters_and_kernels(f, x, w1, w2)
    assert n_clusters == 1 and not eager
    # The GELU (Add, Div, Erf, Add, Mul, Mul) is one loop between the two GEMMs.
    assert kernels <= 2, kernels


# ---- dropout ----------------------------------------------------------------------------------
def test_dropout_statistics_and_scale():
    x = jf.ones([400, 250])
    y = jf.nn.dropout(x, 0.3, seed=5).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], np.float32(1 / 0.7), rtol=1e-6)
    y2 = jf.nn.dropout(x, jf.constant(0.3), seed=5).numpy()
    np.testing.assert_allclose(y2[y2 != 0], np.float32(1) / (np.float32(1) - np.float32(0.3)), rtol=1e-6)


def test_dropout_rate_zero_returns_x_and_seeds_repeat():
    x = jf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert jf.nn.dropout(x, 0.0) is x
    assert jf.nn.dropout(x, 0) is x
    jf.random.set_seed(3)
    a = jf.nn.dropout(jf.ones([50]), 0.5, seed=7).numpy()
    jf.random.set_seed(3)
    b = jf.nn.dropout(jf.ones([50]), 0.5, seed=7).numpy()
    np.testing.assert_array_equal(a, b)


def test_dropout_noise_shape():
    y = jf.nn.dropout(jf.ones([6, 40]), 0.5, noise_shape=[6, 1], seed=2).numpy()
    assert all(len(set(row)) == 1 for row in y)
    y = jf.nn.dropout(jf.ones([6, 40]), 0.5, noise_shape=[None, 1], seed=3).numpy()
    assert all(len(set(row)) == 1 for row in y)
    with pytest.raises(jf.errors.InvalidArgumentError):
        jf.nn.dropout(jf.ones([3, 4]), 0.5, noise_shape=[2, 1])


@pytest.mark.parametrize("mode", MODES)
def test_dropout_in_every_mode_and_its_gradient(mode):
    x = np.arange(1.0, 201.0).reshape(10, 20)

    def f(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            y = jf.nn.dropout(a, 0.25, seed=11) * 3.0
        return y, tape.gradient(y, a)
    if mode in ("jit_compile", "none_signature"):
        # jitflow's random ops are stateful and never compile (ops.def): jit_compile=True
        # refuses the draw by name rather than running it eagerly.
        with pytest.raises(jf.errors.InvalidArgumentError, match="RandomUniform"):
            _run(f, [x], mode)
        return
    (y, g), ran = _run(f, [x], mode)
    kept = y != 0
    assert 0.5 < kept.mean() < 0.95
    np.testing.assert_allclose(y[kept], 3.0 * x[kept] / 0.75, rtol=1e-12)
    np.testing.assert_allclose(g, np.where(kept, 3.0 / 0.75, 0.0), rtol=1e-12)
    if mode not in ("eager", "function"):
        assert ran > 0  # the scaling and the select compile; the draw is stateful, eager


# ---- TF 2.21's errors --------------------------------------------------------------------------
ERRORS = [
    ("gelu_int", lambda: jf.nn.gelu(jf.constant([1, 2])), ValueError, "floating point"),
    ("dropout_rate_1", lambda: jf.nn.dropout(jf.ones([2]), 1.0), ValueError, r"range \[0, 1\)"),
    ("dropout_rate_neg", lambda: jf.nn.dropout(jf.ones([2]), -0.1), ValueError, r"range \[0, 1\)"),
    ("dropout_int", lambda: jf.nn.dropout(jf.constant([1, 2]), 0.5), ValueError, "floating point"),
    ("dropout_rate_str", lambda: jf.nn.dropout(jf.ones([2]), "a"), ValueError, "scalar or scalar tensor"),
    ("dropout_rate_vec", lambda: jf.nn.dropout(jf.ones([2]), jf.constant([0.5])), ValueError, "rank 0"),
    ("dropout_rate_dtype", lambda: jf.nn.dropout(jf.ones([2]), jf.constant(0.5, jf.float64)), ValueError,
     "compatible"),
    ("l2n_int", lambda: jf.nn.l2_normalize(jf.constant([3, 4])), TypeError, "1e-12"),
    ("l2n_axis_dim", lambda: jf.nn.l2_normalize(jf.ones([2]), axis=0, dim=0), ValueError, "both"),
    ("cbv_broadcast", lambda: jf.clip_by_value(jf.ones([2]), jf.zeros([3, 2]), 5.0), ValueError, "incompatible"),
    ("cbv_int_float_bound", lambda: jf.clip_by_value(jf.constant([1, 5]), 2.5, 6), TypeError, "2.5"),
    ("cbn_broadcast", lambda: jf.clip_by_norm(jf.ones([2]), [[1.0], [2.0]]), ValueError, "incompatible"),
    ("cbn_int", lambda: jf.clip_by_norm(jf.constant([3, 4]), 1), (TypeError, jf.errors.InvalidArgumentError),
     "Sqrt"),
    ("global_norm_tensor", lambda: jf.linalg.global_norm(jf.ones([2])), TypeError, "sequence"),
    ("global_norm_mixed", lambda: jf.linalg.global_norm([jf.ones([2]), jf.ones([2], jf.float64)]),
     jf.errors.InvalidArgumentError, "Pack"),
    ("global_norm_int", lambda: jf.linalg.global_norm([jf.constant([3, 4])]), TypeError, "L2Loss"),
    ("cbgn_tensor", lambda: jf.clip_by_global_norm(jf.ones([2]), 1.0), TypeError, "sequence"),
    ("xent_shapes", lambda: jf.nn.softmax_cross_entropy_with_logits(jf.ones([2, 2]), jf.ones([2, 3])),
     jf.errors.InvalidArgumentError, "Incompatible shapes"),
    ("xent_int", lambda: jf.nn.softmax_cross_entropy_with_logits([[1, 0]], [[1, 0]]), TypeError, "SoftmaxCross"),
    ("xent_scalar", lambda: jf.nn.softmax_cross_entropy_with_logits(1.0, 2.0), jf.errors.InvalidArgumentError,
     "scalar"),
    ("sparse_oob", lambda: jf.nn.sparse_softmax_cross_entropy_with_logits(jf.constant([0, 3]), jf.ones([2, 3])),
     jf.errors.InvalidArgumentError, "3"),
    ("sparse_neg", lambda: jf.nn.sparse_softmax_cross_entropy_with_logits(jf.constant([-1, 0]), jf.ones([2, 3])),
     jf.errors.InvalidArgumentError, "-1"),
    ("sparse_no_classes", lambda: jf.nn.sparse_softmax_cross_entropy_with_logits(jf.constant([0]), jf.ones([1, 0])),
     jf.errors.InvalidArgumentError, r"not in \[0, 0\)"),
    ("sparse_rank", lambda: jf.nn.sparse_softmax_cross_entropy_with_logits(jf.constant([[0, 1]]), jf.ones([2, 3])),
     ValueError, "rank"),
    ("sparse_shape", lambda: jf.nn.sparse_softmax_cross_entropy_with_logits(jf.constant([0, 1, 2]), jf.ones([2, 3])),
     ValueError, "except for the last dimension"),
    ("sparse_float_labels", lambda: jf.nn.sparse_softmax_cross_entropy_with_logits(jf.ones([2]), jf.ones([2, 3])),
     TypeError, "int32 or int64"),
    ("sparse_int_logits", lambda: jf.nn.sparse_softmax_cross_entropy_with_logits(jf.constant([0]), [[1, 2]]),
     TypeError, "float"),
    ("sparse_scalar_logits", lambda: jf.nn.sparse_softmax_cross_entropy_with_logits(jf.constant(0), 1.0),
     ValueError, "scalar"),
    ("sigmoid_shape", lambda: jf.nn.sigmoid_cross_entropy_with_logits(labels=[0.0, 1.0], logits=[1.0, 2.0, 3.0]),
     ValueError, "same shape"),
    ("sigmoid_missing", lambda: jf.nn.sigmoid_cross_entropy_with_logits(logits=[1.0]), ValueError, "Both"),
    ("weighted_shape", lambda: jf.nn.weighted_cross_entropy_with_logits([0.0, 1.0], [1.0, 2.0, 3.0], 2.0),
     ValueError, "same shape"),
    ("l2_loss_int", lambda: jf.nn.l2_loss(jf.constant([1, 2])), TypeError, "L2Loss"),
    ("elu_int", lambda: jf.nn.elu(jf.constant([1, 2])), (TypeError, jf.errors.InvalidArgumentError), "Elu"),
    ("softplus_int", lambda: jf.math.log_sigmoid(jf.constant([1])), (TypeError, jf.errors.InvalidArgumentError),
     "Softplus"),
]


@pytest.mark.parametrize("name", [e[0] for e in ERRORS])
def test_errors(name):
    _, call, exc, match = next(e for e in ERRORS if e[0] == name)
    with pytest.raises(exc, match=match):
        call()


def test_one_hot_with_a_class_count_known_at_run_time_compiles():
    """The sparse loss's one_hot takes its depth from the logits' shape: under an all-None
    signature it is computed at run time, before the kernels run, and compiles."""
    f = jf.function(lambda i, d: jf.one_hot(i, jf.shape(d)[0]), jit_compile=True,
                    input_signature=[jf.TensorSpec([None], jf.int32), jf.TensorSpec([None], jf.float32)])
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_array_equal(f(jf.constant([0, 2, 7]), jf.ones([4])).numpy(), np.eye(4)[[0, 2]].tolist() + [[0] * 4])
    np.testing.assert_array_equal(f(jf.constant([1]), jf.ones([2])).numpy(), [[0, 1]])
    assert jf.debugging.stats()["cluster_runs"] - before == 2


@pytest.mark.parametrize("mode", ["function", "jit_compile"])
def test_sparse_label_out_of_range_when_traced_and_compiled(mode):
    f = jf.function(jf.nn.sparse_softmax_cross_entropy_with_logits, jit_compile=mode == "jit_compile")
    np.testing.assert_allclose(f(jf.constant([0, 2]), jf.zeros([2, 3])).numpy(), [np.log(3)] * 2, rtol=1e-6)
    with pytest.raises(jf.errors.InvalidArgumentError):
        f(jf.constant([0, 3]), jf.zeros([2, 3]))


def test_clipping_edge_values():
    x = jf.constant([[1.0, 2.0], [3.0, 4.0]])
    # TF 2.21: a min above max is no error; every element becomes min.
    np.testing.assert_array_equal(jf.clip_by_value(x, 5.0, 2.0).numpy(), np.full((2, 2), 5.0))
    np.testing.assert_array_equal(jf.clip_by_value(jf.constant([1, 5, 9]), 2, 6).numpy(), [2, 5, 6])
    got = jf.clip_by_value(jf.constant([np.nan, 1.0]), 0.0, 0.5).numpy()
    assert np.isnan(got[0]) and got[1] == 0.5
    np.testing.assert_array_equal(jf.clip_by_norm(jf.zeros([3]), 1.0).numpy(), np.zeros(3))
    assert jf.linalg.global_norm([]).numpy() == 0.0
    clipped, norm = jf.clip_by_global_norm([jf.constant([np.inf, 1.0]), None, jf.constant([2.0])], 1.0)
    assert norm.numpy() == np.inf and clipped[1] is None
    assert np.isnan(clipped[0].numpy()).all() and np.isnan(clipped[2].numpy()).all()
    clipped, norm = jf.clip_by_global_norm([x], 1.0, use_norm=jf.constant(100.0))
    np.testing.assert_allclose(clipped[0].numpy(), x.numpy() / 100, rtol=1e-6)
    np.testing.assert_array_equal(jf.clip_by_global_norm([x], 0.0)[0][0].numpy(), np.zeros((2, 2)))


def test_loss_edge_values():
    # TF 2.21's values: stable at +-1000, NaN propagates, inf logits give NaN where TF does.
    np.testing.assert_array_equal(
        jf.nn.sigmoid_cross_entropy_with_logits(labels=[0.0, 1.0], logits=[-1000.0, 1000.0]).numpy(), [0, 0])
    got = jf.nn.sigmoid_cross_entropy_with_logits(labels=[0.0, 1.0, 0.0, 1.0],
                                                  logits=[np.inf, np.inf, -np.inf, -np.inf]).numpy()
    assert np.isnan(got[:3]).all() and got[3] == np.inf
    got = jf.nn.weighted_cross_entropy_with_logits([0.0, 1.0, 0.0, 1.0], [np.inf, np.inf, -np.inf, -np.inf], 2.0)
    assert got.numpy()[0] == np.inf and np.isnan(got.numpy()[1:]).all()
    assert np.isnan(jf.nn.softmax_cross_entropy_with_logits([[0.0, 1.0]], [[np.inf, 0.0]]).numpy()).all()
    loss = jf.nn.softmax_cross_entropy_with_logits([[1.0, 0.0, 0.0]], [[1000.0, 0.0, -1000.0]]).numpy()
    assert loss[0] == 0 and not np.signbit(loss[0])
    np.testing.assert_array_equal(jf.nn.softmax_cross_entropy_with_logits(jf.zeros([2, 0]), jf.zeros([2, 0])), [0, 0])
    assert jf.nn.sparse_softmax_cross_entropy_with_logits(jf.zeros([0], jf.int32), jf.zeros([0, 3])).shape == (0,)
    assert jf.nn.l2_loss(jf.zeros([0])).numpy() == 0 and jf.nn.l2_loss([np.inf, 1.0]).numpy() == np.inf


# ---- softmax's axis ------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [jf.nn.softmax, jf.nn.log_softmax], ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [2, 5, -3])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_softmax_axis_out_of_range_raises(fn, axis, mode):
    # The axis was taken modulo the rank. TF: InvalidArgumentError
    # "`dim` must be in the range [-2, 2) where 2 is the number of dimensions in the input."
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"`dim` must be in the range \[-2, 2\)"):
        eager_and_traced(lambda x: fn(x, axis=axis))[mode](jf.ones([2, 3]))


def test_softmax_valid_axes_still_work():
    # The axis check keeps accepting in-range axes, negative ones included.
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for axis in (0, 1, -1, -2):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        np.testing.assert_allclose(jf.nn.softmax(x, axis=axis).numpy(), e / e.sum(axis=axis, keepdims=True),
                                   rtol=1e-5)
