"""Keras 3's reshaping layers: RepeatVector, Permute, and ZeroPadding, Cropping and UpSampling in
1, 2 and 3 spatial dims (data_format as Keras: channels_last unless told)."""
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops import image_ops as _image
from ...ops import scatter_ops as _scatter
from .conv import _data_format
from .layer import Layer


class RepeatVector(Layer):
    """[batch, features] -> [batch, n, features]."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(n, int):
            raise TypeError(f"Expected an integer value for `n`, got {type(n)}.")
        self.n = n

    def call(self, inputs):
        if len(inputs.shape) != 2:
            raise ValueError(f"Input of RepeatVector should have rank 2 (batch, features). Received input shape "
                             f"{tuple(inputs.shape)}")
        return _array.tile(_ops.expand_dims(inputs, 1), [1, self.n, 1])

    def get_config(self):
        config = super().get_config()
        config["n"] = self.n
        return config


class Permute(Layer):
    """Permutes the non-batch axes: dims is a permutation of 1..rank-1."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation argument `dims` for Permute Layer. The set of indices in `dims` "
                             f"must be consecutive and start from 1. Received dims={dims}")

    def call(self, inputs):
        return _ops.transpose(inputs, [0, *self.dims])

    def get_config(self):
        config = super().get_config()
        config["dims"] = self.dims
        return config


def _pairs(value, rank, name):
    """Keras's padding/cropping argument: an int, `rank` ints (symmetric) or `rank` pairs."""
    if isinstance(value, int):
        return ((value, value),) * rank
    value = tuple(value)
    if rank == 1 and len(value) == 2 and all(isinstance(v, int) for v in value):
        return (tuple(value),)
    if len(value) != rank:
        raise ValueError(f"`{name}` should have {rank} elements. Received: {name}={value}.")
    return tuple((v, v) if isinstance(v, int) else tuple(int(i) for i in v) for v in value)


class _Spatial(Layer):
    """A layer over the spatial axes of [batch, *spatial, channels] (or channels first)."""

    rank = 2

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = "channels_last" if self.rank == 1 else _data_format(data_format)

    def _axes(self):
        first = 1 if self.data_format == "channels_last" else 2
        return list(range(first, first + self.rank))

    def get_config(self):
        config = super().get_config()
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


class _ZeroPadding(_Spatial):
    """Zeros added before and after each spatial axis."""

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.padding = _pairs(padding, self.rank, "padding")

    def call(self, inputs):
        pads = [[0, 0]] * len(inputs.shape)
        for axis, p in zip(self._axes(), self.padding):
            pads[axis] = list(p)
        return _array.pad(inputs, pads)

    def get_config(self):
        config = super().get_config()
        config["padding"] = self.padding[0] if self.rank == 1 else self.padding
        return config


class ZeroPadding1D(_ZeroPadding):
    rank = 1


class ZeroPadding2D(_ZeroPadding):
    rank = 2


class ZeroPadding3D(_ZeroPadding):
    rank = 3


class _Cropping(_Spatial):
    """Elements removed from the start and end of each spatial axis."""

    def __init__(self, cropping=1, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.cropping = _pairs(cropping, self.rank, "cropping")

    def call(self, inputs):
        index = [slice(None)] * len(inputs.shape)
        for axis, (lo, hi) in zip(self._axes(), self.cropping):
            size = inputs.shape[axis]
            if size is not None and lo + hi >= size:
                raise ValueError(f"Values in `cropping` argument should be smaller than the corresponding spatial "
                                 f"dimension of the input. Received: input_shape={tuple(inputs.shape)}, "
                                 f"cropping={self.cropping}")
            index[axis] = slice(lo, -hi if hi else None)
        return inputs[tuple(index)]

    def get_config(self):
        config = super().get_config()
        config["cropping"] = self.cropping[0] if self.rank == 1 else self.cropping
        return config


class Cropping1D(_Cropping):
    rank = 1


class Cropping2D(_Cropping):
    rank = 2

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping=cropping, data_format=data_format, **kwargs)


class Cropping3D(_Cropping):
    rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping=cropping, data_format=data_format, **kwargs)


class _UpSampling(_Spatial):
    """Each spatial element repeated `size` times along its axis (nearest neighbour)."""

    def __init__(self, size=2, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.size = (int(size),) * self.rank if isinstance(size, int) else tuple(int(s) for s in size)
        if len(self.size) != self.rank:
            raise ValueError(f"`size` should have {self.rank} elements. Received: size={size}.")

    def call(self, inputs):
        for axis, s in zip(self._axes(), self.size):
            if s != 1:
                inputs = _scatter.repeat(inputs, s, axis=axis)
        return inputs

    def get_config(self):
        config = super().get_config()
        config["size"] = self.size[0] if self.rank == 1 else self.size
        return config


class UpSampling1D(_UpSampling):
    rank = 1


class UpSampling2D(_UpSampling):
    """Nearest-neighbour repetition, or bilinear resizing with interpolation='bilinear'."""

    rank = 2

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(size=size, data_format=data_format, **kwargs)
        if interpolation not in ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5", "area"):
            raise ValueError(f"`interpolation` argument should be one of: 'nearest', 'bilinear', 'bicubic', "
                             f"'lanczos3', 'lanczos5', 'area'. Received: interpolation={interpolation}")
        self.interpolation = interpolation

    def call(self, inputs):
        if self.interpolation == "nearest":
            return super().call(inputs)
        x = inputs if self.data_format == "channels_last" else _ops.transpose(inputs, [0, 2, 3, 1])
        dims = _ops.shape(x)
        size = _ops.stack([dims[1] * self.size[0], dims[2] * self.size[1]])
        y = _ops.cast(_image.resize(x, size, method=self.interpolation), inputs.dtype)
        return y if self.data_format == "channels_last" else _ops.transpose(y, [0, 3, 1, 2])

    def get_config(self):
        config = super().get_config()
        config["interpolation"] = self.interpolation
        return config


class UpSampling3D(_UpSampling):
    rank = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(size=size, data_format=data_format, **kwargs)
