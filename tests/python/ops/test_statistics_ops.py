"""The statistics and normalization functions (jitflow/stats_ops.py) in the five modes against
float64 numpy references: the compositions (reduce_variance/std/logsumexp/euclidean_norm,
count_nonzero, nn.moments, nn.batch_normalization, unsorted_segment_mean/sqrt_n), the bool
reductions and integer reduce_prod, gradients against finite differences, NaN/Inf, empty axes
and 0-sized inputs, TF 2.21's segment rules and errors, and the fused kernel counts."""
import warnings

import numpy as np
import pytest
import scipy.special
from conftest import numeric_grad

import jitflow as jf

MODES = ["eager", "function", "jit_scope", "jit_compile", "none_signature"]
COMPILED = ("jit_scope", "jit_compile", "none_signature")


def run(mode, fn, *xs, compiled=True):
    """fn(*xs) in the mode, outputs as numpy. Compiled modes assert compiled code ran (unless
    compiled=False: functions whose parts are eager-only)."""
    ts = [jf.constant(x) for x in xs]
    if mode == "eager":
        out = fn(*ts)
    else:
        def body(*a):
            if mode == "jit_scope":
                with jf.jit_scope():
                    return fn(*a)
            return fn(*a)
        kw = {"jit_compile": True} if mode == "jit_compile" or (mode == "none_signature" and compiled) else {}
        if mode == "none_signature":
            kw["input_signature"] = [jf.TensorSpec([None] * np.ndim(x), jf.as_dtype(np.asarray(x).dtype.name))
                                     for x in xs]
        before = jf.debugging.stats()["cluster_runs"]
        out = jf.function(body, **kw)(*ts)
        if compiled and mode in COMPILED:
            assert jf.debugging.stats()["cluster_runs"] > before, f"{mode}: no compiled code ran"
    return [o.numpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]


def close(got, want, dtype):
    tol = 2e-5 if np.dtype(dtype) == np.float32 else 1e-12
    for g, w in zip(got, want if isinstance(want, tuple) else (want,)):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g.astype(np.float64), w, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, w)


def _bn_ref(x, m, v, o, s):
    return (x - m) / np.sqrt(v + 1e-3) * s + o


def _lse_all(x):
    # scipy's logsumexp fails on an empty array with axis=None: the sum of nothing is 0.
    return scipy.special.logsumexp(x) if x.size else np.float64(-np.inf)


def _bn_params(x, s, bn):
    """batch_normalization with per-column parameters made from the column sums s."""
    return bn(x, s * 0.5, s * s + 1.0, s - 1.0, s + 2.0, 1e-3)


# name -> (jitflow call on (x,), float64 numpy reference). Axes cover None, one, several, a
# negative axis, keepdims and the empty axis list (no reduction: TF's values checked in 2.21).
COMPOSITIONS = {
    "variance_all": (lambda x: jf.math.reduce_variance(x), lambda x: np.var(x)),
    "variance_axis1": (lambda x: jf.math.reduce_variance(x, axis=1), lambda x: np.var(x, axis=1)),
    "variance_keep": (lambda x: jf.math.reduce_variance(x, axis=[0, 1], keepdims=True),
                      lambda x: np.var(x, axis=(0, 1), keepdims=True)),
    "variance_noaxes": (lambda x: jf.math.reduce_variance(x, axis=[]), lambda x: np.zeros_like(x)),
    "std_axis0": (lambda x: jf.math.reduce_std(x, axis=0), lambda x: np.std(x, axis=0)),
    "std_keep": (lambda x: jf.math.reduce_std(x, axis=-1, keepdims=True), lambda x: np.std(x, axis=-1, keepdims=True)),
    "logsumexp_all": (lambda x: jf.reduce_logsumexp(x), lambda x: _lse_all(x)),
    "logsumexp_axis1": (lambda x: jf.math.reduce_logsumexp(x, axis=1), lambda x: scipy.special.logsumexp(x, axis=1)),
    "logsumexp_keep": (lambda x: jf.reduce_logsumexp(x, axis=0, keepdims=True),
                       lambda x: scipy.special.logsumexp(x, axis=0, keepdims=True)),
    "logsumexp_noaxes": (lambda x: jf.reduce_logsumexp(x, axis=[]), lambda x: x),
    "euclidean_all": (lambda x: jf.math.reduce_euclidean_norm(x), lambda x: np.sqrt(np.sum(x * x))),
    "euclidean_axis1_keep": (lambda x: jf.math.reduce_euclidean_norm(x, axis=1, keepdims=True),
                             lambda x: np.sqrt(np.sum(x * x, axis=1, keepdims=True))),
    "count_nonzero": (lambda x: jf.math.count_nonzero(jf.round(x)), lambda x: np.count_nonzero(np.round(x))),
    "count_nonzero_axis": (lambda x: jf.math.count_nonzero(jf.round(x), axis=0, keepdims=True, dtype=jf.float32),
                           lambda x: np.count_nonzero(np.round(x), axis=0, keepdims=True).astype(np.float32)),
    "moments": (lambda x: jf.nn.moments(x, axes=[0]), lambda x: (np.mean(x, axis=0), np.var(x, axis=0))),
    "moments_keep": (lambda x: jf.nn.moments(x, axes=[0, 1], keepdims=True),
                     lambda x: (np.mean(x, keepdims=True), np.var(x, keepdims=True))),
    "batch_norm": (lambda x: _bn_params(x, jf.reduce_sum(x, axis=0), jf.nn.batch_normalization),
                   lambda x: _bn_params(x, np.sum(x, axis=0), lambda *a: _bn_ref(*a[:5]))),
    "batch_norm_moments": (lambda x: jf.nn.batch_normalization(x, *jf.nn.moments(x, axes=[0]), None, None, 1e-3),
                           lambda x: _bn_ref(x, x.mean(0), x.var(0), 0.0, 1.0)),
    "any_all": (lambda x: jf.cast(jf.reduce_any(x > 0.5), x.dtype) + jf.cast(jf.math.reduce_all(x > -2.0, axis=1), x.dtype),
                lambda x: float(np.any(x > 0.5)) + np.all(x > -2.0, axis=1)),
    "any_all_keep": (lambda x: jf.where(jf.reduce_all(x < 1.0, axis=-1, keepdims=True), x, -x),
                     lambda x: np.where(np.all(x < 1.0, axis=-1, keepdims=True), x, -x)),
}

SHAPES = [(3, 4), (1, 4), (0, 4), (3, 0)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compositions_in_every_mode(name, mode, shape, dtype, rng):
    fn, ref = COMPOSITIONS[name]
    x = rng.uniform(-3, 3, size=shape).astype(dtype)
    with warnings.catch_warnings():  # the mean or variance of nothing is NaN, as in TF
        warnings.simplefilter("ignore", RuntimeWarning)
        want = ref(x.astype(np.float64))
    close(run(mode, fn, x), want, dtype)


@pytest.mark.parametrize("mode", ["eager", "jit_compile"])
@pytest.mark.parametrize("axis", [None, 0, 3, -2, [0, 2], [1, 3], [0, 3], [0, 1, 3], []], ids=str)
def test_reductions_over_every_axis_pattern(axis, mode, rng):
    """Contiguous, interleaved (transposed eagerly) and empty axis lists, kept or not."""
    b = rng.random((3, 4, 5, 6)) < 0.3
    y = rng.standard_normal((3, 4, 5, 6))
    i = rng.integers(-9, 10, size=(3, 4, 5, 6)).astype(np.int32)
    ax = tuple(axis) if isinstance(axis, list) else axis
    got = run(mode, lambda b, y, i: (jf.reduce_any(b, axis=axis), jf.reduce_all(b, axis=axis, keepdims=True),
                                     jf.math.reduce_euclidean_norm(y, axis=axis),
                                     jf.math.reduce_euclidean_norm(i, axis=axis, keepdims=True)), b, y, i)
    want = (np.any(b, axis=ax), np.all(b, axis=ax, keepdims=True), np.sqrt(np.sum(y * y, axis=ax)),
            np.trunc(np.sqrt(np.sum(i.astype(np.float64) ** 2, axis=ax, keepdims=True))).astype(np.int32))
    close(got, want, "float64")


# ---- NaN and Inf ---------------------------------------------------------------------------
_SPECIAL = np.array([[-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0], [np.inf, np.inf, 0.0],
                     [np.inf, -np.inf, 1.0], [np.nan, 1.0, 2.0], [1000.0, 1000.0, -1000.0]])


@pytest.mark.parametrize("mode", MODES)
def test_nan_and_inf(mode):
    """TF 2.21's values: logsumexp of an all -inf row is -inf, any +inf gives +inf (also with
    -inf beside it), NaN gives NaN, large values do not overflow; the variance of a row with
    an inf is NaN; count_nonzero counts NaN and inf; the norm of an inf is inf."""
    got = run(mode, lambda x: (jf.reduce_logsumexp(x, axis=1), jf.math.reduce_variance(x, axis=1),
                               jf.math.count_nonzero(x, axis=1), jf.math.reduce_euclidean_norm(x, axis=1)), _SPECIAL)
    lse = np.array([-np.inf, np.inf, np.inf, np.inf, np.nan, 1000.0 + np.log(2.0)])
    np.testing.assert_allclose(got[0], lse, rtol=1e-12)
    np.testing.assert_array_equal(np.isnan(got[1]), [True, True, True, True, True, False])
    np.testing.assert_array_equal(got[2], [3, 3, 2, 3, 3, 3])
    np.testing.assert_array_equal(got[3][:5], [np.inf, np.inf, np.inf, np.inf, np.nan])
    # float32 sums of squares overflow past ~1.8e19 as in TF's kernel (no rescaling).
    big = run(mode, lambda x: jf.math.reduce_euclidean_norm(x), np.array([3e30, 4e30], np.float32))
    assert big[0] == np.inf


def test_exp_of_minus_inf_is_zero_on_long_float64_arrays():
    """Eigen 3.4's packet exp for double gave 5.6e-309 for -inf (logsumexp of an all -inf row
    was -708.7, not -inf): the eager kernel repairs those lanes."""
    x = np.array([-np.inf] * 9 + [-720.0, -708.0, -800.0] * 3)
    np.testing.assert_allclose(jf.exp(jf.constant(x)).numpy(), np.exp(x), rtol=1e-15, atol=0)
    assert jf.reduce_logsumexp(jf.constant(np.full((2, 16), -np.inf)), axis=1).numpy().tolist() == [-np.inf] * 2


def test_logsumexp_gradients_at_infinities():
    """TF 2.21: the gradient at an all -inf row and at +inf is NaN where TF's is, and the -inf
    element of a finite row gets 0."""
    for row, want in [([-np.inf, -np.inf], [np.nan, np.nan]), ([np.inf, 1.0], [np.nan, 0.0]),
                      ([-np.inf, 1.0], [0.0, 1.0]), ([np.nan, 1.0], [np.nan, np.nan])]:
        x = jf.constant(row)
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = jf.reduce_logsumexp(x)
        np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.array(want, np.float32), err_msg=str(row))


# ---- gradients against finite differences --------------------------------------------------
GRADS = {
    "variance": (lambda x: jf.math.reduce_variance(x, axis=1), lambda x: np.var(x, axis=1)),
    "std": (lambda x: jf.math.reduce_std(x, axis=0, keepdims=True), lambda x: np.std(x, axis=0, keepdims=True)),
    "logsumexp": (lambda x: jf.reduce_logsumexp(x, axis=1), lambda x: scipy.special.logsumexp(x, axis=1)),
    "logsumexp_all": (lambda x: jf.reduce_logsumexp(x * 40.0), lambda x: scipy.special.logsumexp(x * 40.0)),
    "euclidean": (lambda x: jf.math.reduce_euclidean_norm(x, axis=0), lambda x: np.sqrt(np.sum(x * x, axis=0))),
    "moments": (lambda x: jf.nn.moments(x, axes=[0]), lambda x: (np.mean(x, axis=0), np.var(x, axis=0))),
    "batch_norm": (lambda x: jf.nn.batch_normalization(x, *jf.nn.moments(x, axes=[0]), x[1], x[2], 1e-3),
                   lambda x: _bn_ref(x, x.mean(0), x.var(0), x[1], x[2])),
    "unsorted_segment_mean": (lambda x: jf.math.unsorted_segment_mean(x, [2, 0, 2, -1, 2], 4),
                              lambda x: np.stack([x[1], np.zeros(4), (x[0] + x[2] + x[4]) / 3, np.zeros(4)])),
}


@pytest.mark.parametrize("mode", ["eager", "function", "jit_compile"])
@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_finite_differences(name, mode, rng):
    fn, ref = GRADS[name]
    x = rng.uniform(-2, 2, size=(5, 4))
    outs = ref(x)
    ws = [rng.standard_normal(np.shape(o)) for o in (outs if isinstance(outs, tuple) else (outs,))]

    def loss_np(v):
        r = ref(v)
        return sum(float(np.sum(o * w)) for o, w in zip(r if isinstance(r, tuple) else (r,), ws))

    def grad(t):
        with jf.GradientTape() as tape:
            tape.watch(t)
            out = fn(t)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            loss = jf.add_n([jf.reduce_sum(o * w) for o, w in zip(outs, ws)])
        return tape.gradient(loss, t)

    t = jf.constant(x)
    if mode == "eager":
        g = grad(t)
    else:
        eager_parts = name == "unsorted_segment_mean"  # UnsortedSegmentSum: no emitter yet
        f = jf.function(grad, jit_compile=mode == "jit_compile" and not eager_parts)
        before = jf.debugging.stats()["cluster_runs"]
        g = f(t)
        if mode == "jit_compile" and not eager_parts:
            assert jf.debugging.stats()["cluster_runs"] > before
    np.testing.assert_allclose(g.numpy(), numeric_grad(loss_np, [x])[0], rtol=1e-6, atol=1e-7)


def test_batch_normalization_gradients_for_every_input(rng):
    x, m, v, o, s = (rng.uniform(0.5, 2.0, size=sh) for sh in [(3, 4), (4,), (4,), (4,), (4,)])
    ws = rng.standard_normal((3, 4))
    ts = [jf.constant(a) for a in (x, m, v, o, s)]
    with jf.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        loss = jf.reduce_sum(jf.nn.batch_normalization(*ts, 1e-3) * ws)
    got = tape.gradient(loss, ts)
    want = numeric_grad(lambda *a: float(np.sum(_bn_ref(*a) * ws)), [x, m, v, o, s])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=1e-7)


# ---- dtype rules and errors ----------------------------------------------------------------
def test_dtype_rules_and_errors():
    ints = jf.constant([[1, 2], [3, 5]])
    with pytest.raises(TypeError, match="Input must be either real or complex. Received integer type"):
        jf.math.reduce_variance(ints)
    with pytest.raises(TypeError, match="Input must be either real or complex"):
        jf.math.reduce_std(ints, axis=0)
    with pytest.raises(TypeError, match="IsFinite"):  # TF: IsFinite refuses ints too
        jf.reduce_logsumexp(ints)
    with pytest.raises(TypeError, match="Any"):
        jf.reduce_any(jf.constant([1.0]))
    with pytest.raises(TypeError, match="All"):
        jf.reduce_all(jf.constant([1]))
    with pytest.raises(TypeError):
        jf.math.reduce_euclidean_norm(jf.constant([True]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Invalid reduction dimension"):
        jf.reduce_any(jf.constant([True]), axis=1)
    # Integers: TF's values (a truncated square root; integer moments divide as integers).
    np.testing.assert_array_equal(jf.math.reduce_euclidean_norm(ints, axis=1).numpy(), [2, 5])
    # Integer sums of squares wrap as TF's; one that wraps negative gives TF 2.21's lowest value.
    big = jf.constant([[50000, 50000], [46341, 0]])
    for f in (jf.math.reduce_euclidean_norm, jf.function(jf.math.reduce_euclidean_norm, jit_compile=True)):
        assert f(big, axis=1).numpy().tolist() == [26552, np.iinfo(np.int32).min]
    big64 = jf.constant([[2**32, 0], [2**31, 3]], jf.int64)  # 2**64 wraps to 0, 2**62 + 9 does not
    for f in (jf.math.reduce_euclidean_norm, jf.function(jf.math.reduce_euclidean_norm, jit_compile=True)):
        assert f(big64, axis=1).numpy().tolist() == [0, 2**31]
    mean, var = jf.nn.moments(ints, axes=[0])
    assert mean.dtype == jf.int32 and mean.numpy().tolist() == [2, 3] and var.numpy().tolist() == [1, 2]
    # count_nonzero: int64 by default, `dtype` casts, keepdims=None is False, bools count.
    c = jf.math.count_nonzero(jf.constant([[1.0, 0.0, -0.0, np.nan]]), axis=1, keepdims=None)
    assert c.dtype == jf.int64 and c.numpy().tolist() == [2]
    assert jf.math.count_nonzero(jf.constant([True, False, True]), dtype=jf.int32).numpy() == 2
    assert jf.math.count_nonzero(ints, dtype=jf.float32).dtype == jf.float32
    # batch_normalization with Python numbers (TF casts inv to x's dtype: ints give 0 here).
    np.testing.assert_array_equal(jf.nn.batch_normalization(jf.constant([[1, 2]]), 1, 2, None, None, 1e-3).numpy(),
                                  [[0, 0]])
    got = jf.nn.batch_normalization(jf.constant([[1.0, 2.0]]), 0.5, 2.0, None, None, 1e-3).numpy()
    np.testing.assert_allclose(got, [[0.35346505, 1.0603951]], rtol=1e-6)
    # moments ignores shift (TF's value), takes an int axis.
    m, v = jf.nn.moments(jf.constant([[1.0, 2.0], [3.0, 5.0]]), axes=0, shift=100.0)
    assert m.numpy().tolist() == [2.0, 3.5] and v.numpy().tolist() == [1.0, 2.25]


def test_names_dtypes_and_empty_inputs():
    x = jf.constant(np.zeros((2, 0), np.float32))
    assert np.isnan(jf.math.reduce_variance(jf.zeros([0])).numpy())
    assert np.isnan(jf.math.reduce_variance(x, axis=1).numpy()).all()
    assert jf.reduce_logsumexp(x, axis=1).numpy().tolist() == [-np.inf, -np.inf]
    assert jf.math.reduce_euclidean_norm(jf.zeros([0])).numpy() == 0.0
    assert jf.math.count_nonzero(x, axis=1).numpy().tolist() == [0, 0]
    assert not jf.reduce_any(jf.zeros([0], jf.bool)).numpy() and jf.reduce_all(jf.zeros([0], jf.bool)).numpy()
    m, v = jf.nn.moments(jf.zeros([0, 2]), axes=[0])
    assert np.isnan(m.numpy()).all() and np.isnan(v.numpy()).all()
    assert jf.math.reduce_std(jf.constant([1.0, 3.0], jf.float64)).dtype == jf.float64


# ---- integer reduce_prod: TF's wraparound --------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_reduce_prod_integers_wrap_around(mode, dtype):
    big = 100000 if dtype == "int32" else 2**40
    x = np.array([[big, big, 3], [big, -7, 5], [2, 3, -big]], dtype)
    got = run(mode, lambda t: (jf.reduce_prod(t), jf.math.reduce_prod(t, axis=0), jf.reduce_prod(t, axis=1, keepdims=True)), x)
    want = (np.prod(x, dtype=dtype), np.prod(x, axis=0, dtype=dtype), np.prod(x, axis=1, dtype=dtype, keepdims=True))
    close(got, want, dtype)
    if dtype == "int32":
        assert got[0] != np.prod(x.astype(np.float64))  # it wrapped, as TF's (-64771072 for [1e5, 1e5, 3])
        assert run(mode, jf.reduce_prod, np.array([100000, 100000, 3], np.int32))[0] == -64771072


# ---- segment reductions: TF 2.21's rules ---------------------------------------------------
@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope", "none_signature"])
def test_segment_values(mode):
    """Sorted: an empty segment is 0 (max and min too); unsorted max/min: the dtype's lowest
    (highest) finite value, negative ids dropped; NaN: a later number replaces it ([nan, 1] ->
    1, [1, nan] -> nan); integer means truncate (sorted) or divide as float64 (unsorted)."""
    d = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    ids = np.array([0, 0, 2, 2], np.int32)
    uids = np.array([-1, 0, 2, 0], np.int32)

    def f(d, ids, uids):
        return (jf.math.segment_sum(d, ids), jf.math.segment_mean(d, ids), jf.math.segment_max(d, ids),
                jf.math.segment_min(d, ids), jf.math.unsorted_segment_max(d, uids, 4),
                jf.math.unsorted_segment_min(d, uids, 4), jf.math.unsorted_segment_sum(d, uids, 4),
                jf.math.unsorted_segment_mean(d, uids, 4))
    got = run(mode, f, d, ids, uids, compiled=False)
    lo, hi = np.finfo(np.float32).min, np.finfo(np.float32).max
    for g, w in zip(got, [[3, 0, 7], [1.5, 0, 3.5], [2, 0, 4], [1, 0, 3], [4, lo, 3, lo], [2, hi, 3, hi],
                          [6, 0, 3, 0], [3, 0, 3, 0]]):
        np.testing.assert_array_equal(g, np.array(w, np.float32))
    nan = run(mode, lambda d: (jf.math.segment_max(d, [0, 0, 1, 1]), jf.math.segment_min(d, [0, 0, 1, 1]),
                               jf.math.unsorted_segment_max(d, [0, 0, 1, 1], 2)),
              np.array([np.nan, 1.0, 1.0, np.nan], np.float32), compiled=False)
    for g in nan:
        np.testing.assert_array_equal(g, [1.0, np.nan])
    ints = run(mode, lambda d: (jf.math.segment_mean(d, [0, 0, 0, 1]), jf.math.unsorted_segment_mean(d, [0, 0, 0, 1], 2),
                                jf.math.unsorted_segment_max(d, [1, 1, 1, 1], 2)),
               np.array([1, 2, 4, -7], np.int32), compiled=False)
    assert ints[0].tolist() == [2, -7] and ints[0].dtype == np.int32
    assert ints[1].dtype == np.float64 and ints[1].tolist() == [7 / 3, -7.0]
    assert ints[2].tolist() == [np.iinfo(np.int32).min, 4]


def test_unsorted_segments_with_multi_dim_ids(rng):
    data = rng.standard_normal((2, 3, 4))
    ids = np.array([[0, 2, -1], [2, 2, 0]])
    for fn, comb in [(jf.math.unsorted_segment_max, np.max), (jf.math.unsorted_segment_min, np.min),
                     (jf.math.unsorted_segment_mean, np.mean), (jf.math.unsorted_segment_sum, np.sum)]:
        got = fn(data, ids, 3).numpy()
        for s in (0, 2):
            np.testing.assert_allclose(got[s], comb(data[ids == s], axis=0), rtol=1e-12)
    np.testing.assert_allclose(jf.math.unsorted_segment_sqrt_n(data, ids, 3).numpy()[2],
                               data[ids == 2].sum(0) / np.sqrt(3), rtol=1e-12)
    assert jf.math.unsorted_segment_mean(data, ids, 3).numpy()[1].tolist() == [0.0] * 4


def test_segment_gradients_split_among_ties():
    """TF 2.21: max/min send g to the elements equal to the result, divided among ties; means
    divide by the counts; rows of dropped (negative) ids get 0."""
    x = jf.constant([1.0, 3.0, 3.0, 2.0])
    cases = [(lambda x: jf.math.segment_max(x, [0, 0, 0, 1]), [0, 0.5, 0.5, 1]),
             (lambda x: jf.math.unsorted_segment_max(x, [0, 0, 0, 1], 3), [0, 0.5, 0.5, 1]),
             (lambda x: jf.math.segment_min(x, [0, 1, 1, 1]), [1, 0, 0, 1]),
             (lambda x: jf.math.unsorted_segment_min(x, [1, 0, 0, -1], 2), [1, 0.5, 0.5, 0]),
             (lambda x: jf.math.segment_mean(x, [0, 0, 0, 1]), [1 / 3, 1 / 3, 1 / 3, 1]),
             (lambda x: jf.math.unsorted_segment_mean(x, [0, 0, 0, 1], 3), [1 / 3, 1 / 3, 1 / 3, 1]),
             (lambda x: jf.math.unsorted_segment_sum(x, [0, -1, 0, 1], 3), [1, 0, 1, 1]),
             (lambda x: jf.math.segment_prod(x, [0, 0, 1, 1]), [3, 1, 2, 3]),
             (lambda x: jf.math.unsorted_segment_prod(x, [1, -1, 1, 0], 2), [3, 0, 1, 1])]
    for mode in ("eager", "function"):
        for fn, want in cases:
            def grad(t, fn=fn):
                with jf.GradientTape() as tape:
                    tape.watch(t)
                    y = fn(t)
                return tape.gradient(y, t)
            g = grad(x) if mode == "eager" else jf.function(grad)(x)
            np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)


def test_segment_prod_gradient_with_zeros():
    """TF's rule: at a segment's only zero, the product of the others; more than one zero: 0."""
    x = jf.constant([2.0, 0.0, 3.0, 0.0, 0.0, 5.0, 4.0])
    for fn in (lambda x: jf.math.segment_prod(x, [0, 0, 0, 1, 1, 1, 2]),
               lambda x: jf.math.unsorted_segment_prod(x, [0, 0, 0, 1, 1, 1, 2], 3)):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        assert y.numpy().tolist() == [0.0, 0.0, 4.0]
        assert tape.gradient(y, x).numpy().tolist() == [0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    ints = jf.math.unsorted_segment_prod(jf.constant([100000, 100000, 3, 7]), [0, 0, 0, -1], 2)
    assert ints.numpy().tolist() == [-64771072, 1]  # wraps as TF's; an empty segment is 1
    assert jf.math.segment_prod(jf.constant([2.0, 3.0, 4.0]), [0, 0, 2]).numpy().tolist() == [6.0, 1.0, 4.0]


@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope"])
def test_segment_errors(mode):
    def call(fn, *args):
        if mode == "eager":
            return fn(*[jf.constant(a) for a in args])

        @jf.function
        def f(*a):
            if mode == "jit_scope":
                with jf.jit_scope():
                    return fn(*a) * 2.0
            return fn(*a)
        return f(*[jf.constant(a) for a in args])

    d = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    err = jf.errors.InvalidArgumentError
    with pytest.raises(err, match="SegmentSum: segment ids are not increasing"):
        call(jf.math.segment_sum, d, np.array([0, 2, 1, 2], np.int32))
    with pytest.raises(err, match=r"Segment id -1 out of range \[0, 3\), possibly because 'segment_ids' input is not sorted"):
        call(jf.math.segment_max, d, np.array([-1, 0, 1, 2], np.int32))
    with pytest.raises(err, match="segment ids must be >= 0"):
        call(jf.math.segment_mean, d[:2], np.array([-2, -1], np.int32))
    with pytest.raises(err, match="segment_ids should be the same size as dimension 0 of input"):
        call(jf.math.segment_min, d, np.array([0, 0, 1], np.int32))
    with pytest.raises(err, match="segment_ids should be a vector"):
        call(jf.math.segment_sum, d.reshape(2, 2), np.array([[0, 0], [1, 1]], np.int32))
    with pytest.raises(err, match="input must be at least rank 1"):
        call(jf.math.segment_sum, np.float32(1.0), np.array([0], np.int32))
    for fn in (jf.math.unsorted_segment_max, jf.math.unsorted_segment_min, jf.math.unsorted_segment_sum,
               jf.math.unsorted_segment_prod, jf.math.unsorted_segment_mean):
        with pytest.raises(err, match=r"segment_ids\[0\] = 5 is out of range \[0, 4\)"):
            call(lambda d, i, fn=fn: fn(d, i, 4), d, np.array([5, 0, 2, 0], np.int64))
    with pytest.raises(err, match="num_segments == -1 must not be negative"):
        call(lambda d, i: jf.math.unsorted_segment_max(d, i, -1), d, np.array([0, 0, 0, 0], np.int32))
    with pytest.raises(err, match=r"does not start with segment_ids.shape = \[3\]"):
        call(lambda d, i: jf.math.unsorted_segment_min(d, i, 2), d[:2], np.array([0, 0, 0], np.int32))
    with pytest.raises(TypeError, match="segment_ids must be int32 or int64"):
        call(jf.math.segment_sum, d[:2], np.array([0.0, 1.0], np.float32))


def test_segment_ops_under_jit_compile_name_themselves():
    """Their output shape depends on the ids' values (sorted) or they scatter (unsorted): no
    compiled form, so jit_compile=True raises naming the op, as for UnsortedSegmentSum."""
    for fn, op in [(lambda d: jf.math.segment_max(d, [0, 0, 1]), "SegmentMax"),
                   (lambda d: jf.math.unsorted_segment_min(d, [0, 0, 1], 2), "UnsortedSegmentMin")]:
        with pytest.raises(jf.errors.InvalidArgumentError, match=op):
            jf.function(fn, jit_compile=True)(jf.constant([1.0, 2.0, 3.0]))


# ---- fusion: a few kernels, not one per op -------------------------------------------------
FUSED = {
    # name: (function body, kernels at most: one per reduction, plus one for the outputs)
    "batch_norm": (lambda x: jf.nn.batch_normalization(x, *jf.nn.moments(x, axes=[0]), x[0], x[1], 1e-3), 4),
    "std": (lambda x: jf.math.reduce_std(x, axis=1), 3),
    "logsumexp": (lambda x: jf.reduce_logsumexp(x, axis=1), 3),
    "euclidean_count_any": (lambda x: jf.math.reduce_euclidean_norm(x, axis=1)
                            + jf.cast(jf.math.count_nonzero(x > 0.3, axis=1), jf.float32)
                            + jf.cast(jf.reduce_any(x > 0.5, axis=1), jf.float32), 4),
}


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fuses_into_a_few_kernels(name, rng):
    body, most = FUSED[name]

    @jf.function
    def f(x):
        with jf.jit_scope():
            return body(x)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    rows = jf.explain(f, x)
    assert {r.status for r in rows} <= {"compiled", "removed"}, str(rows)
    assert len({r.cluster for r in rows if r.cluster}) == 1, str(rows)
    kernels = jf.experimental.ptx_kernels(f, x)
    assert len(kernels) == 1 and len(next(iter(kernels.values()))) <= most, kernels
    before = jf.debugging.stats()["cluster_runs"]
    f(x)
    assert jf.debugging.stats()["cluster_runs"] > before
