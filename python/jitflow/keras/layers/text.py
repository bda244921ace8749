"""Keras 3's StringLookup and TextVectorization. Their string processing (ASCII lowercasing,
Keras's punctuation regex, whitespace or character splitting, n-grams, vocabulary lookups) is
done with numpy on the strings' bytes, directly in eager mode and through a py_function inside
a jf.function or a dataset map, so the layers work in every mode but never compile."""
import re

import numpy as np

from ... import _C
from ...core import dtypes as _dt
from ...core.errors import InvalidArgumentError
from ...core.tensor_spec import TensorSpec
from ...ops import basic_ops as _ops
from ...tracing.py_function import py_function
from .layer import Layer
from .lookup import hash_buckets, oov_salt

_PUNCTUATION = re.compile(rb'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')
_MODES = ("int", "one_hot", "multi_hot", "count")


def _as_bytes(strings):
    arr = np.asarray(strings, dtype=object)
    return np.vectorize(lambda s: s if isinstance(s, bytes) else str(s).encode(), otypes=[object])(arr) \
        if arr.size else arr


def _run(fn, inputs, dtype, shape):
    """fn(numpy bytes array) -> numpy array of `shape` (None for dims unknown until run), on a
    string tensor or array: now when eager, as a py_function when traced."""
    if _C.is_tracing() and hasattr(inputs, "dtype") and not isinstance(inputs, np.ndarray):
        return py_function(lambda t: fn(_as_bytes(t.numpy())), [inputs], Tout=TensorSpec(shape, dtype))
    values = inputs.numpy() if hasattr(inputs, "numpy") else inputs
    return _ops.constant(fn(_as_bytes(values)), dtype)


class _Vocabulary:
    """token -> index with Keras's layout: [mask_token] + num_oov_indices OOV slots + tokens."""

    def __init__(self, mask_token, oov_token, num_oov_indices, max_tokens, salt=None):
        self.mask_token, self.oov_token = mask_token, oov_token
        self.num_oov, self.max_tokens, self.salt = num_oov_indices, max_tokens, salt
        self.tokens = []
        self.index = {}

    def start(self):
        return (self.mask_token is not None) + self.num_oov

    def set(self, tokens):
        tokens = [t if isinstance(t, bytes) else str(t).encode() for t in tokens]
        if len(set(tokens)) != len(tokens):
            repeated = sorted({t.decode() for t in tokens if tokens.count(t) > 1})
            raise ValueError(f"The passed vocabulary has at least one repeated term. Please uniquify your dataset. "
                             f"The repeated terms are {repeated}")
        self.tokens = tokens
        self.index = {t: i + self.start() for i, t in enumerate(tokens)}

    def adapt(self, counts):
        """Tokens by decreasing count, ties by decreasing token (Keras's lexsort), without the
        reserved tokens, at most max_tokens slots in all."""
        for reserved in (self.mask_token, self.oov_token):
            if reserved is not None:
                counts.pop(reserved if isinstance(reserved, bytes) else reserved.encode(), None)
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        if self.max_tokens:
            ranked = ranked[:self.max_tokens - self.start()]
        self.set([t for t, _ in ranked])

    def all_tokens(self):
        head = ([self.mask_token] if self.mask_token is not None else []) + [self.oov_token] * self.num_oov
        return head + [t.decode("utf-8", "replace") for t in self.tokens]

    def lookup(self, tokens):
        mask = self.mask_token.encode() if isinstance(self.mask_token, str) else self.mask_token
        oov = 0 if self.mask_token is None else 1
        if self.num_oov == 0:
            unknown = [t for t in tokens if t not in self.index and t != mask]
            if unknown:
                raise InvalidArgumentError(f"When `num_oov_indices=0` all inputs should be in vocabulary, found OOV "
                                           f"values {unknown[:5]}, consider setting `num_oov_indices=1`.")
        ids = np.array([0 if (mask is not None and t == mask) else self.index.get(t, -1) for t in tokens], np.int64)
        unknown = ids == -1
        if self.num_oov > 1 and unknown.any():  # Keras's OOV buckets: TF's FarmHash (SipHash with a salt)
            words = np.array([t for t, u in zip(tokens, unknown) if u], dtype=object)
            ids[unknown] = oov + hash_buckets(words, self.num_oov, self.salt).numpy()
        else:
            ids[unknown] = oov
        return ids


def _encode(ids_rows, depth, mode, dtype):
    out = np.zeros((len(ids_rows), depth), dtype)
    for r, ids in enumerate(ids_rows):
        ids = np.asarray(ids, np.int64)
        if mode == "multi_hot":
            out[r, ids] = 1
        else:
            np.add.at(out[r], ids, 1)
    return out


class _VocabularyLayer(Layer):
    """What the lookup layers share: their vocabulary (a _Vocabulary in self._jf_vocab) and how
    adapt counts tokens."""

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._jf_vocab.set(list(np.asarray(vocabulary, dtype=object).reshape(-1)))

    def get_vocabulary(self, include_special_tokens=True):
        tokens = self._jf_vocab.all_tokens()
        return tokens if include_special_tokens else tokens[self._jf_vocab.start():]

    def vocabulary_size(self):
        return len(self.get_vocabulary())

    def _count(self, data, steps, tokens_of):
        """Token counts over an array or a dataset of batches (at most `steps` of them)."""
        counts = {}
        batches = data.as_numpy_iterator() if hasattr(data, "as_numpy_iterator") else [data]
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            for t in tokens_of(_as_bytes(batch)):
                counts[t] = counts.get(t, 0) + 1
        return counts


class StringLookup(_VocabularyLayer):
    """Strings to vocabulary indices ([mask_token] + OOV slot + vocabulary), or back with
    invert=True; output_mode int, one_hot, multi_hot or count."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]", vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False,
                 encoding="utf-8", name=None, salt=None, **kwargs):
        kwargs.setdefault("dtype", "int64")  # Keras's: ids and their encodings are int64
        super().__init__(name=name, **kwargs)
        if output_mode not in _MODES:
            raise ValueError(f"Invalid value for argument `output_mode`. Expected one of {list(_MODES)}. Received: "
                             f"output_mode={output_mode}")
        if num_oov_indices < 0:
            raise ValueError("`num_oov_indices` must be greater than or equal to 0. Received: "
                             f"num_oov_indices={num_oov_indices}")
        if sparse or pad_to_max_tokens or idf_weights is not None:
            raise NotImplementedError("jitflow's StringLookup does not implement sparse, pad_to_max_tokens or "
                                      "tf_idf yet")
        self.salt = oov_salt(salt, "IndexLookup")
        self.max_tokens, self.num_oov_indices, self.mask_token, self.oov_token = (max_tokens, num_oov_indices,
                                                                                  mask_token, oov_token)
        self.invert, self.output_mode, self.encoding = invert, output_mode, encoding
        self._jf_vocab = _Vocabulary(mask_token, oov_token, num_oov_indices, max_tokens, self.salt)
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def adapt(self, data, steps=None):
        self._jf_vocab.adapt(self._count(data, steps, lambda batch: batch.reshape(-1)))

    def _forward(self, values):
        shape = values.shape
        ids = self._jf_vocab.lookup(list(values.reshape(-1))).reshape(shape)
        if self.output_mode == "int":
            return ids
        rows = ids.reshape(-1, 1) if ids.ndim <= 1 and self.output_mode == "one_hot" else ids.reshape(len(ids), -1)
        depth = self.vocabulary_size()
        if self.mask_token is not None:  # Keras drops the mask slot from the encodings
            rows, depth = [r[r != 0] - 1 for r in rows], depth - 1
        return _encode(rows, depth, "count" if self.output_mode == "one_hot" else self.output_mode,
                       self._jf_dtype.as_numpy_dtype)

    def call(self, inputs):
        if self.invert:
            table = np.array([t.encode() if isinstance(t, str) else t for t in self.get_vocabulary()], dtype=object)
            ids = _ops.cast(inputs, _dt.int64)
            idx = ids.numpy() if not _C.is_tracing() else None
            if idx is not None:
                return _ops.constant(table[idx])
            return py_function(lambda t: table[t.numpy()], [ids], Tout=_dt.string)
        if isinstance(inputs, (list, tuple)):  # Keras takes plain lists of strings too
            inputs = np.asarray(inputs, dtype=object)
        rank = len(inputs.shape)
        batch = inputs.shape[0] if rank else None
        shape = list(inputs.shape) if self.output_mode == "int" else [batch, None] if rank else [None]
        return _run(self._forward, inputs, self._jf_dtype, shape)

    def get_config(self):
        config = super().get_config()
        config.update({"max_tokens": self.max_tokens, "num_oov_indices": self.num_oov_indices,
                       "mask_token": self.mask_token, "oov_token": self.oov_token, "invert": self.invert,
                       "output_mode": self.output_mode, "vocabulary": self.get_vocabulary(False),
                       "encoding": self.encoding, "salt": self.salt})
        return config


class TextVectorization(_VocabularyLayer):
    """Strings to token ids (or multi_hot/count vectors): standardize ('lower_and_strip_punctuation'
    by default, 'lower', 'strip_punctuation', None, or a callable of jf string ops), split ('whitespace', 'character', None),
    ngrams (n: 1..n-grams, or a tuple of widths), then a vocabulary with index 0 for padding and
    1 for unknown tokens; int output padded to output_sequence_length (or the longest row)."""

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation", split="whitespace", ngrams=None,
                 output_mode="int", output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", name=None, **kwargs):
        kwargs.setdefault("dtype", "int64")  # Keras's: ids and their encodings are int64
        super().__init__(name=name, **kwargs)
        if output_mode not in ("int", "multi_hot", "count"):
            raise ValueError(f"Invalid value for argument `output_mode`. Expected one of ['int', 'multi_hot', "
                             f"'count', 'tf_idf']. Received: output_mode={output_mode}")
        if not callable(standardize) and standardize not in (None, "lower", "strip_punctuation",
                                                             "lower_and_strip_punctuation"):
            raise ValueError(f"Invalid value for argument `standardize`. Expected one of [None, 'lower', "
                             f"'strip_punctuation', 'lower_and_strip_punctuation'] or a callable. Received: "
                             f"standardize={standardize}")
        if split not in (None, "whitespace", "character"):
            raise NotImplementedError("jitflow's TextVectorization implements Keras's named split modes (a split "
                                      "callable returns a ragged tensor, which jitflow does not have)")
        if sparse or ragged or pad_to_max_tokens or idf_weights is not None:
            raise NotImplementedError("jitflow's TextVectorization does not implement sparse, ragged, "
                                      "pad_to_max_tokens or tf_idf yet")
        if output_sequence_length is not None and output_mode != "int":
            raise ValueError(f"`output_sequence_length` must not be set if `output_mode` is not 'int'. Received "
                             f"output_sequence_length={output_sequence_length}.")
        self.max_tokens, self.standardize, self.split = max_tokens, standardize, split
        self.ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self.output_mode, self.output_sequence_length, self.encoding = output_mode, output_sequence_length, encoding
        self._jf_vocab = _Vocabulary("" if output_mode == "int" else None, "[UNK]", 1, max_tokens)
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def _tokens(self, text):
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            text = text.lower()
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            text = _PUNCTUATION.sub(b"", text)
        if self.split == "whitespace":
            tokens = text.split()
        elif self.split == "character":
            tokens = [c.encode() for c in text.decode("utf-8", "replace")]
        else:
            tokens = [text]
        if self.ngrams:
            tokens = [b" ".join(tokens[i:i + n]) for n in self.ngrams for i in range(len(tokens) - n + 1)]
        return tokens

    def _rows(self, values):
        values = np.asarray(values, dtype=object)
        if values.ndim == 2:
            if values.shape[-1] != 1:
                raise ValueError(f"When using `TextVectorization` to tokenize strings, the input rank must be 1 or "
                                 f"the last shape dimension must be 1. Received: inputs.shape={values.shape} with "
                                 f"rank=2")
            values = values[:, 0]
        if callable(self.standardize):  # the user's string ops, run eagerly on the batch's strings
            values = _as_bytes(self.standardize(_ops.constant(values)).numpy())
        return [self._tokens(v) for v in values.reshape(-1)]

    def adapt(self, data, batch_size=None, steps=None):
        self._jf_vocab.adapt(self._count(data, steps, lambda batch: [t for row in self._rows(batch) for t in row]))

    def _forward(self, values):
        rows = [self._jf_vocab.lookup(r) for r in self._rows(values)]
        if self.output_mode != "int":
            return _encode(rows, self.vocabulary_size(), self.output_mode, np.int64)
        width = self.output_sequence_length or max((len(r) for r in rows), default=0)
        out = np.zeros((len(rows), width), np.int64)
        for i, r in enumerate(rows):
            out[i, :min(len(r), width)] = r[:width]
        return out

    def call(self, inputs):
        batch = inputs.shape[0] if len(inputs.shape) else None
        width = self.output_sequence_length if self.output_mode == "int" else self.vocabulary_size()
        return _run(self._forward, inputs, _dt.int64, [batch, width])

    def get_config(self):
        config = super().get_config()
        config.update({"max_tokens": self.max_tokens, "standardize": self.standardize, "split": self.split,
                       "ngrams": self.ngrams, "output_mode": self.output_mode,
                       "output_sequence_length": self.output_sequence_length,
                       "vocabulary": self.get_vocabulary(False), "encoding": self.encoding})
        return config
