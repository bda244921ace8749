"""Equality of tensors and variables, as TF 2: == and != are elementwise (broadcasting, a scalar
answer for shapes that cannot broadcast, Python bools against None, TF's errors for strings and
mixed dtypes), so tensors and variables are unhashable and .ref() is the key to use instead; nest
structures, the optimizer and the tape keep working with unhashable variables. Values and
messages are TF 2.21's."""
import numpy as np
import pytest

import jitflow as jf
from jitflow import _C


def test_variable_equality_is_elementwise():
    a, b = jf.Variable([1.0, 2.0]), jf.Variable([1.0, 3.0])
    eq, ne = a == b, a != b
    assert isinstance(eq, jf.Tensor) and eq.dtype == jf.bool
    np.testing.assert_array_equal(eq.numpy(), [True, False])
    np.testing.assert_array_equal(ne.numpy(), [False, True])
    np.testing.assert_array_equal((a == jf.constant([2.0, 2.0])).numpy(), [False, True])
    np.testing.assert_array_equal((jf.constant([1.0, 1.0]) == a).numpy(), [True, False])
    assert (jf.Variable(1.0) != jf.Variable(2.0)).numpy()


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_equality_broadcasts_and_incompatible_shapes_give_a_scalar(mode):
    def f(a, b):
        return a == b, a != b
    eq, ne = (f(jf.constant([1, 2]), jf.constant([[1], [2]])) if mode == "eager"
              else jf.function(f)(jf.constant([1, 2]), jf.constant([[1], [2]])))
    np.testing.assert_array_equal(eq.numpy(), [[True, False], [False, True]])
    np.testing.assert_array_equal(ne.numpy(), ~np.array([[True, False], [False, True]]))
    eq, ne = (f(jf.constant([1, 2]), jf.constant([1, 2, 3])) if mode == "eager"
              else jf.function(f)(jf.constant([1, 2]), jf.constant([1, 2, 3])))
    assert eq.shape == () and eq.dtype == jf.bool and not eq.numpy()  # TF: scalar False
    assert ne.shape == () and ne.numpy()


def test_equality_with_none_strings_and_mixed_dtypes():
    t = jf.constant([1, 2])
    assert (t == None) is False and (t != None) is True  # TF: Python bools
    v = jf.Variable([1, 2])
    assert (v == None) is False and (v != None) is True
    with pytest.raises(TypeError):
        t == "a"  # noqa: B015  (TF: TypeError, the string is not an int32)
    np.testing.assert_array_equal((jf.constant([1.0, 2.0]) == [1, 2]).numpy(), [True, True])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Equal"):
        jf.constant([1.0, 2.0]) == jf.constant([1, 2])  # noqa: B015  (TF: no promotion)


def test_tensors_and_variables_are_unhashable_and_ref_is_the_key():
    t, v = jf.constant(1.0), jf.Variable(1.0)
    with pytest.raises(TypeError, match=r"Tensor is unhashable. Instead, use tensor.ref\(\) as the key."):
        hash(t)
    with pytest.raises(TypeError, match=r"Variable is unhashable. Instead, use variable.ref\(\) as the key."):
        {v: 1}  # noqa: B018
    d = {t.ref(): "t", v.ref(): "v"}
    assert d[t.ref()] == "t" and d[v.ref()] == "v"
    assert t.ref().deref() is t and v.ref().deref() is v
    assert t.ref() != jf.constant(1.0).ref()  # by identity, not value
    assert v.ref() != jf.Variable(1.0).ref()
    assert {v.ref(), v.ref()} == {v.ref()}
    assert repr(v.ref()).startswith("<Reference wrapping <jf.Variable")


def test_structures_holding_equal_valued_variables_are_different_structures():
    # A nest TreeDef keeps non-tensor leaves (here variables) by reference and compares them:
    # two variables of equal value are still two objects (elementwise == is no answer).
    a, b = jf.Variable(1.0), jf.Variable(1.0)
    ta = _C.nest_flatten([a])[1]
    assert ta == _C.nest_flatten([a])[1]
    assert ta != _C.nest_flatten([b])[1]


def test_optimizer_and_tape_with_unhashable_variables():
    v = jf.Variable([1.0, 2.0])
    opt = jf.optimizers.Adam(0.1)  # its slots are keyed by id(v)
    with jf.GradientTape() as tape:
        loss = jf.reduce_sum(v * v)
    (g,) = tape.gradient(loss, [v])
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    assert tape.watched_variables()[0] is v
    opt.apply_gradients([(g, v)])
    opt.apply_gradients([(g, v)])
    assert v.numpy()[0] < 1.0
