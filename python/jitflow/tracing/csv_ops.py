"""CSV records as tensors: jf.io.decode_csv, and the row parsing jf.data's CSV readers share.
Fields are split by Python's csv module (TF's quoting: a quoted field may hold the delimiter,
"" is a quote), converted to each column's dtype with TF's errors; an empty field (or
na_value) takes the column's default, and a column without one must be present. Eagerly it
runs now; inside a jf.function it is a py_function node."""
import csv

import numpy as np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as _ops
from .py_function import py_function

_CSV_TYPES = ("float32", "float64", "int32", "int64", "string")
_INT_RANGE = {"int32": (-(2 ** 31), 2 ** 31 - 1), "int64": (-(2 ** 63), 2 ** 63 - 1)}


def column_specs(record_defaults):
    """[(dtype name, default value or None)] from TF's record_defaults: a dtype (required), an
    empty tensor or list (required, of its dtype), or a one-value tensor or list (the default)."""
    out = []
    for i, d in enumerate(record_defaults):
        if isinstance(d, _C.DType) or (isinstance(d, str) and d in _CSV_TYPES):
            out.append((_dt.as_dtype(d).name, None))
            continue
        t = d if hasattr(d, "dtype") and hasattr(d, "numpy") else _ops.convert_to_tensor(d)
        values = np.asarray(t.numpy(), dtype=object if t.dtype.name == "string" else None).reshape(-1)
        if t.dtype.name not in _CSV_TYPES:
            raise TypeError(f"record_defaults[{i}] has dtype {t.dtype.name}; CSV columns are one of {_CSV_TYPES}")
        if values.size > 1:
            raise ValueError(f"record_defaults[{i}] must have at most one value, got {values.size}")
        out.append((t.dtype.name, values[0] if values.size else None))
    return out


def _convert(text, dtype, column, record):
    if dtype == "string":
        return text.encode("utf-8", "surrogateescape")
    try:
        if dtype in _INT_RANGE:
            value = int(text.strip())
            lo, hi = _INT_RANGE[dtype]
            if not lo <= value <= hi:
                raise ValueError
            return value
        return float(text.strip())
    except ValueError:
        kind = {"float32": "float", "float64": "double"}.get(dtype, dtype)  # TF's wording
        raise InvalidArgumentError(f"Field {column} in record {record} is not a valid {kind}: {text}") from None


def split_fields(line, field_delim=",", use_quote_delim=True):
    """The fields of one CSV line (bytes or str) as str."""
    text = line.decode("utf-8", "surrogateescape") if isinstance(line, bytes) else line
    reader = csv.reader([text], delimiter=field_delim, quoting=csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE)
    return next(reader, [""])


def parse_row(line, specs, record, field_delim=",", use_quote_delim=True, na_value="", select_cols=None):
    """One record's values, one per spec, as Python values."""
    fields = split_fields(line, field_delim, use_quote_delim)
    if select_cols is not None:
        if select_cols and max(select_cols) >= len(fields):
            raise InvalidArgumentError(f"Expect {max(select_cols) + 1} fields but have {len(fields)} in record "
                                       f"{record}")
        fields = [fields[c] for c in select_cols]
    if len(fields) != len(specs):
        raise InvalidArgumentError(f"Expect {len(specs)} fields but have {len(fields)} in record {record}")
    out = []
    for column, (text, (dtype, default)) in enumerate(zip(fields, specs)):
        if text == "" or (na_value and text == na_value):
            if default is None:
                raise InvalidArgumentError(f"Field {column} is required but missing in record {record}!")
            out.append(default)
        else:
            out.append(_convert(text, dtype, column, record))
    return out


def columns_as_arrays(rows, specs, shape):
    """Per column, a numpy array of the rows' values in `shape`."""
    out = []
    for column, (dtype, _) in enumerate(specs):
        values = [r[column] for r in rows]
        if dtype == "string":
            arr = np.array([v if isinstance(v, bytes) else str(v).encode() for v in values] + [None], object)[:-1]
        else:
            arr = np.array(values, dtype=np.dtype(_dt.as_dtype(dtype).as_numpy_dtype))
        out.append(arr.reshape(shape))
    return out


@export("io.decode_csv", "decode_csv")
def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None, na_value="",
               select_cols=None):
    """One tensor per column, each of the records' shape, parsed from CSV lines."""
    specs = column_specs(record_defaults)
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if select_cols != sorted(set(select_cols)):
            raise ValueError("select_cols is not strictly increasing.")
        if len(select_cols) != len(specs):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    x = records if isinstance(records, _C.Tensor) or hasattr(records, "_c_tensor") else \
        _ops.convert_to_tensor(records, _dt.string)

    def parse(arr):
        arr = np.asarray(arr, dtype=object)
        rows = [parse_row(line, specs, r, field_delim, use_quote_delim, na_value, select_cols)
                for r, line in enumerate(arr.reshape(-1).tolist())]
        return columns_as_arrays(rows, specs, arr.shape)
    dtypes = [_dt.as_dtype(d) for d, _ in specs]
    if _C.is_tracing():
        return py_function(lambda t: parse(t.numpy()), [x], Tout=[TensorSpec(list(x.shape), d) for d in dtypes])
    return [_ops.convert_to_tensor(a, d) for a, d in zip(parse(x.numpy()), dtypes)]


__all__ = ["column_specs", "decode_csv", "parse_row", "split_fields"]
