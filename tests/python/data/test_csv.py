"""CSV: jf.io.decode_csv, jf.data.experimental.CsvDataset and make_csv_dataset against what
TF 2.21 printed for the same file and records (hard-coded below), and its error messages."""
import collections

import numpy as np
import pytest

import jitflow as jf

CSV = 'survived,sex,age,fare,class\n0,male,22,7.25,Third\n1,female,38,71.2833,First\n1,female,,7.925,Third\n' \
      '0,"male, jr",35,8.05,Third\n'


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(CSV)
    return str(p)


def test_make_csv_dataset_as_tf(path):
    ds = jf.data.experimental.make_csv_dataset(path, batch_size=2, label_name="survived", num_epochs=1, shuffle=False)
    features, label = ds.element_spec
    assert isinstance(features, collections.OrderedDict) and list(features) == ["sex", "age", "fare", "class"]
    assert [s.dtype for s in features.values()] == [jf.string, jf.int32, jf.float32, jf.string]
    assert label == jf.TensorSpec([None], jf.int32)
    got = [({k: v.numpy().tolist() for k, v in f.items()}, y.numpy().tolist()) for f, y in ds]
    assert got[0][1] == [0, 1] and got[1][1] == [1, 0]
    assert got[0][0]["sex"] == [b"male", b"female"] and got[1][0]["sex"] == [b"female", b"male, jr"]
    assert got[0][0]["age"] == [22, 38] and got[1][0]["age"] == [0, 35]  # an empty field: the inferred default 0
    np.testing.assert_allclose(got[0][0]["fare"] + got[1][0]["fare"], np.float32([7.25, 71.2833, 7.925, 8.05]))
    named = jf.data.experimental.make_csv_dataset(path, batch_size=4, column_names=["a", "b", "c", "d", "e"],
                                                   num_epochs=1, shuffle=False)
    first = next(iter(named))  # the header line is skipped, not read as data, when names are given
    assert first["a"].dtype == jf.int32 and first["a"].numpy().tolist() == [0, 1, 1, 0]
    forever = jf.data.experimental.make_csv_dataset(path, batch_size=3, select_columns=["age", "class"], shuffle=False)
    batches = list(forever.take(3))
    assert [len(b["age"]) for b in batches] == [3, 3, 3] and list(batches[0]) == ["age", "class"]


def test_csv_dataset_as_tf(path):
    ds = jf.data.experimental.CsvDataset(path, [jf.int32, jf.string, [0.0], jf.float64, ["x"]], header=True)
    rows = [[x.numpy() for x in r] for r in ds]
    assert [r[0] for r in rows] == [0, 1, 1, 0] and [r[1] for r in rows] == [b"male", b"female", b"female",
                                                                                b"male, jr"]
    assert [float(r[2]) for r in rows] == [22.0, 38.0, 0.0, 35.0]
    assert [r[3] for r in rows] == [7.25, 71.2833, 7.925, 8.05] and rows[0][3].dtype == np.float64
    picked = jf.data.experimental.CsvDataset(path, [jf.string, [0]], header=True, select_cols=[1, 2])
    assert [(a.numpy(), int(b)) for a, b in picked][2] == (b"female", 0)


def test_decode_csv_as_tf():
    a, b, c = jf.io.decode_csv(jf.constant(["1,2.5,a", '3,,"b,c"']), [[0], [9.0], [""]])
    assert (a.dtype, b.dtype, c.dtype) == (jf.int32, jf.float32, jf.string)
    assert a.numpy().tolist() == [1, 3] and b.numpy().tolist() == [2.5, 9.0] and c.numpy().tolist() == [b"a", b"b,c"]
    traced = jf.function(lambda lines: jf.io.decode_csv(lines, [[0], [9.0]]))
    x, y = traced(jf.constant([["1,2"], ["3,"]]))
    assert x.shape == (2, 1) and x.numpy().tolist() == [[1], [3]] and y.numpy().tolist() == [[2.0], [9.0]]
    with pytest.raises(jf.errors.InvalidArgumentError, match="Field 1 in record 0 is not a valid float: x"):
        jf.io.decode_csv(jf.constant(["1,x"]), [[0], [9.0]])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Field 1 is required but missing in record 0!"):
        jf.io.decode_csv(jf.constant(["1,"]), [[0], jf.constant([], jf.float32)])
    with pytest.raises(jf.errors.InvalidArgumentError, match="Expect 2 fields but have 3 in record 0"):
        jf.io.decode_csv(jf.constant(["1,2,3"]), [[0], [0.0]])
    na, = jf.io.decode_csv(jf.constant(["NA", "4"]), [[-1]], na_value="NA")
    assert na.numpy().tolist() == [-1, 4]
