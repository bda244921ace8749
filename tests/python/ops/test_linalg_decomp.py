"""jf.linalg's decompositions and solvers (det, slogdet, inv, solve, triangular_solve,
cholesky, cholesky_solve, qr, svd, eigh/eigvalsh, lstsq, norm(ord=2)) against float64
np.linalg in the five modes (the compiled ones asserting compiled code ran: each is a library
step), both float dtypes, empty batches and 0x0 matrices, gradients by finite differences on
well-conditioned inputs (sign-invariant losses for the factors numpy may sign differently), and
TF 2.21's errors."""
import numpy as np
import pytest
from conftest import numeric_grad, run_mode

import jitflow as jf

MODES = ["eager", "function", "signature", "jit_scope", "jit_compile"]
TOL = {np.float32: 2e-4, np.float64: 1e-9}


def general(rng, shape):
    """Well-conditioned square matrices: 3 I plus noise."""
    n = shape[-1]
    return np.eye(n) * 3 + rng.uniform(-1, 1, shape)


def spd(rng, shape):
    a = rng.uniform(-1, 1, shape)
    return a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1]) * shape[-1]


def check(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got), want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1), (0, 2, 2), (2, 0, 0)])
def test_square_ops(shape, dtype, mode, rng):
    a = general(rng, shape).astype(dtype)
    b = rng.uniform(-1, 1, shape[:-1] + (2,)).astype(dtype)
    s = spd(rng, shape).astype(dtype)
    a64, b64, s64 = (x.astype(np.float64) for x in (a, b, s))
    check(run_mode(mode, jf.linalg.det, jf.constant(a)).numpy(), np.linalg.det(a64), dtype)
    sign, logdet = run_mode(mode, jf.linalg.slogdet, jf.constant(a))
    want_sign, want_log = np.linalg.slogdet(a64)
    check(sign.numpy(), want_sign, dtype)
    check(logdet.numpy(), want_log, dtype)
    check(run_mode(mode, jf.linalg.inv, jf.constant(a)).numpy(), np.linalg.inv(a64), dtype)
    check(run_mode(mode, lambda x: jf.linalg.inv(x, adjoint=True), jf.constant(a)).numpy(),
          np.linalg.inv(np.swapaxes(a64, -1, -2)), dtype)
    check(run_mode(mode, jf.linalg.solve, jf.constant(a), jf.constant(b)).numpy(), np.linalg.solve(a64, b64), dtype)
    chol = run_mode(mode, jf.linalg.cholesky, jf.constant(s)).numpy()
    check(chol, np.linalg.cholesky(s64), dtype)
    lower = np.tril(a64)
    got = run_mode(mode, lambda x, y: jf.linalg.triangular_solve(x, y), jf.constant(a), jf.constant(b))
    check(got.numpy(), np.linalg.solve(lower, b64) if lower.size else b64, dtype)
    got = run_mode(mode, lambda x, y: jf.linalg.triangular_solve(x, y, lower=False, adjoint=True),
                   jf.constant(a), jf.constant(b))
    check(got.numpy(), np.linalg.solve(np.swapaxes(np.triu(a64), -1, -2), b64) if a.size else b64, dtype)
    e, v = run_mode(mode, jf.linalg.eigh, jf.constant(s))
    check(e.numpy(), np.linalg.eigvalsh(s64), dtype)
    v = v.numpy().astype(np.float64)
    check((v * e.numpy()[..., None, :]) @ np.swapaxes(v, -1, -2), s64, dtype)  # eigenvectors: up to sign


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3, 2), (3, 0)])
@pytest.mark.parametrize("full", [False, True])
def test_qr_svd(shape, full, dtype, mode, rng):
    a = rng.uniform(-1, 1, shape).astype(dtype)
    a64 = a.astype(np.float64)
    m, n = shape[-2:]
    q, r = run_mode(mode, lambda x: jf.linalg.qr(x, full_matrices=full), jf.constant(a))
    p = m if full else min(m, n)
    assert q.shape == shape[:-2] + (m, p) and r.shape == shape[:-2] + (p, n)
    q, r = q.numpy().astype(np.float64), r.numpy().astype(np.float64)
    check(q @ r, a64, dtype)
    check(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(p), q.shape[:-2] + (p, p)), dtype)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    s, u, v = run_mode(mode, lambda x: jf.linalg.svd(x, full_matrices=full), jf.constant(a))
    check(s.numpy(), np.linalg.svd(a64, compute_uv=False), dtype)
    assert u.shape == shape[:-2] + (m, m if full else min(m, n))
    k = min(m, n)
    u, v = u.numpy().astype(np.float64)[..., :k], v.numpy().astype(np.float64)[..., :k]
    check((u * s.numpy()[..., None, :]) @ np.swapaxes(v, -1, -2), a64, dtype)
    got = run_mode(mode, lambda x: jf.linalg.svd(x, compute_uv=False), jf.constant(a))
    check(got.numpy(), np.linalg.svd(a64, compute_uv=False), dtype)


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
@pytest.mark.parametrize("fast", [True, False])
def test_lstsq_and_norm2(shape, fast, mode, rng):
    a = rng.uniform(-1, 1, shape)
    b = rng.uniform(-1, 1, (shape[0], 2))
    got = run_mode(mode, lambda x, y: jf.linalg.lstsq(x, y, fast=fast), jf.constant(a), jf.constant(b))
    np.testing.assert_allclose(got.numpy(), np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-8, atol=1e-10)
    got = run_mode(mode, lambda x, y: jf.linalg.lstsq(x, y, l2_regularizer=0.5, fast=fast),
                   jf.constant(a), jf.constant(b))
    want = np.linalg.solve(a.T @ a + 0.5 * np.eye(shape[1]), a.T @ b)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-8, atol=1e-10)
    got = run_mode(mode, lambda x: jf.norm(x, ord=2, axis=[0, 1], keepdims=True), jf.constant(a))
    np.testing.assert_allclose(got.numpy(), [[np.linalg.norm(a, 2)]], rtol=1e-10)


def _grad_case(name, rng):
    """(jf function, float64 numpy function, inputs) with a scalar loss."""
    a = general(rng, (3, 3))
    s = spd(rng, (3, 3))
    b = rng.uniform(-1, 1, (3, 2))
    w3, w2 = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
    w, wa = rng.standard_normal(3), rng.standard_normal((4, 3))
    tall = rng.uniform(-1, 1, (4, 3))
    cases = {
        "det": (lambda x: jf.linalg.det(x), np.linalg.det, [a]),
        "slogdet": (lambda x: jf.linalg.slogdet(x)[1], lambda x: np.linalg.slogdet(x)[1], [a]),
        "inv": (lambda x: jf.reduce_sum(jf.linalg.inv(x) * w3), lambda x: np.sum(np.linalg.inv(x) * w3), [a]),
        "solve": (lambda x, y: jf.reduce_sum(jf.linalg.solve(x, y) * w2),
                  lambda x, y: np.sum(np.linalg.solve(x, y) * w2), [a, b]),
        "triangular_solve": (lambda x, y: jf.reduce_sum(jf.linalg.triangular_solve(x, y, adjoint=True) * w2),
                             lambda x, y: np.sum(np.linalg.solve(np.tril(x).T, y) * w2), [a, b]),
        # TF's Cholesky gradient is symmetric (the input's two triangles share it); the eigen
        # kernel reads the lower triangle and its gradient lives there
        "cholesky": (lambda x: jf.reduce_sum(jf.linalg.cholesky(x) * w3),
                     lambda x: np.sum(np.linalg.cholesky((x + x.T) / 2) * w3), [s]),
        "eigh": (lambda x: jf.reduce_sum(jf.linalg.eigh(x)[0] * w) + jf.reduce_sum(jf.linalg.eigh(x)[1] ** 2 * w3),
                 lambda x: (np.sum(np.linalg.eigh(x, "L")[0] * w) + np.sum(np.linalg.eigh(x, "L")[1] ** 2 * w3)),
                 [s]),
        "eigvalsh": (lambda x: jf.reduce_sum(jf.linalg.eigvalsh(x) * w),
                     lambda x: np.sum(np.linalg.eigvalsh(x, "L") * w), [s]),
        "qr": (lambda x: jf.reduce_sum(jf.linalg.qr(x)[0] ** 2 * wa) + jf.reduce_sum(jf.abs(jf.linalg.qr(x)[1]) * w3),
               lambda x: np.sum(np.linalg.qr(x)[0] ** 2 * wa) + np.sum(np.abs(np.linalg.qr(x)[1]) * w3), [tall]),
        "qr_wide": (lambda x: jf.reduce_sum(jf.linalg.qr(x)[0] ** 2 * w3) + jf.reduce_sum(jf.abs(jf.linalg.qr(x)[1]) * wa.T),
                    lambda x: np.sum(np.linalg.qr(x)[0] ** 2 * w3) + np.sum(np.abs(np.linalg.qr(x)[1]) * wa.T),
                    [tall.T]),
        "svd": (lambda x: (jf.reduce_sum(jf.linalg.svd(x)[0] * w) + jf.reduce_sum(jf.linalg.svd(x)[1] ** 2 * wa)
                           + jf.reduce_sum(jf.linalg.svd(x)[2] ** 2 * w3)),
                lambda x: (np.sum(np.linalg.svd(x, full_matrices=False)[1] * w)
                           + np.sum(np.linalg.svd(x, full_matrices=False)[0] ** 2 * wa)
                           + np.sum(np.linalg.svd(x, full_matrices=False)[2].T ** 2 * w3)), [tall]),
        "svd_wide": (lambda x: jf.reduce_sum(jf.linalg.svd(x)[1] ** 2 * w3) + jf.reduce_sum(jf.linalg.svd(x)[0] * w),
                     lambda x: (np.sum(np.linalg.svd(x, full_matrices=False)[0] ** 2 * w3)
                                + np.sum(np.linalg.svd(x, full_matrices=False)[1] * w)), [tall.T]),
        "svd_values": (lambda x: jf.reduce_sum(jf.linalg.svd(x, compute_uv=False) * w),
                       lambda x: np.sum(np.linalg.svd(x, compute_uv=False) * w), [tall]),
        "lstsq": (lambda x, y: jf.reduce_sum(jf.linalg.lstsq(x, y) * w2[:3]),
                  lambda x, y: np.sum(np.linalg.lstsq(x, y, rcond=None)[0] * w2[:3]),
                  [tall, rng.uniform(-1, 1, (4, 2))]),
    }
    return cases[name]


GRADS = ["det", "slogdet", "inv", "solve", "triangular_solve", "cholesky", "eigh", "eigvalsh", "qr", "qr_wide", "svd",
         "svd_wide", "svd_values", "lstsq"]


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
@pytest.mark.parametrize("name", GRADS)
def test_gradients(name, mode, rng):
    fn, ref, xs = _grad_case(name, rng)

    def grads(*args):
        with jf.GradientTape() as tape:
            tape.watch(list(args))
            y = fn(*args)
        return tape.gradient(y, list(args))

    got = run_mode(mode, grads, *[jf.constant(x) for x in xs])
    want = numeric_grad(lambda *a: float(ref(*a)), xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_errors():
    with pytest.raises(jf.errors.InvalidArgumentError, match="Input is not invertible"):
        jf.linalg.inv(jf.zeros([2, 2]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Input matrix is not invertible"):
        jf.linalg.solve(jf.zeros([2, 2]), jf.ones([2, 1]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Cholesky decomposition was not successful"):
        jf.linalg.cholesky(jf.constant([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Dimensions must be equal, but are 2 and 3"):
        jf.linalg.det(jf.ones([2, 3]))
    with pytest.raises(TypeError):
        jf.linalg.det(jf.ones([2, 2], jf.int32))
    with pytest.raises(ValueError, match="at least rank 2"):
        jf.linalg.inv(jf.ones([2]))
    got = jf.linalg.triangular_solve(jf.constant(np.eye(2)[None] * [[[2.0]], [[4.0]]]), jf.ones([2, 1], jf.float64))
    np.testing.assert_allclose(got.numpy(), [[[0.5], [0.5]], [[0.25], [0.25]]])  # batch dims broadcast
