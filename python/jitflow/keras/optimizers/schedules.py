"""jf.keras.optimizers.schedules: Keras 3's learning-rate schedules, functions of the optimizer's
step counter built from jitflow ops (so a training step traced once follows the schedule)."""
import math

from ...core import dtypes as _dt
from ...ops import basic_ops as _ops
from ...state import optimizers as _state_optimizers


def _f32(x):
    return _ops.cast(x, _dt.float32)


class LearningRateSchedule:
    """Called with the step (the optimizer's `iterations`) it returns the learning rate."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override `__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override `get_config()` in "
                                  "order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class ExponentialDecay(LearningRateSchedule):
    """initial * decay_rate ** (step / decay_steps), the exponent floored with staircase."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def __call__(self, step):
        p = _f32(step) / float(self.decay_steps)
        if self.staircase:
            p = _ops.floor(p)
        return _f32(self.initial_learning_rate) * _ops.pow(_f32(self.decay_rate), p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """initial / (1 + decay_rate * step / decay_steps), the ratio floored with staircase."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay"):
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def __call__(self, step):
        p = _f32(step) / float(self.decay_steps)
        if self.staircase:
            p = _ops.floor(p)
        return _f32(self.initial_learning_rate) / (1.0 + _f32(self.decay_rate) * p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] up to and including boundaries[0], values[i] on (boundaries[i-1], boundaries[i]],
    values[-1] after the last boundary."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of values. Received: "
                             f"boundaries={boundaries} of length {len(boundaries)}, and values={values} of length "
                             f"{len(values)}.")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step):
        step = _f32(step)
        lr = _f32(self.values[0]) * _f32(_ops.less_equal(step, float(self.boundaries[0])))
        lr = lr + _f32(self.values[-1]) * _f32(_ops.greater(step, float(self.boundaries[-1])))
        for low, high, value in zip(self.boundaries[:-1], self.boundaries[1:], self.values[1:-1]):
            inside = _ops.logical_and(_ops.greater(step, float(low)), _ops.less_equal(step, float(high)))
            lr = lr + _f32(value) * _f32(inside)
        return lr

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - step / decay_steps) ** power + end, the step capped at decay_steps,
    or with cycle, decay_steps stretched to the next multiple above the step."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle, self.name = end_learning_rate, power, cycle, name

    def __call__(self, step):
        step = _f32(step)
        steps = _f32(self.decay_steps)
        if self.cycle:
            multiplier = _ops.where(_ops.equal(step, 0.0), _f32(1.0), _ops.ceil(step / float(self.decay_steps)))
            steps = steps * multiplier
        else:
            step = _ops.minimum(step, steps)
        p = step / steps
        end = _f32(self.end_learning_rate)
        return (_f32(self.initial_learning_rate) - end) * _ops.pow(1.0 - p, _f32(self.power)) + end

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Optional linear warmup from initial to warmup_target over warmup_steps, then
    lr0 * ((1 - alpha) * 0.5 * (1 + cos(pi * t / decay_steps)) + alpha), t capped at decay_steps."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        self.initial_learning_rate, self.decay_steps, self.alpha = initial_learning_rate, decay_steps, alpha
        self.name, self.warmup_target, self.warmup_steps = name, warmup_target, warmup_steps

    def _decay(self, step, lr0):
        fraction = step / float(self.decay_steps)
        cosine = 0.5 * (1.0 + _ops.cos(math.pi * fraction))
        return ((1.0 - self.alpha) * cosine + self.alpha) * lr0

    def __call__(self, step):
        step = _f32(step)
        lr0 = _f32(self.initial_learning_rate)
        if self.warmup_target is None:
            return self._decay(_ops.minimum(step, float(self.decay_steps)), lr0)
        target = _f32(self.warmup_target)
        step = _ops.minimum(step, float(self.decay_steps + self.warmup_steps))
        # Both pieces are computed and one selected: the warmup divides by max(warmup_steps, 1).
        warm = (target - lr0) * step / float(max(self.warmup_steps, 1)) + lr0
        decayed = self._decay(_ops.maximum(step - float(self.warmup_steps), 0.0), target)
        return _ops.where(_ops.less(step, float(self.warmup_steps)), warm, decayed)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


_BY_NAME = {c.__name__: c for c in (ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay, PolynomialDecay,
                                    CosineDecay)}


def serialize(schedule):
    return {"module": "keras.optimizers.schedules", "class_name": type(schedule).__name__,
            "config": schedule.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Unknown learning rate schedule: {name!r}")
    return cls.from_config(config["config"])


_state_optimizers._SCHEDULE_DESERIALIZER[0] = deserialize

# Keras's snake-case aliases.
exponential_decay, inverse_time_decay, cosine_decay = ExponentialDecay, InverseTimeDecay, CosineDecay
piecewise_constant_decay, polynomial_decay = PiecewiseConstantDecay, PolynomialDecay
