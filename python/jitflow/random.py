"""jf.random: seeded uniform and normal sampling with TF's global/op seed rules."""
import os

from . import _C
from . import dtypes as _dt
from . import ops as _ops
from .errors import InvalidArgumentError, _at_caller

_DEFAULT_GRAPH_SEED = 87654321
_state = {"global": None, "counter": 0}


def set_seed(seed):
    """Makes every random op reproducible from here on (and restarts their streams)."""
    _state["global"] = None if seed is None else int(seed)
    _state["counter"] = 0
    _C.reset_random_streams()


def get_seed(op_seed):
    """TF's rule: (global, op) seeds -> the (seed, seed2) attrs of one random op."""
    g = _state["global"]
    if g is not None:
        if op_seed is None:
            op_seed = _state["counter"]
            _state["counter"] += 1
        return g, int(op_seed)
    if op_seed is not None:
        return _DEFAULT_GRAPH_SEED, int(op_seed)
    r = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
    return r & 0x7FFFFFFF, r >> 32


def _random(op, shape, dtype, seed, name):
    s1, s2 = get_seed(seed)
    return _ops._x(_ops._ID[op], (_ops._ints(shape),), {"dtype": dtype, "seed": s1, "seed2": s2}, name)


def uniform(shape, minval=0, maxval=None, dtype=_dt.float32, seed=None, name=None):
    dtype = _dt.as_dtype(dtype)
    if dtype not in (_dt.float32, _dt.float64, _dt.int32, _dt.int64):
        raise ValueError(_at_caller(f"Argument `dtype` got invalid value {dtype!r}. Accepted dtypes are "
                                    "(jf.float32, jf.float64, jf.int32, jf.int64)."))
    with _C.name_scope(name or "random_uniform"):
        return _uniform(shape, minval, maxval, dtype, seed)


def _known_int(v, dtype):
    """v as a Python int when its value is known now (a number, a numpy value, an eager tensor),
    else None (a tensor of the graph being traced); TF's RandomUniformInt wants a scalar."""
    if isinstance(v, _C.Tensor) and v._is_symbolic:
        if len(v.shape) != 0:
            raise InvalidArgumentError(_at_caller(f"RandomUniformInt: minval and maxval must be 0-D, got shape {v.shape}"))
        return None
    t = _C.convert_to_tensor(v, dtype)
    if len(t.shape) != 0:
        raise InvalidArgumentError(_at_caller(f"RandomUniformInt: minval and maxval must be 0-D, got shape {t.shape}"))
    return int(t.numpy())


def _uniform(shape, minval, maxval, dtype, seed, name=None):
    if dtype.is_integer:
        if maxval is None:
            raise ValueError("Must specify maxval for integer dtype " + dtype.name)
        lo, hi = _known_int(minval, dtype), _known_int(maxval, dtype)
        if lo is not None and hi is not None and lo >= hi:
            # TF's RandomUniformInt check (a traced minval/maxval is not checked: no assert op yet)
            raise InvalidArgumentError(_at_caller(f"RandomUniformInt: Need minval < maxval, got {lo} >= {hi}"))
        u = _random("RandomUniform", shape, _dt.float64, seed, name)
        span = _ops.cast(_ops.convert_to_tensor(maxval, dtype) - minval, _dt.float64)
        return _ops.cast(_ops.floordiv(u * span, 1.0), dtype) + _ops.convert_to_tensor(minval, dtype)
    if maxval is None:
        maxval = 1
    u = _random("RandomUniform", shape, dtype, seed, name)
    if minval == 0 and maxval == 1:
        return u
    return u * (maxval - minval) + minval


def normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None):
    with _C.name_scope(name or "random_normal"):
        return _normal(shape, mean, stddev, dtype, seed)


def _normal(shape, mean, stddev, dtype, seed, name=None):
    z = _random("RandomStandardNormal", shape, _dt.as_dtype(dtype), seed, name)
    if mean == 0.0 and stddev == 1.0:
        return z
    return z * stddev + mean
