"""jf.io.decode_compressed against zlib/gzip (and TF 2.21's error type for bad data), eagerly,
traced and in a Dataset.map."""
import gzip
import zlib

import pytest

import jitflow as jf


def test_decode_compressed():
    got = jf.io.decode_compressed(jf.constant([zlib.compress(b"hello"), zlib.compress(b"")]), "ZLIB")
    assert got.numpy().tolist() == [b"hello", b""]
    assert jf.io.decode_compressed(gzip.compress(b"abc"), "GZIP").numpy() == b"abc"
    assert jf.io.decode_compressed(b"raw").numpy() == b"raw"
    f = jf.function(lambda x: jf.io.decode_compressed(x, "ZLIB"))
    assert f(jf.constant(zlib.compress(b"zz"))).numpy() == b"zz"
    ds = jf.data.Dataset.from_tensor_slices([zlib.compress(b"a"), zlib.compress(b"bc")])
    assert list(ds.map(lambda x: jf.io.decode_compressed(x, "ZLIB")).as_numpy_iterator()) == [b"a", b"bc"]
    with pytest.raises(jf.errors.DataLossError, match="inflate"):
        jf.io.decode_compressed(b"xx", "ZLIB")
    with pytest.raises(jf.errors.InvalidArgumentError, match="compression type"):
        jf.io.decode_compressed(b"xx", "LZMA")
