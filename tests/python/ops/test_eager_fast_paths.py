"""The eager fast paths of indexing with Python ints and of jf.constant(ndarray) give what
the general op gives: values equal to numpy's indexing for every kind of key, TF's errors,
and the general path (a graph node, a taped op) whenever a trace or a tape is active."""

import numpy as np
import pytest

import jitflow as jf

KEYS = [
    1,
    -1,
    slice(1, 3),
    slice(None, None, 2),
    slice(None, None, -1),
    slice(-3, None),
    slice(5, 1, -2),
    slice(100, 200),
    (Ellipsis, 1),
    (None, 1, slice(None)),
    (slice(1, 3), None, Ellipsis, 2),
    (2, slice(None), slice(2, 5)),
    (slice(None), 0, slice(None, None, -3)),
    (np.int64(1), slice(np.int32(0), np.int64(6), np.int64(2))),
    [1, 0],
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_a_python_index_gives_numpy_s_values(key):
    x = np.arange(4 * 3 * 6, dtype=np.float32).reshape(4, 3, 6)
    want = x[tuple(key) if isinstance(key, list) else key]
    got = jf.constant(x)[key]
    assert got.dtype == jf.float32
    np.testing.assert_array_equal(np.asarray(got.numpy()), want)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float64, np.complex128, np.bool_])
def test_dtypes_slice_alike(dtype):
    x = (np.arange(24) % 5).astype(dtype).reshape(4, 6)
    np.testing.assert_array_equal(jf.constant(x)[1:3, ::-2].numpy(), x[1:3, ::-2])


def test_an_index_out_of_range_is_tf_s_error():
    t = jf.constant(np.zeros((4, 3), np.float32))
    # TF 2.21: "slice index 4 of dimension 0 out of bounds. [Op:StridedSlice]"
    with pytest.raises(jf.errors.InvalidArgumentError, match="slice index 4 of dimension 0 out of bounds"):
        t[4]
    with pytest.raises(jf.errors.InvalidArgumentError, match="strides\\[0\\] must be non-zero"):
        t[::0]
    with pytest.raises(jf.errors.InvalidArgumentError, match="Index out of range"):
        t[1, 1, 1]


def test_a_tape_records_the_slice():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    t = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(t)
        y = jf.reduce_sum(t[1:3, ::2] * 3.0)
    g = tape.gradient(y, t).numpy()
    want = np.zeros_like(x)
    want[1:3, ::2] = 3.0
    np.testing.assert_array_equal(g, want)


def test_a_trace_records_a_strided_slice_node():
    f = jf.function(lambda a: a[1:3, 0])
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(f(x).numpy(), x[1:3, 0])
    ops = [op.type for op in f.get_concrete_function(x).graph.get_operations()]
    assert "StridedSlice" in ops


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(6, dtype=np.float32).reshape(2, 3).T,  # not C-contiguous
        lambda: np.arange(6, dtype=">i4"),  # big-endian
        lambda: np.arange(6, dtype=np.float64)[::2],  # strided
        lambda: np.array(3.5, np.float32),  # 0-d
        lambda: np.zeros((0, 3), np.int16),  # empty
        lambda: np.array([1 + 2j], np.complex64),
        lambda: np.array([True, False]),
    ],
)
def test_constant_of_an_array_has_its_values_and_dtype(make):
    a = make()
    t = jf.constant(a)
    assert t.shape == a.shape
    assert np.dtype(t.dtype.as_numpy_dtype) == a.dtype.newbyteorder("=")
    np.testing.assert_array_equal(t.numpy(), a)


def test_constant_of_an_array_copies_it():
    a = np.arange(4, dtype=np.float32)
    t = jf.constant(a)
    a[0] = 99.0
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])


def test_constant_of_a_non_numeric_array_takes_the_general_path():
    assert jf.constant(np.array([b"ab", b"c"])).numpy().tolist() == [b"ab", b"c"]
    with pytest.raises(TypeError):
        jf.constant(np.array([object()], dtype=object))


def test_constant_in_a_trace_is_a_const_node():
    a = np.arange(3, dtype=np.int32)

    @jf.function
    def f():
        return jf.constant(a) + 1

    np.testing.assert_array_equal(f().numpy(), a + 1)
    assert "Const" in [op.type for op in f.get_concrete_function().graph.get_operations()]


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 1, 4), (2, 3, 1, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_transpose_with_the_default_perm_reverses_the_dims(shape, dtype):
    x = (np.arange(int(np.prod(shape))) % 3).astype(dtype).reshape(shape)
    got = jf.transpose(jf.constant(x))
    assert got.dtype == jf.as_dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), x.T)


def test_transpose_with_the_default_perm_in_a_trace_and_on_a_tape():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = jf.function(lambda a: jf.transpose(a, name="flip"))
    np.testing.assert_array_equal(f(x).numpy(), x.T)
    ops = {op.name: op.type for op in f.get_concrete_function(x).graph.get_operations()}
    assert ops.get("flip") == "Transpose"
    t = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(t)
        y = jf.reduce_sum(jf.transpose(t) * np.arange(2, dtype=np.float32))
    np.testing.assert_array_equal(tape.gradient(y, t).numpy(), [[0, 0, 0], [1, 1, 1]])
