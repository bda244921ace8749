"""Keras 3's convolution and pooling layers in 1, 2 and 3 spatial dims: Conv, ConvTranspose,
DepthwiseConv, SeparableConv, MaxPooling and AveragePooling, with Keras's arguments, kernel
layouts ([*kernel_size, in / groups, filters]; transposed [*kernel_size, filters, in]) and
data_format, on jf.nn's convolutions (oneDNN for float32) and bias_add."""
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops import conv_ops as _conv
from .. import activations, constraints, regularizers
from ..backend_config import image_data_format
from .core import _serialize_initializer, seeded
from .layer import Layer

# TF's data_format strings by spatial rank: channels_last, channels_first.
_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _tuple(value, n, name):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received {name}={value}")
    return value


def _padding(padding, allow_causal=False):
    p = str(padding).lower()
    if p not in ("valid", "same") and not (allow_causal and p == "causal"):
        allowed = "'valid', 'same' or 'causal'" if allow_causal else "either 'valid' or 'same'"
        raise ValueError(f"The `padding` argument must be a string, {allowed}. Received: padding={padding}")
    return p


def _data_format(data_format):
    data_format = data_format or image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: data_format={data_format}")
    return data_format


class _ConvBase(Layer):
    """What every convolution layer shares: rank, strides, padding, data_format, dilation, the
    activation and the bias; subclasses make the kernels and the convolution."""

    rank = 2

    def __init__(self, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                 bias_initializer, bias_regularizer, activity_regularizer, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        n = self.rank
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.strides = _tuple(strides, n, "strides")
        self.padding = _padding(padding, allow_causal=n == 1 and self._causal_ok)
        self.data_format = _data_format(data_format)
        self.dilation_rate = _tuple(dilation_rate, n, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.bias_initializer = seeded(bias_initializer, None)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.bias_constraint = constraints.get(bias_constraint)

    _causal_ok = True

    @property
    def _tf_format(self):
        return _FORMATS[self.rank][self.data_format == "channels_first"]

    def _channels(self, input_shape):
        channels = input_shape[-1] if self.data_format == "channels_last" else input_shape[1]
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs should be defined. Found None. Full input shape "
                             f"received: {tuple(input_shape)}")
        return int(channels)

    def _add_bias(self, size):
        self.bias = self.add_weight(shape=(size,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None

    def _spatial_axes(self):
        return list(range(1, 1 + self.rank)) if self.data_format == "channels_last" else list(range(2, 2 + self.rank))

    def _causal_pad(self, x):
        """Left-pads the time axis so a 'valid' convolution sees no future step."""
        pad = [[0, 0]] * 3
        pad[self._spatial_axes()[0]] = [self.dilation_rate[0] * (self.kernel_size[0] - 1), 0]
        return _array.pad(x, pad)

    def _finish(self, y):
        if self.use_bias:
            y = _ops.bias_add(y, self.bias, data_format=self._tf_format)
        return self.activation(y)

    def _tf_padding(self):
        return "VALID" if self.padding == "causal" else self.padding.upper()

    def get_config(self):
        config = super().get_config()
        config.update({"kernel_size": self.kernel_size, "strides": self.strides, "padding": self.padding,
                       "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                       "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                       "bias_initializer": _serialize_initializer(self.bias_initializer),
                       "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                       "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                       "bias_constraint": constraints.serialize(self.bias_constraint)})
        return config


class _Conv(_ConvBase):
    """activation(conv(x, kernel) + bias), kernel [*kernel_size, in / groups, filters]."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1, groups=1,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, seed=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         bias_initializer, bias_regularizer, activity_regularizer, bias_constraint, **kwargs)
        groups = int(groups)
        if groups <= 0:
            raise ValueError(f"The number of groups must be a positive integer. Received: groups={groups}.")
        if int(filters) % groups != 0:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. Received: "
                             f"groups={groups}, filters={filters}.")
        self.filters = int(filters)
        self.groups = groups
        self.kernel_initializer = seeded(kernel_initializer, seed)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        if channels % self.groups != 0:
            raise ValueError(f"The number of input channels must be evenly divisible by the number of groups. "
                             f"Received groups={self.groups}, but the input has {channels} channels (full input "
                             f"shape is {tuple(input_shape)}).")
        # A grouped kernel holds each group's input channels: the convolution op groups by it.
        self.kernel = self.add_weight(shape=(*self.kernel_size, channels // self.groups, self.filters),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint,
                                      name="kernel")
        self._add_bias(self.filters)
        self.built = True

    def call(self, inputs):
        if self.padding == "causal":
            inputs = self._causal_pad(inputs)
        y = _conv.convolution(inputs, self.kernel, strides=list(self.strides), padding=self._tf_padding(),
                              data_format=self._tf_format, dilations=list(self.dilation_rate))
        return self._finish(y)

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "groups": self.groups,
                       "kernel_initializer": _serialize_initializer(self.kernel_initializer),
                       "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                       "kernel_constraint": constraints.serialize(self.kernel_constraint)})
        return config


class Conv1D(_Conv):
    """1-D convolution over [batch, steps, channels]; padding may also be 'causal'."""

    rank = 1


class Conv2D(_Conv):
    """2-D convolution over [batch, height, width, channels]."""

    rank = 2


class Conv3D(_Conv):
    """3-D convolution over [batch, depth, height, width, channels]."""

    rank = 3


def _transpose_length(size, kernel, stride, padding, output_padding, dilation):
    """Keras's output length of a transposed convolution along one axis."""
    kernel = (kernel - 1) * dilation + 1
    if padding == "valid":
        extra = max(kernel, stride) - kernel if output_padding is None else output_padding
        return (size - 1) * stride + kernel + extra
    if output_padding is None:
        return size * stride
    return (size - 1) * stride + kernel % 2 + output_padding


_TRANSPOSED = {1: _conv.conv1d_transpose, 2: _conv.conv2d_transpose, 3: _conv.conv3d_transpose}


class _ConvTranspose(_ConvBase):
    """The gradient of a convolution with respect to its input, kernel [*kernel_size, filters, in]."""

    _causal_ok = False

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, seed=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         bias_initializer, bias_regularizer, activity_regularizer, bias_constraint, **kwargs)
        self.filters = int(filters)
        self.output_padding = None if output_padding is None else _tuple(output_padding, self.rank, "output_padding")
        if self.output_padding is not None:
            for p, s in zip(self.output_padding, self.strides):
                if p >= s:
                    raise ValueError(f"Strides must be greater than output padding. Received strides={self.strides}, "
                                     f"output_padding={self.output_padding}.")
        self.kernel_initializer = seeded(kernel_initializer, seed)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.kernel = self.add_weight(shape=(*self.kernel_size, self.filters, channels),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint,
                                      name="kernel")
        self._add_bias(self.filters)
        self.built = True

    def _output_shape(self, inputs):
        dims = _ops.shape(inputs)
        sizes = []
        for i, axis in enumerate(self._spatial_axes()):
            pad = None if self.output_padding is None else self.output_padding[i]
            size = inputs.shape[axis] if inputs.shape[axis] is not None else dims[axis]
            sizes.append(_transpose_length(size, self.kernel_size[i], self.strides[i], self.padding, pad,
                                           self.dilation_rate[i]))
        batch = dims[0]
        parts = [batch, *sizes, self.filters] if self.data_format == "channels_last" else [batch, self.filters, *sizes]
        return _ops.stack([_ops.cast(p, dims.dtype) for p in parts])

    def call(self, inputs):
        op = _TRANSPOSED[self.rank]
        y = op(inputs, self.kernel, self._output_shape(inputs), strides=list(self.strides),
               padding=self.padding.upper(), data_format=self._tf_format, dilations=list(self.dilation_rate))
        return self._finish(y)

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "output_padding": self.output_padding,
                       "kernel_initializer": _serialize_initializer(self.kernel_initializer),
                       "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                       "kernel_constraint": constraints.serialize(self.kernel_constraint)})
        return config


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution."""

    rank = 1


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution."""

    rank = 2


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution."""

    rank = 3


class _Depthwise(_ConvBase):
    """Each input channel convolved with depth_multiplier filters of its own; 1-D runs as 2-D
    with a height of 1 (as Keras's TF backend does)."""

    _causal_ok = False

    def __init__(self, kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                 use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer, bias_regularizer,
                 activity_regularizer, seed, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         bias_initializer, bias_regularizer, activity_regularizer, bias_constraint, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = seeded(depthwise_initializer, seed)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)

    def _depthwise_kernel(self, channels, name):
        return self.add_weight(shape=(*self.kernel_size, channels, self.depth_multiplier),
                               initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
                               constraint=self.depthwise_constraint,
                               name=name)

    def _as_2d(self, inputs, kernels):
        """(inputs, kernels, 2-D format, strides, dilations) with 1-D made 2-D by a height of 1."""
        fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
        strides, dilations = list(self.strides), list(self.dilation_rate)
        if self.rank == 2:
            return inputs, kernels, fmt, strides, dilations
        axis = 1 if self.data_format == "channels_last" else 2
        return (_ops.expand_dims(inputs, axis), [_ops.expand_dims(k, 0) for k in kernels], fmt, [1, *strides],
                [1, *dilations])

    def _from_2d(self, y):
        return y if self.rank == 2 else _ops.squeeze(y, [1 if self.data_format == "channels_last" else 2])

    def get_config(self):
        config = super().get_config()
        config.update({"depth_multiplier": self.depth_multiplier,
                       "depthwise_initializer": _serialize_initializer(self.depthwise_initializer),
                       "depthwise_regularizer": regularizers.serialize(self.depthwise_regularizer),
                       "depthwise_constraint": constraints.serialize(self.depthwise_constraint)})
        return config


class _DepthwiseConv(_Depthwise):
    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, seed=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, seed, depthwise_constraint, bias_constraint, **kwargs)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.kernel = self._depthwise_kernel(channels, "kernel")
        self._add_bias(channels * self.depth_multiplier)
        self.built = True

    def call(self, inputs):
        x, (k,), fmt, strides, dilations = self._as_2d(inputs, [self.kernel])
        y = _conv.depthwise_conv2d(x, k, strides=[1, *strides, 1] if fmt == "NHWC" else [1, 1, *strides],
                                   padding=self.padding.upper(), data_format=fmt, dilations=dilations)
        return self._finish(self._from_2d(y))


class DepthwiseConv1D(_DepthwiseConv):
    """Depthwise 1-D convolution."""

    rank = 1


class DepthwiseConv2D(_DepthwiseConv):
    """Depthwise 2-D convolution, kernel [kh, kw, channels, depth_multiplier]."""

    rank = 2


class _SeparableConv(_Depthwise):
    """A depthwise convolution, then a 1x1 convolution to `filters` channels."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, seed=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, seed, depthwise_constraint, bias_constraint, **kwargs)
        self.filters = int(filters)
        self.pointwise_initializer = seeded(pointwise_initializer, None if seed is None else seed + 1)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = constraints.get(pointwise_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.depthwise_kernel = self._depthwise_kernel(channels, "depthwise_kernel")
        self.pointwise_kernel = self.add_weight(
            shape=(*([1] * self.rank), channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, name="pointwise_kernel")
        self._add_bias(self.filters)
        self.built = True

    def call(self, inputs):
        x, (dk, pk), fmt, strides, dilations = self._as_2d(inputs, [self.depthwise_kernel, self.pointwise_kernel])
        y = _conv.separable_conv2d(x, dk, pk, strides=[1, *strides, 1] if fmt == "NHWC" else [1, 1, *strides],
                                   padding=self.padding.upper(), data_format=fmt, dilations=dilations)
        return self._finish(self._from_2d(y))

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters,
                       "pointwise_initializer": _serialize_initializer(self.pointwise_initializer),
                       "pointwise_regularizer": regularizers.serialize(self.pointwise_regularizer),
                       "pointwise_constraint": constraints.serialize(self.pointwise_constraint)})
        return config


class SeparableConv1D(_SeparableConv):
    """Depthwise-separable 1-D convolution."""

    rank = 1


class SeparableConv2D(_SeparableConv):
    """Depthwise-separable 2-D convolution."""

    rank = 2


class _Pooling(Layer):
    rank = 2
    _jf_pools = None  # (max or avg pool op by rank)

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        n = self.rank
        self.pool_size = _tuple(pool_size, n, "pool_size")
        self.strides = self.pool_size if strides is None else _tuple(strides, n, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        fmt = _FORMATS[self.rank][self.data_format == "channels_first"]
        pool = self._jf_pools[self.rank]
        return pool(inputs, list(self.pool_size), list(self.strides), self.padding.upper(), data_format=fmt)

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size, "padding": self.padding, "strides": self.strides,
                       "data_format": self.data_format})
        return config


_MAX_POOLS = {1: _conv.max_pool1d, 2: _conv.max_pool2d, 3: _conv.max_pool3d}
_AVG_POOLS = {1: _conv.avg_pool1d, 2: _conv.avg_pool2d, 3: _conv.avg_pool3d}


class MaxPooling1D(_Pooling):
    """The maximum of each pool_size window over steps (strides default to pool_size)."""

    rank, _jf_pools = 1, _MAX_POOLS


class MaxPooling2D(_Pooling):
    """The maximum of each pool_size window (strides default to pool_size)."""

    rank, _jf_pools = 2, _MAX_POOLS


class MaxPooling3D(_Pooling):
    """The maximum of each pool_size window of a volume."""

    rank, _jf_pools = 3, _MAX_POOLS


class AveragePooling1D(_Pooling):
    """The mean of each pool_size window over the elements inside the input."""

    rank, _jf_pools = 1, _AVG_POOLS


class AveragePooling2D(_Pooling):
    """The mean of each pool_size window over the elements inside the input."""

    rank, _jf_pools = 2, _AVG_POOLS


class AveragePooling3D(_Pooling):
    """The mean of each pool_size window of a volume over the elements inside the input."""

    rank, _jf_pools = 3, _AVG_POOLS


MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Convolution1DTranspose, Convolution2DTranspose, Convolution3DTranspose = (Conv1DTranspose, Conv2DTranspose,
                                                                          Conv3DTranspose)
SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D
