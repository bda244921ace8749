"""keras.layers.ConvLSTM2D against a float64 numpy ConvLSTM (direct convolution loops, Keras's
gate order i, f, c, o), with Keras's weight shapes; return_sequences/return_state, strides,
'valid'/'same', go_backwards, eagerly and traced."""
import numpy as np
import pytest

import jitflow as jf


def _conv(x, k, stride, padding):
    """[b, h, w, c] * [kh, kw, c, o] cross-correlation (TF's SAME pads more at the end)."""
    kh, kw = k.shape[:2]
    if padding == "same":
        out_h, out_w = -(-x.shape[1] // stride[0]), -(-x.shape[2] // stride[1])
        ph = max((out_h - 1) * stride[0] + kh - x.shape[1], 0)
        pw = max((out_w - 1) * stride[1] + kw - x.shape[2], 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    out_h = (x.shape[1] - kh) // stride[0] + 1
    out_w = (x.shape[2] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], out_h, out_w, k.shape[3]))
    for i in range(out_h):
        for j in range(out_w):
            patch = x[:, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw, :]
            out[:, i, j, :] = np.einsum("bhwc,hwco->bo", patch, k)
    return out


def _reference(x, kernel, recurrent, bias, stride, padding, backwards, act):
    sig = (lambda v: 1 / (1 + np.exp(-v)))
    frames = x[:, ::-1] if backwards else x
    h = c = None
    seq = []
    for t in range(frames.shape[1]):
        zx = _conv(frames[:, t], kernel, stride, padding) + (bias if bias is not None else 0)
        if h is None:
            h = c = np.zeros(zx.shape[:3] + (kernel.shape[3] // 4,))
        z = zx + _conv(h, recurrent, (1, 1), "same")
        zi, zf, zc, zo = np.split(z, 4, axis=-1)
        c = sig(zf) * c + sig(zi) * act(zc)
        h = sig(zo) * act(c)
        seq.append(h)
    return np.stack(seq, 1), h, c


CASES = [
    ({"filters": 3, "kernel_size": 3, "padding": "same", "return_sequences": True}, (1, 1), "same", False, np.tanh),
    ({"filters": 2, "kernel_size": (2, 3), "strides": (1, 2), "return_state": True}, (1, 2), "valid", False, np.tanh),
    ({"filters": 2, "kernel_size": 3, "go_backwards": True, "activation": "relu", "use_bias": False}, (1, 1), "valid", True,
     lambda v: np.maximum(v, 0)),
]


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_numpy_reference(case, traced, rng):
    kwargs, stride, padding, backwards, act = CASES[case]
    x = rng.standard_normal((2, 3, 5, 6, 2)).astype(np.float32)
    layer = jf.keras.layers.ConvLSTM2D(**kwargs)
    layer(x)
    weights = [rng.standard_normal(w.shape).astype(np.float32) * 0.3 for w in layer.get_weights()]
    layer.set_weights(weights)
    f = kwargs["filters"]
    kh, kw = (kwargs["kernel_size"],) * 2 if isinstance(kwargs["kernel_size"], int) else kwargs["kernel_size"]
    assert [w.shape for w in layer.get_weights()][:2] == [(kh, kw, 2, 4 * f), (kh, kw, f, 4 * f)]
    got = (jf.function(lambda v: layer(v)) if traced else layer)(jf.constant(x))
    bias = weights[2].astype(np.float64) if len(weights) == 3 else None
    seq, h, c = _reference(x.astype(np.float64), weights[0].astype(np.float64), weights[1].astype(np.float64), bias,
                           stride, padding, backwards, act)
    if kwargs.get("return_state"):
        for g, w in zip(got, (h, h, c)):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(got.numpy(), seq if kwargs.get("return_sequences") else h, rtol=1e-4, atol=1e-5)
