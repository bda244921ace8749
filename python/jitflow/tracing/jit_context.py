"""Whether the function being traced compiles whole (jf.function(jit_compile=True)): the
gradient of a loop traced there sizes the values it saves before its replay runs, so that
replay runs whole as a compiled loop (autodiff/grads_control.py)."""
import contextlib

_stack = []


@contextlib.contextmanager
def tracing(jit_compile):
    """Marks the trace of one function, innermost first."""
    _stack.append(bool(jit_compile))
    try:
        yield
    finally:
        _stack.pop()


def compiles_whole():
    """True while tracing a jit_compile=True function (its own body, not a nested function's)."""
    return bool(_stack) and _stack[-1]
