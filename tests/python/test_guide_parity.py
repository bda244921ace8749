"""TF 2 guide parity (issue 19, 'wrong or different answers'): behaviours the TF guides rely
on, each checked against what TF 2.21 does."""
import numpy as np
import pytest

import jitflow as jf
from jitflow import _C


# ---- 1. the gradient of a source with respect to itself ---------------------------------
def test_tape_gradient_of_a_variable_with_respect_to_itself_is_one():
    v0, v1 = jf.Variable(2.0), jf.Variable(3.0)
    with jf.GradientTape() as tape:
        pass
    g0, g1 = tape.gradient(v0, [v0, v1])
    assert g0 is not None and g0.numpy() == 1.0
    assert g1 is None


def test_tape_variable_target_is_the_handle_not_its_reads():
    v = jf.Variable([1.0, 2.0])
    with jf.GradientTape() as tape:
        _ = v * 5.0  # a recorded read: TF's target is the variable's handle, not this read
    np.testing.assert_array_equal(tape.gradient(v, v).numpy(), [1.0, 1.0])
    v2 = jf.Variable(4.0, trainable=False)
    with jf.GradientTape(watch_accessed_variables=False) as tape:
        pass
    assert tape.gradient(v2, v2).numpy() == 1.0  # TF: 1.0 even unwatched and non-trainable


def test_tape_gradient_of_a_tensor_with_respect_to_itself():
    x = jf.constant([2.0, 3.0])
    with jf.GradientTape() as tape:
        pass
    np.testing.assert_array_equal(tape.gradient(x, x).numpy(), [1.0, 1.0])  # unwatched: TF 1.0
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = x * 3.0
    np.testing.assert_array_equal(tape.gradient([x, y], x).numpy(), [4.0, 4.0])
    with jf.GradientTape() as tape:
        pass
    g = tape.gradient(x, x, output_gradients=jf.constant([5.0, 7.0]))
    np.testing.assert_array_equal(g.numpy(), [5.0, 7.0])


def test_jf_gradients_of_a_source_with_respect_to_itself():
    v0, v1 = jf.Variable(2.0), jf.Variable(3.0)

    @jf.function
    def f(x):
        return (jf.gradients(x, [x]), jf.gradients(v0, [v0, v1]),
                jf.gradients(v0.read_value(), [v0]))

    (gx,), (g0, g1), (gr,) = f(jf.constant(1.0))
    assert gx.numpy() == 1.0 and g0.numpy() == 1.0 and gr.numpy() == 1.0
    assert g1 is None


# ---- 2. elementwise ==, unhashable tensors and variables, ref() -----------------------
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
