"""jf.keras.layers.Conv2D, MaxPooling2D and AveragePooling2D against float64 numpy loops
(outputs and the kernel's and bias's gradients), Keras's names and kernel layout, and a small CNN
under jit_compile=True."""
import numpy as np
from conftest import compiled_runs
from keras_ref import check_layer as _check

import jitflow as jf

layers = jf.keras.layers


def _conv_ref(x, k, b, stride=1, same=False):
    kh, kw = k.shape[:2]
    if same:  # TF's SAME: out = ceil(in / stride), the padding's odd element at the end
        ph = max((-(-x.shape[1] // stride) - 1) * stride + kh - x.shape[1], 0)
        pw = max((-(-x.shape[2] // stride) - 1) * stride + kw - x.shape[2], 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    n, h, w, _ = x.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, k.shape[-1]))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j] = np.einsum("nhwc,hwcf->nf", patch, k)
    return out + b


def _pool_ref(x, size, reduce):
    n, h, w, c = x.shape
    oh, ow = h // size, w // size
    win = x[:, :oh * size, :ow * size].reshape(n, oh, size, ow, size, c)
    return reduce(win, axis=(2, 4))


def test_conv2d_output_gradients_and_layout(rng):
    jf.keras.backend.clear_session()
    x = rng.normal(size=(2, 6, 5, 2))
    conv = layers.Conv2D(3, (3, 2), activation="tanh", dtype="float64", bias_initializer="random_normal")
    _check(conv, [x], lambda x, k, b: np.tanh(_conv_ref(x, k, b)), rng)
    assert conv.name == "conv2d" and conv.kernel.shape == (3, 2, 2, 3) and conv.bias.shape == (3,)
    same = layers.Conv2D(4, 3, strides=2, padding="same", dtype="float64")
    y = same(x)
    np.testing.assert_allclose(y.numpy(), _conv_ref(x, same.kernel.numpy(), same.bias.numpy(), 2, True),
                               rtol=1e-10, atol=1e-12)
    assert y.shape == (2, 3, 3, 4)
    cfg = same.get_config()
    assert (cfg["kernel_size"], cfg["strides"], cfg["padding"]) == ((3, 3), (2, 2), "same")


def test_pooling_layers(rng):
    x = rng.normal(size=(2, 5, 6, 3))
    np.testing.assert_array_equal(layers.MaxPooling2D()(x.astype(np.float32)).numpy(),
                                  _pool_ref(x, 2, np.max).astype(np.float32))
    np.testing.assert_allclose(layers.AveragePooling2D(pool_size=2, dtype="float64")(x).numpy(),
                               _pool_ref(x, 2, np.mean), rtol=1e-12)
    assert layers.MaxPooling2D().name.startswith("max_pooling2d")


def test_small_cnn_compiles(rng):
    jf.keras.backend.clear_session()
    model = jf.keras.Sequential([jf.keras.Input((8, 8, 1)), layers.Conv2D(4, 3, activation="relu"),
                                 layers.MaxPooling2D(), layers.Flatten(), layers.Dense(3)])
    x = rng.normal(size=(2, 8, 8, 1)).astype(np.float32)
    want = model(x).numpy()
    got = compiled_runs(lambda x: model(x), jf.constant(x))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    lines = []
    model.summary(line_length=76, print_fn=lines.append)
    assert "│ conv2d (Conv2D)                 │ (None, 6, 6, 4)        │            40 │" in lines[0]
    assert "│ flatten (Flatten)               │ (None, 36)             │             0 │" in lines[0]
