"""jf.optimizers: the optimizer base (Keras 3's apply order: drop None gradients with a warning,
clip, decay weights, update, count the step) with SGD and Adam; jf.keras.optimizers adds AdamW,
RMSprop and Adagrad on the same base. Updates are Variable assign ops, so apply_gradients works
eagerly and inside a jf.function; the learning rate is a variable (setting it does not retrace a
training step), or a schedule evaluated at `iterations`; slot variables are created on the first
apply (or eagerly with build(var_list))."""
import re

import numpy as np

from .. import _C
from ..autodiff import GradientTape
from ..core.errors import InvalidArgumentError, _at_caller, warn
from ..ops import basic_ops as _ops
from ..ops import losses_clipping as _clip
from ..ops.variables import Variable
from .module import Module as _Module


def _check_shape(g, var):
    """A gradient must have its variable's shape: the updates below would broadcast a [3]
    gradient over a [2, 3] variable (momentum, Adam) into a silently wrong step. TF's
    ResourceApply*/AssignSub error. A gradient with dims unknown while tracing is reshaped to
    the variable's shape, so a wrong element count raises when the function runs (a gradient
    of the same size in another layout cannot be told apart)."""
    gs, vs = tuple(g.shape), tuple(var.shape)
    if len(gs) != len(vs) or any(a is not None and b is not None and a != b for a, b in zip(gs, vs)):
        def fmt(s):
            return "[" + ",".join("?" if d is None else str(d) for d in s) + "]"
        raise InvalidArgumentError(_at_caller(f"Cannot update variable with shape {fmt(vs)} using a Tensor with "
                                              f"shape {fmt(gs)}, shapes must be equal (variable '{var._name}')"))
    return g if None not in gs else _ops.reshape(g, list(vs))


def _is_schedule(lr):
    """A learning-rate schedule (jf.keras.optimizers.schedules) is called with the step; a plain
    callable with no arguments. Told apart by the schedule's get_config, as this layer cannot
    import the schedules' module."""
    return callable(lr) and hasattr(lr, "get_config") and not isinstance(lr, Variable)


_UNSUPPORTED = {"use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                "loss_scale_factor": None, "gradient_accumulation_steps": None}


class Optimizer(_Module):
    """A jf.Module: its variables (`iterations`, the learning rate, the slots) are found by
    jf.train.Checkpoint, slots saved by the path of the variable they belong to."""

    _jf_untracked = _Module._jf_untracked | {"_slots", "_built", "_slot_owners", "_jf_deferred_slots",
                                             "_warned_missing", "_exclude_ids", "_exclude_pattern",
                                             # a hyperparameter: checkpoints keep the format TF's
                                             # tf.train.Checkpoint of a Keras 3 optimizer has
                                             "_learning_rate"}

    def __init__(self, learning_rate, name, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, **kwargs):
        for key, default in _UNSUPPORTED.items():
            if kwargs.pop(key, default) != default:
                raise NotImplementedError(f"jitflow's optimizers do not implement `{key}` yet")
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: "
                             f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        if weight_decay is not None and not isinstance(weight_decay, (int, float)):
            raise ValueError(f"Argument `weight_decay` must be a float. Received: weight_decay={weight_decay}")
        # Keras accepts any string as an optimizer's name; a module name must be an identifier.
        super().__init__(name=name if isinstance(name, str) and name.isidentifier() else None)
        object.__setattr__(self, "_name", name)
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self._slots = {}  # (slot name, id(var)) -> Variable
        self._built = set()
        # id(var) -> var: held so an id in _slots/_built cannot be reused by a new variable,
        # and so a checkpoint can name each slot by its variable.
        self._slot_owners = {}
        self._warned_missing = set()  # the sets of variable names a missing-gradient warning named
        self._exclude_ids, self._exclude_pattern = set(), None
        self.iterations = Variable(np.int64(0), trainable=False, name=f"{name}/iterations")
        if _is_schedule(learning_rate) or callable(learning_rate):
            self._learning_rate = learning_rate
        else:
            self._learning_rate = Variable(np.float32(learning_rate), trainable=False, name=f"{name}/learning_rate")

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, value):  # Keras allows renaming; the module's name scope stays
        object.__setattr__(self, "_name", value)

    @property
    def learning_rate(self):
        """The variable, a schedule's value at `iterations`, or a callable's value."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            return lr
        if _is_schedule(lr):
            return lr(self.iterations.read_value())
        return lr()

    @learning_rate.setter
    def learning_rate(self, value):
        if _is_schedule(value) or (callable(value) and not isinstance(value, Variable)):
            self._learning_rate = value
            return
        if not isinstance(self._learning_rate, Variable):
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as its "
                            "`learning_rate` constructor argument, hence its learning rate is not settable. If "
                            "you need the learning rate to be settable, you should instantiate the optimizer "
                            "with a float `learning_rate` argument.")
        self._learning_rate.assign(np.float32(value) if not isinstance(value, (_C.Tensor, Variable)) else value)

    # ---- slots ------------------------------------------------------------------------
    def _slot_names(self):
        return ()

    def _slot_initial_value(self, slot_name):
        return 0.0

    def build(self, var_list):
        """Creates the slot variables of var_list now (zeros like each variable, or the
        optimizer's initial value)."""
        for v in var_list:
            if id(v) in self._built:
                continue
            for s in self._slot_names():
                slot = Variable(np.full(v.shape, self._slot_initial_value(s), v.dtype.as_numpy_dtype),
                                trainable=False, name=f"{self.name}/{v._name}/{s}")
                self._slots[(s, id(v))] = slot
                # A checkpoint restored before this slot existed fills it now.
                for restore in list(self.__dict__.get("_jf_deferred_slots", ())):
                    restore(self, v, s, slot)
            self._built.add(id(v))
            self._slot_owners[id(v)] = v

    @property
    def built(self):
        return bool(self._built)

    def get_slot(self, var, slot_name):
        return self._slots[(slot_name, id(var))]

    def get_slot_names(self):
        return list(self._slot_names())

    def _slot_variables(self):
        """(variable, slot name, slot variable) for every slot, in creation order."""
        return [(self._slot_owners[vid], s, slot) for (s, vid), slot in self._slots.items()]

    @property
    def variables(self):
        """The step counter, then the slots (Keras 3 also lists its learning-rate variable; here
        it is a hyperparameter, outside checkpoints and this list, as in TF 2's optimizers)."""
        return [self.iterations] + list(self._slots.values())

    # ---- updates ----------------------------------------------------------------------
    def _prepare_step(self, step):
        """Per-step state an update rule shares across variables (Nadam's momentum product),
        updated once before the variables' updates; step is iterations + 1, float32."""
    def _lr(self, dtype):
        lr = self.learning_rate
        if isinstance(lr, Variable):
            lr = lr.read_value()
        lr = lr if isinstance(lr, _C.Tensor) else _C.convert_to_tensor(lr, dtype)
        return lr if lr.dtype == dtype else _ops.cast(lr, dtype)

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Variables (or names containing one of var_names) weight decay leaves alone; before build."""
        if self._built:
            raise ValueError("`exclude_from_weight_decay()` can only be configured before the optimizer is built.")
        self._exclude_ids = {id(v) for v in var_list or ()}
        self._exclude_pattern = re.compile("|".join(set(var_names))) if var_names else None

    def _decays(self, var):
        if id(var) in self._exclude_ids:
            return False
        return self._exclude_pattern is None or self._exclude_pattern.search(var.name) is None

    def _clip_gradients(self, grads):
        if self.clipnorm and self.clipnorm > 0:
            return [_clip.clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm and self.global_clipnorm > 0:
            return list(_clip.clip_by_global_norm(grads, self.global_clipnorm)[0])
        if self.clipvalue and self.clipvalue > 0:
            return [_clip.clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def apply_gradients(self, grads_and_vars):
        """Applies one update per (gradient, variable); None gradients are skipped, with Keras's
        warning naming their variables. Returns `iterations`."""
        grads_and_vars = list(grads_and_vars)
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError("No gradients provided for any variable.")
        if len(pairs) < len(grads_and_vars):
            self._warn_missing([v.name for g, v in grads_and_vars if g is None])
        self.build([v for _, v in grads_and_vars])
        grads = [_check_shape(_C.convert_to_tensor(g, v.dtype), v) for g, v in pairs]
        variables = [v for _, v in pairs]
        if _GRADIENT_AGGREGATOR[0] is not None:  # summed across replicas first, then clipped (TF's order)
            grads = _GRADIENT_AGGREGATOR[0](grads)
            if grads is None:  # another replica of this process applies the summed update
                return self.iterations
        grads = self._clip_gradients(grads)
        if self.weight_decay:
            for v in variables:
                if self._decays(v):
                    v.assign(v.read_value() * (1.0 - self._lr(v.dtype) * _ops.cast(self.weight_decay, v.dtype)))
        step = _ops.cast(self.iterations.read_value() + 1, _ops._dt.float32)
        self._prepare_step(step)
        for g, v in zip(grads, variables):
            self._update(g, v, _ops.cast(step, v.dtype) if v.dtype != step.dtype else step)
            # A Keras weight's constraint (keras.constraints) projects it after its update.
            constraint = getattr(v, "constraint", None)
            if constraint is not None:
                v.assign(constraint(v.read_value()))
        self.iterations.assign_add(np.int64(1))
        return self.iterations

    def apply(self, grads, trainable_variables):
        """Keras 3's form: gradients and variables as two lists."""
        return self.apply_gradients(zip(grads, trainable_variables))

    def _warn_missing(self, names):
        """Keras's warning for variables whose gradient is None (one disconnected from the loss
        is otherwise never trained, silently). Keras warns on every step; here once per
        optimizer and set of variables, so a training loop (or each trace of its step) does not
        repeat it, at the user's line."""
        key = frozenset(names)
        if key in self._warned_missing:
            return
        self._warned_missing.add(key)
        warn(f"Gradients do not exist for variables {names} when minimizing the loss. If using "
             "`model.compile()`, did you forget to provide a `loss` argument?", UserWarning)

    def minimize(self, loss, var_list, tape=None):
        """Computes the gradients of `loss` (a callable, or a tensor recorded on `tape`) with
        respect to var_list and applies them; returns the loss value."""
        if callable(loss):
            with GradientTape() as recorder:
                value = loss()
        elif tape is None:
            raise ValueError("minimize: `tape` is required when `loss` is a tensor")
        else:
            recorder, value = tape, loss
        var_list = list(var_list() if callable(var_list) else var_list)
        grads = recorder.gradient(value, var_list)
        self.apply_gradients(zip(grads, var_list))
        return value

    # ---- config -----------------------------------------------------------------------
    def get_config(self):
        lr = self._learning_rate
        if isinstance(lr, Variable):
            lr = float(lr.numpy())
        elif _is_schedule(lr):
            lr = {"module": "keras.optimizers.schedules", "class_name": type(lr).__name__,
                  "config": lr.get_config(), "registered_name": None}
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            config["learning_rate"] = _SCHEDULE_DESERIALIZER[0](lr, custom_objects)
        return cls(**config)


# Set by jf.keras.optimizers.schedules (a layer above), which knows the schedule classes.
_SCHEDULE_DESERIALIZER = [None]
# Set by jf.distribute (a layer above): inside a strategy's run() it sums the gradients across
# the replicas (None: replicas sharing this process's variables, and another of them applies
# the sum); elsewhere it returns them as they are.
_GRADIENT_AGGREGATOR = [None]


class SGD(Optimizer):
    """w -= lr * g; with momentum: velocity = momentum * velocity - lr * g, w += velocity
    (nesterov: w += momentum * velocity - lr * g)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name="SGD", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"`momentum` must be in [0, 1], got {momentum}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _slot_names(self):
        return ("momentum",) if self.momentum else ()

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        if not self.momentum:
            var.assign_sub(lr * g)
            return
        m = self.get_slot(var, "momentum")
        velocity = self.momentum * m.read_value() - lr * g
        m.assign(velocity)
        var.assign_add(self.momentum * velocity - lr * g if self.nesterov else velocity)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    """Keras's Adam: m += (g - m)(1 - beta_1); v += (g^2 - v)(1 - beta_2);
    w -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon); with amsgrad,
    v is replaced by the running maximum of v."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, name="Adam", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _slot_names(self):
        return ("m", "v", "vhat") if self.amsgrad else ("m", "v")

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        alpha = lr * _ops.sqrt(1.0 - _ops.pow(self.beta_2, step)) / (1.0 - _ops.pow(self.beta_1, step))
        m_new = m.read_value() + (g - m.read_value()) * (1.0 - self.beta_1)
        v_new = v.read_value() + (_ops.square(g) - v.read_value()) * (1.0 - self.beta_2)
        m.assign(m_new)
        v.assign(v_new)
        if self.amsgrad:
            vhat = self.get_slot(var, "vhat")
            v_new = _ops.maximum(vhat.read_value(), v_new)
            vhat.assign(v_new)
        var.assign_sub(m_new * alpha / (_ops.sqrt(v_new) + self.epsilon))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                "amsgrad": self.amsgrad}
