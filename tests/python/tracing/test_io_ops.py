"""jf.io.read_file / write_file / matching_files (eager and traced) and jf.io.gfile against
Python's file functions on a temporary folder."""
import os

import pytest

import jitflow as jf

gfile = jf.io.gfile


def test_read_write_and_match(tmp_path):
    path = str(tmp_path / "a.txt")
    jf.io.write_file(path, jf.constant("hello"))
    assert (tmp_path / "a.txt").read_bytes() == b"hello"
    assert jf.io.read_file(path).numpy() == b"hello"
    writer = jf.function(lambda p, c: jf.io.write_file(p, c))
    writer(jf.constant(str(tmp_path / "b.txt")), jf.constant("from a function"))
    reader = jf.function(lambda p: jf.strings.upper(jf.io.read_file(p)))
    assert reader(jf.constant(str(tmp_path / "b.txt"))).numpy() == b"FROM A FUNCTION"
    found = jf.io.matching_files(str(tmp_path / "*.txt")).numpy().tolist()
    assert found == [str(tmp_path / "a.txt").encode(), str(tmp_path / "b.txt").encode()]
    with pytest.raises(jf.errors.NotFoundError, match="No such file"):
        jf.io.read_file(str(tmp_path / "missing"))


def test_gfile(tmp_path):
    d = str(tmp_path / "x" / "y")
    gfile.makedirs(d)
    assert gfile.isdir(d) and gfile.exists(d)
    f = gfile.join(d, "f.bin")
    with gfile.GFile(f, "wb") as out:
        out.write("text as bytes")
    with gfile.GFile(f, "rb") as src:
        assert src.read() == b"text as bytes" and src.size() == 13
    assert gfile.listdir(d) == ["f.bin"] and gfile.glob(os.path.join(d, "*.bin")) == [f]
    gfile.copy(f, f + ".copy")
    with pytest.raises(jf.errors.AlreadyExistsError):
        gfile.rename(f + ".copy", f)
    gfile.rename(f + ".copy", f, overwrite=True)
    assert gfile.stat(f).length == 13 and not gfile.stat(d).length < 0
    assert [sorted(files) for _, _, files in gfile.walk(str(tmp_path))] == [[], [], ["f.bin"]]
    gfile.remove(f)
    with pytest.raises(jf.errors.NotFoundError):
        gfile.remove(f)
    gfile.rmtree(str(tmp_path / "x"))
    assert not gfile.exists(d)
    with pytest.raises(jf.errors.NotFoundError):
        gfile.GFile(f)
