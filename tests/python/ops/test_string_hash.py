"""jf.strings.to_hash_bucket_fast / _strong, jf.lookup.StaticVocabularyTable and
jf.keras.layers.Hashing against TF 2.21: every expected bucket below was printed by TF 2.21 (and
its Keras 3) for the same inputs and is hard-coded, since the hashes (FarmHash Fingerprint64,
SipHash-2-4) have no numpy reference. Eagerly, inside jf.function, and with an all-None
input_signature."""
import numpy as np
import pytest

import jitflow as jf

WORDS = ["hello", "", "a", "jitflow" * 20, "héllo", "\x00x"]
FAST_2_62 = [3786372426573024488, 1936946117179621455, 3694432073954588131, 2697415573777553449,
             3262255192197256439, 1582532181264912113]
FAST_1000 = [296, 263, 939, 353, 151, 17]
STRONG_1_2 = [2957200328589801622, 443797209252341627, 546566331822570742, 2844884918992974779,
              2585625329550130320, 3196662403040820063]
STRONG_7_11_1000 = [813, 847, 380, 298, 633, 575]

MODES = ["eager", "function", "none_signature"]


def _run(mode, fn, x):
    if mode == "eager":
        return fn(x)
    sig = [jf.TensorSpec(None, jf.string)] if mode == "none_signature" else None
    return jf.function(fn, input_signature=sig)(jf.constant(x))


@pytest.mark.parametrize("mode", MODES)
def test_fast_buckets_are_tfs(mode):
    got = _run(mode, lambda s: jf.strings.to_hash_bucket_fast(s, 2**62), WORDS)
    assert got.dtype == jf.int64 and got.numpy().tolist() == FAST_2_62
    got = _run(mode, lambda s: jf.strings.to_hash_bucket_fast(s, 1000), np.array(WORDS, object).reshape(2, 3))
    assert got.shape == (2, 3) and got.numpy().ravel().tolist() == FAST_1000


@pytest.mark.parametrize("mode", MODES)
def test_strong_buckets_are_tfs(mode):
    got = _run(mode, lambda s: jf.strings.to_hash_bucket_strong(s, 2**62, key=[1, 2]), WORDS)
    assert got.numpy().tolist() == STRONG_1_2
    got = _run(mode, lambda s: jf.strings.to_hash_bucket_strong(s, 1000, key=[7, 11]), WORDS)
    assert got.numpy().tolist() == STRONG_7_11_1000


def test_hash_errors_and_empty_inputs():
    assert jf.strings.to_hash_bucket_fast(jf.constant([], jf.string), 5).shape == (0,)
    assert int(jf.strings.to_hash_bucket_fast("a", 1000).numpy()) == 939  # a scalar
    with pytest.raises(jf.errors.InvalidArgumentError, match="num_buckets' of 0 must be at least minimum 1"):
        jf.strings.to_hash_bucket_fast(WORDS, 0)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Key must have 2 elements"):
        jf.strings.to_hash_bucket_strong(WORDS, 10, key=[1])
    with pytest.raises((TypeError, jf.errors.InvalidArgumentError)):
        jf.strings.to_hash_bucket_fast(jf.constant([1, 2]), 10)
    with pytest.raises(TypeError, match="string"):
        jf.function(lambda x: jf.strings.to_hash_bucket_fast(x, 10))(jf.constant([1, 2]))


def _vocab(keys, values, oov, **kw):
    init = jf.lookup.KeyValueTensorInitializer(keys, jf.constant(values, jf.int64))
    return jf.lookup.StaticVocabularyTable(init, oov, **kw)


@pytest.mark.parametrize("mode", MODES)
def test_static_vocabulary_table(mode):
    t = _vocab(["emerson", "lake", "palmer"], [0, 1, 2], 5)
    got = _run(mode, t.lookup, ["emerson", "lake", "palmer", "king", "crimson"])
    assert got.dtype == jf.int64 and got.numpy().tolist() == [0, 1, 2, 6, 7]
    assert int(t.size().numpy()) == 8 and t.key_dtype == jf.string and t.value_dtype == jf.int64
    ints = _vocab(jf.constant([10, 20], jf.int64), [0, 1], 3)
    assert ints.lookup(jf.constant([10, 20, 30, -5], jf.int64)).numpy().tolist() == [0, 1, 4, 2]
    f = jf.function(ints.lookup, input_signature=[jf.TensorSpec([None], jf.int64)])
    assert f(jf.constant([30, 10], jf.int64)).numpy().tolist() == [4, 0]
    small = _vocab(jf.constant([1], jf.int64), [0], 2, lookup_key_dtype=jf.int32)
    assert small.lookup(jf.constant([1, 7])).numpy().tolist() == [0, 1]
    assert jf.lookup.StaticVocabularyTable(None, 3).lookup(jf.constant(["x", "y"])).numpy().tolist() == [2, 2]


def test_static_vocabulary_table_errors():
    with pytest.raises(ValueError, match="must be > 0"):
        _vocab(["a"], [0], 0)
    with pytest.raises(TypeError, match="value_dtype"):
        jf.lookup.StaticVocabularyTable(jf.lookup.KeyValueTensorInitializer(["a"], jf.constant([0])), 2)
    with pytest.raises(TypeError, match="key_dtype"):
        jf.lookup.StaticVocabularyTable(
            jf.lookup.KeyValueTensorInitializer(jf.constant([1]), jf.constant([0], jf.int64)), 2)
    with pytest.raises(TypeError, match="Dtype of argument `keys`"):
        _vocab(["a"], [0], 2).lookup(jf.constant([1]))


def test_keras_hashing_layer():
    layers = jf.keras.layers
    h = layers.Hashing(num_bins=7)
    out = h(jf.constant(["a", "b", "c", "hello"]))
    assert out.dtype == jf.int64 and out.numpy().tolist() == [5, 2, 5, 5]
    assert h(jf.constant([1, 2, 3], jf.int64)).numpy().tolist() == [5, 5, 2]
    assert layers.Hashing(num_bins=7, mask_value="")(jf.constant(["a", "", "c"])).numpy().tolist() == [4, 0, 5]
    assert layers.Hashing(num_bins=7, salt=[133, 137])(jf.constant(["a", "b", "c"])).numpy().tolist() == [4, 4, 0]
    assert layers.Hashing(num_bins=7, salt=133)(jf.constant(["a", "b", "c"])).numpy().tolist() == [4, 5, 3]
    hot = layers.Hashing(num_bins=4, output_mode="one_hot")(jf.constant(["a", "b", "c"]))
    assert hot.dtype == jf.float32
    np.testing.assert_array_equal(hot.numpy(), [[0, 0, 0, 1], [0, 0, 1, 0], [1, 0, 0, 0]])
    pairs = jf.constant([["a", "b"], ["c", "c"]])
    np.testing.assert_array_equal(layers.Hashing(num_bins=4, output_mode="multi_hot")(pairs).numpy(),
                                  [[0, 0, 1, 1], [1, 0, 0, 0]])
    counts = layers.Hashing(num_bins=4, output_mode="count")
    np.testing.assert_array_equal(counts(pairs).numpy(), [[0, 0, 1, 1], [2, 0, 0, 0]])
    config = counts.get_config()
    assert {k: config[k] for k in ("num_bins", "salt", "mask_value", "output_mode", "sparse")} == {
        "num_bins": 4, "salt": None, "mask_value": None, "output_mode": "count", "sparse": False}
    f = jf.function(lambda s: h(s), input_signature=[jf.TensorSpec([None], jf.string)])
    assert f(jf.constant(["a", "b"])).numpy().tolist() == [5, 2]
    with pytest.raises(ValueError, match="num_bins"):
        layers.Hashing(num_bins=0)
    with pytest.raises(ValueError, match="salt"):
        layers.Hashing(num_bins=3, salt="x")


@pytest.mark.parametrize("mode", MODES)
def test_lookup_layers_bucket_oov_tokens_as_keras(mode):
    layers = jf.keras.layers
    s = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=3)
    got = _run(mode, s, np.array([["a", "x", "y"], ["c", "zz", "b"]], object))
    assert got.numpy().tolist() == [[3, 2, 2], [5, 1, 4]]
    assert s.get_vocabulary() == ["[UNK]"] * 3 + ["a", "b", "c"]
    masked = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=3, mask_token="")
    assert _run(mode, masked, ["a", "x", "", "q"]).numpy().tolist() == [4, 3, 0, 3]
    salted = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=3, salt=5)
    assert _run(mode, salted, ["a", "x", "y", "q"]).numpy().tolist() == [3, 2, 2, 1]
    counts = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=3, output_mode="count")
    assert counts(jf.constant([["a", "x", "y", "q"]])).numpy().tolist() == [[0, 0, 3, 1, 0, 0]]


def test_integer_lookup_oov_methods():
    layers = jf.keras.layers
    x = jf.constant([10, 7, 8, -4, 20], jf.int64)
    assert layers.IntegerLookup(vocabulary=[10, 20], num_oov_indices=3)(x).numpy().tolist() == [3, 1, 2, 2, 4]
    farm = layers.IntegerLookup(vocabulary=[10, 20], num_oov_indices=3, oov_method="farmhash")
    assert farm(x).numpy().tolist() == [3, 1, 1, 1, 4]
    salted = layers.IntegerLookup(vocabulary=[10, 20], num_oov_indices=3, oov_method="farmhash", salt=[1, 2])
    assert salted(x).numpy().tolist() == [3, 1, 0, 0, 4]
    f = jf.function(salted, input_signature=[jf.TensorSpec([None], jf.int64)])
    assert f(x).numpy().tolist() == [3, 1, 0, 0, 4]
    masked = layers.IntegerLookup(vocabulary=[10, 20], num_oov_indices=2, mask_token=0)
    assert masked(jf.constant([10, 7, 0, -3, 20], jf.int64)).numpy().tolist() == [3, 2, 0, 2, 4]
    assert masked.get_vocabulary() == [0, -1, -1, 10, 20]
    with pytest.raises(ValueError, match="salt"):
        layers.IntegerLookup(vocabulary=[1], num_oov_indices=2, salt=3)
    with pytest.raises(ValueError, match="oov_method"):
        layers.IntegerLookup(vocabulary=[1], oov_method="md5")
    with pytest.raises(ValueError, match="num_oov_indices"):
        layers.StringLookup(vocabulary=["a"], num_oov_indices=-1)
