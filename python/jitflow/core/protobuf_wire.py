"""The protobuf wire format, field by field: what jitflow writes in TF's own formats (summary
events, tf.train.Example, GraphDef) without depending on protobuf or TensorFlow. Encoders
return bytes; fields() walks a message's fields."""
import struct

from .errors import DataLossError


def varint(n):
    n &= (1 << 64) - 1  # negative int64 fields take ten bytes, as protobuf encodes them
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def read_varint(buf, i):
    value = shift = 0
    while True:
        if i >= len(buf):
            raise DataLossError("truncated protobuf varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf):
    """(field number, wire type, value) of each field of a message."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = read_varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise DataLossError(f"unsupported protobuf wire type {wire}")
        yield field, wire, value


def bytes_field(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def int_field(field, value):
    return varint(field << 3) + varint(int(value))


def double_field(field, value):
    return varint(field << 3 | 1) + struct.pack("<d", float(value))


def float_field(field, value):
    return varint(field << 3 | 5) + struct.pack("<f", float(value))


# TF's DataType enum (types.proto), by jitflow's dtype names.
DATA_TYPES = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
              "complex64": 8, "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17, "complex128": 18,
              "float16": 19, "uint32": 22, "uint64": 23}
