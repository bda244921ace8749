"""jf.explain: for each op of a function's graph, whether it is compiled (and in which
cluster) or runs on an eager kernel, and why."""
import collections
import html

Explanation = collections.namedtuple("Explanation", "op type status cluster reason")


class Report(list):
    """A list of Explanation rows that prints as a table."""

    def __str__(self):
        w = max([len(r.op) for r in self] + [2])
        t = max([len(r.type) for r in self] + [4]) + 2
        c = max([len(r.cluster or "") for r in self] + [10]) + 2
        lines = [f"{'op':<{w}}  {'type':<{t}}{'status':<10}{'cluster':<{c}}reason"]
        for r in self:
            lines.append(f"{r.op:<{w}}  {r.type:<{t}}{r.status:<10}{r.cluster or '-':<{c}}{r.reason}")
        return "\n".join(lines)

    # At a Python prompt too, the report reads as the table (it is still a list of rows).
    __repr__ = __str__

    def by_op(self):
        return {r.op: r for r in self}

    def summary(self):
        n = collections.Counter(r.status for r in self)
        clusters = len({r.cluster for r in self if r.cluster})
        return (f"{n['compiled']} op(s) compiled in {clusters} cluster(s), {n['eager']} eager, "
                f"{n['removed']} removed by optimization")

    def _repr_html_(self):
        """In a notebook: the same table, compiled rows blue, eager rows yellow."""
        colours = {"compiled": "#cfe2ff", "eager": "#fff3cd", "removed": "#eeeeee"}
        rows = "".join(
            f'<tr class="jf-{r.status}" style="background:{colours.get(r.status, "#fff")}">'
            + "".join(f'<td style="text-align:left">{html.escape(str(v))}</td>' for v in (r.op, r.type, r.status, r.cluster or "-", r.reason))
            + "</tr>" for r in self)
        head = "".join(f'<th style="text-align:left">{c}</th>' for c in ("op", "type", "status", "cluster", "reason"))
        return (f'<div><b>jf.explain</b>: {html.escape(self.summary())}</div>'
                f'<table class="jf-explain" style="border-collapse:collapse"><tr>{head}</tr>{rows}</table>')

    def _repr_pretty_(self, p, cycle):
        # IPython would print a list subclass as a list; a notebook's text view is the table.
        p.text(str(self))


def fused_ops(cf):
    """The traced ops the optimizer fused into one node (a convolution with its post-ops), each
    mapped to that node's name."""
    return {n: r.name for r in cf._cf.optimized_graph.nodes() if r.has_attr("_fused_from")
            for n in r.get_attr("_fused_from")}


FUSED_WHY = ("fused into {} (a convolution with its bias, residual add, batch norm and activation as oneDNN "
             "post-ops), ")


def blocked_layouts(cf):
    """The optimized graph's convolutions and pools that pass a value in oneDNN's blocked layout
    to the next (a chain of convolutions, passes/conv_layout.cc), each mapped to what it says."""
    why = {}
    for r in cf._cf.optimized_graph.nodes():
        ends = [w for a, w in (("_blocked_in", "input"), ("_blocked_out", "output")) if r.has_attr(a)]
        if ends:
            verb = "stay" if len(ends) == 2 else "stays"
            why[r.name] = (f"; its {' and '.join(ends)} {verb} in oneDNN's blocked layout (a chain of "
                           "convolutions, reordered from and to TF's layout only at the chain's ends)")
    return why


def explain(f, *args, **kwargs):
    """Explains how `f` (a jf.function or a concrete function) runs for these arguments."""
    cf = f.get_concrete_function(*args, **kwargs) if hasattr(f, "get_concrete_function") else f
    clustered = cf._cf.op_cluster
    guarded = set(cf._cf.guarded_ifs)
    reasons = cf._cf.op_reason
    # Runs that could not use a cluster's compiled code (counted, warned once) say so here.
    fell_back = {c["name"]: c for c in cf._cf.clusters if c["fallbacks"]}
    optimized = {r.name for r in cf._cf.optimized_graph.nodes()}
    fused = fused_ops(cf)
    rows = Report()

    by_name = {c["name"]: c for c in cf._cf.clusters}

    def explain_op(name, type_, top_level):
        if name in clustered and type_ == "While":
            # The loop runs whole in its step's cluster, or said per run why it could not.
            c = by_name.get(clustered[name], {})
            why = "a compiled loop: its body and condition run as one compiled cluster, all iterations in it"
            if c.get("loop_fallbacks"):
                why += (f"; {c['loop_fallbacks']} run(s) ran one step per iteration instead: "
                        f"{c['loop_fallback_reason']}")
            rows.append(Explanation(name, type_, "compiled", clustered[name], why))
        elif name in clustered and type_ == "If" and name in guarded:
            why = ("computed inline, guarded: both branches are in the cluster, and it runs only the "
                   "taken branch's steps (no executor branch)")
            rows.append(Explanation(name, type_, "compiled", clustered[name], why))
        elif name in clustered and type_ == "If":
            why = ("computed inline: its branches are small, pure and cannot fail at run time, so the "
                   "cluster computes both and selects the taken branch's values (no executor branch)")
            rows.append(Explanation(name, type_, "compiled", clustered[name], why))
        elif name in clustered:
            c = fell_back.get(clustered[name])
            why = "in a compiled cluster" if c is None else (
                f"in a compiled cluster; {c['fallbacks']} run(s) fell back to eager kernels: "
                f"{c['fallback_reason']}")
            rows.append(Explanation(name, type_, "compiled", clustered[name], why))
        elif top_level and name in fused:
            f = fused[name]
            why = FUSED_WHY.format(f)
            if f in clustered:
                rows.append(Explanation(name, type_, "compiled", clustered[f], why + "in a compiled cluster"))
            else:
                rows.append(Explanation(name, type_, "eager", None, why + reasons.get(f, "not clustered")))
        elif name not in (optimized if top_level else reasons):
            rows.append(Explanation(name, type_, "removed", None,
                                    "removed by graph optimization (constant folding, CSE or DCE)"))
        else:
            rows.append(Explanation(name, type_, "eager", None, reasons.get(name, "not clustered")))

    def walk_body(node, prefix):
        # Branches and loop bodies are clustered on their own; their ops are named by path.
        parts = ("then", "else") if node.op == "If" else ("cond", "body")
        for part, sub in zip(parts, node.subgraphs()):
            path = f"{prefix}{node.name}/{part}/"
            for n in sub.nodes():
                if n.op != "Placeholder":
                    explain_op(path + n.name, n.op, False)
                    if n.op in ("If", "While"):
                        walk_body(n, path)

    for op in cf.graph.get_operations():
        if op.type == "Placeholder":
            continue
        explain_op(op.name, op.type, True)
        if op.type in ("If", "While") and op.name in optimized:
            walk_body(op.node_def, "")
    blocked = blocked_layouts(cf)
    for i, r in enumerate(rows):
        node = fused.get(r.op, r.op)
        if node in blocked and r.type in ("Conv2D", "MaxPool", "AvgPool"):
            rows[i] = r._replace(reason=r.reason + blocked[node])
    return rows
