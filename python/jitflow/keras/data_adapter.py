"""How fit/evaluate/predict read their data: numpy arrays (and tensors, lists or dicts of them)
cut into batches, shuffled per epoch from a seed jf.random's global seed decides; Python
iterators (generators) read on across epochs; and re-iterable sources of batches (a
jf.data.Dataset, recognised by its element_spec, or any iterable) started afresh each epoch."""
import itertools
import warnings

import numpy as np

from .. import _C
from ..core import nest
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as _ops
from ..ops import random_ops as _random
from ..ops.variables import Variable


def _is_array(x):
    return isinstance(x, (np.ndarray, _C.Tensor, Variable)) or np.isscalar(x)


def _is_array_data(x):
    """Arrays, or lists/tuples/dicts whose leaves are arrays or lists of numbers (Keras's
    multi-input arrays); anything else with __iter__/__next__ is a source of batches."""
    if x is None or _is_array(x):
        return True
    if isinstance(x, dict):
        return all(_is_array_data(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(_is_array_data(v) or isinstance(v, (int, float)) for v in x)
    return False


def _to_numpy(x):
    """One array leaf as numpy: float64 becomes float32 (Keras casts float inputs to floatx)."""
    a = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    return a.astype(np.float32) if a.dtype == np.float64 else a


def _leaves_to_numpy(x):
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: _leaves_to_numpy(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not all(isinstance(v, (int, float)) for v in x):
        return type(x)(_leaves_to_numpy(v) for v in x)
    return _to_numpy(x)


def _num_samples(x):
    lengths = {int(np.shape(a)[0]) for a in nest.flatten(x) if a is not None}
    if len(lengths) > 1:
        raise ValueError(f"Data cardinality is ambiguous: the arrays have {sorted(lengths)} samples. Make sure all "
                         "arrays contain the same number of samples.")
    return lengths.pop() if lengths else 0


def _take(x, index):
    if x is None:
        return None
    return nest.map_structure(lambda a: np.take(a, index, axis=0), x)


def _slice(x, start, stop):
    if x is None:
        return None
    return nest.map_structure(lambda a: a[start:stop], x)


def unpack(data):
    """(x, y, sample_weight) from a batch: x alone, (x,), (x, y) or (x, y, sample_weight)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, found: "
                     f"a tuple of {len(data)} elements")


def apply_class_weight(batch, class_weight):
    """(x, y, sample_weight) with each sample weighted by its class's weight (the label, or a
    one-hot row's argmax), times any sample weight, as Keras's class_weight."""
    if not class_weight:
        return batch
    x, y, sw = batch
    if y is None or isinstance(y, (dict, list, tuple)):
        raise ValueError("`class_weight` is only supported for Models with a single output.")
    labels = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
    if labels.ndim == 2 and labels.shape[1] > 1:
        labels = labels.argmax(axis=1)
    labels = labels.reshape(len(labels), -1)[:, 0].astype(np.int64)
    table = np.ones(max(max(class_weight) + 1, int(labels.max(initial=0)) + 1), np.float32)
    for cls, weight in class_weight.items():
        table[int(cls)] = weight
    weights = table[labels]
    if sw is not None:
        weights = weights * np.asarray(sw.numpy() if hasattr(sw, "numpy") else sw, np.float32).reshape(len(labels))
    return x, y, weights


def shuffle_rng():
    """A numpy Generator for one fit's shuffling: from jf.random's global seed when one is set
    (a seeded run shuffles the same way), from the OS otherwise."""
    s0, s1 = _random.get_seed(None)
    return np.random.default_rng([int(s0), int(s1)])


class PyDataset:
    """Keras 3's PyDataset (keras.utils.Sequence): a source of batches by index. Subclasses give
    __len__ (batches per epoch) and __getitem__(index) -> (x, y) or (x, y, sample_weight);
    fit asks for the batches of each epoch in order (shuffled with shuffle=True) and calls
    on_epoch_end after it. workers/use_multiprocessing are accepted; jitflow reads the batches
    on the training thread."""

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self._workers, self._use_multiprocessing, self._max_queue_size = workers, use_multiprocessing, max_queue_size

    workers = property(lambda self: self._workers)
    use_multiprocessing = property(lambda self: self._use_multiprocessing)
    max_queue_size = property(lambda self: self._max_queue_size)

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        return self.num_batches

    @property
    def num_batches(self):
        if type(self).__len__ is not PyDataset.__len__:
            return len(self)
        raise NotImplementedError("You need to implement the `num_batches` property or `__len__`")

    def on_epoch_begin(self):
        pass

    def on_epoch_end(self):
        pass


class DataHandler:
    """Batches for each epoch: `epochs()` yields (epoch, iterator of (step, batch))."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, steps_per_epoch=None, shuffle=False,
                 epochs=1, initial_epoch=0, rng=None, class_weight=None):
        self.epochs_range = range(initial_epoch, epochs)
        self.class_weight = class_weight
        self.steps_per_epoch = steps_per_epoch
        self.shuffle = shuffle
        self.rng = rng
        self.insufficient_data = False
        if _is_array_data(x):
            self.kind = "arrays"
            self.arrays = tuple(_leaves_to_numpy(v) for v in (x, y, sample_weight))
            self.size = _num_samples(self.arrays)
            self.batch_size = batch_size or 32
            self.steps = steps_per_epoch or max(1, -(-self.size // self.batch_size))
            return
        if y is not None or sample_weight is not None:
            raise ValueError("`y` argument is not supported when using a dataset, a generator or an iterable as input "
                             "(`x` holds the targets).")
        if batch_size is not None and hasattr(x, "element_spec"):
            raise ValueError("The `batch_size` argument must not be specified when using a dataset (it is batched "
                             "already).")
        if isinstance(x, PyDataset):
            self.kind, self.source = "pydataset", x
        elif hasattr(x, "__next__"):
            self.kind, self.iterator = "iterator", x
        elif hasattr(x, "__iter__"):
            self.kind, self.source = "iterable", x
        else:
            raise ValueError(f"Unrecognized data type: x={x!r} (of type {type(x).__name__})")
        self.steps = steps_per_epoch
        if self.steps is None and self.kind in ("iterable", "pydataset"):
            try:
                self.steps = len(x)
            except TypeError:
                self.steps = None

    def _array_batches(self):
        index = self.rng.permutation(self.size) if self.shuffle and self.rng is not None else np.arange(self.size)
        for step in range(self.steps):
            start = (step * self.batch_size) % max(self.size, 1)
            part = index[start:start + self.batch_size]
            yield step, apply_class_weight(tuple(_take(a, part) for a in self.arrays), self.class_weight)

    def _batches(self):
        if self.kind == "arrays":
            yield from self._array_batches()
            return
        if self.kind == "pydataset":
            yield from self._pydataset_batches()
            return
        source = self.iterator if self.kind == "iterator" else iter(self.source)
        if self.steps_per_epoch is not None:
            source = itertools.islice(source, self.steps_per_epoch)
        count = 0
        for step, batch in enumerate(source):
            count += 1
            yield step, apply_class_weight(unpack(batch), self.class_weight)
        if count == 0 or (self.steps_per_epoch is not None and count < self.steps_per_epoch):
            self.insufficient_data = True
            warnings.warn("Your input ran out of data; interrupting training. Make sure that your dataset or "
                          "generator can generate at least `steps_per_epoch * epochs` batches. You may need to use "
                          "the `.repeat()` function when building your dataset.", UserWarning, stacklevel=4)
        elif self.steps is None:
            self.steps = count

    def _pydataset_batches(self):
        data = self.source
        data.on_epoch_begin()
        order = np.arange(len(data))
        if self.shuffle and self.rng is not None:
            order = self.rng.permutation(len(data))
        if self.steps_per_epoch is not None:
            order = order[:self.steps_per_epoch]
        for step, index in enumerate(order):
            yield step, apply_class_weight(unpack(data[int(index)]), self.class_weight)
        data.on_epoch_end()

    def epochs(self):
        for epoch in self.epochs_range:
            yield epoch, self._batches()
            if self.insufficient_data:
                return


def split_validation(x, y, sample_weight, validation_split):
    """The last `validation_split` of the samples, before any shuffling, as Keras takes them."""
    if not _is_array_data(x):
        raise ValueError("`validation_split` is only supported for Tensors or NumPy arrays, found following types in "
                         f"the input: {type(x).__name__}")
    arrays = tuple(_leaves_to_numpy(v) for v in (x, y, sample_weight))
    n = _num_samples(arrays)
    split = int(n * (1.0 - validation_split))
    if split == 0 or split == n:
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to split it into a validation "
                         f"and training set as specified by `validation_split={validation_split}`. Either provide "
                         "more data, or a different value for the `validation_split` argument.")
    train = tuple(_slice(a, 0, split) for a in arrays)
    val = tuple(_slice(a, split, n) for a in arrays)
    return train, val


def to_tensors(batch):
    """A batch's leaves as jf tensors (numpy float64 as float32)."""
    def convert(a):
        if a is None or isinstance(a, (_C.Tensor, Variable)):
            return a
        arr = np.asarray(a)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        if arr.dtype.kind in "USO":  # text: jf's string tensors take str, bytes and object arrays
            return _ops.convert_to_tensor(arr)
        return _C.convert_to_tensor(arr)
    return nest.map_structure(convert, batch)


def signature_of(batch):
    """The batch's TensorSpecs with the batch dim left unknown (one trace serves every batch size)."""
    def spec(t):
        shape = list(t.shape)
        return TensorSpec([None] + shape[1:] if shape else [], t.dtype)
    return nest.map_structure(spec, batch)


def signature_key(signature):
    return tuple((tuple(s.shape), s.dtype.name) for s in nest.flatten(signature)), str(
        nest.map_structure(lambda _: 0, signature))

