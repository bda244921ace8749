"""Executes examples/notebook_tour.ipynb in a real Jupyter kernel (nbclient + ipykernel) and
checks what it displays: the graph of each jit_scope example with one box per compiled cluster,
jf.explain's table, jf.experimental.compare's table and the stats; then again with Graphviz's
`dot` made unavailable inside the kernel, where the same cells show HTML tables instead."""
import pathlib
import re

import nbclient
import nbformat
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples"
NOTEBOOK = EXAMPLES / "notebook_tour.ipynb"

# Run first in the kernel for the second execution: the lookup of `dot` finds nothing.
NO_DOT = "import jitflow.core.graph_display as _gd\n_gd.find_dot = lambda: None"


def _execute(prelude=None):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    if prelude:
        nb.cells.insert(0, nbformat.v4.new_code_cell(prelude))
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(EXAMPLES)}}).execute()
    return nb


def _html_of(nb, marker):
    """The text/html output of the one code cell whose source contains marker."""
    cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    assert len(cells) == 1, marker
    for out in cells[0].outputs:
        assert out.output_type != "error", "".join(out.get("traceback", []))
    htmls = [o["data"]["text/html"] for o in cells[0].outputs if "text/html" in o.get("data", {})]
    assert len(htmls) == 1, f"{marker}: {cells[0].outputs}"
    return htmls[0]


# The cells that draw a graph, and their compiled clusters (the jit_scope page's outcomes).
GRAPHS = {"scopes.get_concrete_function": 2, "only_x.get_concrete_function": 1,
          "grads.get_concrete_function": 3, "lstm_xla.get_concrete_function": 1,
          "unrolled.get_concrete_function": 1}


@pytest.fixture(scope="module")
def with_dot():
    return _execute()


@pytest.fixture(scope="module")
def without_dot():
    return _execute(NO_DOT)


def _check_tables(nb):
    explain = _html_of(nb, "jf.explain(scopes")
    rows = re.findall(r'<tr class="jf-(\w+)"[^>]*><td[^>]*>([\w/]+)</td>', explain)
    assert [(op, status) for status, op in rows] == [
        ("MatMul", "compiled"), ("MatMul_1", "eager"), ("MatMul_2", "compiled"), ("AddV2", "eager")]
    assert "_XlaCompile=False" in explain  # the reason the eager ops were not compiled
    compare = _html_of(nb, "jf.experimental.compare(")
    assert 'class="jf-compare"' in compare and 'class="jf-compare-chart"' in compare
    modes = re.findall(r'<tr><td style="text-align:left">(\w+)</td>', compare)
    assert modes == ["eager", "function", "compiled"]
    assert compare.count('<td style="text-align:left">yes</td>') == 3  # the results agree
    assert "15 op(s) compiled in 1 cluster(s)" in compare
    stats = _html_of(nb, "jf.debugging.stats()")
    runs = int(re.search(r"cluster_runs</td><td[^>]*>(\d+)<", stats).group(1))
    assert runs > 0


def test_graphs_render_as_svg_with_a_box_per_cluster(with_dot):
    for marker, clusters in GRAPHS.items():
        html = _html_of(with_dot, marker)
        assert "<svg" in html, marker
        assert html.count('class="cluster"') == clusters, marker
        assert len(re.findall(r'class="node jf_compiled"', html)) >= clusters, marker
    scopes = _html_of(with_dot, GRAPHS and "scopes.get_concrete_function")
    assert len(re.findall(r'class="node jf_eager"', scopes)) == 2
    unrolled = _html_of(with_dot, "unrolled.get_concrete_function")
    assert re.search(r"\d+ of \d+ ops collapsed into \d+ nodes by name scopes", unrolled)
    assert unrolled.count("<g id=\"node") <= 70  # a picture of a few dozen nodes, not 500


def test_tables_render(with_dot):
    _check_tables(with_dot)


def test_without_dot_the_graphs_are_tables(without_dot):
    for marker, clusters in GRAPHS.items():
        html = _html_of(without_dot, marker)
        assert "<svg" not in html and "dot program was not found" in html, marker
        assert html.count('class="jf-cluster"') == clusters, marker
    scopes = _html_of(without_dot, "scopes.get_concrete_function")
    assert scopes.count('<tr class="jf-eager">') == 2 and scopes.count('<tr class="jf-compiled">') == 2
    _check_tables(without_dot)
