"""Keras 3's everyday preprocessing layers: Rescaling, Normalization (with adapt), Resizing,
CenterCrop, CategoryEncoding and RandomFlip. Image layers take [batch, h, w, c] or one
[h, w, c] image (channels_first with data_format)."""
import numpy as np

from ...core import dtypes as _dt
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops import debugging as _debug
from ...ops import image_ops as _image
from ...ops import random_ops as _random
from ...ops import stats_ops as _stats
from .conv import _data_format
from .core import SeedState
from .layer import Layer


class Rescaling(Layer):
    """inputs (cast to the layer's dtype) * scale + offset."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs):
        dt = self._jf_dtype
        x = _ops.cast(inputs, dt)
        return x * _ops.cast(self.scale, dt) + _ops.cast(self.offset, dt)

    def get_config(self):
        config = super().get_config()
        config.update({"scale": self.scale, "offset": self.offset})
        return config


class Normalization(Layer):
    """(x - mean) / max(sqrt(variance), 1e-7) per position of `axis` (the last by default),
    from mean/variance given or computed by adapt(data); invert=True maps back."""

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        if (mean is None) != (variance is None):
            raise ValueError(f"When setting values directly, both `mean` and `variance` must be set. Received: "
                             f"mean={mean} and variance={variance}")
        self.input_mean, self.input_variance, self.invert = mean, variance, invert

    def build(self, input_shape):
        rank = len(input_shape)
        if any(a < -rank or a >= rank for a in self.axis):
            raise ValueError(f"All `axis` values must be in the range [-ndim, ndim). Received inputs with "
                             f"ndim={rank}, while axis={self.axis}")
        self._jf_keep = tuple(sorted(a % rank for a in self.axis))
        for d in self._jf_keep:
            if input_shape[d] is None:
                raise ValueError(f"All `axis` values to be kept must have a known shape. Received axis={self.axis}, "
                                 f"inputs.shape={tuple(input_shape)}, with unknown axis at index {d}")
        self._jf_broadcast = [input_shape[d] if d in self._jf_keep else 1 for d in range(rank)]
        shape = tuple(input_shape[d] for d in self._jf_keep)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(shape=shape, initializer="zeros", trainable=False, name="mean")
            self.adapt_variance = self.add_weight(shape=shape, initializer="ones", trainable=False, name="variance")
            self.count = self.add_weight(shape=(), dtype="int64", initializer="zeros", trainable=False, name="count")
        self.built = True

    def adapt(self, data, batch_size=None, steps=None):
        """Sets the mean and variance from data: an array, a tensor, or a dataset of batches."""
        batches = [np.asarray(data)] if not hasattr(data, "as_numpy_iterator") else data.as_numpy_iterator()
        total, mean, m2 = 0, None, None
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            batch = np.asarray(batch, np.float64)
            if batch.ndim == 1:
                batch = batch[:, None]
            if not self.built:
                self.build((None, *batch.shape[1:]))
            reduce = tuple(d for d in range(batch.ndim) if d not in self._jf_keep)
            n = int(np.prod([batch.shape[d] for d in reduce]))
            b_mean = batch.mean(axis=reduce)
            b_m2 = ((batch - batch.mean(axis=reduce, keepdims=True)) ** 2).sum(axis=reduce)
            if mean is None:
                total, mean, m2 = n, b_mean, b_m2
            else:  # Chan et al.'s pairwise merge of (count, mean, sum of squares)
                delta = b_mean - mean
                mean = mean + delta * n / (total + n)
                m2 = m2 + b_m2 + delta ** 2 * total * n / (total + n)
                total += n
        if mean is None:
            raise ValueError("Normalization.adapt got no data")
        self.adapt_mean.assign(mean.reshape(self.adapt_mean.shape))
        self.adapt_variance.assign((m2 / total).reshape(self.adapt_variance.shape))
        self.count.assign(total)

    def _moments(self, dtype):
        if self.input_mean is not None:
            mean = np.broadcast_to(np.asarray(self.input_mean, np.float64), self._jf_broadcast)
            var = np.broadcast_to(np.asarray(self.input_variance, np.float64), self._jf_broadcast)
            return _ops.constant(mean, dtype), _ops.constant(var, dtype)
        return (_ops.cast(_ops.reshape(self.adapt_mean, self._jf_broadcast), dtype),
                _ops.cast(_ops.reshape(self.adapt_variance, self._jf_broadcast), dtype))

    def call(self, inputs):
        x = _ops.cast(inputs, self._jf_dtype)
        mean, var = self._moments(x.dtype)
        std = _ops.maximum(_ops.sqrt(var), _ops.convert_to_tensor(1e-7, x.dtype))
        return mean + x * std if self.invert else (x - mean) / std

    def get_config(self):
        config = super().get_config()
        mean = self.input_mean
        variance = self.input_variance
        config.update({"axis": self.axis, "invert": self.invert,
                       "mean": np.asarray(mean).tolist() if mean is not None else None,
                       "variance": np.asarray(variance).tolist() if variance is not None else None})
        return config


def _to_nhwc(x, data_format):
    """(x as a batch of channels-last images, a function undoing that)."""
    single = len(x.shape) == 3
    if single:
        x = _ops.expand_dims(x, 0)
    first = data_format == "channels_first"
    if first:
        x = _ops.transpose(x, [0, 2, 3, 1])

    def back(y):
        if first:
            y = _ops.transpose(y, [0, 3, 1, 2])
        return _ops.squeeze(y, [0]) if single else y
    return x, back


def _crop_to_aspect(x, height, width):
    """The largest centred crop of the images x [n, h, w, c] with the aspect ratio width / height."""
    dims = _ops.shape(x)
    h, w = _ops.cast(dims[1], _dt.float32), _ops.cast(dims[2], _dt.float32)
    ratio = width / height
    crop_h = _ops.cast(_ops.minimum(h, w / ratio), _dt.int32)
    crop_w = _ops.cast(_ops.minimum(w, h * ratio), _dt.int32)
    top = (_ops.cast(dims[1], _dt.int32) - crop_h) // 2
    left = (_ops.cast(dims[2], _dt.int32) - crop_w) // 2
    return x[:, top:top + crop_h, left:left + crop_w, :]


class Resizing(Layer):
    """Images resized to (height, width) by `interpolation`; crop_to_aspect_ratio crops the
    largest centred window of the target's aspect ratio first."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, antialias=False, data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        if pad_to_aspect_ratio and crop_to_aspect_ratio:
            raise ValueError("Only one of `pad_to_aspect_ratio` and `crop_to_aspect_ratio` can be `True`.")
        if pad_to_aspect_ratio:
            raise NotImplementedError("jitflow's Resizing does not implement pad_to_aspect_ratio yet")
        self.height, self.width = int(height), int(width)
        self.interpolation, self.crop_to_aspect_ratio = interpolation, crop_to_aspect_ratio
        self.antialias = antialias
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        x, back = _to_nhwc(_ops.cast(inputs, self._jf_dtype), self.data_format)
        if self.crop_to_aspect_ratio:
            x = _crop_to_aspect(x, self.height, self.width)
        y = _image.resize(x, [self.height, self.width], method=self.interpolation, antialias=self.antialias)
        return back(_ops.cast(y, self._jf_dtype))

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width, "interpolation": self.interpolation,
                       "crop_to_aspect_ratio": self.crop_to_aspect_ratio, "pad_to_aspect_ratio": False,
                       "fill_mode": "constant", "fill_value": 0.0, "antialias": self.antialias,
                       "data_format": self.data_format})
        return config


class CenterCrop(Layer):
    """The centred height x width window of each image; an image smaller than that is cropped to
    the target's aspect ratio and resized, as Keras does."""

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = int(height), int(width)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        x, back = _to_nhwc(_ops.cast(inputs, self._jf_dtype), self.data_format)
        h, w = x.shape[1], x.shape[2]
        if h is not None and w is not None and h >= self.height and w >= self.width:
            top, left = (h - self.height) // 2, (w - self.width) // 2
            return back(x[:, top:top + self.height, left:left + self.width, :])
        y = _image.resize(_crop_to_aspect(x, self.height, self.width), [self.height, self.width])
        return back(_ops.cast(y, self._jf_dtype))

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width, "data_format": self.data_format})
        return config


def encode_categories(ids, depth, output_mode, dtype, count_weights=None):
    """Integer ids [0, depth) as Keras's one_hot, multi_hot or count vectors (a rank-1 input is a
    batch for one_hot and one sample otherwise; a trailing dim of 1 is dropped for one_hot)."""
    if len(ids.shape) == 0:
        ids = _ops.reshape(ids, [1])
    if output_mode == "one_hot":
        if len(ids.shape) >= 2 and ids.shape[-1] == 1:
            ids = _ops.squeeze(ids, [-1])
        return _array.one_hot(ids, depth, dtype=dtype)
    hot = _array.one_hot(ids, depth, dtype=dtype)
    if count_weights is not None:
        hot = hot * _ops.expand_dims(_ops.cast(count_weights, dtype), -1)
    if output_mode == "multi_hot":
        return _ops.reduce_max(hot, axis=-2)
    return _ops.reduce_sum(hot, axis=-2)


class CategoryEncoding(Layer):
    """Integer category ids to one_hot, multi_hot or count vectors of num_tokens entries
    (Keras's shapes: a rank-1 input is a batch for one_hot and one sample otherwise)."""

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if output_mode not in ("one_hot", "multi_hot", "count"):
            raise ValueError(f"Unknown arg for output_mode: {output_mode}")
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens is not known "
                             "beforehand, use the IntegerLookup layer instead.")
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        if sparse:
            raise NotImplementedError("jitflow's CategoryEncoding does not implement sparse=True yet")
        self.num_tokens, self.output_mode, self.sparse = int(num_tokens), output_mode, sparse

    def call(self, inputs, count_weights=None):
        ids = _ops.cast(inputs, _dt.int64)
        n = _ops.constant(self.num_tokens, _dt.int64)
        in_range = _ops.logical_and(_stats.reduce_all(ids >= 0), _stats.reduce_all(ids < n))
        message = f"Input values must be in the range 0 <= values < num_tokens with num_tokens={self.num_tokens}"
        _debug.Assert(in_range, [message])
        if count_weights is not None and self.output_mode != "count":
            raise ValueError(f"`count_weights` is not used when `output_mode` is not `'count'`. Received "
                             f"`count_weights={count_weights}`.")
        return encode_categories(ids, self.num_tokens, self.output_mode, self._jf_dtype, count_weights)

    def get_config(self):
        config = super().get_config()
        config.update({"num_tokens": self.num_tokens, "output_mode": self.output_mode, "sparse": self.sparse})
        return config


class RandomFlip(Layer):
    """In training, each image flipped left-right and/or up-down with probability 1/2 per axis
    (mode 'horizontal', 'vertical' or 'horizontal_and_vertical'); the identity otherwise."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(f"RandomFlip layer {self.name} received an unknown mode argument {mode}")
        self.mode, self.seed = mode, seed
        self.data_format = _data_format(data_format)
        self._jf_seed_state = SeedState(seed)

    def call(self, inputs, training=True):
        x, back = _to_nhwc(_ops.cast(inputs, self._jf_dtype), self.data_format)
        if not training:
            return back(x)
        n = _ops.shape(x)[0:1]
        for axis, on in ((2, "horizontal" in self.mode), (1, "vertical" in self.mode)):
            if on:
                u = _random.stateless_uniform(n, self._jf_seed_state.next())
                flip = _ops.reshape(u < 0.5, [-1, 1, 1, 1])
                x = _ops.where(flip, _array.reverse(x, [axis]), x)
        return back(x)

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode, "seed": self.seed, "data_format": self.data_format})
        return config
