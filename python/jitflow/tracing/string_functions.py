"""tf.strings functions that jitflow computes with Python's string methods: lower, upper,
strip, regex_replace, regex_full_match, substr, reduce_join and ngrams (dense inputs). Eagerly
they run on the values now; inside a jf.function each becomes a py_function node, so it runs
on the host each time the function runs (string tensors never compile)."""
import base64
import builtins
import re

import numpy as np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import DataLossError, InvalidArgumentError
from ..core.export import export
from ..core.graph_def import parse_tensor_proto, tensor_proto
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as _ops
from ..ops import strings as _strings
from .py_function import py_function


def _bytes_array(t):
    values = t.numpy() if hasattr(t, "numpy") else t
    arr = np.asarray(values, dtype=object)
    return np.vectorize(lambda s: s if isinstance(s, bytes) else str(s).encode(), otypes=[object])(arr) \
        if arr.size else arr


def _apply(fn, x, dtype=_dt.string, shape=None):
    """fn(numpy object array of bytes) -> numpy array, on a string tensor or strings."""
    x = x if isinstance(x, _C.Tensor) else _ops.convert_to_tensor(x)
    if x.dtype != _dt.string:
        raise TypeError(f"Expected string, but got {x.dtype.name} for an argument of a tf.strings function")
    out_shape = list(x.shape) if shape is None else shape
    if _C.is_tracing():
        return py_function(lambda t: np.asarray(fn(_bytes_array(t)), dtype=object if dtype == _dt.string else None),
                           [x], Tout=TensorSpec(out_shape, dtype))
    out = fn(_bytes_array(x))
    return _ops.convert_to_tensor(out if dtype == _dt.string else np.asarray(out), dtype)


def _each(fn):
    return lambda arr: np.vectorize(fn, otypes=[object])(arr) if arr.size else arr


@export("strings.lower")
def lower(input, encoding="", name=None):
    """Lowercase: ASCII letters only, or every letter with encoding='utf-8', as TF."""
    if encoding:
        return _apply(_each(lambda s: s.decode(encoding).lower().encode(encoding)), input)
    return _apply(_each(bytes.lower), input)


@export("strings.upper")
def upper(input, encoding="", name=None):
    if encoding:
        return _apply(_each(lambda s: s.decode(encoding).upper().encode(encoding)), input)
    return _apply(_each(bytes.upper), input)


@export("strings.strip")
def strip(input, name=None):
    """Leading and trailing ASCII whitespace removed."""
    return _apply(_each(bytes.strip), input)


def _pattern(pattern):
    return re.compile(pattern.encode() if isinstance(pattern, str) else bytes(pattern))


@export("strings.regex_replace")
def regex_replace(input, pattern, rewrite, replace_global=True, name=None):
    """Matches of pattern replaced by rewrite (\\1 for a group); only the first without
    replace_global. Python's re stands in for TF's RE2 (the same syntax for common patterns)."""
    regex = _pattern(pattern)
    repl = rewrite.encode() if isinstance(rewrite, str) else bytes(rewrite)
    count = 0 if replace_global else 1
    return _apply(_each(lambda s: regex.sub(repl, s, count=count)), input)


@export("strings.regex_full_match")
def regex_full_match(input, pattern, name=None):
    regex = _pattern(pattern)
    fn = np.vectorize(lambda s: regex.fullmatch(s) is not None, otypes=[bool])
    return _apply(lambda arr: fn(arr) if arr.size else np.zeros(arr.shape, bool), input, dtype=_dt.bool)


@export("strings.substr")
def substr(input, pos, len, unit="BYTE", name=None):
    """len bytes (or UTF-8 characters with unit='UTF8_CHAR') from pos (from the end when
    negative); a pos past the string is TF's InvalidArgumentError."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    p, n = int(pos), int(len)

    def cut(s):
        text = s.decode("utf-8") if unit == "UTF8_CHAR" else s
        start = p if p >= 0 else builtins.len(text) + p
        if start < 0 or start > builtins.len(text):
            raise InvalidArgumentError(f"pos {p} out of range for string b'{s.decode('utf-8', 'replace')}'")
        piece = text[start:start + n]
        return piece.encode("utf-8") if unit == "UTF8_CHAR" else piece
    return _apply(_each(cut), input)


@export("strings.reduce_join", "reduce_join")
def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """The strings joined with separator along axis (all of them when None)."""
    x = inputs if isinstance(inputs, _C.Tensor) else _ops.convert_to_tensor(inputs)
    sep = separator.encode() if isinstance(separator, str) else bytes(separator)
    rank = builtins.len(x.shape)
    axes = list(range(rank)) if axis is None else [a % rank for a in ([axis] if isinstance(axis, int) else axis)]
    shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keepdims else \
        [d for i, d in enumerate(x.shape) if i not in axes]

    def join(arr):
        moved = np.moveaxis(arr, axes, list(range(rank - builtins.len(axes), rank)))
        lead = moved.shape[:rank - builtins.len(axes)]
        flat = moved.reshape(*lead, -1)
        out = np.empty(lead, dtype=object)
        for idx in np.ndindex(*lead):
            out[idx] = sep.join(flat[idx])
        return out.reshape(shape) if keepdims else out
    return _apply(join, x, shape=shape)


@export("strings.ngrams")
def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None, preserve_short_sequences=False,
           name=None):
    """The n-grams of each row (last axis) of a dense string tensor, joined by separator; with a
    tuple of widths, each width's n-grams one after another. Padding is not implemented."""
    if pad_values is not None or padding_width is not None or preserve_short_sequences:
        raise NotImplementedError("jitflow's strings.ngrams does not implement padding or "
                                  "preserve_short_sequences yet")
    widths = [int(ngram_width)] if isinstance(ngram_width, int) else [int(w) for w in ngram_width]
    sep = separator.encode() if isinstance(separator, str) else bytes(separator)
    x = data if isinstance(data, _C.Tensor) else _ops.convert_to_tensor(data)
    n = x.shape[-1]
    if n is None:
        raise NotImplementedError("jitflow's strings.ngrams needs the row length when tracing")
    total = sum(max(n - w + 1, 0) for w in widths)

    def grams(arr):
        out = np.empty((*arr.shape[:-1], total), dtype=object)
        for idx in np.ndindex(*arr.shape[:-1]):
            row = list(arr[idx])
            out[idx] = [sep.join(row[i:i + w]) for w in widths for i in range(builtins.len(row) - w + 1)]
        return out
    return _apply(grams, x, shape=[*x.shape[:-1], total])


@export("strings.unicode_transcode")
def unicode_transcode(input, input_encoding, output_encoding, errors="replace", replacement_char=65533,
                      replace_control_characters=False, name=None):
    """Each string decoded from input_encoding and encoded in output_encoding."""
    out = _strings.codec(output_encoding, "unicode_transcode")

    def one(s):
        text = _strings.decode_text(s, input_encoding, errors, replacement_char, "unicode_transcode")
        if replace_control_characters:
            text = "".join(chr(replacement_char) if ord(c) < 32 or 127 <= ord(c) < 160 else c for c in text)
        return text.encode(out)
    return _apply(_each(one), input)


@export("io.decode_raw", "decode_raw")
def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None, name=None):
    """Each string's bytes read as out_type numbers: shape input.shape + [n]. The strings must
    have one length (TF's rule), a multiple of the type's size; fixed_length pads with zeros
    or cuts each to that many bytes."""
    dtype = _dt.as_dtype(out_type)
    item = np.dtype(dtype.as_numpy_dtype)
    item = item.newbyteorder("<" if little_endian else ">") if item.itemsize > 1 else item

    def read(arr):
        flat = arr.reshape(-1).tolist()
        if fixed_length is not None:
            flat = [s[:int(fixed_length)].ljust(int(fixed_length), b"\0") for s in flat]
        size = builtins.len(flat[0]) if flat else 0
        for i, s in enumerate(flat):
            if builtins.len(s) != size:
                raise InvalidArgumentError(f"DecodeRaw requires input strings to all be the same size, but element "
                                           f"{i} has size {builtins.len(s)} != {size}")
        if size % item.itemsize:
            raise InvalidArgumentError(f"Input to DecodeRaw has length {size} that is not a multiple of "
                                       f"{item.itemsize}, the size of {dtype.name}")
        n = size // item.itemsize
        values = np.frombuffer(b"".join(flat), item).astype(item.newbyteorder("="))
        return values.reshape(arr.shape + (n,))
    x = input_bytes if isinstance(input_bytes, _C.Tensor) else _ops.convert_to_tensor(input_bytes)
    n = None if fixed_length is None else int(fixed_length) // item.itemsize
    return _apply(read, x, dtype=dtype, shape=list(x.shape) + [n])


@export("io.encode_base64", "strings.encode_base64")
def encode_base64(input, pad=False, name=None):
    """Web-safe base64 (- and _ for + and /), without '=' padding unless pad, as TF."""
    def one(b):
        text = base64.urlsafe_b64encode(b)
        return text if pad else text.rstrip(b"=")
    return _apply(_each(one), input)


@export("io.decode_base64", "strings.decode_base64")
def decode_base64(input, name=None):
    """The inverse of encode_base64 (padding optional); other input is InvalidArgumentError."""
    def one(b):
        try:
            return base64.urlsafe_b64decode(b + b"=" * (-len(b) % 4))
        except (ValueError, TypeError):
            raise InvalidArgumentError(f"Invalid character found in base64: {b[:32]!r}") from None
    return _apply(_each(one), input)


@export("io.serialize_tensor", "serialize_tensor")
def serialize_tensor(tensor, name=None):
    """A scalar string: TF's TensorProto of the tensor (dtype, shape, values), which
    tf.io.parse_tensor reads back (TF's own parser included)."""
    x = tensor if isinstance(tensor, _C.Tensor) or hasattr(tensor, "_c_tensor") else _ops.convert_to_tensor(tensor)
    if _C.is_tracing():
        return py_function(lambda t: np.array(tensor_proto(t), dtype=object), [x], Tout=TensorSpec([], _dt.string))
    return _ops.convert_to_tensor(np.array(tensor_proto(x), dtype=object), _dt.string)


@export("io.parse_tensor", "parse_tensor")
def parse_tensor(serialized, out_type, name=None):
    """The tensor a serialized TensorProto holds; its dtype must be out_type (TF's error)."""
    want = _dt.as_dtype(out_type)

    def parse(arr):
        data = arr.reshape(()).item() if hasattr(arr, "reshape") else arr
        try:
            got, value = parse_tensor_proto(bytes(data))
        except (ValueError, DataLossError) as e:
            raise InvalidArgumentError(f"Could not parse `serialized` as TensorProto: {e}") from None
        if got != want.name:
            raise InvalidArgumentError(f"Type mismatch between parsed tensor ({got}) and dtype ({want.name})")
        return value
    x = serialized if isinstance(serialized, _C.Tensor) or hasattr(serialized, "_c_tensor") else \
        _ops.convert_to_tensor(serialized, _dt.string)
    if _C.is_tracing():  # TF's result has an unknown rank, which jitflow's graphs cannot hold
        raise NotImplementedError("jf.io.parse_tensor inside a jf.function: its result's rank is unknown until it "
                                  "runs, and jitflow has no tensors of unknown rank; parse eagerly, or call it in a "
                                  "jf.py_function with Tout=jf.TensorSpec(shape, dtype)")
    value = parse(_bytes_array(x))
    return _ops.convert_to_tensor(value, want)


__all__ = ["decode_base64", "decode_raw", "encode_base64", "lower", "ngrams", "parse_tensor", "reduce_join",
           "regex_full_match", "regex_replace", "serialize_tensor", "strip", "substr", "unicode_transcode", "upper"]
