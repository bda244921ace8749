"""TFRecord files and tf.train.Example: bytes TF 2.21 serialized (hard-coded below) decode and
re-encode identically; files written here read back record by record (plain, GZIP, ZLIB) with
their CRCs checked; parse_single_example / parse_example against the values written, eagerly,
in a jf.function and in a dataset map; TF's errors for missing or mistyped features."""
import numpy as np
import pytest

import jitflow as jf

# tf.train.Example(features={'a': Int64List([-5, 300000]), 'b': FloatList([0.25])}).SerializeToString()
TF_BYTES = bytes.fromhex("0a270a160a016112111a0f0a0dfbffffffffffffffff01e0a7120a0d0a0162120812060a040000803e")
SPEC = {"x": jf.io.FixedLenFeature([2], jf.float32), "y": jf.io.FixedLenFeature([], jf.int64),
        "name": jf.io.FixedLenFeature([], jf.string, default_value="none")}


def _example(x, y, name=None):
    feature = {"x": jf.train.Feature(float_list=jf.train.FloatList(value=x)),
               "y": jf.train.Feature(int64_list=jf.train.Int64List(value=[y]))}
    if name is not None:
        feature["name"] = jf.train.Feature(bytes_list=jf.train.BytesList(value=[name]))
    return jf.train.Example(features=jf.train.Features(feature=feature))


def test_example_bytes_match_tf():
    ex = jf.train.Example.FromString(TF_BYTES)
    assert ex.features.feature["a"].int64_list.value == [-5, 300000]
    assert ex.features.feature["b"].float_list.value == [0.25]
    assert ex.features.feature["b"].WhichOneof("kind") == "float_list"
    assert ex.SerializeToString() == TF_BYTES
    again = jf.train.Example()
    again.ParseFromString(TF_BYTES)
    assert again == ex


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_tfrecord_round_trip_and_parsing(tmp_path, compression):
    path = str(tmp_path / "data.tfrecord")
    rows = [([1.5, -2.0], 7, b"cat"), ([0.0, 3.25], -1, None)]
    with jf.io.TFRecordWriter(path, options=compression) as writer:
        for x, y, name in rows:
            writer.write(_example(x, y, name).SerializeToString())
    ds = jf.data.TFRecordDataset(path, compression_type=compression)
    records = [r.numpy() for r in ds]
    assert records == [_example(*r).SerializeToString() for r in rows]
    first = jf.io.parse_single_example(records[0], SPEC)
    np.testing.assert_array_equal(first["x"].numpy(), np.float32([1.5, -2.0]))
    assert int(first["y"].numpy()) == 7 and first["name"].numpy() == b"cat"
    mapped = [{k: v.numpy() for k, v in e.items()} for e in ds.map(lambda r: jf.io.parse_single_example(r, SPEC))]
    assert mapped[1]["name"] == b"none" and int(mapped[1]["y"]) == -1  # the default fills a missing feature
    batch = jf.io.parse_example(jf.constant(records), SPEC)
    np.testing.assert_array_equal(batch["x"].numpy(), np.float32([r[0] for r in rows]))
    f = jf.function(lambda s: jf.io.parse_example(s, SPEC)["y"])
    np.testing.assert_array_equal(f(jf.constant(records)).numpy(), [7, -1])


def test_errors(tmp_path):
    path = tmp_path / "bad.tfrecord"
    with jf.io.TFRecordWriter(str(path)) as writer:
        writer.write(b"payload")
    raw = bytearray(path.read_bytes())
    raw[14] ^= 1  # flip a bit of the data
    path.write_bytes(bytes(raw))
    with pytest.raises(jf.errors.DataLossError, match="corrupted"):
        list(jf.data.TFRecordDataset(str(path)))
    data = _example([1.0, 2.0], 3).SerializeToString()
    with pytest.raises(jf.errors.InvalidArgumentError, match="is required but could not be found"):
        jf.io.parse_single_example(data, {"missing": jf.io.FixedLenFeature([], jf.int64)})
    with pytest.raises(jf.errors.InvalidArgumentError, match="Data types don't match"):
        jf.io.parse_single_example(data, {"x": jf.io.FixedLenFeature([2], jf.int64)})
    with pytest.raises(jf.errors.InvalidArgumentError, match="Values size"):
        jf.io.parse_single_example(data, {"x": jf.io.FixedLenFeature([3], jf.float32)})


# Examples with an int64 feature 'v' of [5, 6, 7], [] and [9] and a bytes feature 's' of as many
# b'x', serialized by TF 2.21; its parse of them is hard-coded in the asserts below.
VARLEN = [bytes.fromhex(h) for h in (
    "0a200a0c0a017612071a050a030506070a100a0173120b0a090a01780a01780a0178",
    "0a120a070a017612021a000a070a017312020a00",
    "0a180a0a0a017612051a030a01090a0a0a017312050a030a0178")]


@pytest.mark.parametrize("traced", [False, True])
def test_var_len_features_parse_to_sparse_tensors(traced):
    spec = {"v": jf.io.VarLenFeature(jf.int64), "s": jf.io.VarLenFeature(jf.string)}
    single = jf.io.parse_single_example
    batch = jf.io.parse_example
    if traced:
        single, batch = jf.function(lambda d: jf.io.parse_single_example(d, spec)), \
            jf.function(lambda d: jf.io.parse_example(d, spec))
        one, many, empty = single(jf.constant(VARLEN[0])), batch(jf.constant(VARLEN)), single(jf.constant(VARLEN[1]))
    else:
        one, many, empty = single(VARLEN[0], spec), batch(VARLEN, spec), single(VARLEN[1], spec)
    v = one["v"]
    assert isinstance(v, jf.SparseTensor)
    assert v.indices.numpy().tolist() == [[0], [1], [2]] and v.values.numpy().tolist() == [5, 6, 7]
    assert v.dense_shape.numpy().tolist() == [3]
    v = many["v"]
    assert v.indices.numpy().tolist() == [[0, 0], [0, 1], [0, 2], [2, 0]] and v.values.numpy().tolist() == [5, 6, 7, 9]
    assert v.dense_shape.numpy().tolist() == [3, 3]
    assert [bytes(x) for x in many["s"].values.numpy()] == [b"x"] * 4
    assert empty["v"].indices.shape == (0, 1) and empty["v"].dense_shape.numpy().tolist() == [0]
    np.testing.assert_array_equal(jf.sparse.to_dense(many["v"]).numpy(), [[5, 6, 7], [0, 0, 0], [9, 0, 0]])
