"""TF's utility functions and tf.math composites in jf.ops.misc_ops against numpy (or exact
integer references): mode queries, grouping, static values, shape checks, index, partition and
histogram functions, and the math composites."""
import math

import numpy as np
import pytest

import jitflow as jf


def test_mode_queries_and_grouping():
    assert jf.executing_eagerly() and not jf.inside_function()
    seen = jf.function(lambda: jf.constant(jf.executing_eagerly()))()
    assert not bool(seen.numpy())
    assert jf.is_tensor(jf.constant(1)) and jf.is_tensor(jf.Variable(1.0)) and not jf.is_tensor(np.ones(2))
    assert jf.no_op() is None and jf.group(jf.constant(1)) is None
    a, b = jf.tuple([jf.constant(1), jf.constant(2)])
    assert int(a.numpy()) == 1 and int(b.numpy()) == 2
    assert jf.version.VERSION == "2.21.0" and jf.get_logger().name == "tensorflow"


def test_static_values_and_shapes():
    np.testing.assert_array_equal(jf.get_static_value(jf.constant([1, 2])), [1, 2])
    folded = []
    jf.function(lambda x: folded.append(jf.get_static_value(jf.constant(3) * 2)) or x)(jf.constant(0))
    assert int(folded[0]) == 6
    assert jf.ensure_shape(jf.constant([[1, 2]]), [1, None]).shape == (1, 2)
    with pytest.raises(jf.errors.InvalidArgumentError, match="not compatible"):
        jf.ensure_shape(jf.constant([1, 2, 3]), [2])
    f = jf.function(lambda x: jf.ensure_shape(x, [3]), input_signature=[jf.TensorSpec([None], jf.int32)])
    np.testing.assert_array_equal(f(jf.constant([1, 2, 3])).numpy(), [1, 2, 3])
    with pytest.raises(jf.errors.InvalidArgumentError):
        f(jf.constant([1, 2]))
    assert jf.broadcast_static_shape(jf.TensorShape([2, 1, 3]), jf.TensorShape([4, 1])) == jf.TensorShape([2, 4, 3])
    np.testing.assert_array_equal(jf.broadcast_dynamic_shape([2, 1, 3], [4, 1]).numpy(), [2, 4, 3])
    with pytest.raises(ValueError, match="Incompatible shapes"):
        jf.broadcast_static_shape(jf.TensorShape([2]), jf.TensorShape([3]))


def test_index_partition_and_histograms(rng):
    flat = np.array([5, 7, 0, 11])
    np.testing.assert_array_equal(jf.unravel_index(jf.constant(flat), [3, 4]).numpy(), np.unravel_index(flat, (3, 4)))
    x = rng.integers(0, 100, size=(3, 5))
    lengths = np.array([2, 5, 0])
    want = x.copy()
    for b, n in enumerate(lengths):
        want[b, :n] = x[b, :n][::-1]
    np.testing.assert_array_equal(jf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0).numpy(), want)
    np.testing.assert_array_equal(jf.reverse_sequence(x.T, lengths, seq_axis=0, batch_axis=1).numpy(), want.T)
    values = rng.uniform(-2, 7, size=50)
    np.testing.assert_array_equal(jf.histogram_fixed_width(values, [0.0, 5.0], nbins=5).numpy(),
                                  np.bincount(np.clip(np.floor(values), 0, 4).astype(int), minlength=5))
    parts = jf.dynamic_partition(jf.constant([10, 20, 30, 40, 50]), jf.constant([1, 0, 1, 2, 0]), 3)
    assert [p.numpy().tolist() for p in parts] == [[20, 50], [10, 30], [40]]
    stitched = jf.dynamic_stitch([jf.constant([0, 2]), jf.constant([1, 2])], [jf.constant([[1.0], [3.0]]),
                                                                             jf.constant([[2.0], [9.0]])])
    np.testing.assert_array_equal(stitched.numpy(), [[1.0], [2.0], [9.0]])  # later pieces win


def test_math_composites(rng):
    x = rng.uniform(0.1, 3, size=6)
    np.testing.assert_allclose(jf.math.reciprocal_no_nan(np.array([2.0, 0.0])).numpy(), [0.5, 0.0])
    np.testing.assert_array_equal(jf.math.xdivy(np.array([0.0, 2.0]), np.array([0.0, 4.0])).numpy(), [0.0, 0.5])
    np.testing.assert_array_equal(jf.math.rint(np.array([0.5, 1.5, -0.5, 2.6])).numpy(), [0.0, 2.0, -0.0, 3.0])
    np.testing.assert_array_equal(jf.math.invert_permutation(jf.constant([3, 4, 0, 2, 1])).numpy(), [2, 4, 3, 0, 1])
    assert bool(jf.math.is_non_decreasing([1, 1, 2]).numpy()) and not bool(jf.math.is_strictly_increasing([1, 1]).numpy())
    assert float(jf.math.zero_fraction(np.array([0.0, 1.0, 0.0, 2.0])).numpy()) == 0.5
    np.testing.assert_array_equal(jf.math.confusion_matrix([1, 2, 0, 2], [1, 1, 0, 2], num_classes=3).numpy(),
                                  [[1, 0, 0], [0, 1, 0], [0, 1, 1]])
    np.testing.assert_allclose(jf.math.lbeta(x).numpy(),
                               sum(math.lgamma(v) for v in x) - math.lgamma(x.sum()), rtol=1e-10)
    p = np.array([0.025, 0.5, 0.975])
    np.testing.assert_allclose(jf.math.ndtri(p).numpy(), [-1.959963984540054, 0.0, 1.959963984540054], atol=1e-9)
    np.testing.assert_allclose(jf.math.erfcinv(np.array([1.0, 0.5])).numpy(), [0.0, 0.4769362762044699], atol=1e-9)
    assert jf.nn.approx_max_k is jf.math.approx_max_k and jf.nn.approx_min_k is jf.math.approx_min_k  # as TF
    values, idx = jf.math.approx_max_k(np.array([[1.0, 5.0, 3.0], [9.0, 0.0, 2.0]]), 2)
    np.testing.assert_array_equal(values.numpy(), [[5.0, 3.0], [9.0, 2.0]])
    np.testing.assert_array_equal(idx.numpy(), [[1, 2], [0, 2]])
    low, _ = jf.math.approx_min_k(np.array([[1.0, 5.0, 3.0]]), 1)
    np.testing.assert_array_equal(low.numpy(), [[1.0]])
    logits = rng.normal(size=(2, 3))
    np.testing.assert_allclose(jf.math.log_softmax(logits).numpy(),
                               logits - np.log(np.exp(logits).sum(-1, keepdims=True)), rtol=1e-12)
    np.testing.assert_allclose(jf.scalar_mul(2, jf.constant([1.5])).numpy(), [3.0])


def test_set_shape_checks_eager_and_refines_traced_tensors():
    t = jf.constant([[1.0, 2.0, 3.0]])
    t.set_shape([1, None])  # compatible: nothing changes
    assert t.shape == (1, 3)
    with pytest.raises(ValueError, match="not compatible"):  # TF's eager message
        t.set_shape([2, 3])
    seen = []

    def body(x):
        x.set_shape([None, 3])
        seen.append(x.shape.as_list())
        return x * 2.0

    f = jf.function(body, input_signature=[jf.TensorSpec([None, None], jf.float32)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(x).numpy(), x * 2)
    assert seen[0] == [None, 3]
    with pytest.raises(jf.errors.InvalidArgumentError):  # a false claim is caught when the function runs
        f(np.ones((3, 2), np.float32))

    def bad(x):
        x.set_shape([2, 4])
        return x

    with pytest.raises(ValueError, match="not compatible"):  # statically incompatible: at trace time
        jf.function(bad)(np.ones((2, 3), np.float32))


@pytest.mark.parametrize("mode", ["function", "jit_compile", "none_signature"])
def test_set_shape_refines_every_unknown_dim_and_unknown_rank(mode):
    shapes = []

    def body(x):
        x.set_shape([2, None, 4])
        shapes.append(x.shape.as_list())
        return jf.reduce_sum(x, axis=2)

    sig = {"none_signature": [jf.TensorSpec(None, jf.float32)]}.get(mode, [jf.TensorSpec([None, None, None], jf.float32)])
    f = jf.function(body, input_signature=sig, jit_compile=mode == "jit_compile")
    x = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(f(x).numpy(), x.astype(np.float64).sum(axis=2), rtol=1e-5)
    assert shapes[0] == [2, None, 4]
    with pytest.raises(jf.errors.InvalidArgumentError):
        f(np.ones((2, 5, 3), np.float32))
    if mode == "none_signature":  # a new rank is a new trace, where the claim fails statically
        with pytest.raises(ValueError, match="not compatible"):
            f(np.ones((2, 4), np.float32))


def test_ensure_shape_messages_show_the_shapes():
    f = jf.function(lambda x: jf.ensure_shape(x, [None, 3]), input_signature=[jf.TensorSpec([None, None], jf.float32)])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"expected shape \(None, 3\)"):
        f(np.ones((3, 2), np.float32))
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Shape of tensor \(3,\) is not compatible with expected "
                                                               r"shape \(2,\)"):
        jf.ensure_shape(jf.constant([1, 2, 3]), [2])
