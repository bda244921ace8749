"""TF's debugging ops in every mode: check_numerics (eager, traced, fused into compiled
clusters that still raise, and its checked gradient), Assert and the assert_* family (eager
checks, run-time Assert ops kept alive in functions, static shape checks at trace time), with
TF 2.21's exception types and messages."""
import re
import warnings

import numpy as np
import pytest

import jitflow as jf

C = jf.constant
MODES = ["eager", "function", "jit_scope", "jit_compile", "none_signature"]
COMPILED = ("jit_scope", "jit_compile", "none_signature")


def _runs():
    return jf.debugging.stats()["cluster_runs"]


def _call(mode, fn, *args):
    """fn(*args) in a mode: eagerly, traced, its ops in a jit_scope, jit_compile=True, or
    jit_compile=True with an all-None input_signature."""
    if mode == "eager":
        return fn(*args)
    if mode == "jit_scope":
        def body(*a):
            with jf.jit_scope():
                return fn(*a)
        return jf.function(body)(*args)
    kw = {"jit_compile": True} if mode in ("jit_compile", "none_signature") else {}
    if mode == "none_signature":
        kw["input_signature"] = [jf.TensorSpec([None] * a.ndim, a.dtype) for a in args]
    return jf.function(fn, **kw)(*args)


# ---- check_numerics ------------------------------------------------------------------------
def _scaled_check(x):
    # An elementwise producer and consumer: the check fuses between them when compiled.
    return jf.debugging.check_numerics(x * 2.0, "scaled x") + 1.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("values,what", [([1.0, np.nan, 3.0], "NaN"), ([1.0, -np.inf, 3.0], "Inf"),
                                         ([np.inf, np.nan, 3.0], "Inf and NaN")])
def test_check_numerics_raises_tf_message(mode, dtype, values, what):
    before = _runs()
    with pytest.raises(jf.errors.InvalidArgumentError, match=f"scaled x : Tensor had {what} values"):
        _call(mode, _scaled_check, C(np.array(values, dtype)))
    if mode in COMPILED:
        assert _runs() > before, "the compiled cluster did not run"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [3, 1, 0])
def test_check_numerics_finite_is_identity(mode, dtype, n):
    x = np.linspace(-2, 5, n).astype(dtype)
    before = _runs()
    got = _call(mode, _scaled_check, C(x)).numpy()
    np.testing.assert_array_equal(got, (x.astype(np.float64) * 2 + 1).astype(dtype))
    if mode in COMPILED and n:
        assert _runs() > before, "the compiled cluster did not run"


def test_check_numerics_fuses_into_its_cluster():
    @jf.function
    def f(x):
        with jf.jit_scope():
            return jf.exp(jf.debugging.check_numerics(x * 2.0, "m")) + 1.0
    x = C([1.0, 2.0])
    clusters = f.get_concrete_function(x).clusters
    assert len(clusters) == 1 and {"Mul", "CheckNumerics", "Exp", "AddV2"} <= set(clusters[0].ops), clusters
    before = _runs()
    np.testing.assert_allclose(f(x).numpy(), np.exp([2.0, 4.0]) + 1, rtol=1e-6)
    assert _runs() == before + 1
    with pytest.raises(jf.errors.InvalidArgumentError, match="m : Tensor had Inf values"):
        f(C([1.0, np.inf]))


@pytest.mark.parametrize("mode", ["function", "jit_scope", "jit_compile"])
def test_unconsumed_check_numerics_still_checks(mode):
    def fn(x):
        jf.debugging.check_numerics(x * 3.0, "unused")  # as TF's automatic control deps run it
        return x - 1.0
    np.testing.assert_array_equal(_call(mode, fn, C([1.0, 2.0])).numpy(), [0.0, 1.0])
    before = _runs()
    with pytest.raises(jf.errors.InvalidArgumentError, match="unused : Tensor had NaN values"):
        _call(mode, fn, C([1.0, np.nan]))
    if mode != "function":
        assert _runs() > before


@pytest.mark.parametrize("mode", ["jit_scope", "jit_compile"])
def test_check_numerics_checks_elements_its_consumer_skips(mode):
    # The consumer reads element 0 only; the check still covers every element.
    fn = lambda x: jf.debugging.check_numerics(x + 1.0, "sliced")[0] * 2.0
    assert _call(mode, fn, C([1.0, 2.0])).numpy() == 4.0
    with pytest.raises(jf.errors.InvalidArgumentError, match="sliced : Tensor had Inf values"):
        _call(mode, fn, C([1.0, np.inf]))


@pytest.mark.parametrize("mode", ["jit_scope", "jit_compile"])
def test_several_failing_checks_in_one_cluster_report_one_of_them(mode):
    # Each check's kinds merge into one status word that names one check: never a mix.
    def fn(x, y, a, b):
        p = jf.debugging.check_numerics(x * 2.0, "first")
        q = jf.debugging.check_numerics(y * 2.0, "second")
        return p + q, a // b
    x = np.full(4096, np.nan, np.float32)
    x[::2] = np.inf
    y = np.full(4096, np.inf, np.float32)
    a, b = np.ones(4096, np.int32), np.zeros(4096, np.int32)
    for _ in range(3):
        with pytest.raises(jf.errors.InvalidArgumentError) as e:
            _call(mode, fn, C(x), C(y), C(a), C(b))
        # (A division check's plain store may land between two elements' merges.)
        assert re.search(r"^(first : Tensor had (Inf and NaN|Inf|NaN) values|second : Tensor had Inf values|"
                         r"FloorDiv: Integer division by zero)", str(e.value)), str(e.value)


def test_check_numerics_of_a_constant_fails_when_run_not_folded():
    f = jf.function(lambda: jf.debugging.check_numerics(C([1.0, np.nan]), "const"))
    with pytest.raises(jf.errors.InvalidArgumentError, match="const : Tensor had NaN values"):
        f()


def test_check_numerics_refuses_non_floats():
    for v in ([1, 2], [True]):
        with pytest.raises((TypeError, jf.errors.InvalidArgumentError), match="CheckNumerics"):
            jf.debugging.check_numerics(C(v), "m")
    with pytest.raises(TypeError):
        jf.debugging.check_numerics(C([1.0]), 3)


_GRAD_MSG = "Not a number \\(NaN\\) or infinity \\(Inf\\) values detected in gradient. b'g' : Tensor had"


@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope"])
def test_check_numerics_gradient_passes_through_and_is_checked(mode):
    def grad(x, w):
        with jf.GradientTape() as t:
            t.watch(x)
            y = jf.reduce_sum(jf.debugging.check_numerics(x * x, "g") * w)
        return t.gradient(y, x)
    x, w = np.array([1.5, -2.0]), np.array([3.0, 0.5])
    got = _call(mode, grad, C(x), C(w)).numpy()
    np.testing.assert_allclose(got, 2 * x * w, rtol=1e-12)  # d/dx sum(x^2 w), exactly
    with pytest.raises(jf.errors.InvalidArgumentError, match=_GRAD_MSG + " Inf values"):
        _call(mode, grad, C(x), C(np.array([np.inf, 1.0])))
    with pytest.raises(jf.errors.InvalidArgumentError, match=_GRAD_MSG + " NaN values"):
        _call(mode, grad, C(x), C(np.array([1.0, np.nan])))


# ---- Assert --------------------------------------------------------------------------------
def test_assert_eager_message_and_return():
    assert jf.debugging.Assert(C(True), [C([1, 2])]) is None
    assert jf.debugging.Assert(True, ["never shown"]) is None
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        jf.debugging.Assert(C(False), [C([1, 2, 3, 4, 5]), "hello", C(1.5)], summarize=2)
    assert str(e.value) == ("Expected 'jf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized data: "
                            "1, 2, ...\nb'hello'\n1.5")
    with pytest.raises(jf.errors.InvalidArgumentError, match="Summarized data: 0, 1, 2, ...$"):
        jf.debugging.Assert(False, [jf.range(10)])
    with pytest.raises(TypeError, match="bool"):
        jf.debugging.Assert(C(1), [1])


def _assert_fn(summarize=None):
    def fn(c, a):
        jf.debugging.Assert(c, [a, "s", C([True, False]), C(1.5), C(1e-7), C(123456789.0),
                                C(0.1, jf.float64), C(np.nan), C(-np.inf)], summarize=summarize)
        return a
    return jf.function(fn)


@pytest.mark.parametrize("a,summarize,shown", [
    (np.arange(6).reshape(2, 3), None, "[[0 1 2]...]"),
    (np.arange(12).reshape(2, 3, 2), 4, "[[[0 1][2 3]]...]"),
    (np.arange(10), None, "[0 1 2...]"),
    (np.zeros([2, 0], np.float32), None, "[]"),
    (np.array(7), None, "[7]"),
])
def test_assert_traced_message_is_tfs(a, summarize, shown):
    # TF 2.21's graph Assert kernel prints these exact strings.
    f = _assert_fn(summarize)
    np.testing.assert_array_equal(f(C(True), C(a)).numpy(), a)
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        f(C(False), C(a))
    assert str(e.value).startswith(f"assertion failed: {shown} [s] [1 0] [1.5] [1e-07] [123456792] [0.1] "
                                   "[nan] [-inf]")


def test_assert_fails_at_run_time_not_trace_time():
    @jf.function
    def f(x):
        jf.debugging.Assert(jf.reduce_min(x) > 0, [x])
        return x * 2
    x = C([1.0, 2.0])
    np.testing.assert_array_equal(f(x).numpy(), [2.0, 4.0])
    traces = jf.debugging.stats()["traces"]
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"assertion failed: \[-1 2\]"):
        f(C([-1.0, 2.0]))
    assert jf.debugging.stats()["traces"] == traces  # the same graph: the op failed when it ran


def test_unconsumed_assert_in_a_function_fires():
    calls = []

    @jf.function
    def f(x):
        jf.debugging.Assert(x[0] < 5.0, ["x[0] is too big:", x])  # its result is never used
        calls.append(1)
        return x + 1.0
    np.testing.assert_array_equal(f(C([1.0])).numpy(), [2.0])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"assertion failed: \[x\[0\] is too big:\] \[7\]"):
        f(C([7.0]))
    assert len(calls) == 1


def test_assert_string_data_is_c_escaped_in_a_function():
    # TF's graph Assert shows string data C-escaped: quotes and backslashes get a backslash,
    # control and non-ASCII bytes an octal escape (TF 2.21 prints [y[\'a\']]).
    @jf.function
    def f(x):
        jf.debugging.Assert(x > 0, ["y['a']", 'tab\there "q" \\ \u00e9', x])
        return x
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        f(jf.constant(-1))
    assert str(e.value).startswith(
        r"""assertion failed: [y[\'a\']] [tab\there \"q\" \\ \303\251] [-1]""")


def test_assert_under_control_dependencies():
    @jf.function
    def f(x):
        with jf.control_dependencies([jf.debugging.assert_positive(x)]):
            return jf.identity(x)
    np.testing.assert_array_equal(f(C([1.0])).numpy(), [1.0])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Condition x > 0 did not hold element-wise"):
        f(C([-1.0]))


def test_assert_in_jit_scope_runs_beside_the_cluster():
    @jf.function
    def f(x):
        with jf.jit_scope():
            y = jf.exp(x) * 2.0
            jf.debugging.assert_less(y, 10.0)
            return y + 1.0
    x = C([0.0, 0.5])
    before = _runs()
    np.testing.assert_allclose(f(x).numpy(), np.exp([0.0, 0.5]) * 2 + 1, rtol=1e-6)
    assert _runs() == before + 1
    rows = jf.explain(f, x).by_op()
    assert rows["Assert"].status == "eager" and rows["Exp"].status == "compiled"
    assert rows["Less"].status == "compiled" and rows["AddV2"].cluster == rows["Exp"].cluster
    before = _runs()
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Condition x < y did not hold"):
        f(C([3.0, 0.5]))
    assert _runs() == before + 1  # the cluster ran; the Assert beside it raised, no fallback


def test_assert_under_jit_compile_is_dropped_as_tf_xla_does():
    @jf.function(jit_compile=True)
    def f(x):
        jf.debugging.Assert(x > 0, [x])
        jf.debugging.assert_equal(x, 1.0)
        return x + 1
    before = _runs()
    with pytest.warns(RuntimeWarning, match="does not check its assertion .*TF's XLA compiles Assert to nothing") as seen:
        out = f(C(-1.0))
    # Raised in C++ while the function is made, it points at the call here, not into jitflow.
    assert {w.filename for w in seen if "assertion" in str(w.message)} == {__file__}
    assert out.numpy() == 0.0  # TF 2.21 prints 0.0 here too
    assert _runs() == before + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(C(5.0)).numpy() == 6.0  # same trace: warned once


# ---- binary and sign assertions ------------------------------------------------------------
_BINARY = [  # name, symbol, numpy reference, y that holds, y that fails (as offsets from x)
    ("assert_equal", "==", np.equal, 0, 1), ("assert_none_equal", "!=", np.not_equal, 1, 0),
    ("assert_less", "<", np.less, 1, 0), ("assert_less_equal", "<=", np.less_equal, 0, -1),
    ("assert_greater", ">", np.greater, -1, 0), ("assert_greater_equal", ">=", np.greater_equal, 0, 1),
]


@pytest.mark.parametrize("name,sym,ref,good,bad", _BINARY)
@pytest.mark.parametrize("mode", MODES)
def test_binary_asserts_pass_and_fail(name, sym, ref, good, bad, mode):
    fn = getattr(jf.debugging, name)
    x = np.array([-2.0, 0.0, 1.5, 3.0], np.float32)
    good_y, bad_y = x + good, x.copy()
    bad_y[2] += bad  # one element breaks the condition
    assert ref(x, good_y).all() and not ref(x, bad_y).all()

    def check(a, b):
        fn(a, b)
        return a * 1.0
    before = _runs()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(_call(mode, check, C(x), C(good_y)).numpy(), x)
    # TF's XLA compiles Assert to nothing; jitflow says so when it drops one.
    assert any("does not check its assertion" in str(w.message) for w in seen) == (
        mode in ("jit_compile", "none_signature"))
    if mode in COMPILED:
        assert _runs() > before
    if mode in ("jit_compile", "none_signature"):
        with pytest.warns(RuntimeWarning, match="does not check its assertion"):
            np.testing.assert_array_equal(_call(mode, check, C(x), C(bad_y)).numpy(), x)  # as TF's XLA
        return
    pattern = f"Condition x {sym} y did not hold" if mode == "eager" else \
        f"assertion failed: \\[Condition x {sym} y did not hold element-wise:\\]"
    with pytest.raises(jf.errors.InvalidArgumentError, match=pattern):
        _call(mode, check, C(x), C(bad_y))


def test_assert_equal_eager_message_is_tfs():
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        jf.debugging.assert_equal(C([1, 2, 3]), C([1, 5, 3]), message="mm", summarize=2)
    assert str(e.value) == ("mm\nCondition x == y did not hold.\nIndices of first 1 different values:\n[[1]]\n"
                            "Corresponding x values:\n[2]\nCorresponding y values:\n[5]\n"
                            "First 2 elements of x:\n[1 2]\nFirst 2 elements of y:\n[1 5]")
    assert jf.debugging.assert_equal(C([[1, 1]]), C(1)) is None  # broadcasting
    assert jf.debugging.assert_equal(jf.zeros([0]), jf.ones([0])) is None  # nothing to compare
    with pytest.raises(jf.errors.InvalidArgumentError, match="Incompatible shapes"):
        jf.debugging.assert_equal(C([1, 2]), C([1, 2, 3]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="int32"):
        jf.debugging.assert_equal(C([1, 2]), C([1.0, 2.0]))


def test_assert_equal_traced_message_and_static_check():
    @jf.function
    def f(a, b):
        jf.debugging.assert_equal(a, b, message="fm")
        return a + 1
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        f(C([1.0, 2.0]), C([1.0, 3.0]))
    assert str(e.value).startswith("assertion failed: [fm] [Condition x == y did not hold element-wise:] "
                                   "[x (a:0) = ] [1 2] [y (b:0) = ] [1 3]")

    @jf.function
    def g(a):
        jf.debugging.assert_equal(jf.shape(a), [3])  # both known when traced: TF checks now
        return a
    with pytest.raises(jf.errors.InvalidArgumentError, match="Condition x == y did not hold element-wise:\nx "
                                                             r"\(Shape:0\) = \n\[2\]"):
        g(C([1.0, 2.0]))


@pytest.mark.parametrize("name,sym,bad,good", [
    ("assert_non_negative", ">=", [1, -5], [0, 3]), ("assert_positive", ">", [1, 0], [1, 3]),
    ("assert_negative", "<", [-1, 0], [-1, -3]), ("assert_non_positive", "<=", [0, 2], [0, -3]),
])
@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope"])
def test_sign_asserts(name, sym, bad, good, mode):
    fn = getattr(jf.debugging, name)

    def check(x):
        fn(x)
        return x + 1
    np.testing.assert_array_equal(_call(mode, check, C(good)).numpy(), np.array(good) + 1)
    with pytest.raises(jf.errors.InvalidArgumentError, match=f"Condition x {sym} 0 did not hold element-wise"):
        _call(mode, check, C(bad))


def test_sign_assert_eager_message_is_tfs():
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        jf.debugging.assert_non_negative(C([1, -5]))
    assert str(e.value) == "\nCondition x >= 0 did not hold element-wise:\nx (shape=(2,) dtype=int32) = \n['1', '-5']"
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        jf.debugging.assert_positive(C([1.0, 0.0]), message="hey")
    assert str(e.value) == ("hey.  \nCondition x > 0 did not hold element-wise:\nx (shape=(2,) dtype=float32) = "
                            "\n['1.0', '0.0']")


# ---- assert_near ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,ok,bad", [("float32", 5e-7, 5e-6), ("float64", 1e-15, 1e-14)])
@pytest.mark.parametrize("mode", ["eager", "function", "jit_scope"])
def test_assert_near_default_tolerances(dtype, ok, bad, mode):
    # TF's defaults: rtol = atol = 10 eps of the dtype (1.19e-6, 2.22e-15); |x - y| < atol + rtol |y|.
    x = np.array([1.0, 2.0], dtype)

    def check(a, b):
        jf.debugging.assert_near(a, b)
        return a
    _call(mode, check, C(x), C((x * (1 + ok)).astype(dtype)))
    with pytest.raises(jf.errors.InvalidArgumentError, match="x and y not equal to tolerance"):
        _call(mode, check, C(x), C((x * (1 + bad)).astype(dtype)))
    with pytest.raises(jf.errors.InvalidArgumentError):
        _call(mode, check, C(x), C(np.array([1.0, np.nan], dtype)))


def test_assert_near_tolerances_and_ints():
    jf.debugging.assert_near(C([1.0]), C([1.1]), rtol=0.2, atol=0.0)
    with pytest.raises(jf.errors.InvalidArgumentError):
        jf.debugging.assert_near(C([1.0]), C([1.1]), rtol=0.05, atol=0.0)
    with pytest.raises(jf.errors.InvalidArgumentError):  # strict: |x - y| < tol, and tol = 0
        jf.debugging.assert_near(C([1.0]), C([1.0]), rtol=0.0, atol=0.0)
    with pytest.raises(ValueError, match="not inexact"):
        jf.debugging.assert_near(C([1]), C([1]))


# ---- assert_rank and assert_shapes ---------------------------------------------------------
def test_assert_rank_is_static():
    assert jf.debugging.assert_rank(C([1, 2]), 1) is None
    with pytest.raises(ValueError, match=r"^mm.  Tensor  must have rank 2.  Received rank 1, shape \(2,\)$"):
        jf.debugging.assert_rank(C([1, 2]), 2, message="mm")
    with pytest.raises(ValueError, match="Rank must be a scalar"):
        jf.debugging.assert_rank(C([1, 2]), C([2]))

    @jf.function(input_signature=[jf.TensorSpec([None], jf.float32)])
    def f(a):
        jf.debugging.assert_rank(a, 2)
        return a
    with pytest.raises(ValueError, match=r"Tensor a:0 must have rank 2.  Received rank 1, shape \(None,\)"):
        f(C([1.0]))


def test_assert_shapes_static_rules():
    ok = jf.debugging.assert_shapes
    assert ok([(C(np.zeros([1, 2])), ("N", "D")), (C(np.zeros([1, 3])), ("N", 3))]) is None
    ok([(C(1.0), ()), (C([1.0]), ())])  # a scalar and () both count as one dim of size 1
    ok([(C(np.zeros([2, 3, 4])), (..., 4)), (C(np.zeros([4])), ("*", "D"))])
    ok([(C(np.zeros([2, 3])), (None, ".")), (C(np.zeros([5, 3])), ("N", 3))])
    with pytest.raises(ValueError, match=r"^Specified by tensor shape=\(1, 2\) dtype=int32 dimension 1.  Tensor "
                                         r"shape=\(3,\) dtype=int32 dimension 0 must have size 2.  Received size 3"):
        ok([(C([[1, 2]]), ("N", "D")), (C([1, 2, 3]), ("D",))])
    with pytest.raises(ValueError, match=r"^Specified explicitly.  Tensor shape=\(1, 2\) dtype=int32 dimension 1 "
                                         "must have size 3.  Received size 2"):
        ok([(C([[1, 2]]), ("N", 3))])
    with pytest.raises(ValueError, match=r"must have rank in \(0, 1\).  Received rank 2"):
        ok([(C([[1, 2]]), ("N",))])
    with pytest.raises(ValueError, match="must have rank 3"):
        ok([(C([[1, 2]]), ("A", "B", "C"))])
    with pytest.raises(ValueError, match="must have rank at least 2"):
        ok([(C([1, 2]), (..., "A", "B"))])
    with pytest.raises(ValueError, match=r"^hey.  Specified explicitly"):
        ok([(C([1, 2]), (3,))], message="hey")


def test_assert_shapes_traced_static_and_dynamic():
    @jf.function
    def static(a, b):
        jf.debugging.assert_shapes([(a, ("N",)), (b, ("N",))])
        return a
    with pytest.raises(ValueError, match="Specified by tensor a:0 dimension 0.  Tensor b:0 dimension 0 must "
                                         "have size 2.  Received size 1"):
        static(C([1.0, 2.0]), C([1.0]))

    @jf.function(input_signature=[jf.TensorSpec([None], jf.float32), jf.TensorSpec([None], jf.float32)])
    def dynamic(a, b):
        jf.debugging.assert_shapes([(a, ("N",)), (b, ("N",)), (a, (2,))])
        return a + b
    np.testing.assert_array_equal(dynamic(C([1.0, 2.0]), C([3.0, 4.0])).numpy(), [4.0, 6.0])
    with pytest.raises(jf.errors.InvalidArgumentError) as e:
        dynamic(C([1.0, 2.0]), C([1.0]))
    assert str(e.value).startswith("assertion failed: [] [Specified by tensor a:0 dimension 0] [Tensor b:0 "
                                   "dimension] [0] [must have size] [2] [Received shape: ] [1]")
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"\[Specified explicitly.\]"):
        dynamic(C([1.0, 2.0, 3.0]), C([1.0, 2.0, 3.0]))


# ---- names ---------------------------------------------------------------------------------
def test_top_level_aliases_are_tfs():
    # TF 2 has these at the top level as well as under tf.debugging.
    for n in ("Assert", "assert_equal", "assert_less", "assert_greater", "assert_rank"):
        assert getattr(jf, n) is getattr(jf.debugging, n), n
    for n in ("check_numerics", "assert_near", "assert_shapes", "assert_less_equal", "assert_greater_equal",
              "assert_non_negative", "assert_positive", "assert_negative", "assert_non_positive",
              "assert_none_equal"):
        assert callable(getattr(jf.debugging, n)), n


def test_static_assertions_match_tf():
    x = C([1, 2])
    assert jf.debugging.assert_rank_at_least(C([[1, 2]]), 1) is None
    with pytest.raises(ValueError, match=r"^Tensor  must have rank at least 2.  Received rank 1, shape \(2,\)$"):
        jf.debugging.assert_rank_at_least(x, 2)
    assert jf.debugging.assert_rank_in(x, [1, 2]) is None
    with pytest.raises(ValueError, match=r"^mm.  Tensor  must have rank in \(0, 2\).  Received rank 1"):
        jf.debugging.assert_rank_in(x, (0, 2), message="mm")
    assert jf.debugging.assert_scalar(C(1)).numpy() == 1
    with pytest.raises(ValueError, match=r"^mm.  Expected scalar shape, saw shape: \(2,\).$"):
        jf.debugging.assert_scalar(x, message="mm")
    assert jf.debugging.assert_type(x, jf.int32) is None
    with pytest.raises(TypeError, match="^tensor must be of type tf.float32; got tf.int32$"):
        jf.debugging.assert_type(x, jf.float32)
    assert jf.debugging.assert_integer(x) is None
    with pytest.raises(TypeError, match="Expected \"x\" to be integer type.  Found: tensor of dtype <dtype: 'float32'>"):
        jf.debugging.assert_integer(C([1.0]))


@pytest.mark.parametrize("mode", MODES)
def test_assert_all_finite_is_check_numerics(mode):
    fn = lambda x: jf.debugging.assert_all_finite(x * 2.0, "af") + 1.0
    np.testing.assert_array_equal(_call(mode, fn, C([1.0, 2.0])).numpy(), [3.0, 5.0])
    with pytest.raises(jf.errors.InvalidArgumentError, match="af : Tensor had NaN values"):
        _call(mode, fn, C([1.0, np.nan]))


def test_control_dependencies_on_an_assert_order_a_variable_write():
    # TF returns the traced Assert's op: what runs under control_dependencies on it waits for
    # the check, so a failing check leaves the variable unwritten.
    v = jf.Variable(0.0)
    ops = []

    @jf.function
    def f(x):
        op = jf.debugging.assert_positive(x)
        ops.append(op)
        with jf.control_dependencies([op]):
            v.assign(x[0] * 10.0)
        return x
    f(C([2.0]))
    assert v.numpy() == 20.0 and ops[0].type == "Assert"
    with pytest.raises(jf.errors.InvalidArgumentError, match="Condition x > 0 did not hold"):
        f(C([-1.0]))
    assert v.numpy() == 20.0  # the write waited for the failing check
    graph = f.get_concrete_function(C([2.0])).graph
    write = next(op for op in graph.get_operations() if op.type == "AssignVariableOp")
    assert "Assert" in [c.type for c in write.control_inputs]
    assert jf.debugging.assert_positive(C([1.0])) is None  # eagerly: None, as TF


def test_checks_inside_cond_and_while_bodies_fire():
    @jf.function
    def f(x):
        def taken():
            jf.debugging.check_numerics(x, "in branch")  # unconsumed, inside a branch graph
            return x + 1.0
        return jf.cond(x[0] > 0, taken, lambda: x - 1.0)
    np.testing.assert_array_equal(f(C([1.0, 2.0])).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(f(C([-1.0, np.nan])).numpy()[:1], [-2.0])  # other branch
    with pytest.raises(jf.errors.InvalidArgumentError, match="in branch : Tensor had NaN values"):
        f(C([1.0, np.nan]))

    @jf.function
    def g(x):
        def body(i, s):
            jf.debugging.assert_less(s, 100.0)
            return i + 1, s * 3.0
        return jf.while_loop(lambda i, s: i < 4, body, [0, x])[1]
    assert g(C(1.0)).numpy() == 81.0
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"\[x \(loop_var_1:0\) = \] \[135\]"):
        g(C(5.0))
