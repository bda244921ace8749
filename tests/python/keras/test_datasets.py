"""keras.datasets with Keras's file layouts served from file:// URLs (no network): synthetic
mnist, fashion-mnist, cifar10, imdb and boston files are downloaded, cached, hash-checked and
decoded into Keras's shapes and dtypes; a pickle that would run code is refused."""
import gzip
import hashlib
import io
import os
import pickle
import tarfile

import numpy as np
import pytest

import jitflow as jf

ds = jf.keras.datasets
datasets_module = __import__("jitflow.keras.datasets", fromlist=["_"])


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A folder served as both download origins, its files' hashes registered, ~ in tmp."""
    origin = tmp_path / "origin"
    origin.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(datasets_module, "_BASE", origin.as_uri() + "/")
    monkeypatch.setattr(datasets_module, "_TORONTO", origin.as_uri() + "/")
    hashes = dict(datasets_module._HASHES)
    monkeypatch.setattr(datasets_module, "_HASHES", hashes)

    def add(name, data):
        (origin / name).write_bytes(data)
        if name in hashes:
            hashes[name] = hashlib.sha256(data).hexdigest()
    return add, tmp_path / "home" / ".keras" / "datasets"


def _npz(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_mnist_and_boston(served, rng):
    add, cache = served
    x = rng.integers(0, 255, size=(5, 28, 28)).astype(np.uint8)
    add("mnist.npz", _npz(x_train=x, y_train=np.arange(5, dtype=np.uint8), x_test=x[:2], y_test=np.arange(2)))
    (xt, _yt), (xs, _ys) = ds.mnist.load_data()
    np.testing.assert_array_equal(xt, x)
    assert xt.dtype == np.uint8 and xs.shape == (2, 28, 28) and (cache / "mnist.npz").exists()
    bx, by = rng.normal(size=(10, 13)), rng.normal(size=10)
    add("boston_housing.npz", _npz(x=bx, y=by))
    (tx, _ty), (_vx, vy) = ds.boston_housing.load_data(test_split=0.2, seed=113)
    order = np.arange(10)
    np.random.RandomState(113).shuffle(order)
    np.testing.assert_array_equal(tx, bx[order][:8])
    np.testing.assert_array_equal(vy, by[order][8:])


def test_fashion_mnist(served, rng):
    add, cache = served
    images = rng.integers(0, 255, size=(3, 28, 28)).astype(np.uint8)
    labels = np.array([1, 2, 3], np.uint8)
    for name, payload in [("train-labels-idx1-ubyte.gz", b"\0" * 8 + labels.tobytes()),
                          ("train-images-idx3-ubyte.gz", b"\0" * 16 + images.tobytes()),
                          ("t10k-labels-idx1-ubyte.gz", b"\0" * 8 + labels[:1].tobytes()),
                          ("t10k-images-idx3-ubyte.gz", b"\0" * 16 + images[:1].tobytes())]:
        add(name, gzip.compress(payload))
    (xt, _yt), (_xs, ys) = ds.fashion_mnist.load_data()
    np.testing.assert_array_equal(xt, images)
    np.testing.assert_array_equal(ys, labels[:1])
    assert (cache / "fashion-mnist" / "train-labels-idx1-ubyte.gz").exists()


def test_cifar10_channels_last(served, rng, tmp_path):
    add, _ = served
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    batches = []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 255, size=(2, 3072)).astype(np.uint8)
        labels = list(rng.integers(0, 10, size=2))
        batches.append((data, labels))
        with open(folder / name, "wb") as f:
            pickle.dump({b"data": data, b"labels": [int(v) for v in labels]}, f)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-py")
    add("cifar-10-python.tar.gz", buf.getvalue())
    (xt, yt), (xs, ys) = ds.cifar10.load_data()
    assert xt.shape == (10, 32, 32, 3) and yt.shape == (10, 1) and xs.shape == (2, 32, 32, 3)
    np.testing.assert_array_equal(xt[:2], batches[0][0].reshape(2, 3, 32, 32).transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(ys[:, 0], batches[5][1])


def test_imdb_sequences_and_refused_pickles(served):
    add, _ = served
    x_train = np.empty(3, dtype=object)
    x_train[:] = [[1, 2, 3], [4, 5], [6]]
    x_test = np.empty(2, dtype=object)
    x_test[:] = [[7, 8], [9]]
    add("imdb.npz", _npz(x_train=x_train, y_train=np.array([0, 1, 0]), x_test=x_test, y_test=np.array([1, 1])))
    (xt, yt), (xs, _ys) = ds.imdb.load_data(num_words=10)
    # Keras's processing: shuffled by seed 113, start_char 1, ids + 3, ids >= num_words -> oov 2
    order = np.arange(3)
    rng = np.random.RandomState(113)
    rng.shuffle(order)
    want = [[1] + [w + 3 if w + 3 < 10 else 2 for w in x_train[i]] for i in order]
    assert [list(x) for x in xt] == want and list(yt) == list(np.array([0, 1, 0])[order])
    assert xs.dtype == object and len(xs) == 2

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    evil = np.empty(1, dtype=object)
    evil[0] = Evil()
    add("imdb.npz", _npz(x_train=evil, y_train=np.zeros(1), x_test=evil, y_test=np.zeros(1)))
    with pytest.raises(pickle.UnpicklingError, match="refusing to unpickle"):
        ds.imdb.load_data()
