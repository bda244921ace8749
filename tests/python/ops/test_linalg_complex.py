"""The decompositions and solvers on complex matrices (and float16 inverse and QR): values
against numpy in complex128, the adjoint flags as conjugate transposes, TF's output dtypes
(real singular values, complex eigenvalues and log|det|), and the gradients against TF 2.21's
values for one matrix (printed by TF 2.21 and hard-coded; TF's rules, which conjugate as its
complex gradients do)."""

import numpy as np
import pytest

import jitflow as jf

A = np.array([[2 + 1j, 0.5 - 1j], [1j, 3 - 0.5j]], np.complex128)
W = np.array([[0.3 - 0.2j, 1 + 1j], [-0.5 + 2j, 1 - 0.5j]], np.complex128)
C = 0.7 - 0.3j
EYE = np.eye(2, dtype=np.complex128)


def _hpd(x):  # Hermitian positive definite
    return x @ x.conj().T + 3 * EYE


@pytest.mark.parametrize("dtype,tol", [(np.complex64, 1e-5), (np.complex128, 1e-12)])
def test_complex_values_against_numpy(dtype, tol):
    rng = np.random.default_rng(0)
    x = (rng.uniform(-1, 1, (2, 3, 3)) + 1j * rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)).astype(dtype)
    b = (rng.uniform(-1, 1, (2, 3, 2)) + 1j * rng.uniform(-1, 1, (2, 3, 2))).astype(dtype)
    xt, bt = jf.constant(x), jf.constant(b)
    x128 = x.astype(np.complex128)
    h = x128 @ np.conj(np.swapaxes(x128, -1, -2)) + 3 * np.eye(3)

    def close(got, want):
        np.testing.assert_allclose(got.numpy(), want, rtol=tol * 10, atol=tol * 10)

    close(jf.linalg.det(xt), np.linalg.det(x128))
    sign, logdet = jf.linalg.slogdet(xt)
    want_sign, want_log = np.linalg.slogdet(x128)
    assert logdet.dtype == jf.as_dtype(dtype)  # TF's log|det| keeps the complex dtype
    close(sign, want_sign)
    close(logdet, want_log)
    close(jf.linalg.inv(xt), np.linalg.inv(x128))
    close(jf.linalg.inv(xt, adjoint=True), np.linalg.inv(np.conj(np.swapaxes(x128, -1, -2))))
    close(jf.linalg.solve(xt, bt), np.linalg.solve(x128, b))
    close(jf.linalg.solve(xt, bt, adjoint=True), np.linalg.solve(np.conj(np.swapaxes(x128, -1, -2)), b))
    low = np.tril(x128)
    close(jf.linalg.triangular_solve(xt, bt), np.linalg.solve(low, b))
    close(
        jf.linalg.triangular_solve(xt, bt, adjoint=True),
        np.linalg.solve(np.conj(np.swapaxes(low, -1, -2)), b),
    )
    close(jf.linalg.cholesky(jf.constant(h.astype(dtype))), np.linalg.cholesky(h))
    q, r = jf.linalg.qr(xt)
    close(jf.matmul(q, r), x128)
    close(jf.matmul(q, q, adjoint_a=True), np.broadcast_to(np.eye(3), (2, 3, 3)))
    s, u, v = jf.linalg.svd(xt)
    assert s.dtype == (jf.float32 if dtype == np.complex64 else jf.float64)  # as TF's
    close(s, np.linalg.svd(x128, compute_uv=False))
    close(jf.matmul(u * jf.cast(jf.expand_dims(s, -2), u.dtype), v, adjoint_b=True), x128)
    e, vec = jf.linalg.eigh(jf.constant(h.astype(dtype)))
    assert e.dtype == jf.as_dtype(dtype)  # TF's eigenvalues keep the complex dtype
    close(e, np.linalg.eigvalsh(h).astype(np.complex128))
    close(jf.matmul(vec * jf.expand_dims(e, -2), vec, adjoint_b=True), h)


def _grad(fn):
    a = jf.constant(A)
    with jf.GradientTape() as tape:
        tape.watch(a)
        loss = jf.reduce_sum(jf.math.real(fn(a)))
    return tape.gradient(loss, a).numpy()


# TF 2.21's gradients of sum(real(f(A))) for the A, W and C above.
TF_GRADS = {
    "det": (
        lambda x: jf.linalg.det(x) * C,
        [
            [1.045384615385 + 2.066923076923j, -0.613846153846 + 0.450769230769j],
            [0.388461538462 - 0.757692307692j, 1.515384615385 + 0.776923076923j],
        ],
    ),
    "slogdet": (
        lambda x: jf.linalg.slogdet(x)[1] * C,
        [
            [0.272307692308 + 0.301538461538j, -0.083076923077 + 0.104615384615j],
            [0.030769230769 - 0.146153846154j, 0.292307692308 + 0.061538461538j],
        ],
    ),
    "inv": (
        lambda x: jf.linalg.inv(x) * W,
        [
            [-0.141396449704 - 0.07975147929j, -0.162650887574 + 0.018437869822j],
            [-0.008106508876 + 0.492544378698j, -0.220473372781 + 0.046863905325j],
        ],
    ),
    "solve": (
        lambda x: jf.linalg.solve(x, jf.constant(W)) * W,
        [
            [-0.206853254438 + 0.250872189349j, -0.28940591716 + 0.258385798817j],
            [-0.481710059172 + 0.017295857988j, 0.30525443787 - 0.576189349112j],
        ],
    ),
    "triangular_solve": (
        lambda x: jf.linalg.triangular_solve(x, jf.constant(W)) * W,
        [
            [-0.284421621622 + 0.07987027027j, 0j],
            [-0.297837837838 + 0.092972972973j, 0.155354273192 - 0.503550036523j],
        ],
    ),
    "cholesky": (
        lambda x: jf.linalg.cholesky(jf.matmul(x, x, adjoint_b=True) + 3 * jf.constant(EYE)) * W,
        [
            [0.393185381144 + 0.339449557182j, -0.089120104766 + 1.99059805902j],
            [0.28571373322 - 1.591609913365j, 0.001253509054 - 0.302268559757j],
        ],
    ),
    "qr": (
        lambda x: jf.linalg.qr(x)[1],
        [
            [-1.440751920973 - 0.165308417779j, -0.709079349822 - 0.802111471186j],
            [-1.135230512137 + 0.597322516942j, -0.895143592549 - 0.229219571954j],
        ],
    ),
    "eigh": (lambda x: jf.linalg.eigh(x + jf.linalg.adjoint(x))[0], [[2 + 0j, 0j], [0j, 2 + 0j]]),
}


@pytest.mark.parametrize("name", sorted(TF_GRADS))
def test_complex_gradients_match_tf(name):
    fn, want = TF_GRADS[name]
    np.testing.assert_allclose(_grad(fn), np.array(want), rtol=1e-9, atol=1e-9)


def test_complex_svd_gradient_of_the_singular_values_matches_tf():
    # TF 2.21's gradient of sum(s) (the singular vectors' own phases are not unique for complex
    # matrices, so a loss on them depends on the solver's choice)
    want = [
        [0.901655132328 + 0.430072573595j, 0.044845347735 - 0.006670725195j],
        [-0.041509985137 - 0.018235265887j, 0.98304383077 - 0.177677300174j],
    ]
    np.testing.assert_allclose(
        _grad(lambda x: jf.cast(jf.linalg.svd(x)[0], x.dtype)), want, rtol=1e-9, atol=1e-9
    )
    # wide and tall, through u and v too: a loss of |u| and |v| does not depend on the vectors'
    # phases, so it is checked against central differences of the real and imaginary parts
    # (TF's convention for a real loss: dL/dRe + i dL/dIm)
    rng = np.random.default_rng(1)
    for shape in ((2, 3), (3, 2)):
        x0 = rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)

        def loss_np(z):
            u, sv, vh = np.linalg.svd(z, full_matrices=False)
            return sv.sum() + np.abs(u).sum() + np.abs(vh).sum()

        x = jf.constant(x0)
        with jf.GradientTape() as tape:
            tape.watch(x)
            sv, u, v = jf.linalg.svd(x)
            loss = jf.reduce_sum(sv) + jf.reduce_sum(jf.math.abs(u)) + jf.reduce_sum(jf.math.abs(v))
        got = tape.gradient(loss, x).numpy()
        want = np.zeros(shape, np.complex128)
        h = 1e-6
        for i in np.ndindex(shape):
            for step, part in ((h, 1), (1j * h, 1j)):
                zp, zm = x0.copy(), x0.copy()
                zp[i] += step
                zm[i] -= step
                want[i] += part * (loss_np(zp) - loss_np(zm)) / (2 * h)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_float16_inverse_and_qr_round_a_float32_result():
    x = np.array([[2, 1], [1, 3]], np.float16)
    inv = jf.linalg.inv(jf.constant(x))
    assert inv.dtype == jf.float16
    np.testing.assert_array_equal(inv.numpy(), np.linalg.inv(x.astype(np.float32)).astype(np.float16))
    q, r = jf.linalg.qr(jf.constant(x))
    assert q.dtype == jf.float16 and r.dtype == jf.float16
    # TF 2.21's r: [[-2.236, -2.236], [0, 2.236]]
    np.testing.assert_allclose(r.numpy().astype(np.float64), [[-2.236, -2.236], [0, 2.236]], atol=1e-3)
    before = jf.debugging.stats()["cluster_runs"]
    out = jf.function(lambda t: jf.linalg.inv(t) * 2, jit_compile=True)(jf.constant(x))
    assert jf.debugging.stats()["cluster_runs"] > before
    np.testing.assert_allclose(
        out.numpy().astype(np.float64), 2 * np.linalg.inv(x.astype(np.float64)), rtol=2e-3
    )
