"""The cross-worker all-reduce as an op: a CollectiveAllReduce node per bucket, eagerly and in
a traced function alike, whose kernel (cpp/kernels/collective_ops.cc) hands the tensors' buffers
to MPI's Iallreduce and polls it, with no element passing through Python.

The node is stateful and never compiled, so jit_scope clusters and auto-clustering compile the
arithmetic on either side of it and the runtime runs the all-reduce between them; a
jit_compile=True function that contains one raises, naming the node, because it cannot compile
the whole function (see docs/distribute.md). Tensors are fused into buckets (Horovod's tensor
fusion): the gradients of many variables, of one dtype, are copied into one contiguous buffer,
reduced by one MPI_Iallreduce, and handed back as views of the reduced buffer, so a step costs a
few collectives instead of one per variable. Every rank's layout of a bucket (shapes and dtype)
is compared when the node is traced (eagerly: the first time a layout runs), so ranks running
different programs fail with the shapes of each rank rather than reducing mismatched buffers.

The node's attrs are mpi4py's integer handles of the communicator, datatype and op: jitflow does
not link MPI, the kernel finds the functions of the libmpi that mpi4py loaded."""
import numpy as np

from .. import _C
from ..core import errors as _errors
from . import collective

DEFAULT_BUCKET_BYTES = 64 << 20
_OP = _C.op_id("CollectiveAllReduce")
_MPI_TYPES = {"float32": "FLOAT", "float64": "DOUBLE", "int32": "INT32_T", "int64": "INT64_T"}
_checked_eager = set()  # eager bucket layouts every rank has agreed on


def _check_layout(comm, name, group):
    """Raises InvalidArgumentError, listing each rank's shapes, unless every rank reduces the
    same shapes and dtype in this bucket."""
    layout = f"{name}: " + ", ".join(f"{t.dtype.name}{list(t.shape)}" for t in group)
    layouts = [b.decode() for b in comm.allgather_bytes(layout.encode())]
    if len(set(layouts)) > 1:
        per_rank = "\n".join(f"  rank {r}: {text}" for r, text in enumerate(layouts))
        raise _errors.InvalidArgumentError(
            "jf.distribute: the workers all-reduce tensors of different shapes or dtypes (they "
            f"run different programs or build different models):\n{per_rank}")


def _attrs(comm, op, mean, dtype):
    mpi = comm.MPI
    if dtype.name not in _MPI_TYPES:
        raise _errors.InvalidArgumentError(
            f"jf.distribute all-reduces float32, float64, int32 and int64 tensors, got {dtype.name}")
    return {"comm": mpi._handleof(comm.comm), "notices": mpi._handleof(comm.notices),
            "datatype": mpi._handleof(getattr(mpi, _MPI_TYPES[dtype.name])),
            "op": mpi._handleof({"sum": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}[op]),
            "byte_type": mpi._handleof(mpi.BYTE), "rank": comm.rank, "size": comm.size,
            "timeout": float(comm.timeout), "mean": bool(mean)}


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
        bucket = f"{name} bucket {k}"
        if _C.is_tracing():
            _check_layout(comm, bucket, group)
        else:
            key = (id(comm), op, mean, k, tuple((t.dtype.name, tuple(t.shape)) for t in group))
            if key not in _checked_eager:
                _check_layout(comm, bucket, group)
                _checked_eager.add(key)
        reduced = _C.execute_n(_OP, group, _attrs(comm, op, mean, group[0].dtype), f"{name}_{k}")
        for i, r in zip(idx, reduced):
            out[i] = r
    return out
