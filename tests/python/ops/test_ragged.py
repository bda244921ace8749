"""jf.RaggedTensor and jf.ragged against TF 2.21 (each expected value is TF's output for the same
call, hard-coded) and against Python lists; eagerly and across a jf.function boundary, with the
gradient of to_tensor."""
import numpy as np
import pytest

import jitflow as jf

MODES = ["eager", "function"]


def _rt():
    return jf.ragged.constant([[1, 2], [], [3, 4, 5]])


def test_structure_as_tf():
    rt = _rt()
    assert repr(rt) == "<jf.RaggedTensor [[1, 2], [], [3, 4, 5]]>"
    assert rt.shape.as_list() == [3, None] and rt.dtype == jf.int32 and rt.ragged_rank == 1
    assert rt.row_splits.dtype == jf.int64 and rt.row_splits.numpy().tolist() == [0, 2, 2, 5]
    assert rt.row_lengths().numpy().tolist() == [2, 0, 3] and rt.value_rowids().numpy().tolist() == [0, 0, 2, 2, 2]
    assert int(rt.nrows()) == 3 and rt.bounding_shape().numpy().tolist() == [3, 3]
    assert rt[2].numpy().tolist() == [3, 4, 5] and rt[-1].numpy().tolist() == [3, 4, 5]
    assert rt[1:].to_list() == [[], [3, 4, 5]] and rt[1, 0:1].numpy().tolist() == []
    assert [a.tolist() for a in rt.numpy()] == [[1, 2], [], [3, 4, 5]]
    nested = jf.ragged.constant([[[1], [2, 3]], [[4]]])
    assert nested.ragged_rank == 2 and nested.shape.as_list() == [2, None, None]
    assert nested.flat_values.numpy().tolist() == [1, 2, 3, 4]
    assert [s.numpy().tolist() for s in nested.nested_row_splits] == [[0, 2, 3], [0, 1, 3, 4]]
    assert nested.to_tensor().numpy().tolist() == [[[1, 0], [2, 3]], [[4, 0], [0, 0]]]
    assert jf.ragged.constant([[1, 2], [3]], dtype=jf.float32).dtype == jf.float32
    assert jf.ragged.constant([["a", "bc"], ["d"]]).to_list() == [[b"a", b"bc"], [b"d"]]


def test_constructors_as_tf():
    R = jf.RaggedTensor
    assert R.from_row_lengths([1, 2, 3], [2, 0, 1]).to_list() == [[1, 2], [], [3]]
    assert R.from_value_rowids([1, 2, 3], [0, 0, 2], nrows=4).to_list() == [[1, 2], [], [3], []]
    assert R.from_row_splits([1, 2, 3], [0, 1, 3]).to_list() == [[1], [2, 3]]
    assert R.from_tensor([[1, 0, 0], [2, 3, 0]], padding=0).to_list() == [[1], [2, 3]]
    assert R.from_tensor([[1, 0, 0], [2, 3, 0]], lengths=[1, 3]).to_list() == [[1], [2, 3, 0]]
    assert R.from_nested_row_splits([1, 2, 3, 4], [[0, 2, 3], [0, 1, 3, 4]]).to_list() == [[[1], [2, 3]], [[4]]]
    assert jf.ragged.range([0, 2], [3, 4]).to_list() == [[0, 1, 2], [2, 3]]
    assert jf.ragged.boolean_mask([[1, 2], [3, 4]], [[True, False], [False, True]]).to_list() == [[1], [4]]
    assert jf.ragged.stack([_rt(), _rt()]).to_list() == [[[1, 2], [], [3, 4, 5]]] * 2
    assert jf.ragged.row_splits_to_segment_ids([0, 2, 2, 5]).numpy().tolist() == [0, 0, 2, 2, 2]
    assert jf.ragged.segment_ids_to_row_splits([0, 0, 2]).numpy().tolist() == [0, 2, 2, 3]


@pytest.mark.parametrize("mode", MODES)
def test_dense_conversion_and_operators(mode):
    def body(r):
        return r.to_tensor(), r.to_tensor(default_value=-1, shape=[4, 2]), r * 2 + 1, r.row_lengths()

    dense, shaped, scaled, lengths = body(_rt()) if mode == "eager" else jf.function(body)(_rt())
    assert dense.numpy().tolist() == [[1, 2, 0], [0, 0, 0], [3, 4, 5]]
    assert shaped.numpy().tolist() == [[1, 2], [-1, -1], [3, 4], [-1, -1]]
    assert isinstance(scaled, jf.RaggedTensor) and scaled.to_list() == [[3, 5], [], [7, 9, 11]]
    assert lengths.numpy().tolist() == [2, 0, 3]
    assert jf.ragged.map_flat_values(jf.multiply, _rt(), 10).to_list() == [[10, 20], [], [30, 40, 50]]
    assert (_rt() * _rt()).to_list() == [[1, 4], [], [9, 16, 25]]


def test_to_tensor_gradient(rng):
    values = jf.constant(rng.standard_normal(5))
    with jf.GradientTape() as tape:
        tape.watch(values)
        dense = jf.RaggedTensor.from_row_lengths(values, [2, 0, 3]).to_tensor()
        loss = jf.reduce_sum(dense * np.arange(9.0).reshape(3, 3))
    np.testing.assert_allclose(tape.gradient(loss, values).numpy(), [0, 1, 6, 7, 8])


@pytest.mark.parametrize("mode", MODES)
def test_reductions_dispatch_as_tf(mode):
    # TF 2.21 dispatches jf.reduce_* to ragged tensors; its outputs for these calls, hard-coded.
    rt = _rt()
    rf = rt.with_values(jf.cast(rt.values, jf.float32))
    run = (lambda f, *a, **k: f(*a, **k)) if mode == "eager" else (lambda f, *a, **k: jf.function(
        lambda r: f(r, **k))(*a))
    assert run(jf.reduce_sum, rt, axis=1).numpy().tolist() == [3, 0, 12]
    assert run(jf.reduce_sum, rt, axis=0).numpy().tolist() == [4, 6, 5]
    assert int(run(jf.reduce_sum, rt)) == 15 and int(jf.reduce_prod(rt)) == 120
    assert jf.reduce_max(rt, axis=1).numpy().tolist() == [2, -2147483648, 5]
    assert jf.reduce_min(rf, axis=1).numpy().tolist() == [1.0, 3.4028234663852886e38, 3.0]
    assert jf.reduce_prod(rt, axis=0).numpy().tolist() == [3, 8, 5]
    mean = run(jf.reduce_mean, rt, axis=1)
    assert mean.dtype == jf.float64 and np.isnan(mean.numpy()[1])
    assert mean.numpy()[[0, 2]].tolist() == [1.5, 4.0]
    assert jf.reduce_mean(rf, axis=0).numpy().tolist() == [2.0, 3.0, 5.0] and float(jf.reduce_mean(rf)) == 3.0
    with pytest.raises(NotImplementedError, match="keepdims"):
        jf.reduce_sum(rt, axis=1, keepdims=True)


def test_split_rows_answer_as_ragged_tensors():
    rows = jf.strings.split(jf.constant(["a b", "c d e", ""]))
    assert rows.to_tensor().numpy().tolist() == [[b"a", b"b", b""], [b"c", b"d", b"e"], [b"", b"", b""]]
    assert rows.row_lengths().numpy().tolist() == [2, 3, 0] and rows.shape.as_list() == [3, None]
    codes = jf.strings.unicode_decode(["ab", "c"], "UTF-8")
    assert jf.reduce_sum(codes, axis=1).numpy().tolist() == [195, 99]


@pytest.mark.parametrize("mode", MODES)
def test_elementwise_ops_dispatch_as_tf(mode):
    rt = jf.ragged.constant([[1.0, 2.0], [], [3.0]])

    def body(r):
        return jf.exp(r), jf.add(r, 1.0), jf.multiply(2.0, r), jf.cast(r, jf.int32), jf.abs(-r), jf.maximum(r, r)

    outs = body(rt) if mode == "eager" else jf.function(body)(rt)
    assert all(isinstance(o, jf.RaggedTensor) for o in outs)
    np.testing.assert_allclose(outs[0].flat_values.numpy(), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)
    assert outs[1].to_list() == [[2.0, 3.0], [], [4.0]] and outs[2].to_list() == [[2.0, 4.0], [], [6.0]]
    assert outs[3].dtype == jf.int32 and outs[3].to_list() == [[1, 2], [], [3]]
    assert outs[4].to_list() == rt.to_list() and outs[5].to_list() == rt.to_list()
    with pytest.raises(TypeError):  # a dense operand of another shape is not broadcast (TF would)
        jf.add(rt, jf.ones([3, 1]))
