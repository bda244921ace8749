"""Pictures of traced graphs for notebooks: a view of the graph (ops with their type, shape,
compiled cluster or eager reason), name scopes collapsed when it is large, drawn by Graphviz
as SVG with one box per compiled cluster, or as a plain HTML table of clusters and ops when
Graphviz's `dot` program is missing. Rendering never raises: a display hook that fails shows
nothing, so every failure falls back to something simpler that says what went wrong."""
import collections
import html
import shutil


def __getattr__(name):
    """`_graphviz`: the graphviz package (the optional `notebook` extra) or None, imported when
    a picture is first drawn (it costs import time that a program without pictures need not pay)."""
    if name != "_graphviz":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import graphviz
    except ImportError:  # pragma: no cover - depends on the environment
        graphviz = None
    globals()["_graphviz"] = graphviz
    return graphviz


# Above this many nodes the picture collapses name scopes (Graphviz stays legible and fast).
MAX_NODES = 60

COMPILED_FILL = "#cfe2ff"
EAGER_FILL = "#fff3cd"
STATUS_STYLE = {  # (fill, border style) for each node status; compiled vs eager at a glance
    "compiled": (COMPILED_FILL, "solid"),
    "eager": (EAGER_FILL, "dashed"),
    "removed": ("#eeeeee", "dotted"),
    "input": ("#ffffff", "solid"),
}

Node = collections.namedtuple("Node", "name type shape status cluster reason count")
Edge = collections.namedtuple("Edge", "src dst label")


def find_dot():
    """The path of Graphviz's `dot` program, or None (tests patch this lookup)."""
    return shutil.which("dot")


class GraphView:
    """What a picture shows: nodes (Node), edges between node names (Edge), the compiled
    clusters ({name: backend}) and a note on what was collapsed."""

    def __init__(self, title, nodes, edges, clusters, note=""):
        self.title = title
        self.nodes = list(nodes)
        self.edges = list(edges)
        self.clusters = dict(clusters)
        self.note = note


def _scope_of(name, depth):
    parts = name.split("/")[:-1]
    return "/".join(parts[:depth]) if parts else None


def collapse(view, max_nodes=MAX_NODES):
    """A view of at most about max_nodes nodes: ops are merged by name scope, deepest scopes
    first, and never across a cluster boundary (a scope split between a cluster and eager
    kernels becomes one merged node on each side). Inputs stay as they are."""
    if len(view.nodes) <= max_nodes:
        return view
    max_depth = max(name.count("/") for name in (n.name for n in view.nodes))
    for depth in range(max_depth, -1, -1):
        merged = _merge(view, depth, max_nodes)
        if len(merged.nodes) <= max_nodes:
            return merged
    return merged


def _merge(view, depth, max_nodes):
    """Merges each group of ops that share a scope prefix of `depth` parts and a cluster;
    at depth 0 the groups are ops of one type in one cluster."""
    groups = collections.OrderedDict()
    key_of = {}
    for n in view.nodes:
        if n.status == "input":
            key = ("node", n.name)
        elif depth == 0:
            key = ("type", n.type, n.cluster, n.status)
        else:
            scope = _scope_of(n.name, depth)
            key = ("node", n.name) if scope is None else ("scope", scope, n.cluster, n.status)
        groups.setdefault(key, []).append(n)
        key_of[n.name] = key
    names, nodes, collapsed = {}, [], 0
    taken = {n.name for n in view.nodes}
    for key, members in groups.items():
        if len(members) == 1:  # nothing to merge: the op keeps its own node
            names[key] = members[0].name
            nodes.append(members[0])
            continue
        count = sum(m.count for m in members)
        collapsed += len(members)
        types = collections.Counter(m.type for m in members)
        summary = ", ".join(f"{t}\u00d7{c}" if c > 1 else t for t, c in types.most_common(4))
        if len(types) > 4:
            summary += ", ..."
        label = (key[1] + "/*") if key[0] == "scope" else f"{key[1]} ops"
        # One scope may be merged on both sides of a cluster boundary: the names tell them apart.
        name = label + (f" @{key[2]}" if key[2] is not None else f" ({key[-1]})")
        while name in taken:
            name += "'"
        taken.add(name)
        reasons = sorted({m.reason for m in members if m.reason})
        names[key] = name
        nodes.append(Node(name, summary, f"{count} ops", key[-1], key[2], "; ".join(reasons[:3]), count))
    edges, seen = [], set()
    for e in view.edges:
        a, b = names[key_of[e.src]], names[key_of[e.dst]]
        if a != b and (a, b) not in seen:
            seen.add((a, b))
            edges.append(Edge(a, b, e.label))
    how = "name scopes" if depth else "op types per cluster"
    note = (f"{collapsed} of {len(view.nodes)} ops collapsed into {sum(1 for n in nodes if n.count > 1)} "
            f"nodes by {how} (to keep the picture near {max_nodes} nodes; the graph's "
            "as_dot() has every op)")
    return GraphView(view.title, nodes, edges, view.clusters, note)


def view_of(graph, title, cluster_of, backends=None, reasons=None, kept=None):
    """The view of a traced graph (duck-typed: get_operations() of ops with name, type,
    inputs and outputs): cluster_of maps op names to compiled clusters, backends clusters to
    their backend, reasons eager ops to why, kept is the set of ops optimization kept."""
    backends = backends or {}
    reasons = reasons or {}
    nodes, edges = [], []
    clusters = collections.OrderedDict()
    for op in graph.get_operations():
        outs = op.outputs
        shape = ", ".join(f"{t.dtype.name}{list(t.shape)}" for t in outs[:2]) + (", ..." if len(outs) > 2 else "")
        cluster = cluster_of.get(op.name)
        if op.type == "Placeholder":
            status, why = "input", "function argument"
        elif cluster is not None:
            status, why = "compiled", f"in {cluster}"
            clusters.setdefault(cluster, backends.get(cluster, "cpu"))
        elif kept is not None and op.name not in kept:
            status, why = "removed", "removed by graph optimization (constant folding, CSE or DCE)"
        else:
            status, why = "eager", reasons.get(op.name, "not clustered")
        nodes.append(Node(op.name, op.type, shape, status, cluster, why, 1))
        for t in op.inputs:
            edges.append(Edge(t.op.name, op.name, ""))
    return GraphView(title, nodes, edges, clusters)


def _q(text):
    """A DOT string: quotes and backslashes escaped, newlines as DOT's line breaks."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(view):
    """Graphviz text: compiled clusters as boxes; compiled ops filled blue, eager ops dashed
    yellow, ops removed by optimization dotted grey."""
    ids = {n.name: f"n{i}" for i, n in enumerate(view.nodes)}
    lines = ["digraph G {", "  rankdir=TB;", ('  node [shape=box, style="rounded,filled", fontsize=10, '
             'fontname="Helvetica"];'), '  edge [fontsize=8, fontname="Helvetica", color="#666666"];']

    def node_line(n):
        fill, border = STATUS_STYLE.get(n.status, STATUS_STYLE["eager"])
        label = f"{n.name}\n{n.type}\n{n.shape}" if n.shape else f"{n.name}\n{n.type}"
        tip = f"{n.status}: {n.reason}" if n.reason else n.status
        style = "rounded,filled" + ("" if border == "solid" else "," + border)
        return (f"  {ids[n.name]} [label={_q(label)}, fillcolor={_q(fill)}, style={_q(style)}, "
                f"tooltip={_q(tip)}, class={_q('jf_' + n.status)}];")

    by_cluster = collections.OrderedDict((c, []) for c in view.clusters)
    for n in view.nodes:
        if n.cluster in by_cluster and n.status == "compiled":
            by_cluster[n.cluster].append(n)
        else:
            lines.append(node_line(n))
    for i, (c, members) in enumerate(by_cluster.items()):
        lines.append(f"  subgraph cluster_{i} {{")
        lines.append(f"    label={_q(f'{c} (compiled, {view.clusters[c]})')}; style=\"rounded,bold\"; "
                     f'color="#0d6efd"; fontcolor="#0d6efd"; fontsize=11;')
        lines.extend("  " + node_line(n) for n in members)
        lines.append("  }")
    for e in view.edges:
        if e.src in ids and e.dst in ids:
            lab = f" [label={_q(e.label)}]" if e.label else ""
            lines.append(f"  {ids[e.src]} -> {ids[e.dst]}{lab};")
    lines.append("}")
    return "\n".join(lines)


def to_svg(view):
    """The SVG Graphviz draws, or None where `dot` or the graphviz package is missing."""
    graphviz = globals()["_graphviz"] if "_graphviz" in globals() else __getattr__("_graphviz")
    if graphviz is None or find_dot() is None:
        return None
    svg = graphviz.Source(to_dot(view)).pipe(format="svg", encoding="utf-8")
    return svg[svg.index("<svg"):]  # drop the XML prologue: the SVG sits inside HTML


_CSS = ("<style>.jf-graph{font-family:Helvetica,Arial,sans-serif;font-size:12px}"
        ".jf-graph table{border-collapse:collapse;margin:4px 0}"
        "div.jf-graph table td,div.jf-graph table th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
        f"div.jf-graph table tr.jf-compiled td{{background:{COMPILED_FILL}}}"
        f"div.jf-graph table tr.jf-eager td{{background:{EAGER_FILL}}}"
        ".jf-graph .jf-cluster{border:2px solid #0d6efd;border-radius:6px;padding:4px;margin:6px 0}"
        ".jf-graph .jf-note{color:#555;font-style:italic}</style>")


def _legend():
    return (f'<div><span style="background:{COMPILED_FILL};border:1px solid #0d6efd;padding:0 6px">'
            f'compiled op</span> inside a blue box: a compiled cluster &nbsp; '
            f'<span style="background:{EAGER_FILL};border:1px dashed #999;padding:0 6px">eager op</span> '
            'runs on an eager kernel (hover for the reason)</div>')


def _header(view):
    n_ops = sum(n.count for n in view.nodes if n.status != "input")
    eager = sum(n.count for n in view.nodes if n.status == "eager")
    parts = [(f"<b>{html.escape(view.title)}</b>: {n_ops} ops, {len(view.clusters)} compiled "
             f"cluster(s), {eager} eager op(s)")]
    if view.note:
        parts.append(f'<div class="jf-note">{html.escape(view.note)}</div>')
    return "".join(parts)


def _op_rows(nodes):
    return "".join(f'<tr class="jf-{n.status}"><td>{html.escape(n.name)}</td><td>{html.escape(n.type)}</td>'
                   f"<td>{html.escape(n.shape)}</td><td>{n.status}</td><td>{html.escape(n.reason or '')}</td></tr>"
                   for n in nodes)


def to_html_table(view, why=None):
    """The dependency-free picture: one bordered box per compiled cluster listing its ops, then
    the ops that run eagerly with their reasons."""
    head = "<tr><th>op</th><th>type</th><th>shape</th><th>status</th><th>reason</th></tr>"
    out = [_CSS, '<div class="jf-graph">', _header(view), _legend()]
    if why:
        out.append(f'<div class="jf-note">{html.escape(why)}</div>')
    for c, backend in view.clusters.items():
        members = [n for n in view.nodes if n.cluster == c and n.status == "compiled"]
        out.append(f'<div class="jf-cluster"><b>{html.escape(c)}</b> (compiled, {html.escape(backend)}): '
                   f"{sum(n.count for n in members)} op(s)<table>{head}{_op_rows(members)}</table></div>")
    rest = [n for n in view.nodes if not (n.cluster in view.clusters and n.status == "compiled")]
    if rest:
        out.append(f"<div><b>outside compiled clusters</b><table>{head}{_op_rows(rest)}</table></div>")
    out.append("</div>")
    return "".join(out)


def render_html(view, max_nodes=MAX_NODES):
    """HTML for a notebook: the Graphviz SVG when `dot` runs, else the HTML table; whatever
    fails, something is shown and says why."""
    try:
        view = collapse(view, max_nodes)
    except Exception as e:  # noqa: BLE001 - a display must not raise
        view.note = f"could not collapse name scopes ({type(e).__name__}: {e})"
    try:
        svg = to_svg(view)
        if svg is not None:
            return f'{_CSS}<div class="jf-graph">{_header(view)}{_legend()}{svg}</div>'
        why = "Graphviz's dot program was not found: showing a table (install Debian's graphviz)"
    except Exception as e:  # noqa: BLE001
        why = f"Graphviz failed ({type(e).__name__}: {e}): showing a table"
    try:
        return to_html_table(view, why)
    except Exception as e:  # noqa: BLE001
        return f"<pre>{html.escape(view.title)}: cannot be displayed ({type(e).__name__}: {html.escape(str(e))})</pre>"
