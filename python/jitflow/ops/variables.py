"""jf.Variable: a resource variable. Reads and writes are ops (ReadVariableOp,
AssignVariableOp, ...) carrying the variable's id, so traced functions capture variables by
reference and see later assignments."""

import contextlib
import threading
import weakref

from .. import _C
from ..core import device as _device
from ..core import strings as _strings
from ..core.errors import _at_caller
from ..core.name_scope import current_module_scope
from ..core.tensor import Reference, unhashable

_ID = {
    n: _C.op_id(n)
    for n in ("ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "Identity", "AssignSubVariableOp")
}
_counter = [0]


def _convert(value, dtype=None, dtype_hint=None):
    """_C.convert_to_tensor, with string values (TF's string variables) as C++ string tensors."""
    if _strings.is_string_value(value, dtype) or (
        dtype_hint == _strings.string and not isinstance(value, _C.Tensor) and _strings.is_string_value(value)
    ):
        t = value if isinstance(value, _strings.StringTensor) else _strings.constant(value)
        return t._c_tensor()
    return _C.convert_to_tensor(value, dtype, dtype_hint)


class _CreationGuard(threading.local):
    """Per thread, pushed by jf.function while it traces on that thread: (creation allowed,
    function name, list that keeps the variables it creates alive). TF allows variable creation
    on the first trace only; a trace governs only the variables its own thread creates, so an
    eager jf.Variable made on another thread meanwhile is not refused."""

    def __init__(self):
        self.stack = []


_creation_guard = _CreationGuard()
# Variable id -> Variable, for GradientTape (a ReadVariableOp carries only the id).
_by_id = weakref.WeakValueDictionary()


class Variable:
    _id = None

    def __init__(self, initial_value, trainable=True, name=None, dtype=None):
        guard = _creation_guard.stack
        if guard and not guard[-1][0]:
            raise ValueError(
                _at_caller(
                    "jf.function only supports singleton jf.Variables created on the first call. Make sure the "
                    "jf.Variable is only created once or created outside jf.function. See "
                    "https://www.tensorflow.org/guide/function#creating_tfvariables for more information. "
                    f"(jf.function {guard[-1][1]!r}; create it guarded by `if self.v is None`.)"
                )
            )
        with _C.init_scope():  # initial values are computed eagerly, even inside a trace
            if callable(initial_value):
                initial_value = initial_value()
            value = _convert(initial_value, dtype)
            if value._is_symbolic:  # built inside a trace from constants: lift it out
                value = _C.evaluate_lifted(value)
            # As in TF, a variable made under a GPU scope lives on that GPU.
            if _device.gpu_scope_open() and _device.current().startswith("/GPU"):
                value = _C.execute(_ID["Identity"], (value,), {})
        if name is None:
            name = "Variable" if _counter[0] == 0 else f"Variable_{_counter[0]}"
            _counter[0] += 1
        self._name = current_module_scope() + name  # TF: made in a module's scope, "<module>/<name>"
        self._id = _C.create_variable(value, self._name)
        self._dtype = value.dtype
        self._shape = value.shape
        self.trainable = trainable
        _by_id[self._id] = self
        if guard:  # created while tracing: the function keeps it alive
            guard[-1][2].append(self)

    def __del__(self):
        if self._id is None:
            return
        with contextlib.suppress(Exception):  # interpreter shutdown may have torn _C down
            _C.destroy_variable(self._id)

    name = property(lambda self: self._name + ":0")
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    ndim = property(lambda self: len(self._shape))

    def get_shape(self):
        return self._shape

    def __jf_tensor__(self):
        return self.read_value()

    def read_value(self):
        return _C.execute(_ID["ReadVariableOp"], (), {"var_id": self._id})

    def value(self):
        return self.read_value()

    def _write(self, op, value, read_value):
        v = _convert(value, None, self._dtype)
        _C.execute_n(_ID[op], (v,), {"var_id": self._id})
        return self if read_value else None

    def assign(self, value, read_value=True):
        v = _convert(value, None, self._dtype)
        # TF checks assign's static shape and dtype in Python: ValueError, with its messages.
        if v.dtype != self._dtype:
            raise ValueError(
                f"Tensor conversion requested dtype {self._dtype.name} for Tensor with dtype "
                f"{v.dtype.name}: {v!r}"
            )
        if not v.shape.is_compatible_with(self._shape):
            raise ValueError(
                f"Cannot assign value to variable ' {self.name}': Shape mismatch.The variable "
                f"shape {self._shape}, and the assigned value shape {v.shape} are incompatible."
            )
        return self._write("AssignVariableOp", v, read_value)

    def assign_add(self, delta, read_value=True):
        return self._write("AssignAddVariableOp", delta, read_value)

    def assign_sub(self, delta, read_value=True):
        return self._write("AssignSubVariableOp", delta, read_value)

    def numpy(self):
        with _C.init_scope():
            return self.read_value().numpy()

    def __array__(self, dtype=None, copy=None):
        with _C.init_scope():
            return self.read_value().__array__(dtype, copy)

    def __repr__(self):
        return (
            f"<jf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, numpy={self.numpy()!r}>"
        )


def _delegate(op):
    def f(self, *args):
        return getattr(self.read_value(), op)(*args)

    f.__name__ = op
    return f


for _op in [
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__truediv__",
    "__rtruediv__",
    "__matmul__",
    "__rmatmul__",
    "__pow__",
    "__rpow__",
    "__neg__",
    "__abs__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__getitem__",
    "__floordiv__",
    "__mod__",
    "__float__",
    "__int__",
    "__bool__",
    "__len__",
    "__iter__",
]:
    setattr(Variable, _op, _delegate(_op))


def _compare(name, incompatible):
    """TF 2's `==`/`!=` of a variable: its value's, elementwise; None compares as a Python bool."""

    def f(self, other):
        if other is None:
            return incompatible
        return getattr(self.read_value(), name)(other)

    f.__name__ = name
    return f


Variable.__eq__ = _compare("__eq__", False)
Variable.__ne__ = _compare("__ne__", True)
Variable.__hash__ = unhashable("Variable")
Variable.ref = Variable.experimental_ref = lambda self: Reference(self)
_C.set_variable_type(Variable)  # jf.function keys Variable arguments by spec (dtype, shape, trainable)
