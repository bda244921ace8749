"""Files as datasets: list_files (the names matching glob patterns), TextLineDataset (the
lines of text files, without their line endings), TFRecordDataset (the records of TFRecord
files) and FixedLengthRecordDataset (equal-sized records between a header and a footer). Their elements are string scalars, which
are Python-side values in jitflow (core/strings.py), so reading stays eager."""
import bz2
import glob
import gzip
import zlib

import numpy as np

from ..core.errors import InvalidArgumentError, NotFoundError
from ..core.strings import StringTensor, string
from ..core.tensor_spec import TensorSpec
from ..state.tfrecord import read_records
from . import structure
from .base import Node


def _names(value):
    """A string, list of strings or string tensor as a list of str."""
    if isinstance(value, StringTensor):
        a = np.asarray(value.numpy(), dtype=object).ravel()
    elif isinstance(value, (str, bytes)):
        a = [value]
    else:
        a = list(value.numpy().ravel()) if hasattr(value, "numpy") else list(value)
    return [x.decode() if isinstance(x, bytes) else str(x) for x in a]


def matching_files(patterns):
    files = []
    for p in _names(patterns):
        files.extend(sorted(glob.glob(p)))
    if not files:
        raise InvalidArgumentError(f"Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized data: "
                                   f"b'No files matched pattern: {', '.join(_names(patterns))}'")
    return sorted(files)


def _read(path, compression):
    """The file's bytes, decompressed."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"{path}; No such file or directory") from None
    if compression == "GZIP":
        return gzip.decompress(data)
    if compression == "ZLIB":
        return zlib.decompress(data)
    if compression == "BZ2":
        return bz2.decompress(data)
    return data


def _split(data):
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for line in lines:
        yield line[:-1] if line.endswith(b"\r") else line


class _Files(Node):
    """A source of string scalars read from files, with the compressions it takes."""

    def __init__(self, filenames, compression_type, compressions=("", "GZIP", "ZLIB")):
        self.files = _names(filenames)
        self.compression = (compression_type or "").upper()
        if self.compression not in compressions:
            raise InvalidArgumentError(f"Unsupported compression type: {compression_type}")
        self.tree = structure.Tree.of(None)
        self.specs = [TensorSpec([], string)]


class TextLines(_Files):
    def __init__(self, filenames, compression_type):
        super().__init__(filenames, compression_type, ("", "GZIP", "ZLIB", "BZ2"))

    def iterate(self):
        for path in self.files:
            for line in _split(_read(path, self.compression)):
                yield [structure.from_numpy(np.array(line, dtype=object), string)]


class TFRecords(_Files):
    """The records of TFRecord files, one string scalar each, CRCs checked."""

    def iterate(self):
        for path in self.files:
            try:
                for data in read_records(path, self.compression):
                    yield [structure.from_numpy(np.array(data, dtype=object), string)]
            except FileNotFoundError:
                raise NotFoundError(f"{path}; No such file or directory") from None


class FixedLengthRecords(_Files):
    """Each file's body (after header_bytes, before footer_bytes) cut into record_bytes-long
    string scalars; a body that is not a whole number of records is TF's InvalidArgumentError."""

    def __init__(self, filenames, record_bytes, header_bytes, footer_bytes, compression_type):
        super().__init__(filenames, compression_type)
        self.record, self.header, self.footer = int(record_bytes), int(header_bytes or 0), int(footer_bytes or 0)
        if self.record <= 0:
            raise InvalidArgumentError(f"record_bytes must be positive, got {record_bytes}")

    def iterate(self):
        for path in self.files:
            data = _read(path, self.compression)
            body = data[self.header:len(data) - self.footer]
            if len(body) % self.record:
                raise InvalidArgumentError(
                    f"Excluding the header ({self.header} bytes) and footer ({self.footer} bytes), input file "
                    f"\"{path}\" has body length {len(body)} bytes, which is not an exact multiple of the record "
                    f"length ({self.record} bytes).")
            for i in range(0, len(body), self.record):
                yield [structure.from_numpy(np.array(body[i:i + self.record], dtype=object), string)]
