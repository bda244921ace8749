"""tf.data.Options: the option groups TF programs set on a pipeline (threading, autotune,
distribution, optimization, determinism), with TF 2.21's names, defaults and refusal of
unknown names; Dataset.with_options keeps them with the pipeline and options() merges them.
jitflow's pipeline takes no tuning from them (its thread counts and buffers are its own), so
they are accepted and reported, as TF reports them."""
import enum
from typing import ClassVar

from ..core.export import export


@export("data.experimental.AutoShardPolicy")
class AutoShardPolicy(enum.IntEnum):
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


@export("data.experimental.ExternalStatePolicy")
class ExternalStatePolicy(enum.IntEnum):
    WARN = 0
    IGNORE = 1
    FAIL = 2


@export("data.experimental.AutotuneAlgorithm")
class AutotuneAlgorithm(enum.IntEnum):
    DEFAULT = 0
    HILL_CLIMB = 1
    GRADIENT_DESCENT = 2
    MAX_PARALLELISM = 3
    STAGE_BASED = 4


class _Group:
    """A set of named options, None until set; setting an unknown name is TF's AttributeError."""

    _defaults: ClassVar[dict] = {}
    _groups: ClassVar[dict] = {}

    def __init__(self):
        object.__setattr__(self, "_values", dict(self._defaults))
        object.__setattr__(self, "_set", set())
        for name, cls in self._groups.items():
            object.__setattr__(self, name, cls())

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        self._values[name] = value
        self._set.add(name)

    def __eq__(self, other):
        return type(self) is type(other) and self._values == other._values and all(
            getattr(self, g) == getattr(other, g) for g in self._groups)

    __hash__ = None  # compared by value, so unhashable, as TF's Options

    def _merge_from(self, other):
        for name in other._set:
            setattr(self, name, other._values[name])
        for g in self._groups:
            getattr(self, g)._merge_from(getattr(other, g))

    def __repr__(self):
        return f"{type(self).__name__}({self._values})"


@export("data.ThreadingOptions", "data.experimental.ThreadingOptions")
class ThreadingOptions(_Group):
    _defaults: ClassVar[dict] = {"max_intra_op_parallelism": None, "private_threadpool_size": None}


@export("data.experimental.AutotuneOptions")
class AutotuneOptions(_Group):
    _defaults: ClassVar[dict] = {"autotune_algorithm": None, "cpu_budget": None, "enabled": None, "initial_parallelism": None,
                 "min_parallelism": None, "ram_budget": None}


@export("data.experimental.DistributeOptions")
class DistributeOptions(_Group):
    _defaults: ClassVar[dict] = {"auto_shard_policy": AutoShardPolicy.AUTO, "num_devices": None}


@export("data.experimental.OptimizationOptions")
class OptimizationOptions(_Group):
    _defaults: ClassVar[dict] = {k: None for k in (
        "apply_default_optimizations", "filter_fusion", "filter_parallelization", "inject_prefetch",
        "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion", "map_parallelization", "noop_elimination",
        "parallel_batch", "seq_interleave_prefetch", "shuffle_and_repeat_fusion")}


@export("data.experimental.ServiceOptions")
class ServiceOptions(_Group):
    _defaults: ClassVar[dict] = {"pinned": None}


@export("data.Options")
class Options(_Group):
    """TF's tf.data.Options: set what you need, then dataset.with_options(options)."""

    _defaults: ClassVar[dict] = {k: None for k in (
        "dataset_name", "deterministic", "experimental_external_state_policy", "experimental_slack",
        "experimental_symbolic_checkpoint", "experimental_warm_start", "framework_type")}
    _groups: ClassVar[dict] = {"autotune": AutotuneOptions, "experimental_distribute": DistributeOptions,
               "experimental_optimization": OptimizationOptions, "experimental_service": ServiceOptions,
               "threading": ThreadingOptions}

    # TF's older names for two of them.
    @property
    def experimental_deterministic(self):
        return self.deterministic

    @experimental_deterministic.setter
    def experimental_deterministic(self, value):
        self.deterministic = value

    @property
    def experimental_threading(self):
        return self.threading

    def __setattr__(self, name, value):
        if name == "experimental_deterministic":
            name = "deterministic"
        super().__setattr__(name, value)

    def merge(self, options):
        """A new Options with this one's settings, then those `options` sets (TF's merge)."""
        out = Options()
        out._merge_from(self)
        out._merge_from(options)
        return out
