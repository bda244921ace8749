"""The checkpoint file format (docs/checkpoints.md): a safetensors file — an 8-byte header length,
a JSON header, raw little-endian tensor bytes — whose metadata carries the object graph and a
CRC-32 per tensor. Reading validates every size, offset and checksum against the file: a damaged
file raises DataLossError, never a crash or a silently wrong value. Nothing in it is executed."""
import json
import os
import struct
import tempfile
import zlib

import numpy as np

from ..core.errors import DataLossError, NotFoundError, UnimplementedError

FORMAT = "jitflow.checkpoint"
VERSION = "1"
SUFFIX = ".safetensors"
MAX_HEADER = 100 * 1024 * 1024  # safetensors's own limit on the JSON header

# jitflow dtype name -> (safetensors dtype code, little-endian numpy dtype).
_DTYPES = {
    "bool": ("BOOL", np.dtype("bool")),
    "int8": ("I8", np.dtype("<i1")), "uint8": ("U8", np.dtype("<u1")),
    "int16": ("I16", np.dtype("<i2")), "uint16": ("U16", np.dtype("<u2")),
    "int32": ("I32", np.dtype("<i4")), "uint32": ("U32", np.dtype("<u4")),
    "int64": ("I64", np.dtype("<i8")), "uint64": ("U64", np.dtype("<u8")),
    "float16": ("F16", np.dtype("<f2")), "float32": ("F32", np.dtype("<f4")),
    "float64": ("F64", np.dtype("<f8")),
}
_BY_CODE = {code: (name, dt) for name, (code, dt) in _DTYPES.items()}


def data_path(prefix):
    """The file a checkpoint prefix ("dir/ckpt-3") names; a path already ending in the
    suffix is taken as the file itself."""
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(SUFFIX) else prefix + SUFFIX


def exists(prefix):
    return os.path.isfile(data_path(prefix))


def atomic_write(path, chunks):
    """Writes the byte chunks to path through a temporary file in the same directory, fsynced
    and renamed over path: a reader sees the old file or the whole new one, never a part."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself is durable once the directory is synced
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def write(path, tensors, object_graph):
    """tensors: {key: numpy array}; object_graph: a JSON-able dict. Keys are written sorted,
    their bytes back to back (safetensors's layout), the header padded to 8 bytes."""
    header, blobs, offset, crcs = {}, [], 0, {}
    for key in sorted(tensors):
        arr = np.asarray(tensors[key])
        if arr.dtype.name not in _DTYPES:
            raise UnimplementedError(f"Checkpoint: cannot save '{key}' of dtype {arr.dtype.name}")
        code, le = _DTYPES[arr.dtype.name]
        raw = np.ascontiguousarray(arr, dtype=le).tobytes()
        header[key] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        crcs[key] = _crc(code, list(arr.shape), raw)
        blobs.append(raw)
        offset += len(raw)
    graph = json.dumps(object_graph, sort_keys=True)
    header["__metadata__"] = {"format": FORMAT, "version": VERSION, "object_graph": graph,
                              "object_graph_crc32": str(zlib.crc32(graph.encode("utf-8"))),
                              "crc32": json.dumps(crcs, sort_keys=True)}
    text = json.dumps(header, sort_keys=True).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    atomic_write(path, [struct.pack("<Q", len(text)), text] + blobs)


def read(prefix, blob=None):
    """(tensors {key: numpy array}, object graph dict) of a checkpoint, fully validated; `blob`
    is the file's bytes when the caller has read (and verified) them already."""
    path = data_path(prefix)
    try:
        if blob is None:
            with open(path, "rb") as f:
                blob = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"Failed to find any matching files for {os.fspath(prefix)} (no file {path}). "
                            "Please double-check that the path is correct. You may be missing the "
                            "checkpoint suffix (e.g. the '-1' in 'path/to/ckpt-1').") from None
    except IsADirectoryError:
        raise NotFoundError(f"{path} is a directory, not a checkpoint; for the latest checkpoint in a "
                            "directory use jf.train.latest_checkpoint(directory)") from None

    def bad(why):
        return DataLossError(f"Checkpoint file {path} is corrupted or truncated: {why}")

    if len(blob) < 8:
        raise bad(f"it has {len(blob)} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER or 8 + n > len(blob):
        raise bad(f"the header claims {n} bytes but the file has {len(blob) - 8} after the length")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise bad(f"the header is not valid JSON ({e})") from None
    if not isinstance(header, dict) or not isinstance(header.get("__metadata__"), dict):
        raise bad("the header has no __metadata__ object")
    meta = header.pop("__metadata__")
    if meta.get("format") != FORMAT:
        raise bad(f"not a jitflow checkpoint (format {meta.get('format')!r})")
    if meta.get("version") != VERSION:
        raise bad(f"unsupported version {meta.get('version')!r} (this jitflow reads version {VERSION})")
    try:
        if meta["object_graph_crc32"] != str(zlib.crc32(meta["object_graph"].encode("utf-8"))):
            raise bad("the object graph fails its CRC-32 check")
        graph = json.loads(meta["object_graph"])
        crcs = json.loads(meta["crc32"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise bad(f"the object graph or checksums do not parse ({e!r})") from None
    if not isinstance(crcs, dict):
        raise bad("the checksum table is not an object")
    data = memoryview(blob)[8 + n:]
    tensors, spans = {}, []
    for key, info in header.items():
        tensors[key] = _tensor(key, info, data, crcs, bad)
        spans.append(tuple(info["data_offsets"]))
    # safetensors's rule: the tensors tile the data section exactly, so no byte is unaccounted.
    end = 0
    for b, e in sorted(spans):
        if b != end:
            raise bad(f"tensor data overlaps or leaves a gap at byte {end}")
        end = e
    if end != len(data):
        raise bad(f"the tensors cover {end} data bytes but the file has {len(data)}")
    _check_graph(graph, tensors, bad)
    return tensors, graph


def _tensor(key, info, data, crcs, bad):
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise bad(f"tensor '{key}' has a malformed entry {info!r}")
    code, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
    if code not in _BY_CODE:
        raise bad(f"tensor '{key}' has unknown dtype {code!r}")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise bad(f"tensor '{key}' has invalid shape {shape!r}")
    if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs)
            or not 0 <= offs[0] <= offs[1] <= len(data)):
        raise bad(f"tensor '{key}' has data offsets {offs!r} outside the {len(data)}-byte data section")
    name, dt = _BY_CODE[code]
    nbytes = int(np.prod(shape, dtype=object)) * dt.itemsize
    if offs[1] - offs[0] != nbytes:
        raise bad(f"tensor '{key}' of shape {shape} and dtype {name} needs {nbytes} bytes, "
                  f"its offsets span {offs[1] - offs[0]}")
    raw = data[offs[0]:offs[1]]
    if crcs.get(key) != _crc(code, shape, raw):
        raise bad(f"tensor '{key}' fails its CRC-32 check")
    arr = np.frombuffer(raw, dtype=dt).reshape(shape).astype(dt.newbyteorder("="), copy=True)
    if dt.kind == "b" and arr.view(np.uint8).max(initial=0) > 1:
        raise bad(f"tensor '{key}' (bool) holds bytes other than 0 and 1")
    return arr


def _crc(code, shape, raw):
    """CRC-32 of a tensor's dtype code, shape and bytes: a damaged header entry fails it too."""
    return zlib.crc32(raw, zlib.crc32(json.dumps([code, shape]).encode("ascii")))


def _check_graph(graph, tensors, bad):
    """The object graph's shape: nodes reference existing nodes and tensors."""
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list) or not graph["nodes"]:
        raise bad("the object graph has no nodes")
    nodes = graph["nodes"]
    count = len(nodes)
    used = set()
    for i, node in enumerate(nodes):
        if (not isinstance(node, dict) or not isinstance(node.get("children", []), list)
                or not isinstance(node.get("slot_variables", []), list)
                or not isinstance(node.get("tensor", ""), str)):
            raise bad(f"object graph node {i} is malformed")
        for c in node.get("children", []):
            if (not isinstance(c, dict) or not isinstance(c.get("name"), str)
                    or type(c.get("node")) is not int or not 0 <= c["node"] < count):
                raise bad(f"object graph node {i} has a malformed child {c!r}")
        for s in node.get("slot_variables", []):
            if (not isinstance(s, dict) or not isinstance(s.get("slot"), str)
                    or any(type(s.get(k)) is not int or not 0 <= s[k] < count for k in ("variable", "node"))):
                raise bad(f"object graph node {i} has a malformed slot entry {s!r}")
        if "tensor" in node:
            if node["tensor"] not in tensors:
                raise bad(f"object graph node {i} names tensor {node['tensor']!r}, which the file lacks")
            used.add(node["tensor"])
    if used != set(tensors):
        raise bad(f"tensors {sorted(set(tensors) - used)} belong to no object")
