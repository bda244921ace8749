"""Large matmuls (2*m*n*k >= 4e6): oneDNN sgemm for float32, Eigen for float64 and ints, split
across threads by rows of C (m >= n) or by columns, in parts aligned to 16. Eager and
compiled, every transpose combination, against float64 numpy."""
import numpy as np
import pytest

import jitflow as jf

# (m, k, n): split by rows, by columns, and by rows with a short, narrow C; odd sizes so the
# last part is not a multiple of 16.
SIZES = [(257, 77, 130), (33, 301, 515), (515, 129, 33)]
TRANSPOSES = [(False, False), (True, False), (False, True), (True, True)]


def compiled_matmul(ta, tb, then_sub_one=True):
    """The product compiled as a library step of a cluster, by default followed by a loop."""
    @jf.function
    def f(a, b):
        with jf.jit_scope():
            c = jf.matmul(a, b, transpose_a=ta, transpose_b=tb)
            return c - 1.0 if then_sub_one else c
    return f


def operands(rng, m, k, n, ta, tb, dtype):
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    return a, b, want


def assert_product(got, want, k, dtype):
    got = np.asarray(got)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(max(k, 1)))


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("ta,tb", TRANSPOSES, ids=["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("m,k,n", SIZES, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_large_matmul_matches_numpy(dtype, m, k, n, ta, tb, mode, rng):
    assert 2 * m * n * k >= 4e6  # large enough to be split across threads
    a, b, want = operands(rng, m, k, n, ta, tb, dtype)
    if mode == "eager":
        got = jf.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy()
    else:
        f = compiled_matmul(ta, tb)
        got = f(a, b).numpy() + 1.0
        assert jf.explain(f, a, b).by_op()["MatMul"].status == "compiled"
    assert_product(got, want, k, dtype)


def test_large_int32_matmul_is_exact(rng):
    a = rng.integers(-9, 10, (257, 77)).astype(np.int32)
    b = rng.integers(-9, 10, (130, 77)).astype(np.int32)
    got = jf.matmul(a, b, transpose_b=True).numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.T.astype(np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("ta,tb", TRANSPOSES, ids=["nn", "tn", "nt", "tt"])
def test_k_zero_gives_zeros(ta, tb, dtype):
    a = np.zeros((0, 257) if ta else (257, 0), dtype)
    b = np.zeros((515, 0) if tb else (0, 515), dtype)
    want = np.zeros((257, 515))
    assert_product(jf.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy(), want, 0, dtype)
    assert_product(compiled_matmul(ta, tb)(a, b).numpy() + 1.0, want, 0, dtype)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_batched_matmul_broadcasts(dtype, mode, rng):
    a = rng.standard_normal((3, 64, 300)).astype(dtype)
    b = rng.standard_normal((300, 200)).astype(dtype)
    c = rng.standard_normal((2, 1, 200, 300)).astype(dtype)
    want_ab = a.astype(np.float64) @ b
    want_ac = a.astype(np.float64) @ np.swapaxes(c.astype(np.float64), -1, -2)
    if mode == "eager":
        got_ab, got_ac = jf.matmul(a, b).numpy(), jf.matmul(a, c, transpose_b=True).numpy()
    else:
        @jf.function
        def f(a, b, c):
            with jf.jit_scope():
                return jf.matmul(a, b), jf.matmul(a, c, transpose_b=True)
        got_ab, got_ac = (r.numpy() for r in f(a, b, c))
        assert f.get_concrete_function(a, b, c).clusters
    assert got_ac.shape == (2, 3, 64, 200)
    assert_product(got_ab, want_ab, 300, dtype)
    assert_product(got_ac, want_ac, 300, dtype)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_held_results_unchanged_by_later_calls(mode, rng):
    f = jf.matmul if mode == "eager" else compiled_matmul(False, False, then_sub_one=False)
    pairs = [operands(rng, 257, 77, 130, False, False, np.float32) for _ in range(4)]
    held = [f(a, b) for a, b, _ in pairs]
    views = [h.numpy() for h in held]                 # zero-copy views, kept too
    for _ in range(3):
        for a, b, _ in reversed(pairs):
            f(b.T.copy(), a.T.copy())                 # same sizes the other way round
            f(a, b)
    for (_, _, want), h, v in zip(pairs, held, views):
        assert_product(h.numpy(), want, 77, np.float32)
        assert_product(v, want, 77, np.float32)
    if mode == "compiled":
        assert jf.explain(f, pairs[0][0], pairs[0][1]).by_op()["MatMul"].status == "compiled"
