"""jf.device: op placement. Eager ops run where the innermost scope says, else on the GPU of
their inputs, else on the CPU. A GPU placement checks the CUDA driver first, so machines
without one get a clear error naming what is missing. Inside, inputs on other devices are
copied (TF's silent policy) and ops without a GPU kernel run on the CPU (soft placement)."""
import re

from . import _C

_SPEC = re.compile(r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?(CPU|GPU):(\d+)$", re.IGNORECASE)


def current():
    """The innermost jf.device scope of this thread ("/CPU:0" outside any), kept in C++."""
    return _C.current_device_scope()


class device:
    """Context manager placing the ops created inside on `name` ("/CPU:0", "/GPU:0", "GPU:1")."""

    def __init__(self, name):
        m = _SPEC.match(name.strip()) if name else None
        if not m:
            raise ValueError(f"jf.device: cannot parse device name {name!r}; use e.g. '/CPU:0' or '/GPU:0'")
        self.kind, self.index = m.group(1).upper(), int(m.group(2))
        self.name = f"/{self.kind}:{self.index}"

    def __enter__(self):
        if self.kind == "GPU":
            status = _C.cuda_status()
            if not status["available"]:
                raise RuntimeError(f"Cannot place ops on {self.name}: {status['error']}. "
                                   "jf.config.list_physical_devices('GPU') lists usable GPUs.")
            if self.index >= status["device_count"]:
                raise RuntimeError(f"Cannot place ops on {self.name}: only {status['device_count']} GPU(s)")
        _C.push_device_scope(self.kind, self.index)
        return self.name

    def __exit__(self, *exc):
        _C.pop_device_scope()
        return False
