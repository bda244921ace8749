"""jf.train.Checkpoint / CheckpointManager: a Module MLP trained in a jf.function
step, saved, restored in a fresh process, continues exactly as an uninterrupted run; the file
format as documented in docs/checkpoints.md; TF's errors for mismatches; damaged files raise
DataLossError (each such case runs in a child process, so a crash fails only its test)."""
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitflow as jf

_TRAIN = '''
import json, sys
import numpy as np
import jitflow as jf

class MLP(jf.Module):
    def __init__(self):
        super().__init__()
        self.layers = [jf.nn.Dense(16, activation="tanh", seed=1), jf.nn.Dense(1, seed=2)]

    @jf.Module.with_name_scope
    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

mode, directory, n, jit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "jit"
rng = np.random.default_rng(0)
x = rng.normal(size=(32, 3)).astype(np.float32)
y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
model, opt = MLP(), jf.optimizers.Adam(0.02)

@jf.function(jit_compile=jit)
def step(x, y):
    with jf.GradientTape() as tape:
        loss = jf.reduce_mean(jf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss

ckpt = jf.train.Checkpoint(model=model, optimizer=opt)
manager = jf.train.CheckpointManager(ckpt, directory, max_to_keep=2)
status = None
if mode == "resume_built":  # weights exist before the restore; the slots do not
    model(x[:1])
if mode.startswith("resume"):
    status = ckpt.restore(manager.latest_checkpoint)
    status.assert_existing_objects_matched()
runs = jf.debugging.stats()["cluster_runs"]
losses = [float(step(x, y)) for _ in range(n)]
if status is not None:  # weights built and slots created by the first step got their values
    status.assert_consumed()
out = {"losses": losses, "iterations": int(opt.iterations.numpy()),
       "cluster_runs": jf.debugging.stats()["cluster_runs"] - runs,
       "values": [v.numpy().tolist() for v in model.trainable_variables]}
if mode == "first":
    out["path"] = manager.save()
print(json.dumps(out))
'''


def _run(src, *args, check=True):
    r = subprocess.run([sys.executable, "-c", src, *map(str, args)], capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode >= 0, f"child died with signal {-r.returncode} (a crash): {r.stderr[-3000:]}"
    if check:
        assert r.returncode == 0, r.stderr[-3000:]
    return r


def _train(mode, directory, n, jit):
    return json.loads(_run(_TRAIN, mode, directory, n, jit).stdout.strip().splitlines()[-1])


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def _read_file(path):
    """An independent reader of the documented format (docs/checkpoints.md)."""
    blob = _bytes(path)
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__")
    codes = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8", "BOOL": "?"}
    tensors = {k: np.frombuffer(blob[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]],
                                codes[v["dtype"]]).reshape(v["shape"]) for k, v in header.items()}
    return meta, tensors, n


@pytest.mark.parametrize("jit", ["traced", "jit"])
@pytest.mark.parametrize("mode", ["resume", "resume_built"])
def test_training_resumes_in_a_fresh_process_where_it_stopped(tmp_path, mode, jit):
    full = _train("full", tmp_path / "unused", 10, jit)
    first = _train("first", tmp_path, 4, jit)
    resumed = _train(mode, tmp_path, 6, jit)
    fresh = _train("full", tmp_path / "unused", 1, jit)
    if jit == "jit":  # the step ran as compiled code, before and after the restore
        assert first["cluster_runs"] >= 4 and resumed["cluster_runs"] >= 6
    np.testing.assert_allclose(first["losses"], full["losses"][:4], rtol=1e-6)
    # The resumed run continues the uninterrupted one: weights, Adam's m and v, and the
    # iteration count (Adam's bias correction) all came back.
    np.testing.assert_allclose(resumed["losses"], full["losses"][4:], rtol=1e-5)
    assert resumed["iterations"] == full["iterations"] == 10
    for a, b in zip(resumed["values"], full["values"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert abs(resumed["losses"][0] - fresh["losses"][0]) > 1e-3  # not a fresh start
    assert full["losses"][-1] < 0.8 * full["losses"][0]

    # The file, read by an independent parser of the documented format.
    meta, tensors, n = _read_file(first["path"] + ".safetensors")
    assert (8 + n) % 8 == 0 and meta["format"] == "jitflow.checkpoint" and meta["version"] == "1"
    assert sorted(tensors) == [
        "model/layers/0/bias", "model/layers/0/kernel", "model/layers/1/bias", "model/layers/1/kernel",
        "optimizer/.slots/model/layers/0/bias/m", "optimizer/.slots/model/layers/0/bias/v",
        "optimizer/.slots/model/layers/0/kernel/m", "optimizer/.slots/model/layers/0/kernel/v",
        "optimizer/.slots/model/layers/1/bias/m", "optimizer/.slots/model/layers/1/bias/v",
        "optimizer/.slots/model/layers/1/kernel/m", "optimizer/.slots/model/layers/1/kernel/v",
        "optimizer/iterations", "save_counter"]
    assert tensors["optimizer/iterations"] == 4 and tensors["save_counter"] == 1
    assert tensors["model/layers/0/kernel"].shape == (3, 16)
    # The module's order: layers[0].bias, layers[0].kernel, layers[1].bias, layers[1].kernel.
    for key, value in zip(["model/layers/0/bias", "model/layers/0/kernel", "model/layers/1/bias",
                           "model/layers/1/kernel"], first["values"]):
        np.testing.assert_array_equal(tensors[key], np.array(value, np.float32))
    graph = json.loads(meta["object_graph"])
    root = graph["nodes"][0]
    assert [c["name"] for c in root["children"]] == ["model", "optimizer", "save_counter"]


def test_write_read_roundtrip_every_dtype_shared_and_nested(tmp_path):
    shared = jf.Variable([1.0, 2.0], name="shared")
    m = jf.Module(name="m")
    m.a = shared
    m.items = {"x/y": jf.Variable(np.int64(7)), "b": [jf.Variable(np.zeros((0, 3), np.float64)), shared]}
    m.flags = (jf.Variable(np.array([True, False])), jf.Variable(np.arange(6, dtype=np.int32).reshape(2, 3)))
    path = jf.train.Checkpoint(m=m).write(str(tmp_path / "w"))
    assert path == str(tmp_path / "w") and os.listdir(tmp_path) == ["w.safetensors"]
    _, tensors, _ = _read_file(path + ".safetensors")
    # A shared variable is saved once, under its first (breadth-first) path; "/" in a name is escaped.
    assert sorted(tensors) == ["m/a", "m/flags/0", "m/flags/1", "m/items/b/0", "m/items/x%2Fy"]

    m2 = jf.Module(name="m")
    s2 = jf.Variable([0.0, 0.0])
    m2.a = s2
    m2.items = {"x/y": jf.Variable(np.int64(0)), "b": [jf.Variable(np.ones((0, 3), np.float64)), s2]}
    m2.flags = (jf.Variable(np.array([False, True])), jf.Variable(np.zeros((2, 3), np.int32)))
    jf.train.Checkpoint(m=m2).read(path).assert_consumed()
    np.testing.assert_array_equal(s2.numpy(), [1.0, 2.0])
    assert int(m2.items["x/y"].numpy()) == 7 and m2.items["x/y"].dtype == jf.int64
    np.testing.assert_array_equal(m2.flags[0].numpy(), [True, False])
    np.testing.assert_array_equal(m2.flags[1].numpy(), np.arange(6).reshape(2, 3))
    assert m2.items["b"][0].shape == (0, 3)


def _mlp_checkpoint(tmp_path):
    model = jf.Module(name="model")
    model.w = jf.Variable(np.arange(3, dtype=np.float32))
    model.b = jf.Variable(np.float32(5.0))
    return jf.train.Checkpoint(model=model).write(str(tmp_path / "c")), model


def test_shape_and_dtype_mismatches_raise_tfs_errors_and_change_nothing(tmp_path):
    path, _ = _mlp_checkpoint(tmp_path)
    m = jf.Module(name="model")
    m.b = jf.Variable(np.float32(0.0))
    m.w = jf.Variable(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match=r"Received incompatible tensor with shape \(3,\) when attempting to "
                                         r"restore variable with shape \(4,\)"):
        jf.train.Checkpoint(model=m).read(path)
    assert float(m.b.numpy()) == 0.0  # every value is checked before any is assigned
    m.w = jf.Variable(np.zeros(3, np.int32))
    with pytest.raises(jf.errors.InvalidArgumentError,
                       match="tensor_name = model/w; expected dtype int32 does not equal original dtype float32"):
        jf.train.Checkpoint(model=m).read(path)
    m.w = jf.Module(name="w")
    with pytest.raises(ValueError, match="is a saved variable, but the object here is a Module"):
        jf.train.Checkpoint(model=m).read(path)


def test_missing_and_extra_variables_are_reported_by_the_status(tmp_path):
    path, _ = _mlp_checkpoint(tmp_path)
    m = jf.Module(name="model")
    m.w = jf.Variable(np.zeros(3, np.float32))
    status = jf.train.Checkpoint(model=m).restore(path)
    np.testing.assert_array_equal(m.w.numpy(), [0.0, 1.0, 2.0])
    status.assert_existing_objects_matched()
    assert status.expect_partial() is status
    with pytest.raises(AssertionError, match=r"Unresolved object in checkpoint \(root\).model.b"):
        status.assert_consumed()
    m.extra = jf.Variable(1.0)
    m.b = jf.Variable(np.float32(0.0))
    status = jf.train.Checkpoint(model=m).restore(path)
    with pytest.raises(AssertionError, match="Found 1 Python objects that were not bound to checkpointed values"):
        status.assert_consumed()
    with pytest.raises(AssertionError, match="Found 1 Python objects"):
        status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="No checkpoint specified"):
        jf.train.Checkpoint(model=m).restore(None).assert_consumed()


def test_deferred_restore_on_build_and_its_shape_check(tmp_path, rng):
    d = jf.nn.Dense(3, seed=0)
    d(rng.normal(size=(2, 4)).astype(np.float32))
    path = jf.train.Checkpoint(layer=d).write(str(tmp_path / "d"))
    fresh = jf.nn.Dense(3, seed=9)
    status = jf.train.Checkpoint(layer=fresh).restore(path)
    with pytest.raises(AssertionError, match="layer.bias"):
        status.assert_consumed()  # not built yet: the values wait for the weights
    fresh(np.ones((1, 4), np.float32))
    status.assert_consumed()
    np.testing.assert_array_equal(fresh.kernel.numpy(), d.kernel.numpy())
    wrong = jf.nn.Dense(3)
    jf.train.Checkpoint(layer=wrong).restore(path)
    with pytest.raises(ValueError, match=r"shape \(4, 3\) when attempting to restore variable with shape \(5, 3\)"):
        wrong(np.ones((1, 5), np.float32))  # TF raises at the assignment that creates it


def test_checkpoint_arguments_and_save_counter(tmp_path):
    with pytest.raises(ValueError, match="`Checkpoint` was expecting model to be a trackable object"):
        jf.train.Checkpoint(model=3)
    with pytest.raises(AttributeError, match="save_counter"):
        jf.train.Checkpoint(save_counter=jf.Variable(1))
    with pytest.raises(jf.errors.NotFoundError, match="Failed to find any matching files"):
        jf.train.Checkpoint(v=jf.Variable(1.0)).restore(str(tmp_path / "nope-3"))
    v = jf.Variable(1.0)
    ck = jf.train.Checkpoint(v=v)
    assert ck.v is v
    p1, p2 = ck.save(str(tmp_path / "s")), ck.save(str(tmp_path / "s"))
    assert (p1, p2) == (str(tmp_path / "s-1"), str(tmp_path / "s-2"))
    assert jf.train.latest_checkpoint(str(tmp_path)) == p2
    ck2 = jf.train.Checkpoint(v=jf.Variable(0.0))
    ck2.restore(p2).assert_consumed()
    assert int(ck2.save_counter.numpy()) == 2 and ck2.save(str(tmp_path / "s")).endswith("s-3")
    assert jf.train.latest_checkpoint(str(tmp_path / "empty")) is None

    @jf.function
    def inside():
        ck.save(str(tmp_path / "t"))
        return 1.0
    with pytest.raises(jf.errors.UnimplementedError, match="outside jf.function"):
        inside()


def test_manager_keeps_max_to_keep_and_recovers_its_list(tmp_path):
    v = jf.Variable(0.0)
    ck = jf.train.Checkpoint(v=v)
    mgr = jf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=2)
    assert mgr.latest_checkpoint is None and mgr.checkpoints == []
    paths = []
    for i in range(4):
        v.assign(float(i))
        paths.append(mgr.save())
    assert paths == [str(tmp_path / f"ckpt-{i}") for i in range(1, 5)]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-3.safetensors", "ckpt-4.safetensors"]
    assert mgr.checkpoints == paths[2:] and mgr.latest_checkpoint == paths[3]
    assert mgr.save(checkpoint_number=10) == str(tmp_path / "ckpt-10")
    assert not os.path.exists(tmp_path / "ckpt-3.safetensors")
    again = jf.train.CheckpointManager(jf.train.Checkpoint(v=jf.Variable(9.0)), str(tmp_path), max_to_keep=2)
    assert again.checkpoints == [paths[3], str(tmp_path / "ckpt-10")]
    assert again.restore_or_initialize() == str(tmp_path / "ckpt-10")
    assert float(again.checkpoint.v.numpy()) == 3.0
    assert jf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt-10")
    os.remove(tmp_path / "ckpt-10.safetensors")
    assert jf.train.latest_checkpoint(str(tmp_path)) is None  # recorded, but its file is gone
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="Expected a positive integer or `None` for `max_to_keep`"):
            jf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=bad)


def test_writes_are_atomic(tmp_path, monkeypatch):
    v = jf.Variable([1.0, 2.0])
    ck = jf.train.Checkpoint(v=v)
    path = ck.write(str(tmp_path / "a"))
    before = _bytes(path + ".safetensors")
    v.assign([3.0, 4.0])

    def fail(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        ck.write(path)
    monkeypatch.undo()
    assert _bytes(path + ".safetensors") == before  # the old file is intact
    assert os.listdir(tmp_path) == ["a.safetensors"]  # and no temporary file is left
    ck.write(path)
    jf.train.Checkpoint(v=v).read(path)
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])


_DAMAGE = '''
import json, os, sys
import numpy as np
import jitflow as jf

def make(directory):
    m = jf.Module(name="m")
    m.w = jf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    m.i = jf.Variable(np.int64(42))
    m.flag = jf.Variable(np.array([True, False]))
    path = jf.train.Checkpoint(m=m).write(os.path.join(directory, "c"))
    return path, open(path + ".safetensors", "rb").read()

def fresh():
    m = jf.Module(name="m")
    m.w = jf.Variable(np.zeros((2, 3), np.float32))
    m.i = jf.Variable(np.int64(0))
    m.flag = jf.Variable(np.array([False, False]))
    return m

def outcome(path, blob):
    with open(path + ".safetensors", "wb") as f:
        f.write(blob)
    m = fresh()
    try:
        jf.train.Checkpoint(m=m).read(path)
    except Exception as e:
        untouched = not m.w.numpy().any() and int(m.i.numpy()) == 0
        return type(e).__name__ + ("" if untouched else ":partially-restored")
    ok = (np.array_equal(m.w.numpy(), np.arange(6).reshape(2, 3)) and int(m.i.numpy()) == 42
          and m.flag.numpy().tolist() == [True, False])
    return "restored" if ok else "WRONG-VALUES"

case, directory = sys.argv[1], sys.argv[2]
path, blob = make(directory)
n = int.from_bytes(blob[:8], "little")
results = {}
if case == "truncations":
    for cut in sorted({0, 1, 7, 8, 9, 8 + n // 2, 8 + n - 1, 8 + n, 8 + n + 1, len(blob) - 1}):
        results[cut] = outcome(path, blob[:cut])
elif case == "appended":
    results["appended"] = outcome(path, blob + b"x")
elif case == "header_length":
    for value in (0, n - 1, n + 8, len(blob), 2**63, 2**64 - 1):
        results[value] = outcome(path, value.to_bytes(8, "little") + blob[8:])
elif case == "bit_flips":  # every byte of the file, two different bits
    for pos in range(len(blob)):
        for bit in (0x01, 0x40):
            damaged = bytearray(blob)
            damaged[pos] ^= bit
            results[f"{pos}^{bit}"] = outcome(path, bytes(damaged))
elif case == "garbage":
    results["empty"] = outcome(path, b"")
    results["zeros"] = outcome(path, bytes(64))
    results["random"] = outcome(path, np.random.default_rng(0).bytes(4096))
    results["json_list"] = outcome(path, (16).to_bytes(8, "little") + b"[1, 2, 3]       ")
    results["other_safetensors"] = outcome(path, (16).to_bytes(8, "little") + b'{"__metadata__":{}}'[:16])
elif case == "not_found":
    try:
        jf.train.Checkpoint(m=fresh()).read(os.path.join(directory, "missing"))
        results["missing"] = "no error"
    except Exception as e:
        results["missing"] = type(e).__name__
    try:
        jf.train.Checkpoint(m=fresh()).read(directory)
        results["directory"] = "no error"
    except Exception as e:
        results["directory"] = type(e).__name__
print(json.dumps(results))
'''


@pytest.mark.parametrize("case", ["truncations", "appended", "header_length", "bit_flips", "garbage"])
def test_damaged_checkpoints_raise_dataloss_never_a_crash_or_wrong_values(tmp_path, case):
    r = _run(_DAMAGE, case, tmp_path)
    results = json.loads(r.stdout.strip().splitlines()[-1])
    assert results
    # Every damage is caught, even a flip in the header's JSON spacing (it no longer parses,
    # or a checksum over the text fails), and leaves the variables untouched.
    bad = {k: v for k, v in results.items() if v != "DataLossError"}
    assert not bad, bad


def test_missing_checkpoint_raises_notfound(tmp_path):
    results = json.loads(_run(_DAMAGE, "not_found", tmp_path).stdout.strip().splitlines()[-1])
    assert results == {"missing": "NotFoundError", "directory": "NotFoundError"}


def test_damage_harness_detects_a_wrong_value(tmp_path):
    # The harness above must be able to fail: a file edited consistently (checksums redone)
    # restores other values, which outcome() reports.
    src = _DAMAGE.replace("case, directory = sys.argv[1], sys.argv[2]", textwrap.dedent('''
        case, directory = sys.argv[1], sys.argv[2]
        m = jf.Module(name="m")
        m.w = jf.Variable(np.ones((2, 3), np.float32))
        m.i = jf.Variable(np.int64(42))
        m.flag = jf.Variable(np.array([True, False]))
        p = jf.train.Checkpoint(m=m).write(os.path.join(directory, "c"))
        print(json.dumps({"consistent_edit": outcome(p, open(p + ".safetensors", "rb").read())}))
        sys.exit(0)'''))
    assert json.loads(_run(src, "x", tmp_path).stdout.strip().splitlines()[-1]) == {
        "consistent_edit": "WRONG-VALUES"}


def test_deferred_restore_of_a_list_of_layers_assigned_later_and_a_root_checkpoint(tmp_path, rng):
    class Net(jf.Module):
        def __init__(self, seed):
            super().__init__()
            self.seed, self.blocks = seed, None

        def __call__(self, x):
            if self.blocks is None:  # built on first call, as a list of an LSTM cell and a Dense
                self.blocks = [jf.nn.LSTMCell(3, seed=self.seed), jf.nn.Dense(2, seed=self.seed)]
            h, _ = self.blocks[0](x, self.blocks[0].get_initial_state(x.shape[0]))
            return self.blocks[1](h)

    x = rng.normal(size=(2, 4)).astype(np.float32)
    net, opt = Net(1), jf.optimizers.SGD(0.1, momentum=0.9)
    opt.minimize(lambda: jf.reduce_sum(net(x)), lambda: net.trainable_variables)
    path = jf.train.Checkpoint(root=net, optimizer=opt).write(str(tmp_path / "n"))
    _, tensors, _ = _read_file(path + ".safetensors")
    assert "blocks/0/recurrent_kernel" in tensors and "optimizer/.slots/blocks/1/kernel/momentum" in tensors

    net2, opt2 = Net(2), jf.optimizers.SGD(0.1, momentum=0.9)
    status = jf.train.Checkpoint(root=net2, optimizer=opt2).restore(path)
    np.testing.assert_allclose(net2(x).numpy(), net(x).numpy(), rtol=1e-6)  # built, then restored
    opt2.build(net2.trainable_variables)
    status.assert_consumed()
    np.testing.assert_array_equal(opt2.get_slot(net2.blocks[0].kernel, "momentum").numpy(),
                                  opt.get_slot(net.blocks[0].kernel, "momentum").numpy())
    assert not np.all(opt2.get_slot(net2.blocks[0].kernel, "momentum").numpy() == 0)


def test_list_variables_and_load_variable(tmp_path):
    class M(jf.Module):
        def __init__(self):
            self.v = jf.Variable([1.0, 2.0])
            self.inner = jf.Module()
            self.inner.w = jf.Variable(np.arange(6.0).reshape(2, 3))

    m = M()
    ckpt = jf.train.Checkpoint(model=m)
    path = ckpt.save(str(tmp_path / "ckpt"))
    names = dict(jf.train.list_variables(path))
    # TF 2.21 names these values so (and lists save_counter once save() made it)
    assert names["model/v/.ATTRIBUTES/VARIABLE_VALUE"] == [2]
    assert names["model/inner/w/.ATTRIBUTES/VARIABLE_VALUE"] == [2, 3]
    assert "save_counter/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert jf.train.list_variables(str(tmp_path)) == jf.train.list_variables(path)  # a directory: its latest
    np.testing.assert_array_equal(jf.train.load_variable(path, "model/inner/w/.ATTRIBUTES/VARIABLE_VALUE"),
                                  np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(jf.train.load_variable(path, "model/v"), [1.0, 2.0])
    with pytest.raises(jf.errors.NotFoundError, match="not found"):
        jf.train.load_variable(path, "model/nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Couldn't find"):
        jf.train.list_variables(str(tmp_path / "empty"))
