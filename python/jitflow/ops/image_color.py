"""tf.image's colour and value functions: convert_image_dtype (TF's scaling between integer and
float images), brightness, contrast, gamma, hue and saturation adjustments (fixed, random and
stateless random), RGB <-> grayscale / HSV / YIQ / YUV, per_image_standardization,
total_variation, image_gradients, sobel_edges and psnr. Integer images are adjusted in float32
and converted back with saturation, as TF does."""
import numpy as np

from ..core import dtypes as _dt
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from . import losses_clipping as _clip
from . import random_ops as _random
from .conv_ops import depthwise_conv2d
from .dispatch import to_tensor


def _max(dt):
    return np.iinfo(dt.as_numpy_dtype).max


@export("image.convert_image_dtype")
def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Integer images span [0, MAX]; float images [0, 1): ints become floats times 1 / MAX,
    floats become ints times MAX + 0.5 (saturated first with saturate=True), ints change width
    by the ratio of their ranges."""
    x = to_tensor(image)
    dtype = _dt.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    if x.dtype == dtype:
        return _ops.identity(x, name=name) if name else x
    if x.dtype.is_integer and dtype.is_integer:
        src, dst = _max(x.dtype), _max(dtype)
        if src > dst:
            return _ops.cast(_ops.floordiv(x, _ops.cast((src + 1) // (dst + 1), x.dtype)), dtype)
        return _ops.cast(x, dtype) * _ops.cast((dst + 1) // (src + 1), dtype)
    if x.dtype.is_floating and dtype.is_floating:
        return _ops.cast(x, dtype)
    if x.dtype.is_integer:
        return _ops.cast(x, dtype) * _ops.cast(1.0 / _max(x.dtype), dtype)
    scaled = x * _ops.cast(_max(dtype) + 0.5, x.dtype)
    if saturate:
        scaled = _clip.clip_by_value(scaled, *_float_bounds(dtype, x.dtype))
    return _ops.cast(scaled, dtype)


def _float_bounds(int_dtype, float_dtype):
    """The integer type's range as the nearest values of the float type inside it (TF's
    saturate_cast: float32 cannot hold 2**31 - 1, so the bound is the float below it)."""
    info, ft = np.iinfo(int_dtype.as_numpy_dtype), float_dtype.as_numpy_dtype
    lo, hi = ft(info.min), ft(info.max)
    if float(hi) > info.max:
        hi = np.nextafter(hi, ft(0))
    if float(lo) < info.min:
        lo = np.nextafter(lo, ft(0))
    return float(lo), float(hi)


def _in_float(image, fn):
    """fn on the image as float32 (float16/32/64 images as they are), converted back to the
    image's dtype with saturation."""
    x = to_tensor(image)
    flt = x if x.dtype.is_floating else convert_image_dtype(x, _dt.float32)
    return convert_image_dtype(fn(flt), x.dtype, saturate=True)


@export("image.adjust_brightness")
def adjust_brightness(image, delta):
    return _in_float(image, lambda x: x + _ops.cast(delta, x.dtype))


def _contrast(x, factor):
    mean = _ops.reduce_mean(x, axis=[-3, -2], keepdims=True)
    return (x - mean) * _ops.cast(factor, x.dtype) + mean


@export("image.adjust_contrast")
def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean, the mean of each image's channel over its pixels."""
    return _in_float(images, lambda x: _contrast(x, contrast_factor))


@export("image.adjust_gamma")
def adjust_gamma(image, gamma=1, gain=1):
    if isinstance(gamma, (int, float)) and gamma < 0:
        raise ValueError("Gamma should be a non-negative real number.")
    return _in_float(image, lambda x: _ops.cast(gain, x.dtype) * _ops.pow(x, _ops.cast(gamma, x.dtype)))


def _channels(x):
    return _array.unstack(x, axis=-1)


@export("image.rgb_to_hsv")
def rgb_to_hsv(images, name=None):
    """TF's RGBToHSV: v the max channel, s the range over v, h in [0, 1) by the max channel's
    sector (0 where the range is 0)."""
    x = to_tensor(images)
    r, g, b = _channels(x)
    v = _ops.maximum(_ops.maximum(r, g), b)
    rng = v - _ops.minimum(_ops.minimum(r, g), b)
    zero = _ops.zeros_like(v)
    s = _ops.where(v > 0, rng / _ops.where(v > 0, v, _ops.ones_like(v)), zero)
    safe = _ops.where(rng > 0, rng, _ops.ones_like(rng))
    h = _ops.where(_ops.equal(v, r), (g - b) / safe,
                   _ops.where(_ops.equal(v, g), 2.0 + (b - r) / safe, 4.0 + (r - g) / safe)) / 6.0
    h = _ops.where(h < 0, h + 1.0, h)
    h = _ops.where(rng > 0, h, zero)
    return _ops.stack([h, s, v], axis=-1)


@export("image.hsv_to_rgb")
def hsv_to_rgb(images, name=None):
    """TF's HSVToRGB: chroma c = s v, the hue's sector of six picks which channels get c and
    x = c (1 - |(6 h mod 2) - 1|), then v - c is added to all three."""
    h, s, v = _channels(to_tensor(images))
    c = s * v
    m = v - c
    dh = h * 6.0
    sector = _ops.floor(dh)
    x = c * (1.0 - _ops.abs(_ops.floormod(dh, 2.0) - 1.0))
    zero = _ops.zeros_like(c)
    table = [(c, x, zero), (x, c, zero), (zero, c, x), (zero, x, c), (x, zero, c), (c, zero, x)]
    out = [zero, zero, zero]
    for k, rgb in enumerate(table):
        hit = _ops.equal(sector, float(k))
        out = [_ops.where(hit, val, acc) for val, acc in zip(rgb, out)]
    return _ops.stack([o + m for o in out], axis=-1)


@export("image.adjust_saturation")
def adjust_saturation(image, saturation_factor, name=None):
    def fn(x):
        h, s, v = _channels(rgb_to_hsv(x))
        s = _clip.clip_by_value(s * _ops.cast(saturation_factor, s.dtype), 0.0, 1.0)
        return hsv_to_rgb(_ops.stack([h, s, v], axis=-1))
    return _in_float(image, fn)


@export("image.adjust_hue")
def adjust_hue(image, delta, name=None):
    def fn(x):
        h, s, v = _channels(rgb_to_hsv(x))
        h = _ops.floormod(h + _ops.cast(delta, h.dtype), 1.0)
        return hsv_to_rgb(_ops.stack([h, s, v], axis=-1))
    return _in_float(image, fn)


@export("image.rgb_to_grayscale")
def rgb_to_grayscale(images, name=None):
    weights = [0.2989, 0.5870, 0.1140]
    return _in_float(images, lambda x: _ops.reduce_sum(x * _ops.constant(weights, x.dtype), axis=-1, keepdims=True))


@export("image.grayscale_to_rgb")
def grayscale_to_rgb(images, name=None):
    x = to_tensor(images)
    if x.shape[-1] is not None and x.shape[-1] != 1:
        raise ValueError(f"Last dimension of a grayscale image should be size 1. Received: shape {tuple(x.shape)}")
    return _array.tile(x, [1] * (len(x.shape) - 1) + [3])


def _matrix_transform(images, kernel):
    x = to_tensor(images)
    k = _ops.constant(np.asarray(kernel), x.dtype)
    flat = _ops.reshape(x, [-1, 3])
    return _ops.reshape(_ops.matmul(flat, k), _ops.shape(x))


_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617], [0.114, -0.32134392, 0.31119955]]
_YIQ_INV = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]]
_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512], [0.114, 0.43601035, -0.10001026]]
_YUV_INV = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


@export("image.rgb_to_yiq")
def rgb_to_yiq(images):
    return _matrix_transform(images, _YIQ)


@export("image.yiq_to_rgb")
def yiq_to_rgb(images):
    return _matrix_transform(images, _YIQ_INV)


@export("image.rgb_to_yuv")
def rgb_to_yuv(images):
    return _matrix_transform(images, _YUV)


@export("image.yuv_to_rgb")
def yuv_to_rgb(images):
    return _matrix_transform(images, _YUV_INV)


@export("image.per_image_standardization")
def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(pixels * channels)) per image, in float32."""
    x = to_tensor(image)
    if not x.dtype.is_floating:
        x = _ops.cast(x, _dt.float32)
    axes = [-3, -2, -1]
    n = _ops.cast(_ops.reduce_prod(_ops.shape(x)[-3:]), x.dtype)
    mean = _ops.reduce_mean(x, axis=axes, keepdims=True)
    std = _ops.sqrt(_ops.reduce_mean(_ops.square(x - mean), axis=axes, keepdims=True))
    return (x - mean) / _ops.maximum(std, _ops.rsqrt(n))


def _random_scalar(lower, upper, seed, stateless):
    if stateless:
        return _random.stateless_uniform([], seed, minval=lower, maxval=upper)
    return _random.uniform([], minval=lower, maxval=upper, seed=seed)


def _check_range(lower, upper, what):
    if upper <= lower:
        raise ValueError(f"{what} upper must be > lower.")
    if lower < 0:
        raise ValueError(f"{what} lower must be non-negative.")


@export("image.random_brightness")
def random_brightness(image, max_delta, seed=None):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _random_scalar(-max_delta, max_delta, seed, False))


@export("image.stateless_random_brightness")
def stateless_random_brightness(image, max_delta, seed):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _random_scalar(-max_delta, max_delta, seed, True))


@export("image.random_contrast")
def random_contrast(image, lower, upper, seed=None):
    _check_range(lower, upper, "")
    return adjust_contrast(image, _random_scalar(lower, upper, seed, False))


@export("image.stateless_random_contrast")
def stateless_random_contrast(image, lower, upper, seed):
    _check_range(lower, upper, "")
    return adjust_contrast(image, _random_scalar(lower, upper, seed, True))


@export("image.random_saturation")
def random_saturation(image, lower, upper, seed=None):
    _check_range(lower, upper, "")
    return adjust_saturation(image, _random_scalar(lower, upper, seed, False))


@export("image.stateless_random_saturation")
def stateless_random_saturation(image, lower, upper, seed):
    _check_range(lower, upper, "")
    return adjust_saturation(image, _random_scalar(lower, upper, seed, True))


def _check_hue(max_delta):
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")


@export("image.random_hue")
def random_hue(image, max_delta, seed=None):
    _check_hue(max_delta)
    return adjust_hue(image, _random_scalar(-max_delta, max_delta, seed, False))


@export("image.stateless_random_hue")
def stateless_random_hue(image, max_delta, seed):
    _check_hue(max_delta)
    return adjust_hue(image, _random_scalar(-max_delta, max_delta, seed, True))


@export("image.total_variation")
def total_variation(images, name=None):
    """The sum of absolute differences between neighbouring pixels, per image of a batch."""
    x = to_tensor(images)
    axes = [0, 1, 2] if len(x.shape) == 3 else [1, 2, 3]
    dy = x[..., 1:, :, :] - x[..., :-1, :, :]
    dx = x[..., :, 1:, :] - x[..., :, :-1, :]
    return _ops.reduce_sum(_ops.abs(dy), axis=axes) + _ops.reduce_sum(_ops.abs(dx), axis=axes)


@export("image.image_gradients")
def image_gradients(image):
    """(dy, dx): next row (column) minus this one, zero in the last row (column)."""
    x = to_tensor(image)
    if len(x.shape) != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {tuple(x.shape)}.")
    dy = _array.pad(x[:, 1:] - x[:, :-1], [[0, 0], [0, 1], [0, 0], [0, 0]])
    dx = _array.pad(x[:, :, 1:] - x[:, :, :-1], [[0, 0], [0, 0], [0, 1], [0, 0]])
    return dy, dx


@export("image.sobel_edges")
def sobel_edges(image):
    """[batch, h, w, depth, 2]: the Sobel y and x responses of each channel (edges reflected)."""
    x = to_tensor(image)
    if not x.dtype.is_floating:
        x = _ops.cast(x, _dt.float32)
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
    depth = x.shape[-1]
    if depth is None:
        raise NotImplementedError("jitflow's image.sobel_edges needs the depth when tracing")
    padded = _array.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    outs = []
    for k in (ky, ky.T):
        f = _ops.constant(np.tile(k[:, :, None, None], (1, 1, depth, 1)), x.dtype)
        outs.append(depthwise_conv2d(padded, f, [1, 1, 1, 1], "VALID"))
    return _ops.stack(outs, axis=-1)


@export("image.psnr")
def psnr(a, b, max_val, name=None):
    """Peak signal-to-noise ratio per image: 20 log10(max_val) - 10 log10(mean squared error)."""
    x, y = to_tensor(a), to_tensor(b)
    mv = _ops.cast(max_val, _dt.float32)
    if not x.dtype.is_floating:
        mv = convert_image_dtype(_ops.cast(max_val, x.dtype), _dt.float32)
    x, y = convert_image_dtype(x, _dt.float32), convert_image_dtype(y, _dt.float32)
    mse = _ops.reduce_mean(_ops.square(x - y), axis=[-3, -2, -1])
    return 20.0 * _ops.log(mv) / np.log(10.0) - np.float32(10.0 / np.log(10.0)) * _ops.log(mse)


__all__ = ["adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue", "adjust_saturation",
           "convert_image_dtype", "grayscale_to_rgb", "hsv_to_rgb", "image_gradients", "per_image_standardization",
           "psnr", "random_brightness", "random_contrast", "random_hue", "random_saturation", "rgb_to_grayscale",
           "rgb_to_hsv", "rgb_to_yiq", "rgb_to_yuv", "sobel_edges", "stateless_random_brightness",
           "stateless_random_contrast", "stateless_random_hue", "stateless_random_saturation", "total_variation",
           "yiq_to_rgb", "yuv_to_rgb"]
