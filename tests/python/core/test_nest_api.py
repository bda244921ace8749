"""jf.nest (TF's tf.nest API): ordering rules, packing, mapping and structure errors (messages
as TF 2.21 prints them), and agreement with the C++ walker jf.function flattens its arguments
with (that walker's own tests are test_nest.py)."""
import collections

import numpy as np
import pytest

import jitflow as jf
from jitflow import _C

P = collections.namedtuple("P", "x y")
Q = collections.namedtuple("Q", "x y")


def test_flatten_orders_dicts_by_sorted_key_depth_first():
    s = {"b": 1, "a": [2, 3], "c": (4, {"z": 5, "y": 6})}
    assert jf.nest.flatten(s) == [2, 3, 1, 4, 6, 5]  # TF 2.21 printed this list
    # insertion order does not matter, for OrderedDict either
    assert jf.nest.flatten(collections.OrderedDict([("b", 1), ("a", 2)])) == [2, 1]


def test_flatten_leaves():
    t = jf.constant([1.0, 2.0])
    a = np.ones(2)
    for leaf in (None, 3, "ab", b"ab", {1, 2}, a, t):
        out = jf.nest.flatten(leaf)
        assert len(out) == 1 and out[0] is leaf
    assert jf.nest.flatten(P(1, [2, 3])) == [1, 2, 3]
    assert jf.nest.flatten([(), [], {}]) == []
    assert jf.nest.flatten([[[[1]]]]) == [1]
    v = jf.Variable(1.0)
    assert jf.nest.flatten(v, expand_composites=True)[0] is v  # TF: a Variable stays a leaf


def test_flatten_unsortable_keys_raise_type_error():
    with pytest.raises(TypeError, match="'<' not supported"):
        jf.nest.flatten({1: "a", "b": 2})


def test_is_nested():
    got = [jf.nest.is_nested(x) for x in ([1], (), {}, 1, "a", None, np.ones(2), P(1, 2), {1}, b"x")]
    assert got == [True, True, True, False, False, False, False, True, False, False]


def test_pack_sequence_as_keeps_container_types_and_key_order():
    assert jf.nest.pack_sequence_as({"b": 0, "a": [0, 0]}, [1, 2, 3]) == {"b": 3, "a": [1, 2]}
    d = jf.nest.pack_sequence_as({"b": 0, "a": 0}, [1, 2])
    assert list(d.items()) == [("b", 2), ("a", 1)]  # rebuilt in the structure's own key order
    od = jf.nest.pack_sequence_as(collections.OrderedDict([("b", 0), ("a", 0)]), [1, 2])
    assert type(od) is collections.OrderedDict and list(od.items()) == [("b", 2), ("a", 1)]
    nt = jf.nest.pack_sequence_as(P(0, (0, 0)), [1, 2, 3])
    assert type(nt) is P and nt == P(1, (2, 3))
    dd = jf.nest.pack_sequence_as(collections.defaultdict(list, {"a": 0}), [1])
    assert type(dd) is collections.defaultdict and dd.default_factory is list and dd["a"] == 1
    assert jf.nest.pack_sequence_as((0, 0), (1, 2)) == (1, 2)
    assert jf.nest.pack_sequence_as(0, [5]) == 5


def test_pack_sequence_as_errors():
    with pytest.raises(ValueError) as e:
        jf.nest.pack_sequence_as([0, (0, 0)], [1, 2])
    assert str(e.value) == ("Could not pack sequence. Structure had 3 atoms, but flat_sequence had 2 items.  "
                            "Structure: [0, (0, 0)], flat_sequence: [1, 2].")
    with pytest.raises(ValueError, match="The target structure is of type `<class 'int'>`"):
        jf.nest.pack_sequence_as(0, [5, 6])
    with pytest.raises(TypeError) as e:
        jf.nest.pack_sequence_as([0], 5)
    assert str(e.value) == ("Attempted to pack value:\n  5\ninto a structure, but found incompatible type "
                            "`<class 'int'>` instead.")


def test_map_structure():
    assert jf.nest.map_structure(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]
    r = jf.nest.map_structure(lambda a, b: a + b, {"b": 1, "a": 2}, {"a": 10, "b": 20})
    assert list(r.items()) == [("b", 21), ("a", 12)]
    assert jf.nest.map_structure(lambda a: None, (1, [2])) == (None, [None])
    assert jf.nest.map_structure(lambda a, b: a, [1, 2], (1, 2), check_types=False) == [1, 2]
    # tensors are leaves: map_structure works on them like tf.nest
    out = jf.nest.map_structure(lambda t: t * 2, {"x": jf.constant([1.0, 2.0])})
    np.testing.assert_array_equal(out["x"].numpy(), [2.0, 4.0])


def test_map_structure_argument_errors():
    with pytest.raises(TypeError, match="func must be callable, got: 1"):
        jf.nest.map_structure(1, [1])
    with pytest.raises(ValueError, match="Must provide at least one structure"):
        jf.nest.map_structure(lambda: 1)
    with pytest.raises(ValueError, match="Only valid keyword arguments are `check_types` and "
                                         "`expand_composites`, not: `foo`"):
        jf.nest.map_structure(lambda a: a, [1], foo=1)


def _header(a, b):
    return ("The two structures don't have the same nested structure.\n\n"
            f"First structure: {a}\n\nSecond structure: {b}\n\nMore specifically: ")


def test_assert_same_structure_messages_as_tf():
    with pytest.raises(ValueError) as e:
        jf.nest.assert_same_structure([1, 2], [1, 2, 3])
    assert str(e.value) == (_header("type=list str=[1, 2]", "type=list str=[1, 2, 3]")
                            + "The two structures don't have the same number of elements. First structure: "
                              "type=list str=[1, 2]. Second structure: type=list str=[1, 2, 3]\n"
                              "Entire first structure:\n[., .]\nEntire second structure:\n[., ., .]")
    with pytest.raises(TypeError) as e:
        jf.nest.assert_same_structure(P(1, 2), (1, 2))
    assert str(e.value) == (_header("type=P str=P(x=1, y=2)", "type=tuple str=(1, 2)")
                            + "The two namedtuples don't have the same sequence type. First structure "
                              "type=P str=P(x=1, y=2) has type P, while second structure type=tuple "
                              "str=(1, 2) has type tuple\nEntire first structure:\nP(x=., y=.)\n"
                              "Entire second structure:\n(., .)")
    with pytest.raises(ValueError) as e:
        jf.nest.assert_same_structure([1, [2]], [1, 2])
    assert 'Substructure "type=list str=[2]" is a sequence, while substructure "type=int str=2" is not' \
        in str(e.value)
    with pytest.raises(ValueError) as e:  # the sequence is named first, whichever side it is on
        jf.nest.assert_same_structure(3, [])
    assert 'Substructure "type=list str=[]" is a sequence, while substructure "type=int str=3" is not' \
        in str(e.value)
    with pytest.raises(ValueError, match="The two dictionaries don't have the same set of keys. First "
                                         r"structure has keys type=list str=\['a'\], while second structure "
                                         r"has keys type=list str=\['b'\]"):
        jf.nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(TypeError, match="type=list str=\\[\\] has type list"):
        jf.nest.assert_same_structure([], ())


def test_assert_same_structure_accepts():
    assert jf.nest.assert_same_structure([1, (2, 3)], ["a", ("b", "c")]) is None
    jf.nest.assert_same_structure(P(1, 2), (1, 2), check_types=False)
    jf.nest.assert_same_structure({"a": 1}, collections.OrderedDict(a=1))  # mappings match each other
    jf.nest.assert_same_structure(1, "a")  # two leaves
    with pytest.raises(TypeError):  # namedtuples of different names are different types
        jf.nest.assert_same_structure(P(1, 2), Q(3, 4))


@pytest.mark.parametrize("structure", [
    {"b": 1, "a": [2, 3], "c": (4, {"z": 5, "y": 6})},
    [P(1, 2), {"k": (3,), "j": [4, 5]}],
    (collections.OrderedDict([("q", 1), ("p", 2)]), [3, [4, [5]]]),
])
def test_same_order_as_jf_function_flattening(structure):
    """The C++ walker jf.function flattens arguments and results with (cpp/python/nest.h)
    visits the leaves in jf.nest's order."""
    tensors = jf.nest.map_structure(lambda v: jf.constant(float(v)), structure)
    leaves, _ = _C.nest_flatten(tensors, outputs=True)
    assert [float(t) for t in leaves] == [float(t) for t in jf.nest.flatten(tensors)]

    @jf.function
    def f(s):
        return jf.nest.map_structure(lambda t: t * 10.0, s)
    out = f(tensors)
    want = jf.nest.map_structure(lambda v: 10.0 * v, structure)
    assert [float(t) for t in jf.nest.flatten(out)] == [float(v) for v in jf.nest.flatten(want)]


def test_inside_a_traced_function_and_jit_scope():
    @jf.function(jit_compile=True)
    def f(d):
        flat = jf.nest.flatten(d)
        return jf.nest.pack_sequence_as(d, [x + 1.0 for x in flat])
    before = jf.debugging.stats()["cluster_runs"]
    out = f({"b": jf.constant([1.0]), "a": jf.constant([2.0])})
    assert jf.debugging.stats()["cluster_runs"] > before
    np.testing.assert_array_equal(out["a"].numpy(), [3.0])
    np.testing.assert_array_equal(out["b"].numpy(), [2.0])
