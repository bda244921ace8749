"""jf.summary: TF 2's summary writers. Each writer appends Event records to an events file in
TensorBoard's format (TFRecord framing with masked CRC-32C, Event and Summary protobufs encoded
here field by field): scalars as simple values, histograms as HistogramProto, text as string
tensors with the text plugin's metadata, images as PNG. A summary op inside a jf.function runs
through a py_function, so it writes when the function runs, not when it is traced."""
import contextlib
import os
import struct
import threading
import time
import warnings
import zlib

import numpy as np

from .. import _C
from ..core.export import export
from ..core.name_scope import get_current_name_scope
from ..core.protobuf_wire import bytes_field as _bytes
from ..core.protobuf_wire import double_field as _double
from ..core.protobuf_wire import float_field as _float
from ..core.protobuf_wire import int_field as _int
from ..ops import basic_ops as _ops
from ..tracing import function as _function
from ..tracing.py_function import py_function

# ---- the file format ---------------------------------------------------------------------


def _crc32c_table():  # built on first use: import jitflow should not pay for it
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = []


def crc32c(data):
    """CRC-32C (Castagnoli), the checksum of TFRecord framing."""
    table = _CRC_TABLE or _CRC_TABLE.extend(_crc32c_table()) or _CRC_TABLE
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    """One TFRecord: length, its masked CRC, the data, the data's masked CRC."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", _masked(crc32c(header))) + data + struct.pack("<I", _masked(crc32c(data)))


def _event(step, summary_value=None, file_version=None):
    out = _double(1, time.time()) + _int(2, step)
    if file_version is not None:
        out += _bytes(3, file_version.encode())
    if summary_value is not None:
        out += _bytes(5, _bytes(1, summary_value))  # Summary { value: [...] }
    return out


def _histogram_proto(values, buckets):
    values = np.asarray(values, np.float64).reshape(-1)
    if values.size == 0:
        lo = hi = 0.0
        limits, counts = [0.0], [0.0]
    else:
        lo, hi = float(values.min()), float(values.max())
        edges = np.linspace(lo, hi if hi > lo else lo + 1.0, buckets + 1)
        counts, _ = np.histogram(values, bins=edges)
        limits = list(edges[1:])
        counts = list(counts.astype(np.float64))
    out = (_double(1, lo) + _double(2, hi) + _double(3, values.size) + _double(4, values.sum())
           + _double(5, (values ** 2).sum()))
    out += _bytes(6, struct.pack(f"<{len(limits)}d", *limits)) + _bytes(7, struct.pack(f"<{len(counts)}d", *counts))
    return out


def _png(image):
    """An [h, w, c] uint8 image (c of 1, 3 or 4) as PNG bytes."""
    h, w, c = image.shape
    kind = {1: 0, 3: 2, 4: 6}[c]
    raw = b"".join(b"\0" + image[y].tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, kind, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


# ---- writers -----------------------------------------------------------------------------

class _State(threading.local):
    def __init__(self):
        self.writers = []
        self.step = None
        self.record = [True]


_state = _State()
_file_counter = [0]


class SummaryWriter:
    """Writes events to one file under logdir (created on first use)."""

    def __init__(self, logdir, max_queue=10, flush_millis=120000, filename_suffix=".v2", name=None):
        self.logdir = os.fspath(logdir)
        self._suffix = filename_suffix or ""
        self._max_queue, self._pending, self._file, self._lock = max_queue, [], None, threading.Lock()
        self.name = name

    def init(self):
        if self._file is None:
            os.makedirs(self.logdir, exist_ok=True)
            _file_counter[0] += 1
            host = os.uname().nodename
            name = (f"events.out.tfevents.{int(time.time())}.{host}.{os.getpid()}."
                    f"{_file_counter[0]}{self._suffix}")
            self._file = open(os.path.join(self.logdir, name), "ab")  # noqa: SIM115 - open for the writer's life
            self._file.write(record(_event(0, file_version="brain.Event:2")))
            self._file.flush()

    def write(self, step, summary_value):
        with self._lock:
            self.init()
            self._pending.append(record(_event(step, summary_value)))
            if len(self._pending) >= self._max_queue:
                self._flush_locked()

    def _flush_locked(self):
        if self._file is not None and self._pending:
            self._file.write(b"".join(self._pending))
            self._file.flush()
        self._pending = []

    def flush(self):
        with self._lock:
            self._flush_locked()

    def close(self):
        with self._lock:
            self._flush_locked()
            if self._file is not None:
                self._file.close()
                self._file = None

    @contextlib.contextmanager
    def as_default(self, step=None):
        _state.writers.append(self)
        before = _state.step
        if step is not None:
            _state.step = step
        try:
            yield self
        finally:
            _state.writers.pop()
            if step is not None:
                _state.step = before
            self.flush()

    def set_as_default(self, step=None):
        _state.writers[:] = [self]
        if step is not None:
            _state.step = step


class _NoopWriter(SummaryWriter):
    def __init__(self):
        super().__init__("")

    def write(self, step, summary_value):
        pass

    def init(self):
        pass


@export("summary.create_file_writer")
def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None,
                       experimental_trackable=False, experimental_mesh=None):
    return SummaryWriter(logdir, max_queue or 10, flush_millis or 120000,
                         ".v2" if filename_suffix is None else filename_suffix, name)


@export("summary.create_noop_writer")
def create_noop_writer():
    return _NoopWriter()


@export("summary.flush")
def flush(writer=None, name=None):
    writer = writer or (_state.writers[-1] if _state.writers else None)
    if writer is not None:
        writer.flush()


@export("summary.experimental.set_step")
def set_step(step):
    _state.step = step


@export("summary.experimental.get_step")
def get_step():
    return _state.step


@export("summary.record_if")
@contextlib.contextmanager
def record_if(condition):
    _state.record.append(condition)
    try:
        yield
    finally:
        _state.record.pop()


@export("summary.should_record_summaries")
def should_record_summaries():
    cond = _state.record[-1]
    cond = cond() if callable(cond) else cond
    return bool(_ops.convert_to_tensor(cond).numpy()) if not isinstance(cond, bool) else cond


def _emit(name, data, step, encode):
    """Writes encode(tag, numpy data) at step to the default writer, now or, inside a
    jf.function, each time the function runs. False where nothing is written (no writer)."""
    if not _state.writers or not should_record_summaries():
        return False
    writer = _state.writers[-1]
    step = _state.step if step is None else step
    if step is None:
        raise ValueError("No step set. Please specify one either through the `step` argument or through "
                         "tf.summary.experimental.set_step()")
    scope = get_current_name_scope()
    tag = f"{scope}/{name}" if scope else name

    def write(value, at):
        writer.write(int(np.asarray(at)), encode(tag, np.asarray(value)))
        return np.bool_(True)

    if _C.is_tracing():
        return py_function(lambda v, s: write(v.numpy(), s.numpy()), [data, _ops.convert_to_tensor(step, "int64")],
                           Tout="bool")
    data = data.numpy() if hasattr(data, "numpy") else data
    step = step.numpy() if hasattr(step, "numpy") else step
    return bool(write(data, step))


@export("summary.scalar")
def scalar(name, data, step=None, description=None):
    return _emit(name, data, step, lambda tag, v: _bytes(1, tag.encode()) + _float(2, float(v)))


@export("summary.histogram")
def histogram(name, data, step=None, buckets=None, description=None):
    n = 30 if buckets is None else int(buckets)
    return _emit(name, data, step, lambda tag, v: _bytes(1, tag.encode()) + _bytes(5, _histogram_proto(v, n)))


@export("summary.text")
def text(name, data, step=None, description=None):
    def encode(tag, v):
        strings = [s if isinstance(s, bytes) else str(s).encode() for s in np.asarray(v, dtype=object).reshape(-1)]
        shape = b"".join(_bytes(2, _int(1, d)) for d in np.shape(v))
        tensor = _int(1, 7) + _bytes(2, shape) + b"".join(_bytes(8, s) for s in strings)  # DT_STRING
        metadata = _bytes(1, _bytes(1, b"text"))  # plugin_data { plugin_name: "text" }
        return _bytes(1, tag.encode()) + _bytes(8, tensor) + _bytes(9, metadata)
    return _emit(name, data, step, encode)


@export("summary.image")
def image(name, data, step=None, max_outputs=3, description=None):
    """[k, h, w, c] images (floats in [0, 1] or uint8), the first max_outputs written as PNGs
    under tag/image/0, tag/image/1, ... (TF 2 writes one tag; each image gets its own here)."""
    def encode_one(v):
        v = np.asarray(v)
        if v.dtype != np.uint8:
            v = (np.clip(v, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
        h, w, c = v.shape
        return _int(1, h) + _int(2, w) + _int(3, c) + _bytes(4, _png(v))

    def encode(tag, v):
        return b"".join((_bytes(1, f"{tag}/image/{i}".encode()) + _bytes(4, encode_one(img)))
                        for i, img in enumerate(np.asarray(v)[:max_outputs]))
    return _emit(name, data, step, encode)


# ---- graph traces ----------------------------------------------------------------------------

_trace = {"on": False, "graphs": []}


def _note_trace(cf):
    if _trace["on"]:
        _trace["graphs"].append(cf)


_function.TRACE_LISTENERS.append(_note_trace)


@export("summary.trace_on")
def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Starts recording the graphs of the jf.functions traced from now on (jitflow records new
    traces; a function traced before trace_on is not recorded again). jitflow has no
    profiler: profiler=True records the graphs only, and says so once."""
    if _C.is_tracing():
        _warn_once("Cannot enable trace inside a tf.function.")
        return
    if profiler:
        _warn_once("jf.summary.trace_on(profiler=True): jitflow has no profiler; only the graphs are recorded")
    if _trace["on"]:
        _warn_once("Trace already enabled")
        return
    _trace.update(on=True, graphs=[])


@export("summary.trace_off")
def trace_off():
    _trace.update(on=False, graphs=[])


@export("summary.trace_export")
def trace_export(name, step=None, profiler_outdir=None):
    """Writes the recorded graphs as TF's graph_run_metadata_graph summary (a RunMetadata whose
    function_graphs hold each function's GraphDef, which TensorBoard's graph view reads) to the
    default writer, and stops the trace."""
    if not _trace["on"]:
        raise ValueError("Must enable trace before export through tf.summary.trace_on.")
    graphs = list(_trace["graphs"])
    trace_off()

    def encode(tag, _):
        run_metadata = b"".join(_bytes(4, _bytes(2, cf.graph.as_graph_def().SerializeToString())) for cf in graphs)
        tensor = _int(1, 7) + _bytes(2, b"") + _bytes(8, run_metadata)  # a DT_STRING scalar
        metadata = _bytes(1, _bytes(1, b"graph_run_metadata_graph") + _bytes(2, b"1"))
        return _bytes(1, tag.encode()) + _bytes(8, tensor) + _bytes(9, metadata)
    return _emit(name, 0, step, encode)


_warned = set()


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


# ---- reading back (tests and tools) -------------------------------------------------------

def read_records(path):
    """The data of each TFRecord in path, checking both CRCs."""
    out = []
    with open(path, "rb") as f:
        while header := f.read(8):
            (length,) = struct.unpack("<Q", header)
            (crc,) = struct.unpack("<I", f.read(4))
            if crc != _masked(crc32c(header)):
                raise ValueError(f"{path}: corrupt record length")
            data = f.read(length)
            (crc,) = struct.unpack("<I", f.read(4))
            if crc != _masked(crc32c(data)):
                raise ValueError(f"{path}: corrupt record data")
            out.append(data)
    return out
