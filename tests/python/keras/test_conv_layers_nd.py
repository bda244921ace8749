"""jf.keras's convolution layers in 1, 2 and 3 spatial dims (Conv, ConvTranspose, DepthwiseConv,
SeparableConv) and 1-D/3-D pooling against float64 numpy references written here: direct sums
over the kernel's offsets, with strides, dilations, groups and TF's SAME/VALID/causal padding."""
import itertools

import numpy as np
import pytest
from conftest import compiled_runs
from keras_ref import check_layer as _check

import jitflow as jf

layers = jf.keras.layers


def _same_pads(sizes, kernel, strides, dilations):
    pads = []
    for n, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-n // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def conv_ref(x, k, strides, dilations, padding="valid", groups=1):
    """Channels-last convolution of x [N, *S, C] with k [*K, C / groups, F]."""
    rank = x.ndim - 2
    kernel = k.shape[:rank]
    if padding == "same":
        pads = _same_pads(x.shape[1:-1], kernel, strides, dilations)
    elif padding == "causal":
        pads = [((kernel[0] - 1) * dilations[0], 0)]
    else:
        pads = [(0, 0)] * rank
    x = np.pad(x, [(0, 0), *pads, (0, 0)])
    outs = [(n - (kk - 1) * d - 1) // s + 1 for n, kk, s, d in zip(x.shape[1:-1], kernel, strides, dilations)]
    c, f = x.shape[-1], k.shape[-1]
    out = np.zeros((x.shape[0], *outs, groups, f // groups))
    for off in itertools.product(*[range(kk) for kk in kernel]):
        sl = tuple(slice(o * d, o * d + (m - 1) * s + 1, s) for o, d, m, s in zip(off, dilations, outs, strides))
        xs = x[(slice(None), *sl)].reshape(*x.shape[:1], *outs, groups, c // groups)
        w = k[off].reshape(c // groups, groups, f // groups).transpose(1, 0, 2)
        out += np.einsum("...gc,gcf->...gf", xs, w)
    return out.reshape(x.shape[0], *outs, f)


def depthwise_ref(x, k, strides, padding="valid"):
    """x [N, *S, C] with k [*K, C, M]: channel c * M + m sees only input channel c."""
    rank = x.ndim - 2
    c = k.shape[-2]
    out = [conv_ref(x[..., i:i + 1], k[..., i:i + 1, :], strides, (1,) * rank, padding) for i in range(c)]
    return np.concatenate(out, axis=-1)


def transpose_ref(x, k, strides, out_sizes, padding, dilations=None):
    """x [N, *I, C] with k [*K, F, C]: every input element scattered through the kernel, cropped
    to out_sizes as TF's conv transposes are (SAME: half the excess before)."""
    rank = x.ndim - 2
    kernel = k.shape[:rank]
    dilations = dilations or (1,) * rank
    full = [(n - 1) * s + (kk - 1) * d + 1 for n, kk, s, d in zip(x.shape[1:-1], kernel, strides, dilations)]
    buf = np.zeros((x.shape[0], *[max(a, b) for a, b in zip(full, out_sizes)], k.shape[-2]))
    for off in itertools.product(*[range(kk) for kk in kernel]):
        sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(off, dilations, x.shape[1:-1],
                                                                               strides))
        buf[(slice(None), *sl)] += np.einsum("...c,fc->...f", x, k[off])
    before = [max(a - b, 0) // 2 if padding == "same" else 0 for a, b in zip(full, out_sizes)]
    crop = tuple(slice(b, b + o) for b, o in zip(before, out_sizes))
    return buf[(slice(None), *crop)]


@pytest.mark.parametrize("padding,strides,dilation", [("valid", 1, 1), ("same", 2, 1), ("causal", 1, 2),
                                                      ("same", 1, 2)])
def test_conv1d(padding, strides, dilation, rng):
    x = rng.normal(size=(2, 9, 3))
    conv = layers.Conv1D(4, 3, strides=strides, padding=padding, dilation_rate=dilation, dtype="float64",
                         bias_initializer="random_normal")
    _check(conv, [x], lambda x, k, b: conv_ref(x, k, (strides,), (dilation,), padding) + b, rng)
    assert conv.kernel.shape == (3, 3, 4) and conv.get_config()["padding"] == padding


def test_conv1d_groups_and_channels_first(rng):
    x = rng.normal(size=(2, 7, 4))
    grouped = layers.Conv1D(6, 2, groups=2, dtype="float64")
    y = grouped(x)
    assert grouped.kernel.shape == (2, 2, 6)
    np.testing.assert_allclose(y.numpy(), conv_ref(x, grouped.kernel.numpy(), (1,), (1,), groups=2)
                               + grouped.bias.numpy(), rtol=1e-10, atol=1e-12)
    first = layers.Conv1D(3, 3, data_format="channels_first", dtype="float64")
    xf = np.transpose(x, (0, 2, 1))
    got = first(xf).numpy()
    want = conv_ref(x, first.kernel.numpy(), (1,), (1,)) + first.bias.numpy()
    np.testing.assert_allclose(got, np.transpose(want, (0, 2, 1)), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="causal"):
        layers.Conv2D(2, 3, padding="causal")


def test_conv3d(rng):
    x = rng.normal(size=(1, 4, 5, 4, 2))
    conv = layers.Conv3D(3, (2, 3, 2), strides=(1, 2, 1), padding="same", dtype="float64")
    _check(conv, [x], lambda x, k, b: conv_ref(x, k, (1, 2, 1), (1, 1, 1), "same") + b, rng)
    assert conv.kernel.shape == (2, 3, 2, 2, 3)
    assert layers.Convolution3D is layers.Conv3D


def _transposed_len(n, k, s, padding, output_padding=None):
    """Keras's documented output length of a transposed convolution (dilation 1)."""
    if padding == "valid":
        return (n - 1) * s + k + (max(k, s) - k if output_padding is None else output_padding)
    return n * s if output_padding is None else (n - 1) * s + k % 2 + output_padding


@pytest.mark.parametrize("padding,strides,output_padding", [("valid", 2, None), ("same", 2, None),
                                                            ("same", 3, 1), ("valid", 1, None)])
def test_conv2d_transpose(padding, strides, output_padding, rng):
    x = rng.normal(size=(2, 3, 4, 2))
    conv = layers.Conv2DTranspose(3, (3, 2), strides=strides, padding=padding, output_padding=output_padding,
                                  dtype="float64", bias_initializer="random_normal")
    out = [_transposed_len(n, k, strides, padding, output_padding) for n, k in zip((3, 4), (3, 2))]
    _check(conv, [x], lambda x, k, b: transpose_ref(x, k, (strides, strides), out, padding) + b, rng)
    assert conv.kernel.shape == (3, 2, 3, 2)
    assert tuple(conv(x).shape) == (2, *out, 3)


def test_conv_transpose_1d_3d_channels_first_and_unknown_batch(rng):
    x = rng.normal(size=(2, 5, 3))
    c1 = layers.Conv1DTranspose(2, 3, strides=2, padding="same", dtype="float64")
    y = c1(x)
    np.testing.assert_allclose(y.numpy(), transpose_ref(x, c1.kernel.numpy(), (2,), [10], "same")
                               + c1.bias.numpy(), rtol=1e-10, atol=1e-12)
    f = jf.function(lambda x: c1(x), input_signature=[jf.TensorSpec([None, None, 3], jf.float64)])
    np.testing.assert_allclose(f(jf.constant(x)).numpy(), y.numpy(), rtol=1e-12)
    x3 = rng.normal(size=(1, 2, 3, 2, 2))
    c3 = layers.Conv3DTranspose(2, 2, strides=2, dtype="float64")
    np.testing.assert_allclose(c3(x3).numpy(), transpose_ref(x3, c3.kernel.numpy(), (2, 2, 2), [4, 6, 4], "valid")
                               + c3.bias.numpy(), rtol=1e-10, atol=1e-12)
    cf = layers.Conv2DTranspose(2, 2, strides=2, data_format="channels_first", dtype="float64")
    xf = rng.normal(size=(1, 3, 2, 3))
    got = cf(xf).numpy()
    want = transpose_ref(np.transpose(xf, (0, 2, 3, 1)), cf.kernel.numpy(), (2, 2), [4, 6], "valid") + cf.bias.numpy()
    np.testing.assert_allclose(got, np.transpose(want, (0, 3, 1, 2)), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="greater than output padding"):
        layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)


def test_depthwise_conv(rng):
    x = rng.normal(size=(2, 5, 6, 3))
    dw = layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", dtype="float64",
                                bias_initializer="random_normal")
    _check(dw, [x], lambda x, k, b: depthwise_ref(x, k, (1, 1), "same") + b, rng)
    assert dw.kernel.shape == (3, 3, 3, 2) and dw.bias.shape == (6,)
    x1 = rng.normal(size=(2, 7, 2))
    dw1 = layers.DepthwiseConv1D(3, strides=2, dtype="float64")
    np.testing.assert_allclose(dw1(x1).numpy(), depthwise_ref(x1, dw1.kernel.numpy(), (2,)) + dw1.bias.numpy(),
                               rtol=1e-10, atol=1e-12)


def test_separable_conv(rng):
    x = rng.normal(size=(2, 6, 5, 3))
    sep = layers.SeparableConv2D(4, 3, depth_multiplier=2, dtype="float64", bias_initializer="random_normal")

    def ref(x, dk, pk, b):
        return conv_ref(depthwise_ref(x, dk, (1, 1)), pk, (1, 1), (1, 1)) + b

    _check(sep, [x], ref, rng)
    assert [w.path.split("/")[-1] for w in sep.weights] == ["depthwise_kernel", "pointwise_kernel", "bias"]
    assert sep.pointwise_kernel.shape == (1, 1, 6, 4)
    x1 = rng.normal(size=(2, 8, 3))
    sep1 = layers.SeparableConv1D(2, 3, padding="same", dtype="float64")
    got = sep1(x1).numpy()
    dk, pk, b = [w.numpy() for w in sep1.weights]
    np.testing.assert_allclose(got, conv_ref(depthwise_ref(x1, dk, (1,), "same"), pk, (1,), (1,)) + b,
                               rtol=1e-10, atol=1e-12)


def test_pooling_1d_and_3d(rng):
    x = rng.normal(size=(2, 7, 3))
    np.testing.assert_array_equal(layers.MaxPooling1D(dtype="float64")(x).numpy(),
                                  x[:, :6].reshape(2, 3, 2, 3).max(2))
    np.testing.assert_allclose(layers.AveragePooling1D(3, strides=2, dtype="float64")(x).numpy(),
                               np.stack([x[:, i:i + 3].mean(1) for i in (0, 2, 4)], 1), rtol=1e-12)
    x3 = rng.normal(size=(1, 4, 4, 6, 2))
    np.testing.assert_array_equal(layers.MaxPool3D(dtype="float64")(x3).numpy(),
                                  x3.reshape(1, 2, 2, 2, 2, 3, 2, 2).max((2, 4, 6)))
    np.testing.assert_allclose(layers.AvgPool3D(2, dtype="float64")(x3).numpy(),
                               x3.reshape(1, 2, 2, 2, 2, 3, 2, 2).mean((2, 4, 6)), rtol=1e-12)


def test_conv1d_model_compiles(rng):
    model = jf.keras.Sequential([layers.Input((16, 3)), layers.Conv1D(4, 3, padding="causal", activation="relu"),
                                 layers.MaxPooling1D(), layers.SeparableConv1D(2, 3), layers.GlobalAveragePooling1D()])
    x = rng.normal(size=(2, 16, 3)).astype(np.float32)
    want = model(x).numpy()
    got = compiled_runs(lambda x: model(x), jf.constant(x))  # asserts compiled code ran
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
