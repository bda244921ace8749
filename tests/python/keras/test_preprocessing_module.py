"""jf.keras.preprocessing, the module older TF programs import from: its functions against
numpy and TF 2.21's Keras 3 (outputs printed there and hard-coded here), and the legacy names
jitflow lacks raising AttributeError that names them."""
import numpy as np
import pytest

import jitflow as jf

pre = jf.keras.preprocessing


def test_dataset_builders_are_keras_utils():
    assert pre.timeseries_dataset_from_array is jf.keras.utils.timeseries_dataset_from_array
    assert pre.image_dataset_from_directory is jf.keras.utils.image_dataset_from_directory
    assert pre.text_dataset_from_directory is jf.keras.utils.text_dataset_from_directory
    ds = pre.timeseries_dataset_from_array(np.arange(6), None, sequence_length=3, batch_size=8)
    np.testing.assert_array_equal(next(iter(ds)).numpy(), [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]])


def test_pad_sequences():
    got = pre.sequence.pad_sequences([[1, 2], [3]], maxlen=3)
    np.testing.assert_array_equal(got, [[0, 1, 2], [0, 0, 3]])
    np.testing.assert_array_equal(pre.sequence.pad_sequences([[1, 2, 3, 4]], maxlen=2, truncating="post"), [[1, 2]])


def test_text_to_word_sequence_as_keras():
    words = pre.text.text_to_word_sequence
    assert words("Hello, World!  The cat's hat.\tok") == ["hello", "world", "the", "cat's", "hat", "ok"]
    assert words("A-B c", lower=False, split="-") == ["A", "B c"]
    assert words("x.y", filters="") == ["x.y"]
    assert words("") == []


@pytest.mark.parametrize("path,name", [("text", "Tokenizer"), ("image", "ImageDataGenerator"),
                                       ("sequence", "skipgrams")])
def test_legacy_names_say_they_are_missing(path, name):
    with pytest.raises(AttributeError, match=f"jitflow does not implement tf.keras.preprocessing.{path}.{name}"):
        getattr(getattr(pre, path), name)
    missing = "no" + "pe"
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        getattr(getattr(pre, path), missing)
