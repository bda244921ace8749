"""keras.datasets: the small datasets TF tutorials start from (mnist, fashion_mnist, cifar10,
cifar100, imdb, reuters, boston_housing), downloaded by keras.utils.get_file from Keras's
origins into ~/.keras/datasets, checked against Keras's hashes where Keras has them, and
returned as Keras returns them (numpy arrays). Pickled files are read by an unpickler that only
rebuilds numpy arrays and plain containers, so a tampered download cannot run code."""
import gzip
import io
import json
import os
import pickle
import types
import zipfile

import numpy as np

from .backend_config import image_data_format
from .utils import get_file

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_TORONTO = "https://www.cs.toronto.edu/~kriz/"
# Keras's sha256 of each download (None: Keras checks none).
_HASHES = {
    "mnist.npz": "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
    "boston_housing.npz": "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5",
    "imdb.npz": "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f",
    "reuters.npz": "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916",
    "cifar-10-python.tar.gz": "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    "cifar-100-python.tar.gz": "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
}
_SAFE = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
         ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
         ("numpy._core.multiarray", "scalar"), ("builtins", "list"), ("builtins", "dict")}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _SAFE:
            raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name} from a dataset file")
        return super().find_class(module, name)


def _load_npz(path):
    """An .npz's arrays; object arrays (ragged sequences) through the safe unpickler."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for member in z.namelist():
            with z.open(member) as raw:
                fp = io.BytesIO(raw.read())
            version = np.lib.format.read_magic(fp)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(fp)
            if dtype.hasobject:
                array = _SafeUnpickler(fp, encoding="latin1").load()
            else:
                array = np.frombuffer(fp.read(), dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()
            out[member.removesuffix(".npy")] = array
    return out


def _fetch(fname, origin_file, base=None, **kwargs):
    return get_file(fname, origin=(base or _BASE) + origin_file, file_hash=_HASHES.get(origin_file), **kwargs)


def _mnist_load_data(path="mnist.npz"):
    with np.load(_fetch(path, "mnist.npz"), allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


def _fashion_load_data():
    files = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz"]
    paths = [get_file(f, origin=_BASE + f, cache_subdir=os.path.join("datasets", "fashion-mnist")) for f in files]
    data = []
    for path, offset in zip(paths, (8, 16, 8, 16)):
        with gzip.open(path, "rb") as f:
            data.append(np.frombuffer(f.read(), np.uint8, offset=offset))
    y_train, x_train, y_test, x_test = data
    return (x_train.reshape(len(y_train), 28, 28), y_train), (x_test.reshape(len(y_test), 28, 28), y_test)


def _cifar_batch(path, label_key="labels"):
    with open(path, "rb") as f:
        d = {k.decode("utf8"): v for k, v in _SafeUnpickler(f, encoding="bytes").load().items()}
    return d["data"].reshape(-1, 3, 32, 32), np.asarray(d[label_key])


def _cifar_finish(x_train, y_train, x_test, y_test):
    y_train, y_test = y_train.reshape(-1, 1).astype(np.uint8), y_test.reshape(-1, 1).astype(np.uint8)
    if image_data_format() == "channels_last":
        x_train, x_test = x_train.transpose(0, 2, 3, 1), x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)


def _cifar10_load_data():
    root = os.path.join(_fetch("cifar-10-batches-py-target", "cifar-10-python.tar.gz", base=_TORONTO, extract=True),
                        "cifar-10-batches-py")
    parts = [_cifar_batch(os.path.join(root, f"data_batch_{i}")) for i in range(1, 6)]
    x_test, y_test = _cifar_batch(os.path.join(root, "test_batch"))
    return _cifar_finish(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), x_test, y_test)


def _cifar100_load_data(label_mode="fine"):
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'`label_mode` must be one of `"fine"`, `"coarse"`. Received: label_mode={label_mode}.')
    root = os.path.join(_fetch("cifar-100-python-target", "cifar-100-python.tar.gz", base=_TORONTO, extract=True),
                        "cifar-100-python")
    x_train, y_train = _cifar_batch(os.path.join(root, "train"), f"{label_mode}_labels")
    x_test, y_test = _cifar_batch(os.path.join(root, "test"), f"{label_mode}_labels")
    return _cifar_finish(x_train, y_train, x_test, y_test)


def _boston_load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    if not 0 <= test_split < 1:
        raise ValueError(f"Invalid `test_split` argument: {test_split}. It must be between 0 and 1 (exclusive of 1).")
    with np.load(_fetch(path, "boston_housing.npz"), allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    order = np.arange(len(x))
    np.random.RandomState(seed).shuffle(order)
    x, y = x[order], y[order]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))


def _shuffled(xs, labels, rng):
    order = np.arange(len(xs))
    rng.shuffle(order)
    return xs[order], labels[order]


def _shift(xs, labels, start_char, index_from, maxlen):
    """Word ids moved up by index_from after an optional start_char; with maxlen, only the
    sequences shorter than maxlen (Keras's remove_long_seq)."""
    if start_char is not None:
        xs = [[start_char] + [w + index_from for w in x] for x in xs]
    else:
        xs = [[w + index_from for w in x] for x in xs]
    if maxlen:
        keep = [i for i, x in enumerate(xs) if len(x) < maxlen]
        xs, labels = [xs[i] for i in keep], labels[keep]
    return xs, labels


def _vocabulary(xs, num_words, skip_top, oov_char):
    """Ids outside [skip_top, num_words) become oov_char, or are dropped without one."""
    num_words = num_words or max(max(x) for x in xs)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def _imdb_load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2,
                    index_from=3, **kwargs):
    f = _load_npz(_fetch(path, "imdb.npz"))
    rng = np.random.RandomState(seed)
    x_train, y_train = _shift(*_shuffled(f["x_train"], f["y_train"], rng), start_char, index_from, maxlen)
    x_test, y_test = _shift(*_shuffled(f["x_test"], f["y_test"], rng), start_char, index_from, maxlen)
    if maxlen and (not x_train or not x_test):
        raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was kept. "
                         f"Increase maxlen.")
    xs = _vocabulary(x_train + x_test, num_words, skip_top, oov_char)
    n = len(x_train)
    return (np.array(xs[:n], dtype="object"), y_train), (np.array(xs[n:], dtype="object"), y_test)


def _reuters_load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113,
                       start_char=1, oov_char=2, index_from=3):
    f = _load_npz(_fetch(path, "reuters.npz"))
    xs, labels = _shift(*_shuffled(f["x"], f["y"], np.random.RandomState(seed)), start_char, index_from, maxlen)
    xs = _vocabulary(xs, num_words, skip_top, oov_char)
    cut = int(len(xs) * (1 - test_split))
    return ((np.array(xs[:cut], dtype="object"), np.array(labels[:cut])),
            (np.array(xs[cut:], dtype="object"), np.array(labels[cut:])))


def _word_index(origin_file):
    def get_word_index(path=origin_file):
        with open(_fetch(path, origin_file)) as f:
            return json.load(f)
    return get_word_index


mnist = types.SimpleNamespace(load_data=_mnist_load_data)
fashion_mnist = types.SimpleNamespace(load_data=_fashion_load_data)
cifar10 = types.SimpleNamespace(load_data=_cifar10_load_data)
cifar100 = types.SimpleNamespace(load_data=_cifar100_load_data)
boston_housing = types.SimpleNamespace(load_data=_boston_load_data)
imdb = types.SimpleNamespace(load_data=_imdb_load_data, get_word_index=_word_index("imdb_word_index.json"))
reuters = types.SimpleNamespace(load_data=_reuters_load_data, get_word_index=_word_index("reuters_word_index.json"))

__all__ = ["boston_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist", "reuters"]
