"""jf.keras.callbacks: Callback and CallbackList, History, the per-epoch progress bar
(ProgbarLogger), EarlyStopping, ModelCheckpoint, LearningRateScheduler, TerminateOnNaN,
LambdaCallback, ReduceLROnPlateau, CSVLogger and TensorBoard, with Keras 3's hooks and monitor
conventions. A callback sees the model through
`self.model` and the logs as dicts of Python floats."""
import csv
import math
import os
import sys
import time
import warnings

import numpy as np

from ..state import summary as _summary


class Callback:
    """The hooks fit/evaluate/predict call; each does nothing unless overridden."""

    def __init__(self):
        self.params = None
        self._model = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self._model = model

    @property
    def model(self):
        return self._model

    def on_batch_begin(self, batch, logs=None):
        """A backwards-compatible alias for on_train_batch_begin."""

    def on_batch_end(self, batch, logs=None):
        """A backwards-compatible alias for on_train_batch_end."""

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        pass

    def on_test_batch_end(self, batch, logs=None):
        pass

    def on_predict_batch_begin(self, batch, logs=None):
        pass

    def on_predict_batch_end(self, batch, logs=None):
        pass

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass


_HOOKS = [name for name in vars(Callback) if name.startswith("on_")]


class CallbackList(Callback):
    """Calls each hook on every callback in order; adds History and a ProgbarLogger as Keras
    does when asked."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        super().__init__()
        self.callbacks = list(callbacks or [])
        if add_history and not any(isinstance(c, History) for c in self.callbacks):
            self.callbacks.append(History())
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        self.params = params
        for c in self.callbacks:
            c.set_params(params)

    def set_model(self, model):
        self._model = model
        for c in self.callbacks:
            c.set_model(model)

    def __iter__(self):
        return iter(self.callbacks)


def _dispatch(hook):
    def call(self, *args, **kwargs):
        for c in self.callbacks:
            getattr(c, hook)(*args, **kwargs)
    call.__name__ = hook
    return call


for _hook in _HOOKS:
    setattr(CallbackList, _hook, _dispatch(_hook))


class History(Callback):
    """Records each epoch's logs: `history` maps a name to its values per epoch, `epoch` the
    epoch indices. fit returns it (and sets it as model.history)."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []
        if self.model is not None:
            self.model.history = self

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


def _is_dynamic(stream):
    """A terminal or a notebook redraws a line on '\\r'; a file or pipe gets one line per epoch."""
    return (hasattr(stream, "isatty") and stream.isatty()) or "ipykernel" in sys.modules


def _format_time(seconds):
    if seconds >= 1:
        return f"{seconds:.0f}s/step"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/step"
    return f"{seconds * 1e6:.0f}us/step"


class Progbar:
    """One progress line: `step/total [====>....] elapsed time/step - loss: ... - metric: ...`,
    redrawn with '\\r' where the stream is dynamic, printed once when finished elsewhere (and
    always once with verbose=2)."""

    def __init__(self, target, width=30, verbose=1, stream=None):
        self.target, self.width, self.verbose = target, width, verbose
        self.stream = stream or sys.stdout
        self.dynamic = _is_dynamic(self.stream)
        self.start = time.time()
        self._last_len = 0

    def update(self, current, values=None, finalize=False):
        values = values or {}
        elapsed = time.time() - self.start
        per_step = elapsed / max(current, 1)
        parts = [f"{k}: {v:.4f}" if isinstance(v, float) and abs(v) >= 1e-3 or v == 0 else f"{k}: {v:.4e}"
                 for k, v in values.items()]
        metrics = "".join(f" - {p}" for p in parts)
        target = self.target
        if self.verbose == 2:
            if finalize:
                total = current if target is None else target
                self._write(f"{total}/{total} - {elapsed:.0f}s - {_format_time(per_step)}{metrics}\n")
            return
        if target is not None:
            digits = len(str(target))
            done = int(self.width * min(current, target) / target)
            bar = "[" + "=" * max(done - 1, 0) + (">" if current < target else "=") * (done > 0) + \
                  "." * (self.width - done) + "]"
            head = f"{current:>{digits}}/{target} {bar}"
        else:
            head = f"{current}/Unknown"
        if finalize:
            line = f"{head} {elapsed:.0f}s {_format_time(per_step)}{metrics}"
        else:
            eta = per_step * (target - current) if target else 0
            line = f"{head} {'ETA: ' + str(int(eta)) + 's' if target else ''} {_format_time(per_step)}{metrics}"
        if self.dynamic:
            pad = " " * max(self._last_len - len(line), 0)
            self._write("\r" + line + pad + ("\n" if finalize else ""))
            self._last_len = len(line)
        elif finalize:
            self._write(line + "\n")

    def _write(self, text):
        self.stream.write(text)
        self.stream.flush()


class ProgbarLogger(Callback):
    """fit's progress: "Epoch i/n", then a bar per epoch with the running loss and metrics,
    finished with the validation results (verbose=1), or one summary line per epoch (verbose=2)."""

    def __init__(self, stream=None):
        super().__init__()
        self.stream = stream
        self.verbose, self.epochs, self.target = 1, 1, None
        self.progbar = None
        self.seen = 0
        self._in_fit = False  # fit's validation runs evaluate's hooks: no bar of their own

    def set_params(self, params):
        super().set_params(params)
        self.verbose = params.get("verbose", 1)
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")

    def _new_bar(self, target):
        self.seen = 0
        self.progbar = Progbar(target, verbose=self.verbose, stream=self.stream or sys.stdout)

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose and self.epochs > 1:
            (self.stream or sys.stdout).write(f"Epoch {epoch + 1}/{self.epochs}\n")
        self._new_bar(self.target)

    def on_train_batch_end(self, batch, logs=None):
        self.seen = batch + 1
        if self.verbose == 1:
            self.progbar.update(self.seen, dict(logs or {}))

    def on_epoch_end(self, epoch, logs=None):
        if self.verbose:
            if self.target is None:
                self.target = self.seen
                self.progbar.target = self.seen
            self.progbar.update(self.seen, dict(logs or {}), finalize=True)

    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._new_bar(self.params.get("steps") if self.params else None)

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self.seen = batch + 1
            if self.verbose == 1:
                self.progbar.update(self.seen, dict(logs or {}))

    def on_test_end(self, logs=None):
        if not self._in_fit and self.verbose:
            self.progbar.update(self.seen, dict(logs or {}), finalize=True)

    def on_predict_begin(self, logs=None):
        self._new_bar(self.params.get("steps") if self.params else None)

    def on_predict_batch_end(self, batch, logs=None):
        self.seen = batch + 1
        if self.verbose == 1:
            self.progbar.update(self.seen)

    def on_predict_end(self, logs=None):
        if self.verbose:
            self.progbar.update(self.seen, finalize=True)


class _Monitor(Callback):
    """The monitor/mode logic EarlyStopping and ModelCheckpoint share: "auto" maximizes
    accuracies and AUCs (names containing acc, accuracy or auc) and minimizes the rest."""

    def __init__(self, monitor, mode, min_delta=0.0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"{type(self).__name__} mode '{mode}' is unknown, fallback to auto mode.", stacklevel=3)
            mode = "auto"
        self.monitor, self.mode = monitor, mode
        self.min_delta = abs(min_delta)
        self._maximize = None

    def _set_direction(self):
        if self.mode == "auto":
            name = self.monitor.removeprefix("val_")
            self._maximize = name.endswith(("acc", "accuracy", "auc")) or name in ("acc", "accuracy", "auc")
        else:
            self._maximize = self.mode == "max"

    def _improves(self, value, reference):
        if reference is None:
            return True
        if self._maximize:
            return value - self.min_delta > reference
        return value + self.min_delta < reference

    def _monitored(self, logs):
        value = (logs or {}).get(self.monitor)
        if value is None:
            warnings.warn(f"{type(self).__name__} is conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(sorted(logs or {}))}", stacklevel=3)
        return value


class EarlyStopping(_Monitor):
    """Stops training when `monitor` has not improved by more than min_delta for `patience`
    epochs (counted from start_from_epoch); optionally restores the best epoch's weights."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta)
        self.patience, self.verbose, self.baseline = patience, verbose, baseline
        self.restore_best_weights, self.start_from_epoch = restore_best_weights, start_from_epoch
        self.wait, self.stopped_epoch, self.best, self.best_weights, self.best_epoch = 0, 0, None, None, 0

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best, self.best_weights, self.best_epoch = 0, 0, None, None, 0

    def on_epoch_end(self, epoch, logs=None):
        if self._maximize is None:
            self._set_direction()
        current = self._monitored(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = _get_weights(self.model)
        self.wait += 1
        if self._improves(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = _get_weights(self.model)
            if self.baseline is None or self._improves(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            _set_weights(self.model, self.best_weights)

    def get_monitor_value(self, logs):
        return (logs or {}).get(self.monitor)


def _get_weights(model):
    return [v.numpy().copy() for v in model.variables]


def _set_weights(model, values):
    for v, value in zip(model.variables, values):
        v.assign(value)


class ModelCheckpoint(_Monitor):
    """Saves the model (model.save) or its weights (model.save_weights) at the end of each epoch
    or every save_freq batches; filepath may hold {epoch} and log names ("w-{epoch:02d}-
    {val_loss:.2f}"); with save_best_only, only when `monitor` improves."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__(monitor, mode)
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Unrecognized save_freq: {save_freq}. Expected save_freq are 'epoch' or integer values")
        self.filepath, self.verbose = os.fspath(filepath), verbose
        self.save_best_only, self.save_weights_only, self.save_freq = save_best_only, save_weights_only, save_freq
        self.best = initial_value_threshold
        self._batches_seen = 0
        self._current_epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if isinstance(self.save_freq, int):
            self._batches_seen += 1
            if self._batches_seen % self.save_freq == 0:
                self._save(self._current_epoch, logs, batch)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, logs)

    def _save(self, epoch, logs, batch=None):
        if self._maximize is None:
            self._set_direction()
        logs = dict(logs or {})
        path = self.filepath.format(epoch=epoch + 1, batch=batch, **logs)
        if self.save_best_only:
            current = self._monitored(logs)
            if current is None:
                return
            if not self._improves(current, self.best):
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}")
                return
            if self.verbose > 0:
                previous = "inf" if self.best is None else f"{self.best:.5f}"
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {previous} to {current:.5f}, "
                      f"saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate at each epoch's start to schedule(epoch, lr)."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = self.model.optimizer.learning_rate
        current = float(np.asarray(lr.numpy() if hasattr(lr, "numpy") else lr))
        new = self.schedule(epoch, current)
        new = float(np.asarray(new.numpy() if hasattr(new, "numpy") else new))
        if not math.isfinite(new):
            raise ValueError(f'The output of the "schedule" function should be a finite float. Got: {new}')
        self.model.optimizer.learning_rate = new
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer.learning_rate.numpy())


class TerminateOnNaN(Callback):
    """Stops training at the first batch whose loss is NaN or infinite."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from functions: on_epoch_begin/end(epoch, logs), on_train_batch_begin/end(batch,
    logs), on_train_begin/end(logs)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                     on_train_end=on_train_end, on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)


class ReduceLROnPlateau(_Monitor):
    """Multiplies the learning rate by `factor` (not below min_lr) when `monitor` has not improved
    by min_delta for `patience` epochs, then waits `cooldown` epochs before counting again."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0, **kwargs):
        super().__init__(monitor, mode, min_delta)
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received factor={factor}")
        self.factor, self.patience, self.verbose = factor, patience, verbose
        self.cooldown, self.min_lr = cooldown, min_lr
        self.best, self.wait, self.cooldown_counter = None, 0, 0

    def on_train_begin(self, logs=None):
        self.best, self.wait, self.cooldown_counter = None, 0, 0

    def on_epoch_end(self, epoch, logs=None):
        if self._maximize is None:
            self._set_direction()
        logs = logs if logs is not None else {}
        optimizer = self.model.optimizer
        lr = float(np.asarray(optimizer.learning_rate.numpy()))
        logs["learning_rate"] = lr
        current = self._monitored(logs)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improves(current, self.best):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience and lr > np.float32(self.min_lr):
                new = max(lr * self.factor, self.min_lr)
                optimizer.learning_rate = new
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new}.")
                self.cooldown_counter, self.wait = self.cooldown, 0


class CSVLogger(Callback):
    """Writes each epoch's logs as a CSV row (epoch first, then the log names in sorted order)
    to filename; append=True continues an existing file."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self._file, self._writer, self._keys = None, None, None

    def on_train_begin(self, logs=None):
        exists = self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")  # noqa: SIM115 - open for the run
        self._keys = None
        self._has_header = exists

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch", *self._keys], delimiter=self.sep)
            if not self._has_header:
                self._writer.writeheader()
        row = {"epoch": epoch}
        for k in self._keys:
            v = logs.get(k, "NA")
            row[k] = float(np.asarray(v)) if not isinstance(v, str) and np.ndim(v) == 0 else v
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file, self._writer = None, None


class TensorBoard(Callback):
    """Writes TensorBoard event files: each epoch's training logs as scalars epoch_<name> under
    log_dir/train and the validation logs (val_ dropped) under log_dir/validation; with
    update_freq "batch" or N, batch_<name> every N training batches; with histogram_freq N,
    histograms of the weights every N epochs. Graphs, profiling and embeddings are not written."""

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0, embeddings_freq=0,
                 embeddings_metadata=None):
        super().__init__()
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq, self.update_freq = histogram_freq, 1 if update_freq == "batch" else update_freq
        self.write_steps_per_second = write_steps_per_second
        self._writers, self._batches, self._epoch_start = {}, 0, None

    def _writer(self, kind):
        if kind not in self._writers:
            self._writers[kind] = _summary.create_file_writer(os.path.join(self.log_dir, kind))
        return self._writers[kind]

    def _write(self, kind, prefix, logs, step):
        with self._writer(kind).as_default(step=step):
            for name, value in logs.items():
                if np.ndim(value) == 0:
                    _summary.scalar(prefix + name, float(np.asarray(value)), step=step)

    def on_train_begin(self, logs=None):
        self._batches = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.time()

    def on_train_batch_end(self, batch, logs=None):
        self._batches += 1
        if isinstance(self.update_freq, int) and self._batches % self.update_freq == 0:
            self._write("train", "batch_", logs or {}, self._batches)

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        lr = getattr(getattr(self.model, "optimizer", None), "learning_rate", None)
        if lr is not None and "learning_rate" not in train:
            train["learning_rate"] = float(np.asarray(lr.numpy() if hasattr(lr, "numpy") else lr))
        if self.write_steps_per_second and self._epoch_start is not None:
            train["steps_per_second"] = self._batches / max(time.time() - self._epoch_start, 1e-9)
        self._write("train", "epoch_", train, epoch)
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if val:
            self._write("validation", "epoch_", val, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            with self._writer("train").as_default(step=epoch):
                weights = getattr(self.model, "weights", None) or self.model.variables
                for w in weights:
                    _summary.histogram(f"{getattr(w, 'path', w.name)}/histogram", w.numpy(), step=epoch)

    def on_train_end(self, logs=None):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
