"""Complex numbers: tf.complex, real/imag/conj/angle, tf.abs of complex values, complex
arithmetic, reductions and products, in each kind of function, and their gradients.

References: numpy's complex128 results, central differences of float64 numpy (a real loss's
gradient with respect to z is dL/dRe(z) + 1j dL/dIm(z), TF's convention), and TF 2.21's own
outputs where the behaviour is TF's rule rather than a formula (hard-coded below, taken with
tensorflow-cpu 2.21)."""
import numpy as np
import pytest
from conftest import numeric_grad

import jitflow as jf

C64, C128 = np.complex64, np.complex128


def _c(shape, rng, dtype=C128, lo=-2.0, hi=2.0):
    v = rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)
    v[np.abs(v) < 0.2] = 0.5 + 0.5j
    return v.astype(dtype)


# ---- the part functions, TF's rules ----------------------------------------------------------
def test_complex_builds_from_float_parts_with_broadcasting():
    z = jf.complex(jf.constant([[1.0], [2.0]]), jf.constant([3.0, -4.0, 0.5]))
    assert z.dtype == jf.complex64
    np.testing.assert_array_equal(z.numpy(), np.array([[1 + 3j, 1 - 4j, 1 + 0.5j], [2 + 3j, 2 - 4j, 2 + 0.5j]]))
    z = jf.complex(jf.constant([1.0], jf.float64), jf.constant([2.0], jf.float64))
    assert z.dtype == jf.complex128 and z.numpy()[0] == 1 + 2j
    assert jf.complex(1.0, 2.0).dtype == jf.complex64  # Python floats are float32


def test_complex_refuses_mixed_or_integer_parts_with_tfs_error():
    with pytest.raises(TypeError, match=r"incorrect types: float32 float64. They must be consistent"):
        jf.complex(jf.constant(1.0), jf.constant(1.0, jf.float64))
    with pytest.raises(TypeError, match=r"incorrect types: int32 int32"):
        jf.complex(1, 2)


def test_parts_of_complex_values(rng):
    for dt, real_dt in ((C64, jf.float32), (C128, jf.float64)):
        z = _c((3, 4), rng, dt)
        t = jf.constant(z)
        for fn, ref in ((jf.math.real, np.real), (jf.math.imag, np.imag), (jf.math.angle, np.angle),
                        (jf.abs, np.abs), (jf.math.abs, np.abs)):
            got = fn(t)
            assert got.dtype == real_dt, fn
            np.testing.assert_allclose(got.numpy(), ref(z.astype(C128)), rtol=1e-6 if dt == C64 else 1e-14)
        c = jf.math.conj(t)
        assert c.dtype == t.dtype
        np.testing.assert_array_equal(c.numpy(), np.conj(z))
        assert abs(t).dtype == real_dt  # Tensor.__abs__ is tf.abs


def test_parts_of_real_values_follow_tf():
    # TF 2.21: angle([-1., 0., -0., 2., nan]) = [pi, 0, 0, 0, 0]; imag of an int tensor is int
    # zeros; real and conj pass real tensors through; conj of a string raises TypeError.
    x = jf.constant([-1.0, 0.0, -0.0, 2.0, np.nan])
    np.testing.assert_array_equal(jf.math.angle(x).numpy(), np.array([np.pi, 0, 0, 0, 0], np.float32))
    i = jf.math.imag(jf.constant([1, 2]))
    assert i.dtype == jf.int32 and i.numpy().tolist() == [0, 0]
    assert jf.math.real(jf.constant([1, 2])).numpy().tolist() == [1, 2]
    assert jf.math.conj(x) is x
    with pytest.raises(TypeError, match="Expected numeric or variant tensor"):
        jf.math.conj(jf.constant(["a"]))


def test_sign_of_complex_values_is_z_over_its_modulus_and_has_a_zero_gradient():
    # TF 2.21: sign([3+4j, 0j]) = [0.6+0.8j, 0j]; its gradient is zeros (TF's _SignGrad).
    z = jf.constant(np.array([3 + 4j, 0j], C64))
    np.testing.assert_allclose(jf.sign(z).numpy(), [0.6 + 0.8j, 0j], rtol=1e-6)
    with jf.GradientTape() as t:
        t.watch(z)
        y = jf.math.real(jf.reduce_sum(jf.sign(z) * z))
    np.testing.assert_allclose(t.gradient(y, z).numpy(), [0.6 - 0.8j, 0j], rtol=1e-6)


def test_complex_abs_does_not_overflow():
    z = jf.constant(np.array([3e30 + 4e30j, 0j], C64))
    np.testing.assert_allclose(jf.abs(z).numpy(), [5e30, 0.0], rtol=1e-6)


# ---- arithmetic, reductions, products in each mode ---------------------------------------------
_OPS = {
    "exp": (jf.exp, np.exp),
    "log": (jf.math.log, np.log),
    "sqrt": (jf.sqrt, np.sqrt),
    "square": (jf.square, np.square),
    "reciprocal": (jf.math.reciprocal, lambda z: 1 / z),
    "divide": (lambda z: z / (z + 1.0), lambda z: z / (z + 1)),
    "sum": (lambda z: jf.reduce_sum(z, axis=1), lambda z: z.sum(1)),
    "mean": (lambda z: jf.reduce_mean(z, axis=0), lambda z: z.mean(0)),
    "prod": (lambda z: jf.reduce_prod(z, axis=1), lambda z: z.prod(1)),
    "matmul": (lambda z: jf.matmul(z, z, transpose_b=True), lambda z: z @ z.T),
    "matmul_adjoint": (lambda z: jf.matmul(z, z, adjoint_a=True), lambda z: z.conj().T @ z),
    "batch_matmul": (lambda z: jf.matmul(jf.reshape(z, [1, 3, 3]), jf.reshape(z, [1, 3, 3]), transpose_a=True),
                     lambda z: (z.T @ z)[None]),
    "batch_adjoint": (lambda z: jf.matmul(jf.reshape(z, [1, 3, 3]), jf.reshape(z, [1, 3, 3]), adjoint_b=True),
                      lambda z: (z @ z.conj().T)[None]),
    "tanh": (jf.tanh, np.tanh),
    "sigmoid": (jf.sigmoid, lambda z: 1 / (1 + np.exp(-z))),
    "sin": (jf.sin, np.sin),
    "cos": (jf.cos, np.cos),
    "tan": (jf.math.tan, np.tan),
    "sinh": (jf.math.sinh, np.sinh),
    "cosh": (jf.math.cosh, np.cosh),
    "asin": (jf.math.asin, np.arcsin),
    "acos": (jf.math.acos, np.arccos),
    "atan": (jf.math.atan, np.arctan),
    "asinh": (jf.math.asinh, np.arcsinh),
    "acosh": (jf.math.acosh, np.arccosh),
    "atanh": (jf.math.atanh, np.arctanh),
    "expm1": (jf.math.expm1, np.expm1),
    "log1p": (jf.math.log1p, np.log1p),
    "rsqrt": (jf.math.rsqrt, lambda z: 1 / np.sqrt(z)),
    "cumsum": (lambda z: jf.cumsum(z, axis=1, exclusive=True, reverse=True),
               lambda z: np.concatenate([np.cumsum(z[:, ::-1], axis=1)[:, ::-1][:, 1:], np.zeros((3, 1))], axis=1)),
}


_OPS.update({
    "pow": (lambda z: jf.pow(z, z * 0.5 + 1.0), lambda z: np.power(z, z * 0.5 + 1)),
    "pow_real_exponent": (lambda z: jf.pow(z, jf.cast(2.0, z.dtype)), lambda z: z ** 2),
    "divide_no_nan": (lambda z: jf.math.divide_no_nan(z, z - 1.0), lambda z: z / (z - 1)),
    "xlogy": (lambda z: jf.math.xlogy(z, z + 2.0), lambda z: z * np.log(z + 2)),
    "xlog1py": (lambda z: jf.math.xlog1py(z, z + 1.0), lambda z: z * np.log(z + 2)),
})


@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope", "none_signature"])
@pytest.mark.parametrize("dt", [C64, C128])
@pytest.mark.parametrize("op", sorted(_OPS))
def test_complex_ops_against_numpy(op, dt, mode, rng):
    fn, ref = _OPS[op]
    z = _c((3, 3), rng, dt)
    if mode == "eager":
        got = fn(jf.constant(z))
    elif mode == "jit_scope":
        def scoped(x):
            with jf.jit_scope():
                return fn(x)
        got = jf.function(scoped)(jf.constant(z))
    else:
        sig = [jf.TensorSpec([None, None], jf.as_dtype(dt))] if mode == "none_signature" else None
        got = jf.function(fn, input_signature=sig)(jf.constant(z))
    assert got.dtype == jf.as_dtype(dt)
    np.testing.assert_allclose(got.numpy(), ref(z.astype(C128)), rtol=2e-5 if dt == C64 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("op", ["exp", "matmul", "sum"])
def test_jit_compile_refuses_complex_values_naming_the_op(op, rng):
    fn, _ = _OPS[op]
    with pytest.raises(jf.errors.InvalidArgumentError, match="complex"):
        jf.function(fn, jit_compile=True)(jf.constant(_c((3, 3), rng)))


def test_explain_says_why_complex_values_stay_eager(rng):
    def f(x):
        with jf.jit_scope():
            return jf.exp(x) * 2.0
    text = str(jf.explain(jf.function(f), jf.constant(_c((2, 2), rng))))
    assert "complex values run eagerly" in text, text


# ---- gradients ---------------------------------------------------------------------------------
def test_gradient_matches_tf_2_21():
    # TF 2.21 on the same inputs (see the module docstring).
    x = jf.constant(np.array([[1 + 2j, 3 - 1j], [0.5 + 0.25j, -1 + 1j]]))
    w = jf.constant(np.array([[2 - 1j, 1 + 1j], [0.5 - 2j, 1j]]))
    with jf.GradientTape(persistent=True) as t:
        t.watch(x)
        t.watch(w)
        y = jf.matmul(x, w, adjoint_a=True) / jf.sqrt(x) + jf.math.log(x) * jf.math.reciprocal(w)
        z = jf.reshape(x, [1, 2, 2])
        z2 = jf.matmul(z, jf.reshape(w, [1, 2, 2]), adjoint_b=True)
        loss = (jf.reduce_sum(jf.math.real(y) * 1.5 + jf.math.imag(y) * 0.5) + jf.math.real(jf.reduce_prod(x))
                + jf.math.imag(jf.reduce_mean(z2 * jf.math.conj(z2) + jf.square(z))))
    np.testing.assert_allclose(t.gradient(loss, x).numpy(), [[2.0468219188 - 1.6722208437j, 1.9442479864 - 2.2506535376j],
                                                         [-15.1202962436 - 8.0823958591j, 3.2414544483 - 9.4508339482j]],
                               rtol=1e-9)
    np.testing.assert_allclose(t.gradient(loss, w).numpy(), [[5.5524787965 + 4.135972936j, 2.730931551 + 4.9991448579j],
                                                         [-2.7986678467 + 0.9867133451j, 0.680699618 - 4.3023549288j]],
                               rtol=1e-9)
    x = jf.constant(np.array([1 + 2j, 3 - 1j], C64))
    with jf.GradientTape() as t:
        t.watch(x)
        y = jf.reduce_sum(jf.abs(x * x) + jf.math.real(jf.exp(x)) + jf.math.angle(x))
    np.testing.assert_allclose(t.gradient(y, x).numpy(), [0.46879566 + 1.7282732j, 16.952261 + 15.201396j], rtol=1e-6)


def _complex_numeric_grad(f, z):
    """dL/dRe(z) + 1j dL/dIm(z) of the real numpy function f by central differences."""
    gr, gi = numeric_grad(lambda re, im: f(re + 1j * im), [z.real, z.imag])
    return gr + 1j * gi




def test_binary_ops_follow_tf_2_21():
    # TF 2.21's values: *_no_nan and xlogy give 0 where TF's rule says so; squared_difference is
    # |x - y|^2 + 0i; pow is the principal branch.
    x = jf.constant(np.array([1 + 2j, 0.5 - 1j]))
    y = jf.constant(np.array([2 - 1j, 0j]))
    np.testing.assert_allclose(jf.math.divide_no_nan(x, y).numpy(), [1j, 0j], atol=1e-15)
    np.testing.assert_allclose(jf.math.multiply_no_nan(x, y).numpy(), [(1 + 2j) * (2 - 1j), 0j])
    np.testing.assert_allclose(jf.math.squared_difference(x, y).numpy(), [10, 1.25])
    assert jf.math.squared_difference(x, y).dtype == jf.complex128
    np.testing.assert_allclose(jf.pow(x, jf.constant(np.array([2 + 0j, 0.5 + 0.5j]))).numpy(),
                               [-3 + 4j, 1.61604369 - 0.87821373j], rtol=1e-8)
    w = jf.constant(np.array([0j, 1 + 1j]))
    np.testing.assert_allclose(jf.math.xlogy(w, x).numpy(), [0j, 1.21872049 - 0.99557694j], rtol=1e-8)
    np.testing.assert_allclose(jf.math.xlog1py(w, x).numpy(), [0j, 1.1773301 + 0.00132489j], rtol=1e-7)
    with jf.GradientTape(persistent=True) as t:
        t.watch(x)
        t.watch(y)
        m = jf.math.multiply_no_nan(x, y)
        a = jf.reduce_sum(jf.math.real(m) * 1.5 + jf.math.imag(m) * 0.5)
        b = jf.reduce_sum(jf.math.real(jf.math.squared_difference(x, y)) * 1.5)
        c = jf.reduce_sum(jf.math.real(jf.pow(x, jf.constant(np.array([2 + 0j, 0.5 + 0.5j])))))
    # TF's MulNoNan and SquaredDifference gradients do not conjugate (its rules, kept here).
    np.testing.assert_allclose(t.gradient(a, x).numpy(), [3.5 - 0.5j, 0j])
    np.testing.assert_allclose(t.gradient(a, y).numpy(), [0.5 + 3.5j, 1.25 - 1.25j])
    np.testing.assert_allclose(t.gradient(b, x).numpy(), [-3 + 9j, 1.5 - 3j])
    np.testing.assert_allclose(t.gradient(c, x).numpy(), [2 - 4j, 0.2037195 - 1.14526896j], rtol=1e-7)


_GRAD_OPS = dict(_OPS)
_GRAD_OPS.update({
    "multiply": (lambda z: z * jf.math.conj(z + 1.0) * z, lambda z: z * np.conj(z + 1) * z),
    "complex_parts": (lambda z: jf.complex(jf.math.imag(z), jf.abs(z)) * jf.cast(jf.math.angle(z), z.dtype),
                      lambda z: (np.imag(z) + 1j * np.abs(z)) * np.angle(z)),
})


@pytest.mark.parametrize("op", sorted(_GRAD_OPS))
def test_complex_gradient_matches_finite_differences(op, rng):
    fn, ref = _GRAD_OPS[op]
    z = _c((3, 3), rng)
    w1, w2 = rng.standard_normal((2,) + ref(z).shape)

    def loss_np(v):
        r = ref(v)
        return float(np.sum(r.real * w1 + r.imag * w2))

    t = jf.constant(z)
    with jf.GradientTape() as tape:
        tape.watch(t)
        r = fn(t)
        loss = jf.reduce_sum(jf.math.real(r) * w1 + jf.math.imag(r) * w2)
    g = tape.gradient(loss, t)
    assert g.dtype == jf.complex128
    np.testing.assert_allclose(g.numpy(), _complex_numeric_grad(loss_np, z), rtol=1e-6, atol=1e-7)
