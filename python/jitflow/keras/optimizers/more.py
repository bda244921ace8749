"""AdamW, RMSprop, Adagrad, Adamax, Nadam, Adadelta, Ftrl and Lion: Keras 3's update rules on
jf.optimizers' base (SGD and Adam live there, so jf.optimizers and jf.keras.optimizers share one
implementation)."""
import numpy as np

from ...ops import basic_ops as _ops
from ...ops.variables import Variable
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


class Adamax(Optimizer):
    """Adam with the infinity norm: m += (g - m)(1 - beta_1); u = max(beta_2 u, |g|);
    w -= lr m / ((1 - beta_1^t)(u + epsilon))."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="Adamax", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _slot_names(self):
        return ("momentum", "norm")

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        m, u = self.get_slot(var, "momentum"), self.get_slot(var, "norm")
        m_new = m.read_value() + (g - m.read_value()) * (1.0 - self.beta_1)
        u_new = _ops.maximum(self.beta_2 * u.read_value(), _ops.abs(g))
        m.assign(m_new)
        u.assign(u_new)
        var.assign_sub(lr * m_new / ((1.0 - _ops.pow(self.beta_1, step)) * (u_new + self.epsilon)))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}


class Nadam(Optimizer):
    """Adam with Nesterov momentum and Keras's momentum schedule mu_t = beta_1 (1 - 0.5 * 0.96^t):
    the bias corrections use the running product of the mu_t (one variable, updated once per
    step before the variables' updates)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="Nadam", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self._u_product = Variable(np.float32(1.0), trainable=False, name=f"{name}/u_product")

    def _slot_names(self):
        return ("momentum", "velocity")

    def _mu(self, t):
        return self.beta_1 * (1.0 - 0.5 * _ops.pow(0.96, t))

    def _prepare_step(self, step):
        self._u_product.assign(self._u_product.read_value() * self._mu(step))

    @property
    def variables(self):
        return super().variables + [self._u_product]

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        mu_t, mu_next = self._mu(step), self._mu(step + 1.0)
        prod_t = _ops.cast(self._u_product.read_value(), var.dtype)
        prod_next = prod_t * mu_next
        m, v = self.get_slot(var, "momentum"), self.get_slot(var, "velocity")
        m_new = m.read_value() + (g - m.read_value()) * (1.0 - self.beta_1)
        v_new = v.read_value() + (_ops.square(g) - v.read_value()) * (1.0 - self.beta_2)
        m.assign(m_new)
        v.assign(v_new)
        m_hat = mu_next * m_new / (1.0 - prod_next) + (1.0 - mu_t) * g / (1.0 - prod_t)
        v_hat = v_new / (1.0 - _ops.pow(self.beta_2, step))
        var.assign_sub(m_hat * lr / (_ops.sqrt(v_hat) + self.epsilon))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}


class Adadelta(Optimizer):
    """acc_g = rho acc_g + (1 - rho) g^2; delta = -sqrt(acc_d + eps) g / sqrt(acc_g + eps);
    acc_d = rho acc_d + (1 - rho) delta^2; w += lr delta."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name="Adadelta", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        self.rho, self.epsilon = float(rho), float(epsilon)

    def _slot_names(self):
        return ("accumulated_grad", "accumulated_delta_var")

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        acc_g, acc_d = self.get_slot(var, "accumulated_grad"), self.get_slot(var, "accumulated_delta_var")
        g2 = self.rho * acc_g.read_value() + (1.0 - self.rho) * _ops.square(g)
        acc_g.assign(g2)
        delta = -_ops.sqrt(acc_d.read_value() + self.epsilon) * g / _ops.sqrt(g2 + self.epsilon)
        acc_d.assign(self.rho * acc_d.read_value() + (1.0 - self.rho) * _ops.square(delta))
        var.assign_add(lr * delta)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}


class Ftrl(Optimizer):
    """Follow-the-regularized-leader (Keras's form): a gradient accumulator and a linear term;
    the weight is solved in closed form from them with L1, L2 and L2-shrinkage strengths."""

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name="Ftrl", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        for arg, value, sign in (("initial_accumulator_value", initial_accumulator_value, 1),
                                 ("learning_rate_power", learning_rate_power, -1),
                                 ("l1_regularization_strength", l1_regularization_strength, 1),
                                 ("l2_regularization_strength", l2_regularization_strength, 1),
                                 ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength, 1)):
            if value * sign < 0:
                what = "negative or zero" if sign < 0 else "positive or zero"
                raise ValueError(f"`{arg}` needs to be {what}. Received: {arg}={value}.")
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l1_regularization_strength = float(l1_regularization_strength)
        self.l2_regularization_strength = float(l2_regularization_strength)
        self.l2_shrinkage_regularization_strength = float(l2_shrinkage_regularization_strength)
        self.beta = float(beta)

    def _slot_names(self):
        return ("accumulator", "linear")

    def _slot_initial_value(self, slot_name):
        return np.float64(self.initial_accumulator_value if slot_name == "accumulator" else 0.0)

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        acc, linear = self.get_slot(var, "accumulator"), self.get_slot(var, "linear")
        power = -self.learning_rate_power
        l2 = self.l2_regularization_strength + self.beta / (2.0 * lr)
        w = var.read_value()
        shrunk = g + 2.0 * self.l2_shrinkage_regularization_strength * w
        acc_new = acc.read_value() + _ops.square(g)
        lin = linear.read_value() + shrunk - (_ops.pow(acc_new, power) - _ops.pow(acc.read_value(), power)) / lr * w
        linear.assign(lin)
        quadratic = _ops.pow(acc_new, power) / lr + 2.0 * l2
        l1 = self.l1_regularization_strength
        var.assign((_ops.minimum(_ops.maximum(lin, -l1), l1) - lin) / quadratic)
        acc.assign(acc_new)

    def get_config(self):
        return {**super().get_config(), "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength": self.l2_shrinkage_regularization_strength, "beta": self.beta}


class Lion(Optimizer):
    """w -= lr sign(beta_1 m + (1 - beta_1) g); then m = beta_2 m + (1 - beta_2) g."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name="Lion", **kwargs):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm, **kwargs)
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError("Argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer degenerates "
                             f"to SignSGD. Received: beta_1={beta_1}.")
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)

    def _slot_names(self):
        return ("momentum",)

    def _update(self, g, var, step):
        lr = self._lr(var.dtype)
        m = self.get_slot(var, "momentum")
        var.assign_sub(lr * _ops.sign(m.read_value() * self.beta_1 + g * (1.0 - self.beta_1)))
        m.assign(m.read_value() * self.beta_2 + g * (1.0 - self.beta_2))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}
