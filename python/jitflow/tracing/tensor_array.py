"""jf.TensorArray, TF 2's per-step tensor arrays: eagerly a Python list of tensors (TF's
eager TensorArray, mutable, with its errors); traced, a buffer [capacity, *element_shape] and
an int32 size held in a namedtuple, so jf.while_loop, jf.cond, AutoGraph loops and function
outputs carry it as two tensors and rebuild it. A traced write is one TensorArrayWrite op that
updates the buffer in place when the executor hands it the only reference (docs/tensor_array.md)."""
import collections

import numpy as _np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError, OutOfRangeError, _at_caller
from ..core.export import export
from ..core.nest import flatten_outputs
from ..core.shapes import TensorShape
from ..ops import array_ops
from ..ops import basic_ops as ops
from ..ops.dispatch import OP
from .subgraph import trace_branch

_STRICT, _GROW, _DROP = 0, 1, 2  # TensorArrayWrite's modes (shape_fns_tensor_array.cc)


def _write(buffer, indices, values, mode, accumulate=False):
    # A buffer whose element dims are not all known may be one still without elements (made
    # before a loop that gives them: resolve_unshaped): its first write gives its shape.
    learn = None in list(buffer.shape)[1:]
    return _C.execute(OP["TensorArrayWrite"], (buffer, indices, values),
                      {"mode": mode, "accumulate": accumulate, "learn_shape": learn}, None)


def _read(buffer, size, indices):
    return _C.execute(OP["TensorArrayRead"], (buffer, size, indices), None, None)


def _stack(buffer, size):
    return _C.execute(OP["TensorArrayStack"], (buffer, size), None, None)


def _capacity_unknown(buffer):
    """A growing array's buffer as a write of nothing in grow mode: its capacity is unknown once
    traced, as after any write, so the buffer has one static shape before and in a loop."""
    nothing = ops.zeros([0] + list(buffer.shape)[1:], buffer.dtype)
    return _write(buffer, _C.convert_to_tensor(_np.zeros([0], _np.int32)), nothing, _GROW)


def _as_shape(shape):
    if shape is None:
        return TensorShape(None)
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def _value(value, dtype):
    """TF's convert_to_tensor(value, preferred_dtype=dtype)."""
    if isinstance(value, _C.Tensor):
        return value
    if hasattr(value, "read_value"):
        return value.read_value()
    return _C.convert_to_tensor(value, dtype_hint=dtype, soft_hint=True)


def _index(index, what="index"):
    """An int32 index tensor (scalar or vector) from a Python int, a list or an int tensor."""
    if isinstance(index, _C.Tensor):
        if not index.dtype.is_integer:
            raise TypeError(_at_caller(f"Expected int32 passed to parameter '{what}', got a {index.dtype.name} "
                                       "tensor"))
        return index
    if isinstance(index, (float, _np.floating)):
        raise TypeError(_at_caller(f"Expected int32 passed to parameter '{what}', got {index!r} of type "
                                   f"'{type(index).__name__}' instead."))
    arr = _np.asarray(index)
    if arr.size == 0:
        arr = arr.astype(_np.int32)
    if arr.dtype.kind not in "iu":
        raise TypeError(_at_caller(f"Expected int32 passed to parameter '{what}', got {index!r} of type "
                                   f"'{type(index).__name__}' instead."))
    fits = arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31)
    return _C.convert_to_tensor(arr.astype(_np.int32 if fits else _np.int64))


def _check_dtype(value, dtype):
    if value.dtype != dtype:
        raise InvalidArgumentError(_at_caller(f"TensorArray dtype is {dtype.name} but Op is trying to write dtype "
                                              f"{value.dtype.name} "))


class _TensorArrayType(type):
    """isinstance(x, jf.TensorArray) holds for the eager and the traced form."""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or type.__instancecheck__(_GraphTensorArray, obj)


@export("TensorArray")
class TensorArray(metaclass=_TensorArrayType):
    """Class wrapping dynamic-sized, per-time-step, Tensor arrays (tf.TensorArray).

    Eagerly the array is a list of tensors that write/scatter/unstack/split change in place
    (and return). While tracing, jf.TensorArray(...) returns the traced form, whose methods
    return a new array: write `ta = ta.write(i, x)`, as TF's documentation asks."""

    def __new__(cls, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                handle=None, flow=None, infer_shape=True, element_shape=None,
                colocate_with_first_write_call=True, name=None):
        if cls is TensorArray and _C.is_tracing():
            return _GraphTensorArray._create(dtype, size, dynamic_size, handle, flow, infer_shape, element_shape)
        return super().__new__(cls)

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None,
                 colocate_with_first_write_call=True, name=None):
        if handle is not None:
            raise ValueError("TensorArray handles are not supported when eager execution is enabled.")
        if size is None:
            raise ValueError("Size must be declared for TensorArrays when eager execution is enabled.")
        self._dtype = _dt.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = infer_shape
        self._element_shape = _as_shape(element_shape)
        self._read_indices = set()
        if isinstance(size, _C.Tensor):
            size = int(size.numpy())
        self._list = [None] * max(0, int(size))

    # ---- properties -------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return self._element_shape

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def handle(self):
        return None

    @property
    def flow(self):
        return _C.convert_to_tensor(0, _dt.int32)

    def identity(self):
        return self

    def grad(self, source, flow=None, name=None):
        raise NotImplementedError("TensorArray.grad is not supported when executing eagerly; eager's gradient "
                                  "implementation does not use/need this function to compute gradients of "
                                  "operations that use TensorArrays.")

    # ---- elements ---------------------------------------------------------------------------
    def _int(self, index):
        if isinstance(index, _C.Tensor):
            if not index.dtype.is_integer:
                raise TypeError(f"list indices must be integers or slices, not {index.dtype.name}")
            return int(index.numpy())
        if not isinstance(index, (int, _np.integer)):
            raise TypeError(f"list indices must be integers or slices, not {type(index).__name__}")
        return int(index)

    def _zero(self, i):
        if self._list[i] is None:
            if not self._element_shape.is_fully_defined():
                raise ValueError(f"Cannot convert a partially known TensorShape {self._element_shape} to a Tensor.")
            self._list[i] = ops.zeros(self._element_shape.as_list(), self._dtype)
        return self._list[i]

    def read(self, index, name=None):
        index = self._int(index)
        if index < 0:
            raise OutOfRangeError(f"Reading from negative indices (index {index}) is not allowed.")
        if index >= len(self._list):
            raise OutOfRangeError(f"Tried to read from index {index} but array size is: {len(self._list)} ")
        value = self._list[index]
        if value is None:
            if index in self._read_indices:
                raise InvalidArgumentError(
                    f"Could not read index {index} twice because it was cleared after a previous read (perhaps "
                    "try setting clear_after_read = false?)")
            value = self._zero(index)
        if self._clear_after_read:
            self._list[index] = None
            self._read_indices.add(index)
        return value

    def _write(self, index, value):
        index = self._int(index)
        if index < 0:
            raise OutOfRangeError(f"Writing to negative indices (index {index}) is not allowed.")
        if index >= len(self._list):
            if not self._dynamic_size:
                raise OutOfRangeError(f"Tried to write to index {index} but array is not resizeable and size "
                                      f"is: {len(self._list)} ")
            self._list.extend([None] * (index + 1 - len(self._list)))
        value = _value(value, self._dtype)
        _check_dtype(value, self._dtype)
        shape = TensorShape(list(value.shape))
        if not self._element_shape.is_compatible_with(shape):
            raise ValueError(f"Incompatible shape for value ({shape}), expected ({self._element_shape})")
        if self._infer_shape:
            self._element_shape = self._element_shape.merge_with(shape)
        self._list[index] = value

    def write(self, index, value, name=None):
        self._write(index, value)
        return self

    def stack(self, name=None):
        for i in range(len(self._list)):
            self._zero(i)
        if not self._list:
            dims = self._element_shape.as_list() if self._element_shape.is_fully_defined() else []
            return ops.zeros([0] + dims, self._dtype)
        return ops.stack(self._list)

    def gather(self, indices, name=None):
        if isinstance(indices, _C.Tensor):
            indices = indices.numpy().tolist()
        items = []
        for i in indices:
            if not 0 <= int(i) < len(self._list):
                raise IndexError("list index out of range")
            items.append(self._zero(int(i)))
        if not items:
            dims = self._element_shape.as_list() if self._element_shape.is_fully_defined() else []
            return ops.zeros([0] + dims, self._dtype)
        return ops.stack(items)

    def concat(self, name=None):
        items = [self._zero(i) for i in range(len(self._list))]
        for i, t in enumerate(items):
            if len(t.shape) == 0:
                raise InvalidArgumentError(f"Concat saw a scalar shape at index {i} but requires at least vectors.")
        if not items:
            raise InvalidArgumentError("ConcatV2: concat of an empty TensorArray (TF: 'OpKernel 'ConcatV2' has "
                                       "constraint on attr 'T' not in NodeDef '[N=0, Tidx=DT_INT32]'')")
        return ops.concat(items, 0)

    def unstack(self, value, name=None):
        value = _value(value, self._dtype)
        _check_dtype(value, self._dtype)
        tensors = list(array_ops.unstack(value))
        if len(tensors) > len(self._list) and not self._dynamic_size:
            raise ValueError(f"Cannot unstack {len(tensors)} tensors into a TensorArray of static size "
                             f"{len(self._list)} ")
        self._list = tensors
        return self

    def scatter(self, indices, value, name=None):
        if isinstance(indices, _C.Tensor):
            indices = indices.numpy().tolist()
        value = _value(value, self._dtype)
        for index, v in zip(indices, array_ops.unstack(value)):
            self._write(index, v)
        return self

    def split(self, value, lengths, name=None):
        value = _value(value, self._dtype)
        _check_dtype(value, self._dtype)
        lens = _np.asarray(lengths.numpy() if isinstance(lengths, _C.Tensor) else lengths)
        if lens.ndim != 1:
            raise InvalidArgumentError(f"Expected lengths to be a vector, received shape: {list(lens.shape)} ")
        if len(value.shape) == 0:
            raise InvalidArgumentError(f"Expected value to be at least a vector, but received shape: "
                                       f"{list(value.shape)} ")
        if int(lens.sum()) != value.shape[0]:
            raise InvalidArgumentError(f"Expected sum of lengths to be equal to values.shape[0], but sum of "
                                       f"lengths is {int(lens.sum())} and value's shape is: {list(value.shape)} ")
        if not self._dynamic_size and len(lens) != len(self._list):
            raise InvalidArgumentError(f"TensorArray's size is not equal to the size of lengths "
                                       f"({len(self._list)} vs. {len(lens)}), and the TensorArray is not marked "
                                       "as dynamically resizeable.")
        self._list = list(ops.split(value, [int(n) for n in lens])) if len(lens) else []
        return self

    def size(self, name=None):
        return _C.convert_to_tensor(len(self._list), _dt.int32)

    def close(self, name=None):
        self._list.clear()


# ---- the traced form ------------------------------------------------------------------------
class _Meta:
    """What a traced array's tensors do not say: compared by value, so the array before and
    after a loop iteration, or in both branches of a cond, has one structure."""
    __slots__ = ("dtype", "dynamic_size", "element_shape", "infer_shape", "static_size")

    def __init__(self, dtype, dynamic_size, infer_shape, static_size, element_shape):
        self.dtype, self.dynamic_size, self.infer_shape = dtype, dynamic_size, infer_shape
        self.static_size, self.element_shape = static_size, element_shape

    def _key(self):
        es = None if self.element_shape is None else tuple(self.element_shape)
        return (self.dtype, self.dynamic_size, self.infer_shape, self.static_size, es)

    def __eq__(self, other):
        return isinstance(other, _Meta) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"TensorArray({self.dtype.name}, dynamic_size={self.dynamic_size})"


def _static_int(t):
    """The value of an int scalar tensor known while tracing, else None."""
    if not isinstance(t, _C.Tensor):
        return int(t)
    if not t._is_symbolic:
        return int(t.numpy())
    return None


class _GraphTensorArray(collections.namedtuple("TensorArray", ["buffer", "length", "meta"])):
    """A traced TensorArray: `buffer` [capacity, *element_shape] (None until the element shape
    is known: the first write), `length` its int32 size, `meta` the rest. Methods return new
    arrays (TF's functional style)."""
    __slots__ = ()

    @staticmethod
    def _create(dtype, size, dynamic_size, handle, flow, infer_shape, element_shape):
        if handle is not None:
            raise ValueError("TensorArray handles are not supported: jitflow's TensorArray has no handle")
        if flow is not None and size is None:
            raise ValueError("jf.TensorArray(flow=...) is not supported: pass size")
        if size is None:
            raise ValueError("Argument `size` must be provided if argument `flow` is not provided.")
        dtype = _dt.as_dtype(dtype)
        length = _index(size, "size")
        if length.dtype != _dt.int32:
            length = ops.cast(length, _dt.int32)
        static = _static_int(length)
        es = _as_shape(element_shape)
        meta = _Meta(dtype, bool(dynamic_size), infer_shape, static, None if es.rank is None else es.as_list())
        ta = _GraphTensorArray(None, length, meta)
        if es.is_fully_defined():
            ta = ta._with_buffer(es.as_list())
        return ta

    def _with_buffer(self, dims):
        """This array with a zero buffer [size, *dims]: its element shape is now known. dims: a
        list of ints, or an int32 tensor (an element shape known at run time). A list with
        None dims (an element shape partly unknown when tracing) gives a buffer with no
        elements yet (those dims 0 when it runs, unknown when traced), which takes the shape
        of its first write."""
        n, dt = self.meta.static_size, self.meta.dtype
        if not isinstance(dims, _C.Tensor) and None in dims:
            # A None dim is a zero computed from the size, which the trace cannot see through
            # (a constant 0 would make the buffer's static dim 0, not unknown).
            unknown = ops.zeros_like(ops.reshape(ops.cast(self.length, _dt.int32), [1]))
            dims = ops.concat([unknown if d is None else _C.convert_to_tensor([d], _dt.int32) for d in dims], 0)
        if isinstance(dims, _C.Tensor):
            buf = ops.zeros(ops.concat([ops.reshape(self.length, [1]), dims], 0), dt)
        elif n is not None:
            buf = ops.zeros([max(n, 0)] + list(dims), dt)
        else:  # a size known at run time: grow an empty buffer to it (keeps the static dims)
            empty = ops.zeros([0] + list(dims), dt)
            last = ops.reshape(ops.maximum(self.length - 1, 0), [1])
            buf = _stack(_write(empty, last, ops.zeros([1] + list(dims), dt), _GROW), self.length)
        m = self.meta
        if m.dynamic_size:
            buf = _capacity_unknown(buf)
        return _GraphTensorArray(buf, self.length, _Meta(m.dtype, m.dynamic_size, m.infer_shape, m.static_size, None))

    # ---- properties -------------------------------------------------------------------------
    @property
    def dtype(self):
        return self.meta.dtype

    @property
    def element_shape(self):
        if self.buffer is None:
            return TensorShape(self.meta.element_shape)
        return TensorShape(list(self.buffer.shape)[1:])

    @property
    def dynamic_size(self):
        return self.meta.dynamic_size

    @property
    def handle(self):
        return None

    @property
    def flow(self):
        return self.length if self.buffer is None else self.buffer

    def identity(self):
        return _GraphTensorArray(None if self.buffer is None else ops.identity(self.buffer),
                                 ops.identity(self.length), self.meta)

    def grad(self, source, flow=None, name=None):
        raise NotImplementedError("TensorArray.grad is not supported: gradients flow through the ops that use "
                                  "the array (jf.GradientTape / jf.gradients)")

    def __repr__(self):
        return f"<jf.TensorArray dtype={self.dtype.name} element_shape={self.element_shape}>"

    # ---- elements ---------------------------------------------------------------------------
    def _prepare(self, value, leading, materialize=True):
        """value (a tensor of the array's dtype, `leading` dims before its element dims) checked
        against the element shape (TF's message), and the array with a buffer for it."""
        _check_dtype(value, self.meta.dtype)
        shape = TensorShape(list(value.shape)[leading:])
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(_at_caller(f"Inconsistent shapes: saw {shape} but expected {self.element_shape} "))
        if self.buffer is not None or not materialize:
            return self
        dims = self.element_shape.merge_with(shape)
        return self._with_buffer(dims.as_list() if dims.is_fully_defined() else ops.shape(value)[leading:])

    def _grown(self, indices_max):
        if not self.meta.dynamic_size:
            return self.length
        return ops.maximum(self.length, ops.cast(indices_max, _dt.int32) + 1)

    def write(self, index, value, name=None):
        index = _index(index)
        if len(index.shape) != 0:
            raise ValueError(_at_caller(f"TensorArray.write: the index must be a scalar, got shape {list(index.shape)}"))
        value = _value(value, self.meta.dtype)
        ta = self._prepare(value, 0)
        buf = _write(ta.buffer, index, value, _GROW if self.meta.dynamic_size else _STRICT)
        return _GraphTensorArray(buf, ta._grown(index), ta.meta)

    def scatter(self, indices, value, name=None):
        indices = _index(indices, "indices")
        value = _value(value, self.meta.dtype)
        if len(value.shape) == 0:
            raise ValueError(_at_caller("TensorArray.scatter: value must have rank >= 1 (one row per index)"))
        ta = self._prepare(value, 1)
        buf = _write(ta.buffer, indices, value, _GROW if self.meta.dynamic_size else _STRICT)
        return _GraphTensorArray(buf, ta._grown(ops.reduce_max(indices)), ta.meta)

    def unstack(self, value, name=None):
        value = _value(value, self.meta.dtype)
        _check_dtype(value, self.meta.dtype)
        if len(value.shape) == 0:
            raise ValueError(_at_caller("Argument `axis` = 0 not in range [0, 0)"))
        self._prepare(value, 1, materialize=False)
        n = value.shape[0]
        if n is not None and n >= 0:
            if not self.meta.dynamic_size and self.meta.static_size is not None and n > self.meta.static_size:
                raise ValueError(_at_caller(f"Cannot unstack {n} tensors into a TensorArray of static size "
                                            f"{self.meta.static_size} "))
            length = _C.convert_to_tensor(n, _dt.int32)
        else:
            length = ops.shape(value)[0]
        m = self.meta
        static = m.static_size if m.dynamic_size else _static_int(length)
        buf = _capacity_unknown(value) if m.dynamic_size else value
        return _GraphTensorArray(buf, length, _Meta(m.dtype, m.dynamic_size, m.infer_shape, static, None))

    def split(self, value, lengths, name=None):
        value = _value(value, self.meta.dtype)
        _check_dtype(value, self.meta.dtype)
        if isinstance(lengths, _C.Tensor) and lengths._is_symbolic:
            raise NotImplementedError(_at_caller(
                "jf.TensorArray.split while tracing needs lengths known when tracing (a traced array stores "
                "elements of one shape)"))
        lens = _np.asarray(lengths.numpy() if isinstance(lengths, _C.Tensor) else lengths).astype(_np.int64)
        if lens.ndim != 1:
            raise InvalidArgumentError(_at_caller(f"Expected lengths to be a vector, received shape: "
                                                  f"{list(lens.shape)} "))
        if len(value.shape) == 0:
            raise InvalidArgumentError(_at_caller(f"Expected value to be at least a vector, but received shape: "
                                                  f"{list(value.shape)} "))
        rows = value.shape[0]
        if rows is not None and int(lens.sum()) != rows:
            raise InvalidArgumentError(_at_caller(
                f"Expected sum of lengths to be equal to values.shape[0], but sum of lengths is {int(lens.sum())} "
                f"and value's shape is: {list(value.shape)} "))
        if not self.meta.dynamic_size and self.meta.static_size is not None and len(lens) != self.meta.static_size:
            raise InvalidArgumentError(_at_caller(
                f"TensorArray's size is not equal to the size of lengths ({self.meta.static_size} vs. {len(lens)}), "
                "and the TensorArray is not marked as dynamically resizeable."))
        if len(lens) and lens.min() != lens.max():
            raise NotImplementedError(_at_caller(
                f"jf.TensorArray.split while tracing: lengths {lens.tolist()} differ, but a traced array stores "
                "elements of one shape"))
        each = int(lens[0]) if len(lens) else 0
        rest = list(value.shape[1:])
        pieces = ops.reshape(value, [len(lens), each] + [-1 if d is None else d for d in rest])
        return self.unstack(pieces)

    def read(self, index, name=None):
        index = _index(index)
        if len(index.shape) != 0:
            raise ValueError(_at_caller(f"TensorArray.read: the index must be a scalar, got shape {list(index.shape)}"))
        if self.buffer is None:
            raise InvalidArgumentError(_at_caller(
                f"Trying to read an uninitialized tensor but element_shape is not fully defined: "
                f"{self._es_text()} and no list element is set."))
        return _read(self.buffer, self.size(), index)

    def gather(self, indices, name=None):
        indices = _index(indices, "indices")
        if self.buffer is None:
            raise InvalidArgumentError(_at_caller(
                f"Trying to read an uninitialized tensor but element_shape is not fully defined: "
                f"{self._es_text()} and no list element is set."))
        return _read(self.buffer, self.size(), indices)

    def _es_text(self):
        return "<unknown>" if self.meta.element_shape is None else str(TensorShape(self.meta.element_shape))

    def stack(self, name=None):
        if self.buffer is None:
            if self.meta.static_size == 0:
                raise InvalidArgumentError(_at_caller(
                    f"Tried to stack elements of an empty list with non-fully-defined element_shape: "
                    f"{self._es_text()}"))
            raise InvalidArgumentError(_at_caller(
                f"Tried to stack list which only contains uninitialized tensors and has a non-fully-defined "
                f"element_shape: {self._es_text()}"))
        size = self.size()  # a fixed size is a constant: the stacked shape is known
        n, rows = _static_int(size), self.buffer.shape[0]
        if n is not None and rows is not None and n == rows:
            return self.buffer
        return _stack(self.buffer, size)

    def concat(self, name=None):
        if self.buffer is not None and len(self.buffer.shape) == 1:
            raise InvalidArgumentError(_at_caller("Concat saw a scalar shape at index 0 but requires at least vectors."))
        s = self.stack()
        rest = [-1 if d is None else d for d in list(s.shape)[2:]]
        return ops.reshape(s, [-1] + rest)

    def size(self, name=None):
        if not self.meta.dynamic_size and self.meta.static_size is not None:
            return _C.convert_to_tensor(self.meta.static_size, _dt.int32)
        return self.length

    def close(self, name=None):
        return None


# ---- loops and conds: an array whose element shape is not known yet ------------------------
def learn_element_shapes(body, init):
    """{i: element dims} for each traced array init[i] without a buffer that one throwaway
    trace of body(*init) writes (body returns the new values, in init's order)."""
    unshaped = [i for i, v in enumerate(init) if isinstance(v, _GraphTensorArray) and v.buffer is None]
    if not unshaped:
        return {}
    flat, tree = flatten_outputs(list(init))
    seen = {}

    def probe(*ts):
        out = body(*tree.unflatten(list(ts)))
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        for i in unshaped:
            if i < len(out) and isinstance(out[i], _GraphTensorArray) and out[i].buffer is not None:
                seen[i] = list(out[i].buffer.shape)[1:]
        return []
    trace_branch(probe, [(t.dtype, list(t.shape)) for t in flat], [f"loop_var_{k}" for k in range(len(flat))])
    return seen


def give_buffers(out, like):
    """out (a branch's result) with each traced array that has no buffer, where `like` (the
    other branch's result) holds an array with one at the same place, given a zero buffer of
    that element shape: an element a branch never writes reads as zeros, as in TF."""
    if isinstance(out, _GraphTensorArray):
        if out.buffer is None and isinstance(like, _GraphTensorArray) and like.buffer is not None:
            return out._with_buffer(list(like.buffer.shape)[1:])
        return out
    if type(out) in (list, tuple) and type(like) is type(out) and len(out) == len(like):
        return type(out)(give_buffers(o, k) for o, k in zip(out, like))
    if type(out) is dict and type(like) is dict and out.keys() == like.keys():
        return {k: give_buffers(v, like[k]) for k, v in out.items()}
    return out


def shape_for_branches(branches, init):
    """init with each traced array that has no buffer yet given the element shape a branch's
    first write gives it (the first branch that writes one), so both branches of a cond carry
    one buffer structure, as TF's variant arrays do whatever a branch writes."""
    seen = {}
    for body in branches:
        for i, dims in learn_element_shapes(body, init).items():
            seen.setdefault(i, dims)
    return [v._with_buffer(seen[i]) if i in seen else v for i, v in enumerate(init)]


def resolve_unshaped(body, init):
    """init with every traced array that has no buffer yet (no element shape) given one: the
    element shape its first write in one throwaway trace of `body` gives it (TF needs none:
    its arrays are variant tensors; a jitflow array is a buffer of one element shape). Dims
    that trace does not know are learnt when the loop's first write runs (_with_buffer)."""
    unshaped = [i for i, v in enumerate(init) if isinstance(v, _GraphTensorArray) and v.buffer is None]
    if not unshaped:
        return init
    seen = learn_element_shapes(body, init)
    init = list(init)
    for i in unshaped:
        dims = seen.get(i)
        if dims is None:
            raise ValueError(_at_caller(
                "jf.TensorArray: a traced array carried by a loop needs an element shape before the loop (it "
                "is one buffer [size, *element_shape]), but the loop body writes no element; pass "
                "element_shape= to jf.TensorArray, or write an element before the loop"))
        init[i] = init[i]._with_buffer(dims)
    return init
