"""String tensors as graph values: a jf.function traces once per string spec (shape and dtype),
the values flow at run time through placeholders, string ops, control flow and outputs, and the
string ops stay out of compiled code as TF's XLA keeps them out. Expected values are TF 2.21's."""
import sys

import numpy as np
import pytest
from conftest import run_in_child

import jitflow as jf


def _counting(fn, **kw):
    traces = []

    def body(*a):
        traces.append(1)
        return fn(*a)
    return jf.function(body, **kw), traces


@pytest.mark.parametrize("op, want_a, want_b", [
    (lambda s: s + s, b"aa", b"bb"),
    (lambda s: "<" + s + b">", b"<a>", b"<b>"),
    (lambda s: jf.strings.join([s, "x", s], separator="-"), b"a-x-a", b"b-x-b"),
    (lambda s: jf.strings.length(s), 1, 1),
    (lambda s: jf.strings.length(s + "\u00e9", unit="UTF8_CHAR"), 2, 2),
    (lambda s: s == "b", False, True),
    (lambda s: s != "b", True, False),
    (lambda s: jf.strings.format("<{}>", [s]), b'<"a">', b'<"b">'),
    (lambda s: jf.py_function(lambda x: x + b"!", [s], jf.string), b"a!", b"b!"),
    (lambda s: jf.identity(s), b"a", b"b"),
])
def test_scalar_string_traces_once(op, want_a, want_b):
    f, traces = _counting(op)
    a, b = f(jf.constant("a")), f(jf.constant("b"))
    assert a.numpy() == want_a and b.numpy() == want_b
    assert len(traces) == 1


def test_vectors_of_any_length_under_an_all_none_signature():
    f, traces = _counting(lambda s: jf.strings.join([s, s], separator="+"),
                          input_signature=[jf.TensorSpec([None], jf.string)])
    assert f(jf.constant(["a"])).numpy().tolist() == [b"a+a"]
    out = f(jf.constant(["x", "yz", ""]))
    assert out.numpy().tolist() == [b"x+x", b"yz+yz", b"+"]
    assert f(jf.constant([], dtype=jf.string)).numpy().tolist() == []
    assert len(traces) == 1
    g, traces = _counting(lambda s: (jf.strings.length(s), s == "b"),
                          input_signature=[jf.TensorSpec([None], jf.string)])
    n, eq = g(jf.constant(["a", "bb", "b"]))
    assert n.numpy().tolist() == [1, 2, 1] and eq.numpy().tolist() == [False, False, True]
    n, eq = g(jf.constant(["b"]))
    assert n.numpy().tolist() == [1] and eq.numpy().tolist() == [True] and len(traces) == 1


def test_unspecified_shapes_trace_per_shape():
    f, traces = _counting(lambda s: s + "!")
    assert f(jf.constant(["a", "b"])).numpy().tolist() == [b"a!", b"b!"]
    assert f(jf.constant(["c", "d"])).numpy().tolist() == [b"c!", b"d!"]
    assert f(jf.constant(["e"])).numpy().tolist() == [b"e!"]
    assert len(traces) == 2  # one per shape, as for any dtype
    g, traces = _counting(lambda s: jf.strings.join([s, "!"]))
    assert g("python").numpy() == b"python!" and g("other").numpy() == b"other!"
    assert len(traces) == 2  # Python strings: part of the key by value, as TF


def test_concrete_function_of_a_string_spec():
    f = jf.function(lambda s: s + s)
    cf = f.get_concrete_function(jf.TensorSpec([], jf.string))
    assert cf(jf.constant("b")).numpy() == b"bb"  # TF: b'bb' (a value-keyed trace gave b'aa')
    assert cf(jf.constant("c")).numpy() == b"cc"
    cf2 = f.get_concrete_function(jf.constant("a"))
    assert cf2(jf.constant("b")).numpy() == b"bb"
    with pytest.raises(jf.errors.InvalidArgumentError, match="expected to be a string tensor but is a int32"):
        cf(jf.constant(1))
    with pytest.raises(TypeError):
        cf(1)
    placeholders = [n for n in cf.graph.as_graph_def().node if n.op == "Placeholder"]
    ops = [op.type for op in cf.graph.get_operations()]
    assert "StringJoin" in ops and "Placeholder" in ops, ops
    assert cf.graph.inputs[0].dtype == jf.string
    assert [n.attr["dtype"] for n in placeholders] == [jf.string]


def test_input_signature_of_strings_refuses_other_arguments():
    g = jf.function(lambda s: s + s, input_signature=[jf.TensorSpec([None], jf.string)])
    assert g(jf.constant(["a", "b"])).numpy().tolist() == [b"aa", b"bb"]
    with pytest.raises(TypeError, match="string"):
        g(jf.constant([1]))
    with pytest.raises(TypeError):
        g(jf.constant("a"))  # rank 0 for [None]


def test_control_flow_carries_strings():
    @jf.function
    def h(s, p):
        return jf.cond(p, lambda: s + "x", lambda: s)
    assert h(jf.constant("a"), jf.constant(True)).numpy() == b"ax"  # TF 2.21
    assert h(jf.constant("a"), jf.constant(False)).numpy() == b"a"

    @jf.function
    def w(s):
        i = jf.constant(0)
        while i < 3:
            s = s + "a"
            i += 1
        return s
    assert w(jf.constant("b")).numpy() == b"baaa"  # TF 2.21
    assert w(jf.constant("q")).numpy() == b"qaaa"

    @jf.function
    def autograph_if(s, n):
        if n > 0:
            s = jf.strings.join([s, s])
        else:
            s = s + "-"
        return s
    assert autograph_if(jf.constant("z"), jf.constant(1)).numpy() == b"zz"
    assert autograph_if(jf.constant("z"), jf.constant(0)).numpy() == b"z-"

    @jf.function
    def const_branch(s, p):
        return jf.cond(p, lambda: jf.constant("const"), lambda: s)
    assert const_branch(jf.constant("x"), jf.constant(True)).numpy() == b"const"
    assert const_branch(jf.constant("x"), jf.constant(False)).numpy() == b"x"

    @jf.function
    def grow(n):
        s = jf.constant("")  # an eager string entering a traced loop
        for _ in jf.range(n):
            s = s + "a"
        return s
    assert grow(jf.constant(3)).numpy() == b"aaa" and grow(jf.constant(0)).numpy() == b""


def test_outputs_look_like_eager_string_tensors():
    f = jf.function(lambda s: (s, jf.constant("k"), s + s))
    a, k, b = f(jf.constant(["p", "q"]))
    assert repr(a) == "<jf.Tensor: shape=(2,), dtype=string, numpy=array([b'p', b'q'], dtype=object)>"
    assert str(b) == "jf.Tensor([b'pp' b'qq'], shape=(2,), dtype=string)"
    assert a.numpy().dtype == object and k.numpy() == b"k" and a.dtype == jf.string
    assert (b == "pp").numpy().tolist() == [True, False]  # eager string ops on a function's output
    assert jf.strings.length(b).numpy().tolist() == [2, 2]


def test_format_print_and_parsing_run_when_the_function_runs(capsys):
    @jf.function
    def pr(s, x):
        jf.print(s, output_stream=sys.stdout)
        jf.print(s, [s], output_stream=sys.stdout)
        return jf.strings.format("{} and {}", [s, x])
    out = pr(jf.constant("q"), jf.constant([1.5, 2.0]))
    assert out.numpy() == b'"q" and [1.5 2]'  # TF 2.21
    assert capsys.readouterr().out == 'q\n"q" ["q"]\n'  # TF 2.21's graph tf.print
    out = pr(jf.constant("r"), jf.constant([3.0, 4.0]))
    assert out.numpy() == b'"r" and [3 4]' and capsys.readouterr().out == 'r\n"r" ["r"]\n'

    num = jf.function(lambda s: jf.strings.to_number(s) * 2)
    np.testing.assert_array_equal(num(jf.constant(["1.5", "2"])).numpy(), np.float32([3.0, 4.0]))
    np.testing.assert_array_equal(num(jf.constant(["-1", "8"])).numpy(), np.float32([-2.0, 16.0]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="StringToNumberOp could not correctly convert string: x"):
        num(jf.constant(["x", "1"]))
    s = jf.function(lambda x: jf.strings.as_string(x))(jf.constant([1.5, 2.0]))
    assert s.numpy().tolist() == [b"1.500000", b"2.000000"]  # TF 2.21


def test_string_ops_stay_out_of_compiled_code():
    def body(s, x):
        return jf.strings.length(s + "!"), x * 2.0
    with pytest.raises(jf.errors.InvalidArgumentError, match="StringJoin"):
        jf.function(body, jit_compile=True)(jf.constant("ab"), jf.constant([1.0]))

    def scoped(s, x):
        with jf.jit_scope():
            return body(s, x)
    f = jf.function(scoped)
    before = jf.debugging.stats()["cluster_runs"]
    n, y = f(jf.constant("ab"), jf.constant([1.0, 2.0]))
    assert int(n) == 3 and y.numpy().tolist() == [2.0, 4.0]
    assert jf.debugging.stats()["cluster_runs"] > before  # the numeric part compiled
    cf = f.get_concrete_function(jf.constant("ab"), jf.constant([1.0, 2.0]))
    clustered = {op for c in cf.clusters for op in c.ops}
    assert not any("StringJoin" in op or "StringLength" in op for op in clustered), clustered


def test_comparisons_of_traced_strings():
    f = jf.function(lambda s: (jf.equal(s, "a"), jf.math.not_equal(s, ["a", "b"]), s == ["a", "b", "c"]))
    eq, ne, other_shape = f(jf.constant(["a", "b"]))
    assert eq.numpy().tolist() == [True, False] and ne.numpy().tolist() == [False, False]
    assert not other_shape.numpy() and other_shape.dtype == jf.bool  # TF 2: shapes that do not broadcast
    with pytest.raises(TypeError, match="Cannot convert 1 to EagerTensor of dtype string"):
        jf.function(lambda s: s == 1)(jf.constant(["a"]))  # TF: TypeError too
    with pytest.raises(TypeError, match="Input 'y' of 'Equal' Op has type int32 that does not match type string"):
        jf.function(lambda s: s == jf.constant(1))(jf.constant(["a"]))


def test_numeric_ops_refuse_strings_with_tfs_type_error():
    with pytest.raises(TypeError, match="DataType string not in list of allowed values"):
        jf.function(lambda s: jf.exp(s))(jf.constant("a"))
    with pytest.raises(TypeError, match="StringJoin"):
        jf.function(lambda s: jf.strings.join([s, jf.constant(1)]))(jf.constant("a"))


def test_every_op_refuses_a_string_input_without_crashing():
    # Each record that does not claim strings refuses one in any input with TF's TypeError,
    # before a shape function or kernel sees it; the child process catches a crash.
    out = run_in_child('''
        s = jf.constant(["a", "b"])
        wrong = []
        checked = 0
        for r in jf._C.op_records():
            if "string" in r["types"] or r["control_flow"] or r["num_inputs"] == 0 or r["name"] == "XlaLaunch":
                continue
            n = r["num_inputs"] if r["num_inputs"] > 0 else 2
            for k in range(n):  # the string in each input position, numbers in the others
                args = [jf.constant([1.0, 2.0]) for _ in range(n)]
                args[k] = s
                try:
                    jf._C.execute_n(r["name"], args, {})
                    wrong.append((r["name"], k, "accepted"))
                except TypeError as e:
                    if "has DataType string not in list of allowed values" not in str(e):
                        wrong.append((r["name"], k, str(e)[:80]))
                except Exception as e:
                    wrong.append((r["name"], k, type(e).__name__))
                checked += 1
        report(lambda: [checked, wrong])
    ''')
    checked, wrong = out["value"]
    assert checked > 150 and not wrong, wrong


def test_a_tape_around_a_function_with_string_arguments():
    f = jf.function(lambda s, x: (jf.strings.length(s), x * x * jf.cast(jf.strings.length(s), jf.float32)))
    x = jf.constant(2.0)
    with jf.GradientTape() as tape:
        tape.watch(x)
        n, y = f(jf.constant("abc"), x)
    assert int(n) == 3 and float(y) == 12.0
    assert float(tape.gradient(y, x)) == 12.0  # d/dx 3 x^2 at 2
