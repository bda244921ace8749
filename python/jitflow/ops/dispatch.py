"""How every op function calls into C++: the op ids by name, the dispatcher (`_C.execute`, one
op: its type, inputs and attrs) and the argument normalisation the op families share (a value
to a tensor, axis and size lists to int32 tensors, TF's auto-packing of lists holding tensors,
the values a trace already knows, an eager or constant value back)."""
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
    """v as a Tensor (passed through when it is one); a list or tuple holding tensors is
    packed (TF's auto-packing)."""
    if type(v) is Tensor:
        return v
    if isinstance(v, (list, tuple)) and holds_tensor(v):
        return pack(v)
    return _C.convert_to_tensor(v)


def to_ints(v, scalar=False):
    """An int32 tensor from an int, a list of ints or a tensor (passed through). A list that
    mixes tensors and ints (`[tf.shape(x)[0], -1]`) is packed into one tensor, in the graph when
    the tensors are symbolic."""
    if isinstance(v, Tensor):
        return v
    if type(v) is list or type(v) is tuple:
        try:  # Python ints (the usual shape or axis list): converted in C++ at once
            return int_tensor(v)
        except TypeError:  # numpy integers, scalar tensors: one at a time below
            pass
    elif type(v) is int:
        return int_tensor([v], True)
    if hasattr(v, "__len__") or hasattr(v, "__iter__"):
        try:
            return int_tensor([to_integer(i) for i in v])
        except TypeError:  # a symbolic tensor is no int: the list is packed (checked only then)
            if isinstance(v, (list, tuple)) and holds_tensor(v):
                return shape_tensor(v)
            raise
    return int_tensor([to_integer(v)], True)


# ---- auto-packing: lists and tuples holding tensors -------------------------------------------
_PLAIN = frozenset((int, float, bool, str, bytes, type(None)))


def _is_tensor(x):
    return isinstance(x, Tensor) or hasattr(x, "__jf_tensor__")


def holds_tensor(v, which=_is_tensor):
    """Whether the list or tuple v holds a tensor (or a jf.Variable) at any depth; `which`
    narrows the test. Walked without recursion and each list once, so a very deep or
    self-referencing list is left to the converter's own error."""
    if _PLAIN.issuperset(map(type, v)):  # the common case (a shape, a list of numbers), at C speed
        return False
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        if id(x) in seen or _PLAIN.issuperset(map(type, x)):
            continue
        seen.add(id(x))
        for e in x:
            if type(e) in _PLAIN:
                continue
            if isinstance(e, (list, tuple)):
                stack.append(e)
            elif which(e):
                return True
    return False


def shape_tensor(v):
    """A list or tuple of ints and integer tensors taken as a shape, sizes, multiples, paddings
    or begin: a constant when every tensor's value is known while tracing (static_value), so
    the op's shape function sees it as TF's sees through such a list, else packed in the graph."""
    values = _static_nested(v)
    if values is not None:
        return _C.convert_to_tensor(values, _first_dtype(v))
    return pack(v)


def _static_nested(v):
    """v with each tensor replaced by its static value (a Python int), or None when one is
    unknown or not an integer scalar."""
    out = []
    for e in v:
        if isinstance(e, (list, tuple)):
            e = _static_nested(e)
        elif _is_tensor(e):
            e = static_value(e) if isinstance(e, Tensor) else None
            if e is None or e.ndim != 0 or e.dtype.kind not in "iu":
                return None
            e = int(e)
        if e is None:
            return None
        out.append(e)
    return out


# Ops whose value static_value computes from their inputs' (TF's constant_value and its shape
# functions see through the same): the integer arithmetic that builds shapes.
_FOLDABLE = frozenset({"Identity", "StridedSlice", "Slice", "Pack", "ConcatV2", "Cast", "Reshape", "ExpandDims",
                       "Squeeze", "GatherV2", "AddV2", "Sub", "Mul", "FloorDiv", "FloorMod", "Maximum", "Minimum",
                       "Neg", "Prod", "Sum", "Range"})
_FOLD_MAX_ELEMENTS = 64


def static_value(t):
    """t's value as a numpy array when it is known without running the function, else None: an
    eager tensor's, a traced constant's, the shape, size or rank of a tensor whose shape the
    trace knows (jf.shape(x) of a known shape), and the small integer arithmetic on those
    (_FOLDABLE, computed eagerly here)."""
    if not t._is_symbolic:
        return t.numpy()
    ref = t._node_ref
    return None if ref is None else _node_value(ref[0], ref[1], {}, 0)


def _node_value(node, index, memo, depth):
    key = (node.name, index)
    if key in memo:
        return memo[key]
    memo[key] = None  # a cycle (none in a graph) or a failure below stays unknown
    op = node.op
    value = None
    if op == "Const":
        value = node.get_attr("value").numpy()
    elif op in ("Shape", "Size", "Rank"):
        src, i = node.input_refs()[0]
        shape = src.output_spec(i)[1]
        out = node.output_spec(0)[0].as_numpy_dtype
        if op == "Rank":
            value = _np.array(len(shape), out)
        elif None not in shape:
            value = _np.array(shape if op == "Shape" else _np.prod(shape, dtype=_np.int64), out)
    elif op in _FOLDABLE and depth < 32:
        inputs = []
        for src, i in node.input_refs():
            v = _node_value(src, i, memo, depth + 1)
            if v is None or v.size > _FOLD_MAX_ELEMENTS:
                break
            inputs.append(v)
        else:
            attrs = {k: node.get_attr(k) for k in node.attr if not k.startswith("_")}
            try:
                with _C.init_scope():
                    value = run_n(OP[op], [_C.convert_to_tensor(v) for v in inputs], attrs, None)[index].numpy()
            except (ValueError, TypeError):  # the op's own error, raised where it runs
                value = None
    memo[key] = value
    return value


def _first_dtype(v):
    """The dtype of the first tensor in v, depth first (TF's _get_dtype_from_nested_lists)."""
    for e in v:
        if isinstance(e, (list, tuple)):
            d = _first_dtype(e)
            if d is not None:
                return d
        elif _is_tensor(e):
            return e.dtype
    return None


def pack(v, dtype=None):
    """TF's auto-packing (what convert_to_tensor makes of a list or tuple holding tensors): the
    elements stacked by Pack ops, nested lists first, each Python or numpy value a constant of
    the first tensor's dtype. A tensor of another dtype is TF's TypeError; with `dtype` given,
    the tensors are cast to it instead."""
    inferred = _first_dtype(v)
    if dtype is None:
        return _pack(v, inferred, False)
    return _pack(v, dtype, dtype != inferred)


def _pack(v, dtype, cast):
    elems = []
    for e in v:
        if isinstance(e, (list, tuple)) and holds_tensor(e):
            elems.append(_pack(e, dtype, cast))
        elif _is_tensor(e):
            t = e if isinstance(e, Tensor) else e.__jf_tensor__()
            if t.dtype != dtype:
                if not cast:
                    raise TypeError(f"Cannot convert a list containing a tensor of dtype {t.dtype} to {dtype} "
                                    f"(Tensor is: {t!r})")
                t = _C.cast(t, dtype)
            elems.append(t)
        else:
            elems.append(_C.convert_to_tensor(e, dtype))
    return run(OP["Pack"], elems, {"axis": 0, "N": len(elems)}, None)


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
