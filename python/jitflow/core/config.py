"""jf.config: threading and device queries."""
import operator
import os
from types import SimpleNamespace

from .. import _C
from .errors import InvalidArgumentError, _at_caller


def _set_threads(n):
    """0 (or None): one thread per core, as TF. Counts past _C.max_threads are refused, not
    tried (a billion workers cannot be started)."""
    n = operator.index(n) if n is not None else 0
    if n == 0:
        n = min(os.cpu_count() or 1, _C.max_threads)
    if not 1 <= n <= _C.max_threads:
        raise InvalidArgumentError(_at_caller(f"the number of intra-op threads must be in [1, {_C.max_threads}] "
                                              f"(0: one per core), got {n}"))
    _C.set_num_threads(n)


threading = SimpleNamespace(
    set_intra_op_parallelism_threads=_set_threads,
    get_intra_op_parallelism_threads=_C.num_threads,
)


class PhysicalDevice(SimpleNamespace):
    pass


def list_physical_devices(device_type=None):
    """CPU always; GPUs when the CUDA driver (libcuda.so.1) loads and reports devices."""
    devs = [PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")]
    status = _C.cuda_status()
    if status["available"]:
        devs += [PhysicalDevice(name=f"/physical_device:GPU:{i}", device_type="GPU")
                 for i in range(status["device_count"])]
    return [d for d in devs if device_type is None or d.device_type == device_type]


def run_functions_eagerly(run_eagerly):
    """Debugging switch: jf.function calls run the Python body eagerly instead of the graph."""
    _C.set_run_functions_eagerly(bool(run_eagerly))


def functions_run_eagerly():
    return _C.functions_run_eagerly()


class _Optimizer:
    """jf.config.optimizer: set_jit(True) turns on auto-clustering for functions traced after."""

    @staticmethod
    def set_jit(enabled):
        _C.set_auto_jit(bool(enabled) and enabled != "off")

    @staticmethod
    def get_jit():
        return _C.auto_jit()


optimizer = _Optimizer()


def _set_device_policy(policy):
    """TF's device policy for ops whose inputs live on another device: 'silent' (default)
    copies them; 'explicit' raises, naming both devices (scalars and shape inputs still move)."""
    _C.set_device_policy("silent" if policy in (None, "silent") else policy)


from .device import get_soft_device_placement, set_soft_device_placement  # noqa: F401

experimental = SimpleNamespace(set_device_policy=_set_device_policy, get_device_policy=_C.device_policy)


# ---- logical devices ---------------------------------------------------------------------------
class LogicalDevice(SimpleNamespace):
    """A device the runtime exposes (name, device_type), as tf.config.LogicalDevice."""


class LogicalDeviceConfiguration(SimpleNamespace):
    """One logical device to carve out of a physical one (TF's memory_limit is accepted: CPU
    logical devices share the process's memory and threads)."""

    def __init__(self, memory_limit=None, experimental_priority=None, experimental_device_ordinal=None):
        super().__init__(memory_limit=memory_limit, experimental_priority=experimental_priority,
                         experimental_device_ordinal=experimental_device_ordinal)


_logical = {}  # physical device name -> [LogicalDeviceConfiguration]


def set_logical_device_configuration(device, logical_devices):
    """Splits a physical CPU into len(logical_devices) logical CPUs (/device:CPU:0..n-1), as TF
    does for testing multi-replica code on one machine. They share the CPU's threads."""
    if getattr(device, "device_type", None) != "CPU":
        raise ValueError(f"jitflow splits only CPUs into logical devices, got {device!r}")
    configs = list(logical_devices or [])
    if any(not isinstance(c, LogicalDeviceConfiguration) for c in configs):
        raise ValueError("logical_devices must be a list of jf.config.LogicalDeviceConfiguration")
    if configs:
        _logical[device.name] = configs
    else:
        _logical.pop(device.name, None)


def get_logical_device_configuration(device):
    return list(_logical[device.name]) if device.name in _logical else None


def list_logical_devices(device_type=None):
    cpus = max(1, len(_logical.get("/physical_device:CPU:0", [])))
    devs = [LogicalDevice(name=f"/device:CPU:{i}", device_type="CPU") for i in range(cpus)]
    devs += [LogicalDevice(name=f"/device:GPU:{i}", device_type="GPU")
             for i in range(len(list_physical_devices("GPU")))]
    return [d for d in devs if device_type is None or d.device_type == device_type]


experimental.VirtualDeviceConfiguration = LogicalDeviceConfiguration
experimental.set_virtual_device_configuration = set_logical_device_configuration
experimental.get_virtual_device_configuration = get_logical_device_configuration
