"""tf.lookup: key -> value tables. A static table keeps its keys sorted: numeric keys are
looked up with jf ops (a search, a gather and a compare), so lookups trace and run inside
functions like any op; string keys and the mutable table run their lookups in Python (a
py_function when traced). StaticVocabularyTable sends keys missing from its vocabulary to
out-of-vocabulary buckets by TF's FarmHash (strings.to_hash_bucket_fast), so ids are TF's."""
import numpy as np

from .. import _C
from .._C import Tensor
from ..core import dtypes as _dt
from ..core.errors import FailedPreconditionError, InvalidArgumentError
from ..core.export import export
from ..core.tensor_spec import TensorSpec
from ..ops import array_ops as _array
from ..ops import basic_ops as _ops
from ..ops import sort_ops as _sort
from ..ops import strings as _strings
from ..tracing.py_function import py_function


def _tensor(x, dtype=None):
    if isinstance(x, Tensor):
        if dtype is not None and x.dtype != _dt.as_dtype(dtype):
            x = _ops.cast(x, dtype)
        return x
    return _ops.convert_to_tensor(x, dtype)


def _py_keys(t):
    """A tensor's values as a flat list of Python keys (bytes for strings)."""
    v = np.asarray(t.numpy())
    return list(v.reshape(-1).tolist())


@export("lookup.KeyValueTensorInitializer")
class KeyValueTensorInitializer:
    """A table's contents from two tensors of the same length: keys and their values."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        self._keys = _tensor(keys, key_dtype)
        self._values = _tensor(values, value_dtype)
        if self._keys.shape.rank != 1 or self._values.shape.rank != 1:
            raise ValueError("keys and values must be vectors")
        self.key_dtype, self.value_dtype = self._keys.dtype, self._values.dtype

    def _pairs(self):
        return _py_keys(self._keys), _py_keys(self._values)


@export("lookup.TextFileIndex")
class TextFileIndex:
    WHOLE_LINE = -2
    LINE_NUMBER = -1


@export("lookup.TextFileInitializer")
class TextFileInitializer:
    """A table's contents from a text file: per line, the key and the value are a column of the
    line split at `delimiter`, the whole line (TextFileIndex.WHOLE_LINE) or its number
    (LINE_NUMBER, plus value_index_offset for values)."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None, delimiter="\t",
                 name=None, value_index_offset=0):
        self._filename = filename.numpy().decode() if isinstance(filename, Tensor) else str(filename)
        self.key_dtype, self.value_dtype = _dt.as_dtype(key_dtype), _dt.as_dtype(value_dtype)
        self._key_index, self._value_index = key_index, value_index
        self._vocab_size, self._delimiter, self._offset = vocab_size, delimiter, value_index_offset

    def _column(self, line, number, index, dtype, offset=0):
        if index == TextFileIndex.LINE_NUMBER:
            return number + offset
        text = line if index == TextFileIndex.WHOLE_LINE else line.split(self._delimiter)[index]
        if dtype == _dt.string:
            return text.encode()
        return int(text) if dtype.is_integer else float(text)

    def _pairs(self):
        with open(self._filename, encoding="utf-8") as f:
            lines = f.read().splitlines()
        if self._vocab_size is not None:
            if len(lines) < self._vocab_size:
                raise InvalidArgumentError(f"Invalid vocab_size in {self._filename}: expected {self._vocab_size} lines, "
                                 f"got {len(lines)}")
            lines = lines[:self._vocab_size]
        keys = [self._column(ln, i, self._key_index, self.key_dtype) for i, ln in enumerate(lines)]
        values = [self._column(ln, i, self._value_index, self.value_dtype, self._offset) for i, ln in enumerate(lines)]
        return keys, values


_SCALAR = TensorSpec([], _dt.int64)


def _check_keys(keys, key_dtype):
    if keys.dtype != key_dtype:
        raise TypeError(f"Dtype of argument `keys` must be {key_dtype!r}, received: {keys.dtype!r}")


@export("lookup.StaticHashTable", "lookup.experimental.StaticHashTable")
class StaticHashTable:
    """An immutable table made once from an initializer; keys not in it give default_value.
    A key given twice with different values is TF's FailedPreconditionError."""

    def __init__(self, initializer, default_value, name=None, experimental_is_anonymous=False):
        keys, values = initializer._pairs()
        self._key_dtype, self._value_dtype = initializer.key_dtype, initializer.value_dtype
        table = {}
        for k, v in zip(keys, values):
            if k in table and table[k] != v:
                raise FailedPreconditionError(f"HashTable has different value for same key. Key "
                                              f"{k.decode() if isinstance(k, bytes) else k} has {table[k]} and "
                                              f"trying to add value {v}")
            table[k] = v
        self._table = table
        self.default_value = _tensor(default_value, self._value_dtype)
        order = sorted(table)
        np_keys = np.array(order, dtype=object if self._key_dtype == _dt.string else self._key_dtype.as_numpy_dtype)
        np_values = np.array([table[k] for k in order],
                             dtype=object if self._value_dtype == _dt.string else self._value_dtype.as_numpy_dtype)
        self._keys = _ops.constant(np_keys, self._key_dtype) if order else _ops.zeros([0], self._key_dtype)
        self._values = _ops.constant(np_values, self._value_dtype) if order else None
        self.name = name

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)

    def size(self, name=None):
        return _ops.constant(len(self._table), _dt.int64)

    def export(self, name=None):
        return self._keys, self._values if self._values is not None else _ops.zeros([0], self._value_dtype)

    def __getitem__(self, keys):
        return self.lookup(keys)

    def lookup(self, keys, name=None):
        keys = _tensor(keys)
        _check_keys(keys, self._key_dtype)
        if self._key_dtype == _dt.string or self._value_dtype == _dt.string:
            return self._lookup_in_python(keys)
        return self._lookup_with_ops(keys)

    def _lookup_with_ops(self, keys):
        n = len(self._table)
        default = _ops.fill(_ops.shape(keys), self.default_value)
        if n == 0:
            return default
        flat = _ops.reshape(keys, [-1])
        at = _ops.minimum(_sort.searchsorted(self._keys, flat), n - 1)
        found = _ops.equal(_array.gather(self._keys, at), flat)
        got = _ops.where(found, _array.gather(self._values, at), _ops.reshape(default, [-1]))
        return _ops.reshape(got, _ops.shape(keys))

    def _lookup_in_python(self, keys):
        table, default = self._table, self.default_value.numpy()
        out_np = object if self._value_dtype == _dt.string else self._value_dtype.as_numpy_dtype

        def find(k):
            v = np.asarray(k.numpy())
            got = np.array([table.get(x, default) for x in v.reshape(-1).tolist()], dtype=out_np).reshape(v.shape)
            return _ops.constant(got, self._value_dtype)
        if not _C.is_tracing():
            return find(keys)
        return py_function(find, [keys], TensorSpec(keys.shape, self._value_dtype))


@export("lookup.StaticVocabularyTable")
class StaticVocabularyTable:
    """String or int64 keys to int64 ids: a key of the initializer's vocabulary gets its value;
    any other key one of `num_oov_buckets` ids after the vocabulary, by the FarmHash of its
    text (TF's StaticVocabularyTable, bucket for bucket)."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None,
                 experimental_is_anonymous=False):
        if num_oov_buckets <= 0:
            raise ValueError("`num_oov_buckets` must be > 0; use StaticHashTable.")
        if initializer is not None:
            if initializer.key_dtype not in (_dt.int64, _dt.string):
                raise TypeError("Invalid `key_dtype`, expected one of (tf.int64, tf.string), but got "
                                f"{initializer.key_dtype!r}.")
            if initializer.value_dtype != _dt.int64:
                raise TypeError(f"Invalid `value_dtype`, expected {_dt.int64!r} but got {initializer.value_dtype!r}.")
            self._table = StaticHashTable(initializer, -1)
        else:
            self._table = None
        table_keys = initializer.key_dtype if initializer is not None else _dt.string
        self._key_dtype = _dt.as_dtype(lookup_key_dtype) if lookup_key_dtype is not None else table_keys
        if self._key_dtype.is_integer and table_keys != _dt.int64 or \
                self._key_dtype == _dt.string and table_keys != _dt.string:
            raise TypeError(f"Invalid `key_dtype`, expected {table_keys!r} but got {self._key_dtype!r}.")
        self._num_oov_buckets = int(num_oov_buckets)
        self.name = name

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: _dt.int64)

    def size(self, name=None):
        vocab = self._table.size() if self._table is not None else _ops.constant(0, _dt.int64)
        return vocab + self._num_oov_buckets

    def __getitem__(self, keys):
        return self.lookup(keys)

    def lookup(self, keys, name=None):
        keys = keys if isinstance(keys, _strings.StringTensor) else _tensor(keys)
        _check_keys(keys, self._key_dtype)
        if keys.dtype.is_integer:
            keys = _ops.cast(keys, _dt.int64)
        text = keys if keys.dtype == _dt.string else _strings.as_string(keys)
        buckets = _strings.to_hash_bucket_fast(text, self._num_oov_buckets)
        if self._table is None:
            return buckets
        ids = self._table.lookup(keys)
        return _ops.where(_ops.not_equal(ids, -1), ids, buckets + self._table.size())


@export("lookup.experimental.MutableHashTable")
class MutableHashTable:
    """A table that insert and remove change; lookups of absent keys give default_value. Its
    operations run in Python (py_function inside functions), in program order."""

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable",
                 experimental_is_anonymous=False):
        self._key_dtype, self._value_dtype = _dt.as_dtype(key_dtype), _dt.as_dtype(value_dtype)
        self.default_value = _tensor(default_value, self._value_dtype)
        self._table = {}
        self.name = name

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)

    def _np(self, dtype):
        return object if dtype == _dt.string else dtype.as_numpy_dtype

    def _run(self, fn, inputs, tout):
        if not _C.is_tracing():
            return fn(*inputs)
        return py_function(fn, list(inputs), tout)

    def insert(self, keys, values, name=None):
        keys, values = _tensor(keys), _tensor(values, self._value_dtype)
        _check_keys(keys, self._key_dtype)

        def put(k, v):
            self._table.update(zip(_py_keys(k), _py_keys(v)))
            return _ops.constant(len(self._table), _dt.int64)
        return self._run(put, (keys, values), _SCALAR)

    def remove(self, keys, name=None):
        keys = _tensor(keys)
        _check_keys(keys, self._key_dtype)

        def drop(k):
            for x in _py_keys(k):
                self._table.pop(x, None)
            return _ops.constant(len(self._table), _dt.int64)
        return self._run(drop, (keys,), _SCALAR)

    def lookup(self, keys, dynamic_default_values=None, name=None):
        keys = _tensor(keys)
        _check_keys(keys, self._key_dtype)
        default = self.default_value.numpy()

        def find(k):
            v = np.asarray(k.numpy())
            got = [self._table.get(x, default) for x in v.reshape(-1).tolist()]
            return _ops.constant(np.array(got, dtype=self._np(self._value_dtype)).reshape(v.shape), self._value_dtype)
        return self._run(find, (keys,), TensorSpec(keys.shape, self._value_dtype))

    def __getitem__(self, keys):
        return self.lookup(keys)

    def size(self, name=None):
        return self._run(lambda: _ops.constant(len(self._table), _dt.int64), (), _SCALAR)

    def export(self, name=None):
        def keys():
            return _ops.constant(np.array(list(self._table), dtype=self._np(self._key_dtype)).reshape(-1),
                                 self._key_dtype)

        def values():
            return _ops.constant(np.array(list(self._table.values()), dtype=self._np(self._value_dtype)).reshape(-1),
                                 self._value_dtype)
        return (self._run(keys, (), TensorSpec([None], self._key_dtype)),
                self._run(values, (), TensorSpec([None], self._value_dtype)))
