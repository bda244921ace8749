"""jf.data sources and transformations against TensorFlow 2.21's outputs for the same inputs:
element values and order, element_spec and cardinality (the expected values were printed by
tf.data and are written here as literals)."""
import collections

import numpy as np
import pytest

import jitflow as jf

D = jf.data.Dataset
P = collections.namedtuple("P", "x y")


def _spec(ds):
    """element_spec as ((shape, dtype name) leaves) in its structure."""
    def conv(s):
        if isinstance(s, jf.TensorSpec):
            return (tuple(s.shape), s.dtype.name)
        if isinstance(s, tuple):
            return type(s)(*[conv(x) for x in s]) if hasattr(s, "_fields") else tuple(conv(x) for x in s)
        if isinstance(s, dict):
            return {k: conv(v) for k, v in s.items()}
        return s
    return conv(ds.element_spec)


def _values(ds):
    def conv(v):
        if isinstance(v, tuple):
            return type(v)(*[conv(x) for x in v]) if hasattr(v, "_fields") else tuple(conv(x) for x in v)
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return (np.asarray(v).tolist(), np.asarray(v).dtype.name)
    return [conv(v) for v in ds.as_numpy_iterator()]


def r10():
    return D.range(10)


CASES = {
    # name: (dataset, element spec, cardinality, values as (list, numpy dtype) leaves)
    "from_tensor_slices": (lambda: D.from_tensor_slices([1, 2, 3]), ((), "int32"), 3,
                           [(1, "int32"), (2, "int32"), (3, "int32")]),
    "from_tensor_slices tuple": (lambda: D.from_tensor_slices(([1, 2], [3., 4.])), (((), "int32"), ((), "float32")), 2,
                                 [((1, "int32"), (3.0, "float32")), ((2, "int32"), (4.0, "float32"))]),
    "from_tensor_slices dict": (lambda: D.from_tensor_slices({"a": [1, 2], "b": [[1, 2], [3, 4]]}),
                                {"a": ((), "int32"), "b": ((2,), "int32")}, 2,
                                [{"a": (1, "int32"), "b": ([1, 2], "int32")}, {"a": (2, "int32"), "b": ([3, 4], "int32")}]),
    "from_tensor_slices list is a tensor": (lambda: D.from_tensor_slices([[1, 2], [3, 4]]), ((2,), "int32"), 2,
                                            [([1, 2], "int32"), ([3, 4], "int32")]),
    "from_tensor_slices namedtuple": (lambda: D.from_tensor_slices(P([1, 2], [3, 4])), P(((), "int32"), ((), "int32")), 2,
                                      [P((1, "int32"), (3, "int32")), P((2, "int32"), (4, "int32"))]),
    "from_tensor_slices numpy dtypes": (lambda: D.from_tensor_slices({"a": [1.0, 2.0], "b": np.array([1, 2])}),
                                        {"a": ((), "float32"), "b": ((), "int64")}, 2,
                                        [{"a": (1.0, "float32"), "b": (1, "int64")}, {"a": (2.0, "float32"), "b": (2, "int64")}]),
    "from_tensors": (lambda: D.from_tensors(([1, 2], 3)), (((2,), "int32"), ((), "int32")), 1,
                     [(([1, 2], "int32"), (3, "int32"))]),
    "range": (lambda: D.range(2, 10, 3), ((), "int64"), 3, [(2, "int64"), (5, "int64"), (8, "int64")]),
    "range output_type": (lambda: D.range(3, output_type=jf.int32), ((), "int32"), 3,
                          [(0, "int32"), (1, "int32"), (2, "int32")]),
    "range negative step": (lambda: D.range(5, 0, -2), ((), "int64"), 3, [(5, "int64"), (3, "int64"), (1, "int64")]),
    "batch": (lambda: r10().batch(3), ((None,), "int64"), 4,
              [([0, 1, 2], "int64"), ([3, 4, 5], "int64"), ([6, 7, 8], "int64"), ([9], "int64")]),
    "batch drop_remainder": (lambda: r10().batch(3, drop_remainder=True), ((3,), "int64"), 3,
                             [([0, 1, 2], "int64"), ([3, 4, 5], "int64"), ([6, 7, 8], "int64")]),
    "map of a tuple unpacks it": (lambda: D.from_tensor_slices(([1, 2], [3, 4])).map(lambda a, b: a + b), ((), "int32"), 2,
                                  [(4, "int32"), (6, "int32")]),
    "map returning a list gives a tuple": (lambda: r10().take(2).map(lambda x: [x, x]), (((), "int64"), ((), "int64")), 2,
                                           [((0, "int64"), (0, "int64")), ((1, "int64"), (1, "int64"))]),
    "map of a dict": (lambda: D.from_tensor_slices({"a": [1, 2]}).map(lambda e: e["a"] * 2), ((), "int32"), 2,
                      [(2, "int32"), (4, "int32")]),
    "map of a (dict, tensor)": (lambda: D.from_tensor_slices(({"a": [1, 2]}, [3, 4])).map(lambda e, y: e["a"] * y),
                                ((), "int32"), 2, [(3, "int32"), (8, "int32")]),
    "filter": (lambda: r10().filter(lambda x: x % 3 == 0), ((), "int64"), -2,
               [(0, "int64"), (3, "int64"), (6, "int64"), (9, "int64")]),
    "skip take": (lambda: r10().skip(2).take(3), ((), "int64"), 3, [(2, "int64"), (3, "int64"), (4, "int64")]),
    "take -1": (lambda: r10().take(-1), ((), "int64"), 10, [(i, "int64") for i in range(10)]),
    "repeat": (lambda: r10().take(3).repeat(2), ((), "int64"), 6, [(i % 3, "int64") for i in range(6)]),
    "repeat forever": (lambda: r10().take(3).repeat().take(7), ((), "int64"), 7, [(i % 3, "int64") for i in range(7)]),
    "shard": (lambda: r10().shard(3, 1), ((), "int64"), 3, [(1, "int64"), (4, "int64"), (7, "int64")]),
    "enumerate": (lambda: r10().take(3).enumerate(5), (((), "int64"), ((), "int64")), 3,
                  [((5, "int64"), (0, "int64")), ((6, "int64"), (1, "int64")), ((7, "int64"), (2, "int64"))]),
    "zip": (lambda: D.zip((r10().take(3), r10().skip(5))), (((), "int64"), ((), "int64")), 3,
            [((i, "int64"), (i + 5, "int64")) for i in range(3)]),
    "zip varargs": (lambda: D.zip(r10().take(3), r10().skip(5)), (((), "int64"), ((), "int64")), 3,
                    [((i, "int64"), (i + 5, "int64")) for i in range(3)]),
    "zip nested": (lambda: D.zip({"a": r10().take(1), "b": (r10().take(1), r10().skip(1))}),
                   {"a": ((), "int64"), "b": (((), "int64"), ((), "int64"))}, 1,
                   [{"a": (0, "int64"), "b": ((0, "int64"), (1, "int64"))}]),
    "concatenate": (lambda: r10().take(2).concatenate(r10().skip(8)), ((), "int64"), 4,
                    [(0, "int64"), (1, "int64"), (8, "int64"), (9, "int64")]),
    "padded_batch": (lambda: r10().take(4).map(lambda x: jf.fill([x], x)).padded_batch(2), ((None, None), "int64"), 2,
                     [([[0], [1]], "int64"), ([[2, 2, 0], [3, 3, 3]], "int64")]),
    "padded_batch shapes and values": (
        lambda: r10().take(4).map(lambda x: jf.fill([x], x)).padded_batch(
            3, padded_shapes=[5], padding_values=jf.constant(-1, jf.int64)), ((None, 5), "int64"), 2,
        [([[-1] * 5, [1] + [-1] * 4, [2, 2, -1, -1, -1]], "int64"), ([[3, 3, 3, -1, -1]], "int64")]),
    "unbatch": (lambda: r10().batch(4).unbatch(), ((), "int64"), -2, [(i, "int64") for i in range(10)]),
    "window + flat_map": (lambda: r10().take(7).window(3, shift=2).flat_map(lambda w: w.batch(3)), ((None,), "int64"), -2,
                          [([0, 1, 2], "int64"), ([2, 3, 4], "int64"), ([4, 5, 6], "int64"), ([6], "int64")]),
    "window drop_remainder": (lambda: r10().take(7).window(3, shift=2, drop_remainder=True).flat_map(lambda w: w.batch(3)),
                              ((None,), "int64"), -2, [([0, 1, 2], "int64"), ([2, 3, 4], "int64"), ([4, 5, 6], "int64")]),
    "window stride": (lambda: r10().window(2, shift=4, stride=3).flat_map(lambda w: w.batch(2)), ((None,), "int64"), -2,
                      [([0, 3], "int64"), ([4, 7], "int64"), ([8], "int64")]),
    "flat_map": (lambda: r10().take(3).flat_map(lambda x: D.from_tensors(x).repeat(x)), ((), "int64"), -2,
                 [(1, "int64"), (2, "int64"), (2, "int64")]),
    "interleave": (lambda: r10().take(4).interleave(lambda x: D.from_tensors(x).repeat(3), cycle_length=2, block_length=2),
                   ((), "int64"), -2, [(v, "int64") for v in [0, 0, 1, 1, 0, 1, 2, 2, 3, 3, 2, 3]]),
    "interleave default cycle": (lambda: r10().take(3).interleave(lambda x: D.range(x)), ((), "int64"), -2,
                                 [(0, "int64"), (0, "int64"), (1, "int64")]),
    "scan": (lambda: r10().take(5).scan(np.int64(0), lambda s, x: (s + x, s * x)), ((), "int64"), 5,
             [(v, "int64") for v in [0, 0, 2, 9, 24]]),
    "rebatch": (lambda: r10().batch(4).rebatch(3), ((None,), "int64"), -2,
                [([0, 1, 2], "int64"), ([3, 4, 5], "int64"), ([6, 7, 8], "int64"), ([9], "int64")]),
    "rebatch drop_remainder": (lambda: r10().batch(4).rebatch(3, drop_remainder=True), ((3,), "int64"), -2,
                               [([0, 1, 2], "int64"), ([3, 4, 5], "int64"), ([6, 7, 8], "int64")]),
    "apply": (lambda: r10().apply(lambda ds: ds.take(2)), ((), "int64"), 2, [(0, "int64"), (1, "int64")]),
    "from_generator": (lambda: D.from_generator(lambda: iter([(1, 2.5), (3, 4)]), output_signature=(
        jf.TensorSpec([], jf.int64), jf.TensorSpec([], jf.float32))), (((), "int64"), ((), "float32")), -2,
        [((1, "int64"), (2.5, "float32")), ((3, "int64"), (4.0, "float32"))]),
    "from_generator output_types/shapes": (lambda: D.from_generator(lambda: iter([[1, 2]]), output_types=jf.int32,
                                                                    output_shapes=[2]), ((2,), "int32"), -2,
                                           [([1, 2], "int32")]),
    "from_generator args": (lambda: D.from_generator(lambda n: range(n), output_types=jf.int64, output_shapes=[],
                                                     args=(3,)), ((), "int64"), -2, [(i, "int64") for i in range(3)]),
    "take_while": (lambda: r10().take_while(lambda x: x < 4), ((), "int64"), -2, [(i, "int64") for i in range(4)]),
    "unique": (lambda: D.from_tensor_slices([1, 3, 1, 2, 3, 5]).unique(), ((), "int32"), -2,
               [(1, "int32"), (3, "int32"), (2, "int32"), (5, "int32")]),
    "cache": (lambda: r10().take(3).cache(), ((), "int64"), 3, [(i, "int64") for i in range(3)]),
    "prefetch": (lambda: r10().prefetch(2), ((), "int64"), 10, [(i, "int64") for i in range(10)]),
    "map parallel deterministic": (lambda: r10().map(lambda x: x * x, num_parallel_calls=jf.data.AUTOTUNE),
                                   ((), "int64"), 10, [(i * i, "int64") for i in range(10)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_against_tf(name):
    make, spec, card, values = CASES[name]
    ds = make()
    assert _spec(ds) == spec
    assert int(ds.cardinality()) == card
    assert _values(ds) == values
    assert _values(ds) == values, "a second iteration gives the same elements"


def test_cardinalities_as_tf():
    d = D.range(5)
    got = [d.take(2).repeat(3), d.skip(7), d.repeat().take(4), d.repeat().skip(4), d.shard(2, 0), d.shard(2, 1),
           d.batch(2), d.repeat(0), d.take(0).repeat(), d.repeat().batch(2), d.cache(), d.shuffle(3), d.prefetch(1),
           d.window(2), d.window(2, drop_remainder=True)]
    assert [int(x.cardinality()) for x in got] == [6, 0, 4, -1, 3, 2, 3, 0, 0, -1, 5, 5, 5, 3, 2]
    assert jf.data.experimental.cardinality(d).dtype == jf.int64
    assert (jf.data.INFINITE_CARDINALITY, jf.data.UNKNOWN_CARDINALITY, jf.data.AUTOTUNE) == (-1, -2, -1)
    assert (jf.data.experimental.INFINITE_CARDINALITY, jf.data.experimental.UNKNOWN_CARDINALITY,
            jf.data.experimental.AUTOTUNE) == (-1, -2, -1)
    assert len(d) == 5


def test_iteration_and_get_next():
    it = iter(D.from_tensor_slices(([1, 2], [3., 4.])))
    a, b = next(it)
    assert isinstance(a, jf.Tensor) and a.dtype == jf.int32 and int(a) == 1 and float(b) == 3.0
    assert [int(x) for x, _ in it] == [2]
    with pytest.raises(StopIteration):
        next(it)
    it = iter(D.range(1))
    assert int(it.get_next()) == 0
    with pytest.raises(jf.errors.OutOfRangeError, match="End of sequence"):
        it.get_next()
    assert [int(x) for x in D.range(3)] == [0, 1, 2]


def test_reduce():
    assert int(D.range(10).reduce(np.int64(0), lambda s, x: s + x)) == 45
    s, c = D.from_tensor_slices([1., 2., 4.]).reduce((0., 0), lambda st, x: (st[0] + x, st[1] + 1))
    assert (float(s), int(c)) == (7.0, 3)


def test_reduce_and_scan_pass_a_tuple_element_whole():
    # TF calls reduce_func/scan_func(state, element) without unpacking a tuple element (map and
    # filter unpack it); TF 2.21 gives 5, the scan [0, 0, 1] and (3, 8) for these.
    z = D.zip((D.range(3), D.range(3)))
    assert int(z.reduce(np.int64(0), lambda s, ab: s + ab[0] * ab[1])) == 5
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        z.reduce(np.int64(0), lambda s, a, b: s + a * b)
    assert [int(v) for v in z.scan(np.int64(0), lambda s, ab: (s + ab[0], s))] == [0, 0, 1]
    a, b = z.reduce((np.int64(0), np.int64(1)), lambda s, ab: (s[0] + ab[0], s[1] * 2))
    assert (int(a), int(b)) == (3, 8)
    traced = jf.function(lambda: z.reduce(np.int64(0), lambda s, ab: s + ab[0] * ab[1]))
    assert int(traced()) == 5


def test_window_element_spec():
    spec = D.from_tensor_slices(([1, 2, 3], [4, 5, 6])).window(2).element_spec
    assert all(isinstance(s, jf.data.DatasetSpec) for s in spec) and len(spec) == 2
    assert spec[0].element_spec == jf.TensorSpec([], jf.int32)
    windows = [[list(w.as_numpy_iterator()) for w in e] for e in D.from_tensor_slices(([1, 2, 3], [4, 5, 6])).window(2)]
    assert windows == [[[1, 2], [4, 5]], [[3], [6]]]
    nested = D.range(7).window(3).map(lambda w: w.batch(3))  # a map may return a dataset
    assert isinstance(nested.element_spec, jf.data.DatasetSpec)
    assert [x.tolist() for x in nested.flat_map(lambda x: x).as_numpy_iterator()] == [[0, 1, 2], [3, 4, 5], [6]]


def test_strings():
    ds = D.from_tensor_slices(["ab", "c"])
    assert ds.element_spec == jf.TensorSpec([], jf.string)
    assert list(ds.as_numpy_iterator()) == [b"ab", b"c"]
    assert list(ds.map(lambda s: jf.strings.length(s)).as_numpy_iterator()) == [2, 1]
    spec = D.from_tensors((1, 1.0, True, np.float64(2), "s")).element_spec
    assert [s.dtype for s in spec] == [jf.int32, jf.float32, jf.bool, jf.float64, jf.string]


def test_string_batches():
    # TF 2.21: string elements batch like numbers, and so do string rows of equal length.
    got = [b.tolist() for b in D.from_tensor_slices(["a", "bb", "ccc"]).batch(2).as_numpy_iterator()]
    assert got == [[b"a", b"bb"], [b"ccc"]]
    pairs = D.from_tensor_slices((["a", "bb", "ccc"], [1, 2, 3])).batch(2)
    assert pairs.element_spec == (jf.TensorSpec([None], jf.string), jf.TensorSpec([None], jf.int32))
    lengths = [(n.tolist(), i.tolist()) for n, i in pairs.map(lambda s, i: (jf.strings.length(s), i))
               .as_numpy_iterator()]
    assert lengths == [([1, 2], [1, 2]), ([3], [3])]
    rows = next(iter(D.from_tensor_slices([["a", "b"], ["c", "d"]]).batch(2)))
    assert rows.shape == (2, 2) and rows.numpy().tolist() == [[b"a", b"b"], [b"c", b"d"]]


def test_get_single_element():
    assert int(D.range(10).take(1).get_single_element()) == 0
    with pytest.raises(jf.errors.InvalidArgumentError, match="Dataset had more than one element"):
        D.range(10).take(2).get_single_element()
    with pytest.raises(jf.errors.InvalidArgumentError, match="Dataset was empty"):
        D.range(10).take(0).get_single_element()


def test_experimental_transformations_for_apply():
    d = D.range(6)
    assert _values(d.batch(4).apply(jf.data.experimental.unbatch())) == [(i, "int64") for i in range(6)]
    assert _values(d.apply(jf.data.experimental.take_while(lambda x: x < 2))) == [(0, "int64"), (1, "int64")]
    assert _values(D.from_tensor_slices([2, 2, 1]).apply(jf.data.experimental.unique())) == [(2, "int32"), (1, "int32")]
    assert _values(d.take(3).apply(jf.data.experimental.scan(np.int64(1), lambda s, x: (s * 2, s + x)))) == \
        [(1, "int64"), (3, "int64"), (6, "int64")]
    assert _values(d.take(2).apply(jf.data.experimental.enumerate_dataset(3))) == \
        [((3, "int64"), (0, "int64")), ((4, "int64"), (1, "int64"))]
    assert int(jf.data.experimental.get_single_element(d.skip(5))) == 5
    with pytest.raises(AttributeError, match="does not implement tf.data.experimental.sample_from_datasets yet"):
        jf.data.experimental.sample_from_datasets  # noqa: B018
