"""cast between every pair of dtypes with TF's CPU rules, checked exhaustively for the 8- and
16-bit sources (every bit pattern) against a numpy/ml_dtypes reference of those rules, and on
values TF 2.21 was run on; bitcast and saturate_cast against TF 2.21's results."""
import ml_dtypes
import numpy as np
import pytest

import jitflow as jf

BF16 = np.dtype(ml_dtypes.bfloat16)
TARGETS = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
           "int64", "uint64", "complex64", "complex128", "bool"]


def _np(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def _float_to_int(x, to, wrap=False):
    """TF's CPU float -> integer: truncation; out of range or NaN as the x86 conversions of its
    vectorized cast give it (int64: INT64_MIN; uint32: 2**31; uint64: 2**63; int32: INT32_MIN,
    and the 8- and 16-bit integers through int32, saturated, or for complex sources, which TF
    converts element by element, int32's low bits)."""
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.where(np.isfinite(xd), xd, 0))
        if to == "int64":
            ok = (xd >= -2.0 ** 63) & (xd < 2.0 ** 63)
            return np.where(ok, np.where(ok, t, 0).astype(np.int64), np.iinfo(np.int64).min)
        if to == "uint64":
            neg = (xd > -2.0 ** 63) & (xd < 0)
            pos = (xd >= 0) & (xd < 2.0 ** 64)
            r = np.full(x.shape, 2 ** 63, np.uint64)
            r[neg] = np.where(neg, t, 0).astype(np.int64)[neg].view(np.uint64)
            r[pos] = np.where(pos, t, 0).astype(np.uint64)[pos]
            return r
        if to == "uint32":
            ok = (xd > -2147483649.0) & (xd < 4294967296.0)
            return np.where(ok, np.where(ok, t, 0).astype(np.int64).astype(np.uint32), np.uint32(2 ** 31))
        ok = (xd > -2147483649.0) & (xd < 2147483648.0)
        v = np.where(ok, t, -2.0 ** 31).astype(np.int32)
        if not wrap and np.dtype(to).itemsize < 4:
            v = np.clip(v, np.iinfo(to).min, np.iinfo(to).max)
        return v.astype(to)


def tf_cast_ref(x, to):
    """numpy's (and ml_dtypes') conversions arranged as TF's CPU cast: complex to real keeps the
    real part, half floats convert through float32 (both ways), floats to integers as above,
    integers wrap."""
    src = x.dtype
    if to == "bool":
        return (x.astype(np.float32) if src == BF16 else x) != 0
    if src.kind == "c" and not to.startswith("complex"):
        if np.dtype(to).kind in "iu":
            return _float_to_int(x.real, to, wrap=True)
        return tf_cast_ref(x.real, to)
    if to.startswith("complex"):
        if src.kind == "c":
            return x.astype(to)
        return tf_cast_ref(x, "float32" if to == "complex64" else "float64").astype(to)
    if src in (np.dtype(np.float16), BF16):
        x, src = x.astype(np.float32), np.dtype(np.float32)
    if src.kind == "f" and np.dtype(to).kind in "iu":
        return _float_to_int(x, to)
    if to in ("float16", "bfloat16"):
        return x.astype(np.float32).astype(_np(to))
    return x.astype(to)


def _same(got, want, what):
    """Equal values, bit for bit (signed zeros too); NaN where the other has NaN."""
    assert got.dtype == want.dtype, what
    if got.dtype.kind == "c":
        _same(np.ascontiguousarray(got.real), np.ascontiguousarray(want.real), what + " (real)")
        _same(np.ascontiguousarray(got.imag), np.ascontiguousarray(want.imag), what + " (imag)")
    elif got.dtype.kind == "f" or got.dtype == BF16:
        g, w = got.astype(np.float64), want.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=what)
        bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
        keep = ~np.isnan(g)
        np.testing.assert_array_equal(got.view(bits)[keep], want.view(bits)[keep], err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _every_value(name):
    if name in ("int8", "uint8"):
        return np.arange(256, dtype=np.uint8).view(name)
    return np.arange(65536, dtype=np.uint16).view(_np(name))


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("src", ["int8", "uint8", "int16", "uint16", "float16", "bfloat16"])
def test_cast_every_8_and_16_bit_value(src, to):
    x = _every_value(src)
    got = jf.cast(jf.constant(x), getattr(jf, to)).numpy()
    with np.errstate(all="ignore"):
        want = np.asarray(tf_cast_ref(x, to))
    _same(got, want, f"{src} -> {to}")


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("src", ["float32", "float64", "int32", "int64", "bool", "uint32", "uint64", "complex64",
                                 "complex128"])
def test_cast_from_wider_dtypes(src, to, rng):
    vals = np.concatenate([rng.uniform(-1e5, 1e5, 300), rng.uniform(-300, 300, 300), [0.5, -0.5, 255.5, -128.5]])
    if src == "bool":
        x = rng.random(50) < 0.5
    elif np.dtype(src).kind in "iu":
        x = np.concatenate([rng.integers(-2 ** 40, 2 ** 40, 200), rng.integers(-70000, 70000, 200)])
        x = x.astype(src) if np.dtype(src).kind == "i" else x.astype(np.int64).astype(src)
    elif np.dtype(src).kind == "c":
        x = (vals + 1j * vals[::-1]).astype(src)
    else:
        x = np.concatenate([vals, [np.nan, np.inf, -np.inf, 1e10, -1e10, 65520.0, 65519.0]]).astype(src)
    got = jf.cast(jf.constant(x), getattr(jf, to)).numpy()
    with np.errstate(all="ignore"):
        want = np.asarray(tf_cast_ref(x, to))
    _same(got, want, f"{src} -> {to}")


# TF 2.21's tf.cast of these float32 values (by hand, at positions 96.. of a 1024-element
# vector: its vectorized loop; the last few elements of a vector, cast one by one, can keep
# int32's low bits instead of saturating: 300.7 -> uint8 44).
_TF_SRC = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -3e9, 5e9, 300.7, -300.7, 255.9, -0.9, 127.5,
                    -128.5, 65535.5, 70000.0, -70000.0, 2.2e9, 4.3e9, -1.0, 1.9e19, -1e19, 3e38], np.float32)
_TF_OUT = {
    "int8": [-128] * 8 + [127, -128, 127, 0, 127, -128, 127, 127, -128, -128, -128, -1, -128, -128, -128],
    "uint8": [0] * 8 + [255, 0, 255, 0, 127, 0, 255, 255, 0, 0, 0, 0, 0, 0, 0],
    "int16": [-32768] * 8 + [300, -300, 255, 0, 127, -128, 32767, 32767, -32768, -32768, -32768, -1, -32768,
                             -32768, -32768],
    "uint16": [0] * 8 + [300, 0, 255, 0, 127, 0, 65535, 65535, 0, 0, 0, 0, 0, 0, 0],
    "int32": [-2 ** 31] * 8 + [300, -300, 255, 0, 127, -128, 65535, 70000, -70000, -2 ** 31, -2 ** 31, -1,
                               -2 ** 31, -2 ** 31, -2 ** 31],
    "uint32": [2 ** 31] * 5 + [3000000000, 2 ** 31, 2 ** 31, 300, 4294966996, 255, 0, 127, 4294967168, 65535, 70000,
                               4294897296, 2200000000, 2 ** 31, 4294967295, 2 ** 31, 2 ** 31, 2 ** 31],
    "int64": [-2 ** 63] * 3 + [10 ** 10, -10 ** 10, 3000000000, -3000000000, 5000000000, 300, -300, 255, 0, 127,
                               -128, 65535, 70000, -70000, 2200000000, 4300000256, -1] + [-2 ** 63] * 3,
    "uint64": [2 ** 63] * 3 + [10 ** 10, 2 ** 64 - 10 ** 10, 3000000000, 2 ** 64 - 3000000000, 5000000000, 300,
                               2 ** 64 - 300, 255, 0, 127, 2 ** 64 - 128, 65535, 70000, 2 ** 64 - 70000, 2200000000,
                               4300000256, 2 ** 64 - 1] + [2 ** 63] * 3,
}


@pytest.mark.parametrize("to", sorted(_TF_OUT))
def test_cast_matches_tf_on_out_of_range_floats(to):
    got = jf.cast(jf.constant(_TF_SRC), getattr(jf, to)).numpy()
    np.testing.assert_array_equal(got, np.array(_TF_OUT[to], dtype=to))


def test_cast_half_from_double_rounds_through_float32():
    # TF (Eigen) converts float64 to float16 through float32: 1 + 2**-11 + 2**-40 rounds to
    # 1 + 2**-11 in float32, a tie that float16 rounds to even (1.0); numpy's direct rounding
    # gives 1.001
    v = 1 + 2 ** -11 + 2 ** -40
    assert jf.cast(jf.constant([v], jf.float64), jf.float16).numpy()[0] == np.float16(1.0)
    # complex to a narrow integer keeps int32's low bits (TF 2.21: 300.7 + 1j -> uint8 44)
    c = jf.cast(jf.constant([1.5 + 2j, -3.7 - 1j, 300.7 + 1j], jf.complex64), jf.uint8).numpy()
    np.testing.assert_array_equal(c, [1, 253, 44])


def test_bitcast_matches_tf():
    np.testing.assert_array_equal(jf.bitcast(jf.constant([1.0, 2.0]), jf.int32).numpy(), [1065353216, 1073741824])
    u = jf.bitcast(jf.constant([1.0, 2.0]), jf.uint8)
    assert u.shape == (2, 4)
    np.testing.assert_array_equal(u.numpy(), [[0, 0, 128, 63], [0, 0, 0, 64]])
    f = jf.bitcast(jf.constant([[1, 2, 3, 4]], jf.uint8), jf.float32)
    assert f.shape == (1,) and f.numpy()[0] == np.array([1, 2, 3, 4], np.uint8).view(np.float32)[0]
    c = jf.bitcast(jf.constant([1 + 1j], jf.complex64), jf.float32)
    np.testing.assert_array_equal(c.numpy(), [[1.0, 1.0]])
    h = jf.bitcast(jf.constant(np.array([1.5, -2], np.float16)), jf.bfloat16)
    np.testing.assert_array_equal(h.numpy().view(np.uint16), np.array([1.5, -2], np.float16).view(np.uint16))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Cannot bitcast from"):
        jf.bitcast(jf.constant([1, 2, 3], jf.uint8), jf.float32)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Cannot bitcast from"):
        jf.bitcast(jf.constant(1, jf.uint8), jf.float32)
    with pytest.raises(jf.errors.InvalidArgumentError, match="attr 'T' of bool is not in the list"):
        jf.bitcast(jf.constant([True]), jf.uint8)
    with pytest.raises(jf.errors.InvalidArgumentError, match="attr 'type' of bool is not in the list"):
        jf.bitcast(jf.constant([1.0]), jf.bool)


def test_bitcast_traced():
    f = jf.function(lambda x: jf.bitcast(x, jf.uint16))
    np.testing.assert_array_equal(f(jf.constant([1.0], jf.float32)).numpy(),
                                  np.array([1.0], np.float32).view(np.uint16).reshape(1, 2))


@pytest.mark.parametrize("x,dtype,want", [
    # TF 2.21's tf.saturate_cast (run by hand)
    (np.array([-1.5, 300.7, np.nan, 1e10], np.float32), "uint8", [0, 255, 0, 255]),
    (np.array([-1, 300, 70000], np.int32), "int8", [-1, 127, 127]),
    (np.array([-1e10, 1e10, 5.5], np.float32), "int32", [-2147483648, 2147483520, 5]),
    (np.array([70000.0, -1e6], np.float32), "float16", [65504, -65504]),
    (np.array([1.5, 1e5], np.float32), "bfloat16", [1.5, 99840]),
    (np.array([300, -5], np.int32), "float16", [300, -5]),
    (np.array([300.5, -5], BF16), "uint8", [255, 0]),
    (np.array([300.5 + 2j, -5], np.complex64), "uint8", [255, 0]),
], ids=lambda v: str(v) if isinstance(v, str) else None)
def test_saturate_cast_matches_tf(x, dtype, want):
    got = jf.saturate_cast(jf.constant(x), getattr(jf, dtype))
    assert got.dtype == getattr(jf, dtype)
    np.testing.assert_array_equal(got.numpy().astype(np.float64), np.array(want, np.float64))
    with pytest.raises(TypeError, match="Cannot find minimum value of <dtype: 'bool'>"):
        jf.saturate_cast(jf.constant([True]), jf.uint8)
