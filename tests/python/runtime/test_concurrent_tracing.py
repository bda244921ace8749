"""Concurrent first calls of a jf.function trace it once per signature (TF's per-function
lock): the other callers wait for that trace and take it, so a Python side effect runs once,
no retracing warning fires, and variables created on the first call are created once."""
import threading
import time
import warnings

import numpy as np
import pytest
from conftest import run_in_threads

import jitflow as jf

THREADS = 8


def _at_once(worker):
    """worker(k) on THREADS threads released together."""
    gate = threading.Barrier(THREADS)

    def go(k):
        gate.wait()
        worker(k)
    run_in_threads(go, THREADS)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_concurrent_first_calls_trace_once(jit_compile):
    effects = []

    def body(x):
        effects.append(1)  # a Python side effect: runs once per trace
        time.sleep(0.02)   # a slow trace, so the other threads arrive while it runs
        return x * 2.0 + 1.0
    f = jf.function(body, jit_compile=jit_compile)
    out = [None] * THREADS
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a retracing warning would fail the test
        _at_once(lambda k: out.__setitem__(k, float(f(jf.constant(float(k))))))
    assert f.experimental_get_tracing_count() == 1
    assert len(effects) == 1
    assert out == [2.0 * k + 1.0 for k in range(THREADS)]


def test_concurrent_first_calls_of_a_function_creating_variables():
    class Scale:
        def __init__(self):
            self.v = None
            self.created = 0

        @jf.function
        def __call__(self, x):
            if self.v is None:
                time.sleep(0.02)
                self.v = jf.Variable(jf.fill([3], 2.0))
                self.created += 1
            return self.v * x

    m = Scale()
    errors, out = [], [None] * THREADS

    def call(k):
        try:
            out[k] = m(jf.constant(float(k))).numpy().tolist()
        except Exception as e:  # noqa: BLE001 - any refusal is the bug
            errors.append(repr(e))
    _at_once(call)
    assert errors == []
    assert m.created == 1
    assert out == [[2.0 * k] * 3 for k in range(THREADS)]


def test_concurrent_get_concrete_function_traces_once():
    f = jf.function(lambda x: x + 1.0)
    got = [None] * THREADS
    _at_once(lambda k: got.__setitem__(k, f.get_concrete_function(jf.TensorSpec([None], jf.float32))))
    assert f.experimental_get_tracing_count() == 1
    assert all(g is got[0] for g in got)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_many_threads_many_calls_mixed_shapes(jit_compile):
    f = jf.function(lambda x, y: jf.reduce_sum(x * y + 1.0, axis=-1), jit_compile=jit_compile)
    shapes = [(3,), (2, 5), (4, 1, 7)]
    inputs = [(np.arange(np.prod(s), dtype=np.float32).reshape(s) / 10, np.full(s, 0.5, np.float32))
              for s in shapes]
    tensors = [(jf.constant(a), jf.constant(b)) for a, b in inputs]
    want = [np.sum(a.astype(np.float64) * b + 1.0, axis=-1) for a, b in inputs]
    bad = []
    runs0 = jf.debugging.stats()["cluster_runs"]

    def worker(k):
        for i in range(1000):
            j = (i + k) % len(shapes)
            got = f(*tensors[j]).numpy()
            if not np.allclose(got, want[j], rtol=1e-6):
                bad.append((k, i, j))
    run_in_threads(worker, THREADS)
    assert bad == []
    assert f.experimental_get_tracing_count() == len(shapes)
    if jit_compile:
        assert jf.debugging.stats()["cluster_runs"] - runs0 >= THREADS * 1000


def test_an_eager_variable_made_while_another_thread_retraces_is_not_refused():
    # The creation guard was one process-wide stack: a retrace (where creation is refused) on one
    # thread refused every jf.Variable made meanwhile, on any thread.
    retracing, made = threading.Event(), threading.Event()

    @jf.function
    def f(x):
        if x.shape[0] == 2:  # the retrace: hold it open until the other thread made its variable
            retracing.set()
            made.wait(10)
        return x * 2.0

    f(jf.constant([1.0]))
    errors, out = [], [None, None]

    def worker(k):
        try:
            if k == 0:
                out[0] = f(jf.constant([1.0, 2.0])).numpy().tolist()
            else:
                retracing.wait(10)
                out[1] = jf.Variable([3.0]).numpy().tolist()
        except Exception as e:  # noqa: BLE001 - any refusal is the bug
            errors.append(repr(e))
        finally:
            made.set()
    run_in_threads(worker, 2)
    assert errors == []
    assert out == [[2.0, 4.0], [3.0]]
    assert retracing.is_set()


def test_a_retrace_still_refuses_variables_on_its_own_thread():
    @jf.function
    def f(x):
        if x.shape[0] == 2:
            jf.Variable([1.0])
        return x

    f(jf.constant([1.0]))
    errors = []

    def worker(k):
        try:
            f(jf.constant([1.0, 2.0]))
        except ValueError as e:
            errors.append(str(e))
    run_in_threads(worker, 1)
    assert len(errors) == 1 and "only supports singleton jf.Variables" in errors[0]
