"""jf.image's geometric and colour functions against numpy (and Python's colorsys for HSV):
flips, rot90, crops and pads, convert_image_dtype's scaling and saturation, the adjustments, the
colour spaces, standardization, gradients, Sobel, PSNR, patches, and the random variants'
ranges; in eager mode and inside a jf.function."""
import colorsys

import numpy as np
import pytest

import jitflow as jf

img = jf.image


@pytest.fixture
def im(rng):
    return rng.uniform(size=(2, 5, 6, 3)).astype(np.float32)


def test_flips_rotations_and_transpose(im):
    np.testing.assert_array_equal(img.flip_left_right(im).numpy(), im[:, :, ::-1])
    np.testing.assert_array_equal(img.flip_up_down(im[0]).numpy(), im[0, ::-1])
    np.testing.assert_array_equal(img.transpose(im).numpy(), im.transpose(0, 2, 1, 3))
    for k in range(4):
        np.testing.assert_array_equal(img.rot90(im[0], k).numpy(), np.rot90(im[0], k))
        np.testing.assert_array_equal(img.rot90(im, k).numpy(), np.rot90(im, k, axes=(1, 2)))
    f = jf.function(lambda x: img.rot90(img.flip_left_right(x)))
    np.testing.assert_array_equal(f(jf.constant(im)).numpy(), np.rot90(im[:, :, ::-1], 1, axes=(1, 2)))


def test_crops_and_pads(im):
    np.testing.assert_array_equal(img.crop_to_bounding_box(im, 1, 2, 3, 3).numpy(), im[:, 1:4, 2:5])
    np.testing.assert_array_equal(img.pad_to_bounding_box(im, 1, 2, 8, 9).numpy(),
                                  np.pad(im, [(0, 0), (1, 2), (2, 1), (0, 0)]))
    np.testing.assert_array_equal(img.central_crop(im, 0.6).numpy(), im[:, 1:4, 1:5])  # int((5 - 3) / 2) = 1
    np.testing.assert_array_equal(img.resize_with_crop_or_pad(im, 3, 9).numpy(),
                                  np.pad(im[:, 1:4], [(0, 0), (0, 0), (1, 2), (0, 0)]))
    padded = img.resize_with_pad(im, 8, 8, method="nearest").numpy()
    assert padded.shape == (2, 8, 8, 3)
    assert np.all(padded[:, 6:] == 0) and np.any(padded[:, 0] != 0)  # TF pads by floor((8 - 6.67) / 2) = 0 rows
    with pytest.raises(ValueError, match="target \\+ offset"):
        img.crop_to_bounding_box(im, 3, 0, 3, 3)
    with pytest.raises(ValueError, match="central_fraction"):
        img.central_crop(im, 0.0)


def test_convert_image_dtype():
    ints = np.array([0, 1, 2 ** 31 - 1], np.int32)
    np.testing.assert_allclose(img.convert_image_dtype(ints, jf.float32).numpy(), ints / (2 ** 31 - 1), rtol=1e-6)
    floats = np.array([0.0, 0.5, 1.0, 1.7], np.float32)
    got = img.convert_image_dtype(floats, jf.int32, saturate=True).numpy()
    # float32 cannot hold 2**31 - 1: the saturation bound is the float32 below it, 2**31 - 128
    np.testing.assert_array_equal(got, [0, int(np.float32(0.5) * np.float32(2 ** 31 - 0.5)), 2 ** 31 - 128,
                                        2 ** 31 - 128])
    assert img.convert_image_dtype(floats, jf.float64).dtype == jf.float64


def test_adjustments(im):
    mean = im.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(img.adjust_brightness(im, 0.2).numpy(), im + 0.2, rtol=1e-6)
    np.testing.assert_allclose(img.adjust_contrast(im, 1.7).numpy(), (im - mean) * 1.7 + mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(img.adjust_gamma(im, 2.2, 1.5).numpy(), 1.5 * im ** 2.2, rtol=1e-5)
    gray = img.rgb_to_grayscale(im).numpy()
    np.testing.assert_allclose(gray[..., 0], im @ np.array([0.2989, 0.5870, 0.1140]), rtol=1e-5)
    np.testing.assert_array_equal(img.grayscale_to_rgb(gray).numpy(), np.repeat(gray, 3, -1))
    n = im[0].size
    std = np.maximum(im.std(axis=(1, 2, 3), keepdims=True), 1 / np.sqrt(n))
    np.testing.assert_allclose(img.per_image_standardization(im).numpy(),
                               (im - im.mean(axis=(1, 2, 3), keepdims=True)) / std, rtol=1e-4, atol=1e-5)


def test_hsv_hue_and_saturation_match_colorsys(im):
    flat = im.reshape(-1, 3).astype(np.float64)
    hsv = np.array([colorsys.rgb_to_hsv(*p) for p in flat])
    np.testing.assert_allclose(img.rgb_to_hsv(im).numpy().reshape(-1, 3), hsv, atol=1e-5)
    np.testing.assert_allclose(img.hsv_to_rgb(img.rgb_to_hsv(im)).numpy(), im, atol=1e-5)
    shifted = np.array([colorsys.hsv_to_rgb((h - 0.45) % 1.0, s, v) for h, s, v in hsv])
    np.testing.assert_allclose(img.adjust_hue(im, -0.45).numpy().reshape(-1, 3), shifted, atol=1e-5)
    saturated = np.array([colorsys.hsv_to_rgb(h, min(s * 1.8, 1.0), v) for h, s, v in hsv])
    np.testing.assert_allclose(img.adjust_saturation(im, 1.8).numpy().reshape(-1, 3), saturated, atol=1e-5)


def test_linear_colour_spaces_round_trip(im):
    yiq = np.array([[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617], [0.114, -0.32134392, 0.31119955]])
    np.testing.assert_allclose(img.rgb_to_yiq(im).numpy(), im @ yiq, rtol=1e-5, atol=1e-6)
    # TF's inverse matrices are rounded: a round trip is good to about 1e-4
    np.testing.assert_allclose(img.yiq_to_rgb(img.rgb_to_yiq(im)).numpy(), im, atol=2e-4)
    np.testing.assert_allclose(img.yuv_to_rgb(img.rgb_to_yuv(im)).numpy(), im, atol=2e-4)


def test_gradients_sobel_variation_psnr_patches(im):
    dy, dx = img.image_gradients(im)
    np.testing.assert_allclose(dy.numpy()[:, :-1], np.diff(im, axis=1), rtol=1e-6)
    assert np.all(dy.numpy()[:, -1] == 0) and np.all(dx.numpy()[:, :, -1] == 0)
    tv = np.abs(np.diff(im, axis=1)).sum(axis=(1, 2, 3)) + np.abs(np.diff(im, axis=2)).sum(axis=(1, 2, 3))
    np.testing.assert_allclose(img.total_variation(im).numpy(), tv, rtol=1e-5)
    padded = np.pad(im, [(0, 0), (1, 1), (1, 1), (0, 0)], mode="reflect")
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]])
    want = np.zeros(im.shape + (2,))
    for i in range(3):
        for j in range(3):
            window = padded[:, i:i + 5, j:j + 6]
            want[..., 0] += ky[i, j] * window
            want[..., 1] += ky.T[i, j] * window
    np.testing.assert_allclose(img.sobel_edges(im).numpy(), want, rtol=1e-4, atol=1e-5)
    mse = ((im - 0.8 * im) ** 2).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(img.psnr(im, 0.8 * im, 1.0).numpy(), -10 * np.log10(mse), rtol=1e-5)
    patches = img.extract_patches(im, [1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 1, 1], "VALID").numpy()
    assert patches.shape == (2, 2, 4, 18)
    np.testing.assert_array_equal(patches[1, 1, 2], im[1, 2:4, 2:5].reshape(-1))


def test_random_variants(im):
    batch = np.repeat(im[:1], 16, axis=0)
    flipped = img.random_flip_left_right(batch, seed=3).numpy()
    kinds = [np.array_equal(f, im[0, :, ::-1]) for f in flipped]
    assert all(k or np.array_equal(f, im[0]) for k, f in zip(kinds, flipped)) and 0 < sum(kinds) < 16
    same = img.stateless_random_flip_up_down(batch, seed=[1, 2]).numpy()
    np.testing.assert_array_equal(same, img.stateless_random_flip_up_down(batch, seed=[1, 2]).numpy())
    crop = img.random_crop(im[0], [3, 3, 3], seed=1).numpy()
    assert any(np.array_equal(crop, im[0, i:i + 3, j:j + 3]) for i in range(3) for j in range(4))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Need value.shape >= size"):
        img.random_crop(im[0], [9, 3, 3])
    delta = img.random_brightness(im, 0.1, seed=1).numpy() - im
    assert np.allclose(delta, delta.flat[0], atol=1e-6) and abs(delta.flat[0]) <= 0.1
    hue = img.stateless_random_hue(im, 0.2, seed=[3, 4]).numpy()
    assert hue.shape == im.shape and not np.allclose(hue, im)
    with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
        img.random_hue(im, 0.7)
    assert img.ResizeMethod.BILINEAR == "bilinear"
