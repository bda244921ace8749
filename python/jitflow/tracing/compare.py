"""jf.experimental.compare: the eager / jf.function / jit_compile timing a user would write
with timeit, in one call. Each mode's first call (tracing and compiling) is timed apart from
its cached calls, which are timed after a warm-up in repeats; every mode's results are checked
against the first mode's; the counters say whether compiled code really ran. The result prints
as a table and shows in a notebook as an HTML table with a bar chart."""
import base64
import collections
import html
import io
import sys
import time
import warnings

import numpy as np

from ..core import nest
from ..ops import debugging
from . import explain as _explain
from . import function as _function

try:  # optional: the bar chart as a picture; without it the chart is drawn with HTML bars
    import matplotlib as _mpl
except ImportError:  # pragma: no cover - depends on the environment
    _mpl = None

MODES = ("eager", "function", "compiled")
# Progress lines start once a comparison has run this long.
PROGRESS_AFTER_S = 2.0

ModeTiming = collections.namedtuple(
    "ModeTiming", "mode per_call_s median_s calls first_call_s trace_s compile_s agree max_abs_diff "
                  "cluster_runs fallbacks note")


def _fmt(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


class Comparison:
    """The timings of one comparison: rows of ModeTiming, best per-call time first reported
    relative to the first mode."""

    COLUMNS = ("mode", "per call", "median", "speedup", "first call", "trace", "compile", "agree",
               "cluster runs", "note")

    def __init__(self, name, rows, repeat):
        self.name = name
        self.rows = rows
        self.repeat = repeat

    def by_mode(self):
        return {r.mode: r for r in self.rows}

    def _cells(self):
        base = self.rows[0].per_call_s
        for r in self.rows:
            yield (r.mode, _fmt(r.per_call_s), _fmt(r.median_s), f"{base / r.per_call_s:.2f}x",
                   _fmt(r.first_call_s), _fmt(r.trace_s), _fmt(r.compile_s),
                   ("yes" if r.agree else f"NO (max diff {r.max_abs_diff:.3g})"),
                   str(r.cluster_runs), r.note)

    def __str__(self):
        cells = [self.COLUMNS] + list(self._cells())
        widths = [max(len(c[i]) for c in cells) for i in range(len(self.COLUMNS))]
        lines = [f"{self.name}: best of {self.repeat} repeats; speedup against {self.rows[0].mode}"]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def plot(self, ax=None):
        """A matplotlib bar chart of the per-call times (needs matplotlib)."""
        if _mpl is None:
            raise ImportError("Comparison.plot needs matplotlib (pip install matplotlib)")
        if ax is None:
            import matplotlib.pyplot as plt
            _, ax = plt.subplots(figsize=(5, 0.5 + 0.45 * len(self.rows)))
        scale, unit = (1e6, "us") if max(r.per_call_s for r in self.rows) < 1e-3 else (1e3, "ms")
        ax.barh([r.mode for r in self.rows][::-1], [r.per_call_s * scale for r in self.rows][::-1],
                color="#0d6efd")
        ax.set_xlabel(f"{unit} per call (best of repeats)")
        ax.set_title(self.name)
        return ax

    def _chart_html(self):
        note = ""
        if _mpl is not None:
            try:
                # A bare Figure, not pyplot: the notebook's backend stays as the user set it.
                from matplotlib.figure import Figure
                fig = Figure(figsize=(5, 0.5 + 0.45 * len(self.rows)))
                self.plot(fig.add_subplot())
                buf = io.BytesIO()
                fig.savefig(buf, format="png", bbox_inches="tight", dpi=80)
                data = base64.b64encode(buf.getvalue()).decode()
                return f'<img class="jf-compare-chart" src="data:image/png;base64,{data}"/>'
            except Exception as e:  # noqa: BLE001 - the HTML bars below still show the numbers
                note = f'<div><i>matplotlib failed ({html.escape(type(e).__name__)}): HTML bars</i></div>'
        top = max(r.per_call_s for r in self.rows)
        bars = "".join(
            f'<div style="display:flex;align-items:center;margin:2px 0"><span style="width:80px">{r.mode}</span>'
            f'<span style="background:#0d6efd;height:14px;width:{max(2, int(300 * r.per_call_s / top))}px">'
            f'</span><span style="margin-left:6px">{_fmt(r.per_call_s)}</span></div>' for r in self.rows)
        return f'{note}<div class="jf-compare-chart">{bars}</div>'

    def _repr_html_(self):
        head = "".join(f'<th style="text-align:left">{c}</th>' for c in self.COLUMNS)
        body = "".join("<tr>" + "".join(f'<td style="text-align:left">{html.escape(c)}</td>' for c in row) + "</tr>"
                       for row in self._cells())
        return (f"<div><b>{html.escape(self.name)}</b>: best of {self.repeat} repeats; "
                f"speedup against {self.rows[0].mode}</div>"
                f'<table class="jf-compare" style="border-collapse:collapse"><tr>{head}</tr>{body}</table>'
                + self._chart_html())


class _Progress:
    """Progress lines on stderr once the comparison has run a couple of seconds (a notebook
    shows them under the cell, redrawn in place by the carriage return)."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.start = time.perf_counter()
        self.shown = False

    def __call__(self, text):
        if self.enabled is False:
            return
        if self.enabled or time.perf_counter() - self.start > PROGRESS_AFTER_S:
            sys.stderr.write(f"\rcompare: {text} ({time.perf_counter() - self.start:.1f} s) ")
            sys.stderr.flush()
            self.shown = True

    def done(self):
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _numpy_leaves(out):
    return [np.asarray(x.numpy() if hasattr(x, "numpy") else x) for x in nest.flatten(out)]


def _max_diff(ref, got):
    if len(ref) != len(got):
        return float("inf")
    worst = 0.0
    for a, b in zip(ref, got):
        if a.shape != b.shape:
            return float("inf")
        if a.size:
            worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))))
    return worst


def _calls_per_repeat(call, args, kwargs, budget_s):
    """How many calls make one repeat last about budget_s (timeit's autorange, shortened)."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            call(*args, **kwargs)
        if time.perf_counter() - t0 >= budget_s or n >= 10000:
            return n
        n *= 2


def compare(f, *args, modes=MODES, repeat=5, number=None, warmup=2, rtol=1e-4, atol=1e-5,
            repeat_seconds=0.05, progress=None, **kwargs):
    """Times f(*args, **kwargs) in each mode: "eager" (the Python function called directly),
    "function" (jf.function of it) and "compiled" (jf.function(jit_compile=True)).

    f may be a plain callable or a jf.function (its Python function is used). Each mode: the
    first call is timed on its own, with the tracing and the graph build (optimization and
    compilation) it contained; then `warmup` calls, then `repeat` repeats of `number` calls
    (by default as many as make a repeat last `repeat_seconds`). The results of each mode are
    checked against the first mode's (np.allclose with rtol, atol: a mismatch is reported in
    the table and warned; the defaults let float32 kernels that round differently agree). progress: None prints progress once a run passes two seconds, True
    at once, False never."""
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValueError(f"compare: modes must be some of {MODES}, got {tuple(modes)}")
    py = f.python_function if isinstance(f, _function.Function) else f
    name = getattr(f, "__name__", None) or getattr(f, "name", None) or type(f).__name__
    show = _Progress(progress)
    rows, ref = [], None
    try:
        for mode in modes:
            call_f = py if mode == "eager" else _function.function(py, jit_compile=(mode == "compiled") or None)
            show(f"{mode}: first call")
            before = debugging.stats()
            t0 = time.perf_counter()
            out = call_f(*args, **kwargs)
            first = time.perf_counter() - t0
            trace_s = compile_s = None
            note = ""
            if mode != "eager":
                cf = call_f.get_concrete_function(*args, **kwargs)
                trace_s, compile_s = cf.trace_seconds, cf.build_seconds
                note = _explain.explain(cf).summary()
            for _ in range(warmup):
                call_f(*args, **kwargs)
            n = number or _calls_per_repeat(call_f, args, kwargs, repeat_seconds)
            times = []
            for i in range(repeat):
                show(f"{mode}: repeat {i + 1}/{repeat} of {n} call(s)")
                t0 = time.perf_counter()
                for _ in range(n):
                    call_f(*args, **kwargs)
                times.append((time.perf_counter() - t0) / n)
            after = debugging.stats()
            runs = after["cluster_runs"] - before["cluster_runs"]
            fallbacks = after["cluster_fallbacks"] - before["cluster_fallbacks"]
            if mode == "compiled" and runs == 0:
                note = "no compiled cluster ran; " + note
            if fallbacks:
                note = f"{fallbacks} cluster run(s) fell back to eager kernels; " + note
            leaves = _numpy_leaves(out)
            if ref is None:
                ref, agree, diff = leaves, True, 0.0
            else:
                diff = _max_diff(ref, leaves)
                agree = diff != float("inf") and all(
                    np.allclose(a, b, rtol=rtol, atol=atol) for a, b in zip(ref, leaves))
                if not agree:
                    warnings.warn(f"compare: '{mode}' results differ from '{modes[0]}' "
                                  f"(max abs diff {diff:.3g})", RuntimeWarning, stacklevel=2)
            rows.append(ModeTiming(mode, min(times), float(np.median(times)), n, first, trace_s, compile_s,
                                   agree, diff, runs, fallbacks, note))
    finally:
        show.done()
    return Comparison(str(name), rows, repeat)
