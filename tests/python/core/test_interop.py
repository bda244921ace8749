"""numpy and Python interop (docs/user_guide.md, 'Eager tensors'): zero-copy .numpy() / np.asarray /
buffer protocol / DLPack in both directions (native byte order only), read-only views of
immutable tensors, lifetimes, TF's repr and dtype spellings, and pickling and copying."""
import gc
import re

import numpy as np
import pytest
from conftest import assert_exact, run_in_child

import jitflow as jf

DTYPES = [(jf.float32, np.float32, "f"), (jf.float64, np.float64, "d"), (jf.int32, np.int32, "i"),
          (jf.int64, np.int64, "q"), (jf.bool, np.bool_, "?")]
IDS = [d[0].name for d in DTYPES]
exact = assert_exact


def sample(np_dtype, shape=(2, 3)):
    n = int(np.prod(shape))
    return (np.arange(n) % 3 == 1).reshape(shape) if np_dtype == np.bool_ else \
        (np.arange(n) - 2).astype(np_dtype).reshape(shape)


# ---- .numpy() and np.asarray ---------------------------------------------------------
@pytest.mark.parametrize("jdt,ndt,fmt", DTYPES, ids=IDS)
def test_numpy_is_zero_copy_and_read_only(jdt, ndt, fmt):
    x = sample(ndt)
    t = jf.constant(x)
    a = t.numpy()
    assert a.dtype == ndt and a.shape == (2, 3)
    np.testing.assert_array_equal(a, x)
    assert a.ctypes.data == t._data_ptr  # a view of the tensor's buffer
    assert np.shares_memory(a, t.numpy())  # every call returns a view of the same memory
    assert a.flags.c_contiguous and not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0, 0] = a[0, 1]
    with pytest.raises(ValueError):
        a.setflags(write=True)  # tensors are immutable: no way to get a writable view
    np.testing.assert_array_equal(t.numpy(), x)


def test_numpy_view_keeps_the_tensor_alive():
    t = jf.constant(np.arange(1000, dtype=np.float32)) * 2
    a = t.numpy()
    del t
    gc.collect()
    _ = [jf.ones([1000]) for _ in range(10)]  # reuse of a freed buffer would show up here
    np.testing.assert_array_equal(a, np.arange(1000) * 2.0)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,), (2, 3, 4)], ids=str)
def test_numpy_of_scalar_and_empty_tensors(shape):
    x = np.ones(shape, np.float32)
    a = jf.constant(x).numpy()
    # TF returns a NumPy scalar for a scalar tensor (np.float32(1.0)), an array otherwise.
    assert isinstance(a, np.generic if shape == () else np.ndarray)
    assert a.shape == shape and a.dtype == np.float32
    np.testing.assert_array_equal(a, x)
    assert isinstance(np.asarray(jf.constant(x)), np.ndarray)


@pytest.mark.parametrize("jdt,ndt,fmt", DTYPES, ids=IDS)
def test_np_asarray_is_zero_copy(jdt, ndt, fmt):
    t = jf.constant(sample(ndt))
    a = np.asarray(t)
    assert a.dtype == ndt and a.ctypes.data == t._data_ptr and not a.flags.writeable
    np.testing.assert_array_equal(a, sample(ndt))


def test_np_array_copies_and_dtype_conversion():
    t = jf.constant([[1.5, 2.5]])
    c = np.array(t)
    assert not np.shares_memory(c, t.numpy()) and c.flags.writeable
    c[0, 0] = 9  # the copy is the caller's; the tensor is unchanged
    np.testing.assert_array_equal(t.numpy(), [[1.5, 2.5]])
    d = np.asarray(t, dtype=np.float64)
    assert d.dtype == np.float64
    np.testing.assert_array_equal(d, [[1.5, 2.5]])
    np.testing.assert_array_equal(np.asarray(t, dtype=np.int32), [[1, 2]])


def test_numpy_functions_accept_tensors():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = jf.constant(x)
    assert np.sum(t) == 15.0
    np.testing.assert_array_equal(np.concatenate([t, t]), np.concatenate([x, x]))
    np.testing.assert_allclose(np.exp(np.asarray(t)), np.exp(x))


# ---- buffer protocol -----------------------------------------------------------------
@pytest.mark.parametrize("jdt,ndt,fmt", DTYPES, ids=IDS)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), (5,)], ids=str)
def test_memoryview_buffer_protocol(jdt, ndt, fmt, shape):
    x = sample(ndt, shape)
    t = jf.constant(x)
    m = memoryview(t)
    item = np.dtype(ndt).itemsize
    assert m.format == fmt
    assert m.itemsize == item
    assert m.ndim == len(shape)
    assert m.shape == shape
    assert m.readonly
    assert m.c_contiguous
    assert m.nbytes == x.nbytes
    expect_strides = tuple(int(np.prod(shape[i + 1:])) * item for i in range(len(shape)))
    assert m.strides == expect_strides
    assert m.tobytes() == x.tobytes()
    with pytest.raises(TypeError):
        m[(0,) * len(shape)] = 0  # read-only buffer
    if x.size:
        view = np.frombuffer(t, dtype=ndt)
        assert view.ctypes.data == t._data_ptr  # zero-copy through the buffer protocol
        np.testing.assert_array_equal(view, x.reshape(-1))


# ---- DLPack: jitflow -> numpy --------------------------------------------------------
@pytest.mark.parametrize("jdt,ndt,fmt", DTYPES, ids=IDS)
def test_dlpack_export_to_numpy_is_zero_copy(jdt, ndt, fmt):
    x = sample(ndt, (3, 4))
    t = jf.constant(x)
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU, device 0
    a = np.from_dlpack(t)
    assert a.dtype == ndt and a.shape == (3, 4)
    assert a.ctypes.data == t._data_ptr
    np.testing.assert_array_equal(a, x)
    assert not a.flags.writeable


def test_dlpack_export_keeps_the_buffer_alive():
    t = jf.constant(np.arange(100, dtype=np.int64)) + 1
    ptr = t._data_ptr
    a = np.from_dlpack(t)
    del t
    gc.collect()
    _ = [jf.ones([100], jf.int64) for _ in range(10)]
    assert a.ctypes.data == ptr
    np.testing.assert_array_equal(a, np.arange(100) + 1)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1, 1)], ids=str)
def test_dlpack_export_scalar_and_empty(shape):
    x = np.full(shape, 2.5, np.float32)
    a = np.from_dlpack(jf.constant(x))
    assert a.shape == shape and a.dtype == np.float32
    np.testing.assert_array_equal(a, x)


# ---- DLPack: numpy -> jitflow --------------------------------------------------------
@pytest.mark.parametrize("jdt,ndt,fmt", DTYPES, ids=IDS)
def test_from_dlpack_numpy_is_zero_copy(jdt, ndt, fmt):
    x = sample(ndt, (4, 3))
    t = jf.from_dlpack(x)
    assert t.dtype == jdt and t.shape == (4, 3)
    assert t._data_ptr == x.ctypes.data
    assert np.shares_memory(x, t.numpy())
    np.testing.assert_array_equal(t.numpy(), x)
    np.testing.assert_array_equal(jf.equal(t, x).numpy(), np.ones((4, 3), bool))  # usable in ops


def test_from_dlpack_aliases_the_source_and_keeps_it_alive():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = jf.from_dlpack(x)
    x[0, 0] = 42.0  # zero-copy: the tensor sees the producer's memory
    assert t.numpy()[0, 0] == 42.0
    del x
    gc.collect()
    _ = [np.ones(6) for _ in range(10)]
    np.testing.assert_array_equal(t.numpy(), [[42.0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(jf.reduce_sum(t, 1).numpy(), [45.0, 12.0])


@pytest.mark.parametrize("make", [
    lambda x: x.T, lambda x: x[:, ::2], lambda x: x[::-1], lambda x: x[1:, 1:3].T,
    lambda x: np.lib.stride_tricks.as_strided(x[:1], (3, 4), (0, 4)),
], ids=["T", "step2", "reversed", "slice_T", "stride0"])
def test_from_dlpack_non_contiguous_source_is_a_correct_copy(make):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = make(x)
    t = jf.from_dlpack(v)
    assert t.shape == v.shape and t.dtype == jf.float32
    np.testing.assert_array_equal(t.numpy(), v)
    assert t.numpy().flags.c_contiguous
    assert not np.shares_memory(t.numpy(), x)
    x[...] = -1  # a copy: later writes to the source do not show through
    assert (t.numpy() != -1).all()


def test_from_dlpack_contiguous_slice_is_zero_copy():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = jf.from_dlpack(x[1:])
    assert t._data_ptr == x[1:].ctypes.data
    np.testing.assert_array_equal(t.numpy(), x[1:])


@pytest.mark.parametrize("x", [np.array(3.5, np.float32), np.zeros((0, 3)), np.zeros((2, 0), np.int64),
                               np.ones((1, 1, 1), bool)], ids=["scalar", "0x3", "2x0", "1x1x1"])
def test_from_dlpack_scalar_and_empty(x):
    t = jf.from_dlpack(x)
    assert t.shape == x.shape
    np.testing.assert_array_equal(t.numpy(), x)


def test_from_dlpack_round_trip_shares_one_buffer():
    x = np.random.default_rng(0).random((5, 7))
    t = jf.from_dlpack(x)
    back = np.from_dlpack(t)
    assert back.ctypes.data == x.ctypes.data == t._data_ptr
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("make", [lambda t: t.numpy(), lambda t: np.from_dlpack(t),
                                  lambda t: np.broadcast_to(t.numpy(), (2, 3))],
                         ids=["numpy", "from_dlpack", "broadcast_to"])
def test_from_dlpack_read_only_numpy_arrays(make):
    t = jf.constant([1.0, 2.0, 3.0])
    a = make(t)
    u = jf.from_dlpack(a)
    np.testing.assert_array_equal(u.numpy(), a)


def test_from_dlpack_of_a_jitflow_tensor_and_a_capsule():
    t = jf.constant([1.0, 2.0, 3.0])
    u = jf.from_dlpack(t)
    assert u._data_ptr == t._data_ptr
    cap = t.__dlpack__()
    v = jf.from_dlpack(cap)
    assert v._data_ptr == t._data_ptr
    with pytest.raises(TypeError, match="unconsumed"):
        jf.from_dlpack(cap)  # a capsule is consumed once


def test_from_dlpack_unsupported_dtype():
    # numpy's long double has no jitflow dtype (nor a DLPack one numpy exports)
    with pytest.raises(TypeError, match="float128|longdouble|DLPack"):
        jf.from_dlpack(np.zeros(3, np.longdouble))


def test_from_dlpack_rejects_non_dlpack_objects():
    with pytest.raises(TypeError, match="__dlpack__"):
        jf.from_dlpack([1, 2, 3])


def test_from_dlpack_refuses_non_native_byte_order():
    # Zero-copy import cannot share bytes in another order (they were read as raw bytes).
    for a in (np.array([1.0, 2.0], ">f4"), np.array([1, 2], ">i8")[::-1]):
        with pytest.raises(TypeError, match="native byte order"):
            jf.from_dlpack(a)
    exact(jf.from_dlpack(np.arange(6.0).reshape(2, 3)[:, ::-1]), np.arange(6.0).reshape(2, 3)[:, ::-1], np.float64)


# ---- repr / str ----------------------------------------------------------------------
def test_repr_like_tf():
    t = jf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert repr(t) == ("<jf.Tensor: shape=(2, 2), dtype=float32, numpy=\n"
                       "array([[1., 2.],\n       [3., 4.]], dtype=float32)>")
    assert repr(jf.constant([1, 2])) == "<jf.Tensor: shape=(2,), dtype=int32, numpy=array([1, 2], dtype=int32)>"
    assert repr(jf.constant([1, 2], jf.int64)) == "<jf.Tensor: shape=(2,), dtype=int64, numpy=array([1, 2])>"
    assert repr(jf.constant(1.5)) == "<jf.Tensor: shape=(), dtype=float32, numpy=1.5>"
    assert repr(jf.constant(3)) == "<jf.Tensor: shape=(), dtype=int32, numpy=3>"
    assert repr(jf.constant(True)) == "<jf.Tensor: shape=(), dtype=bool, numpy=True>"
    assert repr(jf.zeros([0, 2])) == ("<jf.Tensor: shape=(0, 2), dtype=float32, "
                                      "numpy=array([], shape=(0, 2), dtype=float32)>")


def test_repr_of_large_tensor_is_summarized():
    r = repr(jf.zeros([10000]))
    assert r.startswith("<jf.Tensor: shape=(10000,), dtype=float32, numpy=array([0., 0., 0., ...,")
    assert len(r) < 200


def test_str_like_tf():
    assert str(jf.constant([1, 2])) == "jf.Tensor([1 2], shape=(2,), dtype=int32)"
    assert str(jf.constant(2.5, jf.float64)) == "jf.Tensor(2.5, shape=(), dtype=float64)"
    assert str(jf.constant([[True], [False]])) == "jf.Tensor(\n[[ True]\n [False]], shape=(2, 1), dtype=bool)"


def test_repr_shape_and_dtype_match_the_tensor():
    for shape in [(1,), (2, 1, 3), ()]:
        t = jf.ones(list(shape), jf.int64)
        m = re.match(r"<jf\.Tensor: shape=(\(.*?\)), dtype=(\w+), numpy=", repr(t))
        assert m and m.group(1) == str(shape) and m.group(2) == "int64"


def test_tensor_metadata():
    t = jf.constant(np.zeros((2, 3), np.float64))
    assert t.shape == (2, 3) and t.ndim == 2 and t.dtype == jf.float64
    assert t.get_shape() == (2, 3)
    assert t.device.endswith("CPU:0")
    assert t._nbytes == 48


def test_dtype_spellings_and_scalar_numpy_as_tf():
    assert (str(jf.float32), repr(jf.int64)) == ("<dtype: 'float32'>", "jf.int64")  # TF: tf.int64
    assert type(jf.constant(1.5).numpy()) is np.float32 and jf.constant(2).numpy() == 2
    assert type(jf.Variable(1.0).numpy()) is np.float32


# ---- pickling and copying ------------------------------------------------------------------------
def test_tensor_pickles_and_copies_like_tf():
    import copy
    import pickle
    t = jf.constant([2**62, 3], jf.int64)
    assert copy.copy(t) is t                        # immutable: TF returns the tensor itself
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert u.dtype == jf.int64
        np.testing.assert_array_equal(u.numpy(), [2**62, 3])


def test_tensor_reduce_does_not_abort():
    # object.__reduce__ on a Tensor aborted the interpreter (pybind11: "instance allocation
    # failed: new instance has no pybind11-registered base types"). TF: (convert_to_tensor, (value,)).
    out = run_in_child("report(lambda: jf.ones([2]).__reduce__()[1][0].tolist())")
    assert out["value"] == [1.0, 1.0]
