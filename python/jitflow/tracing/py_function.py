"""jf.py_function and jf.numpy_function: Python called from a traced function.

Eagerly they are plain calls (py_function maps the callable's exceptions to TF's error types, as
TF's eager EagerPyFunc does; numpy_function lets them through, as TF does). While tracing they
record an EagerPyFunc / PyFunc node (cpp/kernels/py_func_ops.cc) whose kernel calls back here,
with the GIL, through _run: the node names its callable by an integer token. The token attr is
a tensor that queues the token for removal when the last graph holding the node dies; the
queue is drained at every registration and after every garbage collection, so a callable lives
as long as the functions that can call it, and no longer.

Output shapes: jitflow has no tensors of unknown rank. An output declared by a dtype gets the
rank of the first input (rank 0 without inputs) with unknown dims; declare it exactly with
`Tout=jf.TensorSpec(shape, dtype)` (None for unknown dims). The node checks every result's
count, dtype and shape against the declaration and raises InvalidArgumentError naming it."""
import gc
import itertools
import threading
import traceback

import numpy as np

from .. import _C
from ..core import errors as _errors
from ..core.dtypes import as_dtype
from ..core.export import export
from ..ops.basic_ops import convert_to_tensor

_registry = {}  # token -> _Callback
_next_token = itertools.count(1)
_lock = threading.Lock()
_EAGER_PY_FUNC = _C.op_id("EagerPyFunc")
_PY_FUNC = _C.op_id("PyFunc")


class _Callback:
    __slots__ = ("__weakref__", "dtypes", "func", "numpy", "shapes")

    def __init__(self, func, dtypes, shapes, numpy):
        self.func, self.dtypes, self.shapes, self.numpy = func, dtypes, shapes, numpy


def _purge():
    for token in _C.py_func_dead_tokens():
        _registry.pop(token, None)


def _after_gc(phase, info):
    if phase == "stop":
        _purge()


gc.callbacks.append(_after_gc)


def live_callbacks():
    """How many py_function / numpy_function callables graphs still hold (after a purge)."""
    _purge()
    return len(_registry)


def _register(cb):
    _purge()
    with _lock:
        token = next(_next_token)
    _registry[token] = cb
    return _C.py_func_token(token)


# ---- running the callable -------------------------------------------------------------------

def _error_kind(e):
    """TF's mapping of a Python exception raised in a py_function to an error code."""
    if isinstance(e, _errors.OpError):  # TF: its own OpErrors raised in the function are Unknown
        return "unknown"
    if isinstance(e, (ValueError, TypeError)):
        return "invalid_argument"
    if isinstance(e, StopIteration):
        return "out_of_range"
    if isinstance(e, MemoryError):
        return "resource_exhausted"
    if isinstance(e, NotImplementedError):
        return "unimplemented"
    return "unknown"


_ERROR_CLASS = {"invalid_argument": _errors.InvalidArgumentError, "out_of_range": _errors.OutOfRangeError,
                "resource_exhausted": _errors.ResourceExhaustedError,
                "unimplemented": _errors.UnimplementedError, "unknown": _errors.UnknownError}


def _error_message(e):
    """TF's form: "<Exception>: <message>" and the traceback (without this module's frames)."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != __file__]
    tb = "".join(traceback.format_list(frames))
    return f"{type(e).__name__}: {e}\nTraceback (most recent call last):\n{tb}"


def _as_list(ret):
    if ret is None:
        return []
    if isinstance(ret, (list, tuple)):
        return list(ret)
    return [ret]


def convert_outputs(cb, ret):
    """The callable's results as tensors of the declared dtypes (count checked by the caller)."""
    outs = _as_list(ret)
    if cb.numpy:  # TF's FuncRegistry: np.asarray, then the dtype must match
        return [_C.convert_to_tensor(np.asarray(x)) for x in outs]

    def convert(x, dt):
        if isinstance(x, _C.Tensor) and x.dtype != dt:  # TF's ValueError (an InvalidArgumentError)
            raise ValueError(f"Tensor conversion requested dtype {dt.name} for Tensor with dtype "
                             f"{x.dtype.name}: {x!r}")
        try:
            return convert_to_tensor(x, dtype=dt)
        except _errors.OpError as e:
            raise ValueError(str(e)) from None
    return [convert(x, dt) for x, dt in zip(outs, cb.dtypes)] + \
        [convert_to_tensor(x) for x in outs[len(cb.dtypes):]]


def _call(cb, tensors):
    args = [np.array(t.numpy()) for t in tensors] if cb.numpy else tensors
    return convert_outputs(cb, cb.func(*args))


def _run(token, is_numpy, tensors):
    """Called by the EagerPyFunc / PyFunc kernels: the outputs, or (error kind, message)."""
    cb = _registry.get(token)
    if cb is None:
        which = "numpy_function" if is_numpy else "py_function"
        return ("unknown", f"the Python function of this {which} (token {token}) no longer exists")
    try:
        return _call(cb, tensors)
    except Exception as e:  # noqa: BLE001 -- every exception becomes TF's error for its kind
        return (_error_kind(e), _error_message(e))


def _check_outputs(fn_name, cb, outs):
    """The node's checks (py_func_ops.cc), for the eager path."""
    if len(outs) != len(cb.dtypes):
        raise _errors.InvalidArgumentError(f"{fn_name} returns {len(outs)} values, but expects to see "
                                           f"{len(cb.dtypes)} values.")
    for i, (t, dt, shape) in enumerate(zip(outs, cb.dtypes, cb.shapes)):
        if t.dtype != dt:
            raise _errors.InvalidArgumentError(f"{i}-th value returned by {fn_name} is {t.dtype.name}, but "
                                               f"expects {dt.name}")
        if shape is not None and (len(t.shape) != len(shape) or any(
                s is not None and s != d for s, d in zip(shape, t.shape))):
            raise _errors.InvalidArgumentError(f"{i}-th value returned by {fn_name} has shape "
                                               f"{list(t.shape)}, but its declared shape is {list(shape)}")


# ---- the public functions ---------------------------------------------------------------------

def _parse_tout(Tout, fn_name):
    """(dtypes, declared shapes or None, whether one output is returned bare)."""
    if Tout is None:
        raise TypeError(f"Missing required argument: 'Tout'\n  If using tf.{fn_name} as a decorator, set "
                        f"`Tout`\n  **by name** above the function:\n  `@tf.{fn_name}(Tout=tout)`")
    single = not isinstance(Tout, (list, tuple))
    dtypes, shapes = [], []
    for t in ([Tout] if single else Tout):
        if hasattr(t, "shape") and hasattr(t, "dtype") and not isinstance(t, _C.Tensor):  # a TensorSpec
            dtypes.append(as_dtype(t.dtype))
            shapes.append(None if t.shape is None else tuple(t.shape))
        else:
            dtypes.append(as_dtype(t))
            shapes.append(None)
    return dtypes, shapes, single


def _inputs(inp):
    if inp is None:
        return []
    items = list(inp) if isinstance(inp, (list, tuple)) else [inp]
    return [x if isinstance(x, _C.Tensor) else convert_to_tensor(x) for x in items]


def _out_dims(cb, inputs):
    """The out_dims attr: per output its rank, then its dims (-1 unknown)."""
    guess = len(inputs[0].shape) if inputs else 0
    dims = []
    for shape in cb.shapes:
        if shape is None:
            dims += [guess] + [-1] * guess
        else:
            dims += [len(shape)] + [-1 if d is None else int(d) for d in shape]
    return dims


def _traced(op, cb, inputs, name):
    attrs = {"token": _register(cb), "Tout": [d.name for d in cb.dtypes], "out_dims": _out_dims(cb, inputs)}
    return _C.execute_n(op, inputs, attrs, name)


def _finish(outs, single):
    return outs[0] if single and len(outs) == 1 else outs


@export("py_function")
def py_function(func=None, inp=None, Tout=None, name=None):
    """Calls func(*inp) with eager tensors: now when eager, at run time in a traced function.
    Differentiable: its gradient runs func again under a GradientTape (TF's EagerPyFunc)."""
    if func is None:  # @jf.py_function(Tout=...) as a decorator
        if Tout is None:
            _parse_tout(None, "py_function")
        return lambda f: (lambda *args: py_function(f, list(args), Tout, name))
    dtypes, shapes, single = _parse_tout(Tout, "py_function")
    inputs = _inputs(inp)
    cb = _Callback(func, dtypes, shapes, False)
    if not _C.is_tracing():
        try:
            outs = convert_outputs(cb, func(*inputs))
        except Exception as e:
            raise _ERROR_CLASS[_error_kind(e)](_error_message(e)) from e
        _check_outputs("py_function", cb, outs)
        return _finish(outs, single)
    return _finish(_traced(_EAGER_PY_FUNC, cb, inputs, name), single)


@export("numpy_function")
def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):
    """Calls func(*arrays) with numpy arrays; its results are converted to tensors. Not
    differentiable. stateful=False is accepted; the node is never deduplicated either way."""
    if func is None:
        if Tout is None:
            _parse_tout(None, "numpy_function")
        return lambda f: (lambda *args: numpy_function(f, list(args), Tout, stateful, name))
    dtypes, shapes, single = _parse_tout(Tout, "numpy_function")
    inputs = _inputs(inp)
    cb = _Callback(func, dtypes, shapes, True)
    if not _C.is_tracing():  # TF: a plain call; its exceptions pass through unchanged
        ret = _as_list(func(*[np.array(t.numpy()) for t in inputs]))
        outs = [x if isinstance(x, _C.Tensor) else
                convert_to_tensor(x) if isinstance(x, np.ndarray) else convert_to_tensor(x, dtype=dt)
                for x, dt in zip(ret, dtypes + [None] * len(ret))]
        if len(outs) != len(dtypes):
            raise _errors.InvalidArgumentError(f"numpy_function returns {len(outs)} values, but expects "
                                               f"to see {len(dtypes)} values.")
        return _finish(outs, single)
    return _finish(_traced(_PY_FUNC, cb, inputs, name), single)


def callback(token):
    """The live callback of a py_function node (by its token attr), or None."""
    return _registry.get(token)
