"""Issue 14, class 3: bad shapes, axes and arguments raise TF 2.21's exception types instead of
being silently accepted. The checks live once in the shape functions (cpp/ir/shape_fns_*.cc)
and the argument converters, so each case is tried eagerly and inside a jf.function.

Every case here was accepted (or wrapped to another value) before the fix it tests, except the
ones marked "Guard:", which pin down valid uses the checks must keep accepting; TF's behaviour
is quoted next to each."""
import numpy as np
import pytest

import jitflow as jf

IAE = jf.errors.InvalidArgumentError
REE = jf.errors.ResourceExhaustedError


def _modes(fn):
    """fn run eagerly and as a jf.function (traced, then run from the graph)."""
    return {"eager": fn, "function": jf.function(fn)}


def test_resource_exhausted_error_is_a_memory_error():
    assert issubclass(REE, MemoryError) and issubclass(REE, jf.errors.OpError)


# ---- element counts: overflow raises, allocations that cannot be made raise --------------------
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
        _modes(make)[mode]()


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
        _modes(make)[mode]()
    assert isinstance(info.value, MemoryError)


def test_eager_constant_with_a_shape_bigger_than_memory_raises_resource_exhausted():
    with pytest.raises(REE, match=r"OOM when allocating tensor with shape\[1099511627776\]"):
        jf.constant(0.0, shape=[2**40])  # TF 2.21 wraps this to an empty tensor


# ---- dims and indices of 2**31 and more do not wrap ----------------------------------------------
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


@pytest.mark.parametrize("key", [2**32, 2**31, -2**32, (0, 2**32)], ids=repr)
def test_index_past_int32_is_out_of_bounds_not_wrapped(key):
    # x[2**32] returned x[0] (the index wrapped in an int32 begin). TF: InvalidArgumentError.
    with pytest.raises(IAE, match="out of bounds"):
        jf.zeros([3, 3])[key]


def test_index_past_int64_raises_value_error():
    # TF: ValueError "Can't convert Python sequence with out-of-range integer to Tensor."
    with pytest.raises(ValueError, match="out-of-range integer"):
        jf.zeros([3])[2**63]
    with pytest.raises(ValueError, match="out-of-range integer"):
        jf.zeros([2**63, 0])


def test_slices_with_huge_bounds_and_steps():
    x = np.arange(5, dtype=np.float32)
    t = jf.constant(x)
    # A step of 2**62 wrapped to 0 in int32 ("strides must be non-zero"); TF gives [x[0]].
    for key in [slice(None, None, 2**62), slice(None, None, -2**63), slice(2**40, None), slice(None, 2**40),
                slice(-2**40, None), slice(None, None, 2**31), slice(4, -2**63, -2**62)]:
        np.testing.assert_array_equal(t[key].numpy(), x[key], err_msg=repr(key))


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


# ---- reduction, softmax and arg axes ---------------------------------------------------------------
@pytest.mark.parametrize("fn", [jf.reduce_sum, jf.reduce_mean, jf.reduce_max, jf.reduce_min, jf.reduce_prod],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [(0, 0), (1, -1), [0, 1, 0]], ids=repr)
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_duplicate_reduction_axes_raise(fn, axis, mode):
    # TF: InvalidArgumentError "Invalid reduction arguments: Axes contains duplicate dimension: 0"
    with pytest.raises(IAE, match="Axes contains duplicate dimension"):
        _modes(lambda x: fn(x, axis=axis))[mode](jf.ones([2, 3]))


@pytest.mark.parametrize("fn", [jf.nn.softmax, jf.nn.log_softmax], ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [2, 5, -3])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_softmax_axis_out_of_range_raises(fn, axis, mode):
    # The axis was taken modulo the rank. TF: InvalidArgumentError
    # "`dim` must be in the range [-2, 2) where 2 is the number of dimensions in the input."
    with pytest.raises(IAE, match=r"`dim` must be in the range \[-2, 2\)"):
        _modes(lambda x: fn(x, axis=axis))[mode](jf.ones([2, 3]))


def test_softmax_valid_axes_still_work():
    # Guard: in-range axes, negative ones included.
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for axis in (0, 1, -1, -2):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        np.testing.assert_allclose(jf.nn.softmax(x, axis=axis).numpy(), e / e.sum(axis=axis, keepdims=True),
                                   rtol=1e-5)


@pytest.mark.parametrize("call", [
    lambda x: jf.argmax(x, output_type=jf.float32),
    lambda x: jf.argmin(x, output_type=jf.bool),
    lambda x: jf.shape(x, out_type=jf.bool),
    lambda x: jf.shape(x, out_type=jf.float32),
], ids=["argmax_float32", "argmin_bool", "shape_bool", "shape_float32"])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_index_output_type_must_be_int32_or_int64(call, mode):
    # TF: InvalidArgumentError "Value for attr 'output_type' of float is not in the list of
    # allowed values: int16, uint16, int32, int64" (int16/uint16 do not exist in jitflow).
    with pytest.raises(IAE, match="is not in the list of allowed values: int32, int64"):
        _modes(call)[mode](jf.ones([2, 3]))


# ---- random ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [jf.int32, jf.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("lo, hi", [(5, 1), (1, 1)])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_random_uniform_int_needs_minval_below_maxval(dtype, lo, hi, mode):
    # Was [3 2] for minval=5, maxval=1. TF: InvalidArgumentError "Need minval < maxval, got 5 >= 1"
    with pytest.raises(IAE, match=f"Need minval < maxval, got {lo} >= {hi}"):
        _modes(lambda: jf.random.uniform([2], minval=lo, maxval=hi, dtype=dtype))[mode]()


def test_random_uniform_int_bounds_from_tensors_and_scalars():
    with pytest.raises(IAE, match="Need minval < maxval"):
        jf.random.uniform([2], minval=jf.constant(3), maxval=jf.constant(2), dtype=jf.int32)
    with pytest.raises(IAE, match="must be 0-D"):
        jf.random.uniform([2], minval=[0, 1], maxval=5, dtype=jf.int32)
    r = jf.random.uniform([1000], minval=-3, maxval=4, dtype=jf.int32).numpy()
    assert r.min() >= -3 and r.max() <= 3


def test_random_uniform_refuses_bool_dtype_like_tf():
    # TF: ValueError "Argument `dtype` got invalid value <dtype: 'bool'>."
    with pytest.raises(ValueError, match="Argument `dtype` got invalid value"):
        jf.random.uniform([2], maxval=1, dtype=jf.bool)


# ---- jit_scope, cond ---------------------------------------------------------------------------------
def _scoped(compile_ops):
    def body(x):
        with jf.jit_scope(compile_ops=compile_ops):
            return x + 1.0
    return jf.function(body)


@pytest.mark.parametrize("value, exc", [("maybe", TypeError), (1.5, TypeError), (None, IAE)], ids=repr)
def test_jit_scope_compile_ops_must_be_a_bool_or_callable(value, exc):
    # TF stores compile_ops in a bool attr: 'maybe' is its TypeError, None its InvalidArgumentError.
    with pytest.raises(exc, match="compile_ops"):
        _scoped(value)(jf.ones([2]))


@pytest.mark.parametrize("value", [True, False, 1, 0, np.bool_(True), lambda node_def: True], ids=repr)
def test_jit_scope_compile_ops_accepts_what_tf_accepts(value):
    # Guard: bools, ints, numpy bools and callables stay valid.
    np.testing.assert_array_equal(_scoped(value)(jf.ones([2])).numpy(), [2.0, 2.0])


def test_jit_scope_callable_must_return_a_bool():
    with pytest.raises(TypeError, match="must return a bool"):
        _scoped(lambda node_def: "yes")(jf.ones([2]))


def test_jit_scope_eagerly_is_still_tfs_runtime_error():
    # Guard: eagerly TF raises its RuntimeError before looking at compile_ops.
    with pytest.raises(RuntimeError, match="not supported when eager execution is enabled"), \
            jf.jit_scope(compile_ops="maybe"):
        pass


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_cond_on_a_string_raises(mode):
    # Was Python truthiness ('yes' chose true_fn). TF in tf.function: InvalidArgumentError
    # "Input 'pred' passed string expected bool".
    fn = _modes(lambda: jf.cond("yes", lambda: jf.constant(1), lambda: jf.constant(2)))[mode]
    with pytest.raises(IAE, match="predicate must be a scalar bool"):
        fn()


@pytest.mark.parametrize("pred", [1, 1.0, jf.constant(1), jf.constant(1.0)], ids=repr)
def test_traced_cond_on_a_non_bool_value_raises(pred):
    # TF in tf.function: InvalidArgumentError "Input 'pred' passed int32 expected bool".
    f = jf.function(lambda: jf.cond(pred, lambda: jf.constant(1), lambda: jf.constant(2)))
    with pytest.raises(IAE, match="predicate must be a scalar bool tensor"):
        f()


def test_cond_on_none_raises_value_error_and_eager_cond_keeps_tfs_truth_of_scalars():
    with pytest.raises(ValueError, match="None"):
        jf.cond(None, lambda: 1, lambda: 2)
    assert jf.cond(1, lambda: 1, lambda: 2) == 1                # TF eager: the scalar's truth
    assert jf.cond(jf.constant(0.0), lambda: 1, lambda: 2) == 2
    with pytest.raises(ValueError):
        jf.cond(jf.constant([True, False]), lambda: 1, lambda: 2)
    f = jf.function(lambda: jf.cond(True, lambda: jf.constant(1), lambda: jf.constant(2)))
    assert int(f()) == 1


# ---- optimizers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: jf.optimizers.SGD(0.1), lambda: jf.optimizers.SGD(0.1, momentum=0.9),
                                  lambda: jf.optimizers.Adam(0.1)], ids=["sgd", "momentum", "adam"])
@pytest.mark.parametrize("grad_shape", [[3], [1, 3], [3, 2]], ids=repr)
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_optimizer_refuses_a_gradient_of_another_shape(make, grad_shape, mode):
    # Momentum and Adam broadcast a [3] gradient over a [2, 3] variable: a silently wrong step.
    # TF's ResourceApply*/AssignSub: InvalidArgumentError "Cannot update variable with shape
    # [2,3] using a Tensor with shape [3], shapes must be equal."
    v = jf.Variable(jf.ones([2, 3]))
    opt = make()
    opt.build([v])
    step = _modes(lambda g: opt.apply_gradients([(g, v)]))[mode]
    with pytest.raises(IAE, match=r"Cannot update variable with shape \[2,3\] using a Tensor with shape"):
        step(jf.ones(grad_shape))
    np.testing.assert_array_equal(v.numpy(), np.ones((2, 3)))


def test_optimizer_gradient_with_unknown_dims_is_checked_when_run():
    v = jf.Variable(jf.ones([2, 3]))
    opt = jf.optimizers.SGD(0.1, momentum=0.9)
    opt.build([v])
    step = jf.function(lambda g: opt.apply_gradients([(g, v)]),
                       input_signature=[jf.TensorSpec([None, 3], jf.float32)])
    step(jf.ones([2, 3]))
    with pytest.raises(IAE):
        step(jf.ones([1, 3]))


# ---- while_loop bounds, int attrs --------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_while_loop_negative_maximum_iterations_runs_no_iteration(mode):
    # -1 was the traced loop's "no bound" (it ran to i == 10). TF: i < maximum_iterations, so 0.
    # (Guard in eager mode, which was already right.)
    loop = _modes(lambda: jf.while_loop(lambda i: i < 10, lambda i: i + 1, [jf.constant(0)], maximum_iterations=-1))
    assert int(loop[mode]()[0]) == 0


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_while_loop_fractional_maximum_iterations_raises(mode):
    # Was int(2.5) == 2 iterations. TF in tf.function: TypeError "Expected int32, but got 2.5".
    loop = _modes(lambda: jf.while_loop(lambda i: i < 10, lambda i: i + 1, [jf.constant(0)], maximum_iterations=2.5))
    with pytest.raises(TypeError, match="maximum_iterations"):
        loop[mode]()


@pytest.mark.parametrize("call", [lambda x: jf.stack([x, x], axis=2**70), lambda x: jf.split(x, 2**70),
                                  lambda x: jf.squeeze(x, axis=2**70)], ids=["stack", "split", "squeeze"])
def test_int_attrs_past_int64_raise_value_error(call):
    # Was pybind's RuntimeError "Unable to cast Python instance". TF: ValueError / OverflowError.
    with pytest.raises(ValueError, match="does not fit in int64"):
        call(jf.zeros([2, 1]))


def test_pad_whose_size_overflows_raises():
    with pytest.raises(IAE, match="more than 2"):
        jf.pad(jf.zeros([1]), jf.constant([[2**62, 2**62]], jf.int64))


# ---- TensorSpec and shape invariants --------------------------------------------------------------
@pytest.mark.parametrize("shape, exc, msg", [
    ([-5], ValueError, "Dimension -5 must be >= 0"),          # was taken as an unknown dim
    ([2.5], TypeError, "Dimension value must be integer"),     # was int(2.5) == 2
    ("ab", TypeError, "Dimension value must be integer"),
    ([2**70], ValueError, "does not fit in int64"),
], ids=repr)
def test_tensor_spec_dims_follow_tf_tensorshape(shape, exc, msg):
    with pytest.raises(exc, match=msg):
        jf.TensorSpec(shape)


def test_while_loop_shape_invariants_follow_tf_tensorshape():
    def loop(inv):
        return jf.function(lambda: jf.while_loop(lambda i: jf.reduce_sum(i) < 3, lambda i: i + 1, [jf.zeros([2])],
                                                 shape_invariants=[inv]))()
    with pytest.raises(ValueError, match="Dimension -5 must be >= 0"):  # was accepted as unknown
        loop([-5])
    with pytest.raises(ValueError, match="does not fit in int64"):      # was pybind's RuntimeError
        loop([2**70])
    np.testing.assert_array_equal(loop([None])[0].numpy(), [2.0, 2.0])


# ---- pickling ---------------------------------------------------------------------------------------
def test_tensor_pickles_and_copies_like_tf():
    import copy
    import pickle
    t = jf.constant([2**62, 3], jf.int64)
    assert copy.copy(t) is t                        # immutable: TF returns the tensor itself
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert u.dtype == jf.int64
        np.testing.assert_array_equal(u.numpy(), [2**62, 3])


def test_argmax_int32_output_of_a_dimension_past_int32_raises():
    x = jf.zeros([2**31 + 1, 0])  # empty: the check is on the reduced dim, before any work
    with pytest.raises(IAE, match="int32 cannot hold an index"):
        jf.argmax(x, axis=0, output_type=jf.int32)
    assert jf.argmax(x, axis=0, output_type=jf.int64).shape == (0,)
