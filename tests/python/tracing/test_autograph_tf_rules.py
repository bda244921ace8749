"""AutoGraph's rules as TF 2.21 applies them: the errors it raises (a name read before
assignment, composite names bound in one branch, loops with else clauses, generators, strict
conversion), shape invariants with unknown dims or rank, a global statement inside a converted
branch, chained comparisons of tensors, range reached through a name, and
jf.autograph.to_graph."""
import importlib
import os
import sys
import textwrap

import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf

MODES = ["function", "jit_scope", "jit_compile", "signature"]


run = run_mode  # conftest: "signature" traces once for any shape (every dim None)


@pytest.fixture
def strict():
    """TF's AUTOGRAPH_STRICT_CONVERSION=1 for one test."""
    saved = os.environ.get("AUTOGRAPH_STRICT_CONVERSION")
    os.environ["AUTOGRAPH_STRICT_CONVERSION"] = "1"
    yield
    if saved is None:
        del os.environ["AUTOGRAPH_STRICT_CONVERSION"]
    else:
        os.environ["AUTOGRAPH_STRICT_CONVERSION"] = saved


# ---- names used before assignment ------------------------------------------------------------
def test_a_name_a_python_branch_or_loop_did_not_bind_is_tf_s_unbound_local_error():
    def branch(c, x):
        if c:
            y = x * 2.0
        return y

    def loop(n, x):
        i = 0
        while i < n:
            z = x + 1.0
            i += 1
        return z

    assert jf.function(branch)(True, jf.constant(1.0)).numpy() == 2.0
    with pytest.raises(UnboundLocalError, match="^'y' is used before assignment$"):
        jf.function(branch)(False, jf.constant(1.0))
    with pytest.raises(UnboundLocalError, match="^'z' is used before assignment$"):
        jf.function(loop)(0, jf.constant(1.0))


def test_composite_names_bound_in_one_branch_are_tf_s_errors():
    def main_only(x):
        d = {"a": x}
        if d["a"] > 0.0:
            d["b"] = x * 2.0
        return d

    def else_only_nested(x):
        d = {"a": {"a": x}}
        if d["a"]["a"] > 0.0:
            pass
        else:
            d["a"]["b"] = x * 2.0
        return d

    with pytest.raises(ValueError, match=r"^'d\['b'\]' must also be initialized in the else branch"):
        jf.function(main_only)(jf.constant(1.0))
    with pytest.raises(ValueError, match=r"^'d\['a'\]\['b'\]' must also be initialized in the main branch"):
        jf.function(else_only_nested)(jf.constant(1.0))
    # a Python condition binds it or not, as Python does
    assert set(jf.function(main_only)(1.0)) == {"a", "b"}


# ---- loops with an else clause, generators, strict conversion --------------------------------
def for_else(xs):
    s = xs[0] * 0.0
    for v in xs:
        if v > 2.0:
            break
        s = s + v
    else:
        s = s - 100.0
    return s


def while_else(n):
    s = 0
    while n > 0:
        n -= 1
        s += n
    else:  # noqa: PLW0120 (an else clause without a break is the construct under test)
        s = -s
    return s


def test_loops_with_an_else_clause_run_on_python_values_and_refuse_tensors():
    assert jf.function(for_else)([1.0, 2.0]) == -97.0
    assert jf.function(while_else)(3) == -3
    with pytest.raises(NotImplementedError, match="^for/else statement not yet supported"):
        jf.function(for_else)(jf.constant([1.0, 2.0]))
    with pytest.raises(NotImplementedError, match="^while/else statement not yet supported"):
        jf.function(while_else)(jf.constant(3))


def test_statements_in_a_loop_s_else_clause_are_converted():
    def after_loop(x, n):
        for _ in range(n):
            x = x + 1.0
        else:  # noqa: PLW0120 (an else clause without a break)
            if jf.reduce_sum(x) > 3.0:
                tmp = x * 10.0
                x = tmp
        return x

    assert jf.function(after_loop)(jf.constant(1.0), 3).numpy() == 40.0
    assert jf.function(after_loop)(jf.constant(0.0), 2).numpy() == 2.0


@pytest.mark.skipif(sys.version_info < (3, 10), reason="match statements are Python 3.10 syntax")
def test_statements_in_match_cases_are_converted(tmp_path, monkeypatch):
    # in a module of its own: this file stays Python 3.9 syntax
    (tmp_path / "ag_match_cases.py").write_text(textwrap.dedent("""
        import jitflow as jf

        def cases(x, k):
            match k:
                case 1:
                    if x > 0:
                        tmp = x * 2.0
                        x = tmp
                case _:
                    x = -x
            return x
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    cases = importlib.import_module("ag_match_cases").cases
    assert jf.function(cases)(jf.constant(1.0), 1).numpy() == 2.0
    assert jf.function(cases)(jf.constant(-1.0), 1).numpy() == -1.0
    assert jf.function(cases)(jf.constant(1.0), 2).numpy() == -1.0


def test_strict_conversion_refuses_what_tf_does_not_convert(strict):
    def generator(n):
        for i in range(n):  # noqa: UP028 (a generator's own loop)
            yield i

    with pytest.raises(NotImplementedError, match="generators are not supported"):
        jf.function(generator)(3)
    with pytest.raises(NotImplementedError, match="for/else statement not yet supported"):
        jf.function(for_else)([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="while/else statement not yet supported"):
        jf.function(while_else)(3)


def test_a_generator_runs_as_it_is_with_tf_s_warning():
    def squares(xs):
        for x in xs:
            yield x * x

    def f(x):
        return sum(squares([x, x + 1.0]))

    with pytest.warns(RuntimeWarning, match="AutoGraph could not transform .*squares.* Cause: generators are not "
                      "supported"):
        assert jf.function(f)(jf.constant(1.0)).numpy() == 5.0


def test_a_tensor_break_in_the_last_iteration_of_a_python_loop_is_refused():
    def f(xs):
        s = 0
        for c in xs:
            if jf.greater(c % 2, 0):
                break
            s += c
        return s

    with pytest.raises(NotImplementedError, match="break and return statements which depend on a TF condition"):
        jf.function(f)([1])


# ---- shape invariants -------------------------------------------------------------------------
def grow_rows(n, x):
    m = jf.reshape(x, [1, 1])
    i = 0
    while i < n:
        jf.autograph.experimental.set_loop_options(shape_invariants=[(m, jf.TensorShape([None, 1]))])
        m = jf.concat([m, jf.reshape(x * jf.cast(i, jf.float32), [1, 1])], 0)
        i += 1
    return m


def grow_any(n, x):
    m = jf.fill([2, 2], x)
    for i in jf.range(n):
        jf.autograph.experimental.set_loop_options(shape_invariants=[(m, jf.TensorShape(None))])
        m = jf.pad(m * 2.0, [[1, 1], [1, 1]])
    return m


@pytest.mark.parametrize("mode", ["function", "jit_scope", "signature"])
def test_shape_invariants_with_unknown_dims_and_unknown_rank(mode):
    for n in (0, 1, 3):
        got = run(mode, grow_rows, jf.constant(n), jf.constant(2.0))
        np.testing.assert_allclose(got.numpy(), np.array([[2.0]] + [[2.0 * i] for i in range(n)]))
        got = run(mode, grow_any, jf.constant(n), jf.constant(1.0))
        want = np.full([2, 2], 1.0)
        for _ in range(n):
            want = np.pad(want * 2.0, 1)
        np.testing.assert_allclose(got.numpy(), want)


def test_a_shape_that_breaks_its_invariant_is_tf_s_error():
    def f(n):
        t = jf.constant([1])
        while n > 0:
            jf.autograph.experimental.set_loop_options(shape_invariants=((t, jf.TensorShape([1])),))
            t = jf.range(n)
            n -= 1
        return t

    with pytest.raises(ValueError, match=r"^'t' has shape \(None,\) after one iteration, which does not conform "
                       r"with the shape invariant \(1,\)\."):
        jf.function(f)(jf.constant(3))

    def g():
        s = {"a": jf.constant(0)}
        while jf.constant(True):
            s = jf.constant(7.0)
        return s

    with pytest.raises(TypeError, match="^'s' does not have the same nested structure after one iteration"):
        jf.function(g)()


# ---- global statements, chained comparisons, range through a name, to_graph ------------------
_counter = None


def _bump_global(x):
    y = x * 0.0
    if x > 0:  # noqa: SIM102 (a global statement two converted branches deep)
        if x > 0:
            global _counter
            if _counter is None:
                _counter = 1
            else:
                _counter += 1
            y += _counter
    return y


def test_a_global_statement_inside_a_converted_branch():
    global _counter
    _counter = None
    assert jf.function(_bump_global)(1.0) == 1.0 and _counter == 1
    assert jf.function(_bump_global)(2.0) == 2.0 and _counter == 2
    _counter = None
    assert jf.function(_bump_global)(0.0) == 0.0 and _counter is None


@pytest.mark.parametrize("mode", MODES)
def test_chained_comparisons_of_tensors(mode):
    def between(x, lo, hi):
        return jf.where(lo < jf.reduce_sum(x) <= hi, x * 2.0, x - 1.0)

    for lo, hi in ((0.0, 5.0), (4.0, 5.0), (0.0, 1.0)):
        got = run(mode, between, jf.constant([1.0, 2.0]), jf.constant(lo), jf.constant(hi))
        np.testing.assert_allclose(got.numpy(), between(jf.constant([1.0, 2.0]), jf.constant(lo),
                                                        jf.constant(hi)).numpy())


@pytest.mark.parametrize("mode", MODES)
def test_range_through_a_name_is_a_tensor_loop(mode):
    def f(n, fn, x):
        s = x * 0.0
        for i in fn(n):
            s = s * 10.0 + x * jf.cast(i, jf.float32)
        return s

    for n in (0, 3):
        got = run(mode, lambda n, x: f(n, range, x), jf.constant(n), jf.constant([1.0, 2.0]))
        np.testing.assert_allclose(got.numpy(), f(n, range, jf.constant([1.0, 2.0])).numpy())


def test_to_graph_converts_a_function_for_eager_and_traced_calls():
    def clipped_steps(x):
        steps = 0
        while x > 1.0:
            x = x / 2.0
            steps += 1
        return steps

    g = jf.autograph.to_graph(clipped_steps)
    assert g(jf.constant(10.0)) == 4  # eager values: the Python loop
    assert "ag__.while_stmt" in jf.autograph.to_code(clipped_steps)
    f = jf.function(lambda x: g(x), autograph=False)  # converted already: no AutoGraph needed
    assert f(jf.constant(10.0)).numpy() == 4 and f(jf.constant(0.5)).numpy() == 0
    F = jf.autograph.experimental.Feature

    def checked(x):
        assert x > 0.0, "positive"
        return x

    h = jf.function(jf.autograph.to_graph(checked, experimental_optional_features=F.ASSERT_STATEMENTS),
                    autograph=False)
    with pytest.raises(jf.errors.InvalidArgumentError, match="positive"):
        h(jf.constant(-1.0))
