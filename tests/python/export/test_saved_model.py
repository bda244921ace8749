"""jf.saved_model: a module saved here and loaded in a fresh interpreter (which never imports
this file) gives the same values and compiles the same clusters; a damaged or tampered
directory raises before anything is built; what cannot be saved is refused by name."""
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import run_in_child

import jitflow as jf

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
W = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 7
B = np.array([0.1, -0.2, 0.3, -0.4], np.float32)


class Net(jf.Module):
    def __init__(self):
        super().__init__()
        self.w = jf.Variable(W, name="w")
        self.b = jf.Variable(B, name="b")
        self.calls = jf.Variable(0, dtype=jf.int64, trainable=False, name="calls")

    @jf.function(input_signature=[jf.TensorSpec([None, 3], jf.float32)])
    def predict(self, x):
        with jf.jit_scope():
            y = jf.nn.relu(jf.matmul(x, self.w) + self.b) * 2.0
        self.calls.assign_add(1)
        return {"y": y, "total": jf.reduce_sum(y)}

    @jf.function
    def shrink(self, x, scale=0.5):
        z = jf.cond(jf.reduce_sum(x) > 0, lambda: x * scale, lambda: x - 1.0)
        _, z = jf.while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, z * 1.5), [jf.constant(0), z])
        return z, x + self.b[:3]


def _reference(x):
    y = np.maximum(x.astype(np.float64) @ W.astype(np.float64) + B, 0) * 2
    return y, y.sum()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    net = Net()
    x2 = np.array([1.0, -2.0, 0.5], np.float32)
    out = {"predict": net.predict(X), "shrink": net.shrink(jf.constant(x2)),
           "shrink3": net.shrink(jf.constant(-x2), 3.0)}
    cf = net.predict.get_concrete_function()
    path = str(tmp_path_factory.mktemp("sm") / "net")
    shrink = net.shrink.get_concrete_function(jf.TensorSpec([3], jf.float32))
    jf.saved_model.save(net, path, signatures={"serving_default": net.predict, "shrink": shrink})
    explain = [(r.op, r.type, r.status, r.cluster) for r in jf.explain(net.predict, X)]
    return {"path": path, "out": out, "clusters": [(c.name, c.ops) for c in cf.clusters], "explain": explain,
            "x2": x2.tolist()}


def test_original_is_right(saved):
    y, total = _reference(X)
    np.testing.assert_allclose(saved["out"]["predict"]["y"].numpy(), y, rtol=1e-6)
    np.testing.assert_allclose(saved["out"]["predict"]["total"].numpy(), total, rtol=1e-6)


def test_round_trip_in_a_fresh_process(saved):
    out = run_in_child(f"""
        import sys
        assert not any("test_saved_model" in m for m in sys.modules)
        x = np.array({X.tolist()}, np.float32)
        x2 = np.array({saved['x2']}, np.float32)
        loaded = jf.saved_model.load({saved['path']!r})
        before = jf.debugging.stats()["cluster_runs"]
        p = loaded.predict(x)
        runs = jf.debugging.stats()["cluster_runs"] - before
        s = loaded.signatures["serving_default"](x=x)
        a, b = loaded.shrink(jf.constant(x2))
        c, d = loaded.shrink(jf.constant(-x2), 3.0)
        sh = loaded.signatures["shrink"](x=x2)
        cf = loaded.predict.get_concrete_function(x)
        def mismatch():
            try:
                loaded.shrink(jf.constant(x2), 4.0)
            except ValueError as e:
                return str(e)
        report(lambda: {{
            "y": p["y"].numpy().tolist(), "total": float(p["total"].numpy()), "runs": runs,
            "sig": sorted(s), "sig_y": s["y"].numpy().tolist(), "keys": sorted(loaded.signatures),
            "shrink_sig": {{k: v.numpy().tolist() for k, v in sh.items()}},
            "shrink": [a.numpy().tolist(), b.numpy().tolist(), c.numpy().tolist(), d.numpy().tolist()],
            "calls": int(loaded.calls.numpy()), "w": loaded.w.numpy().tolist(),
            "trainable": sorted(v.name for v in loaded.trainable_variables),
            "variables": sorted(v.name for v in loaded.variables),
            "clusters": [[c.name, list(c.ops)] for c in cf.clusters],
            "explain": [[r.op, r.type, r.status, r.cluster] for r in jf.explain(loaded.predict, x)],
            "mismatch": mismatch()}})
    """)
    assert "value" in out, out
    v = out["value"]
    ref = saved["out"]
    # Bit for bit: the same graph compiled the same way.
    assert np.array_equal(np.float32(v["y"]), ref["predict"]["y"].numpy())
    assert np.float32(v["total"]) == ref["predict"]["total"].numpy()
    assert v["runs"] >= 1  # the jit_scope cluster ran compiled in the loaded function
    assert v["sig"] == ["total", "y"] and np.array_equal(np.float32(v["sig_y"]), ref["predict"]["y"].numpy())
    assert v["keys"] == ["serving_default", "shrink"]
    assert sorted(v["shrink_sig"]) == ["output_0", "output_1"]  # TF's keys for a tuple of outputs
    assert np.array_equal(np.float32(v["shrink_sig"]["output_0"]), ref["shrink"][0].numpy())
    want = [t.numpy() for t in ref["shrink"] + ref["shrink3"]]
    for got, w in zip(v["shrink"], want):
        assert np.array_equal(np.float32(got), w)
    # The saved count (1 call before saving) plus the two calls in the child.
    assert v["calls"] == 3
    assert np.array_equal(np.float32(v["w"]), W)
    assert v["trainable"] == ["b:0", "w:0"] and v["variables"] == ["b:0", "calls:0", "w:0"]
    assert [tuple(c) for c in v["clusters"]] == [(n, ops) for n, ops in saved["clusters"]]
    assert [tuple(r) for r in v["explain"]] == saved["explain"]
    assert any(r[2] == "compiled" for r in v["explain"])
    assert "Could not find matching concrete function" in v["mismatch"] and "scale: 0.5" in v["mismatch"]


def test_gradients_through_a_loaded_function(tmp_path):
    class T(jf.Module):
        def __init__(self):
            super().__init__()
            self.v = jf.Variable([1.0, 2.0, -0.5])

        @jf.function(input_signature=[jf.TensorSpec([3], jf.float32)])
        def f(self, x):
            with jf.jit_scope():
                return jf.reduce_sum(jf.tanh(x * self.v))
    jf.saved_model.save(T(), str(tmp_path / "t"))
    loaded = jf.saved_model.load(str(tmp_path / "t"))
    x = np.array([0.3, -0.2, 0.7], np.float32)
    with jf.GradientTape() as tape:
        y = loaded.f(jf.constant(x))
    v = np.array([1.0, 2.0, -0.5])
    np.testing.assert_allclose(tape.gradient(y, loaded.v).numpy(), x * (1 - np.tanh(x * v) ** 2), rtol=1e-5)


def test_jit_compile_is_kept(tmp_path):
    class C(jf.Module):
        def __init__(self):
            super().__init__()
            self.w = jf.Variable(W)

        @jf.function(input_signature=[jf.TensorSpec([None, 3], jf.float32)], jit_compile=True)
        def f(self, x):
            return jf.nn.sigmoid(jf.matmul(x, self.w)) - 0.5
    c = C()
    want = c.f(X).numpy()
    np.testing.assert_allclose(want, 1 / (1 + np.exp(-(X.astype(np.float64) @ W))) - 0.5, rtol=1e-5, atol=1e-6)
    jf.saved_model.save(c, str(tmp_path / "c"))
    loaded = jf.saved_model.load(str(tmp_path / "c"))
    before = jf.debugging.stats()["cluster_runs"]
    got = loaded.f(X).numpy()
    assert jf.debugging.stats()["cluster_runs"] > before
    assert np.array_equal(got, want)
    assert [r.status for r in jf.explain(loaded.f, X) if r.type in ("MatMul", "Sigmoid")] == ["compiled"] * 2


def test_nested_arguments_keywords_and_defaults(tmp_path):
    class K(jf.Module):
        @jf.function
        def g(self, x, opts=None, scale=1.0):
            return {"a": x["p"] * scale + x["q"][0], "none": None}
    k = K()
    p, q = jf.constant([1.0, 2.0]), [jf.constant([3.0, 4.0])]
    k.g({"p": p, "q": q}, scale=2.0)
    k.g(x={"p": p, "q": q})
    jf.saved_model.save(k, str(tmp_path / "k"))
    loaded = jf.saved_model.load(str(tmp_path / "k"))
    assert loaded.g({"p": p, "q": q}, scale=2.0)["a"].numpy().tolist() == [5.0, 8.0]
    # Left out, scale is the Python default 1.0 (not the 2.0 of the other trace).
    out = loaded.g(x={"p": p, "q": q})
    assert out["a"].numpy().tolist() == [4.0, 6.0] and out["none"] is None
    assert loaded.g({"p": p, "q": q}, None, 1.0)["a"].numpy().tolist() == [4.0, 6.0]
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded.g({"p": p, "q": q}, scale=3.0)
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded.g({"p": p})


def test_loaded_module_is_callable_and_converts_lists(tmp_path):
    # The tf.Module guide: a module whose __call__ is a jf.function is called after loading, with
    # a nested list where a tensor was traced (TF's loader converts it on its second try).
    class Scale(jf.Module):
        def __init__(self):
            super().__init__()
            self.v = jf.Variable([2.0, 3.0])

        @jf.function
        def __call__(self, x):
            return x * self.v

        @jf.function
        def plain(self, x):
            return x + 1.0

    m = Scale()
    m(jf.constant([[1.0, 1.0]]))
    m.plain(jf.constant(1.0))
    jf.saved_model.save(m, str(tmp_path / "s"))
    loaded = jf.saved_model.load(str(tmp_path / "s"))
    assert callable(loaded) and loaded([[1.0, 2.0]]).numpy().tolist() == [[2.0, 6.0]]
    assert loaded(jf.constant([[0.5, 1.0]])).numpy().tolist() == [[1.0, 3.0]]
    assert float(loaded.plain(4.0)) == 5.0
    assert not callable(loaded.v)
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded([[1.0, 2.0, 3.0]])


def test_variables_are_a_checkpoint(saved):
    net = Net()
    net.w.assign(np.zeros((3, 4), np.float32))
    jf.train.Checkpoint(root=net).read(os.path.join(saved["path"], "variables", "variables")).assert_consumed()
    assert np.array_equal(net.w.numpy(), W)


def _copy(src, dst):
    import shutil
    shutil.copytree(src, dst)
    return str(dst)


def _rehash(path):
    """Recomputes the manifest, as a tamperer who edits a file and its manifest entry would."""
    m = json.loads(Path(path, "manifest.json").read_text())
    for rel in m["files"]:
        data = Path(path, rel).read_bytes()
        m["files"][rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    Path(path, "manifest.json").write_text(json.dumps(m))


def _load_raises(path, exc, *fragments):
    stats = jf.debugging.stats()
    with pytest.raises(exc) as info:
        jf.saved_model.load(path)
    for f in fragments:
        assert f in str(info.value), str(info.value)
    after = jf.debugging.stats()
    assert after["traces"] == stats["traces"] and after["graph_runs"] == stats["graph_runs"]  # nothing built or run


@pytest.mark.parametrize("rel", ["saved_model.json", "variables/variables.safetensors",
                                 "assets/constants.safetensors"])
def test_damaged_files_raise(saved, tmp_path, rel):
    path = _copy(saved["path"], tmp_path / "flip")
    f = Path(path, rel)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x10
    f.write_bytes(bytes(data))
    _load_raises(path, jf.errors.DataLossError, rel, "SHA-256")
    path = _copy(saved["path"], tmp_path / "cut")
    f = Path(path, rel)
    f.write_bytes(f.read_bytes()[:-9])
    _load_raises(path, jf.errors.DataLossError, rel, "truncated")
    path = _copy(saved["path"], tmp_path / "gone")
    os.remove(os.path.join(path, rel))
    _load_raises(path, jf.errors.DataLossError, rel, "missing")


def test_missing_directory_and_manifest(saved, tmp_path):
    with pytest.raises(OSError, match="SavedModel file does not exist"):
        jf.saved_model.load(str(tmp_path / "nothing"))
    path = _copy(saved["path"], tmp_path / "nomanifest")
    os.remove(os.path.join(path, "manifest.json"))
    with pytest.raises(OSError, match="SavedModel file does not exist"):
        jf.saved_model.load(path)


def test_tampered_records_raise_before_anything_runs(saved, tmp_path):
    def edit(name, change):
        path = _copy(saved["path"], tmp_path / name)
        f = Path(path, "saved_model.json")
        doc = json.loads(f.read_text())
        change(doc)
        f.write_text(json.dumps(doc))
        _rehash(path)
        return path

    def node(doc, op):
        for rec in doc["concrete_functions"]:
            for n in rec["graph"]["nodes"]:
                if n["op"] == op:
                    return n
    # An op jitflow does not define, and one that would call Python: named, refused.
    path = edit("unknown", lambda d: node(d, "Relu").update(op="os.system"))
    _load_raises(path, jf.errors.NotFoundError, "Op type not registered 'os.system'")
    path = edit("pyfunc", lambda d: node(d, "Relu").update(op="EagerPyFunc"))
    _load_raises(path, jf.errors.NotFoundError, "'EagerPyFunc'")
    path = edit("dangling", lambda d: node(d, "Relu").update(inputs=[["nowhere", 0]]))
    _load_raises(path, jf.errors.DataLossError, "nowhere")
    path = edit("novar", lambda d: node(d, "ReadVariableOp")["attrs"].update(var_id={"var": "stolen"}))
    _load_raises(path, jf.errors.DataLossError, "stolen")
    path = edit("version", lambda d: d.update(version=99))
    _load_raises(path, jf.errors.DataLossError, "version")


def test_py_function_is_refused_at_save(tmp_path):
    class P(jf.Module):
        @jf.function(input_signature=[jf.TensorSpec([None], jf.float32)])
        def __call__(self, x):
            return jf.py_function(lambda a: a, [x], jf.float32)
    with pytest.raises(ValueError, match="EagerPyFunc"):
        jf.saved_model.save(P(), str(tmp_path / "p"))
    assert not os.path.exists(tmp_path / "p" / "manifest.json")


def test_untracked_variable_is_refused(tmp_path):
    hidden = jf.Variable(1.0)

    class U(jf.Module):
        @jf.function(input_signature=[jf.TensorSpec([], jf.float32)])
        def f(self, x):
            return x * hidden
    with pytest.raises(ValueError, match="not tracked"):
        jf.saved_model.save(U(), str(tmp_path / "u"))


def test_keras_model_saved_through_its_call(tmp_path):
    rng = np.random.RandomState(3)
    model = jf.keras.Sequential([jf.keras.layers.Dense(6, activation="relu"), jf.keras.layers.Dense(2)])
    x = rng.rand(5, 4).astype(np.float32)
    want = model(x).numpy()
    kernel, bias = model.layers[0].kernel.numpy(), model.layers[0].bias.numpy()
    k2, b2 = model.layers[1].kernel.numpy(), model.layers[1].bias.numpy()
    ref = np.maximum(x.astype(np.float64) @ kernel + bias, 0) @ k2 + b2
    np.testing.assert_allclose(want, ref, rtol=1e-5, atol=1e-6)
    serve = jf.function(lambda x: model(x), input_signature=[jf.TensorSpec([None, 4], jf.float32)])
    jf.saved_model.save(model, str(tmp_path / "k"), signatures=serve)
    out = run_in_child(f"""
        loaded = jf.saved_model.load({str(tmp_path / 'k')!r})
        x = np.array({x.tolist()}, np.float32)
        report(lambda: {{"out": loaded.signatures["serving_default"](x)["output_0"].numpy().tolist(),
                        "n": len(loaded.trainable_variables)}})
    """)
    assert "value" in out, out
    assert np.array_equal(np.float32(out["value"]["out"]), want)
    assert out["value"]["n"] == 4


def test_load_inside_a_function_raises(saved):
    @jf.function
    def f():
        jf.saved_model.load(saved["path"])
        return jf.constant(1)
    with pytest.raises(RuntimeError, match="eagerly"):
        f()
