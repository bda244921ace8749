"""Datasets inside jf.function: AutoGraph turns `for x in dataset` into a loop that pulls the
elements when the function runs (a fresh iteration per call, as TF), iter()/next() and reduce
work in a trace, the function is not retraced per element, and a map function that is a
jit_compile=True jf.function runs compiled, iterated eagerly and from a function."""
import numpy as np
import pytest

import jitflow as jf

D = jf.data.Dataset


def test_for_over_a_dataset_is_a_graph_loop():
    ds = D.from_tensor_slices(np.arange(12, dtype=np.float32).reshape(6, 2)).batch(4)

    @jf.function
    def total():
        s = jf.constant(0.0)
        n = jf.constant(0)
        for b in ds:
            s += jf.reduce_sum(b)
            n += 1
        return s, n
    s, n = total()
    assert float(s) == 66.0 and int(n) == 2  # batches of 4 and 2: the last is shorter
    s, n = total()
    assert float(s) == 66.0 and int(n) == 2, "each call iterates afresh"
    assert total.experimental_get_tracing_count() == 1
    assert "While" in total.get_concrete_function().pretty_printed_graph()


def test_for_over_a_dataset_with_break_and_tuples():
    ds = D.from_tensor_slices(([1, 2, 3, 4], [10., 20., 30., 40.]))

    @jf.function
    def f(limit):
        acc = jf.constant(0.0)
        for a, b in ds:
            if a > limit:
                break
            acc += b * jf.cast(a, jf.float32)
        return acc
    assert float(f(jf.constant(2))) == 1 * 10 + 2 * 20
    assert float(f(jf.constant(3))) == 1 * 10 + 2 * 20 + 3 * 30
    assert f.experimental_get_tracing_count() == 1


def test_dataset_argument_is_keyed_by_its_spec():
    @jf.function
    def f(ds):
        s = jf.constant(0, jf.int64)
        for x in ds:
            s += jf.reduce_sum(x)
        return s
    ds = D.range(5)
    assert int(f(ds)) == 10 and int(f(ds)) == 10
    assert f.experimental_get_tracing_count() == 1, "not retraced per element"
    assert int(f(D.range(3, 7))) == 3 + 4 + 5 + 6
    assert int(f(D.from_tensor_slices(np.array([7, 8], np.int64)))) == 15
    assert f.experimental_get_tracing_count() == 1, "another dataset of the same element spec: the same trace"
    assert int(f(D.range(3).map(lambda x: x * 10))) == 30
    assert f.experimental_get_tracing_count() == 1
    assert int(f(D.range(4).batch(2).map(lambda b: jf.reduce_sum(b)))) == 6
    assert f.experimental_get_tracing_count() == 1
    assert int(f(D.range(5).batch(2))) == 10  # another spec ([None] vectors): a new trace, as TF
    assert f.experimental_get_tracing_count() == 2

    @jf.function
    def g(ds):
        s = jf.constant(0.0)
        for x in ds.map(lambda v: v * 2.0):  # a transformation of the argument inside the function
            s += x
        return s
    a = D.from_tensor_slices(np.array([1.0, 2.0], np.float32))
    b = D.from_tensor_slices(np.array([5.0], np.float32))
    assert float(g(a)) == 6.0 and float(g(b)) == 10.0
    assert g.experimental_get_tracing_count() == 1


def test_iter_next_and_reduce_in_a_function():
    ds = D.range(10)

    @jf.function
    def g():
        it = iter(ds)
        return next(it) + next(it) * 10

    @jf.function
    def r():
        return ds.reduce(np.int64(0), lambda s, x: s + x)
    assert int(g()) == 10 and int(g()) == 10
    assert int(r()) == 45 and int(r()) == 45

    @jf.function
    def past_end():
        it = iter(D.range(1))
        next(it)
        return next(it)
    with pytest.raises(jf.errors.OutOfRangeError, match="End of sequence"):
        past_end()


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_compiled_map_function(mode):
    @jf.function(jit_compile=True)
    def normalize(x, y):
        return (x - 2.0) * 0.5, jf.one_hot(y, 3)
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    y = np.array([0, 2, 1, 2], np.int32)
    ds = D.from_tensor_slices((x, y)).map(normalize).batch(2)
    before = jf.debugging.stats()["cluster_runs"]
    if mode == "eager":
        got = [(a.numpy(), b.numpy()) for a, b in ds]
        gx = np.concatenate([g[0] for g in got])
        gy = np.concatenate([g[1] for g in got])
        sums = (gx.sum(axis=0), (gy * [1, 2, 3]).sum())
    else:
        @jf.function
        def collect():
            sx, sy = jf.zeros([2]), jf.constant(0.0)
            for a, b in ds:
                sx += jf.reduce_sum(a, axis=0)
                sy += jf.reduce_sum(b * jf.constant([1.0, 2.0, 3.0]))
            return sx, sy
        sums = tuple(t.numpy() for t in collect())
    assert jf.debugging.stats()["cluster_runs"] - before >= 4, "the map ran compiled, once per element"
    want_x = (x.astype(np.float64) - 2.0) * 0.5
    want_y = np.eye(3)[y]
    if mode == "eager":
        np.testing.assert_array_equal(gx, want_x)
        np.testing.assert_array_equal(gy, want_y)
    np.testing.assert_allclose(sums[0], want_x.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(sums[1], (want_y * [1, 2, 3]).sum(), rtol=1e-6)


def test_string_elements_in_a_graph_loop(tmp_path):
    # TF 2.21 gives 2 and 2 for the slices, (4, 6) for the file's lines and b'ab', b'cde' for
    # next() on an iterator argument.
    ds = D.from_tensor_slices(["a", "b"])

    @jf.function
    def f():
        n = 0
        for s in ds:
            n += jf.strings.length(s)
        return n
    assert int(f()) == 2 and int(f()) == 2
    path = tmp_path / "t.txt"
    path.write_text("ab\ncde\n\nf\n")
    lines = jf.data.TextLineDataset(str(path))

    @jf.function
    def count(d):
        n, total = jf.constant(0), jf.constant(0)
        for line in d:
            n += 1
            total += jf.strings.length(line)
        return n, total
    assert [int(v) for v in count(lines)] == [4, 6]

    @jf.function
    def first(it):
        return next(it)
    it = iter(lines)
    assert [first(it).numpy(), first(it).numpy()] == [b"ab", b"cde"]

    windows = D.range(4).window(2)

    @jf.function
    def g():
        n = 0
        for w in windows:
            n += 1
        return n
    with pytest.raises(TypeError, match="iterate it eagerly"):
        g()


def test_a_python_loop_over_a_dataset_in_a_trace_is_refused():
    @jf.function(autograph=False)
    def f():
        return sum(jf.reduce_sum(x) for x in D.range(3))
    with pytest.raises(TypeError, match="cannot end in a trace"):
        f()
