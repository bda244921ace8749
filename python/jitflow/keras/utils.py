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
from ..ops import random_ops as _random
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


__all__ = ["deserialize_keras_object", "get_file", "get_registered_name", "get_registered_object", "normalize",
           "pad_sequences", "register_keras_serializable", "serialize_keras_object", "set_random_seed",
           "timeseries_dataset_from_array", "to_categorical"]
