"""Small matrix products compiled into their cluster (codegen/cpu/cpu_dot.cc) and short rows
run as masked vectors (the small pipeline's folded tails). Values against float64 numpy at
widths around the vector length, 0- and 1-sized dims, transposed A, float32 and float64, in
every compiled mode; each case asserts which path ran (small_dot_runs for the compiled
product, its absence for a product Eigen keeps), and a child's JITFLOW_DUMP shows the folded
tail's masked loads."""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf
from jitflow import _C

DTYPES = [np.float32, np.float64]
# (m, k, n): n around the vector widths (4, 8, 16 lanes; tiles of two vectors), m around the
# tile of four rows, and empty products.
SHAPES = [(10, 10, 40), (1, 1, 1), (3, 7, 13), (5, 3, 16), (4, 9, 17), (7, 5, 31), (9, 2, 33),
          (6, 11, 64), (2, 3, 65), (5, 0, 4), (0, 3, 4), (4, 3, 0), (31, 17, 1), (8, 5, 7), (12, 40, 10),
          (17, 0, 3), (9, 4, 0)]
TRANSPOSED_ROWS = 8  # kernel_ir.h: kSmallDotTransposedRows


@pytest.fixture(autouse=True)
def full_code_first(monkeypatch):
    # A small cluster's first call otherwise runs quickly generated code, whose small
    # products run on Eigen until the full code is in (test_a_tiered_cluster_...).
    monkeypatch.setenv("JITFLOW_TIERED", "0")


def small_dots():
    return jf.debugging.stats()["small_dot_runs"]


def close(got, want, dtype, k):
    tol = (2e-6 if dtype == np.float32 else 1e-14) * max(1, k)
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0))))


@pytest.mark.parametrize("mode", ["jit_compile", "jit_scope"])
@pytest.mark.parametrize("transposes", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["AB", "AtB", "ABt", "AtBt"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_small_product_runs_compiled_and_matches_numpy(shape, dtype, transposes, mode, rng):
    m, k, n = shape
    ta, tb = transposes
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    before = small_dots()
    out = run_mode(mode, lambda x, y: jf.matmul(x, y, transpose_a=ta, transpose_b=tb) * 2.0,
                   jf.constant(a), jf.constant(b))
    # A transposed B is copied first, which pays from TRANSPOSED_ROWS rows of C on.
    compiled = not tb or m >= TRANSPOSED_ROWS
    assert small_dots() == before + compiled, "the product did not run where it should"
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    close(out.numpy(), (a64.T if ta else a64) @ (b64.T if tb else b64) * 2.0, dtype, k)


def test_one_function_serves_small_and_large_products(rng):
    # With unknown dims the same compiled cluster runs each call's size: the small ones on
    # its own code, a product past kSmallDotVolume multiply-adds on Eigen.
    sig = [jf.TensorSpec([None, None], jf.float32)] * 2
    f = jf.function(lambda x, y: jf.matmul(x, y) + 1.0, jit_compile=True, input_signature=sig)
    # A long shared dimension stays on Eigen too (kSmallDotMaxDepth: 128, 64 for one row).
    for (m, k, n), small in [((3, 5, 7), True), ((64, 64, 64), False), ((10, 10, 40), True), ((1, 0, 3), True),
                             ((2, 128, 3), True), ((2, 129, 3), False), ((1, 64, 5), True), ((1, 65, 5), False)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        s0, c0 = small_dots(), jf.debugging.stats()["cluster_runs"]
        out = f(a, b).numpy()
        assert jf.debugging.stats()["cluster_runs"] == c0 + 1
        assert small_dots() == s0 + int(small), (m, k, n)
        close(out, a.astype(np.float64) @ b + 1.0, np.float32, k)


@pytest.mark.parametrize("dtype,shape,tb", [(np.int32, (4, 6, 5), False), (np.float32, (1, 100, 100), True),
                                             (np.float64, (2, 91, 91), True)],
                         ids=["int32", "float32_large_Bt", "float64_large_Bt"])
def test_products_the_code_does_not_take_stay_on_the_library(dtype, shape, tb, rng):
    # Integers keep the library kernel, and so does a transposed B of more elements than the
    # code copies to its stack (kSmallDotTransposedB), though the product is small: same values.
    m, k, n = shape
    a = (rng.standard_normal((m, k)) * 4).astype(dtype)
    b = (rng.standard_normal((n, k) if tb else (k, n)) * 4).astype(dtype)
    s0 = small_dots()
    out = run_mode("jit_compile", lambda x, y: jf.matmul(x, y, transpose_b=tb), jf.constant(a), jf.constant(b))
    assert small_dots() == s0
    want = a.astype(np.float64) @ (b.T if tb else b)
    if dtype == np.int32:
        np.testing.assert_array_equal(out.numpy(), want.astype(np.int64))
    else:
        close(out.numpy(), want, dtype, k)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_gradients_through_compiled_small_products(dtype, rng):
    # A dense layer's gradient: dW = x^T dy is a product with A transposed, dx = dy W^T one
    # with B transposed, both compiled. Against float64 numpy and finite differences.
    x0 = rng.standard_normal((9, 7)).astype(dtype)
    w0 = rng.standard_normal((7, 3)).astype(dtype)

    def loss64(x, w):
        return float((np.tanh(x @ w) ** 2).sum())

    @jf.function(jit_compile=True)
    def grads(x, w):
        with jf.GradientTape() as tape:
            tape.watch([x, w])
            loss = jf.reduce_sum(jf.square(jf.tanh(jf.matmul(x, w))))
        return tape.gradient(loss, [x, w])

    s0 = small_dots()
    gx, gw = grads(jf.constant(x0), jf.constant(w0))
    assert small_dots() == s0 + 3  # the forward product, dx and dW
    x64, w64 = x0.astype(np.float64), w0.astype(np.float64)
    t = np.tanh(x64 @ w64)
    dy = 2 * t * (1 - t * t)
    # 1 - tanh^2 loses digits where tanh is near 1: a looser bound than a product alone.
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-10}
    np.testing.assert_allclose(gx.numpy(), dy @ w64.T, **tol)
    np.testing.assert_allclose(gw.numpy(), x64.T @ dy, **tol)
    eps = 1e-6
    for (i, j) in [(0, 0), (8, 6), (2, 3)]:
        d = np.zeros_like(x64)
        d[i, j] = eps
        fd = (loss64(x64 + d, w64) - loss64(x64 - d, w64)) / (2 * eps)
        assert abs(gx.numpy()[i, j] - fd) < (1e-3 if dtype == np.float32 else 1e-6) * max(1, abs(fd))
    for (i, j) in [(0, 0), (6, 2)]:
        d = np.zeros_like(w64)
        d[i, j] = eps
        fd = (loss64(x64, w64 + d) - loss64(x64, w64 - d)) / (2 * eps)
        assert abs(gw.numpy()[i, j] - fd) < (1e-3 if dtype == np.float32 else 1e-6) * max(1, abs(fd))


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("units", [1, 2, 3, 7, 8, 9, 10, 15, 16, 17, 33])
def test_lstm_cell_rows_of_any_width(units, rng):
    # The gate kernel reads four column blocks of one row: rows of `units` elements, each a
    # folded (masked) vector in the small pipeline. Small and odd widths against numpy.
    batch = 3
    x, h, c = (rng.standard_normal((batch, units)).astype(np.float32) for _ in range(3))
    w, u = (rng.standard_normal((units, 4 * units)).astype(np.float32) * 0.5 for _ in range(2))
    b = rng.standard_normal(4 * units).astype(np.float32)

    def cell(x, h, c, w, u, b):
        z = jf.matmul(x, w) + jf.matmul(h, u) + b
        i, f, g, o = jf.split(z, 4, axis=-1)
        c2 = jf.sigmoid(f) * c + jf.sigmoid(i) * jf.tanh(g)
        return jf.sigmoid(o) * jf.tanh(c2), c2

    s0 = small_dots()
    hn, cn = run_mode("jit_compile", cell, *(jf.constant(v) for v in (x, h, c, w, u, b)))
    assert small_dots() == s0 + 2
    z = x.astype(np.float64) @ w + h.astype(np.float64) @ u + b
    i, f, g, o = np.split(z, 4, axis=-1)
    c2 = sigmoid64(f) * c + sigmoid64(i) * np.tanh(g)
    np.testing.assert_allclose(cn.numpy(), c2, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(hn.numpy(), sigmoid64(o) * np.tanh(c2), rtol=2e-5, atol=2e-5)


def test_short_rows_fold_into_masked_vectors(tmp_path):
    # Rows of 10 elements: the small pipeline's vector loop takes the last partial vector
    # masked, so no scalar remainder loop is left (the dump after optimization has masked
    # loads). x86 with AVX has masked loads; elsewhere only the values are checked.
    script = textwrap.dedent("""
        import numpy as np, jitflow as jf
        z = np.linspace(-3, 3, 400, dtype=np.float32).reshape(10, 40)
        f = jf.function(lambda z: jf.tanh(jf.split(z, 4, axis=1)[1]) * 2.0, jit_compile=True)
        out = f(z).numpy()
        np.testing.assert_allclose(out, np.tanh(z[:, 10:20].astype(np.float64)) * 2, rtol=2e-6, atol=2e-6)
        print("runs", jf.debugging.stats()["cluster_runs"])
    """)
    env = dict(os.environ, JITFLOW_DUMP=str(tmp_path), JITFLOW_CACHE_DIR="off", JITFLOW_TIERED="0")
    env.pop("JITFLOW_CPU", None)  # the host's instructions, which the check below reads
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert "runs 1" in r.stdout
    ir = "".join(p.read_text() for p in tmp_path.glob("*after_opt.ll"))
    assert "define void" in ir
    cpuinfo = pathlib.Path("/proc/cpuinfo")
    flags = cpuinfo.read_text() if cpuinfo.exists() else ""
    if re.search(r"\bavx\b", flags):
        assert "llvm.masked.load" in ir, "the row's tail was not folded into a masked vector"


@pytest.mark.parametrize("tiers", ["both", "quick"])
def test_a_tiered_cluster_runs_its_products_on_eigen_until_the_full_code_is_in(tiers, monkeypatch, rng):
    # A small cluster's quick code has no product code (it would double the first call's
    # compile time): Eigen runs the product until the background thread's full code is in,
    # and for good with JITFLOW_TIERED=quick.
    if tiers == "both":
        monkeypatch.delenv("JITFLOW_TIERED")
    else:
        monkeypatch.setenv("JITFLOW_TIERED", "quick")
    monkeypatch.setenv("JITFLOW_CACHE_DIR", "off")
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    scale = 0.8125 if tiers == "both" else 0.6875  # a cluster no other test has compiled
    f = jf.function(lambda x, y: jf.matmul(x, y) * scale, jit_compile=True)
    want = a.astype(np.float64) @ b * scale
    _C.cpu_wait_for_upgrades()
    s0, c0 = small_dots(), jf.debugging.stats()["cluster_runs"]
    close(f(a, b).numpy(), want, np.float32, 4)
    assert small_dots() == s0 and jf.debugging.stats()["cluster_runs"] == c0 + 1
    _C.cpu_wait_for_upgrades()
    close(f(a, b).numpy(), want, np.float32, 4)
    assert small_dots() == s0 + (tiers == "both")
