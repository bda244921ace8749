"""jf.image.crop_and_resize and jf.image.ssim against TF 2.21: the outputs and gradients below
were printed by TF for the same inputs and are hard-coded; plus a float64 numpy check of
bilinear sampling and SSIM's identity and symmetry. Eagerly and inside jf.function."""
import numpy as np
import pytest

import jitflow as jf

IMG = np.arange(2 * 4 * 5 * 2, dtype=np.float32).reshape(2, 4, 5, 2)
BOXES = np.array([[0, 0, 1, 1], [0.1, 0.2, 0.7, 0.9], [-0.2, 0.5, 0.5, 1.3], [0.5, 0.5, 0.5, 0.5]], np.float32)
INDICES = np.array([0, 1, 0, 1], np.int32)
TF_BILINEAR = [0.0, 1.0, 8.0, 9.0, 15.0, 16.0, 23.0, 24.0, 30.0, 31.0, 38.0, 39.0, 44.6, 45.6, 50.2, 51.2, 53.6,
               54.6, 59.2, 60.2, 62.6, 63.6, 68.2, 69.2, 0.0, 0.0, 0.0, 0.0, 8.5, 9.5, 0.0, 0.0, 19.0, 20.0, 0.0, 0.0,
               59.0, 60.0, 59.0, 60.0, 59.0, 60.0, 59.0, 60.0, 59.0, 60.0, 59.0, 60.0]
TF_NEAREST = [20.0, 21.0, 24.0, 25.0, 28.0, 29.0, 52.0, 53.0, 54.0, 55.0, 58.0, 59.0, 4.0, 5.0, 8.0, 9.0, -1.0, -1.0,
              64.0, 65.0, 64.0, 65.0, 64.0, 65.0]
TF_GRAD_HEAD = [0.0, 2.0, 0.0, 0.0, 9.35, 10.45, 0.0, 0.0, 16.0, 18.0, 15.0, 16.0, 0.0, 0.0, 26.65, 28.55, 0.0, 0.0,
                23.0, 24.0]


@pytest.mark.parametrize("traced", [False, True])
def test_crop_and_resize_matches_tf(traced):
    fn = jf.image.crop_and_resize
    if traced:
        fn = jf.function(fn)
    got = fn(IMG, BOXES, INDICES, [3, 2])
    assert got.shape == (4, 3, 2, 2) and got.dtype == jf.float32
    np.testing.assert_allclose(got.numpy().ravel(), TF_BILINEAR, atol=1e-4)
    got = fn(IMG, BOXES, INDICES, [1, 3], method="nearest", extrapolation_value=-1.0)
    np.testing.assert_allclose(got.numpy().ravel(), TF_NEAREST)
    x = jf.constant(IMG)
    with jf.GradientTape() as tape:
        tape.watch(x)
        loss = jf.reduce_sum(jf.square(jf.image.crop_and_resize(x, BOXES, INDICES, [3, 2])))
    np.testing.assert_allclose(tape.gradient(loss, x).numpy().ravel()[:20], TF_GRAD_HEAD, atol=1e-4)


def test_crop_and_resize_is_bilinear_sampling(rng):
    img = rng.standard_normal((1, 6, 7, 1))
    box = np.array([[0.15, 0.3, 0.8, 0.95]], np.float32)
    got = jf.image.crop_and_resize(img.astype(np.float32), box, [0], [4, 5]).numpy()[0, ..., 0]
    ys = 0.15 * 5 + np.arange(4) * (0.8 - 0.15) * 5 / 3
    xs = 0.3 * 6 + np.arange(5) * (0.95 - 0.3) * 6 / 4
    want = np.empty((4, 5))
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            y0, x0 = int(np.floor(y)), int(np.floor(x))
            y1, x1 = min(y0 + 1, 5), min(x0 + 1, 6)
            dy, dx = y - y0, x - x0
            top = img[0, y0, x0, 0] * (1 - dx) + img[0, y0, x1, 0] * dx
            bottom = img[0, y1, x0, 0] * (1 - dx) + img[0, y1, x1, 0] * dx
            want[i, j] = top * (1 - dy) + bottom * dy
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("traced", [False, True])
def test_ssim_matches_tf(traced):
    rng = np.random.default_rng(0)
    a = rng.random((2, 16, 16, 3)).astype(np.float32)
    b = np.clip(a + rng.normal(0, 0.1, a.shape), 0, 1).astype(np.float32)
    fn = jf.function(jf.image.ssim) if traced else jf.image.ssim
    np.testing.assert_allclose(fn(a, b, 1.0).numpy(), [0.9495017, 0.943182], atol=2e-6)
    np.testing.assert_allclose(fn(a, b, 1.0, filter_size=5, filter_sigma=1.0, k1=0.02, k2=0.05).numpy(),
                               [0.9415053, 0.9456904], atol=2e-6)
    au, bu = (a * 255).astype(np.uint8), (b * 255).astype(np.uint8)
    np.testing.assert_allclose(fn(au, bu, 255).numpy(), [0.9492995, 0.9431394], atol=2e-6)
    np.testing.assert_allclose(fn(a, a, 1.0).numpy(), [1.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(fn(a, b, 1.0).numpy(), fn(b, a, 1.0).numpy(), atol=1e-7)


def test_errors():
    with pytest.raises(jf.errors.InvalidArgumentError, match="smaller than the 11x11 filter"):
        jf.image.ssim(np.zeros((8, 8, 1), np.float32), np.zeros((8, 8, 1), np.float32), 1.0)
    with pytest.raises(jf.errors.InvalidArgumentError, match="method"):
        jf.image.crop_and_resize(IMG, BOXES, INDICES, [2, 2], method="bicubic")
