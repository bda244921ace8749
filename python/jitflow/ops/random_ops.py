"""jf.random: every sampler draws from one counter-based generator, Philox 4x32-10
(docs/random.md), with TF's global/op seed rules, stateless functions and jf.random.Generator."""
import collections
import os
import random as _pyrandom

import numpy as _np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError, _at_caller
from ..core.export import export
from . import array_ops as _array_ops
from . import basic_ops as _ops
from .dispatch import OP, run, to_ints

_DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1
# Eager op seeds under a global seed come from random.Random(global seed), as TF's context
# draws them (so eager draws repeat TF's); each traced graph counts its own from 0 (TF's
# per-graph dict). The Graph wrapper is made afresh for each lookup unless someone holds it, so
# the counters hold theirs (a weak key would die at once): the few graphs being traced at once,
# the most recent first; all are dropped once tracing ends.
_state = {"global": None, "rng": None}
_graph_counters = collections.OrderedDict()
_MAX_GRAPH_COUNTERS = 64
# Words of the Philox stream each output element reserves: a draw advances a Generator's
# counter by this many blocks per element (TF's StatefulRandom ops do the same).
_BLOCKS_PER_OUTPUT = 256


def set_seed(seed):
    """Makes every random op reproducible from here on (and restarts their streams)."""
    _state["global"] = None if seed is None else int(seed)
    _state["rng"] = None if seed is None else _pyrandom.Random(int(seed))
    _graph_counters.clear()
    _C.reset_random_streams()


def get_seed(op_seed):
    """TF's random_seed.get_seed: (global, op) seeds -> the (seed, seed2) attrs of one random
    op, both reduced modulo 2**31 - 1, and (0, 0) turned into (0, 2**31 - 1)."""
    g = _state["global"]
    if g is not None:
        if op_seed is None:
            if _C.is_tracing():
                graph = _C.current_graph()
                op_seed = _graph_counters.get(graph, 0)
                _graph_counters[graph] = op_seed + 1
                _graph_counters.move_to_end(graph)
                while len(_graph_counters) > _MAX_GRAPH_COUNTERS:
                    _graph_counters.popitem(last=False)
            else:
                _graph_counters.clear()
                op_seed = _state["rng"].randint(0, _MAXINT32)
        seeds = int(g) % _MAXINT32, int(op_seed) % _MAXINT32
    elif op_seed is not None:
        seeds = _DEFAULT_GRAPH_SEED, int(op_seed) % _MAXINT32
    else:
        # TF leaves both seeds 0 and its kernel seeds itself from the OS; so does this.
        r = int.from_bytes(os.urandom(8), "little")
        seeds = r & 0x7FFFFFFF, (r >> 32) & 0x7FFFFFFF
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


def _x(op, inputs, attrs=None, name=None):
    return run(OP[op], tuple(inputs), attrs or {}, name)


def _random(op, shape, dtype, seed, name):
    s1, s2 = get_seed(seed)
    return _x(op, (to_ints(shape),), {"dtype": dtype, "seed": s1, "seed2": s2}, name)


def _fresh_state(seed):
    """A new Philox state per run, from the stream of the op's (seed, seed2): the state the
    stateful samplers below (truncated_normal, gamma, ...) hand to the stateless ones."""
    s1, s2 = get_seed(seed)
    return _x("RandomPhiloxState", (), {"seed": s1, "seed2": s2})


_UNIFORM_DTYPES = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64, _dt.int32, _dt.int64)


def _check_uniform_dtype(dtype):
    dtype = _dt.as_dtype(dtype)
    if dtype not in _UNIFORM_DTYPES:
        raise ValueError(_at_caller(f"Argument `dtype` got invalid value {dtype!r}. Accepted dtypes are "
                                    "(jf.float16, jf.bfloat16, jf.float32, jf.float64, jf.int32, jf.int64)."))
    return dtype


def _check_float_dtype(dtype, what):
    dtype = _dt.as_dtype(dtype)
    if not dtype.is_floating:
        # TF converts the mean first: "Cannot convert 0.0 to EagerTensor of dtype int32"
        raise TypeError(_at_caller(f"{what}: dtype must be float32 or float64, got {dtype.name}"))
    return dtype


# ---- stateful (TF's global/op seed rules) -------------------------------------------------------

def uniform(shape, minval=0, maxval=None, dtype=_dt.float32, seed=None, name=None):
    dtype = _check_uniform_dtype(dtype)
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
            raise InvalidArgumentError(_at_caller(f"RandomUniformInt: Need minval < maxval, got {lo} >= {hi}"))
        return _x("StatelessRandomUniformIntV2", (to_ints(shape), _fresh_state(seed),
                                                  _ops.convert_to_tensor(minval, dtype),
                                                  _ops.convert_to_tensor(maxval, dtype)), name=name)
    if maxval is None:
        maxval = 1
    u = _random("RandomUniform", shape, dtype, seed, name)
    if _is_value(minval, 0) and _is_value(maxval, 1):
        return u
    return u * (maxval - minval) + minval


def _is_value(v, x):
    return isinstance(v, (int, float)) and v == x


def normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None):
    with _C.name_scope(name or "random_normal"):
        return _normal(shape, mean, stddev, dtype, seed)


def _normal(shape, mean, stddev, dtype, seed, name=None):
    z = _random("RandomStandardNormal", shape, _dt.as_dtype(dtype), seed, name)
    if _is_value(mean, 0) and _is_value(stddev, 1):
        return z
    return z * stddev + mean


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None):
    """Normals with |z| < 2 (TF's TruncatedNormal), scaled by stddev and shifted by mean."""
    dtype = _check_float_dtype(dtype, "TruncatedNormal")
    with _C.name_scope(name or "truncated_normal"):
        z = _sample("StatelessTruncatedNormalV2", shape, _fresh_state(seed), dtype)
        return _affine(z, mean, stddev, dtype)


def _affine(z, mean, stddev, dtype):
    if _is_value(mean, 0) and _is_value(stddev, 1):
        return z
    return _ops.add(z * _ops.convert_to_tensor(stddev, dtype), _ops.convert_to_tensor(mean, dtype))


def shuffle(value, seed=None, name=None):
    """`value` with its first dimension permuted (Fisher-Yates on the Philox stream)."""
    with _C.name_scope(name or "random_shuffle"):
        return _x("StatelessShuffle", (_ops.convert_to_tensor(value), _fresh_state(seed)))


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """Class indices [batch, num_samples] drawn with probabilities softmax(logits)."""
    with _C.name_scope(name or "categorical"):
        return _categorical(logits, num_samples, dtype, _fresh_state(seed))


def gamma(shape, alpha, beta=None, dtype=_dt.float32, seed=None, name=None):
    """Gamma(alpha, beta) samples of shape `shape + broadcast(alpha, beta).shape`."""
    dtype = _check_float_dtype(dtype, "RandomGamma")
    with _C.name_scope(name or "random_gamma"):
        alpha = _ops.convert_to_tensor(alpha, dtype)
        if beta is not None:
            beta = _ops.convert_to_tensor(beta, dtype)
            alpha = alpha + _ops.zeros_like(beta)
        shape = _shape_list(shape) + list(alpha.shape)
        g = _x("StatelessRandomGammaV3", (_ops.broadcast_to(alpha, shape), _fresh_state(seed)))
        return _floor_at_tiny(g if beta is None else g / beta)


def _floor_at_tiny(g):
    """TF's gamma samplers return max(tiny, sample / beta): small alphas underflow to 0 or to a
    subnormal, and TF raises those to the dtype's smallest normal number (NaN stays NaN)."""
    return _ops.maximum(_ops.convert_to_tensor(float(_np.finfo(g.dtype.as_numpy_dtype).tiny), g.dtype), g)


def poisson(shape, lam, dtype=_dt.float32, seed=None, name=None):
    """Poisson(lam) samples of shape `shape + lam.shape`, in `dtype` (floats or ints)."""
    dtype = _check_uniform_dtype(dtype)
    with _C.name_scope(name or "random_poisson"):
        lam = _ops.convert_to_tensor(lam)
        lam = _ops.cast(lam, _dt.float64) if not lam.dtype.is_floating else lam
        shape = _shape_list(shape) + list(lam.shape)
        k = _x("StatelessRandomPoisson", (_ops.broadcast_to(lam, shape), _fresh_state(seed)))
        return _ops.cast(k, dtype)


def _shape_list(shape):
    if isinstance(shape, _C.Tensor):
        return [int(d) for d in shape.numpy()]
    return [int(d) for d in (shape if hasattr(shape, "__len__") else [shape])]


# ---- stateless (a seed pair -> a Philox key and counter, as TF) ----------------------------------

def _seed_state(seed):
    """TF's StatelessRandomGetKeyCounter: the seed pair scrambled into a Philox state."""
    seed = _ops.convert_to_tensor(seed)
    if not seed.dtype.is_integer:
        raise InvalidArgumentError(_at_caller(f"StatelessRandomGetKeyCounter: seed must be int32 or int64, got "
                                              f"{seed.dtype.name}"))
    return _x("StatelessRandomGetKeyCounter", (seed,))


def _sample(op, shape, state, dtype, extra=()):
    return _x(op, (to_ints(shape), state, *extra), {"dtype": dtype} if not extra else {})


def _uniform_from_state(shape, state, minval, maxval, dtype):
    if dtype.is_integer:
        if (minval is None) != (maxval is None):
            raise ValueError(_at_caller(
                f"For integer `dtype` argument {dtype!r}, argument `minval` and `maxval` must be both None or "
                f"not None. Got `minval`={minval} and `maxval`={maxval}."))
        if minval is None:
            return _sample("StatelessRandomUniformFullIntV2", shape, state, dtype)
        return _sample("StatelessRandomUniformIntV2", shape, state, dtype,
                       (_ops.convert_to_tensor(minval, dtype), _ops.convert_to_tensor(maxval, dtype)))
    minval = 0 if minval is None else minval
    maxval = 1 if maxval is None else maxval
    u = _sample("StatelessRandomUniformV2", shape, state, dtype)
    # TF's order of operations: u * (maxval - minval) + minval
    return _ops.add(u * (_ops.convert_to_tensor(maxval, dtype) - _ops.convert_to_tensor(minval, dtype)),
                    _ops.convert_to_tensor(minval, dtype))


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=_dt.float32, name=None, alg="auto_select"):
    """Uniform floats in [minval, maxval) (maxval defaults to 1), ints in [minval, maxval), or
    full-range ints when both are None (uint32/uint64 too: TF's are the signed draw's bits); a
    deterministic function of (seed, shape)."""
    unsigned = _dt.as_dtype(dtype) in (_dt.uint32, _dt.uint64)
    if unsigned:  # TF's checks, in its order
        if (minval is None) != (maxval is None):
            raise ValueError(_at_caller(
                f"For integer `dtype` argument {_dt.as_dtype(dtype)!r}, argument `minval` and `maxval` must be "
                f"both None or not None. Got `minval`={minval} and `maxval`={maxval}."))
        if minval is not None:
            raise ValueError(_at_caller(
                f"Argument `dtype` got invalid value {_dt.as_dtype(dtype)!r} when argument `minval` is not None. "
                "Please don't use unsigned integers in this case."))
    signed = {_dt.uint32: _dt.int32, _dt.uint64: _dt.int64}.get(_dt.as_dtype(dtype), dtype)
    signed = _check_uniform_dtype(signed)
    _check_alg(alg)
    with _C.name_scope(name or "stateless_random_uniform"):
        out = _uniform_from_state(shape, _seed_state(seed), minval, maxval, signed)
        return _ops.bitcast(out, dtype) if unsigned else out


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dt.float32, name=None, alg="auto_select"):
    dtype = _check_float_dtype(dtype, "StatelessRandomNormalV2")
    _check_alg(alg)
    with _C.name_scope(name or "stateless_random_normal"):
        return _affine(_sample("StatelessRandomNormalV2", shape, _seed_state(seed), dtype), mean, stddev, dtype)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dt.float32, name=None,
                               alg="auto_select"):
    dtype = _check_float_dtype(dtype, "StatelessTruncatedNormalV2")
    _check_alg(alg)
    with _C.name_scope(name or "stateless_truncated_normal"):
        z = _sample("StatelessTruncatedNormalV2", shape, _seed_state(seed), dtype)
        return _affine(z, mean, stddev, dtype)


def _categorical(logits, num_samples, dtype, state):
    """Gumbel-max: argmax over classes of logits + Gumbel noise, one draw per sample."""
    logits = _ops.convert_to_tensor(logits)
    if len(logits.shape) != 2:
        raise InvalidArgumentError(_at_caller(f"Multinomial: logits should be a matrix, got shape {logits.shape}"))
    dtype = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
    if dtype not in (_dt.int32, _dt.int64):
        raise TypeError(_at_caller(f"Multinomial: output_dtype must be int32 or int64, got {dtype.name}"))
    shape = _ops.concat([_ops.shape(logits)[:1], _ops.reshape(_ops.convert_to_tensor(num_samples, _dt.int32), [1]),
                         _ops.shape(logits)[1:]], 0)
    u = _sample("StatelessRandomUniformV2", shape, state, logits.dtype)
    tiny = float(_np.finfo(logits.dtype.as_numpy_dtype).tiny)
    gumbel = -_ops.log(-_ops.log(_ops.maximum(u, tiny)))
    return _ops.argmax(_ops.expand_dims(logits, 1) + gumbel, axis=2, output_type=dtype)


def stateless_categorical(logits, num_samples, seed, dtype=_dt.int64, name=None):
    with _C.name_scope(name or "stateless_categorical"):
        return _categorical(logits, num_samples, dtype, _seed_state(seed))


def stateless_binomial(shape, seed, counts, probs, output_dtype=_dt.int32, name=None):
    """Binomial(counts, probs) samples of `shape` (counts and probs broadcast to it)."""
    with _C.name_scope(name or "stateless_random_binomial"):
        return _binomial(shape, _seed_state(seed), counts, probs, output_dtype)


def _binomial(shape, state, counts, probs, dtype):
    counts = _ops.convert_to_tensor(counts)
    dt = counts.dtype if counts.dtype.is_floating else _dt.float64
    counts = _ops.broadcast_to(_ops.cast(counts, dt), shape)
    probs = _ops.broadcast_to(_ops.cast(_ops.convert_to_tensor(probs), dt), shape)
    return _ops.cast(_x("StatelessRandomBinomial", (counts, probs, state)), _dt.as_dtype(dtype))


def stateless_gamma(shape, seed, alpha, beta=None, dtype=_dt.float32, name=None):
    dtype = _check_float_dtype(dtype, "StatelessRandomGammaV3")
    with _C.name_scope(name or "stateless_random_gamma"):
        alpha = _ops.broadcast_to(_ops.convert_to_tensor(alpha, dtype), shape)
        g = _x("StatelessRandomGammaV3", (alpha, _seed_state(seed)))
        return _floor_at_tiny(g if beta is None else g / _ops.convert_to_tensor(beta, dtype))


def stateless_poisson(shape, seed, lam, dtype=_dt.int32, name=None):
    dtype = _check_uniform_dtype(dtype)
    with _C.name_scope(name or "stateless_random_poisson"):
        lam = _ops.convert_to_tensor(lam)
        lam = lam if lam.dtype.is_floating else _ops.cast(lam, _dt.float64)
        k = _x("StatelessRandomPoisson", (_ops.broadcast_to(lam, shape), _seed_state(seed)))
        return _ops.cast(k, dtype)


def _check_alg(alg):
    if alg not in ("auto_select", "philox", 1, None) and getattr(alg, "name", None) not in ("PHILOX", "AUTO_SELECT"):
        raise ValueError(_at_caller(f"jitflow implements only the Philox algorithm, got alg={alg!r}"))


@export("random.experimental.stateless_split", "random.split")
def stateless_split(seed, num=2, alg="auto_select"):
    """`num` new seeds [num, 2] from one: full-range int32s of the seed, as TF."""
    _check_alg(alg)
    seed = _ops.convert_to_tensor(seed)
    return stateless_uniform([num, 2], seed, minval=None, maxval=None, dtype=seed.dtype)


@export("random.experimental.stateless_fold_in", "random.fold_in")
def stateless_fold_in(seed, data, alg="auto_select"):
    """A new seed from a seed and an int: [one full-range int of the seed, data], in data's
    dtype (a Python int is int32), as TF."""
    _check_alg(alg)
    data = _ops.convert_to_tensor(data)
    if data.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(_at_caller(f"stateless_fold_in: data must be int32 or int64, got {data.dtype.name}"))
    first = stateless_uniform([], seed, minval=None, maxval=None, dtype=data.dtype)
    return _ops.stack([first, data])


# The word TF's wrapper puts before a [2] seed to make the raw op's [3] (its arbitrary constant).
_INDEX_SHUFFLE_PAD = 498247692


@export("random.experimental.index_shuffle")
def index_shuffle(index, seed, max_index):
    """The position of `index` in a pseudorandom permutation of [0, max_index]: TF's Simon
    cipher with cycle walking (a bijection for each seed). seed is [2] as for the stateless
    functions; TF's wrapper pads its first dimension with a constant to the raw op's [3]."""
    index = _ops.convert_to_tensor(index)
    dt = index.dtype if index.dtype.is_integer else _dt.int64
    seed = _ops.convert_to_tensor(seed)
    if len(seed.shape) == 0:
        raise InvalidArgumentError(_at_caller("RandomIndexShuffle: seed must be a vector of size [2], got a scalar"))
    seed = _array_ops.pad(seed, [[1, 0]] + [[0, 0]] * (len(seed.shape) - 1), constant_values=_INDEX_SHUFFLE_PAD)
    return _x("RandomIndexShuffle", (index, seed, _ops.convert_to_tensor(max_index, dt)))


@export("random.experimental.stateless_shuffle")
def stateless_shuffle(value, seed, alg="auto_select", name=None):
    """`value` with its first dimension permuted, a deterministic function of (value, seed)."""
    _check_alg(alg)
    with _C.name_scope(name or "stateless_shuffle"):
        return _x("StatelessShuffle", (_ops.convert_to_tensor(value), _seed_state(seed)))
