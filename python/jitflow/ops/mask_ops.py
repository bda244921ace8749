"""Ops whose output shape depends on their input values: boolean_mask (TF composes it from
reshape + where + gather, and so does jitflow: its gradient is gather's scatter), where with
one argument (op Where: the int64 coordinates of the true elements), unique and
unique_with_counts. They run on their eager kernels, inside functions too; jit_compile=True
names them in its error, as TF's XLA does."""
import collections

import numpy as _np

from .. import _C
from ..core import dtypes as _dt
from ..core.export import export
from . import array_ops
from . import basic_ops as ops
from .basic_ops import where_coordinates
from .dispatch import OP, const_value, run_n, to_tensor

Unique = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


@export("unique")
def unique(x, out_idx=_dt.int32, name=None):
    """(y, idx): the distinct values of the vector x in order of first occurrence, and for each
    element of x the position of its value in y."""
    y, idx = run_n(OP["Unique"], (to_tensor(x),), {"out_idx": _dt.as_dtype(out_idx)}, name)
    return Unique(y, idx)


@export("unique_with_counts")
def unique_with_counts(x, out_idx=_dt.int32, name=None):
    """unique's (y, idx) and how many times each value of y occurs in x."""
    y, idx, count = run_n(OP["UniqueWithCounts"], (to_tensor(x),), {"out_idx": _dt.as_dtype(out_idx)}, name)
    return UniqueWithCounts(y, idx, count)


def _static_shape(t):
    return [None if d is None else int(d) for d in t.shape]


def _true_coordinates(mask):
    return ops.squeeze(where_coordinates(mask), axis=[1])


def _gather_along(tensor, indices, axis):
    return array_ops.gather(tensor, indices, axis=axis)


@export("boolean_mask")
def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The elements (or slices from `axis` on) of tensor where mask, a K-D tensor matching
    tensor's dims [axis, axis + K), is true, flattened into one dim: TF's composition (reshape
    the masked dims into one, gather at the coordinates of the true elements)."""
    del name  # the ops keep their own names, as jitflow's other compositions
    tensor = to_tensor(tensor)
    mask = to_tensor(mask)
    ndims_mask = len(mask.shape)
    if ndims_mask == 0:
        raise ValueError("mask cannot be scalar.")
    axis = 0 if axis is None else axis
    if isinstance(axis, _C.Tensor):
        value = const_value(axis)  # eager, or a traced constant
        if value is None:
            if ndims_mask != 1:
                raise NotImplementedError("jf.boolean_mask: a multi-dimensional mask needs an axis known when "
                                          "tracing (a Python int or a constant)")
            # A 1-D mask along an axis computed in the graph: gather along that axis.
            indices = _true_coordinates(mask)
            return _gather_along(tensor, indices, axis)
        axis = int(value)
    axis = int(axis)
    shape = _static_shape(tensor)
    # TF: tensor.shape[axis:axis + K] must be compatible with mask.shape (Python slicing).
    part, mshape = shape[axis:axis + ndims_mask], _static_shape(mask)
    if len(part) != len(mshape) or any(a is not None and b is not None and a != b for a, b in zip(part, mshape)):
        def fmt(s):
            return "(" + ", ".join("None" if d is None else str(d) for d in s) + ("," if len(s) == 1 else "") + ")"
        raise ValueError(f"Shapes {fmt(part)} and {fmt(mshape)} are incompatible")
    axis = axis % len(shape) if axis < 0 else axis  # only a Python slice of the rank accepts it
    before, after = shape[:axis], shape[axis + ndims_mask:]
    if ndims_mask != 1:
        if None in shape:
            dyn = ops.shape(tensor)
            lead = ops.reduce_prod(dyn[axis:axis + ndims_mask], axis=[0], keepdims=True)
            target = ops.concat([dyn[:axis], lead, dyn[axis + ndims_mask:]], 0)
        else:
            target = before + [int(_np.prod(part, dtype=_np.int64))] + after
        tensor = ops.reshape(tensor, target)
        mask = ops.reshape(mask, [-1])
    return _gather_along(tensor, _true_coordinates(mask), axis)
