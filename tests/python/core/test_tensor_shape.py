"""jf.TensorShape (tensor_shape.py), as TF's class: the type of Tensor.shape, Variable.shape and
TensorSpec.shape; equal to tuples and lists; partial and unknown shapes, merges and rank checks
with TF 2.21's messages; its truth value; TensorSpec's dims following TensorShape's rules; an
unknown-rank input_signature; and a TensorShape as one value to jf.nest and jf.function."""
import pytest

import jitflow as jf


def test_tensor_shape_is_a_tensorshape_that_equals_tuples_and_lists():
    t = jf.constant([[1, 2, 3]])
    s = t.shape
    assert isinstance(s, jf.TensorShape) and isinstance(jf.Variable([1.0]).shape, jf.TensorShape)
    assert s == (1, 3) and s == [1, 3] and (1, 3) == s and s != (3, 1) and s != [1, 3, 1]
    assert s.rank == 2 and s.ndims == 2 and s.as_list() == [1, 3] and s.num_elements() == 3
    assert s[1] == 3 and s[-1] == 3 and isinstance(s[1:], jf.TensorShape) and s[1:] == [3]
    a, b = s
    assert (a, b) == (1, 3) and list(s) == [1, 3] and len(s) == 2
    assert {s: 1}[(1, 3)] == 1  # hashes as the tuple
    assert repr(s) == "TensorShape([1, 3])" and str(s) == "(1, 3)"
    assert jf.constant(1.0).shape == () and jf.constant(1.0).shape.num_elements() == 1


def test_tensor_shape_partial_and_unknown():
    s = jf.TensorShape([2, None, 3])
    assert s.rank == 3 and s.as_list() == [2, None, 3] and s[1] is None
    assert not s.is_fully_defined() and s.num_elements() is None
    assert s.is_compatible_with([2, 5, 3]) and not s.is_compatible_with([2, 5])
    assert not s.is_compatible_with([3, 5, 3])
    assert s.merge_with([None, 4, 3]) == [2, 4, 3]
    with pytest.raises(ValueError, match=r"Shapes \(2, None, 3\) and \(3, 4, 3\) are not compatible"):
        s.merge_with([3, 4, 3])
    u = jf.TensorShape(None)
    assert u.rank is None and u.num_elements() is None and str(u) == "<unknown>"
    assert repr(u) == "TensorShape(None)" and u.is_compatible_with([1, 2])
    assert u.merge_with([1, 2]) == [1, 2]
    with pytest.raises(ValueError, match=r"as_list\(\) is not defined on an unknown TensorShape"):
        u.as_list()
    assert jf.TensorShape([2]) + [3] == [2, 3] and jf.TensorShape([2]).concatenate((3,)) == (2, 3)
    assert jf.TensorShape(5) == [5] and str(jf.TensorShape([5])) == "(5,)"


def test_traced_tensor_shapes_have_none_dims():
    seen = []

    @jf.function(input_signature=[jf.TensorSpec([None, 3], jf.float32)])
    def f(x):
        seen.append(x.shape)
        return x

    f(jf.zeros([2, 3]))
    (s,) = seen
    assert isinstance(s, jf.TensorShape) and s.as_list() == [None, 3] and s == (None, 3)
    assert not s.is_fully_defined() and s.is_compatible_with([7, 3])


def test_tensor_shape_truth_is_a_known_rank_as_in_tf():
    # TF 2.21: bool(TensorShape([])) is True, bool(TensorShape(None)) is False
    assert bool(jf.TensorShape([])) and bool(jf.TensorShape([0])) and not jf.TensorShape(None)
    assert jf.constant(1.0).shape and len(jf.constant([1.0, 2.0])) == 2
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(jf.constant(1.0))


def test_tensor_spec_shape_is_a_tensor_shape_and_may_have_unknown_rank():
    s = jf.TensorSpec([2, None], jf.float32)
    assert isinstance(s.shape, jf.TensorShape) and s.shape.as_list() == [2, None]
    assert s.is_compatible_with(jf.zeros([2, 7])) and not s.is_compatible_with(jf.zeros([3, 7]))
    u = jf.TensorSpec(None, jf.float32)
    assert u.shape.rank is None and repr(u.shape) == "TensorShape(None)"
    assert u.is_compatible_with(jf.zeros([2, 3])) and not u.is_compatible_with(jf.zeros([2], jf.int32))
    assert u != jf.TensorSpec([], jf.float32)


def test_unknown_rank_input_signature_runs_every_rank():
    @jf.function(input_signature=[jf.TensorSpec(None, jf.float32)])
    def f(x):
        return jf.reduce_sum(x)

    assert float(f(jf.ones([2]))) == 2.0 and float(f(jf.ones([2, 3]))) == 6.0
    assert float(f(jf.ones([4]))) == 4.0 and float(f(jf.constant(5.0))) == 5.0
    # TF traces one graph of unknown rank; jitflow traces one per rank (documented departure)
    assert f.experimental_get_tracing_count() == 3
    with pytest.raises(TypeError, match="does not match input_signature"):
        f(jf.ones([2], jf.int32))


def test_tensor_shape_rank_checks_and_graph_shapes_as_tf():
    s = jf.TensorShape([None, 3])
    assert s.with_rank(2) == [None, 3] and s.with_rank_at_least(1) is s and s.with_rank_at_most(2) is s
    assert jf.TensorShape(None).with_rank(2).as_list() == [None, None]
    # TF 2.21's messages
    with pytest.raises(ValueError, match=r"Shape \(None, 3\) must have rank 3"):
        s.with_rank(3)
    with pytest.raises(ValueError, match="must have rank at least 3"):
        s.with_rank_at_least(3)
    with pytest.raises(ValueError, match="must have rank at most 1"):
        s.with_rank_at_most(1)
    s.assert_has_rank(2)
    with pytest.raises(ValueError):
        s.assert_has_rank(1)
    with pytest.raises(ValueError):
        s.assert_is_compatible_with([2, 4])
    with pytest.raises(ValueError):
        s.assert_is_fully_defined()
    assert s.most_specific_compatible_shape(jf.TensorShape([2, 3])) == [None, 3]
    assert s.most_specific_compatible_shape([2]).rank is None
    assert jf.Variable([1.0, 2.0]).get_shape() == jf.TensorShape([2])
    cf = jf.function(lambda a: a * 2).get_concrete_function(jf.TensorSpec([None, 2]))
    assert isinstance(cf.inputs[0].shape, jf.TensorShape) and cf.inputs[0].shape == [None, 2]
    assert cf.outputs[0].get_shape().as_list() == [None, 2]


def test_tensor_shape_is_one_value_to_nest_and_function():
    s = jf.TensorShape([2, None])
    assert jf.nest.flatten({"a": s}) == [s]

    @jf.function
    def f(x):
        return x.shape, jf.random.uniform([2], seed=1).shape

    a, b = f(jf.zeros([3]))
    assert isinstance(a, jf.TensorShape) and a == [3] and b == [2]  # passed through, as TF

    @jf.function
    def g(shape):
        return jf.zeros(shape)
    g(jf.TensorShape([2])), g(jf.TensorShape([2])), g(jf.TensorShape([3]))
    assert g.experimental_get_tracing_count() == 2  # keyed by value


@pytest.mark.parametrize("shape, exc, msg", [
    ([-5], ValueError, "Dimension -5 must be >= 0"),          # was taken as an unknown dim
    ([2.5], TypeError, "Dimension value must be integer"),     # was int(2.5) == 2
    ("ab", TypeError, "Dimension value must be integer"),
    ([2**70], ValueError, "does not fit in int64"),
], ids=repr)
def test_tensor_spec_dims_follow_tf_tensorshape(shape, exc, msg):
    with pytest.raises(exc, match=msg):
        jf.TensorSpec(shape)
