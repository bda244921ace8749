"""The data movers take every dtype TF 2.21's CPU kernels register for them: strings through
each op that moves them, eagerly and in a traced function (numpy object arrays are the
references); every fixed-size dtype moved bit for bit (random bit patterns, NaN payloads and
signed zeros kept); the unsigned index shuffles, string scatters and half-float Unique against
TF 2.21's outputs (hard-coded); half-float convolutions and pools computed in float32 and
rounded once."""

import ml_dtypes  # noqa: F401 (numpy's "bfloat16")
import numpy as np
import pytest
from conftest import run_in_child

import jitflow as jf
from jitflow.ops.dispatch import OP, run

# Long enough to live on the heap (a byte copy of such a std::string would share, then free
# twice, its characters), and distinct, so any misplaced element shows.
_WORDS = np.array([f"word-{i:02d}-{'x' * (17 + i)}".encode() for i in range(12)], dtype=object).reshape(3, 4)


def _bytes_array(x):
    return np.asarray(x.numpy(), dtype=object)


def _same(got, want):
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = g.numpy()
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.tolist() == w.tolist()


# (call on the string tensor, numpy reference on the object array)
_STRING_MOVERS = {
    "Transpose": (lambda x: jf.transpose(x), lambda a: a.T),
    "ConcatV2": (lambda x: jf.concat([x, x[:, :1]], axis=1), lambda a: np.concatenate([a, a[:, :1]], 1)),
    "Pack": (lambda x: jf.stack([x, x], axis=1), lambda a: np.stack([a, a], 1)),
    "Split": (lambda x: jf.split(x, 2, axis=1), lambda a: np.split(a, 2, 1)),
    "SplitV": (lambda x: jf.split(x, [1, 3], axis=1), lambda a: [a[:, :1], a[:, 1:]]),
    "Reshape": (lambda x: jf.reshape(x, [4, 3]), lambda a: a.reshape(4, 3)),
    "ExpandDims": (lambda x: jf.expand_dims(x, 1), lambda a: a[:, None]),
    "Squeeze": (lambda x: jf.squeeze(x[:1]), lambda a: a[0]),
    "BroadcastTo": (lambda x: jf.broadcast_to(x[1:2], [2, 4]), lambda a: np.broadcast_to(a[1:2], (2, 4))),
    "StridedSlice": (lambda x: x[::-1, 1::2], lambda a: a[::-1, 1::2]),
    "Slice": (lambda x: jf.slice(x, [1, 1], [2, 2]), lambda a: a[1:3, 1:3]),
    "GatherV2": (lambda x: jf.gather(x, [3, 0, 3], axis=1), lambda a: a[:, [3, 0, 3]]),
    "ReverseV2": (lambda x: jf.reverse(x, [1]), lambda a: a[:, ::-1]),
    "Tile": (lambda x: jf.tile(x, [2, 1]), lambda a: np.tile(a, (2, 1))),
    "PadV2": (
        lambda x: jf.pad(x, [[1, 0], [0, 2]]),
        lambda a: np.pad(a, ((1, 0), (0, 2)), constant_values=b""),
    ),
    "PadV2 value": (
        lambda x: jf.pad(x, [[0, 1], [1, 0]], constant_values="-"),
        lambda a: np.pad(a, ((0, 1), (1, 0)), constant_values=b"-"),
    ),
    "MirrorPad": (
        lambda x: jf.pad(x, [[1, 1], [2, 0]], "REFLECT"),
        lambda a: np.pad(a, ((1, 1), (2, 0)), "reflect"),
    ),
    "MirrorPad symmetric": (
        lambda x: jf.pad(x, [[0, 2], [1, 1]], "SYMMETRIC"),
        lambda a: np.pad(a, ((0, 2), (1, 1)), "symmetric"),
    ),
    "Roll": (lambda x: jf.roll(x, [1, -3], [0, 1]), lambda a: np.roll(a, (1, -3), (0, 1))),
    "ZerosLike": (lambda x: jf.zeros_like(x), lambda a: np.full(a.shape, b"", object)),
    "StopGradient": (lambda x: jf.stop_gradient(x), lambda a: a),
    "SelectV2": (
        lambda x: jf.where([[True], [False], [True]], x, x[::-1]),
        lambda a: np.where([[True], [False], [True]], a, a[::-1]),
    ),
    "GatherNd": (lambda x: jf.gather_nd(x, [[2, 1], [0, 3], [2, 1]]), lambda a: a[[2, 0, 2], [1, 3, 1]]),
    "TensorScatterUpdate": (
        lambda x: jf.tensor_scatter_nd_update(x, [[1], [0]], x[1:][::-1]),
        lambda a: np.stack([a[1], a[2], a[2]]),
    ),
}


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", sorted(_STRING_MOVERS))
def test_strings_move_through(name, traced):
    call, ref = _STRING_MOVERS[name]
    fn = jf.function(call) if traced else call
    x = jf.constant(_WORDS)
    for _ in range(3):  # repeated runs: a freed or shared string would show by now
        _same(fn(x), ref(_WORDS))
    assert x.numpy().tolist() == _WORDS.tolist()  # the input is untouched


def test_traced_string_movers_stay_out_of_compiled_code():
    # XLA has no strings: a jit_scope leaves them to the executor (they never join a cluster),
    # jit_compile=True names the op
    def body(x):
        with jf.jit_scope():
            return jf.transpose(jf.reverse(x, [0]))

    f = jf.function(body)
    _same(f(jf.constant(_WORDS)), _WORDS[::-1].T)
    cf = f.get_concrete_function(jf.constant(_WORDS))
    assert not [c for c in cf.clusters if c.ops], [c.ops for c in cf.clusters]
    with pytest.raises(jf.errors.InvalidArgumentError, match="ReverseV2|Transpose"):
        jf.function(lambda x: jf.reverse(x, [0]), jit_compile=True)(jf.constant(_WORDS))


def test_fill_and_shape_of_strings_in_a_function():
    f = jf.function(lambda s, n: (jf.fill([n, 2], s), jf.shape(jf.expand_dims(s, 0))))
    filled, shape = f(jf.constant("abcdefghijklmnopqrstuvwxyz"), jf.constant(3))
    assert filled.numpy().tolist() == [[b"abcdefghijklmnopqrstuvwxyz"] * 2] * 3
    assert shape.numpy().tolist() == [1]


def test_string_scatters_and_unique_as_tf():
    # TF 2.21: ScatterNd adds duplicate strings by concatenating them in order
    f = jf.function(lambda u: jf.scatter_nd([[1], [1], [0]], u, [3]))
    assert f(jf.constant(["a", "b", "c"])).numpy().tolist() == [b"c", b"ab", b""]
    g = jf.function(lambda t: jf.tensor_scatter_nd_update(t, [[1], [1]], jf.constant(["a", "b"])))
    assert g(jf.constant(["x", "y", "z"])).numpy().tolist() == [b"x", b"b", b"z"]
    y, idx = jf.function(jf.unique)(jf.constant(["b", "a", "b"]))
    assert y.numpy().tolist() == [b"b", b"a"] and idx.numpy().tolist() == [0, 1, 0]
    y, idx, n = jf.unique_with_counts(jf.constant(_WORDS.reshape(-1)[[3, 1, 3, 3]]))
    assert y.numpy().tolist() == _WORDS.reshape(-1)[[3, 1]].tolist()
    assert idx.numpy().tolist() == [0, 1, 0, 0] and n.numpy().tolist() == [3, 1]


def test_string_shuffle_is_the_index_shuffle():
    # one seed, one permutation of the first dim, whatever the dtype moved
    x = jf.constant(_WORDS)
    shuffled = jf.random.experimental.stateless_shuffle(x, seed=[4, 5])
    perm = jf.random.experimental.stateless_shuffle(jf.range(3), seed=[4, 5]).numpy()
    assert shuffled.numpy().tolist() == _WORDS[perm].tolist()


def test_string_tensor_array_in_a_loop():
    @jf.function
    def f(words):
        ta = jf.TensorArray(jf.string, size=0, dynamic_size=True)
        for i in jf.range(jf.shape(words)[0]):
            ta = ta.write(i, words[i] + "!")
        return ta.stack(), ta.read(1)

    stacked, second = f(jf.constant(_WORDS[:, 0]))
    assert stacked.numpy().tolist() == [w + b"!" for w in _WORDS[:, 0]]
    assert second.numpy() == _WORDS[1, 0] + b"!"


def test_strings_in_shape_or_index_inputs_are_refused():
    # an op that moves strings takes its axes and indices as numbers: TF's TypeError, in a
    # child process in case of a crash
    out = run_in_child("""
        from jitflow.ops.dispatch import run, OP
        words, ix = jf.constant(["a", "b"]), jf.constant(["1", "0"])
        errors = []
        for op, args in [("Transpose", [words, ix]), ("ReverseV2", [words, ix]), ("GatherV2", [words, ix, jf.constant(0)]),
                         ("GatherV2", [words, jf.constant([1]), words[:1]]), ("GatherNd", [words, ix]),
                         ("Roll", [words, ix, jf.constant([0])]), ("TensorScatterUpdate", [words, ix, words])]:
            try:
                jf.function(lambda *a: run(OP[op], tuple(a), {}, None))(*args)
                errors.append(op + " accepted")
            except TypeError as e:
                errors.append(str(e).split(" (")[0])
        report(lambda: errors)
    """)
    for e in out["value"]:
        assert "DataType string not in list of allowed values" in e or "must be int32 or int64" in e, e


# ---- fixed-size dtypes: bits moved exactly ----------------------------------------------------
_FIXED = [
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "complex64",
    "complex128",
    "bool",
]


def _random_bits(dtype, shape, rng):
    """Arbitrary bit patterns of the dtype (NaNs with payloads, subnormals, -0.0); bools 0/1."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    return raw.view(dt).reshape(shape)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).reshape(a.shape + (-1,))


_BIT_MOVERS = {
    "GatherNd": (lambda x: jf.gather_nd(x, [[2, 1], [0, 3]]), lambda a: a[[2, 0], [1, 3]]),
    "Roll": (lambda x: jf.roll(x, [2, -1], [0, 1]), lambda a: np.roll(a, (2, -1), (0, 1))),
    "MirrorPad": (
        lambda x: jf.pad(x, [[2, 1], [0, 3]], "REFLECT"),
        lambda a: np.pad(a, ((2, 1), (0, 3)), "reflect"),
    ),
    "TensorScatterUpdate": (
        lambda x: jf.tensor_scatter_nd_update(x, [[2], [0]], x[:2]),
        lambda a: np.stack([a[1], a[1], a[0]]),
    ),
    "Transpose": (lambda x: jf.transpose(x), lambda a: a.T),
    "GatherV2": (lambda x: jf.gather(x, [3, 1], axis=1), lambda a: a[:, [3, 1]]),
    "ConcatV2": (lambda x: jf.concat([x, x[:1]], 0), lambda a: np.concatenate([a, a[:1]])),
    "PadV2": (lambda x: jf.pad(x, [[1, 0], [0, 1]]), lambda a: np.pad(a, ((1, 0), (0, 1)))),
    "StatelessShuffle": (
        lambda x: jf.random.experimental.stateless_shuffle(x, seed=[1, 2]),
        lambda a: a[jf.random.experimental.stateless_shuffle(jf.range(3), seed=[1, 2]).numpy()],
    ),
}


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", sorted(_BIT_MOVERS))
@pytest.mark.parametrize("dtype", _FIXED)
def test_every_dtype_moves_bit_for_bit(name, dtype, traced, rng):
    call, ref = _BIT_MOVERS[name]
    a = _random_bits(dtype, (3, 4), rng)
    got = (jf.function(call) if traced else call)(jf.constant(a)).numpy()
    want = ref(a)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize(
    "dtype", ["float16", "bfloat16", "int8", "uint16", "uint64", "complex64", "complex128"]
)
def test_where_and_segment_sums_of_the_new_dtypes(dtype, rng):
    a = np.array([[0, 1, 0], [2, 0, 3]]).astype(dtype)
    np.testing.assert_array_equal(jf.where(jf.constant(a)).numpy(), np.argwhere(a))
    data = np.arange(1, 7).reshape(3, 2).astype(dtype)
    got = jf.math.unsorted_segment_sum(jf.constant(data), [1, 0, 1], 2).numpy()
    np.testing.assert_array_equal(got, np.stack([data[1], data[0] + data[2]]))
    got = jf.math.segment_sum(jf.constant(data), [0, 0, 1]).numpy()
    np.testing.assert_array_equal(got, np.stack([data[0] + data[1], data[2]]))


def test_half_unique_keys_by_bits_as_tf():
    # TF 2.21: for float16 and bfloat16, 0.0 and -0.0 are two values and each NaN its own;
    # float32 keeps one zero
    vals = [0.0, -0.0, 1.0, np.nan, np.nan, 1.0, -0.0, 0.0]
    for dtype in ("float16", "bfloat16"):
        y, idx = jf.unique(jf.constant(np.array(vals, dtype)))
        assert np.signbit(y.numpy().astype(np.float32)).tolist() == [False, True, False, False, False]
        assert idx.numpy().tolist() == [0, 1, 2, 3, 4, 2, 1, 0]
    y, idx = jf.unique(jf.constant(np.array(vals, np.float32)))
    assert idx.numpy().tolist() == [0, 0, 1, 2, 3, 1, 0, 0]


def test_unsigned_index_shuffle_as_tf():
    # TF 2.21's RandomIndexShuffle (raw op, rounds=4) for these inputs
    run = jf._C.execute_n
    out = run(
        "RandomIndexShuffle",
        [
            jf.constant(np.arange(10, dtype=np.uint32)),
            jf.constant(np.uint32([1, 2, 3])),
            jf.constant(np.uint32(9)),
        ],
        {},
    )[0]
    assert out.dtype == jf.uint32 and out.numpy().tolist() == [2, 0, 6, 4, 8, 1, 7, 9, 5, 3]
    big = np.uint64([0, 5, 2**63 + 7, 2**64 - 2])
    out = run(
        "RandomIndexShuffle",
        [jf.constant(big), jf.constant(np.uint64([7, 8, 9])), jf.constant(np.uint64(2**64 - 2))],
        {},
    )[0]
    assert out.numpy().tolist() == [405069102743, 1229702822338, 9223373781953674176, 18373822081920623094]
    # the public function pads a [2] seed as TF's does
    out = jf.random.experimental.index_shuffle(
        jf.constant(np.uint64([0, 5, 123456])), seed=[7, 8], max_index=jf.constant(np.uint64(1000000))
    )
    assert out.dtype == jf.uint64 and out.numpy().tolist() == [217783, 418771, 214118]


# ---- half-float convolutions and pools: float32 inside, one rounding ----------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_convolutions_and_pools_round_the_float32_result_once(dtype, rng):
    x = rng.uniform(-2, 2, (2, 6, 6, 3)).astype(dtype)
    w = rng.uniform(-1, 1, (3, 3, 3, 4)).astype(dtype)
    cases = [
        (lambda a, b: jf.nn.conv2d(a, b, 1, "SAME"), (x, w)),
        (lambda a, b: jf.nn.depthwise_conv2d(a, b[..., :1], [1, 1, 1, 1], "VALID"), (x, w)),
        (lambda a: jf.nn.avg_pool2d(a, 3, 2, "SAME"), (x,)),
        (lambda a: jf.nn.max_pool2d(a, 2, 1, "VALID"), (x,)),
    ]
    for call, args in cases:
        got = call(*[jf.constant(v) for v in args]).numpy()
        wide = call(*[jf.constant(v.astype(np.float32)) for v in args]).numpy()
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, wide.astype(dtype))  # float32 rounded once
        exact = call(*[jf.constant(v.astype(np.float64)) for v in args]).numpy()
        tol = 2e-3 if dtype == "float16" else 1.6e-2
        np.testing.assert_allclose(got.astype(np.float64), exact, rtol=tol, atol=tol)


def test_integer_max_pools_and_their_gradients():
    x = np.array([[1, 9, 3], [7, 2, 8], [4, 6, 5]], np.uint8).reshape(1, 3, 3, 1)
    y = jf.nn.max_pool2d(jf.constant(x), 2, 1, "VALID")
    assert y.dtype == jf.uint8 and y.numpy().reshape(2, 2).tolist() == [[9, 9], [7, 8]]
    for dtype in (np.int8, np.int16, np.uint32, np.int64):
        got = jf.nn.max_pool2d(jf.constant(x.astype(dtype)), 2, 1, "VALID").numpy()
        assert got.dtype == dtype and got.reshape(2, 2).tolist() == [[9, 9], [7, 8]]


# ---- string variables and unsigned parsing ----------------------------------------------------
def test_string_variables_read_and_assign_eagerly_and_traced():
    v = jf.Variable(["a", "bb"])
    assert v.dtype == jf.string and v.numpy().tolist() == [b"a", b"bb"]
    v.assign(["c", "d"])
    assert v.numpy().tolist() == [b"c", b"d"]

    @jf.function
    def f(x):
        v.assign(x + "!")
        return v.read_value()

    assert f(jf.constant(["x", "y"])).numpy().tolist() == [b"x!", b"y!"]
    assert v.numpy().tolist() == [b"x!", b"y!"]
    with pytest.raises(ValueError, match="Shape mismatch"):
        v.assign(["a"])


def test_to_number_unsigned_as_tf():
    # TF 2.21: the unsigned parsers take no sign, and check the range
    got = jf.strings.to_number(["7", "4294967295", " 5", "+3"], jf.uint32)
    assert got.dtype == jf.uint32 and got.numpy().tolist() == [7, 4294967295, 5, 3]
    got = jf.function(lambda s: jf.strings.to_number(s, jf.uint64))(
        jf.constant(["18446744073709551615", "12"])
    )
    assert got.dtype == jf.uint64 and got.numpy().tolist() == [18446744073709551615, 12]
    for text, dtype in [
        ("-1", jf.uint32),
        ("-0", jf.uint64),
        ("4294967296", jf.uint32),
        ("1.5", jf.uint64),
        ("18446744073709551616", jf.uint64),
    ]:
        with pytest.raises(
            jf.errors.InvalidArgumentError, match="StringToNumberOp could not correctly convert"
        ):
            jf.strings.to_number([text], dtype)


def test_strings_cast_only_to_strings():
    # TF registers Cast string -> string alone; other pairs are TF's UnimplementedError
    s = jf.constant(_WORDS[0])
    same = jf.function(lambda x: run(OP["Cast"], (x,), {"DstT": jf.string}, None))(s)
    assert same.numpy().tolist() == _WORDS[0].tolist()
    assert jf.cast(s, jf.string).numpy().tolist() == _WORDS[0].tolist()
    with pytest.raises(jf.errors.UnimplementedError, match="Cast string to float is not supported"):
        jf.cast(s, jf.float32)
    with pytest.raises(jf.errors.UnimplementedError, match="Cast string to double is not supported"):
        jf.function(lambda x: jf.cast(x, jf.float64))(s)
    with pytest.raises(jf.errors.UnimplementedError, match="Cast int32 to string is not supported"):
        jf.cast(jf.constant([1]), jf.string)


@pytest.mark.parametrize(
    "dtype",
    [
        "float16",
        "bfloat16",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "uint32",
        "uint64",
        "complex64",
        "complex128",
    ],
)
def test_py_function_and_numpy_function_carry_the_new_dtypes(dtype):
    a = (np.arange(4) + 1).astype(dtype)
    want = (a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) * 2).astype(dtype)
    f = jf.function(lambda t: jf.py_function(lambda x: x * 2, [t], getattr(jf, dtype)))
    got = f(jf.constant(a))
    assert got.dtype == getattr(jf, dtype) and got.numpy().tolist() == want.tolist()
    g = jf.function(lambda t: jf.numpy_function(lambda x: (x * 2).astype(x.dtype), [t], getattr(jf, dtype)))
    got = g(jf.constant(a))
    assert got.dtype == getattr(jf, dtype) and got.numpy().tolist() == want.tolist()


def test_unsigned_full_range_draws_as_tf():
    # TF 2.21: stateless_uniform(minval=None, maxval=None) of uint32/uint64 (its signed draw's bits)
    got = jf.random.stateless_uniform([5], seed=[1, 2], minval=None, maxval=None, dtype=jf.uint32)
    assert got.dtype == jf.uint32 and got.numpy().tolist() == [
        1105988140,
        1738052849,
        3959391294,
        370444179,
        10670227,
    ]
    f = jf.function(
        lambda: jf.random.stateless_uniform([3], seed=[3, 4], minval=None, maxval=None, dtype=jf.uint64)
    )
    assert f().numpy().tolist() == [15563846067247064075, 4520458231610095266, 15018079513829641671]
    with pytest.raises(ValueError, match="Please don't use unsigned integers in this case"):
        jf.random.stateless_uniform([2], seed=[1, 2], minval=0, maxval=5, dtype=jf.uint32)


def test_half_float_samplers_draw_tf_values():
    # TF 2.21's stateless samplers for float16/bfloat16 with these seeds (printed there, hard-coded):
    # uniform takes TF's 10 (7) low bits per stream word; the normals are float32 samples rounded once.
    f16, b16 = jf.float16, jf.bfloat16

    def vals(t):
        return t.numpy().astype(np.float32).tolist()

    assert vals(jf.random.stateless_uniform([6], seed=[1, 2], dtype=f16)) == [
        0.54296875, 0.2353515625, 0.060546875, 0.8935546875, 0.1435546875, 0.4423828125]
    assert vals(jf.random.stateless_normal([5], seed=[3, 4], dtype=f16)) == [
        -0.1739501953125, 1.671875, 0.34814453125, -1.7041015625, -0.615234375]
    assert vals(jf.random.stateless_truncated_normal([5], seed=[5, 6], dtype=f16)) == [
        1.0244140625, -0.53857421875, 1.279296875, 0.912109375, -1.564453125]
    assert vals(jf.random.stateless_uniform([3], seed=[9, 9], minval=-2, maxval=3, dtype=f16)) == [
        0.84765625, 1.31640625, -0.5595703125]
    assert vals(jf.random.stateless_uniform([6], seed=[1, 2], dtype=b16)) == [
        0.34375, 0.8828125, 0.484375, 0.1484375, 0.1484375, 0.5390625]
    assert vals(jf.random.stateless_normal([5], seed=[3, 4], dtype=b16)) == [
        -0.173828125, 1.671875, 0.34765625, -1.703125, -0.6171875]
    assert vals(jf.random.stateless_truncated_normal([5], seed=[5, 6], dtype=b16)) == [
        1.0234375, -0.5390625, 1.28125, 0.91015625, -1.5625]
    g = jf.random.stateless_gamma([4], seed=[7, 8], alpha=jf.constant([0.5, 1.0, 2.0, 5.0], f16), dtype=f16)
    assert g.dtype == f16 and bool(jf.reduce_all(g > 0))  # gamma and poisson: TF's distribution only
    p = jf.random.stateless_poisson([4], seed=[1, 1], lam=jf.constant([0.5, 3.0, 10.0, 40.0], f16), dtype=f16)
    assert p.dtype == f16
    traced = jf.function(lambda: jf.random.stateless_uniform([6], seed=[1, 2], dtype=f16))()
    assert vals(traced)[0] == 0.54296875
    # no emitter draws TF's half bits: a traced sampler runs eagerly, explained
    seeded = jf.function(lambda s: jf.random.stateless_uniform([6], seed=s, dtype=f16))
    assert vals(seeded(jf.constant([1, 2])))[0] == 0.54296875
    assert "StatelessRandomUniformV2" in str(jf.explain(seeded, jf.constant([1, 2])))
