"""jf.function semantics (docs/user_guide.md, 'Functions'): trace keys, signatures, retracing, side effects,
variables (as captures and as arguments, keyed by spec), control flow, structure (Python numbers
come back as tensors), introspection and the counters."""
import collections
import linecache
import os
import re
import warnings

import numpy as np
import pytest
from conftest import run_in_child, run_in_threads

import jitflow as jf


def test_trace_key_tensors_by_dtype_and_shape_scalars_by_value():
    calls = []

    @jf.function
    def f(x, k):
        calls.append(1)  # a Python side effect: runs once per trace
        return x * k

    f(jf.constant([1.0, 2.0]), 2)
    f(jf.constant([3.0, 4.0]), 2)                 # same key: no trace
    assert f.experimental_get_tracing_count() == 1
    f(jf.constant([3.0, 4.0, 5.0]), 2)            # new shape
    f(jf.constant([1, 2]), 2)                     # new dtype
    f(jf.constant([1.0, 2.0]), 3)                 # new Python value
    assert f.experimental_get_tracing_count() == 4
    assert len(calls) == 4
    np.testing.assert_allclose(f(np.array([1.0, 2.0], np.float32), 3).numpy(), [3.0, 6.0])
    assert f.experimental_get_tracing_count() == 4  # numpy arrays key like tensors


def test_cached_call_runs_no_python_ops_and_counts():
    @jf.function
    def f(x):
        return jf.tanh(x * 2.0 + 1.0)

    x = jf.constant(np.random.rand(5).astype(np.float32))
    f(x)
    jf.debugging.reset_stats()
    for _ in range(3):
        y = f(x)
    s = jf.debugging.stats()
    assert s["traces"] == 0 and s["eager_ops"] == 0 and s["graph_runs"] == 3
    np.testing.assert_allclose(y.numpy(), np.tanh(x.numpy().astype(np.float64) * 2 + 1), rtol=1e-6)


def test_input_signature_one_trace_and_mismatch_error():
    @jf.function(input_signature=[jf.TensorSpec([None, 3], jf.float32)])
    def f(x):
        return jf.reduce_sum(x, axis=1)

    for n in (1, 4, 7):
        a = np.random.rand(n, 3).astype(np.float32)
        np.testing.assert_allclose(f(a).numpy(), a.sum(1), rtol=1e-6)
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError) as e:
        f(np.zeros((2, 4), np.float32))
    msg = str(e.value)
    assert "'x'" in msg and "(2, 4)" in msg and "TensorSpec(shape=(None, 3)" in msg
    # A numpy value is converted to the signature's dtype, as TF binds it; a tensor is not cast.
    assert f(np.ones((2, 3), np.float64)).dtype == jf.float32
    with pytest.raises(TypeError, match="float64"):
        f(jf.constant(np.zeros((2, 3), np.float64)))


def test_reduce_retracing_relaxes_changed_dims():
    @jf.function(reduce_retracing=True)
    def f(x):
        return x + 1.0

    for n in (2, 3, 4, 5):
        np.testing.assert_allclose(f(np.ones((n, 2), np.float32)).numpy(), np.full((n, 2), 2.0))
    assert f.experimental_get_tracing_count() == 2  # the first shape, then [None, 2]
    cf = f.get_concrete_function(jf.TensorSpec([None, 2]))
    assert cf.inputs[0].shape == (None, 2)


def test_retracing_warning_names_the_argument():
    @jf.function
    def f(x, scale):
        return x * scale

    x = jf.constant(1.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for s in range(8):
            f(x, float(s))
    msgs = [str(m.message) for m in w if "retracing" in str(m.message)]
    assert len(msgs) == 1  # once per function
    assert "'scale'" in msgs[0] and "'f'" in msgs[0]


def _source_of(w):
    return linecache.getline(w.filename, w.lineno).strip()


def test_retracing_and_jit_warnings_point_at_the_callers_line(monkeypatch):
    # They pointed at jitflow/tracing/function.py (a fixed stacklevel counted from the trace).
    @jf.function
    def retraced(x, scale):
        return x * scale

    @jf.function
    def falls_back_here(x):
        with jf.jit_scope():
            return jf.sin(x) * 1.5

    x = jf.constant(1.0)
    monkeypatch.setenv("JITFLOW_FAIL_COMPILE", "1")  # the cluster's compilation fails: a jit warning
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for s in range(8):
            retraced(x, float(s))
        falls_back_here(x)
    retrace = [m for m in w if "retracings of jf.function 'retraced'" in str(m.message)]
    jit = [m for m in w if "falls_back_here could not be compiled" in str(m.message)]
    assert len(retrace) == 1 and len(jit) == 1
    assert retrace[0].filename == __file__ and _source_of(retrace[0]) == "retraced(x, float(s))"
    assert jit[0].filename == __file__ and _source_of(jit[0]) == "falls_back_here(x)"


def test_print_runs_every_call_side_effects_once(capsys):
    trace_log = []

    @jf.function
    def f(x):
        trace_log.append("traced")
        jf.print("value:", x)
        return x + 1

    for i in range(3):
        f(jf.constant(i))
    err = capsys.readouterr().err
    assert err.splitlines() == ["value: 0", "value: 1", "value: 2"]
    assert trace_log == ["traced"]


def test_nested_functions_are_inlined():
    @jf.function
    def inner(x):
        return jf.exp(x)

    @jf.function
    def outer(x):
        return inner(x) * 2.0

    x = jf.constant([0.0, 1.0])
    np.testing.assert_allclose(outer(x).numpy(), 2 * np.exp([0.0, 1.0]), rtol=1e-6)
    types = [op.type for op in outer.get_concrete_function(x).graph.get_operations()]
    assert "Exp" in types and "Mul" in types
    assert inner.experimental_get_tracing_count() == 0


def test_variables_captured_by_reference_and_assign_ops():
    v = jf.Variable(jf.constant([1.0, 2.0]))

    @jf.function
    def f(x):
        v.assign_add(x)
        return v.read_value() * 10.0

    np.testing.assert_allclose(f(jf.constant([1.0, 1.0])).numpy(), [20.0, 30.0])
    v.assign([0.0, 0.0])  # seen by the traced function: captured by reference
    np.testing.assert_allclose(f(jf.constant([1.0, 1.0])).numpy(), [10.0, 10.0])
    np.testing.assert_allclose(v.numpy(), [1.0, 1.0])
    assert f.experimental_get_tracing_count() == 1
    types = [op.type for op in f.get_concrete_function(jf.constant([1.0, 1.0])).graph.get_operations()]
    assert "AssignAddVariableOp" in types and "ReadVariableOp" in types


_SINGLETON = ("jf.function only supports singleton jf.Variables created on the first call. Make sure the "
              "jf.Variable is only created once or created outside jf.function.")


def test_a_variable_created_on_every_call_is_refused_on_the_first_call():
    # As TF: a first trace that created variables is traced again at once, and creating them
    # again there is the error. It was raised only at a later retrace (a new shape), if ever.
    traces = []

    @jf.function
    def f(x):
        traces.append(1)
        w = jf.Variable(jf.ones([2]))
        return x * w

    with pytest.raises(ValueError, match=re.escape(_SINGLETON)):
        f(jf.constant([1.0, 2.0]))
    assert len(traces) == 2 and f.experimental_get_tracing_count() == 1  # TF 2.21's counts
    with pytest.raises(ValueError, match=re.escape(_SINGLETON)):
        f(jf.constant([1.0, 2.0]))


def test_variables_created_once_trace_twice_on_the_first_call_as_tf():
    class Scale(jf.Module):
        def __init__(self):
            super().__init__()
            self.v, self.traces = None, 0

        @jf.function
        def __call__(self, x):
            self.traces += 1
            if self.v is None:
                self.v = jf.Variable(2.0)
            return self.v * x

    m = Scale()
    counts = []
    for x in (1.0, 2.0, jf.constant(2.0), jf.constant([2.0]), jf.constant([3.0])):
        np.testing.assert_allclose(m(x).numpy(), 2.0 * np.asarray(x))
        counts.append((m.traces, m.__call__.experimental_get_tracing_count()))
    assert counts == [(2, 2), (3, 3), (4, 4), (5, 5), (5, 5)]  # TF 2.21's, call by call
    assert len(m.variables) == 1


def test_tensor_as_python_bool_is_a_clear_error():
    @jf.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TypeError, match="jf.cond"):
        f(jf.constant(1.0))


def test_run_functions_eagerly():
    calls = []

    @jf.function
    def f(x):
        calls.append(1)
        return x + 1

    jf.config.run_functions_eagerly(True)
    try:
        f(jf.constant(1))
        f(jf.constant(1))
        assert len(calls) == 2 and f.experimental_get_tracing_count() == 0
    finally:
        jf.config.run_functions_eagerly(False)
    f(jf.constant(1))
    f(jf.constant(1))
    assert len(calls) == 3


def test_cond_and_while_loop_traced_match_eager():
    def body_fn(x):
        y = jf.cond(jf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
        _, acc = jf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a + y), (jf.constant(0), y))
        return acc

    f = jf.function(body_fn)
    for sign in (1.0, -1.0):
        x = jf.constant(np.random.rand(3).astype(np.float32) * sign)
        np.testing.assert_allclose(f(x).numpy(), body_fn(x).numpy(), rtol=1e-6)
    types = [op.type for op in f.get_concrete_function(x).graph.get_operations()]
    assert "If" in types and "While" in types
    assert f.experimental_get_tracing_count() == 1


def test_while_loop_shape_change_is_an_error():
    @jf.function
    def f(x):
        return jf.while_loop(lambda v: jf.reduce_sum(v) < 10.0, lambda v: jf.concat([v, v], 0), [x])

    with pytest.raises(ValueError, match="enters the loop as float32\\[1\\]"):
        f(jf.constant([1.0]))


def test_outputs_keep_structure():
    Pair = collections.namedtuple("Pair", "a b")

    @jf.function
    def f(x):
        return {"sum": x + 1, "parts": [x, (x * 2, "tag")], "pair": Pair(x, 3)}

    out = f(jf.constant(1.0))
    assert set(out) == {"sum", "parts", "pair"}
    assert float(out["sum"]) == 2.0 and out["parts"][1][1] == "tag"
    assert isinstance(out["pair"], Pair) and out["pair"].b == 3 and float(out["pair"].a) == 1.0


def test_kwargs_and_nested_inputs():
    @jf.function
    def f(xs, scale=1.0):
        return jf.add_n([a * scale for a in xs])

    out = f([jf.constant(1.0), jf.constant(2.0)], scale=3.0)
    assert float(out) == 9.0
    f([jf.constant(5.0), jf.constant(6.0)], scale=3.0)
    assert f.experimental_get_tracing_count() == 1


def test_graph_names_scopes_and_dot():
    @jf.function
    def f(a, b):
        with jf.name_scope("layer"):
            c = jf.matmul(a, b)
            d = jf.matmul(c, b, name="second")
        e = jf.matmul(d, b)
        return e + c

    spec = jf.TensorSpec([2, 2])
    g = f.get_concrete_function(spec, spec).graph
    names = [op.name for op in g.get_operations()]
    assert {"a", "b", "layer/MatMul", "layer/second", "MatMul", "AddV2"} <= set(names)
    assert len(names) == len(set(names))
    op = g.get_operation_by_name("layer/second")
    assert op.type == "MatMul" and [t.name for t in op.inputs] == ["layer/MatMul:0", "b:0"]
    assert op.outputs[0].shape == (2, 2) and op.node_def.op == "MatMul"
    assert "test_function.py" in op.source
    assert "layer/second" in g.as_dot() and g.as_dot().startswith("digraph")


def test_dump_writes_graph_after_each_pass(tmp_path):
    os.environ["JITFLOW_DUMP"] = str(tmp_path)
    try:
        @jf.function
        def dumped_fn(x):
            return x * jf.constant(2.0) * jf.constant(3.0)
        dumped_fn(jf.constant(1.0))
    finally:
        del os.environ["JITFLOW_DUMP"]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert any(f.endswith(".traced.txt") for f in files)
    assert any(f.endswith(".constant_fold.txt") for f in files)
    assert any("shape_inference" in f for f in files)


def test_runtime_error_names_node_and_source_line():
    @jf.function(input_signature=[jf.TensorSpec([None])])
    def f(x):
        return jf.reshape(x, [3, -1])

    f(np.zeros(6, np.float32))
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        f(np.zeros(4, np.float32))
    msg = str(e.value)
    assert "Reshape" in msg and "test_function.py" in msg and "jf.reshape(x, [3, -1])" in msg


def test_symbolic_tensor_leaking_out_of_trace_is_an_error():
    leaked = []

    @jf.function
    def f(x):
        leaked.append(x * 2.0)
        return x

    f(jf.constant(1.0))
    with pytest.raises(jf.errors.InvalidArgumentError, match="outside"):
        jf.exp(leaked[0])


def test_concurrent_calls_from_threads():
    @jf.function
    def f(x):
        return jf.reduce_sum(jf.matmul(x, x))

    x = np.random.rand(64, 64).astype(np.float32)
    expected = (x.astype(np.float64) @ x).sum()
    f(x)
    errors = []

    def worker(_k):
        for _ in range(50):
            r = float(f(x))
            if abs(r - expected) > 1e-3 * abs(expected):
                errors.append(r)
    run_in_threads(worker, 4)
    assert not errors and f.experimental_get_tracing_count() == 1


def test_methods_trace_per_instance():
    class Model:
        def __init__(self, k):
            self.k = k

        @jf.function
        def __call__(self, x):
            return x * self.k

    a, b = Model(2.0), Model(3.0)
    assert float(a(jf.constant(1.0))) == 2.0
    assert float(b(jf.constant(1.0))) == 3.0


def test_constant_folding_and_cse_in_optimized_graph():
    @jf.function
    def f(x):
        k = jf.constant(2.0) * jf.constant(3.0)
        return x * k + x * k

    cf = f.get_concrete_function(jf.TensorSpec([2]))
    opt = cf._cf.optimized_graph.to_string()
    assert opt.count("= Mul(") == 1  # x*k computed once; 2*3 folded
    assert float(f(jf.constant([1.0, 1.0]))[0]) == 12.0


def test_a_cpu_device_scope_does_not_retrace():
    f = jf.function(lambda x: x * 2.0)
    x = jf.constant([1.0])
    f(x)
    with jf.device("/CPU:0"):
        np.testing.assert_array_equal(f(x).numpy(), [2.0])
    assert f.experimental_get_tracing_count() == 1


def test_get_concrete_function_keys_python_values():
    @jf.function
    def f(x):
        return jf.abs(x)

    f1, f2 = f.get_concrete_function(1), f.get_concrete_function(2)
    assert f1 is not f2 and f.get_concrete_function(1) is f1  # TF 2.21: f1 is not f2
    assert f1().numpy() == 1 and f2().numpy() == 2


def test_pretty_printed_concrete_signatures_in_tfs_layout():
    @jf.function
    def double(a):
        return a + a

    double(jf.constant(1))
    double(jf.constant(1.1))
    assert double.pretty_printed_concrete_signatures() == (
        "Input Parameters:\n  a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=jf.int32, name=None)\n"
        "Output Type:\n  TensorSpec(shape=(), dtype=jf.int32, name=None)\nCaptures:\n  None\n\n"
        "Input Parameters:\n  a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=jf.float32, name=None)\n"
        "Output Type:\n  TensorSpec(shape=(), dtype=jf.float32, name=None)\nCaptures:\n  None")
    assert double.pretty_printed_concrete_signatures(verbose=False).splitlines()[0] == (
        "(a: TensorSpec(shape=(), dtype=jf.int32, name=None)) -> TensorSpec(shape=(), dtype=jf.int32, name=None)")


def test_signatures_print_python_values_and_structures_as_tf_does():
    # TF 2.21's text for these calls (tf. spelled jf.): Python values are part of the
    # signature as Literal[...], containers as List/Tuple/Dict/namedtuple of their items.
    P = collections.namedtuple("P", "a b")

    @jf.function
    def f(x, n, lst, d, p, *rest, k=2, **kw):
        return {"y": x * 2, "z": [x, n]}, None

    v = jf.Variable(1.0)
    f(jf.constant([1.0, 2.0]), 3, [1, -1], {"b": jf.constant(2), "a": 1}, P(v, "s"), 4, k=3,
      z=jf.constant([1, 2]))
    spec = "TensorSpec(shape={}, dtype=jf.{}, name=None)".format
    assert f.pretty_printed_concrete_signatures() == "\n".join([
        "Input Parameters:",
        f"  x (POSITIONAL_ONLY): {spec('(2,)', 'float32')}",
        "  n (POSITIONAL_ONLY): Literal[3]",
        "  lst (POSITIONAL_ONLY): List[Literal[1], Literal[-1]]",
        f"  d (POSITIONAL_ONLY): Dict[['b', {spec('()', 'int32')}], ['a', Literal[1]]]",
        ("  p (POSITIONAL_ONLY): P[['a', VariableSpec(shape=(), dtype=jf.float32, trainable=True, alias_id=0)], "
         "['b', Literal['s']]]"),
        "  rest_0 (POSITIONAL_ONLY): Literal[4]",
        "  k (KEYWORD_ONLY): Literal[3]",
        f"  z (KEYWORD_ONLY): {spec('(2,)', 'int32')}",
        "Output Type:",
        (f"  Tuple[Dict[['y', {spec('(2,)', 'float32')}], ['z', List[{spec('(2,)', 'float32')}, "
         f"{spec('()', 'int32')}]]], Literal[None]]"),
        "Captures:",
        "  None"])

    @jf.function
    def g(x, flag=True):
        return x

    g((1, 2))
    assert g.pretty_printed_concrete_signatures(verbose=False) == (
        f"(x: Tuple[Literal[1], Literal[2]], flag: Literal[True]) -> Tuple[{spec('()', 'int32')}, "
        f"{spec('()', 'int32')}]")


def test_tracing_an_op_on_a_big_captured_tensor_does_not_crash():
    # A big eager input made the op run without the GIL, and recording it in the trace then
    # asked Python for the user's source line without the GIL: a segfault.
    out = run_in_child("""
        big = jf.constant(np.ones(70000, np.float32))
        v = jf.Variable(np.zeros(70000, np.float32))
        f = jf.function(lambda: (v.assign_add(big, read_value=False), jf.reduce_sum(big * 2.0))[1])
        report(lambda: f())
        """)
    assert out["value"] == 140000.0


# ---- variables as arguments: keyed by spec, not identity, as TF 2.21 -----------------------------
def test_variables_of_one_spec_share_a_trace_and_each_call_uses_its_own():
    @jf.function
    def f(v, x):
        v.assign_add(x)
        return v * 2

    a, b = jf.Variable([1.0, 2.0]), jf.Variable([10.0, 20.0])
    np.testing.assert_array_equal(f(a, jf.constant([1.0, 1.0])).numpy(), [4.0, 6.0])
    np.testing.assert_array_equal(f(b, jf.constant([1.0, 1.0])).numpy(), [22.0, 42.0])
    assert f.experimental_get_tracing_count() == 1  # TF 2.21: one trace for both
    np.testing.assert_array_equal(a.numpy(), [2.0, 3.0])  # each call wrote its own variable
    np.testing.assert_array_equal(b.numpy(), [11.0, 21.0])
    f(jf.Variable([1.0, 2.0, 3.0]), jf.zeros([3]))  # another shape
    f(jf.Variable([1, 2]), jf.constant([0, 0]))  # another dtype
    f(jf.Variable([1.0, 2.0], trainable=False), jf.zeros([2]))  # not trainable
    assert f.experimental_get_tracing_count() == 4


def test_a_variable_passed_twice_is_not_two_variables():
    @jf.function
    def f(p, q):
        p.assign_add(1.0)
        q.assign_add(1.0)
        return p + q

    a, b = jf.Variable(0.0), jf.Variable(0.0)
    assert f(a, a).numpy() == 4.0 and a.numpy() == 2.0
    assert f(a, b).numpy() == 4.0 and (a.numpy(), b.numpy()) == (3.0, 1.0)
    assert f(b, b).numpy() == 6.0 and b.numpy() == 3.0
    assert f.experimental_get_tracing_count() == 2  # (v, v) and (v, w) are two signatures


@pytest.mark.parametrize("mode", ["function", "jit_scope", "jit_compile"])
def test_gradients_for_variables_of_one_trace(mode):
    def loss(v, x):
        if mode == "jit_scope":
            with jf.jit_scope():
                return jf.reduce_sum(jf.tanh(v * x) ** 2)
        return jf.reduce_sum(jf.tanh(v * x) ** 2)

    @jf.function(jit_compile=mode == "jit_compile")
    def grad_inside(v, x):
        with jf.GradientTape() as tape:
            y = loss(v, x)
        return tape.gradient(y, v)

    traced_loss = jf.function(loss, jit_compile=mode == "jit_compile")
    x = jf.constant([0.5, -1.0, 2.0], jf.float64)

    def reference(w):
        t = np.tanh(w * x.numpy())
        return 2.0 * t * (1.0 - t * t) * x.numpy()

    before = jf.debugging.stats()["cluster_runs"]
    for w in ([0.1, 0.2, 0.3], [1.0, -2.0, 0.5]):
        v = jf.Variable(np.array(w))
        np.testing.assert_allclose(grad_inside(v, x).numpy(), reference(np.array(w)), rtol=1e-12)
        with jf.GradientTape() as tape:  # the call recorded as one op by an eager tape
            y = traced_loss(v, x)
        np.testing.assert_allclose(tape.gradient(y, v).numpy(), reference(np.array(w)), rtol=1e-12)
    assert grad_inside.experimental_get_tracing_count() == 1
    assert traced_loss.experimental_get_tracing_count() == 1
    if mode != "function":
        assert jf.debugging.stats()["cluster_runs"] > before


def test_the_traced_variable_may_die_and_concrete_functions_bind_too():
    @jf.function
    def f(v):
        return v + 1.0

    first = jf.Variable(1.0)
    cf = f.get_concrete_function(first)
    del first  # the graph names a variable that no longer exists
    assert f(jf.Variable(5.0)).numpy() == 6.0
    assert cf(jf.Variable(7.0)).numpy() == 8.0
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="traced with variable arguments"):
        cf(jf.Variable([1.0]))


def test_a_python_callback_in_a_rebound_call_sees_the_real_variables():
    seen = []

    @jf.function
    def f(v):
        # The callback closes over the Python object of the trace, as in TF.
        return jf.py_function(lambda: seen.append(float(v.numpy())) or v.read_value(), [], jf.float32)

    a, b = jf.Variable(1.0), jf.Variable(2.0)
    f(a)
    assert f(b).numpy() == 1.0 and seen == [1.0, 1.0]
    assert f.experimental_get_tracing_count() == 1


# ---- a traced function's Python numbers come back as tensors -------------------------------------
def test_function_returning_python_numbers_returns_tensors():
    @jf.function
    def f():
        return 1

    out = f()
    assert isinstance(out, jf.Tensor) and out.dtype == jf.int32 and out.numpy() == 1

    @jf.function
    def g(x):
        return x, 3, 2.5, [True], None, "s"

    _, i, fl, (b,), none, s = g(jf.constant(1.0))
    assert isinstance(i, jf.Tensor) and i.dtype == jf.int32 and i.numpy() == 3
    assert isinstance(fl, jf.Tensor) and fl.dtype == jf.float32 and fl.numpy() == 2.5
    assert isinstance(b, jf.Tensor) and b.dtype == jf.bool and b.numpy()
    assert none is None and s == "s"  # TF: None stays None (strings: jitflow has no string dtype)
    assert g(jf.constant(2.0))[1].numpy() == 3  # the cached call packs the same structure

    seen = []

    @jf.function
    def outer(x):
        out = g(x)  # inlined into outer's trace: TF returns graph tensors here too
        seen.append([type(v).__name__ for v in out[1:3]] + [type(out[3][0]).__name__])
        return out[1] + 1
    assert outer(jf.constant(1.0)).numpy() == 4 and seen == [["Tensor", "Tensor", "Tensor"]]


def test_a_cache_miss_reuses_the_flattening_cpp_made(monkeypatch):
    """On a miss the C++ cache hands Python its flattening (key, leaves, variable ids): tracing
    does not walk the arguments again to key them, so the miss path cannot disagree with the
    key it is filed under."""
    from jitflow import _C
    calls = []
    real = _C.flatten_inputs

    def counting(*a):
        calls.append(a)
        return real(*a)
    monkeypatch.setattr(_C, "flatten_inputs", counting)
    v = jf.Variable(1.0)

    @jf.function
    def f(x, n, var):
        return x * n + var

    for shape in [(2,), (3,), (4,)]:
        f(jf.constant(np.ones(shape, np.float32)), 2, v)
    assert f.experimental_get_tracing_count() == 3
    assert calls == []
    np.testing.assert_allclose(f(jf.constant([1.0, 2.0]), 2, v).numpy(), [3.0, 5.0])
    assert f.experimental_get_tracing_count() == 3
