"""jf.keras's merging, reshaping, noise, normalization, preprocessing and function layers against
float64 numpy references written here (and Keras 3's documented shapes and training behaviour),
with gradients by central differences for the layers that have weights."""
import numpy as np
import pytest
from keras_ref import check_layer as _check

import jitflow as jf

layers = jf.keras.layers


def test_merge_layers(rng):
    a, b, c = rng.normal(size=(3, 2, 4))
    np.testing.assert_allclose(layers.Multiply()([a, b, c]).numpy(), a * b * c, rtol=1e-6)
    np.testing.assert_allclose(layers.Subtract()([a, b]).numpy(), a - b, rtol=1e-6)
    np.testing.assert_allclose(layers.Average()([a, b, c]).numpy(), (a + b + c) / 3, rtol=1e-6)
    np.testing.assert_allclose(layers.Maximum()([a, b, c]).numpy(), np.maximum(np.maximum(a, b), c), rtol=1e-6)
    np.testing.assert_allclose(layers.minimum([a, b]).numpy(), np.minimum(a, b), rtol=1e-6)
    np.testing.assert_allclose(layers.multiply([a, b]).numpy(), a * b, rtol=1e-6)
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        layers.Subtract()([a, b, c])


def test_dot_layer(rng):
    x, y = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 4, 5))
    np.testing.assert_allclose(layers.Dot(axes=2, dtype="float64")([x, y]).numpy(), np.einsum("bik,bjk->bij", x, y),
                               rtol=1e-12)
    np.testing.assert_allclose(layers.Dot(axes=(1, 1), dtype="float64")([x, x]).numpy(),
                               np.einsum("bki,bkj->bij", x, x), rtol=1e-12)
    u, v = rng.normal(size=(2, 3, 6))
    cos = layers.Dot(axes=1, normalize=True, dtype="float64")([u, v]).numpy()
    want = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(cos, want[:, None], rtol=1e-10)  # rank 1 becomes [batch, 1]
    with pytest.raises(ValueError, match="Incompatible input shapes"):
        layers.Dot(axes=1)([x, y])


def test_reshaping_layers(rng):
    x = rng.normal(size=(2, 5, 3))
    np.testing.assert_array_equal(layers.RepeatVector(3, dtype="float64")(x[:, 0]).numpy(),
                                  np.repeat(x[:, None, 0], 3, axis=1))
    np.testing.assert_array_equal(layers.Permute((2, 1), dtype="float64")(x).numpy(), x.transpose(0, 2, 1))
    np.testing.assert_array_equal(layers.ZeroPadding1D((1, 2), dtype="float64")(x).numpy(),
                                  np.pad(x, [(0, 0), (1, 2), (0, 0)]))
    np.testing.assert_array_equal(layers.Cropping1D((1, 2), dtype="float64")(x).numpy(), x[:, 1:3])
    np.testing.assert_array_equal(layers.UpSampling1D(3, dtype="float64")(x).numpy(), np.repeat(x, 3, axis=1))
    im = rng.normal(size=(2, 4, 5, 3))
    np.testing.assert_array_equal(layers.ZeroPadding2D(((1, 0), (2, 3)), dtype="float64")(im).numpy(),
                                  np.pad(im, [(0, 0), (1, 0), (2, 3), (0, 0)]))
    np.testing.assert_array_equal(layers.ZeroPadding2D(1, data_format="channels_first", dtype="float64")(im).numpy(),
                                  np.pad(im, [(0, 0), (0, 0), (1, 1), (1, 1)]))
    np.testing.assert_array_equal(layers.Cropping2D(((1, 1), (0, 2)), dtype="float64")(im).numpy(), im[:, 1:3, 0:3])
    np.testing.assert_array_equal(layers.UpSampling2D((2, 3), dtype="float64")(im).numpy(),
                                  np.repeat(np.repeat(im, 2, 1), 3, 2))
    vol = rng.normal(size=(1, 2, 3, 2, 2))
    np.testing.assert_array_equal(layers.UpSampling3D(dtype="float64")(vol).numpy(),
                                  np.repeat(np.repeat(np.repeat(vol, 2, 1), 2, 2), 2, 3))
    np.testing.assert_array_equal(layers.Cropping3D(((0, 1), (1, 1), (0, 0)), dtype="float64")(vol).numpy(),
                                  vol[:, 0:1, 1:2])
    np.testing.assert_array_equal(layers.ZeroPadding3D(1, dtype="float64")(vol).numpy(),
                                  np.pad(vol, [(0, 0), (1, 1), (1, 1), (1, 1), (0, 0)]))
    with pytest.raises(ValueError, match="smaller than"):
        layers.Cropping1D((3, 2))(x)
    with pytest.raises(ValueError, match="consecutive"):
        layers.Permute((0, 1))


def _bilinear_up2(img):
    """Half-pixel-centre bilinear upsampling by 2 of [h, w] (TF's resize, antialias off)."""
    h, w = img.shape

    def coords(n):
        src = (np.arange(2 * n) + 0.5) / 2 - 0.5
        lo = np.clip(np.floor(src).astype(int), 0, n - 1)
        hi = np.clip(lo + 1, 0, n - 1)
        frac = np.clip(src - np.floor(src), 0, 1) * (src >= 0)
        return lo, hi, frac

    ly, hy, fy = coords(h)
    lx, hx, fx = coords(w)
    top = img[ly][:, lx] * (1 - fx) + img[ly][:, hx] * fx
    bot = img[hy][:, lx] * (1 - fx) + img[hy][:, hx] * fx
    return top * (1 - fy[:, None]) + bot * fy[:, None]


def test_upsampling2d_bilinear(rng):
    im = rng.normal(size=(1, 3, 4, 1)).astype(np.float32)
    got = layers.UpSampling2D(interpolation="bilinear")(im).numpy()
    np.testing.assert_allclose(got[0, :, :, 0], _bilinear_up2(im[0, :, :, 0].astype(np.float64)), rtol=1e-5,
                               atol=1e-6)


def test_lambda_identity_masking(rng, tmp_path):
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    lam = layers.Lambda(lambda t, k: t * k, arguments={"k": 3.0})
    np.testing.assert_allclose(lam(x).numpy(), 3 * x, rtol=1e-6)
    np.testing.assert_array_equal(layers.Identity()(x).numpy(), x)
    x[0, 1] = 0.0
    masking = layers.Masking(mask_value=0.0)
    np.testing.assert_array_equal(masking.compute_mask(jf.constant(x)).numpy(), [[True, False, True], [True] * 3])
    # the mask reaches an LSTM, which keeps its state over the masked step
    inp = layers.Input((3, 4))
    out = layers.LSTM(2)(layers.Masking()(inp))
    model = jf.keras.Model(inp, out)
    skipped = model(np.delete(x[:1], 1, axis=1)).numpy()
    np.testing.assert_allclose(model(x[:1]).numpy(), skipped, rtol=1e-5)
    # a saved lambda needs safe_mode=False to load, as in Keras
    seq = jf.keras.Sequential([layers.Input((4,)), layers.Lambda(lambda t: t * 2 + 1)])
    path = str(tmp_path / "lam.keras")
    seq.save(path)
    with pytest.raises(ValueError, match="safe_mode=False"):
        jf.keras.models.load_model(path)
    loaded = jf.keras.models.load_model(path, safe_mode=False)
    np.testing.assert_allclose(loaded(x[0]).numpy(), x[0] * 2 + 1, rtol=1e-6)


def test_elu_and_prelu(rng):
    x = rng.normal(size=(3, 4))
    np.testing.assert_allclose(layers.ELU(alpha=0.5, dtype="float64")(x).numpy(),
                               np.where(x > 0, x, 0.5 * (np.exp(x) - 1)), rtol=1e-12)
    prelu = layers.PReLU(alpha_initializer="random_normal", dtype="float64")
    _check(prelu, [x], lambda x, a: np.where(x >= 0, x, a * x), rng)
    assert prelu.alpha.shape == (4,)
    shared = layers.PReLU(shared_axes=[1])
    shared(rng.normal(size=(2, 5, 3)).astype(np.float32))
    assert shared.alpha.shape == (1, 3)


def test_noise_layers_only_act_in_training(rng):
    x = np.ones((64, 32), np.float32)
    for layer in (layers.GaussianNoise(0.5, seed=1), layers.GaussianDropout(0.3, seed=1),
                  layers.AlphaDropout(0.3, seed=1), layers.SpatialDropout1D(0.5, seed=1)):
        xx = x.reshape(64, 4, 8) if isinstance(layer, layers.SpatialDropout1D) else x
        np.testing.assert_array_equal(layer(xx, training=False).numpy(), xx)
        assert not np.array_equal(layer(xx, training=True).numpy(), xx), type(layer).__name__
    noisy = layers.GaussianNoise(0.5, seed=2)(np.zeros((200, 50), np.float32), training=True).numpy()
    assert abs(noisy.std() - 0.5) < 0.02 and abs(noisy.mean()) < 0.02
    gd = layers.GaussianDropout(0.2, seed=3)(np.ones((200, 50), np.float32), training=True).numpy()
    assert abs(gd.mean() - 1) < 0.02 and abs(gd.std() - np.sqrt(0.2 / 0.8)) < 0.02
    # SpatialDropout drops whole channels: one draw per (example, channel)
    sd = layers.SpatialDropout2D(0.5, seed=4)(np.ones((8, 3, 3, 16), np.float32), training=True).numpy()
    assert np.all(sd == sd[:, :1, :1, :]) and set(np.unique(sd)) <= {0.0, 2.0}
    # AlphaDropout keeps mean 0 and variance 1 of unit-normal inputs
    z = rng.normal(size=(400, 100)).astype(np.float32)
    ad = layers.AlphaDropout(0.2, seed=5)(z, training=True).numpy()
    assert abs(ad.mean()) < 0.03 and abs(ad.std() - 1) < 0.03


def test_activity_regularization(rng):
    x = rng.normal(size=(2, 3)).astype(np.float32)
    layer = layers.ActivityRegularization(l1=0.1, l2=0.2)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    assert len(layer.losses) == 1
    # Keras 3 divides an activity regularizer's loss by the batch size
    np.testing.assert_allclose(float(layer.losses[0]), (0.1 * np.abs(x).sum() + 0.2 * (x ** 2).sum()) / 2, rtol=1e-5)


def test_unit_rms_and_group_normalization(rng):
    x = rng.normal(size=(2, 3, 8))
    np.testing.assert_allclose(layers.UnitNormalization(dtype="float64")(x).numpy(),
                               x / np.linalg.norm(x, axis=-1, keepdims=True), rtol=1e-12)
    rms = layers.RMSNormalization(dtype="float64")
    _check(rms, [x], lambda x, s: x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * s, rng)

    def group_ref(x, gamma, beta, groups=4, eps=1e-3):
        g = x.reshape(*x.shape[:-1], groups, x.shape[-1] // groups)
        mean = g.mean(axis=(1, 3), keepdims=True)
        var = g.var(axis=(1, 3), keepdims=True)
        return ((g - mean) / np.sqrt(var + eps)).reshape(x.shape) * gamma + beta

    gn = layers.GroupNormalization(groups=4, dtype="float64", gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    _check(gn, [x], group_ref, rng)
    with pytest.raises(ValueError, match="multiple"):
        layers.GroupNormalization(groups=3)(x.astype(np.float32))


def test_rescaling_and_normalization(rng):
    img = rng.integers(0, 256, size=(2, 4, 4, 3)).astype(np.int32)
    out = layers.Rescaling(1 / 127.5, offset=-1)(img)
    assert out.dtype == jf.float32
    np.testing.assert_allclose(out.numpy(), img / 127.5 - 1, rtol=1e-6, atol=1e-6)
    data = rng.normal(size=(50, 4)) * [1, 2, 3, 4] + [5, 6, 7, 8]
    norm = layers.Normalization(dtype="float64")
    norm.adapt(jf.data.Dataset.from_tensor_slices(data).batch(7))  # merged over batches
    np.testing.assert_allclose(norm.adapt_mean.numpy(), data.mean(0), rtol=1e-10)
    np.testing.assert_allclose(norm.adapt_variance.numpy(), data.var(0), rtol=1e-10)
    assert int(norm.count.numpy()) == 50
    np.testing.assert_allclose(norm(data).numpy(), (data - data.mean(0)) / data.std(0), rtol=1e-9)
    given = layers.Normalization(mean=2.0, variance=4.0, dtype="float64")
    np.testing.assert_allclose(given(data).numpy(), (data - 2) / 2, rtol=1e-12)
    inverse = layers.Normalization(mean=2.0, variance=4.0, invert=True, dtype="float64")
    np.testing.assert_allclose(inverse(data).numpy(), data * 2 + 2, rtol=1e-12)
    with pytest.raises(ValueError, match="both `mean` and `variance`"):
        layers.Normalization(mean=1.0)


def test_image_preprocessing(rng):
    im = rng.normal(size=(2, 6, 8, 3)).astype(np.float32)
    np.testing.assert_array_equal(layers.CenterCrop(4, 4)(im).numpy(), im[:, 1:5, 2:6])
    np.testing.assert_array_equal(layers.CenterCrop(2, 4)(im[0]).numpy(), im[0, 2:4, 2:6])  # one image
    assert tuple(layers.Resizing(3, 4)(im).shape) == (2, 3, 4, 3)
    # TF's nearest resize reads source index floor((i + 0.5) * in / out): 1, 3, 5 when halving
    near = layers.Resizing(3, 4, interpolation="nearest")(im).numpy()
    np.testing.assert_array_equal(near, im[:, 1::2, 1::2])
    # crop_to_aspect_ratio: the centred 6x6 window (columns 1..6) of a 6x8 image, halved
    sq = layers.Resizing(3, 3, interpolation="nearest", crop_to_aspect_ratio=True)(im).numpy()
    np.testing.assert_array_equal(sq, im[:, 1::2, 2:7:2])
    flip = layers.RandomFlip("horizontal", seed=0)
    np.testing.assert_array_equal(flip(im, training=False).numpy(), im)
    out = flip(np.concatenate([im] * 16), training=True).numpy()
    flipped = [np.array_equal(o, i[:, ::-1]) for o, i in zip(out, np.concatenate([im] * 16))]
    same = [np.array_equal(o, i) for o, i in zip(out, np.concatenate([im] * 16))]
    assert all(f or s for f, s in zip(flipped, same)) and 4 < sum(flipped) < 28


def test_category_encoding():
    ids = np.array([[0, 1], [3, 3]])
    np.testing.assert_array_equal(layers.CategoryEncoding(4, output_mode="count")(ids).numpy(),
                                  [[1, 1, 0, 0], [0, 0, 0, 2]])
    np.testing.assert_array_equal(layers.CategoryEncoding(4)(ids).numpy(), [[1, 1, 0, 0], [0, 0, 0, 1]])
    np.testing.assert_array_equal(layers.CategoryEncoding(4, output_mode="one_hot")(np.array([1, 3])).numpy(),
                                  [[0, 1, 0, 0], [0, 0, 0, 1]])
    np.testing.assert_array_equal(layers.CategoryEncoding(4)(np.array([1, 3])).numpy(), [0, 1, 0, 1])
    with pytest.raises(jf.errors.InvalidArgumentError, match="num_tokens=4"):
        layers.CategoryEncoding(4)(np.array([[4]]))


def test_global_pooling_3d(rng):
    v = rng.normal(size=(2, 3, 2, 4, 5))
    np.testing.assert_allclose(layers.GlobalAveragePooling3D(dtype="float64")(v).numpy(), v.mean((1, 2, 3)),
                               rtol=1e-12)
    np.testing.assert_array_equal(layers.GlobalMaxPool3D(dtype="float64")(v).numpy(), v.max((1, 2, 3)))


def test_new_layers_round_trip_through_configs():
    for layer in (layers.Dot(axes=1), layers.ZeroPadding2D(((1, 2), (3, 4))), layers.UpSampling2D(3),
                  layers.GaussianNoise(0.1), layers.PReLU(shared_axes=[1]), layers.GroupNormalization(4),
                  layers.Rescaling(0.5, 1.0), layers.CategoryEncoding(5, "count"), layers.Masking(1.0),
                  layers.Resizing(4, 5), layers.RandomFlip("vertical")):
        clone = type(layer).from_config(layer.get_config())
        assert clone.get_config() == layer.get_config(), type(layer).__name__


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_dot_and_additive_attention(rng):
    q, v, k = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4))
    att = layers.Attention(use_scale=True, dtype="float64")
    out, w = att([q, v, k], return_attention_scores=True)
    scale = att.scale.numpy()
    want_w = _softmax(scale * q @ k.transpose(0, 2, 1))
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10)
    np.testing.assert_allclose(out.numpy(), want_w @ v, rtol=1e-10)
    # value and query masks, and the causal mask
    v_mask = np.array([[True, True, False, True, False], [True] * 5])
    q_mask = np.array([[True, False, True], [True] * 3])
    masked = layers.Attention(dtype="float64")([q, v], mask=[q_mask, v_mask]).numpy()
    s = np.where(v_mask[:, None, :], q @ v.transpose(0, 2, 1), -np.inf)
    want = (_softmax(s) @ v) * q_mask[..., None]
    np.testing.assert_allclose(masked, want, rtol=1e-9, atol=1e-12)
    causal = layers.Attention(dtype="float64")([v, v], use_causal_mask=True).numpy()
    s = np.where(np.tril(np.ones((5, 5), bool)), v @ v.transpose(0, 2, 1), -np.inf)
    np.testing.assert_allclose(causal, _softmax(s) @ v, rtol=1e-9)
    concat = layers.Attention(score_mode="concat", dtype="float64")([q, v]).numpy()
    s = np.tanh(q[:, :, None, :] + v[:, None, :, :]).sum(-1)
    np.testing.assert_allclose(concat, _softmax(s) @ v, rtol=1e-10)
    add = layers.AdditiveAttention(dtype="float64")
    got = add([q, v]).numpy()
    s = (add.scale.numpy() * np.tanh(q[:, :, None, :] + v[:, None, :, :])).sum(-1)
    np.testing.assert_allclose(got, _softmax(s) @ v, rtol=1e-10)
    with pytest.raises(ValueError, match="list of inputs"):
        layers.Attention()(q)


@pytest.mark.parametrize("equation,out_shape,bias_axes,x_shape,kernel_shape,bias_shape", [
    ("ab,bc->ac", 7, "c", (2, 4), (4, 7), (7,)),
    ("...b,bc->...c", 7, None, (2, 3, 4), (4, 7), None),
    ("abc,cde->abde", (None, 2, 5), "de", (2, 3, 4), (4, 2, 5), (2, 5)),
    ("abc,cd->abd", (3, 6), "b", (2, 3, 4), (4, 6), (3, 1)),
])
def test_einsum_dense(equation, out_shape, bias_axes, x_shape, kernel_shape, bias_shape, rng):
    layer = layers.EinsumDense(equation, out_shape, bias_axes=bias_axes, bias_initializer="random_normal",
                               dtype="float64")
    x = rng.normal(size=x_shape)
    got = layer(x).numpy()
    assert tuple(layer.kernel.shape) == kernel_shape
    assert (layer.bias is None and bias_shape is None) or tuple(layer.bias.shape) == bias_shape
    want = np.einsum(equation, x, layer.kernel.numpy())
    if layer.bias is not None:
        want = want + layer.bias.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)
    if layer.bias is not None:
        _check(layer, [x], lambda x, k, b: np.einsum(equation, x, k) + b, rng)
