"""jf.experimental.export_onnx: traced functions exported as ONNX models and run by onnxruntime
(a test-only dependency) agree with float64 numpy references and with jitflow's own results
within float32 tolerance; an op without an ONNX mapping is refused by name."""
import numpy as np
import onnxruntime as ort
import pytest

import jitflow as jf


def _run(path, feeds):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_mlp(tmp_path):
    rng = np.random.RandomState(0)
    mlp = jf.keras.Sequential([jf.keras.layers.Dense(32, activation="relu"), jf.keras.layers.Dense(10, activation="softmax")])
    x = rng.randn(7, 12).astype(np.float32)
    mlp(x)
    f = jf.function(lambda x: mlp(x), input_signature=[jf.TensorSpec([None, 12], jf.float32)])
    jf.experimental.export_onnx(f.get_concrete_function(), tmp_path / "mlp.onnx")
    (k1, b1), (k2, b2) = [(layer.kernel.numpy().astype(np.float64), layer.bias.numpy()) for layer in mlp.layers[:2]]
    logits = np.maximum(x.astype(np.float64) @ k1 + b1, 0) @ k2 + b2
    ref = np.exp(logits - logits.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    for batch in (x, x[:3]):  # the batch dim is symbolic in the model
        got = _run(tmp_path / "mlp.onnx", {"x": batch})[0]
        np.testing.assert_allclose(got, ref[:len(batch)], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, f(batch).numpy(), rtol=1e-5, atol=1e-6)


def test_lstm_cell(tmp_path):
    rng = np.random.RandomState(1)
    cell = jf.keras.layers.LSTMCell(6)
    x, h, c = (rng.randn(3, n).astype(np.float32) for n in (5, 6, 6))
    cell(x, [h, c])
    f = jf.function(lambda x, h, c: cell(x, [h, c]))
    spec = [jf.TensorSpec([None, 5], jf.float32), jf.TensorSpec([None, 6], jf.float32),
            jf.TensorSpec([None, 6], jf.float32)]
    cf = f.get_concrete_function(*spec)
    jf.experimental.export_onnx(cf, tmp_path / "lstm.onnx")
    out, new_h, new_c = _run(tmp_path / "lstm.onnx", {"x": x, "h": h, "c": c})
    # Keras's LSTM cell, gates in the order i, f, c, o.
    k, rk, b = (v.numpy().astype(np.float64) for v in (cell.kernel, cell.recurrent_kernel, cell.bias))
    z = x @ k + h @ rk + b
    i, fg, g, o = np.split(z, 4, axis=1)
    c_ref = _sigmoid(fg) * c + _sigmoid(i) * np.tanh(g)
    h_ref = _sigmoid(o) * np.tanh(c_ref)
    np.testing.assert_allclose(out, h_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_h, h_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_c, c_ref, rtol=1e-5, atol=1e-6)
    mine = cf(x, h, c)
    np.testing.assert_allclose(new_c, mine[1][1].numpy(), rtol=1e-5, atol=1e-6)


def test_small_cnn(tmp_path):
    rng = np.random.RandomState(2)
    x = rng.randn(2, 8, 8, 3).astype(np.float32)
    w = rng.randn(3, 3, 3, 4).astype(np.float32)

    @jf.function(input_signature=[jf.TensorSpec([None, 8, 8, 3], jf.float32)])
    def cnn(x):
        y = jf.nn.relu(jf.nn.conv2d(x, w, strides=1, padding="SAME"))
        y = jf.nn.max_pool2d(y, 2, 2, "VALID")
        return jf.reshape(y, [-1, 4 * 4 * 4])
    jf.experimental.export_onnx(cnn.get_concrete_function(), tmp_path / "cnn.onnx")
    got = _run(tmp_path / "cnn.onnx", {"x": x})[0]
    pad = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((2, 8, 8, 4))
    for di in range(3):
        for dj in range(3):
            conv += pad[:, di:di + 8, dj:dj + 8, :] @ w[di, dj].astype(np.float64)
    ref = np.maximum(conv, 0).reshape(2, 4, 2, 4, 2, 4).max(axis=(2, 4)).reshape(2, -1)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, cnn(x).numpy(), rtol=1e-5, atol=1e-5)


def test_slicing_gathering_and_reductions(tmp_path):
    rng = np.random.RandomState(3)
    x = rng.randn(4, 5).astype(np.float32)
    idx = np.array([3, 0, 1], np.int32)

    @jf.function(input_signature=[jf.TensorSpec([None, 5], jf.float32), jf.TensorSpec([3], jf.int32)])
    def f(x, i):
        a = jf.gather(x, i)[:, 1:4]
        b = jf.where(x > 0, x, -x * 0.5)
        return a, jf.reduce_mean(b, axis=1, keepdims=True), x[1], jf.transpose(jf.concat([x, x], 0))
    jf.experimental.export_onnx(f.get_concrete_function(), tmp_path / "f.onnx")
    got = _run(tmp_path / "f.onnx", {"x": x, "i": idx})
    xd = x.astype(np.float64)
    refs = [xd[idx][:, 1:4], np.where(xd > 0, xd, -xd * 0.5).mean(1, keepdims=True), xd[1],
            np.concatenate([xd, xd], 0).T]
    for g, r in zip(got, refs):
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-6)


def test_elementwise_and_shape_ops(tmp_path):
    rng = np.random.RandomState(4)
    x = (rng.rand(3, 4).astype(np.float32) - 0.5) * 1.8  # inside (-1, 1) for asin/atanh

    @jf.function(input_signature=[jf.TensorSpec([None, 4], jf.float32)])
    def f(x):
        return (jf.math.tan(x), jf.math.asin(x), jf.math.atan(x), jf.math.sinh(x), jf.math.atanh(x),
                jf.nn.leaky_relu(x, 0.3), jf.nn.relu6(x * 8.0), jf.nn.selu(x), jf.nn.softsign(x),
                jf.math.expm1(x), jf.math.log1p(jf.abs(x)), jf.cast(jf.not_equal(x, x[0]), jf.float32),
                jf.add_n([x, x, x]), jf.stack([x, -x], axis=1), jf.tile(x, [2, 1]),
                jf.broadcast_to(x[:1], [5, 4]), jf.argmax(x, 1), jf.argmin(x, 0, output_type=jf.int32))
    jf.experimental.export_onnx(f.get_concrete_function(), tmp_path / "f.onnx")
    got = _run(tmp_path / "f.onnx", {"x": x})
    d = x.astype(np.float64)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    refs = [np.tan(d), np.arcsin(d), np.arctan(d), np.sinh(d), np.arctanh(d), np.where(d > 0, d, 0.3 * d),
            np.clip(d * 8, 0, 6), scale * np.where(d > 0, d, alpha * (np.exp(d) - 1)), d / (1 + np.abs(d)),
            np.expm1(d), np.log1p(np.abs(d)), (d != d[0]).astype(np.float64), 3 * d, np.stack([d, -d], 1),
            np.tile(d, (2, 1)), np.broadcast_to(d[:1], (5, 4)), d.argmax(1), d.argmin(0)]
    for i, (g, r) in enumerate(zip(got, refs)):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=f"output {i}")
    assert got[-2].dtype == np.int64 and got[-1].dtype == np.int32


def test_unsupported_op_is_named(tmp_path):
    v = jf.Variable(1.0)

    @jf.function(input_signature=[jf.TensorSpec([None], jf.float32)])
    def f(x):
        return jf.math.lgamma(x) * v
    with pytest.raises(jf.errors.UnimplementedError, match="op Lgamma .* has no ONNX mapping"):
        jf.experimental.export_onnx(f.get_concrete_function(), tmp_path / "f.onnx")
    assert not (tmp_path / "f.onnx").exists()

    @jf.function(input_signature=[jf.TensorSpec([], jf.float32)])
    def g(x):
        v.assign_add(x)
        return x
    with pytest.raises(jf.errors.UnimplementedError, match="AssignAddVariableOp"):
        jf.experimental.export_onnx(g.get_concrete_function())
