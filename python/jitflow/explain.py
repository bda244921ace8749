"""jf.explain: for each op of a function's graph, whether it is compiled (and in which
cluster) or runs on an eager kernel, and why."""
import collections

Explanation = collections.namedtuple("Explanation", "op type status cluster reason")


class Report(list):
    """A list of Explanation rows that prints as a table."""

    def __str__(self):
        w = max([len(r.op) for r in self] + [2])
        t = max([len(r.type) for r in self] + [4]) + 2
        lines = [f"{'op':<{w}}  {'type':<{t}}{'status':<10}{'cluster':<12}reason"]
        for r in self:
            lines.append(f"{r.op:<{w}}  {r.type:<{t}}{r.status:<10}{r.cluster or '-':<12}{r.reason}")
        return "\n".join(lines)

    def by_op(self):
        return {r.op: r for r in self}


def explain(f, *args, **kwargs):
    """Explains how `f` (a jf.function or a concrete function) runs for these arguments."""
    cf = f.get_concrete_function(*args, **kwargs) if hasattr(f, "get_concrete_function") else f
    clustered = cf._cf.op_cluster
    reasons = cf._cf.op_reason
    # Runs that could not use a cluster's compiled code (counted, warned once) say so here.
    fell_back = {c["name"]: c for c in cf._cf.clusters if c["fallbacks"]}
    optimized = {r.name for r in cf._cf.optimized_graph.nodes()}
    rows = Report()
    for op in cf.graph.get_operations():
        if op.type == "Placeholder":
            continue
        if op.name in clustered:
            c = fell_back.get(clustered[op.name])
            why = "in a compiled cluster" if c is None else (
                f"in a compiled cluster; {c['fallbacks']} run(s) fell back to eager kernels: "
                f"{c['fallback_reason']}")
            rows.append(Explanation(op.name, op.type, "compiled", clustered[op.name], why))
        elif op.name not in optimized:
            rows.append(Explanation(op.name, op.type, "removed", None,
                                    "removed by graph optimization (constant folding, CSE or DCE)"))
        else:
            rows.append(Explanation(op.name, op.type, "eager", None, reasons.get(op.name, "not clustered")))
    return rows
