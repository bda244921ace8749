"""jf.xla.experimental.jit_scope: the same C++ context manager as jf.jit_scope."""
from types import SimpleNamespace

from .._C import jit_scope

experimental = SimpleNamespace(jit_scope=jit_scope)
