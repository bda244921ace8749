"""Small kernels run first as quickly generated machine code and are switched to fully
generated code by a background thread: both tiers give bit-identical values, the switch
happens, the disk cache keeps the full code, and exiting or forking with a switch pending
is safe."""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitflow as jf
from jitflow import _C

rng = np.random.default_rng(11)


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


# An LSTM cell's math with its own constant (0.875): a kernel no other test file's
# functions hold in the in-memory code cache, so each test here compiles it.
def lstm_like(x, h, c, w, u, b):
    z = jf.matmul(x, w) + jf.matmul(h, u) + b
    i, f, g, o = jf.split(z, 4, axis=-1)
    c2 = jf.sigmoid(f) * c + jf.sigmoid(i) * jf.tanh(g) * 0.875
    return jf.sigmoid(o) * jf.tanh(c2)


def lstm_ref(x, h, c, w, u, b):
    z = x.astype(np.float64) @ w + h.astype(np.float64) @ u + b
    i, f, g, o = np.split(z, 4, axis=-1)
    c2 = sigmoid64(f) * c + sigmoid64(i) * np.tanh(g) * 0.875
    return sigmoid64(o) * np.tanh(c2)


def lstm_args(batch, units):
    shapes = [(batch, units)] * 3 + [(units, 4 * units)] * 2 + [(4 * units,)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def math_mix(x, y):
    # libm calls with libmvec vector variants (sin, log), the compiled exp, a division, a
    # comparison and integer-valued rounding: each tier must pick the same code for each.
    return (
        jf.sin(x) * jf.math.log(jf.abs(y) + 1.0)
        + jf.exp(x / (y * y + 1.0))
        - jf.round(x * 3.0)
        + jf.where(x > y, jf.tanh(y), jf.sigmoid(x))
    )


def math_ref(x, y):
    x, y = x.astype(np.float64), y.astype(np.float64)
    return (
        np.sin(x) * np.log(np.abs(y) + 1.0)
        + np.exp(x / (y * y + 1.0))
        - np.round(x * 3.0)
        + np.where(x > y, np.tanh(y), sigmoid64(x))
    )


def int_mix(a, b):
    return (a * 3 + b) // 2 - jf.maximum(a, b) % 5


CASES = [
    ("lstm 10x10", lstm_like, lambda: lstm_args(10, 10)),
    ("lstm 3x7", lstm_like, lambda: lstm_args(3, 7)),
    ("lstm 1x3", lstm_like, lambda: lstm_args(1, 3)),
    ("math 7x13", math_mix, lambda: [rng.standard_normal((7, 13)).astype(np.float32) for _ in range(2)]),
    ("math 9", math_mix, lambda: [rng.standard_normal(9).astype(np.float32) * 4 for _ in range(2)]),
    ("int 6x11", int_mix, lambda: [rng.integers(-50, 50, (6, 11)).astype(np.int32) for _ in range(2)]),
]


def compiled_output(fn, args):
    """The output of a fresh jit_compile function; asserts its cluster was compiled (the
    in-memory cache of an earlier, deleted function's code was dropped) and ran."""
    gc.collect()
    _C.cpu_wait_for_upgrades()  # earlier tests' switches: the counts below are this test's
    f = jf.function(fn, jit_compile=True)
    s0 = jf.debugging.stats()
    out = f(*args).numpy()
    s1 = jf.debugging.stats()
    assert s1["cluster_runs"] > s0["cluster_runs"]
    assert s1["compilations"] > s0["compilations"]
    assert s1["small_pipeline_compilations"] > s0["small_pipeline_compilations"]
    return out, f


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("JITFLOW_CACHE_DIR", "off")


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_quick_and_full_code_are_bit_identical(no_disk_cache, monkeypatch, name, fn, make):
    args = make()
    monkeypatch.setenv("JITFLOW_TIERED", "quick")
    _C.cpu_wait_for_upgrades()
    before = _C.cpu_tier_upgrades()
    quick, f = compiled_output(fn, args)
    _C.cpu_wait_for_upgrades()
    assert _C.cpu_tier_upgrades() == before  # the quick code only, never switched
    again = f(*args).numpy()
    del f
    monkeypatch.setenv("JITFLOW_TIERED", "0")
    full, f = compiled_output(fn, args)
    del f
    np.testing.assert_array_equal(quick, full)
    np.testing.assert_array_equal(again, full)
    if fn is lstm_like:
        np.testing.assert_allclose(full, lstm_ref(*args), rtol=2e-5, atol=2e-6)
    elif fn is math_mix:
        np.testing.assert_allclose(full, math_ref(*args), rtol=2e-5, atol=2e-5)
    else:
        a, b = (v.astype(np.int64) for v in args)
        np.testing.assert_array_equal(full, (a * 3 + b) // 2 - np.maximum(a, b) % 5)


def test_the_quick_code_is_switched_to_the_full_code(no_disk_cache, monkeypatch):
    monkeypatch.delenv("JITFLOW_TIERED", raising=False)
    args = lstm_args(10, 10)
    _C.cpu_wait_for_upgrades()
    before, failures = _C.cpu_tier_upgrades(), _C.cpu_tier_upgrade_failures()
    first, f = compiled_output(lstm_like, args)
    _C.cpu_wait_for_upgrades()
    assert _C.cpu_tier_upgrades() == before + 1
    assert _C.cpu_tier_upgrade_failures() == failures
    runs = jf.debugging.stats()["cluster_runs"]
    later = f(*args).numpy()
    assert jf.debugging.stats()["cluster_runs"] == runs + 1
    np.testing.assert_array_equal(first, later)
    np.testing.assert_allclose(later, lstm_ref(*args), rtol=2e-5, atol=2e-6)


def test_full_pipeline_kernels_are_not_tiered(no_disk_cache, monkeypatch):
    monkeypatch.delenv("JITFLOW_TIERED", raising=False)
    _C.cpu_wait_for_upgrades()
    before = _C.cpu_tier_upgrades()
    x = rng.standard_normal((256, 256)).astype(np.float32)
    f = jf.function(lambda a: jf.tanh(a * 2.0 + 1.0), jit_compile=True)
    np.testing.assert_allclose(f(x).numpy(), np.tanh(x.astype(np.float64) * 2 + 1), rtol=2e-6, atol=2e-6)
    _C.cpu_wait_for_upgrades()
    assert _C.cpu_tier_upgrades() == before


def run_python(src, env):
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(src)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, **env),
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


SCRIPT = """
    import numpy as np
    import jitflow as jf
    x = np.linspace(-3, 3, 70, dtype=np.float32).reshape(7, 10)
    f = jf.function(lambda a: jf.sigmoid(a) * jf.tanh(a * 0.5 + 0.25), jit_compile=True)
    out = f(x).numpy()
    s = jf.debugging.stats()
    print(s["compilations"], s["cache_hits"], out.tobytes().hex())
"""


def test_an_exiting_process_stores_the_full_code_in_the_disk_cache(tmp_path, monkeypatch):
    # The first process exits right after its first call, the switch still pending: it
    # finishes it at exit and stores the full object, which the second one loads.
    monkeypatch.delenv("JITFLOW_TIERED", raising=False)
    env = {"JITFLOW_CACHE_DIR": str(tmp_path)}
    compiled, hits, first = run_python(SCRIPT, env).split()
    assert (compiled, hits) == ("1", "0")
    compiled, hits, second = run_python(SCRIPT, env).split()
    assert (compiled, hits) == ("0", "1")
    assert first == second
    x = np.linspace(-3, 3, 70, dtype=np.float64)
    got = np.frombuffer(bytes.fromhex(first), np.float32)
    np.testing.assert_allclose(got, sigmoid64(x) * np.tanh(x * 0.5 + 0.25), rtol=2e-6, atol=2e-6)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forking_with_a_switch_pending_leaves_the_child_working():
    out = run_python(
        """
        import os
        import numpy as np
        import jitflow as jf
        from jitflow import _C
        x = np.linspace(-2, 2, 30, dtype=np.float32).reshape(3, 10)
        f = jf.function(lambda a: jf.tanh(a) * jf.sigmoid(a), jit_compile=True)
        parent = f(x).numpy()
        pid = os.fork()
        if pid == 0:
            g = jf.function(lambda a: jf.sigmoid(a) + jf.tanh(a * 3.0), jit_compile=True)
            ok = np.array_equal(f(x).numpy(), parent) and np.all(np.isfinite(g(x).numpy()))
            _C.cpu_wait_for_upgrades()
            os._exit(0 if ok and _C.cpu_tier_upgrades() >= 1 else 3)
        _, status = os.waitpid(pid, 0)
        _C.cpu_wait_for_upgrades()
        print(os.waitstatus_to_exitcode(status), _C.cpu_tier_upgrades())
    """,
        {"JITFLOW_CACHE_DIR": "off"},
    )
    code, upgrades = out.split()
    assert code == "0"
    assert int(upgrades) >= 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forking_or_exiting_while_the_jit_sets_itself_up_is_safe():
    # Tracing a jit_compile function (or entering a jit_scope while tracing) starts the JIT's
    # set-up on a thread of its own; a fork right after, or an exit, waits for it.
    out = run_python(
        """
        import os
        import numpy as np
        import jitflow as jf
        from jitflow import _C
        _C.cpu_jit_prepare()
        _C.cpu_jit_prepare()  # once per process
        pid = os.fork()
        if pid == 0:
            f = jf.function(lambda a: jf.tanh(a) * 2.0, jit_compile=True)
            os._exit(0 if np.allclose(f(np.ones(3, np.float32)).numpy(), np.tanh(1.0) * 2) else 3)
        _, status = os.waitpid(pid, 0)
        g = jf.function(lambda a: jf.sigmoid(a) + 1.0, jit_compile=True)
        ok = np.allclose(g(np.zeros(3, np.float32)).numpy(), 1.5)
        print(os.waitstatus_to_exitcode(status), ok, jf.debugging.stats()["cluster_runs"])
        _C.cpu_jit_prepare()  # and exiting right after is safe too
    """,
        {"JITFLOW_CACHE_DIR": "off"},
    )
    assert out.split() == ["0", "True", "1"]
