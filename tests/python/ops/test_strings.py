"""jf.string tensors (eager values: core/strings.py) and jf.strings.join/length/format/as_string/
to_number/split, with the values, printing and errors TF 2.21 gives; string arguments of
jf.function, string ops inside traced and compiled functions (more: tracing/test_string_inputs.py)."""
import numpy as np
import pytest

import jitflow as jf


def test_constants_numpy_and_dtype():
    s = jf.constant("a")
    assert s.dtype == jf.string and s.dtype.name == "string" and tuple(s.shape) == ()
    assert s.numpy() == b"a" and isinstance(s.numpy(), bytes)
    v = jf.constant(["a", "bc"])
    got = v.numpy()
    assert got.dtype == object and got.tolist() == [b"a", b"bc"] and tuple(v.shape) == (2,)
    assert jf.constant("héllo").numpy() == "héllo".encode()
    assert jf.constant(b"x\xff").numpy() == b"x\xff"
    m = jf.constant([["a", "b"], ["c", "d"]])
    assert tuple(m.shape) == (2, 2) and m.numpy()[1, 0] == b"c"
    assert jf.convert_to_tensor("a").numpy() == b"a"
    assert jf.convert_to_tensor(np.array(["a", "b"])).numpy().tolist() == [b"a", b"b"]
    assert jf.convert_to_tensor(np.array([b"a", b"b"])).numpy().tolist() == [b"a", b"b"]
    e = jf.constant([], dtype=jf.string)
    assert tuple(e.shape) == (0,) and e.numpy().dtype == object
    assert jf.constant("a", shape=[2]).numpy().tolist() == [b"a", b"a"]
    assert jf.as_dtype("string") is jf.string and jf.dtypes.string is jf.string
    assert repr(jf.string) == "jf.string" and str(jf.string) == "<dtype: 'string'>"
    assert jf.string.as_numpy_dtype is object and not jf.string.is_floating
    assert jf.string.size == 0  # TF 2.21


def test_conversion_errors_as_tf():
    with pytest.raises(ValueError, match="Can't convert Python sequence with mixed types to Tensor."):
        jf.constant(["a", 1])
    with pytest.raises(TypeError, match="Cannot convert 1 to EagerTensor of dtype string"):
        jf.constant(1, dtype=jf.string)
    with pytest.raises(TypeError, match="Cannot convert '1' to EagerTensor of dtype float"):
        jf.constant("1", dtype=jf.float32)
    with pytest.raises(ValueError, match="non-rectangular"):
        jf.constant([["a"], ["b", "c"]])


def test_printing_like_tf():
    assert str(jf.constant("a")) == "jf.Tensor(b'a', shape=(), dtype=string)"
    assert str(jf.constant(["a", "bc"])) == "jf.Tensor([b'a' b'bc'], shape=(2,), dtype=string)"
    assert repr(jf.constant("a")) == "<jf.Tensor: shape=(), dtype=string, numpy=b'a'>"
    assert repr(jf.constant(["a", "bc"])) == \
        "<jf.Tensor: shape=(2,), dtype=string, numpy=array([b'a', b'bc'], dtype=object)>"


def test_equality_elementwise():
    a = jf.constant(["a", "b"])
    r = a == jf.constant(["a", "c"])
    assert isinstance(r, jf.Tensor) and r.dtype == jf.bool
    np.testing.assert_array_equal(r.numpy(), [True, False])
    np.testing.assert_array_equal((a == "a").numpy(), [True, False])
    np.testing.assert_array_equal((a != "a").numpy(), [False, True])
    np.testing.assert_array_equal(("b" == a).numpy(), [False, True])
    assert (a == jf.constant(["a", "b", "c"])).numpy() == np.False_  # TF 2: incompatible shapes
    assert (a == None) is False
    with pytest.raises(TypeError, match="Cannot convert 1 to EagerTensor of dtype string"):
        a == 1  # noqa: B015
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)
    assert {a.ref(): 1}[a.ref()] == 1 and a.ref().deref() is a
    np.testing.assert_array_equal((a + "x").numpy().tolist(), [b"ax", b"bx"])
    np.testing.assert_array_equal(("x" + a).numpy().tolist(), [b"xa", b"xb"])


def test_indexing_len_iter_bool():
    v = jf.constant(["a", "bc", "d"])
    assert v[1].numpy() == b"bc" and v[1:].numpy().tolist() == [b"bc", b"d"]
    assert v[jf.constant(2)].numpy() == b"d"
    assert len(v) == 3 and [t.numpy() for t in v] == [b"a", b"bc", b"d"]
    assert bool(jf.constant("a")) and not bool(jf.constant(""))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(v)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(jf.constant("a"))


def test_join():
    out = jf.strings.join(["a", jf.constant(["x", "y"])], separator="-")
    assert out.numpy().tolist() == [b"a-x", b"a-y"]
    assert jf.strings.join([["a", "b"], ["c", "d"]], separator=", ").numpy().tolist() == [b"a, c", b"b, d"]
    assert jf.strings.join([]).numpy() == b""
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Input shapes do not match: \[3\] vs. \[2\]"):
        jf.strings.join([jf.constant(["a", "b", "c"]), jf.constant(["x", "y"])])


def test_length():
    s = jf.constant(["héllo", "ab"])
    r = jf.strings.length(s)
    assert r.dtype == jf.int32
    np.testing.assert_array_equal(r.numpy(), [6, 2])
    np.testing.assert_array_equal(jf.strings.length(s, unit="UTF8_CHAR").numpy(), [5, 2])
    assert int(jf.strings.length(jf.constant(b"\xff\xfe"), unit="UTF8_CHAR")) == 2  # TF 2.21: 2
    assert int(jf.strings.length("abc")) == 3
    assert tuple(jf.strings.length(jf.constant([], dtype=jf.string)).shape) == (0,)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Value for attr 'unit' of \"X\" is not in the "
                                                             'list of allowed values: "BYTE", "UTF8_CHAR"'):
        jf.strings.length("a", unit="X")
    with pytest.raises(jf.errors.InvalidArgumentError, match="expected to be a string tensor but is a float32"):
        jf.strings.length(jf.constant([1.0]))


# (template, inputs, kwargs, TF 2.21's result)
_FORMAT = [
    ("x={} y={}", lambda: (jf.constant([1.5, 2.0]), jf.constant(3)), {}, b"x=[1.5 2] y=3"),
    ("s={}", lambda: jf.constant(["a", "b"]), {}, b's=["a" "b"]'),
    ("{}", lambda: jf.constant("abc"), {}, b'"abc"'),
    ("{}", lambda: jf.range(10), {}, b"[0 1 2 ... 7 8 9]"),
    ("{}", lambda: jf.range(10), {"summarize": 2}, b"[0 1 ... 8 9]"),
    ("{}", lambda: jf.range(10), {"summarize": -1}, b"[0 1 2 3 4 5 6 7 8 9]"),
    ("{}", lambda: jf.reshape(jf.range(6), [2, 3]), {}, b"[[0 1 2]\n [3 4 5]]"),
    ("{}", lambda: jf.reshape(jf.range(8), [2, 2, 2]), {}, b"[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"),
    ("{}", lambda: jf.reshape(jf.range(64), [8, 8]), {"summarize": 2},
     b"[[0 1 ... 6 7]\n [8 9 ... 14 15]\n ...\n [48 49 ... 54 55]\n [56 57 ... 62 63]]"),
    ("{}", lambda: jf.constant(1.0), {}, b"1"),
    ("{}", lambda: jf.constant(1 / 3, jf.float64), {}, b"0.33333333333333331"),
    ("{}", lambda: jf.constant(1 / 3, jf.float32), {}, b"0.333333343"),
    ("{}", lambda: jf.constant([0.1, 1e20, 1e-5, np.nan, -np.inf]), {}, b"[0.1 1e+20 1e-05 nan -inf]"),
    ("{}", lambda: jf.constant([True, False]), {}, b"[1 0]"),
    ("{}", lambda: jf.zeros([0]), {}, b"[]"),
    ("{}", lambda: jf.constant([2 ** 40], jf.int64), {}, b"[1099511627776]"),
]


@pytest.mark.parametrize("template,inputs,kwargs,want", _FORMAT)
def test_format(template, inputs, kwargs, want):
    out = jf.strings.format(template, inputs(), **kwargs)
    assert out.dtype == jf.string and out.numpy() == want


def test_format_placeholder_count():
    with pytest.raises(ValueError, match="The template expects 2 tensors, but the inputs only has 1."):
        jf.strings.format("{} {}", [jf.constant(1)])


_AS_STRING = [
    (lambda: jf.constant([1.5, 2.0, 1 / 3]), {}, [b"1.500000", b"2.000000", b"0.333333"]),
    (lambda: jf.constant([1 / 3, 1e20, 1e-7], jf.float64), {},
     [b"0.333333", b"100000000000000000000.000000", b"0.000000"]),
    (lambda: jf.constant([1, -2]), {}, [b"1", b"-2"]),
    (lambda: jf.constant([2 ** 40], jf.int64), {}, [b"1099511627776"]),
    (lambda: jf.constant([True, False]), {}, [b"true", b"false"]),
    (lambda: jf.constant([True]), {"width": 6}, [b"true"]),
    (lambda: jf.constant([1.5, 2.0]), {"precision": 3}, [b"1.500", b"2.000"]),
    (lambda: jf.constant([1.5, 2.0]), {"scientific": True}, [b"1.500000e+00", b"2.000000e+00"]),
    (lambda: jf.constant([1.5, 2.0, 1e20]), {"shortest": True}, [b"1.5", b"2", b"1e+20"]),
    (lambda: jf.constant([1, 22]), {"width": 4}, [b"   1", b"  22"]),
    (lambda: jf.constant([1, 22]), {"width": 4, "fill": "0"}, [b"0001", b"0022"]),
    (lambda: jf.constant([7]), {"width": 4, "fill": "-"}, [b"7   "]),
    (lambda: jf.constant([1.5]), {"width": 10, "precision": 2}, [b"      1.50"]),
    (lambda: jf.constant([np.nan, np.inf, -np.inf]), {}, [b"nan", b"inf", b"-inf"]),
    (lambda: jf.constant(["a"]), {}, [b"a"]),
]


@pytest.mark.parametrize("x,kwargs,want", _AS_STRING)
def test_as_string(x, kwargs, want):
    out = jf.strings.as_string(x(), **kwargs)
    assert out.dtype == jf.string and out.numpy().tolist() == want


def test_as_string_errors():
    with pytest.raises(jf.errors.InvalidArgumentError, match="precision not supported for datatype int32"):
        jf.strings.as_string(jf.constant([1]), precision=2)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Cannot select both scientific and shortest"):
        jf.strings.as_string(jf.constant([1.0]), scientific=True, shortest=True)
    with pytest.raises(jf.errors.InvalidArgumentError, match='Fill argument not supported: "x"'):
        jf.strings.as_string(jf.constant([7]), width=4, fill="x")


def test_to_number():
    r = jf.strings.to_number(jf.constant(["1.5", "2", " 3", "+4", "0x10", "1e3"]))
    assert r.dtype == jf.float32
    np.testing.assert_array_equal(r.numpy(), [1.5, 2, 3, 4, 16, 1000])
    r = jf.strings.to_number(jf.constant(["nan", "inf", "-inf", "infinity", "1e40"]))
    np.testing.assert_array_equal(r.numpy(), np.array([np.nan, np.inf, -np.inf, np.inf, np.inf], np.float32))
    r = jf.strings.to_number(jf.constant(["0.1"]), out_type=jf.float64)
    assert r.dtype == jf.float64 and r.numpy()[0] == 0.1
    r = jf.strings.to_number(jf.constant(["1", "-2", " 3 "]), out_type=jf.int32)
    assert r.dtype == jf.int32 and r.numpy().tolist() == [1, -2, 3]
    r = jf.strings.to_number(jf.constant([["9999999999"]]), out_type=jf.int64)
    assert r.dtype == jf.int64 and r.numpy().tolist() == [[9999999999]]
    for bad, out_type in [("x", None), ("", None), ("1.5", jf.int32), ("99999999999", jf.int32),
                          ("0x10", jf.int32), ("1_0", jf.int32), ("1_0", None)]:
        with pytest.raises(jf.errors.InvalidArgumentError,
                           match=f"StringToNumberOp could not correctly convert string: {bad}"):
            jf.strings.to_number(jf.constant([bad]), out_type=out_type)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Value for attr 'out_type' of bool"):
        jf.strings.to_number(jf.constant(["1"]), out_type=jf.bool)
    with pytest.raises(jf.errors.InvalidArgumentError, match="expected to be a string tensor but is a float32"):
        jf.strings.to_number(jf.constant([1.0]))


def test_split():
    assert jf.strings.split(jf.constant("a b  c")).numpy().tolist() == [b"a", b"b", b"c"]
    assert jf.strings.split(jf.constant("a,b,,c"), sep=",").numpy().tolist() == [b"a", b"b", b"", b"c"]
    assert jf.strings.split(jf.constant("a b c"), maxsplit=1).numpy().tolist() == [b"a", b"b c"]
    assert jf.strings.split(jf.constant("a b"), sep="").numpy().tolist() == [b"a", b"b"]
    r = jf.strings.split(jf.constant(["a b", "c d e"]))  # TF: a RaggedTensor
    assert r.to_list() == [[b"a", b"b"], [b"c", b"d", b"e"]]
    assert repr(r) == "<jf.RaggedTensor [[b'a', b'b'], [b'c', b'd', b'e']]>"
    assert r.row_splits.numpy().tolist() == [0, 2, 5] and r.flat_values.numpy().tolist() == \
        [b"a", b"b", b"c", b"d", b"e"]
    assert len(r) == 2 and r[1].numpy().tolist() == [b"c", b"d", b"e"] and int(r.nrows()) == 2
    with pytest.raises(ValueError, match="scalar or a vector"):
        jf.strings.split(jf.constant([["a b"]]))


def test_string_arguments_through_jf_function():
    traces = []

    @jf.function
    def f(s):
        traces.append(1)
        return jf.strings.join([s, "!"])
    assert f("a").numpy() == b"a!"
    assert f("b").numpy() == b"b!"  # Python strings: one trace per value, as TF
    assert f(jf.constant("c")).numpy() == b"c!"
    assert f(jf.constant("d")).numpy() == b"d!"  # string tensors: one trace per shape, as TF
    assert f(jf.constant(["c", "d"])).numpy().tolist() == [b"c!", b"d!"]
    assert len(traces) == 4


def test_string_ops_in_traced_and_compiled_functions():
    def body(s, x):
        n = jf.strings.to_number(s)  # a graph op: runs when the function runs
        return x * n + jf.cast(jf.strings.length(s), jf.float32)
    f = jf.function(body)
    out = f(jf.constant(["1.5", "20"]), jf.constant([2.0, 3.0]))
    np.testing.assert_allclose(out.numpy(), [2 * 1.5 + 3, 3 * 20 + 2])
    with pytest.raises(jf.errors.InvalidArgumentError, match="StringToNumber"):  # TF: XLA has no strings
        jf.function(body, jit_compile=True)(jf.constant(["1.5", "20"]), jf.constant([2.0, 3.0]))

    @jf.function
    def g(x):
        return jf.strings.as_string(x)
    assert g(jf.constant([1.0])).numpy().tolist() == [b"1.000000"]  # TF 2.21

    @jf.function
    def h():
        return jf.constant("const"), jf.strings.format("{}", jf.constant([1, 2]))
    a, b = h()
    assert a.numpy() == b"const" and b.numpy() == b"[1 2]"


def test_pickle_and_numeric_ops_refuse():
    import pickle
    s = jf.constant(["a", "b"])
    assert pickle.loads(pickle.dumps(s)).numpy().tolist() == [b"a", b"b"]
    with pytest.raises(TypeError):
        jf.exp(s)


def test_print_like_tf_eager_print(capsys):
    import sys
    jf.print(jf.constant("hi"), jf.constant(["a", "b"]), "lit", output_stream=sys.stdout)
    assert capsys.readouterr().out == '"hi" ["a" "b"] lit\n'  # TF 2.21's eager tf.print


def test_bytes_split():
    # TF 2.21's values
    assert jf.strings.bytes_split(jf.constant("Duck")).numpy().tolist() == [b"D", b"u", b"c", b"k"]
    assert jf.strings.bytes_split(jf.constant(["ab", "c"])).to_list() == [[b"a", b"b"], [b"c"]]
    assert jf.strings.bytes_split(jf.constant("")).shape == (0,)


@pytest.mark.parametrize("traced", [False, True])
def test_as_string_and_format_take_every_dtype(traced):
    # TF 2.21's outputs for the same calls (hard-coded): half values as floats, complex as
    # "(real,imag)" (format shows "?"), every integer width as digits.
    run = (lambda f, x: jf.function(f)(x)) if traced else (lambda f, x: f(x))
    for dt in (jf.float16, jf.bfloat16):
        x = jf.cast(jf.constant([1.5, -2.25, 300.0]), dt)
        assert run(jf.strings.as_string, x).numpy().tolist() == [b"1.500000", b"-2.250000", b"300.000000"]
        assert run(lambda v: jf.strings.format("{}", v), x).numpy() == b"[1.5 -2.25 300]"
    for dt in (jf.complex64, jf.complex128):
        x = jf.constant([1.5, -2.25], dt)
        assert run(lambda v: jf.strings.as_string(v, precision=2), x).numpy().tolist() == [b"(1.50,0.00)",
                                                                                          b"(-2.25,0.00)"]
        assert run(lambda v: jf.strings.format("{}", v), x).numpy() == b"[? ?]"
    for dt in (jf.int8, jf.uint8, jf.int16, jf.uint16, jf.uint32, jf.uint64):
        x = jf.constant([1, 2, 100], dt)
        assert run(jf.strings.as_string, x).numpy().tolist() == [b"1", b"2", b"100"]
        assert run(lambda v: jf.strings.format("{}", v), x).numpy() == b"[1 2 100]"
    assert jf.strings.as_string(jf.constant([1 + 2j], jf.complex64), scientific=True).numpy().tolist() == [
        b"(1.000000e+00,2.000000e+00)"]
    assert jf.strings.as_string(jf.constant([7], jf.int8), width=4, fill="0").numpy().tolist() == [b"0007"]
