"""Nested structures: one C++ traversal (cpp/python/nest.h) orders jf.function's signature key,
placeholders, input_signature checks and outputs, jf.nest, and autodiff's sources and results,
with tf.nest's containers for all of them."""
import collections
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import run_in_child

import jitflow as jf
from jitflow import _C

P = collections.namedtuple("P", "x y")
Q = collections.namedtuple("Q", "x y")


def test_dict_insertion_order_gives_one_trace_and_one_binding(rng):
    a = jf.constant(rng.standard_normal((2, 3)).astype(np.float32))
    b = jf.constant(rng.standard_normal(3).astype(np.float32))
    seen_keys = []

    @jf.function
    def f(d):
        seen_keys.append(list(d))
        first, second = d.values()   # positional use of the dict: the canonical (sorted) order
        return first * 2.0 + second

    r1 = f({"a": a, "b": b})
    r2 = f({"b": b, "a": a})
    assert f.experimental_get_tracing_count() == 1
    assert seen_keys == [["a", "b"]]
    want = a.numpy() * 2.0 + b.numpy()
    np.testing.assert_allclose(r1.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(r2.numpy(), want, rtol=1e-6)
    # The placeholders follow the sorted keys: d (a's shape), then d_1 (b's shape).
    cf = f.get_concrete_function({"b": b, "a": a})
    assert [(i.op.name, tuple(i.shape)) for i in cf.inputs] == [("d", (2, 3)), ("d_1", (3,))]
    # The key's leaves come in the same order whatever the insertion order.
    for d in ({"a": a, "b": b}, {"b": b, "a": a}):
        key, leaves, *_ = _C.flatten_inputs((d,), None)
        assert [tuple(t.shape) for t in leaves] == [(2, 3), (3,)]
        assert key == _C.flatten_inputs(({"a": a, "b": b},), None)[0]


def test_keyword_argument_order_gives_one_trace(rng):
    x = jf.constant(rng.standard_normal(4).astype(np.float32))
    y = jf.constant(rng.standard_normal(5).astype(np.float32))

    @jf.function
    def f(u, v):
        return jf.reduce_sum(u) - jf.reduce_sum(v)

    r1 = f(u=x, v=y)
    r2 = f(v=y, u=x)
    assert f.experimental_get_tracing_count() == 1
    want = x.numpy().sum() - y.numpy().sum()
    np.testing.assert_allclose([r1.numpy(), r2.numpy()], [want, want], rtol=1e-5)
    names = [i.op.name for i in f.get_concrete_function(v=y, u=x).inputs]
    assert names == ["u", "v"]


def test_nest_flatten_matches_the_signature_key_order(rng):
    t = [jf.constant(rng.standard_normal(k + 1).astype(np.float32)) for k in range(6)]
    arr = rng.standard_normal(7).astype(np.float32)
    structure = ({"z": [t[0], P(t[1], 3)], "a": (t[2], {"q": t[3], "b": arr})}, [t[4], "s", None],
                 Q(y=t[5], x=1.5))
    _, key_leaves, *_ = _C.flatten_inputs(structure, None)
    leaves, tree = _C.nest_flatten(structure)
    assert [tuple(x.shape) for x in key_leaves] == [tuple(np.shape(x)) for x in leaves]
    assert [x.shape for x in key_leaves] == [(3,), (7,), (4,), (1,), (2,), (5,), (6,)]
    assert tree.num_leaves == 7
    assert tree.paths()[:2] == [(0, "a", 0), (0, "a", 1, "b")]
    rebuilt = tree.unflatten(leaves)
    assert type(rebuilt[2]) is Q and rebuilt[2].x == 1.5 and rebuilt[0]["z"][1].y == 3
    assert list(rebuilt[0]) == ["a", "z"]   # inputs rebuild in the key's (sorted) order
    with pytest.raises(ValueError, match="7 leaves, got 6"):
        tree.unflatten(leaves[:-1])


def test_namedtuple_type_is_part_of_the_signature(rng):
    x = jf.constant(rng.standard_normal(3).astype(np.float32))

    @jf.function
    def f(p):
        return p.x + p.y if isinstance(p, P) else p[0] - p[1]

    np.testing.assert_allclose(f(P(x, x)).numpy(), 2 * x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(f((x, x)).numpy(), 0 * x.numpy())
    assert f.experimental_get_tracing_count() == 2
    assert f(Q(x, x)).numpy().tolist() == [0, 0, 0]
    assert f.experimental_get_tracing_count() == 3


def _check_outputs(out, x):
    xv = x.numpy()
    assert type(out) is dict and list(out) == ["z", "a", "m", "np"]   # the function's own order
    z0, (z1, p) = out["z"]
    assert type(out["z"]) is list and type(out["z"][1]) is tuple and type(p) is P
    np.testing.assert_allclose(z0.numpy(), xv)
    np.testing.assert_allclose(z1.numpy(), xv + 1)
    np.testing.assert_allclose(p.x.numpy(), xv * 2)
    assert p.y == "const"
    assert type(out["a"]) is P and out["a"].x is None
    np.testing.assert_allclose(out["a"].y.numpy(), xv - 1)
    assert isinstance(out["m"], jf.Tensor) and out["m"].numpy() == 3
    assert isinstance(out["np"], jf.Tensor) and out["np"].numpy() == np.float32(0.5)


def test_nested_outputs_round_trip(rng):
    x = jf.constant(rng.standard_normal(3).astype(np.float32))

    @jf.function
    def g(x):
        return {"z": [x, (x + 1.0, P(x * 2.0, "const"))], "a": P(x=None, y=x - 1.0), "m": 3,
                "np": np.float32(0.5)}

    _check_outputs(g(x), x)          # traced
    _check_outputs(g(x), x)          # cached: packed in C++
    cf = g.get_concrete_function(x)
    _check_outputs(cf(x), x)         # the concrete function's own call
    so = cf.structured_outputs
    assert list(so) == ["z", "a", "m", "np"] and type(so["a"]) is P
    assert so["m"].dtype == jf.int32  # a Python number is an output tensor, as in TF
    # Output leaves are in the one order (sorted keys), whatever order the dict was built in.
    assert [t.shape for t in cf.outputs] == [(3,), (), ()] + [(3,)] * 3


def test_output_variable_and_cond_branches_with_differently_ordered_dicts(rng):
    v = jf.Variable(np.float32(2.0))
    x = jf.constant(rng.standard_normal(3).astype(np.float32))

    @jf.function
    def f(x, flag):
        out = jf.cond(flag, lambda: {"a": x * 1.0, "b": x + 1.0}, lambda: {"b": x - 1.0, "a": x * 3.0})
        return out, [v]

    out, (var,) = f(x, jf.constant(False))
    np.testing.assert_allclose(out["a"].numpy(), x.numpy() * 3, rtol=1e-6)
    np.testing.assert_allclose(out["b"].numpy(), x.numpy() - 1, rtol=1e-6)
    assert isinstance(var, jf.Tensor) and var.numpy() == 2.0

    @jf.function
    def bad(x, flag):
        return jf.cond(flag, lambda: (x, x), lambda: [x, x])

    with pytest.raises(ValueError, match=r"same structure, got TreeDef\(\(\*, \*\)\) and TreeDef\(\[\*, \*\]\)"):
        bad(x, jf.constant(True))


def test_get_concrete_function_with_specs_in_a_dict(rng):
    @jf.function
    def f(d):
        return d["w"] * 2.0 + d["a"]

    cf = f.get_concrete_function({"w": jf.TensorSpec([None, 3]), "a": jf.TensorSpec([3])})
    assert [tuple(i.shape) for i in cf.inputs] == [(3,), (None, 3)]
    w = rng.standard_normal((4, 3)).astype(np.float32)
    a = rng.standard_normal(3).astype(np.float32)
    np.testing.assert_allclose(f({"a": a, "w": w}).numpy(), w * 2 + a, rtol=1e-6)
    np.testing.assert_allclose(cf({"w": w, "a": a}).numpy(), w * 2 + a, rtol=1e-6)
    assert f.experimental_get_tracing_count() == 1


# Structures the flattener must refuse with a Python exception, each run in its own process so
# that a crash (a C++ stack overflow) fails one test instead of the session.
_UNSAFE = {
    "self_list_argument": """
        a = [x]
        a.append(a)
        f(a)""",
    "self_dict_argument": """
        d = {"x": x}
        d["me"] = d
        f(d)""",
    "self_dict_keyword": """
        d = {"x": x}
        d["me"] = [d]
        f(x, extra=d)""",
    "deep_argument": """
        deep = x
        for _ in range(200000):
            deep = [deep]
        f(deep)""",
    "deep_dict_argument": """
        deep = x
        for _ in range(200000):
            deep = {"k": deep}
        f(deep)""",
    "self_list_output": """
        a = [x]
        a.append(a)
        jf.function(lambda y: [y, a])(x)""",
    "deep_output": """
        deep = x
        for _ in range(200000):
            deep = (deep,)
        jf.function(lambda y: deep)(x)""",
    "deep_nest_flatten": """
        deep = x
        for _ in range(200000):
            deep = [deep]
        jf._C.nest_flatten(deep, outputs=True)""",
}
_EXPECTED = {"self": "ValueError: cannot flatten a nested structure that contains itself",
             "deep": "RecursionError: cannot flatten a nested structure deeper than 1000 levels"}

_CHILD = """
import numpy as np, jitflow as jf
x = jf.constant(np.ones(2, np.float32))
f = jf.function(lambda *a, **k: x * 2.0)
try:
{body}
except (ValueError, RecursionError) as e:
    print(type(e).__name__ + ": " + str(e))
else:
    print("no exception")
"""


@pytest.mark.parametrize("case", sorted(_UNSAFE))
def test_unflattenable_structures_raise(case):
    body = textwrap.indent(textwrap.dedent(_UNSAFE[case]).strip(), "    ")
    r = subprocess.run([sys.executable, "-c", _CHILD.format(body=body)], check=False, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"child died with {r.returncode}: {r.stderr[-2000:]}"
    assert r.stdout.strip().startswith(_EXPECTED[case.split("_")[0]]), r.stdout + r.stderr


def test_containers_changed_while_flattened_do_not_crash():
    x = jf.constant(np.ones(2, np.float32))
    outer = []

    class Key(str):
        def __lt__(self, other):
            outer.clear()          # runs while the dict inside `outer` sorts its keys
            return str.__lt__(self, other)

    outer.extend([{Key("b"): x, Key("a"): x}, x, x, x])
    _, leaves, *_ = _C.flatten_inputs((outer,), None)
    assert len(leaves) == 2 and outer == []
    with pytest.raises(TypeError, match="not supported"):
        _C.flatten_inputs(({1: x, "a": x},), None)


# One traversal for jf.nest, jf.function and autodiff: tf.nest's containers (mappings, mapping
# views, attrs classes, other sequences) under every leaf rule, each rebuilt as its own type.
class _Field:
    def __init__(self, name):
        self.name = name


class _AttrsLike:
    """What attrs leaves on a class: __attrs_attrs__, fields in declaration order (not sorted)."""
    __attrs_attrs__ = (_Field("w"), _Field("b"))

    def __init__(self, w, b):
        self.w, self.b = w, b


class _Seq(collections.abc.Sequence):
    def __init__(self, items):
        self._items = list(items)

    def __getitem__(self, i):
        return self._items[i]

    def __len__(self):
        return len(self._items)


def _mixed(t):
    """A structure of every container kind around the tensors t[0..9]."""
    return [collections.OrderedDict([("z", t[0]), ("a", t[1])]),
            collections.defaultdict(list, {"y": t[2], "b": (t[3],)}),
            _AttrsLike(t[4], P(t[5], t[6])),
            {"k": t[7], "c": t[8]}.values(),
            _Seq([t[9]])]


def test_nest_and_the_signature_key_agree_on_every_container_kind(rng):
    t = [jf.constant(rng.standard_normal(k + 1).astype(np.float32)) for k in range(10)]
    structure = _mixed(t)
    want = [1, 0, 3, 2, 4, 5, 6, 7, 8, 9]   # sorted keys, attrs in declaration order, view order
    assert [x is t[i] for x, i in zip(jf.nest.flatten(structure), want)] == [True] * 10
    _, key_leaves, *_ = _C.flatten_inputs((structure,), None)
    assert [x.shape[0] for x in key_leaves] == [i + 1 for i in want]
    for rule in ("inputs", "outputs", "nest"):
        leaves, _ = _C.nest_flatten(structure, rule=rule)
        assert [x is t[i] for x, i in zip(leaves, want)] == [True] * 10, rule

    seen = []

    @jf.function
    def f(s):
        seen.append(s)
        return s

    out = f(structure)
    # The trace got each container as its type (a view as a list), its tensors as placeholders.
    got = seen[0]
    assert [type(c) for c in got] == [collections.OrderedDict, collections.defaultdict, _AttrsLike, list, _Seq]
    assert got[1].default_factory is list and type(got[2].b) is P
    assert list(got[0]) == ["a", "z"]   # inputs rebuild in the key's (sorted) order
    assert [x.shape[0] for x in jf.nest.flatten(out)] == [i + 1 for i in want]
    assert [type(c) for c in out] == [collections.OrderedDict, collections.defaultdict, _AttrsLike, list, _Seq]
    f(_mixed(t))
    assert f.experimental_get_tracing_count() == 1
    # The container type is part of the signature: an OrderedDict is not traced as a dict.
    f([dict(structure[0]), *structure[1:]])
    assert f.experimental_get_tracing_count() == 2
    assert type(seen[-1][0]) is dict


def test_outputs_keep_their_mapping_types_and_key_order(rng):
    x = jf.constant(rng.standard_normal(3).astype(np.float32))

    @jf.function
    def g(x):
        return collections.OrderedDict([("b", x * 2.0), ("a", x)]), collections.defaultdict(int, {"q": x})

    for _ in range(2):   # traced, then packed by the cached call
        od, dd = g(x)
        assert type(od) is collections.OrderedDict and list(od) == ["b", "a"]
        np.testing.assert_allclose(od["b"].numpy(), 2 * x.numpy(), rtol=1e-6)
        assert type(dd) is collections.defaultdict and dd.default_factory is int and dd["missing"] == 0


def test_pack_sequence_as_rebuilds_each_container_type():
    structure = _mixed(list(range(10)))
    packed = jf.nest.pack_sequence_as(structure, [f"v{i}" for i in range(10)])
    od, dd, at, view, seq = packed
    assert type(od) is collections.OrderedDict and list(od.items()) == [("z", "v1"), ("a", "v0")]
    assert type(dd) is collections.defaultdict and dd.default_factory is list
    assert list(dd.items()) == [("y", "v3"), ("b", ("v2",))]
    assert type(at) is _AttrsLike and at.w == "v4" and at.b == P("v5", "v6")
    assert view == ["v7", "v8"]   # a view comes back as a list, in the view's order
    assert type(seq) is _Seq and list(seq) == ["v9"]
    # Sequences that cannot be built from a list come back as one; list and tuple subclasses
    # keep their type.
    class L(list):
        pass
    assert jf.nest.pack_sequence_as([range(2), L([0])], [5, 6, 7]) == [[5, 6], L([7])]
    assert type(jf.nest.pack_sequence_as(L([0]), [1])) is L
    assert type(jf.nest.map_structure(lambda v: v, collections.deque([1, 2]))) is collections.deque


def test_assert_same_structure_on_the_new_container_kinds():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    jf.nest.assert_same_structure(od, {"a": 0, "b": 0})            # any two mappings
    jf.nest.assert_same_structure({"a": 1}.keys(), ["a"], check_types=False)
    with pytest.raises(TypeError, match="has type dict_keys, while second structure .* has type list"):
        jf.nest.assert_same_structure({"a": 1}.keys(), ["a"])
    with pytest.raises(ValueError, match=r"Substructure \"type=list str=\[2\]\" is a sequence, while "
                                         r"substructure \"type=int str=2\" is not"):
        jf.nest.assert_same_structure(_AttrsLike(1, [2]), _AttrsLike(1, 2))
    with pytest.raises(ValueError, match="same set of keys"):
        jf.nest.assert_same_structure([od], [collections.defaultdict(int, a=1, c=2)])


def test_nest_flatten_rule_argument_is_checked():
    assert _C.nest_flatten([1, "a"], rule="nest")[0] == [1, "a"]
    with pytest.raises(TypeError, match="rule must be a str"):
        _C.nest_flatten([1], rule=3)
    with pytest.raises(ValueError, match="unknown rule 'tf'"):
        _C.nest_flatten([1], rule="tf")
    with pytest.raises(ValueError, match="needs a spec_type"):
        _C.nest_flatten([1], rule="specs")
    with pytest.raises(ValueError, match="conflict"):
        _C.nest_flatten([1], outputs=True, rule="nest")
    assert _C.nest_children(1) is None and _C.nest_children({"b": 1, "a": 2}) == [2, 1]
    _, tree = _C.nest_flatten([1], rule="nest")
    with pytest.raises(TypeError):
        tree.difference("not a tree")


def test_tape_gradient_sources_come_back_in_their_structure():
    w = jf.Variable([1.0, 2.0])
    b = jf.Variable(3.0)
    x = jf.constant([0.5, 4.0])
    with jf.GradientTape(persistent=True) as tape:
        loss = jf.reduce_sum(w * x) + b * b
        wx = w * x
    g = tape.gradient(loss, {"w": w, "b": b})
    assert type(g) is dict and list(g) == ["w", "b"]   # the sources' own key order
    np.testing.assert_allclose(g["w"].numpy(), x.numpy())
    assert float(g["b"]) == 6.0
    g = tape.gradient(loss, collections.OrderedDict([("b", b), ("pair", P(w, None))]))
    assert type(g) is collections.OrderedDict and list(g) == ["b", "pair"]
    assert type(g["pair"]) is P and g["pair"].y is None
    np.testing.assert_allclose(g["pair"].x.numpy(), x.numpy())
    g = tape.gradient(loss, _AttrsLike(w, [b]))
    assert type(g) is _AttrsLike and float(g.b[0]) == 6.0
    j = tape.jacobian(wx, {"w": w})
    assert list(j) == ["w"] and j["w"].shape == (2, 2)


def test_custom_gradient_result_keeps_its_structure():
    @jf.custom_gradient
    def f(x):
        def grad(dc, dy):   # the result's flat order: sorted keys
            return dy * 3.0 + dc
        return collections.OrderedDict([("y", x * 2.0), ("c", x + 0.0)]), grad

    x = jf.constant(1.5)
    with jf.GradientTape() as tape:
        tape.watch(x)
        out = f(x)
    assert type(out) is collections.OrderedDict and list(out) == ["y", "c"]
    assert float(tape.gradient(out["y"], x)) == 3.0


_NEST_CRASH = """
import collections
class Deep(collections.abc.Sequence):   # a fresh container at every level
    def __getitem__(self, i):
        if i: raise IndexError(i)
        return Deep()
    def __len__(self):
        return 1
def deep_list():
    d = 1
    for _ in range(200000):
        d = [d]
    return d
def self_view():
    d = {"k": 1}
    d["k"] = d.values()
    return [d]
def self_ordered():
    d = collections.OrderedDict(a=1)
    d["me"] = [d]
    return d
cases = {"deep_list": deep_list, "deep_sequence": Deep, "self_view": self_view, "self_ordered": self_ordered}
out = {}
for name, make in cases.items():
    s = make()
    for fn in (jf.nest.flatten, lambda s: jf.nest.map_structure(lambda v: v, s),
               lambda s: jf.nest.assert_same_structure(s, s)):
        try:
            fn(s)
            out.setdefault(name, []).append("none")
        except (ValueError, RecursionError) as e:
            out.setdefault(name, []).append(type(e).__name__ + ": " + str(e))
report(lambda: out)
"""


def test_nest_refuses_deep_and_self_containing_structures_without_crashing():
    out = run_in_child(_NEST_CRASH)["value"]
    deep = "RecursionError: cannot flatten a nested structure deeper than 1000 levels"
    self_ = "ValueError: cannot flatten a nested structure that contains itself (a container that refers to itself)"
    assert out == {"deep_list": [deep] * 3, "deep_sequence": [deep] * 3, "self_view": [self_] * 3,
                   "self_ordered": [self_] * 3}


def test_containers_changed_while_walked_by_their_own_code_do_not_crash():
    outer = []

    class Clearing(_Seq):
        def __iter__(self):
            outer.clear()          # runs while the list holding it is walked
            return iter(self._items)

    class Shrinking(collections.abc.Mapping):
        def __init__(self):
            self.d = {"a": 1, "b": 2}

        def __getitem__(self, k):
            v = self.d[k]
            self.d.clear()
            return v

        def __iter__(self):
            return iter(list(self.d))

        def __len__(self):
            return len(self.d)

    outer.extend([Clearing([1, 2]), 3, 4, 5])
    assert jf.nest.flatten(outer) == [1, 2]
    with pytest.raises(KeyError):
        jf.nest.flatten(Shrinking())
