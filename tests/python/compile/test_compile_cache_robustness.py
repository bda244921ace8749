"""Whatever the compile cache directory holds, a call gives the right answer: an entry that
is a directory, a FIFO, a link, too big, or well-formed around object code that does not
load is ignored with one warning, compiled again and replaced (a directory is moved aside,
its contents kept); a directory other users can write is not trusted at all (memory-only
caching).
Each case runs in a child process, the cache directory its own."""
import hashlib
import json
import os
import struct
import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent("""
    import json, warnings, numpy as np, jitflow as jf
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f = jf.function(lambda x: jf.exp(x * 0.375) - 0.125, jit_compile=True)
        out = f(np.arange(4, dtype=np.float32)).numpy()
    s = jf.debugging.stats()
    print(json.dumps({"ok": bool(np.allclose(out, np.exp(np.arange(4) * 0.375) - 0.125, rtol=1e-6)),
                      "compilations": s["compilations"], "cache_hits": s["cache_hits"],
                      "runs": s["cluster_runs"], "warnings": [str(m.message) for m in w]}))
""")


def _run(cache_dir):
    r = subprocess.run([sys.executable, "-c", _CHILD], env=dict(os.environ, JITFLOW_CACHE_DIR=str(cache_dir)),
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["ok"] and out["runs"] >= 1, out  # the right answer, from compiled code
    return out


def _cache(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    first = _run(d)
    assert (first["compilations"], first["cache_hits"]) == (1, 0)
    (entry,) = d.glob("*.jfc")
    return d, entry


def _entry_with_payload(entry, payload):
    """A well-formed entry (magic, key, size, checksum) around another payload."""
    key = entry.name[: -len(".o.jfc")].encode()
    return b"JFC1" + key + struct.pack("<Q", len(payload)) + payload + hashlib.sha1(payload).hexdigest().encode()


def _payload(entry):
    data = entry.read_bytes()
    key_len = len(entry.name) - len(".o.jfc")
    (n,) = struct.unpack("<Q", data[4 + key_len: 12 + key_len])
    return data[12 + key_len: 12 + key_len + n]


def _make_directory(entry):
    entry.unlink()
    entry.mkdir()
    (entry / "x").write_bytes(b"not an entry")


def _make_fifo(entry):
    entry.unlink()
    os.mkfifo(entry)


def _make_link_to_dev_zero(entry):
    entry.unlink()
    entry.symlink_to("/dev/zero")


def _make_sparse_3gb(entry):
    entry.unlink()
    with open(entry, "wb") as f:
        f.truncate(3 << 30)


def _make_foreign_object(entry):
    entry.write_bytes(_entry_with_payload(entry, b"\x7fELF" + os.urandom(4000)))


def _make_truncated_object(entry):
    obj = _payload(entry)
    entry.write_bytes(_entry_with_payload(entry, obj[: len(obj) // 2]))


@pytest.mark.parametrize("spoil", [_make_directory, _make_fifo, _make_link_to_dev_zero, _make_sparse_3gb,
                                   _make_foreign_object, _make_truncated_object],
                         ids=["directory", "fifo", "symlink_to_dev_zero", "sparse_3gb", "foreign_object",
                              "truncated_object"])
def test_a_bad_entry_is_ignored_with_one_warning_recompiled_and_replaced(tmp_path, spoil):
    d, entry = _cache(tmp_path)
    spoil(entry)
    out = _run(d)
    assert (out["compilations"], out["cache_hits"]) == (1, 0), out
    said = [m for m in out["warnings"] if "compile cache entry" in m]
    assert len(said) == 1 and entry.name in said[0], out["warnings"]
    again = _run(d)  # atomically replaced by a sound entry: the next process loads it
    assert entry.is_file() and not entry.is_symlink()
    assert (again["compilations"], again["cache_hits"]) == (0, 1), again
    assert not [m for m in again["warnings"] if "compile cache" in m]
    if spoil is _make_directory:  # rename() cannot replace one: it was moved aside, whole
        (aside,) = d.glob(entry.name + ".aside.*")
        assert (aside / "x").read_bytes() == b"not an entry"
    assert os.path.exists("/dev/zero") and os.stat("/dev/zero").st_size == 0


def test_an_empty_directory_in_an_entrys_place_is_removed(tmp_path):
    d, entry = _cache(tmp_path)
    entry.unlink()
    entry.mkdir()
    _run(d)
    assert entry.is_file() and not list(d.glob("*.aside.*"))
    again = _run(d)
    assert (again["compilations"], again["cache_hits"]) == (0, 1), again


def test_a_cache_directory_other_users_can_write_is_not_trusted(tmp_path):
    d, entry = _cache(tmp_path)
    d.chmod(0o777)
    try:
        out = _run(d)
        assert (out["compilations"], out["cache_hits"]) == (1, 0), out  # the planted entry is not loaded
        assert any("writable by other users" in m and "memory only" in m for m in out["warnings"])
        entry.unlink()
        _run(d)
        assert not list(d.glob("*.jfc"))  # nor is anything written there
    finally:
        d.chmod(0o700)


def test_a_new_cache_directory_is_private(tmp_path):
    d = tmp_path / "fresh" / "cache"
    out = _run(d)
    assert out["compilations"] == 1
    assert (d.stat().st_mode & 0o777) == 0o700
    assert [p.name for p in d.iterdir()] == [next(d.glob("*.o.jfc")).name]
