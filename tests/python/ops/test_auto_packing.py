"""TF's auto-packing: a list or tuple that mixes tensors with Python values is converted by
stacking its elements (Pack), wherever a value is converted to a tensor (jf.convert_to_tensor,
concat and stack operands) and wherever a shape, sizes, multiples, paddings or begin are taken:
`jf.reshape(x, [jf.shape(x)[0], -1])`, `jf.zeros([jf.shape(x)[0], h])`. Inside a jf.function
such a list raised "Using a symbolic jf.Tensor as a Python int". Values are checked against numpy
in every mode; the static shapes against TF 2.21's (which sees through such a list when the
shape it reads is known)."""
import re

import numpy as np
import pytest
from conftest import run_mode

import jitflow as jf

A = np.arange(12, dtype=np.float32).reshape(3, 4)


def _i(s, k):
    return jf.cast(s[k], jf.float32)


def two(x, dtype=jf.float32):
    """2 computed from x's values (A[0, 1] + 1), so that the compiled modes have work left once
    the constant parts are folded."""
    return jf.cast(x[0, 1] + 1.0, dtype)


# name, fn(x) with s = jf.shape(x) inside, numpy reference of A
CASES = [
    ("reshape", lambda x, s: jf.reshape(x, [s[0], -1]) * two(x), A.reshape(3, -1) * 2),
    ("reshape_tuple", lambda x, s: jf.reshape(x, (-1, s[1] // 2)) * two(x), A.reshape(-1, 2) * 2),
    ("zeros", lambda x, s: jf.zeros([s[0], 2]) + two(x) / 2.0, np.ones((3, 2), np.float32)),
    ("ones", lambda x, s: jf.ones((s[0], 2), jf.int32) * two(x, jf.int32), np.full((3, 2), 2, np.int32)),
    ("fill", lambda x, s: jf.fill([s[0], s[1]], 7.0) * two(x), np.full((3, 4), 14.0, np.float32)),
    ("tile", lambda x, s: jf.tile(x, [s[0] // 3, 2]) * two(x), np.tile(A, [1, 2]) * 2),
    ("pad", lambda x, s: jf.pad(x, [[0, s[0] - 2], [1, 0]]) * two(x), np.pad(A, [[0, 1], [1, 0]]) * 2),
    ("slice", lambda x, s: jf.slice(x, [0, s[1] - 2], [s[0] - 1, -1]) * two(x), A[0:2, 2:] * 2),
    ("broadcast_to", lambda x, s: jf.broadcast_to(x[:1], [s[0], s[1]]) * two(x), np.broadcast_to(A[:1], (3, 4)) * 2),
    ("stateless_uniform", lambda x, s: jf.random.stateless_uniform([s[0], 2], seed=[1, 2]) * two(x),
     np.asarray(jf.random.stateless_uniform([3, 2], seed=[1, 2])) * 2),
    ("concat_lists", lambda x, s: jf.concat([[s[0], s[1]], [5]], 0) * two(x, jf.int32), np.array([6, 8, 10], np.int32)),
    ("concat_tensor_and_list", lambda x, s: jf.concat([x, [[_i(s, 0), 1.0, 2.0, _i(s, 1)]]], 0) * two(x),
     np.concatenate([A, [[3, 1, 2, 4]]]).astype(np.float32) * 2),
    ("stack_lists", lambda x, s: jf.stack([[s[0], 1], [2, s[1]]]) * two(x, jf.int32), np.array([[6, 2], [4, 8]], np.int32)),
    ("stack_values", lambda x, s: jf.stack([s[0], s[1], 5], axis=0) * two(x, jf.int32), np.array([6, 8, 10], np.int32)),
    ("convert_to_tensor", lambda x, s: jf.convert_to_tensor([[s[0], 1], [2, 3]]) * two(x, jf.int32),
     np.array([[6, 2], [4, 6]], np.int32)),
]
MODES = ["eager", "function", "jit_scope", "jit_compile", "none_signature"]
# Known differences, each in jitflow's C++ and not in the packing: BroadcastTo's shape function
# needs its target shape while tracing (TF's takes a run-time one); jitflow compiles ahead of the
# call, with unknown dims as parameters, so Tile's multiples and Pad's paddings computed from
# them do not compile (TF's XLA compiles each call's shapes).
def _run(mode, fn):
    def body(x):
        return fn(x, jf.shape(x))
    if mode == "none_signature":
        return jf.function(body, input_signature=[jf.TensorSpec([None, None], jf.float32)])(jf.constant(A))
    return run_mode(mode, body, jf.constant(A))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, fn, want", CASES, ids=[c[0] for c in CASES])
def test_lists_of_tensors_and_ints_are_packed(mode, name, fn, want):
    got = _run(mode, fn).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("name, fn, want", [c for c in CASES if c[0] not in ("tile", "pad", "broadcast_to")],
                         ids=[c[0] for c in CASES if c[0] not in ("tile", "pad", "broadcast_to")])
def test_packed_shapes_of_unknown_dims_compile(name, fn, want):
    f = jf.function(lambda x: fn(x, jf.shape(x)), input_signature=[jf.TensorSpec([None, None], jf.float32)],
                    jit_compile=True)
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_allclose(f(jf.constant(A)).numpy(), want, rtol=1e-6)
    assert jf.debugging.stats()["cluster_runs"] > before


def test_random_ops_take_packed_shapes():
    @jf.function
    def f(x):
        s = jf.shape(x)
        return jf.random.uniform([s[0], 2]), jf.random.normal((s[1], s[0]), seed=3)
    u, n = f(jf.constant(A))
    assert u.shape == (3, 2) and n.shape == (4, 3)
    assert np.all((u.numpy() >= 0) & (u.numpy() < 1))


def test_static_shapes_see_through_a_packed_list_of_known_values():
    # TF's shape functions read [shape(x)[0], 2] as [3, 2] when x's shape is known, and the
    # list's unknown parts as unknown.
    seen = {}

    def body(x):
        s = jf.shape(x)
        seen[len(seen)] = (jf.zeros([s[0], 2]).shape, jf.reshape(x, [s[0], -1]).shape,
                           jf.tile(x, [s[0] // 3, 2]).shape, jf.ones([s[1] * 2, s[0] + 1]).shape)
        return x
    jf.function(body)(jf.constant(A))
    assert seen[0] == ((3, 2), (3, 4), (3, 8), (8, 4))
    jf.function(body, input_signature=[jf.TensorSpec([None, 4], jf.float32)])(jf.constant(A))
    assert seen[1][1] == (None, None)  # reshape's -1 against an unknown dim: TF's (None, None) too


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_convert_to_tensor_packs_as_tf(mode):
    def body():
        c = jf.constant
        return {"int64": jf.convert_to_tensor([c(1, jf.int64), 1]),          # the first tensor's dtype
                "float64": jf.convert_to_tensor([c(1.0, jf.float64), 2]),
                "nested": jf.convert_to_tensor([c([1, 2]), [3, 4]]),
                "tuple": jf.convert_to_tensor((1, c(2))),
                "bool": jf.convert_to_tensor([c(True), False]),
                "dtype": jf.convert_to_tensor([c(1), 2], dtype=jf.int64),       # cast to the asked dtype
                "hint": jf.convert_to_tensor([c(1), 2], dtype_hint=jf.int64)}
    out = body() if mode == "eager" else jf.function(body)()
    want = {"int64": ([1, 1], np.int64), "float64": ([1, 2], np.float64), "nested": ([[1, 2], [3, 4]], np.int32),
            "tuple": ([1, 2], np.int32), "bool": ([True, False], np.bool_), "dtype": ([1, 2], np.int64),
            "hint": ([1, 2], np.int64)}
    for k, (values, dtype) in want.items():
        assert out[k].numpy().dtype == dtype, k
        np.testing.assert_array_equal(out[k].numpy(), values)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_convert_to_tensor_refuses_what_tf_refuses(mode):
    def call(make):
        return make() if mode == "eager" else jf.function(make)()
    with pytest.raises(TypeError, match=re.escape("Cannot convert a list containing a tensor of dtype "
                                                  "<dtype: 'int64'> to <dtype: 'int32'>")):
        call(lambda: jf.convert_to_tensor([jf.constant(1), jf.constant(1, jf.int64)]))
    with pytest.raises(TypeError, match="Cannot convert 2.5 to EagerTensor of dtype int32"):
        call(lambda: jf.convert_to_tensor([jf.constant(1), 2.5]))
    with pytest.raises(TypeError, match="out of range"):  # TF wraps it to 0; never silently here
        call(lambda: jf.convert_to_tensor([jf.constant(1), 2**40]))


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_lists_without_tensors_still_take_the_peer_tensors_dtype(mode):
    # Only a list holding tensors is packed: a list of Python values in concat or stack is still
    # converted to the other values' dtype, as TF converts an op's list input.
    got = run_mode(mode, lambda x: (jf.concat([x, [[1, 2, 3, 4]]], 0), jf.stack([x[0], [1, 2, 3, 4]])),
                   jf.constant(A))
    np.testing.assert_array_equal(got[0].numpy(), np.concatenate([A, [[1, 2, 3, 4]]]).astype(np.float32))
    np.testing.assert_array_equal(got[1].numpy(), np.stack([A[0], [1, 2, 3, 4]]).astype(np.float32))


def test_constant_still_refuses_graph_tensors_in_a_list():
    @jf.function
    def f(x):
        return jf.constant([jf.shape(x)[0], 2])
    with pytest.raises(TypeError, match="Expected any non-tensor type, but got a tensor instead"):
        f(jf.constant(A))
    # Eager tensors are values: TF's graph constant takes them too.
    np.testing.assert_array_equal(jf.constant([jf.constant(3), 2]).numpy(), [3, 2])


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_concat_casts_a_packed_list_to_the_first_tensors_dtype(mode):
    # TF converts concat's values to the dtype of the first value that is a tensor, so a list
    # holding an int64 tensor (a dataset's range element) is cast: [0 0 1] and [1 0 0], int32.
    # Its stack packs each list on its own and refuses the mix (InvalidArgumentError, as TF).
    def body():
        v, i = jf.constant([0, 0]), jf.constant(1, jf.int64)
        return jf.concat((v, [i]), 0), jf.concat(([i], v), 0)
    a, b = body() if mode == "eager" else jf.function(body)()
    assert a.dtype == jf.int32 and b.dtype == jf.int32
    np.testing.assert_array_equal(a.numpy(), [0, 0, 1])
    np.testing.assert_array_equal(b.numpy(), [1, 0, 0])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Pack: input #1 has dtype int64"):
        jf.stack([jf.constant([0, 0]), [jf.constant(1, jf.int64)] * 2])
