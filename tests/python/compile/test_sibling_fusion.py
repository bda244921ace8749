"""Sibling fusion: same-shape elementwise loop steps of a cluster merge into one loop when the
later one reads the earlier ones only at its own index (Adam's m, v and parameter updates).
Values against float64 numpy, reads that must not fuse (transposed, rotated, broadcast), the
number of loops emitted (from a child process's JITFLOW_DUMP), and jf.optimizers.Adam."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitflow as jf


def compiled(fn):
    def body(*args):
        with jf.jit_scope():
            return fn(*args)
    return jf.function(body)


def adam_like(m, v, p, g):
    m2 = m + (g - m) * 0.1
    v2 = v + (g * g - v) * 0.001
    return m2, v2, p - 0.01 * m2 / (jf.sqrt(v2) + 1e-7)


def transposed_reads(x):
    a = jf.exp(x)
    b = a + jf.transpose(a)                                 # a at the transposed index
    c = jf.exp(jf.transpose(x)) * 2.0 - a                   # a at its own index
    d = a * jf.concat([a[1:], a[:1]], axis=0)               # a rotated by a row
    return a, b, c, d


def broadcast_reads(mat, row, col):
    r = jf.exp(row)                                         # [n], read broadcast into [m, n]
    o1 = mat + r
    o2 = o1 * r - mat
    o3 = o2 * col + o1                                      # col is [m, 1]
    return o1, o2, o3


def assert_all_close(got, want, dtype):
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for g, w in zip(got, want):
        g = g.numpy()
        assert g.dtype == dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


SIZES = {"small": 5, "parallel": 200}  # 200x200 splits across threads (64-element parts)


@pytest.mark.parametrize("n", list(SIZES.values()), ids=list(SIZES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_adam_like_update_returns_all_three(dtype, n, rng):
    m, p, g = (rng.standard_normal((n, n + 3)).astype(dtype) for _ in range(3))
    v = rng.uniform(0.0, 2.0, (n, n + 3)).astype(dtype)
    f = compiled(adam_like)
    m64, v64, p64, g64 = (a.astype(np.float64) for a in (m, v, p, g))
    m2 = m64 + (g64 - m64) * 0.1
    v2 = v64 + (g64 * g64 - v64) * 0.001
    assert_all_close(f(m, v, p, g), [m2, v2, p64 - 0.01 * m2 / (np.sqrt(v2) + 1e-7)], dtype)
    assert len(f.get_concrete_function(m, v, p, g).clusters) == 1


@pytest.mark.parametrize("n", list(SIZES.values()), ids=list(SIZES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_outputs_read_through_transpose_and_rotation(dtype, n, rng):
    x = rng.uniform(-1.0, 1.0, (n, n)).astype(dtype)
    f = compiled(transposed_reads)
    a = np.exp(x.astype(np.float64))
    want = [a, a + a.T, np.exp(x.T.astype(np.float64)) * 2.0 - a, a * np.concatenate([a[1:], a[:1]], 0)]
    assert_all_close(f(x), want, dtype)
    assert len(f.get_concrete_function(x).clusters) == 1


@pytest.mark.parametrize("n", list(SIZES.values()), ids=list(SIZES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_outputs_with_broadcast_reads(dtype, n, rng):
    mat = rng.standard_normal((n + 1, n)).astype(dtype)
    row = rng.uniform(-1.0, 1.0, n).astype(dtype)
    col = rng.standard_normal((n + 1, 1)).astype(dtype)
    f = compiled(broadcast_reads)
    mat64, r = mat.astype(np.float64), np.exp(row.astype(np.float64))
    o1 = mat64 + r
    o2 = o1 * r - mat64
    assert_all_close(f(mat, row, col), [o1, o2, o2 * col + o1], dtype)
    assert len(f.get_concrete_function(mat, row, col).clusters) == 1


@jf.function(input_signature=[jf.TensorSpec([None, None]), jf.TensorSpec([None, None])])
def unrelated_dims(x, y):
    with jf.jit_scope():
        a = x * 2.0
        s = jf.reduce_sum(a)
        return a, y * 3.0 + s, x - s, jf.exp(y) + s, a * y[:1, :1]


@pytest.mark.parametrize("sx,sy", [((40, 50), (40, 50)), ((40, 50), (7, 300)), ((2, 3), (300, 200)),
                                   ((300, 300), (1, 1)), ((300, 200), (200, 300))])
def test_run_time_dims_of_different_inputs_never_share_a_loop(sx, sy, rng):
    # One trace for all shapes: x-shaped and y-shaped values must keep loops of their own.
    x, y = rng.standard_normal(sx).astype(np.float32), rng.standard_normal(sy).astype(np.float32)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    s = (x64 * 2.0).sum()
    want = [x64 * 2.0, y64 * 3.0 + s, x64 - s, np.exp(y64) + s, x64 * 2.0 * y64[0, 0]]
    for g, w in zip(unrelated_dims(x, y), want):
        g = g.numpy()
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6 * np.abs(x64).sum())
    assert unrelated_dims.experimental_get_tracing_count() == 1
    assert len(unrelated_dims.get_concrete_function().clusters) == 1


def _loops_per_function(tmp_path):
    """Compiles each function once in a fresh process (no compile cache) and reads, from the
    dumped LLVM IR, the loops emitted for its cluster: the number of values each one stores."""
    names = ["adam_like", "transposed_reads", "broadcast_reads"]
    script = textwrap.dedent(f"""
        import os, sys
        import numpy as np
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import test_sibling_fusion as t
        x = np.ones((6, 6), np.float32)
        args = {{"adam_like": (x, x, x, x), "transposed_reads": (x,), "broadcast_reads": (x, x[0], x[:, :1])}}
        for name in {names!r}:
            os.environ["JITFLOW_DUMP"] = os.path.join({str(tmp_path)!r}, name)
            os.mkdir(os.environ["JITFLOW_DUMP"])
            t.compiled(getattr(t, name))(*args[name])
    """)
    env = dict(os.environ, JITFLOW_CACHE_DIR="off")
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    out = {}
    for name in names:
        (ll,) = (tmp_path / name).glob("*.before_opt.ll")
        stores = []
        for line in ll.read_text().splitlines():
            if line.startswith("define "):
                stores.append(0)
            elif line.lstrip().startswith("store "):
                stores[-1] += 1
        out[name] = sorted(stores)
    return out


def test_fusion_merges_loops_only_where_reads_are_at_the_own_index(tmp_path):
    loops = _loops_per_function(tmp_path)
    assert loops["adam_like"] == [3]            # m2, v2 and p2 in one loop
    # a and c (a at its own index); b and d read a elsewhere, so not in a's loop, but a is
    # ready before theirs, so they share one
    assert loops["transposed_reads"] == [2, 2]
    assert loops["broadcast_reads"] == [1, 3]   # exp(row) alone ([n]); o1, o2, o3 ([m, n])


def _problem():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((96, 64)).astype(np.float32)
    y = rng.uniform(-0.5, 0.5, (96, 40)).astype(np.float32)
    return x, y, rng.standard_normal((64, 40)).astype(np.float32) * 0.1, rng.standard_normal(40).astype(np.float32)


def _train(mode, steps=5):
    x, y, w0, b0 = _problem()
    w, b = jf.Variable(w0), jf.Variable(b0)
    opt = jf.optimizers.Adam(0.01)

    def step(x, y):
        with jf.GradientTape() as tape:
            loss = jf.reduce_mean(jf.square(jf.tanh(jf.matmul(x, w) + b) - y))
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    run = {"eager": step, "compiled": compiled(step)}[mode]
    for _ in range(steps):
        run(x, y)
    if mode == "compiled":
        assert run.get_concrete_function(x, y).clusters
    return [w.numpy(), b.numpy()], opt


def _adam_reference(steps=5, lr=0.01, b1=0.9, b2=0.999, eps=1e-7):
    x, y, w, b = (a.astype(np.float64) for a in _problem())
    params, ms, vs = [w, b], [0.0, 0.0], [0.0, 0.0]
    for t in range(1, steps + 1):
        h = np.tanh(x @ params[0] + params[1])
        dh = 2.0 * (h - y) / h.size * (1.0 - h * h)
        alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        for i, g in enumerate([x.T @ dh, dh.sum(0)]):
            ms[i] = ms[i] + (g - ms[i]) * (1 - b1)
            vs[i] = vs[i] + (g * g - vs[i]) * (1 - b2)
            params[i] = params[i] - alpha * ms[i] / (np.sqrt(vs[i]) + eps)
    return params


def test_adam_optimizer_compiled_equals_eager_and_numpy():
    eager, eager_opt = _train("eager")
    comp, comp_opt = _train("compiled")
    for e, c, r in zip(eager, comp, _adam_reference()):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c, r, rtol=1e-4, atol=1e-5)
        assert np.abs(c - _problem()[2 + (c.ndim == 1)]).max() > 0.01  # it did train
    for e, c in zip(eager_opt.variables, comp_opt.variables):  # iterations and the m, v slots
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-5, atol=1e-5 * np.abs(e.numpy()).max())
    assert int(comp_opt.iterations.numpy()) == 5
