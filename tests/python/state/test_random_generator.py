"""jf.random.Generator and jf.random's TF 2.21 behaviours: construction, draws against the numpy
Philox reference, how the state advances in every mode, distributions (moments and
Kolmogorov-Smirnov against scipy.stats), split streams, the global generator inside
jf.function, and a regression test for each bug found by comparing with TF 2.21."""
import numpy as np
import pytest
import random_ref as R
import scipy.stats as st
from conftest import run_mode

import jitflow as jf

MODES = ["eager", "function", "jit_scope", "jit_compile"]
N = 20000


def _runs():
    return jf.debugging.stats()["cluster_runs"]




def _state(g):
    return g.state.numpy().tolist()


def _ks(x, cdf):
    stat, p = st.kstest(np.asarray(x, np.float64).reshape(-1), cdf)
    assert p > 1e-3, (stat, p)


# ---- construction ---------------------------------------------------------------------------
def test_from_seed_and_create_rng_state():
    # TF's create_rng_state: 64-bit words, low first, two's complement; lists left-padded.
    assert _state(jf.random.Generator.from_seed(1)) == [1, 0, 0]
    assert _state(jf.random.Generator.from_seed(-1)) == [-1, -1, -1]
    assert _state(jf.random.Generator.from_seed(2**64 + 5)) == [5, 1, 0]
    assert _state(jf.random.Generator.from_seed([7, 8])) == [0, 7, 8]
    s = jf.random.experimental.create_rng_state(7, "philox")
    assert isinstance(s, jf.Tensor) and s.dtype == jf.int64 and s.numpy().tolist() == [7, 0, 0]


def test_from_state_key_counter_copy_and_resets():
    g = jf.random.Generator.from_state([3, 4, 5], "philox")
    assert _state(g) == [3, 4, 5] and int(g.key) == 5 and g.algorithm == 1
    assert _state(jf.random.Generator.from_key_counter([9], [1, 2], "philox")) == [1, 2, 9]
    c = jf.random.Generator(copy_from=g)
    c.normal([2])
    assert _state(g) == [3, 4, 5], "a copy owns its own state"
    g.reset_from_seed(11)
    assert _state(g) == [11, 0, 0]
    g.reset([1, 1, 1])
    assert _state(g) == [1, 1, 1]
    g.reset_from_key_counter(4, [2, 3])
    assert _state(g) == [2, 3, 4]
    with pytest.raises(ValueError, match="Philox"):
        jf.random.Generator.from_seed(1, alg="threefry")


def test_from_non_deterministic_state_differs_per_generator():
    a, b = jf.random.Generator.from_non_deterministic_state(), jf.random.Generator.from_non_deterministic_state()
    assert _state(a) != _state(b)
    assert not np.array_equal(a.normal([8]).numpy(), b.normal([8]).numpy())


# ---- values: the stateless samplers at the current state (docs/random.md: exact) -------------
STATE = [123456789, 42, -987654321]


def _draws(g):
    return (g.normal([5, 3]), g.uniform([7], dtype=jf.float64), g.uniform([4], minval=-3, maxval=9, dtype=jf.int64),
            g.uniform_full_int([6]), g.truncated_normal([9]), g.normal([2], dtype=jf.float64))


def _reference():
    """The same draws from random_ref, each at the counter the draws before it left."""
    lo, want = STATE[0], []
    for n, f in [(15, lambda s, n: R.normal(s, n, np.float32).reshape(5, 3)),
                 (7, lambda s, n: R.uniform(s, n, np.float64)),
                 (4, lambda s, n: R.uniform_int(s, n, -3, 9, np.int64)),
                 (6, lambda s, n: R.bits(s, n, np.int64)),
                 (9, lambda s, n: R.truncated_normal(s, n, np.float32)),
                 (2, lambda s, n: R.normal(s, n, np.float64))]:
        want.append(f([lo, STATE[1], STATE[2]], n))
        lo += 256 * n
    return want, [lo, STATE[1], STATE[2]]


@pytest.mark.parametrize("mode", MODES)
def test_draws_equal_the_reference_and_the_state_advances(mode):
    g = jf.random.Generator.from_state(STATE, "philox")
    got = [t.numpy() for t in run_mode(mode, lambda: _draws(g))]
    want, end = _reference()
    assert _state(g) == end
    for i, (a, b) in enumerate(zip(got, want)):
        if i in (0, 4, 5):  # normals: numpy's and the compiled sin/cos/log differ in the last bits
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mode", ["function", "jit_scope", "jit_compile"])
def test_each_call_advances_the_captured_state(mode):
    g = jf.random.Generator.from_seed(5)
    if mode == "jit_scope":
        def body():
            with jf.jit_scope():
                return g.normal([3]) * 2.0
        f = jf.function(body)
    else:
        f = jf.function(lambda: g.normal([3]) * 2.0, jit_compile=mode == "jit_compile")
    before = _runs()
    a, b = f().numpy(), f().numpy()
    if mode != "function":
        assert _runs() >= before + 2
    assert _state(g) == [5 + 2 * 3 * 256, 0, 0] and not np.array_equal(a, b)
    np.testing.assert_allclose(b, 2 * R.normal([5 + 768, 0, 0], 3, np.float32), rtol=1e-5, atol=1e-6)
    assert f.experimental_get_tracing_count() == 1


def test_traced_shape_draw_advances_the_state():
    g = jf.random.Generator.from_state([0, 0, 9], "philox")
    f = jf.function(lambda s: g.normal(s))
    assert f(jf.constant([2, 3])).shape == (2, 3)
    assert _state(g) == [6 * 256, 0, 9]
    np.testing.assert_allclose(f(jf.constant([4])).numpy(), R.normal([6 * 256, 0, 9], 4, np.float32), rtol=1e-6)


# ---- distributions --------------------------------------------------------------------------
def test_generator_distributions():
    g = jf.random.Generator.from_seed(2024)
    x = g.normal([N], mean=1.5, stddev=0.5).numpy()
    _ks(x, st.norm(1.5, 0.5).cdf)
    assert abs(x.mean() - 1.5) < 0.02 and abs(x.std() - 0.5) < 0.02
    u = g.uniform([N], minval=-2.0, maxval=3.0, dtype=jf.float64).numpy()
    _ks(u, st.uniform(-2, 5).cdf)
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.05
    t = g.truncated_normal([N]).numpy()
    assert np.abs(t).max() < 2
    _ks(t, st.truncnorm(-2, 2).cdf)
    b = g.uniform_full_int([N]).numpy().view(np.uint64)
    ones = np.array([(b >> np.uint64(k)) & np.uint64(1) for k in range(64)], np.float64).mean(axis=1)
    assert np.all(np.abs(ones - 0.5) < 0.02), ones
    k = g.uniform([N], minval=0, maxval=10, dtype=jf.int32).numpy()
    assert st.chisquare(np.bincount(k, minlength=10)).pvalue > 1e-3


@pytest.mark.parametrize("n,p", [(10, 0.3), (200, 0.6)])
def test_generator_binomial_distribution(n, p):
    x = jf.random.Generator.from_seed(7).binomial([N], counts=float(n), probs=p).numpy()
    assert x.dtype == np.int32 and x.min() >= 0 and x.max() <= n
    assert abs(x.mean() - n * p) < 4 * np.sqrt(n * p * (1 - p) / N)
    ks = np.arange(n + 1)
    exp, obs = st.binom.pmf(ks, n, p) * N, np.bincount(x, minlength=n + 1).astype(np.float64)
    keep = exp > 5
    assert st.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue > 1e-3


# ---- split and make_seeds -------------------------------------------------------------------
def test_split_streams_are_independent_and_deterministic():
    kids = jf.random.Generator.from_seed(99).split(3)
    again = jf.random.Generator.from_seed(99).split(3)
    keys = [_state(k) for k in kids]
    assert keys == [_state(k) for k in again]
    assert all(k[:2] == [0, 0] for k in keys) and len({k[2] for k in keys}) == 3
    draws = [k.normal([N]).numpy() for k in kids]
    for d in draws:
        _ks(d, st.norm.cdf)
    for i in range(3):
        for j in range(i + 1, 3):
            assert abs(np.corrcoef(draws[i], draws[j])[0, 1]) < 4 / np.sqrt(N)
    np.testing.assert_array_equal(again[1].normal([N]).numpy(), draws[1])


def test_make_seeds():
    g = jf.random.Generator.from_seed(3)
    s = g.make_seeds(4)
    assert s.shape == (2, 4) and s.dtype == jf.int64 and s.numpy()[1].tolist() == [0] * 4
    assert _state(g) == [3 + 4 * 256, 0, 0]
    np.testing.assert_array_equal(s.numpy()[0], R.bits([3, 0, 0], 4, np.int64))
    assert jf.random.stateless_normal([2], s[:, 0]).shape == (2,)


# ---- the global generator -------------------------------------------------------------------
def test_global_generator_in_a_function():
    old = jf.random.get_global_generator()
    try:
        jf.random.set_global_generator(jf.random.Generator.from_seed(31))
        assert jf.random.experimental.get_global_generator() is jf.random.get_global_generator()
        f = jf.function(lambda: jf.random.get_global_generator().normal([3]))
        a, b = f().numpy(), f().numpy()
        assert not np.array_equal(a, b) and f.experimental_get_tracing_count() == 1
        np.testing.assert_allclose(a, R.normal([31, 0, 0], 3, np.float32), rtol=1e-6)
        assert _state(jf.random.get_global_generator()) == [31 + 2 * 768, 0, 0]
        jf.random.experimental.set_global_generator(jf.random.Generator.from_seed(32))
        assert _state(jf.random.get_global_generator()) == [32, 0, 0]
    finally:
        jf.random.set_global_generator(old)


# ---- regressions: the bugs found by comparing with TF 2.21 ---------------------------------
def test_index_shuffle_takes_tfs_seed_and_gives_tfs_permutation():
    # TF 2.21 printed these (its docstring's examples and more, seeds [2] padded to [3]).
    f = jf.random.experimental.index_shuffle
    assert f(jf.range(4), [5, 9], 3).numpy().tolist() == [2, 0, 1, 3]
    assert f(jf.range(10, dtype=jf.int64), [5, 8], 9).numpy().tolist() == [3, 8, 0, 1, 2, 7, 6, 9, 4, 5]
    assert f(jf.range(5, dtype=jf.int64), [5, 9], 100000).numpy().tolist() == [60062, 74737, 47055, 8914, 383]
    got = f(jf.range(8, dtype=jf.int64), jf.constant([5, 9], jf.int64), 1000000).numpy().tolist()
    assert got == [223059, 157266, 87155, 17778, 476964, 411189, 349238, 279863]
    assert int(f(jf.constant(0), [5, 9], 0)) == 0
    # the numpy reference of TF's cipher, where TF's key sees the whole seed
    for seed, top in [([1, 2], 1000), ([200, 17], 70000), ([12345, 23456], 10**9), ([7, 3], 2**40 + 3)]:
        s3 = [R.INDEX_SHUFFLE_PAD] + seed
        assert R.index_shuffle_tf_exact(s3, top)
        idx = [0, 1, 17, top // 2, top]
        assert f(jf.constant(idx, jf.int64), jf.constant(seed, jf.int64), top).numpy().tolist() == \
            [R.index_shuffle(i, s3, top) for i in idx]


def test_index_shuffle_uses_every_seed_bit():
    # TF keys its cipher with the low bits of each word only: [5, 9], [5, 265] and [5, 9 + 2**32]
    # give TF one permutation of [0, 9]; jitflow folds the dropped bits in.
    f = jf.random.experimental.index_shuffle
    perms = {tuple(f(jf.range(1000, dtype=jf.int64), jf.constant(s, jf.int64), 999).numpy().tolist())
             for s in [[5, 9], [5, 265], [5, 9 + 2**32], [5 + 2**40, 9], [-1, -1], [255, 255]]}
    assert len(perms) == 6
    for p in perms:
        assert sorted(p) == list(range(1000))


def test_index_shuffle_is_a_bijection_where_tfs_is_not():
    # max_index = 2**16: TF's 16-bit block cannot hold it (TF maps 65536 where it maps 0)
    top = 2**16
    got = jf.random.experimental.index_shuffle(jf.range(top + 1, dtype=jf.int64), [3, 4], top).numpy()
    assert sorted(got.tolist()) == list(range(top + 1))


def test_index_shuffle_errors():
    E, f = jf.errors.InvalidArgumentError, jf.random.experimental.index_shuffle
    with pytest.raises(E, match="RandomIndexShuffle: Seed must be a vector of size \\[3\\]"):
        f(jf.range(3), [5, 9, 1], 3)  # TF pads [3] to [4] and its op refuses it too
    with pytest.raises(E, match="RandomIndexShuffle: Seed must be"):
        f(jf.range(3), [[5, 9], [1, 2], [3, 4]], 3)  # TF 2.21's wrapper pads [n, 2] to [n + 1, 2]
    with pytest.raises(E, match="index must be >= 0 but was -1"):
        f(-1, [5, 9], 3)
    with pytest.raises(E, match="max_index must be >= 0 but was -3"):
        f(1, [5, 9], -3)


def test_index_shuffle_raw_op_takes_a_batch_of_seeds():
    seeds = jf.constant([[R.INDEX_SHUFFLE_PAD, 5, 9], [R.INDEX_SHUFFLE_PAD, 5, 8]], jf.int64)
    got = jf.random._x("RandomIndexShuffle", (jf.constant([1, 1], jf.int64), seeds, jf.constant(9, jf.int64)))
    assert got.numpy().tolist() == [0, 8]  # TF's [5, 9] and [5, 8] permutations at index 1


@pytest.mark.parametrize("dtype", [jf.float32, jf.float64])
def test_gamma_is_floored_at_the_smallest_normal(dtype):
    tiny = np.finfo(dtype.as_numpy_dtype).tiny
    for g in [jf.random.stateless_gamma([10000], [1, 2], 0.01, dtype=dtype),
              jf.random.stateless_gamma([10000], [1, 2], 0.01, beta=1e30, dtype=dtype),
              jf.random.gamma([10000], 0.01, dtype=dtype, seed=3)]:
        x = g.numpy()
        assert x.min() == tiny and not np.any(x == 0)  # TF 2.21: min 1.1754944e-38 for float32
    assert np.isnan(jf.random.stateless_gamma([2], [1, 2], -1.0).numpy()).all()


def test_fold_in_returns_datas_dtype():
    # TF 2.21 printed these for stateless_fold_in(tf.constant([1, 2], tf.int64), 7 / int64 7)
    a = jf.random.experimental.stateless_fold_in(jf.constant([1, 2], jf.int64), 7)
    assert a.dtype == jf.int32 and a.numpy().tolist() == [1105988140, 7]
    b = jf.random.fold_in([1, 2], jf.constant(7, jf.int64))
    assert b.dtype == jf.int64 and b.numpy().tolist() == [7464880146280614444, 7]
    with pytest.raises(TypeError):
        jf.random.fold_in([1, 2], 1.5)


def test_get_seed_follows_tf():
    jf.random.set_seed(None)
    assert jf.random.get_seed(2**31 - 1) == (87654321, 0)
    assert jf.random.get_seed(2**40) == (87654321, 2**40 % (2**31 - 1))
    jf.random.set_seed(0)
    assert jf.random.get_seed(0) == (0, 2**31 - 1)
    jf.random.set_seed(2**31 + 5)
    assert jf.random.get_seed(-4) == (6, (-4) % (2**31 - 1))
    jf.random.set_seed(None)


def test_global_seed_only_draws_give_tfs_values():
    # TF 2.21 printed these after tf.random.set_seed(1): eager ops take their op seeds from
    # random.Random(1), functions count theirs from 0 per traced graph. (TF printed 8 digits.)
    def same(got, want):
        np.testing.assert_allclose(got, np.float32(want), rtol=1e-6)

    jf.random.set_seed(1)
    same(jf.random.uniform([3]).numpy(), [0.16513085, 0.9014813, 0.6309742])
    same(jf.random.uniform([3]).numpy(), [0.51010704, 0.44353175, 0.4085331])
    same(jf.random.normal([2]).numpy(), [-0.45701224, -0.40686727])
    jf.random.set_seed(1)
    h = jf.function(lambda: (jf.random.uniform([2]), jf.random.uniform([2])))
    first, second = [t.numpy() for t in h()], [t.numpy() for t in h()]
    same(first[0], [0.81269646, 0.07857466])
    same(first[1], [0.05554414, 0.01869845])
    same(second[0], [0.8489425, 0.09832478])
    same(second[1], [0.5773283, 0.29636776])
    np.testing.assert_array_equal(jf.function(lambda: jf.random.uniform([2]))().numpy(), first[0])
    jf.random.set_seed(0)
    same(jf.random.uniform([2], seed=0).numpy(), [0.01975703, 0.00704217])
    jf.random.set_seed(2**31 + 5)
    same(jf.random.uniform([2], seed=2**31 + 3).numpy(), [0.41674268, 0.02721405])
    jf.random.set_seed(None)


# TF 2.21's g.state after g = Generator.from_state([0, 0, 5]); g.binomial(shape, counts, probs),
# and its g.normal([3]) after that (printed by TF).
BINOMIAL_SKIPS = [
    ([2, 3], [1.0, 2.0, 3.0], 0.5, 192000, [1.2381532, 0.04628917, -0.49592188]),
    ([5], 1.0, [0.5] * 5, 256000, [0.45209643, -1.1820481, -1.6626472]),
    ([0], 1.0, 0.5, 38400, [0.15365021, -0.21852657, 0.70478743]),
    ([], 3.0, 0.2, 51200, [-1.8497938, 0.26913664, -0.07912897]),
    ([2, 5], [1.0] * 5, 0.5, 320000, [-0.8032041, -1.8155111, 0.01092933]),
    ([50], 10.0, 0.5, 678400, None),
]


@pytest.mark.parametrize("shape,counts,probs,lo,after", BINOMIAL_SKIPS)
def test_binomial_advances_the_state_as_tf(shape, counts, probs, lo, after):
    g = jf.random.Generator.from_state([0, 0, 5], "philox")
    g.binomial(shape, counts=counts, probs=probs)
    assert _state(g) == [lo, 0, 5]
    if after is not None:
        np.testing.assert_allclose(g.normal([3]).numpy(), np.float32(after), rtol=1e-6)


@pytest.mark.parametrize("mode", ["function", "jit_scope"])
def test_traced_shape_skip_carries_into_the_high_word(mode):
    # TF 2.21: Generator.from_state([-1, 0, 5]) then normal(traced [2]) leaves [511, 1, 5]
    g = jf.random.Generator.from_state([-1, 0, 5], "philox")

    def draw(s):
        if mode == "jit_scope":
            with jf.jit_scope():
                return g.normal(s) * 2.0
        return g.normal(s)
    out = jf.function(draw)(jf.constant([2]))
    assert _state(g) == [511, 1, 5]
    np.testing.assert_allclose(out.numpy() / (2.0 if mode == "jit_scope" else 1.0),
                               R.normal([-1, 0, 5], 2, np.float32), rtol=1e-5, atol=1e-6)
    g2 = jf.random.Generator.from_state([-1, 0, 5], "philox")
    g2.normal([2])
    assert _state(g2) == [511, 1, 5]


def test_skip():
    # TF 2.21 printed: skip(10) from [-1, 0, 5] -> [2559, 1, 5]; skip(-1) from [0, 0, 5] -> [-256, 0, 5]
    g = jf.random.Generator.from_state([-1, 0, 5], "philox")
    assert g.skip(10).numpy().tolist() == [-1, 0, 5] and _state(g) == [2559, 1, 5]
    g = jf.random.Generator.from_state([0, 0, 5], "philox")
    g.skip(-1)
    assert _state(g) == [-256, 0, 5]
    f = jf.function(lambda d: g.skip(d))
    assert f(jf.constant(3)).numpy().tolist() == [-256, 0, 5] and _state(g) == [512, 1, 5]
    h = jf.random.Generator.from_state([0, 0, 5], "philox")
    h.skip(4)
    k = jf.random.Generator.from_state([0, 0, 5], "philox")
    k.normal([4])
    np.testing.assert_array_equal(h.normal([3]).numpy(), k.normal([3]).numpy())


def test_experimental_aliases_and_stateless_shuffle():
    e = jf.random.experimental
    assert e.Generator is jf.random.Generator and e.create_rng_state is jf.random.create_rng_state
    assert e.set_global_generator is jf.random.set_global_generator
    x = jf.range(100)
    a, b = e.stateless_shuffle(x, [1, 2]).numpy(), e.stateless_shuffle(x, [1, 2]).numpy()
    assert np.array_equal(a, b) and sorted(a.tolist()) == list(range(100)) and not np.array_equal(a, np.arange(100))
    assert not np.array_equal(a, e.stateless_shuffle(x, [1, 3]).numpy())
    m = e.stateless_shuffle(jf.reshape(jf.range(12), [4, 3]), [4, 4]).numpy()
    assert sorted(m[:, 0].tolist()) == [0, 3, 6, 9] and np.all(m[:, 1] == m[:, 0] + 1)
