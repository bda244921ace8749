"""jf.lookup tables against TF 2.21's behaviour (its outputs and errors on the same calls,
hard-coded here): static tables from tensors and text files, eagerly and inside functions,
and the mutable table."""
import numpy as np
import pytest

import jitflow as jf


def _static(keys, values, default):
    return jf.lookup.StaticHashTable(jf.lookup.KeyValueTensorInitializer(keys, values), default)


def test_string_keys_eager_and_traced():
    t = _static(["a", "b", "c"], [1, 2, 3], -1)
    got = t.lookup(jf.constant([["a", "x"], ["c", "b"]]))
    assert got.dtype == jf.int32 and got.numpy().tolist() == [[1, -1], [3, 2]]
    assert t.size().numpy() == 3 and t.size().dtype == jf.int64
    assert t.key_dtype == jf.string and t.value_dtype == jf.int32 and t.default_value.numpy() == -1
    f = jf.function(lambda k: t.lookup(k) + 1)
    assert f(jf.constant(["c", "q"])).numpy().tolist() == [4, 0]
    assert t[jf.constant(["b"])].numpy().tolist() == [2]


def test_numeric_keys_run_as_ops(rng):
    keys = rng.permutation(1000)[:300].astype(np.int64)
    vals = rng.standard_normal(300).astype(np.float32)
    t = _static(jf.constant(keys), jf.constant(vals), -7.0)
    probe = np.concatenate([keys[:50], np.arange(1000, 1050)]).astype(np.int64)
    want = np.concatenate([vals[:50], np.full(50, -7.0, np.float32)])
    np.testing.assert_array_equal(t.lookup(jf.constant(probe)).numpy(), want)
    f = jf.function(lambda k: t.lookup(k))
    np.testing.assert_array_equal(f(jf.constant(probe.reshape(10, 10))).numpy(), want.reshape(10, 10))
    empty = _static(jf.zeros([0], jf.int64), jf.zeros([0]), 2.5)
    assert empty.lookup(jf.constant([1, 2], jf.int64)).numpy().tolist() == [2.5, 2.5]


def test_errors_follow_tf():
    t = _static(["a"], [1], -1)
    with pytest.raises(TypeError, match="Dtype of argument `keys` must be"):
        t.lookup(jf.constant([1]))
    with pytest.raises(jf.errors.FailedPreconditionError, match="HashTable has different value for same key. "
                                                                "Key 1 has 1 and trying to add value 2"):
        _static([1, 1], [1, 2], -1)
    assert _static([1, 1], [5, 5], -1).size().numpy() == 1  # the same value twice is fine


def test_text_file_initializer(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("apple\t3\nbanana\t5\ncherry\t8\n")
    by_line = jf.lookup.StaticHashTable(jf.lookup.TextFileInitializer(
        str(path), jf.string, jf.lookup.TextFileIndex.WHOLE_LINE, jf.int64, jf.lookup.TextFileIndex.LINE_NUMBER), -1)
    assert by_line.lookup(jf.constant(["banana\t5", "x"])).numpy().tolist() == [1, -1]
    by_col = jf.lookup.StaticHashTable(jf.lookup.TextFileInitializer(str(path), jf.string, 0, jf.int64, 1), -1)
    assert by_col.lookup(jf.constant(["cherry", "apple", "kiwi"])).numpy().tolist() == [8, 3, -1]
    with pytest.raises(jf.errors.InvalidArgumentError, match="vocab_size"):
        jf.lookup.StaticHashTable(jf.lookup.TextFileInitializer(str(path), jf.string, 0, jf.int64, 1,
                                                                vocab_size=5), -1)


def test_mutable_hash_table_eager_and_traced():
    m = jf.lookup.experimental.MutableHashTable(jf.string, jf.int64, -1)
    m.insert(jf.constant(["a", "b"]), jf.constant([1, 2], jf.int64))
    assert m.lookup(jf.constant(["a", "z"])).numpy().tolist() == [1, -1]
    assert m.size().numpy() == 2
    m.remove(jf.constant(["a"]))
    keys, values = m.export()
    assert keys.numpy().tolist() == [b"b"] and values.numpy().tolist() == [2]

    @jf.function
    def step(k, v):
        m.insert(k, v)
        return m.lookup(k), m.size()
    got, size = step(jf.constant(["x"]), jf.constant([9], jf.int64))
    assert got.numpy().tolist() == [9] and size.numpy() == 2
    got, size = step(jf.constant(["y"]), jf.constant([4], jf.int64))  # runs again: state persists
    assert got.numpy().tolist() == [4] and size.numpy() == 3
