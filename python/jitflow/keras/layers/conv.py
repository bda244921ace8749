"""Conv2D, MaxPooling2D and AveragePooling2D with Keras 3's arguments, kernel layout
[kh, kw, in_channels, filters] and data_format, on jf.nn.conv2d / max_pool2d / avg_pool2d (oneDNN
for float32) and bias_add."""
from ...ops import basic_ops as _ops
from ...ops import conv_ops as _conv
from .. import activations, regularizers
from .core import _serialize_initializer, seeded
from .layer import Layer


def _pair(value, name):
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"The `{name}` argument must be a tuple of 2 integers. Received {name}={value}")
    return value


def _padding(padding):
    p = str(padding).lower()
    if p not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be a string, either 'valid' or 'same'. Received: "
                         f"padding={padding}")
    return p


def _data_format(data_format):
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: data_format={data_format}")
    return data_format


class Conv2D(Layer):
    """2-D convolution: activation(conv2d(x, kernel) + bias), kernel [kh, kw, in / groups, filters]."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, seed=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        groups = int(groups)
        if groups <= 0:
            raise ValueError(f"The number of groups must be a positive integer. Received: groups={groups}.")
        if int(filters) % groups != 0:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. Received: "
                             f"groups={groups}, filters={filters}.")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")
        self.groups = groups
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = seeded(kernel_initializer, seed)
        self.bias_initializer = seeded(bias_initializer, None)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)

    def build(self, input_shape):
        channels = input_shape[-1] if self.data_format == "channels_last" else input_shape[1]
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs should be defined. Found None. Full input shape "
                             f"received: {tuple(input_shape)}")
        if channels % self.groups != 0:
            raise ValueError(f"The number of input channels must be evenly divisible by the number of groups. "
                             f"Received groups={self.groups}, but the input has {channels} channels (full input "
                             f"shape is {tuple(input_shape)}).")
        # A grouped kernel holds each group's input channels: conv2d makes it a grouped convolution.
        self.kernel = self.add_weight(shape=(*self.kernel_size, channels // self.groups, self.filters),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      name="kernel")
        self.bias = self.add_weight(shape=(self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, name="bias") if self.use_bias else None
        self.built = True

    def call(self, inputs):
        fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
        y = _conv.conv2d(inputs, self.kernel, strides=list(self.strides), padding=self.padding.upper(),
                         data_format=fmt, dilations=list(self.dilation_rate))
        if self.use_bias:
            y = _ops.bias_add(y, self.bias, data_format=fmt)
        return self.activation(y)

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
                       "padding": self.padding, "data_format": self.data_format,
                       "dilation_rate": self.dilation_rate, "groups": self.groups,
                       "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                       "kernel_initializer": _serialize_initializer(self.kernel_initializer),
                       "bias_initializer": _serialize_initializer(self.bias_initializer),
                       "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                       "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                       "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                       "kernel_constraint": None, "bias_constraint": None})
        return config


class _Pooling2D(Layer):
    _jf_pool = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = self.pool_size if strides is None else _pair(strides, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
        return type(self)._jf_pool(inputs, list(self.pool_size), list(self.strides), self.padding.upper(),
                                   data_format=fmt)

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size, "padding": self.padding, "strides": self.strides,
                       "data_format": self.data_format})
        return config


class MaxPooling2D(_Pooling2D):
    """The maximum of each pool_size window (strides default to pool_size)."""

    _jf_pool = staticmethod(_conv.max_pool2d)


class AveragePooling2D(_Pooling2D):
    """The mean of each pool_size window over the elements inside the input."""

    _jf_pool = staticmethod(_conv.avg_pool2d)


MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D
