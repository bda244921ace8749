"""jf.keras's random image augmentation layers. A factor range of one value makes a draw
deterministic, so the output is compared with a float64 numpy reference of TF's
ImageProjectiveTransformV3 (written here, per pixel, with TF's fill modes and rounding) fed
Keras 3's transform matrices; random draws are checked for their range and per-image
independence; inference is the identity."""
import math

import numpy as np
import pytest

import jitflow as jf

layers = jf.keras.layers


def _fold(v, n, mode):
    if mode == "constant":
        return v
    if mode == "nearest":
        return min(max(v, 0.0), n - 1.0)
    if n <= 1:
        return 0.0
    if mode == "reflect":
        if v < 0:
            if v < -2 * n:
                v = 2 * n * int(-v / (2 * n)) + v
            v = v + 2 * n if v < -n else -v - 1
        elif v > n - 1:
            v -= 2 * n * int(v / (2 * n))
            if v >= n:
                v = 2 * n - v - 1
    elif mode == "wrap":
        if v < 0:
            v += n * (int(-v / (n - 1)) + 1)
        elif v > n - 1:
            v -= n * int(v / (n - 1))
    return min(max(v, 0.0), n - 1.0)


def transform_ref(images, m, interpolation="bilinear", fill_mode="reflect", fill_value=0.0):
    n, h, w, c = images.shape
    out = np.zeros(images.shape)

    def read(b, y, x):
        if 0 <= y <= h - 1 and 0 <= x <= w - 1:
            return images[b, int(y), int(x)]
        return np.full(c, fill_value)

    for b in range(n):
        a0, a1, a2, b0, b1, b2, c0, c1 = m
        for y in range(h):
            for x in range(w):
                k = c0 * x + c1 * y + 1
                sx = _fold((a0 * x + a1 * y + a2) / k, w, fill_mode)
                sy = _fold((b0 * x + b1 * y + b2) / k, h, fill_mode)
                if interpolation == "nearest":
                    out[b, y, x] = read(b, math.copysign(math.floor(abs(sy) + 0.5), sy),
                                        math.copysign(math.floor(abs(sx) + 0.5), sx))
                    continue
                y0, x0 = math.floor(sy), math.floor(sx)
                top = (x0 + 1 - sx) * read(b, y0, x0) + (sx - x0) * read(b, y0, x0 + 1)
                bottom = (x0 + 1 - sx) * read(b, y0 + 1, x0) + (sx - x0) * read(b, y0 + 1, x0 + 1)
                out[b, y, x] = (y0 + 1 - sy) * top + (sy - y0) * bottom
    return out


def _rotation(turns, h, w):
    a = turns * 2 * math.pi
    cx, cy = (w - 1) / 2, (h - 1) / 2
    cos, sin = math.cos(a), math.sin(a)
    return [cos, -sin, cx - cx * cos + cy * sin, sin, cos, cy - cx * sin - cy * cos, 0, 0]


@pytest.mark.parametrize("turns,kw", [(0.083, {}), (-0.1, {"fill_mode": "constant", "fill_value": 0.5}),
                                      (0.13, {"fill_mode": "wrap"}), (0.13, {"fill_mode": "nearest"}),
                                      (0.2, {"interpolation": "nearest", "fill_mode": "reflect"})])
def test_rotation_matches_the_projective_transform(turns, kw, rng):
    im = rng.normal(size=(2, 7, 6, 3)).astype(np.float32)
    got = layers.RandomRotation((turns, turns), **kw)(im, training=True).numpy()
    want = transform_ref(im.astype(np.float64), _rotation(turns, 7, 6), **kw)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_quarter_turn_is_rot90(rng):
    im = rng.normal(size=(1, 5, 5, 2)).astype(np.float32)
    got = layers.RandomRotation((0.25, 0.25), interpolation="nearest")(im, training=True).numpy()
    np.testing.assert_array_equal(got[0], np.rot90(im[0], 1))


@pytest.mark.parametrize("dy,dx,mode", [(0.3, -0.45, "reflect"), (-0.7, 0.2, "wrap"), (0.2, 0.0, "constant")])
def test_translation(dy, dx, mode, rng):
    im = rng.normal(size=(2, 7, 6, 3)).astype(np.float32)
    got = layers.RandomTranslation((dy, dy), (dx, dx), fill_mode=mode)(im, training=True).numpy()
    want = transform_ref(im.astype(np.float64), [1, 0, -dx * 6, 0, 1, -dy * 7, 0, 0], fill_mode=mode)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("hz,wz,mode", [(0.4, None, "reflect"), (-0.3, 0.2, "constant")])
def test_zoom(hz, wz, mode, rng):
    im = rng.normal(size=(1, 7, 6, 2)).astype(np.float32)
    layer = layers.RandomZoom((hz, hz), None if wz is None else (wz, wz), fill_mode=mode)
    got = layer(im, training=True).numpy()
    zy, zx = 1 + hz, 1 + (hz if wz is None else wz)
    want = transform_ref(im.astype(np.float64), [zx, 0, 2.5 * (1 - zx), 0, zy, 3 * (1 - zy), 0, 0], fill_mode=mode)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_draws_are_per_image_and_inference_is_the_identity(rng):
    im = np.repeat(rng.normal(size=(1, 8, 8, 1)).astype(np.float32), 6, axis=0)
    for layer in (layers.RandomRotation(0.2, seed=1), layers.RandomTranslation(0.2, 0.2, seed=1),
                  layers.RandomZoom(0.3, seed=1), layers.RandomContrast(0.5, seed=1),
                  layers.RandomBrightness(0.3, seed=1, value_range=(-5, 5)), layers.RandomCrop(5, 5, seed=1)):
        if not isinstance(layer, layers.RandomCrop):
            np.testing.assert_array_equal(layer(im, training=False).numpy(), im)
        out = layer(im, training=True).numpy()
        assert len({o.tobytes() for o in out}) > 1, type(layer).__name__  # each image its own draw


def test_contrast_brightness_and_crop(rng):
    # values in [100, 150] never clip: out = (x - mean) * c + mean with one c in [0.5, 1.5] per image
    im = rng.uniform(100, 150, size=(3, 4, 5, 3)).astype(np.float32)
    got = layers.RandomContrast(0.5, seed=2)(im, training=True).numpy()
    mean = im.astype(np.float64).mean(axis=(1, 2), keepdims=True)
    c = (got - mean) / (im - mean)
    for ci in c:
        np.testing.assert_allclose(ci, ci.flat[0], rtol=1e-3)
        assert 0.5 <= ci.flat[0] <= 1.5
    bright = layers.RandomBrightness((0.1, 0.1))(im, training=True).numpy()
    np.testing.assert_allclose(bright, np.clip(im + 25.5, 0, 255), rtol=1e-5)
    crop = layers.RandomCrop(2, 3, seed=0)
    out = crop(im, training=True).numpy()
    for o, i in zip(out, im):  # each output is some 2x3 window of its image
        assert any(np.array_equal(o, i[t:t + 2, s:s + 3]) for t in range(3) for s in range(3))
    np.testing.assert_array_equal(crop(im, training=False).numpy(), im[:, 1:3, 1:4])
    with pytest.raises(ValueError, match="factor"):
        layers.RandomBrightness(1.5)


def test_augmentation_inside_a_traced_function(rng):
    """The layers trace: a draw per call (the seed state moves on) and unknown batch/spatial dims."""
    im = rng.normal(size=(2, 6, 5, 1)).astype(np.float32)
    model = jf.keras.Sequential([layers.RandomFlip("horizontal", seed=3), layers.RandomRotation(0.1, seed=3),
                                 layers.RandomZoom(0.2, seed=3)])
    f = jf.function(lambda x: model(x, training=True),
                    input_signature=[jf.TensorSpec([None, None, None, 1], jf.float32)])
    a, b = f(jf.constant(im)).numpy(), f(jf.constant(im)).numpy()
    assert a.shape == im.shape and not np.array_equal(a, b)
    np.testing.assert_array_equal(jf.function(lambda x: model(x, training=False))(jf.constant(im)).numpy(), im)
