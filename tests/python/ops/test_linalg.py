"""jf.linalg's structure ops (band_part, diag, diag_part, set_diag, trace, matrix_transpose,
adjoint, matvec) and norm against float64 numpy references in the five modes (compiled ones
asserting compiled code ran), their dtypes, empty and size-1 dims, finite-difference gradients,
and TF 2.21's errors."""
import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]
SHAPES = [(3, 4), (2, 4, 3), (1, 1), (2, 0, 3), (3, 3)]


def band_ref(x, lo, hi):
    m, n = x.shape[-2:]
    d = np.arange(n)[None, :] - np.arange(m)[:, None]
    keep = ((lo < 0) | (-d <= lo)) & ((hi < 0) | (d <= hi))
    return np.where(keep, x, 0)


def diag_part_ref(x, k):
    m, n = x.shape[-2:]
    rows = range(max(-k, 0), min(m, n - k))
    return np.stack([x[..., i, i + k] for i in rows], -1) if len(rows) else np.zeros(x.shape[:-2] + (0,), x.dtype)


def set_diag_ref(x, d, k):
    y = x.copy()
    m, n = x.shape[-2:]
    for t, i in enumerate(range(max(-k, 0), min(m, n - k))):
        y[..., i, i + k] = d[..., t]
    return y


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lo,hi", [(0, -1), (-1, 0), (1, 1), (0, 0), (-1, -1)])
def test_band_part(shape, lo, hi, mode, rng):
    if shape[-2] < max(lo, 0) or shape[-1] < max(hi, 0):
        return
    x = rng.standard_normal(shape).astype(np.float32)
    got = run_mode(mode, lambda a: jf.linalg.band_part(a, lo, hi), jf.constant(x))
    np.testing.assert_array_equal(got.numpy(), band_ref(x, lo, hi))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("k", [0, 1, -1])
def test_diag_part_set_diag_trace(shape, k, mode, rng):
    if not -shape[-2] <= k <= shape[-1]:
        return
    x = rng.standard_normal(shape).astype(np.float32)
    want = diag_part_ref(x, k)
    got = run_mode(mode, lambda a: jf.linalg.diag_part(a, k=k), jf.constant(x))
    np.testing.assert_array_equal(got.numpy(), want)
    d = rng.standard_normal(want.shape).astype(np.float32)
    got = run_mode(mode, lambda a, b: jf.linalg.set_diag(a, b, k=k), jf.constant(x), jf.constant(d))
    np.testing.assert_array_equal(got.numpy(), set_diag_ref(x, d, k))
    got = run_mode(mode, jf.linalg.trace, jf.constant(x))
    np.testing.assert_allclose(got.numpy(), np.trace(x.astype(np.float64), axis1=-2, axis2=-1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,k", [((3,), 0), ((2, 3), 1), ((2, 3), -2), ((1,), 0), ((2, 0), 0)])
def test_diag(shape, k, mode, rng):
    d = rng.standard_normal(shape).astype(np.float32)
    n = shape[-1] + abs(k)
    want = np.zeros(shape[:-1] + (n, n), np.float32)
    for t in range(shape[-1]):
        want[..., t + max(-k, 0), t + max(k, 0)] = d[..., t]
    got = run_mode(mode, lambda a: jf.linalg.diag(a, k=k), jf.constant(d))
    np.testing.assert_array_equal(got.numpy(), want)


def test_diag_arguments():
    d = np.array([1., 2, 3], np.float32)
    got = jf.linalg.diag(d, k=1, num_rows=3)  # TF 2.21: (3, 4)
    np.testing.assert_array_equal(got.numpy(), [[0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 3]])
    got = jf.linalg.diag(d, k=1, num_cols=5, padding_value=9)
    assert got.shape == (3, 5) and got.numpy()[0, 0] == 9 and got.numpy()[2, 3] == 3
    with pytest.raises(jf.errors.InvalidArgumentError, match="not consistent"):
        jf.linalg.diag(d, k=1, num_rows=5, num_cols=5)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(jf.linalg.diag_part(x, k=(-1, 1)).numpy(), [[1, 6, 11], [0, 5, 10], [4, 9, 0]])
    np.testing.assert_array_equal(jf.linalg.diag_part(x, k=(-1, 1), align="LEFT_RIGHT").numpy(),
                                  [[1, 6, 11], [0, 5, 10], [0, 4, 9]])


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.bool_])
def test_structure_dtypes(dtype, rng):
    x = (rng.integers(0, 3, (2, 3, 3)) > 0).astype(dtype)
    for mode in ("eager", "jit_compile"):
        got = run_mode(mode, lambda a: jf.linalg.band_part(a, 0, -1), jf.constant(x))
        assert got.numpy().dtype == dtype
        np.testing.assert_array_equal(got.numpy(), band_ref(x, 0, -1))
        got = run_mode(mode, jf.linalg.diag_part, jf.constant(x))
        np.testing.assert_array_equal(got.numpy(), diag_part_ref(x, 0))


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
def test_structure_gradients(mode, rng):
    x = rng.standard_normal((2, 3, 4))
    d = rng.standard_normal((2, 3))
    w = rng.standard_normal((2, 3, 4))

    def fn(a, b):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            y = jf.reduce_sum(jf.linalg.band_part(a, 1, 0) * w) + jf.reduce_sum(jf.linalg.trace(a[..., :3]) ** 2)
            y += jf.reduce_sum(jf.linalg.set_diag(a, b, k=1) * w * w) + jf.reduce_sum(jf.linalg.diag_part(a) * b)
        return tape.gradient(y, [a, b])

    def ref(a, b):
        y = np.sum(band_ref(a, 1, 0) * w) + np.sum(np.trace(a[..., :3], axis1=-2, axis2=-1) ** 2)
        return y + np.sum(set_diag_ref(a, b, 1) * w * w) + np.sum(diag_part_ref(a, 0) * b)

    got = run_mode(mode, fn, jf.constant(x), jf.constant(d))
    for g, n in zip(got, numeric_grad(ref, [x, d])):
        np.testing.assert_allclose(g.numpy(), n, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_transposes_and_matvec(mode, rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    v = rng.standard_normal((2, 3)).astype(np.float32)
    got = run_mode(mode, jf.linalg.matrix_transpose, jf.constant(a))
    np.testing.assert_array_equal(got.numpy(), np.swapaxes(a, -1, -2))
    got = run_mode(mode, jf.linalg.adjoint, jf.constant(a))
    np.testing.assert_array_equal(got.numpy(), np.swapaxes(a, -1, -2))
    got = run_mode(mode, lambda m, x: jf.linalg.matvec(m, x, transpose_a=True), jf.constant(a), jf.constant(v))
    np.testing.assert_allclose(got.numpy(), np.einsum("bij,bi->bj", a.astype(np.float64), v), rtol=1e-5, atol=1e-5)


NORMS = [("euclidean", None), (1, None), (np.inf, 0), (3, 1), (0.5, -1), ("fro", (0, 1)), (1, (0, 1)),
         (np.inf, (1, 0)), ("euclidean", (-2, -1)), (2, 0)]


def norm_ref(x, ord, axis, keepdims):
    if ord == "euclidean" or ord == "fro":
        ord = "fro" if isinstance(axis, tuple) else None
    if axis is None:
        return np.linalg.norm(x.reshape(-1), ord=ord, keepdims=False).reshape((1,) * x.ndim if keepdims else ())
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ord,axis", NORMS)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm(ord, axis, keepdims, mode, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    got = run_mode(mode, lambda a: jf.norm(a, ord=ord, axis=axis, keepdims=keepdims), jf.constant(x))
    want = norm_ref(x.astype(np.float64), ord, axis, keepdims)
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


@pytest.mark.parametrize("ord,axis", [("euclidean", None), (1, (0, 1)), (3, 1)])
def test_norm_gradient(ord, axis, rng):
    x = rng.standard_normal((3, 4))

    def fn(a):
        with jf.GradientTape() as tape:
            tape.watch(a)
            y = jf.reduce_sum(jf.linalg.norm(a, ord=ord, axis=axis))
        return tape.gradient(y, a)

    got = run_mode("jit_compile", fn, jf.constant(x))
    want = numeric_grad(lambda a: float(np.sum(norm_ref(a, ord, axis, False))), [x])[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


def test_errors():
    v = jf.ones([3])
    with pytest.raises(jf.errors.InvalidArgumentError, match="input must be at least 2-dim, received shape: \\[3\\]"):
        jf.linalg.band_part(v, 1, 1)
    with pytest.raises(jf.errors.InvalidArgumentError, match="num_lower must be negative or less or equal to "
                                                             "number of rows \\(3\\) got: 5"):
        jf.linalg.band_part(jf.ones([3, 4]), 5, 1)
    with pytest.raises(jf.errors.InvalidArgumentError, match="input must be at least 2-dim"):
        jf.linalg.diag_part(v)
    with pytest.raises(jf.errors.InvalidArgumentError, match="input must be at least 2-dim"):
        jf.linalg.trace(v)
    with pytest.raises(jf.errors.InvalidArgumentError, match="lower_diag_index is out of bound: 5"):
        jf.linalg.diag_part(jf.ones([3, 4]), k=5)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Either first dimensions of diagonal"):
        jf.linalg.set_diag(jf.ones([3, 4]), [1., 2.])
    with pytest.raises(ValueError, match="should be a \\(batch\\) matrix with rank >= 2"):
        jf.linalg.matrix_transpose(v)
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm, got -1"):
        jf.norm(v, ord=-1)
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm, got fro"):
        jf.norm(v, ord="fro", axis=0)
    with pytest.raises(ValueError, match="'ord' must be a supported matrix norm in"):
        jf.norm(jf.ones([2, 2]), ord="nuc", axis=(0, 1))


def _aligned_rows(x, lo, hi, align, pad):
    """numpy: the diagonals hi..lo of x as TF stacks them, each padded to the longest on the
    side `align` gives it (superdiagonals by its first word, subdiagonals by its second)."""
    rows = [diag_part_ref(x, d) for d in range(hi, lo - 1, -1)]
    longest = max(r.shape[-1] for r in rows)
    out = []
    for d, r in zip(range(hi, lo - 1, -1), rows):
        side = align.split("_")[0 if d >= 0 else 1]
        width = [(0, 0)] * (r.ndim - 1) + [(longest - r.shape[-1], 0) if side == "RIGHT" else (0, longest - r.shape[-1])]
        out.append(np.pad(r, width, constant_values=pad))
    return np.stack(out, -2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("align", ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"])
@pytest.mark.parametrize("lo,hi", [(0, 1), (-1, 0), (-2, 1)])
def test_diag_and_set_diag_with_a_range_of_k(lo, hi, align, mode, rng):
    # set_diag writes each diagonal where diag_part reads it, so the references are built from
    # the single-diagonal ones; diag of a range fills the smallest square (TF's default size).
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    rows = _aligned_rows(x, lo, hi, align, 0)
    new = -np.abs(rng.standard_normal(rows.shape)).astype(np.float32)
    want = x.copy()
    for i, d in enumerate(range(hi, lo - 1, -1)):
        length = diag_part_ref(x, d).shape[-1]
        side = align.split("_")[0 if d >= 0 else 1]
        vals = new[..., i, rows.shape[-1] - length:] if side == "RIGHT" else new[..., i, :length]
        want = set_diag_ref(want, vals, d)
    got = run_mode(mode, lambda a, b: jf.linalg.set_diag(a, b, k=(lo, hi), align=align), jf.constant(x),
                   jf.constant(new))
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(jf.linalg.diag_part(got, k=(lo, hi), align=align).numpy(),
                                  _aligned_rows(want, lo, hi, align, 0))
    # diag: TF's default size (the smallest square holding the diagonals), padding elsewhere.
    max_len = rows.shape[-1]
    size = max(max_len - min(hi, 0), max_len + max(lo, 0))
    ref = np.full((2, size, size), 7.0, np.float32)
    for i, d in enumerate(range(hi, lo - 1, -1)):
        length = min(size + min(d, 0), size - max(d, 0))
        side = align.split("_")[0 if d >= 0 else 1]
        ref = set_diag_ref(ref, rows[..., i, max_len - length:] if side == "RIGHT" else rows[..., i, :length], d)
    m = run_mode(mode, lambda r: jf.linalg.diag(r, k=(lo, hi), align=align, padding_value=7.0), jf.constant(rows))
    np.testing.assert_array_equal(m.numpy(), ref)
