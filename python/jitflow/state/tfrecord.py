"""TFRecord files and tf.train.Example without TensorFlow: tf.io.TFRecordWriter (TFRecord
framing, optionally GZIP or ZLIB compressed), a record reader for jf.data.TFRecordDataset, the
Example protobuf classes (tf.train.Example, Features, Feature, BytesList, FloatList, Int64List)
encoded and decoded here field by field, and tf.io.parse_single_example / parse_example with
FixedLenFeature (a py_function node when traced)."""
import gzip
import struct
import zlib

import numpy as np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import DataLossError, InvalidArgumentError
from ..core.export import export
from ..core.protobuf_wire import bytes_field as _bytes_field
from ..core.protobuf_wire import fields as _fields
from ..core.protobuf_wire import read_varint as _read_varint
from ..core.protobuf_wire import varint as _varint
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as _ops
from ..ops.sparse_ops import SparseTensor
from ..tracing.py_function import py_function
from .summary import _masked, crc32c, record

# ---- tf.train.Example ----------------------------------------------------------------------

class _Message:
    def SerializeToString(self, deterministic=None):
        return self._encode()

    @classmethod
    def FromString(cls, data):
        return cls._decode(bytes(data))

    def ParseFromString(self, data):
        self.__dict__.update(type(self)._decode(bytes(data)).__dict__)
        return len(data)

    def __eq__(self, other):
        return type(self) is type(other) and self.SerializeToString() == other.SerializeToString()

    def __repr__(self):
        return f"{type(self).__name__}({self.__dict__})"


class _List(_Message):
    def __init__(self, value=()):
        self.value = list(value)


@export("train.BytesList")
class BytesList(_List):
    def _encode(self):
        return b"".join(_bytes_field(1, v if isinstance(v, bytes) else str(v).encode()) for v in self.value)

    @classmethod
    def _decode(cls, buf):
        return cls([v for f, _, v in _fields(buf) if f == 1])


@export("train.FloatList")
class FloatList(_List):
    def _encode(self):
        return _bytes_field(1, struct.pack(f"<{len(self.value)}f", *self.value)) if self.value else b""

    @classmethod
    def _decode(cls, buf):
        out = []
        for f, wire, v in _fields(buf):
            if f == 1:
                out.extend(struct.unpack(f"<{len(v) // 4}f", v) if wire == 2 else struct.unpack("<f", v))
        return cls(out)


@export("train.Int64List")
class Int64List(_List):
    def _encode(self):
        return _bytes_field(1, b"".join(_varint(int(v)) for v in self.value)) if self.value else b""

    @classmethod
    def _decode(cls, buf):
        out = []
        for f, wire, v in _fields(buf):
            if f != 1:
                continue
            if wire == 2:
                i = 0
                while i < len(v):
                    x, i = _read_varint(v, i)
                    out.append(x - (1 << 64) if x >= 1 << 63 else x)
            else:
                out.append(v - (1 << 64) if v >= 1 << 63 else v)
        return cls(out)


_KINDS = (("bytes_list", BytesList), ("float_list", FloatList), ("int64_list", Int64List))


@export("train.Feature")
class Feature(_Message):
    """One of bytes_list, float_list or int64_list."""

    def __init__(self, bytes_list=None, float_list=None, int64_list=None):
        self.bytes_list, self.float_list, self.int64_list = bytes_list, float_list, int64_list

    def WhichOneof(self, name):
        return next((k for k, _ in _KINDS if getattr(self, k) is not None), None)

    def _encode(self):
        for number, (attr, _) in enumerate(_KINDS, start=1):
            value = getattr(self, attr)
            if value is not None:
                return _bytes_field(number, value._encode())
        return b""

    @classmethod
    def _decode(cls, buf):
        out = cls()
        for f, _, v in _fields(buf):
            if 1 <= f <= 3:
                attr, kind = _KINDS[f - 1]
                setattr(out, attr, kind._decode(v))
        return out


@export("train.Features")
class Features(_Message):
    def __init__(self, feature=None):
        self.feature = dict(feature or {})

    def _encode(self):
        entries = (_bytes_field(1, k.encode()) + _bytes_field(2, v._encode()) for k, v in sorted(self.feature.items()))
        return b"".join(_bytes_field(1, e) for e in entries)

    @classmethod
    def _decode(cls, buf):
        feature = {}
        for f, _, entry in _fields(buf):
            if f != 1:
                continue
            key, value = b"", Feature()
            for ef, _, ev in _fields(entry):
                if ef == 1:
                    key = ev
                elif ef == 2:
                    value = Feature._decode(ev)
            feature[key.decode()] = value
        return cls(feature)


@export("train.Example")
class Example(_Message):
    def __init__(self, features=None):
        self.features = features if features is not None else Features()

    def _encode(self):
        return _bytes_field(1, self.features._encode())

    @classmethod
    def _decode(cls, buf):
        features = Features()
        for f, _, v in _fields(buf):
            if f == 1:
                features = Features._decode(v)
        return cls(features)


# ---- TFRecord files ------------------------------------------------------------------------

@export("io.TFRecordOptions")
class TFRecordOptions:
    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None, compression_method=None, mem_level=None,
                 compression_strategy=None):
        self.compression_type = _compression(compression_type)
        self.compression_level = compression_level


def _compression(kind):
    kind = (getattr(kind, "compression_type", kind) or "").upper()
    if kind not in ("", "GZIP", "ZLIB"):
        raise ValueError(f"Unsupported compression type: {kind}")
    return kind


@export("io.TFRecordWriter")
class TFRecordWriter:
    """Appends records (bytes) to a TFRecord file, compressed with GZIP or ZLIB when asked."""

    def __init__(self, path, options=None):
        self.path, self._kind = str(path), _compression(options)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close() / the with block
        self._zlib = zlib.compressobj() if self._kind == "ZLIB" else None
        self._gzip = gzip.GzipFile(fileobj=self._file, mode="wb") if self._kind == "GZIP" else None

    def write(self, record_bytes):
        data = record_bytes.numpy() if hasattr(record_bytes, "numpy") else record_bytes
        data = data if isinstance(data, bytes) else str(data).encode()
        framed = record(data)
        if self._gzip is not None:
            self._gzip.write(framed)
        elif self._zlib is not None:
            self._file.write(self._zlib.compress(framed))
        else:
            self._file.write(framed)

    def flush(self):
        if self._gzip is not None:
            self._gzip.flush()
        self._file.flush()

    def close(self):
        if self._gzip is not None:
            self._gzip.close()
        elif self._zlib is not None:
            self._file.write(self._zlib.flush())
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_records(path, compression_type=None):
    """The records of a TFRecord file, checking both CRCs (TF's DataLossError when one fails)."""
    kind = _compression(compression_type)
    with open(path, "rb") as f:
        raw = f.read()
    if kind == "GZIP":
        raw = gzip.decompress(raw)
    elif kind == "ZLIB":
        raw = zlib.decompress(raw)
    i = 0
    while i < len(raw):
        if i + 12 > len(raw):
            raise DataLossError(f"truncated record at {i} in {path}")
        header = raw[i:i + 8]
        (length,) = struct.unpack("<Q", header)
        (crc,) = struct.unpack("<I", raw[i + 8:i + 12])
        if crc != _masked(crc32c(header)):
            raise DataLossError(f"corrupted record at {i} in {path}")
        data = raw[i + 12:i + 12 + length]
        (crc,) = struct.unpack("<I", raw[i + 12 + length:i + 16 + length])
        if len(data) < length or crc != _masked(crc32c(data)):
            raise DataLossError(f"corrupted record at {i} in {path}")
        yield data
        i += 16 + length


# ---- parsing Examples -----------------------------------------------------------------------

@export("io.FixedLenFeature")
class FixedLenFeature:
    """A feature of a known shape and dtype (float32, int64 or string), with an optional default."""

    def __init__(self, shape, dtype, default_value=None):
        self.shape, self.dtype, self.default_value = list(shape), _dt.as_dtype(dtype), default_value


@export("io.VarLenFeature")
class VarLenFeature:
    """A feature of any number of values: parsed as a jf.SparseTensor ([n] for one Example,
    [batch, longest] for a batch)."""

    def __init__(self, dtype):
        self.dtype = _dt.as_dtype(dtype)
        self.shape = None


def _parse_one(data, features):
    example = Example.FromString(data)
    out = []
    for name, spec in features.items():
        feature = example.features.feature.get(name)
        numpy_dtype = object if spec.dtype == _dt.string else spec.dtype.as_numpy_dtype
        size = int(np.prod(spec.shape)) if spec.shape else 1
        varlen = isinstance(spec, VarLenFeature)
        if varlen and (feature is None or feature.WhichOneof("kind") is None):
            values = np.zeros([0], dtype=numpy_dtype)
        elif feature is None or feature.WhichOneof("kind") is None:
            if spec.default_value is None:
                raise InvalidArgumentError(f"Feature: {name} (data type: {spec.dtype.name}) is required but could "
                                           f"not be found.")
            values = np.broadcast_to(np.asarray(spec.default_value, dtype=numpy_dtype), spec.shape)
        else:
            kind = feature.WhichOneof("kind")
            want = {"string": "bytes_list", "float32": "float_list", "int64": "int64_list"}[spec.dtype.name]
            if kind != want:
                raise InvalidArgumentError(f"Name: <unknown>, Feature: {name}. Data types don't match. Expected "
                                           f"type: {spec.dtype.name}, Actual type: {kind}")
            raw = getattr(feature, kind).value
            if varlen:
                out.append(np.asarray(list(raw), dtype=numpy_dtype).reshape(-1))
                continue
            if len(raw) != size:
                raise InvalidArgumentError(f"Name: <unknown>, Key: {name}, Index: 0.  Number of {kind.split('_')[0]} "
                                           f"values != expected.  Values size: {len(raw)} but output shape: "
                                           f"{spec.shape}")
            values = np.asarray(raw, dtype=numpy_dtype).reshape(spec.shape)
        out.append(values)
    return out


def _sparse_parts(rows, dtype, batched):
    """A var-len feature's values per Example as a SparseTensor's indices, values and
    dense_shape: [n] for one Example, [batch, longest] for a batch (TF's layout)."""
    numpy_dtype = object if dtype == _dt.string else dtype.as_numpy_dtype
    values = np.concatenate(rows) if rows else np.zeros([0], numpy_dtype)
    if not batched:
        n = len(rows[0])
        return [np.arange(n, dtype=np.int64).reshape(n, 1), values.astype(numpy_dtype), np.array([n], np.int64)]
    index = [(b, i) for b, r in enumerate(rows) for i in range(len(r))]
    indices = np.array(index, np.int64).reshape(-1, 2)
    longest = max((len(r) for r in rows), default=0)
    return [indices, values.astype(numpy_dtype), np.array([len(rows), longest], np.int64)]


def _parse(serialized, features, batched):
    names = list(features)
    specs = [features[n] for n in names]
    lead = [None] if batched else []

    def run(data):
        items = list(np.asarray(data, dtype=object).reshape(-1)) if batched else [data]
        parsed = [_parse_one(d if isinstance(d, bytes) else bytes(d), features) for d in items]
        out = []
        for k, spec in enumerate(specs):
            if isinstance(spec, VarLenFeature):
                out.extend(_sparse_parts([p[k] for p in parsed], spec.dtype, batched))
            elif batched:
                out.append(np.stack([p[k] for p in parsed]) if parsed
                           else np.zeros([0, *spec.shape], spec.dtype.as_numpy_dtype))
            else:
                out.append(parsed[0][k])
        return out

    dtypes = []  # the flat outputs' dtypes and specs: three per var-len feature
    tout = []
    for s in specs:
        if isinstance(s, VarLenFeature):
            rank = len(lead) + 1
            dtypes += [_dt.int64, s.dtype, _dt.int64]
            tout += [TensorSpec([None, rank], _dt.int64), TensorSpec([None], s.dtype), TensorSpec([rank], _dt.int64)]
        else:
            dtypes.append(s.dtype)
            tout.append(TensorSpec([*lead, *s.shape], s.dtype))
    if _C.is_tracing():
        outs = py_function(lambda t: run(t.numpy()), [serialized], Tout=tout)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    else:
        data = serialized.numpy() if hasattr(serialized, "numpy") else serialized
        outs = [_ops.convert_to_tensor(v, d) for v, d in zip(run(data), dtypes)]
    result = {}
    for n, s in zip(names, specs):
        if isinstance(s, VarLenFeature):
            result[n], outs = SparseTensor(*outs[:3]), outs[3:]
        else:
            result[n], outs = outs[0], outs[1:]
    return result


@export("io.parse_single_example")
def parse_single_example(serialized, features, example_names=None, name=None):
    """A dict of the features of one serialized Example (FixedLenFeature: a tensor of its shape;
    VarLenFeature: a SparseTensor)."""
    return _parse(serialized, features, batched=False)


@export("io.parse_example")
def parse_example(serialized, features, example_names=None, name=None):
    """The features of a batch of serialized Examples, stacked along a new first axis."""
    return _parse(serialized, features, batched=True)
