"""jf.random's Philox 4x32-10 generator and its stateless samplers: the Random123 known answers,
TF 2.21's values for the same seeds, one answer eagerly and compiled, distributions (moments
and Kolmogorov-Smirnov against scipy.stats), 0-sized shapes and TF's errors (shape and
integer-range arguments included)."""
import numpy as np
import pytest
import random_ref as R
import scipy.stats as st
from conftest import eager_and_traced, run_mode

import jitflow as jf

MODES = ["eager", "function", "jit_scope", "jit_compile"]


def _runs():
    return jf.debugging.stats()["cluster_runs"]




def _np(out):
    return [o.numpy() for o in out] if isinstance(out, (tuple, list)) else out.numpy()


# ---- Philox 4x32-10 itself ------------------------------------------------------------------
# Random123's published known-answer vectors (kat_vectors, philox4x32 with 10 rounds):
# (counter words, key words) -> output words.
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def _state_of(ctr, key):
    words = [ctr[0] | ctr[1] << 32, ctr[2] | ctr[3] << 32, key[0] | key[1] << 32]
    return np.array(words, np.uint64).view(np.int64)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox_known_answers(ctr, key, want, mode):
    """Block 0 of a state is Philox(counter, key): the first four full-range int32 outputs."""
    got = run_mode(mode, lambda s: jf.random._sample("StatelessRandomUniformFullIntV2", [4], s, jf.int32),
              jf.constant(_state_of(ctr, key)))
    assert got.numpy().view(np.uint32).tolist() == list(want)
    # the numpy reference the other tests use agrees with the published answers too
    assert R.philox([ctr], key)[0].tolist() == list(want)


def test_counter_carries_into_its_high_word():
    """Block n is the 128-bit counter plus n: a low word at 2**64 - 1 carries."""
    s = np.array([-1, 5, 9], np.int64)
    got = jf.random._sample("StatelessRandomUniformFullIntV2", [8], jf.constant(s), jf.int32).numpy()
    ctr1 = (0, 0, 6, 0)  # (2**64 - 1) + 1 = 2**64: low word 0, high word 5 + 1
    assert got[4:].view(np.uint32).tolist() == R.philox([ctr1], (9, 0))[0].tolist()


# ---- TF 2.21's values -----------------------------------------------------------------------
# Printed by TensorFlow 2.21 (CPU) for seed=[1, 2]:
#   tf.random.stateless_uniform([6], [1, 2])
TF_U32 = [0.8440604, 0.19204533, 0.9962232, 0.1603874, 0.27199018, 0.649346]
#   tf.random.stateless_uniform([6], [1, 2], dtype=tf.float64)
TF_U64 = [0.7524837538, 0.9697857726, 0.1759223391, 0.8555556649, 0.5148118717, 0.6077450498]
#   tf.random.stateless_normal([6], [1, 2])
TF_N32 = [0.5441101, 0.20738031, 0.07356432, 0.04643455, -1.3015898, -0.9538565]
#   tf.random.stateless_normal([6], [1, 2], dtype=tf.float64)
TF_N64 = [-0.14231181, 0.7406072462, -1.4690476694, 1.1477474537, -0.7218813856, -0.8982175407]
#   tf.random.stateless_truncated_normal([6], [1, 2])
TF_TN32 = [0.5441101, 0.20738031, 0.07356432, 0.04643455, 0.16820592, -1.6850333]
#   tf.random.stateless_truncated_normal([6], [1, 2], dtype=tf.float64)
TF_TN64 = [-0.14231181, 0.7406072462, -0.5523877562, -0.7344500925, -0.3984202396, 0.189965404]
#   tf.random.stateless_uniform([6], [1, 2], minval=-5, maxval=100, dtype=tf.int32) / tf.int64
TF_I32 = [35, 24, 49, 79, 17, 50]
TF_I64 = [4, 28, 27, 88, -2, 64]
#   tf.random.stateless_uniform([6], [1, 2], minval=None, maxval=None, dtype=tf.int32) / tf.int64
TF_FI32 = [1105988140, 1738052849, -335576002, 370444179, 10670227, -246211131]
TF_FI64 = [7464880146280614444, 1591045637757961278, -1057468755545501549, 2524363516007002203,
           6884554327646026923, -2336856294065325742]
#   tf.raw_ops.StatelessRandomGetKeyCounter(seed=[1, 2]) -> key [10413732777507651514],
#   counter [0, 17830669156045600267] (uint64)
TF_KEY, TF_CTR_HI = 10413732777507651514, 17830669156045600267


def _all_samplers(seed):
    s = seed
    return (jf.random.stateless_uniform([6], s), jf.random.stateless_uniform([6], s, dtype=jf.float64),
            jf.random.stateless_normal([6], s), jf.random.stateless_normal([6], s, dtype=jf.float64),
            jf.random.stateless_truncated_normal([6], s),
            jf.random.stateless_truncated_normal([6], s, dtype=jf.float64),
            jf.random.stateless_uniform([6], s, minval=-5, maxval=100, dtype=jf.int32),
            jf.random.stateless_uniform([6], s, minval=-5, maxval=100, dtype=jf.int64),
            jf.random.stateless_uniform([6], s, minval=None, maxval=None, dtype=jf.int32),
            jf.random.stateless_uniform([6], s, minval=None, maxval=None, dtype=jf.int64))


@pytest.mark.parametrize("mode", MODES)
def test_stateless_samplers_give_tf_values(mode):
    got = _np(run_mode(mode, _all_samplers, jf.constant([1, 2])))
    np.testing.assert_array_equal(got[0], np.float32(TF_U32))
    np.testing.assert_allclose(got[1], TF_U64, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got[2], TF_N32, rtol=3e-7, atol=1e-7)
    np.testing.assert_allclose(got[3], TF_N64, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got[4], TF_TN32, rtol=3e-7, atol=1e-7)
    np.testing.assert_allclose(got[5], TF_TN64, rtol=0, atol=1e-8)
    for g, want, dt in zip(got[6:], [TF_I32, TF_I64, TF_FI32, TF_FI64], [np.int32, np.int64] * 2):
        assert g.dtype == dt and g.tolist() == want


def test_key_counter_is_tfs_seed_scrambling():
    s = jf.random._seed_state([1, 2]).numpy().view(np.uint64)
    assert s.tolist() == [0, TF_CTR_HI, TF_KEY]
    np.testing.assert_array_equal(jf.random._seed_state(jf.constant([1, 2], jf.int64)).numpy(), s.view(np.int64))


def test_stateless_split_and_fold_in_give_tf_values():
    # tf.random.experimental.stateless_split([1, 2], 3) and stateless_fold_in([1, 2], 7)
    split = jf.random.experimental.stateless_split([1, 2], 3).numpy()
    assert split.tolist() == [[1105988140, 1738052849], [-335576002, 370444179], [10670227, -246211131]]
    assert jf.random.experimental.stateless_fold_in([1, 2], 7).numpy().tolist() == [1105988140, 7]


def test_seeded_stateful_uniform_gives_tf_values():
    # tf.random.set_seed(1); tf.random.uniform([3], seed=2), twice (one kernel, a stream)
    jf.random.set_seed(1)
    a = jf.random.uniform([3], seed=2).numpy()
    b = jf.random.uniform([3], seed=2).numpy()
    np.testing.assert_array_equal(a, np.float32([0.40639675, 0.8575996, 0.05539584]))
    np.testing.assert_array_equal(b, np.float32([0.16840732, 0.88910615, 0.53549695]))
    jf.random.set_seed(1)
    np.testing.assert_array_equal(jf.random.uniform([3], seed=2).numpy(), a)


# ---- the same answer eagerly and compiled, larger draws against the numpy reference ---------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [[37, 5], [1], [0, 3], []])
def test_every_mode_matches_the_reference(mode, shape):
    seed = jf.constant([123, -7], jf.int64)
    state = R.from_seed(123, -7)
    n = int(np.prod(shape, dtype=np.int64))
    got = _np(run_mode(mode, _all_samplers_of_shape(shape), seed))
    want = [R.uniform(state, n, np.float32), R.uniform(state, n, np.float64), R.normal(state, n, np.float32),
            R.normal(state, n, np.float64), R.truncated_normal(state, n, np.float32),
            R.truncated_normal(state, n, np.float64), R.uniform_int(state, n, -3, 1000, np.int64),
            R.bits(state, n, np.int32)]
    for g, w in zip(got, want):
        assert g.shape == tuple(shape) and g.dtype == w.dtype
        if w.dtype.kind == "f" and g is not got[0] and g is not got[1]:
            np.testing.assert_allclose(g.reshape(-1), w, rtol=2e-6, atol=2e-6)
        else:
            np.testing.assert_array_equal(g.reshape(-1), w)


def _all_samplers_of_shape(shape):
    def f(s):
        return (jf.random.stateless_uniform(shape, s), jf.random.stateless_uniform(shape, s, dtype=jf.float64),
                jf.random.stateless_normal(shape, s), jf.random.stateless_normal(shape, s, dtype=jf.float64),
                jf.random.stateless_truncated_normal(shape, s),
                jf.random.stateless_truncated_normal(shape, s, dtype=jf.float64),
                jf.random.stateless_uniform(shape, s, minval=-3, maxval=1000, dtype=jf.int64),
                jf.random.stateless_uniform(shape, s, minval=None, maxval=None, dtype=jf.int32))
    return f


def test_a_draw_fuses_with_its_consumers():
    """Under jit_scope a draw, its scaling and a reduction become one cluster."""
    @jf.function
    def f(s):
        with jf.jit_scope():
            z = jf.random.stateless_normal([64, 32], s) * 2.0 + 1.0
            return jf.reduce_sum(jf.nn.relu(z), axis=1)
    before = _runs()
    out = f(jf.constant([3, 4]))
    assert _runs() - before == 1
    assert out.shape == (64,) and np.all(out.numpy() > 0)


def test_traced_shape_and_seed_with_a_none_signature():
    # The shape vector's length must be known (jitflow graphs have ranked tensors; TF would
    # trace an unknown-rank output); its values and the seed's are unknown.
    f = jf.function(lambda shape, s: jf.random.stateless_uniform(shape, s),
                    input_signature=[jf.TensorSpec([2], jf.int32), jf.TensorSpec([None], jf.int32)])
    got = f(jf.constant([4, 3]), jf.constant([1, 2])).numpy()
    np.testing.assert_array_equal(got.reshape(-1), R.uniform(R.from_seed(1, 2), 12, np.float32))


# ---- distributions --------------------------------------------------------------------------
N = 20000


def _ks(x, cdf):
    stat, p = st.kstest(np.asarray(x, np.float64).reshape(-1), cdf)
    assert p > 1e-3, (stat, p)


@pytest.mark.parametrize("dtype", [jf.float32, jf.float64])
def test_uniform_distribution(dtype):
    x = jf.random.stateless_uniform([N], [5, 6], minval=-2.0, maxval=3.0, dtype=dtype).numpy()
    assert x.min() >= -2 and x.max() < 3
    _ks(x, st.uniform(-2, 5).cdf)
    assert abs(x.mean() - 0.5) < 0.05 and abs(x.var() - 25 / 12) < 0.08


@pytest.mark.parametrize("dtype", [jf.float32, jf.float64])
def test_normal_distribution(dtype):
    x = jf.random.stateless_normal([N], [5, 6], mean=1.5, stddev=0.5, dtype=dtype).numpy()
    _ks(x, st.norm(1.5, 0.5).cdf)
    assert abs(x.mean() - 1.5) < 0.02 and abs(x.std() - 0.5) < 0.02


@pytest.mark.parametrize("dtype", [jf.float32, jf.float64])
def test_truncated_normal_distribution(dtype):
    x = jf.random.stateless_truncated_normal([N], [5, 6], dtype=dtype).numpy()
    assert np.abs(x).max() < 2
    _ks(x, st.truncnorm(-2, 2).cdf)
    y = jf.random.truncated_normal([N], mean=3.0, stddev=2.0, seed=4, dtype=dtype).numpy()
    assert np.all(np.abs(y - 3) < 4)
    _ks(y, st.truncnorm(-2, 2, loc=3, scale=2).cdf)


@pytest.mark.parametrize("dtype", [jf.int32, jf.int64])
def test_uniform_int_frequencies(dtype):
    x = jf.random.stateless_uniform([N], [5, 6], minval=-3, maxval=7, dtype=dtype).numpy()
    counts = np.bincount(x + 3, minlength=10)
    assert counts.size == 10 and st.chisquare(counts).pvalue > 1e-3


def test_full_range_int_bits_are_uniform():
    x = jf.random.stateless_uniform([N], [5, 6], minval=None, maxval=None, dtype=jf.int64).numpy()
    bits = (x.view(np.uint64)[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    assert np.all(np.abs(bits.mean(0) - 0.5) < 0.02)


@pytest.mark.parametrize("alpha", [0.4, 1.0, 7.5])
def test_gamma_distribution(alpha):
    x = jf.random.stateless_gamma([N], [5, 6], alpha, beta=2.0, dtype=jf.float64).numpy()
    _ks(x, st.gamma(alpha, scale=0.5).cdf)
    g = jf.random.gamma([2, 3], [[1.0], [2.0]], beta=[1.0, 2.0, 4.0], seed=3)
    # shape + broadcast(alpha, beta).shape, as TF 2.21 gives
    assert g.shape == (2, 3, 2, 3) and g.dtype == jf.float32 and np.all(g.numpy() > 0)


def _discrete_fit(x, pmf, lo, hi):
    """Chi-square of the counts in [lo, hi] (tails pooled) against pmf."""
    ks = np.arange(lo, hi + 1)
    obs = np.array([np.sum(x == k) for k in ks] + [np.sum((x < lo) | (x > hi))], np.float64)
    exp = np.append(pmf(ks), 1 - pmf(ks).sum()) * x.size
    keep = exp > 5
    obs, exp = obs[keep], exp[keep]
    assert st.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3


@pytest.mark.parametrize("lam", [0.7, 4.0, 35.0])
def test_poisson_distribution(lam):
    x = jf.random.stateless_poisson([N], [5, 6], lam).numpy()
    assert x.dtype == np.int32 and x.min() >= 0
    _discrete_fit(x, st.poisson(lam).pmf, 0, int(lam * 3 + 10))
    p = jf.random.poisson([2], [1.0, 2.0, 3.0], seed=1)
    assert p.shape == (2, 3) and p.dtype == jf.float32


@pytest.mark.parametrize("n,p", [(10.0, 0.3), (200.0, 0.45), (50.0, 0.9)])
def test_binomial_distribution(n, p):
    x = jf.random.stateless_binomial([N], [5, 6], n, p).numpy()
    assert x.dtype == np.int32 and x.min() >= 0 and x.max() <= n
    _discrete_fit(x, st.binom(int(n), p).pmf, 0, int(n))


def test_binomial_edges_and_broadcasting():
    x = jf.random.stateless_binomial([2, 3], [1, 2], [0.0, 5.0, 7.0], [0.5, 1.0, 0.0]).numpy()
    assert x.tolist() == [[0, 5, 0], [0, 5, 0]]


def test_categorical_frequencies():
    logits = np.log([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    x = jf.random.stateless_categorical(logits, N, [5, 6]).numpy()
    assert x.shape == (2, N) and x.dtype == np.int64
    for row, p in zip(x, np.exp(logits)):
        assert st.chisquare(np.bincount(row, minlength=3), p * N).pvalue > 1e-3
    y = jf.random.categorical(logits, 5, dtype=jf.int32, seed=2)
    assert y.shape == (2, 5) and y.dtype == jf.int32


@pytest.mark.parametrize("mode", MODES)
def test_categorical_compiles(mode):
    out = run_mode(mode, lambda s: jf.random.stateless_categorical([[0.0, 1.0, 2.0]], 7, s), jf.constant([1, 2]))
    np.testing.assert_array_equal(out.numpy(), jf.random.stateless_categorical([[0.0, 1.0, 2.0]], 7, [1, 2]).numpy())


# ---- shuffles -------------------------------------------------------------------------------
def test_shuffle_permutes_the_first_dim():
    x = np.arange(30).reshape(10, 3)
    y = jf.random.shuffle(x, seed=5).numpy()
    assert sorted(y[:, 0].tolist()) == list(range(0, 30, 3)) and np.all(y[:, 1] == y[:, 0] + 1)
    assert not np.array_equal(y, x)
    assert jf.random.shuffle(jf.constant(3)).numpy() == 3
    assert jf.random.shuffle(np.zeros((0, 4))).shape == (0, 4)
    # every position takes every value about equally often over many shuffles
    firsts = [int(jf.random.shuffle(jf.range(4), seed=k)[0]) for k in range(400)]
    assert st.chisquare(np.bincount(firsts, minlength=4)).pvalue > 1e-3


def test_index_shuffle_is_a_bijection():
    for max_index in [0, 1, 9, 1000]:
        idx = np.arange(max_index + 1)
        got = jf.random.experimental.index_shuffle(idx, [5, 6], max_index).numpy()
        assert sorted(got.tolist()) == idx.tolist()
    a = jf.random.experimental.index_shuffle(np.arange(100), [5, 6], 99).numpy()
    b = jf.random.experimental.index_shuffle(np.arange(100), [5, 7], 99).numpy()
    assert not np.array_equal(a, b) and not np.array_equal(a, np.arange(100))
    assert int(jf.random.experimental.index_shuffle(17, [5, 6], 99)) == a[17]


# ---- 0-sized shapes and errors --------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_zero_sized_draws(mode):
    out = run_mode(mode, lambda s: (jf.random.stateless_normal([0, 4], s) + 1.0,
                               jf.random.stateless_uniform([3, 0], s, minval=0, maxval=4, dtype=jf.int32) + 1),
              jf.constant([1, 2]))
    assert out[0].shape == (0, 4) and out[1].shape == (3, 0)


def test_tf_errors():
    E = jf.errors.InvalidArgumentError
    with pytest.raises(E, match="seed must have shape \\[2\\], not \\[3\\]"):
        jf.random.stateless_uniform([2], [1, 2, 3])
    with pytest.raises(E, match="int32 or int64"):
        jf.random.stateless_uniform([2], [1.0, 2.0])
    with pytest.raises(ValueError, match="must be both None or not None"):
        jf.random.stateless_uniform([2], [1, 2], minval=5, dtype=jf.int32)
    with pytest.raises(E, match="Need minval < maxval"):
        jf.random.stateless_uniform([2], [1, 2], minval=5, maxval=5, dtype=jf.int32)
    with pytest.raises(ValueError, match="Argument `dtype` got invalid value"):
        jf.random.stateless_uniform([2], [1, 2], dtype=jf.bool)
    with pytest.raises(TypeError):
        jf.random.stateless_normal([2], [1, 2], dtype=jf.int32)
    with pytest.raises(TypeError):
        jf.random.truncated_normal([2], dtype=jf.int32)
    with pytest.raises(E, match="Dimension -1 must be >= 0"):
        jf.random.stateless_uniform([-1], [1, 2])
    with pytest.raises(E, match="RandomIndexShuffle: max_index must be >= index, but 10 < 11"):
        jf.random.experimental.index_shuffle(11, [1, 2], 10)
    with pytest.raises(E, match="logits should be a matrix"):
        jf.random.stateless_categorical([0.0, 1.0], 3, [1, 2])


@pytest.mark.parametrize("mode", ["function", "jit_compile"])
def test_empty_int_range_raises_at_run_time(mode):
    """minval and maxval known only when the function runs: the kernel's (or the compiled
    check's) error, as TF's."""
    f = jf.function(lambda lo, hi: jf.random.stateless_uniform([3], [1, 2], minval=lo, maxval=hi, dtype=jf.int32),
                    jit_compile=mode == "jit_compile")
    assert f(jf.constant(0), jf.constant(4)).numpy().max() < 4
    with pytest.raises(jf.errors.InvalidArgumentError, match="Need minval < maxval"):
        f(jf.constant(4), jf.constant(4))


def test_stateful_samplers_vary_per_call_and_repeat_with_set_seed():
    jf.random.set_seed(9)
    a = [jf.random.truncated_normal([5]).numpy(), jf.random.shuffle(jf.range(8)).numpy(),
         jf.random.poisson([4], 3.0).numpy(), jf.random.uniform([4], maxval=100, dtype=jf.int64).numpy()]
    jf.random.set_seed(9)
    b = [jf.random.truncated_normal([5]).numpy(), jf.random.shuffle(jf.range(8)).numpy(),
         jf.random.poisson([4], 3.0).numpy(), jf.random.uniform([4], maxval=100, dtype=jf.int64).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    f = jf.function(lambda: jf.random.truncated_normal([5], seed=1))
    assert not np.array_equal(f().numpy(), f().numpy())


# ---- shape and range arguments: TF's checks ------------------------------------------------------
def test_random_ops_refuse_a_scalar_shape_as_tf_does():
    with pytest.raises(jf.errors.InvalidArgumentError, match="shape must be a vector"):
        jf.random.normal(2)
    with pytest.raises(jf.errors.InvalidArgumentError, match="shape must be a vector"):
        jf.random.uniform(jf.constant(2))
    assert jf.random.normal([]).shape == () and jf.random.uniform((2,)).shape == (2,)


@pytest.mark.parametrize("dtype", [jf.int32, jf.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("lo, hi", [(5, 1), (1, 1)])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_random_uniform_int_needs_minval_below_maxval(dtype, lo, hi, mode):
    # Was [3 2] for minval=5, maxval=1. TF: InvalidArgumentError "Need minval < maxval, got 5 >= 1"
    with pytest.raises(jf.errors.InvalidArgumentError, match=f"Need minval < maxval, got {lo} >= {hi}"):
        eager_and_traced(lambda: jf.random.uniform([2], minval=lo, maxval=hi, dtype=dtype))[mode]()


def test_random_uniform_int_bounds_from_tensors_and_scalars():
    with pytest.raises(jf.errors.InvalidArgumentError, match="Need minval < maxval"):
        jf.random.uniform([2], minval=jf.constant(3), maxval=jf.constant(2), dtype=jf.int32)
    with pytest.raises(jf.errors.InvalidArgumentError, match="must be 0-D"):
        jf.random.uniform([2], minval=[0, 1], maxval=5, dtype=jf.int32)
    r = jf.random.uniform([1000], minval=-3, maxval=4, dtype=jf.int32).numpy()
    assert r.min() >= -3 and r.max() <= 3


def test_random_uniform_refuses_bool_dtype_like_tf():
    # TF: ValueError "Argument `dtype` got invalid value <dtype: 'bool'>."
    with pytest.raises(ValueError, match="Argument `dtype` got invalid value"):
        jf.random.uniform([2], maxval=1, dtype=jf.bool)
