"""tf.io's file functions and tf.io.gfile: read_file, write_file, matching_files and
decode_compressed (on the values now when eager, as py_function nodes when traced, so they run
when the function runs),
and gfile's GFile, exists, glob, isdir, listdir, makedirs, mkdir, remove, rename, rmtree, stat,
walk, copy and join on the local file system."""
import glob as _glob
import gzip
import os
import shutil
import types
import zlib

import numpy as np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import AlreadyExistsError, DataLossError, InvalidArgumentError, NotFoundError
from ..core.export import export
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as _ops
from .py_function import py_function


def _text(value):
    if hasattr(value, "numpy"):  # a tensor (string tensors are their own class eagerly)
        value = value.numpy()
    return value.decode() if isinstance(value, bytes) else os.fspath(value)


def _on_host(fn, args, dtype, shape):
    """fn(*python values) now, or as a py_function node of `shape` when traced."""
    if _C.is_tracing():
        tensors = [_ops.convert_to_tensor(a) for a in args]
        return py_function(lambda *t: fn(*[x.numpy() for x in t]), tensors, Tout=TensorSpec(shape, dtype))
    return fn(*[a.numpy() if hasattr(a, "numpy") else a for a in args])


def _read(filename):
    path = _text(filename)
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise NotFoundError(f"{path}; No such file or directory") from None


@export("io.read_file", "read_file")
def read_file(filename, name=None):
    """The file's bytes as a scalar string tensor."""
    out = _on_host(lambda f: np.array(_read(f), dtype=object), [filename], _dt.string, [])
    return out if _C.is_tracing() else _ops.convert_to_tensor(out.item(), _dt.string)


@export("io.write_file", "write_file")
def write_file(filename, contents, name=None):
    """Writes the string tensor `contents` to the file (its folder must exist)."""
    def write(f, data):
        data = data.item() if isinstance(data, np.ndarray) else data
        with open(_text(f), "wb") as out:
            out.write(data if isinstance(data, bytes) else str(data).encode())
        return np.bool_(True)
    _on_host(write, [filename, contents], _dt.bool, [])


@export("io.decode_compressed")
def decode_compressed(bytes, compression_type="", name=None):
    """Each string of a string tensor decompressed ("ZLIB" or "GZIP"; "" leaves it as it is)."""
    kind = (compression_type or "").upper()
    if kind not in ("", "ZLIB", "GZIP"):
        raise InvalidArgumentError(f"Unsupported compression type: {compression_type}")

    def inflate(b):
        try:
            return b if kind == "" else zlib.decompress(b) if kind == "ZLIB" else gzip.decompress(b)
        except (zlib.error, OSError, EOFError) as e:
            raise DataLossError(f"inflate() failed with {e}") from None

    def run(data):
        a = np.asarray(data, dtype=object)
        return np.array([inflate(x) for x in a.ravel().tolist()] + [None], dtype=object)[:-1].reshape(a.shape)
    if _C.is_tracing():
        data = _ops.convert_to_tensor(bytes)
        return py_function(lambda t: run(t.numpy()), [data], Tout=TensorSpec(data.shape, _dt.string))
    value = bytes.numpy() if hasattr(bytes, "numpy") else bytes
    return _ops.convert_to_tensor(run(value), _dt.string)


@export("io.matching_files", "matching_files")
def matching_files(pattern, name=None):
    """The sorted paths matching a glob pattern (or any of a list of them)."""
    def match(p):
        patterns = [p] if np.ndim(p) == 0 else list(np.asarray(p).reshape(-1))
        found = sorted({m for q in patterns for m in _glob.glob(_text(q.item() if hasattr(q, "item") else q))})
        return np.array([m.encode() for m in found], dtype=object)
    out = _on_host(match, [pattern], _dt.string, [None])
    return out if _C.is_tracing() else _ops.convert_to_tensor(out, _dt.string)


# ---- tf.io.gfile --------------------------------------------------------------------------

class GFile:
    """A file object: open(name, mode) with TF's `size`, `read(n=-1)` and iteration."""

    def __init__(self, name, mode="r"):
        self.name, self.mode = _text(name), mode
        if "r" in mode and not os.path.exists(self.name):
            raise NotFoundError(f"{self.name}; No such file or directory")
        self._f = open(self.name, mode)  # noqa: SIM115 - a file object, closed by close()/with

    def read(self, n=-1):
        return self._f.read(n)

    def readline(self):
        return self._f.readline()

    def readlines(self):
        return self._f.readlines()

    def write(self, data):
        if "b" in self.mode and isinstance(data, str):
            data = data.encode()
        self._f.write(data)

    def size(self):
        return os.path.getsize(self.name)

    def seek(self, offset, whence=0):
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()

    def flush(self):
        self._f.flush()

    def close(self):
        self._f.close()

    def __iter__(self):
        return iter(self._f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _not_found(path):
    return NotFoundError(f"{path}; No such file or directory")


def _remove(path):
    path = _text(path)
    if not os.path.exists(path):
        raise _not_found(path)
    os.remove(path)


def _rename(src, dst, overwrite=False):
    src, dst = _text(src), _text(dst)
    if os.path.exists(dst) and not overwrite:
        raise AlreadyExistsError(f"{dst}; File already exists")
    os.replace(src, dst)


def _copy(src, dst, overwrite=False):
    src, dst = _text(src), _text(dst)
    if os.path.exists(dst) and not overwrite:
        raise AlreadyExistsError(f"{dst}; File already exists")
    shutil.copyfile(src, dst)


def _listdir(path):
    path = _text(path)
    if not os.path.isdir(path):
        raise _not_found(path)
    return sorted(os.listdir(path))


def _walk(top, topdown=True, onerror=None):
    yield from os.walk(_text(top), topdown=topdown, onerror=onerror)


def _stat(path):
    path = _text(path)
    if not os.path.exists(path):
        raise _not_found(path)
    st = os.stat(path)
    return types.SimpleNamespace(length=st.st_size, mtime_nsec=st.st_mtime_ns, is_directory=os.path.isdir(path))


def _exists(path):
    return os.path.exists(_text(path))


def _isdir(path):
    return os.path.isdir(_text(path))


def _glob_files(pattern):
    return sorted(_glob.glob(_text(pattern)))


def _makedirs(path):
    os.makedirs(_text(path), exist_ok=True)


def _mkdir(path):
    os.mkdir(_text(path))


def _rmtree(path):
    shutil.rmtree(_text(path))


def _join(path, *paths):
    return os.path.join(_text(path), *[_text(p) for p in paths])


_GFILE = {"GFile": GFile, "exists": _exists, "glob": _glob_files, "isdir": _isdir, "listdir": _listdir,
          "makedirs": _makedirs, "mkdir": _mkdir, "remove": _remove, "rename": _rename, "rmtree": _rmtree,
          "stat": _stat, "walk": _walk, "copy": _copy, "join": _join}
for _name, _fn in _GFILE.items():
    export(f"io.gfile.{_name}")(_fn)
