"""The fork-join thread pool under load: Python threads (the C++ releases the GIL) running
compiled clusters with parallel loops and eager large matmuls at once, and resizing the pool
with jf.config.threading.set_intra_op_parallelism_threads. Values against float64 numpy.
Thread counts that cannot be made (huge, negative, or a bad JITFLOW_NUM_THREADS) are refused
or replaced by the core count; those cases run in a child process (conftest.run_in_child),
as some of them aborted the interpreter."""
import os
import threading
import time

import numpy as np
import pytest
from conftest import assert_raised, run_in_child, run_in_threads

import jitflow as jf


@jf.function
def cluster(x, w):
    with jf.jit_scope():
        # a column reduction, a fused elementwise loop and a matmul: all large enough to split
        return jf.reduce_sum(jf.tanh(x) * 2.0, axis=0), jf.exp(x * 0.1) + 1.0, jf.matmul(x, w)


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((512, 256)).astype(np.float32)
    w = rng.standard_normal((256, 96)).astype(np.float32)
    a = rng.standard_normal((257, 77)).astype(np.float32)
    b = rng.standard_normal((77, 130)).astype(np.float32)
    x64 = x.astype(np.float64)
    want = [np.tanh(x64).sum(0) * 2.0, np.exp(x64 * 0.1) + 1.0, x64 @ w, a.astype(np.float64) @ b]
    return (x, w, a, b), want


def mismatches(inputs, want):
    """Runs the cluster and the eager matmul once; names the results that are wrong."""
    x, w, a, b = inputs
    got = [r.numpy() for r in cluster(x, w)] + [jf.matmul(a, b).numpy()]
    atols = [2e-5 * 512, 1e-5, 1e-4 * 16, 1e-4 * 9]
    return [i for i, (g, e, atol) in enumerate(zip(got, want, atols))
            if g.shape != e.shape or not np.allclose(g, e, rtol=1e-4, atol=atol)]


def test_four_python_threads_share_the_pool():
    cases = [make_inputs(seed) for seed in range(4)]
    assert mismatches(*cases[0]) == []  # traced and compiled before the threads start
    errors = []

    def worker(k):
        for it in range(40):
            bad = mismatches(*cases[k])
            if bad:
                errors.append((k, it, bad))

    run_in_threads(worker, 4)
    assert errors == []
    assert cluster.experimental_get_tracing_count() == 1
    assert jf.explain(cluster, *cases[0][0][:2]).by_op()["Sum"].status == "compiled"


def test_resizing_the_pool_keeps_results_correct():
    threading_config = jf.config.threading
    before = threading_config.get_intra_op_parallelism_threads()
    inputs, want = make_inputs(11)
    try:
        for n in [1, 3, 2, 1, 2]:
            threading_config.set_intra_op_parallelism_threads(n)
            assert threading_config.get_intra_op_parallelism_threads() == n
            for _ in range(3):
                assert mismatches(inputs, want) == [], f"with {n} threads"
    finally:
        threading_config.set_intra_op_parallelism_threads(before)
    assert threading_config.get_intra_op_parallelism_threads() == before
    assert mismatches(inputs, want) == []


def test_resizing_while_other_threads_run_regions():
    """A resize swaps the pool; regions already running keep the old one until they end."""
    threading_config = jf.config.threading
    before = threading_config.get_intra_op_parallelism_threads()
    cases = [make_inputs(20 + k) for k in range(2)]
    stop, errors = threading.Event(), []

    def worker(k):
        it = 0
        while not stop.is_set():
            bad = mismatches(*cases[k])
            if bad:
                errors.append((k, it, bad))
            it += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    try:
        for t in threads:
            t.start()
        for n in [1, 2, 3, 2, 1, 2] * 5:
            threading_config.set_intra_op_parallelism_threads(n)
            time.sleep(0.01)  # let the workers get into regions on this pool
    finally:
        stop.set()
        for t in threads:
            t.join()
        threading_config.set_intra_op_parallelism_threads(before)
    assert errors == []


# ---- thread counts -------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [10**9, 50000, 2**40, -5])
def test_huge_or_negative_intra_op_thread_count_is_refused_and_ops_still_run(n):
    # 10**9 threw std::bad_alloc, 50000 aborted (std::terminate when thread creation failed).
    out = run_in_child(f"""
        report(lambda: jf.config.threading.set_intra_op_parallelism_threads({n}))
        """)
    assert_raised(out, "InvalidArgumentError", "intra-op threads", str(n))
    out = run_in_child(f"""
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
    # Not refused: 0 is TF's "system default" (one thread per core).
    out = run_in_child("""
        jf.config.threading.set_intra_op_parallelism_threads(1)
        jf.config.threading.set_intra_op_parallelism_threads(0)
        report(jf.config.threading.get_intra_op_parallelism_threads)
        """)
    assert out["value"] == min(os.cpu_count(), 1024)


@pytest.mark.parametrize("value", ["1000000000", "-3", "1e9", "lots"])
def test_bad_jitflow_num_threads_warns_and_uses_the_core_count(value):
    out = run_in_child("report(lambda: [jf.config.threading.get_intra_op_parallelism_threads(),"
                 " float(jf.reduce_sum(jf.ones([300000]) * 2.0))])", env={"JITFLOW_NUM_THREADS": value})
    assert out["value"] == [min(os.cpu_count(), 1024), 600000.0]
    assert f"JITFLOW_NUM_THREADS={value} is not a thread count" in out["stderr"]
