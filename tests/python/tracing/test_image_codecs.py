"""jf.image / jf.io image codecs on Pillow: PNG round trips exactly (eagerly, in a jf.function and
in a dataset map), channel conversions as TF's (gray = Pillow's ITU-R 601 luma), JPEG within the
codec's loss on a smooth image, GIF frames, and TF's InvalidArgumentError for bad data."""
import io

import numpy as np
import pytest
from PIL import Image

import jitflow as jf


@pytest.fixture
def rgb(rng):
    return (rng.uniform(size=(6, 5, 3)) * 255).astype(np.uint8)


def test_png_round_trip_and_channels(rgb):
    png = jf.image.encode_png(rgb)
    assert png.numpy()[:8] == b"\x89PNG\r\n\x1a\n"
    back = jf.image.decode_png(png)
    assert back.dtype == jf.uint8
    np.testing.assert_array_equal(back.numpy(), rgb)
    gray = jf.image.decode_png(png, channels=1).numpy()
    want = np.asarray(Image.fromarray(rgb).convert("L"))[:, :, None]
    np.testing.assert_array_equal(gray, want)
    rgba = jf.io.decode_png(png, channels=4).numpy()
    assert rgba.shape == (6, 5, 4) and np.all(rgba[..., 3] == 255)
    np.testing.assert_array_equal(jf.io.decode_image(png).numpy(), rgb)
    as_float = jf.io.decode_image(png, dtype=jf.float32, expand_animations=False).numpy()
    np.testing.assert_allclose(as_float, rgb / 255.0, rtol=1e-6)


def test_codecs_in_functions_and_datasets(rgb, tmp_path):
    path = tmp_path / "img.png"
    path.write_bytes(jf.image.encode_png(rgb).numpy())
    load = jf.function(lambda p: jf.image.convert_image_dtype(jf.image.decode_png(jf.io.read_file(p), channels=3),
                                                              jf.float32))
    out = load(jf.constant(str(path)))
    assert out.shape == (6, 5, 3)
    np.testing.assert_allclose(out.numpy(), rgb / 255.0, rtol=1e-6)
    ds = jf.data.Dataset.from_tensor_slices([str(path), str(path)]).map(
        lambda p: jf.image.decode_png(jf.io.read_file(p)))
    for img in ds:
        np.testing.assert_array_equal(img.numpy(), rgb)


def test_jpeg_and_gif():
    smooth = np.tile(np.linspace(0, 255, 32).astype(np.uint8)[None, :, None], (32, 1, 3))
    jpg = jf.image.encode_jpeg(smooth, quality=95)
    assert bool(jf.image.is_jpeg(jpg).numpy()) and not bool(jf.image.is_jpeg(jf.image.encode_png(smooth)).numpy())
    np.testing.assert_array_equal(jf.image.extract_jpeg_shape(jpg).numpy(), [32, 32, 3])
    decoded = jf.image.decode_jpeg(jpg).numpy()
    assert decoded.shape == (32, 32, 3) and np.abs(decoded.astype(int) - smooth).max() <= 3
    frames = [Image.new("RGB", (4, 3), c) for c in ((255, 0, 0), (0, 0, 255))]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:])
    gif = jf.image.decode_gif(buf.getvalue()).numpy()
    assert gif.shape == (2, 3, 4, 3)
    np.testing.assert_array_equal(gif[0, 0, 0], [255, 0, 0])
    np.testing.assert_array_equal(gif[1, 2, 3], [0, 0, 255])
    with pytest.raises(jf.errors.InvalidArgumentError, match="invalid image data"):
        jf.image.decode_png(b"not an image")
    with pytest.raises(jf.errors.InvalidArgumentError, match="uint8"):
        jf.image.encode_png(np.zeros((2, 2, 3), np.float32))
