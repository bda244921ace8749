"""jf.data.FixedLengthRecordDataset: records cut from each file's body between header and
footer, in file order, GZIP-compressed files too, and TF's InvalidArgumentError (its message,
hard-coded from TF 2.21) for a body that is not a whole number of records."""
import gzip

import pytest

import jitflow as jf


def test_records_header_footer_and_compression(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin.gz"
    a.write_bytes(b"HDR" + b"abcdefghij" + b"FT")
    b.write_bytes(gzip.compress(b"HDR" + b"0123456789" + b"FT"))
    ds = jf.data.FixedLengthRecordDataset(str(a), 5, header_bytes=3, footer_bytes=2)
    assert list(ds.as_numpy_iterator()) == [b"abcde", b"fghij"]
    both = jf.data.FixedLengthRecordDataset([str(a)], 2, header_bytes=3, footer_bytes=2).map(jf.strings.length)
    assert [int(x) for x in both] == [2] * 5
    gz = jf.data.FixedLengthRecordDataset(str(b), 5, header_bytes=3, footer_bytes=2, compression_type="GZIP")
    assert list(gz.as_numpy_iterator()) == [b"01234", b"56789"]
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"has body length 10 bytes, which is not an exact "
                                                             r"multiple of the record length \(4 bytes\)"):
        list(jf.data.FixedLengthRecordDataset(str(a), 4, header_bytes=3, footer_bytes=2))
