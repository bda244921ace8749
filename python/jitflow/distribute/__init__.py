"""jf.distribute: TF's tf.distribute strategy API for data-parallel training, with MPI (mpi4py
over Open MPI) as the collective engine between processes (docs/distribute.md). A library on
top of the data layer: optimizers and checkpoints below reach it through the hooks it installs."""
from ..core.export import export
from ..core.export import missing as _missing
from ..ops import basic_ops as _ops
from .allreduce_op import all_reduce
from .mirrored import MirroredStrategy, PerReplica
from .strategy import (
    CommunicationImplementation,
    CommunicationOptions,
    InputContext,
    MultiWorkerMirroredStrategy,
    ReduceOp,
    ReplicaContext,
    Strategy,
    StrategyExtended,
    ValueContext,
    get_replica_context,
    get_strategy,
    has_strategy,
    in_cross_replica_context,
)

export("distribute.experimental.CommunicationOptions")(CommunicationOptions)
export("distribute.experimental.CommunicationImplementation")(CommunicationImplementation)
export("distribute.experimental.CollectiveCommunication")(CommunicationImplementation)
export("distribute.experimental.MultiWorkerMirroredStrategy")(MultiWorkerMirroredStrategy)
export("distribute.experimental.ValueContext")(ValueContext)


@export("nn.compute_average_loss")
def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """The per-example losses summed and divided by the global batch size (by default this
    replica's batch size times the replicas in sync), so that summing the replicas' gradients
    gives the gradient of the global batch's mean loss."""
    loss = _ops.convert_to_tensor(per_example_loss)
    if sample_weight is not None:
        loss = loss * _ops.cast(sample_weight, loss.dtype)
    total = _ops.reduce_sum(loss)
    if global_batch_size is None:
        replicas = get_strategy().num_replicas_in_sync
        global_batch_size = _ops.cast(_ops.shape(loss)[0] * replicas, loss.dtype)
    return total / _ops.cast(global_batch_size, loss.dtype)


# Imported on its own (`import jitflow.distribute`) before jf.distribute was used: a name not found
# installs what jitflow exports (jf.distribute.experimental, ...) and looks again.
__getattr__ = _missing("distribute")

__all__ = [
    "CommunicationImplementation", "CommunicationOptions", "InputContext", "MirroredStrategy",
    "MultiWorkerMirroredStrategy", "PerReplica", "ReduceOp", "ReplicaContext", "Strategy", "StrategyExtended",
    "ValueContext", "all_reduce", "compute_average_loss", "get_replica_context", "get_strategy", "has_strategy",
    "in_cross_replica_context",
]
