"""jf.autodiff.ForwardAccumulator: JVPs against float64 numpy derivatives and central finite
differences, for tensors and variables, targets computed inside the block, inside a
jf.function, and the unconnected and mismatched cases."""
import numpy as np
import pytest

import jitflow as jf

X = np.array([0.3, -1.2, 2.0], np.float64)
T = np.array([0.5, -1.0, 2.0], np.float64)


def _f(x):
    return np.sum(np.sin(x) * x) + np.prod(x[:2])


def test_jvp_of_a_scalar_against_finite_differences():
    x = jf.constant(X)
    with jf.autodiff.ForwardAccumulator(x, jf.constant(T)) as acc:
        y = jf.reduce_sum(jf.sin(x) * x) + jf.reduce_prod(x[:2])
    h = 1e-6
    fd = (_f(X + h * T) - _f(X - h * T)) / (2 * h)
    np.testing.assert_allclose(acc.jvp(y).numpy(), fd, rtol=1e-7)
    exact = np.sum((np.cos(X) * X + np.sin(X)) * T) + T[0] * X[1] + X[0] * T[1]
    np.testing.assert_allclose(acc.jvp(y).numpy(), exact, rtol=1e-12)


def test_variables_nests_and_unconnected_targets():
    v = jf.Variable(np.float32([1.0, 2.0, 3.0]))
    w = jf.Variable(np.float32(0.5))
    with jf.autodiff.ForwardAccumulator({"v": v, "w": w}, {"v": jf.constant(T.astype(np.float32)),
                                                           "w": jf.constant(np.float32(2.0))}) as acc:
        z = jf.exp(v) * w
        inside = acc.jvp(z)  # callable in the block too
        other = jf.constant(3.0)
    want = np.exp([1.0, 2.0, 3.0]) * T * 0.5 + np.exp([1.0, 2.0, 3.0]) * 2.0
    np.testing.assert_allclose(inside.numpy(), want, rtol=1e-6)
    got = acc.jvp({"z": z, "other": other})
    np.testing.assert_allclose(got["z"].numpy(), want, rtol=1e-6)
    assert got["other"] is None
    assert float(acc.jvp(other, unconnected_gradients=jf.UnconnectedGradients.ZERO)) == 0.0
    np.testing.assert_allclose(acc.jvp(v).numpy(), T, rtol=1e-6)  # a primal's JVP is its tangent


def test_inside_a_function_and_a_matmul():
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    da = np.ones((2, 3), np.float32)

    @jf.function
    def jvp(x, t):
        with jf.autodiff.ForwardAccumulator(x, t) as acc:
            y = jf.tanh(jf.matmul(x, x, transpose_b=True))
        return acc.jvp(y)
    m = a @ a.T
    want = (1 - np.tanh(m) ** 2) * (da @ a.T + a @ da.T)
    np.testing.assert_allclose(jvp(jf.constant(a), jf.constant(da)).numpy(), want, rtol=1e-5)


def test_mismatched_tangents_raise():
    with pytest.raises(ValueError, match="shape"):
        jf.autodiff.ForwardAccumulator(jf.constant([1.0, 2.0]), jf.constant([1.0]))
    with pytest.raises(ValueError, match="structure"):
        jf.autodiff.ForwardAccumulator([jf.constant(1.0)], [])
