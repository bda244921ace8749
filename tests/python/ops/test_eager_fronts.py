"""jf.constant, jf.transpose and jf.reshape run their commonest eager calls in C++ (a front
over the Python function) and t[key] reaches C++ through the subscript slot: the fronts must
still look and bind like the functions, hand keywords and unusual values to them, and the
direct paths must give numpy's values, TF's errors, and the op itself under a tape or a trace."""

import copy
import inspect
import pickle

import numpy as np
import pytest

import jitflow as jf
from jitflow.ops import basic_ops


@pytest.mark.parametrize("name", ["constant", "transpose", "reshape"])
def test_a_front_looks_like_its_function(name):
    front = getattr(jf, name)
    inner = front.__wrapped__
    assert inspect.isfunction(inner)
    assert front.__name__ == name and front.__module__ == "jitflow.ops.basic_ops"
    assert inspect.signature(front) == inspect.signature(inner)
    assert repr(front) == repr(inner)
    assert getattr(basic_ops, name) is front


@pytest.mark.parametrize("name", ["constant", "transpose", "reshape"])
def test_a_front_pickles_and_copies_as_the_same_function(name):
    front = getattr(jf, name)
    assert pickle.loads(pickle.dumps(front)) is front
    assert copy.deepcopy(front) is front and copy.copy(front) is front


def test_a_front_binds_as_a_method_like_a_function():
    class Holder:
        reshape = jf.reshape

    h = Holder()
    with pytest.raises(TypeError):  # h is passed as the tensor, as for a plain function
        h.reshape([4])
    assert Holder.reshape is jf.reshape


@pytest.mark.parametrize("dims", [[16], [2, -1], (4, 2, 2), [-1], [1, 16, 1]])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.complex128, np.bool_])
def test_reshape_to_python_ints_gives_numpy_s_values(dims, dtype):
    x = (np.arange(16) % 3).astype(dtype).reshape(4, 4)
    got = jf.reshape(jf.constant(x), dims)
    want = x.reshape(dims)
    assert got.shape == want.shape and got.dtype == jf.as_dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), want)


def test_reshape_of_an_empty_tensor_follows_tf_s_rule():
    # TF 2.21: tf.reshape(tf.zeros([0, 3]), [-1, 0]) has shape (3, 0) (zero sizes count in
    # neither product).
    assert jf.reshape(jf.zeros([0, 3]), [-1, 0]).shape == (3, 0)


@pytest.mark.parametrize(
    "dims, message",
    [
        ([5], "Input to reshape is a tensor with 16 values, but the requested shape has 5"),
        ([-1, -1], "only one input size may be -1"),
        ([-2, 8], "must be non-negative"),
    ],
)
def test_a_bad_reshape_raises_the_op_s_error(dims, message):
    t = jf.constant(np.zeros((4, 4), np.float32))
    with pytest.raises(jf.errors.InvalidArgumentError, match=message):
        jf.reshape(t, dims)


def test_reshape_keywords_and_tensor_shapes_take_the_function():
    t = jf.constant(np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(jf.reshape(t, shape=[2, 3]).numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(jf.reshape(t, jf.constant([3, 2])).numpy(), np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(jf.reshape(np.arange(6.0), [3, 2]).numpy(), np.arange(6.0).reshape(3, 2))
    with pytest.raises(TypeError):
        jf.reshape(t, [2.0, 3])  # a float size is TF's TypeError, from the function


def test_reshape_and_transpose_on_a_tape_are_recorded():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(t)
        y = jf.reduce_sum(jf.reshape(t, [3, 2]) * np.arange(6, dtype=np.float32).reshape(3, 2))
        z = y + jf.reduce_sum(jf.transpose(t) * np.arange(6, dtype=np.float32).reshape(3, 2))
    g = tape.gradient(z, t)  # reshape's weights reshaped back, plus transpose's transposed back
    np.testing.assert_array_equal(g.numpy(), np.arange(6).reshape(2, 3) + np.arange(6).reshape(3, 2).T)


def test_reshape_in_a_trace_is_a_reshape_node():
    @jf.function
    def f(x):
        return jf.reshape(x, [3, 2])

    x = jf.constant(np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(f(x).numpy(), np.arange(6).reshape(3, 2))
    assert "Reshape" in [op.type for op in f.get_concrete_function(x).graph.get_operations()]


def test_constant_s_front_passes_other_values_and_keywords_on():
    assert jf.constant(3).dtype == jf.int32
    assert jf.constant([1.5, 2.0]).dtype == jf.float32
    assert jf.constant(np.arange(3), dtype=jf.float32).dtype == jf.float32
    np.testing.assert_array_equal(jf.constant(np.arange(4), shape=[2, 2]).numpy(), [[0, 1], [2, 3]])
    s = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]  # strided: copied by the general converter
    np.testing.assert_array_equal(jf.constant(s).numpy(), s)
    assert jf.constant(np.array(["a"])).dtype == jf.string


@pytest.mark.parametrize("shape", [(1, 5), (5, 1), (1, 1), (3, 1, 4), (2, 3, 4, 5)])
def test_transpose_with_size_one_dims_and_higher_ranks(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    got = jf.transpose(jf.constant(x))
    assert got.shape == x.T.shape
    np.testing.assert_array_equal(got.numpy(), x.T)


def test_transpose_with_a_name_or_a_perm_takes_the_function():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = jf.constant(x)
    np.testing.assert_array_equal(jf.transpose(t, name="t").numpy(), x.T)
    np.testing.assert_array_equal(jf.transpose(t, [1, 0]).numpy(), x.T)
    np.testing.assert_array_equal(jf.transpose(x).numpy(), x.T)


def test_the_subscript_slot_and_getitem_agree():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = jf.constant(x)
    for key in [1, (1, 2), slice(None, None, -1), (Ellipsis, None, 1), (np.int64(1),), [0, 1]]:
        want = x[tuple(key) if isinstance(key, list) else key]
        np.testing.assert_array_equal(t[key].numpy(), want)
        np.testing.assert_array_equal(jf.Tensor.__getitem__(t, key).numpy(), want)


def test_an_index_past_int64_and_a_float_index_are_tf_s_errors():
    t = jf.constant(np.zeros(4, np.float32))
    with pytest.raises(ValueError):
        t[2**70]
    with pytest.raises(TypeError, match="Only integers, slices"):
        t[1.0]
    with pytest.raises(TypeError, match="Only integers, slices"):
        t[True:2]


def test_a_slice_in_a_trace_and_on_a_tape_is_the_op():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    @jf.function
    def f(a):
        return a[1:, None, ::2]

    np.testing.assert_array_equal(f(jf.constant(x)).numpy(), x[1:, None, ::2])
    t = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(t)
        y = jf.reduce_sum(t[1:, ::2])
    want = np.zeros_like(x)
    want[1:, ::2] = 1
    np.testing.assert_array_equal(tape.gradient(y, t).numpy(), want)


def test_a_tensor_object_cannot_be_made_without_a_value():
    # As TF's EagerTensor, jf.Tensor has no Python constructor: an instance made by __new__
    # would hold no value, and passing one to jf.function or __dlpack__ crashed the interpreter.
    with pytest.raises(TypeError):
        jf.Tensor.__new__(jf.Tensor)
    with pytest.raises(TypeError, match="cannot be created directly"):
        jf.Tensor()
