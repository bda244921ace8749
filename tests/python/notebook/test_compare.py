"""jf.experimental.compare: each mode timed with its first call apart, results checked against
the first mode's, compiled runs counted, and the result printed as a table and rendered as an
HTML table with a bar chart; progress shows on stderr for long runs."""
import math

import numpy as np
import pytest

import jitflow as jf
from jitflow.tracing import compare as compare_mod


def _gelu_layer(x, w):
    """The matmul + GELU (tanh form) layer of a first comparison."""
    y = jf.matmul(x, w)
    return 0.5 * y * (1.0 + jf.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


def _gelu_ref(x, w):
    y = x.astype(np.float64) @ w.astype(np.float64)
    return 0.5 * y * (1.0 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def test_three_modes_timed_checked_and_counted(rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 16)).astype(np.float32)
    np.testing.assert_allclose(_gelu_layer(jf.constant(x), jf.constant(w)).numpy(), _gelu_ref(x, w),
                               rtol=1e-5, atol=1e-5)
    result = jf.experimental.compare(_gelu_layer, jf.constant(x), jf.constant(w), repeat=3, number=5,
                                     progress=False)
    rows = result.by_mode()
    assert list(rows) == ["eager", "function", "compiled"]
    for r in result.rows:
        assert r.agree and r.max_abs_diff < 1e-4
        assert r.calls == 5 and 0 < r.per_call_s <= r.median_s
        assert r.first_call_s > 0
    assert rows["eager"].trace_s is None and rows["eager"].compile_s is None
    for mode in ("function", "compiled"):
        assert rows[mode].trace_s > 0 and rows[mode].compile_s > 0
        # The first call traced and built the graph: it took at least as long as both.
        assert rows[mode].first_call_s >= rows[mode].trace_s + rows[mode].compile_s
    # The compiled mode ran compiled code on every call: first, 2 warm-up, 3 x 5 timed.
    assert rows["compiled"].cluster_runs == 18
    assert "compiled in 1 cluster(s), 0 eager" in rows["compiled"].note
    assert rows["eager"].cluster_runs == 0

    text = str(result)
    assert text.splitlines()[0] == "_gelu_layer: best of 3 repeats; speedup against eager"
    assert text.splitlines()[1].split()[:3] == ["mode", "per", "call"]
    assert [line.split()[0] for line in text.splitlines()[2:]] == ["eager", "function", "compiled"]
    assert repr(result) == text
    html = result._repr_html_()
    assert 'class="jf-compare"' in html and html.count("<tr>") == 4
    assert 'class="jf-compare-chart"' in html


def test_a_jf_function_is_compared_through_its_python_function():
    f = jf.function(lambda x: x * 2.0 + 1.0, jit_compile=True)
    x = jf.constant(np.arange(4, dtype=np.float32))
    result = jf.experimental.compare(f, x, modes=("function", "compiled"), repeat=2, number=2, progress=False)
    assert [r.mode for r in result.rows] == ["function", "compiled"]
    assert f.experimental_get_tracing_count() == 0  # compare traced functions of its own
    assert result.by_mode()["compiled"].cluster_runs > 0 and result.rows[1].agree


def test_results_that_differ_are_reported_and_warned():
    calls = []

    def counter(x):  # a Python side effect: eager calls count, a trace freezes the count
        calls.append(1)
        return x + float(len(calls))

    x = jf.constant(np.zeros(3, np.float32))
    with pytest.warns(RuntimeWarning, match="'function' results differ from 'eager'"):
        result = jf.experimental.compare(counter, x, modes=("eager", "function"), repeat=1, number=1,
                                         warmup=0, progress=False)
    row = result.by_mode()["function"]
    # eager's first call saw 1; the function's graph froze a later count.
    assert not row.agree and row.max_abs_diff >= 1.0
    assert math.isclose(row.max_abs_diff, round(row.max_abs_diff))
    assert f"NO (max diff {row.max_abs_diff:.3g})" in str(result)


def test_progress_is_printed_for_long_runs(capsys, monkeypatch):
    x = jf.constant(np.ones(2, np.float32))
    jf.experimental.compare(lambda v: v + 1.0, x, modes=("eager",), repeat=2, number=1, progress=True)
    err = capsys.readouterr().err
    assert "compare: eager: first call" in err and "compare: eager: repeat 2/2 of 1 call(s)" in err
    # Automatic: quiet for a short run, shown once it passes the threshold.
    jf.experimental.compare(lambda v: v + 1.0, x, modes=("eager",), repeat=2, number=1)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(compare_mod, "PROGRESS_AFTER_S", 0.0)
    jf.experimental.compare(lambda v: v + 1.0, x, modes=("eager",), repeat=2, number=1)
    assert "compare: eager: repeat" in capsys.readouterr().err


def test_outputs_in_structures_are_compared_leaf_by_leaf(rng):
    a = rng.standard_normal((3, 3)).astype(np.float32)

    def two(x):
        return {"sum": jf.reduce_sum(x), "t": [jf.transpose(x)]}

    result = jf.experimental.compare(two, jf.constant(a), repeat=1, number=1, progress=False)
    assert all(r.agree for r in result.rows)
    leaves = compare_mod._numpy_leaves(two(jf.constant(a)))
    np.testing.assert_allclose(sorted(x.size for x in leaves), [1, 9])
