"""compile()'s losses and metrics for models with several outputs, as Keras 3.15 reads them:
one loss for every output, a list in the outputs' order, or a dict by output name; loss_weights
the same way; metrics as a list per output or a dict by output name. The loss is the weighted
sum; each output's unweighted loss is logged as "<output>_loss" when there are several, and its
metrics as "<output>_<metric>"."""
from ..core import nest
from . import losses as _losses
from . import metrics as _metrics


def output_names(model, y_pred):
    """Names of the flat outputs: a dict's keys (nest's sorted order), else the model's
    output layers' names."""
    if isinstance(y_pred, dict):
        return sorted(y_pred)
    flat = nest.flatten(y_pred)
    names = [t._keras_history[0].name for t in getattr(model, "outputs", None) or []
             if getattr(t, "_keras_history", None)]
    if len(names) != len(flat):
        names = ["output"] if len(flat) == 1 else [f"output_{i + 1}" for i in range(len(flat))]
    return names


def _by_output(spec, names, what):
    """spec per output name: a dict by name, a list in order, or one value for every output."""
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ValueError(f"In the dict argument `{what}`, key '{unknown[0]}' does not correspond to any model "
                             f"output. Received:\n{what}={spec}")
        return [spec.get(n) for n in names]
    if isinstance(spec, (list, tuple)):
        if len(spec) != len(names):
            raise ValueError(f"For a model with multiple outputs, when providing the `{what}` argument as a list, "
                             f"it should have as many entries as the model has outputs. Received:\n{what}={spec}\n"
                             f"of length {len(spec)} whereas the model has {len(names)} outputs.")
        return list(spec)
    return [spec] * len(names)


def _loss_object(spec):
    fn = _losses.get(spec)
    if fn is None or isinstance(fn, _losses.Loss):
        return fn
    return _losses.LossFunctionWrapper(fn, name=getattr(fn, "__name__", None))


def _flat_targets(y, names):
    if isinstance(y, dict):
        missing = [n for n in names if n not in y]
        if missing:
            raise KeyError(f"The targets have no entry for the model's output '{missing[0]}' "
                           f"(targets' keys: {sorted(y)})")
        return [y[n] for n in names]
    if isinstance(y, (list, tuple)) and len(names) > 1:
        if len(y) != len(names):
            raise ValueError(f"The model has {len(names)} outputs but the targets hold {len(y)} values")
        return list(y)
    return [y] * len(names) if len(names) > 1 else [y]


class CompiledLoss:
    """The weighted sum of one loss per output (outputs without a loss contribute nothing)."""

    def __init__(self, loss, loss_weights):
        self.loss, self.loss_weights = loss, loss_weights
        self.names, self.fns, self.weights, self.trackers = None, None, None, []

    def build(self, names):
        self.names = names
        specs = _by_output(self.loss, names, "loss")
        self.fns = [_loss_object(s) for s in specs]
        count = sum(f is not None for f in self.fns)
        given_losses = count if isinstance(self.loss, (list, tuple, dict)) else 1
        if self.loss_weights is None:
            weights = [1.0] * len(names)
        elif isinstance(self.loss_weights, dict):
            weights = [float(self.loss_weights.get(n, 1.0)) for n in names]
        else:
            given = list(self.loss_weights) if isinstance(self.loss_weights, (list, tuple)) else [self.loss_weights]
            if len(given) != given_losses:
                raise ValueError(f"`loss_weights` must match the number of losses, got {given_losses} losses and "
                                 f"{len(given)} weights.")
            it = iter(given)
            weights = [float(next(it)) if f is not None else 0.0 for f in self.fns]
        self.weights = weights
        self.trackers = [_metrics.Mean(name=f"{n}_loss") if f is not None else None
                         for n, f in zip(names, self.fns)] if count > 1 else []

    def __call__(self, y_true, y_pred, sample_weight=None):
        """(total, [unweighted loss or None per output])."""
        preds = nest.flatten(y_pred)
        targets = _flat_targets(y_true, self.names)
        parts = [fn(t, p, sample_weight=sample_weight) if fn is not None else None
                 for fn, t, p in zip(self.fns, targets, preds)]
        total = None
        for w, part in zip(self.weights, parts):
            if part is not None:
                term = part * w if w != 1.0 else part
                total = term if total is None else total + term
        return total, parts

    def track(self, parts, batch_size):
        for tracker, part in zip(self.trackers, parts):
            if tracker is not None and part is not None:
                tracker.update_state(part, sample_weight=batch_size)


class OutputMetric(_metrics.Metric):
    """A metric of one output, logged as "<output>_<metric>"."""

    def __init__(self, metric, index, names):
        super().__init__(name=f"{names[index]}_{metric.name}")
        self.metric, self.index, self.names = metric, index, names

    def update_state(self, y_true, y_pred, sample_weight=None):
        target = _flat_targets(y_true, self.names)[self.index]
        self.metric.update_state(target, nest.flatten(y_pred)[self.index], sample_weight=sample_weight)

    def result(self):
        return self.metric.result()

    def reset_state(self):
        self.metric.reset_state()

    @property
    def variables(self):
        return self.metric.variables


def per_output_metrics(specs, names, resolve):
    """[OutputMetric] for metrics given per output (a dict by name or a list of lists);
    resolve(spec, index) makes each Metric."""
    per = _by_output(specs, names, "metrics")
    out = []
    for i, entry in enumerate(per):
        if entry is None:
            continue
        for spec in entry if isinstance(entry, (list, tuple)) else [entry]:
            out.append(OutputMetric(resolve(spec, i), i, names))
    return out


def is_per_output(metrics):
    return isinstance(metrics, dict) or (isinstance(metrics, (list, tuple)) and any(
        isinstance(m, (list, tuple)) for m in metrics))
