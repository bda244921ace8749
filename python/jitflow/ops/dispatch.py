"""How every op function calls into C++: the op ids by name, the dispatcher (`_C.execute`, one
op: its type, inputs and attrs) and the argument normalisation the op families share (a value
to a tensor, axis and size lists to int32 tensors, an eager or constant value back)."""
import builtins
import operator

import numpy as _np

from .. import _C
from .._C import Tensor
from ..core.errors import InvalidArgumentError, _at_caller

run = _C.execute  # run(op_id, inputs, attrs, name) -> Tensor
run_n = _C.execute_n  # the same for ops with several outputs -> list of Tensors
OP = {n: _C.op_id(n) for n in _C.op_names()}  # op type name -> the id the dispatcher takes
int_tensor = _C.int_tensor


def to_tensor(v):
    """v as a Tensor (passed through when it is one)."""
    return v if type(v) is Tensor else _C.convert_to_tensor(v)


def to_ints(v, scalar=False):
    """An int32 tensor from an int, a list of ints or a tensor (passed through)."""
    if isinstance(v, Tensor):
        return v
    if hasattr(v, "__len__") or hasattr(v, "__iter__"):
        return int_tensor([to_integer(i) for i in v])
    return int_tensor([to_integer(v)], True)


def to_integer(i):
    """An axis, size or dimension as a Python int."""
    # operator.index, not int(): an axis or a size of 0.5 is an error, not a silent 0.
    if isinstance(i, Tensor):
        return operator.index(i)  # keeps its own errors (float dtype, symbolic in a trace)
    try:
        return operator.index(i)
    except TypeError:
        raise TypeError(f"Expected an integer (axis, size or dimension), got {i!r} of type "
                        f"{type(i).__name__}") from None


def scalar_ints(v, op, message, inputs=(), one_element=False):
    """The int32 scalar an op takes as its axis (or split dimension): from an int, or a tensor
    passed through. The kernels read a vector's first element, so a list, array or tensor of
    any other shape is refused here as TF refuses it: while tracing, its graph shape function's
    ValueError (`inputs`: the op's inputs in order, None where v goes); eagerly, the kernel's
    InvalidArgumentError, `message` formatted with the shape ([2], [1,1]) and rank. one_element: the
    kernel also takes a vector of one element (ConcatV2's and SplitV's legacy axis)."""
    if isinstance(v, Tensor):
        shape = tuple(v.shape)
    elif isinstance(v, (list, tuple)) or getattr(v, "ndim", 0):
        shape = _np.shape(v)
    else:
        return int_tensor([to_integer(v)], True)
    if not shape:
        return to_ints(v, True)
    if _C.is_tracing():
        shapes = ", ".join(_shape_str(shape if t is None else tuple(to_tensor(t).shape)) for t in inputs)
        raise ValueError(_at_caller(f"Shape must be rank 0 but is rank {len(shape)} for '{op}' with input "
                                    f"shapes: {shapes}."))
    if not (one_element and shape == (1,)):
        raise InvalidArgumentError(_at_caller(f"{op}: " + message.format(shape=_shape_str(shape), rank=len(shape))))
    return to_ints(v)


def _shape_str(shape):
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def axis_tensor(x, axis):
    """The axes a reduction takes: all of x's for None."""
    if axis is None:
        return int_tensor(list(builtins.range(len(x.shape))))
    return to_ints(axis)


def const_value(t):
    """The numpy value of an eager tensor or of a traced Const node, else None."""
    if not t._is_symbolic:
        return t.numpy()
    ref = t._node_ref
    if ref is not None and ref[0].op == "Const":
        return ref[0].get_attr("value").numpy()
    return None
