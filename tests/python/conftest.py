"""Shared fixtures and helpers for the Python tests, which sit in one folder per layer of the
package (core, ops, tracing, autodiff, state), with compile, runtime and gpu beside them. This
file's folder is on sys.path for all of them (pytest's default prepend import mode), so the
helper modules next to it (op_rows.py, random_ref.py, gpu_bodies.py) and `from conftest import
...` work from every subfolder."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import zlib

import numpy as np
import pytest

# tests/python/gpu/fake_gpu runs only in its own process, against the stand-in CUDA driver that
# gpu/test_fake_gpu.py builds (a driver, once loaded, stays loaded for the process).
collect_ignore = [] if os.environ.get("JITFLOW_FAKE_GPU") else ["gpu/fake_gpu"]

# Hermetic compile cache: tests never read or write the user's ~/.cache/jitflow.
os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jitflow-test-cache-"))


@pytest.fixture(autouse=True)
def no_silent_fallback(request):
    """Every test fails when a compiled cluster ran on eager kernels during it (the fallback is
    counted in jf.debugging.stats()['cluster_fallbacks']), unless it is marked allows_fallback:
    a test that claims a compiled path cannot pass on the eager one."""
    import jitflow as jf
    before = jf.debugging.stats()["cluster_fallbacks"]
    yield
    if request.node.get_closest_marker("allows_fallback") is None:
        after = jf.debugging.stats()["cluster_fallbacks"]
        ran_eagerly = after - before if after >= before else after  # the test reset the counters
        assert ran_eagerly == 0, f"{ran_eagerly} run(s) of compiled clusters fell back to eager kernels"


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test's id: every test (and every parametrization of
    it) draws its own inputs, and a failure reproduces exactly when the test is rerun alone."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def numeric_grad(fn, xs, eps=1e-6):
    """Central differences of the scalar fn(*xs) (numpy float64) w.r.t. each array in xs."""
    xs = [np.array(x, np.float64) for x in xs]
    out = []
    for i, x in enumerate(xs):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            hi = [a.copy() for a in xs]
            lo = [a.copy() for a in xs]
            hi[i][idx] += eps
            lo[i][idx] -= eps
            g[idx] = (fn(*hi) - fn(*lo)) / (2 * eps)
        out.append(g)
    return out


def run_in_threads(worker, n):
    """Runs worker(0), ..., worker(n - 1) on n Python threads at once and waits for them."""
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_mode(mode, fn, *args):
    """fn(*args) eagerly ("eager"), as a traced jf.function ("function"), traced once for any
    shape ("signature": an input_signature with every dim None), with its ops in a jit_scope
    ("jit_scope") or under jit_compile=True ("jit_compile"); the compiled modes assert that
    compiled code ran (cluster_runs grew)."""
    import jitflow as jf
    if mode == "eager":
        return fn(*args)
    if mode == "signature":
        sig = [jf.TensorSpec([None] * len(a.shape), a.dtype) for a in args]
        return jf.function(fn, input_signature=sig)(*args)
    if mode == "jit_scope":
        def body(*a):
            with jf.jit_scope():
                return fn(*a)
        f = jf.function(body)
    else:
        f = jf.function(fn, jit_compile=mode == "jit_compile")
    before = jf.debugging.stats()["cluster_runs"]
    out = f(*args)
    if mode != "function":
        assert jf.debugging.stats()["cluster_runs"] > before, f"{mode}: no compiled code ran"
    return out


def eager_and_traced(fn):
    """fn run eagerly and as a jf.function (traced, then run from the graph)."""
    import jitflow as jf
    return {"eager": fn, "function": jf.function(fn)}


def compiled_runs(fn, *args):
    """fn as a jit_compile=True function; asserts compiled code ran."""
    return run_mode("jit_compile", fn, *args)


def assert_exact(t, want, dtype):
    """t (a jf.Tensor) has exactly dtype and the values of want."""
    got = t.numpy()
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_array_equal(got, np.asarray(want, dtype))


_CHILD_PRELUDE = '''
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


def run_in_child(body, env=None):
    """Runs body in a fresh interpreter, after a prelude that imports numpy as np and jitflow as
    jf and defines report(fn), which prints fn()'s value or the exception it raised as JSON;
    returns the last report as a dict (with the child's stderr under "stderr"). For inputs that
    once crashed the interpreter: the child must exit normally, so a segfault or an abort fails
    only the test that caused it instead of killing the whole run."""
    src = _CHILD_PRELUDE + textwrap.dedent(body)
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})}, check=False)
    assert r.returncode == 0, f"child died with {r.returncode} (a crash): {r.stderr[-3000:]}"
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no report from the child: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    out = json.loads(lines[-1])
    out["stderr"] = r.stderr
    return out


def assert_raised(out, exc, *fragments):
    """run_in_child's report says the call raised exc (or a subclass), with each fragment in
    its message."""
    assert "raised" in out, f"expected {exc}, got the value {out.get('value')!r}"
    assert exc in out["mro"], f"expected {exc}, got {out['raised']}: {out['message']}"
    for f in fragments:
        assert f in out["message"], f"{f!r} not in {out['message']!r}"


# A data-dependent while loop around an if/else: AutoGraph's example program
# (tracing/test_autograph.py), compiled whole in compile/test_compiled_control_flow.py.
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
