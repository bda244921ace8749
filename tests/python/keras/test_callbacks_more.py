"""ReduceLROnPlateau, CSVLogger and TensorBoard callbacks in model.fit, against Keras 3's
documented behaviour: learning-rate cuts after `patience` flat epochs with cooldown and min_lr,
one CSV row per epoch, and TensorBoard event files with epoch_<name> scalars per run."""
import csv
import struct

import numpy as np
from protobuf_reader import fields
from trainer_models import MLP, spiral

from jitflow.keras import callbacks as C
from jitflow.keras import losses, optimizers
from jitflow.state import summary as summary_module

X, Y = spiral(64)


def _model(lr=0.05):
    model = MLP(seed=1)
    model.compile(optimizers.SGD(lr), losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def test_reduce_lr_on_plateau():
    model = _model(lr=0.001)
    seen = []
    rec = C.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(logs["learning_rate"]))
    # min_delta no epoch can beat: every epoch after the first is flat
    plateau = C.ReduceLROnPlateau("loss", factor=0.5, patience=2, cooldown=1, min_delta=1e9)
    model.fit(X, Y, epochs=7, verbose=0, shuffle=False, callbacks=[plateau, rec])
    # Keras 3: epoch 0 sets the best; 1 and 2 wait and 2 cuts (logs show the rate before the
    # cut); 3 is the cooldown's last epoch and waits again; 4 cuts; 5 waits; 6 cuts.
    np.testing.assert_allclose(seen, [1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 2.5e-4, 2.5e-4], rtol=1e-6)
    floor = C.ReduceLROnPlateau("loss", factor=0.1, patience=1, min_lr=5e-4, min_delta=1e9)
    low = _model(lr=0.001)
    low.fit(X, Y, epochs=5, verbose=0, callbacks=[floor])
    np.testing.assert_allclose(float(low.optimizer.learning_rate.numpy()), 5e-4, rtol=1e-6)


def test_csv_logger(tmp_path):
    path = tmp_path / "log.csv"
    history = _model().fit(X, Y, epochs=3, verbose=0, validation_data=(X, Y), callbacks=[C.CSVLogger(str(path))])
    rows = list(csv.DictReader(path.open()))
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
    assert list(rows[0]) == ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"]
    np.testing.assert_allclose([float(r["loss"]) for r in rows], history.history["loss"], rtol=1e-6)
    _model().fit(X, Y, epochs=2, verbose=0, callbacks=[C.CSVLogger(str(path), append=True)])
    assert len(list(csv.DictReader(path.open()))) == 5  # appended, one header


def _scalars(folder):
    (events,) = folder.glob("events.out.tfevents.*")
    out = {}
    for rec in summary_module.read_records(str(events))[1:]:
        event = fields(rec)
        value = fields(fields(event[5][0])[1][0])
        if 2 in value:
            out.setdefault(value[1][0].decode(), []).append((event[2][0], struct.unpack("<f", value[2][0])[0]))
    return out


def test_tensorboard_writes_epoch_scalars_per_run(tmp_path):
    board = C.TensorBoard(log_dir=str(tmp_path), histogram_freq=1, update_freq=2)
    history = _model().fit(X, Y, epochs=2, batch_size=16, verbose=0, validation_data=(X, Y), callbacks=[board])
    train, val = _scalars(tmp_path / "train"), _scalars(tmp_path / "validation")
    assert [s for s, _ in train["epoch_loss"]] == [0, 1]
    np.testing.assert_allclose([v for _, v in train["epoch_loss"]], history.history["loss"], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in val["epoch_accuracy"]], history.history["val_accuracy"], rtol=1e-6)
    assert "epoch_learning_rate" in train and "epoch_val_loss" not in train
    assert [s for s, _ in train["batch_loss"]] == [2, 4, 6, 8]  # every 2 of the 8 batches
