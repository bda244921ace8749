"""jf.keras.utils, keras.backend and keras.config against Keras 3's documented behaviour:
one-hot encoding, normalization, sequence padding, time-series windows, seeding, get_file on a
file:// URL with hashes and extraction, and the global settings the layers read."""
import hashlib
import random
import tarfile
from pathlib import Path

import numpy as np
import pytest

import jitflow as jf

utils = jf.keras.utils


def test_to_categorical_and_normalize():
    np.testing.assert_array_equal(utils.to_categorical([0, 2, 1]), np.eye(3, dtype=np.float32)[[0, 2, 1]])
    out = utils.to_categorical(np.array([[1], [3]]), num_classes=5)  # a trailing 1 is dropped
    assert out.shape == (2, 5) and out.dtype == np.float32 and out[1, 3] == 1
    t = utils.to_categorical(jf.constant([1, 0]), 3)
    np.testing.assert_array_equal(t.numpy(), [[0, 1, 0], [1, 0, 0]])
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(utils.normalize(x), [[0.6, 0.8], [0, 0]])
    np.testing.assert_allclose(utils.normalize(jf.constant([[3.0, 4.0]])).numpy(), [[0.6, 0.8]], rtol=1e-6)


def test_pad_sequences():
    seqs = [[1, 2, 3], [4], [], [5, 6]]
    np.testing.assert_array_equal(utils.pad_sequences(seqs), [[1, 2, 3], [0, 0, 4], [0, 0, 0], [0, 5, 6]])
    np.testing.assert_array_equal(utils.pad_sequences(seqs, maxlen=2, padding="post", truncating="post", value=-1),
                                  [[1, 2], [4, -1], [-1, -1], [5, 6]])
    np.testing.assert_array_equal(utils.pad_sequences(seqs, maxlen=2), [[2, 3], [0, 4], [0, 0], [5, 6]])
    assert utils.pad_sequences([[0.5]], dtype="float32").dtype == np.float32
    with pytest.raises(ValueError, match="padding"):
        utils.pad_sequences(seqs, padding="middle")


def test_timeseries_dataset_from_array():
    data, targets = np.arange(20), np.arange(20) * 10
    ds = utils.timeseries_dataset_from_array(data, targets, sequence_length=3, sequence_stride=2, sampling_rate=2,
                                             batch_size=3, end_index=15)
    batches = [(x.numpy(), y.numpy()) for x, y in ds]
    starts = np.arange(0, 15 - 5 + 1, 2)  # windows span (3 - 1) * 2 + 1 = 5 steps
    got_x = np.concatenate([b[0] for b in batches])
    np.testing.assert_array_equal(got_x, starts[:, None] + np.array([0, 2, 4]))
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), targets[starts])
    assert [len(b[0]) for b in batches] == [3, 3]


def test_set_random_seed_makes_every_generator_repeat():
    utils.set_random_seed(7)
    a = (random.random(), np.random.rand(), jf.random.uniform([3]).numpy())
    utils.set_random_seed(7)
    b = (random.random(), np.random.rand(), jf.random.uniform([3]).numpy())
    assert a[0] == b[0] and a[1] == b[1]
    np.testing.assert_array_equal(a[2], b[2])
    with pytest.raises(ValueError, match="integer"):
        utils.set_random_seed(1.5)


def test_get_file_caches_checks_hashes_and_extracts(tmp_path):
    src = tmp_path / "data.txt"
    src.write_text("hello")
    digest = hashlib.sha256(b"hello").hexdigest()
    cache = tmp_path / "cache"
    path = utils.get_file("data.txt", src.as_uri(), file_hash=digest, cache_dir=str(cache))
    assert path == str(cache / "datasets" / "data.txt") and Path(path).read_text() == "hello"
    src.write_text("changed")  # a cached copy with the right hash is not downloaded again
    again = utils.get_file("data.txt", src.as_uri(), file_hash=digest, cache_dir=str(cache))
    assert Path(again).read_text() == "hello"
    with pytest.raises(ValueError, match="file hash does not match"):
        utils.get_file("other.txt", src.as_uri(), file_hash=digest, cache_dir=str(cache))
    archive = tmp_path / "pack.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="inner/data.txt")
    out = utils.get_file("pack.tar.gz", archive.as_uri(), extract=True, cache_dir=str(cache))
    assert out == str(cache / "datasets" / "pack_extracted")
    assert (Path(out) / "inner" / "data.txt").read_text() == "changed"


def test_backend_and_config_settings_reach_the_layers():
    config = jf.keras.config
    assert config.backend() == "tensorflow" and jf.keras.backend.epsilon() == 1e-7
    try:
        config.set_floatx("float64")
        assert jf.keras.layers.Dense(2).compute_dtype == "float64"
        config.set_image_data_format("channels_first")
        assert jf.keras.layers.Conv2D(2, 3).data_format == "channels_first"
        assert jf.keras.layers.GlobalAveragePooling2D().data_format == "channels_first"
    finally:
        config.set_floatx("float32")
        config.set_image_data_format("channels_last")
    assert jf.keras.layers.Dense(2).compute_dtype == "float32"
    with pytest.raises(ValueError, match="floatx"):
        config.set_floatx("int8")
    with pytest.raises(ValueError, match="data_format"):
        jf.keras.backend.set_image_data_format("nhwc")


def _write_images(root, rng):
    from PIL import Image
    images = {}
    for cls, n in (("cats", 3), ("dogs", 2)):
        (root / cls).mkdir(parents=True)
        for i in range(n):
            arr = (rng.uniform(size=(10 + 2 * i, 12, 3)) * 255).astype(np.uint8)
            Image.fromarray(arr).save(root / cls / f"{i}.png")
            images[(cls, i)] = arr
    (root / "dogs" / "notes.txt").write_text("not an image")
    return images


def _nearest(arr, h, w):
    rows = np.minimum(np.floor((np.arange(h) + 0.5) * arr.shape[0] / h).astype(int), arr.shape[0] - 1)
    cols = np.minimum(np.floor((np.arange(w) + 0.5) * arr.shape[1] / w).astype(int), arr.shape[1] - 1)
    return arr[rows][:, cols].astype(np.float32)


def test_image_dataset_from_directory(tmp_path, rng, capsys):
    images = _write_images(tmp_path, rng)
    ds = utils.image_dataset_from_directory(str(tmp_path), image_size=(6, 8), batch_size=2, shuffle=False,
                                            interpolation="nearest")
    assert "Found 5 files belonging to 2 classes." in capsys.readouterr().out
    assert ds.class_names == ["cats", "dogs"]
    xs, ys = zip(*[(x.numpy(), y.numpy()) for x, y in ds])
    assert [len(y) for y in ys] == [2, 2, 1]
    order = [("cats", 0), ("cats", 1), ("cats", 2), ("dogs", 0), ("dogs", 1)]
    np.testing.assert_array_equal(np.concatenate(ys), [0, 0, 0, 1, 1])
    for got, key in zip(np.concatenate(xs), order):
        np.testing.assert_array_equal(got, _nearest(images[key], 6, 8))
    train, val = utils.image_dataset_from_directory(str(tmp_path), image_size=(4, 4), validation_split=0.4,
                                                    subset="both", seed=3, label_mode="categorical")
    train_labels = np.concatenate([y.numpy() for _, y in train])
    val_labels = np.concatenate([y.numpy() for _, y in val])
    assert train_labels.shape == (3, 2) and val_labels.shape == (2, 2)
    assert (train_labels.sum(0) + val_labels.sum(0)).tolist() == [3, 2]
    gray = utils.image_dataset_from_directory(str(tmp_path), image_size=(4, 4), color_mode="grayscale",
                                              label_mode=None, seed=1)
    assert next(iter(gray)).shape == (5, 4, 4, 1)
    with pytest.raises(ValueError, match="seed"):
        utils.image_dataset_from_directory(str(tmp_path), validation_split=0.2, subset="training")


def test_text_dataset_from_directory(tmp_path, capsys):
    texts = {("neg", "a.txt"): "bad film", ("neg", "b.txt"): "dull", ("pos", "c.txt"): "great fun",
             ("pos", "skip.md"): "not read"}
    for (label, name), text in texts.items():
        (tmp_path / label).mkdir(exist_ok=True)
        (tmp_path / label / name).write_text(text)
    ds = utils.text_dataset_from_directory(str(tmp_path), batch_size=2, shuffle=False)
    assert "Found 3 files belonging to 2 classes." in capsys.readouterr().out
    assert ds.class_names == ["neg", "pos"]
    got = [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
    assert got == [([b"bad film", b"dull"], [0, 0]), ([b"great fun"], [1])]
    short = utils.text_dataset_from_directory(str(tmp_path), max_length=3, label_mode="binary", shuffle=False)
    x, y = next(iter(short))
    assert x.numpy().tolist() == [b"bad", b"dul", b"gre"] and y.numpy().tolist() == [[0.0], [0.0], [1.0]]
    shuffled = utils.text_dataset_from_directory(str(tmp_path), label_mode=None, seed=5)
    assert sorted(next(iter(shuffled)).numpy().tolist()) == [b"bad film", b"dull", b"great fun"]
    train, val = utils.text_dataset_from_directory(str(tmp_path), validation_split=0.34, subset="both", seed=2)
    assert sum(len(y) for _, y in train) == 2 and sum(len(y) for _, y in val) == 1
    with pytest.raises(ValueError, match="No text files"):
        (tmp_path / "empty").mkdir()
        utils.text_dataset_from_directory(str(tmp_path / "empty"), labels=None)
