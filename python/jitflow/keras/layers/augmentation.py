"""Keras 3's random image augmentation layers (RandomRotation, RandomTranslation, RandomZoom,
RandomCrop, RandomContrast, RandomBrightness): active only in training, one random draw per
image from the layer's seed state. The geometric ones share affine_transform, TF's
ImageProjectiveTransformV3 written with jitflow ops (gathers), so they run in every mode."""
import math

from ...core import dtypes as _dt
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops import image_ops as _image
from ...ops import losses_clipping as _clip
from ...ops import random_ops as _random
from .conv import _data_format
from .core import SeedState
from .layer import Layer
from .preprocessing import _crop_to_aspect, _to_nhwc

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _fold(coord, size, fill_mode):
    """Maps a coordinate outside [0, size - 1] back inside as TF's fill modes do (constant keeps
    it: the read then gives fill_value)."""
    if fill_mode == "constant":
        return coord
    last = size - 1.0
    if fill_mode == "nearest":
        return _clip.clip_by_value(coord, 0.0, last)
    if fill_mode == "reflect":
        period = 2.0 * size
        c = coord - period * _ops.floor(coord / period)  # in [0, 2 size)
        c = _ops.where(c >= size, period - c - 1.0, c)
    else:  # wrap, with TF's arithmetic (whole periods counted against size - 1)
        span = _ops.maximum(size - 1.0, 1.0)
        c = _ops.where(coord < 0.0, coord + size * (_ops.floor(-coord / span) + 1.0),
                       _ops.where(coord > last, coord - size * _ops.floor(coord / span), coord))
    # A size-1 axis maps everything to 0, as TF.
    return _ops.where(size > 1.0, _clip.clip_by_value(c, 0.0, last), _ops.zeros_like(c))


def _round_half_away(v):
    """std::round, which TF's nearest sampling uses (jf.round rounds half to even)."""
    return _ops.sign(v) * _ops.floor(_ops.abs(v) + 0.5)


def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant", fill_value=0.0):
    """Output pixel (x, y) of each NHWC image reads the input at ((a0 x + a1 y + a2) / k,
    (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1, for its row [a0 a1 a2 b0 b1 b2 c0 c1] of
    transform [n, 8]; bilinear or nearest, outside reads by fill_mode."""
    if interpolation not in ("bilinear", "nearest"):
        raise ValueError(f"Invalid value for argument `interpolation`. Expected of one {{'nearest', 'bilinear'}}. "
                         f"Received: interpolation={interpolation}")
    if fill_mode not in _FILL_MODES:
        raise ValueError(f"Invalid value for argument `fill_mode`. Expected of one {set(_FILL_MODES)}. "
                         f"Received: fill_mode={fill_mode}")
    dtype = images.dtype
    x_in = _ops.cast(images, _dt.float32)
    dims = _ops.shape(x_in)
    # Static sizes where known, so the coordinate ranges are constants and the step compiles.
    h = x_in.shape[1] if x_in.shape[1] is not None else dims[1]
    w = x_in.shape[2] if x_in.shape[2] is not None else dims[2]
    c = x_in.shape[3] if x_in.shape[3] is not None else dims[3]
    hf, wf = _ops.cast(h, _dt.float32), _ops.cast(w, _dt.float32)
    ys = _ops.reshape(_ops.cast(_ops.range(h), _dt.float32), [1, -1, 1])
    xs = _ops.reshape(_ops.cast(_ops.range(w), _dt.float32), [1, 1, -1])
    t = _ops.cast(transform, _dt.float32)
    a0, a1, a2, b0, b1, b2, c0, c1 = [_ops.reshape(t[:, i], [-1, 1, 1]) for i in range(8)]
    k = c0 * xs + c1 * ys + 1.0
    src_x = _fold((a0 * xs + a1 * ys + a2) / k, wf, fill_mode)
    src_y = _fold((b0 * xs + b1 * ys + b2) / k, hf, fill_mode)
    pixels = _ops.reshape(x_in, _ops.stack([dims[0], -1, _ops.cast(c, dims.dtype)]))  # [n, h * w, c]
    fill = _ops.convert_to_tensor(float(fill_value), _dt.float32)

    def read(yy, xx):
        """Pixels at integer-valued (yy, xx) [n, h, w]; fill_value where outside the image."""
        inside = (yy >= 0.0) & (yy <= hf - 1.0) & (xx >= 0.0) & (xx <= wf - 1.0)
        yi = _ops.cast(_clip.clip_by_value(yy, 0.0, hf - 1.0), _dt.int32)
        xi = _ops.cast(_clip.clip_by_value(xx, 0.0, wf - 1.0), _dt.int32)
        flat = _ops.reshape(yi * _ops.cast(w, _dt.int32) + xi, _ops.stack([dims[0], -1]))
        px = _ops.reshape(_array.gather(pixels, flat, axis=1, batch_dims=1), _ops.shape(x_in))
        return _ops.where(_ops.expand_dims(inside, -1), px, fill)

    if interpolation == "nearest":
        out = read(_round_half_away(src_y), _round_half_away(src_x))
    else:
        y0, x0 = _ops.floor(src_y), _ops.floor(src_x)
        y1, x1 = y0 + 1.0, x0 + 1.0
        wy0, wy1 = _ops.expand_dims(y1 - src_y, -1), _ops.expand_dims(src_y - y0, -1)
        wx0, wx1 = _ops.expand_dims(x1 - src_x, -1), _ops.expand_dims(src_x - x0, -1)
        top = wx0 * read(y0, x0) + wx1 * read(y0, x1)
        bottom = wx0 * read(y1, x0) + wx1 * read(y1, x1)
        out = wy0 * top + wy1 * bottom
    return _ops.cast(out, dtype)


def _static_like(out, x):
    """out with x's static image shape (the gathers' outputs know only their rank)."""
    tail = list(x.shape[1:])
    return _ops.reshape(out, [-1, *tail]) if all(d is not None for d in tail) else out


def _factor_pair(factor, name, symmetric=True):
    """Keras's factor argument: a number f is (-f, f) (or (f, f) when not symmetric), a pair is
    (lower, upper)."""
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError(f"The `{name}` argument should be a number or a tuple of 2 numbers. Received: "
                             f"{name}={factor}")
        return float(factor[0]), float(factor[1])
    f = float(factor)
    return (-abs(f), abs(f)) if symmetric else (f, f)


class _RandomImage(Layer):
    """An augmentation layer: the identity unless training; images NHWC (or one image)."""

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.data_format = _data_format(data_format)
        self._jf_seed_state = SeedState(seed)

    def _uniform(self, n, lower, upper, shape_tail=()):
        return _random.stateless_uniform(_ops.concat([n, _ops.constant(list(shape_tail), _dt.int32)], 0),
                                         self._jf_seed_state.next(), minval=lower, maxval=upper)

    def call(self, inputs, training=True):
        x, back = _to_nhwc(_ops.cast(inputs, self._jf_dtype), self.data_format)
        if not training:
            return back(x)
        return back(_static_like(self._augment(x), x))

    def get_config(self):
        config = super().get_config()
        config.update({"seed": self.seed, "data_format": self.data_format})
        return config


class _RandomAffine(_RandomImage):
    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if fill_mode not in _FILL_MODES:
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected of one {_FILL_MODES}.")
        if interpolation not in ("bilinear", "nearest"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one "
                                      f"('nearest', 'bilinear').")
        self.fill_mode, self.interpolation, self.fill_value = fill_mode, interpolation, fill_value

    def _augment(self, x):
        dims = _ops.shape(x)
        matrix = self._matrix(dims[0:1], _ops.cast(dims[1], _dt.float32), _ops.cast(dims[2], _dt.float32))
        return affine_transform(x, matrix, self.interpolation, self.fill_mode, self.fill_value)

    def get_config(self):
        config = super().get_config()
        config.update({"fill_mode": self.fill_mode, "interpolation": self.interpolation,
                       "fill_value": self.fill_value})
        return config


class RandomRotation(_RandomAffine):
    """Rotates each image about its centre by factor * 360 degrees drawn from [lower, upper]."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0,
                 data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = factor
        self._jf_range = _factor_pair(factor, "factor")

    def _matrix(self, n, h, w):
        lower, upper = self._jf_range
        angle = self._uniform(n, lower * 2 * math.pi, upper * 2 * math.pi)
        cx, cy = 0.5 * (w - 1.0), 0.5 * (h - 1.0)
        cos, sin = _ops.cos(angle), _ops.sin(angle)
        zero = _ops.zeros_like(angle)
        return _ops.stack([cos, -sin, cx - cx * cos + cy * sin, sin, cos, cy - cx * sin - cy * cos, zero, zero], 1)

    def get_config(self):
        config = super().get_config()
        config["factor"] = self.factor
        return config


class RandomTranslation(_RandomAffine):
    """Shifts each image by height_factor * height and width_factor * width pixels drawn from
    their ranges."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._jf_h = _factor_pair(height_factor, "height_factor")
        self._jf_w = _factor_pair(width_factor, "width_factor")

    def _matrix(self, n, h, w):
        dy = self._uniform(n, *self._jf_h) * h
        dx = self._uniform(n, *self._jf_w) * w
        one, zero = _ops.ones_like(dx), _ops.zeros_like(dx)
        return _ops.stack([one, zero, -dx, zero, one, -dy, zero, zero], 1)

    def get_config(self):
        config = super().get_config()
        config.update({"height_factor": self.height_factor, "width_factor": self.width_factor})
        return config


class RandomZoom(_RandomAffine):
    """Scales each image about its centre by 1 + a draw from height_factor's range (and
    width_factor's, else the same draw): a positive factor zooms out, as in Keras."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._jf_h = _factor_pair(height_factor, "height_factor")
        self._jf_w = None if width_factor is None else _factor_pair(width_factor, "width_factor")

    def _matrix(self, n, h, w):
        zy = 1.0 + self._uniform(n, *self._jf_h)
        zx = zy if self._jf_w is None else 1.0 + self._uniform(n, *self._jf_w)
        zero = _ops.zeros_like(zx)
        return _ops.stack([zx, zero, (w - 1.0) / 2.0 * (1.0 - zx), zero, zy, (h - 1.0) / 2.0 * (1.0 - zy), zero, zero],
                          1)

    def get_config(self):
        config = super().get_config()
        config.update({"height_factor": self.height_factor, "width_factor": self.width_factor})
        return config


class RandomCrop(_RandomImage):
    """In training, a random height x width window of each image (resized up first where the
    image is smaller); otherwise the centred window, as CenterCrop."""

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.height, self.width = int(height), int(width)

    def call(self, inputs, training=True):
        x, back = _to_nhwc(_ops.cast(inputs, self._jf_dtype), self.data_format)
        h, w = x.shape[1], x.shape[2]
        if h is None or w is None or h < self.height or w < self.width:
            from_resize = _crop_to_aspect(x, self.height, self.width)
            return back(_ops.cast(_image.resize(from_resize, [self.height, self.width]), self._jf_dtype))
        if not training:
            top, left = (h - self.height) // 2, (w - self.width) // 2
            return back(x[:, top:top + self.height, left:left + self.width, :])
        dims = _ops.shape(x)
        top = _ops.cast(self._uniform(dims[0:1], 0.0, 1.0) * (h - self.height + 1), _dt.int32)
        left = _ops.cast(self._uniform(dims[0:1], 0.0, 1.0) * (w - self.width + 1), _dt.int32)
        rows = _ops.expand_dims(top, 1) + _ops.range(self.height)  # [n, height]
        cols = _ops.expand_dims(left, 1) + _ops.range(self.width)
        x = _array.gather(x, rows, axis=1, batch_dims=1)
        x = _array.gather(x, cols, axis=2, batch_dims=1)
        return back(_ops.reshape(x, [-1, self.height, self.width, x.shape[-1]]) if x.shape[-1] is not None else x)

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width})
        return config


class RandomContrast(_RandomImage):
    """(x - mean) * c + mean per image and channel (the mean over height and width), c drawn from
    [1 - lower, 1 + upper], clipped to value_range."""

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor, self.value_range = factor, tuple(value_range)
        lower, upper = factor if isinstance(factor, (tuple, list)) else (factor, factor)
        if lower < 0 or upper < 0 or lower > 1:
            raise ValueError(f"The `factor` argument should be a number (or a list of two numbers) in the range "
                             f"[0.0, 1.0]. Received: factor={factor}")
        self._jf_range = (1.0 - float(lower), 1.0 + float(upper))

    def _augment(self, x):
        c = self._uniform(_ops.shape(x)[0:1], *self._jf_range, shape_tail=(1, 1, 1))
        mean = _ops.reduce_mean(x, axis=[1, 2], keepdims=True)
        out = (x - mean) * _ops.cast(c, x.dtype) + mean
        return _clip.clip_by_value(out, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


class RandomBrightness(_RandomImage):
    """x + delta per image, delta drawn from factor's range times the width of value_range, then
    clipped to value_range."""

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor, self.value_range = factor, tuple(value_range)
        self._jf_range = _factor_pair(factor, "factor")
        if not all(-1.0 <= v <= 1.0 for v in self._jf_range):
            raise ValueError(f"The `factor` argument should be a number (or a list of two numbers) in the range "
                             f"[-1.0, 1.0]. Received: factor={factor}")

    def _augment(self, x):
        delta = self._uniform(_ops.shape(x)[0:1], *self._jf_range, shape_tail=(1, 1, 1))
        delta = _ops.cast(delta * (self.value_range[1] - self.value_range[0]), x.dtype)
        return _clip.clip_by_value(x + delta, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config
