"""jf.keras.ops against numpy (float64 or exact for integers): numpy's argument conventions
(axis=None over everything, split by sections or indices, numpy-style promotion of Python
scalars), Keras's activation defaults, and the nn / linalg / numpy views."""
import math

import numpy as np
import pytest

import jitflow as jf

ops = jf.keras.ops

UNARY = ["exp", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arctan", "arcsinh",
         "floor", "ceil", "abs", "square", "negative", "sign", "reciprocal", "log2", "log10"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_numpy(name, rng):
    x = rng.uniform(0.1, 2.0, size=(3, 4))
    ref = {"abs": np.abs, "arcsinh": np.arcsinh, "reciprocal": np.reciprocal}.get(name, getattr(np, name, None))
    np.testing.assert_allclose(getattr(ops, name)(x).numpy(), ref(x), rtol=1e-12)


@pytest.mark.parametrize("name,ref", [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                                      ("divide", np.divide), ("maximum", np.maximum), ("minimum", np.minimum),
                                      ("power", np.power), ("arctan2", np.arctan2), ("mod", np.mod),
                                      ("floor_divide", np.floor_divide)])
def test_binary_matches_numpy(name, ref, rng):
    a, b = rng.uniform(0.5, 3, size=(2, 3, 4)), rng.uniform(0.5, 3, size=(3, 4))
    np.testing.assert_allclose(getattr(ops, name)(a, b).numpy(), ref(a, b), rtol=1e-12)


def test_python_scalars_are_weak():
    i = jf.constant([1, 2, 3], jf.int32)
    assert ops.multiply(i, 2).dtype == jf.int32 and ops.add(jf.constant([1.0], jf.float64), 0.5).dtype == jf.float64
    assert ops.divide(i, 2).dtype.is_floating
    np.testing.assert_allclose(ops.divide(i, 2).numpy(), [0.5, 1, 1.5])


def test_reductions_and_numpy_axes(rng):
    x = rng.normal(size=(3, 4, 5))
    for name, ref in [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min), ("prod", np.prod),
                      ("var", np.var), ("std", np.std)]:
        np.testing.assert_allclose(getattr(ops, name)(x).numpy(), ref(x), rtol=1e-10)
        np.testing.assert_allclose(getattr(ops, name)(x, axis=(0, 2), keepdims=True).numpy(),
                                   ref(x, axis=(0, 2), keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(ops.logsumexp(x, axis=1).numpy(), np.log(np.exp(x).sum(1)), rtol=1e-10)
    assert int(ops.argmax(x).numpy()) == int(np.argmax(x))  # flattened
    np.testing.assert_array_equal(ops.argmin(x, axis=1).numpy(), np.argmin(x, axis=1))
    np.testing.assert_allclose(ops.cumsum(x).numpy(), np.cumsum(x), rtol=1e-10)
    np.testing.assert_allclose(ops.cumprod(x, axis=2).numpy(), np.cumprod(x, axis=2), rtol=1e-10)
    assert bool(ops.any(x > 2.5).numpy()) == bool((x > 2.5).any())
    np.testing.assert_array_equal(ops.all(x > -10, axis=0).numpy(), (x > -10).all(0))
    assert ops.mean(jf.constant([1, 2])).dtype.is_floating


def test_shape_ops(rng):
    x = rng.normal(size=(6, 4))
    parts = ops.split(x, [1, 4])
    for got, want in zip(parts, np.split(x, [1, 4])):
        np.testing.assert_array_equal(got.numpy(), want)
    assert [p.shape[1] for p in ops.split(x, 2, axis=1)] == [2, 2]
    np.testing.assert_array_equal(ops.concatenate([x, x]).numpy(), np.concatenate([x, x]))
    np.testing.assert_array_equal(ops.stack([x, x], axis=1).numpy(), np.stack([x, x], 1))
    np.testing.assert_array_equal(ops.swapaxes(x[None], 0, 2).numpy(), np.swapaxes(x[None], 0, 2))
    y = rng.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(ops.moveaxis(y, 0, -1).numpy(), np.moveaxis(y, 0, -1))
    np.testing.assert_array_equal(ops.transpose(y).numpy(), y.T)
    np.testing.assert_array_equal(ops.flip(y, axis=1).numpy(), np.flip(y, 1))
    np.testing.assert_array_equal(ops.roll(x, 2).numpy(), np.roll(x, 2))
    np.testing.assert_array_equal(ops.repeat(x, 2, axis=0).numpy(), np.repeat(x, 2, 0))
    np.testing.assert_array_equal(ops.tile(x, (2, 1)).numpy(), np.tile(x, (2, 1)))
    np.testing.assert_array_equal(ops.pad(x, ((1, 0), (0, 2))).numpy(), np.pad(x, ((1, 0), (0, 2))))
    np.testing.assert_array_equal(ops.take(x, [3, 0]).numpy(), np.take(x, [3, 0]))
    idx = np.argsort(x, axis=1)
    np.testing.assert_array_equal(ops.take_along_axis(x, idx, axis=1).numpy(), np.take_along_axis(x, idx, 1))
    np.testing.assert_array_equal(ops.sort(x, axis=0).numpy(), np.sort(x, 0))
    np.testing.assert_array_equal(ops.argsort(x).numpy(), np.argsort(x, kind="stable"))
    assert ops.shape(x) == (6, 4) and ops.ndim(y) == 3
    np.testing.assert_array_equal(ops.squeeze(x[None, :, None]).numpy(), x)


def test_creation_ops():
    assert ops.arange(5).dtype == jf.int32 and ops.arange(0, 1, 0.25).dtype == jf.float32
    np.testing.assert_allclose(ops.arange(1, 2, 0.25).numpy(), np.arange(1, 2, 0.25))
    np.testing.assert_allclose(ops.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5), rtol=1e-6)
    np.testing.assert_allclose(ops.linspace(0, 1, 4, endpoint=False).numpy(), np.linspace(0, 1, 4, endpoint=False),
                               rtol=1e-6)
    np.testing.assert_array_equal(ops.eye(3, 4, k=1).numpy(), np.eye(3, 4, k=1))
    np.testing.assert_array_equal(ops.full((2, 2), 7).numpy(), np.full((2, 2), 7.0))
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(ops.tril(m, -1).numpy(), np.tril(m, -1))
    np.testing.assert_array_equal(ops.triu(m, 1).numpy(), np.triu(m, 1))
    t = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(ops.trace(t, axis1=1, axis2=2).numpy(), np.trace(t, axis1=1, axis2=2))
    np.testing.assert_array_equal(ops.diag(np.array([1.0, 2.0])).numpy(), np.diag([1.0, 2.0]))
    assert ops.zeros((2,)).dtype == jf.float32


def test_products_and_linalg(rng):
    a, b, v = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=4)
    np.testing.assert_allclose(ops.dot(a, b).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(ops.dot(a, v).numpy(), a @ v, rtol=1e-12)
    np.testing.assert_allclose(ops.outer(v, v).numpy(), np.outer(v, v), rtol=1e-12)
    np.testing.assert_allclose(ops.tensordot(a, b, axes=1).numpy(), np.tensordot(a, b, 1), rtol=1e-12)
    np.testing.assert_allclose(ops.einsum("ij,jk->ik", a, b).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(ops.norm(a).numpy(), np.linalg.norm(a), rtol=1e-12)
    s = a @ a.T + 3 * np.eye(3)
    np.testing.assert_allclose(ops.linalg.inv(s).numpy(), np.linalg.inv(s), rtol=1e-10)
    np.testing.assert_allclose(ops.linalg.det(s).numpy(), np.linalg.det(s), rtol=1e-10)


def test_nn_ops_and_keras_defaults(rng):
    x = rng.normal(size=(3, 5))
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(ops.softmax(x).numpy(), e / e.sum(-1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(ops.nn.log_softmax(x).numpy(), np.log(e / e.sum(-1, keepdims=True)), rtol=1e-10)
    # TF (and Keras on TF) casts the coefficient 0.044715 through float32 before float64
    coeff = float(np.float32(0.044715))
    tanh_gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + coeff * x ** 3)))
    np.testing.assert_allclose(ops.gelu(x).numpy(), tanh_gelu, rtol=1e-10)  # approximate=True by default
    np.testing.assert_allclose(ops.leaky_relu(x).numpy(), np.where(x > 0, x, 0.2 * x), rtol=1e-12)
    np.testing.assert_allclose(ops.silu(x).numpy(), x / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(ops.elu(x).numpy(), np.where(x > 0, x, np.expm1(x)), rtol=1e-12)
    np.testing.assert_allclose(ops.hard_sigmoid(x).numpy(), np.clip(x / 6 + 0.5, 0, 1), rtol=1e-12)
    labels = np.array([1, 0, 4])
    p = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(ops.sparse_categorical_crossentropy(labels, x, from_logits=True).numpy(),
                               -np.log(p[np.arange(3), labels]), rtol=1e-10)
    np.testing.assert_allclose(ops.categorical_crossentropy(np.eye(5)[labels], p).numpy(),
                               -np.log(p[np.arange(3), labels]), rtol=1e-6)
    t, o = rng.uniform(size=(4,)), rng.uniform(0.1, 0.9, size=(4,))
    np.testing.assert_allclose(ops.binary_crossentropy(t, o).numpy(), -(t * np.log(o) + (1 - t) * np.log(1 - o)),
                               rtol=1e-6)
    mean, var = ops.moments(x, axes=[0])
    np.testing.assert_allclose(mean.numpy(), x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), x.var(0), rtol=1e-10)
    np.testing.assert_array_equal(ops.one_hot(np.array([2, 0]), 3).numpy(), np.eye(3)[[2, 0]])


def test_control_flow_and_missing_names():
    assert int(ops.fori_loop(0, 5, lambda i, acc: acc + i, jf.constant(0)).numpy()) == 10
    assert int(ops.while_loop(lambda v: v < 10, lambda v: v * 2, jf.constant(1)).numpy()) == 16
    assert float(ops.convert_to_numpy(ops.cond(jf.constant(True), lambda: 1.0, lambda: 2.0))) == 1.0
    np.testing.assert_array_equal(ops.where(np.array([True, False]), 1.0, 2.0).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(ops.clip(np.array([-2, 0, 5]), -1, 3).numpy(), [-1, 0, 3])
    assert ops.numpy.mean is ops.mean and ops.nn.relu is ops.relu
    with pytest.raises(AttributeError, match="jitflow does not implement keras.ops.stft yet"):
        ops.stft  # noqa: B018
