"""keras.utils as TF programs use it: to_categorical, normalize, pad_sequences,
set_random_seed, timeseries_dataset_from_array (a jf.data pipeline), get_file (download and
cache), and the serialization helpers of keras.saving."""
import hashlib
import os
import random
import shutil
import tarfile
import urllib.parse
import urllib.request
import zipfile

import numpy as np

from ..core.tensor import Tensor
from ..data.dataset import Dataset
from ..ops import array_ops as _array
from ..ops import basic_ops as _ops
from ..ops import image_ops as _image_ops
from ..ops import random_ops as _random
from ..tracing import image_codecs as _image_codecs
from ..tracing import io_ops as _io
from ..tracing import string_functions as _strings
from .data_adapter import PyDataset
from .saving import (
    deserialize_keras_object,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    serialize_keras_object,
)


def to_categorical(x, num_classes=None):
    """Class ids to one-hot rows: a trailing dim of 1 is dropped first, as Keras does; a numpy
    input gives a numpy float32 array, a tensor a tensor."""
    if isinstance(x, Tensor):
        if x.shape and x.shape[-1] == 1 and len(x.shape) > 1:
            x = _ops.squeeze(x, [-1])
        depth = num_classes if num_classes is not None else int(_ops.reduce_max(x).numpy()) + 1
        return _array.one_hot(_ops.cast(x, "int64"), depth)
    x = np.asarray(x, dtype="int64")
    shape = x.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    x = x.reshape(-1)
    num_classes = int(np.max(x)) + 1 if num_classes is None else num_classes
    out = np.zeros((x.shape[0], num_classes), np.float32)
    out[np.arange(x.shape[0]), x] = 1
    return out.reshape(*shape, num_classes)


def normalize(x, axis=-1, order=2):
    """x divided by its `order`-norm along axis (zero norms left as zeros)."""
    if isinstance(x, Tensor):
        norm = _ops.reduce_sum(_ops.abs(x) ** order, axis=axis, keepdims=True) ** (1.0 / order)
        return x / _ops.maximum(norm, _ops.convert_to_tensor(1e-12, x.dtype))
    x = np.asarray(x)
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


def set_random_seed(seed):
    """Seeds Python's random, numpy's global generator and jitflow's global seed."""
    if not isinstance(seed, int):
        # Keras raises ValueError here, not TypeError.
        raise ValueError(  # noqa: TRY004
            f"Expected `seed` argument to be an integer. Received: seed={seed} (of type {type(seed)})")
    random.seed(seed)
    np.random.seed(seed)
    _random.set_seed(seed)


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre", value=0.0):
    """Sequences of different lengths as one [n, maxlen] array: cut to maxlen at the start ('pre')
    or end ('post'), then padded with value before ('pre') or after ('post')."""
    if padding not in ("pre", "post"):
        raise ValueError(f'`padding` must be "pre" or "post". Received: {padding}')
    if truncating not in ("pre", "post"):
        raise ValueError(f'`truncating` must be "pre" or "post". Received: {truncating}')
    seqs = [np.asarray(s) for s in sequences]
    lengths = [len(s) for s in seqs]
    maxlen = max(lengths, default=0) if maxlen is None else maxlen
    tail = next((s.shape[1:] for s in seqs if len(s)), ())
    out = np.full((len(seqs), maxlen, *tail), value, dtype=dtype)
    for i, s in enumerate(seqs):
        if not len(s):
            continue
        s = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        if s.shape[1:] != tail:
            raise ValueError(f"Shape of sample {s.shape[1:]} of sequence at position {i} is different from expected "
                             f"shape {tail}")
        if padding == "post":
            out[i, :len(s)] = s
        else:
            out[i, maxlen - len(s):] = s
    return out


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None):
    """A dataset of windows data[i : i + sequence_length * sampling_rate : sampling_rate] for start
    i every sequence_stride steps (with targets[i] when targets is given), batched."""
    data = np.asarray(data)
    start = start_index or 0
    end = len(data) if end_index is None else end_index
    span = (sequence_length - 1) * sampling_rate + 1
    starts = np.arange(start, end - span + 1, sequence_stride)
    if shuffle:
        np.random.default_rng(seed).shuffle(starts)
    windows = data[starts[:, None] + np.arange(sequence_length) * sampling_rate]
    if targets is None:
        ds = Dataset.from_tensor_slices(windows)
    else:
        ds = Dataset.from_tensor_slices((windows, np.asarray(targets)[starts]))
    return ds.batch(batch_size) if batch_size is not None else ds


def _hash_file(path, algorithm):
    h = hashlib.sha256() if algorithm in ("sha256", "auto") else hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None, cache_subdir="datasets",
             hash_algorithm="auto", extract=False, archive_format="auto", cache_dir=None, force_download=False):
    """Downloads origin into cache_dir/cache_subdir (~/.keras/datasets) unless a copy with the
    expected hash is there; with extract (or untar) unpacks the archive and returns the
    extraction folder, named as Keras names it; otherwise returns the file's path."""
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    if hash_algorithm == "auto" and file_hash is not None and len(file_hash) == 32:
        hash_algorithm = "md5"
    directory = os.path.join(os.path.expanduser(cache_dir or os.path.join("~", ".keras")), cache_subdir)
    os.makedirs(directory, exist_ok=True)
    provided = fname
    fname = fname or os.path.basename(urllib.parse.urlsplit(origin).path)
    if not fname:
        raise ValueError(f"Can't parse the file name from the origin provided: '{origin}'.Please specify the `fname` "
                         f"argument.")
    if provided and os.sep in fname:
        raise ValueError(f"Paths are no longer accepted as the `fname` argument. To specify the file's parent "
                         f"directory, use the `cache_dir` argument. Received: fname={fname}")
    target, extracted = os.path.join(directory, fname), None
    if extract or untar:
        if provided and "." in fname:
            extracted = os.path.join(directory, fname[:fname.find(".")] + "_extracted")
        else:
            extracted, target = target, target + "_archive"
    stale = force_download or not os.path.exists(target) or (
        file_hash is not None and _hash_file(target, hash_algorithm) != file_hash)
    if stale:
        with urllib.request.urlopen(origin) as response, open(target + ".part", "wb") as out:
            shutil.copyfileobj(response, out)
        os.replace(target + ".part", target)
        if file_hash is not None and _hash_file(target, hash_algorithm) != file_hash:
            raise ValueError(f"Incomplete or corrupted file detected. The {hash_algorithm} file hash does not match "
                             f"the provided value of {file_hash}.")
    if extracted is None:
        return target
    fmt = "tar" if untar else archive_format
    if tarfile.is_tarfile(target) and fmt in ("auto", "tar"):
        with tarfile.open(target) as archive:
            archive.extractall(extracted, filter="data")
    elif zipfile.is_zipfile(target) and fmt in ("auto", "zip"):
        with zipfile.ZipFile(target) as archive:
            archive.extractall(extracted)
    else:
        raise ValueError(f"Could not extract archive {target} (archive_format={archive_format})")
    return extracted


_IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def _labels_and_mode(labels, label_mode):
    """Keras's check of label_mode; no labels either way when one of them is None."""
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError(f'`label_mode` argument must be one of "int", "categorical", "binary", or None. Received: '
                         f"label_mode={label_mode}")
    return (None, None) if labels is None or label_mode is None else (labels, label_mode)


def _index_directory(directory, labels, formats, class_names, shuffle, seed, follow_links):
    """(file paths, integer labels or None, class names) as Keras indexes a folder: one class
    per subfolder (sorted), files sorted within each, shuffled with RandomState(seed)."""
    if labels == "inferred":
        subdirs = sorted(d for d in os.listdir(directory) if os.path.isdir(os.path.join(directory, d)))
        if class_names is not None:
            if sorted(class_names) != sorted(subdirs) and set(class_names) - set(subdirs):
                raise ValueError(f"The `class_names` passed did not match the names of the subdirectories of the "
                                 f"target directory. Expected: {subdirs} (or a subset of it), but received: "
                                 f"class_names={class_names}")
            subdirs = list(class_names)
        class_names = subdirs
    else:
        subdirs = [""]
    paths, found_labels = [], []
    for index, sub in enumerate(subdirs):
        root_dir = os.path.join(directory, sub)
        for root, _, files in sorted(os.walk(root_dir, followlinks=follow_links), key=lambda x: x[0]):
            for fname in sorted(files):
                if fname.lower().endswith(formats):
                    paths.append(os.path.join(root, fname))
                    found_labels.append(index)
    if labels == "inferred":
        labels = np.array(found_labels, np.int32)
    elif labels is None:
        class_names = None
    else:
        if len(labels) != len(paths):
            raise ValueError(f"Expected the lengths of `labels` to match the number of files in the target "
                             f"directory. len(labels) is {len(labels)} while we found {len(paths)} files in "
                             f"directory {directory}.")
        class_names = [str(v) for v in sorted(set(labels))]
        labels = np.asarray(labels)
    if shuffle:
        seed = np.random.randint(1e6) if seed is None else seed
        np.random.RandomState(seed).shuffle(paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return paths, labels, class_names


def _split(samples, labels, validation_split, subset):
    if not validation_split:
        return samples, labels
    n = int(validation_split * len(samples))
    if subset == "training":
        print(f"Using {len(samples) - n} files for training.")
        return samples[:-n] if n else samples, (labels[:-n] if n else labels) if labels is not None else None
    if subset == "validation":
        print(f"Using {n} files for validation.")
        return samples[-n:] if n else [], (labels[-n:] if n else labels[:0]) if labels is not None else None
    raise ValueError(f'`subset` must be either "training" or "validation", received: {subset}')


def _label_tensors(labels, label_mode, num_classes):
    if label_mode == "int":
        return np.asarray(labels, np.int32)
    if label_mode == "binary":
        return np.asarray(labels, np.float32).reshape(-1, 1)
    return np.eye(num_classes, dtype=np.float32)[np.asarray(labels, np.int64)]


def image_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, color_mode="rgb",
                                 batch_size=32, image_size=(256, 256), shuffle=True, seed=None, validation_split=None,
                                 subset=None, interpolation="bilinear", follow_links=False,
                                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, data_format=None,
                                 verbose=True):
    """A dataset of (images, labels) batches from a folder of images, one subfolder per class,
    as Keras builds it: float32 images resized to image_size, labels int32, one-hot
    ("categorical") or float32 [n, 1] ("binary"); `class_names` on the dataset."""
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError(f'`color_mode` must be one of {{"rgb", "rgba", "grayscale"}}. Received: color_mode={color_mode}')
    labels, label_mode = _labels_and_mode(labels, label_mode)
    if subset == "both":
        return [image_dataset_from_directory(directory, labels, label_mode, class_names, color_mode, batch_size,
                                             image_size, shuffle, seed if seed is not None else 1337,
                                             validation_split, part, interpolation, follow_links,
                                             crop_to_aspect_ratio, pad_to_aspect_ratio, data_format, verbose)
                for part in ("training", "validation")]
    paths, found, names = _indexed_files(directory, labels, label_mode, _IMAGE_FORMATS, class_names, shuffle, seed,
                                         validation_split, follow_links, verbose)
    paths, found = _split(paths, found, validation_split, subset)
    if not paths:
        raise ValueError(f"No images found in directory {directory}. Allowed formats: {_IMAGE_FORMATS}")
    height, width = int(image_size[0]), int(image_size[1])

    def load(path):
        image = _image_codecs.decode_image(_io.read_file(path), channels=channels, expand_animations=False)
        if crop_to_aspect_ratio:
            return _keras_crop_resize(image, height, width, interpolation)
        return _ops.cast(_image_ops.resize(image, [height, width], method=interpolation), "float32")

    return _labelled_batches(Dataset.from_tensor_slices(paths).map(load), paths, found, names, label_mode,
                             batch_size, shuffle, seed)


def _indexed_files(directory, labels, label_mode, formats, class_names, shuffle, seed, validation_split,
                   follow_links, verbose):
    """The folder's files, labels and class names, with Keras's checks and message."""
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide a `seed` argument, "
                         "to make sure that there is no overlap between the training and validation subset.")
    paths, found, names = _index_directory(directory, labels, formats, class_names, shuffle, seed, follow_links)
    if verbose:
        print(f"Found {len(paths)} files belonging to {len(names)} classes." if names is not None else
              f"Found {len(paths)} files.")
    if label_mode == "binary" and names is not None and len(names) != 2:
        raise ValueError(f'When passing `label_mode="binary"`, there must be exactly 2 class_names. Received: '
                         f"class_names={names}")
    return paths, found, names


def _labelled_batches(ds, paths, found, names, label_mode, batch_size, shuffle, seed):
    if found is not None:
        ds = Dataset.zip((ds, Dataset.from_tensor_slices(_label_tensors(found, label_mode, len(names)))))
    if batch_size is not None:
        if shuffle:  # Keras also reshuffles the elements every epoch
            ds = ds.shuffle(buffer_size=batch_size * 8, seed=seed)
        ds = ds.batch(batch_size)
    ds.class_names = names
    ds.file_paths = paths
    return ds


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                max_length=None, shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False, verbose=True):
    """A dataset of (texts, labels) batches from a folder of .txt files, one subfolder per class,
    as Keras builds it: each file's bytes as one string (its first max_length bytes when given)."""
    labels, label_mode = _labels_and_mode(labels, label_mode)
    if subset == "both":
        return [text_dataset_from_directory(directory, labels, label_mode, class_names, batch_size, max_length,
                                            shuffle, seed if seed is not None else 1337, validation_split, part,
                                            follow_links, verbose)
                for part in ("training", "validation")]
    paths, found, names = _indexed_files(directory, labels, label_mode, (".txt",), class_names, shuffle, seed,
                                         validation_split, follow_links, verbose)
    paths, found = _split(paths, found, validation_split, subset)
    if not paths:
        raise ValueError(f"No text files found in directory {directory}. Allowed format: .txt")

    def load(path):
        text = _io.read_file(path)
        return text if max_length is None else _strings.substr(text, 0, max_length)

    return _labelled_batches(Dataset.from_tensor_slices(paths).map(load), paths, found, names, label_mode,
                             batch_size, shuffle, seed)


def _keras_crop_resize(image, height, width, interpolation):
    """The largest centred crop of the target's aspect ratio, resized (Keras's
    crop_to_aspect_ratio)."""
    dims = _ops.shape(image)
    h, w = _ops.cast(dims[0], "float32"), _ops.cast(dims[1], "float32")
    crop_h = _ops.cast(_ops.minimum(h, w * height / width), "int32")
    crop_w = _ops.cast(_ops.minimum(w, h * width / height), "int32")
    top = (_ops.cast(dims[0], "int32") - crop_h) // 2
    left = (_ops.cast(dims[1], "int32") - crop_w) // 2
    cropped = image[top:top + crop_h, left:left + crop_w, :]
    return _ops.cast(_image_ops.resize(cropped, [height, width], method=interpolation), "float32")


Sequence = PyDataset  # Keras 3's name for the same class

__all__ = [
    "PyDataset",
    "Sequence",
    "deserialize_keras_object",
    "get_file",
    "get_registered_name",
    "get_registered_object",
    "image_dataset_from_directory",
    "normalize",
    "pad_sequences",
    "register_keras_serializable",
    "serialize_keras_object",
    "set_random_seed",
    "text_dataset_from_directory",
    "timeseries_dataset_from_array",
    "to_categorical",
]
