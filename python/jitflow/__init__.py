"""jitflow: trace Python functions into graphs, JIT-compile marked ops with LLVM."""
from . import _C  # noqa: F401
