"""AutoGraph's converted code kept across processes, in the compile cache's private, verified
store (JITFLOW_CACHE_DIR; `off` keeps it in memory): a new process converts a function it has
converted before by loading the compiled code instead of reading, transforming and compiling
its source. The key digests the original code object (bytecode, constants, names, source
positions and file, nested functions included), the strict flag, the Python version and the
converter's source files (size and modification time): an edited function has other bytecode
or positions, and a changed converter another digest, so neither is served stale code."""

import hashlib
import marshal
import os
import sys
import types

from ... import _C
from ...ops.debugging import _extra_stats

# Counters reported by jf.debugging.stats(): conversions done here, and those loaded instead.
_extra_stats.setdefault("autograph_conversions", 0)
_extra_stats.setdefault("autograph_cache_loads", 0)

_FIELDS = (
    "co_name",
    "co_qualname",
    "co_filename",
    "co_firstlineno",
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_flags",
    "co_code",
    "co_linetable",
    "co_exceptiontable",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
)
_converter = []  # the digest of the converter's sources, computed on first use


def _converter_digest():
    """The Python version and the converter's sources, by their size and modification time (a
    stat per file: reading them cost a first call more than the conversion it saves; pathlib's
    glob compiled a regular expression, a millisecond of a cached first call)."""
    if not _converter:
        h = hashlib.sha1(sys.version.encode())
        with os.scandir(os.path.dirname(__file__)) as entries:
            files = sorted((e.name, e.stat()) for e in entries if e.name.endswith(".py") and e.is_file())
        for name, st in files:
            h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        _converter.append(h.hexdigest())
    return _converter[0]


def _const(k):
    """A constant's text, the same in every process (a frozenset's order follows string
    hashing, which differs between processes)."""
    if isinstance(k, frozenset):
        return "frozenset{" + ",".join(sorted(_const(e) for e in k)) + "}"
    if isinstance(k, tuple):
        return "(" + ",".join(_const(e) for e in k) + ")"
    return f"{type(k).__name__}:{k!r}"


def _feed(h, code):
    for field in _FIELDS:
        h.update(repr(getattr(code, field)).encode() + b"\0")
    for k in code.co_consts:
        if isinstance(k, types.CodeType):
            h.update(b"<code>")
            _feed(h, k)
            h.update(b"</code>")
        else:
            h.update(_const(k).encode() + b"\0")


def key(code, strict):
    """The store's key for converting `code` (hex, a file name)."""
    h = hashlib.sha1(_converter_digest().encode() + (b"strict" if strict else b"lax"))
    _feed(h, code)
    return "autograph-" + h.hexdigest()


def load(k):
    """(compiled module code, converted function's name) stored under k, or None."""
    payload = _C.disk_cache_load(k)
    if payload is None:
        return None
    try:
        compiled, name = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):  # written by another Python: convert again
        return None
    if not isinstance(compiled, types.CodeType) or not isinstance(name, str):
        return None
    _extra_stats["autograph_cache_loads"] += 1
    return compiled, name


def store(k, compiled, name):
    _extra_stats["autograph_conversions"] += 1
    try:
        payload = marshal.dumps((compiled, name))
    except ValueError:  # a constant marshal cannot write: kept in memory only
        return
    _C.disk_cache_store(k, payload)
