"""jitflow's exception classes, named after TensorFlow's (jf.errors.*), and the warnings that
point at the user's line."""
import contextlib
import os
import sys
import warnings

from .. import _C

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# jitflow's context managers run through contextlib's frames: those are not the user's either.
_CONTEXTLIB = contextlib.__file__


class OpError(Exception):
    """Base class for errors raised while running or building an op. Built with a message, or
    as TF builds them, OpError(node_def, op, message[, error_code])."""

    error_code = 2  # UNKNOWN

    def __init__(self, *args):
        if len(args) >= 3:
            self.node_def, self.op = args[0], args[1]
            if len(args) > 3:
                self.error_code = args[3]
            args = (args[2],)
        else:
            self.node_def = self.op = None
        super().__init__(*args)

    @property
    def message(self):
        return str(self.args[0]) if self.args else ""


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


def warn(message, category=RuntimeWarning):
    """warnings.warn attributed to the innermost frame outside the jitflow package (the line of
    user code that called in, however deep the call went through tracing), as the errors'
    "at <file>:<line>" is; filters, the once-per-location registry and catch_warnings work on it
    as on any warning."""
    frame, level = sys._getframe(1), 2
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE_DIR) or
                                 frame.f_code.co_filename.startswith("<frozen") or
                                 frame.f_code.co_filename == _CONTEXTLIB):
        frame, level = frame.f_back, level + 1
    if frame is None:  # called from jitflow alone (an import): its own frame then
        level = 2
    warnings.warn(message, category, stacklevel=level)


class NotFoundError(OpError):
    """A file or object was not found (a checkpoint path that does not exist)."""


class DataLossError(OpError):
    """Data is unrecoverably lost or corrupted (a truncated or damaged checkpoint file)."""


class UnavailableError(OpError):
    """A service (a peer worker of a distributed job) is unavailable: it failed or left."""


class DeadlineExceededError(OpError):
    """An operation (a collective waiting for its peers) did not finish before its deadline."""


class CancelledError(OpError):
    """An operation or step was cancelled."""


class AlreadyExistsError(OpError):
    """An entity that an operation tried to create already exists."""


class PermissionDeniedError(OpError):
    """The caller does not have permission to run an operation."""


class UnauthenticatedError(OpError):
    """The request has no valid authentication credentials."""


class FailedPreconditionError(OpError):
    """The system is not in a state the operation requires (an uninitialized value)."""


class AbortedError(OpError):
    """An operation was aborted, typically by a concurrent action."""


class OperatorNotAllowedInGraphError(TypeError):
    """An operation on a traced tensor that only works eagerly (iterating it, its truth value)."""


# TF's error codes (tf.errors.OK, ...) and each class's.
OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS = 0, 1, 2, 3, 4, 5, 6
PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE = 7, 8, 9, 10, 11
UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = 12, 13, 14, 15, 16
for _cls, _code in ((CancelledError, CANCELLED), (UnknownError, UNKNOWN), (InvalidArgumentError, INVALID_ARGUMENT),
                    (DeadlineExceededError, DEADLINE_EXCEEDED), (NotFoundError, NOT_FOUND),
                    (AlreadyExistsError, ALREADY_EXISTS), (PermissionDeniedError, PERMISSION_DENIED),
                    (ResourceExhaustedError, RESOURCE_EXHAUSTED), (FailedPreconditionError, FAILED_PRECONDITION),
                    (AbortedError, ABORTED), (OutOfRangeError, OUT_OF_RANGE), (UnimplementedError, UNIMPLEMENTED),
                    (InternalError, INTERNAL), (UnavailableError, UNAVAILABLE), (DataLossError, DATA_LOSS),
                    (UnauthenticatedError, UNAUTHENTICATED)):
    _cls.error_code = _code
