"""jf.py_function / jf.numpy_function: eager calls, EagerPyFunc / PyFunc nodes in traced
functions (run-time calls, output checks, TF 2.21's error types), gradients against finite
differences, next to jit_scope clusters, refused by jit_compile=True, the callables' lifetime,
threads, and no crash at interpreter exit (child processes)."""
import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest
from conftest import numeric_grad, run_in_threads

import jitflow as jf
from jitflow import _C

pyfn_module = sys.modules["jitflow.tracing.py_function"]


def _modes():
    return ["eager", "function", "signature"]


def _run(mode, fn, *args):
    if mode == "eager":
        return fn(*args)
    if mode == "function":
        return jf.function(fn)(*args)
    sig = [jf.TensorSpec([None] * len(a.shape), a.dtype) for a in args]
    return jf.function(fn, input_signature=sig)(*args)


@pytest.mark.parametrize("mode", _modes())
@pytest.mark.parametrize("shape", [(2, 3), (1,), (0,), ()])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_py_function_values_every_mode_and_dtype(mode, shape, dtype, rng):
    a = (rng.standard_normal(shape) * 5).astype(dtype)
    seen = []

    def body(t):
        seen.append(type(t))
        return jf.logical_not(t) if dtype == np.bool_ else t + t

    def f(x):
        return jf.py_function(body, [x], jf.as_dtype(dtype))
    out = _run(mode, f, jf.constant(a))
    want = np.logical_not(a) if dtype == np.bool_ else a + a
    assert out.dtype == jf.as_dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), want)
    assert seen and all(t is jf.Tensor for t in seen)  # the callable gets eager tensors


@pytest.mark.parametrize("mode", _modes())
def test_numpy_function_gets_arrays(mode):
    seen = []

    def body(a, b):
        seen.append((type(a), a.dtype, type(b)))
        a += 1  # the arrays are the callable's own (writable) copies
        return a * b, np.int32(7)

    def f(x, y):
        return jf.numpy_function(body, [x, y], [jf.float64, jf.TensorSpec([], jf.int32)])
    x = jf.constant([1.0, 2.0], jf.float64)
    out = _run(mode, f, x, jf.constant([3.0, 4.0], jf.float64))
    np.testing.assert_array_equal(out[0].numpy(), [6.0, 12.0])
    assert out[1].dtype == jf.int32 and int(out[1]) == 7
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    assert seen[-1] == (np.ndarray, np.float64, np.ndarray)


def test_calls_happen_when_the_function_runs_not_when_traced():
    calls = []

    @jf.function
    def f(x):
        return jf.py_function(lambda t: calls.append(1) or t * 2.0, [x], jf.float32)
    for _ in range(3):
        np.testing.assert_array_equal(f(jf.constant([1.0])).numpy(), [2.0])
    assert len(calls) == 3 and f.experimental_get_tracing_count() == 1


def test_tout_forms():
    x = jf.constant([1.0, 2.0])
    single = jf.py_function(lambda t: t, [x], jf.float32)
    assert isinstance(single, jf.Tensor)
    listed = jf.py_function(lambda t: t, [x], [jf.float32])
    assert isinstance(listed, list) and len(listed) == 1
    assert jf.py_function(lambda t: None, [x], []) == []
    with pytest.raises(TypeError, match="Missing required argument: 'Tout'"):
        jf.py_function(lambda t: t, [x])

    @jf.py_function(Tout=jf.float32)
    def doubled(t):
        return t * 2.0
    np.testing.assert_array_equal(doubled(x).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(jf.py_function(lambda t: 3.0, [x], jf.float32).numpy(), 3.0)


def test_static_shapes_in_a_trace():
    shapes = {}

    @jf.function
    def f(x):
        y = jf.py_function(lambda t: t, [x], jf.float32)
        z = jf.py_function(lambda t: t[:, :1], [x], jf.TensorSpec([None, 1], jf.float32))
        shapes["y"], shapes["z"] = tuple(y.shape), tuple(z.shape)
        return y, z
    y, z = f(jf.ones([2, 3]))
    assert shapes == {"y": (None, None), "z": (None, 1)}
    assert tuple(z.shape) == (2, 1) and tuple(y.shape) == (2, 3)


def test_output_checks_in_a_trace():
    @jf.function
    def wrong_dtype(x):
        return jf.numpy_function(lambda a: a.astype(np.float64), [x], jf.float32)
    with pytest.raises(jf.errors.InvalidArgumentError, match="0-th value returned by numpy_function is "
                                                             "float64, but expects float32"):
        wrong_dtype(jf.ones([2]))

    @jf.function
    def wrong_count(x):
        return jf.numpy_function(lambda a: (a, a), [x], jf.float32)
    with pytest.raises(jf.errors.InvalidArgumentError, match="numpy_function returns 2 values, but "
                                                             "expects to see 1 values."):
        wrong_count(jf.ones([2]))

    @jf.function
    def wrong_rank(x):
        return jf.py_function(lambda t: jf.reduce_sum(t), [x], jf.float32)
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"has shape \[\], but its static shape is "
                                                             r".*declare the output with Tout=jf.TensorSpec"):
        wrong_rank(jf.ones([2]))

    @jf.function
    def declared(x):
        return jf.py_function(lambda t: t, [x], jf.TensorSpec([3], jf.float32))
    with pytest.raises(jf.errors.InvalidArgumentError, match="0-th value returned by py_function has shape"):
        declared(jf.ones([2]))

    @jf.function
    def py_wrong_dtype(x):
        return jf.py_function(lambda t: t, [x], jf.int32)
    with pytest.raises(jf.errors.InvalidArgumentError, match="ValueError: Tensor conversion requested dtype "
                                                             "int32 for Tensor with dtype float32"):
        py_wrong_dtype(jf.ones([2]))


def _raiser(exc):
    def f(t):
        raise exc
    return f


# TF 2.21: the error each Python exception becomes when raised inside a traced py_function.
_TF_ERRORS = [
    (ValueError("v"), jf.errors.InvalidArgumentError),
    (TypeError("t"), jf.errors.InvalidArgumentError),
    (ZeroDivisionError("z"), jf.errors.UnknownError),
    (IndexError("i"), jf.errors.UnknownError),
    (KeyError("k"), jf.errors.UnknownError),
    (RuntimeError("r"), jf.errors.UnknownError),
    (StopIteration(), jf.errors.OutOfRangeError),
    (NotImplementedError("n"), jf.errors.UnimplementedError),
    (MemoryError("m"), jf.errors.ResourceExhaustedError),
    (jf.errors.InvalidArgumentError("x"), jf.errors.UnknownError),
]


@pytest.mark.parametrize("exc,cls", _TF_ERRORS, ids=[type(e).__name__ for e, _ in _TF_ERRORS])
def test_python_exceptions_become_tf_errors(exc, cls):
    @jf.function
    def f(x):
        return jf.py_function(_raiser(exc), [x], jf.float32)
    with pytest.raises(cls) as e:
        f(jf.ones([2]))
    assert type(e.value) is cls
    assert str(e.value).startswith(f"{type(exc).__name__}: ")
    assert "EagerPyFunc" in str(e.value)  # the node, and where it was created
    with pytest.raises(cls):  # eager py_function maps them alike (TF runs the op eagerly too)
        jf.py_function(_raiser(exc), [jf.ones([2])], jf.float32)


def test_eager_numpy_function_lets_exceptions_through():
    with pytest.raises(ZeroDivisionError):  # TF 2.21: a plain call eagerly
        jf.numpy_function(lambda a: 1 / 0, [jf.ones([2])], jf.float32)

    @jf.function
    def f(x):
        return jf.numpy_function(lambda a: 1 / 0, [x], jf.float32)
    with pytest.raises(jf.errors.UnknownError, match="ZeroDivisionError: division by zero"):
        f(jf.ones([2]))


def test_gradient_eager_and_traced_against_finite_differences(rng):
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal(3)
    want = numeric_grad(lambda p, q: np.sum(np.sin(p) * q * q), [a, b])

    def body(p, q):
        return jf.sin(p) * q * q

    def grads(x, y):
        with jf.GradientTape() as tape:
            tape.watch([x, y])
            z = jf.py_function(body, [x, y], jf.float64)
            s = jf.reduce_sum(z)
        return tape.gradient(s, [x, y])
    x, y = jf.constant(a), jf.constant(b)
    for fn in (grads, jf.function(grads)):
        gx, gy = fn(x, y)
        np.testing.assert_allclose(gx.numpy(), want[0], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gy.numpy(), want[1], rtol=1e-6, atol=1e-8)


def test_gradient_through_a_function_call_and_numpy_function_has_none():
    f = jf.function(lambda x: jf.py_function(lambda t: t * t * t, [x], jf.float32))
    x = jf.Variable([1.0, 2.0])
    with jf.GradientTape() as tape:
        y = jf.reduce_sum(f(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [3.0, 12.0])

    @jf.function
    def g(x):
        with jf.GradientTape() as t:
            t.watch(x)
            y = jf.numpy_function(lambda a: a * a, [x], jf.float32)
        return t.gradient(y, x)
    assert g(jf.constant([1.0, 2.0])) is None  # TF 2.21: None (PyFunc has no gradient)


def test_next_to_jit_scope_clusters_and_explained():
    @jf.function
    def f(x):
        with jf.xla.experimental.jit_scope():
            a = jf.exp(x * 2.0 + 1.0)
            b = jf.py_function(lambda t: t - 1.0, [a], jf.float32)
            return jf.tanh(b * 3.0) + 1.0
    x = jf.constant([0.1, -0.2, 0.3])
    before = jf.debugging.stats()["cluster_runs"]
    out = f(x)
    assert jf.debugging.stats()["cluster_runs"] > before
    xv = x.numpy().astype(np.float64)
    np.testing.assert_allclose(out.numpy(), np.tanh((np.exp(xv * 2 + 1) - 1) * 3) + 1, rtol=1e-5)
    text = str(jf.explain(f, x))
    row = [line for line in text.splitlines() if "EagerPyFunc" in line]
    assert row and "eager" in row[0] and "stateful" in row[0], text
    assert "compiled" in text


@pytest.mark.parametrize("which", ["py_function", "numpy_function"])
def test_jit_compile_refuses_naming_the_op(which):
    call = getattr(jf, which)

    @jf.function(jit_compile=True)
    def f(x):
        return call(lambda t: t * 2, [x], jf.float32)
    op = "EagerPyFunc" if which == "py_function" else "PyFunc"
    with pytest.raises(jf.errors.InvalidArgumentError, match=f"op '{op}' \\({op}\\).*cannot be compiled"):
        f(jf.ones([2]))


def test_callables_die_with_their_functions():
    gc.collect()
    base = pyfn_module.live_callbacks()

    def make(body):
        @jf.function
        def f(x):
            return jf.py_function(body, [x], jf.float32)
        return f

    def body(t):
        return t + 1.0
    ref = weakref.ref(body)
    f = make(body)
    del body
    np.testing.assert_array_equal(f(jf.constant([1.0])).numpy(), [2.0])
    np.testing.assert_array_equal(f(jf.constant([1.0, 2.0])).numpy(), [2.0, 3.0])  # a second trace
    assert pyfn_module.live_callbacks() == base + 2
    gc.collect()
    assert ref() is not None
    del f
    gc.collect()
    assert ref() is None  # nothing kept the callable once its functions were gone
    assert pyfn_module.live_callbacks() == base


def test_bad_node_attrs_are_refused():
    x = jf.constant([1.0])
    good = {"Tout": ["float32"], "out_dims": [1, -1]}
    with pytest.raises(jf.errors.InvalidArgumentError, match="token attr"):
        _C.execute_n("EagerPyFunc", [x], dict(good, token=5))
    with pytest.raises(jf.errors.InvalidArgumentError, match="unknown dtype 'float8'"):
        _C.execute_n("EagerPyFunc", [x], {"token": jf.constant(1, jf.int64), "Tout": ["float8"],
                                          "out_dims": [1, -1]})
    with pytest.raises(jf.errors.InvalidArgumentError, match="out_dims"):
        _C.execute_n("PyFunc", [x], {"token": jf.constant(1, jf.int64), "Tout": ["float32"],
                                     "out_dims": [3, 1]})
    with pytest.raises(jf.errors.UnknownError, match="no longer exists"):
        _C.execute_n("PyFunc", [x], dict(good, token=jf.constant(10**15, jf.int64)))


_THREADS = textwrap.dedent("""
    import threading, numpy as np, jitflow as jf
    @jf.function
    def f(x):
        y = jf.py_function(lambda t: t * 2.0, [x * 1.0], jf.float32)
        return jf.numpy_function(lambda a: a + np.float32(1), [y], jf.float32)
    errors = []
    def worker(k):
        try:
            for i in range(25):
                x = jf.constant(np.full((300, 300), float(k * 100 + i), np.float32))
                out = f(x).numpy()
                assert (out == 2 * (k * 100 + i) + 1).all()
        except Exception as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    [t.start() for t in ts]
    [t.join(60) for t in ts]
    print("alive", sum(t.is_alive() for t in ts), "errors", errors, "traces", f.experimental_get_tracing_count())
""")


def test_four_threads_no_deadlock():
    """Large inputs make the function run its graph without the GIL; each py_function then
    takes the GIL back. A deadlock would hang: the child process has a timeout."""
    r = subprocess.run([sys.executable, "-c", _THREADS], capture_output=True, text=True, timeout=240, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "alive 0 errors []" in r.stdout, r.stdout + r.stderr[-2000:]


def test_in_process_threads_share_one_trace():
    @jf.function
    def f(x):
        return jf.py_function(lambda t: t + 1.0, [x], jf.float32)
    f(jf.constant([0.0]))
    results = {}

    def worker(k):
        results[k] = [float(f(jf.constant([float(k)]))[0]) for _ in range(10)]
    run_in_threads(worker, 4)
    assert results == {k: [k + 1.0] * 10 for k in range(4)}
    assert f.experimental_get_tracing_count() == 1


_EXIT_CASES = {
    # a traced function holding a py_function alive in a global at interpreter exit
    "global_function": """
        @jf.function
        def f(x):
            return jf.py_function(lambda t: t + 1.0, [x], jf.float32)
        KEEP = f
        print(float(f(jf.constant([1.0]))[0]))
    """,
    # a function in a reference cycle with its own callable, collected at exit
    "cycle": """
        class Holder:
            pass
        h = Holder()
        h.fn = jf.function(lambda x: jf.py_function(lambda t: (h, t)[1] * 3.0, [x], jf.float32))
        print(float(h.fn(jf.constant([1.0]))[0]))
    """,
}


@pytest.mark.parametrize("case", sorted(_EXIT_CASES))
def test_no_crash_at_exit(case):
    code = "import jitflow as jf\n" + textwrap.dedent(_EXIT_CASES[case])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, f"child died with {r.returncode}: {r.stderr[-2000:]}"
    assert r.stdout.split()[0] in ("2.0", "3.0"), r.stdout
