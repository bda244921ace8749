"""CSV files as datasets, as tf.data.experimental has them: CsvDataset (one tuple of scalars per
record, typed by record_defaults) and make_csv_dataset (batches of a dict of columns, with the
column names from the header and the types inferred from the first rows when not given)."""
import collections

import numpy as np

from ..core.errors import InvalidArgumentError
from ..core.export import export
from ..core.tensor_spec import TensorSpec
from ..tracing import csv_ops
from . import structure
from .base import Node
from .dataset import Dataset
from .readers import _names, _read, _split, matching_files


def _lines(path, compression, skip_header):
    """The file's lines, without its header line when skip_header."""
    lines = _split(_read(path, compression))
    if skip_header:
        next(lines, None)
    return lines


class CsvRows(Node):
    def __init__(self, filenames, specs, compression_type, header, field_delim, use_quote_delim, na_value,
                 select_cols):
        self.files = _names(filenames)
        self.compression = (compression_type or "").upper()
        if self.compression not in ("", "GZIP", "ZLIB"):
            raise InvalidArgumentError(f"Unsupported compression type: {compression_type}")
        self.columns, self.header = specs, header
        self.options = (field_delim, use_quote_delim, na_value, select_cols)
        self.tree = structure.Tree.of(tuple([None] * len(specs)))
        self.specs = [TensorSpec([], dtype) for dtype, _ in specs]

    def iterate(self):
        delim, quote, na, cols = self.options
        for path in self.files:
            for record, line in enumerate(_lines(path, self.compression, self.header)):
                values = csv_ops.parse_row(line, self.columns, record, delim, quote, na, cols)
                yield [structure.from_numpy(a, s.dtype) for a, s in
                       zip(csv_ops.columns_as_arrays([values], self.columns, ()), self.specs)]


@export("data.experimental.CsvDataset")
class CsvDataset(Dataset):
    """The records of CSV files as tuples of scalars, one per column of record_defaults (a dtype
    or an empty list for a required column, a one-value list for its default)."""

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None, header=False,
                 field_delim=",", use_quote_delim=True, na_value="", select_cols=None, exclude_cols=None, name=None):
        specs = csv_ops.column_specs(record_defaults)
        if select_cols is not None and exclude_cols is not None:
            raise ValueError("Either select_cols or exclude_cols should be empty")
        if exclude_cols is not None:
            raise NotImplementedError("jitflow's CsvDataset takes select_cols (exclude_cols needs the column count)")
        cols = None if select_cols is None else [int(c) for c in select_cols]
        if cols is not None and len(cols) != len(specs):
            raise ValueError("Length of select_cols and record_defaults do not match.")
        super().__init__(CsvRows(filenames, specs, compression_type, header, field_delim, use_quote_delim, na_value,
                                 cols))


_TYPE_ORDER = ["int32", "int64", "float32", "float64", "string"]


def _fits(text, dtype):
    if dtype == "string":
        return True
    try:
        value = int(text) if dtype.startswith("int") else float(text)
    except ValueError:
        return False
    if dtype == "int32":
        return -(2 ** 31) <= value < 2 ** 31
    if dtype == "int64":
        return -(2 ** 63) <= value < 2 ** 63
    if dtype == "float32":
        return np.isinf(value) or np.isfinite(np.float32(value))
    return True


def _infer_type(text, na_value, previous):
    """TF's rule: the least permissive type that holds this value and every one before it."""
    if text in ("", na_value):
        return previous
    start = _TYPE_ORDER.index(previous) if previous else 0
    return next(t for t in _TYPE_ORDER[start:] if _fits(text, t))


def _rows(files, field_delim, use_quote_delim, compression, header):
    """The data rows of the files as lists of fields (each file's header line skipped)."""
    for path in files:
        for line in _lines(path, compression, header):
            yield csv_ops.split_fields(line, field_delim, use_quote_delim)


@export("data.experimental.make_csv_dataset")
def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None, label_name=None,
                     select_columns=None, field_delim=",", use_quote_delim=True, na_value="", header=True,
                     num_epochs=None, shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False, encoding="utf-8"):
    """Batches of (an ordered dict of columns, the label column) from CSV files, as TF 2.21's
    make_csv_dataset builds them (repeated forever by default, with the last partial batch
    dropped then)."""
    files = matching_files(file_pattern)
    compression = (compression_type or "").upper()
    if column_names is None:
        if not header:
            raise ValueError("Expected `column_names` or `header` arguments. Neither is provided.")
        column_names = next(_rows(files[:1], field_delim, use_quote_delim, compression, False), [])
    column_names = list(column_names)
    if len(column_names) != len(set(column_names)):
        duplicates = {n for n in column_names if column_names.count(n) > 1}
        raise ValueError(f"Either `column_names` argument or CSV header row contains duplicate column names: "
                         f"{duplicates}.")
    cols = None
    if select_columns is not None:
        cols = sorted(column_names.index(c) if isinstance(c, str) else int(c) for c in select_columns)
    if column_defaults is None:
        chosen = cols if cols is not None else list(range(len(column_names)))
        types = [None] * len(chosen)
        for i, row in enumerate(_rows(files, field_delim, use_quote_delim, compression, header)):
            if num_rows_for_inference is not None and i >= num_rows_for_inference:
                break
            if len(row) != len(column_names):
                raise ValueError(f"Problem inferring types: CSV row {i + 1} has {len(row)} number of fields. "
                                 f"Expected: {len(column_names)}.")
            types = [_infer_type(row[c], na_value, t) for c, t in zip(chosen, types)]
        column_defaults = [np.array([""], object) if (t or "string") == "string" else np.array([0], np.dtype(t))
                           for t in types]  # TF's defaults for inferred columns: 0 or ""
    if cols is not None and len(column_defaults) != len(cols):
        raise ValueError(f"If specified, `column_defaults` and `select_columns` must have the same length: "
                         f"`column_defaults` has length {len(column_defaults)}, `select_columns` has length "
                         f"{len(cols)}.")
    if cols is not None:
        column_names = [column_names[i] for i in cols]
    if label_name is not None and label_name not in column_names:
        raise ValueError(f"`label_name` provided must be one of the columns: {column_names}. Received: {label_name}.")
    if ignore_errors:
        raise NotImplementedError("jitflow's make_csv_dataset does not implement ignore_errors yet")

    def records(filename):
        return CsvDataset(filename, column_defaults, compression_type=compression_type, header=header,
                          field_delim=field_delim, use_quote_delim=use_quote_delim, na_value=na_value,
                          select_cols=cols)

    ds = records(files[0])
    for f in files[1:]:
        ds = ds.concatenate(records(f))
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=num_epochs is None)

    def organize(*columns):
        features = collections.OrderedDict(zip(column_names, columns))
        if label_name is not None:
            label = features.pop(label_name)
            return features, label
        return features
    return ds.map(organize)


__all__ = ["CsvDataset", "make_csv_dataset"]
