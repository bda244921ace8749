"""The notebook renderers on small graphs: Graphviz's SVG draws one box per compiled cluster
and marks compiled and eager ops apart, the HTML table says the same without `dot`, failures
fall back instead of raising, large graphs collapse by name scope, and the explain report and
the stats print as before while rendering as HTML tables."""
import re

import numpy as np
import pytest

import jitflow as jf
from jitflow.core import graph_display as gd


def _scopes():
    """The jit_scope page's first example: MatMul and MatMul_2 compiled in two clusters,
    MatMul_1 and AddV2 eager (TF's documented outcome)."""
    @jf.function
    def f(a, b):
        with jf.xla.experimental.jit_scope():
            c = jf.matmul(a, b)
        with jf.xla.experimental.jit_scope(compile_ops=False):
            d = jf.matmul(a, c)
        with jf.xla.experimental.jit_scope(compile_ops=lambda node_def: "matmul" in node_def.op.lower()):
            e = jf.matmul(a, b) + d
        return e
    a = jf.constant(np.eye(3, dtype=np.float32))
    return f, a


def _small_view():
    nodes = [gd.Node("x", "Placeholder", "float32[2]", "input", None, "argument", 1),
             gd.Node("Mul", "Mul", "float32[2]", "compiled", "cluster_0", "", 1),
             gd.Node("Exp", "Exp", "float32[2]", "compiled", "cluster_0", "", 1),
             gd.Node("Print", "PrintV2", "", "eager", None, "no compiled kernel", 1)]
    edges = [gd.Edge("x", "Mul", ""), gd.Edge("Mul", "Exp", ""), gd.Edge("Exp", "Print", "")]
    return gd.GraphView("small", nodes, edges, {"cluster_0": "cpu"})


def test_dot_marks_compiled_and_eager_ops():
    dot = gd.to_dot(_small_view())
    body = dot[dot.index("subgraph cluster_0"):]
    body = body[:body.index("}")]
    assert "Mul" in body and "Exp" in body and "Print" not in body  # the box holds the cluster
    assert dot.count('class="jf_compiled"') == 2 and dot.count('class="jf_eager"') == 1
    assert f'fillcolor="{gd.COMPILED_FILL}"' in dot and "dashed" in dot
    assert "Mul\\nMul\\nfloat32[2]" in dot  # name, op type and shape on separate lines


def test_svg_has_one_box_per_cluster_and_styles_ops_apart():
    svg = gd.to_svg(_small_view())
    assert svg.startswith("<svg")
    assert svg.count('class="cluster"') == 1
    assert len(re.findall(r'class="node jf_compiled"', svg)) == 2
    assert len(re.findall(r'class="node jf_eager"', svg)) == 1
    assert "cluster_0 (compiled, cpu)" in svg
    assert "eager: no compiled kernel" in svg  # the reason is the eager node's tooltip


def test_html_table_without_dot(monkeypatch):
    monkeypatch.setattr(gd, "find_dot", lambda: None)
    html = gd.render_html(_small_view())
    assert "<svg" not in html and "dot program was not found" in html
    assert html.count('class="jf-cluster"') == 1
    assert html.count('<tr class="jf-compiled">') == 2 and html.count('<tr class="jf-eager">') == 1
    assert "no compiled kernel" in html


def test_graphviz_failure_falls_back_to_the_table(monkeypatch):
    class Broken:
        def __init__(self, *a, **k):
            raise RuntimeError("dot crashed")
    monkeypatch.setattr(gd._graphviz, "Source", Broken)
    html = gd.render_html(_small_view())
    assert "Graphviz failed (RuntimeError: dot crashed)" in html
    assert html.count('class="jf-cluster"') == 1


def test_a_table_failure_still_displays(monkeypatch):
    monkeypatch.setattr(gd, "find_dot", lambda: None)
    monkeypatch.setattr(gd, "to_html_table", lambda *a: 1 / 0)
    assert "cannot be displayed (ZeroDivisionError" in gd.render_html(_small_view())


def test_large_graphs_collapse_by_name_scope_within_clusters():
    nodes, edges = [gd.Node("x", "Placeholder", "", "input", None, "", 1)], []
    prev = "x"
    for layer in range(20):  # 20 scopes of 10 ops; every layer's last two ops run eagerly
        for k in range(10):
            name = f"layer_{layer}/op_{k}"
            eager = k >= 8
            nodes.append(gd.Node(name, "Mul" if k % 2 else "AddV2", "", "eager" if eager else "compiled",
                                 None if eager else f"cluster_{layer % 2}", "why" if eager else "", 1))
            edges.append(gd.Edge(prev, name, ""))
            prev = name
    view = gd.GraphView("big", nodes, edges, {"cluster_0": "cpu", "cluster_1": "cpu"})
    small = gd.collapse(view, max_nodes=60)
    assert len(small.nodes) == 41  # x, and each layer once in its cluster and once eager
    assert sum(n.count for n in small.nodes) == 201
    assert len({n.name for n in small.nodes}) == len(small.nodes)
    assert "200 of 201 ops collapsed into 40 nodes by name scopes" in small.note
    assert {n.cluster for n in small.nodes if n.status == "compiled"} == {"cluster_0", "cluster_1"}
    svg = gd.to_svg(small)
    assert svg.count('class="cluster"') == 2
    assert "layer_3/* @cluster_1" in svg and "layer_3/* (eager)" in svg
    html = gd.render_html(view)
    assert "collapsed into 40 nodes" in html


def test_concrete_function_renders_its_clusters():
    f, a = _scopes()
    cf = f.get_concrete_function(a, a)
    html = cf._repr_html_()
    assert html.count('class="cluster"') == 2
    assert len(re.findall(r'class="node jf_compiled"', html)) == 2
    assert len(re.findall(r'class="node jf_eager"', html)) == 2
    assert "_XlaCompile=False" in html  # eager ops carry jf.explain's reason
    assert cf.graph._repr_html_().count('class="cluster"') == 2
    fn_html = f._repr_html_()
    assert "1 trace(s)" in fn_html and fn_html.count('class="cluster"') == 2


def test_function_not_traced_yet():
    f = jf.function(lambda x: x + 1)
    assert "not traced yet" in f._repr_html_()


def test_module_shows_variables_and_traced_methods():
    class Dense(jf.Module):
        def __init__(self):
            super().__init__()
            self.w = jf.Variable(np.ones((3, 2), np.float32), name="w")

        @jf.function(jit_compile=True)
        def __call__(self, x):
            return jf.nn.relu(jf.matmul(x, self.w))

    m = Dense()
    m(jf.ones([4, 3]))
    html = m._repr_html_()
    assert "1 variable(s), 6 parameter(s)" in html and "[3, 2]" in html
    assert "method <code>__call__</code>" in html and html.count('class="cluster"') == 1


def test_explain_prints_as_before_and_renders_html():
    f, a = _scopes()
    report = jf.explain(f, a, a)
    text = str(report)
    assert text.splitlines()[0].split() == ["op", "type", "status", "cluster", "reason"]
    assert [r.status for r in report] == ["compiled", "eager", "compiled", "eager"]
    assert repr(report) == text and isinstance(report, list)
    html = report._repr_html_()
    assert html.count('<tr class="jf-compiled"') == 2 and html.count('<tr class="jf-eager"') == 2
    assert "2 op(s) compiled in 2 cluster(s), 2 eager, 0 removed" in html

    class Printer:
        def text(self, s):
            self.out = s
    p = Printer()
    report._repr_pretty_(p, False)
    assert p.out == text


def test_stats_is_the_dict_and_renders_html():
    s = jf.debugging.stats()
    assert isinstance(s, dict) and repr(s) == repr(dict(s))
    html = s._repr_html_()
    for k, v in s.items():
        assert f"{k}</td><td style='text-align:right'>{v}</td>" in html


@pytest.mark.parametrize("bad", [("eager", "xla"), ()])
def test_compare_rejects_unknown_modes(bad):
    with pytest.raises(ValueError, match="modes must be some of"):
        jf.experimental.compare(lambda x: x, jf.ones([1]), modes=bad)
