"""Converting Python and numpy values to tensors (jf.constant, jf.convert_to_tensor, op operands,
jf.Variable, function arguments), eagerly and inside jf.function, as TF 2.21 converts them:
Python ints stay exact up to the int64 limits (no trip through double) and beyond them raise;
floats never truncate into an int dtype; dtype_hint is a preference; constant(shape=) fills or
reshapes; numpy arrays of any byte order and strides are read by value and numpy operands take
the peer tensor's dtype; numpy dtypes jitflow lacks are refused; nested lists that cannot be
converted (self-referencing, too deep) raise instead of crashing. References are exact numpy for
integers and TF 2.21's documented results, written here (the tests do not import tensorflow)."""
import re

import numpy as np
import pytest
from conftest import assert_exact, assert_raised, run_in_child, run_mode

import jitflow as jf

BIG = 2**53 + 1  # the first integer a double cannot hold
MODES = ["eager", "function"]
run = run_mode  # conftest: eagerly or as a traced jf.function
exact = assert_exact


# ---- Python ints ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_python_int_constants_are_exact(mode):
    exact(run(mode, lambda: jf.constant(2**63 - 1)), 2**63 - 1, np.int64)  # was -2**63
    exact(run(mode, lambda: jf.constant(-2**63)), -2**63, np.int64)
    exact(run(mode, lambda: jf.constant(BIG)), BIG, np.int64)  # was 2**53
    exact(run(mode, lambda: jf.constant(BIG, jf.int64)), BIG, np.int64)
    exact(run(mode, lambda: jf.convert_to_tensor(-BIG)), -BIG, np.int64)
    exact(run(mode, lambda: jf.fill([2], BIG)), [BIG, BIG], np.int64)
    exact(run(mode, lambda: jf.constant(BIG, shape=[2])), [BIG, BIG], np.int64)
    exact(run(mode, lambda: jf.constant([2**63 - 1, BIG, -2**63])), [2**63 - 1, BIG, -2**63], np.int64)
    # Into a float dtype a Python int rounds through double, as TF rounds it.
    v = 2**60 + 2**36 + 1
    exact(run(mode, lambda: jf.constant(v, jf.float32)), np.float32(float(v)), np.float32)
    exact(run(mode, lambda: jf.constant(BIG, jf.float64)), float(BIG), np.float64)


@pytest.mark.parametrize("mode", MODES)
def test_int64_tensor_with_python_int_operand_is_exact(mode):
    x = jf.constant(np.array([0, 1, -1], np.int64))
    base = np.array([0, 1, -1], np.int64)
    exact(run(mode, lambda a: a + 9007199254740993, x), base + 9007199254740993, np.int64)
    exact(run(mode, lambda a: 9007199254740993 + a, x), base + 9007199254740993, np.int64)
    exact(run(mode, lambda a: jf.add(a, BIG), x), base + BIG, np.int64)
    exact(run(mode, lambda a: a - (2**63 - 1), x), base - (2**63 - 1), np.int64)
    exact(run(mode, lambda a: jf.maximum(a, BIG), x), np.maximum(base, BIG), np.int64)
    exact(run(mode, lambda a: a * (2**40 + 1), x), base * (2**40 + 1), np.int64)
    exact(run(mode, lambda a: jf.equal(a + BIG, BIG + 1), x), base + BIG == BIG + 1, np.bool_)
    exact(run(mode, lambda a: a + [BIG, 2**62 + 1, -BIG], x), base + np.array([BIG, 2**62 + 1, -BIG]), np.int64)
    v = jf.Variable(np.array([1, 2], np.int64))
    run(mode, lambda: v.assign_add([BIG, BIG]))
    exact(v.read_value(), [BIG + 1, BIG + 2], np.int64)


def test_python_int_argument_of_a_function_is_exact():
    f = jf.function(lambda a, k: a + k)
    x = jf.constant(np.array([0, 1], np.int64))
    exact(f(x, BIG), [BIG, BIG + 1], np.int64)
    exact(f(x, 2**63 - 2), [2**63 - 2, 2**63 - 1], np.int64)


def test_ints_beyond_int64_raise_value_error_like_tf():
    x = jf.constant(np.array([1], np.int64))
    for make in (lambda: jf.constant(2**63), lambda: jf.constant([2**63, -1]),  # was float32
                 lambda: jf.constant([2**64]), lambda: x + [2**63], lambda: x + 2**63):
        with pytest.raises(ValueError, match="out-of-range integer"):
            make()
    # A float dtype takes them (TF rounds them through double).
    exact(jf.constant([2**63, 1], jf.float64), [2.0**63, 1.0], np.float64)


def test_float_to_int_conversion_is_refused_like_tf():
    # TF: TypeError "Cannot convert 3.0 to EagerTensor of dtype int32" (no silent truncation
    # and no undefined behaviour for 1e19 or nan).
    for v in (3.0, 3.5, 1e19, float("nan"), [1.0, 2.0]):
        with pytest.raises(TypeError, match="Cannot convert"):
            jf.constant(v, jf.int32)
    with pytest.raises(TypeError, match="Cannot convert"):
        jf.constant(1e19, jf.int64)


# ---- dtype hints and constant(shape=) ------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_convert_to_tensor_dtype_hint_is_a_preference(mode):
    exact(run(mode, lambda: jf.convert_to_tensor(1, dtype_hint=jf.float32)), 1.0, np.float32)
    exact(run(mode, lambda: jf.convert_to_tensor([1, 2], dtype_hint=jf.float64)), [1, 2], np.float64)
    exact(run(mode, lambda: jf.convert_to_tensor(np.array([1, 2]), dtype_hint="float64")), [1, 2], np.float64)
    exact(run(mode, lambda: jf.convert_to_tensor(np.array([1.5]), dtype_hint=jf.int32)), [1], np.int32)
    # A value that cannot take the hint converts as it would alone (TF's preferred_dtype).
    exact(run(mode, lambda: jf.convert_to_tensor(1.5, dtype_hint=jf.int32)), 1.5, np.float32)  # was TypeError
    exact(run(mode, lambda: jf.convert_to_tensor([1.5], dtype_hint=jf.int32)), [1.5], np.float32)
    exact(run(mode, lambda: jf.convert_to_tensor(True, dtype_hint=jf.int32)), 1, np.int32)
    exact(run(mode, lambda: jf.convert_to_tensor(1, dtype_hint=jf.bool)), 1, np.int32)
    exact(jf.convert_to_tensor(jf.constant([1, 2]), dtype_hint=jf.float64), [1, 2], np.int32)
    with pytest.raises(TypeError):
        jf.convert_to_tensor(1.5, dtype=jf.int32)  # dtype= stays strict


@pytest.mark.parametrize("mode", MODES)
def test_constant_with_shape(mode):
    exact(run(mode, lambda: jf.constant(0, shape=[2, 3])), np.zeros((2, 3)), np.int32)  # traced: RecursionError
    exact(run(mode, lambda: jf.constant(1.5, jf.float64, shape=(2,))), [1.5, 1.5], np.float64)
    exact(run(mode, lambda: jf.constant([7], shape=[2, 3])), np.full((2, 3), 7), np.int32)  # eager: TypeError
    exact(run(mode, lambda: jf.constant([1, 2, 3, 4, 5, 6], shape=[2, 3])), [[1, 2, 3], [4, 5, 6]], np.int32)
    exact(run(mode, lambda: jf.constant([[1, 2]], shape=[2])), [1, 2], np.int32)
    exact(run(mode, lambda: jf.constant([7.0], shape=[])), 7.0, np.float32)
    exact(run(mode, lambda: jf.constant(True, shape=[2])), [True, True], np.bool_)
    exact(run(mode, lambda: jf.constant(5, shape=[0, 2])), np.zeros((0, 2)), np.int32)
    exact(run(mode, lambda: jf.constant(np.array([2.5]), shape=[1, 2])), [[2.5, 2.5]], np.float64)
    exact(run(mode, lambda: jf.constant(2**40, shape=[2])), [2**40] * 2, np.int64)
    with pytest.raises(TypeError, match="shape"):
        run(mode, lambda: jf.constant([1, 2, 3, 4, 5], shape=[2, 3]))


def test_constant_with_shape_errors_follow_tf_by_mode():
    # Eager: Fill takes a scalar or 1-element vector; a negative dim is a ValueError.
    with pytest.raises(jf.errors.InvalidArgumentError, match="scalar"):
        jf.constant([[7]], shape=[2, 3])
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        jf.constant([1, 2, 3, 4], shape=[-1, 2])
    # Graph: make_tensor_proto's TypeError.
    with pytest.raises(TypeError, match=r"Expected Tensor's shape: \(2, 3\), but got \(1, 1\)"):
        jf.function(lambda: jf.constant([[7]], shape=[2, 3]))()


# ---- numpy byte order and strides ----------------------------------------------------------------
def _arrays():
    """(label, array) pairs: non-native byte order, views with strides, negative strides,
    Fortran order and an unaligned buffer, of each dtype jitflow has."""
    base = np.arange(24, dtype=np.float64).reshape(4, 6) - 7.5
    out = []
    for d in ["f4", "f8", "i4", "i8"]:
        a = base.astype(d) if d[0] == "f" else (base * 2).astype(d)
        out += [(f">{d}", a.astype(">" + d)), (f">{d} strided", a.astype(">" + d)[::2, 1::2]),
                (f"{d} step", a[:, ::3]), (f"{d} reversed", a[::-1, ::-2]), (f"{d} fortran", np.asfortranarray(a)),
                (f"{d} transposed", a.T)]
    big = np.array([2**62 + 1, -2**53 - 1], ">i8")
    out.append((">i8 big", big))
    raw = np.zeros(4 * 6 + 1, np.uint8)
    unaligned = np.frombuffer(raw.data, dtype="f4", count=6, offset=1)
    out.append(("f4 unaligned", unaligned))
    b = np.array([[True, False, True], [False, False, True]])
    out.append(("bool strided", b[:, ::-2]))
    return out


ARRAYS = _arrays()
IDS = [label for label, _ in ARRAYS]


def _native(a):
    return np.ascontiguousarray(a, a.dtype.newbyteorder("="))


@pytest.mark.parametrize("label,a", ARRAYS, ids=IDS)
def test_numpy_entry_points_honour_byte_order_and_strides(label, a):
    want = _native(a)
    dt = want.dtype
    exact(jf.constant(a), want, dt)  # '>f4' was read as raw bytes: [4.6e-41, 9.0e-44]
    exact(jf.convert_to_tensor(a), want, dt)
    exact(jf.identity(a), want, dt)
    exact(jf.Variable(a).read_value(), want, dt)
    exact(jf.function(lambda v: jf.identity(v))(a), want, dt)
    v = jf.Variable(np.zeros(want.shape, dt))
    v.assign(a)
    exact(v.read_value(), want, dt)
    if dt != np.bool_:
        one = np.ones((), dt)
        exact(jf.add(a, 1), want + one, dt)  # was an error: the int 1 did not take the array's dtype
        exact(jf.constant(want) + a, want + want, dt)
        exact(a + jf.constant(want), want + want, dt)
        exact(jf.function(lambda x, y: x * y)(a, a), want * want, dt)
        exact(jf.constant(a, jf.float64), want.astype(np.float64), np.float64)


def test_numpy_operand_takes_the_peer_tensors_dtype_like_tf():
    # TF casts a numpy operand to the dtype of the op's other operand (numpy's cast).
    exact(jf.constant([1, 2]) + np.array([1.5, 2.5]), [2, 4], np.int32)
    exact(jf.constant([1.0]) + np.array([1.5], np.float16), [2.5], np.float32)
    exact(jf.constant([1.0]) + np.array([2], np.uint8), [3.0], np.float32)
    exact(jf.add(1.5, np.array([1, 2], np.int32)), [2.5, 3.5], np.float32)
    exact(jf.add(np.array([1.5], ">f8"), np.array([1], np.int32)), [2.5], np.float64)
    exact(jf.constant(np.array([1.7, -1.7]), jf.int32), [1, -1], np.int32)


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble, "datetime64[s]"])
def test_numpy_dtypes_jitflow_lacks_raise_type_error(dtype):
    a = np.zeros(3, dtype)
    for make in (lambda: jf.constant(a), lambda: jf.convert_to_tensor(a), lambda: jf.Variable(a),
                 lambda: jf.function(lambda v: v)(a), lambda: jf.add(a, a)):
        with pytest.raises(TypeError, match=re.escape(np.dtype(dtype).name)):
            make()


# ---- self-referencing and very deep structures ---------------------------------------------------
# The conversions (jf.constant, convert_to_tensor, op arguments, Variable). jf.function's arguments
# and outputs: test_nest.py; cond and while_loop: tracing/test_control_flow.py. Each case runs in a
# child process (conftest.run_in_child), so a crash fails only its test.
_SELF_LIST = "v = [1.0]\nv.append(v)"
_SELF_DICT = "v = {'x': 1.0}\nv['me'] = v"
_DEEP_LIST = "v = 1.0\nfor _ in range(200000):\n    v = [v]"
_DEEP_TUPLE = "v = 1.0\nfor _ in range(200000):\n    v = (v,)"


@pytest.mark.parametrize("make", [_SELF_LIST, _DEEP_LIST, _DEEP_TUPLE], ids=["self_list", "deep_list", "deep_tuple"])
@pytest.mark.parametrize("call", ["jf.constant(v)", "jf.convert_to_tensor(v)", "jf.constant([1.0]) + v",
                                  "jf.Variable(v)", "jf.function(lambda: jf.constant(v))()"])
def test_unconvertible_nested_lists_raise_value_error(make, call):
    # TF: ValueError ("Can't convert Python sequence with mixed types"); TF aborts on the deep list.
    out = run_in_child(f"{make}\nreport(lambda: {call})")
    assert_raised(out, "ValueError")


@pytest.mark.parametrize("call", ["jf.constant(v)", "jf.convert_to_tensor(v)"])
def test_self_referencing_dict_is_refused(call):
    # Already refused, and kept so: a dict is not convertible at all (TF: ValueError; jitflow's
    # converter: TypeError).
    out = run_in_child(f"{_SELF_DICT}\nreport(lambda: {call})")
    assert out.get("raised") in ("TypeError", "ValueError"), out


# ---- dtype=None where a dtype is required --------------------------------------------------------
@pytest.mark.parametrize("call", [lambda: jf.as_dtype(None), lambda: jf.zeros([2], dtype=None),
                                  lambda: jf.ones([2], dtype=None), lambda: jf.cast(jf.constant([1.5]), None),
                                  lambda: jf.eye(2, dtype=None), lambda: jf.random.uniform([2], dtype=None),
                                  lambda: jf.math.count_nonzero(jf.constant([1.0]), dtype=None)],
                         ids=["as_dtype", "zeros", "ones", "cast", "eye", "uniform", "count_nonzero"])
def test_none_dtype_where_one_is_required_is_tfs_type_error(call):
    # numpy reads dtype None as float64; TF 2.21 refuses it in tf.as_dtype, which these all go through.
    with pytest.raises(TypeError, match=r"Cannot convert the argument `type_value`: None to a TensorFlow DType\."):
        call()


def test_none_dtype_where_it_is_optional_still_infers():
    assert jf.constant(1, dtype=None).dtype == jf.int32
    assert jf.zeros_like(jf.constant([1]), dtype=None).dtype == jf.int32
    assert jf.range(3, dtype=None).dtype == jf.int32
    assert jf.one_hot([1], 2, dtype=None).dtype == jf.float32


# ---- empty lists ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value, shape", [([], (0,)), ([[]], (1, 0)), ([[], []], (2, 0)), (np.array([]), (0,))],
                         ids=["empty", "one_empty_row", "two_empty_rows", "empty_array"])
@pytest.mark.parametrize("dtype", [None, jf.int32, jf.int64, jf.float64, jf.bool])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_empty_values_convert_to_empty_tensors_of_any_dtype(value, shape, dtype, mode):
    # TF: tf.constant([], dtype=tf.int32) is int32[0] (numpy's float64 for [] does not count);
    # without a dtype float32, and float64 for an empty float64 array.
    want = dtype or (jf.float64 if isinstance(value, np.ndarray) else jf.float32)
    for convert in (lambda: jf.constant(value, dtype=dtype), lambda: jf.convert_to_tensor(value, dtype=dtype)):
        t = run_mode(mode, convert)
        assert t.shape == shape and t.dtype == want, (t.shape, t.dtype)


def test_an_empty_list_takes_a_peer_tensors_dtype():
    # An operand converts with its peer tensor's dtype (TF's op helper); [] was refused.
    t = jf.constant([], jf.int64) + []
    assert t.dtype == jf.int64 and t.shape == (0,)
    assert (jf.constant([[1], [2]], jf.int32) + [[], []]).shape == (2, 0)
    assert jf.concat([jf.constant([1, 2]), []], axis=0).numpy().tolist() == [1, 2]  # int32, as TF


# ---- __jf_tensor__ that never reaches a tensor ---------------------------------------------------
def test_a_jf_tensor_method_returning_its_object_is_refused():
    # Conversion followed __jf_tensor__ until the C stack overflowed (a segfault); TF's registry
    # would recurse to a RecursionError. A chain that reaches a tensor still converts.
    out = run_in_child("""
        class Loop:
            def __jf_tensor__(self):
                return self
        class Hop:
            def __init__(self, n):
                self.n = n
            def __jf_tensor__(self):
                return Hop(self.n - 1) if self.n else jf.constant([1.0, 2.0])
        assert jf.constant(Hop(3)).numpy().tolist() == [1.0, 2.0]
        report(lambda: jf.constant(Loop()))
    """)
    assert_raised(out, "TypeError", "__jf_tensor__() returned the object itself")
    out = run_in_child("""
        class Loop:
            def __jf_tensor__(self):
                return self
        report(lambda: jf.convert_to_tensor(Loop()) + 1.0)
    """)
    assert_raised(out, "TypeError", "__jf_tensor__")
