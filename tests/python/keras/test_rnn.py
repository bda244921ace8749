"""jf.keras recurrent layers beyond one cell: dropout masks drawn once per sequence (Keras 3's
DropoutRNNCell), stacked cells, stateful RNNs and custom cells, against float64 numpy references
of the same recurrences."""
import numpy as np
import pytest
from keras_ref import gru_ref, lstm_ref

import jitflow as jf

layers = jf.keras.layers


def _linear_rnn(units, **kw):
    """A SimpleRNN whose step is h' = x @ I + h @ R (no bias, no activation), so dropout masks show
    up directly in the outputs."""
    return layers.SimpleRNN(units, activation=None, use_bias=False, return_sequences=True, dtype="float64",
                            kernel_initializer="identity", **kw)


@pytest.mark.parametrize("traced_time", [False, True], ids=["static_time", "while_loop"])
def test_input_dropout_mask_is_drawn_once_per_sequence(traced_time):
    rate, units, steps = 0.4, 64, 5
    rnn = _linear_rnn(units, recurrent_initializer="zeros", dropout=rate, seed=3)
    x = np.ones((32, steps, units))
    call = (jf.function(lambda x: rnn(x, training=True),
                        input_signature=[jf.TensorSpec([None, None, units], jf.float64)])
            if traced_time else (lambda x: rnn(x, training=True)))
    out = call(jf.constant(x)).numpy()
    # h_t = x_t * mask: the same mask at every step, values 0 or 1 / (1 - rate)
    for t in range(1, steps):
        np.testing.assert_array_equal(out[:, t], out[:, 0])
    assert set(np.unique(out[:, 0]).round(12)) <= {0.0, round(1 / (1 - rate), 12)}
    kept = np.mean(out[:, 0] != 0)
    assert abs(kept - (1 - rate)) < 0.05, kept
    # a new call draws a new mask; inference is the identity
    assert not np.array_equal(call(jf.constant(x)).numpy()[:, 0], out[:, 0])
    np.testing.assert_array_equal(rnn(jf.constant(x), training=False).numpy(), x)


def test_recurrent_dropout_mask_is_the_same_at_every_step():
    rate, units = 0.5, 256
    rnn = _linear_rnn(units, recurrent_initializer="identity", recurrent_dropout=rate, seed=1)
    x = np.ones((2, 6, units))
    out = rnn(jf.constant(x), training=True).numpy()
    # h_t = 1 + m * h_{t-1} with one mask m per sequence: units dropped stay at 1, kept ones follow
    # the recurrence with m = 1 / (1 - rate)
    m = 1 / (1 - rate)
    want_kept = np.ones(6)
    for t in range(1, 6):
        want_kept[t] = 1 + m * want_kept[t - 1]
    dropped = out[:, 1] == 1.0
    assert 0.3 < dropped.mean() < 0.7
    np.testing.assert_allclose(out[dropped.nonzero()[0], :, dropped.nonzero()[1]], 1.0)
    kept = ~dropped
    np.testing.assert_allclose(out.transpose(0, 2, 1)[kept], np.broadcast_to(want_kept, (kept.sum(), 6)),
                               rtol=1e-12)


@pytest.mark.parametrize("layer", [layers.LSTM, layers.GRU, layers.SimpleRNN])
def test_dropout_layers_train_and_match_the_reference_in_inference(layer, rng):
    x = rng.normal(size=(3, 4, 5))
    rnn = layer(6, dropout=0.3, recurrent_dropout=0.2, seed=0, dtype="float64")
    plain = layer(6, dtype="float64")
    rnn(x)
    plain(x)
    for a, b in zip(plain.weights, rnn.weights):
        a.assign(b)
    np.testing.assert_allclose(rnn(jf.constant(x), training=False).numpy(), plain(jf.constant(x)).numpy(),
                               rtol=1e-12)
    with jf.GradientTape() as tape:
        loss = jf.reduce_sum(rnn(jf.constant(x), training=True) ** 2)
    grads = tape.gradient(loss, rnn.trainable_weights)
    assert all(g is not None and np.all(np.isfinite(jf.convert_to_tensor(g).numpy())) for g in grads)
    assert not np.allclose(rnn(jf.constant(x), training=True).numpy(), plain(jf.constant(x)).numpy())
    config = rnn.get_config()
    assert config["dropout"] == pytest.approx(0.3) and config["recurrent_dropout"] == pytest.approx(0.2)
    assert type(rnn).from_config(config).cell.recurrent_dropout == pytest.approx(0.2)


def test_lstm_recurrent_dropout_uses_one_mask_per_gate():
    cell = layers.LSTMCell(4, dropout=0.5, recurrent_dropout=0.5)
    assert cell.dropout_mask_count == 4
    masks = cell.get_recurrent_dropout_mask(jf.ones([2, 4]))
    assert len(masks) == 4 and not all(np.array_equal(masks[0].numpy(), m.numpy()) for m in masks[1:])
    cell.reset_recurrent_dropout_mask()
    assert layers.LSTMCell(4, dropout=0.5).dropout_mask_count is None  # one mask without recurrent dropout


def test_stacked_cells_match_the_chained_reference(rng):
    x = rng.normal(size=(2, 5, 3))
    rnn = layers.RNN([layers.LSTMCell(4, dtype="float64"), layers.GRUCell(2, dtype="float64")],
                     return_sequences=True, return_state=True, dtype="float64")
    assert isinstance(rnn.cell, layers.StackedRNNCells) and rnn.cell.state_size == [[4, 4], 2]
    seq, (h1, c1), (h2,) = rnn(jf.constant(x))  # a GRU state comes back as a list, as in Keras
    k1, rk1, b1, k2, rk2, b2 = [w.numpy() for w in rnn.weights]
    hh, cc, g = np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 2))
    outs = []
    for t in range(5):
        hh, cc = lstm_ref(x[:, t], hh, cc, k1, rk1, b1)
        g = gru_ref(hh, g, k2, rk2, b2)
        outs.append(g)
    np.testing.assert_allclose(seq.numpy(), np.stack(outs, 1), rtol=1e-10)
    np.testing.assert_allclose(h1.numpy(), hh, rtol=1e-10)
    np.testing.assert_allclose(c1.numpy(), cc, rtol=1e-10)
    np.testing.assert_allclose(h2.numpy(), g, rtol=1e-10)
    # the while_loop path when the time dim is unknown, and a config round trip
    f = jf.function(lambda x: rnn(x)[0], input_signature=[jf.TensorSpec([None, None, 3], jf.float64)])
    np.testing.assert_allclose(f(jf.constant(x)).numpy(), seq.numpy(), rtol=1e-12)
    clone = layers.RNN.from_config(rnn.get_config())
    assert [type(c).__name__ for c in clone.cell.cells] == ["LSTMCell", "GRUCell"]


def test_stateful_rnn_carries_the_state_between_batches(rng):
    x = rng.normal(size=(3, 6, 2))
    stateful = layers.SimpleRNN(4, stateful=True, dtype="float64")
    whole = layers.SimpleRNN(4, dtype="float64")
    stateful(jf.constant(x[:, :3]))
    whole(jf.constant(x))
    for a, b in zip(whole.weights, stateful.weights):
        a.assign(b)
    stateful.reset_states()
    stateful(jf.constant(x[:, :3]))
    second = stateful(jf.constant(x[:, 3:]))
    np.testing.assert_allclose(second.numpy(), whole(jf.constant(x)).numpy(), rtol=1e-12)
    assert len(stateful.states) == 1 and stateful.states[0].trainable is False
    assert len(stateful.weights) == 3  # the state variables are not weights
    stateful.reset_state()
    np.testing.assert_array_equal(stateful.states[0].numpy(), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="batch size"):
        stateful(jf.constant(x[:2]))
    with pytest.raises(ValueError, match="batch size must be static"):
        layers.LSTM(2, stateful=True).build((None, 4, 2))


def test_custom_cell_gets_its_state_as_a_list(rng):
    """A cell with an integer state_size receives [h], as in Keras, so states[0] is the state
    and not the state's first row."""

    class Accumulate(layers.Layer):
        state_size = 3

        def call(self, x, states):
            h = states[0] + x
            return h, [h]

    x = rng.normal(size=(4, 5, 3))
    out = layers.RNN(Accumulate(), return_sequences=True)(jf.constant(x.astype(np.float32)))
    np.testing.assert_allclose(out.numpy(), np.cumsum(x, axis=1), rtol=1e-5)
