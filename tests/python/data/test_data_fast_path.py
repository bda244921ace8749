"""The C++ path for from_tensor_slices -> map -> shuffle -> batch -> prefetch (data/fast.py):
batches made from whole tensors on worker threads hold the values numpy computes from the
source rows, in the order the element-at-a-time nodes give (the same shuffle draws), with
tf.data's batch error, map errors naming the user's line, compiled maps, bounded prefetch and
iteration inside a jf.function."""
import sys
import time

import numpy as np
import pytest

import jitflow as jf

D = jf.data.Dataset
N = 203  # not a multiple of the batch: a short last batch


def _data():
    rng = np.random.default_rng(5)
    return rng.integers(0, 256, (N, 6)).astype(np.float32), rng.integers(0, 4, N).astype(np.int32)


def _normalize(x, y):
    return x / 255.0, jf.one_hot(y, 4)


def _expected(x, y, order):
    """float64 numpy reference of _normalize over the rows in order."""
    return x[order].astype(np.float64) / 255.0, np.eye(4)[y[order]]


def _batches(ds):
    return [tuple(c.numpy() for c in b) for b in ds]


def _python_order(shuffle_of_range):
    """The order the element-at-a-time shuffle gives the positions 0..N-1."""
    return [int(v) for v in shuffle_of_range.as_numpy_iterator()]


@pytest.mark.parametrize("prefetch", [None, 2])
@pytest.mark.parametrize("calls", [None, 2])
def test_map_batch_values_and_remainder(prefetch, calls):
    x, y = _data()
    for drop in (False, True):
        ds = D.from_tensor_slices((x, y)).map(_normalize, num_parallel_calls=calls).batch(16, drop_remainder=drop)
        assert ds._node.plan is not None, "this chain runs in C++"
        if prefetch:
            ds = ds.prefetch(prefetch)
        got = _batches(ds)
        assert len(got) == (N // 16 if drop else -(-N // 16)) == int(ds.cardinality())
        assert [b[0].shape[0] for b in got[-2:]] == ([16, 16] if drop else [16, N % 16])
        gx, gy = np.concatenate([b[0] for b in got]), np.concatenate([b[1] for b in got])
        kept = len(gx)
        ex, ey = _expected(x, y, np.arange(kept))
        np.testing.assert_allclose(gx, ex, rtol=1e-6)
        np.testing.assert_array_equal(gy, ey)
        assert gx.dtype == np.float32 and gy.dtype == np.float32


@pytest.mark.parametrize("where", ["before", "after"])
def test_shuffle_order_is_the_element_at_a_time_order(where):
    x, y = _data()
    base = D.from_tensor_slices((x, y))
    if where == "before":  # map -> shuffle -> batch (a map before the shuffle)
        ds = base.map(_normalize).shuffle(50, seed=11).batch(32).prefetch(3)
    else:
        ds = base.shuffle(50, seed=11).map(_normalize).batch(32).prefetch(3)
    ref = D.range(N).shuffle(50, seed=11)  # same seed, buffer and pass numbers
    for _ in range(2):  # each pass its own order, the same as the reference's pass
        order = _python_order(ref)
        assert sorted(order) == list(range(N)) and order != list(range(N))
        got = _batches(ds)
        ex, ey = _expected(x, y, np.array(order))
        np.testing.assert_allclose(np.concatenate([b[0] for b in got]), ex, rtol=1e-6)
        np.testing.assert_array_equal(np.concatenate([b[1] for b in got]), ey)


def test_without_map_and_a_whole_input_buffer():
    x, y = _data()
    ds = D.from_tensor_slices({"x": x, "y": y}).shuffle(1000, seed=2, reshuffle_each_iteration=False).batch(64)
    assert ds._node.plan is not None
    order = np.array(_python_order(D.range(N).shuffle(1000, seed=2, reshuffle_each_iteration=False)))
    for _ in range(2):
        got = list(ds)
        np.testing.assert_array_equal(np.concatenate([b["x"].numpy() for b in got]), x[order])
        np.testing.assert_array_equal(np.concatenate([b["y"].numpy() for b in got]), y[order])


def test_a_map_with_effects_before_a_shuffle_stays_element_at_a_time():
    x, _ = _data()

    def noisy(v):
        return v + jf.random.uniform([6])
    ds = D.from_tensor_slices(x).map(noisy).shuffle(10).batch(8)
    assert ds._node.plan is None, "its random draws follow the input order there"
    after = D.from_tensor_slices(x).shuffle(10).map(noisy).batch(8)
    assert after._node.plan is not None, "after the shuffle, elements are mapped in output order either way"
    got = np.concatenate([b.numpy() for b in after])
    assert got.shape == (N, 6) and np.all(got >= 0) and np.all(got < 257)


def test_ragged_map_results_raise_tf_batch_error():
    x = np.arange(10, dtype=np.int64)
    ds = D.from_tensor_slices(x).map(lambda v: jf.fill([v % 3], v)).batch(4)
    assert ds._node.plan is not None
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match=r"Cannot add tensor to the batch: number of elements does not match. "
                             r"Shapes are: \[tensor\]: \[1\], \[batch\]: \[0\]"):
        list(ds)


@pytest.mark.parametrize("prefetch", [None, 2])
def test_map_error_reaches_the_caller_with_the_users_line(prefetch):
    x = np.arange(100, dtype=np.int64)

    def check(v):
        jf.debugging.assert_less(v, jf.constant(45, jf.int64), message="too big")
        return v * 2
    ds = D.from_tensor_slices(x).map(check).batch(10)
    if prefetch:
        ds = ds.prefetch(prefetch)
    it = iter(ds)
    assert [next(it).numpy().tolist() for _ in range(4)] == [list(range(2 * i, 2 * i + 20, 2)) for i in range(0, 40, 10)]
    with pytest.raises(jf.errors.InvalidArgumentError, match="too big") as e:
        next(it)
    msg = str(e.value)
    assert "test_data_fast_path.py" in msg and "jf.debugging.assert_less(v" in msg


def test_compiled_map_runs_compiled_code():
    x, y = _data()
    before = jf.debugging.stats()["cluster_runs"]
    ds = D.from_tensor_slices((x, y)).map(jf.function(_normalize, jit_compile=True)).batch(50).prefetch(2)
    got = _batches(ds)
    assert jf.debugging.stats()["cluster_runs"] - before >= N, "the map ran compiled, once per element"
    ex, ey = _expected(x, y, np.arange(N))
    np.testing.assert_allclose(np.concatenate([b[0] for b in got]), ex, rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in got]), ey)


def test_prefetch_bounds_the_batches_made_ahead():
    x = np.zeros((2000, 4), np.float32)
    ds = D.from_tensor_slices(x).map(lambda v: v + 1.0).batch(10).prefetch(3)
    it = ds._node.iterate()
    first = next(it)
    batcher = it.gi_frame.f_locals["pipeline"]
    assert list(first[0].shape) == [10, 4]
    time.sleep(0.2)  # give the workers every chance to run ahead
    assert batcher.max_outstanding <= 3
    assert sum(1 for _ in it) == 199
    it.close()


def test_iterated_inside_a_function():
    x, y = _data()
    ds = D.from_tensor_slices((x, y)).map(_normalize).shuffle(30, seed=4).batch(25).prefetch(2)

    @jf.function
    def total(d):
        s = jf.constant(0.0)
        for a, b in d:
            s += jf.reduce_sum(a) + jf.reduce_sum(b)
        return s
    ex, ey = _expected(x, y, np.arange(N))
    want = ex.sum() + ey.sum()  # a permutation: the same sum
    assert float(total(ds)) == pytest.approx(want, rel=1e-5)
    assert float(total(ds)) == pytest.approx(want, rel=1e-5)


def test_no_python_runs_per_element():
    # The batches are made on the iterating thread here (no prefetch), so every Python call
    # the pass makes is seen by the profiler: a few per batch, none per element.
    x, y = _data()
    ds = D.from_tensor_slices((x, y)).map(_normalize).shuffle(64, seed=1).batch(50)
    calls = [0]

    def count(frame, event, arg):
        if event in ("call", "c_call"):
            calls[0] += 1
    sys.setprofile(count)
    try:
        batches = sum(1 for _ in ds)
    finally:
        sys.setprofile(None)
    assert batches == 5
    assert calls[0] < 40 * batches, f"{calls[0]} Python calls for {N} elements"
