"""jf.config: threading and device queries, and info(), the facts a bug report needs."""
import operator
import os
import platform
import sys
from types import SimpleNamespace

import numpy as np

from .. import _C
from .errors import InvalidArgumentError, _at_caller
from .version import __version__


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


_inter_op = [0]


def _set_inter_op_threads(n):
    """Recorded and reported back: jitflow's executor runs a graph's independent ops on the one
    intra-op pool, so there is no separate inter-op pool to size."""
    n = operator.index(n) if n is not None else 0
    if n < 0:
        raise InvalidArgumentError(_at_caller(f"the number of inter-op threads must be >= 0, got {n}"))
    _inter_op[0] = n


threading = SimpleNamespace(
    set_intra_op_parallelism_threads=_set_threads,
    get_intra_op_parallelism_threads=_C.num_threads,
    set_inter_op_parallelism_threads=_set_inter_op_threads,
    get_inter_op_parallelism_threads=lambda: _inter_op[0],
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
        if _C.auto_jit():
            _C.cpu_jit_prepare()  # functions will compile: the JIT sets itself up meanwhile

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
             for i in range(len(get_visible_devices("GPU")))]
    return [d for d in devs if device_type is None or d.device_type == device_type]


# ---- visibility, memory growth, determinism -----------------------------------------------------
_visible = {}  # device type -> the visible PhysicalDevices' names (all when absent)
_memory_growth = {}  # GPU name -> bool
_determinism = [False]


def set_visible_devices(devices, device_type=None):
    """Which physical devices list_logical_devices shows (TF's rule: the CPU cannot be hidden)."""
    devices = [devices] if isinstance(devices, PhysicalDevice) else list(devices or [])
    types = [device_type] if device_type else sorted({d.device_type for d in list_physical_devices()})
    for kind in types:
        chosen = [d.name for d in devices if d.device_type == kind]
        if kind == "CPU" and not chosen:
            raise ValueError("Cannot hide the CPU: jitflow always runs host code on it")
        _visible[kind] = chosen


def get_visible_devices(device_type=None):
    return [d for d in list_physical_devices(device_type)
            if d.device_type not in _visible or d.name in _visible[d.device_type]]


def _set_memory_growth(device, enable):
    """TF's flag for GPUs. jitflow's device memory comes from a caching pool that grows as
    needed (it never reserves the whole GPU), which is what memory growth asks for."""
    if getattr(device, "device_type", None) != "GPU":
        raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")
    _memory_growth[device.name] = bool(enable)


def _get_memory_growth(device):
    if getattr(device, "device_type", None) != "GPU":
        raise ValueError("Cannot get memory growth on non-GPU and non-Pluggable devices")
    return _memory_growth.get(device.name, False)


def _enable_op_determinism():
    """Recorded (jf.config.experimental.is_op_determinism_enabled). jitflow's CPU kernels give
    the same bits on every run with the same thread count; its GPU kernels reduce in a fixed
    order too (no atomics), so nothing needs to change."""
    _determinism[0] = True


def _disable_op_determinism():
    _determinism[0] = False


def _enable_tensor_float_32_execution(enabled):
    """TF's switch for TensorFloat-32: on (the default, as in TF), float32 matmuls on a GPU
    with tensor cores for it (compute capability 8.0 and up) round their inputs to TF32's
    10-bit mantissa and accumulate in float32. The CPU never uses it."""
    _C.set_tensor_float_32(bool(enabled))


experimental.enable_tensor_float_32_execution = _enable_tensor_float_32_execution
experimental.tensor_float_32_execution_enabled = lambda: bool(_C.tensor_float_32())
experimental.set_memory_growth = _set_memory_growth
experimental.get_memory_growth = _get_memory_growth
experimental.enable_op_determinism = _enable_op_determinism
experimental.disable_op_determinism = _disable_op_determinism
experimental.is_op_determinism_enabled = lambda: _determinism[0]
experimental.set_visible_devices = set_visible_devices
experimental.get_visible_devices = get_visible_devices
experimental.list_physical_devices = list_physical_devices

experimental.VirtualDeviceConfiguration = LogicalDeviceConfiguration
experimental.set_virtual_device_configuration = set_logical_device_configuration
experimental.get_virtual_device_configuration = get_logical_device_configuration


def info():
    """What a bug report needs, as a dict: the versions of jitflow, Python, numpy, LLVM and
    oneDNN; the CPU the LLVM JIT compiles for (the host's, or JITFLOW_CPU's) with its
    features; what the eager kernels run (their instruction-set variant, JITFLOW_EAGER_ISA);
    the compile cache's directory (None when disabled); whether a CUDA driver was found; and
    where the extension was loaded from. `python -m jitflow.info` prints it."""
    triple, cpu, features = _C.cpu_jit_target().split("|", 2)
    cuda = _C.cuda_status()
    return {
        "jitflow": __version__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "numpy": np.__version__,
        "llvm": _C.llvm_version(),
        "onednn": _C.onednn_version(),
        "jit_target": triple,
        "jit_cpu": cpu,
        "jit_cpu_features": sorted(f[1:] for f in features.split(",") if f.startswith("+")),
        "eager_isa": _C.eager_isa(),
        "eager_isa_variants": [v for v in _C.eager_isa_variants().split(",") if v],
        "cache_dir": _C.disk_cache_dir() or None,
        "cuda_driver_found": bool(cuda["available"]),
        "cuda_driver_version": cuda["driver_version"] if cuda["available"] else None,
        "cuda_devices": cuda["device_count"] if cuda["available"] else 0,
        "cuda_error": None if cuda["available"] else cuda["error"],
        "extension": _C.__file__,
        "executable": sys.executable,
    }
