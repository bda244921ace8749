"""Row-reduction fusion: softmax, log-softmax, layer norm (by hand and Keras's layer), RMS norm
and the cross-entropies over the last axis, and their gradients, compiled into row groups that
run each row through its reductions and elementwise work in cache. Results against float64
numpy at many shapes (one row, no rows, odd widths), gradients against finite differences;
every compiled case asserts that compiled code and the fused row path ran."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf

SHAPES = [(1, 7), (5, 13), (4, 33), (3, 1024), (130, 257), (2, 3, 17), (0, 9)]
EPS = 1e-5


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def _layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + EPS) * g + b


def _rms_norm(x, g):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * g


def _xent(labels, x):
    return -(labels * _log_softmax(x)).sum(-1)


def _sparse_xent(labels, x):
    ls = _log_softmax(x)
    return -np.take_along_axis(ls, labels[..., None], -1)[..., 0]


def jf_layer_norm(x, g, b):
    mu = jf.reduce_mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = jf.reduce_mean(d * d, axis=-1, keepdims=True)
    return d * jf.math.rsqrt(var + EPS) * g + b


def jf_rms_norm(x, g):
    return x * jf.math.rsqrt(jf.reduce_mean(jf.square(x), axis=-1, keepdims=True) + EPS) * g


def workloads(shape, rng, dtype=np.float32):
    """name -> (jitflow function, its inputs as numpy, the float64 numpy reference)."""
    w = shape[-1]
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    g = rng.uniform(0.5, 1.5, w).astype(dtype)
    b = rng.standard_normal(w).astype(dtype)
    labels = rng.uniform(0, 1, shape).astype(dtype)
    labels /= np.maximum(labels.sum(-1, keepdims=True), 1e-3)
    ids = rng.integers(0, w, shape[:-1]).astype(np.int32)
    f64 = lambda *a: [v.astype(np.float64) if v.dtype.kind == "f" else v for v in a]
    return {
        "softmax": (lambda v: jf.nn.softmax(v), [x], lambda v: _softmax(*f64(v))),
        "log_softmax": (
            lambda v: jf.nn.log_softmax(v * 0.5 + 1.0),
            [x],
            lambda v: _log_softmax(*f64(v * 0.5 + 1.0)),
        ),
        "softmax_consumer": (
            lambda v, gg: jf.nn.softmax(v) * gg + 1.0,
            [x, g],
            lambda v, gg: _softmax(*f64(v)) * gg + 1.0,
        ),
        "layer_norm": (jf_layer_norm, [x, g, b], lambda *a: _layer_norm(*f64(*a))),
        "rms_norm": (jf_rms_norm, [x, g], lambda *a: _rms_norm(*f64(*a))),
        "softmax_xent": (
            lambda lab, v: jf.nn.softmax_cross_entropy_with_logits(lab, v),
            [labels, x],
            lambda *a: _xent(*f64(*a)),
        ),
        "sparse_xent": (
            lambda lab, v: jf.nn.sparse_softmax_cross_entropy_with_logits(lab, v),
            [ids, x],
            lambda lab, v: _sparse_xent(lab, *f64(v)),
        ),
    }


NAMES = list(workloads((2, 3), np.random.default_rng(0)))


def _run_counted(mode, fn, args):
    before = jf.debugging.stats()["row_group_runs"]
    out = run_mode(mode, fn, *[jf.constant(a) for a in args])
    return out, jf.debugging.stats()["row_group_runs"] - before


@pytest.mark.parametrize("mode", ["jit_compile", "jit_scope"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_row_workloads_match_float64(name, shape, mode):
    fn, args, ref = workloads(shape, np.random.default_rng(1))[name]
    out, groups = _run_counted(mode, fn, args)
    want = ref(*args)
    got = out.numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    rows = int(np.prod(shape[:-1]))
    assert groups >= (1 if rows else 0), "the fused row path did not run"


@pytest.mark.parametrize("name", NAMES)
def test_row_workloads_float64(name):
    fn, args, ref = workloads((6, 45), np.random.default_rng(2), np.float64)[name]
    out, groups = _run_counted("jit_compile", fn, args)
    np.testing.assert_allclose(out.numpy(), ref(*args), rtol=1e-12, atol=1e-12)
    assert groups >= 1


def test_keras_layer_normalization_fuses():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((37, 96)).astype(np.float32)
    layer = jf.keras.layers.LayerNormalization(epsilon=1e-3)
    layer.build((None, 96))
    layer.gamma.assign(rng.uniform(0.5, 1.5, 96).astype(np.float32))
    layer.beta.assign(rng.standard_normal(96).astype(np.float32))
    g, b = layer.gamma.numpy().astype(np.float64), layer.beta.numpy().astype(np.float64)
    before = jf.debugging.stats()["row_group_runs"]
    out = jf.function(lambda v: layer(v), jit_compile=True)(jf.constant(x))
    assert jf.debugging.stats()["row_group_runs"] > before
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    want = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + 1e-3) * g + b
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


def test_special_values_follow_the_eager_kernels():
    x = np.array(
        [[0.0, -np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0, 3.0], [-np.inf] * 4, [1e30, -1e30, 0.0, 5.0]],
        np.float32,
    )
    for f in (jf.nn.softmax, jf.nn.log_softmax):
        want = f(jf.constant(x)).numpy()
        got, groups = _run_counted("jit_compile", f, [x])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=0)
        assert groups >= 1


def _grad_case(name):
    """(loss of jitflow tensors, loss of float64 numpy arrays, inputs) for a gradient check."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 11))
    g = rng.uniform(0.5, 1.5, 11)
    b = rng.standard_normal(11)
    wt = rng.standard_normal((5, 11))
    labels = rng.uniform(0, 1, (5, 11))
    labels /= labels.sum(-1, keepdims=True)
    ids = rng.integers(0, 11, 5).astype(np.int32)
    wj = jf.constant(wt)
    cases = {
        "softmax": (lambda v: jf.reduce_sum(jf.nn.softmax(v) * wj), lambda v: (_softmax(v) * wt).sum(), [x]),
        "log_softmax": (
            lambda v: jf.reduce_sum(jf.nn.log_softmax(v) * wj),
            lambda v: (_log_softmax(v) * wt).sum(),
            [x],
        ),
        "layer_norm": (
            lambda v, gg, bb: jf.reduce_sum(jf_layer_norm(v, gg, bb) * wj),
            lambda v, gg, bb: (_layer_norm(v, gg, bb) * wt).sum(),
            [x, g, b],
        ),
        "rms_norm": (
            lambda v, gg: jf.reduce_sum(jf_rms_norm(v, gg) * wj),
            lambda v, gg: (_rms_norm(v, gg) * wt).sum(),
            [x, g],
        ),
        "softmax_xent": (
            lambda v: jf.reduce_sum(jf.nn.softmax_cross_entropy_with_logits(labels, v)),
            lambda v: _xent(labels, v).sum(),
            [x],
        ),
        "sparse_xent": (
            lambda v: jf.reduce_sum(jf.nn.sparse_softmax_cross_entropy_with_logits(ids, v)),
            lambda v: _sparse_xent(ids, v).sum(),
            [x],
        ),
    }
    return cases[name]


def _numeric_grad(f, args, i, h=1e-6):
    a = [v.copy() for v in args]
    grad = np.zeros_like(a[i])
    for k in np.ndindex(a[i].shape):
        keep = a[i][k]
        a[i][k] = keep + h
        up = f(*a)
        a[i][k] = keep - h
        grad[k] = (up - f(*a)) / (2 * h)
        a[i][k] = keep
    return grad


@pytest.mark.parametrize(
    "name", ["softmax", "log_softmax", "layer_norm", "rms_norm", "softmax_xent", "sparse_xent"]
)
def test_gradients_fuse_and_match_finite_differences(name):
    loss, ref, args = _grad_case(name)

    def grads(*vs):
        with jf.GradientTape() as tape:
            tape.watch(list(vs))
            l = loss(*vs)
        return tape.gradient(l, list(vs))

    before = jf.debugging.stats()["row_group_runs"]
    got = run_mode("jit_compile", grads, *[jf.constant(a) for a in args])
    # The forward and the backward pass each run a row group; the dense cross-entropy's
    # backward has no row reduction left (its softmax is exp(logits - lse), with lse from the
    # forward group), so only its forward is one.
    assert jf.debugging.stats()["row_group_runs"] - before >= (1 if name == "softmax_xent" else 2)
    for i, gi in enumerate(got):
        np.testing.assert_allclose(gi.numpy(), _numeric_grad(ref, args, i), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("axis", [0, 1])
def test_other_axes_stay_correct(axis):
    """Softmax and a mean over a leading or middle axis are no row groups; they keep the
    column-reduction path and its results."""
    x = np.random.default_rng(5).standard_normal((6, 7, 9)).astype(np.float32)

    def f(v):
        return jf.nn.softmax(v, axis=axis) + jf.reduce_mean(v, axis=axis, keepdims=True)

    out = run_mode("jit_compile", f, jf.constant(x)).numpy()
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis, keepdims=True))
    want = e / e.sum(axis, keepdims=True) + x64.mean(axis, keepdims=True)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6)


def test_group_value_read_outside_is_kept():
    """A row group's intermediate that the function also returns (the exponentials) is a real
    buffer, not row scratch: both outputs are right."""
    x = np.random.default_rng(6).standard_normal((33, 70)).astype(np.float32)

    def f(v):
        e = jf.exp(v - jf.reduce_max(v, axis=-1, keepdims=True))
        return e / jf.reduce_sum(e, axis=-1, keepdims=True), e

    (p, e), groups = _run_counted("jit_compile", f, [x])
    x64 = x.astype(np.float64)
    want_e = np.exp(x64 - x64.max(-1, keepdims=True))
    np.testing.assert_allclose(e.numpy(), want_e, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(p.numpy(), want_e / want_e.sum(-1, keepdims=True), rtol=1e-6, atol=1e-7)
    assert groups >= 1


def test_shapes_change_between_calls():
    """One compiled function over rows of several widths and counts (dims are run-time
    parameters, so the row scratch is sized per call)."""
    f = jf.function(
        lambda v: jf.nn.softmax(v),
        jit_compile=True,
        input_signature=[jf.TensorSpec([None, None], jf.float32)],
    )
    rng = np.random.default_rng(7)
    for shape in [(3, 5), (17, 2049), (1, 3), (40, 64)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(
            f(jf.constant(x)).numpy(), _softmax(x.astype(np.float64)), rtol=2e-6, atol=1e-7
        )


def test_reductions_after_a_full_row_part_share_its_loop():
    """A reduction right after a full-row part accumulates in that part's loop: a sum and a
    NaN-propagating max of a value the function also returns, and a row-local value read by
    two outputs of one part (kept intact until the last of them is stored)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((21, 300)).astype(np.float32)
    x[3, 17] = np.nan
    x[5, :] = -np.inf

    def f(v):
        y = jf.nn.relu(v - jf.reduce_mean(v, axis=-1, keepdims=True))
        top = jf.reduce_max(y, axis=-1, keepdims=True)
        total = jf.reduce_sum(y * y, axis=-1, keepdims=True)
        e = jf.exp(y - top)
        s = jf.reduce_sum(e, axis=-1, keepdims=True)
        return y, top, total, e / s, e * 2.0 / s

    outs, groups = _run_counted("jit_compile", f, [x])
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        y = np.maximum(x64 - x64.mean(-1, keepdims=True), 0.0)
        y[np.isnan(x64 - x64.mean(-1, keepdims=True))] = np.nan  # relu keeps NaN
        top = y.max(-1, keepdims=True)
        total = (y * y).sum(-1, keepdims=True)
        e = np.exp(y - top)
        s = e.sum(-1, keepdims=True)
    for got, want in zip(outs, [y, top, total, e / s, e * 2.0 / s]):
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-6)
    assert groups >= 1


def _row_loop_ir(tmp_path, name, stage="before_opt"):
    """The dumped LLVM IR of `name`'s single compiled cluster, compiled in a fresh process
    without the compile cache."""
    script = textwrap.dedent(f"""
        import numpy as np, jitflow as jf
        x = jf.constant(np.ones((8, 40), np.float32))
        fns = {{"softmax": jf.nn.softmax, "log_softmax": jf.nn.log_softmax,
                "xent": lambda v: jf.nn.softmax_cross_entropy_with_logits(v * 0.5, v)}}
        jf.function(lambda v: fns[{name!r}](v), jit_compile=True)(x)
    """)
    env = dict(os.environ, JITFLOW_CACHE_DIR="off", JITFLOW_DUMP=str(tmp_path))
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    (ll,) = tmp_path.glob(f"*.{stage}.ll")
    return ll.read_text()


def test_cross_entropy_is_one_group_with_unguarded_vector_loops(tmp_path):
    """The cross-entropy's final sum (a TF Sum whose output dims are slots of its own) joins
    the softmax's row group, and the group's values index rows by one set of dims, so LLVM
    vectorizes its loops without a run-time overlap check (which failed on the scratch rows,
    leaving the scalar loop)."""
    before = _row_loop_ir(tmp_path, "xent")
    assert before.count("define ") == 1
    after = (next(tmp_path.glob("*.after_opt.ll"))).read_text()
    assert "vector.body" in after
    assert "vector.memcheck" not in after


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_rows_take_three_passes_without_scratch(tmp_path, name):
    """Softmax and log-softmax: the row max, then one loop that stores the shifted values (or
    their exponentials) into the output row while summing the exponentials, then the output
    finished in place: three loops per row, no scratch row."""
    ir = _row_loop_ir(tmp_path, name)
    loops = [ln.split(":")[0] for ln in ir.splitlines() if re.match(r"^(red|col)\.head\d*:", ln)]
    assert len(loops) == 3, loops
    assert "@malloc" not in ir
