"""jf.data: input pipelines with TF 2.21's tf.data API (Dataset, its sources and
transformations, the cardinality constants, TextLineDataset). The data layer sits above state
and below keras (docs/data.md)."""
from ..core.export import export
from ..core.export import missing as _missing
from . import base
from .csv_readers import CsvDataset, make_csv_dataset
from .dataset import Dataset, NumpyIterator, OwnedIterator
from .readers import FixedLengthRecords, TextLines, TFRecords

AUTOTUNE = export("data.AUTOTUNE", "data.experimental.AUTOTUNE")(base.AUTOTUNE)
INFINITE_CARDINALITY = export("data.INFINITE_CARDINALITY", "data.experimental.INFINITE_CARDINALITY")(base.INFINITE)
UNKNOWN_CARDINALITY = export("data.UNKNOWN_CARDINALITY", "data.experimental.UNKNOWN_CARDINALITY")(base.UNKNOWN)
DatasetSpec = export("data.DatasetSpec")(base.DatasetSpec)
export("data.NumpyIterator")(NumpyIterator)
export("data.Iterator")(OwnedIterator)


@export("data.TextLineDataset")
class TextLineDataset(Dataset):
    """The lines of text files (filenames: a string, list or string tensor), without their
    line endings, as string scalars."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        super().__init__(TextLines(filenames, compression_type))


@export("data.TFRecordDataset")
class TFRecordDataset(Dataset):
    """The records of TFRecord files (filenames: a string, list or string tensor; GZIP or ZLIB
    compressed with compression_type) as string scalars, their CRCs checked."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        super().__init__(TFRecords(filenames, compression_type))


@export("data.FixedLengthRecordDataset")
class FixedLengthRecordDataset(Dataset):
    """Equal-sized records (record_bytes each) of binary files, after header_bytes and before
    footer_bytes of each, as string scalars."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None, buffer_size=None,
                 compression_type=None, num_parallel_reads=None, name=None):
        super().__init__(FixedLengthRecords(filenames, record_bytes, header_bytes, footer_bytes, compression_type))


@export("data.experimental.cardinality")
def cardinality(dataset):
    """The dataset's cardinality as an int64 scalar (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY)."""
    return dataset.cardinality()


@export("data.experimental.get_single_element")
def get_single_element(dataset):
    return dataset.get_single_element()


# tf.data.experimental's transformations: functions of a dataset, for Dataset.apply.
@export("data.experimental.unbatch")
def unbatch():
    return lambda dataset: dataset.unbatch()


@export("data.experimental.unique")
def unique():
    return lambda dataset: dataset.unique()


@export("data.experimental.take_while")
def take_while(predicate):
    return lambda dataset: dataset.take_while(predicate)


@export("data.experimental.scan")
def scan(initial_state, scan_func):
    return lambda dataset: dataset.scan(initial_state, scan_func)


@export("data.experimental.enumerate_dataset")
def enumerate_dataset(start=0):
    return lambda dataset: dataset.enumerate(start)


# Imported on its own (`import jitflow.data`) before jf.data was used: a name not found
# installs what jitflow exports (jf.data.experimental, ...) and looks again.
__getattr__ = _missing("data")

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "CsvDataset",
    "Dataset",
    "DatasetSpec",
    "FixedLengthRecordDataset",
    "TFRecordDataset",
    "TextLineDataset",
    "cardinality",
    "make_csv_dataset",
]
