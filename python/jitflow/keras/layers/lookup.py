"""Keras 3's Discretization (values to bucket ids by bin boundaries, adapted from approximate
quantiles), IntegerLookup (integer tokens to vocabulary indices and back, adapted from token
frequencies) and Hashing (values to bins by TF's string hashes), with the int, one_hot,
multi_hot and count output modes."""
import numpy as np

from ...core import dtypes as _dt
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops import debugging as _debug
from ...ops import mask_ops as _mask
from ...ops import sort_ops as _sort
from ...ops import stats_ops as _stats
from ...ops import strings as _strings
from .layer import Layer
from .preprocessing import encode_categories

_MODES = ("int", "one_hot", "multi_hot", "count")


def _check_mode(output_mode, allowed=_MODES):
    if output_mode not in allowed:
        raise ValueError(f"Invalid value for argument `output_mode`. Expected one of {list(allowed)}. Received: "
                         f"output_mode={output_mode}")


def _sketch(values, resolution):
    """A weighted summary [2, n] (points, weights) of sorted values, about 1 / resolution points
    taken at even steps of the cumulative count: the mergeable quantile summary Keras adapts
    Discretization with."""
    values = np.sort(np.reshape(values, [-1]))
    stride = max(len(values) * resolution, 1.0)
    points = values[int(stride - 1)::int(stride)]
    return np.stack([points, np.full(points.shape, stride, "float32")])


def _shrink(summary, resolution):
    """The summary re-read at cumulative-weight fractions resolution, 2 resolution, ..., 1
    (interpolated), unless it already has fewer points than that."""
    if summary.shape[1] * resolution < 1:
        return summary
    fractions = resolution + np.arange(0.0, 1.0, resolution)
    cum = summary[1].cumsum()
    at = np.interp(fractions, cum / cum[-1], summary[0])
    cum_at = np.interp(fractions, cum / cum[-1], cum)
    return np.stack([at, np.diff(cum_at, prepend=0.0)]).astype("float32")


class Discretization(Layer):
    """Bucket ids: digitize(x, bin_boundaries), i.e. how many boundaries are <= x; adapt(data)
    sets num_bins - 1 boundaries at approximate quantiles (within epsilon)."""

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int", sparse=False,
                 dtype=None, name=None):
        super().__init__(name=name, dtype=dtype)
        _check_mode(output_mode)
        if sparse:
            raise NotImplementedError("jitflow's Discretization does not implement sparse=True yet")
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"`num_bins` must be greater than or equal to 0. Received: `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"Both `num_bins` and `bin_boundaries` should not be set. Received: "
                             f"`num_bins={num_bins}` and `bin_boundaries={bin_boundaries}`")
        self.bin_boundaries = list(bin_boundaries) if bin_boundaries is not None else None
        self.num_bins, self.epsilon, self.output_mode, self.sparse = num_bins, epsilon, output_mode, sparse
        self._jf_summary = None

    def adapt(self, data, steps=None):
        if self.num_bins is None:
            raise ValueError("Cannot adapt a Discretization layer that has been initialized with `bin_boundaries`, "
                             "use `num_bins` instead.")
        summary = np.zeros((2, 0), "float32")
        # As Keras: a dataset or any other iterable is a sequence of batches; an array is one batch.
        batches = data.as_numpy_iterator() if hasattr(data, "as_numpy_iterator") else (
            [data] if isinstance(data, np.ndarray) or hasattr(data, "numpy") else data)
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            merged = np.concatenate([summary, _sketch(np.asarray(batch, "float32"), self.epsilon)], axis=1)
            summary = _shrink(merged[:, np.argsort(merged[0], kind="stable")], self.epsilon)
        self.bin_boundaries = _shrink(summary, 1.0 / self.num_bins)[0, :-1].tolist()

    def call(self, inputs):
        if self.bin_boundaries is None:
            raise ValueError("You need to either pass the `bin_boundaries` argument at construction time or call "
                             "`adapt(dataset)` before you can start using the `Discretization` layer.")
        x = _ops.cast(inputs, _dt.float32) if not inputs.dtype.is_floating else inputs
        edges = _ops.constant(np.asarray(self.bin_boundaries, x.dtype.as_numpy_dtype))
        flat = _ops.reshape(x, [-1])
        ids = _ops.reshape(_sort.searchsorted(edges, flat, side="right"), _ops.shape(x))
        if self.output_mode == "int":
            return _ops.cast(ids, _dt.int32)
        return encode_categories(_ops.cast(ids, _dt.int64), len(self.bin_boundaries) + 1, self.output_mode,
                                 self._jf_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"bin_boundaries": self.bin_boundaries, "num_bins": self.num_bins, "epsilon": self.epsilon,
                       "output_mode": self.output_mode, "sparse": self.sparse})
        return config


class IntegerLookup(Layer):
    """Integer tokens to indices: [mask_token at 0 when given] + num_oov_indices OOV slots + the
    vocabulary in order; invert=True maps indices back to tokens."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1, vocabulary=None,
                 vocabulary_dtype="int64", idf_weights=None, invert=False, output_mode="int", sparse=False,
                 pad_to_max_tokens=False, oov_method="floormod", salt=None, name=None, **kwargs):
        kwargs.setdefault("dtype", "int64")  # Keras's: its encodings are integer counts too
        super().__init__(name=name, **kwargs)
        _check_mode(output_mode)
        if num_oov_indices < 0:
            raise ValueError("`num_oov_indices` must be greater than or equal to 0. Received: "
                             f"num_oov_indices={num_oov_indices}")
        if oov_method not in ("floormod", "farmhash"):
            raise ValueError(f"Unknown value for `oov_method` argument of layer {type(self).__name__}. Allowed "
                             f"values are: ['floormod', 'farmhash']. Received: {oov_method}")
        if salt is not None and oov_method != "farmhash":
            raise ValueError(f"`salt` can only be used when `oov_method='farmhash'`. Received: oov_method={oov_method}")
        self.oov_method, self.salt = oov_method, oov_salt(salt, "IndexLookup")
        if sparse or pad_to_max_tokens or idf_weights is not None:
            raise NotImplementedError("jitflow's IntegerLookup does not implement sparse, pad_to_max_tokens or "
                                      "tf_idf yet")
        if invert and output_mode != "int":
            raise ValueError(f"`output_mode` must be `'int'` when `invert` is true. Received: "
                             f"output_mode={output_mode}")
        self.max_tokens, self.num_oov_indices, self.mask_token = max_tokens, num_oov_indices, mask_token
        self.oov_token, self.vocabulary_dtype, self.invert = oov_token, vocabulary_dtype, invert
        self.output_mode, self.sparse, self.pad_to_max_tokens = output_mode, sparse, pad_to_max_tokens
        self._jf_vocab = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def _token_start(self):
        return (0 if self.mask_token is None else 1) + self.num_oov_indices

    def set_vocabulary(self, vocabulary):
        vocab = np.asarray(vocabulary, np.int64).reshape(-1)
        if len(np.unique(vocab)) != len(vocab):
            repeated = sorted(int(v) for v in set(vocab) if np.sum(vocab == v) > 1)
            raise ValueError(f"The passed vocabulary has at least one repeated term. Please uniquify your dataset. "
                             f"The repeated terms are {repeated}")
        if self.mask_token is not None and self.mask_token in vocab:
            raise ValueError(f"Found reserved mask token at unexpected location in `vocabulary`. Note that passed "
                             f"`vocabulary` does not need to include the OOV and mask tokens. Received: "
                             f"mask_token={self.mask_token}")
        self._jf_vocab = vocab

    def adapt(self, data, steps=None):
        """The vocabulary: the tokens by decreasing frequency (ties by decreasing value, as
        Keras), without the mask and OOV tokens, cut to max_tokens less the reserved slots."""
        batches = data.as_numpy_iterator() if hasattr(data, "as_numpy_iterator") else [data]
        counts = {}
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            tokens, n = np.unique(np.asarray(batch, np.int64), return_counts=True)
            for t, c in zip(tokens.tolist(), n.tolist()):
                counts[t] = counts.get(t, 0) + c
        for reserved in (self.mask_token, self.oov_token):
            counts.pop(reserved, None)
        tokens = np.array(list(counts), np.int64)
        order = np.lexsort((tokens, np.array([counts[t] for t in tokens.tolist()])))[::-1]
        if self.max_tokens:
            order = order[:self.max_tokens - self._token_start()]
        self._jf_vocab = tokens[order]

    def get_vocabulary(self, include_special_tokens=True):
        vocab = [] if self._jf_vocab is None else self._jf_vocab.tolist()
        if not include_special_tokens:
            return vocab
        head = ([self.mask_token] if self.mask_token is not None else []) + [self.oov_token] * self.num_oov_indices
        return head + vocab

    def vocabulary_size(self):
        return len(self.get_vocabulary())

    def call(self, inputs):
        if self._jf_vocab is None:
            raise ValueError("IntegerLookup needs a vocabulary: pass `vocabulary=` or call `adapt()` first.")
        x = _ops.cast(inputs, _dt.int64)
        if self.invert:
            table = _ops.constant(np.asarray(self.get_vocabulary(), np.int64))
            return _array.gather(table, x)
        order = np.argsort(self._jf_vocab, kind="stable")
        sorted_vocab = _ops.constant(self._jf_vocab[order])
        positions = _ops.constant(order.astype(np.int64) + self._token_start())
        n = len(self._jf_vocab)
        at = _ops.minimum(_sort.searchsorted(sorted_vocab, _ops.reshape(x, [-1]), out_type=_dt.int64),
                          _ops.constant(max(n - 1, 0), _dt.int64))
        at = _ops.reshape(at, _ops.shape(x))
        found = _ops.equal(_array.gather(sorted_vocab, at), x) if n else _ops.zeros_like(x, dtype=_dt.bool)
        if self.num_oov_indices == 0:
            known = found if self.mask_token is None else _ops.logical_or(
                found, _ops.equal(x, _ops.constant(self.mask_token, _dt.int64)))
            _debug.Assert(_stats.reduce_all(known), [
                "When `num_oov_indices=0` all inputs should be in vocabulary, found OOV values",
                _mask.boolean_mask(x, _ops.logical_not(known)), ", consider setting `num_oov_indices=1`."])
        oov = _ops.constant(-1 if self.num_oov_indices == 0 else (0 if self.mask_token is None else 1), _dt.int64)
        if self.num_oov_indices > 1:  # Keras's buckets: the token mod the count, or its hash
            if self.oov_method == "floormod":
                oov = oov + _ops.floormod(x, _ops.constant(self.num_oov_indices, _dt.int64))
            else:
                oov = oov + hash_buckets(_strings.as_string(x), self.num_oov_indices, self.salt)
        ids = _ops.where(found, _array.gather(positions, at), oov) if n else oov + _ops.zeros_like(x)
        if self.mask_token is not None:
            ids = _ops.where(_ops.equal(x, _ops.constant(self.mask_token, _dt.int64)), _ops.zeros_like(ids), ids)
        if self.output_mode == "int":
            return ids
        return encode_categories(ids, self.vocabulary_size(), self.output_mode, self._jf_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"max_tokens": self.max_tokens, "num_oov_indices": self.num_oov_indices,
                       "mask_token": self.mask_token, "oov_token": self.oov_token,
                       "vocabulary": self.get_vocabulary(include_special_tokens=False),
                       "vocabulary_dtype": self.vocabulary_dtype, "idf_weights": None, "invert": self.invert,
                       "output_mode": self.output_mode, "sparse": self.sparse,
                       "pad_to_max_tokens": self.pad_to_max_tokens, "oov_method": self.oov_method,
                       "salt": self.salt})
        return config


def oov_salt(salt, owner):
    """Keras's salt argument as the two-integer SipHash key (one integer is both halves)."""
    if salt is None or isinstance(salt, (tuple, list)) and len(salt) == 2:
        return None if salt is None else list(salt)
    if isinstance(salt, int):
        return [salt, salt]
    raise ValueError(f"The `salt` argument for `{owner}` can only be a tuple of size 2 integers, or a single integer. "
                     f"Received: salt={salt}.")


def hash_buckets(strings, num_buckets, salt):
    """TF's bucket of each string: FarmHash, or keyed SipHash with a salt."""
    if salt is None:
        return _strings.to_hash_bucket_fast(strings, num_buckets)
    return _strings.to_hash_bucket_strong(strings, num_buckets, key=salt)


class Hashing(Layer):
    """Values to bins [0, num_bins) by TF's FarmHash of their text (numbers through as_string,
    floats first cast to int64), or by keyed SipHash when `salt` is given; with `mask_value`,
    that value is bin 0 and the others hash into [1, num_bins). Bin numbers are Keras's."""

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False, **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else None
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError("The `num_bins` for `Hashing` cannot be `None` or non-positive values. Received: "
                             f"num_bins={num_bins}.")
        if output_mode == "int" and self._jf_dtype.name not in ("int32", "int64"):
            raise ValueError("When `output_mode=\"int\"`, `dtype` should be an integer type, 'int32' or 'in64'. "
                             f"Received: dtype={kwargs['dtype']}")
        _check_mode(output_mode)
        if sparse:
            if output_mode == "int":
                raise ValueError('`sparse` may only be true if `output_mode` is `"one_hot"`, `"multi_hot"`, or '
                                 f'`"count"`. Received: sparse={sparse} and output_mode={output_mode}')
            raise NotImplementedError("jitflow's Hashing does not implement sparse=True (no jf.SparseTensor output)")
        self.num_bins, self.mask_value, self.output_mode, self.sparse = num_bins, mask_value, output_mode, sparse
        self.salt = oov_salt(salt, "Hashing")

    def _bins(self, values):
        bins, mask = self.num_bins, None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mask = values == self.mask_value  # elementwise, strings included (TF 2's ==)
        if values.dtype.is_floating:
            values = _ops.cast(values, _dt.int64)
        if values.dtype != _strings.string:
            values = _strings.as_string(values)
        out = hash_buckets(values, bins, self.salt)
        if mask is not None:
            out = _ops.where(mask, _ops.zeros_like(out), out + 1)
        return out

    def call(self, inputs):
        if not isinstance(inputs, _strings.StringTensor):
            inputs = _ops.convert_to_tensor(inputs)
        if self.output_mode == "one_hot" and len(inputs.shape) and inputs.shape[-1] == 1:
            inputs = _ops.squeeze(inputs, [-1])
        bins = self._bins(inputs)
        if self.output_mode == "int":
            return _ops.cast(bins, self._jf_dtype)
        return encode_categories(bins, self.num_bins, self.output_mode, self._jf_dtype)

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return tuple(input_shape)
        return (self.num_bins,) if len(input_shape) == 0 else tuple(input_shape[:-1]) + (self.num_bins,)

    def get_config(self):
        config = super().get_config()
        config.update({"num_bins": self.num_bins, "salt": self.salt, "mask_value": self.mask_value,
                       "output_mode": self.output_mode, "sparse": self.sparse})
        return config
