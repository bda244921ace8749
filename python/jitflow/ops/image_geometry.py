"""tf.image's geometric functions on [height, width, channels] images or [batch, ...] batches of
them: flips (fixed, random, stateless random), transpose, rot90, central and bounding-box crops,
padding, resize_with_crop_or_pad / resize_with_pad, random_crop, extract_patches; written with
jf ops, so they trace and compile where their parts do."""
import enum

from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from . import debugging as _debug
from . import random_ops as _random
from . import scatter_ops as _scatter
from .conv_ops import conv2d
from .dispatch import to_tensor
from .image_ops import resize


@export("image.ResizeMethod")
class ResizeMethod(str, enum.Enum):
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def _image(image, name="image"):
    x = to_tensor(image)
    if len(x.shape) not in (3, 4):
        raise ValueError(f"'{name}' (shape {tuple(x.shape)}) must have either 3 or 4 dimensions.")
    return x


def _hw_axes(x):
    return (0, 1) if len(x.shape) == 3 else (1, 2)


@export("image.flip_left_right")
def flip_left_right(image):
    x = _image(image)
    return _array.reverse(x, [_hw_axes(x)[1]])


@export("image.flip_up_down")
def flip_up_down(image):
    x = _image(image)
    return _array.reverse(x, [_hw_axes(x)[0]])


@export("image.transpose")
def transpose(image, name=None):
    x = _image(image)
    return _ops.transpose(x, [1, 0, 2] if len(x.shape) == 3 else [0, 2, 1, 3])


@export("image.rot90")
def rot90(image, k=1, name=None):
    """Counter-clockwise quarter turns, k of them."""
    x = _image(image)
    k = int(k) % 4
    if k == 0:
        return x
    if k == 2:
        return _array.reverse(x, list(_hw_axes(x)))
    if k == 1:
        return transpose(flip_left_right(x))
    return flip_left_right(transpose(x))


def _random_flip(x, flip, coin):
    """x with `flip` applied to the images (or the image) where coin < 0.5."""
    if len(x.shape) == 3:
        return _ops.where(coin[0] < 0.5, flip(x), x)
    keep = _ops.reshape(coin < 0.5, [-1, 1, 1, 1])
    return _ops.where(keep, flip(x), x)


def _coin_shape(x):
    return [1] if len(x.shape) == 3 else _ops.shape(x)[0:1]


@export("image.random_flip_left_right")
def random_flip_left_right(image, seed=None):
    x = _image(image)
    return _random_flip(x, flip_left_right, _random.uniform(_coin_shape(x), seed=seed))


@export("image.random_flip_up_down")
def random_flip_up_down(image, seed=None):
    x = _image(image)
    return _random_flip(x, flip_up_down, _random.uniform(_coin_shape(x), seed=seed))


@export("image.stateless_random_flip_left_right")
def stateless_random_flip_left_right(image, seed):
    x = _image(image)
    return _random_flip(x, flip_left_right, _random.stateless_uniform(_coin_shape(x), seed))


@export("image.stateless_random_flip_up_down")
def stateless_random_flip_up_down(image, seed):
    x = _image(image)
    return _random_flip(x, flip_up_down, _random.stateless_uniform(_coin_shape(x), seed))


def _static_hw(x, what):
    h, w = (x.shape[a] for a in _hw_axes(x))
    if h is None or w is None:
        raise NotImplementedError(f"jitflow's image.{what} needs the image's height and width when tracing")
    return h, w


@export("image.central_crop")
def central_crop(image, central_fraction):
    """The central region of each image, central_fraction of its height and width (TF's
    rounding: the start is int((size - size * fraction) / 2))."""
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    x = _image(image)
    if central_fraction == 1.0:
        return x
    h, w = _static_hw(x, "central_crop")
    top, left = int((h - h * central_fraction) / 2), int((w - w * central_fraction) / 2)
    return crop_to_bounding_box(x, top, left, h - 2 * top, w - 2 * left)


@export("image.crop_to_bounding_box")
def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    x = _image(image)
    h, w = (x.shape[a] for a in _hw_axes(x))
    for v, what in ((offset_height, "offset_height"), (offset_width, "offset_width")):
        if isinstance(v, int) and v < 0:
            raise ValueError(f"{what} must be >= 0.")
    for v, what in ((target_height, "target_height"), (target_width, "target_width")):
        if isinstance(v, int) and v <= 0:
            raise ValueError(f"{what} must be > 0.")
    if h is not None and isinstance(offset_height, int) and h < offset_height + target_height:
        raise ValueError("height must be >= target + offset.")
    if w is not None and isinstance(offset_width, int) and w < offset_width + target_width:
        raise ValueError("width must be >= target + offset.")
    index = [slice(None)] * len(x.shape)
    hy, wx = _hw_axes(x)
    index[hy] = slice(offset_height, offset_height + target_height)
    index[wx] = slice(offset_width, offset_width + target_width)
    return x[tuple(index)]


@export("image.pad_to_bounding_box")
def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """Zeros above and to the left (the offsets) and below and to the right, to the target size."""
    x = _image(image)
    h, w = _static_hw(x, "pad_to_bounding_box")
    after_h, after_w = target_height - offset_height - h, target_width - offset_width - w
    if offset_height < 0 or offset_width < 0:
        raise ValueError("offset_height and offset_width must be >= 0")
    if after_h < 0:
        raise ValueError("height must be <= target - offset")
    if after_w < 0:
        raise ValueError("width must be <= target - offset")
    pads = [[offset_height, after_h], [offset_width, after_w], [0, 0]]
    return _array.pad(x, pads if len(x.shape) == 3 else [[0, 0], *pads])


@export("image.resize_with_crop_or_pad", "image.resize_image_with_crop_or_pad")
def resize_with_crop_or_pad(image, target_height, target_width):
    """Centre-crops where the image is larger and zero-pads (centred) where it is smaller."""
    x = _image(image)
    h, w = _static_hw(x, "resize_with_crop_or_pad")
    crop_h, crop_w = max(h - target_height, 0) // 2, max(w - target_width, 0) // 2
    x = crop_to_bounding_box(x, crop_h, crop_w, min(target_height, h), min(target_width, w))
    pad_h, pad_w = max(target_height - h, 0) // 2, max(target_width - w, 0) // 2
    return pad_to_bounding_box(x, pad_h, pad_w, target_height, target_width)


@export("image.resize_with_pad")
def resize_with_pad(image, target_height, target_width, method="bilinear", antialias=False):
    """Resized to fit inside the target keeping the aspect ratio, then zero-padded (centred)."""
    x = _image(image)
    h, w = _static_hw(x, "resize_with_pad")
    ratio = max(w / target_width, h / target_height)
    new_h, new_w = h / ratio, w / ratio
    resized = resize(x, [int(new_h), int(new_w)], method=method, antialias=antialias)
    # TF centres by the unrounded size: the padding is floor((target - size / ratio) / 2).
    pad_h, pad_w = max(0, int((target_height - new_h) // 2)), max(0, int((target_width - new_w) // 2))
    return pad_to_bounding_box(resized, pad_h, pad_w, target_height, target_width)


@export("image.random_crop", "random_crop")
def random_crop(value, size, seed=None, name=None):
    """A random window of `size` (one entry per dim of value), each offset uniform over the
    positions the window fits at."""
    return _crop_at(value, size, lambda shape, maxval: _random.uniform(shape, maxval=maxval, dtype=_dt.int32,
                                                                        seed=seed))


@export("image.stateless_random_crop")
def stateless_random_crop(value, size, seed, name=None):
    return _crop_at(value, size, lambda shape, maxval: _random.stateless_uniform(shape, seed, maxval=maxval,
                                                                                  dtype=_dt.int32))


def _crop_at(value, size, draw):
    x = to_tensor(value)
    size = [int(s) for s in size]
    if len(size) != len(x.shape):
        raise ValueError(f"`size` must have as many entries ({len(size)}) as `value` has dims ({len(x.shape)})")
    static = list(x.shape)
    if all(d is not None for d in static) and any(d < s for d, s in zip(static, size)):
        raise InvalidArgumentError(f"Need value.shape >= size, got {static} {size}")
    dims = _ops.shape(x)
    limit = dims - _ops.constant(size, dims.dtype) + 1
    _debug.Assert(_ops.reduce_min(limit) > 0, ["Need value.shape >= size, got", dims, size])
    offsets = _ops.floormod(draw([len(size)], 2 ** 31 - 1), _ops.maximum(_ops.cast(limit, _dt.int32), 1))
    return _scatter.slice(x, offsets, size)


@export("image.extract_patches")
def extract_patches(images, sizes, strides, rates, padding, name=None):
    """[batch, rows, cols, size_h * size_w * depth] patches (TF's ExtractImagePatches): each
    output pixel holds its window's pixels in row-major order, depth innermost."""
    x = _image(images)
    if len(x.shape) != 4:
        raise ValueError("extract_patches takes [batch, height, width, depth] images")
    kh, kw = int(sizes[1]), int(sizes[2])
    sh, sw = int(strides[1]), int(strides[2])
    rh, rw = int(rates[1]), int(rates[2])
    c = x.shape[3]
    if c is None:
        raise NotImplementedError("jitflow's image.extract_patches needs the depth when tracing")
    # A convolution with one-hot filters copies each window's pixels into the output channels.
    eye = _array.eye(kh * kw * c, dtype=x.dtype if x.dtype.is_floating else _dt.float32)
    filters = _ops.reshape(eye, [kh, kw, c, kh * kw * c])
    xf = x if x.dtype.is_floating else _ops.cast(x, _dt.float32)
    out = conv2d(xf, filters, [1, sh, sw, 1], padding, dilations=[1, rh, rw, 1])
    return out if x.dtype.is_floating else _ops.cast(out, x.dtype)


__all__ = ["ResizeMethod", "central_crop", "crop_to_bounding_box", "extract_patches", "flip_left_right",
           "flip_up_down", "pad_to_bounding_box", "random_crop", "random_flip_left_right", "random_flip_up_down",
           "resize_with_crop_or_pad", "resize_with_pad", "rot90", "stateless_random_crop",
           "stateless_random_flip_left_right", "stateless_random_flip_up_down", "transpose"]
