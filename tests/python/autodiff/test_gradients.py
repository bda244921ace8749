"""jf.gradients and the gradient registry (docs/autodiff.md): ports of
TensorFlow's jit_test.py gradient cases, the seed's separate_compiled_gradients example,
finite-difference checks in float64 for every registered gradient, compiled == eager,
GradientTape == jf.gradients, naming and edge cases."""
import numpy as np
import op_rows
import pytest
from conftest import compiled_runs, numeric_grad

import jitflow as jf

JIT_ATTRS = ("_XlaCompile", "_XlaScope", "_XlaSeparateCompiledGradients")


def ops_of(f, *args):
    return f.get_concrete_function(*args).graph.get_operations()


# ---- TF jit_test.py ports ----------------------------------------------------------------
def test_compiled_and_not_compiled_gradients_port():
    # jit_test.py testCompilationInGradient.
    @jf.function
    def f(x):
        y_nc = jf.matmul(x, x, name="not_compiled")
        with jf.jit_scope():
            y_c = jf.matmul(y_nc, y_nc, name="compiled")
        x_grads = jf.gradients([y_c], [x])[0]
        return x_grads

    x = np.array([[3.0]], np.float32)
    np.testing.assert_allclose(f(x).numpy(), [[108.0]])
    ops = ops_of(f, x)
    compiled = [op for op in ops if op.name.startswith("gradients/compiled")]
    not_compiled = [op for op in ops if op.name.startswith("gradients/not_compiled")]
    assert len(compiled) >= 2 and len(not_compiled) >= 2
    for op in compiled:
        assert op.get_attr("_XlaCompile") is True
        assert op.get_attr("_XlaScope") == "jit_scope_0"
    for op in not_compiled:
        with pytest.raises(ValueError, match="No attr named '_XlaCompile'"):
            op.get_attr("_XlaCompile")
    assert {op.type for op in compiled} == {"MatMul"}
    assert "gradients/compiled_grad/MatMul" in {op.name for op in compiled}


def _two_scope_gradients(separate):
    @jf.function
    def f():
        with jf.jit_scope(separate_compiled_gradients=separate):
            a1 = jf.constant([[1.0]])
            a1t = jf.matmul(a1, a1)
        with jf.jit_scope(separate_compiled_gradients=separate):
            a2 = jf.constant([[1.0]])
            a2t = jf.matmul(a2, a2)
        f.scopes = (a1.op.get_attr("_XlaScope"), a2.op.get_attr("_XlaScope"))
        grad_a1 = jf.gradients(a1t, a1, name="GA")[0]
        grad_a2 = jf.gradients(a2t, a2, name="GB")[0]
        # Two uses of a -> AddN (unmarked); its inputs are the compiled MatMul gradients.
        f.grad_ops = (grad_a1.op, grad_a2.op, grad_a1.op.inputs[0].op, grad_a2.op.inputs[0].op)
        return grad_a1, grad_a2

    g1, g2 = f()
    return f, g1, g2


def test_gradient_scope_names_port():
    # jit_test.py testCompilationGradientScopeNames.
    f, g1, g2 = _two_scope_gradients(False)
    assert f.scopes == ("jit_scope_0", "jit_scope_1")
    addn_a, addn_b, mm_a, mm_b = f.grad_ops
    assert addn_a.type == "AddN" and addn_a.name == "GA/AddN"
    for op in (addn_a, addn_b):
        assert not set(op.node_def.attr) & set(JIT_ATTRS)  # aggregation stays unmarked
    assert mm_a.name.startswith("GA/MatMul_grad/") and mm_b.name.startswith("GB/MatMul_1_grad/")
    assert mm_a.get_attr("_XlaCompile") is True and mm_b.get_attr("_XlaCompile") is True
    assert mm_a.get_attr("_XlaScope") == "jit_scope_0"
    assert mm_b.get_attr("_XlaScope") == "jit_scope_1"
    np.testing.assert_allclose(g1.numpy(), [[2.0]])
    np.testing.assert_allclose(g2.numpy(), [[2.0]])


def test_separate_compiled_gradient_scope_names_port():
    # jit_test.py testCompilationSeparateGradientScopeNames.
    f, g1, _ = _two_scope_gradients(True)
    _, _, mm_a, mm_b = f.grad_ops
    assert mm_a.get_attr("_XlaCompile") is True and mm_b.get_attr("_XlaCompile") is True
    assert mm_a.get_attr("_XlaScope") == "jit_scope_0_grad_GA"
    assert mm_b.get_attr("_XlaScope") == "jit_scope_1_grad_GB"
    np.testing.assert_allclose(g1.numpy(), [[2.0]])


def test_seed_separate_compiled_gradients_example(rng):
    # The seed's example: f, g and h compile in separate clusters; values equal the
    # uncompiled run and numpy.
    def body(a, b, compile_ops):
        with jf.jit_scope(compile_ops=compile_ops, separate_compiled_gradients=True):
            f = jf.matmul(a, b)
        g = jf.gradients([f], [a, b], name="mygrads1")
        h = jf.gradients([f], [a, b], name="mygrads2")
        return f, g, h

    compiled = jf.function(lambda a, b: body(a, b, True))
    plain = jf.function(lambda a, b: body(a, b, False))
    a = rng.random((3, 4), dtype=np.float32)
    b = rng.random((4, 5), dtype=np.float32)
    cf = compiled.get_concrete_function(a, b)
    by_scope = {}
    for c in cf.clusters:
        by_scope.setdefault(c.scope, []).extend(c.ops)
    assert sorted(by_scope) == ["jit_scope_0", "jit_scope_0_grad_mygrads1", "jit_scope_0_grad_mygrads2"]
    assert len(cf.clusters) == 3
    assert "MatMul" in by_scope["jit_scope_0"]
    for name in ("mygrads1", "mygrads2"):
        scope_ops = by_scope["jit_scope_0_grad_" + name]
        assert {f"{name}/MatMul_grad/MatMul", f"{name}/MatMul_grad/MatMul_1"} <= set(scope_ops)
        assert all(o.startswith(name + "/") for o in scope_ops)
    assert not plain.get_concrete_function(a, b).clusters
    f, g, h = compiled(a, b)
    fp, gp, hp = plain(a, b)
    ones = np.ones((3, 5))
    np.testing.assert_allclose(f.numpy(), a @ b, rtol=1e-5)
    np.testing.assert_allclose(fp.numpy(), f.numpy(), rtol=1e-6)
    for grads in (g, h, gp, hp):
        np.testing.assert_allclose(grads[0].numpy(), ones @ b.T, rtol=1e-5)
        np.testing.assert_allclose(grads[1].numpy(), a.T @ ones, rtol=1e-5)
    np.testing.assert_allclose(g[0].numpy(), gp[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(h[1].numpy(), hp[1].numpy(), rtol=1e-6)


def test_gradients_inside_a_jit_scope_of_uncompiled_ops_stay_unmarked():
    @jf.function
    def f(x):
        y = jf.tanh(x, name="fwd")  # outside every scope
        with jf.jit_scope():
            g = jf.gradients(y, x)[0]  # called inside a scope: still unmarked (§2.6)
        return g

    ops = {op.name: op for op in ops_of(f, jf.TensorSpec([3]))}
    grad_ops = [op for n, op in ops.items() if n.startswith("gradients/fwd_grad/")]
    assert grad_ops
    for op in grad_ops + [ops["gradients/grad_ys_0"]]:
        assert not set(op.node_def.attr) & set(JIT_ATTRS)
    np.testing.assert_allclose(f(jf.constant([0.0, 1.0, 2.0])).numpy(),
                               1 - np.tanh([0.0, 1.0, 2.0]) ** 2, rtol=1e-6)


def test_compile_ops_false_forward_ops_give_unmarked_gradients():
    @jf.function
    def f(x):
        with jf.jit_scope(compile_ops=False):
            y = jf.sin(x, name="s")
        return jf.gradients(y, x)[0]

    for op in ops_of(f, jf.TensorSpec([2])):
        if op.name.startswith("gradients/s_grad/"):
            assert not set(op.node_def.attr) & set(JIT_ATTRS)


# ---- naming, aggregation, errors -----------------------------------------------------------
def test_eager_gradients_is_an_error_like_tf():
    with pytest.raises(RuntimeError, match="jf.gradients is not supported when eager execution is "
                                           "enabled. Use jf.GradientTape instead."):
        jf.gradients(jf.constant(1.0), jf.constant(1.0))


def test_name_scopes_are_uniquified_and_grad_ys_named():
    @jf.function
    def f(x):
        y = x * x
        g1 = jf.gradients(y, x)[0]
        g2 = jf.gradients(y, x)[0]
        with jf.name_scope("outer"):
            g3 = jf.gradients(y, x)[0]
        return g1, g2, g3

    names = {op.name: op for op in ops_of(f, jf.TensorSpec([2]))}
    for scope in ("gradients", "gradients_1", "outer/gradients"):
        assert names[f"{scope}/grad_ys_0"].type in ("Fill", "OnesLike")
        assert names[f"{scope}/Mul_grad/Mul"].type == "Mul"
        assert names[f"{scope}/AddN"].type == "AddN"  # x used twice by Mul
    out = f(jf.constant([1.0, 3.0]))
    for g in out:
        np.testing.assert_allclose(g.numpy(), [2.0, 6.0])


def test_separate_scope_name_uses_full_name_scope():
    @jf.function
    def f(x):
        with jf.jit_scope(separate_compiled_gradients=True):
            y = jf.exp(x)
        with jf.name_scope("outer"):
            return jf.gradients(y, x, name="g")[0]

    ops = {op.name: op for op in ops_of(f, jf.TensorSpec([2]))}
    assert ops["outer/g/Exp_grad/Mul"].get_attr("_XlaScope") == "jit_scope_0_grad_outer_g"


def test_unconnected_and_integer_xs_get_none():
    @jf.function
    def f(x, z, i):
        y = x * 2.0 + jf.cast(i, jf.float32)
        gx, gz, gi = jf.gradients(y, [x, z, i])
        zeros = jf.gradients(y, [z], unconnected_gradients="zero")[0]
        return gx, gz is None, gi is None, zeros

    gx, gz_none, gi_none, zeros = f(jf.constant([1.0]), jf.constant([5.0]), jf.constant([3]))
    np.testing.assert_allclose(gx.numpy(), [2.0])
    assert gz_none.numpy() and gi_none.numpy()  # Python bools come back as tensors, as in TF
    np.testing.assert_allclose(zeros.numpy(), [0.0])


def test_grad_ys_multiple_ys_and_intermediate_xs():
    @jf.function
    def f(x):
        h = jf.square(x)
        y1 = jf.sin(h)
        y2 = h * 3.0
        g = jf.gradients([y1, y2], [x, h], grad_ys=[jf.constant([2.0, 1.0]), None])
        return g

    x = np.array([0.5, 1.5], np.float32)
    gx, gh = f(x)
    dh = np.array([2.0, 1.0]) * np.cos(x**2) + 3.0  # grad_ys[0] * sin'(h) + 3
    np.testing.assert_allclose(gh.numpy(), dh, rtol=1e-5)
    np.testing.assert_allclose(gx.numpy(), dh * 2 * x, rtol=1e-5)


def test_gradients_with_respect_to_variables():
    v = jf.Variable(np.array([1.0, 2.0], np.float32))

    @jf.function
    def f(x):
        y = jf.reduce_sum(v * x) + jf.reduce_sum(v.read_value() ** 2)
        return jf.gradients(y, [v, x])

    gv, gx = f(jf.constant([3.0, 4.0]))
    np.testing.assert_allclose(gv.numpy(), [3.0 + 2.0, 4.0 + 4.0])
    np.testing.assert_allclose(gx.numpy(), [1.0, 2.0])


def test_missing_gradient_names_the_op():
    @jf.function
    def f(x):
        return jf.gradients(jf.floormod(x, 3.0) + jf.abs(x), x)[0]

    np.testing.assert_allclose(f(jf.constant([4.0, -1.0])).numpy(), [2.0, 0.0])
    jf.autodiff.registry._GRADIENTS.pop("Abs")
    try:
        with pytest.raises(LookupError, match=r"No gradient defined for operation 'Abs' \(op type: Abs\)"):
            jf.function(lambda x: jf.gradients(jf.abs(x), x)).get_concrete_function(jf.TensorSpec([1]))
    finally:
        import jitflow.autodiff.grads_math as gm
        jf.autodiff.registry._GRADIENTS["Abs"] = gm._float_only(gm._abs_grad)


def test_cond_gradient_both_branches():
    @jf.function
    def f(x, p):
        y = jf.cond(p, lambda: x * x * 3.0, lambda: jf.sin(x) * x)
        return jf.gradients(y, x)[0]

    x = jf.constant([2.0, 0.5])
    np.testing.assert_allclose(f(x, jf.constant(True)).numpy(), [12.0, 3.0], rtol=1e-6)
    xs = np.array([2.0, 0.5])
    np.testing.assert_allclose(f(x, jf.constant(False)).numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-6)
    types = {op.type for op in ops_of(f, x, jf.constant(True))}
    assert "If" in types


def test_nested_cond_gradient():
    @jf.function
    def f(x, p, q):
        y = jf.cond(p, lambda: jf.cond(q, lambda: x * x, lambda: x * 5.0), lambda: jf.exp(x))
        return jf.gradients(y, x)[0]

    x = jf.constant(1.5)
    t, fl = jf.constant(True), jf.constant(False)
    assert float(f(x, t, t)) == pytest.approx(3.0)
    assert float(f(x, t, fl)) == pytest.approx(5.0)
    assert float(f(x, fl, t)) == pytest.approx(np.exp(1.5), rel=1e-6)


def test_while_loop_gradient():
    # The While gradient (a forward replay that saves each iteration, then a backward loop)
    # is tested in test_while_grad.py; here: jf.gradients through one, v -> 2v until v >= 10.
    @jf.function
    def f(x):
        y = jf.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, [x])[0]
        return y, jf.gradients(y, x)[0]

    y, dy = f(jf.constant(1.0))
    assert float(y) == 16.0 and float(dy) == 16.0

    # A Python loop unrolls when traced and differentiates.
    @jf.function
    def g(x):
        y = x
        for _ in range(3):
            y = y * x
        return jf.gradients(y, x)[0]

    assert float(g(jf.constant(2.0))) == pytest.approx(32.0)


def test_dynamic_batch_dim_gradients(rng):
    dense = jf.nn.Dense(3, activation="tanh", dtype=jf.float64, seed=3)

    def loss(x):
        y = dense(x)
        return jf.reduce_mean(jf.square(y[:, 1:])) + jf.reduce_sum(jf.reduce_max(y, 1) * x[:, 0])

    @jf.function(input_signature=[jf.TensorSpec([None, 4], jf.float64)])
    def f(x):
        return jf.gradients(loss(x), [x, dense.kernel, dense.bias])

    for n in (2, 5):
        x = jf.constant(rng.normal(size=(n, 4)))
        with jf.GradientTape() as tape:
            tape.watch(x)
            l = loss(x)
        expected = tape.gradient(l, [x, dense.kernel, dense.bias])
        for a, b in zip(f(x), expected):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


# ---- finite differences for every registered gradient -------------------------------------
def _pos(rng, shape):
    return rng.uniform(0.5, 2.0, size=shape)


def _any(rng, shape):
    return rng.normal(size=shape)


def _distinct(rng, shape):
    # Well-separated values: max/min/relu/abs/where stay away from their kinks.
    n = int(np.prod(shape))
    v = (rng.permutation(n) - n / 2 + 0.5) * 0.37
    return v.reshape(shape)


W4 = np.array([0.3, -1.1, 2.0, 0.7])


def _b(rng):
    """A random broadcasting pair: x of shape [..] and y of a broadcast-compatible shape."""
    return [((2, 3, 4), (3, 1)), ((4,), (2, 1, 4)), ((1, 3), (2, 1)), ((2, 3), ())][rng.integers(4)]


# op type -> (function of tensors, input maker, shapes(rng)). Each case's function is the op
# itself (times a fixed weight where the op's output sum would hide errors).
CASES = {
    "Identity": (lambda a: jf.identity(a) * W4, _any, lambda r: [(3, 4)]),
    "AddV2": (lambda a, b: (a + b) ** 2, _any, _b),
    "Sub": (lambda a, b: (a - b) ** 2, _any, _b),
    "Mul": (lambda a, b: a * b, _any, _b),
    "RealDiv": (lambda a, b: a / b, _pos, _b),
    "Neg": (lambda a: -a * W4, _any, lambda r: [(2, 4)]),
    "Abs": (lambda a: jf.abs(a) * W4, _distinct, lambda r: [(2, 4)]),
    "Square": (jf.square, _any, lambda r: [(2, 3)]),
    "Relu": (lambda a: jf.nn.relu(a) * W4, _distinct, lambda r: [(3, 4)]),
    "Exp": (jf.exp, _any, lambda r: [(2, 3)]),
    "Log": (jf.log, _pos, lambda r: [(2, 3)]),
    "Tanh": (jf.tanh, _any, lambda r: [(2, 3)]),
    "Sigmoid": (jf.sigmoid, _any, lambda r: [(2, 3)]),
    "Sqrt": (jf.sqrt, _pos, lambda r: [(2, 3)]),
    "Rsqrt": (jf.rsqrt, _pos, lambda r: [(2, 3)]),
    "Sin": (jf.sin, _any, lambda r: [(2, 3)]),
    "Cos": (jf.cos, _any, lambda r: [(2, 3)]),
    "Erf": (jf.erf, _any, lambda r: [(2, 3)]),
    "Pow": (jf.pow, _pos, _b),
    "Maximum": (lambda a, b: jf.maximum(a, b) ** 2, _distinct, lambda r: [(2, 3, 4), (3, 4)]),
    "Minimum": (lambda a, b: jf.minimum(a, b) ** 2, _distinct, lambda r: [(3, 1), (2, 1, 4)]),
    "FloorMod": (lambda a, b: jf.floormod(a, b) * W4, _pos, lambda r: [(3, 4), (4,)]),
    "MatMul": (lambda a, b: jf.matmul(a, b) ** 2, _any, lambda r: [(3, 4), (4, 2)]),
    "BatchMatMulV2": (lambda a, b: jf.matmul(a, b, transpose_b=True) ** 2, _any,
                      lambda r: [(2, 3, 4), (5, 4)]),
    "Sum": (lambda a: jf.reduce_sum(a, [0, 2]) ** 2, _any, lambda r: [(2, 3, 4)]),
    "Mean": (lambda a: jf.reduce_mean(a, 1, keepdims=True) ** 2, _any, lambda r: [(2, 3, 4)]),
    "Max": (lambda a: jf.reduce_max(a, -1) ** 2, _distinct, lambda r: [(3, 4)]),
    "Min": (lambda a: jf.reduce_min(a, [0, 1]) ** 2, _distinct, lambda r: [(2, 3, 2)]),
    "Prod": (lambda a: jf.reduce_prod(a, 1), _any, lambda r: [(3, 4)]),
    "Reshape": (lambda a: jf.reshape(a, [4, 3]) * W4[:3], _any, lambda r: [(3, 4)]),
    "Transpose": (lambda a: jf.transpose(a, [2, 0, 1]) * W4, _any, lambda r: [(3, 4, 2)]),
    "ConcatV2": (lambda a, b: jf.concat([a, b], 1) ** 2, _any, lambda r: [(2, 3), (2, 1)]),
    "Pack": (lambda a, b: jf.stack([a, b], axis=1) * W4[:2, None], _any, lambda r: [(3, 2), (3, 2)]),
    "Split": (lambda a: jf.split(a, 2, axis=1)[1] ** 2, _any, lambda r: [(3, 4)]),
    "SplitV": (lambda a: jf.split(a, [1, 3], axis=1)[1] ** 2, _any, lambda r: [(3, 4)]),
    "Squeeze": (lambda a: jf.squeeze(a, 1) * W4, _any, lambda r: [(3, 1, 4)]),
    "ExpandDims": (lambda a: jf.expand_dims(a, 1) * W4, _any, lambda r: [(3, 4)]),
    "BroadcastTo": (lambda a: jf.broadcast_to(a, [2, 3, 4]) * W4, _any, lambda r: [(3, 1)]),
    "StridedSlice": (lambda a: a[1:, ::-2, None, 2] ** 2, _any, lambda r: [(3, 5, 4)]),
    "SelectV2": (lambda a, b: jf.where(a > 0, a, b) ** 2, _distinct, lambda r: [(3, 4), (4,)]),
    "AddN": (lambda a, b: jf.add_n([a, b, a]) ** 2, _any, lambda r: [(2, 3), (2, 3)]),
    "Softmax": (lambda a: jf.nn.softmax(a) * W4, _any, lambda r: [(3, 4)]),
    "LogSoftmax": (lambda a: jf.nn.log_softmax(a) * W4, _any, lambda r: [(3, 4)]),
    "Fill": (lambda a: jf.fill([2, 3], jf.reduce_sum(a)) ** 2, _any, lambda r: [(2,)]),
}
# Tested on their own: cond replay above, While in test_while_grad.py, Cast below (a float64
# finite difference cannot go through float32).
TESTED_ELSEWHERE = {"If", "While", "Cast", "FunctionCall"}  # FunctionCall: test_tape_function_calls.py
TESTED_ELSEWHERE |= {"CustomGradient"}  # the user's grad_fn: test_autodiff_control.py
TESTED_ELSEWHERE |= {"EagerPyFunc"}  # func's own gradient: test_py_function.py (finite differences)
# A variable's read in a gradient's replay: autodiff/test_state_control_flow_random.py (finite
# differences of every variable's reads through conds and loops that write it).
TESTED_ELSEWHERE |= {"VariableReadInReplay"}


def _inputs(name, rng):
    fn, maker, shapes = CASES[name]
    return fn, [maker(rng, s) for s in shapes(rng)]


def _numeric(fn, xs, eps=1e-6):
    return numeric_grad(lambda *a: np.sum(fn(*map(jf.constant, a)).numpy()), xs, eps)


def _tape(fn, xs):
    ts = [jf.constant(x) for x in xs]
    with jf.GradientTape() as tape:
        tape.watch(ts)
        y = fn(*ts)
    return [g.numpy() for g in tape.gradient(y, ts)]


def test_every_registered_gradient_has_a_finite_difference_case():
    # Here, in another test, or as the op's differential row (test_op_coverage.py checks
    # every row's gradient against finite differences).
    missing = set(jf.autodiff.registered_op_types()) - set(CASES) - TESTED_ELSEWHERE - set(op_rows.ROWS)
    assert not missing, f"gradients without a finite-difference check: {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_finite_differences_float64(name, rng):
    fn, xs = _inputs(name, rng)
    # The case really exercises the op under test.
    assert name in {op.type for op in ops_of(jf.function(fn), *xs)}
    for a, n in zip(_tape(fn, xs), _numeric(fn, xs)):
        assert a.shape == n.shape
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_and_compiled_gradients_equal_eager(name, rng):
    fn, xs = _inputs(name, rng)
    eager = _tape(fn, xs)

    @jf.function
    def symbolic(*ts):
        return jf.gradients(fn(*ts), list(ts))

    @jf.function
    def compiled(*ts):
        with jf.jit_scope():
            y = fn(*ts)
        return jf.gradients(y, list(ts))

    @jf.function
    def traced_tape(*ts):
        with jf.GradientTape() as tape:
            tape.watch(list(ts))
            y = fn(*ts)
        return tape.gradient(y, list(ts))

    for f in (symbolic, compiled, traced_tape):
        for a, b in zip(f(*xs), eager):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-9, atol=1e-12)
    cf = compiled.get_concrete_function(*xs)
    marked = [op for op in cf.graph.get_operations()
              if op.name.startswith("gradients/") and "_XlaCompile" in op.node_def.attr]
    assert marked and all(op.get_attr("_XlaScope") == "jit_scope_0" for op in marked)
    if name not in LINEAR:  # a linear op's gradient is a constant, folded before clustering
        assert cf.clusters


LINEAR = {"BroadcastTo", "ExpandDims", "Identity", "Neg", "Reshape", "Squeeze", "Transpose"}


def test_cast_gradient_float32_to_float64_and_int_none():
    x = jf.constant([1.5, 2.5], jf.float32)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = jf.cast(x, jf.float64) * 3.0
        z = jf.cast(jf.cast(x, jf.int32), jf.float32)
    g = tape.gradient(y, x)
    assert g.dtype == jf.float32
    np.testing.assert_allclose(g.numpy(), [3.0, 3.0])
    assert tape.gradient(z, x) is None


def test_prod_gradient_with_zeros():
    x = jf.constant([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], jf.float64)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = jf.reduce_prod(x, 1)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]])


# The gradient of a source with respect to itself is 1 (TF 2.21).
def test_jf_gradients_of_a_source_with_respect_to_itself():
    v0, v1 = jf.Variable(2.0), jf.Variable(3.0)

    @jf.function
    def f(x):
        return (jf.gradients(x, [x]), jf.gradients(v0, [v0, v1]),
                jf.gradients(v0.read_value(), [v0]))

    (gx,), (g0, g1), (gr,) = f(jf.constant(1.0))
    assert gx.numpy() == 1.0 and g0.numpy() == 1.0 and gr.numpy() == 1.0
    assert g1 is None


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("shapes", [((1, 3), (6, 3)), ((6, 1), (6, 3)), ((1, 1), (6, 3)), ((6, 3), (1, 3)),
                                    ((6, 3), (6, 3)), ((0, 3), (0, 3))])
def test_broadcast_gradients_with_dims_unknown_when_traced(shapes, jit_compile, rng):
    # An operand's dim that the trace does not know may be 1 when it runs: its gradient is then
    # summed over that axis, as TF's BroadcastGradientArgs decides (a cond's gradient with an
    # all-None signature was "Reshape: Input to reshape is a tensor with 18 values, but the
    # requested shape has 3").
    def fn(a, b):
        with jf.GradientTape() as tape:
            tape.watch([a, b])
            y = jf.cond(jf.reduce_sum(b) > 0, lambda: jf.nn.relu(a * b), lambda: jf.maximum(a - b, 0.1))
            loss = jf.reduce_sum(jf.reduce_mean(y, axis=0))
        return tape.gradient(loss, [a, b])

    a, b = (rng.uniform(0.1, 1.0, s).astype(np.float32) for s in shapes)
    spec = jf.TensorSpec([None, None], jf.float32)
    got = jf.function(fn, input_signature=[spec, spec], jit_compile=jit_compile)(a, b)
    want = fn(jf.constant(a), jf.constant(b))  # eagerly every shape is known
    for g, w, x in zip(got, want, (a, b)):
        assert g.shape == x.shape
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_unknown_dims_of_one_shape_root_are_not_summed_at_run_time():
    # h, sigmoid(h) and their product have one run-time shape whatever the trace does not know,
    # so their gradients need no run-time split and sum (TF's grappler folds such
    # BroadcastGradientArgs); a second input may be a row broadcast against h, so it does.
    spec = jf.TensorSpec([None, None], jf.float32)

    def sums(fn):
        graph = jf.function(fn, input_signature=[spec, spec]).get_concrete_function(spec, spec).graph
        return sum(op.type == "Sum" for op in graph.get_operations())

    def same_root(h, r):
        return jf.gradients(jf.reduce_sum(h * jf.sigmoid(h) + h), [h])

    def two_roots(h, r):
        return jf.gradients(jf.reduce_sum(h * jf.sigmoid(h) + r), [h, r])

    assert sums(same_root) == 1  # the forward reduce_sum
    assert sums(two_roots) > 1
    h, r = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]], np.float32), np.array([[1.0, 2.0, 3.0]], np.float32)
    gh, gr = jf.function(two_roots, input_signature=[spec, spec])(h, r)
    s = 1 / (1 + np.exp(-h.astype(np.float64)))
    np.testing.assert_allclose(gh.numpy(), s + h * s * (1 - s), rtol=1e-6)
    np.testing.assert_allclose(gr.numpy(), [[2.0, 2.0, 2.0]])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_cond_gradient_has_its_inputs_shapes(sign):
    # One branch passes a row through, the other broadcasts it against the batch, so the cond's
    # gradient outputs know fewer dims than the row; the sum of the row's two gradients then did
    # not compile under jit_compile=True ("broadcast of a dynamic dim into a static 1").
    def fn(x, row):
        with jf.GradientTape() as tape:
            tape.watch([x, row])
            a, b = jf.cond(jf.reduce_sum(row) > 0, lambda: (x, (row + x) * 0.5), lambda: (jf.sin(row), row))
            loss = jf.reduce_sum(a) + jf.reduce_sum(b * b)
        return tape.gradient(loss, [x, row])

    x = jf.constant(np.array([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]], np.float32))
    row = jf.constant(np.array([[1.0, 2.0, 0.5]], np.float32) * sign)
    got = compiled_runs(fn, x, row)
    for g, w, t in zip(got, fn(x, row), (x, row)):
        assert g.shape == t.shape
        np.testing.assert_allclose(g.numpy(), np.zeros(t.shape) if w is None else w.numpy(), rtol=1e-6)
