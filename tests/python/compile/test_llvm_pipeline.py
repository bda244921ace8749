"""Which LLVM pipeline compiles a cluster's kernels: the small one (few loop iterations,
known from the graph's static shapes) or LLVM's O2, and that both give the same values."""

import numpy as np
import pytest

import jitflow as jf

rng = np.random.default_rng(7)


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_like(x, h, c, w, u, b):
    """The seed's LSTM cell's math: one fused kernel of sigmoids and tanhs after two matmuls."""
    z = jf.matmul(x, w) + jf.matmul(h, u) + b
    i, f, g, o = jf.split(z, 4, axis=-1)
    c2 = jf.sigmoid(f) * c + jf.sigmoid(i) * jf.tanh(g)
    return jf.sigmoid(o) * jf.tanh(c2)


def lstm_ref(x, h, c, w, u, b):
    z = x.astype(np.float64) @ w + h.astype(np.float64) @ u + b
    i, f, g, o = np.split(z, 4, axis=-1)
    c2 = sigmoid64(f) * c + sigmoid64(i) * np.tanh(g)
    return sigmoid64(o) * np.tanh(c2)


def lstm_args(batch, units):
    shapes = [
        (batch, units),
        (batch, units),
        (batch, units),
        (units, 4 * units),
        (units, 4 * units),
        (4 * units,),
    ]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def run_compiled(fn, args):
    """Output of a fresh jit_compile function, and how many small-pipeline compilations it
    caused; asserts its cluster ran."""
    f = jf.function(fn, jit_compile=True)
    s0 = jf.debugging.stats()
    out = f(*args).numpy()
    s1 = jf.debugging.stats()
    assert s1["cluster_runs"] > s0["cluster_runs"]
    assert s1["compilations"] + s1["cache_hits"] > s0["compilations"] + s0["cache_hits"]
    return out, s1["small_pipeline_compilations"] - s0["small_pipeline_compilations"]


@pytest.fixture
def no_disk_cache(monkeypatch):
    # A disk-cache hit compiles nothing, so the small-pipeline count would not move.
    monkeypatch.setenv("JITFLOW_CACHE_DIR", "off")


def test_small_cell_takes_the_small_pipeline_and_matches_numpy(no_disk_cache):
    args = lstm_args(10, 10)  # a kernel of 100 elements
    out, small = run_compiled(lstm_like, args)
    assert small == 1
    np.testing.assert_allclose(out, lstm_ref(*args), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("batch,units", [(1, 3), (10, 10), (4, 32), (3, 7)])
def test_both_pipelines_give_bit_identical_values(no_disk_cache, monkeypatch, batch, units):
    args = lstm_args(batch, units)
    monkeypatch.setenv("JITFLOW_LLVM_PIPELINE", "small")
    small_out, small = run_compiled(lstm_like, args)
    monkeypatch.setenv("JITFLOW_LLVM_PIPELINE", "full")
    full_out, none = run_compiled(lstm_like, args)
    assert (small, none) == (1, 0)
    np.testing.assert_array_equal(small_out, full_out)
    np.testing.assert_allclose(full_out, lstm_ref(*args), rtol=2e-5, atol=2e-6)


def test_large_kernels_keep_the_full_pipeline(no_disk_cache):
    args = lstm_args(64, 64)  # 4,096 elements per gate
    out, small = run_compiled(lstm_like, args)
    assert small == 0
    np.testing.assert_allclose(out, lstm_ref(*args), rtol=2e-5, atol=2e-6)


def test_a_reduction_counts_the_elements_it_folds(no_disk_cache):
    x = rng.standard_normal((4, 1000)).astype(np.float32)  # 4 outputs, 4,000 iterations

    def f(x):
        return jf.reduce_sum(jf.exp(x * 0.5), axis=1)

    out, small = run_compiled(f, [x])
    assert small == 0
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64) * 0.5).sum(axis=1), rtol=1e-5)

    y = rng.standard_normal((4, 8)).astype(np.float32)
    out, small = run_compiled(f, [y])
    assert small == 1
    np.testing.assert_allclose(out, np.exp(y.astype(np.float64) * 0.5).sum(axis=1), rtol=1e-5)


def test_unknown_dims_take_the_full_pipeline(no_disk_cache):
    # The kernel may run at any size, so it is compiled for large ones.
    f = jf.function(
        lambda x: jf.tanh(x * 2.0 + 1.0),
        jit_compile=True,
        input_signature=[jf.TensorSpec([None], jf.float32)],
    )
    s0 = jf.debugging.stats()
    for n in (5, 3000):
        x = rng.standard_normal(n).astype(np.float32)
        np.testing.assert_allclose(f(x).numpy(), np.tanh(x.astype(np.float64) * 2 + 1), rtol=1e-5, atol=1e-6)
    s1 = jf.debugging.stats()
    assert s1["cluster_runs"] - s0["cluster_runs"] == 2
    assert s1["small_pipeline_compilations"] == s0["small_pipeline_compilations"]


def test_the_same_kernel_at_a_larger_size_compiles_again_fully(no_disk_cache):
    # The pipeline is part of the cache key: code compiled for 6 elements is not reused at
    # 50,000, though the kernel serves every size.
    def f(x):
        return jf.sigmoid(x) * jf.tanh(x)

    s0 = jf.debugging.stats()
    for n in (6, 50_000):
        x = rng.standard_normal(n).astype(np.float32)
        out, _ = run_compiled(f, [x])
        np.testing.assert_allclose(out, sigmoid64(x) * np.tanh(x), rtol=2e-5, atol=2e-6)
    s1 = jf.debugging.stats()
    assert s1["small_pipeline_compilations"] - s0["small_pipeline_compilations"] == 1
    assert s1["compilations"] - s0["compilations"] == 2
