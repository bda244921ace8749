"""The `ag__` runtime that converted code calls: each operator decides at trace time whether
its condition or iterable is a symbolic tensor (build jf.cond / jf.while_loop) or a Python
value (run the Python control flow as written, TF's rule). The statements are in
staging.py, the undefined-name values in variables.py; this module is their namespace."""
import builtins
import sys
import threading

from ...core.errors import _at_caller
from ...ops import basic_ops as _ops
from ...ops import debugging as _debugging
from ...ops import printing as _printing
from .. import control_flow as _cf
from .staging import as_bool as _as_bool
from .staging import for_stmt, if_stmt, loop_options, while_stmt
from .staging import symbolic as _symbolic
from .variables import Undefined, UndefinedReturnValue, delete, is_undefined, ld, ldu, retval

__all__ = ["Undefined", "UndefinedReturnValue", "and_", "assert_stmt", "converted_call", "delete", "features",
           "for_stmt", "if_exp", "if_stmt", "is_undefined", "ld", "ldu", "loop_options", "not_", "or_", "print_",
           "range_", "retval", "while_stmt"]

# ---- optional features (TF's tf.autograph.experimental.Feature) ------------------------------
_features = threading.local()


class features:
    """The Feature set of the jf.function being traced (experimental_autograph_options)."""

    def __init__(self, enabled):
        self.enabled = frozenset(enabled)

    def __enter__(self):
        self.saved = getattr(_features, "enabled", frozenset())
        _features.enabled = self.enabled

    def __exit__(self, *exc):
        _features.enabled = self.saved


def _enabled(name):
    return name in getattr(_features, "enabled", ())


# conversion.converted, set by conversion.py when it loads: the converted code calls back into
# the converter through this module (its `ag__`), which conversion.py imports.
_converter = []


def converted_call(f):
    if f is builtins.print and _enabled("BUILTIN_FUNCTIONS"):
        return print_
    if f is builtins.range:  # range reached through a name (`fn = range`): TF's overload too
        return range_
    return _converter[0](f)


def print_(*objects, sep=" ", end="\n", file=None, flush=False):
    """Feature.BUILTIN_FUNCTIONS: print with a tensor argument prints when the graph runs
    (jf.print); with Python values only, it is Python's print."""
    if not any(_symbolic(o) for o in objects):
        return builtins.print(*objects, sep=sep, end=end, file=file, flush=flush)
    if file not in (None, sys.stdout, sys.stderr):
        raise NotImplementedError(_at_caller("print of a tensor at run time writes to sys.stdout or sys.stderr only"))
    return _printing.print(*objects, sep=sep, end=end, output_stream=file or sys.stdout)


def assert_stmt(test, msg):
    """`assert test, msg`: a jf.debugging.Assert op on a tensor condition when
    Feature.ASSERT_STATEMENTS is on (else the tensor's bool() raises, as in TF's default);
    Python's assert otherwise."""
    if _symbolic(test) and _enabled("ASSERT_STATEMENTS"):
        data = [msg()] if msg is not None else ["Assertion failed"]
        return _debugging.Assert(test, data)
    if not test:
        raise AssertionError(msg()) if msg is not None else AssertionError()
    return None


def range_(*args):
    """range() with Python integers stays Python's (the loop is unrolled, as TF does); with a
    tensor argument it is jf.range, and a for loop over it becomes a while loop."""
    if any(_symbolic(a) for a in args):
        return _ops.range(*args)
    return range(*args)


# ---- expressions -------------------------------------------------------------------------
def not_(x):
    if _symbolic(x):
        return _ops.logical_not(x)
    return not x


def and_(a, b_fn):
    """a and b: on a tensor, b is evaluated only where a is true (a jf.cond, TF's lazy and)."""
    if _symbolic(a):
        return _cf.cond(a, lambda: _as_bool(b_fn()), lambda: a)
    return b_fn() if a else a


def or_(a, b_fn):
    if _symbolic(a):
        return _cf.cond(a, lambda: a, lambda: _as_bool(b_fn()))
    return a if a else b_fn()


def if_exp(c, t_fn, f_fn):
    if _symbolic(c):
        return _cf.cond(c, t_fn, f_fn)
    return t_fn() if c else f_fn()
