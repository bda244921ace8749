"""AdamW, RMSprop and Adagrad: Keras 3's update rules on jf.optimizers' base (SGD and Adam live
there, so jf.optimizers and jf.keras.optimizers share one implementation)."""
import numpy as np

from ...ops import basic_ops as _ops
from ...state.optimizers import Adam, Optimizer


class AdamW(Adam):
    """Adam after decoupled weight decay: w -= w * weight_decay * lr before each update."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, clipnorm=None, clipvalue=None, global_clipnorm=None, name="AdamW", **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. Received: weight_decay=None")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)


class RMSprop(Optimizer):
    """velocity = rho * velocity + (1 - rho) g^2; centered subtracts the square of the mean
    gradient (average = rho * average + (1 - rho) g); step = lr g / sqrt(velocity [- average^2]
    + epsilon); with momentum, m = momentum * m + step and w -= m, else w -= step."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="RMSprop", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        self.rho, self.momentum, self.epsilon, self.centered = float(rho), float(momentum), float(epsilon), bool(centered)

    def _slot_names(self):
        return ("velocity",) + (("momentum",) if self.momentum > 0 else ()) + (("average_gradient",) if self.centered else ())

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        velocity = self.get_slot(var, "velocity")
        vel = self.rho * velocity.read_value() + (1.0 - self.rho) * _ops.square(g)
        velocity.assign(vel)
        if self.centered:
            average = self.get_slot(var, "average_gradient")
            avg = self.rho * average.read_value() + (1.0 - self.rho) * g
            average.assign(avg)
            denominator = vel - _ops.square(avg) + self.epsilon
        else:
            denominator = vel + self.epsilon
        increment = lr * g / _ops.sqrt(denominator)
        if self.momentum > 0:
            m = self.get_slot(var, "momentum")
            m_new = self.momentum * m.read_value() + increment
            m.assign(m_new)
            var.assign_sub(m_new)
        else:
            var.assign_sub(increment)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                "centered": self.centered}


class Adagrad(Optimizer):
    """accumulator += g^2 (starting at initial_accumulator_value); w -= lr g / sqrt(accumulator + epsilon)."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="Adagrad", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        self.initial_accumulator_value, self.epsilon = float(initial_accumulator_value), float(epsilon)

    def _slot_names(self):
        return ("accumulator",)

    def _slot_initial_value(self, slot_name):
        return np.float64(self.initial_accumulator_value)

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        acc = self.get_slot(var, "accumulator")
        acc_new = acc.read_value() + _ops.square(g)
        acc.assign(acc_new)
        var.assign_sub(lr * g / _ops.sqrt(acc_new + self.epsilon))

    def get_config(self):
        return {**super().get_config(), "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}
