"""jf.map_fn, scan, foldl, foldr, vectorized_map, switch_case, case and timestamp against Python
loops over numpy, eagerly and traced (where the length may be unknown until run)."""
import numpy as np
import pytest

import jitflow as jf

MODES = ["eager", "function", "signature"]


def _run(mode, fn, x):
    if mode == "eager":
        return fn(jf.constant(x))
    if mode == "function":
        return jf.function(fn)(jf.constant(x))
    spec = jf.TensorSpec([None] * x.ndim, jf.as_dtype(x.dtype.name))
    return jf.function(fn, input_signature=[spec])(jf.constant(x))


@pytest.mark.parametrize("mode", MODES)
def test_map_fn(mode, rng):
    x = rng.normal(size=(4, 3))
    np.testing.assert_allclose(_run(mode, lambda t: jf.map_fn(lambda r: r * r + 1.0, t), x).numpy(), x * x + 1,
                               rtol=1e-12)
    sums = _run(mode, lambda t: jf.map_fn(lambda r: jf.reduce_sum(r), t, fn_output_signature=jf.float64), x)
    np.testing.assert_allclose(sums.numpy(), x.sum(1), rtol=1e-12)
    pair = _run(mode, lambda t: jf.map_fn(lambda e: (e[0], e[1] * 2.0), (t, t),
                                          fn_output_signature=(jf.float64, jf.float64)), x)
    np.testing.assert_allclose(pair[1].numpy(), 2 * x, rtol=1e-12)
    np.testing.assert_allclose(_run(mode, lambda t: jf.vectorized_map(lambda r: r[::-1], t), x).numpy(), x[:, ::-1])


@pytest.mark.parametrize("mode", MODES)
def test_scan_and_folds(mode, rng):
    x = rng.normal(size=(5, 2))
    np.testing.assert_allclose(_run(mode, lambda t: jf.scan(lambda a, e: a + e, t), x).numpy(), np.cumsum(x, 0),
                               rtol=1e-12)
    rev = _run(mode, lambda t: jf.scan(lambda a, e: a * 0.5 + e, t, initializer=jf.zeros([2], jf.float64),
                                       reverse=True), x).numpy()
    want, acc = np.zeros_like(x), np.zeros(2)
    for i in range(4, -1, -1):
        acc = acc * 0.5 + x[i]
        want[i] = acc
    np.testing.assert_allclose(rev, want, rtol=1e-12)
    np.testing.assert_allclose(_run(mode, lambda t: jf.foldl(lambda a, e: a * 2.0 + e, t), x).numpy(),
                               ((x[0] * 2 + x[1]) * 2 + x[2]) * 4 + x[3] * 2 + x[4], rtol=1e-12)
    digits = np.array([1, 2, 3], np.int64)
    assert int(_run(mode, lambda t: jf.foldr(lambda a, e: a * 10 + e, t, initializer=jf.constant(0, jf.int64)),
                    digits).numpy()) == 321


def test_switch_case_and_case():
    branches = [lambda: jf.constant(10), lambda: jf.constant(20), lambda: jf.constant(30)]
    f = jf.function(lambda i: jf.switch_case(i, branches))
    assert [int(f(jf.constant(i)).numpy()) for i in (0, 2, 7)] == [10, 30, 30]  # out of range: the last
    assert int(jf.switch_case(jf.constant(1), branches).numpy()) == 20
    g = jf.function(lambda x: jf.case([(x < 0, lambda: jf.constant(-1)), (x > 0, lambda: jf.constant(1))],
                                      default=lambda: jf.constant(0)))
    assert [int(g(jf.constant(v)).numpy()) for v in (-3, 0, 5)] == [-1, 0, 1]
    with pytest.raises(jf.errors.InvalidArgumentError, match="more than 1 conditions"):
        jf.case([(jf.constant(True), lambda: 1), (jf.constant(True), lambda: 2)], exclusive=True)
    with pytest.raises(TypeError, match="int32"):
        jf.switch_case(jf.constant(1.0), branches)


def test_timestamp_reads_the_clock_when_run():
    f = jf.function(lambda: jf.timestamp())
    a = float(f().numpy())
    b = float(f().numpy())
    assert 1.7e9 < a <= b and f().dtype == jf.float64
