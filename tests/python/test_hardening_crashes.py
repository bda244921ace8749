"""Issue 14, class 1: no input may crash the interpreter. Each case runs in a child process, so
a segfault or an abort fails its own test instead of killing the run, and must end as TF 2.21
ends it: TF's exception type (jf.errors.ResourceExhaustedError, also a MemoryError, for an
allocation that cannot be made, raised before it is tried) or TF's result.

Every case here crashed, or raised the wrong exception, before the fix it tests, except the
ones marked "Guard:", which pin down behaviour that was already right."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

_PRELUDE = '''
import json, sys
import numpy as np
import jitflow as jf

def report(fn):
    try:
        value = fn()
    except BaseException as e:
        out = {"raised": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
               "message": str(e)}
    else:
        out = {"value": value.numpy().tolist() if hasattr(value, "numpy") else value}
    print(json.dumps(out))
'''


def _child(body, env=None):
    """Runs body after _PRELUDE in a fresh interpreter; returns the last report(...) as a dict.
    The child must exit normally: a signal (segfault, abort) is the crash this file guards against."""
    src = _PRELUDE + textwrap.dedent(body)
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})}, check=False)
    assert r.returncode == 0, f"child died with {r.returncode} (a crash): {r.stderr[-3000:]}"
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no report from the child: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    out = json.loads(lines[-1])
    out["stderr"] = r.stderr
    return out


def _raised(out, exc, *fragments):
    assert "raised" in out, f"expected {exc}, got the value {out.get('value')!r}"
    assert exc in out["mro"], f"expected {exc}, got {out['raised']}: {out['message']}"
    for f in fragments:
        assert f in out["message"], f"{f!r} not in {out['message']!r}"


_TF_INDEX_MSG = "scalar tf.int32/tf.int64 tensors are valid indices"


# ---- indexing with tensors, arrays and objects ---------------------------------------------
@pytest.mark.parametrize("key", [
    "jf.constant(1.5)",                     # a float tensor: was a segfault
    "np.array([0, 1])",                     # a numpy array: was a segfault
    "np.array(1.0)",                        # a 0-d float array
    "jf.constant([0, 1])",                  # an int vector tensor (TF: only scalars)
    "(0, jf.constant(2.0))",                # inside a tuple
    "slice(jf.constant(1.0), None)",        # as a slice bound
    "BadIndex()",                           # an object whose __index__ raises: was a segfault
])
def test_indexing_with_a_bad_key_raises_tf_type_error(key):
    out = _child(f"""
        class BadIndex:
            def __index__(self):
                raise RuntimeError("no index")
        x = jf.constant(np.ones((3, 4), np.float32))
        report(lambda: x[{key}])
        """)
    _raised(out, "TypeError", _TF_INDEX_MSG)


@pytest.mark.parametrize("key, want", [
    ("a[i]", "x[1]"),
    ("a[i:]", "x[1:]"),
    ("a[:, i]", "x[:, 1]"),
    ("a[i, 1:]", "x[1, 1:]"),
    ("a[-i]", "x[-1]"),
    ("a[::i + 1]", "x[::2]"),
    ("a[None, ..., i]", "x[None, ..., 1]"),
])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_indexing_with_a_traced_int_tensor_works(key, want, dtype):
    # TF: a scalar int tensor index inside tf.function is a StridedSlice whose begin/end are
    # computed in the graph. It was a segfault (the tensor's __index__ failed in C++).
    out = _child(f"""
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        f = jf.function(lambda a, i: {key})
        got = f(jf.constant(x), jf.constant(1, jf.{dtype}))
        report(lambda: [got.numpy().tolist(), {want}.tolist(), list(got.shape)])
        """)
    got, want_value, shape = out["value"]
    assert got == want_value
    assert tuple(shape) == np.shape(want_value)


@pytest.mark.parametrize("key", ["x[i]", "x[:, i]", "x[i, 2]", "x[-i]", "x[None, ..., i]", "x[i, i] * x[i, 0]"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_gradient_through_a_traced_int_tensor_index(key, dtype):
    # In process: no crash risk here. TF differentiates x[i] for a traced i; the gradient is g
    # placed at the index (a one-hot mask per indexed axis).
    import jitflow as jf
    x = jf.Variable(np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0)

    def grad_of(index_expr):
        @jf.function
        def g(i):
            with jf.GradientTape() as tape:
                y = jf.reduce_sum(eval(index_expr, {"x": x, "i": i}) * 3.0)
            return tape.gradient(y, x)
        return g

    i = jf.constant(1, getattr(jf, dtype))
    np.testing.assert_allclose(grad_of(key)(i).numpy(), grad_of(key.replace("i", "1"))(i).numpy(), rtol=1e-6)


def test_gradient_through_a_traced_slice_bound():
    # TF differentiates x[i:] too (more forms in test_mask_ops.py).
    import jitflow as jf
    x = jf.Variable(jf.ones([3, 4]))

    @jf.function
    def g(i):
        with jf.GradientTape() as tape:
            y = jf.reduce_sum(x[i:])
        return tape.gradient(y, x)
    np.testing.assert_array_equal(g(jf.constant(1)).numpy(), [[0] * 4, [1] * 4, [1] * 4])


def test_traced_tensor_index_out_of_range_raises_invalid_argument():
    out = _child("""
        f = jf.function(lambda a, i: a[i])
        report(lambda: f(jf.zeros([3, 4]), jf.constant(3)))
        """)
    _raised(out, "InvalidArgumentError", "StridedSlice", "slice index 3 of dimension 0 out of bounds")


def test_traced_float_tensor_index_raises_type_error():
    out = _child("""
        f = jf.function(lambda a, i: a[i])
        report(lambda: f(jf.zeros([3, 4]), jf.constant(1.0)))
        """)
    _raised(out, "TypeError", _TF_INDEX_MSG)


def test_traced_tensor_index_under_jit_scope_runs_and_under_jit_compile_names_the_op():
    out = _child("""
        def body(a, i):
            with jf.jit_scope():
                return a[i] * 2.0 + 1.0
        f = jf.function(body)
        report(lambda: f(jf.ones([3, 4]), jf.constant(1)))
        """)
    assert out["value"] == [3.0] * 4
    # jit_compile=True compiles it, as TF's XLA does (the runner computes the bounds first).
    out = _child("""
        f = jf.function(lambda a, i: a[i] * 2.0, jit_compile=True)
        report(lambda: f(jf.ones([3, 4]), jf.constant(1)))
        """)
    assert out["value"] == [2.0] * 4


# ---- sizes that cannot be allocated ----------------------------------------------------------
@pytest.mark.parametrize("call", [
    "jf.range(2**62)",                                      # was a segfault (bytes wrapped to 0)
    "jf.range(jf.constant(0, jf.int64), jf.constant(2**62, jf.int64))",
    "jf.function(lambda: jf.range(2**62))()",
])
def test_range_too_big_to_allocate_raises_resource_exhausted(call):
    out = _child(f"report(lambda: {call})")
    _raised(out, "ResourceExhaustedError", "Range", "OOM when allocating tensor with shape[4611686018427387904]")
    assert "MemoryError" in out["mro"]


def test_reshape_whose_sizes_overflow_raises_instead_of_a_floating_point_exception():
    # [2**40, 2**40, -1]: the product of the known sizes overflowed int64 (SIGFPE).
    out = _child("report(lambda: jf.reshape(jf.zeros([0]), [2**40, 2**40, -1]))")
    _raised(out, "InvalidArgumentError", "Reshape", "has too many elements")


# ---- thread counts -------------------------------------------------------------------------
@pytest.mark.parametrize("n", [10**9, 50000, 2**40, -5])
def test_huge_or_negative_intra_op_thread_count_is_refused_and_ops_still_run(n):
    # 10**9 threw std::bad_alloc, 50000 aborted (std::terminate when thread creation failed).
    out = _child(f"""
        report(lambda: jf.config.threading.set_intra_op_parallelism_threads({n}))
        """)
    _raised(out, "InvalidArgumentError", "intra-op threads", str(n))
    out = _child(f"""
        try:
            jf.config.threading.set_intra_op_parallelism_threads({n})
        except ValueError:
            pass
        report(lambda: [jf.config.threading.get_intra_op_parallelism_threads(),
                        float(jf.reduce_sum(jf.ones([300000]) + 1.0))])
        """)
    threads, total = out["value"]
    assert 1 <= threads <= os.cpu_count() and total == 600000.0


def test_thread_count_zero_means_one_per_core():
    # Guard: 0 is TF's "system default" (one thread per core), not a refused count.
    out = _child("""
        jf.config.threading.set_intra_op_parallelism_threads(1)
        jf.config.threading.set_intra_op_parallelism_threads(0)
        report(jf.config.threading.get_intra_op_parallelism_threads)
        """)
    assert out["value"] == min(os.cpu_count(), 1024)


@pytest.mark.parametrize("value", ["1000000000", "-3", "1e9", "lots"])
def test_bad_jitflow_num_threads_warns_and_uses_the_core_count(value):
    out = _child("report(lambda: [jf.config.threading.get_intra_op_parallelism_threads(),"
                 " float(jf.reduce_sum(jf.ones([300000]) * 2.0))])", env={"JITFLOW_NUM_THREADS": value})
    assert out["value"] == [min(os.cpu_count(), 1024), 600000.0]
    assert f"JITFLOW_NUM_THREADS={value} is not a thread count" in out["stderr"]


# ---- self-referencing and very deep structures -----------------------------------------------
# jf.function arguments and outputs: tests/python/test_nest.py. Here the conversions
# (jf.constant, convert_to_tensor, op arguments, Variable) and the control-flow builders.
_SELF_LIST = "v = [1.0]\nv.append(v)"
_SELF_DICT = "v = {'x': 1.0}\nv['me'] = v"
_DEEP_LIST = "v = 1.0\nfor _ in range(200000):\n    v = [v]"
_DEEP_TUPLE = "v = 1.0\nfor _ in range(200000):\n    v = (v,)"


@pytest.mark.parametrize("make", [_SELF_LIST, _DEEP_LIST, _DEEP_TUPLE], ids=["self_list", "deep_list", "deep_tuple"])
@pytest.mark.parametrize("call", ["jf.constant(v)", "jf.convert_to_tensor(v)", "jf.constant([1.0]) + v",
                                  "jf.Variable(v)", "jf.function(lambda: jf.constant(v))()"])
def test_unconvertible_nested_lists_raise_value_error(make, call):
    # TF: ValueError ("Can't convert Python sequence with mixed types"); TF aborts on the deep list.
    out = _child(f"{make}\nreport(lambda: {call})")
    _raised(out, "ValueError")


@pytest.mark.parametrize("call", ["jf.constant(v)", "jf.convert_to_tensor(v)"])
def test_self_referencing_dict_is_refused(call):
    # Guard: a dict is not convertible at all (TF: ValueError; jitflow's converter: TypeError).
    out = _child(f"{_SELF_DICT}\nreport(lambda: {call})")
    assert out.get("raised") in ("TypeError", "ValueError"), out


@pytest.mark.parametrize("make", [_SELF_LIST, _DEEP_LIST], ids=["self_list", "deep_list"])
@pytest.mark.parametrize("call", ["jf.function(lambda p: jf.cond(p, lambda: v, lambda: v))(jf.constant(True))",
                                  "jf.function(lambda: jf.while_loop(lambda x: False, lambda x: x, [v]))()"],
                         ids=["cond", "while_loop"])
def test_cond_and_while_loop_refuse_unflattenable_structures(make, call):
    # Guard for cond (cpp/python/nest.cc); while_loop's self-referencing loop_vars raised TypeError.
    out = _child(f"{make}\nreport(lambda: {call})")
    assert out.get("raised") in ("ValueError", "RecursionError", "InvalidArgumentError"), out


# ---- shapes computed in the graph ------------------------------------------------------------
@pytest.mark.parametrize("call", ["jf.zeros(s)", "jf.random.uniform(s)", "jf.reshape(jf.zeros([6]), s)"])
def test_shape_vector_of_unknown_length_raises_instead_of_a_negative_rank(call):
    # A shape tensor of unknown length (TensorSpec([None])) made a rank -1 Shape: a segfault.
    out = _child(f"""
        f = jf.function(lambda s: {call}, input_signature=[jf.TensorSpec([None], jf.int32)])
        report(lambda: f(jf.constant([2, 3])))
        """)
    _raised(out, "InvalidArgumentError", "must be known when tracing")


def test_shape_values_computed_at_run_time_are_checked_when_run():
    out = _child("""
        f = jf.function(lambda s: jf.zeros(s), input_signature=[jf.TensorSpec([2], jf.int64)])
        report(lambda: [list(f(jf.constant([2, 3], jf.int64)).shape)])
        """)
    assert out["value"] == [[2, 3]]
    out = _child("""
        f = jf.function(lambda s: jf.zeros(s), input_signature=[jf.TensorSpec([2], jf.int64)])
        report(lambda: f(jf.constant([2**40, 2**30], jf.int64)))
        """)
    _raised(out, "InvalidArgumentError", "would have more than 2**63 - 1 elements")
    out = _child("""
        f = jf.function(lambda s: jf.zeros(s), input_signature=[jf.TensorSpec([2], jf.int64)])
        report(lambda: f(jf.constant([2**40, 1], jf.int64)))
        """)
    _raised(out, "ResourceExhaustedError", "OOM when allocating tensor with shape[1099511627776,1]")


# ---- output counts ---------------------------------------------------------------------------
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
    out = _child(f"report(lambda: {call})")
    _raised(out, exc, msg)


def test_tensor_reduce_does_not_abort():
    # object.__reduce__ on a Tensor aborted the interpreter (pybind11: "instance allocation
    # failed: new instance has no pybind11-registered base types"). TF: (convert_to_tensor, (value,)).
    out = _child("report(lambda: jf.ones([2]).__reduce__()[1][0].tolist())")
    assert out["value"] == [1.0, 1.0]


# ---- the private C++ entry points validate their arguments too ----------------------------------
@pytest.mark.parametrize("call, exc", [
    ("jf._C.execute('Const', ())", "InvalidArgumentError"),             # no value attr: a null dereference
    ("jf._C.call_recorded('Fill', [jf.constant([1])], None)", "TypeError"),  # read as a FunctionCache
    ("jf._C.make_concrete_function(None, 'f')", "TypeError"),           # a null graph
    # Guards: args are read as a tuple when run_functions_eagerly; the items of a sequence
    # made up on the fly (a tensor's rows) must be held, not borrowed.
    ("jf._C.call_recorded(jf.function(lambda: 1), [1], None)", "TypeError"),
    ("jf._C.int_tensor(jf.ones([2, 3]))", "TypeError"),
])
def test_private_entry_points_validate_their_arguments(call, exc):
    out = _child(f"report(lambda: {call})")
    _raised(out, exc)


def test_tracing_an_op_on_a_big_captured_tensor_does_not_crash():
    # A big eager input made the op run without the GIL, and recording it in the trace then
    # asked Python for the user's source line without the GIL: a segfault.
    out = _child("""
        big = jf.constant(np.ones(70000, np.float32))
        v = jf.Variable(np.zeros(70000, np.float32))
        f = jf.function(lambda: (v.assign_add(big, read_value=False), jf.reduce_sum(big * 2.0))[1])
        report(lambda: f())
        """)
    assert out["value"] == 140000.0
