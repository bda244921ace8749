"""tf.image.crop_and_resize (bilinear or nearest samples of boxes, in normalized coordinates,
of a batch of images) and tf.image.ssim (Wang et al.'s structural similarity with TF's 11x11
Gaussian window), written with jf ops: they trace, and their gradients are those ops'."""
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from . import nn_ops as _nn
from . import scatter_ops as _scatter
from .conv_ops import depthwise_conv2d
from .dispatch import to_tensor
from .image_color import convert_image_dtype


def _sample_positions(lo, hi, size, out):
    """Where each of `out` samples of every box falls along one image axis of `size` pixels
    ([boxes, out], float32), and whether it is inside the image."""
    extent = _ops.cast(size - 1, _dt.float32)
    if out > 1:
        steps = _ops.cast(_ops.range(out), _dt.float32) / float(out - 1)
        pos = _ops.expand_dims(lo * extent, 1) + _ops.expand_dims((hi - lo) * extent, 1) * _ops.expand_dims(steps, 0)
    else:
        pos = _ops.expand_dims(0.5 * (lo + hi) * extent, 1)
    inside = _ops.logical_and(pos >= 0.0, pos <= extent)
    return pos, inside


def _gather(image, box_indices, ys, xs):
    """image[box_indices[n], ys[n, i], xs[n, j], :] as [n, crop_h, crop_w, channels]."""
    n, h, w = _ops.shape(ys)[0], _ops.shape(ys)[1], _ops.shape(xs)[1]
    b = _ops.broadcast_to(_ops.reshape(box_indices, [-1, 1, 1]), _ops.stack([n, h, w]))
    y = _ops.broadcast_to(_ops.expand_dims(ys, 2), _ops.stack([n, h, w]))
    x = _ops.broadcast_to(_ops.expand_dims(xs, 1), _ops.stack([n, h, w]))
    return _scatter.gather_nd(image, _ops.stack([b, y, x], axis=-1))


@export("image.crop_and_resize")
def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear", extrapolation_value=0.0, name=None):
    """Each box [y1, x1, y2, x2] (normalized: 0 and 1 are the first and last pixel centers) of
    image[box_indices[i]] resampled to crop_size (float32 [boxes, crop_h, crop_w, channels]);
    samples outside the image are extrapolation_value."""
    if method not in ("bilinear", "nearest"):
        raise InvalidArgumentError(f"method must be 'bilinear' or 'nearest', got {method!r}")
    image = _ops.cast(to_tensor(image), _dt.float32)
    boxes = _ops.cast(to_tensor(boxes), _dt.float32)
    box_indices = _ops.cast(to_tensor(box_indices), _dt.int32)
    crop_h, crop_w = (int(v) for v in (crop_size.numpy() if hasattr(crop_size, "numpy") else crop_size))
    if crop_h <= 0 or crop_w <= 0:
        raise InvalidArgumentError("crop dimensions must be positive")
    if len(image.shape) != 4 or len(boxes.shape) != 2:
        raise InvalidArgumentError(f"image must be 4-D and boxes 2-D, got shapes {tuple(image.shape)} and "
                                   f"{tuple(boxes.shape)}")
    height, width = _ops.shape(image)[1], _ops.shape(image)[2]
    ys, y_in = _sample_positions(boxes[:, 0], boxes[:, 2], height, crop_h)
    xs, x_in = _sample_positions(boxes[:, 1], boxes[:, 3], width, crop_w)
    inside = _ops.expand_dims(_ops.logical_and(_ops.expand_dims(y_in, 2), _ops.expand_dims(x_in, 1)), 3)
    y_max, x_max = height - 1, width - 1

    def index(p, top):
        return _ops.minimum(_ops.maximum(_ops.cast(p, _dt.int32), 0), top)

    if method == "nearest":
        # std::round: halves away from zero (jf.round rounds them to even)
        near_y, near_x = _ops.floor(ys + 0.5), _ops.floor(xs + 0.5)
        out = _gather(image, box_indices, index(near_y, y_max), index(near_x, x_max))
    else:
        y0, x0 = _ops.floor(ys), _ops.floor(xs)
        y1, x1 = _ops.ceil(ys), _ops.ceil(xs)
        dy = _ops.expand_dims(_ops.expand_dims(ys - y0, 2), 3)
        dx = _ops.expand_dims(_ops.expand_dims(xs - x0, 1), 3)
        t, b = index(y0, y_max), index(y1, y_max)
        left, right = index(x0, x_max), index(x1, x_max)
        top = _gather(image, box_indices, t, left)
        top = top + (_gather(image, box_indices, t, right) - top) * dx
        bottom = _gather(image, box_indices, b, left)
        bottom = bottom + (_gather(image, box_indices, b, right) - bottom) * dx
        out = top + (bottom - top) * dy
    fill = _ops.cast(_ops.convert_to_tensor(extrapolation_value), _dt.float32)
    return _ops.where(inside, out, _ops.zeros_like(out) + fill)


def _gaussian_window(size, sigma):
    """TF's normalized size x size Gaussian, [size, size, 1, 1] (a softmax of -r^2 / 2 sigma^2)."""
    coords = _ops.cast(_ops.range(size), _dt.float32) - (size - 1) / 2.0
    g = -0.5 * _ops.square(coords) / (sigma * sigma)
    g = _ops.reshape(_ops.reshape(g, [1, -1]) + _ops.reshape(g, [-1, 1]), [1, -1])
    return _ops.reshape(_nn.softmax(g), [size, size, 1, 1])


@export("image.ssim")
def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, return_index_map=False):
    """The mean structural similarity of two batches of images [..., h, w, c] per image: local
    means, variances and covariance under a Gaussian window (VALID positions only), luminance
    times contrast-structure, averaged over positions and then channels."""
    if return_index_map:
        raise NotImplementedError("jitflow's image.ssim does not implement return_index_map=True yet")
    img1, img2 = to_tensor(img1), to_tensor(img2)
    max_val = convert_image_dtype(_ops.cast(_ops.convert_to_tensor(max_val), img1.dtype), _dt.float32)
    x, y = convert_image_dtype(img1, _dt.float32), convert_image_dtype(img2, _dt.float32)
    for s in (x.shape, y.shape):
        if len(s) < 3 or (s[-3] is not None and s[-3] < filter_size) or (s[-2] is not None and s[-2] < filter_size):
            raise InvalidArgumentError(f"image.ssim: images of shape {tuple(s)} are smaller than the "
                                       f"{filter_size}x{filter_size} filter")
    window = _array.tile(_gaussian_window(filter_size, float(filter_sigma)), _ops.stack([1, 1, _ops.shape(x)[-1], 1]))

    def local_mean(t):
        shape = _ops.shape(t)
        flat = _ops.reshape(t, _ops.concat([[-1], shape[-3:]], 0))
        out = depthwise_conv2d(flat, window, strides=[1, 1, 1, 1], padding="VALID")
        return _ops.reshape(out, _ops.concat([shape[:-3], _ops.shape(out)[1:]], 0))

    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mean_x, mean_y = local_mean(x), local_mean(y)
    cross = mean_x * mean_y * 2.0
    luminance = (cross + c1) / (_ops.square(mean_x) + _ops.square(mean_y) + c1)
    contrast = (local_mean(x * y) * 2.0 - cross + c2) / (
        local_mean(_ops.square(x) + _ops.square(y)) - (_ops.square(mean_x) + _ops.square(mean_y)) + c2)
    per_channel = _ops.reduce_mean(luminance * contrast, axis=[-3, -2])
    return _ops.reduce_mean(per_channel, axis=[-1])
