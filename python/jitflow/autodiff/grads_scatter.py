"""Gradients of GatherNd, the nd scatters and Slice (TF's array_grad.py rules, dense):
gather_nd's is a ScatterNd of the gradient, a scatter's a gather_nd of it, Slice's a pad."""
from ..core import dtypes
from ..ops import basic_ops as ops
from ..ops import scatter_ops
from ..ops.array_ops import pad
from ..ops.dispatch import const_value
from .grads_math import _float_only, _grad
from .registry import register_gradient
from .shapes import static_shape


def _shape(t, dtype):
    """t's shape as Python ints when static, else its shape tensor of the index dtype."""
    s = static_shape(t)
    return list(s) if s is not None else ops.shape(t, out_type=dtype)


@_grad("GatherNd")
def _gather_nd_grad(op, g):
    params, indices = op.inputs
    return [scatter_ops.scatter_nd(indices, g, _shape(params, indices.dtype)), None]


@_grad("ScatterNd")
def _scatter_nd_grad(op, g):
    return [None, scatter_ops.gather_nd(g, op.inputs[0]), None]


@_grad("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, g):
    indices, updates = op.inputs[1], op.inputs[2]
    tensor_grad = scatter_ops.tensor_scatter_nd_update(ops.identity(g), indices, ops.zeros_like(updates))
    return [tensor_grad, None, scatter_ops.gather_nd(g, indices)]


@_grad("TensorScatterAdd")
def _tensor_scatter_add_grad(op, g):
    return [ops.identity(g), None, scatter_ops.gather_nd(g, op.inputs[1])]


@_grad("TensorScatterSub")
def _tensor_scatter_sub_grad(op, g):
    return [ops.identity(g), None, ops.negative(scatter_ops.gather_nd(g, op.inputs[1]))]


def _tensor_scatter_min_or_max_grad(op, g):
    """TF's rule: the gradient goes to every input equal to the output, split evenly among
    them (the tensor's element and each update that reached it)."""
    x, indices, y = op.inputs
    out = op.outputs[0]
    x_ind = ops.cast(ops.equal(x, out), g.dtype)
    y_ind = ops.cast(ops.equal(y, scatter_ops.gather_nd(out, indices)), g.dtype)
    ys_ind = scatter_ops.scatter_nd(indices, y_ind, _shape(x, indices.dtype))
    ind = x_ind + ys_ind  # every element is >= 1
    return [g * x_ind / ind, None, scatter_ops.gather_nd(g / ind, indices) * y_ind]


register_gradient("TensorScatterMax")(_float_only(_tensor_scatter_min_or_max_grad))
register_gradient("TensorScatterMin")(_float_only(_tensor_scatter_min_or_max_grad))


@_grad("Slice")
def _slice_grad(op, g):
    """g padded back to the input's shape: begin before, the rest after."""
    x, begin = op.inputs[0], op.inputs[1]
    xs, ys, b = static_shape(x), static_shape(op.outputs[0]), const_value(begin)
    if xs is not None and ys is not None and b is not None:
        b = [int(v) for v in b]
        return [pad(g, [[v, n - m - v] for v, n, m in zip(b, xs, ys)]), None, None]
    b = ops.cast(begin, dtypes.int32)
    after = ops.shape(x) - ops.shape(op.outputs[0]) - b
    return [pad(g, ops.stack([b, after], axis=1)), None, None]
