"""tf.train.ExponentialMovingAverage: a shadow variable per tracked variable, made on its first
apply() from the variable's value, then moved toward it by shadow -= (1 - decay)(shadow - var),
with decay capped at (1 + n) / (10 + n) when num_updates n is given (TF's rule; its zero_debias
applies to tensors only, which jitflow's apply does not take)."""
from ..core import dtypes as _dt
from ..core.export import export
from ..ops import basic_ops as _ops
from ..ops.variables import Variable


@export("train.ExponentialMovingAverage")
class ExponentialMovingAverage:
    def __init__(self, decay, num_updates=None, zero_debias=False, name="ExponentialMovingAverage"):
        self._decay, self._num_updates, self._zero_debias, self._name = decay, num_updates, zero_debias, name
        self._averages = {}

    name = property(lambda self: self._name)

    def _decay_now(self, dtype):
        decay = _ops.cast(_ops.convert_to_tensor(self._decay), dtype)
        if self._num_updates is None:
            return decay
        n = self._num_updates
        n = _ops.cast(n.read_value() if isinstance(n, Variable) else _ops.convert_to_tensor(n), dtype)
        return _ops.minimum(decay, (1.0 + n) / (10.0 + n))

    def apply(self, var_list=None):
        """Creates the shadow of each variable not seen yet, then moves every shadow one step
        toward its variable's current value."""
        var_list = list(var_list or [])
        for var in var_list:
            if not isinstance(var, Variable):
                raise NotImplementedError("jitflow's ExponentialMovingAverage.apply takes variables (TF also takes "
                                          "tensors, whose averages it zero-debiases)")
            if not (var.dtype.is_floating and var.dtype not in (_dt.bfloat16,)):
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
        for var in var_list:
            if var.ref() not in self._averages:
                self._averages[var.ref()] = Variable(var.read_value(), trainable=False,
                                                     name=self.average_name(var))
        for var in var_list:
            shadow = self._averages[var.ref()]
            decay = self._decay_now(var.dtype)
            shadow.assign_sub((1.0 - decay) * (shadow.read_value() - var.read_value()))

    def average(self, var):
        """The shadow variable of var, or None before var's first apply()."""
        return self._averages.get(var.ref())

    def average_name(self, var):
        return f"{var.name.split(':')[0]}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None):
        """{average name: variable} for the tracked variables (a checkpoint's shadow values are
        restored into the variables they average)."""
        return {self.average_name(ref.deref()): ref.deref() for ref in self._averages}
