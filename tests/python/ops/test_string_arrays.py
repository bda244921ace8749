"""Shape and data-movement ops on eager string tensors against numpy's object arrays: values,
shapes, dtype and TF's error types; inside a traced function the ops still refuse kString."""
import numpy as np
import pytest

import jitflow as jf

WORDS = np.array([[b"a", b"bb", b"ccc"], [b"d", b"", b"f"]], dtype=object)


def _check(got, want):
    assert got.dtype == jf.string
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want, dtype=object))


@pytest.fixture
def s():
    return jf.constant(WORDS)


def test_rearranging(s):
    _check(jf.reshape(s, [3, -1]), WORDS.reshape(3, 2))
    _check(jf.reshape(s, [6]), WORDS.reshape(6))
    _check(jf.expand_dims(s, -1), WORDS[..., None])
    _check(jf.expand_dims(s, 0), WORDS[None])
    _check(jf.squeeze(jf.expand_dims(s, 1)), WORDS)
    _check(jf.squeeze(jf.constant([["x"]]), axis=[0]), np.array([b"x"], dtype=object))
    _check(jf.transpose(s), WORDS.T)
    _check(jf.transpose(jf.expand_dims(s, 0), [2, 0, 1]), np.transpose(WORDS[None], [2, 0, 1]))
    _check(jf.tile(s, [2, 1]), np.tile(WORDS, [2, 1]))
    _check(jf.reverse(s, [-1]), WORDS[:, ::-1])
    _check(jf.broadcast_to(jf.constant(["q"]), [2, 3]), np.full((2, 3), b"q", dtype=object))
    _check(jf.fill([2, 2], "z"), np.full((2, 2), b"z", dtype=object))


def test_combining(s):
    _check(jf.concat([s, s], 0), np.concatenate([WORDS, WORDS], 0))
    _check(jf.concat([s, [["x"], ["y"]]], axis=1), np.concatenate([WORDS, [[b"x"], [b"y"]]], 1))
    _check(jf.stack([s, s], axis=1), np.stack([WORDS, WORDS], 1))
    _check(jf.stack(["p", "q"]), np.array([b"p", b"q"], dtype=object))
    parts = jf.unstack(s, axis=1)
    assert len(parts) == 3
    for got, want in zip(parts, WORDS.T):
        _check(got, want)
    _check(jf.gather(s, [1, 0, 1]), WORDS[[1, 0, 1]])
    _check(jf.gather(s, [[2], [0]], axis=1), np.take(WORDS, [[2], [0]], axis=1))
    _check(jf.where([[True, False, True], [False, False, True]], s, "-"),
           np.where([[True, False, True], [False, False, True]], WORDS, b"-"))


def test_shape_and_size(s):
    assert jf.shape(s).numpy().tolist() == [2, 3] and jf.shape(s).dtype == jf.int32
    assert jf.shape(s, out_type=jf.int64).dtype == jf.int64
    assert int(jf.size(s)) == 6 and int(jf.rank(s)) == 2
    assert np.asarray(s).dtype == object and np.asarray(s).tolist() == WORDS.tolist()


def test_errors(s):
    with pytest.raises(jf.errors.InvalidArgumentError, match="Reshape"):
        jf.reshape(s, [4])
    with pytest.raises(jf.errors.InvalidArgumentError, match="squeeze dim"):
        jf.squeeze(s, axis=0)
    with pytest.raises(jf.errors.InvalidArgumentError, match="not in \\[0, 2\\)"):
        jf.gather(s, [2])
    with pytest.raises(jf.errors.InvalidArgumentError, match="ConcatV2"):
        jf.concat([s, jf.constant(["a"])], 0)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Pack"):
        jf.stack([s, jf.constant(["a"])])
    with pytest.raises(jf.errors.InvalidArgumentError):
        jf.expand_dims(s, 3)


def test_traced_strings_move_through_the_shape_ops():
    # the graph kernels move strings too (ops/test_dtype_movers.py covers every mover)
    @jf.function(autograph=False)
    def f(x):
        return jf.expand_dims(x, -1)

    assert f(jf.constant(["a", "b"])).numpy().tolist() == [[b"a"], [b"b"]]
    with pytest.raises(TypeError, match="ExpandDims"):  # the axis stays a number
        jf.function(lambda x, a: jf.expand_dims(x, a))(jf.constant(["a"]), jf.constant("0"))


def test_dataset_map_reshapes_strings():
    ds = jf.data.Dataset.from_tensor_slices(["a b", "c"]).batch(2).map(lambda t: jf.expand_dims(t, -1))
    got = next(iter(ds))
    assert tuple(got.shape) == (2, 1) and np.asarray(got).tolist() == [[b"a b"], [b"c"]]
