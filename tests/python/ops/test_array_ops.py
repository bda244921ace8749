"""Array ops (array_ops.py) where test_eager_ops.py's numpy comparisons do not reach, eagerly and
inside jf.function, with TF 2.21's results and exception types: shape arguments (a scalar shape
is a vector of that length; shape vectors computed in the graph), element counts past 2**63 - 1
and allocations bigger than memory, dims, axes and int attributes past int32 and int64 (kept or
refused, never wrapped), shape's out_type, range, reshape's -1 with zero-sized dims, transpose's
negative perms, split's output count and stack of Python values.

Cases that crashed the interpreter run in a child process (conftest.run_in_child), so a crash
fails only its test."""
import re

import numpy as np
import pytest
from conftest import assert_exact, assert_raised, compiled_runs, eager_and_traced, run_in_child, run_mode

import jitflow as jf

IAE = jf.errors.InvalidArgumentError
REE = jf.errors.ResourceExhaustedError
MODES = ["eager", "function"]
run = run_mode  # conftest: eagerly or as a traced jf.function
exact = assert_exact


# ---- a scalar shape is a vector of that length ---------------------------------------------------
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_zeros_ones_fill_reshape_take_a_scalar_shape(mode):
    def run(fn, *args):
        return fn(*args) if mode == "eager" else jf.function(fn)(*args)
    n = jf.constant(2)
    for fn, want in [(lambda: jf.zeros(2), [0.0, 0.0]), (lambda: jf.ones(3), [1.0] * 3),
                     (lambda: jf.zeros(0), np.zeros(0)), (lambda: jf.fill(2, 7.0), [7.0, 7.0]),
                     (lambda: jf.reshape(jf.constant([[1, 2]]), 2), [1, 2])]:
        np.testing.assert_array_equal(run(fn).numpy(), want)
    # A scalar tensor: zeros/ones reshape it to a vector everywhere (TF's Python does).
    np.testing.assert_array_equal(run(lambda k: jf.zeros(k, jf.int32), n).numpy(), [0, 0])
    np.testing.assert_array_equal(run(lambda k: jf.ones(k), n).numpy(), [1.0, 1.0])
    assert run(lambda: jf.zeros(())).shape == ()
    assert run(lambda: jf.zeros(np.array(2))).shape == (2,)  # a 0-d array too
    assert run(lambda: jf.ones(np.int64(3))).shape == (3,)


def test_fill_and_reshape_scalar_tensor_shape_eager_but_not_traced():
    n = jf.constant(2)
    np.testing.assert_array_equal(jf.fill(n, 1.5).numpy(), [1.5, 1.5])
    np.testing.assert_array_equal(jf.reshape(jf.constant([[1], [2]]), n).numpy(), [1, 2])
    # TF's graph shape functions refuse a traced scalar (ValueError at trace time).
    with pytest.raises(ValueError, match=r"Shape must be rank 1 but is rank 0 for 'Fill' with input "
                                         r"shapes: \[\], \[\]"):
        jf.function(lambda k: jf.fill(k, 1.0))(n)
    with pytest.raises(ValueError, match=r"rank 0 for 'Reshape' with input shapes: \[2\], \[\]"):
        jf.function(lambda k: jf.reshape(jf.constant([1, 2]), k))(n)


def test_negative_or_float_scalar_shapes_are_refused():
    with pytest.raises(jf.errors.InvalidArgumentError, match="Fill"):
        jf.zeros(-1)
    with pytest.raises(TypeError):
        jf.zeros(2.0)


# ---- shapes computed in the graph ----------------------------------------------------------------
@pytest.mark.parametrize("call", ["jf.zeros(s)", "jf.random.uniform(s)", "jf.reshape(jf.zeros([6]), s)"])
def test_shape_vector_of_unknown_length_raises_instead_of_a_negative_rank(call):
    # A shape tensor of unknown length (TensorSpec([None])) made a rank -1 Shape: a segfault.
    out = run_in_child(f"""
        f = jf.function(lambda s: {call}, input_signature=[jf.TensorSpec([None], jf.int32)])
        report(lambda: f(jf.constant([2, 3])))
        """)
    assert_raised(out, "InvalidArgumentError", "must be known when tracing")


def test_shape_values_computed_at_run_time_are_checked_when_run():
    out = run_in_child("""
        f = jf.function(lambda s: jf.zeros(s), input_signature=[jf.TensorSpec([2], jf.int64)])
        report(lambda: [list(f(jf.constant([2, 3], jf.int64)).shape)])
        """)
    assert out["value"] == [[2, 3]]
    out = run_in_child("""
        f = jf.function(lambda s: jf.zeros(s), input_signature=[jf.TensorSpec([2], jf.int64)])
        report(lambda: f(jf.constant([2**40, 2**30], jf.int64)))
        """)
    assert_raised(out, "InvalidArgumentError", "would have more than 2**63 - 1 elements")
    out = run_in_child("""
        f = jf.function(lambda s: jf.zeros(s), input_signature=[jf.TensorSpec([2], jf.int64)])
        report(lambda: f(jf.constant([2**40, 1], jf.int64)))
        """)
    assert_raised(out, "ResourceExhaustedError", "OOM when allocating tensor with shape[1099511627776,1]")


# ---- element counts: overflow raises, allocations that cannot be made raise ----------------------
@pytest.mark.parametrize("make", [
    lambda: jf.zeros([2**40, 2**30]),                   # was a tensor of shape (0, 1073741824)
    lambda: jf.ones([2**40, 2**30, 0]),                 # TF multiplies dim by dim: fails before the 0
    lambda: jf.fill([2**62, 2], 1.0),
    lambda: jf.random.uniform([2**40, 2**30]),
    lambda: jf.broadcast_to(1.0, [2**40, 2**30]),
], ids=["zeros", "ones_then_0", "fill", "uniform", "broadcast_to"])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_shape_with_more_than_2_63_elements_raises_invalid_argument(make, mode):
    # TF: InvalidArgumentError "Shape [1099511627776,1073741824] would have more than 2**63 - 1 elements"
    with pytest.raises(IAE, match=r"would have more than 2\*\*63 - 1 elements"):
        eager_and_traced(make)[mode]()


def test_empty_shape_with_huge_dims_is_valid():
    # A 0 before the huge dims keeps the running product at 0 (TF: shape (0, 2**40, 2**30)).
    assert jf.zeros([0, 2**40, 2**30]).shape == (0, 2**40, 2**30)


@pytest.mark.parametrize("make", [
    lambda: jf.zeros([2**40]),                          # was a tensor of shape (0,): 2**40 wrapped in int32
    lambda: jf.ones([2**62], jf.int64),                 # 2**65 bytes: the byte count wrapped to 0
    lambda: jf.random.uniform([2**40]),
    lambda: jf.random.normal([2**40]),
    lambda: jf.broadcast_to(1.0, [2**40]),
    lambda: jf.range(2**40),
], ids=["zeros", "ones_int64", "uniform", "normal", "broadcast_to", "range"])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_allocation_bigger_than_memory_raises_resource_exhausted(make, mode):
    # TF: ResourceExhaustedError "OOM when allocating tensor with shape[1099511627776] and type float"
    with pytest.raises(REE, match=r"OOM when allocating tensor with shape\[\d+\]") as info:
        eager_and_traced(make)[mode]()
    assert isinstance(info.value, MemoryError)


def test_eager_constant_with_a_shape_bigger_than_memory_raises_resource_exhausted():
    with pytest.raises(REE, match=r"OOM when allocating tensor with shape\[1099511627776\]"):
        jf.constant(0.0, shape=[2**40])  # TF 2.21 wraps this to an empty tensor


def test_reshape_whose_sizes_overflow_raises_instead_of_a_floating_point_exception():
    # [2**40, 2**40, -1]: the product of the known sizes overflowed int64 (SIGFPE).
    out = run_in_child("report(lambda: jf.reshape(jf.zeros([0]), [2**40, 2**40, -1]))")
    assert_raised(out, "InvalidArgumentError", "Reshape", "has too many elements")


# ---- dims, axes and int attributes of 2**31 and more do not wrap ---------------------------------
def test_dims_past_int32_are_kept():
    # TF converts [2**31, 0] to an int64 shape; jitflow's int32 conversion wrapped it to -2**31.
    assert jf.zeros([2**31, 0]).shape == (2**31, 0)
    assert jf.reshape(jf.zeros([0]), [2**40, 0]).shape == (2**40, 0)          # was (0, 0)
    assert jf.broadcast_to(jf.zeros([1, 0]), [2**32, 0]).shape == (2**32, 0)
    assert jf.function(lambda: jf.zeros([2**31, 0]))().shape == (2**31, 0)


def test_shape_int32_of_a_dim_past_int32_raises():
    x = jf.zeros([2**31, 0])
    # TF: InvalidArgumentError "Shape output type is 32-bit  but dim 0 is 2147483648"
    with pytest.raises(IAE, match="32-bit but dim 0 is 2147483648"):
        jf.shape(x)
    np.testing.assert_array_equal(jf.shape(x, out_type=jf.int64).numpy(), [2**31, 0])


@pytest.mark.parametrize("call", [
    lambda x: jf.expand_dims(x, 2**32),
    lambda x: jf.concat([x, x], 2**32),
    lambda x: jf.reduce_sum(x, 2**32),
    lambda x: jf.argmax(x, 2**32),
    lambda x: jf.transpose(x, [2**32]),
    lambda x: jf.split(x, 3, 2**32),
], ids=["expand_dims", "concat", "reduce_sum", "argmax", "transpose", "split"])
def test_axes_past_int32_raise_instead_of_wrapping_to_0(call):
    # TF 2.21 itself wraps these to axis 0 (its int32 conversion); jitflow raises instead of
    # giving that silent wrong answer.
    with pytest.raises(IAE):
        call(jf.zeros([3]))


@pytest.mark.parametrize("call", [lambda x: jf.stack([x, x], axis=2**70), lambda x: jf.split(x, 2**70),
                                  lambda x: jf.squeeze(x, axis=2**70)], ids=["stack", "split", "squeeze"])
def test_int_attrs_past_int64_raise_value_error(call):
    # Was pybind's RuntimeError "Unable to cast Python instance". TF: ValueError / OverflowError.
    with pytest.raises(ValueError, match="does not fit in int64"):
        call(jf.zeros([2, 1]))


@pytest.mark.parametrize("mode", MODES)
def test_shape_out_type(mode):
    # Regression pin: this worked before (eager and traced).
    x = jf.zeros([2, 3])
    exact(run(mode, lambda a: jf.shape(a, out_type=jf.int64), x), [2, 3], np.int64)
    exact(run(mode, lambda a: jf.shape(a), x), [2, 3], np.int32)
    exact(run(mode, lambda: jf.shape([[1, 2, 3]], out_type=jf.int64)), [1, 3], np.int64)


# ---- Range ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, msg", [
    ((jf.constant(-2**63, jf.int64), jf.constant(2**63 - 1, jf.int64)), "<= 9223372036854775807"),
    ((0.0, 1e30, 1.0), "<= 9223372036854775807"),
    ((0.0, float("inf"), 1.0), "<= 9223372036854775807"),
    ((0.0, float("nan"), 1.0), "start <= limit when delta > 0"),
    ((0, 5, -1), "start >= limit when delta < 0"),
], ids=["int64_full_span", "float_1e30", "inf", "nan", "negative_delta"])
def test_range_that_cannot_be_counted_raises(args, msg):
    # The int64 span went through double and gave an empty tensor; TF: InvalidArgumentError.
    with pytest.raises(IAE, match=msg.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        jf.range(*args)


def test_range_is_exact_in_int64():
    big = 2**62
    got = jf.range(jf.constant(-big, jf.int64), jf.constant(big, jf.int64), jf.constant(big - 1, jf.int64))
    np.testing.assert_array_equal(got.numpy(), [-big, -1, big - 2])
    got = jf.range(jf.constant(0, jf.int64), jf.constant(-5, jf.int64), jf.constant(-2**63, jf.int64))
    np.testing.assert_array_equal(got.numpy(), [0])


@pytest.mark.parametrize("call", [
    "jf.range(2**62)",                                      # was a segfault (bytes wrapped to 0)
    "jf.range(jf.constant(0, jf.int64), jf.constant(2**62, jf.int64))",
    "jf.function(lambda: jf.range(2**62))()",
])
def test_range_too_big_to_allocate_raises_resource_exhausted(call):
    out = run_in_child(f"report(lambda: {call})")
    assert_raised(out, "ResourceExhaustedError", "Range",
                  "OOM when allocating tensor with shape[4611686018427387904]")
    assert "MemoryError" in out["mro"]


# ---- transpose and reshape -----------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_transpose_with_negative_perm(mode):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = jf.constant(a)
    exact(run(mode, lambda t: jf.transpose(t, perm=[-1, 0]), x), a.T, np.float32)  # was InvalidArgumentError
    exact(run(mode, lambda t: jf.transpose(t, perm=[-1, -2]), x), a.T, np.float32)
    exact(run(mode, lambda t: jf.transpose(t, perm=[-2, -1]), x), a, np.float32)
    exact(run(mode, lambda t: jf.transpose(t, jf.constant([-1, 0])), x), a.T, np.float32)
    exact(jf.function(lambda t, p: jf.transpose(t, p))(x, jf.constant([-1, 0])), a.T, np.float32)
    b = np.arange(24).reshape(2, 3, 4)
    exact(run(mode, lambda t: jf.transpose(t, [-1, 0, -2]), jf.constant(b)), b.transpose(2, 0, 1), np.int64)
    with pytest.raises(jf.errors.InvalidArgumentError, match="out of range"):
        run(mode, lambda t: jf.transpose(t, perm=[-3, 0]), x)
    with pytest.raises(jf.errors.InvalidArgumentError, match="permutation"):
        run(mode, lambda t: jf.transpose(t, perm=[1, -1]), x)


def test_transpose_with_negative_perm_compiled():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    exact(compiled_runs(lambda t: jf.transpose(t * 2.0, [-1, 0]), jf.constant(a)), a.T * 2, np.float32)
    exact(compiled_runs(lambda t: jf.transpose(t, jf.constant([-1, 0])) * 2.0, jf.constant(a)), a.T * 2, np.float32)


# TF 2.21: zero sizes count in neither product when -1 is resolved.
RESHAPES = [((0, 3), [-1, 0], (3, 0)), ((0, 3), [-1, 3], (0, 3)), ((0, 3), [2, -1], (2, 0)),
            ((0, 3), [-1], (0,)), ((0, 3), [0, -1, 5], (0, 0, 5)), ((0, 3), [-1, 0, 5], (0, 0, 5)),
            ((3, 0, 2), [-1, 0], (6, 0)), ((2, 3), [-1, 2], (3, 2))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,target,want", RESHAPES, ids=[f"{s}->{t}" for s, t, _ in RESHAPES])
def test_reshape_minus_one_with_zero_elements(mode, shape, target, want):
    got = run(mode, lambda t: jf.reshape(t, target), jf.zeros(shape))
    assert got.shape == want


@pytest.mark.parametrize("mode", MODES)
def test_reshape_minus_one_errors(mode):
    with pytest.raises(jf.errors.InvalidArgumentError, match="6 values, but the requested shape has 0"):
        run(mode, lambda t: jf.reshape(t, [-1, 0]), jf.zeros([2, 3]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="only one input size may be -1"):
        run(mode, lambda t: jf.reshape(t, [-1, -1]), jf.zeros([0]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="multiple of 4"):
        run(mode, lambda t: jf.reshape(t, [4, -1]), jf.zeros([2, 3]))


# ---- split and stack -----------------------------------------------------------------------------
@pytest.mark.parametrize("call, exc, msg", [
    ("jf.split(jf.zeros([0]), 2**62)", "InvalidArgumentError", "Number of outputs is too big"),   # hung
    ("jf.split(jf.zeros([0]), 2**30)", "ResourceExhaustedError", "outputs cannot be made"),
    ("jf.split(jf.constant(1.5), 2**62)", "InvalidArgumentError", "split_dim < input rank (0)"),  # hung
    ("jf.unstack(jf.constant(1.5), 2**62)", "InvalidArgumentError", "split_dim < input rank (0)"),
    ("jf.function(lambda x: jf.split(x, 2**40), input_signature=[jf.TensorSpec([None])])(jf.zeros([0]))",
     "InvalidArgumentError", "Number of outputs is too big"),
])
def test_split_into_more_outputs_than_can_exist_raises(call, exc, msg):
    # TF: ValueError "Number of outputs is too big: 4611686018427387904"; a scalar:
    # InvalidArgumentError "-input rank(-0) <= split_dim < input rank (0)".
    out = run_in_child(f"report(lambda: {call})")
    assert_raised(out, exc, msg)


@pytest.mark.parametrize("mode", MODES)
def test_stack_of_python_values_is_one_constant(mode):
    exact(run(mode, lambda: jf.stack([1, 2.5])), [1.0, 2.5], np.float32)  # was Pack(int32, float32): error
    exact(run(mode, lambda: jf.stack([[1, 2], [3, 4]])), [[1, 2], [3, 4]], np.int32)
    exact(run(mode, lambda: jf.stack([jf.constant(1.0), 2.0])), [1.0, 2.0], np.float32)


# ---- axes an op takes as a scalar ---------------------------------------------------------------
# The kernels read the first element of a vector axis: concat([x, x], [0, 1]) was concat along 0.
_X23 = np.arange(6, dtype=np.float32).reshape(2, 3)
SCALAR_AXES = [
    ("concat", lambda x, a: jf.concat([x, x], a), "ConcatV2: axis tensor should be a scalar integer, but got shape [2]"),
    ("split", lambda x, a: jf.split(x, 2, a), "Split: split_dim must be a scalar but has rank 1"),
    ("split_sizes", lambda x, a: jf.split(x, [1, 1], a), "SplitV: split_dim_tensor must have exactly one element."),
    ("gather", lambda x, a: jf.gather(x, [0], axis=a), "GatherV2: axis must be scalar"),
    ("argmin", lambda x, a: jf.argmin(x, a), "ArgMin: dim must be a scalar, but received tensor of shape: [2]"),
    ("argmax", lambda x, a: jf.argmax(x, jf.constant(a)), "ArgMax: dim must be a scalar, but received tensor of shape: [2]"),
]


@pytest.mark.parametrize("make", [lambda a: a, np.array, jf.constant], ids=["list", "ndarray", "tensor"])
@pytest.mark.parametrize("op, call, msg", SCALAR_AXES, ids=[c[0] for c in SCALAR_AXES])
def test_vector_axis_of_a_scalar_axis_op_raises_eagerly(op, call, make, msg):
    # TF 2.21's kernels: InvalidArgumentError with these messages.
    with pytest.raises(IAE, match=re.escape(msg)):
        call(jf.constant(_X23), make([0, 1]))


@pytest.mark.parametrize("op, call, msg", SCALAR_AXES, ids=[c[0] for c in SCALAR_AXES])
def test_vector_axis_of_a_scalar_axis_op_raises_while_tracing(op, call, msg):
    # TF's graph shape functions: ValueError "Shape must be rank 0 but is rank 1 for ...", also for [0]
    # (a vector of one, which ConcatV2's and SplitV's kernels take eagerly).
    for axis in ([0, 1], [0]):
        with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
            jf.function(lambda x, a=axis: call(x, a))(jf.constant(_X23))


def test_scalar_axis_ops_keep_taking_scalars_and_tfs_legacy_vector_of_one():
    x = jf.constant(_X23)
    exact(jf.concat([x, x], 1), np.concatenate([_X23, _X23], 1), np.float32)
    exact(jf.concat([x, x], np.int64(1)), np.concatenate([_X23, _X23], 1), np.float32)
    exact(jf.concat([x, x], [1]), np.concatenate([_X23, _X23], 1), np.float32)  # TF's kernel allows [1]
    exact(jf.split(x, [1, 2], jf.constant([1]))[1], _X23[:, 1:], np.float32)
    exact(jf.gather(x, [2], axis=np.int32(1)), _X23[:, [2]], np.float32)
    exact(jf.argmin(x, jf.constant(1)), [0, 0], np.int64)
    with pytest.raises(TypeError, match="axis must be int or Tensor with integer datatype"):
        jf.argmax(x, [1])  # TF's argmax_v2 checks a Python list in Python
    with pytest.raises(ValueError, match=re.escape("Shape (2,) must have rank 0")):
        jf.concat([x], [0, 1])  # one value: TF checks the axis in Python


# ---- output ranks that depend on run-time sizes ----------------------------------------------------
@pytest.mark.parametrize("jit", [False, True], ids=["function", "jit_compile"])
def test_squeeze_without_axis_of_unknown_dims_is_refused_when_tracing(jit):
    # Which dims have size 1 decides the output's rank: TF's graph gives a tensor of unknown
    # rank, which jitflow has not. It kept the unknown dims (rank 3), so a 1x3x1 input came
    # out (3, 0, 0) compiled; now tracing refuses, naming the way out.
    f = jf.function(lambda x: jf.squeeze(x), input_signature=[jf.TensorSpec([None, None, None], jf.float32)],
                    jit_compile=jit)
    with pytest.raises(IAE, match=r"squeeze without an axis needs every dim known when tracing: dim 0 of "
                                  r"\[\?,\?,\?\] is unknown.*pass axis="):
        f(np.ones((1, 3, 1), np.float32))
    # Any unknown dim might be 1 (TF's shape function gives up on the rank for one, too).
    h = jf.function(lambda x: jf.squeeze(x), input_signature=[jf.TensorSpec([1, None, 1], jf.float32)],
                    jit_compile=jit)
    with pytest.raises(IAE, match=r"dim 1 of \[1,\?,1\] is unknown"):
        h(np.ones((1, 3, 1), np.float32))
    # Named axes, or the sizes in the signature, trace as before.
    g = jf.function(lambda x: jf.squeeze(x, [0, 2]), input_signature=[jf.TensorSpec([None, None, None], jf.float32)],
                    jit_compile=jit)
    assert g(np.ones((1, 3, 1), np.float32)).shape == (3,)
    k = jf.function(lambda x: jf.squeeze(x), input_signature=[jf.TensorSpec([1, 3, 1], jf.float32)], jit_compile=jit)
    assert k(np.ones((1, 3, 1), np.float32)).shape == (3,)
    assert jf.squeeze(np.ones((1, 3, 1), np.float32)).shape == (3,)  # eagerly every size is known


def test_broadcast_to_a_target_shape_known_only_at_run_time():
    # The target's length is the rank; an input dim other than 1 is the output's dim, the
    # others are unknown until the kernel checks the target (TF's graph shape the same way).
    f = jf.function(lambda x, s: jf.broadcast_to(x, s),
                    input_signature=[jf.TensorSpec([None], jf.float32), jf.TensorSpec([2], jf.int32)])
    np.testing.assert_array_equal(f(jf.constant([1.0, 2.0]), jf.constant([3, 2])).numpy(),
                                  np.broadcast_to(np.float32([1, 2]), (3, 2)))
    g = jf.function(lambda x, s: jf.broadcast_to(x, s),
                    input_signature=[jf.TensorSpec([2], jf.float32), jf.TensorSpec([2], jf.int32)])
    assert g.get_concrete_function().outputs[0].shape == (None, 2)
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Unable to broadcast tensor of shape \[3\]"):
        f(jf.constant([1.0, 2.0, 3.0]), jf.constant([3, 2]))
