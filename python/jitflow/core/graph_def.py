"""FuncGraph.as_graph_def(): a traced graph as TF's GraphDef message (graph.proto) — NodeDefs
with their op, inputs ("name", "name:1", "^name" for control inputs) and attrs — readable
field by field (`.node`, `.attr`) and serialized in TF's wire format, which TensorBoard's
graph view and TF's own GraphDef parser read."""
import numpy as np

from .. import _C
from . import protobuf_wire as pw
from .shapes import TensorShape

_PRODUCER = 1882  # the GraphDef version TF 2.21 writes; readers only check it is not too new


def _shape_proto(shape):
    dims = TensorShape(shape)
    if dims.rank is None:
        return pw.int_field(3, 1)  # unknown_rank
    return b"".join(pw.bytes_field(2, pw.int_field(1, -1 if d is None else d)) for d in dims.as_list())


def _dtype_enum(dtype):
    return pw.DATA_TYPES.get(getattr(dtype, "name", str(dtype)), 0)


def _tensor_proto(t):
    dtype = t.dtype
    out = pw.int_field(1, _dtype_enum(dtype)) + pw.bytes_field(2, _shape_proto(t.shape))
    if dtype.name == "string":
        return out + b"".join(pw.bytes_field(8, s) for s in np.asarray(t.numpy(), object).reshape(-1).tolist())
    return out + pw.bytes_field(4, np.ascontiguousarray(t.numpy()).tobytes())


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
        return pw.bytes_field(8, _tensor_proto(value))
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
