"""The cross-worker all-reduce as an op: eagerly a call, in a traced function a stateful PyFunc
node whose kernel calls back into MPI when the graph runs.

The node is never compiled (the PyFunc record is eager-only: a stateful op), so jit_scope
clusters and auto-clustering compile the arithmetic on either side of it and the runtime runs
the all-reduce between them; a jit_compile=True function that contains one raises, naming the
node, because it cannot compile the whole function (see docs/distribute.md). Tensors are fused
into buckets (Horovod's tensor fusion): the gradients of many variables, of one dtype, are
copied into one contiguous buffer, reduced by one MPI_Iallreduce in place, and sliced back, so a
step costs a few collectives instead of one per variable. The first time a bucket runs, every
rank's layout (shapes and dtype) is compared, so ranks running different programs fail at the
first step with the shapes of each rank rather than corrupting each other's buffers."""
import numpy as np

from .. import _C
from ..core import errors as _errors
from ..tracing import py_function as _py
from . import collective

DEFAULT_BUCKET_BYTES = 64 << 20
_eager_buckets = {}  # eager calls reuse a bucket of the same layout, checked once


class _Bucket:
    """The callback of one all-reduce node: a fixed list of shapes of one dtype."""

    def __init__(self, comm, op, mean, name):
        self.comm, self.op, self.mean, self.name = comm, op, mean, name
        self.checked = False

    def _check_layout(self, arrays):
        layout = f"{self.name}: " + ", ".join(f"{a.dtype}{list(a.shape)}" for a in arrays)
        layouts = [b.decode() for b in self.comm.allgather_bytes(layout.encode())]
        if len(set(layouts)) > 1:
            per_rank = "\n".join(f"  rank {r}: {text}" for r, text in enumerate(layouts))
            raise _errors.InvalidArgumentError(
                "jf.distribute: the workers all-reduce tensors of different shapes or dtypes (they "
                f"run different programs or build different models):\n{per_rank}")
        self.checked = True

    def __call__(self, *tensors):
        arrays = [np.asarray(t.numpy()) for t in tensors]
        if not self.checked:
            self._check_layout(arrays)
        sizes = [a.size for a in arrays]
        buf = np.empty(sum(sizes), arrays[0].dtype if arrays else np.float32)
        offset = 0
        for a, n in zip(arrays, sizes):  # one copy into the fused buffer, no Python elements
            buf[offset:offset + n] = a.reshape(-1)
            offset += n
        self.comm.allreduce_(buf, self.op)
        if self.mean:
            if np.issubdtype(buf.dtype, np.floating):
                buf /= buf.dtype.type(self.comm.size)
            else:
                buf //= self.comm.size
        outs, offset = [], 0
        for a, n in zip(arrays, sizes):
            outs.append(_C.convert_to_tensor(buf[offset:offset + n].reshape(a.shape)))
            offset += n
        return outs


def _buckets(tensors, bucket_bytes):
    """Indices grouped by dtype, each group cut into buckets of at most bucket_bytes (a tensor
    larger than that is a bucket of its own)."""
    by_dtype = {}
    for i, t in enumerate(tensors):
        by_dtype.setdefault(t.dtype, []).append(i)
    out = []
    for idx in by_dtype.values():
        current, size = [], 0
        for i in idx:
            t = tensors[i]
            nbytes = int(np.prod([d or 1 for d in t.shape])) * np.dtype(t.dtype.as_numpy_dtype).itemsize
            if current and size + nbytes > bucket_bytes:
                out.append(current)
                current, size = [], 0
            current.append(i)
            size += nbytes
        if current:
            out.append(current)
    return out


def all_reduce(tensors, op="sum", mean=False, bucket_bytes=DEFAULT_BUCKET_BYTES, comm=None, name="AllReduce"):
    """Sums (op='sum', or 'max' / 'min'; mean=True divides by the worker count) each tensor
    across the workers; returns the list of reduced tensors, in order."""
    comm = comm or collective.world()
    tensors = [_C.convert_to_tensor(t) for t in tensors]
    if comm.size == 1 or not tensors:
        return list(tensors)
    out = [None] * len(tensors)
    for k, idx in enumerate(_buckets(tensors, bucket_bytes)):
        group = [tensors[i] for i in idx]
        key = (id(comm), op, mean, k, tuple((t.dtype.name, tuple(t.shape)) for t in group))
        bucket = None if _C.is_tracing() else _eager_buckets.get(key)
        if bucket is None:
            bucket = _Bucket(comm, op, mean, f"{name} bucket {k}")
            if not _C.is_tracing():
                _eager_buckets[key] = bucket
        if _C.is_tracing():
            shapes = [None if t.shape is None else tuple(t.shape) for t in group]
            cb = _py._Callback(bucket, [t.dtype for t in group], shapes, False)
            reduced = _py._traced(_py._PY_FUNC, cb, group, f"{name}_{k}")
        else:
            reduced = bucket(*group)
        for i, r in zip(idx, reduced):
            out[i] = r
    return out
