"""FuncGraph.as_graph_def(): a traced graph as TF's GraphDef message (graph.proto) — NodeDefs
with their op, inputs ("name", "name:1", "^name" for control inputs) and attrs — readable
field by field (`.node`, `.attr`) and serialized in TF's wire format, which TensorBoard's
graph view and TF's own GraphDef parser read."""
import numpy as np

from .. import _C
from . import protobuf_wire as pw
from .dtypes import as_dtype
from .shapes import TensorShape

_PRODUCER = 1882  # the GraphDef version TF 2.21 writes; readers only check it is not too new


def _shape_proto(shape):
    dims = TensorShape(shape)
    if dims.rank is None:
        return pw.int_field(3, 1)  # unknown_rank
    return b"".join(pw.bytes_field(2, pw.int_field(1, -1 if d is None else d)) for d in dims.as_list())


def _dtype_enum(dtype):
    return pw.DATA_TYPES.get(getattr(dtype, "name", str(dtype)), 0)


def tensor_proto(t):
    """TF's TensorProto of an eager tensor: dtype, shape, and the values as tensor_content
    (little-endian bytes) or, for strings, string_val."""
    dtype = t.dtype
    out = pw.int_field(1, _dtype_enum(dtype)) + pw.bytes_field(2, _shape_proto(t.shape))
    if dtype.name == "string":
        return out + b"".join(pw.bytes_field(8, s) for s in np.asarray(t.numpy(), object).reshape(-1).tolist())
    values = np.asarray(t.numpy())
    return out + pw.bytes_field(4, values.astype(values.dtype.newbyteorder("<")).tobytes())


# TensorProto's typed value fields: number -> (numpy dtype of one value, packed wire type)
_VALUE_FIELDS = {5: np.float32, 6: np.float64, 7: np.int32, 8: object, 10: np.int64, 11: np.bool_, 13: np.uint16}


_DTYPE_NAMES = {v: k for k, v in pw.DATA_TYPES.items()}


def parse_tensor_proto(buf):
    """(jitflow dtype name, numpy array) of a serialized TensorProto, from tensor_content or the
    typed value fields (TF writes both forms); a repeated single value fills the shape."""
    dtype_enum, dims, content, values = 0, [], None, {}
    for field, wire, value in pw.fields(buf):
        if field == 1:
            dtype_enum = value
        elif field == 2:
            dims = [{f: v for f, _, v in pw.fields(d)}.get(1, 0) for f2, _, d in pw.fields(value) if f2 == 2]
        elif field == 4:
            content = bytes(value)
        elif field in _VALUE_FIELDS:
            values.setdefault(field, []).append((wire, value))
    name = _DTYPE_NAMES.get(dtype_enum)
    if name is None:
        raise ValueError(f"TensorProto of an unknown dtype enum {dtype_enum}")
    np_dtype = np.dtype(object) if name == "string" else np.dtype(as_dtype(name).as_numpy_dtype)
    count = int(np.prod(dims, dtype=np.int64))
    if content is not None:
        flat = np.frombuffer(content, np_dtype.newbyteorder("<")).astype(np_dtype)
    elif name == "string":
        flat = np.array([bytes(v) for _, v in values.get(8, [])] + [None], object)[:-1]
    else:
        flat = _typed_values(values, np_dtype)
    if flat.size == 1 and count != 1:
        flat = np.full(count, flat[0], dtype=flat.dtype)
    if flat.size != count:
        raise ValueError(f"TensorProto holds {flat.size} values for shape {dims}")
    return name, flat.reshape(dims)


def _typed_values(values, np_dtype):
    out = []
    for field, entries in values.items():
        kind = _VALUE_FIELDS[field]
        for wire, v in entries:
            if wire == 2:  # packed
                if kind in (np.float32, np.float64):
                    out.extend(np.frombuffer(bytes(v), np.dtype(kind).newbyteorder("<")).tolist())
                else:
                    i = 0
                    while i < len(v):
                        n, i = pw.read_varint(v, i)
                        out.append(n)
            elif wire == 5:
                out.append(np.frombuffer(bytes(v), "<f4")[0])
            elif wire == 1:
                out.append(np.frombuffer(bytes(v), "<f8")[0])
            else:
                out.append(v)
    if np_dtype.kind in "iu":  # varints of negative int32/int64 are two's complement in 64 bits
        out = [x - (1 << 64) if x >= 1 << 63 else x for x in out]
    if np_dtype == np.float16:  # half_val holds the bits
        return np.array(out, np.uint16).view(np.float16)
    return np.array(out).astype(np_dtype)


def _attr_value(name, value):
    """An AttrValue message for a Python attr value."""
    if isinstance(value, bool):
        return pw.int_field(5, value)
    if isinstance(value, int):
        return pw.int_field(3, value)
    if isinstance(value, float):
        return pw.float_field(4, value)
    if isinstance(value, (str, bytes)):
        return pw.bytes_field(2, value.encode() if isinstance(value, str) else value)
    if isinstance(value, _C.DType):
        return pw.int_field(6, _dtype_enum(value))
    if isinstance(value, TensorShape) or name == "shape" or name.endswith("_shape"):
        return pw.bytes_field(7, _shape_proto(value))
    if hasattr(value, "numpy") and hasattr(value, "dtype"):
        return pw.bytes_field(8, tensor_proto(value))
    if isinstance(value, (list, tuple)):  # ListValue: s=2, i=3, f=4, b=5, type=6
        items = list(value)
        if all(isinstance(v, bool) for v in items):
            body = b"".join(pw.int_field(5, v) for v in items)
        elif all(isinstance(v, int) for v in items):
            body = b"".join(pw.int_field(3, v) for v in items)
        elif all(isinstance(v, (int, float)) for v in items):
            body = b"".join(pw.float_field(4, v) for v in items)
        elif all(isinstance(v, _C.DType) for v in items):
            body = b"".join(pw.int_field(6, _dtype_enum(v)) for v in items)
        else:
            body = b"".join(pw.bytes_field(2, str(v).encode()) for v in items)
        return pw.bytes_field(1, body)
    return pw.bytes_field(2, repr(value).encode())


def _type_text(dtype):
    name = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "HALF"}.get(dtype.name, dtype.name.upper())
    return f"DT_{name}"


def _attr_text(name, value):
    """An attr's value as protobuf text, the way TF prints a GraphDef (one line here)."""
    if isinstance(value, bool):
        return f"b: {str(value).lower()}"
    if isinstance(value, int):
        return f"i: {value}"
    if isinstance(value, float):
        return f"f: {value}"
    if isinstance(value, (str, bytes)):
        return f"s: {value.decode() if isinstance(value, bytes) else value!r}".replace("'", '"')
    if isinstance(value, _C.DType):
        return f"type: {_type_text(value)}"
    if isinstance(value, TensorShape) or name == "shape" or name.endswith("_shape"):
        dims = TensorShape(value)
        if dims.rank is None:
            return "shape { unknown_rank: true }"
        return "shape { " + " ".join(f"dim {{ size: {-1 if d is None else d} }}" for d in dims.as_list()) + " }"
    if hasattr(value, "numpy") and hasattr(value, "dtype"):
        return f"tensor {{ dtype: {_type_text(value.dtype)} tensor_shape {{ {len(value.shape)} dims }} }}"
    return f"list {{ {value!r} }}"


class NodeDef:
    """One node: name, op, input, device and attr (name -> Python value)."""

    def __init__(self, name, op, input, device="", attr=None):
        self.name, self.op, self.input, self.device = name, op, list(input), device
        self.attr = dict(attr or {})

    def SerializeToString(self):
        out = pw.bytes_field(1, self.name.encode()) + pw.bytes_field(2, self.op.encode())
        out += b"".join(pw.bytes_field(3, i.encode()) for i in self.input)
        if self.device:
            out += pw.bytes_field(4, self.device.encode())
        for k in sorted(self.attr):
            out += pw.bytes_field(5, pw.bytes_field(1, k.encode()) + pw.bytes_field(2, _attr_value(k, self.attr[k])))
        return out

    def __repr__(self):
        return f"<NodeDef {self.name} op={self.op} input={self.input}>"


class GraphDef:
    """The nodes of a graph in order (`.node`), serializable as TF's GraphDef."""

    def __init__(self, node=()):
        self.node = list(node)

    def SerializeToString(self):
        versions = pw.int_field(1, _PRODUCER)
        return b"".join(pw.bytes_field(1, n.SerializeToString()) for n in self.node) + pw.bytes_field(4, versions)

    def __str__(self):
        lines = []
        for n in self.node:
            lines.append(f'node {{\n  name: "{n.name}"\n  op: "{n.op}"')
            lines += [f'  input: "{i}"' for i in n.input]
            lines += [f'  attr {{\n    key: "{k}"\n    value {{ {_attr_text(k, v)} }}\n  }}'
                      for k, v in sorted(n.attr.items())]
            lines.append("}")
        return "\n".join(lines + [f"versions {{\n  producer: {_PRODUCER}\n}}"])

    def __repr__(self):
        return f"<GraphDef with {len(self.node)} nodes>"


def graph_def_of(func_graph):
    """The GraphDef of a FuncGraph's operations."""
    nodes = []
    for op in func_graph.get_operations():
        inputs = [t.op.name if t.value_index == 0 else t.name for t in op.inputs]
        inputs += ["^" + c.name for c in op.control_inputs]
        attrs = {k: op.get_attr(k) for k in op.node_def.attr}
        nodes.append(NodeDef(op.name, op.type, inputs, attr=attrs))
    return GraphDef(nodes)
