"""jf.io.decode_raw and the jf.strings Unicode functions against Python's codecs and numpy's
frombuffer, and the values TF's tensor guide prints; decode_raw also inside a jf.function."""
import numpy as np
import pytest

import jitflow as jf

DUCK = "アヒル 🦆"


def test_decode_raw_values_and_shapes():
    np.testing.assert_array_equal(jf.io.decode_raw(jf.constant("Duck"), jf.uint8).numpy(), [68, 117, 99, 107])
    raw = [np.array([1, -2, 300], "<i4").tobytes(), np.array([7, 8, 9], "<i4").tobytes()]
    got = jf.io.decode_raw(jf.constant(raw), jf.int32)
    assert got.dtype == jf.int32 and got.shape == (2, 3)
    np.testing.assert_array_equal(got.numpy(), [[1, -2, 300], [7, 8, 9]])
    big = jf.io.decode_raw(jf.constant(np.array([1.5, -2.25], ">f8").tobytes()), jf.float64, little_endian=False)
    np.testing.assert_array_equal(big.numpy(), [1.5, -2.25])
    padded = jf.io.decode_raw(jf.constant([b"\x01\x00\x02\x00", b"\x03\x00"]), jf.int16, fixed_length=4)
    np.testing.assert_array_equal(padded.numpy(), [[1, 2], [3, 0]])
    assert jf.io.decode_raw(jf.constant([[b"ab"]]), jf.uint8).shape == (1, 1, 2)
    traced = jf.function(lambda x: jf.io.decode_raw(x, jf.int32) * 2)
    np.testing.assert_array_equal(traced(jf.constant(raw)).numpy(), [[2, -4, 600], [14, 16, 18]])


def test_decode_raw_errors():
    with pytest.raises(jf.errors.InvalidArgumentError, match="same size"):
        jf.io.decode_raw(jf.constant([b"abcd", b"ab"]), jf.int16)
    with pytest.raises(jf.errors.InvalidArgumentError, match="not a multiple of 4"):
        jf.io.decode_raw(jf.constant(b"abc"), jf.int32)


def test_unicode_decode_split_encode():
    points = jf.strings.unicode_decode(jf.constant(DUCK), "UTF-8")
    assert points.dtype == jf.int32 and points.numpy().tolist() == [12450, 12498, 12523, 32, 129414]
    chars = jf.strings.unicode_split(jf.constant(DUCK), "UTF-8")
    assert chars.numpy().tolist() == [c.encode() for c in DUCK]
    rows = jf.strings.unicode_decode(jf.constant(["ab", "アヒ", ""]), "UTF-8")
    assert rows.to_list() == [[97, 98], [12450, 12498], []] and rows.dtype == jf.int32
    assert rows.row_splits.numpy().tolist() == [0, 2, 4, 4]
    assert jf.strings.unicode_encode(rows, "UTF-8").numpy().tolist() == [b"ab", "アヒ".encode(), b""]
    assert jf.strings.unicode_encode(jf.constant([[97, 98], [99, 100]]), "UTF-16-BE").numpy().tolist() == \
        ["ab".encode("utf-16-be"), "cd".encode("utf-16-be")]
    assert jf.strings.unicode_encode(jf.constant([104, 105]), "UTF-8").numpy() == b"hi"


def test_invalid_input_and_transcode():
    bad = jf.constant(b"a\xffb")
    assert jf.strings.unicode_split(bad, "UTF-8").numpy().tolist() == [b"a", "\ufffd".encode(), b"b"]
    assert jf.strings.unicode_decode(bad, "UTF-8", replacement_char=63).numpy().tolist() == [97, 63, 98]
    assert jf.strings.unicode_decode(bad, "UTF-8", errors="ignore").numpy().tolist() == [97, 98]
    with pytest.raises(jf.errors.InvalidArgumentError):
        jf.strings.unicode_decode(bad, "UTF-8", errors="strict")
    with pytest.raises(jf.errors.InvalidArgumentError):
        jf.strings.unicode_encode(jf.constant([0x110000]), "UTF-8", errors="strict")
    latin = jf.constant([b"caf\xe9", b"ok"])
    got = jf.strings.unicode_transcode(latin, "ISO-8859-1", "UTF-8")
    assert got.numpy().tolist() == ["café".encode(), b"ok"]
    traced = jf.function(lambda s: jf.strings.unicode_transcode(s, "UTF-8", "UTF-16-BE"))
    assert traced(jf.constant(["é"])).numpy().tolist() == ["é".encode("utf-16-be")]


# TensorProtos TF 2.21's tf.io.serialize_tensor wrote for [[1.5, 2], [3, -1]] (float32),
# [-1, 2, 3] (int32), [1.5, -2] (float16) and ["a", "bc"].
TF_SERIALIZED = {
    "float32": ("08011208120208021202080222100000c03f0000004000004040000080bf", [[1.5, 2.0], [3.0, -1.0]]),
    "int32": ("0803120412020803220cffffffff0200000003000000", [-1, 2, 3]),
    "float16": ("08131204120208022204003e00c0", [1.5, -2.0]),
    "string": ("080712041202080242016142026263", [b"a", b"bc"]),
}


@pytest.mark.parametrize("dtype", sorted(TF_SERIALIZED))
def test_parse_and_serialize_tensor_as_tf(dtype):
    hexed, values = TF_SERIALIZED[dtype]
    got = jf.io.parse_tensor(bytes.fromhex(hexed), getattr(jf, dtype))
    assert got.dtype == getattr(jf, dtype) and np.asarray(got).tolist() == values
    again = jf.io.serialize_tensor(got)
    assert again.dtype == jf.string and again.shape == ()
    assert np.asarray(jf.io.parse_tensor(again, getattr(jf, dtype))).tolist() == values
    if dtype != "string":  # TF writes numbers as tensor_content, as jitflow does: the same bytes
        assert again.numpy() == bytes.fromhex(hexed)


def test_parse_tensor_errors_and_serialize_in_a_function():
    s = jf.io.serialize_tensor(jf.constant([1.0, 2.0]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Type mismatch"):
        jf.io.parse_tensor(s, jf.int32)
    with pytest.raises(jf.errors.InvalidArgumentError):
        jf.io.parse_tensor(b"\xff\xff", jf.float32)
    serialized = jf.function(lambda t: jf.io.serialize_tensor(t * 2.0))(jf.constant([1.0, 2.5]))
    np.testing.assert_array_equal(jf.io.parse_tensor(serialized, jf.float32).numpy(), [2.0, 5.0])
    with pytest.raises(NotImplementedError, match="unknown rank"):
        jf.function(lambda s: jf.io.parse_tensor(s, jf.float32))(serialized)


def test_base64_web_safe():
    got = jf.io.encode_base64(jf.constant(["hello?>", "ab"]))
    assert got.numpy().tolist() == [b"aGVsbG8_Pg", b"YWI"]  # TF 2.21's output
    assert jf.io.encode_base64(jf.constant("ab"), pad=True).numpy() == b"YWI="
    assert jf.io.decode_base64(got).numpy().tolist() == [b"hello?>", b"ab"]
    with pytest.raises(jf.errors.InvalidArgumentError):
        jf.io.decode_base64(jf.constant("a"))
