"""jitflow's exception classes, named after TensorFlow's (jf.errors.*)."""


class OpError(Exception):
    """Base class for errors raised while running or building an op."""


class InvalidArgumentError(OpError, ValueError):
    """An op got an argument with a bad shape, value or dtype."""


class UnimplementedError(OpError, NotImplementedError):
    """The operation is not implemented (for this dtype, device or mode)."""


class InternalError(OpError, RuntimeError):
    """A jitflow bug: an internal invariant did not hold. Please report it."""
