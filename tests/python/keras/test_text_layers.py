"""jf.keras.layers.TextVectorization and StringLookup against outputs TF 2.21's Keras printed for
the same inputs (hard-coded below), in eager mode, inside a jf.function (where they run as
py_functions) and in a model trained on raw strings."""
import numpy as np
import pytest

import jitflow as jf

layers = jf.keras.layers
TEXTS = np.array(["The cat sat.", "The dog, the CAT!", "a b  c", "Hello-world's end"])


def test_text_vectorization_matches_keras():
    tv = layers.TextVectorization(max_tokens=8)
    tv.adapt(TEXTS)
    assert tv.get_vocabulary() == ["", "[UNK]", "the", "cat", "sat", "helloworlds", "end", "dog"]
    want = [[2, 3, 4, 0], [2, 7, 2, 3], [1, 1, 1, 0], [5, 6, 0, 0]]
    np.testing.assert_array_equal(tv(TEXTS).numpy(), want)
    traced = jf.function(lambda s: tv(s))
    np.testing.assert_array_equal(traced(jf.constant(TEXTS)).numpy(), want)
    bigrams = layers.TextVectorization(output_sequence_length=3, ngrams=2, vocabulary=["the", "cat", "the cat", "dog"])
    np.testing.assert_array_equal(bigrams(TEXTS).numpy(), [[2, 3, 1], [2, 5, 2], [1, 1, 1], [1, 1, 1]])
    multi = layers.TextVectorization(output_mode="multi_hot", vocabulary=["the", "cat"])(TEXTS)
    assert multi.dtype == jf.int64
    np.testing.assert_array_equal(multi.numpy(), [[1, 1, 1], [1, 1, 1], [1, 0, 0], [1, 0, 0]])
    chars = layers.TextVectorization(split="character", standardize=None, max_tokens=6)
    chars.adapt(TEXTS)
    assert chars.get_vocabulary() == ["", "[UNK]", " ", "e", "t", "o"]
    with pytest.raises(ValueError, match="last shape dimension must be 1"):
        tv(np.array([["a", "b"]]))


def test_text_vectorization_standardize_callable():
    # The text-classification tutorial's custom standardization: jf string ops on the batch.
    def standardize(x):
        return jf.strings.regex_replace(jf.strings.lower(x), "<br />|[.,!]", " ")

    texts = np.array(["Good<br />film.", "BAD film, bad!"])
    tv = layers.TextVectorization(standardize=standardize, output_sequence_length=4)
    tv.adapt(texts)
    assert tv.get_vocabulary() == ["", "[UNK]", "film", "bad", "good"]
    want = [[4, 2, 0, 0], [3, 2, 3, 0]]
    np.testing.assert_array_equal(tv(texts).numpy(), want)
    np.testing.assert_array_equal(jf.function(lambda s: tv(s))(jf.constant(texts)).numpy(), want)
    batches = jf.data.Dataset.from_tensor_slices(texts).batch(2).map(lambda t: tv(jf.expand_dims(t, -1)))
    np.testing.assert_array_equal(next(iter(batches)).numpy(), want)
    with pytest.raises(ValueError, match="standardize"):
        layers.TextVectorization(standardize="upper")


def test_string_lookup_matches_keras():
    lookup = layers.StringLookup()
    lookup.adapt(np.array(["a", "b", "b", "c", "c", "c"]))
    assert lookup.get_vocabulary() == ["[UNK]", "c", "b", "a"]
    np.testing.assert_array_equal(lookup(np.array([["a", "z", "c"]])).numpy(), [[3, 0, 1]])
    hot = layers.StringLookup(vocabulary=["a", "b"], output_mode="one_hot")(np.array(["b", "q"]))
    assert hot.dtype == jf.int64
    np.testing.assert_array_equal(hot.numpy(), [[0, 0, 1], [1, 0, 0]])
    inverse = layers.StringLookup(vocabulary=["a", "b"], invert=True)
    assert inverse(np.array([2, 0, 1])).numpy().tolist() == [b"b", b"[UNK]", b"a"]
    counts = layers.StringLookup(vocabulary=["a", "b"], mask_token="", output_mode="count")
    np.testing.assert_array_equal(counts(np.array([["a", "", "b", "b"]])).numpy(), [[0, 1, 2]])
    f = jf.function(lambda s: lookup(s))
    np.testing.assert_array_equal(f(jf.constant(np.array([["c", "b"]]))).numpy(), [[1, 2]])
    with pytest.raises(ValueError, match="repeated term"):
        layers.StringLookup(vocabulary=["a", "a"])


def test_model_trains_on_raw_strings():
    texts = np.array(["good fun movie", "bad boring film", "fun good", "boring bad"] * 4)
    labels = np.array([1, 0, 1, 0] * 4)
    vectorize = layers.TextVectorization(max_tokens=20, output_sequence_length=3)
    vectorize.adapt(texts)
    model = jf.keras.Sequential([vectorize, layers.Embedding(20, 8), layers.GlobalAveragePooling1D(),
                                 layers.Dense(1, activation="sigmoid")])
    model.compile(jf.keras.optimizers.Adam(0.05), "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(texts, labels, epochs=15, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] * 0.5
    assert model.evaluate(texts, labels, verbose=0)[1] == 1.0
    assert model.predict(np.array(["good fun"]), verbose=0)[0, 0] > 0.5
