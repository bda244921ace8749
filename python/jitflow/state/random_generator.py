"""jf.random.Generator: a Philox state in an int64[3] jf.Variable (TF's layout: counter low,
counter high, key); each draw reads it, samples statelessly and advances the counter."""
import enum
import os

import numpy as _np

from ..core import dtypes as _dt
from ..core.export import export
from ..ops import basic_ops as _ops
from ..ops import random_ops as _r
from ..ops.variables import Variable

_STATE_SIZE = 3
_MASK64 = (1 << 64) - 1
# TF's StatefulRandomBinomial reserves 50 outputs of 256 blocks per sample (and per batch).
_BINOMIAL_BLOCKS = 50 * 256


@export("random.Algorithm")
class Algorithm(enum.Enum):
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def _check_alg(alg):
    """jitflow has one algorithm; Philox, auto-select and None all mean it (TF's value 1)."""
    if alg is None or alg in (1, 3, "philox", "auto_select", Algorithm.PHILOX, Algorithm.AUTO_SELECT):
        return Algorithm.PHILOX.value
    raise ValueError(f"jitflow implements only the Philox algorithm (1), got alg={alg!r}")


def _int64(word):
    word &= _MASK64
    return word - (1 << 64) if word >> 63 else word


@export("random.create_rng_state", "random.experimental.create_rng_state")
def create_rng_state(seed, alg):
    """TF's state for a seed, an int64[3] tensor (see _rng_state)."""
    return _ops.constant(_rng_state(seed, alg), _dt.int64)


def _rng_state(seed, alg):
    """The state for a seed as numpy: an int is cut into 64-bit words (little end first, two's
    complement for negatives), a list is left-padded with zeros; int64[3]."""
    _check_alg(alg)
    if isinstance(seed, (int, _np.integer)):
        words = [_int64(int(seed) >> (64 * i)) for i in range(_STATE_SIZE)]
    else:
        words = [int(w) for w in _np.asarray(seed).reshape(-1)]
        if len(words) > _STATE_SIZE:
            raise ValueError(f"seed has {len(words)} words; a Philox state has {_STATE_SIZE}")
        words = [0] * (_STATE_SIZE - len(words)) + words
    return _np.array(words, _np.int64)


@export("random.Generator", "random.experimental.Generator")
class Generator:
    """Draws from its own Philox stream; usable eagerly and inside jf.function (the state is a
    variable, read before and advanced after each draw; the draw itself compiles)."""

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("When `copy_from` is not None, `state` and `alg` must be None")
            state, alg = copy_from.state.numpy(), copy_from.algorithm
        elif state is None:
            raise ValueError("Generator needs `copy_from` or `state` (or use Generator.from_seed / "
                             "from_non_deterministic_state)")
        self._alg = _check_alg(alg)
        state = _np.asarray(state.numpy() if hasattr(state, "numpy") else state, _np.int64)
        if state.shape != (_STATE_SIZE,):
            raise ValueError(f"a Philox state has shape [{_STATE_SIZE}], got {list(state.shape)}")
        self._state_var = Variable(state, trainable=False, dtype=_dt.int64, name="StateVar")

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(state=_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        words = [int.from_bytes(os.urandom(8), "little") for _ in range(_STATE_SIZE)]
        return cls(state=[_int64(w) for w in words], alg=alg)

    @classmethod
    def from_state(cls, state, alg):
        return cls(state=state, alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        return cls(state=list(_np.asarray(counter).reshape(-1)) + [int(_np.asarray(key).reshape(-1)[0])], alg=alg)

    state = property(lambda self: self._state_var, doc="The int64[3] state variable.")
    algorithm = property(lambda self: self._alg)
    key = property(lambda self: self._state_var[-1])

    def reset(self, state):
        self._state_var.assign(_ops.convert_to_tensor(state, _dt.int64))

    def reset_from_seed(self, seed):
        self._state_var.assign(_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key, counter):
        self.reset(list(_np.asarray(counter).reshape(-1)) + [int(_np.asarray(key).reshape(-1)[0])])

    def _draw(self, shape, sample, blocks=None):
        """sample(state) on the state before the draw; the counter then moves past the blocks
        the draw may use: blocks(n) for n output elements (256 n by default, as TF's stateful
        Philox ops). A known shape reads and advances the state in one op (RngReadAndSkip),
        so draws in one compiled unit never wait on each other's writes; a traced shape reads,
        samples, then skips by a count computed in the graph. Both skips carry into the high
        counter word (128-bit addition, as TF)."""
        blocks = blocks or (lambda n: n * _r._BLOCKS_PER_OUTPUT)
        if not isinstance(shape, _ops.Tensor) or not shape._is_symbolic:
            n = int(_np.prod(_r._shape_list(shape), dtype=_np.int64))
            state = _r._x("RngReadAndSkip", (), {"var_id": self._state_var._id, "delta": int(blocks(n))})
            return sample(state)
        state = self._state_var.read_value()
        out = sample(state)
        n = _ops.reduce_prod(_ops.cast(shape, _dt.int64))
        _r._x("RngReadAndSkip", (_ops.cast(blocks(n), _dt.int64),), {"var_id": self._state_var._id})
        return out

    def skip(self, delta):
        """Advances the counter as a draw of `delta` elements would (256 delta blocks; a
        negative delta wraps, as TF's uint64 cast) and returns the state before."""
        if isinstance(delta, _ops.Tensor) and delta._is_symbolic:
            d = _ops.cast(delta, _dt.int64) * _r._BLOCKS_PER_OUTPUT
            return _r._x("RngReadAndSkip", (d,), {"var_id": self._state_var._id})
        d = int(_ops.convert_to_tensor(delta).numpy()) if isinstance(delta, _ops.Tensor) else int(delta)
        return _r._x("RngReadAndSkip", (), {"var_id": self._state_var._id,
                                             "delta": _int64(d * _r._BLOCKS_PER_OUTPUT)})

    def uniform(self, shape, minval=0, maxval=None, dtype=_dt.float32, name=None):
        dtype = _r._check_uniform_dtype(dtype)
        return self._draw(shape, lambda s: _r._uniform_from_state(shape, s, minval, maxval, dtype))

    def uniform_full_int(self, shape, dtype=_dt.int64, name=None):
        """Full-range ints. TF's default dtype is uint64, which jitflow lacks: int64 holds the
        same 64 bits (uint32/uint64 requests get int32/int64 with the same bits)."""
        dtype = {"uint64": _dt.int64, "uint32": _dt.int32}.get(getattr(dtype, "name", str(dtype)), dtype)
        dtype = _dt.as_dtype(dtype)
        return self._draw(shape, lambda s: _r._sample("StatelessRandomUniformFullIntV2", shape, s, dtype))

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_dt.float32, name=None):
        dtype = _r._check_float_dtype(dtype, "StatelessRandomNormalV2")
        return self._draw(shape, lambda s: _r._affine(_r._sample("StatelessRandomNormalV2", shape, s, dtype),
                                                      mean, stddev, dtype))

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=_dt.float32, name=None):
        dtype = _r._check_float_dtype(dtype, "StatelessTruncatedNormalV2")
        return self._draw(shape, lambda s: _r._affine(_r._sample("StatelessTruncatedNormalV2", shape, s, dtype),
                                                      mean, stddev, dtype))

    def binomial(self, shape, counts, probs, dtype=_dt.int32, name=None):
        """Binomial(counts, probs) samples. The counter advances as TF 2.21's
        StatefulRandomBinomial does (measured: 12800 (n + 3 b) blocks for n outputs and b
        elements in broadcast(counts, probs)), so the draws after it stay TF's."""
        counts, probs = _ops.convert_to_tensor(counts), _ops.convert_to_tensor(probs)
        b = int(_np.prod(_np.broadcast_shapes(tuple(counts.shape), tuple(probs.shape)), dtype=_np.int64))
        return self._draw(shape, lambda s: _r._binomial(shape, s, counts, probs, dtype),
                          blocks=lambda n: (n + 3 * b) * _BINOMIAL_BLOCKS)

    def _make_int64_keys(self, shape):
        return self.uniform_full_int(shape, dtype=_dt.int64)

    def make_seeds(self, count=1):
        """[2, count] int64 seeds for the stateless functions: keys over zeros, as TF."""
        keys = self._make_int64_keys([count])
        return _ops.stack([keys, _ops.zeros_like(keys)])

    def split(self, count=1):
        """`count` new generators, states (0, 0, key) with keys drawn from this one (TF's rule)."""
        keys = self._make_int64_keys([count]).numpy()
        return [Generator(state=[0, 0, int(k)], alg=self._alg) for k in keys]


_global = {"gen": None}


@export("random.get_global_generator", "random.experimental.get_global_generator")
def get_global_generator():
    """The global Generator, created from a non-deterministic state on first use."""
    if _global["gen"] is None:
        _global["gen"] = Generator.from_non_deterministic_state()
    return _global["gen"]


@export("random.set_global_generator", "random.experimental.set_global_generator")
def set_global_generator(generator):
    _global["gen"] = generator
