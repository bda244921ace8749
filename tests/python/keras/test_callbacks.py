"""jf.keras.callbacks in fit: History's records, EarlyStopping's stopping epoch (Keras 3.15's on
the same cases) and restored weights, ModelCheckpoint's files, the progress bar (one line per
epoch off a terminal, '\\r' redraws on one), LearningRateScheduler, TerminateOnNaN and hooks'
order."""
import io
import os

import numpy as np
import pytest
from trainer_models import MLP, spiral

from jitflow.keras import callbacks as C
from jitflow.keras import losses, optimizers


def _model(lr=0.05, seed=1):
    model = MLP(seed=seed)
    model.compile(optimizers.SGD(lr), losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


X, Y = spiral(64)


def test_history_records_every_epoch():
    model = _model()
    history = model.fit(X, Y, epochs=3, batch_size=16, validation_data=(X, Y), verbose=0)
    assert history is model.history and history.epoch == [0, 1, 2]
    assert sorted(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert all(len(v) == 3 for v in history.history.values())
    assert history.history["loss"][2] < history.history["loss"][0]
    assert history.params == {"verbose": 0, "epochs": 3, "steps": 4}


def test_early_stopping_epochs_as_keras():
    # Keras 3.15: a loss that cannot move (lr 0) with patience 2 runs epochs [0, 1, 2]; a min_delta
    # no epoch can beat with patience 1 runs [0, 1].
    frozen = _model(lr=0.0)
    stop = C.EarlyStopping("loss", patience=2)
    assert frozen.fit(X, Y, epochs=10, verbose=0, shuffle=False, callbacks=[stop]).epoch == [0, 1, 2]
    assert stop.stopped_epoch == 2 and frozen.stop_training
    assert _model().fit(X, Y, epochs=6, verbose=0,
                        callbacks=[C.EarlyStopping("loss", patience=1, min_delta=10.0)]).epoch == [0, 1]


def test_early_stopping_restores_the_best_weights():
    model = _model(lr=0.5)
    seen = []
    record = C.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append((logs["val_loss"], model.get_weights())))
    # Validation on the labels shifted by one: fitting the training data makes it worse, so an
    # early epoch is the best one.
    stop = C.EarlyStopping(patience=2, restore_best_weights=True)
    model.fit(X, Y, epochs=12, batch_size=8, verbose=0, validation_data=(X, (Y + 1) % 3), callbacks=[record, stop])
    best = int(np.argmin([v for v, _ in seen]))
    assert stop.best_epoch == best and len(seen) == best + 3
    for got, want in zip(model.get_weights(), seen[best][1]):
        np.testing.assert_array_equal(got, want)


def test_model_checkpoint_writes_each_epoch_or_the_best(tmp_path):
    model = _model()
    every = C.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}-{loss:.3f}.weights"), save_weights_only=True)
    history = model.fit(X, Y, epochs=3, verbose=0, callbacks=[every])
    names = sorted(os.listdir(tmp_path))
    assert names == [f"w-{e + 1:02d}-{loss:.3f}.weights.npz" for e, loss in enumerate(history.history["loss"])]
    saved = np.load(tmp_path / names[-1])
    np.testing.assert_array_equal(saved["arr_0"], model.get_weights()[0])
    best_dir = tmp_path / "best"
    frozen = _model(lr=0.0)
    best = C.ModelCheckpoint(str(best_dir / "e{epoch}"), monitor="loss", save_best_only=True, save_weights_only=True)
    frozen.fit(X, Y, epochs=3, verbose=0, shuffle=False, callbacks=[best])
    assert sorted(os.listdir(best_dir)) == ["e1.npz"]  # the loss never improves after the first epoch


def test_progress_bar_one_line_per_epoch_off_a_terminal(capsys):
    _model().fit(X, Y, epochs=2, batch_size=16, verbose=1)
    out = capsys.readouterr().out
    assert "\r" not in out
    lines = out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    for line in (lines[1], lines[3]):
        assert line.startswith("4/4 [==============================]")
        assert "/step - loss: " in line and " - accuracy: " in line
    _model().fit(X, Y, epochs=2, batch_size=16, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[1].startswith("4/4 - ") and "/step - loss: " in lines[1]
    _model().fit(X, Y, epochs=2, verbose=0)
    assert capsys.readouterr().out == ""


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_redraws_in_a_terminal():
    stream = _Terminal()
    _model().fit(X, Y, epochs=1, batch_size=16, verbose=1, callbacks=[C.ProgbarLogger(stream=stream)])
    text = stream.getvalue()
    frames = text.split("\r")[1:]
    assert len(frames) == 5  # one per batch, then the finished line
    assert frames[0].startswith("1/4 [======>.......................]")
    assert frames[-1].startswith("4/4 [==============================]") and frames[-1].endswith("\n")
    assert all("loss: " in f for f in frames)


def test_learning_rate_scheduler_and_terminate_on_nan():
    model = _model(lr=0.1)
    history = model.fit(X, Y, epochs=3, verbose=0,
                        callbacks=[C.LearningRateScheduler(lambda epoch, lr: 0.1 * 0.5**epoch)])
    np.testing.assert_allclose(history.history["learning_rate"], [0.1, 0.05, 0.025], rtol=1e-6)
    np.testing.assert_allclose(float(model.optimizer.learning_rate.numpy()), 0.025, rtol=1e-6)
    assert model.train_function.experimental_get_tracing_count() == 1  # the rate is a variable
    exploding = _model(lr=1e30)
    history = exploding.fit(X * 1e10, Y, epochs=5, batch_size=8, verbose=0, callbacks=[C.TerminateOnNaN()])
    assert len(history.epoch) == 1 and not np.isfinite(history.history["loss"][0])


def test_hook_order():
    calls = []

    class Recorder(C.Callback):
        def __getattribute__(self, name):
            if name.startswith("on_"):
                return lambda *a, **k: calls.append(name)
            return super().__getattribute__(name)

    _model().fit(X, Y, epochs=1, batch_size=32, verbose=0, validation_data=(X, Y), callbacks=[Recorder()])
    assert calls == ["on_train_begin", "on_epoch_begin", "on_train_batch_begin", "on_train_batch_end",
                     "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_batch_begin",
                     "on_test_batch_end", "on_test_batch_begin", "on_test_batch_end", "on_test_end",
                     "on_epoch_end", "on_train_end"]
    with pytest.raises(ValueError, match="Unrecognized save_freq"):
        C.ModelCheckpoint("x", save_freq="batch")
