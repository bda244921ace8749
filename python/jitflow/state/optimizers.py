"""jf.optimizers: SGD (with momentum) and Adam, Keras's update rules. Updates are Variable
assign ops, so apply_gradients works eagerly and inside a jf.function; slot variables are
created on the first apply (or eagerly with build(var_list))."""
import numpy as np

from .. import _C
from ..autodiff import GradientTape
from ..core.errors import InvalidArgumentError, _at_caller, warn
from ..ops import basic_ops as _ops
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


class Optimizer(_Module):
    """A jf.Module: its variables (`iterations`, the slots) are found by jf.train.Checkpoint,
    slots saved by the path of the variable they belong to."""

    _jf_untracked = _Module._jf_untracked | {"_slots", "_built", "_slot_owners", "_jf_deferred_slots",
                                             "_warned_missing"}

    def __init__(self, learning_rate, name):
        # Keras accepts any string as an optimizer's name; a module name must be an identifier.
        super().__init__(name=name if isinstance(name, str) and name.isidentifier() else None)
        object.__setattr__(self, "_name", name)
        self.learning_rate = learning_rate
        self._slots = {}  # (slot name, id(var)) -> Variable
        self._built = set()
        # id(var) -> var: held so an id in _slots/_built cannot be reused by a new variable,
        # and so a checkpoint can name each slot by its variable.
        self._slot_owners = {}
        self._warned_missing = set()  # the sets of variable names a missing-gradient warning named
        self.iterations = Variable(np.int64(0), trainable=False, name=f"{name}/iterations")

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, value):  # Keras allows renaming; the module's name scope stays
        object.__setattr__(self, "_name", value)

    # ---- slots ------------------------------------------------------------------------
    def _slot_names(self):
        return ()

    def build(self, var_list):
        """Creates the slot variables of var_list (zeros like each variable) now."""
        for v in var_list:
            if id(v) in self._built:
                continue
            for s in self._slot_names():
                slot = Variable(np.zeros(v.shape, v.dtype.as_numpy_dtype), trainable=False,
                                name=f"{self.name}/{v._name}/{s}")
                self._slots[(s, id(v))] = slot
                # A checkpoint restored before this slot existed fills it now.
                for restore in list(self.__dict__.get("_jf_deferred_slots", ())):
                    restore(self, v, s, slot)
            self._built.add(id(v))
            self._slot_owners[id(v)] = v

    def get_slot(self, var, slot_name):
        return self._slots[(slot_name, id(var))]

    def get_slot_names(self):
        return list(self._slot_names())

    def _slot_variables(self):
        """(variable, slot name, slot variable) for every slot, in creation order."""
        return [(self._slot_owners[vid], s, slot) for (s, vid), slot in self._slots.items()]

    @property
    def variables(self):
        return [self.iterations] + list(self._slots.values())

    # ---- updates ----------------------------------------------------------------------
    def _lr(self, dtype):
        lr = self.learning_rate() if callable(self.learning_rate) else self.learning_rate
        return _C.convert_to_tensor(lr, dtype)

    def apply_gradients(self, grads_and_vars):
        """Applies one update per (gradient, variable); None gradients are skipped, with Keras's
        warning naming their variables."""
        grads_and_vars = list(grads_and_vars)
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError("No gradients provided for any variable.")
        if len(pairs) < len(grads_and_vars):
            self._warn_missing([v.name for g, v in grads_and_vars if g is None])
        self.build([v for _, v in pairs])
        step = _ops.cast(self.iterations.read_value() + 1, _ops._dt.float32)
        for g, v in pairs:
            g = _C.convert_to_tensor(g, v.dtype)
            g = _check_shape(g, v)
            self._update(g, v, _ops.cast(step, v.dtype) if v.dtype != step.dtype else step)
        self.iterations.assign_add(np.int64(1))
        return self.iterations

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


class SGD(Optimizer):
    """w -= lr * g; with momentum: velocity = momentum * velocity - lr * g, w += velocity
    (nesterov: w += momentum * velocity - lr * g)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD"):
        super().__init__(learning_rate, name)
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


class Adam(Optimizer):
    """Keras's Adam: m += (g - m)(1 - beta_1); v += (g^2 - v)(1 - beta_2);
    w -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="Adam"):
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _slot_names(self):
        return ("m", "v")

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        alpha = lr * _ops.sqrt(1.0 - _ops.pow(self.beta_2, step)) / (1.0 - _ops.pow(self.beta_1, step))
        m_new = m.read_value() + (g - m.read_value()) * (1.0 - self.beta_1)
        v_new = v.read_value() + (_ops.square(g) - v.read_value()) * (1.0 - self.beta_2)
        m.assign(m_new)
        v.assign(v_new)
        var.assign_sub(m_new * alpha / (_ops.sqrt(v_new) + self.epsilon))
