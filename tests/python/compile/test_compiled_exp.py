"""Accuracy of the compiled float32 exp (the inline polynomial every compiled Exp, softmax,
sigmoid and cross-entropy uses) against float64 numpy over a dense sweep of float32 inputs,
its special values, and softmax / log-softmax rows whose exponentials underflow."""

import numpy as np
import pytest

import jitflow as jf

F32 = np.float32


def _compiled(fn):
    return jf.function(fn, jit_compile=True)


def _run(f, *args):
    before = jf.debugging.stats()["cluster_runs"]
    out = f(*[jf.constant(a) for a in args]).numpy()
    assert jf.debugging.stats()["cluster_runs"] > before, "the compiled kernel did not run"
    return out


def _ulp(ref64):
    """The float32 ulp at each float64 reference value (subnormal spacing below 2^-126)."""
    a = np.abs(ref64)
    e = np.floor(np.log2(np.maximum(a, 2.0**-126)))
    return np.exp2(np.maximum(e - 23, -149))


def _sweep():
    # Every 997th float32 bit pattern in [-104, 89] (2.2 million values, about 1e-4 apart
    # relatively) covers the whole range, including inputs whose results are subnormal
    # (x < -87.34) and the largest finite results.
    lo, hi = np.array([-104.0, 89.0], F32).view(np.int32)
    neg = np.arange(np.array(-0.0, F32).view(np.int32), lo, 997, dtype=np.int64)
    pos = np.arange(0, hi, 997, dtype=np.int64)
    bits = np.concatenate([neg, pos]).astype(np.uint32)
    return bits.view(F32)


def _boundaries():
    # The overflow threshold, the smallest normal result, the smallest subnormal result and
    # the last input rounding to a nonzero value, each with its 64 float32 neighbours.
    pts = np.array([88.72283935546875, -87.33654475, -103.2789306640625, -103.97207708], F32)
    steps = np.arange(-64, 65)
    return (pts.view(np.int32)[:, None] + steps[None, :]).ravel().astype(np.int32).view(F32)


def test_exp_float32_within_two_ulp_of_float64_over_a_dense_sweep():
    x = np.concatenate([_sweep(), _boundaries()])
    got = _run(_compiled(jf.exp), x)
    ref = np.exp(x.astype(np.float64))
    with np.errstate(over="ignore"):
        want = ref.astype(F32)
    finite = np.isfinite(want) & (want != 0)
    err = np.abs(got[finite].astype(np.float64) - ref[finite]) / _ulp(ref[finite])
    assert err.max() <= 2.0, f"max error {err.max():.3f} ulp at x={x[finite][err.argmax()]!r}"
    # Where the correctly rounded result is 0 or inf, so is ours (within one subnormal ulp at
    # the flush boundary: 0 or the smallest subnormal).
    zero = want == 0
    assert np.all(got[zero] <= np.float32(2.0**-149)), x[zero][got[zero] > 2.0**-149][:5]
    assert np.all(got[np.isinf(want)] == np.inf)


def test_exp_float32_subnormal_results_are_not_flushed():
    x = np.array([-88.0, -90.0, -95.5, -100.0, -103.0], F32)
    got = _run(_compiled(jf.exp), x)
    ref = np.exp(x.astype(np.float64))
    assert np.all(got > 0) and np.all(got < np.finfo(F32).tiny)
    np.testing.assert_allclose(got, ref, rtol=0, atol=2 * 2.0**-149)


def test_exp_float32_special_values():
    x = np.array(
        [
            np.nan,
            -np.nan,
            np.inf,
            -np.inf,
            0.0,
            -0.0,
            1e-45,
            -1e-45,
            1e-30,
            1.0,
            -1.0,
            88.7,
            88.8,
            100.0,
            1e30,
            np.finfo(F32).max,
            -np.finfo(F32).max,
            -104.0,
            -200.0,
            -1e30,
        ],
        F32,
    )
    got = _run(_compiled(jf.exp), x)
    assert np.isnan(got[0]) and np.isnan(got[1])
    assert got[2] == np.inf and got[3] == 0.0
    assert got[4] == 1.0 and got[5] == 1.0 and got[6] == 1.0 and got[7] == 1.0 and got[8] == 1.0
    with np.errstate(over="ignore"):
        ref = np.exp(x[9:].astype(np.float64)).astype(F32)
    finite = np.isfinite(ref) & (ref != 0)
    np.testing.assert_allclose(got[9:][finite], ref[finite], rtol=3e-7)
    assert np.array_equal(got[9:][~finite], ref[~finite])


def test_exp_float64_unchanged_precision():
    x = np.linspace(-745.0, 709.0, 100_003)
    got = _run(_compiled(jf.exp), x)
    ref = np.exp(x)
    nz = ref > 1e-300
    np.testing.assert_allclose(got[nz], ref[nz], rtol=4e-16)


def _softmax64(x):
    x = x.astype(np.float64)
    m = np.max(x, -1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(-1, keepdims=True), (x - m) - np.log(e.sum(-1, keepdims=True))


@pytest.mark.parametrize("width", [3, 16, 17, 1024])
def test_softmax_rows_with_underflowing_exponentials(width):
    rng = np.random.default_rng(width)
    x = rng.standard_normal((6, width)).astype(F32)
    x[0, :] = 0.0  # uniform
    x[1, 0] = 100.0  # every other exp(x - max) is subnormal or 0
    x[2, -1] = -95.0  # one subnormal exponential
    x[3, :] = np.linspace(-120.0, 0.0, width).astype(F32)  # from 0 through subnormals to 1
    x[4, :] = -1e30  # huge, equal: max subtracts exactly
    x[5, :] = 3e38  # near the float32 limit
    sm, lsm = _softmax64(x)
    before = jf.debugging.stats()["row_group_runs"]
    got = _run(_compiled(jf.nn.softmax), x)
    got_log = _run(_compiled(jf.nn.log_softmax), x)
    assert jf.debugging.stats()["row_group_runs"] >= before + 2
    # float32 rounding of x - max alone moves exp by a few ulp, so normal results are held to
    # a relative tolerance; subnormal ones (rows 1-3) to a few subnormal spacings, not flushed.
    tiny = np.finfo(F32).tiny
    normal = sm >= tiny
    np.testing.assert_allclose(got[normal], sm[normal], rtol=2e-6)
    assert np.all(np.abs(got[~normal] - sm[~normal]) <= 3 * 2.0**-149)
    assert np.count_nonzero((got > 0) & (got < tiny)) >= np.count_nonzero((sm > 2.0**-149) & (sm < tiny)) - 2
    np.testing.assert_allclose(got_log, lsm, rtol=2e-6, atol=2e-6)


def test_softmax_special_rows_follow_tf():
    # TF's softmax: a row with NaN is all NaN; an all -inf row is NaN (-inf - -inf); a +inf
    # entry makes inf - inf = NaN in its row. (TF 2.21's kernel gives these values.)
    x = np.array(
        [[1.0, np.nan, 2.0], [-np.inf, -np.inf, -np.inf], [0.0, np.inf, 1.0], [-np.inf, 0.0, 0.0]], F32
    )
    got = _run(_compiled(jf.nn.softmax), x)
    assert np.isnan(got[:3]).all()
    np.testing.assert_array_equal(got[3], np.array([0.0, 0.5, 0.5], F32))
