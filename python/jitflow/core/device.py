"""jf.device: op placement. Eager ops run where the innermost scope says, else on the GPU of
their inputs, else on the CPU. A GPU placement checks the CUDA driver first, so machines
without one get a clear error naming what is missing. Inside, inputs on other devices are
copied (TF's silent policy) and ops without a GPU kernel run on the CPU (soft placement).
A GPU scope on a machine without that GPU places on the CPU under TF's default soft device
placement; jf.config.set_soft_device_placement(False) makes it raise instead."""
import re

from .. import _C

_SPEC = re.compile(r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?(CPU|GPU):(\d+)$", re.IGNORECASE)


_soft_placement = [True]  # process-wide, as TF's


def set_soft_device_placement(enabled):
    _soft_placement[0] = bool(enabled)


def get_soft_device_placement():
    return _soft_placement[0]


def current():
    """The innermost jf.device scope of this thread ("/CPU:0" outside any), kept in C++."""
    return _C.current_device_scope()


_gpu_scopes = [0]  # GPU scopes open in any thread: while 0, no op is placed on a GPU by scope


def gpu_scope_open():
    """Whether some thread is inside a GPU jf.device scope (a cheap test for fast paths that
    hold only on the CPU; current() says which device this thread's scope names)."""
    return _gpu_scopes[0] > 0


class device:
    """Context manager placing the ops created inside on `name` ("/CPU:0", "/GPU:0", "GPU:1")."""

    def __init__(self, name):
        m = _SPEC.match(name.strip()) if name else None
        if not m:
            raise ValueError(f"jf.device: cannot parse device name {name!r}; use e.g. '/CPU:0' or '/GPU:0'")
        self.kind, self.index = m.group(1).upper(), int(m.group(2))
        self.name = f"/{self.kind}:{self.index}"

    def __enter__(self):
        kind, index = self.kind, self.index
        if kind == "GPU":
            status = _C.cuda_status()
            missing = None
            if not status["available"]:
                missing = (f"Cannot place ops on {self.name}: {status['error']}. "
                           "jf.config.list_physical_devices('GPU') lists usable GPUs.")
            elif index >= status["device_count"]:
                missing = f"Cannot place ops on {self.name}: only {status['device_count']} GPU(s)"
            if missing is not None:
                if not _soft_placement[0]:
                    raise RuntimeError(missing + " (soft device placement is off)")
                kind, index = "CPU", 0  # TF's soft placement: a device that exists
        _C.push_device_scope(kind, index)
        self._gpu = kind == "GPU"
        _gpu_scopes[0] += self._gpu
        return self.name

    def __exit__(self, *exc):
        _C.pop_device_scope()
        _gpu_scopes[0] -= getattr(self, "_gpu", False)
        self._gpu = False
        return False
