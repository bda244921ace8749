"""jf.nn's convolutions and pooling with TF 2's signatures: conv2d, conv1d and conv2d_transpose
on the Conv2D / Conv2DBackpropInput records, depthwise_conv2d and separable_conv2d on
DepthwiseConv2dNative, max_pool2d / avg_pool2d (and the 1-D and
rank-dispatching forms) on MaxPool / AvgPool. As TF, the 1-D forms are the 2-D ops on an
expanded dim, and an int stride or window size stands for every spatial dim. space_to_depth /
depth_to_space are reshapes around a transpose."""
import numbers

from .._C import Tensor
from ..core.errors import InvalidArgumentError, _at_caller
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from . import scatter_ops as _scatter
from .dispatch import OP, run, shape_tensor, to_tensor


def _sequence(value, n, channel_index, name):
    """TF's _get_sequence: an int or a list of 1, n or n + 2 ints as the n + 2 entries of a
    stride / window / dilation attr, 1 on the batch and channel dims."""
    if value is None:
        value = 1
    if isinstance(value, numbers.Integral):
        value = [int(value)]
    value = [int(v) for v in value]
    if len(value) == n + 2:
        return value
    if len(value) == 1:
        value = value * n
    elif len(value) != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2}. Received: {name}={value} of length "
                         f"{len(value)}")
    full = [1] * (n + 2)
    first = 2 if channel_index == 1 else 1
    full[first:first + n] = value
    return full


def _padding_attrs(padding, n, data_format, explicit_ok=True):
    """padding as a string attr, or a list of [before, after] pairs (one per dim, batch and
    channel included) as TF's EXPLICIT padding with its explicit_paddings."""
    if isinstance(padding, str):
        p = padding.upper()
        if p not in ("SAME", "VALID") and not (p == "EXPLICIT" and explicit_ok):
            raise ValueError(f"`padding` must be one of 'SAME', 'VALID' or a list of pairs. Received: padding={padding}")
        return {"padding": p}
    if not explicit_ok:
        raise TypeError(f"Expected string for argument 'padding' not {padding!r}.")
    pairs = [list(p) if isinstance(p, (list, tuple)) else p for p in padding]
    if len(pairs) != n + 2 or any(not isinstance(p, list) or len(p) != 2 for p in pairs):
        raise ValueError(f"When padding is a list, it must have {n + 2} elements, each a list of 2 ints "
                         f"(data_format {data_format}). Received: padding={padding}")
    return {"padding": "EXPLICIT", "explicit_paddings": [int(v) for p in pairs for v in p]}


def _channel_index(data_format):
    return 1 if data_format is not None and data_format.startswith("NC") else -1


def _conv_attrs(strides, padding, data_format, dilations):
    ci = _channel_index(data_format)
    attrs = {"strides": _sequence(strides, 2, ci, "strides"),
             "dilations": _sequence(dilations, 2, ci, "dilations"),
             "data_format": "NCHW" if ci == 1 else "NHWC"}
    attrs.update(_padding_attrs(padding, 2, data_format))
    return attrs


@export("nn.conv2d")
def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):
    """2-D convolution of a [batch, height, width, channels] input (NCHW with data_format)
    with an HWIO filter [filter_height, filter_width, in_channels, out_channels]."""
    if data_format not in ("NHWC", "NCHW", None):
        raise ValueError(f"`data_format` must be 'NHWC' or 'NCHW'. Received: data_format={data_format}")
    x = to_tensor(input)
    w = _ops.convert_to_tensor(filters, x.dtype) if not isinstance(filters, Tensor) else filters
    return run(OP["Conv2D"], (x, w), _conv_attrs(strides, padding, data_format or "NHWC", dilations), name)


@export("nn.conv2d_transpose")
def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC", dilations=None,
                     name=None):
    """The gradient of conv2d with respect to its input (TF's Conv2DBackpropInput): an input of
    conv2d's output shape becomes a tensor of `output_shape`."""
    if data_format not in ("NHWC", "NCHW", None):
        raise ValueError(f"`data_format` must be 'NHWC' or 'NCHW'. Received: data_format={data_format}")
    x = to_tensor(input)
    w = _ops.convert_to_tensor(filters, x.dtype) if not isinstance(filters, Tensor) else filters
    sizes = output_shape if isinstance(output_shape, Tensor) else shape_tensor(list(output_shape))
    attrs = _conv_attrs(strides, padding, data_format or "NHWC", dilations)
    return run(OP["Conv2DBackpropInput"], (sizes, w, x), attrs, name)


def _depthwise_attrs(strides, padding, data_format, dilations):
    fmt = data_format or "NHWC"
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"`data_format` must be 'NHWC' or 'NCHW'. Received: data_format={data_format}")
    if isinstance(strides, numbers.Integral):
        raise TypeError(f"Expected list for 'strides' argument to 'depthwise_conv2d_native' Op, not {strides}.")
    ci = _channel_index(fmt)
    attrs = {"strides": _sequence(strides, 2, ci, "strides"), "dilations": _sequence(dilations, 2, ci, "dilations"),
             "data_format": fmt}
    attrs.update(_padding_attrs(padding, 2, fmt))
    return attrs


@export("nn.depthwise_conv2d")
def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None, name=None):
    """Each input channel convolved with its own filters: filter [h, w, channels, multiplier]
    gives channels * multiplier outputs, channel c's at c * multiplier + m (TF's
    DepthwiseConv2dNative); `dilations` is TF 2's rate [rate_h, rate_w]."""
    x = to_tensor(input)
    w = _ops.convert_to_tensor(filter, x.dtype) if not isinstance(filter, Tensor) else filter
    return run(OP["DepthwiseConv2dNative"], (x, w), _depthwise_attrs(strides, padding, data_format, dilations), name)


@export("nn.separable_conv2d")
def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, data_format=None, dilations=None,
                     name=None):
    """depthwise_conv2d, then a 1x1 conv2d mixing its channels (pointwise_filter
    [1, 1, channels * multiplier, out_channels])."""
    p = _ops.convert_to_tensor(pointwise_filter) if not isinstance(pointwise_filter, Tensor) else pointwise_filter
    for d in (0, 1):
        if p.shape[d] is not None and p.shape[d] != 1:
            raise ValueError(f"Dimensions {p.shape[d]} and 1 are not compatible")
    h = depthwise_conv2d(input, depthwise_filter, strides, padding, data_format, dilations)
    return conv2d(h, p, 1, "VALID", data_format or "NHWC", name=name)


@export("nn.depthwise_conv2d_backprop_input")
def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop, strides, padding, data_format="NHWC",
                                    dilations=(1, 1, 1, 1), name=None):
    sizes = input_sizes if isinstance(input_sizes, Tensor) else shape_tensor(list(input_sizes))
    return run(OP["DepthwiseConv2dNativeBackpropInput"], (sizes, to_tensor(filter), to_tensor(out_backprop)),
               _depthwise_attrs(strides, padding, data_format, dilations), name)


@export("nn.depthwise_conv2d_backprop_filter")
def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding, data_format="NHWC",
                                     dilations=(1, 1, 1, 1), name=None):
    sizes = filter_sizes if isinstance(filter_sizes, Tensor) else shape_tensor(list(filter_sizes))
    return run(OP["DepthwiseConv2dNativeBackpropFilter"], (to_tensor(input), sizes, to_tensor(out_backprop)),
               _depthwise_attrs(strides, padding, data_format, dilations), name)


@export("nn.conv1d")
def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None):
    """1-D convolution of a [batch, width, channels] input (NCW with data_format) with a
    [filter_width, in_channels, out_channels] filter: conv2d on an added height of 1, as TF."""
    if data_format not in ("NWC", "NCW", None):
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")
    first = data_format == "NCW"
    x = _ops.expand_dims(to_tensor(input), 2 if first else 1)
    w = _ops.expand_dims(to_tensor(filters), 0)
    ci = 1 if first else -1
    s = _sequence(stride, 1, ci, "stride")
    d = _sequence(dilations, 1, ci, "dilations")
    spatial = 2 if first else 1
    strides = s[:spatial] + [1] + s[spatial:]
    dil = d[:spatial] + [1] + d[spatial:]
    if not isinstance(padding, str):
        padding = list(padding)[:spatial] + [[0, 0]] + list(padding)[spatial:]
    y = conv2d(x, w, strides, padding, "NCHW" if first else "NHWC", dil)
    return _ops.squeeze(y, [2 if first else 1], name=name)


@export("nn.conv1d_transpose")
def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC", dilations=None,
                     name=None):
    """conv1d's gradient with respect to its input: conv2d_transpose on an added dim, as TF."""
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")
    first = data_format == "NCW"
    spatial = 2 if first else 1
    ci = 1 if first else -1
    s = _sequence(strides, 1, ci, "strides")
    d = _sequence(dilations, 1, ci, "dilations")
    x = _ops.expand_dims(to_tensor(input), spatial)
    w = _ops.expand_dims(to_tensor(filters), 0)
    shape = output_shape if isinstance(output_shape, Tensor) else shape_tensor(list(output_shape))
    shape = _ops.concat([shape[:spatial], _ops.constant([1], shape.dtype), shape[spatial:]], 0)
    y = conv2d_transpose(x, w, shape, s[:spatial] + [1] + s[spatial:], padding, "NCHW" if first else "NHWC",
                         d[:spatial] + [1] + d[spatial:])
    return _ops.squeeze(y, [spatial], name=name)


@export("nn.convolution")
def convolution(input, filters, strides=None, padding="VALID", data_format=None, dilations=None, name=None):
    """conv1d, conv2d or conv3d by the input's rank (TF's convolution_v2); strides and
    dilations name the spatial dims only."""
    x = to_tensor(input)
    n = len(x.shape) - 2
    if n not in (1, 2, 3):
        raise ValueError(f"`input.shape.rank` must be 3, 4 or 5. Received: input.shape={tuple(x.shape)}")
    if data_format is None:
        data_format = ("NWC", "NHWC", "NDHWC")[n - 1]
    first = data_format.startswith("NC")

    def full(v, what):
        v = [1] * n if v is None else ([int(v)] * n if isinstance(v, numbers.Integral) else [int(i) for i in v])
        if len(v) != n:
            raise ValueError(f"{what} must have {n} elements. Received: {what}={v}")
        return [1, 1, *v] if first else [1, *v, 1]
    if n == 1:
        s, d = full(strides, "strides"), full(dilations, "dilations")
        return conv1d(x, filters, s, padding, data_format, d, name)
    if n == 2:
        return conv2d(x, filters, full(strides, "strides"), padding, data_format, full(dilations, "dilations"), name)
    return conv3d(x, filters, full(strides, "strides"), padding, data_format, full(dilations, "dilations"), name)


def _pool(op, input, ksize, strides, padding, data_format, name, explicit_ok):
    if data_format not in ("NHWC", "NCHW", None):
        raise ValueError(f"`data_format` must be 'NHWC' or 'NCHW'. Received: data_format={data_format}")
    ci = _channel_index(data_format)
    attrs = {"ksize": _sequence(ksize, 2, ci, "ksize"), "strides": _sequence(strides, 2, ci, "strides"),
             "data_format": "NCHW" if ci == 1 else "NHWC"}
    attrs.update(_padding_attrs(padding, 2, data_format, explicit_ok))
    return run(OP[op], (to_tensor(input),), attrs, name)


@export("nn.max_pool2d")
def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """The largest value of each window (padding takes no part in it)."""
    return _pool("MaxPool", input, ksize, strides, padding, data_format, name, True)


@export("nn.avg_pool2d")
def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """The mean of each window over the elements inside the input (SAME padding adds none)."""
    return _pool("AvgPool", input, ksize, strides, padding, data_format, name, False)


def _check_3d_format(data_format):
    if data_format not in ("NDHWC", "NCDHW"):
        raise ValueError(f"`data_format` must be 'NDHWC' or 'NCDHW'. Received: data_format={data_format}")
    return 1 if data_format == "NCDHW" else -1


@export("nn.conv3d")
def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None, name=None):
    """3-D convolution of a [batch, depth, height, width, channels] input (NCDHW with
    data_format) with a [d, h, w, in_channels, out_channels] filter (TF's Conv3D); strides and
    dilations are lists of 5, as TF's."""
    ci = _check_3d_format(data_format)
    x = to_tensor(input)
    w = _ops.convert_to_tensor(filters, x.dtype) if not isinstance(filters, Tensor) else filters
    attrs = {"strides": _sequence(strides, 3, ci, "strides"), "dilations": _sequence(dilations, 3, ci, "dilations"),
             "data_format": data_format}
    attrs.update(_padding_attrs(padding, 3, data_format, explicit_ok=False))
    return run(OP["Conv3D"], (x, w), attrs, name)


@export("nn.conv3d_transpose")
def conv3d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NDHWC", dilations=None,
                     name=None):
    """conv3d's gradient with respect to its input (TF's Conv3DBackpropInputV2)."""
    ci = _check_3d_format(data_format)
    x = to_tensor(input)
    w = _ops.convert_to_tensor(filters, x.dtype) if not isinstance(filters, Tensor) else filters
    sizes = output_shape if isinstance(output_shape, Tensor) else shape_tensor(list(output_shape))
    attrs = {"strides": _sequence(strides, 3, ci, "strides"), "dilations": _sequence(dilations, 3, ci, "dilations"),
             "data_format": data_format}
    attrs.update(_padding_attrs(padding, 3, data_format, explicit_ok=False))
    return run(OP["Conv3DBackpropInputV2"], (sizes, w, x), attrs, name)


def _pool3d(op, input, ksize, strides, padding, data_format, name):
    ci = _check_3d_format(data_format)
    attrs = {"ksize": _sequence(ksize, 3, ci, "ksize"), "strides": _sequence(strides, 3, ci, "strides"),
             "data_format": data_format}
    attrs.update(_padding_attrs(padding, 3, data_format, explicit_ok=False))
    return run(OP[op], (to_tensor(input),), attrs, name)


@export("nn.max_pool3d")
def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name)


@export("nn.avg_pool3d")
def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name)


def _pool1d(fn, input, ksize, strides, padding, data_format, name):
    if data_format not in ("NWC", "NCW", None):
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")
    first = data_format == "NCW"
    spatial = 2 if first else 1
    ci = 1 if first else -1
    k = _sequence(ksize, 1, ci, "ksize")
    s = _sequence(strides, 1, ci, "strides")
    if not isinstance(padding, str):
        padding = list(padding)[:spatial] + [[0, 0]] + list(padding)[spatial:]
    x = _ops.expand_dims(to_tensor(input), spatial)
    y = fn(x, k[:spatial] + [1] + k[spatial:], s[:spatial] + [1] + s[spatial:], padding,
           "NCHW" if first else "NHWC")
    return _ops.squeeze(y, [spatial], name=name)


@export("nn.max_pool1d")
def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    return _pool1d(max_pool2d, input, ksize, strides, padding, data_format, name)


@export("nn.avg_pool1d")
def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    return _pool1d(avg_pool2d, input, ksize, strides, padding, data_format, name)


def _pool_nd(fns, input, ksize, strides, padding, data_format, name):
    x = to_tensor(input)
    n = len(x.shape) - 2
    if n not in (1, 2, 3):
        raise ValueError(f"`input.shape.rank` must be 3, 4 or 5. Received: input.shape={tuple(x.shape)} of rank "
                         f"{n + 2}")
    if data_format is None:
        data_format = ("NWC", "NHWC", "NDHWC")[n - 1]
    return fns[n - 1](x, ksize, strides, padding, data_format, name)


@export("nn.max_pool")
def max_pool(input, ksize, strides, padding, data_format=None, name=None):
    """max_pool1d, max_pool2d or max_pool3d by the input's rank (TF's max_pool_v2)."""
    return _pool_nd((max_pool1d, max_pool2d, max_pool3d), input, ksize, strides, padding, data_format, name)


@export("nn.avg_pool")
def avg_pool(input, ksize, strides, padding, data_format=None, name=None):
    """avg_pool1d, avg_pool2d or avg_pool3d by the input's rank (TF's avg_pool_v2)."""
    return _pool_nd((avg_pool1d, avg_pool2d, avg_pool3d), input, ksize, strides, padding, data_format, name)


def _pool_ints(value, n, what):
    """nn.pool's strides / dilation_rate: n positive ints, 1s when None (TF's checks)."""
    if value is None:
        return [1] * n
    value = [int(v) for v in ([value] if isinstance(value, numbers.Integral) else value)]
    if len(value) != n:
        raise ValueError(f"`len({what})` should be {n}. Received: {what}={value} of length {len(value)}")
    if any(v < 1 for v in value):
        raise ValueError(f"all values of `{what}` must be positive. Received: {what}={value}")
    return value


def _shape_arg(dims):
    """A list of dims (ints, or scalar tensors where the trace does not know them) as a shape
    argument: the list itself when all are ints (a constant, as the pad's gradient needs),
    else their int32 vector."""
    return dims if all(isinstance(d, int) for d in dims) else _ops.stack(dims)


def _dilated_pool(fn, x, window, rates, data_format):
    """A VALID, stride-1 pool whose window taps are `rates` apart, as TF's with_space_to_batch:
    each spatial dim padded at its end to a multiple of its rate and split into rate phases
    (moved into the batch), each phase pooled with the plain window, the phases interleaved
    back and the padding's outputs cropped. Output size per dim: in - (window - 1) * rate."""
    n = len(window)
    first = data_format is not None and data_format.startswith("NC")
    axes = list(range(2, n + 2)) if first else list(range(1, n + 1))
    rate = dict(zip(axes, rates))
    dims = _dims(x)
    rank = len(dims)
    pads = [[0, (-dims[a]) % rate[a] if a in rate else 0] for a in range(rank)]
    if any(isinstance(e, Tensor) or e for _, e in pads):
        x = _array.pad(x, pads if all(isinstance(e, int) for _, e in pads) else _ops.stack([_ops.stack(p) for p in pads]))
    padded = _dims(x)
    # Each spatial dim d split into [d / rate, rate]; the rate (phase) dims moved before the batch.
    split, phase, rest = [], [], []
    for i, d in enumerate(padded):
        rest.append(len(split))
        if i in rate:
            split += [d // rate[i], rate[i]]
            phase.append(len(split) - 1)
        else:
            split.append(d)
    y = _ops.transpose(_ops.reshape(x, _shape_arg(split)), phase + rest)
    y = _ops.reshape(y, _shape_arg([-1] + [padded[i] // rate[i] if i in rate else padded[i] for i in range(1, rank)]))
    y = fn(y, window, 1, "VALID", data_format)
    # Back: [rates..., batch, ...] -> [batch, ..., out / rate, rate, ...] -> cropped.
    o = _dims(y)
    y = _ops.reshape(y, _shape_arg(list(rates) + [padded[0]] + o[1:]))
    order = []
    for i in range(rank):
        order.append(n + i)
        if i in rate:
            order.append(axes.index(i))
    y = _ops.transpose(y, order)
    y = _ops.reshape(y, _shape_arg([padded[0]] + [o[i] * rate[i] if i in rate else o[i] for i in range(1, rank)]))
    size = [-1] * rank
    for a, w in zip(axes, window):
        size[a] = dims[a] - (w - 1) * rate[a]
    return _scatter.slice(y, [0] * rank, _shape_arg(size))


@export("nn.pool")
def pool(input, window_shape, pooling_type, strides=None, padding="VALID", data_format=None, dilations=None,
         name=None):
    """TF's nn.pool: "MAX" or "AVG" pooling with one window size per spatial dim (1 to 3).
    `dilations` spreads the window's taps apart (VALID padding and unit strides only, as TF)."""
    window_shape = [int(v) for v in window_shape]
    n = len(window_shape)
    if n < 1 or n > 3:
        raise ValueError(f"`len(window_shape)` must be 1, 2, or 3. Received: window_shape={window_shape} of "
                         f"length {n}")
    x = to_tensor(input)
    if len(x.shape) != n + 2:
        raise ValueError(f"Shape {tuple(x.shape)} must have rank {n + 2}")
    dilations = _pool_ints(dilations, n, "dilation_rate")
    strides = _pool_ints(strides, n, "strides")
    if any(s > 1 for s in strides) and any(d > 1 for d in dilations):
        raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                         f"strides={strides} and dilation_rate={dilations}")
    if padding == "SAME" and any(d > 1 for d in dilations):
        raise ValueError(f"pooling with 'SAME' padding is not implemented for `dilation_rate` > 1. Received: "
                         f"padding={padding} and dilation_rate={dilations}")
    if any(s > w for s, w in zip(strides, window_shape)):
        raise ValueError(f"`strides` > `window_shape` not supported due to inconsistency between CPU and GPU "
                         f"implementations. Received: strides={strides} and window_shape={window_shape}")
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"{n}-D {pooling_type} pooling is not supported.")
    fn = max_pool if pooling_type == "MAX" else avg_pool
    if all(d == 1 for d in dilations):
        return fn(x, window_shape, strides, padding, data_format, name)
    return _ops.identity(_dilated_pool(fn, x, window_shape, dilations, data_format), name=name)


def _block_attrs(x, block_size, data_format, op):
    b = int(block_size)
    if b < 2:
        raise InvalidArgumentError(_at_caller(f"{op}: Value for attr 'block_size' of {b} must be at least minimum 2"))
    if len(x.shape) != 4:
        raise InvalidArgumentError(_at_caller(f"{op}: Input rank should be 4 instead of {len(x.shape)}"))
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"`data_format` must be 'NHWC' or 'NCHW'. Received: data_format={data_format}")
    return b, data_format == "NCHW"


def _dims(x):
    """x's dims: ints where the trace knows them, else scalar int32 tensors read at run time."""
    s = None
    out = []
    for i, d in enumerate(x.shape):
        if d is None:
            s = _ops.shape(x) if s is None else s
            out.append(s[i])
        else:
            out.append(int(d))
    return out


@export("nn.space_to_depth")
def space_to_depth(input, block_size, data_format="NHWC", name=None):
    """Each block_size x block_size patch of the image becomes one pixel of block_size**2 times
    the channels (row of the patch, then column, then channel), as TF's SpaceToDepth: a reshape,
    a transpose and a reshape, so it compiles as index maps and differentiates through them."""
    x = to_tensor(input)
    b, first = _block_attrs(x, block_size, data_format, "SpaceToDepth")
    n, d1, d2, d3 = _dims(x)
    c, h, w = (d1, d2, d3) if first else (d3, d1, d2)
    if isinstance(h, int) and isinstance(w, int) and (h % b or w % b):
        raise InvalidArgumentError(_at_caller(f"SpaceToDepth: Image width {w} and height {h} should be divisible by "
                                              f"block_size: {b}"))
    if first:
        y = _ops.reshape(x, _ops.stack([n, c, h // b, b, w // b, b]))
        y = _ops.transpose(y, [0, 3, 5, 1, 2, 4])
        return _ops.reshape(y, _ops.stack([n, c * b * b, h // b, w // b]), name=name)
    y = _ops.reshape(x, _ops.stack([n, h // b, b, w // b, b, c]))
    y = _ops.transpose(y, [0, 1, 3, 2, 4, 5])
    return _ops.reshape(y, _ops.stack([n, h // b, w // b, b * b * c]), name=name)


@export("nn.depth_to_space")
def depth_to_space(input, block_size, data_format="NHWC", name=None):
    """space_to_depth's inverse (TF's DepthToSpace)."""
    x = to_tensor(input)
    b, first = _block_attrs(x, block_size, data_format, "DepthToSpace")
    n, d1, d2, d3 = _dims(x)
    c, h, w = (d1, d2, d3) if first else (d3, d1, d2)
    if isinstance(c, int) and c % (b * b):
        raise InvalidArgumentError(_at_caller(f"DepthToSpace: Input depth dimension {c} should be divisible by: "
                                              f"{b * b}"))
    if first:
        y = _ops.reshape(x, _ops.stack([n, b, b, c // (b * b), h, w]))
        y = _ops.transpose(y, [0, 3, 4, 1, 5, 2])
        return _ops.reshape(y, _ops.stack([n, c // (b * b), h * b, w * b]), name=name)
    y = _ops.reshape(x, _ops.stack([n, h, w, b, b, c // (b * b)]))
    y = _ops.transpose(y, [0, 1, 3, 2, 4, 5])
    return _ops.reshape(y, _ops.stack([n, h * b, w * b, c // (b * b)]), name=name)


__all__ = ["avg_pool", "avg_pool1d", "avg_pool2d", "avg_pool3d", "conv1d", "conv1d_transpose", "conv2d",
           "conv2d_transpose", "conv3d", "conv3d_transpose", "convolution", "depth_to_space", "depthwise_conv2d",
           "depthwise_conv2d_backprop_filter", "depthwise_conv2d_backprop_input", "max_pool", "max_pool1d",
           "max_pool2d", "max_pool3d", "pool", "separable_conv2d", "space_to_depth"]
