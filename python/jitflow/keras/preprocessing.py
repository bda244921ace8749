"""keras.preprocessing as TF 2.21's Keras 3 keeps it for older programs: the dataset builders
(the same functions as keras.utils), sequence.pad_sequences and text.text_to_word_sequence. The
legacy classes (Tokenizer, ImageDataGenerator, TimeseriesGenerator, ...) are not implemented
and say so by name."""
import types

from .utils import (
    image_dataset_from_directory,
    pad_sequences,
    text_dataset_from_directory,
    timeseries_dataset_from_array,
)

_DEFAULT_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def text_to_word_sequence(input_text, filters=_DEFAULT_FILTERS, lower=True, split=" "):
    """The words of a text: lowercased (lower=True), each filter character made a separator,
    split at `split` with empty pieces dropped."""
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate({ord(c): split for c in filters})
    return [w for w in input_text.split(split) if w]


class _Namespace(types.SimpleNamespace):
    """A keras.preprocessing submodule: its TF names jitflow lacks raise AttributeError naming them."""

    def __init__(self, path, missing, **names):
        super().__init__(**names)
        self._path, self._missing = path, frozenset(missing)

    def __getattr__(self, name):
        if name in self.__dict__.get("_missing", ()):
            raise AttributeError(f"jitflow does not implement tf.keras.preprocessing.{self._path}.{name} yet")
        raise AttributeError(f"module 'jitflow.keras.preprocessing.{self.__dict__.get('_path')}' has no attribute "
                             f"'{name}'")


sequence = _Namespace("sequence", ("TimeseriesGenerator", "make_sampling_table", "skipgrams"),
                      pad_sequences=pad_sequences)
text = _Namespace("text", ("Tokenizer", "hashing_trick", "one_hot", "tokenizer_from_json"),
                  text_to_word_sequence=text_to_word_sequence)
image = _Namespace("image", ("DirectoryIterator", "ImageDataGenerator", "Iterator", "NumpyArrayIterator",
                             "apply_affine_transform", "apply_brightness_shift", "apply_channel_shift", "array_to_img",
                             "img_to_array", "load_img", "random_brightness", "random_channel_shift",
                             "random_rotation", "random_shear", "random_shift", "random_zoom", "save_img",
                             "smart_resize"))

__all__ = ["image", "image_dataset_from_directory", "sequence", "text", "text_dataset_from_directory",
           "timeseries_dataset_from_array"]
