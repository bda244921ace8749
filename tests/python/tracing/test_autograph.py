"""AutoGraph: Python control flow on tensors inside jf.function, each construct traced once
and compared with the same Python run eagerly; TF 2.21's error texts; gradients."""
import inspect
import linecache

import numpy as np
import pytest
from conftest import collatz_steps, numeric_grad

import jitflow as jf


def _line(fn, text):
    """The file line of the first line of fn's source containing text."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


def _same_as_eager(py_fn, calls):
    """py_fn traced by jf.function once, run on each argument tuple of calls, equals py_fn run
    eagerly on the same arguments; returns the function."""
    f = jf.function(py_fn)
    for args in calls:
        got, want = f(*args), py_fn(*args)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            w = w if isinstance(w, jf.Tensor) else jf.constant(w)  # eagerly, `s += 1` may stay a Python int
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    assert f.experimental_get_tracing_count() == 1
    return f


def _graph_ops(f, *args):
    return f.get_concrete_function(*args).pretty_printed_graph()


# ---- if ------------------------------------------------------------------------------------
def sign_and_scale(x):
    if jf.reduce_sum(x) > 10.0:
        y = x * 0.5
        z = y + 1.0
    elif jf.reduce_sum(x) < 0.0:
        z = -x
    else:
        z = x * 2.0
    return z


def test_if_elif_else_on_a_tensor_is_one_cond():
    f = _same_as_eager(sign_and_scale, [(jf.constant([8.0, 9.0]),), (jf.constant([-1.0, -2.0]),),
                                        (jf.constant([1.0, 2.0]),)])
    assert "If" in _graph_ops(f, jf.constant([1.0, 2.0]))
    # y is bound in the main branch only but not read after the if: not an output (TF's rule)
    np.testing.assert_allclose(f(jf.constant([20.0, 0.0])).numpy(), [11.0, 1.0])


def test_python_condition_runs_as_written():
    def f(x, training):
        if training:
            note = "training"  # a Python value: only possible because the if is not a cond
            x = x * 2.0
        else:
            note = "inference"
        return x, note == "training"

    g = jf.function(f)
    out, flag = g(jf.constant(3.0), True)
    assert out.numpy() == 6.0 and bool(flag)
    assert "If" not in _graph_ops(g, jf.constant(3.0), True)
    out, flag = g(jf.constant(3.0), False)
    assert out.numpy() == 3.0 and not bool(flag)
    assert g.experimental_get_tracing_count() == 2  # a Python argument is part of the key


def test_bool_ops_and_conditional_expressions():
    def f(x, y):
        a = (x > 0) and (y > 0)
        b = (x > 0) or (y > 0)
        c = not (x > y)
        d = x + 1.0 if x > y else y - 1.0
        return jf.cast(a, jf.int32), jf.cast(b, jf.int32), jf.cast(c, jf.int32), d

    _same_as_eager(f, [(jf.constant(1.0), jf.constant(-2.0)), (jf.constant(-1.0), jf.constant(2.0)),
                       (jf.constant(3.0), jf.constant(4.0))])


def test_and_is_lazy_on_tensors():
    def f(x, i):  # x[i] is only evaluated where i is in range, as with TF's lazy and
        if i < 3 and x[jf.minimum(i, 2)] > 0.0:
            return x[jf.minimum(i, 2)]
        return jf.constant(-1.0)

    _same_as_eager(f, [(jf.constant([1.0, -2.0, 3.0]), jf.constant(0)),
                       (jf.constant([1.0, -2.0, 3.0]), jf.constant(1)),
                       (jf.constant([1.0, -2.0, 3.0]), jf.constant(5))])


# ---- while -----------------------------------------------------------------------------------
# collatz_steps is in conftest.py: compile/test_compiled_control_flow.py compiles it whole.
def test_while_with_a_data_dependent_trip_count():
    f = _same_as_eager(collatz_steps, [(jf.constant(n),) for n in (1, 6, 7, 27)])
    assert f(jf.constant(27)).numpy() == 111
    assert "While" in _graph_ops(f, jf.constant(6))


def test_while_on_a_python_condition_is_unrolled():
    def f(x):
        i = 0
        while i < 3:  # a Python int: runs three times at trace time
            x = x * 2.0
            i += 1
        return x

    g = _same_as_eager(f, [(jf.constant(1.5),)])
    assert "While" not in _graph_ops(g, jf.constant(1.5))


def nested_break(m, limit):
    total = jf.constant(0.0)
    count = 0
    for row in m:
        for v in row:
            if v > limit:
                break
            total += v
            count += 1
        if total > 100.0:
            break
    return total, count


def test_nested_loops_with_break():
    m = jf.constant([[1.0, 5.0, 2.0], [2.0, 0.5, 9.0], [60.0, 50.0, 1.0], [3.0, 3.0, 3.0]])
    f = _same_as_eager(nested_break, [(m, jf.constant(4.0)), (m, jf.constant(100.0)), (m, jf.constant(0.0))])
    total, count = f(m, jf.constant(4.0))
    assert (total.numpy(), count.numpy()) == (1.0 + 2.0 + 0.5 + 3.0 * 3, 6)
    total, count = f(m, jf.constant(100.0))  # the outer break after the third row
    assert (total.numpy(), count.numpy()) == (1 + 5 + 2 + 2 + 0.5 + 9 + 60 + 50 + 1, 9)


def test_continue_in_a_while_loop():
    def f(n):
        i, s = 0, 0
        while i < n:
            i += 1
            if i % 3 == 0:
                continue
            s += i
        return s

    g = _same_as_eager(f, [(jf.constant(n),) for n in (0, 1, 10)])
    assert g(jf.constant(10)).numpy() == sum(i for i in range(1, 11) if i % 3)


# ---- for -----------------------------------------------------------------------------------
def test_for_over_a_tensors_rows():
    def f(m):
        acc = jf.zeros([3])
        for row in m:
            acc = acc * 0.5 + row
        return acc

    m = np.arange(12, dtype=np.float32).reshape(4, 3)
    g = _same_as_eager(f, [(jf.constant(m),)])
    want = np.zeros(3)
    for row in m:
        want = want * 0.5 + row
    np.testing.assert_allclose(g(jf.constant(m)).numpy(), want, rtol=1e-6)
    assert "While" in _graph_ops(g, jf.constant(m))
    # the row count is read at run time: a None first dimension traces once
    h = jf.function(f, input_signature=[jf.TensorSpec([None, 3])])
    np.testing.assert_allclose(h(jf.constant(m)).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(h(jf.constant(m[:1])).numpy(), m[0], rtol=1e-6)
    assert h.experimental_get_tracing_count() == 1


def test_for_over_jf_range_and_range_of_a_tensor():
    def f(n):
        s = 0
        for i in jf.range(n):
            if i % 2 == 0:
                continue
            s += i * i
        t = 0
        for j in range(n):
            t += j
        return s, t, i  # the loop variable keeps its last value, as in Python

    g = _same_as_eager(f, [(jf.constant(n),) for n in (1, 2, 7)])
    s, t, i = g(jf.constant(7))
    assert (s.numpy(), t.numpy(), i.numpy()) == (1 + 9 + 25, 21, 6)


def test_for_over_jf_range_with_any_bounds_never_materializes_the_range():
    def f(a, b, d):
        items = jf.zeros([0], a.dtype)
        for i in jf.range(a, b, d):
            jf.autograph.experimental.set_loop_options(shape_invariants=[(items, jf.TensorShape([None]))])
            items = jf.concat([items, jf.reshape(i, [1])], 0)
        return items

    g = jf.function(f)
    for a, b, d in ((0, 5, 1), (5, 0, -2), (3, 3, 1), (0, 5, -1), (0.0, 1.0, 0.25), (1.0, -0.5, -0.5)):
        args = [jf.constant(v) for v in (a, b, d)]
        np.testing.assert_array_equal(g(*args).numpy(), np.arange(a, b, d))
    cf = g.get_concrete_function(*[jf.constant(v) for v in (0, 5, 1)])
    assert "Range" not in [n.op for n in cf._cf.optimized_graph.nodes()]  # traced, then unused


def test_for_over_a_python_iterable_is_unrolled():
    def f(x):
        for k in [1.0, 2.0, 3.0]:
            x = x * k
        for i in range(2):
            x = x + i
        return x

    g = _same_as_eager(f, [(jf.constant(1.0),)])
    assert g(jf.constant(1.0)).numpy() == 7.0
    assert "While" not in _graph_ops(g, jf.constant(1.0))


def test_tensor_break_in_a_python_loop_is_tf_s_error():
    def f(x):
        for k in range(4):
            if x > 10.0:
                break
            x = x * 3.0
        return x

    _raises_at(NotImplementedError, "break and return statements which depend on a TF condition are not "
               "supported in Python for loops. Did you intend to make it a TF loop?", f, "for k in", jf.constant(1.0))

    def g(x):
        done = False
        while not done:  # a Python condition that becomes a tensor after one iteration
            x = x * 2.0
            done = x > 5.0
        return x

    _raises_at(NotImplementedError, "The condition of while loop started as non-Tensor, then changed to Tensor.",
               g, "while not done", jf.constant(1.0))


def test_error_condition_not_a_scalar_bool():
    def f(x):
        if x:
            x = x + 1.0
        return x

    _raises_at(ValueError, "condition of if statement expected to be `tf.bool` scalar, got <jf.Tensor 'x:0' "
               "shape=() dtype=float32>; to use as boolean Tensor, use `tf.cast`; to check for None, use "
               "`is not None`", f, "if x:", jf.constant(1.0))

    def g(x):
        while x > 0:
            x = x - 1.0
        return x

    with pytest.raises(ValueError, match="^condition of while loop expected to be `tf.bool` scalar, got .*"
                       r"shape=\(2,\) dtype=bool>; to check for None, use `is not None`"):
        jf.function(g)(jf.constant([1.0, 2.0]))


# ---- return ----------------------------------------------------------------------------------
def test_early_return_in_branches_and_unrolled_loops():
    def f(x):
        if x > 0:
            return x * 2.0
        elif x < -5.0:
            return -x
        return x + 100.0

    _same_as_eager(f, [(jf.constant(v),) for v in (3.0, -7.0, -1.0)])

    def g(x):
        for i in range(5):
            if i == 3:
                return x
            x = x + 1.0
        return x * 0.0

    _same_as_eager(g, [(jf.constant(1.0),)])


# ---- TF's errors, at the user's line -----------------------------------------------------
def _raises_at(exc, text, fn, line_text, *args):
    with pytest.raises(exc) as info:
        jf.function(fn)(*args)
    msg = str(info.value)
    assert msg.startswith(text), msg
    line = _line(fn, line_text)
    # the message names the user's file and line, and so does the traceback (never generated code)
    assert f"{__file__}:{line}" in msg, msg
    assert any(str(e.path) == __file__ and e.lineno + 1 == line for e in info.traceback)


def test_error_name_bound_in_one_branch_only():
    def f(x):
        if x > 0:
            y = x
        return y

    _raises_at(ValueError, "'y' must also be initialized in the else branch", f, "if x > 0", jf.constant(1.0))

    def g(x):
        if x > 0:
            pass
        else:
            y = x
        return y

    _raises_at(ValueError, "'y' must also be initialized in the main branch", g, "if x > 0", jf.constant(1.0))


def test_error_branches_of_different_dtypes_and_none():
    def f(x):
        if x > 0:
            y = 1
        else:
            y = 2.0
        return y

    _raises_at(TypeError, "'y' has dtype int32 in the main branch, but dtype float32 in the else branch",
               f, "if x > 0", jf.constant(1.0))

    def g(x):
        if x > 0:
            y = x
        else:
            y = None
        return y

    _raises_at(ValueError, "'y' is None at the end of the else branch.", g, "if x > 0", jf.constant(1.0))


def test_error_return_in_one_branch_only():
    def f(x):
        if x > 0:
            return x

    _raises_at(ValueError, "the else branch must also have a return statement.", f, "if x > 0",
               jf.constant(1.0))


def test_error_loop_variable_changes_dtype_or_shape():
    def f(n):
        i, s = 0, 0
        while i < n:
            s = jf.cast(i, jf.float32)
            i += 1
        return s

    _raises_at(TypeError, "'s' has dtype int32 before the loop, but dtype float32 after one iteration",
               f, "while i < n", jf.constant(3))

    def g(n):
        s = jf.zeros([1])
        for i in jf.range(n):
            s = jf.zeros([2])
        return s

    _raises_at(ValueError, "'s' has shape (1,) before the loop, but shape (2,) after one iteration. Use "
               "tf.autograph.experimental.set_loop_options to set shape invariants.", g, "for i in", jf.constant(3))


def test_error_loop_variable_undefined_before_the_loop_and_return_in_a_loop():
    def f(n):
        i = 0
        while i < n:
            z = None
            i += 1
        return z

    _raises_at(ValueError, "'z' must be defined before the loop", f, "while i < n", jf.constant(3))

    def g(n):
        i = 0
        while i < n:
            if i > 3:
                return i
            i += 1
        return i

    _raises_at(NotImplementedError, "a return statement cannot be placed inside this TensorFlow loop",
               g, "while i < n", jf.constant(3))


def test_error_inside_a_branch_points_at_the_user_line():
    def f(x):
        if x > 0:
            y = jf.reshape(x, [5])  # fails while the branch is traced
        else:
            y = x
        return y

    with pytest.raises(Exception) as info:
        jf.function(f)(jf.constant(1.0))
    assert any(str(e.path) == __file__ and e.lineno + 1 == _line(f, "jf.reshape") for e in info.traceback)


# ---- gradients, compilation -------------------------------------------------------------------
def test_gradient_through_a_converted_loop():
    def f(x, w):
        i = 0
        while i < 4:  # a Python bound: unrolled; the tensor-bounded loop is below
            x = jf.tanh(x * w) + x
            i += 1
        return x

    @jf.function
    def loss(x, w, n):
        for _ in jf.range(n):
            if jf.reduce_sum(x) > 0.0:
                x = jf.tanh(x * w) + x
            else:
                x = x * w
        return jf.reduce_sum(f(x, w) * x)

    def ref(x, w):
        for _ in range(3):
            x = np.tanh(x * w) + x if x.sum() > 0 else x * w
        y = x
        for _ in range(4):
            y = np.tanh(y * w) + y
        return float(np.sum(y * x))

    for x0 in ([0.3, -0.2], [-0.5, 0.1]):
        x, w = jf.constant(np.array(x0, np.float64)), jf.constant(np.array([0.7, -1.1], np.float64))
        with jf.GradientTape() as tape:
            tape.watch([x, w])
            y = loss(x, w, jf.constant(3))
        gx, gw = tape.gradient(y, [x, w])
        assert y.numpy() == pytest.approx(ref(x.numpy(), w.numpy()), rel=1e-12)
        nx, nw = numeric_grad(ref, [x.numpy(), w.numpy()])
        np.testing.assert_allclose(gx.numpy(), nx, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gw.numpy(), nw, rtol=1e-6, atol=1e-8)
    assert loss.experimental_get_tracing_count() == 1


def _recurrence(x, n):
    i = 0
    while i < n:
        x = x * 0.5 + 1.0
        i += 1
    return x


def test_converted_loop_inside_jit_scope():
    @jf.function
    def f(x, n):
        with jf.jit_scope():
            x = _recurrence(x, n)  # a user function called from converted code is converted too
            y = x * 2.0 + 1.0
        return y

    before = jf.debugging.stats()["cluster_runs"]
    out = f(jf.ones([4]), jf.constant(3))
    np.testing.assert_allclose(out.numpy(), [4.75] * 4)
    # the ops after the loop run compiled, and so does the loop
    assert jf.debugging.stats()["cluster_runs"] > before
    assert "While" in _graph_ops(f, jf.ones([4]), jf.constant(3))


def test_converted_loop_under_jit_compile_compiles():
    f = jf.function(_recurrence, jit_compile=True)
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_allclose(f(jf.ones([4]), jf.constant(3)).numpy(), [1.875] * 4)
    # the cond once on the executor, then the step (body, then cond) runs all 3 iterations
    # in one compiled run
    assert jf.debugging.stats()["cluster_runs"] - before == 2
    assert "While" in _graph_ops(f, jf.ones([4]), jf.constant(3))
    # a Python trip count unrolls: no While, and the function compiles
    g = jf.function(_recurrence, jit_compile=True)
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_allclose(g(jf.ones([2]), 3).numpy(), [1.875, 1.875])
    assert jf.debugging.stats()["cluster_runs"] > before


# ---- conversion mechanics ----------------------------------------------------------------------
def test_to_code_and_conversion_is_cached():
    code = jf.autograph.to_code(collatz_steps)
    assert "ag__.while_stmt" in code and "ag__.if_stmt" in code and "def tf__collatz_steps(n)" in code  # TF's name
    f = jf.function(collatz_steps)
    assert jf.autograph.to_code(f) == code
    from jitflow.autograph import conversion
    assert conversion.convert(collatz_steps) is conversion.convert(collatz_steps)


def test_do_not_convert_and_autograph_false():
    @jf.autograph.experimental.do_not_convert
    def helper(x):
        if x > 0:
            return x
        return -x

    def f(x):
        return helper(x)

    with pytest.raises(TypeError, match="jf.cond"):  # helper runs as written: a symbolic bool
        jf.function(f)(jf.constant(1.0))
    with pytest.raises(TypeError, match="jf.cond"):
        jf.function(sign_and_scale, autograph=False)(jf.constant([1.0]))


class _Model:
    def __init__(self, k):
        self.k = k

    def step(self, x):
        if x > 0:
            x = x * self.k
        return x


class _Sub(_Model):
    @jf.function
    def __call__(self, x):
        while x < 100.0:
            x = super().step(x) + 1.0
        return x


def test_closures_methods_and_super():
    k = jf.constant(3.0)

    def f(x):
        if x > 0:  # k is read through the closure, live: a later rebinding is seen
            return x * k
        return x

    g = jf.function(f)
    assert g(jf.constant(2.0)).numpy() == 6.0
    m = _Sub(2.0)
    x = 1.0
    while x < 100.0:
        x = (x * 2.0 if x > 0 else x) + 1.0
    assert m(jf.constant(1.0)).numpy() == x


def test_name_first_bound_in_a_loop_and_read_after_it():
    def f(n):  # TF infers z's type from one trace of the body; it enters the loop as zeros
        i = jf.constant(0.0)
        while i < n:
            z = i * 2.0
            i = i + 1.0
        return z

    _same_as_eager(f, [(jf.constant(3.0),), (jf.constant(1.0),)])


def _twice(fn):
    import functools

    @functools.wraps(fn)
    def wrapper(x):
        return fn(fn(x))
    return wrapper


@_twice
def _halve_if_big(x):
    if x > 10.0:
        x = x / 2.0
    return x


def test_user_decorators_globals_and_nonlocal_are_kept():
    # the wrapper is converted from its own source (not the __wrapped__ function's), and the
    # function it calls is converted when called
    _same_as_eager(_halve_if_big, [(jf.constant(50.0),), (jf.constant(15.0),), (jf.constant(3.0),)])
    assert jf.function(_halve_if_big)(jf.constant(50.0)).numpy() == 12.5

    seen = []

    def f(x):
        count = 0

        def bump():
            nonlocal count
            count += 1
        for _ in range(3):
            bump()
        seen.append(count)
        if x > 0:
            x = x + count
        return x

    assert jf.function(f)(jf.constant(1.0)).numpy() == 4.0
    assert seen == [3]


def test_set_loop_options_shape_invariants_and_maximum_iterations():
    def grow(n):
        v = jf.zeros([1])
        for _ in jf.range(n):
            jf.autograph.experimental.set_loop_options(shape_invariants=[(v, [None])], maximum_iterations=2)
            v = jf.concat([v, [1.0]], 0)
        return v

    f = jf.function(grow)
    np.testing.assert_array_equal(f(jf.constant(5)).numpy(), [0.0, 1.0, 1.0])  # TF 2.21: [0. 1. 1.]
    np.testing.assert_array_equal(f(jf.constant(1)).numpy(), [0.0, 1.0])
    assert f.experimental_get_tracing_count() == 1
    assert "set_loop_options" not in jf.autograph.to_code(grow)

    def grow_while(n):
        v, i = jf.zeros([1]), 0
        while i < n:
            jf.autograph.experimental.set_loop_options(shape_invariants=[(v, jf.TensorSpec([None]).shape)])
            v = jf.concat([v, [1.0]], 0)
            i += 1
        return v

    np.testing.assert_array_equal(jf.function(grow_while)(jf.constant(3)).numpy(), [0.0, 1.0, 1.0, 1.0])

    def bad(n):
        v = jf.zeros([1])
        for _ in jf.range(n):
            jf.autograph.experimental.set_loop_options(shape_invariants=[(v, [2])])
            v = jf.concat([v, [1.0]], 0)
        return v

    _raises_at(ValueError, "'v' has shape (1,) before the loop, which does not conform with the shape invariant (2,).",
               bad, "for _ in", jf.constant(3))
    assert jf.autograph.experimental.set_loop_options(maximum_iterations=3) is None  # outside a loop: no effect


def test_print_and_assert_are_left_as_written_as_in_tf_2_21(capsys):
    # TF 2.21's defaults: print is Python's (runs while tracing), and assert is not converted
    # (Feature.ASSERT_STATEMENTS is off): a tensor assert is a symbolic bool
    def f(x):
        print("tracing", x.shape)
        if x > 0:
            x = x + 1.0
        return x

    g = jf.function(f)
    g(jf.constant(1.0))
    g(jf.constant(2.0))
    assert capsys.readouterr().out.count("tracing") == 1

    def h(x):
        assert x > 0, "x must be positive"
        return x

    with pytest.raises(TypeError, match="symbolic jf.Tensor as a Python bool"):
        jf.function(h)(jf.constant(1.0))


class _Layer:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        while jf.reduce_sum(x) < 10.0:  # converted when the converted caller calls the object
            x = x * self.w
        return x


def test_a_user_objects_call_is_converted():
    layer = _Layer(2.0)

    def f(x):
        return layer(x) + 1.0

    _same_as_eager(f, [(jf.constant([1.0, 0.5]),), (jf.constant([20.0, 1.0]),)])
    assert "While" in _graph_ops(jf.function(f), jf.constant([1.0, 0.5]))


def test_a_function_without_source_runs_as_is_with_tf_s_warning():
    scope = {"jf": jf}
    exec("def no_source(x):\n    return x * 2.0 if isinstance(x, jf.Tensor) else x\n", scope)  # noqa: S102  (no file)
    with pytest.warns(RuntimeWarning, match="AutoGraph could not transform <function no_source") as w:
        out = jf.function(scope["no_source"])(jf.constant(2.0))
    assert out.numpy() == 4.0
    # At the line that called the function, not at jitflow's tracing code.
    assert w[0].filename == __file__ and "jf.function(scope[" in linecache.getline(w[0].filename, w[0].lineno)


def test_super_in_a_class_defined_inside_a_converted_function():
    def f(x):
        class A:
            def g(self, y):
                return y + 1.0

        class B(A):
            def g(self, y):
                return super().g(y) * 2.0  # B.g's own self, not f's first argument
        if x > 0:
            x = B().g(x)
        return x

    _same_as_eager(f, [(jf.constant(1.0),), (jf.constant(-1.0),)])


# ---- lambdas and optional features ------------------------------------------------------------
_abs = lambda x: x if x > 0 else -x  # a module-level lambda, converted when called
_pick = lambda a, b=2.0, *rest, scale, **kw: (a if a > b else b) * scale  # noqa: FURB136 (a tensor cond)


def _keep(fn, _name):
    return fn


def test_lambdas_are_converted_as_tf_2_21_converts_them():
    # TF 2.21 printed `lambda: 0 9` for this program (h(-3), h(3))
    def h(x):
        return _abs(x) + (lambda y: y * 2 if y > 1 else y)(x)  # noqa: PLC3002 (TF's example)

    g = _same_as_eager(h, [(jf.constant(v),) for v in (-3, 3, 1)])
    assert int(g(jf.constant(-3))) == 0 and int(g(jf.constant(3))) == 9

    def two_on_a_line(x):
        f1, f2 = (lambda v: v if v > 0 else v * 0), (lambda v: v * 3 if v < 0 else v)
        return f1(x) + f2(x)

    _same_as_eager(two_on_a_line, [(jf.constant(v),) for v in (-2.0, 2.0)])

    def parameters(x):
        return _pick(x, scale=3.0) + _pick(x, 5.0, 1.0, scale=1.0, extra=0)

    _same_as_eager(parameters, [(jf.constant(v),) for v in (1.0, 7.0)])

    k = 10.0
    scaled = _keep(  # a lambda over several lines, inside a call, with a closure
        lambda r:
            r * k if jf.reduce_sum(r) > 0
            else -r,
        "scaled")

    def closure_and_multiline(x):
        return scaled(x) + 1.0

    _same_as_eager(closure_and_multiline, [(jf.constant([1.0, 2.0]),), (jf.constant([-3.0, 1.0]),)])
    assert "ag__.if_exp(x > 0" in jf.autograph.to_code(_abs)


def test_feature_options_convert_assert_and_print(capfd):
    F = jf.autograph.experimental.Feature

    @jf.function(experimental_autograph_options=(F.ASSERT_STATEMENTS, F.BUILTIN_FUNCTIONS))
    def f(x):
        print("value", x)
        assert x > 0, "x must be positive"
        return x + 1

    # TF 2.21 with the same options printed `py print 1` at run time and raised
    # InvalidArgumentError "assertion failed: [x must be positive]" for -1
    assert int(f(jf.constant(1))) == 2
    assert int(f(jf.constant(5))) == 6
    assert capfd.readouterr().out.split() == ["value", "1", "value", "5"]
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"assertion failed: \[x must be positive\]") as info:
        f(jf.constant(-1))
    assert f"{__file__}:{_line(f.python_function, 'assert x > 0')}" in str(info.value)
    assert f.experimental_get_tracing_count() == 1

    @jf.function(experimental_autograph_options=F.ALL)
    def g(x, n):
        print("python values print while tracing", n)
        assert n > 0, "n"
        return x * n

    assert int(g(jf.constant(2), 3)) == 6
    assert "python values print while tracing 3" in capfd.readouterr().out
    with pytest.raises(AssertionError, match="^n$"):
        g(jf.constant(2), 0)
    with pytest.raises(TypeError, match="Feature values"):
        jf.function(lambda x: x, experimental_autograph_options="ALL")
