"""jf.keras.layers: each layer's output and its weights' gradients against a float64 numpy
reference written here (gradients by central differences of that reference), the training flag
of Dropout and BatchNormalization, and Keras 3's weight layouts."""
import numpy as np
import pytest
from conftest import compiled_runs
from keras_ref import check_layer as _check
from keras_ref import gru_ref as _gru_ref
from keras_ref import lstm_ref as _lstm_ref

import jitflow as jf

layers = jf.keras.layers


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_dense_output_gradients_and_layout(rng):
    x = rng.normal(size=(4, 3))
    layer = layers.Dense(5, activation="tanh", dtype="float64")
    _check(layer, [x], lambda x, k, b: np.tanh(x @ k + b), rng)
    assert layer.kernel.shape == (3, 5) and layer.bias.shape == (5,)
    assert [w.path for w in layer.weights] == [f"{layer.name}/kernel", f"{layer.name}/bias"]
    # rank 3 contracts the last axis
    x3 = rng.normal(size=(2, 4, 3))
    np.testing.assert_allclose(layer(x3).numpy(), np.tanh(x3 @ layer.kernel.numpy() + layer.bias.numpy()), rtol=1e-12)


def test_dense_regularizers_are_losses(rng):
    layer = layers.Dense(2, kernel_regularizer=jf.keras.regularizers.L2(0.1), bias_regularizer="l1",
                         bias_initializer="ones", dtype="float64")
    layer(rng.normal(size=(3, 4)))
    k = layer.kernel.numpy()
    got = sorted(float(v) for v in layer.losses)
    np.testing.assert_allclose(got, sorted([0.1 * np.sum(k ** 2), 0.01 * 2.0]), rtol=1e-12)
    # an activity penalty is the last call's (Keras: l2 of the outputs over the batch size)
    act = layers.Dense(2, activity_regularizer="l2", dtype="float64")
    for x in (rng.normal(size=(3, 4)), rng.normal(size=(5, 4))):
        y = act(x).numpy()
        (loss,) = act.losses
        np.testing.assert_allclose(float(loss), 0.01 * np.sum(y ** 2) / len(x), rtol=1e-12)


def test_embedding_gathers_rows_and_gradients_scatter(rng):
    layer = layers.Embedding(6, 3, dtype="float64")
    ids = np.array([[0, 5, 2], [2, 2, 1]], np.int32)
    out = layer(ids)
    table = layer.embeddings.numpy()
    np.testing.assert_array_equal(out.numpy(), table[ids])
    assert np.all(np.abs(table) <= 0.05)  # Keras's uniform(-0.05, 0.05)
    r = rng.normal(size=(2, 3, 3))
    with jf.GradientTape() as tape:
        loss = jf.reduce_sum(layer(ids) * r)
    g = jf.convert_to_tensor(tape.gradient(loss, layer.embeddings)).numpy()
    want = np.zeros_like(table)
    np.add.at(want, ids.reshape(-1), r.reshape(-1, 3))
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_dropout_training_flag():
    x = np.ones((200, 50), np.float32)
    layer = layers.Dropout(0.3, seed=1)
    np.testing.assert_array_equal(layer(x).numpy(), x)  # Keras's default: training=False
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    y = layer(x, training=True).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert abs(kept.mean() - 0.7) < 0.02
    # compiled, a new mask per call (a seed state variable feeds stateless draws); two layers
    # with the same seed draw the same masks
    a, b = layers.Dropout(0.5, seed=3), layers.Dropout(0.5, seed=3)
    fa = jf.function(lambda x: a(x, training=True), jit_compile=True)
    m1, m2 = compiled_runs(lambda x: a(x, training=True), jf.constant(x)).numpy(), fa(x).numpy()
    assert not np.array_equal(m1, m2)
    np.testing.assert_array_equal(b(x, training=True).numpy(), m1)
    # a model called with training=True passes it to the layers it calls
    model = jf.keras.Sequential([layers.Dense(50, kernel_initializer="identity", use_bias=False), layers.Dropout(0.5)])
    assert np.all(model(x).numpy() == 1)
    assert 0.4 < (model(x, training=True).numpy() == 0).mean() < 0.6


def test_layer_normalization(rng):
    x = rng.normal(size=(3, 5)) * 3 + 1

    def ref(x, gamma, beta):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-3) * gamma + beta

    layer = layers.LayerNormalization(dtype="float64", gamma_initializer="random_normal",
                                      beta_initializer="random_normal")
    _check(layer, [x], ref, rng)
    assert [w.path.split("/")[-1] for w in layer.weights] == ["gamma", "beta"]


def test_batch_normalization_training_and_inference(rng):
    x = rng.normal(size=(8, 4)) * 2 + 3
    layer = layers.BatchNormalization(dtype="float64", gamma_initializer="random_normal")
    assert layer.momentum == 0.99 and layer.epsilon == 1e-3  # TF's defaults
    out = layer(x, training=True).numpy()
    gamma, beta = layer.gamma.numpy(), layer.beta.numpy()
    m, v = x.mean(0), x.var(0)
    np.testing.assert_allclose(out, (x - m) / np.sqrt(v + 1e-3) * gamma + beta, rtol=1e-10)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.01 * m, rtol=1e-10)
    np.testing.assert_allclose(layer.moving_variance.numpy(), 0.99 + 0.01 * v, rtol=1e-10)
    assert [w.path.split("/")[-1] for w in layer.non_trainable_weights] == ["moving_mean", "moving_variance"]
    assert [w.path.split("/")[-1] for w in layer.trainable_weights] == ["gamma", "beta"]
    # inference: the moving statistics, nothing updated
    before = layer.moving_mean.numpy()
    inf = layer(x).numpy()
    np.testing.assert_allclose(inf, (x - 0.01 * m) / np.sqrt(0.99 + 0.01 * v + 1e-3) * gamma + beta, rtol=1e-10)
    np.testing.assert_array_equal(layer.moving_mean.numpy(), before)

    def ref(x, gamma, beta):
        mu, var = x.mean(0), x.var(0)
        return (x - mu) / np.sqrt(var + 1e-3) * gamma + beta

    _check(layer, [x], ref, rng, call=lambda x: layer(x, training=True), rtol=1e-9)


def test_shape_layers_and_merges(rng):
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(layers.Flatten()(x).numpy(), x.reshape(2, 12))
    np.testing.assert_array_equal(layers.Reshape((4, -1))(x).numpy(), x.reshape(2, 4, 3))
    np.testing.assert_allclose(layers.Activation("relu")(x).numpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(layers.Concatenate()([x, 2 * x]).numpy(), np.concatenate([x, 2 * x], -1))
    np.testing.assert_array_equal(layers.Concatenate(axis=1)([x, x]).numpy(), np.concatenate([x, x], 1))
    np.testing.assert_allclose(layers.Add()([x, x, x]).numpy(), 3 * x, rtol=1e-6)
    with pytest.raises(ValueError, match="list of inputs"):
        layers.Add()(x)


def test_lstm_cell_matches_kerass_layout_and_gradients(rng):
    cell = layers.LSTMCell(3, dtype="float64")
    x, h, c = rng.normal(size=(2, 4)), rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    out, (h1, c1) = cell(jf.constant(x), [jf.constant(h), jf.constant(c)])
    assert [w.path for w in cell.weights] == [f"{cell.name}/{n}" for n in ("kernel", "recurrent_kernel", "bias")]
    assert cell.kernel.shape == (4, 12) and cell.recurrent_kernel.shape == (3, 12)
    np.testing.assert_array_equal(cell.bias.numpy(), [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])  # unit_forget_bias
    rk = cell.recurrent_kernel.numpy()
    np.testing.assert_allclose(rk @ rk.T, np.eye(3), atol=1e-12)  # orthogonal rows
    want_h, want_c = _lstm_ref(x, h, c, *[w.numpy() for w in cell.weights])
    np.testing.assert_allclose(h1.numpy(), want_h, rtol=1e-10)
    np.testing.assert_allclose(c1.numpy(), want_c, rtol=1e-10)
    assert out is h1 or np.array_equal(out.numpy(), h1.numpy())
    _check(cell, [x, h, c], lambda x, h, c, k, rk, b: _lstm_ref(x, h, c, k, rk, b)[0], rng,
           call=lambda x, h, c: cell(x, [h, c])[0])


def test_gru_cell_reset_after(rng):
    cell = layers.GRUCell(3, dtype="float64", bias_initializer="random_normal")
    x, h = rng.normal(size=(2, 4)), rng.normal(size=(2, 3))
    out, states = cell(jf.constant(x), [jf.constant(h)])
    assert cell.bias.shape == (2, 9) and isinstance(states, list)  # Keras 3: reset_after=True
    np.testing.assert_allclose(out.numpy(), _gru_ref(x, h, *[w.numpy() for w in cell.weights]), rtol=1e-10)
    _check(cell, [x, h], _gru_ref, rng, call=lambda x, h: cell(x, [h])[0])


def test_lstm_over_time_static_and_dynamic_lengths(rng):
    x = rng.normal(size=(2, 5, 3))
    lstm = layers.LSTM(4, return_sequences=True, return_state=True, dtype="float64")
    seq, h, c = lstm(x)
    k, rk, b = [w.numpy() for w in lstm.weights]
    assert lstm.weights[0].path == f"{lstm.name}/lstm_cell/kernel"
    hs, hh, cc = [], np.zeros((2, 4)), np.zeros((2, 4))
    for t in range(5):
        hh, cc = _lstm_ref(x[:, t], hh, cc, k, rk, b)
        hs.append(hh)
    np.testing.assert_allclose(seq.numpy(), np.stack(hs, 1), rtol=1e-10)
    np.testing.assert_allclose(h.numpy(), hh, rtol=1e-10)
    np.testing.assert_allclose(c.numpy(), cc, rtol=1e-10)
    # a time dim unknown when traced goes through jf.while_loop
    f = jf.function(lambda x: lstm(x), input_signature=[jf.TensorSpec([None, None, 3], jf.float64)])
    seq2, h2, _ = f(jf.constant(x))
    np.testing.assert_allclose(seq2.numpy(), seq.numpy(), rtol=1e-12)
    np.testing.assert_allclose(h2.numpy(), hh, rtol=1e-10)
    # the last output only, and gradients through time
    last = layers.LSTM(2, dtype="float64")

    def ref(x, k, rk, b):
        hh, cc = np.zeros((2, 2)), np.zeros((2, 2))
        for t in range(5):
            hh, cc = _lstm_ref(x[:, t], hh, cc, k, rk, b)
        return hh

    _check(last, [x], ref, rng)


def test_multi_head_attention(rng):
    q, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3, dtype="float64", bias_initializer="random_normal")

    def ref(q, v, qk, qb, kk, kb, vk, vb, ok, ob, causal=False):
        qq = np.einsum("btd,dhk->bthk", q, qk) + qb
        kk_ = np.einsum("bsd,dhk->bshk", v, kk) + kb
        vv = np.einsum("bsd,dhk->bshk", v, vk) + vb
        s = np.einsum("bthk,bshk->bhts", qq / np.sqrt(3), kk_)
        keep = np.tril(np.ones(s.shape[-2:], bool)) if causal else np.ones(s.shape[-2:], bool)
        p = np.where(keep, _softmax(np.where(keep, s, -1e9)), 0)
        ctx = np.einsum("bhts,bshk->bthk", p, vv)
        return np.einsum("bthk,hko->bto", ctx, ok) + ob

    _check(mha, [q, v], ref, rng, call=lambda q, v: mha(q, v))
    shapes = [(w.path.split("/", 1)[1], w.shape) for w in mha.weights]
    assert shapes == [("query/kernel", (4, 2, 3)), ("query/bias", (2, 3)), ("key/kernel", (4, 2, 3)),
                      ("key/bias", (2, 3)), ("value/kernel", (4, 2, 3)), ("value/bias", (2, 3)),
                      ("attention_output/kernel", (2, 3, 4)), ("attention_output/bias", (4,))]
    out, scores = mha(q, q, use_causal_mask=True, return_attention_scores=True)
    ws = [w.numpy() for w in mha.weights]
    np.testing.assert_allclose(out.numpy(), ref(q, q, *ws, causal=True), rtol=1e-8)
    assert scores.shape == (2, 2, 3, 3) and np.allclose(np.triu(scores.numpy()[0, 0], 1), 0)
    # an attention_mask [B, T, S]; a query masked everywhere attends to nothing (Keras zeroes
    # its probabilities), so its output is the output projection's bias
    mask = rng.uniform(size=(2, 3, 5)) > 0.4
    mask[1, 2] = False
    out, scores = mha(q, v, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_array_equal(scores.numpy()[1, :, 2], 0)
    np.testing.assert_allclose(out.numpy()[1, 2], ws[-1], rtol=1e-12)
    assert np.all(scores.numpy()[np.broadcast_to(~mask[:, None], scores.shape)] == 0)


def test_layers_compile_under_jit_compile(rng):
    model = jf.keras.Sequential([layers.Dense(8, activation="relu"), layers.LayerNormalization(),
                                 layers.Dense(2)])
    x = rng.normal(size=(4, 3)).astype(np.float32)
    eager = model(x).numpy()
    np.testing.assert_allclose(compiled_runs(lambda x: model(x), jf.constant(x)).numpy(), eager, rtol=1e-5,
                               atol=1e-6)
    cell = layers.LSTMCell(5)
    s = [jf.zeros([4, 5])] * 2
    want = cell(jf.constant(x), s)[0].numpy()
    got = compiled_runs(lambda x, h, c: cell(x, [h, c])[0], jf.constant(x), *s)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_layer_arguments_checked():
    with pytest.raises(ValueError, match="Unrecognized keyword arguments passed to Dense"):
        layers.Dense(3, foo=1)
    with pytest.raises(ValueError, match="cannot contain character `/`"):
        layers.Dense(3, name="a/b")
    with pytest.raises(ValueError, match="positive integer"):
        layers.Dense(0)


def test_seed_example_with_tf_spelling(rng):
    """The seed's example with `tf.` replaced by `jf.`: LSTMCell called eagerly and in a
    jf.function on a list state [h, c]."""
    lstm_cell = jf.keras.layers.LSTMCell(10)

    @jf.function
    def lstm_fn(input, state):
        return lstm_cell(input, state)

    input = jf.constant(rng.normal(size=(10, 10)).astype(np.float32))
    state = [jf.zeros([10, 10])] * 2
    out_eager, (h, c) = lstm_cell(input, state)
    out_fn, (h2, c2) = lstm_fn(input, state)
    k, rk, b = [w.numpy().astype(np.float64) for w in lstm_cell.weights]
    want_h, want_c = _lstm_ref(input.numpy().astype(np.float64), np.zeros((10, 10)), np.zeros((10, 10)), k, rk, b)
    for got in (out_eager, h, out_fn, h2):
        np.testing.assert_allclose(got.numpy(), want_h, rtol=1e-5, atol=1e-6)
    for got in (c, c2):
        np.testing.assert_allclose(got.numpy(), want_c, rtol=1e-5, atol=1e-6)


def test_missing_keras_layers_say_so():
    with pytest.raises(AttributeError, match=r"jitflow does not implement tf.keras.layers.ConvLSTM3D yet"):
        layers.ConvLSTM3D  # noqa: B018
    np.testing.assert_array_equal(layers.add([jf.ones([2]), jf.ones([2])]).numpy(), [2, 2])


def test_batch_norm_updates_and_dropout_inside_compiled_functions(rng):
    x = (rng.normal(size=(16, 3)) * 2 + 1).astype(np.float32)
    eager_bn, jit_bn = layers.BatchNormalization(), layers.BatchNormalization()
    for _ in range(3):
        want = eager_bn(x, training=True).numpy()
        got = compiled_runs(lambda x: jit_bn(x, training=True), jf.constant(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jit_bn.moving_mean.numpy(), eager_bn.moving_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(jit_bn.moving_variance.numpy(), eager_bn.moving_variance.numpy(), rtol=1e-6)
    np.testing.assert_allclose(eager_bn.moving_mean.numpy(), x.mean(0) * (1 - 0.99 ** 3), rtol=1e-5)
    inp = jf.keras.Input((3,))
    model = jf.keras.Model(inp, layers.Dropout(0.5)(layers.Dense(64)(inp)))
    y = jf.function(lambda x: model(x, training=True))(x).numpy()
    assert 0.3 < (y == 0).mean() < 0.7
    np.testing.assert_array_equal(jf.function(lambda x: model(x))(x).numpy() != 0, True)


def test_a_layer_built_by_hand_keeps_its_weights():
    class Scale(layers.Layer):
        def build(self, input_shape):  # does not set self.built, as many user layers
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            return x * self.w

    s = Scale()
    s.build((None, 3))
    assert s.built and [v.path for v in s.weights] == [f"{s.name}/w"]
    s.w.assign([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(s(np.ones((2, 3), np.float32)).numpy(), [[1, 2, 3]] * 2)
    assert len(s.weights) == 1


def test_global_pooling_and_activation_layers(rng):
    x = rng.normal(size=(2, 3, 4, 5))
    np.testing.assert_allclose(layers.GlobalAveragePooling2D(dtype="float64")(x).numpy(), x.mean((1, 2)),
                               rtol=1e-12)
    np.testing.assert_array_equal(layers.GlobalMaxPooling2D(keepdims=True, dtype="float64")(x).numpy(),
                                  x.max((1, 2), keepdims=True))
    s = x[:, 0]
    np.testing.assert_allclose(layers.GlobalAveragePooling1D(dtype="float64")(s).numpy(), s.mean(1), rtol=1e-12)
    np.testing.assert_array_equal(layers.GlobalMaxPooling1D(data_format="channels_first", dtype="float64")(s).numpy(),
                                  s.max(2))
    relu = layers.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.5, dtype="float64")
    want = np.where(s > 0.5, np.minimum(s, 1.0), 0.1 * (s - 0.5))
    np.testing.assert_allclose(relu(s).numpy(), want, rtol=1e-12)
    # (TF rounds LeakyRelu's slope to its float32 attribute even for float64 inputs; jitflow's
    # op keeps 0.3: the tolerance covers both)
    np.testing.assert_allclose(layers.LeakyReLU(dtype="float64")(s).numpy(), np.where(s > 0, s, 0.3 * s), rtol=1e-7)
    mask = rng.uniform(size=s.shape) > 0.3
    mask[0, 0] = False
    got = layers.Softmax(dtype="float64")(s, mask=mask).numpy()
    e = np.where(mask, np.exp(s - s.max(-1, keepdims=True)), 0)
    with np.errstate(invalid="ignore"):
        want = np.where(mask, e / e.sum(-1, keepdims=True), 0)
    np.testing.assert_allclose(got, np.nan_to_num(want), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(layers.Softmax(axis=1, dtype="float64")(s).numpy(), _softmax(s, 1), rtol=1e-12)


def test_simple_rnn(rng):
    x = rng.normal(size=(2, 4, 3))
    rnn = layers.SimpleRNN(3, return_sequences=True, dtype="float64")

    def ref(x, k, rk, b):
        h, out = np.zeros((2, 3)), []
        for t in range(x.shape[1]):
            h = np.tanh(x[:, t] @ k + h @ rk + b)
            out.append(h)
        return np.stack(out, 1)

    _check(rnn, [x], ref, rng)
    assert [w.path.split("/", 1)[1] for w in rnn.weights] == ["simple_rnn_cell/kernel", "simple_rnn_cell/recurrent_kernel",
                                                             "simple_rnn_cell/bias"]


def test_masks_from_embedding_reach_rnn_attention_and_pooling(rng):
    """Embedding(mask_zero=True) masks padded steps as in Keras: an LSTM keeps its state over
    them (the last output is the last real step's), a masked mean skips them, and attention
    ignores them (the same as an explicit attention_mask). Checked by hand against Keras 3.15
    on a model joining all of these (3e-9)."""
    ids = np.array([[3, 5, 0, 0], [1, 2, 3, 4], [7, 0, 0, 0]], np.int32)
    emb = layers.Embedding(10, 4, mask_zero=True, dtype="float64")
    lstm = layers.LSTM(3, dtype="float64")
    seq_lstm = layers.LSTM(3, return_sequences=True, dtype="float64")
    pool = layers.GlobalAveragePooling1D(dtype="float64")
    e = emb(ids)
    np.testing.assert_array_equal(jf.keras.layers.layer.get_mask(e).numpy(), ids != 0)
    last, seq = lstm(e), seq_lstm(e)
    table = emb.embeddings.numpy()
    for b, n in enumerate((ids != 0).sum(1)):
        h = c = np.zeros((1, 3))
        for t in range(n):
            h, c = _lstm_ref(table[ids[b:b + 1, t]], h, c, *[w.numpy() for w in lstm.weights])
        np.testing.assert_allclose(last.numpy()[b], h[0], rtol=1e-10)
    np.testing.assert_array_equal(jf.keras.layers.layer.get_mask(seq).numpy(), ids != 0)
    keep = (ids != 0)[..., None]
    np.testing.assert_allclose(pool(seq).numpy(), (seq.numpy() * keep).sum(1) / keep.sum(1), rtol=1e-12)
    mha = layers.MultiHeadAttention(2, 2, dtype="float64")
    auto = mha(e, e).numpy()
    explicit = mha(table[ids], table[ids], attention_mask=(ids != 0)[:, :, None] & (ids != 0)[:, None, :]).numpy()
    np.testing.assert_allclose(auto, explicit, rtol=1e-12)
    model = jf.keras.Sequential([emb, seq_lstm, pool])
    np.testing.assert_allclose(model(ids).numpy(), pool(seq).numpy(), rtol=1e-12)
    flat = layers.Flatten()
    with pytest.warns(UserWarning, match="does not support masking and will therefore destroy the mask"):
        flat(e)
    assert jf.keras.layers.layer.get_mask(flat(e)) is None


def test_bidirectional_and_time_distributed(rng, tmp_path):
    x = rng.normal(size=(2, 4, 3))
    inner = layers.LSTM(3, return_sequences=True, dtype="float64")
    bi = layers.Bidirectional(inner, dtype="float64")
    y = bi(x).numpy()
    assert [w.path for w in bi.weights][::3] == [f"{bi.name}/forward_{inner.name}/lstm_cell/kernel",
                                                 f"{bi.name}/backward_{inner.name}/lstm_cell/kernel"]
    assert bi.backward_layer.go_backwards and not bi.forward_layer.go_backwards

    def run(layer, xs):
        h = c = np.zeros((2, 3))
        out = []
        for t in range(xs.shape[1]):
            h, c = _lstm_ref(xs[:, t], h, c, *[w.numpy() for w in layer.weights])
            out.append(h)
        return np.stack(out, 1)

    want = np.concatenate([run(bi.forward_layer, x), run(bi.backward_layer, x[:, ::-1])[:, ::-1]], -1)
    np.testing.assert_allclose(y, want, rtol=1e-10)
    summed = layers.Bidirectional(layers.GRU(2, dtype="float64"), merge_mode="sum", dtype="float64")
    assert summed(x).shape == (2, 2)
    td = layers.TimeDistributed(layers.Dense(5, dtype="float64"), dtype="float64")
    out = td(x).numpy()
    k, b = [w.numpy() for w in td.weights]
    np.testing.assert_allclose(out, x @ k + b, rtol=1e-12)
    assert td.weights[0].path == f"{td.name}/{td.layer.name}/kernel"
    inp = jf.keras.Input((4, 3))
    model = jf.keras.Model(inp, layers.TimeDistributed(layers.Dense(2))(layers.Bidirectional(layers.LSTM(
        2, return_sequences=True))(inp)))
    xf = x.astype(np.float32)
    model.save(str(tmp_path / "bi.keras"))
    np.testing.assert_allclose(jf.keras.models.load_model(str(tmp_path / "bi.keras"))(xf).numpy(), model(xf).numpy(),
                               rtol=1e-6)
