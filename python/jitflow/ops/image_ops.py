"""jf.image.resize, bilinear and nearest, as TF 2's tf.image.resize computes them (half-pixel
centres, no antialiasing): source coordinates from jf ops, rows and columns gathered and
interpolated, so the resize traces with unknown image sizes, compiles (gathers and elementwise
loops) and gets its gradient from its parts."""
import numbers

from .._C import Tensor
from ..core import dtypes as _dt
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from .dispatch import static_value, to_tensor

_OTHER_METHODS = ("bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic")


def _size_pair(size):
    if isinstance(size, Tensor):
        v = static_value(size)
        if v is None:
            raise NotImplementedError("jitflow's image.resize needs a size known when tracing")
        size = v.tolist()
    size = list(size)
    if len(size) != 2 or not all(isinstance(s, numbers.Integral) for s in size):
        raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
    if any(s <= 0 for s in size):
        raise ValueError("'size' must be positive")
    return [int(s) for s in size]


def _source(out, in_size):
    """float32 source coordinates (o + 0.5) * in / out of the output positions along one dim."""
    in_f = _ops.cast(in_size, _dt.float32)
    scale = in_f / float(out)
    return (_ops.cast(_ops.range(out), _dt.float32) + 0.5) * scale


def _nearest(x, axis, out, in_size):
    idx = _ops.cast(_ops.floor(_source(out, in_size)), _dt.int32)
    idx = _ops.minimum(idx, _ops.cast(in_size, _dt.int32) - 1)
    return _array.gather(x, idx, axis=axis)


def _bilinear(x, axis, out, in_size):
    src = _source(out, in_size) - 0.5
    low = _ops.floor(src)
    frac = src - low
    last = _ops.cast(in_size, _dt.int32) - 1
    lo = _ops.maximum(_ops.cast(low, _dt.int32), 0)
    hi = _ops.minimum(_ops.cast(_ops.ceil(src), _dt.int32), last)
    shape = [1] * len(x.shape)
    shape[axis] = out
    frac = _ops.reshape(frac, shape)
    a, b = _array.gather(x, lo, axis=axis), _array.gather(x, hi, axis=axis)
    return a + (b - a) * frac


@export("image.resize")
def resize(images, size, method="bilinear", preserve_aspect_ratio=False, antialias=False, name=None):
    """images [batch, height, width, channels] (or one image without the batch dim) resized to
    `size`; bilinear gives float32 (as TF), nearest keeps the dtype."""
    x = to_tensor(images)
    rank = len(x.shape)
    if rank not in (3, 4):
        raise ValueError("'images' must have either 3 or 4 dimensions.")
    method = getattr(method, "value", method)
    if method in _OTHER_METHODS:
        raise NotImplementedError(f"jitflow does not implement image.resize with method={method!r} yet")
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"Resize method is not implemented: {method}")
    if antialias:
        raise NotImplementedError("jitflow does not implement image.resize with antialias=True yet")
    new_h, new_w = _size_pair(size)
    if rank == 3:
        x = _ops.expand_dims(x, 0)
    h_ax, w_ax = 1, 2
    dims = _ops.shape(x)
    h, w = x.shape[1], x.shape[2]
    if preserve_aspect_ratio:
        if h is None or w is None:
            raise NotImplementedError("image.resize(preserve_aspect_ratio=True) needs the image size when tracing")
        scale = min(new_h / h, new_w / w)
        new_h, new_w = round(scale * h), round(scale * w)
    h_in = h if h is not None else dims[1]
    w_in = w if w is not None else dims[2]
    if method == "nearest":
        y = _nearest(_nearest(x, h_ax, new_h, h_in), w_ax, new_w, w_in)
    else:
        if x.dtype != _dt.float32:
            x = _ops.cast(x, _dt.float32)
        # TF interpolates along the width first, then between the two rows.
        y = _bilinear(_bilinear(x, w_ax, new_w, w_in), h_ax, new_h, h_in)
    if rank == 3:
        y = _ops.squeeze(y, [0])
    return _ops.identity(y, name=name) if name else y


__all__ = ["resize"]
