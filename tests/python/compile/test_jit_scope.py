"""jit_scope semantics (docs/jit_scope.md), including ports of TensorFlow's
tensorflow/python/compiler/xla/jit_test.py, and the compile_ops values TF accepts and refuses."""
import numpy as np
import pytest

import jitflow as jf


def ops_by_name(cf):
    return {op.name: op for op in cf.graph.get_operations()}


def test_eager_jit_scope_raises_tf_message():
    with pytest.raises(RuntimeError) as e, jf.jit_scope():
        pass
    # The first line is TF's text; the second names the caller's source line.
    assert "test_jit_scope.py" in str(e.value).splitlines()[1]
    assert str(e.value).splitlines()[0] == ("xla.experimental.jit_scope is not supported when eager execution is "
                            "enabled. Try use it inside jf.function.")


def test_xla_alias_is_the_same_object():
    assert jf.xla.experimental.jit_scope is jf.jit_scope


def test_seed_reference_example_marks_ops():
    @jf.function
    def f(a, b):
        with jf.jit_scope():
            c = jf.matmul(a, b)
        with jf.jit_scope(compile_ops=False):
            d = jf.matmul(a, c)
        with jf.jit_scope(compile_ops=lambda node_def: "matmul" in node_def.op.lower()):
            e = jf.matmul(a, b) + d
        return e

    a = np.random.rand(3, 3).astype(np.float32)
    out = f(a, a)
    np.testing.assert_allclose(out.numpy(), a @ a + a @ (a @ a), rtol=1e-5)
    ops = ops_by_name(f.get_concrete_function(a, a))
    assert ops["MatMul"].get_attr("_XlaCompile") is True
    assert ops["MatMul"].get_attr("_XlaScope") == "jit_scope_0"
    assert ops["MatMul_1"].get_attr("_XlaCompile") is False  # stored, not absent
    assert ops["MatMul_1"].get_attr("_XlaScope") == "jit_scope_1"
    assert ops["MatMul_2"].get_attr("_XlaCompile") is True
    assert ops["AddV2"].get_attr("_XlaCompile") is False
    assert ops["AddV2"].get_attr("_XlaScope") == "jit_scope_2"
    for op in ops.values():
        if op.type == "Placeholder":
            with pytest.raises(ValueError, match="No attr named '_XlaCompile'"):
                op.get_attr("_XlaCompile")


def test_scope_numbering_and_nesting_port():
    # jit_test.py testJITXlaScope: a1 -> jit_scope_0; a2..a5 nested -> jit_scope_1; a6 -> 2.
    @jf.function
    def f():
        with jf.jit_scope(True):
            a1 = jf.constant(1)
        with jf.jit_scope(True):
            a2 = jf.constant(1)
            with jf.jit_scope(True):
                a3 = jf.constant(1)
                with jf.jit_scope(True):
                    a4 = jf.constant(1)
                a5 = jf.constant(1)
        with jf.jit_scope(True):
            a6 = jf.constant(1)
        scopes = [t.op.get_attr("_XlaScope") for t in (a1, a2, a3, a4, a5, a6)]
        f.scopes = scopes
        return a1 + a2 + a3 + a4 + a5 + a6

    assert int(f()) == 6
    assert f.scopes == ["jit_scope_0", "jit_scope_1", "jit_scope_1", "jit_scope_1",
                        "jit_scope_1", "jit_scope_2"]


def test_scope_counter_restarts_per_trace():
    @jf.function
    def f(x):
        with jf.jit_scope():
            y = x * 2
        return y

    f(jf.constant(1.0))
    f(jf.constant([1.0, 2.0]))  # a second trace numbers from 0 again
    for shape in [(), (2,)]:
        cf = f.get_concrete_function(jf.TensorSpec(shape, jf.float32))
        assert ops_by_name(cf)["mul" if False else "Mul"].get_attr("_XlaScope") == "jit_scope_0"
    assert f.experimental_get_tracing_count() == 2


def test_nested_scope_overrides_compile_and_restores():
    @jf.function
    def f(x):
        with jf.jit_scope(compile_ops=True, separate_compiled_gradients=True):
            a = x + 1.0
            with jf.jit_scope(compile_ops=False):
                b = a * 2.0
            c = b - 1.0
        d = c / 3.0
        return d

    ops = ops_by_name(f.get_concrete_function(jf.TensorSpec([2])))
    assert ops["AddV2"].get_attr("_XlaCompile") is True
    assert ops["AddV2"].get_attr("_XlaSeparateCompiledGradients") is True
    assert ops["Mul"].get_attr("_XlaCompile") is False
    assert ops["Mul"].get_attr("_XlaSeparateCompiledGradients") is False
    assert ops["Mul"].get_attr("_XlaScope") == "jit_scope_0"  # inherits the root's scope
    assert ops["Sub"].get_attr("_XlaCompile") is True  # restored after the inner scope
    assert ops["Sub"].get_attr("_XlaSeparateCompiledGradients") is True
    with pytest.raises(ValueError, match="No attr named"):
        ops["RealDiv"].get_attr("_XlaCompile")


def test_callable_called_once_per_op_with_node_def():
    seen = []

    def decide(node_def):
        seen.append((node_def.op, node_def.name, list(node_def.input)))
        return 1 if node_def.op == "Mul" else 0  # truthiness is stored as a bool

    @jf.function
    def f(x):
        with jf.jit_scope(compile_ops=decide):
            y = x * 3.0
            z = jf.exp(y, name="myexp")
        return z

    cf = f.get_concrete_function(jf.TensorSpec([2]))
    ops = ops_by_name(cf)
    assert ops["Mul"].get_attr("_XlaCompile") is True
    assert ops["myexp"].get_attr("_XlaCompile") is False
    by_op = {s[0]: s for s in seen}
    assert by_op["Mul"][2][0] == "x"
    assert by_op["Exp"][1] == "myexp" and by_op["Exp"][2] == ["Mul"]
    assert sum(1 for s in seen if s[0] in ("Mul", "Exp")) == 2


def test_existing_attr_is_not_overwritten():
    @jf.function
    def f(x):
        with jf.jit_scope(compile_ops=False), jf.jit_scope(compile_ops=True):
            y = x + 1.0
        return y

    # The innermost value wins when the op is created; the outer never rewrites it.
    assert ops_by_name(f.get_concrete_function(jf.TensorSpec([1])))["AddV2"].get_attr("_XlaCompile")


def test_scope_state_restored_when_body_raises():
    @jf.function
    def f(x):
        try:
            with jf.jit_scope():
                raise KeyError("boom")
        except KeyError:
            pass
        y = x + 1.0  # outside any scope again
        with jf.jit_scope():
            z = y * 2.0  # a new root scope: depth went back to 0
        return z

    ops = ops_by_name(f.get_concrete_function(jf.TensorSpec([1])))
    with pytest.raises(ValueError):
        ops["AddV2"].get_attr("_XlaScope")
    assert ops["Mul"].get_attr("_XlaScope") == "jit_scope_1"


def _create_ops():
    with jf.name_scope("root"):
        return jf.random.uniform((1,), minval=-10, maxval=10, seed=1)


def _compute(compile_ops):
    @jf.function
    def f():
        with jf.jit_scope(compile_ops=compile_ops):
            return _create_ops()
    return f.get_concrete_function(), f()


def enable_jit_nonstateful(node_def):
    return node_def.op != "RandomUniform"


def test_create_ops_lambda_port():
    # jit_test.py testJITCreateOpsLambda.
    cf_false_1, v_false_1 = _compute(False)
    _, v_false_2 = _compute(False)
    cf_true_1, v_true_1 = _compute(enable_jit_nonstateful)
    _, v_true_2 = _compute(enable_jit_nonstateful)
    cf_all_true, _ = _compute(True)

    assert cf_false_1.graph.outputs[0].op.get_attr("_XlaCompile") is False
    sampler = cf_true_1.graph.get_operation_by_name("root/random_uniform/RandomUniform")
    sampler_all = cf_all_true.graph.get_operation_by_name("root/random_uniform/RandomUniform")
    assert sampler.get_attr("_XlaCompile") is False
    assert sampler_all.get_attr("_XlaCompile") is True
    assert cf_true_1.graph.outputs[0].op.get_attr("_XlaCompile") is True
    assert cf_all_true.graph.outputs[0].op.get_attr("_XlaCompile") is True
    np.testing.assert_allclose(v_false_1.numpy(), v_false_2.numpy())
    np.testing.assert_allclose(v_true_1.numpy(), v_true_2.numpy())
    np.testing.assert_allclose(v_false_1.numpy(), v_true_1.numpy())
    assert -10 <= float(v_false_1[0]) < 10


def test_variable_seed_port():
    # jit_test.py testJITVariableSeed: a seeded initializer gives the same values with and
    # without jit.
    def compute(use_jit):
        jf.random.set_seed(7)  # TF's test builds a fresh graph per run; this restarts streams
        holder = {}

        @jf.function
        def f():
            with jf.jit_scope(compile_ops=use_jit):
                if "v" not in holder:
                    holder["v"] = jf.Variable(lambda: jf.random.uniform((3,), -0.1, 0.1, seed=2))
                x = jf.random.uniform((1,), seed=1)
                return x, holder["v"].read_value()
        return f()

    x_true, v_true = compute(True)
    x_false, v_false = compute(False)
    np.testing.assert_allclose(v_false.numpy(), v_true.numpy())
    np.testing.assert_allclose(x_false.numpy(), x_true.numpy())
    assert np.all(np.abs(v_true.numpy()) <= 0.1)


def test_ops_outside_scopes_have_no_attrs():
    @jf.function
    def f(x):
        y = x * 2.0
        with jf.jit_scope():
            z = y + 1.0
        return jf.tanh(z)

    for op in f.get_concrete_function(jf.TensorSpec([2])).graph.get_operations():
        names = set(op.node_def.attr)
        if op.type == "AddV2":
            assert {"_XlaCompile", "_XlaScope", "_XlaSeparateCompiledGradients"} <= names
        else:
            assert not names & {"_XlaCompile", "_XlaScope", "_XlaSeparateCompiledGradients"}


# ---- compile_ops: the values TF accepts ----------------------------------------------------------
def _scoped(compile_ops):
    def body(x):
        with jf.jit_scope(compile_ops=compile_ops):
            return x + 1.0
    return jf.function(body)


@pytest.mark.parametrize("value, exc", [("maybe", TypeError), (1.5, TypeError),
                                        (None, jf.errors.InvalidArgumentError)], ids=repr)
def test_jit_scope_compile_ops_must_be_a_bool_or_callable(value, exc):
    # TF stores compile_ops in a bool attr: 'maybe' is its TypeError, None its InvalidArgumentError.
    with pytest.raises(exc, match="compile_ops"):
        _scoped(value)(jf.ones([2]))


@pytest.mark.parametrize("value", [True, False, 1, 0, np.bool_(True), lambda node_def: True], ids=repr)
def test_jit_scope_compile_ops_accepts_what_tf_accepts(value):
    # The check keeps accepting bools, ints, numpy bools and callables.
    np.testing.assert_array_equal(_scoped(value)(jf.ones([2])).numpy(), [2.0, 2.0])


def test_jit_scope_callable_must_return_a_bool():
    with pytest.raises(TypeError, match="must return a bool"):
        _scoped(lambda node_def: "yes")(jf.ones([2]))


def test_jit_scope_eagerly_is_still_tfs_runtime_error():
    # Eagerly TF raises its RuntimeError before looking at compile_ops, and so does jitflow.
    with pytest.raises(RuntimeError, match="not supported when eager execution is enabled"), \
            jf.jit_scope(compile_ops="maybe"):
        pass
