"""tf.image / tf.io image decoding and encoding (PNG, JPEG, BMP, GIF) on Pillow, the imaging
library: decode_png, decode_jpeg, decode_bmp, decode_gif, decode_image, encode_png, encode_jpeg,
is_jpeg and extract_jpeg_shape. Eagerly they run on the values now; traced, as py_function
nodes, so they work in Dataset.map. JPEG pixels may differ from TF's by the DCT rounding of the
two libjpeg builds."""
import io

import numpy as np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as _ops
from .py_function import py_function

_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _pil():
    try:
        from PIL import Image  # only the programs that decode images need Pillow
    except ImportError:
        raise ImportError("jitflow decodes and encodes images with Pillow: pip install pillow") from None
    return Image


def _payload(contents):
    value = contents.numpy() if hasattr(contents, "numpy") else contents
    value = value.item() if isinstance(value, np.ndarray) else value
    if not isinstance(value, bytes):
        raise InvalidArgumentError("image contents must be a scalar string tensor")
    return value


def _open(data, what):
    image_mod = _pil()
    try:
        img = image_mod.open(io.BytesIO(data))
        img.load()
    except (OSError, ValueError, SyntaxError, EOFError) as e:  # Pillow's errors for unreadable data
        raise InvalidArgumentError(f"{what}: invalid image data ({e})") from None
    return img


def _pixels(img, channels):
    """[h, w, c] uint8: the image's own channels (channels=0) or converted to 1, 3 or 4."""
    if channels == 0:
        mode = {"L": "L", "LA": "LA", "RGB": "RGB", "RGBA": "RGBA", "P": "RGBA" if "transparency" in img.info
                else "RGB", "1": "L", "I;16": "L", "CMYK": "RGB"}.get(img.mode, "RGB")
    else:
        mode = _MODES[channels]
    arr = np.asarray(img.convert(mode), np.uint8)
    return arr[:, :, None] if arr.ndim == 2 else arr


def _check_channels(channels, allowed=(0, 1, 3, 4)):
    channels = int(channels or 0)
    if channels not in allowed:
        raise ValueError(f"channels must be in {allowed}, got {channels}")
    return channels


def _decode(contents, channels, fn, shape, dtype=_dt.uint8):
    if _C.is_tracing():
        return py_function(lambda t: fn(_payload(t)), [_ops.convert_to_tensor(contents)], Tout=TensorSpec(shape, dtype))
    return _ops.convert_to_tensor(fn(_payload(contents)), dtype)


@export("image.decode_png", "io.decode_png")
def decode_png(contents, channels=0, dtype=_dt.uint8, name=None):
    channels = _check_channels(channels)
    out_dtype = _dt.as_dtype(dtype)

    def run(data):
        arr = _pixels(_open(data, "decode_png"), channels)
        return arr.astype(np.uint16) * 257 if out_dtype == _dt.uint16 else arr
    return _decode(contents, channels, run, [None, None, channels or None], out_dtype)


@export("image.decode_jpeg", "io.decode_jpeg")
def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    channels = _check_channels(channels, (0, 1, 3))

    def run(data):
        img = _open(data, "decode_jpeg")
        if ratio != 1:
            img = img.reduce(int(ratio))
        return _pixels(img, channels)
    return _decode(contents, channels, run, [None, None, channels or None])


@export("image.decode_bmp", "io.decode_bmp")
def decode_bmp(contents, channels=0, name=None):
    channels = _check_channels(channels, (0, 3, 4))
    return _decode(contents, channels, lambda data: _pixels(_open(data, "decode_bmp"), channels),
                   [None, None, channels or None])


@export("image.decode_gif", "io.decode_gif")
def decode_gif(contents, name=None):
    """[frames, h, w, 3] uint8, every frame of the animation."""
    def run(data):
        img = _open(data, "decode_gif")
        frames = []
        for k in range(getattr(img, "n_frames", 1)):
            img.seek(k)
            frames.append(np.asarray(img.convert("RGB"), np.uint8))
        return np.stack(frames)
    return _decode(contents, 3, run, [None, None, None, 3])


@export("image.decode_image", "io.decode_image")
def decode_image(contents, channels=None, dtype=_dt.uint8, name=None, expand_animations=True):
    """Any of PNG, JPEG, BMP or GIF by its contents; GIFs are [frames, h, w, 3] with
    expand_animations, else their first frame; a float dtype scales to [0, 1]."""
    channels = _check_channels(channels)
    out_dtype = _dt.as_dtype(dtype)

    def run(data):
        img = _open(data, "decode_image")
        if img.format == "GIF" and expand_animations:
            frames = []
            for k in range(getattr(img, "n_frames", 1)):
                img.seek(k)
                frames.append(_pixels(img, channels or 3))
            arr = np.stack(frames)
        else:
            arr = _pixels(img, channels)
        return arr.astype(np.float32) / 255.0 if out_dtype.is_floating else arr
    shape = [None, None, channels or None] if not expand_animations else None
    if _C.is_tracing() and shape is None:
        raise NotImplementedError("jitflow's decode_image inside a jf.function needs expand_animations=False "
                                  "(the rank must be known when traced)")
    return _decode(contents, channels, run, shape, _dt.float32 if out_dtype.is_floating else _dt.uint8)


def _encode(image, fn):
    def run(arr):
        return np.array(fn(np.asarray(arr)), dtype=object)
    x = _ops.convert_to_tensor(image)
    if _C.is_tracing():
        return py_function(lambda t: run(t.numpy()), [x], Tout=TensorSpec([], _dt.string))
    return _ops.convert_to_tensor(fn(x.numpy()), _dt.string)


def _to_pil(arr):
    arr = np.asarray(arr)
    if arr.ndim != 3 or arr.shape[-1] not in _MODES:
        raise InvalidArgumentError(f"image must be 3-dimensional [height, width, channels] with 1-4 channels, got "
                                   f"shape {arr.shape}")
    if arr.dtype != np.uint8:
        raise InvalidArgumentError(f"image must be uint8, got {arr.dtype}")
    c = arr.shape[-1]
    return _pil().fromarray(arr[:, :, 0] if c == 1 else arr, _MODES[c])


@export("image.encode_png", "io.encode_png")
def encode_png(image, compression=-1, name=None):
    def fn(arr):
        out = io.BytesIO()
        _to_pil(arr).save(out, format="PNG", compress_level=6 if compression < 0 else int(compression))
        return out.getvalue()
    return _encode(image, fn)


@export("image.encode_jpeg", "io.encode_jpeg")
def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False, chroma_downsampling=True,
                density_unit="in", x_density=300, y_density=300, xmp_metadata="", name=None):
    def fn(arr):
        out = io.BytesIO()
        _to_pil(arr).save(out, format="JPEG", quality=int(quality), progressive=progressive,
                          optimize=optimize_size, subsampling=2 if chroma_downsampling else 0)
        return out.getvalue()
    return _encode(image, fn)


@export("image.is_jpeg", "io.is_jpeg")
def is_jpeg(contents, name=None):
    return _ops.convert_to_tensor(_payload(contents)[:3] == b"\xff\xd8\xff")


@export("image.extract_jpeg_shape", "io.extract_jpeg_shape")
def extract_jpeg_shape(contents, output_type=_dt.int32, name=None):
    img = _open(_payload(contents), "extract_jpeg_shape")
    channels = {"L": 1, "RGB": 3, "CMYK": 4}.get(img.mode, 3)
    return _ops.constant([img.height, img.width, channels], output_type)
