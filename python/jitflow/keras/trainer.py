"""jf.keras's training loop: compile/fit/evaluate/predict and the step methods Keras 3 gives a
Model. The train step is one jf.function per input signature (the batch dim left unknown, so
the last partial batch does not retrace), compiled whole with jit_compile=True where every op
compiles. It uses only the Layer interface: self(x, training=...), trainable_variables, losses
and variables.

Under a jf.distribute strategy (the one whose scope() was open at compile()), each step runs
through strategy.run as TF's Keras does: every worker (or local replica) takes its rows of the
global batch, the loss is scaled by 1 / num_replicas_in_sync so that the optimizer's sum of the
replicas' gradients is the gradient of the global batch's mean loss, and the logged loss and
metrics are read from their variables summed over the workers."""
import contextlib
import warnings

import numpy as np

from .. import distribute as _distribute
from ..autodiff import GradientTape
from ..core import nest
from ..core.errors import InvalidArgumentError
from ..core.errors import warn as _warn
from ..ops import basic_ops as _ops
from ..tracing.function import function as _function
from . import callbacks as _callbacks
from . import compile_utils as _compile
from . import data_adapter as _data
from . import losses as _losses
from . import metrics as _metrics
from . import optimizers as _optimizers

_NOT_COMPILABLE = "jf.function(jit_compile=True) must compile the whole function"


class _State:
    """The trainer's bookkeeping, one attribute on the model: a plain object, so neither
    jf.Module's variable walk nor a Layer's tracking finds the optimizer's or metrics' variables
    among the model's."""

    def __init__(self):
        self.compiled = False
        self.optimizer = None
        self.loss = None
        self.loss_fn = None
        self.compiled_loss = None  # several outputs (or per-output losses): compile_utils.CompiledLoss
        self.per_output = False
        self.output_losses = None  # each output's loss, from compute_loss to the loss trackers
        self.metric_specs = []
        self.metrics = []
        self.metrics_resolved = False
        self.loss_tracker = _metrics.Mean(name="loss")
        self.jit_request = "auto"
        self.jit_by_kind = {}  # "train"/"test"/"predict" -> whether that step compiles whole
        self.run_eagerly = False
        self.functions = {}  # (kind, signature key) -> jf.function
        self.last = {}  # kind -> the last jf.function used
        self.history = None
        self.stop_training = False
        self.strategy = None  # the jf.distribute strategy in effect at compile(), if any


def _accuracy_for(loss, y, y_pred):
    """The accuracy "accuracy"/"acc" means, chosen as Keras chooses: by the loss when it names
    one, else by the shapes (one output unit: binary; labels of lower rank or one column:
    sparse; else categorical)."""
    name = getattr(loss, "__name__", None) or getattr(loss, "name", None) or ""
    fn = getattr(loss, "fn", None)
    name = getattr(fn, "__name__", name)
    if "sparse_categorical" in name:
        return _metrics.sparse_categorical_accuracy
    if "categorical" in name:
        return _metrics.categorical_accuracy
    if "binary" in name:
        return _metrics.binary_accuracy
    if y_pred.shape[-1] == 1 if len(y_pred.shape) else True:
        return _metrics.binary_accuracy
    if len(y.shape) < len(y_pred.shape) or y.shape[-1] == 1:
        return _metrics.sparse_categorical_accuracy
    return _metrics.categorical_accuracy


def _resolve_metric(spec, loss, y, y_pred):
    if isinstance(spec, _metrics.Metric):
        return spec
    if spec in ("accuracy", "acc"):
        return _metrics.MeanMetricWrapper(_accuracy_for(loss, y, y_pred), name=spec)
    if isinstance(spec, str) and spec in ("crossentropy", "ce"):
        return _metrics.MeanMetricWrapper(getattr(loss, "fn", loss), name=spec)
    metric = _metrics.get(spec)
    if isinstance(spec, str):
        metric.name = spec  # Keras logs a metric given by name under that name ("mae", "AUC")
    return metric


def _floats(logs):
    return {k: float(np.asarray(v.numpy() if hasattr(v, "numpy") else v)) for k, v in logs.items()}


def _first_replica(value):
    """Replica 0's part of a nest holding PerReplica leaves (a local multi-replica batch or result)."""
    return nest.map_structure(lambda v: v.values[0] if isinstance(v, _distribute.PerReplica) else v, value)


def _concat(outputs):
    return nest.map_structure(lambda *parts: np.concatenate([np.asarray(p) for p in parts], axis=0), *outputs)


class Trainer:
    """compile, fit, evaluate, predict, train_on_batch / test_on_batch / predict_on_batch and the
    overridable train_step / test_step / predict_step, as Keras 3's Model has them."""

    def __init__(self):
        self._jf_trainer = _State()

    def _jf_state(self):
        state = self.__dict__.get("_jf_trainer")
        if state is None:  # a subclass that did not call Trainer.__init__
            state = _State()
            object.__setattr__(self, "_jf_trainer", state)
        return state

    # ---- attributes Keras users read -------------------------------------------------------
    @property
    def optimizer(self):
        return self._jf_state().optimizer

    @optimizer.setter
    def optimizer(self, value):
        self._jf_state().optimizer = value

    @property
    def loss(self):
        return self._jf_state().loss

    @property
    def compiled(self):
        return self._jf_state().compiled

    @property
    def history(self):
        return self._jf_state().history

    @history.setter
    def history(self, value):
        self._jf_state().history = value

    @property
    def stop_training(self):
        return self._jf_state().stop_training

    @stop_training.setter
    def stop_training(self, value):
        self._jf_state().stop_training = bool(value)

    @property
    def jit_compile(self):
        """Whether the train step (else the first step traced) is compiled whole: True or False,
        or "auto" until a trace decides it."""
        s = self._jf_state()
        if s.jit_request != "auto":
            return s.jit_request
        if not s.jit_by_kind:
            return "auto"
        return s.jit_by_kind.get("train", next(iter(s.jit_by_kind.values())))

    @property
    def run_eagerly(self):
        return self._jf_state().run_eagerly

    @property
    def metrics(self):
        """The loss tracker, each output's loss tracker (several losses), then the compiled
        metrics (once the first batch has resolved them)."""
        s = self._jf_state()
        if not s.compiled:
            return []
        per_output = [t for t in s.compiled_loss.trackers if t is not None] if s.per_output else []
        return [s.loss_tracker] + per_output + list(s.metrics)

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    @property
    def train_function(self):
        return self._jf_state().last.get("train")

    @property
    def test_function(self):
        return self._jf_state().last.get("test")

    @property
    def predict_function(self):
        return self._jf_state().last.get("predict")

    # ---- compile ---------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, steps_per_execution=1, jit_compile="auto", auto_scale_loss=True):
        """Sets the optimizer, the loss and metrics. jit_compile=True compiles each step function
        whole (an op that cannot compile raises); "auto" does so when every op of the step
        compiles, else runs the traced step uncompiled and says why in a warning."""
        if weighted_metrics:
            raise NotImplementedError("jf.keras's Trainer does not implement weighted_metrics yet")
        if steps_per_execution != 1:
            raise NotImplementedError("jf.keras's Trainer runs one batch per step function call (steps_per_execution=1)")
        if jit_compile not in (True, False, "auto", None):
            raise ValueError(f"jit_compile must be True, False or 'auto'. Received: jit_compile={jit_compile}")
        s = self._jf_state()
        s.optimizer = _optimizers.get(optimizer)
        s.loss = loss
        per_output = isinstance(loss, (list, tuple, dict)) or loss_weights is not None
        fn = None if per_output else _losses.get(loss)
        s.loss_fn = fn if fn is None or isinstance(fn, _losses.Loss) else _losses.LossFunctionWrapper(
            fn, name=getattr(fn, "__name__", None))
        # Several outputs are known once the model has run (_jf_prepare); per-output forms now.
        s.compiled_loss = _compile.CompiledLoss(loss, loss_weights) if loss is not None else None
        s.per_output = per_output
        s.metric_specs = metrics if _compile.is_per_output(metrics) else list(metrics or [])
        s.metrics = [] if _compile.is_per_output(metrics) else [m for m in s.metric_specs
                                                                 if isinstance(m, _metrics.Metric)]
        s.metrics_resolved = not _compile.is_per_output(metrics) and len(s.metrics) == len(s.metric_specs) \
            and not per_output and self._jf_single_output()
        s.loss_tracker = _metrics.Mean(name="loss")
        s.jit_request = "auto" if jit_compile in ("auto", None) else bool(jit_compile)
        s.jit_by_kind = {}
        s.run_eagerly = bool(run_eagerly)
        s.functions, s.last = {}, {}
        s.strategy = _distribute.get_strategy() if _distribute.has_strategy() else None
        s.compiled = True

    @property
    def distribute_strategy(self):
        """The strategy the model was compiled under (else the default one)."""
        return self._jf_state().strategy or _distribute.get_strategy()

    def _jf_strategy(self):
        """The strategy the steps run under, when it has more than one replica."""
        strategy = self._jf_state().strategy
        return strategy if strategy is not None and strategy.num_replicas_in_sync > 1 else None

    def _jf_scope(self):
        strategy = self._jf_strategy()
        return strategy.scope() if strategy is not None else contextlib.nullcontext()

    def _jf_assert_compiled(self):
        if not self._jf_state().compiled:
            raise ValueError("You must call `compile()` before using the model.")

    # ---- the steps -------------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss plus the model's regularization losses (self.losses)."""
        s = self._jf_state()
        total = None
        if s.per_output and y is not None:
            total, s.output_losses = s.compiled_loss(y, y_pred, sample_weight)
        elif s.loss_fn is not None and y is not None:  # (scaled for a strategy by its reduction)
            total = s.loss_fn(y, y_pred, sample_weight=sample_weight)
        for term in list(getattr(self, "losses", None) or []):
            term = _losses.scale_loss_for_distribution(term)  # as Keras scales additional losses
            total = term if total is None else total + _ops.cast(term, total.dtype)
        if total is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        for m in self._jf_state().metrics:
            m.update_state(y, y_pred, sample_weight=sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        return {m.name: m.result() for m in self.metrics}

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    def _jf_track_loss(self, loss, x, y_pred):
        """The loss tracker takes the replica's own mean loss (the scaled loss, unscaled),
        weighted by the batch size (read from a numeric input: text inputs have no Shape)."""
        leaves = [t for t in nest.flatten(x) + nest.flatten(y_pred)
                  if getattr(getattr(t, "dtype", None), "name", None) != "string"]
        first = leaves[0]
        replicas = _distribute.get_strategy().num_replicas_in_sync
        if replicas > 1:
            loss = loss * _ops.cast(replicas, loss.dtype)
        s = self._jf_state()
        s.loss_tracker.update_state(loss, sample_weight=_ops.shape(first)[0])
        parts, s.output_losses = s.output_losses, None
        if s.per_output and parts is not None:
            s.compiled_loss.track(parts, _ops.shape(first)[0])

    def train_step(self, data):
        """One gradient step on a batch; returns the running loss and metrics."""
        x, y, sample_weight = _data.unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
        self._jf_track_loss(loss, x, y_pred)
        variables = list(self.trainable_variables)
        if variables:
            grads = tape.gradient(loss, variables)
            self.optimizer.apply_gradients(zip(grads, variables))
        else:
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def test_step(self, data):
        x, y, sample_weight = _data.unpack(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=False)
        self._jf_track_loss(loss, x, y_pred)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self, data):
        x, _, _ = _data.unpack(data)
        return self(x, training=False)

    # ---- step functions --------------------------------------------------------------------
    def _jf_prepare(self, batch, kind):
        """Before the first trace: builds the model (one eager call), resolves "accuracy" and
        builds the optimizer's slots, so the traced step creates no variables (which would trace
        it a second time)."""
        s = self._jf_state()
        x, y, _ = _data.unpack(_first_replica(batch))
        needs_output = not getattr(self, "built", True) or (kind != "predict" and not s.metrics_resolved)
        if needs_output:
            y_pred = self(x, training=False)
            if not s.metrics_resolved and y is not None:
                self._jf_resolve_outputs(y, y_pred)
        if kind == "train" and s.optimizer is not None:
            s.optimizer.build(list(self.trainable_variables))

    def _jf_single_output(self):
        """Whether the model is known to have one output before it runs (Sequential, or a
        functional model of one output); else the first batch's outputs decide."""
        outputs = getattr(self, "_jf_outputs", None)
        if outputs is not None:
            return len(nest.flatten(outputs)) == 1
        return any(c.__name__ == "Sequential" for c in type(self).__mro__)

    def _jf_resolve_outputs(self, y, y_pred):
        """The losses and metrics for the model's outputs, once their structure is known: a
        model with several outputs (or losses given per output) takes compile_utils' forms."""
        s = self._jf_state()
        several = len(nest.flatten(y_pred)) > 1
        if several or s.per_output or _compile.is_per_output(s.metric_specs):
            names = _compile.output_names(self, y_pred)
            if s.compiled_loss is not None:
                s.compiled_loss.build(names)
            s.per_output = s.compiled_loss is not None
            preds, targets = nest.flatten(y_pred), _compile._flat_targets(y, names)
            fns = s.compiled_loss.fns if s.compiled_loss is not None else [None] * len(names)
            specs = s.metric_specs
            if specs and not _compile.is_per_output(specs) and several:
                raise ValueError(f"Invalid `metrics`. `metrics` should contain metrics objects and either be a dict or "
                                 f"a list matching the output names of the functional model {names}. Received: "
                                 f"metrics={specs}")
            s.metrics = _compile.per_output_metrics(
                specs if _compile.is_per_output(specs) else [specs], names,
                lambda spec, i: _resolve_metric(spec, fns[i], targets[i], preds[i])) if specs else []
        else:
            s.metrics = [_resolve_metric(m, s.loss_fn, y, y_pred) for m in s.metric_specs]
        s.metrics_resolved = True

    def _jf_step_function(self, kind, batch):
        """The jf.function running train_step/test_step/predict_step for this batch's signature."""
        s = self._jf_state()
        step = {"train": self.train_step, "test": self.test_step, "predict": self.predict_step}[kind]
        strategy = self._jf_strategy() if kind != "predict" else None
        if strategy is not None:
            replica_step = step
            local = len(strategy.extended.worker_devices) > 1

            def step(data):
                if local:  # the local replicas' parts are cut here, in the step (traced or not)
                    data = strategy._local_batch(data)
                return _first_replica(strategy.run(replica_step, args=(data,)))
        if s.run_eagerly:
            if not s.metrics_resolved or not getattr(self, "built", True) or (kind, "eager") not in s.functions:
                self._jf_prepare(batch, kind)
                s.functions[(kind, "eager")] = True
            return lambda *data: step(data)
        signature = _data.signature_of(batch)
        key = (kind, _data.signature_key(signature))
        fn = s.functions.get(key)
        if fn is None:
            self._jf_prepare(batch, kind)
            fn = self._jf_trace(kind, step, signature, batch)
            s.functions[key] = fn
        s.last[kind] = fn
        return fn

    def _jf_trace(self, kind, step, signature, batch):
        s = self._jf_state()

        def run(*data):
            return step(data)  # (x,), (x, y) or (x, y, sample_weight), as Keras's data adapters give

        if s.jit_request is not True and s.jit_request is not False:
            fn = _function(run, input_signature=list(signature), jit_compile=True)
            try:
                fn.get_concrete_function(*batch)
            except InvalidArgumentError as e:
                if _NOT_COMPILABLE not in str(e):
                    raise
                _warn(f"jit_compile='auto': the {kind} step runs as a traced function without compiling it whole, "
                      f"since not every op compiles ({str(e).split(': ', 1)[-1].splitlines()[0]})", UserWarning)
                s.jit_by_kind[kind] = False
                fn = _function(run, input_signature=list(signature), jit_compile=False)
            else:
                s.jit_by_kind.setdefault(kind, True)
            return fn
        return _function(run, input_signature=list(signature), jit_compile=s.jit_request)

    def _jf_run(self, kind, batch):
        if kind == "predict":
            batch = (batch[0],)
        else:  # (x, y, None) -> (x, y); a sample weight needs a y before it
            batch = tuple(batch)
            while batch and batch[-1] is None:
                batch = batch[:-1]
            if any(b is None for b in batch):
                raise ValueError("sample_weight was given without targets y")
        batch = _data.to_tensors(batch)
        strategy = self._jf_strategy() if kind != "predict" else None
        if strategy is None:
            return self._jf_step_function(kind, batch)(*batch)
        with strategy.scope():  # variables the first step creates are mirrored, as in TF's fit
            if len(strategy.extended.worker_devices) == 1:  # one replica per worker: its rows
                batch = strategy._local_batch(batch)
            out = self._jf_step_function(kind, batch)(*batch)
            return self._jf_global_logs(strategy, out)

    def _jf_global_logs(self, strategy, logs):
        """The step's logs with each metric's result read from its variables summed over the
        workers (every worker logs the global batch's loss and metrics, as TF's sync-on-read
        metric variables give); other entries are this worker's."""
        if not isinstance(logs, dict):
            return logs
        metrics = [m for m in self.metrics if m.name in logs]
        with strategy._summed_variables([v for m in metrics for v in m.variables]):
            return {**logs, **{m.name: m.result() for m in metrics}}

    # ---- fit / evaluate / predict ----------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1):
        """Trains for `epochs` epochs; returns the History (also model.history)."""
        self._jf_assert_compiled()
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = _data.split_validation(x, y, sample_weight, validation_split)
        verbose = 1 if verbose == "auto" else verbose
        handler = _data.DataHandler(x, y, sample_weight, batch_size, steps_per_epoch, shuffle, epochs, initial_epoch,
                                    rng=self._jf_shuffle_rng(), class_weight=class_weight)
        cbs = callbacks if isinstance(callbacks, _callbacks.CallbackList) else _callbacks.CallbackList(
            callbacks, add_history=True, add_progbar=verbose != 0, model=self)
        cbs.set_model(self)
        cbs.set_params({"verbose": verbose, "epochs": epochs, "steps": handler.steps})
        s = self._jf_state()
        s.stop_training = False
        cbs.on_train_begin()
        logs = {}
        for epoch, batches in handler.epochs():
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            ran = 0
            for step, batch in batches:
                cbs.on_train_batch_begin(step)
                logs = _floats(self._jf_run("train", batch))
                cbs.on_train_batch_end(step, logs)
                ran += 1
                if s.stop_training:
                    break
            if ran == 0 and handler.insufficient_data:
                break  # the data ran out before this epoch (warned): it did not happen
            epoch_logs = dict(logs)
            if validation_data is not None and (epoch + 1) % validation_freq == 0:
                if isinstance(validation_data, tuple) and _data._is_array_data(validation_data[0]):
                    vx, vy, vsw = (tuple(validation_data) + (None, None))[:3]
                else:
                    vx, vy, vsw = validation_data, None, None
                val_logs = self.evaluate(vx, vy, batch_size=validation_batch_size or batch_size, sample_weight=vsw,
                                         steps=validation_steps, callbacks=cbs, return_dict=True, verbose=0)
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if s.stop_training:
                break
        cbs.on_train_end(logs)
        return s.history

    def _jf_shuffle_rng(self):
        """fit's shuffling generator; under a multi-worker strategy every worker takes rank 0's
        seed, so they cut the same global batches."""
        rng = _data.shuffle_rng()
        strategy = self._jf_strategy()
        if strategy is None:
            return rng
        return np.random.default_rng(strategy._rank0_value(rng.integers(0, 2**62, 2, dtype=np.int64)))

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False, **kwargs):
        """The loss and metrics over the data: a scalar (loss only), a list in metrics_names' order,
        or a dict."""
        self._jf_assert_compiled()
        verbose = 1 if verbose == "auto" else verbose
        handler = _data.DataHandler(x, y, sample_weight, batch_size, steps, shuffle=False)
        if isinstance(callbacks, _callbacks.CallbackList):
            cbs = callbacks
        else:
            cbs = _callbacks.CallbackList(callbacks, add_progbar=verbose != 0, model=self)
            cbs.set_params({"verbose": verbose, "epochs": 1, "steps": handler.steps})
        self.reset_metrics()
        cbs.on_test_begin()
        logs = {}
        for _, batches in handler.epochs():
            for step, batch in batches:
                cbs.on_test_batch_begin(step)
                logs = _floats(self._jf_run("test", batch))
                cbs.on_test_batch_end(step, logs)
        cbs.on_test_end(logs)
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs over the data, concatenated along the batch as numpy arrays."""
        verbose = 1 if verbose == "auto" else verbose
        handler = _data.DataHandler(x, None, None, batch_size, steps, shuffle=False)
        cbs = _callbacks.CallbackList(callbacks, add_progbar=verbose != 0, model=self)
        cbs.set_params({"verbose": verbose, "epochs": 1, "steps": handler.steps})
        cbs.on_predict_begin()
        outputs = []
        for _, batches in handler.epochs():
            for step, batch in batches:
                cbs.on_predict_batch_begin(step)
                out = nest.map_structure(lambda t: t.numpy(), self._jf_run("predict", batch))
                outputs.append(out)
                cbs.on_predict_batch_end(step, {"outputs": out})
        cbs.on_predict_end()
        if not outputs:
            raise ValueError("Unexpected result of `predict_function` (Empty batch_outputs). Please use "
                             "`Model.compile(..., run_eagerly=True)`, or `tf.config.run_functions_eagerly(True)` "
                             "for more information of where went wrong, or file a issue/bug to `tf.keras`.")
        return _concat(outputs)

    def _jf_on_batch(self, kind, x, y, sample_weight, return_dict):
        self._jf_assert_compiled()
        logs = _floats(self._jf_run(kind, _data.to_tensors(tuple(_data._leaves_to_numpy(v) for v in (x, y, sample_weight)))))
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """One train step on this batch (the metrics keep accumulating, as Keras 3's)."""
        x, y, sample_weight = _data.apply_class_weight((x, y, sample_weight), class_weight)
        return self._jf_on_batch("train", x, y, sample_weight, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        return self._jf_on_batch("test", x, y, sample_weight, return_dict)

    def predict_on_batch(self, x):
        out = self._jf_run("predict", _data.to_tensors((_data._leaves_to_numpy(x),)))
        return nest.map_structure(lambda t: t.numpy(), out)

