"""Notebook displays of the tracing layer's objects: a concrete function as its dataflow
graph with the compiled clusters boxed (core/graph_display.py draws it), a jf.function as the
graphs of its traces, a module as its variables and traced methods. Each returns HTML and
never raises: a failure shows a line saying what could not be drawn."""
import html

from ..core import graph_display
from .explain import FUSED_WHY, fused_ops

# A function traced for many signatures shows its first few graphs, and says so.
MAX_TRACES_SHOWN = 3


def _failed(what, e):
    return f"<pre>{html.escape(what)}: cannot be displayed ({type(e).__name__}: {html.escape(str(e))})</pre>"


def signature_text(cf):
    return ", ".join(f"{t.op.name}: {t.dtype.name}{list(t.shape)}" for t in cf.inputs)


def concrete_view(cf):
    """The GraphView of a concrete function: its traced ops, each compiled (with its cluster),
    eager (with the reason), or removed by optimization."""
    info = cf._cf
    backends = {c["name"]: c["backend"] for c in info.clusters}
    kept = {n.name for n in info.optimized_graph.nodes()}
    cluster_of, reasons = dict(info.op_cluster), dict(info.op_reason)
    # A fused chain's traced ops are drawn where the node computing them runs.
    for op, node in fused_ops(cf).items():
        kept.add(op)
        if node in cluster_of:
            cluster_of[op] = cluster_of[node]
        reasons[op] = FUSED_WHY.format(node) + reasons.get(node, "not clustered")
    view = graph_display.view_of(cf.graph, f"{cf.name}({signature_text(cf)})", cluster_of, backends, reasons,
                                 kept)
    fell = [f"{c['name']}: {c['fallbacks']} run(s) fell back to eager kernels ({c['fallback_reason']})"
            for c in info.clusters if c["fallbacks"]]
    bodies = sum(1 for n in view.nodes if n.type in ("If", "While"))
    notes = fell + ([(f"{bodies} If/While node(s) drawn as one node each: jf.explain lists their "
                     "branch and body ops")] if bodies else [])
    view.note = "; ".join(notes)
    return view


def concrete_html(cf):
    try:
        view = concrete_view(cf)
    except Exception as e:  # noqa: BLE001 - a display must not raise
        return _failed(f"concrete function {getattr(cf, 'name', '?')}", e)
    return graph_display.render_html(view)


def function_html(f):
    """A jf.function: its settings and the graph of each trace so far."""
    try:
        traces = list(f._concrete)
        jit = f._jit_compile
        head = (f"<div><b>jf.function</b> <code>{html.escape(f._name)}</code> "
                f"(jit_compile={html.escape(repr(jit))}): {len(traces)} trace(s)</div>")
        if not traces:
            return head + ("<div><i>not traced yet: call it, or show "
                           "f.get_concrete_function(...) to see its graph</i></div>")
        parts = [head] + [concrete_html(cf) for cf in traces[:MAX_TRACES_SHOWN]]
        if len(traces) > MAX_TRACES_SHOWN:
            parts.append(f"<div><i>{len(traces) - MAX_TRACES_SHOWN} more trace(s) not drawn: "
                         "show f.get_concrete_function(...) for one</i></div>")
        return "".join(parts)
    except Exception as e:  # noqa: BLE001
        return _failed(f"jf.function {getattr(f, '_name', '?')}", e)


def module_html(module, variables, traced):
    """A module: its variables (path, shape, dtype, trainable) and the graphs of its traced
    jf.function methods (`traced`: (attribute name, Function) pairs)."""
    try:
        rows = "".join(
            f"<tr><td>{html.escape(v.name)}</td><td>{html.escape(str(list(v.shape)))}</td>"
            f"<td>{html.escape(v.dtype.name)}</td><td>{v.trainable}</td></tr>" for v in variables)
        out = [(f"<div><b>{html.escape(type(module).__name__)}</b> <code>{html.escape(module.name)}</code>: "
               f"{len(variables)} variable(s), {sum(v.shape.num_elements() or 0 for v in variables)} "
               "parameter(s)</div>")]
        if variables:
            out.append('<table style="border-collapse:collapse"><tr><th>variable</th><th>shape</th>'
                       f"<th>dtype</th><th>trainable</th></tr>{rows}</table>")
        for name, f in traced:
            out.append(f"<div>method <code>{html.escape(name)}</code>:</div>{function_html(f)}")
        return "".join(out)
    except Exception as e:  # noqa: BLE001
        return _failed(f"module {getattr(module, 'name', '?')}", e)
