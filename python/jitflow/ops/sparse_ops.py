"""jf.SparseTensor and jf.sparse: TF's COO sparse tensors (int64 indices [N, rank], values [N],
an int64 dense_shape) and the everyday functions on them, built from dense jitflow ops (where,
gathers, scatters, segment sums, sorts), so they run eagerly and traced and their values are
differentiable as those ops are. A SparseTensor crosses a jf.function boundary as its three
tensors (an attrs-style container to jitflow's nest); to jf.nest it is one leaf unless
expand_composites=True, as in TF. Indices are kept in TF's canonical row-major
order wherever TF's ops give it (reorder sorts, concat/transpose/add sort their results)."""
import numpy as np

from .. import _C
from .._C import Tensor
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from ..core.shapes import TensorShape
from ..core.tensor_spec import TensorSpec
from . import array_ops as _array
from . import basic_ops as _ops
from . import debugging as _debug
from . import mask_ops as _mask
from . import scatter_ops as _scatter
from . import sort_ops as _sort
from . import stats_ops as _stats
from .dispatch import static_value, to_tensor


class _Field:
    """One entry of __attrs_attrs__: jitflow's nest reads `name` (and rebuilds the
    container by calling the class with the fields in order)."""

    def __init__(self, name):
        self.name = name


def _describes(x):
    """True for what jf.function rebuilds a composite from besides tensors: a TensorSpec (its
    signature) or a traced graph edge (its structured outputs, which carry `value_index`)."""
    return isinstance(x, TensorSpec) or hasattr(x, "value_index")


def _int64(x):
    t = x if isinstance(x, Tensor) else _C.convert_to_tensor(np.asarray(x, np.int64))
    return t if t.dtype == _dt.int64 else _ops.cast(t, _dt.int64)


@export("SparseTensor", "sparse.SparseTensor")
class SparseTensor:
    """A sparse tensor: `values[i]` sits at `indices[i]` of a tensor of shape `dense_shape`;
    every other element is zero (or to_dense's default_value)."""

    __attrs_attrs__ = (_Field("indices"), _Field("values"), _Field("dense_shape"))
    __jf_composite__ = True  # one leaf to jf.nest unless expand_composites; opened at function boundaries

    def __init__(self, indices, values, dense_shape):
        if any(_describes(a) for a in (indices, values, dense_shape)):
            # jf.function's signature and structured outputs: the structure with the specs (or
            # graph edges) of the three tensors
            self._indices, self._values, self._dense_shape = indices, values, dense_shape
            return
        self._indices = _int64(indices)
        self._values = values if isinstance(values, Tensor) else to_tensor(values)
        self._dense_shape = _int64(dense_shape)
        ishape, vshape, sshape = self._indices.shape, self._values.shape, self._dense_shape.shape
        if ishape.rank is not None and ishape.rank != 2:
            raise ValueError(f"Shape {ishape} must have rank 2")
        if vshape.rank is not None and vshape.rank != 1:
            raise ValueError(f"Shape {vshape} must have rank 1")
        if sshape.rank is not None and sshape.rank != 1:
            raise ValueError(f"Shape {sshape} must have rank 1")
        for a, b in ((ishape[0] if ishape.rank else None, vshape[0] if vshape.rank else None),
                     (ishape[1] if ishape.rank else None, sshape[0] if sshape.rank else None)):
            if a is not None and b is not None and a != b:
                raise ValueError(f"Dimensions {a} and {b} are not compatible")

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)

    @property
    def shape(self):
        """The static shape: dense_shape's value where it is known while tracing."""
        known = static_value(self._dense_shape) if self._dense_shape._is_symbolic else self._dense_shape.numpy()
        if known is not None:
            return TensorShape([int(d) for d in np.asarray(known).reshape(-1)])
        rank = self._dense_shape.shape[0] if self._dense_shape.shape.rank else None
        return TensorShape(None if rank is None else [None] * rank)

    def get_shape(self):
        return self.shape

    def with_values(self, new_values):
        """The same indices and dense_shape with other values (one per index)."""
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def _elementwise(self, other, fn):
        dense = _ops.broadcast_to(_ops.convert_to_tensor(other, self.dtype), self._dense_shape)
        return self.with_values(fn(self._values, _scatter.gather_nd(dense, self._indices)))

    def __mul__(self, other):
        return self._elementwise(other, lambda v, d: v * d)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._elementwise(other, lambda v, d: v / d)

    # the unary ops TF dispatches to sparse tensors: those that keep a zero zero
    _ZERO_PRESERVING = frozenset(("Abs", "Neg", "Sign", "Square", "Sqrt", "Erf", "Tanh", "Sin", "Tan", "Asin", "Atan",
                                  "Sinh", "Asinh", "Atanh", "Expm1", "Log1p", "Floor", "Ceil", "Round", "Rint",
                                  "Relu", "Relu6", "Elu", "Selu", "Softsign", "Cast"))

    def __jf_elementwise__(self, fn, op, other, reverse):
        if other is not None or op not in self._ZERO_PRESERVING:
            return NotImplemented
        return self.with_values(fn(self._values))

    def __repr__(self):
        return f"SparseTensor(indices={self._indices!s}, values={self._values!s}, dense_shape={self._dense_shape!s})"


def _check_sparse(x):
    if not isinstance(x, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return x


def _strides(dense_shape):
    """Row-major strides of dense_shape (int64), so an index's linear position is
    sum(index * strides)."""
    rev = _array.reverse(dense_shape, [0])
    ones = _ops.ones_like(rev[:1])
    return _array.reverse(_ops.concat([ones, _sort.cumprod(rev[:-1])], 0), [0])


def _linear(sp):
    return _ops.reduce_sum(sp.indices * _ops.expand_dims(_strides(sp.dense_shape), 0), axis=1)


def _unlinear(flat, dense_shape):
    s = _strides(dense_shape)
    return _ops.floormod(_ops.floordiv(_ops.expand_dims(flat, 1), _ops.expand_dims(s, 0)),
                         _ops.expand_dims(dense_shape, 0))


def _in_order(sp):
    """indices sorted row-major (a stable sort of their linear positions)."""
    order = _sort.argsort(_linear(sp), stable=True)
    return SparseTensor(_array.gather(sp.indices, order), _array.gather(sp.values, order), sp.dense_shape)


@export("sparse.reorder")
def reorder(sp_input, name=None):
    """The same sparse tensor with its indices in row-major order."""
    return _in_order(_check_sparse(sp_input))


@export("sparse.from_dense")
def from_dense(tensor, name=None):
    """The nonzero elements of a dense tensor, in row-major order."""
    t = to_tensor(tensor)
    indices = _ops.where(_ops.not_equal(t, _ops.zeros_like(t)))
    return SparseTensor(indices, _scatter.gather_nd(t, indices), _ops.shape(t, out_type=_dt.int64))


def _text(row):
    return "[" + ",".join(str(int(v)) for v in row) + "]"


def _validate(sp):
    """TF's SparseToDense checks: every index in bounds, strictly increasing row-major order."""
    if sp.indices._is_symbolic or sp.dense_shape._is_symbolic:
        shape = _ops.expand_dims(sp.dense_shape, 0)
        inside = _stats.reduce_all(_ops.logical_and(sp.indices >= 0, sp.indices < shape))
        _debug.Assert(inside, ["sparse.to_dense: an index is out of bounds of", sp.dense_shape])
        flat = _linear(sp)
        ordered = _stats.reduce_all(flat[1:] > flat[:-1])
        message = ("sparse.to_dense: indices are out of order or repeated. Many sparse ops require sorted "
                   "indices. Use `tf.sparse.reorder` to create a correctly ordered copy.")
        _debug.Assert(ordered, [message])
        return
    idx, shape = sp.indices.numpy(), sp.dense_shape.numpy()
    for i, row in enumerate(idx):
        if np.any(row < 0) or np.any(row >= shape):
            raise InvalidArgumentError(f"indices[{i}] = {_text(row)} is out of bounds: need 0 <= index < "
                                       f"{_text(shape)}")
        if i and tuple(row) <= tuple(idx[i - 1]):
            what = "is repeated" if tuple(row) == tuple(idx[i - 1]) else (
                "is out of order. Many sparse ops require sorted indices.\n    Use `tf.sparse.reorder` to create a "
                "correctly ordered copy.\n\n")
            raise InvalidArgumentError(f"indices[{i}] = {_text(row)} {what}")


@export("sparse.to_dense")
def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor: values at their indices, default_value (zero) elsewhere."""
    sp = _check_sparse(sp_input)
    if validate_indices:
        _validate(sp)
    default = _ops.zeros([], sp.dtype) if default_value is None else _ops.convert_to_tensor(default_value, sp.dtype)
    return _scatter.tensor_scatter_nd_update(_ops.fill(sp.dense_shape, default), sp.indices, sp.values)


def _dense_sum(sp):
    """The dense tensor with repeated indices summed."""
    n = _ops.reduce_prod(sp.dense_shape)
    flat = _array.unsorted_segment_sum(sp.values, _linear(sp), n)
    return _ops.reshape(flat, sp.dense_shape)


@export("sparse.reduce_sum")
def reduce_sum(sp_input, axis=None, keepdims=False, output_is_sparse=False, name=None):
    """The sum of the sparse tensor's values over `axis` (all axes when None), as a dense tensor."""
    if output_is_sparse:
        return from_dense(reduce_sum(sp_input, axis, keepdims))
    return _ops.reduce_sum(_dense_sum(_check_sparse(sp_input)), axis=axis, keepdims=keepdims)


@export("sparse.add")
def add(a, b, threshold=0):
    """sparse + dense: a dense tensor. sparse + sparse: a sparse tensor of the union of their
    indices (row-major), the values at a shared index summed, entries whose |sum| is below
    threshold dropped."""
    if not isinstance(a, SparseTensor):
        a, b = b, a
    _check_sparse(a)
    if not isinstance(b, SparseTensor):
        return _scatter.tensor_scatter_nd_add(_ops.convert_to_tensor(b, a.dtype), a.indices, a.values)
    both = SparseTensor(_ops.concat([a.indices, b.indices], 0), _ops.concat([a.values, b.values], 0), a.dense_shape)
    keys, slot = _mask.unique(_linear(both), out_idx=_dt.int64)
    sums = _array.unsorted_segment_sum(both.values, slot, _array.size(keys, out_type=_dt.int64))
    order = _sort.argsort(keys)
    keys, sums = _array.gather(keys, order), _array.gather(sums, order)
    keep = _ops.abs(sums) >= _ops.cast(to_tensor(threshold), _ops.abs(sums).dtype)
    keys, sums = _mask.boolean_mask(keys, keep), _mask.boolean_mask(sums, keep)
    return SparseTensor(_unlinear(keys, a.dense_shape), sums, a.dense_shape)


@export("sparse.sparse_dense_matmul", "sparse.matmul")
def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """A rank-2 sparse matrix times a dense one (or a dense one times a sparse one): the rows
    of the dense operand each nonzero selects, scaled and summed into its output row."""
    if not isinstance(sp_a, SparseTensor):  # dense @ sparse = (sparse^T @ dense^T)^T
        dense = to_tensor(sp_a)
        dense = _ops.transpose(_ops.conj(dense) if adjoint_a else dense)
        out = sparse_dense_matmul(_check_sparse(b), dense, adjoint_a=not adjoint_b)
        return _ops.transpose(out)
    b = _ops.convert_to_tensor(b, sp_a.dtype)
    if adjoint_b:
        b = _ops.transpose(_ops.conj(b))
    rows, cols = sp_a.indices[:, 0], sp_a.indices[:, 1]
    values, n_rows = sp_a.values, sp_a.dense_shape[0]
    if adjoint_a:
        rows, cols, values, n_rows = cols, rows, _ops.conj(values), sp_a.dense_shape[1]
    picked = _array.gather(b, cols) * _ops.expand_dims(values, 1)
    return _array.unsorted_segment_sum(picked, rows, n_rows)


@export("sparse.transpose")
def transpose(sp_input, perm=None, name=None):
    """Index columns and dense_shape permuted (reversed by default), indices reordered."""
    sp = _check_sparse(sp_input)
    rank = sp.indices.shape[1]
    if perm is None:
        if rank is None:
            raise ValueError("sparse.transpose needs the rank: pass perm")
        perm = list(range(rank))[::-1]
    perm = _int64(perm)
    out = SparseTensor(_array.gather(sp.indices, perm, axis=1), sp.values, _array.gather(sp.dense_shape, perm))
    return _in_order(out)


@export("sparse.concat")
def concat(axis, sp_inputs, name=None, expand_nonconcat_dims=False, concat_dim=None):
    """The sparse tensors side by side along `axis` (their other dims equal), in row-major order."""
    if expand_nonconcat_dims:
        raise NotImplementedError("jitflow's sparse.concat does not implement expand_nonconcat_dims=True yet")
    sps = [_check_sparse(s) for s in sp_inputs]
    axis = int(concat_dim if concat_dim is not None else axis)
    rank = sps[0].indices.shape[1]
    if axis < 0:
        axis += rank
    indices, offset = [], _ops.zeros([], _dt.int64)
    hot = _array.one_hot(axis, rank, dtype=_dt.int64)
    for s in sps:
        indices.append(s.indices + _ops.expand_dims(hot * offset, 0))
        offset = offset + s.dense_shape[axis]
    shape = sps[0].dense_shape * (1 - hot) + hot * offset
    out = SparseTensor(_ops.concat(indices, 0), _ops.concat([s.values for s in sps], 0), shape)
    return _in_order(out)


@export("sparse.retain")
def retain(sp_input, to_retain):
    """Only the entries whose to_retain flag is true."""
    sp = _check_sparse(sp_input)
    keep = to_tensor(to_retain)
    return SparseTensor(_mask.boolean_mask(sp.indices, keep), _mask.boolean_mask(sp.values, keep), sp.dense_shape)


@export("sparse.slice")
def slice(sp_input, start, size, name=None):
    """The entries inside the box [start, start + size), shifted to start at 0; the box is cut
    to the tensor's bounds."""
    sp = _check_sparse(sp_input)
    start, size = _int64(start), _int64(size)
    end = _ops.minimum(start + size, sp.dense_shape)
    inside = _stats.reduce_all(_ops.logical_and(sp.indices >= start, sp.indices < end), axis=1)
    indices = _mask.boolean_mask(sp.indices, inside) - _ops.expand_dims(start, 0)
    return SparseTensor(indices, _mask.boolean_mask(sp.values, inside), _ops.maximum(end - start, 0))


@export("sparse.reshape")
def reshape(sp_input, shape, name=None):
    """The same elements in another shape of as many elements (one dim may be -1)."""
    sp = _check_sparse(sp_input)
    shape = _int64(shape)
    total = _ops.reduce_prod(sp.dense_shape)
    known = _ops.reduce_prod(_ops.where(shape < 0, _ops.ones_like(shape), shape))
    shape = _ops.where(shape < 0, _ops.floordiv(total, known) * _ops.ones_like(shape), shape)
    return SparseTensor(_unlinear(_linear(sp), shape), sp.values, shape)


@export("sparse.expand_dims")
def expand_dims(sp_input, axis=None, name=None):
    """A new dim of size 1 at `axis` (TF's negative axes count from the end of the result)."""
    sp = _check_sparse(sp_input)
    rank = sp.indices.shape[1]
    axis = int(axis) + rank + 1 if int(axis) < 0 else int(axis)
    n = _ops.shape(sp.indices, out_type=_dt.int64)[0]
    zeros = _ops.zeros(_ops.stack([n, _ops.constant(1, _dt.int64)]), _dt.int64)
    indices = _ops.concat([sp.indices[:, :axis], zeros, sp.indices[:, axis:]], 1)
    shape = _ops.concat([sp.dense_shape[:axis], _ops.constant([1], _dt.int64), sp.dense_shape[axis:]], 0)
    return SparseTensor(indices, sp.values, shape)


@export("sparse.eye")
def eye(num_rows, num_columns=None, dtype=_dt.float32, name=None):
    """The identity: ones at [i, i] for i < min(num_rows, num_columns)."""
    rows = _int64(num_rows)
    cols = rows if num_columns is None else _int64(num_columns)
    diag = _ops.range(_ops.minimum(rows, cols), dtype=_dt.int64)
    indices = _ops.stack([diag, diag], axis=1)
    return SparseTensor(indices, _ops.ones_like(diag, dtype=_dt.as_dtype(dtype)), _ops.stack([rows, cols]))
