"""A minimal protobuf reader for the tests of files jitflow writes in TF's formats (event files,
TFRecords): the fields of a message, decoded from the wire format independently of jitflow."""


def varint(buf, i):
    """(value, next index) of the varint at buf[i]."""
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def fields(buf):
    """{field number: [values]} of one message: varints as ints, fixed64/fixed32 and
    length-delimited fields as bytes."""
    out, i = {}, 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise AssertionError(f"wire type {wire}")
        out.setdefault(field, []).append(value)
    return out
