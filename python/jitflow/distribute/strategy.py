"""TF's strategy API (tf.distribute): MirroredStrategy over the replicas of one process and
MultiWorkerMirroredStrategy over MPI processes, their contexts, and the default strategy.

One replica runs per process under MultiWorkerMirroredStrategy (each worker owns a CPU or a
GPU), so a replica's values are plain tensors and "per-replica" values have one local result.
Variables created in scope() are mirrored: when the scope closes, and before each run(), the
variables created in it since the last synchronisation are checked to have the same shapes and
dtypes on every worker and take rank 0's values (a broadcast). Gradients applied by an optimizer
inside run() are summed across the workers first (TF's aggregation in apply_gradients), so every
worker applies the same update and the mirrors stay equal."""
import contextlib
import enum
import threading

import numpy as np

from .. import _C
from ..core import errors as _errors
from ..core import nest
from ..ops import basic_ops as _ops
from ..ops import variables as _variables
from ..state import checkpoint as _checkpoint
from ..state import optimizers as _optimizers
from . import allreduce_op as _ar
from . import collective


class ReduceOp(enum.Enum):
    """How values are combined across replicas."""
    SUM = "SUM"
    MEAN = "MEAN"


class CommunicationImplementation(enum.Enum):
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class CommunicationOptions:
    """TF's collective options. bytes_per_pack sets the gradient bucket size (0: the default,
    64 MiB); timeout_seconds bounds every collective (None: JF_DISTRIBUTE_TIMEOUT, 60 s);
    implementation is accepted (MPI does the work on CPUs whichever is named)."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None, implementation=CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be non-negative, got {bytes_per_pack}")
        self.bytes_per_pack = int(bytes_per_pack)
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def merge(self, options):
        merged = CommunicationOptions(self.bytes_per_pack, self.timeout_seconds, self.implementation)
        if options is not None:
            if options.bytes_per_pack:
                merged.bytes_per_pack = options.bytes_per_pack
            if options.timeout_seconds is not None:
                merged.timeout_seconds = options.timeout_seconds
        return merged


class InputContext:
    """What distribute_datasets_from_function tells the dataset function: how many input
    pipelines (workers) there are and which one this is."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible by "
                             f"`num_replicas_in_sync` {self.num_replicas_in_sync}")
        return global_batch_size // self.num_replicas_in_sync


class ValueContext:
    """What experimental_distribute_values_from_function tells its function: which replica the
    value is for."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


class _State(threading.local):
    def __init__(self):
        self.scopes = []    # strategies whose scope() is open, innermost last
        self.replicas = []  # replica contexts of the run() calls in progress


_state = _State()


class ReplicaContext:
    """The context of fn inside strategy.run: its replica id and the collectives."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group

    strategy = property(lambda self: self._strategy)
    num_replicas_in_sync = property(lambda self: self._strategy.num_replicas_in_sync)

    @property
    def replica_id_in_sync_group(self):
        return _ops.constant(self._replica_id, dtype="int32")

    def all_reduce(self, reduce_op, value, options=None):
        """value (a nest of tensors) summed or averaged over every replica."""
        reduce_op = _reduce_op(reduce_op)
        flat = nest.flatten(value)
        out = self._strategy._all_reduce(flat, reduce_op, options)
        return nest.pack_sequence_as(value, out)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        with _cross_replica(self._strategy):
            return merge_fn(self._strategy, *args, **(kwargs or {}))


def _reduce_op(op):
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ("SUM", "MEAN"):
        return ReduceOp[op.upper()]
    raise ValueError(f"reduce_op must be a jf.distribute.ReduceOp (SUM or MEAN), got {op!r}")


@contextlib.contextmanager
def _cross_replica(strategy):
    saved = _state.replicas
    _state.replicas = []
    try:
        yield
    finally:
        _state.replicas = saved


class StrategyExtended:
    """strategy.extended: the worker-level facts TF puts there."""

    def __init__(self, strategy):
        self._strategy = strategy

    @property
    def worker_devices(self):
        return tuple(self._strategy._devices)

    @property
    def parameter_devices(self):
        return tuple(self._strategy._devices)

    @property
    def should_checkpoint(self):
        return self._strategy._rank == 0

    should_save_summary = should_checkpoint

    @property
    def experimental_between_graph(self):
        return self._strategy._num_workers > 1

    experimental_should_init = property(lambda self: True)

    def _in_multi_worker_mode(self):
        return self._strategy._num_workers > 1


class Strategy:
    """The common face: scope, run, reduce, datasets. Subclasses say how many replicas there
    are and how their values are combined."""

    def __init__(self, devices, options=None):
        self._devices = list(devices)
        self._options = options or CommunicationOptions()
        self._extended = StrategyExtended(self)
        self._synced = set()       # ids of variables already mirrored
        self._watch_from = None    # variable ids that existed when scope() opened
        self._scope_depth = 0

    _rank = 0
    _num_workers = 1

    extended = property(lambda self: self._extended)
    num_replicas_in_sync = property(lambda self: len(self._devices) * self._num_workers)

    # ---- scope and mirrored variables ---------------------------------------------------
    @contextlib.contextmanager
    def scope(self):
        """Variables created inside are mirrored; get_strategy() returns this strategy."""
        if _state.scopes and _state.scopes[-1] is not self and not isinstance(_state.scopes[-1], _DefaultStrategy):
            raise ValueError("Mixing different jf.distribute.Strategy objects: a scope of one strategy "
                             "is open while another's is entered.")
        if self._scope_depth == 0:
            self._watch_from = set(_variables._by_id.keys())
        self._scope_depth += 1
        _state.scopes.append(self)
        try:
            yield self
        finally:
            _state.scopes.pop()
            self._scope_depth -= 1
            if self._scope_depth == 0 and not _C.is_tracing():
                self._mirror_new_variables()

    def _mirror_new_variables(self):
        """Checks and broadcasts the variables created in scope() since the last call."""
        if self._watch_from is None:
            return
        new = [v for i, v in sorted(_variables._by_id.items()) if i not in self._watch_from and i not in self._synced]
        if not new:
            return
        self._sync_variables(new)
        self._synced.update(v._id for v in new)

    def _sync_variables(self, variables):
        pass  # one process: every replica reads the same variable

    # ---- running replicas ---------------------------------------------------------------
    def run(self, fn, args=(), kwargs=None, options=None):
        """fn(*args, **kwargs) in each replica's context; returns its result (per-replica
        values: one local result per worker)."""
        if not _C.is_tracing():
            self._mirror_new_variables()
        kwargs = kwargs or {}
        with contextlib.ExitStack() as stack:
            if self not in _state.scopes:
                stack.enter_context(self.scope())
            out = self._run_replicas(fn, args, kwargs)
        # Variables fn created (a model built on its first call, optimizer slots) are mirrored
        # now; in a trace their initial values already exist eagerly, so the workers agree
        # before the traced step first runs.
        with _C.init_scope():
            self._mirror_new_variables()
        return out

    def _run_replicas(self, fn, args, kwargs):
        _state.replicas.append(ReplicaContext(self, self._rank))
        try:
            return fn(*args, **kwargs)
        finally:
            _state.replicas.pop()

    def _aggregate_in_replica(self, grads, replica_id):
        if self.num_replicas_in_sync == 1:
            return grads
        return self._all_reduce(grads, ReduceOp.SUM, None)

    def reduce(self, reduce_op, value, axis=None):
        """A per-replica value reduced across replicas (and along axis within each, first)."""
        reduce_op = _reduce_op(reduce_op)
        flat = [_C.convert_to_tensor(v) for v in nest.flatten(value)]
        counts = None
        if axis is not None:
            counts = [_ops.cast(_ops.shape(v)[axis], v.dtype) for v in flat]
            flat = [_ops.reduce_sum(v, axis=axis) for v in flat]
        if reduce_op is ReduceOp.MEAN and axis is not None:
            sums = self._all_reduce(flat + counts, ReduceOp.SUM, None)
            n = len(flat)
            out = [s / c for s, c in zip(sums[:n], sums[n:])]
        else:
            out = self._all_reduce(flat, reduce_op, None)
        return nest.pack_sequence_as(value, out)

    def experimental_local_results(self, value):
        return (value,)

    def gather(self, value, axis):
        """The replicas' values concatenated along axis (one replica: the value itself)."""
        return nest.map_structure(lambda v: self._gather_one(_C.convert_to_tensor(v), axis), value)

    def _gather_one(self, tensor, axis):
        return tensor

    # ---- datasets -----------------------------------------------------------------------
    def experimental_distribute_dataset(self, dataset, options=None):
        """Each worker reads its part of every global batch: rows [rank*B/N, (rank+1)*B/N)
        (TF's rebatching, then sharding by data)."""
        if self._num_workers == 1:
            return dataset
        rank, size = self._rank, self._num_workers

        def rows(t):
            n = _ops.shape(t)[0]
            return t[n * rank // size:n * (rank + 1) // size]

        return dataset.map(lambda *e: nest.map_structure(rows, e if len(e) > 1 else e[0]))

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """dataset_fn(InputContext) on each worker; it shards and batches per replica itself."""
        ctx = InputContext(self._num_workers, self._rank, self.num_replicas_in_sync)
        return dataset_fn(ctx)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn):
        """value_fn(ValueContext) for this worker's replica (its rank among the replicas)."""
        return value_fn(ValueContext(self._rank, self.num_replicas_in_sync))

    # ---- what Keras's fit asks of a strategy ---------------------------------------------
    def _local_batch(self, batch):
        """This worker's part of a global batch (a nest of tensors): rows [rank*B/N, (rank+1)*B/N),
        as experimental_distribute_dataset splits it."""
        if self._num_workers == 1:
            return batch
        rank, size = self._rank, self._num_workers

        def rows(t):
            n = int(t.shape[0]) if t.shape is not None and t.shape[0] is not None else int(_ops.shape(t)[0])
            return t[n * rank // size:n * (rank + 1) // size]

        return nest.map_structure(rows, batch)

    def _rank0_value(self, array):
        """Rank 0's numpy array on every worker (what one process decides for all, such as a
        shuffling seed)."""
        return array

    @contextlib.contextmanager
    def _summed_variables(self, variables):
        """Inside, each variable holds its sum over the workers (TF's SUM-aggregated sync-on-read
        metric variables, read); afterwards its own worker's value again."""
        yield

    # ---- collectives --------------------------------------------------------------------
    def _all_reduce(self, tensors, reduce_op, options):
        return [_C.convert_to_tensor(t) for t in tensors]  # one replica in all

    def __enter__(self):
        raise RuntimeError("Strategy is not a context manager: use `with strategy.scope():`")


class _DefaultStrategy(Strategy):
    """The strategy in effect outside any scope(): one replica, no communication."""

    def __init__(self):
        super().__init__(["/job:localhost/replica:0/task:0/device:CPU:0"])


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data-parallel training over the processes of an MPI job (`mpirun -np N
    python train.py`), one replica each; collectives go through MPI."""

    def __init__(self, cluster_resolver=None, communication_options=None):
        options = communication_options or CommunicationOptions()
        self._comm = collective.world(options.timeout_seconds)
        super().__init__([f"/job:worker/replica:0/task:{self._comm.rank}/device:CPU:0"], options)
        self._rank = self._comm.rank
        self._num_workers = self._comm.size
        _ACTIVE[0] = self

    @property
    def cluster_resolver(self):
        return _ClusterResolver(self._rank, self._num_workers)

    def _all_reduce(self, tensors, reduce_op, options):
        opts = self._options.merge(options)
        return _ar.all_reduce(tensors, "sum", mean=reduce_op is ReduceOp.MEAN,
                              bucket_bytes=opts.bytes_per_pack or _ar.DEFAULT_BUCKET_BYTES, comm=self._comm)

    def _gather_one(self, tensor, axis):
        if _C.is_tracing():
            raise _errors.UnimplementedError("MultiWorkerMirroredStrategy.gather runs eagerly only")
        local = np.asarray(tensor.numpy())
        header = f"{local.dtype.str};{','.join(map(str, local.shape))};".encode()
        parts = []
        for data in self._comm.allgather_bytes(header + local.tobytes()):
            dtype, shape, body = data.split(b";", 2)
            dims = tuple(int(d) for d in shape.decode().split(",") if d)
            parts.append(np.frombuffer(body, np.dtype(dtype.decode())).reshape(dims))
        return _C.convert_to_tensor(np.concatenate(parts, axis=axis))

    def _rank0_value(self, array):
        array = np.array(array, order="C")
        return self._comm.broadcast_(array, root=0)

    @contextlib.contextmanager
    def _summed_variables(self, variables):
        variables = list(variables)
        local = [np.array(v.numpy()) for v in variables]
        summed = _ar.all_reduce(local, "sum", comm=self._comm, name="MetricSum")
        for v, total in zip(variables, summed):
            v.assign(total)
        try:
            yield
        finally:
            for v, value in zip(variables, local):
                v.assign(value)

    def _sync_variables(self, variables):
        layout = "\n".join(f"{v.name} {v.dtype.name}{list(v.shape)}" for v in variables)
        layouts = [b.decode() for b in self._comm.allgather_bytes(layout.encode())]
        if len(set(layouts)) > 1:
            per_rank = "\n".join(f"rank {r}:\n  " + text.replace("\n", "\n  ") for r, text in enumerate(layouts))
            raise _errors.InvalidArgumentError(
                "jf.distribute.MultiWorkerMirroredStrategy: the workers created different variables in "
                f"scope() (names, dtypes or shapes differ), so they cannot be mirrored:\n{per_rank}")
        for v in variables:
            value = np.array(v.numpy(), order="C")  # a writable copy: the broadcast lands in it
            self._comm.broadcast_(value, root=0)
            if self._rank != 0:
                v.assign(value)


class _ClusterResolver:
    def __init__(self, rank, size):
        self.task_type, self.task_id, self._size = "worker", rank, size

    def cluster_spec(self):
        return {"worker": [f"mpi-rank-{i}" for i in range(self._size)]}

    def num_accelerators(self, *args, **kwargs):
        return {}


_DEFAULT = _DefaultStrategy()
_ACTIVE = [None]  # the multi-worker strategy of this process, if any (for checkpoints)
_warned_outside_run = []


def get_strategy():
    """The strategy whose scope() is open (or run() in progress), else the default one."""
    if _state.replicas:
        return _state.replicas[-1].strategy
    return _state.scopes[-1] if _state.scopes else _DEFAULT


def has_strategy():
    return get_strategy() is not _DEFAULT


def get_replica_context():
    """The replica context inside run() (or outside any strategy: the default one); None in
    a strategy's cross-replica context (inside scope(), outside run())."""
    if _state.replicas:
        return _state.replicas[-1]
    if _state.scopes and _state.scopes[-1] is not _DEFAULT:
        return None
    return ReplicaContext(_DEFAULT, 0)


def in_cross_replica_context():
    return get_replica_context() is None


def _aggregate_gradients(grads):
    """Called by optimizer.apply_gradients: inside run() of a multi-worker strategy the
    gradients are summed across the workers (bucketed), as TF's optimizers aggregate them."""
    if not _state.replicas:
        active = _ACTIVE[0]
        if active is not None and active._num_workers > 1 and not _warned_outside_run:
            _warned_outside_run.append(True)
            _errors.warn("optimizer.apply_gradients ran outside strategy.run() of a MultiWorkerMirroredStrategy: "
                         "its gradients are not summed across the workers, so their variables drift apart "
                         "(Keras's fit does not go through strategy.run yet: see docs/distribute.md)", UserWarning)
        return grads
    ctx = _state.replicas[-1]
    return ctx.strategy._aggregate_in_replica(grads, ctx._replica_id)


@contextlib.contextmanager
def _checkpoint_writer():
    """Only rank 0 of a multi-worker job writes checkpoint files; the others wait for it, so a
    restore that follows on any worker reads the finished file."""
    strategy = _ACTIVE[0]
    if strategy is None or strategy._num_workers == 1:
        yield True
        return
    try:
        yield strategy._rank == 0
    finally:
        strategy._comm.barrier()


_optimizers._GRADIENT_AGGREGATOR[0] = _aggregate_gradients
_checkpoint._WRITE_GATE[0] = _checkpoint_writer
