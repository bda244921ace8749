"""MirroredStrategy: synchronous replicas inside one process, one per local device (by default
CPU:0 alone, or every GPU; several CPU replicas once jf.config.set_logical_device_configuration
has split the CPU, as TF's guides do to try multi-replica code on one machine).

The replicas of one process share its variables (one copy is already "mirrored"), so the summed
gradients are applied once, by replica 0. With more than one replica, run() executes fn on one
thread per replica, taking turns: a replica runs until it reaches a collective, where it waits
(handing over the turn) until every replica has deposited its value; the last one to arrive
combines them. Taking turns keeps jitflow's eager runtime single-threaded, as it is outside a
strategy, while each replica keeps its own GradientTape (tapes are per thread). Inside a
jf.function the replica threads enter the caller's trace (one at a time, while the caller
waits), so every replica's ops land in the one graph, on its device, and the collectives become
sums of the replicas' symbolic values: ops of the graph that compile like any other."""
import threading

import numpy as np

from .. import _C
from ..core import config as _config
from ..core import errors as _errors
from ..core import nest
from ..core.device import device as _device
from ..ops import basic_ops as _ops
from .strategy import ReduceOp, ReplicaContext, Strategy, ValueContext, _reduce_op, _state


class PerReplica:
    """One value per replica (what run() returns and a distributed dataset yields)."""

    def __init__(self, values):
        self.values = tuple(values)

    def __repr__(self):
        return "PerReplica:{" + ", ".join(f"\n  {i}: {v!r}" for i, v in enumerate(self.values)) + "\n}"


def _canonical(name):
    """'cpu:1', '/CPU:1', '/device:CPU:1', '/job:localhost/replica:0/task:0/device:CPU:1' ->
    ('CPU', 1)."""
    last = name.split("/")[-1]
    if last.lower().startswith("device:"):
        last = last[7:]
    kind, _, index = last.rpartition(":")
    if not kind or not index.isdigit():
        raise ValueError(f"Unrecognised device name {name!r} for MirroredStrategy")
    return kind.upper(), int(index)


class _Rendezvous:
    """Where the replicas' collectives meet. Its lock is the turn: the replica holding it runs."""

    def __init__(self, n):
        self.n = n
        self.turn = threading.Condition()
        self.slots = [None] * n
        self.arrived = 0
        self.generation = 0
        self.result = None
        self.failed = None

    def exchange(self, replica_id, value, combine):
        """Deposits value; returns combine(all values) once every replica has deposited."""
        self.slots[replica_id] = value
        self.arrived += 1
        generation = self.generation
        if self.arrived == self.n:
            self.result = combine(list(self.slots))
            self.arrived, self.slots = 0, [None] * self.n
            self.generation += 1
            self.turn.notify_all()
        else:
            while self.generation == generation and self.failed is None:
                self.turn.wait()
        if self.failed is not None:
            raise _errors.UnavailableError(f"jf.distribute.MirroredStrategy: replica {self.failed} failed, so "
                                           f"replica {replica_id} cannot finish its collective")
        return self.result


class MirroredStrategy(Strategy):
    """Synchronous training on the local devices of one process."""

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is None:
            devices = [d.name for d in _config.list_logical_devices("GPU")] or ["/device:CPU:0"]
        names = [d.name if hasattr(d, "name") else str(d) for d in devices]
        if not names:
            raise ValueError("MirroredStrategy: `devices` cannot be empty")
        known = {_canonical(d.name) for d in _config.list_logical_devices()}
        parsed = [_canonical(n) for n in names]
        for n, key in zip(names, parsed):
            if key not in known:
                raise ValueError(f"MirroredStrategy: device {n!r} does not exist (logical devices: "
                                 f"{sorted(d.name for d in _config.list_logical_devices())})")
        if len(set(parsed)) != len(parsed):
            raise ValueError(f"MirroredStrategy: duplicate devices in {names}")
        super().__init__([f"/job:localhost/replica:0/task:0/device:{k}:{i}" for k, i in parsed])
        self._rendezvous = None

    # ---- running the replicas ---------------------------------------------------------------
    def _run_replicas(self, fn, args, kwargs):
        n = len(self._devices)
        if n == 1:
            return super()._run_replicas(fn, _select(args, 0), _select(kwargs, 0))
        trace = _C.current_trace_address() if _C.is_tracing() else 0
        rendezvous = _Rendezvous(n)
        self._rendezvous = rendezvous
        results, failures = [None] * n, [None] * n
        scopes = list(_state.scopes)

        def replica(i):
            with rendezvous.turn:
                _state.scopes = list(scopes)
                _state.replicas = [ReplicaContext(self, i)]
                if trace:
                    _C.enter_trace_address(trace)
                try:
                    with _device(self._devices[i].split("/")[-1].replace("device:", "")):
                        results[i] = fn(*_select(args, i), **_select(kwargs, i))
                except BaseException as e:  # noqa: BLE001 -- re-raised on the caller's thread
                    failures[i] = e
                    rendezvous.failed = i
                    rendezvous.turn.notify_all()
                finally:
                    if trace:
                        _C.exit_trace()

        threads = [threading.Thread(target=replica, args=(i,), name=f"replica_{i}") for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self._rendezvous = None
        for e in failures:
            if e is not None and not isinstance(e, _errors.UnavailableError):
                raise e
        for e in failures:
            if e is not None:
                raise e
        return nest.map_structure(lambda *vs: PerReplica(vs), *results) if results[0] is not None else None

    def _all_reduce(self, tensors, reduce_op, options):
        tensors = [_C.convert_to_tensor(t) for t in tensors]
        if len(self._devices) == 1:
            return tensors
        ctx = _state.replicas[-1] if _state.replicas else None
        if ctx is None or self._rendezvous is None:
            raise RuntimeError("MirroredStrategy: all_reduce of plain tensors outside run(); reduce a "
                               "per-replica value with strategy.reduce")
        return self._rendezvous.exchange(ctx._replica_id, tensors,
                                         lambda slots: _combine(slots, reduce_op, len(self._devices)))

    def _aggregate_in_replica(self, grads, replica_id):
        summed = super()._aggregate_in_replica(grads, replica_id)
        return summed if replica_id == 0 or len(self._devices) == 1 else None

    # ---- cross-replica values ---------------------------------------------------------------
    def reduce(self, reduce_op, value, axis=None):
        reduce_op = _reduce_op(reduce_op)
        flat = nest.flatten(value)
        if not any(isinstance(v, PerReplica) for v in flat):
            return super().reduce(reduce_op, value, axis)
        out = []
        for v in flat:
            vals = [_C.convert_to_tensor(x) for x in (v.values if isinstance(v, PerReplica) else (v,) * len(self._devices))]
            if axis is not None:
                count = sum(int(x.shape[axis]) for x in vals)
                total = _combine([[_ops.reduce_sum(x, axis=axis)] for x in vals], ReduceOp.SUM, len(vals))[0]
                out.append(total / _ops.cast(count, total.dtype) if reduce_op is ReduceOp.MEAN else total)
            else:
                out.append(_combine([[x] for x in vals], reduce_op, len(vals))[0])
        return nest.pack_sequence_as(value, out)

    def gather(self, value, axis):
        def one(v):
            if isinstance(v, PerReplica):
                return _ops.concat([_C.convert_to_tensor(x) for x in v.values], axis=axis)
            return super(MirroredStrategy, self).gather(v, axis)
        return nest.map_structure(one, value)

    def experimental_local_results(self, value):
        if isinstance(value, PerReplica):
            return value.values
        return (value,)

    def experimental_distribute_dataset(self, dataset, options=None):
        """Each global batch split into one part per replica (rows in order), as PerReplica."""
        n = len(self._devices)
        if n == 1:
            return dataset

        def split(t, i):
            rows = _ops.shape(t)[0]
            return t[rows * i // n:rows * (i + 1) // n]

        def per_replica(*e):
            e = e if len(e) > 1 else e[0]
            return tuple(nest.map_structure(lambda t, i=i: split(t, i), e) for i in range(n))

        return _PerReplicaDataset(dataset.map(per_replica), n)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """dataset_fn(InputContext) once (one input pipeline); its consecutive elements go to
        replicas 0, 1, ..., as TF hands them out."""
        dataset = super().distribute_datasets_from_function(dataset_fn, options)
        return dataset if len(self._devices) == 1 else _PerReplicaDataset(dataset, len(self._devices), grouped=True)


    def experimental_distribute_values_from_function(self, value_fn):
        """value_fn(ValueContext) for each replica, as one PerReplica value (a nest of them when
        value_fn returns a nest)."""
        n = len(self._devices)
        if n == 1:
            return value_fn(ValueContext(0, 1))
        values = [value_fn(ValueContext(i, n)) for i in range(n)]
        return nest.map_structure(lambda *vs: PerReplica(vs), *values)

    def _local_batch(self, batch):
        """A global batch split into one part per replica (rows in order), as PerReplica leaves."""
        n = len(self._devices)
        if n == 1:
            return batch

        def split(t):  # (in a trace with an unknown batch dim, the bounds are ops)
            known = t.shape is not None and t.shape[0] is not None
            rows = int(t.shape[0]) if known else _ops.shape(t)[0]
            return PerReplica(t[rows * i // n:rows * (i + 1) // n] for i in range(n))

        return nest.map_structure(split, batch)


class _PerReplicaDataset:
    """A dataset whose elements are one part per replica, iterated as PerReplica values."""

    def __init__(self, dataset, n, grouped=False):
        self._dataset, self._n, self._grouped = dataset, n, grouped

    def __iter__(self):
        if not self._grouped:
            for parts in self._dataset:
                yield nest.map_structure(lambda *vs: PerReplica(vs), *parts)
            return
        parts = []
        for element in self._dataset:
            parts.append(element)
            if len(parts) == self._n:
                yield nest.map_structure(lambda *vs: PerReplica(vs), *parts)
                parts = []


def _select(value, i):
    """The replica-i part of an argument nest (PerReplica leaves), others passed as they are."""
    if isinstance(value, dict):
        return {k: _select(v, i) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_select(v, i) for v in value)
    return value.values[i] if isinstance(value, PerReplica) else value


def _combine(slots, reduce_op, n):
    """Each position summed over the replicas' lists, in the tensors' dtype (as the replicas'
    devices would sum them), divided by n for MEAN. In a trace: the same sums as ops."""
    if _C.is_tracing():
        out = []
        for parts in zip(*slots):
            total = parts[0]
            for p in parts[1:]:
                total = total + p
            if reduce_op is ReduceOp.MEAN:
                total = total / _ops.cast(n, total.dtype) if total.dtype.is_floating else total // n
            out.append(total)
        return out
    out = []
    for parts in zip(*slots):
        total = np.sum([np.asarray(p.numpy()) for p in parts], axis=0, dtype=np.asarray(parts[0].numpy()).dtype)
        if reduce_op is ReduceOp.MEAN:
            total = (total / n).astype(total.dtype) if np.issubdtype(total.dtype, np.floating) else total // n
        out.append(_C.convert_to_tensor(np.asarray(total)))
    return out
