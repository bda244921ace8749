"""Bad input gets a Python exception that names the op, the shapes/dtypes and the caller's
source line (docs/user_guide.md, 'Results and errors') -- never a crash, never a silent wrong answer.

The C++ error translator appends "\\n  at <file>:<line>: <source text>" for the innermost
frame outside the jitflow package; `raises_here` checks that it points at the exact line of
this file that made the bad call."""
import contextlib
import linecache
import os

import numpy as np
import pytest
from conftest import assert_raised, run_in_child

import jitflow as jf

THIS_FILE = os.path.basename(__file__)


@contextlib.contextmanager
def raises_here(exc_type, *fragments):
    """pytest.raises(exc_type) whose message contains every fragment and ends with the
    file:line and source text of the call in this file that raised."""
    with pytest.raises(exc_type) as info:
        yield info
    msg = str(info.value)
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    line, tb = None, info.tb
    while tb is not None:  # the last frame of this file on the way to the raise
        if tb.tb_frame.f_code.co_filename == __file__:
            line = tb.tb_lineno
        tb = tb.tb_next
    assert line is not None
    assert f"\n  at {__file__}:{line}" in msg, f"caller location {THIS_FILE}:{line} not in {msg!r}"
    source = linecache.getline(__file__, line).strip()
    assert msg.endswith(f"{THIS_FILE}:{line}: {source}"), msg


# ---- the messages docs/user_guide.md ('Results and errors') promises ----------------------
def test_shape_mismatch_names_op_shapes_and_dtypes():
    a, b = jf.zeros([2, 3]), jf.zeros([4])
    with raises_here(jf.errors.InvalidArgumentError, "AddV2", "Incompatible shapes", "[2,3]", "[4]",
                     "float32[2,3]", "float32[4]"):
        jf.add(a, b)


def test_shape_mismatch_through_an_operator():
    a, b = jf.ones([3, 2], jf.int64), jf.ones([3], jf.int64)
    with raises_here(jf.errors.InvalidArgumentError, "Mul", "[3,2]", "[3]", "int64[3,2]", "int64[3]"):
        a * b


def test_dtype_mismatch_is_invalid_argument_and_value_error_naming_both_dtypes():
    a, b = jf.constant([1.0, 2.0]), jf.constant([1.0, 2.0], jf.float64)
    with raises_here(jf.errors.InvalidArgumentError, "AddV2", "float32", "float64") as info:
        a + b
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, jf.errors.OpError)
    with raises_here(ValueError, "Sub", "int32", "int64"):
        jf.subtract(jf.constant([1]), jf.constant([1], jf.int64))


def test_float_only_op_on_int_is_type_error_naming_the_op():
    x = jf.constant([1, 2, 3])
    with raises_here(TypeError, "Exp", "int32"):
        jf.exp(x)
    with raises_here(TypeError, "Softmax", "int32"):
        jf.nn.softmax(x)


def test_bad_reshape():
    x = jf.zeros([2, 3])
    with raises_here(jf.errors.InvalidArgumentError, "Reshape", "6 values", "4"):
        jf.reshape(x, [4])
    with raises_here(jf.errors.InvalidArgumentError, "Reshape", "only one input size may be -1"):
        jf.reshape(x, [-1, -1])
    with raises_here(jf.errors.InvalidArgumentError, "Reshape", "6 values", "[4,?]"):
        jf.reshape(x, [4, -1])


def test_matmul_size_mismatch():
    a, b = jf.zeros([2, 3]), jf.zeros([4, 5])
    with raises_here(jf.errors.InvalidArgumentError, "MatMul", "Matrix size-incompatible",
                     "In[0]: [2,3]", "In[1]: [4,5]"):
        jf.matmul(a, b)
    with raises_here(jf.errors.InvalidArgumentError, "Matrix size-incompatible"):
        a @ b
    with raises_here(jf.errors.InvalidArgumentError, "BatchMatMulV2", "Matrix size-incompatible"):
        jf.matmul(jf.zeros([7, 2, 3]), jf.zeros([7, 4, 5]))


def test_batch_matmul_batch_dims_not_broadcastable():
    with raises_here(jf.errors.InvalidArgumentError, "BatchMatMulV2", "batch dimensions", "[2,3,4]",
                     "[3,4,5]"):
        jf.matmul(jf.zeros([2, 3, 4]), jf.zeros([3, 4, 5]))


def test_bad_reduction_axis():
    x = jf.zeros([2, 3])
    with raises_here(jf.errors.InvalidArgumentError, "Sum", "Invalid reduction dimension", "2"):
        jf.reduce_sum(x, axis=2)
    with raises_here(jf.errors.InvalidArgumentError, "Max", "Invalid reduction dimension", "-3"):
        jf.reduce_max(x, axis=[0, -3])


def test_bad_axis_for_other_ops():
    x = jf.zeros([2, 3])
    with raises_here(jf.errors.InvalidArgumentError, "ArgMax", "axis 2"):
        jf.argmax(x, axis=2)
    with raises_here(jf.errors.InvalidArgumentError, "ConcatV2"):
        jf.concat([x, x], axis=2)
    with raises_here(jf.errors.InvalidArgumentError, "ExpandDims", "dim index 3"):
        jf.expand_dims(x, 3)
    with raises_here(jf.errors.InvalidArgumentError, "Squeeze", "dim[1]", "got 3"):
        jf.squeeze(x, axis=1)


def test_non_integer_axis_is_type_error():
    with pytest.raises(TypeError, match="Expected an integer.*0.5"):
        jf.reduce_sum(jf.zeros([2, 3]), axis=0.5)
    with pytest.raises(TypeError, match="Expected an integer"):
        jf.zeros([2.0, 3])


def test_bad_argument_type():
    with raises_here(TypeError, "'a'", "str", "to a Tensor"):
        jf.add("a", 1)
    with raises_here(TypeError, "None", "to a Tensor"):
        jf.constant(None)
    with raises_here(TypeError, "object", "to a Tensor"):
        jf.multiply(jf.zeros([2]), object())


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble], ids=lambda d: np.dtype(d).name)
def test_unsupported_numpy_dtype(dtype):
    x = np.zeros(3, dtype)
    with raises_here(TypeError, np.dtype(dtype).name, "supported: float16, bfloat16, float32, float64, int8"):
        jf.constant(x)
    # TF casts a numpy operand to its peer tensor's dtype (a complex one to its real part)
    assert (jf.zeros([3]) + x).dtype == jf.float32
    with raises_here(TypeError, np.dtype(dtype).name):
        jf.zeros([3], dtype=dtype)


@pytest.mark.parametrize("op", ["floordiv", "floormod"])
@pytest.mark.parametrize("dtype", [jf.int32, jf.int64], ids=str)
def test_integer_division_by_zero(op, dtype):
    a, b = jf.constant([[1, 2]], dtype), jf.constant([[3], [0]], dtype)  # a zero behind a broadcast
    name = {"floordiv": "FloorDiv", "floormod": "FloorMod"}[op]
    with raises_here(jf.errors.InvalidArgumentError, name, "Integer division by zero"):
        getattr(jf, op)(a, b)
    with raises_here(jf.errors.InvalidArgumentError, "Integer division by zero"):
        a // 0 if op == "floordiv" else a % 0


def test_integer_to_negative_power():
    with raises_here(jf.errors.InvalidArgumentError, "Pow", "negative integer powers"):
        jf.constant([2, 3]) ** -1


# ---- more ops: every message names the op and the inputs ------------------------------
def test_concat_and_stack_mismatches():
    with raises_here(jf.errors.InvalidArgumentError, "ConcatV2", "[2,3]", "[3,2]"):
        jf.concat([jf.zeros([2, 3]), jf.zeros([3, 2])], 0)
    with raises_here(jf.errors.InvalidArgumentError, "ConcatV2", "int32", "float32"):
        jf.concat([jf.zeros([2, 3]), jf.zeros([2, 3], jf.int32)], 0)
    with raises_here(jf.errors.InvalidArgumentError, "Pack", "[2]", "[3]"):
        jf.stack([jf.zeros([2]), jf.zeros([3])])


def test_split_mismatches():
    x = jf.zeros([5, 2])
    with raises_here(jf.errors.InvalidArgumentError, "Split", "evenly divide", "size = 5"):
        jf.split(x, 2)
    with raises_here(jf.errors.InvalidArgumentError, "SplitV", "4 vs 5"):
        jf.split(x, [2, 2])


def test_transpose_bad_perm():
    x = jf.zeros([2, 3])
    with raises_here(jf.errors.InvalidArgumentError, "Transpose", "not a permutation"):
        jf.transpose(x, [0, 0])
    with raises_here(jf.errors.InvalidArgumentError, "Transpose", "size 2", "size 1"):
        jf.transpose(x, [0])


def test_broadcast_to_incompatible():
    with raises_here(jf.errors.InvalidArgumentError, "BroadcastTo", "[2,3]", "[3,3]"):
        jf.broadcast_to(jf.zeros([2, 3]), [3, 3])


def test_add_n_mismatches():
    with raises_here(jf.errors.InvalidArgumentError, "AddN", "same shape", "[2]", "[3]"):
        jf.add_n([jf.zeros([2]), jf.zeros([3])])
    with raises_here(jf.errors.InvalidArgumentError, "AddN", "float32", "int32"):
        jf.add_n([jf.zeros([2]), jf.zeros([2], jf.int32)])
    with pytest.raises(ValueError, match="non-empty"):
        jf.add_n([])


def test_argmax_of_empty_axis():
    with raises_here(jf.errors.InvalidArgumentError, "ArgMax", "empty", "[0,3]"):
        jf.argmax(jf.zeros([0, 3]), axis=0)


def test_wrong_dtype_for_logical_compare_and_select():
    f, b = jf.constant([1.0]), jf.constant([True])
    with raises_here(TypeError, "BitwiseAnd", "int32, int64, int8, uint8", "float32"):  # TF: bitwise_and
        f & f
    with raises_here(TypeError, "Invert", "float32"):
        _ = ~f
    with raises_here(TypeError, "LogicalNot", "float32"):
        jf.logical_not(f)
    with raises_here(TypeError, "Less", "bool"):
        _ = b < jf.constant([False])
    with raises_here(TypeError, "Neg", "bool"):
        _ = -b
    with raises_here(TypeError, "SelectV2", "condition must be bool", "float32"):
        jf.where(f, 1.0, 2.0)
    with raises_here(TypeError, "Sum", "bool"):
        jf.reduce_sum(b)


def test_python_value_that_does_not_fit_the_tensor_dtype():
    with raises_here(TypeError, "1.5", "int32"):
        jf.constant([1, 2]) + 1.5
    with raises_here(TypeError, "int32"):
        jf.constant([1, 2]) + 2**40
    with raises_here(TypeError, "1.5", "int32"):
        jf.constant(1.5, dtype=jf.int32)
    with raises_here(jf.errors.InvalidArgumentError, "64-bit"):
        jf.constant(2**70)


def test_python_list_out_of_int32_range_raises():
    with pytest.raises((TypeError, ValueError)):
        jf.constant([1, 2**40], jf.int32)


def test_range_and_creation_errors():
    with raises_here(jf.errors.InvalidArgumentError, "Range", "delta != 0"):
        jf.range(0, 5, 0)
    with raises_here(jf.errors.InvalidArgumentError, "Range", "start >= limit when delta < 0"):
        jf.range(0, 5, -1)
    with raises_here(jf.errors.InvalidArgumentError, "Fill", "non-negative", "-1"):
        jf.zeros([-1, 2])
    with raises_here(jf.errors.InvalidArgumentError, "RandomStandardNormal", "non-negative"):
        jf.random.normal([-1])
    with raises_here(ValueError, "dtype", "bool"):  # TF's ValueError, from tf.random.uniform itself
        jf.random.uniform([2], dtype=jf.bool, maxval=1)
    with raises_here(TypeError, "RandomStandardNormal", "a float type", "int32"):
        jf.random.normal([2], dtype=jf.int32)


def test_bad_dtype_arguments():
    with raises_here(TypeError, "'foo'", "dtype"):
        jf.cast(jf.zeros([2]), "foo")
    with raises_here(TypeError, "float128", "not supported"):
        jf.cast(jf.zeros([2]), np.longdouble)


def test_getitem_errors():
    x = jf.zeros([4, 5])
    with raises_here(jf.errors.InvalidArgumentError, "StridedSlice", "index 4", "out of bounds"):
        x[4]
    with raises_here(jf.errors.InvalidArgumentError, "StridedSlice", "index -6", "dimension 1"):
        x[0, -6]
    with raises_here(jf.errors.InvalidArgumentError, "StridedSlice", "Index out of range", "[4,5]"):
        x[0, 0, 0]
    with raises_here(jf.errors.InvalidArgumentError, "StridedSlice", "multiple ellipses"):
        x[..., ...]
    with pytest.raises(TypeError, match="valid indices"):
        x[0.5]


def test_errors_do_not_poison_later_calls():
    """After an error the runtime is intact: the same op succeeds with good inputs."""
    for _ in range(3):
        with pytest.raises(jf.errors.InvalidArgumentError):
            jf.add(jf.zeros([2]), jf.zeros([3]))
        with pytest.raises(jf.errors.InvalidArgumentError):
            jf.floordiv(jf.constant([1]), jf.constant([0]))
    np.testing.assert_array_equal((jf.ones([2]) + jf.ones([2])).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(jf.floordiv(jf.constant([7]), jf.constant([2])).numpy(), [3])


def test_error_location_points_at_the_user_frame_not_jitflow():
    """An error raised deep inside jitflow's Python layer (nn.Dense -> ops.matmul -> C++)
    still reports this file's line."""
    layer = jf.nn.Dense(3)
    layer(jf.zeros([2, 4]))
    with raises_here(jf.errors.InvalidArgumentError, "Matrix size-incompatible", "[2,5]", "[4,3]"):
        layer(jf.zeros([2, 5]))


def test_raises_here_checks_the_location():
    """The checker used above fails for a message without this file's line."""
    with pytest.raises(AssertionError, match="caller location"), raises_here(ValueError):
        raise ValueError("a message without a location")
    with pytest.raises(AssertionError, match="not in"), \
            raises_here(jf.errors.InvalidArgumentError, "MatMul"):
        jf.add(jf.zeros([2]), jf.zeros([3]))


# ---- error classes -------------------------------------------------------------------------------
REE = jf.errors.ResourceExhaustedError


def test_resource_exhausted_error_is_a_memory_error():
    assert issubclass(REE, MemoryError) and issubclass(REE, jf.errors.OpError)


# ---- the private C++ entry points validate their arguments too -----------------------------------
# Each call runs in a child process: the first three crashed the interpreter.
@pytest.mark.parametrize("call, exc", [
    ("jf._C.execute('Const', ())", "InvalidArgumentError"),             # no value attr: a null dereference
    ("jf._C.call_recorded('Fill', [jf.constant([1])], None)", "TypeError"),  # read as a FunctionCache
    ("jf._C.make_concrete_function(None, 'f')", "TypeError"),           # a null graph
    # Already right, kept so: args are read as a tuple when run_functions_eagerly; the items of
    # a sequence made up on the fly (a tensor's rows) must be held, not borrowed.
    ("jf._C.call_recorded(jf.function(lambda: 1), [1], None)", "TypeError"),
    ("jf._C.int_tensor(jf.ones([2, 3]))", "TypeError"),
])
def test_private_entry_points_validate_their_arguments(call, exc):
    out = run_in_child(f"report(lambda: {call})")
    assert_raised(out, exc)
