"""jf.SparseTensor and jf.sparse against numpy (dense float64 references built from the same
indices and values) and against TF 2.21 where the result's layout is TF's choice (index order,
threshold, errors: the values TF printed for the same calls are hard-coded). Eagerly and inside
jf.function (a SparseTensor argument and result cross the boundary as its three tensors);
gradients of the values through to_dense and sparse_dense_matmul against central differences."""
import numpy as np
import pytest
from conftest import numeric_grad

import jitflow as jf

MODES = ["eager", "function"]


def _sp():
    return jf.sparse.SparseTensor(indices=[[0, 1], [1, 2], [2, 0]], values=[1.0, 2.0, 3.0], dense_shape=[3, 4])


def _run(mode, fn, *args):
    return fn(*args) if mode == "eager" else jf.function(fn)(*args)


def _dense(indices, values, shape):
    out = np.zeros(shape)
    for i, v in zip(indices, values):
        out[tuple(i)] += v
    return out


def _random(rng, shape, n):
    flat = np.sort(rng.choice(int(np.prod(shape)), size=n, replace=False))
    indices = np.stack(np.unravel_index(flat, shape), axis=1)
    return indices, rng.standard_normal(n)


def test_properties_and_repr():
    sp = _sp()
    assert sp.shape == (3, 4) and sp.get_shape() == (3, 4) and sp.dtype == jf.float32
    assert sp.indices.dtype == jf.int64 and sp.dense_shape.dtype == jf.int64
    assert repr(sp).startswith("SparseTensor(indices=") and "dense_shape=" in repr(sp)
    assert isinstance(sp, jf.SparseTensor) and jf.SparseTensor is jf.sparse.SparseTensor and jf.is_tensor(sp)
    assert sp.with_values(sp.values * 2).values.numpy().tolist() == [2, 4, 6]
    with pytest.raises(ValueError, match="Dimensions 1 and 2 are not compatible"):  # TF's words
        jf.sparse.SparseTensor([[0, 0]], [1.0, 2.0], [2, 2])
    with pytest.raises(ValueError, match="must have rank 2"):
        jf.sparse.SparseTensor([0, 0], [1.0], [2, 2])


@pytest.mark.parametrize("mode", MODES)
def test_to_and_from_dense(mode, rng):
    shape = (4, 5, 3)
    idx, vals = _random(rng, shape, 9)
    sp = jf.sparse.SparseTensor(idx, vals, shape)
    np.testing.assert_array_equal(_run(mode, jf.sparse.to_dense, sp).numpy(), _dense(idx, vals, shape))
    got = _run(mode, lambda s: jf.sparse.to_dense(s, default_value=-1.0), sp).numpy()
    want = np.full(shape, -1.0)
    want[tuple(idx.T)] = vals
    np.testing.assert_array_equal(got, want)
    back = _run(mode, jf.sparse.from_dense, jf.constant(_dense(idx, vals, shape)))
    assert isinstance(back, jf.SparseTensor)
    np.testing.assert_array_equal(back.indices.numpy(), idx)
    np.testing.assert_array_equal(back.values.numpy(), vals)
    assert back.dense_shape.numpy().tolist() == list(shape)
    empty = jf.sparse.from_dense(jf.zeros([0, 3]))
    assert empty.indices.shape == (0, 2) and jf.sparse.to_dense(empty).shape == (0, 3)


def test_to_dense_checks_indices_as_tf():
    unordered = jf.sparse.SparseTensor([[2, 0], [0, 1]], [3.0, 1.0], [3, 4])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"indices\[1\] = \[0,1\] is out of order"):
        jf.sparse.to_dense(unordered)
    np.testing.assert_array_equal(jf.sparse.to_dense(unordered, validate_indices=False).numpy(),
                                  [[0, 1, 0, 0], [0, 0, 0, 0], [3, 0, 0, 0]])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"indices\[0\] = \[0,5\] is out of bounds"):
        jf.sparse.to_dense(jf.sparse.SparseTensor([[0, 5]], [1.0], [2, 2]))
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"indices\[1\] = \[0,1\] is repeated"):
        jf.sparse.to_dense(jf.sparse.SparseTensor([[0, 1], [0, 1]], [1.0, 2.0], [2, 2]))
    with pytest.raises(jf.errors.InvalidArgumentError):  # traced: the check runs with the function
        jf.function(jf.sparse.to_dense)(unordered)
    with pytest.raises(TypeError, match="Input must be a SparseTensor"):
        jf.sparse.to_dense(jf.constant([1.0]))
    r = jf.sparse.reorder(unordered)
    assert r.indices.numpy().tolist() == [[0, 1], [2, 0]] and r.values.numpy().tolist() == [1.0, 3.0]


@pytest.mark.parametrize("mode", MODES)
def test_matmul_against_numpy(mode, rng):
    idx, vals = _random(rng, (5, 4), 7)
    a = _dense(idx, vals, (5, 4))
    sp = jf.sparse.SparseTensor(idx, vals, [5, 4])
    b = rng.standard_normal((4, 3))
    c = rng.standard_normal((5, 2))
    d = rng.standard_normal((2, 5))
    np.testing.assert_allclose(_run(mode, jf.sparse.sparse_dense_matmul, sp, b).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(_run(mode, lambda s, x: jf.sparse.sparse_dense_matmul(s, x, adjoint_a=True), sp, c)
                               .numpy(), a.T @ c, rtol=1e-12)
    np.testing.assert_allclose(_run(mode, lambda s, x: jf.sparse.sparse_dense_matmul(s, x, adjoint_b=True), sp,
                                    b.T).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(_run(mode, jf.sparse.sparse_dense_matmul, d, sp).numpy(), d @ a, rtol=1e-12)


def test_value_gradients_match_finite_differences(rng):
    idx, vals = _random(rng, (4, 3), 5)
    b = rng.standard_normal((3, 2))
    w = rng.standard_normal((4, 2))

    def loss_np(v, x):
        return float(np.sum((_dense(idx, v, (4, 3)) @ x) * w))

    v_t, b_t = jf.constant(vals), jf.constant(b)
    with jf.GradientTape() as tape:
        tape.watch([v_t, b_t])
        out = jf.sparse.sparse_dense_matmul(jf.sparse.SparseTensor(idx, v_t, [4, 3]), b_t)
        loss = jf.reduce_sum(out * w)
    gv, gb = tape.gradient(loss, [v_t, b_t])
    nv, nb = numeric_grad(loss_np, [vals, b])
    np.testing.assert_allclose(gv.numpy(), nv, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), nb, rtol=1e-6, atol=1e-8)
    with jf.GradientTape() as tape:
        tape.watch(v_t)
        dense = jf.sparse.to_dense(jf.sparse.SparseTensor(idx, v_t, [4, 3]))
        loss = jf.reduce_sum(dense * dense)
    np.testing.assert_allclose(tape.gradient(loss, v_t).numpy(), 2 * vals, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_add_reduce_and_elementwise_as_tf(mode):
    sp = _sp()
    b = jf.sparse.SparseTensor([[0, 1], [2, 3]], [10.0, 20.0], [3, 4])
    s = _run(mode, jf.sparse.add, sp, b)
    assert s.indices.numpy().tolist() == [[0, 1], [1, 2], [2, 0], [2, 3]]
    assert s.values.numpy().tolist() == [11.0, 2.0, 3.0, 20.0]
    cancel = jf.sparse.SparseTensor([[0, 1]], [-1.0], [3, 4])
    s = jf.sparse.add(sp, cancel, threshold=0.5)  # |1 - 1| < 0.5: dropped, as TF
    assert s.indices.numpy().tolist() == [[1, 2], [2, 0]] and s.values.numpy().tolist() == [2.0, 3.0]
    dense = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(_run(mode, jf.sparse.add, sp, jf.constant(dense)).numpy(),
                                  dense + _dense([[0, 1], [1, 2], [2, 0]], [1, 2, 3], (3, 4)))
    assert _run(mode, lambda s: jf.sparse.reduce_sum(s, axis=1), sp).numpy().tolist() == [1.0, 2.0, 3.0]
    assert float(jf.sparse.reduce_sum(sp)) == 6.0
    assert jf.sparse.reduce_sum(sp, axis=0, keepdims=True).numpy().tolist() == [[3.0, 1.0, 2.0, 0.0]]
    assert (sp * jf.constant([1.0, 2.0, 3.0, 4.0])).values.numpy().tolist() == [2.0, 6.0, 3.0]
    assert (sp / 2).values.numpy().tolist() == [0.5, 1.0, 1.5]


@pytest.mark.parametrize("mode", MODES)
def test_structure_ops_as_tf(mode):
    sp = _sp()
    b = jf.sparse.SparseTensor([[0, 1], [2, 3]], [10.0, 20.0], [3, 4])
    t = _run(mode, jf.sparse.transpose, sp)
    assert t.indices.numpy().tolist() == [[0, 2], [1, 0], [2, 1]] and t.dense_shape.numpy().tolist() == [4, 3]
    c = _run(mode, lambda x, y: jf.sparse.concat(1, [x, y]), sp, b)
    assert c.indices.numpy().tolist() == [[0, 1], [0, 5], [1, 2], [2, 0], [2, 7]]
    assert c.values.numpy().tolist() == [1.0, 10.0, 2.0, 3.0, 20.0] and c.dense_shape.numpy().tolist() == [3, 8]
    c = jf.sparse.concat(0, [sp, b])
    assert c.indices.numpy().tolist() == [[0, 1], [1, 2], [2, 0], [3, 1], [5, 3]]
    sl = _run(mode, lambda x: jf.sparse.slice(x, [1, 0], [2, 3]), sp)
    assert sl.indices.numpy().tolist() == [[0, 2], [1, 0]] and sl.dense_shape.numpy().tolist() == [2, 3]
    rt = jf.sparse.retain(sp, [True, False, True])
    assert rt.indices.numpy().tolist() == [[0, 1], [2, 0]] and rt.values.numpy().tolist() == [1.0, 3.0]
    rs = _run(mode, lambda x: jf.sparse.reshape(x, [2, 6]), sp)
    assert rs.indices.numpy().tolist() == [[0, 1], [1, 0], [1, 2]] and rs.dense_shape.numpy().tolist() == [2, 6]
    rs = jf.sparse.reshape(sp, [-1])
    assert rs.indices.numpy().tolist() == [[1], [6], [8]] and rs.dense_shape.numpy().tolist() == [12]
    e = jf.sparse.expand_dims(sp, 0)
    assert e.indices.numpy().tolist() == [[0, 0, 1], [0, 1, 2], [0, 2, 0]]
    assert e.dense_shape.numpy().tolist() == [1, 3, 4]
    ey = jf.sparse.eye(2, 3)
    assert ey.indices.numpy().tolist() == [[0, 0], [1, 1]] and ey.values.numpy().tolist() == [1.0, 1.0]
    assert ey.dense_shape.numpy().tolist() == [2, 3]


def _sp2():
    return jf.sparse.SparseTensor(indices=[[0, 1], [0, 3], [2, 0]], values=[1.0, -2.0, 3.0], dense_shape=[4, 4])


@pytest.mark.parametrize("mode", MODES)
def test_row_functions_as_tf(mode):
    # Every expected value below is TF 2.21's output for the same call (hard-coded).
    sp = _sp2()
    assert _run(mode, lambda s: jf.sparse.reduce_max(s, axis=1), sp).numpy().tolist() == [1.0, 0.0, 3.0, 0.0]
    assert float(jf.sparse.reduce_max(sp)) == 3.0
    assert jf.sparse.reduce_max(sp, axis=0, keepdims=True).numpy().tolist() == [[3.0, 1.0, 0.0, -2.0]]
    neg = jf.sparse.SparseTensor([[0, 1], [0, 3]], [-1.0, -2.0], [2, 4])  # implicit zeros take no part
    assert jf.sparse.reduce_max(neg, axis=1).numpy().tolist() == [-1.0, 0.0]
    filled, empty = _run(mode, lambda s: jf.sparse.fill_empty_rows(s, -9.0), sp)
    assert filled.indices.numpy().tolist() == [[0, 1], [0, 3], [1, 0], [2, 0], [3, 0]]
    assert filled.values.numpy().tolist() == [1.0, -2.0, -9.0, 3.0, -9.0]
    assert empty.numpy().tolist() == [False, True, False, True]
    ids = jf.sparse.SparseTensor([[0, 0], [0, 1], [2, 0]], jf.constant([1, 3, 2], jf.int64), [3, 2])
    assert jf.sparse.to_indicator(ids, 4).numpy().tolist() == [[False, True, False, True], [False] * 4,
                                                               [False, False, True, False]]
    np.testing.assert_allclose(_run(mode, jf.sparse.softmax, sp).values.numpy(), [0.952574, 0.047426, 1.0], atol=1e-6)
    assert jf.sparse.map_values(jf.abs, sp).values.numpy().tolist() == [1.0, 2.0, 3.0]
    assert jf.sparse.reset_shape(sp).dense_shape.numpy().tolist() == [3, 4]
    b = jf.sparse.SparseTensor([[0, 1], [1, 1]], [5.0, 7.0], [4, 4])
    mx, mn = jf.sparse.maximum(sp, b), jf.sparse.minimum(sp, b)
    assert mx.indices.numpy().tolist() == [[0, 1], [0, 3], [1, 1], [2, 0]]
    assert mx.values.numpy().tolist() == [5.0, 0.0, 7.0, 3.0] and mn.values.numpy().tolist() == [1.0, -2.0, 0.0, 0.0]
    halves = jf.sparse.split(sp_input=sp, num_split=2, axis=1)
    assert [h.indices.numpy().tolist() for h in halves] == [[[0, 1], [2, 0]], [[0, 1]]]
    assert halves[1].dense_shape.numpy().tolist() == [4, 2]


@pytest.mark.parametrize("mode", MODES)
def test_segments_and_embedding_lookups_as_tf(mode):
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    assert jf.sparse.segment_sum(data, [0, 2], [0, 0]).numpy().tolist() == [[6.0, 8.0]]
    assert jf.sparse.segment_mean(data, [0, 1, 2], [0, 0, 1]).numpy().tolist() == [[2.0, 3.0], [5.0, 6.0]]
    np.testing.assert_allclose(jf.sparse.segment_sqrt_n(data, [0, 1, 2], [0, 0, 1]).numpy(),
                               [[4 / np.sqrt(2), 6 / np.sqrt(2)], [5.0, 6.0]], rtol=1e-6)
    assert jf.sparse.segment_sum(data, [0, 2], [0, 2], num_segments=4).numpy().tolist() == [[1, 2], [0, 0], [5, 6],
                                                                                            [0, 0]]
    params = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], np.float32)
    ids = jf.sparse.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0]], jf.constant([1, 3, 0, 2], jf.int64), [4, 2])
    w = jf.sparse.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0]], [2.0, 1.0, 1.0, 3.0], [4, 2])
    want = {"sum": ([[10, 12], [1, 2], [5, 6]], [[13, 16], [1, 2], [15, 18]]),
            "mean": ([[5, 6], [1, 2], [5, 6]], [[13 / 3, 16 / 3], [1, 2], [5, 6]]),
            "sqrtn": ([[10 / np.sqrt(2), 12 / np.sqrt(2)], [1, 2], [5, 6]],
                      [[13 / np.sqrt(5), 16 / np.sqrt(5)], [1, 2], [5, 6]])}
    for combiner, (plain, weighted) in want.items():
        got = _run(mode, lambda i, c=combiner: jf.nn.embedding_lookup_sparse(params, i, None, combiner=c), ids)
        np.testing.assert_allclose(got.numpy(), plain, rtol=1e-6)
        got = _run(mode, lambda i, v, c=combiner: jf.nn.embedding_lookup_sparse(params, i, v, combiner=c), ids, w)
        np.testing.assert_allclose(got.numpy(), weighted, rtol=1e-6)
    safe = jf.nn.safe_embedding_lookup_sparse(params, ids, None, combiner="mean")
    assert safe.numpy().tolist() == [[5, 6], [1, 2], [5, 6], [0, 0]]
    safe = jf.nn.safe_embedding_lookup_sparse(params, ids, w, combiner="sum", default_id=1)
    assert safe.numpy().tolist() == [[13, 16], [1, 2], [15, 18], [3, 4]]
    p = jf.constant(params)
    with jf.GradientTape() as tape:
        tape.watch(p)
        loss = jf.reduce_sum(jf.nn.embedding_lookup_sparse(p, ids, w, combiner="sum"))
    np.testing.assert_allclose(tape.gradient(loss, p).numpy(), [[1, 1], [2, 2], [3, 3], [1, 1]])


def test_zero_preserving_unary_ops_dispatch():
    sp = jf.sparse.from_dense(np.array([[0.0, -2.0], [3.0, 0.0]], np.float32))
    assert jf.abs(sp).values.numpy().tolist() == [2.0, 3.0]
    assert jf.math.square(sp).values.numpy().tolist() == [4.0, 9.0]
    cast = jf.cast(sp, jf.int32)
    assert cast.dtype == jf.int32 and cast.indices.numpy().tolist() == [[0, 1], [1, 0]]
    with pytest.raises(TypeError):  # exp(0) is 1: TF does not dispatch it to sparse tensors either
        jf.exp(sp)


def test_nest_keeps_composites_whole_unless_asked():
    # TF's tf.nest: a SparseTensor/RaggedTensor is one leaf; expand_composites=True opens it.
    sp = jf.sparse.from_dense(np.array([[0, 1]], np.int32))
    rt = jf.ragged.constant([[1], [2, 3]])
    assert jf.nest.flatten(sp) == [sp] and not jf.nest.is_nested(sp)
    assert len(jf.nest.flatten(sp, expand_composites=True)) == 3
    assert len(jf.nest.flatten({"a": rt, "b": 1})) == 2 and len(jf.nest.flatten(rt, expand_composites=True)) == 2
    doubled = jf.nest.map_structure(lambda t: t * 2, {"a": sp})["a"]
    assert doubled.indices.numpy().tolist() == [[0, 1]] and doubled.values.numpy().tolist() == [2]
    rebuilt = jf.nest.pack_sequence_as(sp, jf.nest.flatten(sp, expand_composites=True), expand_composites=True)
    assert isinstance(rebuilt, jf.SparseTensor) and rebuilt.values.numpy().tolist() == [1]
