"""jf.train.ExponentialMovingAverage against TF 2.21 (its values for the same calls printed there
and hard-coded) and against the float64 recurrence shadow -= (1 - decay)(shadow - var)."""
import numpy as np
import pytest

import jitflow as jf


def test_matches_tf_eagerly():
    v, w = jf.Variable([1.0, 2.0]), jf.Variable(3.0)
    ema = jf.train.ExponentialMovingAverage(0.9)
    assert ema.apply([v, w]) is None and ema.name == "ExponentialMovingAverage"
    np.testing.assert_allclose(ema.average(v).numpy(), [1.0, 2.0])
    assert ema.average_name(v) == v.name.split(":")[0] + "/ExponentialMovingAverage"
    v.assign([2.0, 4.0])
    ema.apply([v, w])
    np.testing.assert_allclose(ema.average(v).numpy(), [1.1, 2.2], rtol=1e-6)
    assert float(ema.average(w).numpy()) == 3.0
    assert ema.average(jf.Variable(5.0)) is None
    step = jf.Variable(0, dtype=jf.int64)
    capped = jf.train.ExponentialMovingAverage(0.99, num_updates=step)  # decay min(0.99, 1/10)
    capped.apply([v])
    v.assign([0.0, 0.0])
    capped.apply([v])
    np.testing.assert_allclose(capped.average(v).numpy(), [0.2, 0.4], rtol=1e-5)
    with pytest.raises(TypeError, match="must be half, float, or double"):
        ema.apply([jf.Variable(1, dtype=jf.int32)])


def test_traced_steps_follow_the_recurrence(rng):
    v = jf.Variable(rng.standard_normal(4).astype(np.float32))
    ema = jf.train.ExponentialMovingAverage(0.8)
    ema.apply([v])
    shadow = v.numpy().astype(np.float64)

    @jf.function
    def step(delta):
        v.assign_add(delta)
        ema.apply([v])
        return ema.average(v).read_value()

    for _ in range(5):
        delta = rng.standard_normal(4).astype(np.float32)
        got = step(jf.constant(delta)).numpy()
        shadow -= 0.2 * (shadow - v.numpy().astype(np.float64))
        np.testing.assert_allclose(got, shadow, rtol=1e-5, atol=1e-6)
    assert list(ema.variables_to_restore()) == [ema.average_name(v)]
