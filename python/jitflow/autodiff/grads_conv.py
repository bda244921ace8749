"""Gradients of the convolution, bias and pooling ops, as TF's nn_grad: a convolution's input
and filter gradients are its family's BackpropInput / BackpropFilter ops (Conv2D's and
DepthwiseConv2dNative's; their own gradients are convolutions again), a bias add's is BiasAddGrad, a max pool's goes through the
window's argmax (MaxPoolGrad, whose own gradient reads its gradient there: MaxPoolGradGrad, and
back again) and an average pool's is spread by AvgPoolGrad."""
from ..ops import basic_ops as ops
from ..ops.dispatch import OP, run
from .grads_math import _grad


def _attrs(op, names):
    """The forward op's attrs named here that it has (explicit_paddings only when used)."""
    out = {}
    for n in names:
        v = op.get_attr(n, None)
        if v is not None and not (n == "explicit_paddings" and op.get_attr("padding", "") != "EXPLICIT"):
            out[n] = v
    return out


_CONV = ("strides", "padding", "explicit_paddings", "dilations", "data_format")
_POOL = ("ksize", "strides", "padding", "explicit_paddings", "data_format")


def _names(op):
    """The forward, input-gradient and filter-gradient op types of op's family."""
    if op.type.startswith("Depthwise"):
        return ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter")
    if op.type.startswith("Conv3D"):
        return ("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2")
    return ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")


def _input_grad(op, sizes, w, g):
    return run(OP[_names(op)[1]], (sizes, w, g), _attrs(op, _CONV), None)


def _filter_grad(op, x, sizes, g):
    return run(OP[_names(op)[2]], (x, sizes, g), _attrs(op, _CONV), None)


def _conv(op, x, w):
    return run(OP[_names(op)[0]], (x, w), _attrs(op, _CONV), None)


@_grad("Conv2D")
@_grad("DepthwiseConv2dNative")
@_grad("Conv3D")
def _conv2d_grad(op, g):
    x, w = op.inputs
    return [_input_grad(op, ops.shape(x), w, g), _filter_grad(op, x, ops.shape(w), g)]


@_grad("Conv2DBackpropInput")
@_grad("DepthwiseConv2dNativeBackpropInput")
@_grad("Conv3DBackpropInputV2")
def _conv2d_backprop_input_grad(op, g):
    # Linear in the filter and in out_backprop: d/dfilter is a filter gradient of g against
    # out_backprop, d/dout_backprop the forward convolution of g.
    _, w, dy = op.inputs
    return [None, _filter_grad(op, g, ops.shape(w), dy), _conv(op, g, w)]


@_grad("Conv2DBackpropFilter")
@_grad("DepthwiseConv2dNativeBackpropFilter")
@_grad("Conv3DBackpropFilterV2")
def _conv2d_backprop_filter_grad(op, g):
    x, _, dy = op.inputs
    return [_input_grad(op, ops.shape(x), g, dy), None, _conv(op, x, g)]


@_grad("BiasAdd")
def _bias_add_grad(op, g):
    fmt = {"data_format": op.get_attr("data_format", "NHWC")}
    return [g, run(OP["BiasAddGrad"], (g,), fmt, None)]


@_grad("BiasAddGrad")
def _bias_add_grad_grad(op, g):
    # The bias gradient sums over every dim but the channel: its gradient broadcasts back.
    x = op.inputs[0]
    rank = len(x.shape)
    if op.get_attr("data_format", "NHWC") == "NCHW" and rank >= 3:
        g = ops.reshape(g, [-1] + [1] * (rank - 2))
    return [ops.broadcast_to(g, ops.shape(x))]


@_grad("MaxPool")
@_grad("MaxPool3D")
def _max_pool_grad(op, g):
    x, = op.inputs
    return [run(OP[op.type + "Grad"], (x, op.outputs[0], g), _attrs(op, _POOL), None)]


@_grad("MaxPoolGrad")
@_grad("MaxPool3DGrad")
def _max_pool_grad_grad(op, g):
    # Linear in its gradient input and piecewise constant in the others (the argmax only moves
    # where the input ties): zeros for those, as TF's.
    x, y, _ = op.inputs
    return [ops.zeros_like(x), ops.zeros_like(y), run(OP[op.type + "Grad"], (x, y, g), _attrs(op, _POOL), None)]


@_grad("MaxPoolGradGrad")
@_grad("MaxPool3DGradGrad")
def _max_pool_grad_grad_grad(op, g):
    x, y, _ = op.inputs
    return [ops.zeros_like(x), ops.zeros_like(y), run(OP[op.type[:-len("Grad")]], (x, y, g), _attrs(op, _POOL),
                                                      None)]


@_grad("AvgPool")
@_grad("AvgPool3D")
def _avg_pool_grad(op, g):
    x, = op.inputs
    return [run(OP[op.type + "Grad"], (ops.shape(x), g), _attrs(op, _POOL), None)]


@_grad("AvgPoolGrad")
@_grad("AvgPool3DGrad")
def _avg_pool_grad_grad(op, g):
    return [None, run(OP[op.type[:-len("Grad")]], (g,), _attrs(op, _POOL), None)]
