"""The jf.strings ops (length, format, as_string, to_number, split, ...): eagerly on jitflow's
string tensors (core/strings.py, with StringJoin, which `+` needs); given a traced tensor, each
records its graph op, whose kernel is C++ (StringLength) or this module's eager code called back
at run time (_graph_kernel: StringFormat, AsString, StringToNumber)."""
import numpy as np

from .. import _C
from ..core.dtypes import as_dtype, int32
from ..core.errors import InvalidArgumentError, OpError
from ..core.export import export
from ..core.strings import (  # noqa: F401  (jf.strings' names too)
    StringTensor,
    _encode,
    _strings_arg,
    as_graph_input,
    constant,
    is_string_dtype,
    is_string_value,
    is_symbolic,
    join,
    string,
    to_string_array,
)
from .basic_ops import constant as _constant
from .ragged_ops import RaggedTensor


def _number_out(a, dtype):
    return _constant(np.asarray(a, dtype=dtype))


def _utf8_chars(b):
    return sum(1 for c in b if (c & 0xC0) != 0x80)  # TF counts the bytes that start a character


@export("strings.length")
def length(input, unit="BYTE", name=None):
    """int32 lengths in bytes (unit="BYTE") or UTF-8 characters (unit="UTF8_CHAR")."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise InvalidArgumentError(f"Value for attr 'unit' of \"{unit}\" is not in the list of allowed "
                                   'values: "BYTE", "UTF8_CHAR"')
    if is_symbolic(input):
        return _C.execute("StringLength", [input], {"unit": unit}, name)
    a = _strings_arg("StringLength", input)
    count = len if unit == "BYTE" else _utf8_chars
    return _number_out(np.array([count(x) for x in a.ravel().tolist()], np.int32).reshape(a.shape), np.int32)


def _float_text(v, single):
    """TF's StrCat of a float: the short %g form when it reads back exactly, else %.9g/%.17g;
    NaN with its sign, as printf prints it."""
    v = float(v)
    if np.isnan(v):
        return "-nan" if np.signbit(v) else "nan"
    short = f"{v:.6g}" if single else f"{v:.15g}"
    back = np.float32(float(short)) if single else float(short)
    if back == (np.float32(v) if single else v):
        return short
    return f"{v:.9g}" if single else f"{v:.17g}"


def _element_text(x, dtype):
    if dtype == "string":
        return '"' + x.decode("utf-8", "backslashreplace") + '"'
    if dtype == "bool":
        return "1" if x else "0"
    if dtype in ("float32", "float64"):
        return _float_text(x, dtype == "float32")
    if dtype in ("float16", "bfloat16"):  # TF prints half values as their float32 value
        return _float_text(float(x), True)
    if dtype.startswith("complex"):
        return "?"  # TF's SummarizeValue has no text for complex values
    return str(int(x))


def summarize_array(a, dtype, summarize):
    """TF's Tensor::SummarizeValue(summarize, print_v2=True), which tf.print and
    tf.strings.format show: nested brackets, elements separated by spaces, rows by newlines, at
    most min(summarize, size) items from each end of every dimension (all when summarize < 0),
    "..." for the rest."""
    a = np.asarray(a)
    n = a.size
    limit = n if summarize < 0 else min(summarize, n)
    if a.ndim == 0:
        return (_element_text(a[()], dtype) if limit else "") + ("..." if n > limit else "")
    flat, shape, rank = a.reshape(-1), a.shape, a.ndim

    def spacing(d):
        return " " if d == rank - 1 else "\n" * (rank - d - 1) + " " * (d + 1)

    def dim(d, index, out):
        if d == rank:
            out.append(_element_text(flat[index], dtype))
            return
        count, step = shape[d], int(np.prod(shape[d + 1:], dtype=np.int64))
        out.append("[")
        for i in range(min(limit, count)):
            if i > 0:
                out.append(spacing(d))
            dim(d + 1, index + step * i, out)
        if count > 2 * limit:
            out += [spacing(d), "..."]
        for i in range(max(limit, count - limit), count):
            out.append(spacing(d))
            dim(d + 1, index + step * i, out)
        out.append("]")
    out = []
    dim(0, 0, out)
    return "".join(out)


def summarize_strings(x, summarize=3):
    """jf.print's text of a string tensor (TF's eager tf.print: quoted, in brackets)."""
    return summarize_array(x._value, "string", summarize)


def _value_and_dtype(x):
    if isinstance(x, StringTensor):
        return x._value, "string"
    if not isinstance(x, _C.Tensor):
        if is_string_value(x):
            return to_string_array(x), "string"
        x = _C.convert_to_tensor(x)
    return x.numpy(), x.dtype.name


@export("strings.format")
def format(template, inputs, placeholder="{}", summarize=3, name=None):
    """A scalar string: template with each placeholder replaced by the next input's summary."""
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    pieces = template.split(placeholder)
    if len(pieces) - 1 != len(inputs):
        raise ValueError(f"The template expects {len(pieces) - 1} tensors, but the inputs only has "
                         f"{len(inputs)}. Please ensure the number of placeholders in template matches "
                         "inputs length.")
    if any(is_symbolic(x) for x in inputs):
        return _C.execute("StringFormat", [as_graph_input(x) for x in inputs],
                          {"template": template, "placeholder": placeholder, "summarize": summarize}, name)
    out = [pieces[0]]
    for x, rest in zip(inputs, pieces[1:]):
        a, dt = _value_and_dtype(x)
        out += [summarize_array(a, dt, summarize), rest]
    return constant("".join(out))


@export("strings.as_string", "as_string", "dtypes.as_string")
def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):
    """Each element formatted as TF's AsString does (a printf format built from the arguments)."""
    if isinstance(input, StringTensor):
        return input
    if is_symbolic(input) and input.dtype == string:
        return input
    if is_symbolic(input):
        return _C.execute("AsString", [input], {"precision": precision, "scientific": scientific,
                                                "shortest": shortest, "width": width, "fill": fill}, name)
    x = input if isinstance(input, _C.Tensor) else _C.convert_to_tensor(input)
    dt = x.dtype.name
    is_c = dt.startswith("complex")
    is_f = dt in ("float32", "float64", "float16", "bfloat16") or is_c
    if shortest and scientific:
        raise InvalidArgumentError("Cannot select both scientific and shortest notation [Op:AsString]")
    if len(fill) > 1:
        raise InvalidArgumentError('Fill string must be one or fewer characters [Op:AsString]')
    if fill and fill not in " +-0#":
        raise InvalidArgumentError(f'Fill argument not supported: "{fill}" [Op:AsString]')
    if not is_f:
        for flag, what in ((precision > -1, "precision"), (scientific, "scientific"), (shortest, "shortest")):
            if flag:
                raise InvalidArgumentError(f"{what} not supported for datatype {dt} [Op:AsString]")
    fmt = "%" + fill + (str(width) if width > -1 else "") + (f".{precision}" if precision > -1 else "")
    fmt += ("g" if shortest else "e" if scientific else "f") if is_f else "s" if dt == "bool" else "d"
    a = x.numpy()
    if dt == "bool":  # TF ignores width and fill for bools
        vals = ["true" if v else "false" for v in a.ravel().tolist()]
    elif is_c:  # TF: "(real,imag)", each part in the float format
        vals = [f"({fmt % v.real},{fmt % v.imag})" for v in a.ravel().tolist()]
    elif dt in ("float16", "bfloat16"):
        vals = [fmt % v for v in a.astype(np.float64).ravel().tolist()]
    else:
        vals = [fmt % v for v in a.ravel().tolist()]
    out = np.empty(len(vals), dtype=object)
    out[:] = [v.encode() for v in vals]
    return constant(out.reshape(a.shape))


_TO_NUMBER_TYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64,
                    "uint32": np.uint32, "uint64": np.uint64}


def _parse(s, dt):
    text = s.decode("utf-8", "replace")
    bad = InvalidArgumentError(f"StringToNumberOp could not correctly convert string: {text} [Op:StringToNumber]")
    if "_" in text:  # Python's numeric literals allow it; TF's parsers do not
        raise bad
    try:
        if dt in ("float32", "float64"):
            try:
                return float(text)
            except ValueError:  # strtod also reads hexadecimal floats ("0x10" is 16.0)
                return float.fromhex(text.strip())
        v = int(text.strip())
    except (ValueError, OverflowError):
        raise bad from None
    if dt.startswith("uint") and text.strip().startswith("-"):  # TF's unsigned parsers take no sign ("-0" too)
        raise bad
    info = np.iinfo(_TO_NUMBER_TYPES[dt])
    if not info.min <= v <= info.max:
        raise bad
    return v


@export("strings.to_number")
def to_number(string_tensor, out_type=None, name=None):
    """Parses each string as out_type (float32 by default; float64, int32, int64, uint32, uint64)."""
    dt = "float32" if out_type is None else as_dtype(out_type).name
    if dt not in _TO_NUMBER_TYPES:
        raise InvalidArgumentError(f"Value for attr 'out_type' of {dt} is not in the list of allowed values: "
                                   "float, double, int32, int64, uint32, uint64")
    if is_symbolic(string_tensor):
        return _C.execute("StringToNumber", [string_tensor], {"out_type": as_dtype(dt)}, name)
    a = _strings_arg("StringToNumber", string_tensor)
    vals = [_parse(s, dt) for s in a.ravel().tolist()]
    with np.errstate(over="ignore"):  # past float32's range is inf, as strtof
        wide = np.float64 if dt.startswith("float") else np.uint64 if dt.startswith("uint") else np.int64
        out = np.array(vals, dtype=wide).astype(_TO_NUMBER_TYPES[dt])
    return _number_out(out.reshape(a.shape), _TO_NUMBER_TYPES[dt])


def _hash_buckets(op, input, attrs, name):
    """A hash-bucket op's int64 buckets, run by its C++ kernel in both modes (eagerly on the
    string tensor's C++ value)."""
    if is_symbolic(input):
        if input.dtype != string:
            raise TypeError(f"Input 'input' of '{op}' Op has type {input.dtype.name} that does not match "
                            "expected type of string.")
        return _C.execute(op, [input], attrs, name)
    if not isinstance(input, StringTensor):
        input = constant(_strings_arg(op, input))  # TF's error for a number or a numeric tensor
    return _C.execute(op, [input._c_tensor()], attrs, name)


@export("strings.to_hash_bucket_fast", "string_to_hash_bucket_fast")
def to_hash_bucket_fast(input, num_buckets, name=None):
    """Each string's bucket in [0, num_buckets): FarmHash Fingerprint64 modulo num_buckets, as TF."""
    return _hash_buckets("StringToHashBucketFast", input, {"num_buckets": int(num_buckets)}, name)


@export("strings.to_hash_bucket_strong", "string_to_hash_bucket_strong")
def to_hash_bucket_strong(input, num_buckets, key, name=None):
    """Each string's bucket in [0, num_buckets) by SipHash-2-4 under the two-integer `key`, as TF."""
    key = [int(k) for k in key]
    if len(key) != 2:
        raise InvalidArgumentError("Key must have 2 elements")
    key = [k - (1 << 64) if k >= 1 << 63 else k for k in key]  # the uint64 halves, as int64 attrs
    return _hash_buckets("StringToHashBucketStrong", input, {"num_buckets": int(num_buckets), "key": key}, name)


class RaggedStrings:
    """What jf.strings.split returns for a vector (TF: a tf.RaggedTensor): the rows (to_list(),
    len, indexing a row, flat_values, row_splits), printed as TF's RaggedTensor; anything else
    (to_tensor, row_lengths, values, shape, jf.reduce_* of numeric rows, ...) is answered by
    the same rows as a jf.RaggedTensor."""

    def _ragged(self):
        return RaggedTensor.from_row_splits(self.flat_values, self.row_splits)

    def __getattr__(self, name):
        if name.startswith("_") and name != "__jf_reduce__":
            raise AttributeError(name)
        return getattr(self._ragged(), name)

    def __init__(self, rows, dtype=None):
        self._rows = rows
        self._dtype = string if dtype is None else dtype

    def to_list(self):
        return [list(r.numpy().tolist()) for r in self._rows]

    @property
    def flat_values(self):
        if self._dtype != string:
            return _number_out(np.concatenate([r.numpy() for r in self._rows] + [np.zeros(0)]), self._dtype.as_numpy_dtype)
        return constant(np.array([x for r in self._rows for x in r._value.tolist()] + [None], object)[:-1])

    @property
    def row_splits(self):
        splits = np.cumsum([0] + [len(r) for r in self._rows]).astype(np.int64)
        return _number_out(splits, np.int64)

    @property
    def dtype(self):
        return self._dtype

    def nrows(self):
        return _number_out(np.int64(len(self._rows)), np.int64)

    def __len__(self):
        return len(self._rows)

    def __getitem__(self, i):
        return self._rows[i]

    def __iter__(self):
        return iter(self._rows)

    def __repr__(self):
        return f"<jf.RaggedTensor {self.to_list()}>"


@export("strings.split")
def split(input, sep=None, maxsplit=-1, name=None):
    """Splits each string on sep (whitespace runs when sep is None or empty): a vector for a
    scalar input, a RaggedStrings (TF: a RaggedTensor) of rows for a vector input."""
    a = _split_arg("split", input)
    s = None if sep in (None, "", b"") else _encode(sep, sep)

    def one(b):
        return constant(np.array(b.split(s, maxsplit) + [None], dtype=object)[:-1])
    if a.ndim == 0:
        return one(a[()])
    if a.ndim == 1:
        return RaggedStrings([one(b) for b in a.tolist()])
    raise ValueError(f"jf.strings.split takes a scalar or a vector, got shape {list(a.shape)} "
                     "(jitflow has no ragged tensors of rank > 2)")


@export("strings.bytes_split")
def bytes_split(input, name=None):
    """Each string's bytes as one-byte strings: a vector for a scalar input, rows (TF: a
    RaggedTensor) for a vector input."""
    a = _split_arg("bytes_split", input)

    def one(b):
        return constant(np.array([b[i:i + 1] for i in range(len(b))] + [None], dtype=object)[:-1])
    if a.ndim == 0:
        return one(a[()])
    if a.ndim == 1:
        return RaggedStrings([one(b) for b in a.tolist()])
    raise ValueError(f"jf.strings.bytes_split takes a scalar or a vector, got shape {list(a.shape)} "
                     "(jitflow has no ragged tensors of rank > 2)")


_CODECS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be", "US-ASCII": "ascii",
           "ISO-8859-1": "latin-1"}


def codec(encoding, op):
    """Python's codec for a TF encoding name (TF accepts ICU names; these are the common ones)."""
    name = _CODECS.get(str(encoding).upper())
    if name is None:
        raise InvalidArgumentError(f"{op}: Could not create converter for input encoding: {encoding} "
                                   f"(jitflow knows {', '.join(_CODECS)})")
    return name


def decode_text(b, encoding, errors, replacement_char, op):
    """b decoded as TF's Unicode ops do: errors 'strict' raises InvalidArgumentError, 'replace'
    puts replacement_char for each invalid sequence, 'ignore' drops it."""
    if errors not in ("strict", "replace", "ignore"):
        raise ValueError(f"errors must be 'strict', 'replace' or 'ignore', got {errors!r}")
    try:
        return b.decode(codec(encoding, op), "strict" if errors == "replace" else errors)
    except UnicodeDecodeError as e:
        if errors == "strict":
            raise InvalidArgumentError(f"{op}: Invalid formatting on input string ({e.reason} at byte {e.start})") \
                from None
    out, rest, name = [], b, codec(encoding, op)
    while rest:
        try:
            out.append(rest.decode(name))
            break
        except UnicodeDecodeError as e:
            out.append(rest[:e.start].decode(name) + chr(replacement_char))
            rest = rest[max(e.end, e.start + 1):]
    return "".join(out)


def _unicode_rows(op, input, encoding, errors, replacement_char, one, dtype=None):
    a = _split_arg(op, input)
    if a.ndim == 0:
        return one(decode_text(a[()], encoding, errors, replacement_char, op))
    if a.ndim == 1:
        return RaggedStrings([one(decode_text(b, encoding, errors, replacement_char, op)) for b in a.tolist()], dtype)
    raise ValueError(f"jf.strings.{op} takes a scalar or a vector, got shape {list(a.shape)} "
                     "(jitflow has no ragged tensors of rank > 2)")


@export("strings.unicode_split")
def unicode_split(input, input_encoding, errors="replace", replacement_char=65533, name=None):
    """Each string's characters as strings (in input_encoding): a vector for a scalar input,
    rows (TF: a RaggedTensor) for a vector input."""
    enc = codec(input_encoding, "unicode_split")
    return _unicode_rows("unicode_split", input, input_encoding, errors, replacement_char,
                         lambda text: constant(np.array([c.encode(enc) for c in text] + [None], object)[:-1]))


@export("strings.unicode_decode")
def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533, replace_control_characters=False,
                   name=None):
    """Each string's code points, int32: a vector for a scalar input, rows for a vector input."""
    def points(text):
        cps = [ord(c) for c in text]
        if replace_control_characters:
            cps = [replacement_char if c < 32 or 127 <= c < 160 else c for c in cps]
        return _number_out(np.array(cps, np.int32), np.int32)
    return _unicode_rows("unicode_decode", input, input_encoding, errors, replacement_char, points, int32)


@export("strings.unicode_encode")
def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533, name=None):
    """int32 code points to strings: a vector to a scalar, a matrix (or rows, as unicode_decode
    gives them) to a vector; an invalid code point is replaced, or raises with errors='strict'."""
    enc = codec(output_encoding, "unicode_encode")

    def text(cps):
        chars = []
        for c in (int(x) for x in cps):
            if 0 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF:
                chars.append(chr(c))
            elif errors == "strict":
                raise InvalidArgumentError(f"unicode_encode: Invalid code point {c}")
            elif errors == "replace":
                chars.append(chr(replacement_char))
        return "".join(chars).encode(enc)
    if isinstance(input, RaggedStrings):
        rows = [r.numpy() for r in input]
    else:
        a = np.asarray(input.numpy() if hasattr(input, "numpy") else input)
        if a.ndim == 1:
            return constant(text(a))
        rows = list(a.reshape(-1, a.shape[-1])) if a.ndim else None
        if rows is None:
            raise ValueError("jf.strings.unicode_encode needs at least one dimension of code points")
        return constant(np.array([text(r) for r in rows] + [None], object)[:-1].reshape(a.shape[:-1]))
    return constant(np.array([text(r) for r in rows] + [None], object)[:-1])


def _split_arg(op, x):
    if is_symbolic(x):  # TF's result is ragged: its shape depends on the values
        raise TypeError(f"jf.strings.{op} of a traced tensor ({x!r}): its result is a RaggedTensor in TF, "
                        "which jitflow lacks; split outside the jf.function, or use jf.py_function")
    return _strings_arg("StringSplit", x)


_KERNEL_ERRORS = {"InvalidArgumentError": "invalid_argument", "OutOfRangeError": "out_of_range",
                  "UnimplementedError": "unimplemented", "ResourceExhaustedError": "resource_exhausted"}


def _graph_kernel(op, inputs, attrs):
    """The kernel of a StringFormat, AsString or StringToNumber node (C++ calls it when the node
    runs): this module's eager code on the node's values. Returns the outputs, or (kind,
    message) for the error the op raises."""
    try:
        if op == "StringFormat":
            out = format(attrs["template"], list(inputs), attrs.get("placeholder", "{}"), attrs.get("summarize", 3))
        elif op == "AsString":
            out = as_string(inputs[0], attrs.get("precision", -1), attrs.get("scientific", False),
                            attrs.get("shortest", False), attrs.get("width", -1), attrs.get("fill", ""))
        elif op == "StringToNumber":
            out = to_number(inputs[0], attrs.get("out_type"))
        else:
            return ("internal", f"no string kernel for {op}")
    except OpError as e:
        msg = str(e).replace(f" [Op:{op}]", "")
        return (_KERNEL_ERRORS.get(type(e).__name__, "unknown"), msg)
    except (TypeError, ValueError) as e:
        return ("invalid_argument", str(e))
    return [out]
