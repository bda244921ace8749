"""The dtypes beyond float32/64, int32/64 and bool (float16, bfloat16, int8, int16, the unsigned
integers, complex64/128): their DType properties against TF 2.21's, numpy, Python and DLPack
conversions both ways, and eager arithmetic on them (uint8 images, half floats computed in
float32 and rounded per op) against float64 or exact numpy references."""

import ml_dtypes
import numpy as np
import pytest

import jitflow as jf

BF16 = np.dtype(ml_dtypes.bfloat16)

# TF 2.21: name, is_floating, is_integer, is_unsigned, is_complex, size, as_datatype_enum,
# real_dtype, min, max (None: TF raises TypeError).
TF_TABLE = [
    ("float16", True, False, False, False, 2, 19, "float16", -65504.0, 65504.0),
    ("bfloat16", True, False, False, False, 2, 14, "bfloat16", -3.3895313892515355e38, 3.3895313892515355e38),
    ("int8", False, True, False, False, 1, 6, "int8", -128, 127),
    ("uint8", False, True, True, False, 1, 4, "uint8", 0, 255),
    ("int16", False, True, False, False, 2, 5, "int16", -32768, 32767),
    ("uint16", False, True, True, False, 2, 17, "uint16", 0, 65535),
    ("uint32", False, True, True, False, 4, 22, "uint32", 0, 4294967295),
    ("uint64", False, True, True, False, 8, 23, "uint64", 0, 18446744073709551615),
    ("complex64", False, False, False, True, 8, 8, "float32", None, None),
    ("complex128", False, False, False, True, 16, 18, "float64", None, None),
    ("float32", True, False, False, False, 4, 1, "float32", -3.4028234663852886e38, 3.4028234663852886e38),
    ("bool", False, False, False, False, 1, 10, "bool", None, None),
]


@pytest.mark.parametrize("row", TF_TABLE, ids=lambda r: r[0])
def test_dtype_properties_match_tf(row):
    name, floating, integer, unsigned, cplx, size, enum, real, lo, hi = row
    d = getattr(jf, name)
    assert (d.name, d.is_floating, d.is_integer, d.is_unsigned, d.is_complex) == (
        name,
        floating,
        integer,
        unsigned,
        cplx,
    )
    assert (d.size, d.as_datatype_enum, d.real_dtype) == (size, enum, getattr(jf, real))
    assert jf.as_dtype(enum) == d and jf.as_dtype(name) == d
    assert repr(d) == f"jf.{name}" and str(d) == f"<dtype: '{name}'>"
    assert np.dtype(d.as_numpy_dtype) == (BF16 if name == "bfloat16" else np.dtype(name))
    if lo is None:
        with pytest.raises(TypeError, match="Cannot find minimum value"):
            d.min  # noqa: B018
        with pytest.raises(TypeError, match="Cannot find maximum value"):
            d.max  # noqa: B018
    else:
        assert (float(d.min), float(d.max)) == (float(lo), float(hi))
        if integer:
            assert (d.min, d.max) == (lo, hi) and type(d.max) is int


def test_tf_aliases():
    assert jf.half == jf.float16 and jf.double == jf.float64
    assert jf.as_dtype(np.float16) == jf.float16 and jf.as_dtype(ml_dtypes.bfloat16) == jf.bfloat16
    assert jf.as_dtype("half") == jf.float16 and jf.as_dtype(np.complex64) == jf.complex64


_NUMPY = ["float16", BF16, "int8", "uint8", "int16", "uint16", "uint32", "uint64", "complex64", "complex128"]


@pytest.mark.parametrize("npdt", _NUMPY, ids=str)
def test_numpy_round_trip(npdt):
    a = (np.arange(12).reshape(3, 4) * 7 % 250).astype(npdt)
    if np.dtype(npdt).kind == "c":
        a = a + 1j * a[::-1]
    for t in (jf.constant(a), jf.convert_to_tensor(a), jf.Variable(a).read_value()):
        assert t.dtype == jf.as_dtype(np.dtype(npdt)) and t.shape == (3, 4)
        out = t.numpy()
        assert out.dtype == np.dtype(npdt)
        np.testing.assert_array_equal(out, a)


def test_uint8_image():
    img = np.random.default_rng(0).integers(0, 256, size=(4, 5, 3), dtype=np.uint8)
    t = jf.constant(img)
    assert t.dtype == jf.uint8
    scaled = jf.cast(t, jf.float32) / 255.0
    np.testing.assert_allclose(scaled.numpy(), img / np.float32(255), rtol=1e-6)
    # uint8 arithmetic wraps, as TF's and numpy's
    np.testing.assert_array_equal((t + t).numpy(), img + img)
    np.testing.assert_array_equal(jf.reduce_max(t, axis=[0, 1]).numpy(), img.max(axis=(0, 1)))
    np.testing.assert_array_equal(jf.reduce_sum(t, axis=2).numpy(), img.sum(axis=2, dtype=np.uint8))
    np.testing.assert_array_equal(jf.transpose(t, [2, 0, 1]).numpy(), img.transpose(2, 0, 1))
    np.testing.assert_array_equal(jf.reverse(t, [1]).numpy(), img[:, ::-1])
    np.testing.assert_array_equal((t > 128).numpy(), img > 128)
    np.testing.assert_array_equal(jf.concat([t, t], 0).numpy(), np.concatenate([img, img]))


def test_python_values_to_the_new_dtypes():
    # TF 2.21: Python ints wrap into the narrow integers; floats refuse them.
    assert jf.constant(300, jf.uint8).numpy() == 44
    assert jf.constant(-1, jf.uint8).numpy() == 255
    np.testing.assert_array_equal(jf.constant([1, 300], jf.uint8).numpy(), [1, 44])
    assert jf.constant(2**63, jf.uint64).numpy() == 2**63
    with pytest.raises(TypeError, match="int8"):
        jf.constant(1.5, jf.int8)
    assert jf.constant(70000.0, jf.float16).numpy() == np.inf
    x = jf.constant(1 + 2j)
    assert x.dtype == jf.complex128 and x.numpy() == 1 + 2j
    y = jf.constant([1 + 2j, 3])
    assert y.dtype == jf.complex128
    np.testing.assert_array_equal(y.numpy(), [1 + 2j, 3])
    assert jf.constant(1.5, jf.complex64).numpy() == np.complex64(1.5)
    assert jf.constant(2, jf.bfloat16).numpy() == BF16.type(2)
    with pytest.raises(TypeError, match="float32"):
        jf.constant(1 + 2j, jf.float32)


def test_numpy_values_force_cast_to_an_asked_dtype():
    b = np.array([1.5, 2.25], BF16)
    assert jf.constant(b, jf.float32).dtype == jf.float32
    np.testing.assert_array_equal(jf.constant(b, jf.float32).numpy(), [1.5, 2.25])
    np.testing.assert_array_equal(jf.constant(np.array([1.5]), jf.bfloat16).numpy(), np.array([1.5], BF16))
    assert (jf.zeros([2]) + np.array([1, 2], np.uint8)).dtype == jf.float32


@pytest.mark.parametrize(
    "npdt", ["float16", "int8", "uint8", "int16", "uint16", "uint32", "uint64", "complex64", "complex128"]
)
def test_dlpack_both_ways(npdt):
    a = np.arange(6, dtype=npdt).reshape(2, 3)
    t = jf.from_dlpack(a)
    assert t.dtype == jf.as_dtype(np.dtype(npdt))
    np.testing.assert_array_equal(t.numpy(), a)
    back = np.from_dlpack(jf.constant(a))
    assert back.dtype == np.dtype(npdt)
    np.testing.assert_array_equal(back, a)


def test_bfloat16_dlpack_export():
    # numpy's DLPack import knows no bfloat16; the capsule names it (kDLBfloat, 16 bits) and
    # jitflow takes its own capsule back
    t = jf.constant(np.array([1.5, -2.0], BF16))
    back = jf.from_dlpack(t.__dlpack__())
    assert back.dtype == jf.bfloat16
    np.testing.assert_array_equal(back.numpy(), np.array([1.5, -2.0], BF16))


@pytest.mark.parametrize("name,tol", [("float16", 2**-10), ("bfloat16", 2**-7)])
def test_half_arithmetic_rounds_per_op(name, tol):
    """Each op computes in float32 and rounds to the half type: against float64 references of
    the same inputs, to the type's unit in the last place."""
    rng = np.random.default_rng(1)
    npdt = np.dtype(name)
    a, b = rng.uniform(-3, 3, (4, 5)).astype(npdt), rng.uniform(0.5, 3, (5,)).astype(npdt)
    x, y = jf.constant(a), jf.constant(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for got, want in [
        (x + y, a64 + b64),
        (x * y, a64 * b64),
        (x / y, a64 / b64),
        (x - y, a64 - b64),
        (jf.exp(x), np.exp(a64)),
        (jf.tanh(x), np.tanh(a64)),
        (jf.sqrt(y), np.sqrt(b64)),
        (jf.sigmoid(x), 1 / (1 + np.exp(-a64))),
        (jf.maximum(x, y), np.maximum(a64, b64)),
        (jf.reduce_sum(x, axis=1), a64.sum(axis=1)),
        (jf.reduce_mean(x), a64.mean()),
        (jf.matmul(x, jf.reshape(y, [5, 1])), a64 @ b64.reshape(5, 1)),
    ]:
        assert got.dtype == jf.as_dtype(name)
        g = got.numpy().astype(np.float64)
        np.testing.assert_allclose(g, want, rtol=2 * tol, atol=2 * tol)
    # one rounding per op: (a + b) rounded, then * b rounded, as TF's eager kernels
    step = ((a + b).astype(np.float32) * b.astype(np.float32)).astype(npdt)
    np.testing.assert_array_equal(((x + y) * y).numpy(), step)


def _half_values(rng, npdt, n):
    """Random values of every magnitude, with the specials, as a half type."""
    with np.errstate(all="ignore"):
        v = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 5, n)).astype(np.float32)
        v[:8] = [np.nan, -np.inf, np.inf, 0.0, -0.0, 65504.0, 6e-8, -3.4e38]
        return v.astype(npdt)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_eager_half_ops_round_each_result_like_numpy_float32(name):
    """Long runs (the vectorized widening and rounding, and their scalar tails) and broadcast
    operands: each result is the float32 result rounded to nearest even, bit for bit (NaN as
    NaN)."""
    rng = np.random.default_rng(7)
    npdt = np.dtype(name)
    a, b, col = _half_values(rng, npdt, 1037), _half_values(rng, npdt, 1037), _half_values(rng, npdt, 9)
    fa, fb, fc = a.astype(np.float32), b.astype(np.float32), col.astype(np.float32).reshape(9, 1)
    x, y, c = jf.constant(a), jf.constant(b), jf.constant(col.reshape(9, 1))
    with np.errstate(all="ignore"):
        cases = [
            (x + y, fa + fb),
            (x * y, fa * fb),
            (x - y, fa - fb),
            (x / y, fa / fb),
            (c * x, fc * fa),
            (x + np.array(1.5, npdt), fa + np.float32(1.5)),
            (-x, -fa),
            (jf.abs(x), np.abs(fa)),
            (jf.square(x), fa * fa),
            (jf.sqrt(jf.abs(x)), np.sqrt(np.abs(fa))),
            (jf.cast(jf.constant(fa), jf.as_dtype(name)), fa),
        ]
        for got, want in cases:
            want = want.astype(npdt)
            g = got.numpy()
            assert g.dtype == npdt and g.shape == want.shape
            nan = np.isnan(want.astype(np.float32))
            np.testing.assert_array_equal(np.isnan(g.astype(np.float32)), nan)
            np.testing.assert_array_equal(g.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


def test_half_matmul_accumulates_in_float32():
    # 2049 ones: a float16 running sum would stop at 2048; the float32 sum rounds once
    ones = jf.ones([1, 2049], jf.float16)
    assert jf.matmul(ones, jf.ones([2049, 1], jf.float16)).numpy()[0, 0] == np.float16(2049)
    assert jf.reduce_sum(ones).numpy() == np.float16(2049)


def test_unsupported_combinations_name_op_and_dtype():
    with pytest.raises(TypeError, match=r"Exp.*uint8|uint8.*Exp"):
        jf.exp(jf.constant([1], jf.uint8))
    with pytest.raises(TypeError, match=r"Less.*complex64|complex64.*Less"):
        jf.less(jf.constant([1j], jf.complex64), jf.constant([1j], jf.complex64))
    with pytest.raises(TypeError, match=r"MatMul.*int8|int8.*MatMul"):
        jf.matmul(jf.ones([2, 2], jf.int8), jf.ones([2, 2], jf.int8))


def test_small_integers_in_functions_run_eagerly_and_say_why():
    """No emitter computes the 8/16-bit, unsigned or complex dtypes yet: a traced function runs
    them on the executor (correct values, no cluster), jit_compile=True refuses them naming the
    op and dtype. (float16 and bfloat16 compile: compile/test_half_clusters.py.)"""
    f = jf.function(lambda x: x * 3)
    x = jf.constant([100, 7], jf.uint8)
    before = jf.debugging.stats()["cluster_runs"]
    np.testing.assert_array_equal(f(x).numpy(), np.array([44, 21], np.uint8))  # 300 wraps to 44
    assert jf.debugging.stats()["cluster_runs"] == before
    g = jf.function(lambda x: x * 3, jit_compile=True)
    with pytest.raises(jf.errors.InvalidArgumentError, match="uint8"):
        g(x)
    h = jf.function(lambda x: jf.cast(x, jf.int8), jit_compile=True)
    with pytest.raises(jf.errors.InvalidArgumentError, match="int8"):
        h(jf.constant([1.0]))


def _scoped_mul(x):
    with jf.jit_scope():
        return x * 3 + 1


def test_explain_says_why_small_integer_ops_stay_eager():
    f = jf.function(_scoped_mul)
    x = jf.constant([5, -7], jf.int16)
    np.testing.assert_array_equal(f(x).numpy(), np.array([16, -20], np.int16))
    text = str(jf.explain(f, x))
    assert "no emitter for Mul producing int16 (8/16-bit" in text, text


_ASSIGN_DTYPES = [
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
]


@pytest.mark.parametrize("name", _ASSIGN_DTYPES)
def test_assign_add_and_sub_on_every_numeric_dtype(name):
    """TF registers AssignAdd/AssignSubVariableOp for every number type: the update is the
    dtype's own addition (integers wrap, half types round), eagerly and in a function."""
    npdt = BF16 if name == "bfloat16" else np.dtype(name)
    if name.startswith("complex"):
        start, delta = np.array([1 + 2j, -3j], npdt), np.array([0.5 - 1j, 2 + 0j], npdt)
    elif name in ("float16", "bfloat16"):
        start, delta = np.array([1.5, -2.25], npdt), np.array([0.125, 300.0], npdt)
    else:
        info = np.iinfo(npdt)
        start, delta = np.array([info.max, 7], npdt), np.array([3, 2], npdt)  # max + 3 wraps
    with np.errstate(over="ignore"):
        added = (
            (start.astype(np.float32) + delta.astype(np.float32)).astype(npdt)
            if npdt in (np.dtype(np.float16), BF16)
            else start + delta
        )
        twice = (
            (added.astype(np.float32) - delta.astype(np.float32)).astype(npdt)
            if npdt in (np.dtype(np.float16), BF16)
            else added - delta
        )
    v = jf.Variable(start)
    assert v.dtype == jf.as_dtype(name)
    v.assign_add(delta)
    np.testing.assert_array_equal(v.numpy(), added)
    jf.function(lambda d: v.assign_sub(d))(jf.constant(delta))
    np.testing.assert_array_equal(v.numpy(), twice)
