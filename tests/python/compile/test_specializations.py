"""Compiled code runs for every run-time shape, never a silent fallback: a compiled cluster
whose inputs arrive with another size-1 (broadcast) pattern than traced runs a compiled
specialization for that pattern, and a run-time shape input recomputes the cluster's
parameters; when no compiled code can run, the fallback is counted in jf.debugging.stats(),
explained by jf.explain and warned once, and under jit_compile=True it raises instead."""
import os
import warnings

import numpy as np
import pytest

import jitflow as jf

SPEC = [jf.TensorSpec([None, None]), jf.TensorSpec([None, None])]
PATTERNS = [(3, 4), (1, 4), (3, 1), (1, 1)]


def _stats():
    return jf.debugging.stats()


def _function(jit_compile, factor=2.0):
    """tanh(x * factor + y); a factor of its own keeps a test's programs out of the compile
    cache that other tests filled."""
    @jf.function(input_signature=SPEC, jit_compile=jit_compile)
    def f(x, y):
        with jf.jit_scope():
            return jf.tanh(x * factor + y)
    return f


@pytest.mark.parametrize("jit_compile", [None, True])
def test_every_broadcast_pattern_runs_compiled_code(jit_compile, rng):
    f = _function(jit_compile)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for shape in PATTERNS:
        y = rng.standard_normal(shape).astype(np.float32)
        before = _stats()
        out = f(x, y).numpy()
        after = _stats()
        assert after["cluster_runs"] == before["cluster_runs"] + 1, shape
        assert after["cluster_fallbacks"] == before["cluster_fallbacks"], shape
        np.testing.assert_allclose(out, np.tanh(x.astype(np.float64) * 2 + y), rtol=1e-6, atol=1e-6)
    cluster = f.get_concrete_function(x, x).clusters[0]
    assert cluster.name  # three patterns besides the traced one: three specializations
    info = f.get_concrete_function(x, x)._cf.clusters[0]
    assert info["specializations"] == 3 and info["fallbacks"] == 0


def test_a_pattern_seen_before_compiles_nothing(rng):
    f = _function(None)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    f(x, x)
    f(x, x[:1])
    before = _stats()
    for _ in range(3):
        f(x, x[:1])
        f(x + 1, x[1:2])
    after = _stats()
    assert after["specializations"] == before["specializations"]
    assert after["compilations"] == before["compilations"]
    assert after["cluster_runs"] == before["cluster_runs"] + 6


def test_broadcast_the_other_way_round(rng):
    # The first input broadcasts into the second.
    f = _function(None)
    y = rng.standard_normal((5, 6)).astype(np.float32)
    f(y, y)
    x = rng.standard_normal((1, 6)).astype(np.float32)
    before = _stats()
    out = f(x, y).numpy()
    assert _stats()["cluster_runs"] == before["cluster_runs"] + 1
    np.testing.assert_allclose(out, np.tanh(x.astype(np.float64) * 2 + y), rtol=1e-6, atol=1e-6)


@pytest.fixture
def failing_compiler():
    """Compilations fail from here on (the cluster compiled before the fixture runs)."""
    os.environ["JITFLOW_FAIL_COMPILE"] = "1"
    yield
    del os.environ["JITFLOW_FAIL_COMPILE"]


@pytest.mark.allows_fallback
def test_a_fallback_is_counted_warned_once_and_explained(rng, request):
    f = _function(None, factor=2.25)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    f(x, x)  # compiled for the traced pattern
    request.getfixturevalue("failing_compiler")
    before = _stats()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out1 = f(x, x[:1]).numpy()
        out2 = f(x, x[:1]).numpy()
    after = _stats()
    np.testing.assert_allclose(out1, np.tanh(x.astype(np.float64) * 2.25 + x[:1]), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out1, out2)
    assert after["cluster_fallbacks"] == before["cluster_fallbacks"] + 2
    assert after["cluster_runs"] == before["cluster_runs"]
    msgs = [str(m.message) for m in w if "eager kernels" in str(m.message)]
    assert len(msgs) == 1, msgs  # once per cluster
    assert "f.cluster_0 (ops Mul, AddV2, Tanh)" in msgs[0] and "float32[1,4]" in msgs[0]
    assert "JITFLOW_FAIL_COMPILE" in msgs[0]
    rows = jf.explain(f, x, x).by_op()
    mul = next(r for r in rows.values() if r.type == "Mul")
    assert mul.status == "compiled" and "2 run(s) fell back to eager kernels" in mul.reason
    assert "JITFLOW_FAIL_COMPILE" in mul.reason


def test_jit_compile_raises_instead_of_falling_back(rng, request):
    f = _function(True, factor=2.5)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    f(x, x)
    request.getfixturevalue("failing_compiler")
    before = _stats()
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"jit_compile=True: f.cluster_0 \(ops Mul, AddV2, Tanh\).*float32\[1,4\]"):
        f(x, x[:1])
    assert _stats()["cluster_fallbacks"] == before["cluster_fallbacks"]


def test_random_graphs_with_unknown_dims_always_run_compiled_code(rng):
    """Random elementwise graphs, all-None input_signature, random broadcast patterns,
    jit_compile=True (the experiment that found the silent fallbacks): every call runs compiled
    code and matches numpy."""
    unary = [(jf.tanh, np.tanh), (jf.exp, np.exp), (jf.abs, np.abs), (lambda a: a * 0.5, lambda a: a * 0.5)]
    binary = [(jf.add, np.add), (jf.multiply, np.multiply), (jf.maximum, np.maximum),
              (jf.subtract, np.subtract)]
    for trial in range(12):
        plan = [(int(rng.integers(len(unary))), int(rng.integers(len(binary))), int(rng.integers(3)))
                for _ in range(4)]

        def build(mod, a, b, c, plan=plan):
            vals = [a, b, c]
            for u, bi, k in plan:
                fu = unary[u][0] if mod is jf else unary[u][1]
                fb = binary[bi][0] if mod is jf else binary[bi][1]
                vals.append(fb(fu(vals[-1]), vals[k]))
            return vals[-1]

        spec = [jf.TensorSpec([None, None])] * 3
        f = jf.function(lambda a, b, c: build(jf, a, b, c), input_signature=spec, jit_compile=True)
        for _ in range(3):
            shapes = [tuple(int(d) for d in rng.choice([1, 3], size=2)) for _ in range(3)]
            shapes[0] = (3, 3)  # the result always has the full shape
            args = [(rng.random(s) * 0.5).astype(np.float32) for s in shapes]
            before = _stats()
            got = f(*args).numpy()
            after = _stats()
            assert after["cluster_runs"] > before["cluster_runs"], (trial, shapes)
            assert after["cluster_fallbacks"] == before["cluster_fallbacks"]
            want = build(np, *[a.astype(np.float64) for a in args])
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_run_time_shape_input_with_new_values_recomputes_the_parameters(rng):
    """A reshape whose target is a function argument: the cluster's parameters follow the
    target's values, not only the input shapes (the same shapes with another target gave the
    old shape: a silent wrong answer)."""
    @jf.function
    def f(x, s):
        with jf.jit_scope():
            return jf.reshape(x * 2.0, s) + 1.0

    x = rng.standard_normal(12).astype(np.float32)
    for target in ([2, 6], [3, 4], [2, 6], [12, 1], [3, 4]):
        before = _stats()["cluster_runs"]
        y = f(x, np.array(target, np.int32)).numpy()
        assert _stats()["cluster_runs"] == before + 1
        np.testing.assert_allclose(y, (x.astype(np.float64) * 2 + 1).reshape(target), rtol=1e-6)
