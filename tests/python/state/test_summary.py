"""jf.summary writes TensorBoard's event files: TFRecord framing with masked CRC-32C (checked
against the CRC-32C standard's check value), Event protos decoded here by a minimal protobuf
reader written from the wire format, scalars, histograms, text and PNG images, steps, name
scopes, writing from inside a jf.function, and no writer meaning no write."""
import struct
import zlib

import numpy as np
import pytest
from protobuf_reader import fields

import jitflow as jf
from jitflow.state import summary as summary_module


def _events(logdir):
    files = sorted(logdir.glob("events.out.tfevents.*"))
    assert len(files) == 1, files
    return [fields(r) for r in summary_module.read_records(str(files[0]))]


def _values(events):
    """(step, tag, Summary.Value fields) of every summary value written."""
    out = []
    for e in events:
        for summary in e.get(5, []):
            for value in fields(summary)[1]:
                v = fields(value)
                out.append((e[2][0], v[1][0].decode(), v))
    return out


def test_crc32c_check_value():
    assert summary_module.crc32c(b"123456789") == 0xE3069283  # the standard's check value


def test_scalars_histograms_text_and_images(tmp_path):
    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=3):
        assert jf.summary.scalar("loss", 0.25)
        with jf.name_scope("train"):
            jf.summary.scalar("acc", jf.constant(0.5), step=7)
        jf.summary.histogram("w", np.arange(10.0), step=4, buckets=5)
        jf.summary.text("note", "hello", step=5)
        jf.summary.image("img", np.ones((2, 3, 4, 3), np.float32) * 0.5, step=6, max_outputs=1)
    writer.close()
    events = _events(tmp_path)
    assert events[0][3][0] == b"brain.Event:2"  # the file_version record first
    values = {tag: (step, v) for step, tag, v in _values(events)}
    step, v = values["loss"]
    assert step == 3 and struct.unpack("<f", v[2][0])[0] == 0.25
    assert values["train/acc"][0] == 7
    step, v = values["w"]
    histo = fields(v[5][0])
    limits = struct.unpack("<5d", histo[6][0])
    counts = struct.unpack("<5d", histo[7][0])
    assert step == 4 and struct.unpack("<d", histo[3][0])[0] == 10 and sum(counts) == 10
    np.testing.assert_allclose(limits, np.linspace(0, 9, 6)[1:])
    step, v = values["note"]
    assert step == 5 and fields(v[8][0])[8] == [b"hello"]
    step, v = values["img/image/0"]
    img = fields(v[4][0])
    png = img[4][0]
    assert (img[1][0], img[2][0], img[3][0]) == (3, 4, 3) and png.startswith(b"\x89PNG")
    raw = zlib.decompress(png[png.index(b"IDAT") + 4:png.index(b"IEND") - 8])
    assert raw[:1] == b"\0" and raw[1:4] == bytes([128, 128, 128])  # 0.5 -> 128


def test_no_writer_no_step_and_record_if(tmp_path):
    assert jf.summary.scalar("x", 1.0, step=0) is False  # no default writer: nothing written
    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        with pytest.raises(ValueError, match="No step set"):
            jf.summary.scalar("x", 1.0)
        jf.summary.experimental.set_step(2)
        with jf.summary.record_if(False):
            assert jf.summary.scalar("skipped", 1.0) is False
        jf.summary.scalar("kept", 1.0)
        jf.summary.experimental.set_step(None)
    writer.close()
    assert [(s, t) for s, t, _ in _values(_events(tmp_path))] == [(2, "kept")]


def test_writes_from_inside_a_function(tmp_path):
    writer = jf.summary.create_file_writer(str(tmp_path))

    @jf.function
    def step_fn(x, step):
        with writer.as_default():
            jf.summary.scalar("sq", x * x, step=step)
        return x

    for i in range(3):
        step_fn(jf.constant(float(i)), jf.constant(i, jf.int64))
    writer.close()
    got = [(s, struct.unpack("<f", v[2][0])[0]) for s, _, v in _values(_events(tmp_path))]
    assert got == [(0, 0.0), (1, 1.0), (2, 4.0)]


def test_trace_export_writes_the_traced_graphs(tmp_path):
    writer = jf.summary.create_file_writer(str(tmp_path))

    @jf.function
    def my_func(x, y):
        return jf.nn.relu(jf.matmul(x, y))

    with pytest.raises(ValueError, match="trace_on"):
        jf.summary.trace_export("nothing", step=0)
    jf.summary.trace_on(graph=True)
    my_func(jf.ones([2, 2]), jf.ones([2, 2]))
    with writer.as_default():
        assert jf.summary.trace_export(name="my_func_trace", step=3)
    writer.close()
    (event,) = [e for e in _events(tmp_path) if 5 in e]
    assert event[2] == [3]
    value = fields(fields(event[5][0])[1][0])
    assert value[1] == [b"my_func_trace"]
    assert fields(fields(value[9][0])[1][0]) == {1: [b"graph_run_metadata_graph"], 2: [b"1"]}
    tensor = fields(value[8][0])
    assert tensor[1] == [7]  # DT_STRING
    (function_graphs,) = fields(tensor[8][0])[4]  # RunMetadata.function_graphs
    graph = fields(fields(function_graphs)[2][0])  # pre_optimization_graph: a GraphDef
    nodes = [fields(n) for n in graph[1]]
    assert [(n[1][0], n[2][0]) for n in nodes] == [(b"x", b"Placeholder"), (b"y", b"Placeholder"),
                                                   (b"MatMul", b"MatMul"), (b"Relu", b"Relu")]
    assert nodes[2][3] == [b"x", b"y"] and nodes[3][3] == [b"MatMul"]
    attrs = {fields(a)[1][0]: fields(fields(a)[2][0]) for a in nodes[0][5]}
    assert attrs[b"dtype"] == {6: [1]}  # DT_FLOAT
    dims = [fields(d)[1][0] for d in fields(attrs[b"shape"][7][0])[2]]
    assert dims == [2, 2]
    # Off after the export: a later trace is not recorded.
    with pytest.raises(ValueError, match="trace_on"):
        jf.summary.trace_export("again", step=0)


def test_graph_def_of_a_concrete_function():
    @jf.function
    def f(x):
        return jf.reduce_sum(x * 2.0, axis=1, keepdims=True)

    cf = f.get_concrete_function(jf.TensorSpec([None, 3]))
    gd = cf.graph.as_graph_def()
    assert [(n.name, n.op) for n in gd.node] == [("x", "Placeholder"), ("Const", "Const"), ("Mul", "Mul"),
                                                 ("Const_1", "Const"), ("Sum", "Sum")]
    assert gd.node[2].input == ["x", "Const"] and gd.node[4].attr["keep_dims"] is True
    assert list(gd.node[0].attr["shape"]) == [None, 3]
    assert cf.structured_input_signature == ((jf.TensorSpec([None, 3], jf.float32),), {})
    parsed = fields(gd.SerializeToString())
    assert len(parsed[1]) == 5 and fields(parsed[4][0]) == {1: [1882]}
    const = {fields(a)[1][0]: fields(fields(a)[2][0]) for a in fields(parsed[1][1])[5]}
    tensor = fields(const[b"value"][8][0])
    assert tensor[1] == [1] and struct.unpack("<f", tensor[4][0]) == (2.0,)
