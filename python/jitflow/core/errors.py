"""jitflow's exception classes, named after TensorFlow's (jf.errors.*)."""
from .. import _C


class OpError(Exception):
    """Base class for errors raised while running or building an op."""


class InvalidArgumentError(OpError, ValueError):
    """An op got an argument with a bad shape, value or dtype."""


class UnimplementedError(OpError, NotImplementedError):
    """The operation is not implemented (for this dtype, device or mode)."""


class InternalError(OpError, RuntimeError):
    """A jitflow bug: an internal invariant did not hold. Please report it."""


class ResourceExhaustedError(OpError, MemoryError):
    """An allocation (memory, threads) that cannot be made; raised before it is tried."""


class UnknownError(OpError):
    """An error of no other kind, e.g. a Python exception raised inside jf.py_function."""


class OutOfRangeError(OpError):
    """An operation iterated past the valid range (StopIteration inside jf.py_function)."""


def _at_caller(message):
    """message with the caller's source line appended, as the C++ error translator appends it
    to every error raised there ("\n  at <file>:<line>: <source>")."""
    where = _C.user_location()
    return f"{message}\n  at {where}" if where else message


class NotFoundError(OpError):
    """A file or object was not found (a checkpoint path that does not exist)."""


class DataLossError(OpError):
    """Data is unrecoverably lost or corrupted (a truncated or damaged checkpoint file)."""
