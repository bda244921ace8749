"""jf.keras.initializers and jf.keras.activations: initializer statistics (bounds, standard
deviations, truncation, orthogonality) against Keras 3's formulas, seeds, get/serialize; the
activations against numpy."""
import math

import numpy as np
import pytest

import jitflow as jf
from jitflow.keras import activations as A
from jitflow.keras import initializers as I

SHAPE = (400, 300)  # fan_in 400, fan_out 300
CONV = (3, 3, 16, 32)  # fan_in 3*3*16, fan_out 3*3*32


@pytest.mark.parametrize("cls,scale,mode", [(I.GlorotUniform, 1.0, "avg"), (I.HeUniform, 2.0, "in"),
                                            (I.LecunUniform, 1.0, "in")])
@pytest.mark.parametrize("shape", [SHAPE, CONV], ids=["dense", "conv"])
def test_uniform_limits(cls, scale, mode, shape):
    fan_in = int(np.prod(shape[:-1]))
    fan_out = shape[-1] * int(np.prod(shape[:-2]))
    n = {"avg": (fan_in + fan_out) / 2, "in": fan_in}[mode]
    limit = math.sqrt(3 * scale / n)
    w = cls(seed=3)(shape).numpy()
    assert w.shape == shape and w.dtype == np.float32
    assert w.min() >= -limit and w.max() <= limit
    assert w.max() > 0.98 * limit and w.min() < -0.98 * limit
    np.testing.assert_allclose(w.std(), limit / math.sqrt(3), rtol=0.03)


@pytest.mark.parametrize("cls,scale,mode", [(I.GlorotNormal, 1.0, "avg"), (I.HeNormal, 2.0, "in"),
                                            (I.LecunNormal, 1.0, "in")])
def test_truncated_normals_have_kerass_stddev(cls, scale, mode):
    n = {"avg": (SHAPE[0] + SHAPE[1]) / 2, "in": SHAPE[0]}[mode]
    stddev = math.sqrt(scale / n)
    w = cls(seed=5)(SHAPE).numpy().astype(np.float64)
    # The sample's stddev is the requested one: Keras divides by .8796..., the stddev of a
    # unit normal truncated at 2, so the truncated draw's spread is sqrt(scale / n).
    np.testing.assert_allclose(w.std(), stddev, rtol=0.02)
    assert np.abs(w).max() <= 2 * stddev / 0.87962566103423978 + 1e-6
    assert abs(w.mean()) < 0.01 * stddev * 10


def test_random_and_constant_initializers():
    n = I.RandomNormal(mean=1.0, stddev=0.5, seed=1)((200, 200)).numpy()
    np.testing.assert_allclose([n.mean(), n.std()], [1.0, 0.5], rtol=0.02)
    u = I.RandomUniform(-0.2, 0.6, seed=1)((200, 200)).numpy()
    assert u.min() >= -0.2 and u.max() < 0.6
    np.testing.assert_allclose(u.mean(), 0.2, atol=0.01)
    t = I.TruncatedNormal(stddev=0.1, seed=2)((200, 200)).numpy()
    assert np.abs(t).max() <= 0.2 + 1e-6
    np.testing.assert_array_equal(I.Zeros()((2, 3)).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(I.Ones()((2,), "float64").numpy(), np.ones(2))
    assert I.Ones()((2,), "float64").dtype == jf.float64
    np.testing.assert_array_equal(I.Constant(2.5)((2, 2)).numpy(), np.full((2, 2), 2.5))
    np.testing.assert_array_equal(I.Identity(gain=2.0)((2, 3)).numpy(), 2 * np.eye(2, 3))
    with pytest.raises(ValueError, match="2D matrices"):
        I.Identity()((2, 2, 2))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 2, 5)])
def test_orthogonal(shape):
    w = I.Orthogonal(gain=1.5, seed=7)(shape).numpy().reshape(-1, shape[-1]).astype(np.float64)
    rows, cols = w.shape
    gram = w.T @ w if rows >= cols else w @ w.T
    np.testing.assert_allclose(gram, 2.25 * np.eye(min(rows, cols)), atol=1e-5)


def test_seeds_repeat_and_global_seed_reproduces():
    g = I.HeNormal(seed=11)
    np.testing.assert_array_equal(g((5, 5)).numpy(), g((5, 5)).numpy())  # Keras 3: a seeded initializer repeats
    assert not np.array_equal(I.HeNormal(seed=12)((5, 5)).numpy(), g((5, 5)).numpy())
    jf.random.set_seed(3)
    a = I.GlorotUniform()((4, 4)).numpy()
    jf.random.set_seed(3)
    b = I.GlorotUniform()((4, 4)).numpy()
    np.testing.assert_array_equal(a, b)


def test_get_and_serialize():
    assert isinstance(I.get("glorot_uniform"), I.GlorotUniform)
    assert isinstance(I.get("he_normal"), I.HeNormal) and isinstance(I.get("Zeros"), I.Zeros)
    g = I.GlorotUniform(seed=4)
    assert I.get(g) is g
    config = I.serialize(g)
    assert config == {"module": "keras.initializers", "class_name": "GlorotUniform",
                      "config": {"seed": 4, "input_axes": None, "output_axes": None}, "registered_name": None}
    restored = I.get(config)
    np.testing.assert_array_equal(restored((3, 3)).numpy(), g((3, 3)).numpy())
    vs = I.get({"class_name": "VarianceScaling", "config": {"scale": 2.0, "mode": "fan_out"}})
    assert (vs.scale, vs.mode, vs.distribution) == (2.0, "fan_out", "truncated_normal")

    def custom(shape, dtype=None):
        return jf.zeros(shape)

    assert I.get(custom) is custom
    with pytest.raises(ValueError, match="Could not interpret initializer identifier"):
        I.get("glorot_uniformm")


X = np.array([-5.0, -1.5, -0.2, 0.0, 0.3, 2.0, 7.0])


@pytest.mark.parametrize("name,ref", [
    ("relu", lambda x: np.maximum(x, 0)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", np.tanh),
    ("elu", lambda x: np.where(x > 0, x, np.expm1(x))),
    ("selu", lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("softplus", lambda x: np.log1p(np.exp(x))),
    ("softsign", lambda x: x / (1 + np.abs(x))),
    ("swish", lambda x: x / (1 + np.exp(-x))),
    ("silu", lambda x: x / (1 + np.exp(-x))),
    ("gelu", lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    ("leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x)),
    ("linear", lambda x: x),
    ("exponential", np.exp),
    ("hard_sigmoid", lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    ("relu6", lambda x: np.clip(x, 0, 6)),
    ("mish", lambda x: x * np.tanh(np.log1p(np.exp(x)))),
])
def test_activation_against_numpy(name, ref):
    got = A.get(name)(jf.constant(X))
    np.testing.assert_allclose(np.asarray(got), ref(X), rtol=1e-6, atol=1e-7)


def test_softmax_relu_arguments_and_get():
    z = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    e = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(A.softmax(z).numpy(), e / e.sum(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(A.log_softmax(z).numpy(), np.log(e / e.sum(-1, keepdims=True)), rtol=1e-6)
    np.testing.assert_allclose(A.relu(X, negative_slope=0.1, max_value=5.0, threshold=1.0).numpy(),
                               np.where(X > 1.0, np.minimum(X, 5.0), 0.1 * (X - 1.0)), rtol=1e-6)
    assert A.get(None) is A.linear and A.get("swish") is A.silu and A.serialize(A.swish) == "silu"
    assert A.serialize(A.relu) == "relu" and A.deserialize("tanh") is A.tanh
    with pytest.raises(ValueError, match="Unknown activation function"):
        A.get("relu7")


def test_tf_v2_initializer_names():
    """tf.constant_initializer, tf.zeros_initializer, ... are the Keras initializer classes."""
    np.testing.assert_array_equal(jf.constant_initializer(3.0)([2, 2]).numpy(), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(jf.zeros_initializer()([3]).numpy(), np.zeros(3))
    np.testing.assert_array_equal(jf.ones_initializer()([1]).numpy(), np.ones(1))
    normal = jf.random_normal_initializer(mean=1.0, stddev=0.1, seed=7)([200, 50]).numpy()
    assert abs(normal.mean() - 1.0) < 0.01 and abs(normal.std() - 0.1) < 0.01
    uniform = jf.random_uniform_initializer(-1.0, 1.0, seed=7)([1000]).numpy()
    assert uniform.min() >= -1.0 and uniform.max() < 1.0 and abs(uniform.mean()) < 0.1
