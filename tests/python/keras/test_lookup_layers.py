"""jf.keras.layers.Discretization and IntegerLookup: bucketing and lookups against numpy
(np.digitize, dict lookups), Keras's index layout (mask, OOV slots, vocabulary), adapt's
frequency order, and Discretization.adapt's boundaries against values TF 2.21's Keras printed
for the same inputs (hard-coded below)."""
import numpy as np
import pytest

import jitflow as jf

layers = jf.keras.layers


def test_discretization_buckets(rng):
    x = rng.normal(size=(4, 5)) * 2
    edges = [-1.0, 0.0, 1.5]
    d = layers.Discretization(bin_boundaries=edges)
    np.testing.assert_array_equal(d(x).numpy(), np.digitize(x, edges))
    assert d(x).dtype == jf.int32
    hot = layers.Discretization(bin_boundaries=edges, output_mode="one_hot")(x[0]).numpy()
    np.testing.assert_array_equal(hot, np.eye(4)[np.digitize(x[0], edges)])
    counts = layers.Discretization(bin_boundaries=edges, output_mode="count")(x).numpy()
    np.testing.assert_array_equal(counts, [np.bincount(np.digitize(r, edges), minlength=4) for r in x])
    f = jf.function(lambda t: d(t), input_signature=[jf.TensorSpec([None, None], jf.float64)])
    np.testing.assert_array_equal(f(jf.constant(x)).numpy(), np.digitize(x, edges))
    with pytest.raises(ValueError, match="adapt"):
        layers.Discretization(num_bins=3)(x)


def test_discretization_adapt():
    d = layers.Discretization(num_bins=4)
    d.adapt(np.arange(100.0))
    np.testing.assert_allclose(d.bin_boundaries, [23.999982833862305, 48.99998092651367, 73.99998474121094],
                               rtol=1e-6)  # TF 2.21's Keras
    merged = layers.Discretization(num_bins=3, epsilon=0.1)
    merged.adapt([np.arange(50.0), np.arange(50.0, 100.0)[::-1], np.arange(7.0)])  # three batches
    np.testing.assert_allclose(merged.bin_boundaries, [27.666662216186523, 63.33332061767578], rtol=1e-6)
    data = np.random.default_rng(1).normal(size=20000)
    approx = layers.Discretization(num_bins=5, epsilon=0.001)
    approx.adapt(data)
    np.testing.assert_allclose(approx.bin_boundaries, np.quantile(data, [0.2, 0.4, 0.6, 0.8]), atol=0.01)


def test_integer_lookup_layout_and_modes():
    lookup = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], mask_token=0)
    assert lookup.get_vocabulary() == [0, -1, 12, 36, 1138, 42]
    x = np.array([[12, 1138, 42], [42, 1000, 36], [0, 36, 12]])
    table = {0: 0, 12: 2, 36: 3, 1138: 4, 42: 5}
    np.testing.assert_array_equal(lookup(x).numpy(), np.vectorize(lambda v: table.get(v, 1))(x))
    inverse = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], invert=True)
    np.testing.assert_array_equal(inverse(np.array([[1, 3, 4], [4, 0, 2]])).numpy(), [[12, 1138, 42], [42, -1, 36]])
    multi = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], output_mode="multi_hot")
    got = multi(np.array([[12, 1138, 42, 42], [42, 7, 36, 7]]))
    assert got.dtype == jf.int64
    np.testing.assert_array_equal(got.numpy(), [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    strict = layers.IntegerLookup(vocabulary=[5, 6], num_oov_indices=0)
    np.testing.assert_array_equal(strict(np.array([6, 5])).numpy(), [1, 0])
    with pytest.raises(jf.errors.InvalidArgumentError, match="num_oov_indices=0"):
        strict(np.array([5, 7]))
    with pytest.raises(ValueError, match="repeated term"):
        layers.IntegerLookup(vocabulary=[1, 1])


def test_integer_lookup_adapt_orders_by_frequency():
    data = np.array([3, 3, 3, 7, 7, 9, 9, 1, 5, 5, 5, 5])
    lookup = layers.IntegerLookup()
    lookup.adapt(data)
    # counts 5:4, 3:3, then 9 and 7 tie at 2 (higher token first, as Keras), then 1
    assert lookup.get_vocabulary() == [-1, 5, 3, 9, 7, 1]
    capped = layers.IntegerLookup(max_tokens=3)
    capped.adapt(jf.data.Dataset.from_tensor_slices(data).batch(5))
    assert capped.get_vocabulary() == [-1, 5, 3]
    np.testing.assert_array_equal(capped(np.array([5, 3, 9])).numpy(), [1, 2, 0])
